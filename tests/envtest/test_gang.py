"""Gang scheduling on the real API server: a PodGroup's pods are bound all together or not at all."""

from __future__ import annotations

import pytest

from .conftest import Kube, VcschedRunner, condition, pod, podgroup

pytestmark = pytest.mark.asyncio


async def test_a_gang_that_fits_is_bound_whole(kube: Kube, vcsched: VcschedRunner):
    await kube.node("n0", cpu="2")
    await kube.node("n1", cpu="2")
    await kube.create(podgroup("pg", 3))
    for i in range(3):
        await kube.create(pod(f"g{i}", group="pg"))
    vcsched.start()
    for i in range(3):
        await kube.eventually(lambda: kube.bound("default", f"g{i}"), f"g{i} bound")
    await kube.eventually(lambda: _phase(kube, "pg", "Running"), "the PodGroup Running")
    nodes = [(await kube.pod("default", f"g{i}"))["spec"]["nodeName"] for i in range(3)]
    assert sorted(set(nodes)) == ["n0", "n1"]  # 3 CPU asked of two 2-CPU nodes: both used


async def test_an_impossible_gang_binds_nothing_and_says_why(kube: Kube, vcsched: VcschedRunner):
    """Three pods of 3 CPU each on two 4-CPU nodes: two would fit, the gang of three never does."""
    await kube.node("n0", cpu="4")
    await kube.node("n1", cpu="4")
    await kube.create(podgroup("big", 3))
    for i in range(3):
        await kube.create(pod(f"b{i}", cpu="3", group="big"))
    # a small pod after it: scheduling goes on around the stuck gang
    await kube.create(pod("small", cpu="1"))
    vcsched.start()
    await kube.eventually(lambda: kube.bound("default", "small"), "the small pod bound")
    pg = await kube.eventually(lambda: _unschedulable(kube, "big"), "the gang's Unschedulable condition")
    cond = condition(pg, "Unschedulable")
    assert cond["status"] == "True"
    assert "3" in cond["message"]  # names the gang's size (e.g. "3/3 tasks in gang unschedulable: ...")
    reasons = []
    for i in range(3):
        p = await kube.eventually(lambda: _pod_scheduled_false(kube, f"b{i}"), f"b{i} PodScheduled=False")
        assert not p["spec"].get("nodeName")
        reasons.append(condition(p, "PodScheduled")["reason"])
    # as Volcano's TaskSchedulingReason: a pod that found a node but whose gang did not fit is
    # "Schedulable", the one that found none "Unschedulable"; both with PodScheduled=False
    assert set(reasons) <= {"Schedulable", "Unschedulable"} and "Unschedulable" in reasons
    # still nothing of the gang bound once its pods said why (each condition came after a full session)
    pods = await kube.list("/api/v1/namespaces/default/pods")
    assert [p["metadata"]["name"] for p in pods if p["spec"].get("nodeName")] == ["small"]
    # and the pods carry Warning FailedScheduling events
    assert await kube.eventually(lambda: kube.events("default", reason="FailedScheduling", name="b0"),
                                 "b0's FailedScheduling event")


async def _phase(kube: Kube, name: str, phase: str) -> dict | None:
    pg = await kube.podgroup("default", name)
    return pg if pg and (pg.get("status") or {}).get("phase") == phase else None


async def _unschedulable(kube: Kube, name: str) -> dict | None:
    pg = await kube.podgroup("default", name)
    c = condition(pg, "Unschedulable")
    return pg if c and c.get("status") == "True" else None


async def _pod_scheduled_false(kube: Kube, name: str) -> dict | None:
    p = await kube.pod("default", name)
    c = condition(p, "PodScheduled")
    return p if c and c.get("status") == "False" else None
