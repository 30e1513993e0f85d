"""Sessions run off the event loop: watches and the Lease go on while a session is busy."""

from __future__ import annotations

import threading

import pytest

from vcsched.plugins.priority import PriorityPlugin

from .conftest import WAIT, cluster, eventually, node, pod, podgroup

pytestmark = pytest.mark.asyncio


class Gate:
    """Holds the first session inside a plugin until the test lets it go."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.held_too_long = False
        self.thread: threading.Thread | None = None

    def plugin(self) -> type[PriorityPlugin]:
        gate = self

        class HeldPriority(PriorityPlugin):
            def on_session_open(self, ssn) -> None:  # type: ignore[no-untyped-def]
                if not gate.entered.is_set():
                    gate.thread = threading.current_thread()
                    gate.entered.set()
                    # a guard against a hang, not a timing: the loop lets it go as soon as it can run
                    gate.held_too_long = not gate.release.wait(WAIT)
                super().on_session_open(ssn)

        return HeldPriority


async def held_session(api, start):
    """A leader with one pending pod whose session is held inside a plugin: (runtime, gate)."""
    cluster(api, nodes=1)
    api.put(podgroup("pg1"))
    api.put(pod("p1", "pg1"))
    gate = Gate()
    rt = await start(leader_elect=True, identity="a")
    rt.scheduler._plugins["priority"] = gate.plugin()
    await eventually(gate.entered.is_set, "a session inside the held plugin")
    return rt, gate


async def test_watch_events_and_lease_renewals_flow_during_a_session(api, start):
    rt, gate = await held_session(api, start)
    # the session is held on a worker thread; the loop applies a watch event and renews the Lease
    assert gate.thread is not threading.main_thread()
    renewed = api.get("coordination.k8s.io", "leases", "volcano-system", "vcsched")["spec"]["renewTime"]
    api.put(node("n9"))
    await eventually(lambda: "n9" in rt.cache.nodes, "a node added while the session runs")
    await eventually(lambda: api.get("coordination.k8s.io", "leases", "volcano-system", "vcsched")["spec"][
        "renewTime"] != renewed, "the Lease renewed while the session runs")
    assert not api.bindings and rt.sessions == 0
    gate.release.set()
    await eventually(lambda: api.bindings, "the held session's bind")
    assert not gate.held_too_long
    assert rt.elector.leading.is_set() and not rt.elector.lost.is_set()


async def test_a_leader_that_lost_its_lease_during_a_session_writes_nothing(api, start):
    rt, gate = await held_session(api, start)
    # the renewals fail while the session runs: leadership is lost before its effects come back
    api.fail(lambda r: r.resource is not None and r.resource.plural == "leases", status=500, times=10**6)
    await eventually(rt.elector.lost.is_set, "leadership lost")
    gate.release.set()
    assert await rt.task == 1
    assert not gate.held_too_long
    assert not api.bindings and not [r for r in api.requests if r.subresource == "binding"]
    assert rt.sessions == 1


async def test_a_stop_during_a_session_finishes_the_cycle_and_waits_for_its_binds(api, start):
    cluster(api, nodes=1)
    api.put(podgroup("pg1"))
    api.put(pod("p1", "pg1"))
    slow = api.fail(lambda r: r.subresource == "binding", delay=0.2)
    gate = Gate()
    rt = await start()
    rt.scheduler._plugins["priority"] = gate.plugin()
    await eventually(gate.entered.is_set, "a session inside the held plugin")
    rt.stop_event.set()
    gate.release.set()
    assert await rt.task == 0
    # the cycle's bind was sent and answered before run() returned: a successor sees p1 bound
    assert slow.released == 1 and api.bindings == [("default", "p1", "n0")]
    assert rt.sink.bound == 1 and rt.sink.binds_in_flight == 0
