"""Cycles when there is work (issue 25): which watched changes start a cycle, and that one does start.

The runtime tests run with an hourly ``--schedule-period``: after the first session, only a change
can have started the session that binds a pod.  Nothing here asserts on speed.
"""

from __future__ import annotations

import asyncio
import copy

import pytest

from vcsched.cache import Cache
from vcsched.kube.api import HYPERNODES, NODES, PODGROUPS, PODS, QUEUES
from vcsched.kube.cycles import CycleTrigger
from vcsched.kube.source import CacheFeeder

from .conftest import cluster, eventually, node, pod, podgroup, queue


def _rv(obj: dict, rv: int) -> dict:
    obj = copy.deepcopy(obj)
    obj["metadata"]["resourceVersion"] = str(rv)
    obj["metadata"].setdefault("uid", f"uid-{obj['metadata']['name']}")
    return obj


@pytest.fixture
def fed():
    cache = Cache()
    feeder = CacheFeeder(cache)
    trigger = CycleTrigger(cache)
    handlers = {kind: trigger.wrap(kind, h) for kind, h in feeder.handlers().items()}
    return cache, trigger, handlers


def pokes(trigger: CycleTrigger) -> int:
    n = sum(trigger.reasons.values())
    trigger.take()
    return n


def test_a_node_starts_a_cycle_when_what_predicates_read_changes_not_on_a_heartbeat(fed):
    cache, trigger, h = fed
    n = _rv(node("n0"), 1)
    n["status"]["conditions"][0]["lastHeartbeatTime"] = "2026-01-01T00:00:00Z"
    h[NODES].upsert(n)
    assert pokes(trigger) == 1 and trigger.reasons["node"] == 1
    beat = _rv(n, 2)
    beat["status"]["conditions"][0]["lastHeartbeatTime"] = "2026-01-01T00:00:10Z"
    h[NODES].upsert(beat)
    assert sum(trigger.reasons.values()) == 1 and not trigger.work.is_set()
    labelled = _rv(beat, 3)
    labelled["metadata"]["labels"]["zone"] = "a"
    h[NODES].upsert(labelled)
    assert trigger.work.is_set() and trigger.reasons["node"] == 2
    trigger.take()
    h[NODES].delete(labelled)
    assert trigger.work.is_set() and trigger.reasons["node deleted"] == 1


def test_a_queue_starts_a_cycle_when_opened_not_when_its_allocated_is_written(fed):
    cache, trigger, h = fed
    q = _rv(queue("q1"), 1)
    q["status"]["state"] = "Closed"
    h[QUEUES].upsert(q)
    trigger.take()
    written = _rv(q, 2)
    written["status"]["allocated"] = {"cpu": "1"}  # this process's own queues/status write, echoed
    h[QUEUES].upsert(written)
    assert not trigger.work.is_set()
    opened = _rv(written, 3)
    opened["status"]["state"] = "Open"
    h[QUEUES].upsert(opened)
    assert trigger.work.is_set() and trigger.reasons["queue"] == 2


def test_a_pod_starts_a_cycle_when_new_and_pending_finished_or_gone_not_when_its_binding_is_echoed(fed):
    cache, trigger, h = fed
    h[PODGROUPS].upsert(_rv(podgroup("pg1"), 1))
    trigger.take()
    other = _rv(pod("other", "pg1"), 2)
    other["spec"]["schedulerName"] = "default-scheduler"
    h[PODS].upsert(other)  # pending for another scheduler: nothing for us to decide
    assert not trigger.work.is_set()
    p = _rv(pod("p1", "pg1"), 3)
    h[PODS].upsert(p)
    assert trigger.work.is_set() and trigger.reasons["pod pending"] == 1
    trigger.take()
    bound = _rv(p, 4)
    bound["spec"]["nodeName"] = "n0"
    h[PODS].upsert(bound)  # our Binding, as the watch shows it
    assert not trigger.work.is_set()
    done = _rv(bound, 5)
    done["status"]["phase"] = "Succeeded"
    h[PODS].upsert(done)
    assert trigger.work.is_set() and trigger.reasons["pod finished"] == 1
    trigger.take()
    h[PODS].delete(done)
    assert trigger.work.is_set() and trigger.reasons["pod deleted"] == 1
    trigger.take()
    elsewhere = _rv(other, 6)
    elsewhere["spec"]["nodeName"] = "n1"
    h[PODS].upsert(elsewhere)
    trigger.take()
    h[PODS].delete(elsewhere)  # another scheduler's pod leaves a node: room for ours
    assert trigger.work.is_set()


