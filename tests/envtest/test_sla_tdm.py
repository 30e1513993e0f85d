"""sla and tdm on the real API server: ``vcsched run`` with each plugin in the scheduler ConfigMap, on the
wall clock (what ``--now`` is to simulate).

- sla: the API server stamps creationTimestamp (whole seconds) itself, so waiting times here are seconds
  long and run out during the test.  JobOrderFn puts the earlier deadline (creation + waiting time) first,
  whatever the creation order; JobEnqueueableFn admits a job past its waiting time although proportion
  rejects its minResources.  A waiting-time annotation that does not parse gets a Warning event on its
  PodGroup, once per value, and the loop runs on.
- tdm: zone windows are chosen from the real clock (UTC, as plugins/tdm.py computes them): ``00:00-00:00``
  is open all day (an end not after the start is tomorrow's), and a one-hour window away from the current
  hour is closed for the whole test.  A preemptable pod goes to the open revocable node; a pod of the
  closed zone is evicted by ``shuffle``.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timezone

import pytest

from .conftest import Kube, VcschedRunner, condition, pod, podgroup

pytestmark = pytest.mark.asyncio

SOON = 20.0  # what a test waits for something that happens within a few sessions
WAIT_KEY = "volcano.sh/sla-waiting-time"
PODGROUPS = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups"
REVOCABLE = "volcano.sh/revocable-zone"
PREEMPTABLE = "volcano.sh/preemptable"
RUNNING = {"conditions": [{"type": "Ready", "status": "True"}]}


def sla_conf(arguments: str = "") -> str:
    args = f"    arguments: {{{arguments}}}" if arguments else ""
    return f"""
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: sla
{args}
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def annotated(obj: dict, **annotations: str) -> dict:
    obj["metadata"].setdefault("annotations", {}).update(annotations)
    return obj


async def test_sla_puts_the_earlier_deadline_first(kube: Kube, vcsched: VcschedRunner):
    """``old`` (waiting time 1h) is created a second before ``new`` (1s): new's deadline is the earlier, so
    new takes the one cpu and old waits.  Without sla, the older job would go first."""
    await kube.conf_map(sla_conf())
    await kube.node("n0", cpu="1")
    await kube.create(annotated(podgroup("old", 1), **{WAIT_KEY: "1h"}))
    await kube.create(pod("old-0", group="old"))
    await asyncio.sleep(1.1)  # creation times are whole seconds: old is strictly older
    await kube.create(annotated(podgroup("new", 1), **{WAIT_KEY: "1s"}))
    await kube.create(pod("new-0", group="new"))
    vcsched.start()
    bound = await kube.eventually(lambda: kube.bound("default", "new-0"), "new-0 bound", SOON)
    assert bound["spec"]["nodeName"] == "n0"
    await kube.eventually(lambda: _unschedulable(kube, "old-0"), "old-0 found no room", SOON)
    assert not (await kube.pod("default", "old-0"))["spec"].get("nodeName")


async def test_sla_admits_a_job_once_it_has_waited(kube: Kube, vcsched: VcschedRunner):
    """Both PodGroups ask 8 cpus of a 4-cpu cluster: proportion rejects them at enqueue.  ``late`` has no
    annotation and waits the plugin's 3s, then sla's Permit (first tier) admits it and its pod binds;
    ``patient``'s own 1h wins over the argument and it stays Pending."""
    await kube.conf_map(sla_conf("sla-waiting-time: 3s"))
    await kube.node("n0", cpu="4")
    await kube.create(pod("marker"))
    vcsched.start()
    await kube.eventually(lambda: kube.bound("default", "marker"), "the scheduler is running", SOON)
    created = time.monotonic()
    await kube.create(podgroup("late", 1, min_resources={"cpu": "8"}))
    await kube.create(annotated(podgroup("patient", 1, min_resources={"cpu": "8"}), **{WAIT_KEY: "1h"}))
    await kube.create(pod("late-0", group="late"))
    await kube.create(pod("patient-0", group="patient"))
    await kube.eventually(lambda: kube.bound("default", "late-0"), "late-0 bound", SOON)
    # the creation time is whole seconds, so 3s of waiting is more than 2 after the create
    assert time.monotonic() - created >= 2.0
    await kube.eventually(lambda: _phase_in(kube, "late", "Inqueue", "Running"), "late admitted", SOON)
    await asyncio.sleep(1.0)  # some ten sessions: patient, with room for its pod, is still not admitted
    assert not (await kube.pod("default", "patient-0"))["spec"].get("nodeName")
    assert (await kube.podgroup("default", "patient"))["status"].get("phase") in (None, "", "Pending")


async def _phase_in(kube: Kube, name: str, *phases: str) -> bool:
    pg = await kube.podgroup("default", name)
    return bool(pg and (pg.get("status") or {}).get("phase") in phases)


def invalid(key: str, value: str, problem: str) -> str:
    """The event's message for a waiting-time annotation that does not parse."""
    return (f'metadata.annotations[{key}]: must be a duration above zero such as 1h2m3s, got "{value}" '
            f"({problem}); the sla plugin ignores it")


async def _bad_events(kube: Kube) -> list[dict]:
    return await kube.events("default", reason="InvalidSlaWaitingTime", kind="PodGroup", name="bad")


