"""The sink's background writes (writers.py: ``Writes``, ``EventRecorder``): one at a time per object, only the
latest, never waited for."""

from __future__ import annotations

import asyncio

import pytest

from vcsched.cache import Cache
from vcsched.framework.effects import PodGroupStatus, QueueStatus
from vcsched.kube.provisional import Provisional, ProvisionalGroups
from vcsched.kube.sink import KubeSink
from vcsched.kube.source import CacheFeeder
from vcsched.kube.writers import Writes

from .conftest import client_for, podgroup

pytestmark = pytest.mark.asyncio


class Recorder:
    """A write that records what it was given and waits, each time, until the test lets it finish."""

    def __init__(self) -> None:
        self.started: list[QueueStatus] = []
        self.gates: list[asyncio.Event] = []

    async def __call__(self, e: QueueStatus) -> None:
        gate = asyncio.Event()
        self.started.append(e)
        self.gates.append(gate)
        await gate.wait()

    def finish_all(self) -> None:
        for g in self.gates:
            g.set()


def q(name: str, cpu: str) -> QueueStatus:
    return QueueStatus(name, {"cpu": cpu})


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_write_waiting_for_a_slot_is_replaced_by_a_newer_one():
    writes, write = Writes(workers=1), Recorder()
    writes.submit(("Queue", "a"), q("a", "1"), write)  # takes the only slot
    writes.submit(("Queue", "b"), q("b", "1"), write)  # waits
    writes.submit(("Queue", "b"), q("b", "2"), write)  # replaces it
    await settle()
    assert write.started == [q("a", "1")]
    write.finish_all()
    await settle()
    write.finish_all()
    assert await writes.drain(None)
    assert write.started == [q("a", "1"), q("b", "2")] and len(writes) == 0


async def test_one_write_at_a_time_per_object_and_the_same_write_is_not_sent_twice():
    writes, write = Writes(workers=4), Recorder()
    key = ("Queue", "a")
    writes.submit(key, q("a", "1"), write)
    await settle()
    writes.submit(key, q("a", "1"), write)  # the write in flight: dropped
    writes.submit(key, q("a", "2"), write)  # after it
    writes.submit(key, q("a", "3"), write)  # replaces the one after it
    await settle()
    assert write.started == [q("a", "1")] and len(writes) == 2
    write.finish_all()
    await settle()
    assert write.started == [q("a", "1"), q("a", "3")]
    writes.submit(key, q("a", "3"), write)  # in flight again: dropped
    write.finish_all()
    assert await writes.drain(None)
    assert write.started == [q("a", "1"), q("a", "3")]


async def test_a_spaced_kind_is_written_at_most_once_per_spacing_with_the_latest_asked_for():
    """A queue's status.allocated changes with every pod placed: written once a spacing (the schedule
    period: Volcano's one session per period), the latest value, while another kind goes at once."""
    writes, write = Writes(workers=4, spacing={"Queue": 0.2}), Recorder()
    loop = asyncio.get_running_loop()
    key = ("Queue", "a")
    writes.submit(key, q("a", "1"), write)
    await settle()
    write.finish_all()
    await settle()
    done = loop.time()
    writes.submit(key, q("a", "2"), write)
    writes.submit(key, q("a", "3"), write)  # replaces 2 while it waits out the spacing
    writes.submit(("PodGroup", "ns", "pg"), q("pg", "1"), write)  # no spacing: at once
    await settle()
    assert write.started == [q("a", "1"), q("pg", "1")]
    write.finish_all()
    while len(write.started) < 3:
        await asyncio.sleep(0.01)
    assert loop.time() - done >= 0.19
    assert write.started == [q("a", "1"), q("pg", "1"), q("a", "3")]
    write.finish_all()
    assert await writes.drain(None)
    # what holds the next write back is forgotten once the spacing is over (a pending pod's condition
    # is a spaced kind: one record per pod ever written would grow without end)
    assert key in writes._written
    await asyncio.sleep(0.25)
    assert not writes._written


async def test_drain_gives_up_at_its_deadline_and_cancel_drops_what_waits():
    writes, write = Writes(workers=1), Recorder()
    writes.submit(("Queue", "a"), q("a", "1"), write)
    writes.submit(("Queue", "b"), q("b", "1"), write)
    loop = asyncio.get_running_loop()
    assert not await writes.drain(loop.time() + 0.05)
    await writes.cancel()
    assert len(writes) == 0 and write.started == [q("a", "1")]