def test_a_podgroup_status_this_process_wrote_is_no_change_another_phase_is(fed):
    cache, trigger, h = fed
    pg = _rv(podgroup("pg1"), 1)
    h[PODGROUPS].upsert(pg)
    assert trigger.reasons["podgroup"] == 1
    trigger.take()
    # the session decided Inqueue: the sink puts it in the cache at once, then the watch echoes the write
    cache.set_podgroup_status("default/pg1", "Inqueue", 0, 0, 0, [])
    echo = _rv(pg, 2)
    echo["status"] = {"phase": "Inqueue"}
    h[PODGROUPS].upsert(echo)
    assert not trigger.work.is_set()
    bigger = _rv(echo, 3)
    bigger["spec"]["minMember"] = 3
    h[PODGROUPS].upsert(bigger)
    assert trigger.work.is_set() and trigger.reasons["podgroup"] == 2


def test_the_echo_of_an_earlier_status_write_neither_takes_the_cache_back_nor_starts_a_cycle():
    """One session wrote Inqueue, the next Running; the watch brings the Inqueue write's echo after
    that: the cache keeps Running (on its way to the API) and no cycle starts to write it again."""
    from vcsched.framework.effects import PodGroupStatus
    from vcsched.kube.source import podgroup_status_out

    cache = Cache()
    feeder = CacheFeeder(cache)
    trigger = CycleTrigger(cache)
    h = {kind: trigger.wrap(kind, handler) for kind, handler in feeder.handlers().items()}
    pg = _rv(podgroup("pg1"), 1)
    h[PODGROUPS].upsert(pg)
    trigger.take()
    inqueue = PodGroupStatus("default", "pg1", "Inqueue", 0, 0, 0, [])
    running = PodGroupStatus("default", "pg1", "Running", 1, 0, 0, [])
    feeder.ask_podgroup_status(inqueue)
    feeder.ask_podgroup_status(running)  # the next session, before the first write was answered
    echo = _rv(pg, 2)
    echo["status"] = {"phase": "Inqueue"}
    h[PODGROUPS].upsert(echo)
    assert cache.jobs["default/pg1"].podgroup.phase == "Running" and not trigger.work.is_set()
    # the Inqueue write's own answer: Running is still on its way
    feeder.podgroup_status_answered("default/pg1", podgroup_status_out(inqueue), echo)
    assert cache.jobs["default/pg1"].podgroup.phase == "Running"
    answer = _rv(pg, 3)
    answer["status"] = {"phase": "Running", "running": 1}
    feeder.podgroup_status_answered("default/pg1", podgroup_status_out(running), answer)
    assert not feeder.asked_status and not trigger.work.is_set()
    # from now on the API's status is the cache's: someone else's change is a change
    other = _rv(answer, 4)
    other["status"] = {"phase": "Pending"}
    h[PODGROUPS].upsert(other)
    assert cache.jobs["default/pg1"].podgroup.phase == "Pending" and trigger.work.is_set()


