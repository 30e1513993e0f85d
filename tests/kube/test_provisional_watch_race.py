"""A predicted PodGroup whose watch event comes before the controller's create has answered (issue 25).

The controller's create and the scheduler's PodGroup watch are two connections: the watch may bring
the created PodGroup (the API's status: Pending) before the create's reply reaches the controller in
the same process.  The status the session gave the predicted PodGroup (Inqueue: enqueued, its pod
Binding) is on its way to the API, waiting for that reply.  The PodGroup the reply brings and the
watched one both take it (CacheFeeder.with_asked_status), or the cache says Pending for a
group that was enqueued, a cycle starts for the change and enqueues it a second time (its status
written and its events recorded again).  kmock applies the create and holds only its reply.
"""

from __future__ import annotations

import asyncio

import pytest

from vcsched.kube.api import PODGROUPS

from .conftest import eventually
from .conftest import node as kube_node
from .conftest import queue
from .test_provisional import SCHED, bare_pod, is_pg_create, running


def pod_patches(api) -> list:
    """PATCHes of pods themselves (not their status): the controller's group annotation."""
    return [r for r in api.requests if r.method.value == "PATCH" and r.resource is not None
            and r.resource.plural == "pods" and r.subresource is None]


def podgroup_status_writes(api, name: str) -> list:
    return [r for r in api.requests if r.method.value in ("PATCH", "PUT") and r.resource is not None
            and r.resource.plural == "podgroups" and r.name == name]


@pytest.mark.asyncio
async def test_the_watched_podgroup_before_the_creates_reply_keeps_the_sessions_status(api):
    api.put(kube_node("n0"))
    api.put(queue("default"))
    api.put(queue("root"))
    made, replied = asyncio.Event(), asyncio.Event()
    # the controller's create of p1's PodGroup: held until `made`, then stored (its ADDED goes to the
    # watches), its reply held until `replied`
    api.fail(is_pg_create, gate=made, reply_gate=replied)
    async with running(api) as rt:
        p1 = api.put(bare_pod("p1"))
        uid = p1["metadata"]["uid"]
        name = f"podgroup-{uid}"
        key = f"default/{name}"
        await eventually(lambda: uid in rt.feeder.assumed, "p1 decided and assumed on its node")
        predicted = rt.cache.jobs[key].podgroup
        assert not predicted.uid and predicted.phase == "Inqueue"  # the session's status on the prediction
        podgroup_pokes = rt.trigger.reasons["podgroup"]
        made.set()
        await eventually(lambda: key in rt._watched[PODGROUPS].store, "the scheduler's watch has p1's PodGroup")
        assert rt.feeder.provisional.waiting(uid) is not None  # the controller has not heard back yet
        watched = rt.cache.jobs[key].podgroup
        assert watched.uid  # the API's PodGroup has replaced the prediction
        assert watched.phase == "Inqueue"  # with the session's status, not the API's Pending
        assert rt.trigger.reasons["podgroup"] == podgroup_pokes  # nothing a cycle would decide again
        replied.set()
        await eventually(lambda: [b[1] for b in api.bindings] == ["p1"], "p1 bound")
        await eventually(lambda: uid not in rt.feeder.assumed, "the binding's echo")
        rt.trigger.poke("the period")  # the next cycle, which sees p1 bound: the period's, started by hand
        await eventually(lambda: (api.get(SCHED, "podgroups", "default", name) or {})
                         .get("status", {}).get("phase") == "Running", "p1's PodGroup Running")
        assert not pod_patches(api)  # the Binding carried the group annotation
        # Inqueue once (the first session's, sent after the create's reply), then Running: not Inqueue twice
        phases = [(r.data or {}).get("status", {}).get("phase") for r in podgroup_status_writes(api, name)]
        assert phases == ["Inqueue", "Running"], phases
