"""GPU sharing on the real API server: ``vcsched run`` writes, inside each pod's Binding, the annotations
the device plugins read (volcano-vgpu-device-plugin / HAMi and the gpushare plugin; spec/devices.md §5),
and the API server copies them onto the pod in the same write as its nodeName.

The nodes carry what the device plugins publish: the register annotation and the extended resources."""

from __future__ import annotations


import pytest

from .conftest import A100, Kube, VcschedRunner, condition, deviceshare_conf, pod

pytestmark = pytest.mark.asyncio

VGPU_CONF = deviceshare_conf({"deviceshare.VGPUEnable": True, "deviceshare.SchedulePolicy": "binpack"})
GPUSHARE_CONF = deviceshare_conf({"deviceshare.VGPUEnable": False, "deviceshare.GPUSharingEnable": True})
GPUNUMBER_CONF = deviceshare_conf({"deviceshare.VGPUEnable": False, "deviceshare.GPUNumberEnable": True})


async def vgpu_node(kube: Kube, name: str, gpus: list[tuple[str, int, int]]) -> None:
    """A node as volcano-vgpu-device-plugin publishes it: (uuid, split count, MiB) per card, hami-core mode."""
    register = "".join(f"{u},{n},{m},{A100},true,hami-core:" for u, n, m in gpus)
    await kube.node(name, cpu="16", memory="64Gi", annotations={"volcano.sh/node-vgpu-register": register},
                    extra={"volcano.sh/vgpu-number": str(sum(g[1] for g in gpus)),
                           "volcano.sh/vgpu-memory": str(sum(g[2] for g in gpus)),
                           "volcano.sh/vgpu-cores": str(100 * len(gpus))})


async def gpushare_node(kube: Kube, name: str, memory: int, number: int) -> None:
    """A node as the gpushare device plugin publishes it: total memory and card count as extended resources."""
    await kube.node(name, cpu="16", memory="64Gi",
                    extra={"volcano.sh/gpu-memory": str(memory), "volcano.sh/gpu-number": str(number)})


def vgpu_pod(name: str, mib: int, number: int = 1, cores: int | None = None) -> dict:
    limits = {"volcano.sh/vgpu-number": number, "volcano.sh/vgpu-memory": mib}
    if cores is not None:
        limits["volcano.sh/vgpu-cores"] = cores
    return pod(name, cpu="1", limits=limits)


def card_use(ids: str) -> dict[str, int]:
    """MiB per card from a pod's ``volcano.sh/vgpu-ids-new`` (spec/devices.md §5.2: ``uuid,type,mem,cores:``...)."""
    use: dict[str, int] = {}
    for entry in filter(None, ids.split(":")):
        uuid, _, mem, _ = entry.split(",")
        use[uuid] = use.get(uuid, 0) + int(mem)
    return use


async def test_vgpu_pods_get_the_device_plugins_annotations_in_their_binding(kube: Kube, vcsched: VcschedRunner):
    await kube.conf_map(VGPU_CONF)
    await vgpu_node(kube, "gpu-0", [("GPU-a", 10, 40960), ("GPU-b", 10, 40960)])
    await kube.create(vgpu_pod("v1", 8000, cores=30))
    await kube.create(vgpu_pod("v2", 8000, number=2))
    vcsched.start()
    for name in ("v1", "v2"):
        bound = await kube.eventually(lambda: kube.bound("default", name), f"{name} bound")
        ann = bound["metadata"]["annotations"]
        assert bound["spec"]["nodeName"] == "gpu-0"
        assert ann["volcano.sh/vgpu-node"] == "gpu-0"
        assert ann["volcano.sh/bind-phase"] == "allocating"
        assert ann["volcano.sh/devices-to-allocate"] == ann["volcano.sh/vgpu-ids-new"]
        assert ann["volcano.sh/vgpu-time"].isdigit() and ann["volcano.sh/bind-time"].isdigit()
    v1 = (await kube.pod("default", "v1"))["metadata"]["annotations"]
    v2 = (await kube.pod("default", "v2"))["metadata"]["annotations"]
    # v1: one card, 8000 MiB and 30% of its cores; binpack puts it on a card of the node
    assert v1["volcano.sh/vgpu-ids-new"] in ("GPU-a,NVIDIA,8000,30:", "GPU-b,NVIDIA,8000,30:")
    # v2: two vGPUs on two distinct cards, 8000 MiB each
    use = card_use(v2["volcano.sh/vgpu-ids-new"])
    assert use == {"GPU-a": 8000, "GPU-b": 8000}