async def test_a_bad_waiting_time_annotation_is_a_warning_event_once_per_value(kube: Kube, vcsched: VcschedRunner):
    """``soon`` is no duration: a Warning event on the PodGroup names the annotation and the value, once
    (not once a session); the job is scheduled as if it had none, and so are the others.  A new bad value
    is a new event; the loop runs on."""
    await kube.conf_map(sla_conf())
    await kube.node("n0", cpu="4")
    await kube.create(annotated(podgroup("bad", 1), **{WAIT_KEY: "soon"}))
    await kube.create(pod("bad-0", group="bad"))
    await kube.create(podgroup("other", 1))
    await kube.create(pod("other-0", group="other"))
    p = vcsched.start()
    events = await kube.eventually(lambda: _bad_events(kube), "the warning event", SOON)
    assert [(e["type"], e["message"]) for e in events] == [
        ("Warning", invalid(WAIT_KEY, "soon", 'time: invalid duration "soon"'))]
    assert events[0]["involvedObject"]["uid"] == (await kube.podgroup("default", "bad"))["metadata"]["uid"]
    for name in ("bad-0", "other-0"):
        await kube.eventually(lambda name=name: kube.bound("default", name), f"{name} bound", SOON)
    await asyncio.sleep(1.5)  # some fifteen sessions at 0.1 s: none reports it again
    assert [e.get("count") for e in await _bad_events(kube)] == [1]
    await kube.patch(f"{PODGROUPS}/bad", {"metadata": {"annotations": {WAIT_KEY: "0s"}}})
    await kube.eventually(lambda: _has_message(kube, invalid(WAIT_KEY, "0s", "invalid sla waiting time")),
                          "the event for the new value", SOON)
    await kube.create(pod("after"))
    await kube.eventually(lambda: kube.bound("default", "after"), "a pod created afterwards bound", SOON)
    assert p.alive()
    assert sorted(e.get("count") for e in await _bad_events(kube)) == [1, 1]


async def _has_message(kube: Kube, message: str) -> bool:
    return any(e["message"] == message for e in await _bad_events(kube))


async def _unschedulable(kube: Kube, name: str, reason: str = "") -> dict | None:
    p = await kube.pod("default", name)
    c = condition(p, "PodScheduled")
    return p if c and c.get("status") == "False" and reason in (c.get("message") or "") else None


# -- tdm -----------------------------------------------------------------------------------------------

def closed_window(now: datetime) -> str:
    """A one-hour window that stays closed for the next ten minutes at least, on tdm's UTC day."""
    return "13:00-14:00" if now.hour < 12 else "01:00-02:00"


def tdm_conf(closed: str) -> str:
    return f"""
actions: "enqueue, allocate, backfill, shuffle"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: tdm
    arguments:
      tdm.revocable-zone.day: "00:00-00:00"
      tdm.revocable-zone.night: "{closed}"
      tdm.evict.period: 1s
"""


async def _gone(kube: Kube, name: str) -> bool:
    p = await kube.pod("default", name)
    return p is None or p["metadata"].get("deletionTimestamp") is not None


async def _running_on(kube: Kube, name: str, node: str, **annotations: str) -> None:
    """A pod placed on ``node`` while its window was open, and running there (what a kubelet reports)."""
    await kube.create(pod(name, annotations=annotations, node_name=node))
    await kube.pod_status("default", name, "Running", **RUNNING)


async def test_tdm_open_revocable_node_takes_preemptable_pods_and_shuffle_evicts_closed_ones(
        kube: Kube, vcsched: VcschedRunner):
    """n-normal is the roomier node, so only tdm's node score sends the preemptable ``batch`` to the open
    revocable n-day.  n-night's window is closed: ``revoked`` (preemptable) is evicted by shuffle with
    Volcano's Evict event, ``kept`` (not preemptable) stays, and ``big`` (room on n-night only) is not
    placed there.  ``batch`` is not evicted (its window is open).  The loop runs on: a second pod of the closed
    zone is evicted an evict period later, and a pod created afterwards binds."""
    closed = closed_window(datetime.now(timezone.utc))
    await kube.conf_map(tdm_conf(closed))
    await kube.node("n-normal", cpu="8")
    await kube.node("n-day", cpu="4", labels={REVOCABLE: "day"})
    await kube.node("n-night", cpu="16", labels={REVOCABLE: "night"})
    await _running_on(kube, "revoked", "n-night", **{PREEMPTABLE: "true"})
    await _running_on(kube, "kept", "n-night", **{PREEMPTABLE: "false"})
    await kube.create(pod("batch", annotations={PREEMPTABLE: "true"}))
    await kube.create(pod("big", cpu="10"))
    p = vcsched.start()
    bound = await kube.eventually(lambda: kube.bound("default", "batch"), "batch bound", SOON)
    assert bound["spec"]["nodeName"] == "n-day"
    await kube.pod_status("default", "batch", "Running", **RUNNING)
    await kube.eventually(lambda: _gone(kube, "revoked"), "revoked evicted", SOON)
    evicted = await kube.events("default", reason="Evict", kind="Pod", name="revoked")
    assert [(e["type"], e["message"]) for e in evicted] == [("Warning", "Pod is evicted, because of shuffle")]
    why = await kube.eventually(lambda: _unschedulable(kube, "big", "revocable zone"),
                                "big's PodScheduled condition names the closed zone", SOON)
    assert condition(why, "PodScheduled")["message"] == (
        f"0/3 nodes are unavailable: 1 current time beyond revocable zone night:{closed}, 2 Insufficient cpu.")
    # the loop runs on: another pod of the closed zone goes a period later, a new pod binds
    await _running_on(kube, "revoked-2", "n-night", **{PREEMPTABLE: "true"})
    await kube.eventually(lambda: _gone(kube, "revoked-2"), "revoked-2 evicted", SOON)
    await kube.create(pod("after"))
    after = await kube.eventually(lambda: kube.bound("default", "after"), "a pod created afterwards bound", SOON)
    assert after["spec"]["nodeName"] == "n-normal"
    assert p.alive()
    for name in ("kept", "batch"):
        assert not await _gone(kube, name), name
    assert not (await kube.pod("default", "big"))["spec"].get("nodeName")
