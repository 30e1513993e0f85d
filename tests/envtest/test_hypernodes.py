"""HyperNodes on the real API server: watched from the chart's CRD, a broken tree logged while the loop
runs on, and a cluster without the CRD scheduled as one without HyperNodes (issue 18)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vcsched.envtest import CRD_DIR

from .conftest import Kube, VcschedRunner, pod

pytestmark = pytest.mark.asyncio

CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/hypernodes.topology.volcano.sh"


def hypernode(name: str, tier: int, members: list[dict]) -> dict:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": tier, "members": members}}


def child(name: str) -> dict:
    return {"type": "HyperNode", "selector": {"exactMatch": {"name": name}}}


def _logged(vcsched_proc, event: str):
    return lambda: [r for r in vcsched_proc.records() if r.get("event", "").startswith(event)]


async def test_a_broken_tree_is_logged_and_the_loop_runs_on(kube: Kube, vcsched: VcschedRunner):
    await kube.node("n0")
    await kube.create(hypernode("s0", 1, [{"type": "Node", "selector": {"exactMatch": {"name": "n0"}}}]))
    # s0 claimed by two spines: Volcano's tree is not ready to schedule jobs with a network topology
    await kube.create(hypernode("spine-a", 2, [child("s0")]))
    await kube.create(hypernode("spine-b", 2, [child("s0")]))
    p = vcsched.start()
    (record, *_) = await kube.eventually(_logged(p, "HyperNodes are not ready to schedule"), "the broken tree logged")
    assert record["error"] == "HyperNode s0 already has a parent spine-a, and cannot set another parent spine-b"
    assert record["hypernode"] == "spine-b"
    await kube.create(pod("p0"))
    await kube.eventually(lambda: kube.bound("default", "p0"), "a pod without a topology bound all the same")


async def test_without_the_crd_the_cluster_is_scheduled_as_one_without_hypernodes(
        kube: Kube, vcsched: VcschedRunner, tmp_path: Path):
    await kube.client.request("DELETE", CRD)
    try:
        await kube.eventually(lambda: _crd_gone(kube), "the HyperNode CRD gone")
        await kube.node("n0")
        await kube.create(pod("p0"))
        p = vcsched.start()
        await kube.eventually(lambda: kube.bound("default", "p0"), "p0 bound: the caches synced without HyperNodes")
        assert await kube.eventually(_logged(p, "not served by the API server"), "the missing kind logged")
    finally:
        shutil.copy(CRD_DIR / "topology.volcano.sh_hypernodes.yaml", tmp_path)
        kube.cp.apply_crds(tmp_path)


async def _crd_gone(kube: Kube) -> bool:
    return await kube.get(CRD) is None