async def test_events_are_written_in_the_background_and_an_object_gets_a_burst_then_no_more(api):
    """client-go's recorder: emit never waits; its spam filter lets 25 events of one object through,
    then one per 5 minutes; another object has its own burst."""
    from vcsched.kube.writers import SPAM_BURST, EventRecorder

    from .conftest import client_for

    client = client_for(api)
    events = EventRecorder(client, "volcano")
    try:
        for i in range(SPAM_BURST + 5):
            events.emit("Pod", "ns", "p", "u1", "Warning", "FailedScheduling", f"attempt {i}")
        events.emit("Pod", "ns", "q", "u2", "Normal", "Scheduled", "Successfully assigned ns/q to n0")
        assert await events.flush(10)
        written = api.all("", "events")
        assert len([e for e in written if e["involvedObject"]["name"] == "p"]) == SPAM_BURST
        assert [e["reason"] for e in written if e["involvedObject"]["name"] == "q"] == ["Scheduled"]
        assert events.filtered == 5
    finally:
        await events.close()
        await client.close()


async def test_a_later_sessions_writes_never_overtake_an_earlier_sessions_waiting_for_its_binds():
    """Session A's status writes wait for its Binding's answer; session B, with no bind, writes the same
    PodGroup's later status: B's must not go first, or A's older status would be the one left waiting
    (Writes keeps the last asked for) and written last."""
    sink = KubeSink(None, None)  # type: ignore[arg-type]  # _send_after touches neither
    answered = asyncio.Event()
    bind = asyncio.create_task(answered.wait())
    sent: list[str] = []
    sink._send_after([bind], [lambda: sent.append("A: Inqueue")])
    sink._send_after([], [lambda: sent.append("B: Running")])
    await settle()
    assert sent == []
    answered.set()
    await settle()
    assert sent == ["A: Inqueue", "B: Running"]
    sink._send_after([], [lambda: sent.append("C")])  # nothing waits any more: at once
    assert sent[-1] == "C"


async def test_a_status_that_waited_for_its_predicted_podgroup_never_replaces_a_later_sessions(api):
    """Session A asks Inqueue for a predicted PodGroup: its write waits for the controller's create.  The
    create answers, and session B, which asked Running in the same turn of the loop (its pod assumed
    bound), submits its write at once, before the waiting write's turn comes.  Submitted then, A's Inqueue
    would replace B's Running (Writes keeps the last submitted): the API would keep Inqueue while the
    cache shows Running, and no later session would write it again.  A's write is dropped instead."""
    client = client_for(api)
    cache = Cache()
    feeder = CacheFeeder(cache)
    feeder.provisional = prov = ProvisionalGroups(feeder, ("volcano",), inherit_owner_annotations=False)
    sink = KubeSink(client, feeder)
    try:
        stored = api.put(podgroup("pg1"))
        made = asyncio.get_running_loop().create_future()
        prov.by_uid["pod-uid"] = prov.by_group["default/pg1"] = Provisional("pod-uid", "default/pg1", stored, made)
        feeder.podgroup(stored)
        inqueue = PodGroupStatus("default", "pg1", "Inqueue", 0, 0, 0, [])
        running = PodGroupStatus("default", "pg1", "Running", 0, 0, 0, [])
        await sink.apply([inqueue])  # waits for the create
        assert feeder.asked_status["default/pg1"]["phase"] == "Inqueue"
        assert prov.confirm("pod-uid", stored)  # the create answered: A's write is due in the next turn
        await sink.apply([running])  # B, in this same turn: submitted at once
        await settle()
        assert await sink.writes.drain(None)
        assert api.get("scheduling.volcano.sh", "podgroups", "default", "pg1")["status"]["phase"] == "Running"
        assert not feeder.asked_status and cache.jobs["default/pg1"].podgroup.phase == "Running"
        patches = [r for r in api.requests if r.method.value == "PATCH" and r.resource.plural == "podgroups"]
        assert len(patches) == 1
    finally:
        await sink.cancel()
        await client.close()
