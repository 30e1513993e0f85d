"""Batch semantics at kube-scheduler latency (issue 25) on the real API server: order and outcome.

How fast is measured by ``vcsched bench --apiserver --latency`` (docs/real-apiserver-bench.md), never
asserted here.  What is asserted: with an hourly ``--schedule-period``, a pod created after the first
session is bound, so a cycle its creation started bound it; its PodGroup was written before its
Binding (etcd's revisions order the two); a Volcano gang still waits for all its members.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from .conftest import Kube, VcschedRunner
from .faults_support import sessions
from .test_bare_pods import bare_pod

pytestmark = pytest.mark.asyncio

PODGROUPS = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups"


async def _revisions(kube: Kube, path: str, rv: str, seen: dict[str, int], bound: bool) -> None:
    """The etcd revision of each object's ADDED event (``bound``: of the first event showing the pod on
    a node), by name."""
    async for ev in kube.client.watch(path, {"resourceVersion": rv}, 120):
        obj = ev.get("object") or {}
        name = (obj.get("metadata") or {}).get("name")
        if not name or name in seen:
            continue
        if (bound and (obj.get("spec") or {}).get("nodeName")) or (not bound and ev.get("type") == "ADDED"):
            seen[name] = int(obj["metadata"]["resourceVersion"])


async def test_a_bare_pod_is_bound_by_the_cycle_its_creation_starts_its_podgroup_written_first(
        kube: Kube, vcsched: VcschedRunner):
    await kube.node("n0")
    proc = vcsched.start(period="1h")
    await kube.eventually(lambda: sessions(proc) >= 1, "the first session")
    _, rv = await kube.client.list("/api/v1/namespaces/default/pods", {"limit": 1}, first_page_only=True)
    groups: dict[str, int] = {}
    binds: dict[str, int] = {}
    watches = [asyncio.ensure_future(_revisions(kube, PODGROUPS, rv, groups, bound=False)),
               asyncio.ensure_future(_revisions(kube, "/api/v1/namespaces/default/pods", rv, binds, bound=True))]
    try:
        pods = [await kube.create(bare_pod(f"p{i}", cpu="100m")) for i in range(3)]
        for p in pods:
            name = p["metadata"]["name"]
            await kube.eventually(lambda: kube.bound("default", name), f"{name} bound within the hour")
        await kube.eventually(lambda: len(binds) == 3 and len(groups) == 3, "the watches caught up")
    finally:
        for w in watches:
            w.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.gather(*watches)
    for p in pods:
        pg = f"podgroup-{p['metadata']['uid']}"
        assert groups[pg] < binds[p["metadata"]["name"]], "a Binding went out before its PodGroup was written"
        bound = await kube.bound("default", p["metadata"]["name"])
        assert bound["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == pg


async def test_a_gang_waits_for_its_members_whatever_starts_the_cycles(kube: Kube, vcsched: VcschedRunner):
    """Cycles started by each member's creation decide as Volcano's periodic sessions: a gang of three is
    bound only once its third member exists."""
    from .conftest import podgroup

    await kube.node("n0")
    proc = vcsched.start(period="1h")
    await kube.eventually(lambda: sessions(proc) >= 1, "the first session")
    await kube.create(podgroup("g", min_member=3))
    members = []
    for i in range(2):
        m = bare_pod(f"g{i}", cpu="100m")
        m["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "g"}
        members.append(await kube.create(m))

    async def saw_both() -> bool:
        events = await kube.events("default", reason="Unschedulable", name="g")
        return any("/2 tasks in gang unschedulable" in e["message"] for e in events)

    await kube.eventually(saw_both, "a cycle that saw both members kept the gang out")
    assert not [p for p in await kube.list("/api/v1/namespaces/default/pods") if p["spec"].get("nodeName")]
    third = bare_pod("g2", cpu="100m")
    third["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "g"}
    await kube.create(third)
    for i in range(3):
        await kube.eventually(lambda: kube.bound("default", f"g{i}"), f"g{i} bound")
