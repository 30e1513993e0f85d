"""The sink's bind lanes: a job a session places a few pods of is not queued behind a gang's thousands."""

from __future__ import annotations

import asyncio

import pytest

from .conftest import conf_map, eventually, node, pod, podgroup, queue

pytestmark = pytest.mark.asyncio

CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: predicates
  - name: proportion
"""


def gang_bind(r) -> bool:
    return r.subresource == "binding" and (r.name or "").startswith("gang-")


async def test_a_freed_bind_slot_goes_to_a_single_pod_before_a_gangs_waiting_binds(api, start):
    """Four bind slots, a gang of 40 placed: four of its binds on the wire (held), 36 waiting for a slot.
    A single pod placed next waits too; when the four are answered, the first freed slot is its own,
    not the 36 gang binds' that waited longer (they are held at the server until the end)."""
    api.put(queue("default"))
    api.put(queue("root"))
    api.put(conf_map(CONF))
    api.put(node("n1", cpu="64", memory="256Gi"))
    api.put(podgroup("gang", min_member=40))
    for i in range(40):
        api.put(pod(f"gang-{i}", "gang", cpu="100m"))
    first, rest = asyncio.Event(), asyncio.Event()
    api.fail(gang_bind, times=4, gate=first)
    api.fail(gang_bind, times=36, gate=rest)
    rt = await start(bind_workers=4)
    await eventually(lambda: sum(1 for r in api.requests if gang_bind(r)) == 4 and rt.sink.binds_in_flight == 40,
                     "four of the gang's binds on the wire, the others waiting for a slot")
    assert len(rt.sink._binds) == 4  # the 36 waiting are held as data, not tasks (BindSlots.hold)
    api.put(podgroup("single"))
    api.put(pod("single-0", "single", cpu="100m"))
    await eventually(lambda: rt.sink.binds_in_flight == 41, "the single pod's bind waiting for a slot")
    first.set()
    await eventually(lambda: ("default", "single-0", "n1") in api.bindings, "the single pod bound")
    assert sum(1 for b in api.bindings if b[1].startswith("gang-")) == 4  # the 36 still held
    rest.set()
    await eventually(lambda: sum(1 for b in api.bindings if b[1].startswith("gang-")) == 40, "the gang bound")


async def test_a_sessions_status_writes_and_events_go_out_once_its_few_binds_are_answered(api, start, monkeypatch):
    """The pod's wait ends with its Binding: its PodGroup's status write and the events wait for the
    Binding's answer (here held at the server; the wait's bound, SENDS_WAIT, raised out of the way)."""
    from vcsched.kube import sink

    monkeypatch.setattr(sink, "SENDS_WAIT", 30.0)
    api.put(queue("default"))
    api.put(queue("root"))
    api.put(conf_map(CONF))
    api.put(node("n1", cpu="8", memory="32Gi"))
    api.put(podgroup("pg1"))
    api.put(pod("p1", "pg1", cpu="100m"))
    answered = asyncio.Event()
    api.fail(lambda r: r.subresource == "binding", reply_gate=answered)

    def status_or_event(r) -> bool:
        return r.resource is not None and (r.resource.plural == "events" or (
            r.resource.plural == "podgroups" and r.method.value in ("PATCH", "PUT")))

    rt = await start(schedule_period=3600)  # one session: nothing starts another while the bind is held
    await eventually(lambda: any(r.subresource == "binding" for r in api.requests), "p1's Binding sent")
    await asyncio.sleep(0.2)
    assert rt.sessions == 1 and not [r for r in api.requests if status_or_event(r)]
    answered.set()
    await eventually(lambda: api.bindings, "p1 bound")
    await eventually(lambda: any(status_or_event(r) for r in api.requests), "the status and events written")