def test_a_status_that_will_not_be_written_leaves_the_cache_for_the_apis():
    """A write that fails for good, or waits on a prediction that is refused, gives the cache back
    the API's status: a later session then sees what the API holds and writes its own again."""
    from vcsched.framework.effects import PodGroupStatus
    from vcsched.kube.source import podgroup_status_out

    cache = Cache()
    feeder = CacheFeeder(cache)
    pg = _rv(podgroup("pg1"), 1)
    pg["status"] = {"phase": "Inqueue"}
    feeder.podgroup(pg)
    running = PodGroupStatus("default", "pg1", "Running", 1, 0, 0, [])
    feeder.ask_podgroup_status(running)
    assert cache.jobs["default/pg1"].podgroup.phase == "Running"
    feeder.podgroup_status_answered("default/pg1", podgroup_status_out(running), None)
    assert cache.jobs["default/pg1"].podgroup.phase == "Inqueue" and not feeder.asked_status
    # a newer status asked for before the older write failed stays: it is still on its way
    feeder.ask_podgroup_status(running)
    later = PodGroupStatus("default", "pg1", "Running", 2, 0, 0, [])
    feeder.ask_podgroup_status(later)
    feeder.podgroup_status_answered("default/pg1", podgroup_status_out(running), None)
    assert cache.jobs["default/pg1"].podgroup.running == 2
    # an answer that comes after a newer event from the watch does not become what the cache goes back to
    newer = _rv(pg, 5)
    newer["status"] = {"phase": "Pending"}
    feeder.podgroup(newer)
    stale = _rv(pg, 4)
    stale["status"] = {"phase": "Running", "running": 2}
    feeder.podgroup_status_answered("default/pg1", podgroup_status_out(later), stale)
    assert feeder.podgroups["default/pg1"] is newer
    feeder.ask_podgroup_status(running)
    feeder.podgroup_status_answered("default/pg1", podgroup_status_out(running), None)
    assert cache.jobs["default/pg1"].podgroup.phase == "Pending"
    # the write waited on a prediction the controller's create refused: none goes out, the API's stays
    feeder.ask_podgroup_status(running)
    feeder.forget_provisional("pod-uid", "default/pg1", drop_podgroup=True)
    assert cache.jobs["default/pg1"].podgroup.phase == "Pending" and not feeder.asked_status


def test_any_change_of_another_kind_starts_a_cycle(fed):
    cache, trigger, h = fed
    h[HYPERNODES].upsert({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                          "metadata": {"name": "s0", "resourceVersion": "1"},
                          "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": "n0"}}}]}})
    assert trigger.work.is_set() and trigger.reasons["hypernodes"] == 1


@pytest.mark.asyncio
async def test_a_pod_created_after_the_first_session_is_bound_by_a_cycle_its_creation_started(api, start):
    cluster(api, nodes=1)
    rt = await start(schedule_period=3600)
    await eventually(lambda: rt.sessions >= 1, "the first session")
    api.put(podgroup("pg1"))
    api.put(pod("p1", "pg1"))
    await eventually(lambda: api.bindings, "p1 bound within the hour")
    assert api.bindings[0][1] == "p1"
    assert rt.trigger.reasons["pod pending"] >= 1


@pytest.mark.asyncio
async def test_with_cycles_on_the_clock_only_a_change_starts_none(api, start):
    """``--cycle-coalesce off``: Volcano's loop, a session per period whatever happens."""
    cluster(api, nodes=1)
    rt = await start(schedule_period=3600, cycle_coalesce=None)
    await eventually(lambda: rt.sessions >= 1, "the first session")
    api.put(podgroup("pg1"))
    api.put(pod("p1", "pg1"))
    await eventually(lambda: rt.trigger.reasons["pod pending"] >= 1, "the pod seen")
    assert rt.sessions == 1 and not api.bindings


@pytest.mark.asyncio
async def test_no_cycle_decides_between_a_watch_streams_end_and_the_next_one(api, start):
    """An API server restarted ends every watch; until the server has accepted a kind's next watch (whose
    answer may be a 410: events were lost), what the cache holds of it may be stale: a pending pod's
    creation starts no cycle that binds it then."""
    cluster(api, nodes=1)
    rt = await start(schedule_period=3600)
    await eventually(lambda: rt.sessions >= 1, "the first session")
    nodes = rt._watched[NODES]
    await eventually(lambda: nodes.streaming, "the node watch open")
    gate = asyncio.Event()
    api.fail(lambda r: r.resource is not None and r.resource.plural == "nodes" and r.params.get("watch") == "true",
             gate=gate)
    api.drop_watches()
    await eventually(lambda: not nodes.streaming, "the node watch ended")
    api.put(podgroup("pg1"))
    api.put(pod("p1", "pg1"))
    await eventually(lambda: rt.trigger.reasons["pod pending"] >= 1, "the pod seen")
    n = rt.sessions
    await asyncio.sleep(0.3)  # cycles would have run by now; none may decide
    assert rt.sessions == n and not api.bindings
    gate.set()
    await eventually(lambda: api.bindings, "p1 bound once the node watch is back")


