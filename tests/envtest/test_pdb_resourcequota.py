"""pdb and resourcequota on the real API server: ``vcsched run`` watches policy/v1 PodDisruptionBudgets
and v1 ResourceQuotas (as the chart's ClusterRole allows), and a change of their status reaches the
next session.

The test control plane runs no kube-controller-manager, so no disruption controller or quota controller
writes their status: each test writes it through the status subresource, as those controllers would.
The API server's own quota admission is there, and checks pods against the status the test wrote."""

from __future__ import annotations

import asyncio

import pytest

from .conftest import Kube, VcschedRunner, condition, pod, podgroup, priority_class

pytestmark = pytest.mark.asyncio

PDB_CONF = """
actions: "enqueue, allocate, preempt"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: pdb
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
"""

QUOTA_CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: resourcequota
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
"""

RUNNING = {"conditions": [{"type": "Ready", "status": "True"}]}
PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
QUOTAS = "/api/v1/namespaces/team-a/resourcequotas"


def labelled(p: dict, **labels: str) -> dict:
    p["metadata"]["labels"] = labels
    return p


async def test_a_disruption_budget_holds_preempt_back_until_its_status_allows(kube: Kube, vcsched: VcschedRunner):
    await kube.conf_map(PDB_CONF)
    await kube.ensure(priority_class("envtest-low", 10))
    await kube.ensure(priority_class("envtest-high", 1000))
    await kube.node("n0", cpu="2")
    await kube.create(podgroup("low", 1, priority_class="envtest-low"))
    low = ["web-0", "web-1"]
    for name in low:
        await kube.create(labelled(pod(name, cpu="1", group="low", priority_class="envtest-low"), app="web"))
    await kube.client.request("POST", PDBS, body={
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}})
    # the disruption controller: two healthy, two desired, none allowed
    await kube.patch(f"{PDBS}/web/status", {"status": {"currentHealthy": 2, "desiredHealthy": 2, "expectedPods": 2,
                                                       "disruptionsAllowed": 0}})
    vcsched.start()
    for name in low:
        await kube.eventually(lambda: kube.bound("default", name), f"{name} bound")
        await kube.pod_status("default", name, "Running", **RUNNING)
    await kube.create(podgroup("high", 1, priority_class="envtest-high"))
    await kube.create(pod("high-0", cpu="1", group="high", priority_class="envtest-high"))
    await kube.eventually(lambda: _unschedulable(kube, "high-0"), "the preemptor found no room")
    await asyncio.sleep(2.0)  # some twenty sessions at 0.1 s: preempt had every chance to evict
    for name in low:
        assert (await kube.pod("default", name))["metadata"].get("deletionTimestamp") is None, name
    # the budget allows one: the next session preempts exactly one web pod
    await kube.patch(f"{PDBS}/web/status", {"status": {"desiredHealthy": 1, "disruptionsAllowed": 1}})
    bound = await kube.eventually(lambda: kube.bound("default", "high-0"), "the preemptor bound")
    assert bound["spec"]["nodeName"] == "n0"
    left = [p["metadata"]["name"] for p in await kube.list("/api/v1/namespaces/default/pods")
            if p["metadata"]["name"] in low]
    assert len(left) == 1, left


async def test_a_namespace_quota_holds_a_podgroup_until_its_status_allows(kube: Kube, vcsched: VcschedRunner):
    await kube.conf_map(QUOTA_CONF)
    await kube.node("n0", cpu="8")
    await kube.client.request("POST", QUOTAS, body={
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "rq"}, "spec": {"hard": {"cpu": "2"}}})
    # the quota controller: hard from the spec, nothing used yet
    await kube.patch(f"{QUOTAS}/rq/status", {"status": {"hard": {"cpu": "2"}, "used": {"cpu": "0"}}})
    await kube.create(podgroup("big", 1, ns="team-a", min_resources={"cpu": "3"}))
    await kube.create(podgroup("small", 1, ns="team-a", min_resources={"cpu": "1"}))
    vcsched.start()
    await kube.eventually(lambda: _phase(kube, "team-a", "small", "Inqueue"), "small enqueued")
    events = await kube.eventually(lambda: _quota_events(kube), "the quota event on big")
    quota = [e for e in events if e["message"].startswith("resource quota insufficient")]
    assert [(e["type"], e["message"]) for e in quota][:1] == [(
        "Normal", "resource quota insufficient, requested: map[cpu:{{3 0} {<nil>} 3 DecimalSI}], "
        "used: map[cpu:{{0 0} {<nil>} 0 DecimalSI}], limited: map[cpu:{{2 0} {<nil>} 2 DecimalSI}]")]
    assert (await kube.podgroup("team-a", "big"))["status"].get("phase") in (None, "", "Pending")
    # the quota is raised (spec, then the controller's status): big is let in
    await kube.patch(f"{QUOTAS}/rq", {"spec": {"hard": {"cpu": "4"}}})
    await kube.patch(f"{QUOTAS}/rq/status", {"status": {"hard": {"cpu": "4"}}})
    await kube.eventually(lambda: _phase(kube, "team-a", "big", "Inqueue"), "big enqueued")


async def _quota_events(kube: Kube) -> list[dict]:
    events = await kube.events("team-a", reason="Unschedulable", kind="PodGroup", name="big")
    return [e for e in events if e["message"].startswith("resource quota insufficient")]


async def _unschedulable(kube: Kube, name: str) -> bool:
    p = await kube.pod("default", name)
    cond = condition(p, "PodScheduled")
    return bool(cond and cond.get("status") == "False")


async def _phase(kube: Kube, ns: str, name: str, phase: str) -> bool:
    pg = await kube.podgroup(ns, name)
    return bool(pg and (pg.get("status") or {}).get("phase") == phase)
