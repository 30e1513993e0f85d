"""Faults real clusters have: conflicts, 5xx, timeouts, dropped watches, expired resourceVersions."""

from __future__ import annotations

import asyncio

import pytest

from .conftest import cluster, eventually, node, pod, podgroup

pytestmark = pytest.mark.asyncio


def is_bind(r) -> bool:
    return r.subresource == "binding"


def bind_posts(api, name=None):
    return [r for r in api.requests if is_bind(r) and (name is None or r.name == name)]


async def test_409_on_bind_means_bound_elsewhere_no_second_bind(api, start):
    cluster(api, nodes=1)
    api.put(podgroup("pg1"))
    p = api.put(pod("p1", "pg1"))
    # someone else binds p1 between our list and our bind: the API holds p1 on n0 by the time it answers
    # our bind 409 (the other binder's write is made with the 409, not after it: made later, a session
    # could see p1 pending again in between and bind it, which is right for a pod nobody bound)
    api.fail(lambda r: is_bind(r), status=409,
             effect=lambda: api.update("", "pods", "default", "p1", {"spec": {"nodeName": "n0"}}))
    rt = await start()
    await eventually(lambda: bind_posts(api), "a bind attempt")
    await eventually(lambda: p["metadata"]["uid"] not in rt.feeder.assumed, "resynced")
    # the resync took the API's word: p1 runs on n0 in the cache
    assert rt.cache.tasks[p["metadata"]["uid"]].node_name == "n0"
    # let sessions run: the pod is not bound a second time
    n = rt.sessions
    await eventually(lambda: rt.sessions >= n + 5, "more sessions")
    assert len(bind_posts(api)) == 1
    assert rt.sink.bind_failures == 0


async def test_500s_and_timeouts_on_bind_are_retried_and_bind_once(api, start):
    cluster(api, nodes=1)
    api.put(podgroup("pg1"))
    api.put(pod("p1", "pg1"))
    api.put(pod("p2", "pg1"))
    api.fail(lambda r: is_bind(r) and r.name == "p1", status=500, times=2)
    api.fail(lambda r: is_bind(r) and r.name == "p1", status=429, times=1)
    # p2's first bind is held past the client timeout and then applied (a lost reply): the retry gets 409
    api.fail(lambda r: is_bind(r) and r.name == "p2", delay=0.6, times=1)
    rt = await start(timeout=0.3)
    await eventually(lambda: len(api.bindings) == 2, "both bound")
    assert [b[1] for b in api.bindings].count("p1") == 1 and [b[1] for b in api.bindings].count("p2") == 1
    assert len(bind_posts(api, "p1")) == 4
    await eventually(lambda: not rt.feeder.assumed, "assumptions settled")
    n = rt.sessions
    await eventually(lambda: rt.sessions >= n + 3, "more sessions")
    assert len(api.bindings) == 2 and rt.sink.bind_failures == 0


async def test_a_failed_bind_puts_the_task_back_to_pending(api, start):
    cluster(api, nodes=1)
    api.put(podgroup("pg1"))
    p = api.put(pod("p1", "pg1"))
    api.fail(lambda r: is_bind(r), status=500, times=4)  # every attempt of the first bind
    rt = await start()
    await eventually(lambda: rt.sink.bind_failures == 1, "bind given up")
    # the condition and event Volcano writes on a bind failure
    await eventually(lambda: any(e["reason"] == "FailedScheduling" and "failed to bind to node n0" in e["message"]
                                 for e in api.all("", "events")), "FailedScheduling")
    # a later session binds it: the task was pending again, its resources free
    await eventually(lambda: api.bindings, "bound on a later session")
    assert api.get("", "pods", "default", "p1")["spec"]["nodeName"] == "n0"
    assert rt.cache.tasks[p["metadata"]["uid"]].node_name == "n0"


async def test_status_patch_conflict_is_reread_and_retried(api, start):
    cluster(api, nodes=1)
    api.put(podgroup("pg1"))
    api.put(pod("p1", "pg1"))
    api.fail(lambda r: r.resource is not None and r.resource.plural == "podgroups" and r.method.value == "PATCH",
             status=409, times=1)
    await start()
    await eventually(lambda: (api.get("scheduling.volcano.sh", "podgroups", "default", "pg1").get("status") or {})
                     .get("phase") == "Running", "podgroup Running")


