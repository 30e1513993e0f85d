"""Interconnect-aware placement (issue 24) on the real API server: a node annotated as HAMi's NVIDIA
device plugin annotates it with ``ENABLE_TOPOLOGY_SCORE=true`` (``hami.io/node-nvidia-score``, HAMi
pkg/device/nvidia/calculate_score.go, a JSON list of ``{"uuid", "score": {uuid: score}}``), pods that opt
in with HAMi's ``hami.io/gpu-scheduler-policy: topology-aware``; ``vcsched run`` reads both from the API
server and writes the cards it chose into each pod's Binding (``volcano.sh/vgpu-ids-new``)."""

from __future__ import annotations

import json

import pytest

from .conftest import A100, Kube, VcschedRunner, deviceshare_conf, pod

pytestmark = pytest.mark.asyncio

HAMI_SCORE = "hami.io/node-nvidia-score"
TOPOLOGY_AWARE = {"hami.io/gpu-scheduler-policy": "topology-aware"}
CARD_MIB = 40960


def hami_scores(uuids: list[str], score) -> str:
    """``hami.io/node-nvidia-score`` as HAMi's device plugin marshals its ``ListDeviceScore``."""
    return json.dumps([{"uuid": a, "score": {b: score(a, b) for b in uuids if b != a}} for a in uuids],
                      separators=(",", ":"))


async def hami_node(kube: Kube, name: str, uuids: list[str], score) -> None:
    """A node as volcano-vgpu-device-plugin registers its cards (hami-core, 10 slots, 40 GiB each) and as
    HAMi's device plugin publishes their pair scores."""
    register = "".join(f"{u},10,{CARD_MIB},{A100},true,hami-core:" for u in uuids)
    await kube.node(name, cpu="32", memory="128Gi",
                    annotations={"volcano.sh/node-vgpu-register": register, HAMI_SCORE: hami_scores(uuids, score)},
                    extra={"volcano.sh/vgpu-number": str(10 * len(uuids)),
                           "volcano.sh/vgpu-memory": str(CARD_MIB * len(uuids)),
                           "volcano.sh/vgpu-cores": str(100 * len(uuids))})


def whole_cards(name: str, n: int, annotations: dict[str, str] | None = None, node_name: str | None = None) -> dict:
    return pod(name, cpu="1", limits={"volcano.sh/vgpu-number": n, "volcano.sh/vgpu-cores": 100,
                                      "volcano.sh/vgpu-memory": CARD_MIB},
               annotations=annotations, node_name=node_name)


def cards(p: dict) -> list[str]:
    return [item.split(",")[0] for item in p["metadata"]["annotations"]["volcano.sh/vgpu-ids-new"].split(":") if item]


async def test_a_topology_aware_pod_gets_the_nvlink_pair(kube: Kube, vcsched: VcschedRunner):
    """Four cards, NVLink between a-c and b-d (HAMi: 100 per link on top of the PCIe path), PCIe elsewhere
    (same board, 20).  A pod asking two cards with ``topology-aware`` gets an NVLink pair; Volcano's
    binpack order alone would take a PCIe pair (tests/scenarios/test_interconnect.py: GPU-d and GPU-c)."""
    uuids = ["GPU-a", "GPU-b", "GPU-c", "GPU-d"]
    nvlink = {frozenset(("GPU-a", "GPU-c")), frozenset(("GPU-b", "GPU-d"))}
    await kube.conf_map(deviceshare_conf({"deviceshare.VGPUEnable": True, "deviceshare.SchedulePolicy": "binpack"}))
    await hami_node(kube, "dgx-0", uuids, lambda a, b: 200 if frozenset((a, b)) in nvlink else 20)
    await kube.create(whole_cards("pair", 2, TOPOLOGY_AWARE))
    vcsched.start()
    bound = await kube.eventually(lambda: kube.bound("default", "pair"), "pair bound")
    assert bound["spec"]["nodeName"] == "dgx-0"
    assert frozenset(cards(bound)) in nvlink


async def test_fragmentation_plans_a_small_pod_off_the_group_a_bigger_one_needs(kube: Kube, vcsched: VcschedRunner):
    """Eight cards in two NVLink groups of four (0-3, 4-7: 400 inside, cross-socket PCIe 10 across), card 4
    held by a running pod.  Under the fragmentation policy (look-ahead on, the default), a one-card
    topology-aware pod created before a four-card one is planned off group 0-3, which the four-card pod
    needs, and the four-card pod gets the whole group (tests/unit/test_lookahead_topology.py has the
    same case without the look-ahead: the one-card pod takes card 0 and the four-card pod is split)."""
    uuids = [f"GPU-{i}" for i in range(8)]
    await kube.conf_map(deviceshare_conf({"deviceshare.VGPUEnable": True,
                                          "deviceshare.SchedulePolicy": "fragmentation"}))
    await hami_node(kube, "dgx-0", uuids,
                    lambda a, b: 400 if uuids.index(a) // 4 == uuids.index(b) // 4 else 10)
    await kube.create(whole_cards("old", 1, node_name="dgx-0", annotations={
        "volcano.sh/vgpu-ids-new": f"GPU-4,NVIDIA,{CARD_MIB},100:", "volcano.sh/bind-phase": "success"}))
    await kube.pod_status("default", "old", "Running")
    await kube.create(whole_cards("one", 1, TOPOLOGY_AWARE))
    await kube.create(whole_cards("quad", 4, TOPOLOGY_AWARE))
    vcsched.start()
    one = await kube.eventually(lambda: kube.bound("default", "one"), "one bound")
    quad = await kube.eventually(lambda: kube.bound("default", "quad"), "quad bound")
    assert set(cards(quad)) == {"GPU-0", "GPU-1", "GPU-2", "GPU-3"}
    assert cards(one)[0] in {"GPU-5", "GPU-6", "GPU-7"}
