"""A restart in mid-cycle: no GPU is allocated twice, no pod is bound twice (issue #4 acceptance)."""

from __future__ import annotations

import json

import pytest

from .conftest import conf_map, eventually, podgroup, queue

pytestmark = pytest.mark.asyncio

A100 = "NVIDIA-NVIDIA A100-PCIE-40GB"
GPU_MIB, SPLIT = 40960, 10
VGPU_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: deviceshare
    arguments: {deviceshare.VGPUEnable: true}
"""


def gpu_node(name: str, uuids: list[str]) -> dict:
    """A node as volcano-vgpu-device-plugin registers it (spec/devices.md §4.2)."""
    register = "".join(f"{u},{SPLIT},{GPU_MIB},{A100},true,hami-core:" for u in uuids)
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name},
                         "annotations": {"volcano.sh/node-vgpu-register": register}},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110",
                                       "volcano.sh/vgpu-number": str(SPLIT * len(uuids)),
                                       "volcano.sh/vgpu-memory": str(GPU_MIB * len(uuids)),
                                       "volcano.sh/vgpu-cores": str(100 * len(uuids))},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def vgpu_pod(name: str, mib: int, cores: int, priority_class: str | None = None) -> dict:
    spec: dict = {"schedulerName": "volcano",
                  "containers": [{"name": "main", "image": "cuda",
                                  "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                                "limits": {"volcano.sh/vgpu-memory": str(mib),
                                                           "volcano.sh/vgpu-cores": str(cores)}}}]}
    if priority_class:
        spec["priorityClassName"], spec["priority"] = priority_class, 1000
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default",
                         "annotations": {"scheduling.k8s.io/group-name": name}},
            "spec": spec, "status": {"phase": "Pending"}}


def decode_pod_devices(value: str) -> list[tuple[str, int, int]]:
    """volcano.sh/vgpu-ids-new (spec/devices.md §5.2) → (uuid, MiB, cores) per vGPU."""
    out = []
    for container in value.split(";"):
        for item in container.split(":"):
            if "," in item:
                uuid, _type, used_mem, used_cores = item.split(",")
                out.append((uuid, int(used_mem), int(used_cores)))
    return out


def check_no_double_allocation(api) -> dict[str, list[str]]:
    """From the server's stored pods: every GPU within its memory, cores and split count, and every
    bound pod's device annotations naming GPUs of its own node; returns the pods on each GPU."""
    gpus = {}
    for n in api.all("", "nodes"):
        for dev in n["metadata"]["annotations"]["volcano.sh/node-vgpu-register"].split(":"):
            if dev:
                uuid, count, mib = dev.split(",")[:3]
                gpus[uuid] = (n["metadata"]["name"], int(count), int(mib))
    used: dict[str, list[tuple[str, int, int]]] = {u: [] for u in gpus}
    for p in api.all("", "pods"):
        node = p["spec"].get("nodeName")
        ann = p["metadata"].get("annotations") or {}
        ids = ann.get("volcano.sh/vgpu-ids-new")
        if not node:
            assert ids is None, f"pending pod {p['metadata']['name']} carries devices {ids}"
            continue
        assert ids and ann.get("volcano.sh/devices-to-allocate") == ids, p["metadata"]
        assert ann.get("volcano.sh/vgpu-node") == node, p["metadata"]
        for uuid, mib, cores in decode_pod_devices(ids):
            assert gpus[uuid][0] == node, f"{p['metadata']['name']} on {node} names {uuid} of {gpus[uuid][0]}"
            used[uuid].append((p["metadata"]["name"], mib, cores))
    for uuid, takers in used.items():
        _, count, mib = gpus[uuid]
        assert len(takers) <= count, (uuid, takers)
        assert sum(t[1] for t in takers) <= mib, f"GPU {uuid} memory over-committed: {takers}"
        assert sum(t[2] for t in takers) <= 100, f"GPU {uuid} cores over-committed: {takers}"
    return {u: sorted(t[0] for t in takers) for u, takers in used.items()}


async def test_a_restart_in_mid_cycle_allocates_no_gpu_twice(api, start):
    api.put(queue("default"))
    api.put(conf_map(VGPU_CONF))
    api.put({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
             "value": 1000})
    api.put(gpu_node("g0", ["GPU-a0", "GPU-a1"]))
    api.put(gpu_node("g1", ["GPU-b0"]))
    # three GPUs with room for one 30000 MiB pod each; four such pods
    for i in range(4):
        api.put(podgroup(f"p{i}"))
        api.put(vgpu_pod(f"p{i}", 30000, 40))
    # every bind is held by the API server a while, then takes effect
    slow = api.fail(lambda r: r.subresource == "binding", delay=0.5, times=100)
    first = await start()
    await eventually(lambda: slow.hits >= 3, "the first runtime's binds in flight")
    assert not api.bindings
    # stopped in mid-cycle, its binds still in flight
    first.stop_event.set()
    await first.task
    # a pod of higher priority arrives during the restart: the new runtime would place it first
    pg = podgroup("urgent")
    pg["spec"]["priorityClassName"] = "high"
    api.put(pg)
    api.put(vgpu_pod("urgent", 30000, 40, priority_class="high"))
    second = await start()
    await eventually(lambda: second.synced.is_set() and slow.released == slow.hits, "every bind answered")
    n = second.sessions
    await eventually(lambda: second.sessions >= n + 5, "more sessions")
    await second.sink.drain()
    # no pod bound twice, no GPU shared beyond its memory, cores or split
    names = [b[1] for b in api.bindings]
    assert len(names) == len(set(names)) == 3, api.bindings
    per_gpu = check_no_double_allocation(api)
    assert sorted(len(v) for v in per_gpu.values()) == [1, 1, 1], json.dumps(per_gpu)
