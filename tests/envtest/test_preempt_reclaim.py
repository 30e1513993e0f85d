"""preempt and reclaim on the real API server: ``vcsched run`` evicts as Volcano's evictor does (the
conditions through pods/status, a Warning event, then a DELETE with the pod's uid as precondition) and
binds the waiting pod once the victim is gone.

A bare control plane has no kubelet: a DELETE leaves a pod with a grace period Terminating (deletionTimestamp
set) until the test, playing the kubelet, removes it; a pod with terminationGracePeriodSeconds 0 goes at once."""

from __future__ import annotations

import pytest

from .conftest import Kube, VcschedRunner, condition, pod, podgroup, priority_class, queue

pytestmark = pytest.mark.asyncio

def conf_with(actions: str) -> str:
    """Volcano's default tiers less overcommit, with ``actions``."""
    return f"""
actions: "{actions}"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


PREEMPT_CONF = conf_with("enqueue, allocate, preempt, backfill")
RECLAIM_CONF = conf_with("enqueue, allocate, reclaim, backfill")

RUNNING = {"containerStatuses": [{"name": "main", "ready": True, "restartCount": 0, "image": "busybox", "imageID": "",
                                  "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}}}]}


async def run_bound(kube: Kube, ns: str, names: list[str]) -> None:
    """Wait until each pod is bound, then write what its kubelet would: Running."""
    for name in names:
        await kube.eventually(lambda: kube.bound(ns, name), f"{ns}/{name} bound")
        await kube.pod_status(ns, name, "Running", **RUNNING)


async def test_a_high_priority_pod_preempts_a_low_one(kube: Kube, vcsched: VcschedRunner):
    await kube.conf_map(PREEMPT_CONF)
    await kube.ensure(priority_class("envtest-low", 10))
    await kube.ensure(priority_class("envtest-high", 1000))
    await kube.node("n0", cpu="4")
    await kube.create(podgroup("low", 1, priority_class="envtest-low"))
    low = {}
    for i in range(2):
        # the default grace period: evicted, they stay Terminating until "their kubelet" is done
        low[f"low-{i}"] = await kube.create(pod(f"low-{i}", cpu="2", group="low", priority_class="envtest-low",
                                                 grace=None))
    vcsched.start()
    await run_bound(kube, "default", list(low))
    await kube.create(podgroup("high", 1, priority_class="envtest-high"))
    await kube.create(pod("high-0", cpu="2", group="high", priority_class="envtest-high"))
    victim = await kube.eventually(lambda: _terminating(kube, list(low)), "a low pod evicted (Terminating)")
    name = victim["metadata"]["name"]
    # exactly one victim; the conditions Volcano's evictor writes, and a Warning Evict event
    assert [n for n in low if n != name and (await kube.pod("default", n))["metadata"].get("deletionTimestamp")] == []
    assert condition(victim, "Ready")["reason"] == "Evict"
    assert condition(victim, "DisruptionTarget")["reason"] == "PreemptionByScheduler"
    ev = await kube.eventually(lambda: kube.events("default", reason="Evict", kind="Pod", name=name), "Evict event")
    assert ev[0]["type"] == "Warning"
    # the kubelet finishes the victim: the preemptor is bound where it was
    await kube.delete(f"/api/v1/namespaces/default/pods/{name}")
    bound = await kube.eventually(lambda: kube.bound("default", "high-0"), "the preemptor bound")
    assert bound["spec"]["nodeName"] == "n0"
    survivor = next(n for n in low if n != name)
    assert (await kube.pod("default", survivor))["metadata"].get("deletionTimestamp") is None


async def test_a_starved_queue_reclaims_its_share(kube: Kube, vcsched: VcschedRunner):
    """Two queues of equal weight; q1 took the whole node while q2 was empty; q2's job reclaims half."""
    await kube.conf_map(RECLAIM_CONF)
    await kube.create(queue("q1"))
    await kube.create(queue("q2"))
    await kube.node("n0", cpu="4", memory="8Gi")
    q1_pods = [f"a{i}" for i in range(4)]
    for name in q1_pods:  # one PodGroup per pod (bare pods), grace 0: a DELETE removes them at once
        await kube.create(pod(name, cpu="1", queue="q1"))
    vcsched.start()
    await run_bound(kube, "default", q1_pods)
    await kube.create(podgroup("b", 2, queue="q2"))
    for i in range(2):
        await kube.create(pod(f"b{i}", cpu="1", group="b"))
    for i in range(2):
        await kube.eventually(lambda: kube.bound("default", f"b{i}"), f"b{i} bound after the reclaim")
    left = [p["metadata"]["name"] for p in await kube.list("/api/v1/namespaces/default/pods")
            if p["metadata"]["name"].startswith("a")]
    assert len(left) == 2, left  # q1 keeps its deserved half, no more was taken
    evicted = sorted(set(q1_pods) - set(left))
    for name in evicted:
        ev = await kube.events("default", reason="Evict", kind="Pod", name=name)
        assert ev and ev[0]["type"] == "Warning"


async def _terminating(kube: Kube, names: list[str]) -> dict | None:
    for n in names:
        p = await kube.pod("default", n)
        if p and p["metadata"].get("deletionTimestamp"):
            return p
    return None
