"""Preemption against the API emulator: the victim deleted as Volcano's evictor does, the preemptor bound later."""

from __future__ import annotations

import pytest

from vcsched.api.types import TaskStatus

from .conftest import conf_map, eventually, node, pod, podgroup, queue

pytestmark = pytest.mark.asyncio

PREEMPT_CONF = """
actions: "enqueue, allocate, preempt, backfill"
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


def priority_class(name: str, value: int) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value}


def with_priority(obj: dict, cls: str, value: int) -> dict:
    obj["spec"]["priorityClassName"] = cls
    if obj["kind"] == "Pod":
        obj["spec"]["priority"] = value
    return obj


def is_pod_delete(r) -> bool:
    return r.resource is not None and r.resource.plural == "pods" and r.method.value == "DELETE"


async def test_preempt_deletes_one_victim_with_a_uid_precondition_and_binds_the_preemptor_later(api, start):
    api.put(queue("default"))
    api.put(conf_map(PREEMPT_CONF))
    api.put(priority_class("low", 10))
    api.put(priority_class("high", 1000))
    api.put(node("n0", cpu="4"))
    api.put(with_priority(podgroup("low"), "low", 10))
    low = {i: api.put(with_priority(pod(f"low-{i}", "low", cpu="2", node_name="n0"), "low", 10)) for i in (0, 1)}
    api.put(with_priority(podgroup("high"), "high", 1000))
    api.put(with_priority(pod("high-0", "high", cpu="2"), "high", 1000))
    held = api.fail(is_pod_delete, delay=0.3)
    rt = await start()
    # while the DELETE is held by the API server, the cache already holds the victim as Releasing
    # (cache.go · Evict), so no session counts it in use or picks it again
    await eventually(lambda: held.hits == 1, "the victim's DELETE sent")
    victim_uid = next(r.data["preconditions"]["uid"] for r in api.requests if is_pod_delete(r))
    assert held.released == 0 and rt.cache.tasks[victim_uid].status == TaskStatus.Releasing
    await eventually(lambda: api.bindings, "the preemptor bound")
    assert api.bindings == [("default", "high-0", "n0")]
    # exactly one victim, deleted with its uid as precondition
    deletes = [r for r in api.requests if is_pod_delete(r)]
    assert len(deletes) == 1, [r.name for r in deletes]
    victim = deletes[0].name
    assert deletes[0].data["preconditions"] == {"uid": low[int(victim[-1])]["metadata"]["uid"]}
    assert api.get("", "pods", "default", victim) is None
    survivor = f"low-{1 - int(victim[-1])}"
    assert api.get("", "pods", "default", survivor)["spec"]["nodeName"] == "n0"
    # before the DELETE, the conditions Volcano's evictor writes through pods/status
    status_patches = [r for r in api.requests if r.name == victim and r.subresource == "status"]
    assert status_patches and api.requests.index(status_patches[0]) < api.requests.index(deletes[0])
    conds = {c["type"]: c for c in status_patches[0].data["status"]["conditions"]}
    assert conds["Ready"]["reason"] == "Evict" and conds["DisruptionTarget"]["reason"] == "PreemptionByScheduler"
    # events: Warning Evict on the pod, Normal Evict on its PodGroup
    events = api.all("", "events")
    on_pod = [e for e in events if e["reason"] == "Evict" and e["involvedObject"]["kind"] == "Pod"]
    assert [(e["involvedObject"]["name"], e["type"]) for e in on_pod] == [(victim, "Warning")]
    assert on_pod[0]["message"].startswith("Pod is evicted, because of ")
    await eventually(lambda: any(e["reason"] == "Evict" and e["involvedObject"]["kind"] == "PodGroup"
                                 for e in api.all("", "events")), "the PodGroup's Evict event")
    on_pg = next(e for e in api.all("", "events") if e["reason"] == "Evict" and e["involvedObject"]["kind"] == "PodGroup")
    assert on_pg["involvedObject"]["name"] == "low" and on_pg["type"] == "Normal"
    # the preemptor binds in a later session than the eviction, and nothing more is evicted afterwards
    n = rt.sessions
    await eventually(lambda: rt.sessions >= n + 5, "more sessions")
    assert len([r for r in api.requests if is_pod_delete(r)]) == 1
    assert len(api.bindings) == 1
