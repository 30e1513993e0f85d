"""numa-aware on the real API server: ``vcsched run`` watches nodeinfo.volcano.sh Numatopologies from the
chart's CRD (as the chart's ClusterRole allows), places Guaranteed pods by their NUMA topology policy,
holds the CPUs it gave until the Numatopology changes, and takes a cluster without the CRD as one
without NUMA topologies (as for HyperNodes)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vcsched.envtest import CRD_DIR

from .conftest import Kube, VcschedRunner, condition, pod

pytestmark = pytest.mark.asyncio

NUMATOPOS = "/apis/nodeinfo.volcano.sh/v1alpha1/numatopologies"
CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/numatopologies.nodeinfo.volcano.sh"
POLICY = "single-numa-node"

CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: numa-aware
    arguments:
      weight: 10
"""


def numatopo(name: str, allocatable: str) -> dict:
    """Two NUMA nodes of four CPUs (one socket each, two threads a core), as the resource exporter writes."""
    detail = {str(c): {"numa": c // 4, "socket": c // 4, "core": c // 2} for c in range(8)}
    return {"apiVersion": "nodeinfo.volcano.sh/v1alpha1", "kind": "Numatopology", "metadata": {"name": name},
            "spec": {"policies": {"CPUManagerPolicy": "static", "TopologyManagerPolicy": POLICY},
                     "cpuDetail": detail, "numares": {"cpu": {"allocatable": allocatable, "capacity": 8}}}}


def guaranteed(name: str, cpu: str) -> dict:
    return pod(name, cpu=cpu, memory="1Gi", limits={"cpu": cpu, "memory": "1Gi"},
               annotations={"volcano.sh/numa-topology-policy": POLICY})


async def _waiting(kube: Kube, name: str) -> str | None:
    cond = condition(await kube.pod("default", name), "PodScheduled")
    if cond and cond.get("status") == "False" and "cannot be assigned by numa" in (cond.get("message") or ""):
        return cond["message"]
    return None


async def test_pods_are_placed_by_numa_topology_and_their_cpus_held(kube: Kube, vcsched: VcschedRunner):
    await kube.conf_map(CONF)
    await kube.node("n0", cpu="16")
    await kube.node("n1", cpu="16")
    try:
        # n0's free CPUs are two on each NUMA node: no single NUMA node holds four
        await kube.client.request("POST", NUMATOPOS, body=numatopo("n0", "2-3,6-7"))
        await kube.client.request("POST", NUMATOPOS, body=numatopo("n1", "0-7"))
        vcsched.start()
        await kube.create(guaranteed("a", "4"))
        assert (await kube.eventually(lambda: kube.bound("default", "a"), "a bound"))["spec"]["nodeName"] == "n1"
        # a later session: n1's first NUMA node is held for a (the exporter has not reported it)
        await kube.create(guaranteed("b", "4"))
        assert (await kube.eventually(lambda: kube.bound("default", "b"), "b bound"))["spec"]["nodeName"] == "n1"
        await kube.create(guaranteed("c", "4"))
        message = await kube.eventually(lambda: _waiting(kube, "c"), "c refused by numa-aware")
        assert "container main cannot be assigned by numa" in message
        # the exporter reports n0's CPUs free: the watched update reaches the next session
        await kube.patch(f"{NUMATOPOS}/n0", {"spec": {"numares": {"cpu": {"allocatable": "0-7"}}}})
        assert (await kube.eventually(lambda: kube.bound("default", "c"), "c bound"))["spec"]["nodeName"] == "n0"
    finally:
        await kube.client.request("DELETE", NUMATOPOS)


async def test_without_the_crd_the_cluster_is_scheduled_as_one_without_numa_topologies(
        kube: Kube, vcsched: VcschedRunner, tmp_path: Path):
    await kube.client.request("DELETE", CRD)
    try:
        await kube.eventually(lambda: _crd_gone(kube), "the Numatopology CRD gone")
        await kube.conf_map(CONF)
        await kube.node("n0")
        await kube.create(pod("plain"))
        await kube.create(guaranteed("numa", "2"))
        p = vcsched.start()
        await kube.eventually(lambda: kube.bound("default", "plain"), "a pod without a policy bound all the same")
        message = await kube.eventually(lambda: _numa_info_empty(kube, "numa"), "a pod with a policy waits")
        assert "numa info is empty" in message
        assert await kube.eventually(lambda: [r for r in p.records() if "not served by the API server"
                                              in r.get("event", "") and "numatopologies" in str(r)],
                                     "the missing kind logged")
    finally:
        shutil.copy(CRD_DIR / "nodeinfo.volcano.sh_numatopologies.yaml", tmp_path)
        kube.cp.apply_crds(tmp_path)


async def _numa_info_empty(kube: Kube, name: str) -> str | None:
    cond = condition(await kube.pod("default", name), "PodScheduled")
    if cond and cond.get("status") == "False" and "numa info is empty" in (cond.get("message") or ""):
        return cond["message"]
    return None


async def _crd_gone(kube: Kube) -> bool:
    return await kube.get(CRD) is None
