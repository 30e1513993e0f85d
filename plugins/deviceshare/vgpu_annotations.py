"""vGPU annotations: the keys HAMi's volcano-vgpu-device-plugin and the scheduler exchange, and their codecs.

The node publishes ``volcano.sh/node-vgpu-register`` (spec §4.2; read by ``VGPUFamily.build``).  The
scheduler writes ``volcano.sh/vgpu-ids-new`` (its ledger, read back by ``VGPULedger.add_pod``) and
``volcano.sh/devices-to-allocate`` (what the plugin consumes) with the other keys of §6.3.5; the pod
asks with the ``vgpu-mode`` / UUID / GPU-type / podgroup keys.  Volcano files:
api/devices/nvidia/vgpu/{device_info,utils,mig}.go.
"""

from __future__ import annotations

REGISTER = "volcano.sh/node-vgpu-register"
VGPU_NODE = "volcano.sh/vgpu-node"
VGPU_TIME = "volcano.sh/vgpu-time"
VGPU_IDS = "volcano.sh/vgpu-ids-new"
DEVICES_TO_ALLOCATE = "volcano.sh/devices-to-allocate"
BIND_PHASE = "volcano.sh/bind-phase"
BIND_TIME = "volcano.sh/bind-time"
VGPU_MODE = "volcano.sh/vgpu-mode"
PODGROUP_POLICY = "volcano.sh/vgpu-podgroup-policy"
USE_UUID = "volcano.sh/vgpu-use-gpuuuid"
NOUSE_UUID = "volcano.sh/vgpu-nouse-gpuuuid"
USE_TYPE = "nvidia.com/use-gputype"
NOUSE_TYPE = "nvidia.com/nouse-gputype"
RELEASE_KEYS = (VGPU_NODE, VGPU_IDS, DEVICES_TO_ALLOCATE, VGPU_TIME, BIND_TIME, BIND_PHASE)
# the node check uses these names whatever the ConfigMap says (NewGPUDevices, spec E-18)
NODE_RESOURCES = ("volcano.sh/vgpu-number", "volcano.sh/vgpu-cores", "volcano.sh/vgpu-memory")
HAMI_CORE = "hami-core"
MIG = "mig"
DEVICE_TYPE = "NVIDIA"


def encode_pod_devices(per_container: list[list[tuple[str, int, int]]]) -> str:
    """``encodePodDevices``: ``ID,NVIDIA,MEM,CORES:`` per device, containers joined by ``;``."""
    return ";".join("".join(f"{i},{DEVICE_TYPE},{m},{c}:" for i, m, c in devs) for devs in per_container)


def decode_pod_devices(value: str) -> list[list[tuple[str, int, int]]]:
    """``DecodePodDevices``: malformed items are skipped, the others kept."""
    out = []
    for ctr in value.split(";"):
        devs = []
        for item in ctr.split(":"):
            if "," not in item:
                continue
            f = item.split(",")
            if len(f) < 4:
                continue
            try:
                mem, cores = int(f[2]), int(f[3])
            except ValueError:
                continue
            if not (0 <= mem < 2**32 and 0 <= cores < 2**32):
                continue
            devs.append((f[0], mem, cores))
        out.append(devs)
    return out


def mig_position(value: str) -> tuple[str, int] | None:
    """``decodeMIGID``: ``UUID[group-pos]`` → (group, pos); None when malformed (spec E-40)."""
    a, b = value.find("["), value.find("]")
    if a < 0 or b < a:
        return None
    parts = value[a + 1:b].split("-")
    if len(parts) != 2:
        return None
    try:
        return parts[0], int(parts[1])
    except ValueError:
        return None