async def test_vgpu_memory_is_never_overcommitted_on_a_card(kube: Kube, vcsched: VcschedRunner):
    await kube.conf_map(VGPU_CONF)
    await vgpu_node(kube, "gpu-0", [("GPU-a", 10, 10000)])
    for i in range(3):
        await kube.create(vgpu_pod(f"v{i}", 4000))
    vcsched.start()
    await kube.eventually(lambda: _count_bound(kube, 2), "two of the three pods bound")
    pods = await kube.list("/api/v1/namespaces/default/pods")
    bound = [p for p in pods if p["spec"].get("nodeName")]
    pending = [p for p in pods if not p["spec"].get("nodeName")]
    assert len(bound) == 2 and len(pending) == 1
    assert sum(card_use(p["metadata"]["annotations"]["volcano.sh/vgpu-ids-new"])["GPU-a"] for p in bound) == 8000
    # the third says why it waits, on the pod (PodScheduled=False), as Volcano writes it
    waiting = await kube.eventually(
        lambda: _with_condition(kube, pending[0]["metadata"]["name"]), "the pending pod's PodScheduled=False")
    cond = condition(waiting, "PodScheduled")
    assert cond["status"] == "False" and cond["reason"] == "Unschedulable"


async def test_gpushare_memory_pods_get_a_card_index(kube: Kube, vcsched: VcschedRunner):
    await kube.conf_map(GPUSHARE_CONF)
    await gpushare_node(kube, "gs-0", memory=30000, number=3)  # three cards of 10000
    await kube.create(pod("a", limits={"volcano.sh/gpu-memory": 6000}))
    await kube.create(pod("b", limits={"volcano.sh/gpu-memory": 6000}))
    vcsched.start()
    got = {}
    for name in ("a", "b"):
        bound = await kube.eventually(lambda: kube.bound("default", name), f"{name} bound")
        ann = bound["metadata"]["annotations"]
        assert ann["volcano.sh/predicate-time"].isdigit()
        got[name] = ann["volcano.sh/gpu-index"]
    # the lowest card that fits: 6000 + 6000 > 10000, so the second pod takes the next card
    assert sorted(got.values()) == ["0", "1"]


async def test_gpushare_number_pods_get_whole_idle_cards(kube: Kube, vcsched: VcschedRunner):
    await kube.conf_map(GPUNUMBER_CONF)
    await gpushare_node(kube, "gs-0", memory=40000, number=4)
    await kube.create(pod("a", limits={"volcano.sh/gpu-number": 2}))
    await kube.create(pod("b", limits={"volcano.sh/gpu-number": 2}))
    vcsched.start()
    got = {}
    for name in ("a", "b"):
        bound = await kube.eventually(lambda: kube.bound("default", name), f"{name} bound")
        got[name] = bound["metadata"]["annotations"]["volcano.sh/gpu-index"]
    assert sorted(got.values()) == ["0,1", "2,3"]


async def _count_bound(kube: Kube, n: int) -> bool:
    pods = await kube.list("/api/v1/namespaces/default/pods")
    return sum(1 for p in pods if p["spec"].get("nodeName")) >= n


async def _with_condition(kube: Kube, name: str) -> dict | None:
    p = await kube.pod("default", name)
    cond = condition(p, "PodScheduled")
    return p if cond and cond.get("status") == "False" else None