async def test_a_status_write_given_up_is_made_again_by_a_later_session(api, start):
    """The cache takes a session's PodGroup status at once; when its write fails for good, the cache
    takes the API's status back, so that a later session finds the difference and writes it again
    (else the cache, a step ahead of the API, would never ask for it)."""
    cluster(api, nodes=1)
    api.put(podgroup("pg1"))
    api.put(pod("p1", "pg1"))
    refused = api.fail(lambda r: r.resource is not None and r.resource.plural == "podgroups"
                       and r.method.value == "PATCH" and b'"phase":"Running"' in r.body, status=422, times=1)
    rt = await start()
    await eventually(lambda: refused.hits == 1, "the write of Running refused")
    await eventually(lambda: (api.get("scheduling.volcano.sh", "podgroups", "default", "pg1").get("status") or {})
                     .get("phase") == "Running", "podgroup Running, written by a later session")
    assert rt.sink.bind_failures == 0


async def test_a_dropped_watch_resumes_without_losing_or_replaying(api, start):
    cluster(api, nodes=1)
    api.put(podgroup("pg1"))
    rt = await start()
    await eventually(lambda: rt.synced.is_set(), "synced")
    lists_before = len([r for r in api.requests if r.method.value == "GET" and r.name is None
                        and r.params.get("watch") is None])
    # watches drop; while they are down, a pod arrives, a node is added and one deleted
    api.fail(lambda r: r.params.get("watch") == "true", status=503, times=3)
    api.drop_watches()
    # (p1 fits n9 only: the pods' watch may resume before the nodes' one, and a session between
    # the two would otherwise rightly bind it to n0, not yet known to be gone)
    api.put(pod("p1", "pg1", cpu="6"))
    api.put(node("n9", cpu="8"))
    api.remove("", "nodes", "", "n0")
    await eventually(lambda: api.bindings, "p1 bound after the watches resumed")
    assert api.bindings == [("default", "p1", "n9")]
    assert set(rt.cache.nodes) == {"n9"}
    # resumed from the last resourceVersion: no relist, each event applied once
    lists_after = len([r for r in api.requests if r.method.value == "GET" and r.name is None
                       and r.params.get("watch") is None])
    assert lists_after == lists_before
    resumed = [r for r in api.requests if r.params.get("watch") == "true" and r.resource.plural == "pods"]
    assert all(r.params.get("resourceVersion") for r in resumed)



async def test_shutdown_sends_no_queued_bind_and_waits_for_those_on_the_wire(api, start):
    """SIGTERM while a session's Binds wait for a slot: the two on the wire are answered before the
    scheduler exits (the API would carry them out anyway), the four still queued never go out, so their
    pods are pending for the successor rather than bound behind its back, and the exit is not held up
    by a backlog (the Lease is handed over at once)."""
    cluster(api, nodes=2)
    for i in range(6):
        api.put(podgroup(f"pg{i}"))
        api.put(pod(f"p{i}", f"pg{i}"))
    answer = asyncio.Event()
    api.fail(is_bind, gate=answer, times=100)
    rt = await start(bind_workers=2)
    await eventually(lambda: len(bind_posts(api)) == 2 and rt.sink.binds_in_flight == 6,
                     "two Binds on the wire, four queued")
    rt.stop_event.set()
    await eventually(lambda: rt.sink.closing, "shutting down")
    answer.set()
    assert await asyncio.wait_for(rt.task, 5) == 0
    assert len(bind_posts(api)) == 2
    assert len(api.bindings) == 2
    assert rt.sink.bound == 2


async def test_shutdown_drops_a_gangs_held_binds_and_leaves_their_pods_pending(api, start):
    """A gang's binds beyond the free slots wait as data (BindSlots.hold). SIGTERM: the two on the wire
    are answered, the eighteen held never go out, and the cache holds them pending, not assumed."""
    cluster(api, nodes=0)
    for i in range(2):
        api.put(node(f"n{i}", memory="64Gi"))
    api.put(podgroup("gang", min_member=20))
    for i in range(20):
        api.put(pod(f"g{i}", "gang", cpu="100m"))
    answer = asyncio.Event()
    api.fail(is_bind, gate=answer, times=100)
    rt = await start(bind_workers=2)
    await eventually(lambda: len(bind_posts(api)) == 2 and rt.sink.binds_in_flight == 20,
                     "two Binds on the wire, eighteen held")
    assert len(rt.sink._binds) == 2
    rt.stop_event.set()
    await eventually(lambda: rt.sink.closing, "shutting down")
    assert rt.sink.binds_in_flight == 2 and not rt.feeder.assumed.keys() - {
        t.uid for t in rt.cache.tasks.values() if t.name in {r.name for r in bind_posts(api)}}
    answer.set()
    assert await asyncio.wait_for(rt.task, 5) == 0
    assert len(bind_posts(api)) == 2 and len(api.bindings) == 2
    held = [t for t in rt.cache.tasks.values() if t.name not in {r.name for r in bind_posts(api)}]
    assert len(held) == 18 and all(not t.node_name for t in held)
