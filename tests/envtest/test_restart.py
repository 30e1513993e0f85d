"""A restart on the real API server: ``vcsched run`` killed (SIGKILL) and started again rebuilds its device
ledger from the bound pods' annotations (spec/devices.md §6.3.6), so new pods never overcommit a card."""

from __future__ import annotations

import pytest

from .conftest import Kube, VcschedRunner
from .test_devices import VGPU_CONF, card_use, vgpu_node, vgpu_pod

pytestmark = pytest.mark.asyncio

CARD = 10000  # MiB per card
RUNNING = {"containerStatuses": [{"name": "main", "ready": True, "restartCount": 0, "image": "busybox", "imageID": "",
                                  "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}}}]}


async def pods(kube: Kube) -> list[dict]:
    return await kube.list("/api/v1/namespaces/default/pods")


def use_per_card(all_pods: list[dict]) -> dict[str, int]:
    total: dict[str, int] = {}
    for p in all_pods:
        ids = (p["metadata"].get("annotations") or {}).get("volcano.sh/vgpu-ids-new")
        if p["spec"].get("nodeName") and ids:
            for card, mib in card_use(ids).items():
                total[card] = total.get(card, 0) + mib
    return total


async def test_a_restart_rebuilds_the_device_ledger_from_bound_pods(kube: Kube, vcsched: VcschedRunner):
    await kube.conf_map(VGPU_CONF)
    # two cards of 10000 MiB, binpack: a scheduler that forgot what the cards hold would put both 4000 MiB
    # pods of after the restart on one card (6000 + 8000); the node's extended resources (20000 MiB in all)
    # would not stop it: only the per-card ledger does
    await vgpu_node(kube, "gpu-0", [("GPU-a", 10, CARD), ("GPU-b", 10, CARD)])
    for name in ("big-0", "big-1"):
        await kube.create(vgpu_pod(name, 6000))
    first = vcsched.start()
    await kube.eventually(lambda: _bound_count(kube, 2), "the two 6000 MiB pods bound")
    before = await pods(kube)
    bound = [p for p in before if p["spec"].get("nodeName")]
    assert use_per_card(before) == {"GPU-a": 6000, "GPU-b": 6000}  # 6000 + 6000 > one card
    # what the device plugin and kubelet do next: one pod handed over (bind-phase success), both running
    for p in bound:
        await kube.pod_status("default", p["metadata"]["name"], "Running", **RUNNING)
    await kube.patch(f"/api/v1/namespaces/default/pods/{bound[0]['metadata']['name']}",
                     {"metadata": {"annotations": {"volcano.sh/bind-phase": "success"}}})
    first.kill()

    second = vcsched.start()
    # new work after the restart: two 4000 MiB pods fit exactly beside the 6000 on each card
    for name in ("small-0", "small-1"):
        await kube.create(vgpu_pod(name, 4000))
    for name in ("small-0", "small-1"):
        await kube.eventually(lambda: kube.bound("default", name), f"{name} bound after the restart")
    after = await pods(kube)
    use = use_per_card(after)
    assert all(mib <= CARD for mib in use.values()), use
    assert use == {"GPU-a": 10000, "GPU-b": 10000}
    assert second.alive()


async def _bound_count(kube: Kube, n: int) -> bool:
    return sum(1 for p in await pods(kube) if p["spec"].get("nodeName")) >= n