@pytest.mark.asyncio
async def test_the_gap_after_a_cycle_runs_from_its_end_not_from_the_work():
    """``wait_for_work``'s ``not_before`` (the last cycle's end plus its gap): work that comes after the
    gap has passed waits only the coalescing window; work that comes within it waits for its end.
    (Bounds on waits, not speed: the first is nothing against a gap of seconds, the second at least it.)"""
    from vcsched.kube.cycles import wait_for_work

    trigger = CycleTrigger(Cache())
    loop = asyncio.get_running_loop()
    trigger.poke("pod pending")
    began = loop.time()
    await wait_for_work(trigger, 60.0, 0.0, not_before=began - 5.0)  # the gap ended 5 s ago
    assert loop.time() - began < 1.0
    trigger.take()
    trigger.poke("pod pending")
    began = loop.time()
    await wait_for_work(trigger, 60.0, 0.0, not_before=began + 0.2)
    assert loop.time() - began >= 0.19


def _condition_patches(api, name: str) -> int:
    return sum(1 for r in api.requests if r.method.value == "PATCH" and r.resource is not None
               and r.resource.plural == "pods" and r.subresource == "status" and r.name == name)


def _scheduled_message(api, name: str) -> str:
    conds = (api.get("", "pods", "default", name).get("status") or {}).get("conditions") or []
    return next((c.get("message") or "" for c in conds if c.get("type") == "PodScheduled"), "")


@pytest.mark.asyncio
async def test_a_waiting_gang_members_condition_is_written_at_most_once_a_period_the_latest(api, start):
    """A gang short of members: every cycle its pending pods' message counts them anew ("4 Pending", then
    "5 Pending"), and cycles start with every member created.  Volcano writes a pod's condition once per
    session, one session a period: here at most once a period too, the first at once, the latest last."""
    cluster(api, nodes=1)
    api.put(podgroup("gang", min_member=9))
    rt = await start(schedule_period=2.0)  # the arrivals below take a fraction of it, even on a busy machine
    await eventually(lambda: rt.sessions >= 1, "the first session")
    api.put(pod("g0", "gang"))
    await eventually(lambda: "1 Pending" in _scheduled_message(api, "g0"), "g0's first condition")
    for i in range(1, 6):  # each starts a cycle; the message of g0 changes every time
        api.put(pod(f"g{i}", "gang"))
        await eventually(lambda: rt.trigger.reasons["pod pending"] >= i + 1, f"g{i} seen")
        await asyncio.sleep(0.02)
    await eventually(lambda: "6 Pending" in _scheduled_message(api, "g0"), "g0's latest condition")
    assert rt.sessions >= 6
    assert _scheduled_message(api, "g0").startswith("pod group is not ready, 6 Pending, 9 minAvailable")
    # once at once, then the latest a period later; arrivals took well under a period
    assert _condition_patches(api, "g0") == 2
    # a FailedScheduling event goes with each write (once it is answered), not with each cycle
    def failed_scheduling():
        return sorted(e["message"].split(",")[1] for e in api.all("", "events") if e["reason"] == "FailedScheduling"
                      and e["involvedObject"]["name"] == "g0")
    await eventually(lambda: len(failed_scheduling()) >= 2, "the latest write's event")
    assert failed_scheduling() == [" 1 Pending", " 6 Pending"]


@pytest.mark.asyncio
async def test_a_condition_asked_back_while_a_newer_one_waits_out_the_period_is_what_stays(api, start):
    """g0 holds "2 Pending"; a third member comes ("3 Pending", which waits out the period) and goes
    again before it is written: the session after asks for "2 Pending", what g0 holds, and that is
    what g0 keeps, not the "3 Pending" that waited."""
    cluster(api, nodes=1)
    api.put(podgroup("gang", min_member=9))
    api.put(pod("g0", "gang"))
    api.put(pod("g1", "gang"))
    rt = await start(schedule_period=1.0)
    assert rt.scheduler.state.condition_spacing == 1.0  # sessions give a job's conditions once a period:
    rt.scheduler.state.condition_spacing = 0.0  # here every session asks, and the writes keep the period
    await eventually(lambda: "2 Pending" in _scheduled_message(api, "g0"), "g0's first condition")
    api.put(pod("g2", "gang"))
    await eventually(lambda: ("PodCondition", "default", "g0") in rt.sink.writes, "3 Pending waiting")
    api.remove("", "pods", "default", "g2")
    n = rt.sessions
    await eventually(lambda: rt.sessions > n and ("PodCondition", "default", "g0") not in rt.sink.writes,
                     "the period over")
    assert "2 Pending" in _scheduled_message(api, "g0")
