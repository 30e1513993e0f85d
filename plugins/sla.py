"""sla: a job that has waited its allowed time goes first, is admitted and keeps what it holds
(plugins/sla/sla.go).

A job's waiting time is its PodGroup's ``volcano.sh/sla-waiting-time`` annotation, else its
``sla-waiting-time`` annotation (``JobInfo.waiting_time``; a Job's annotations reach its PodGroup),
else the plugin's ``sla-waiting-time`` argument; a job with none has no SLA.  Durations are Go's
(``1h2m3s4ms5us6ns``).  Registers:

- JobOrderFn: jobs with a waiting time before jobs without; between two, the earlier deadline
  (creation time + waiting time) first.
- JobEnqueueableFn and JobPipelinedFn: Permit once the job has waited its time since its PodGroup's
  creation (on the session clock), else Abstain.  A Permit in an earlier tier outvotes the later
  tiers' Rejects: the job is admitted by ``enqueue``, and ``allocate`` keeps its allocations (the job
  counts as pipelined) even while fewer than ``minAvailable`` tasks fit.

Where vcsched is stricter: Volcano logs an argument that is not a string, does not parse or is not
above zero and runs without a global waiting time; vcsched refuses the configuration, naming the
argument.  An annotation that does not parse is logged and ignored, as in Volcano; in Kubernetes mode,
where no input check stops it, the PodGroup also gets a Warning event ``InvalidSlaWaitingTime`` naming the
annotation and its value, once per PodGroup, annotation and value (what was reported is kept across
sessions in ``SchedulerState.plugins``), not once per session.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vcsched.api.duration import DurationError
from vcsched.api.job_info import JobInfo, parse_waiting_time
from vcsched.api.types import JOB_WAITING_TIME_KEYS, Vote
from vcsched.framework.arguments import ArgumentError, Arguments
from vcsched.framework.effects import Event
from vcsched.framework.interface import Plugin, Point

if TYPE_CHECKING:
    from vcsched.framework.session import Session

JOB_WAITING_TIME = "sla-waiting-time"
INVALID_WAITING_TIME_REASON = "InvalidSlaWaitingTime"


@dataclass(slots=True)
class SlaMemory:
    """What sla keeps across sessions: each PodGroup's waiting-time annotations as last looked at, by
    (PodGroup key, UID, annotation), so that a bad value is reported once, and again only when it changes
    or the PodGroup is made anew."""

    seen: dict[tuple[str, str, str], str] = field(default_factory=dict)


def invalid_waiting_time_message(key: str, raw: str, error: DurationError) -> str:
    """The event's message: the annotation and its value, what is wrong, what becomes of it."""
    return (f"metadata.annotations[{key}]: must be a duration above zero such as 1h2m3s, "
            f"got {json.dumps(raw)} ({error}); the sla plugin ignores it")


class SlaPlugin(Plugin):
    name = "sla"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.waiting_time: float | None = None  # the global waiting time, seconds
        if JOB_WAITING_TIME in arguments:
            raw = arguments.get_str(JOB_WAITING_TIME, "")
            where = f"{arguments.where}.{JOB_WAITING_TIME}"
            try:
                self.waiting_time = parse_waiting_time(raw)
            except DurationError as e:
                raise ArgumentError(f"{where}: expected a duration above zero such as 1h2m3s, got {raw!r} ({e})") from None

    def job_waiting_time(self, job: JobInfo) -> float | None:
        """``readJobWaitingTime``: the job's own, else the global one."""
        return job.waiting_time if job.waiting_time is not None else self.waiting_time

    def report_bad_annotations(self, ssn: "Session") -> None:
        """A Warning event on each PodGroup whose waiting-time annotation does not parse, the first time
        the value is seen (Volcano only logs it, from the cache; JobInfo logs it here too)."""
        memory = ssn.state.plugins.setdefault(self.name, SlaMemory())
        seen: dict[tuple[str, str, str], str] = {}
        for job in ssn.jobs.values():
            pg = job.podgroup
            if pg is None or not pg.annotations:
                continue
            for key in JOB_WAITING_TIME_KEYS:
                raw = pg.annotations.get(key)
                if raw is None:
                    continue
                ident = (pg.key, pg.uid, key)
                seen[ident] = raw
                if memory.seen.get(ident) == raw:
                    continue
                try:
                    parse_waiting_time(raw)
                except DurationError as e:
                    ssn.effects.append(Event("PodGroup", pg.namespace, pg.name, "Warning", INVALID_WAITING_TIME_REASON,
                                             invalid_waiting_time_message(key, raw, e)))
        # PodGroups gone from the session are forgotten
        memory.seen = seen

    def on_session_open(self, ssn: "Session") -> None:
        now = ssn.now
        self.report_bad_annotations(ssn)

        def job_order(l: JobInfo, r: JobInfo) -> int:
            lw, rw = self.job_waiting_time(l), self.job_waiting_time(r)
            if lw is None:
                return 0 if rw is None else 1
            if rw is None:
                return -1
            ld, rd = l.creation_timestamp + lw, r.creation_timestamp + rw
            return -1 if ld < rd else 1 if ld > rd else 0

        def permitted(job: JobInfo) -> Vote:
            waiting = self.job_waiting_time(job)
            if waiting is None or now - job.creation_timestamp < waiting:
                return Vote.Abstain
            return Vote.Permit

        ssn.add(Point.JOB_ORDER, self.name, job_order)
        ssn.add(Point.JOB_ENQUEUEABLE, self.name, permitted)
        ssn.add(Point.JOB_PIPELINED, self.name, permitted)
