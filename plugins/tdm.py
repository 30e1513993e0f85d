"""tdm: time-division multiplexing of revocable nodes (plugins/tdm/tdm.go).

A *revocable node* carries the label ``volcano.sh/revocable-zone: <zone>``; the plugin's arguments
give each zone a daily window, ``tdm.revocable-zone.<zone>: "HH:MM-HH:MM"`` (any argument whose key
contains ``tdm.revocable-zone.`` names a zone: the rest of the key).  Only pods that may be revoked
run there (``TaskInfo.revocable_zone`` ``*``: the pod's ``volcano.sh/revocable-zone: "*"`` annotation,
or its ``volcano.sh/preemptable: "true"`` annotation), and only while the window is open; once it
closes, the ``shuffle`` action evicts them, a few per job and evict period.

Windows, as Volcano computes them on every call: today's date (UTC; Volcano uses the scheduler's
local zone, UTC in its images) at the start time, to today at the end time, or tomorrow at the end
time when the end is not after the start (so ``1:00-0:00`` is 23 hours and ``23:59-23:59`` 24).  The
window is open when the session clock, in whole seconds, is neither before the start nor after the
end.  An overnight window is therefore open only from its start to midnight: at 03:00 the window
``22:00-06:00`` starts today at 22:00, later.  That is Volcano's behaviour and vcsched keeps it.

Registers (Volcano's defaults; switches as usual):

- PredicateFn: a revocable node whose zone has no window (``revocable zone <z> not support``) or
  whose window is closed (``current time beyond revocable zone <z>:<window>``) is
  UnschedulableAndUnresolvable for every pod; an open one for pods that may not be revoked
  (``not allow to dispatch to revocable node``).  Other nodes pass.
- NodeOrderFn: 100 (MaxNodeScore) on an open revocable node for a pod that may be revoked, else 0.
- PreemptableFn: a preemptor that is itself preemptable (``volcano.sh/preemptable``, true when
  unset) or may be revoked rejects (no victims); otherwise the victims are the Running, preemptable
  tasks on non-revocable nodes, at most ``maxVictims`` per job.
- VictimTasksFn (``shuffle``): at most once per ``tdm.evict.period`` (default ``1m``, a Go
  duration; the time of the last look is kept across sessions, as Volcano's package variable), the
  Running preemptable tasks on revocable nodes of closed windows, at most ``maxVictims`` per job and
  zone.
- JobOrderFn: jobs whose PodGroup is not ``volcano.sh/preemptable`` first.
- JobPipelinedFn: Permit when the job is pipelined (ready + pipelined + pending best-effort tasks
  reach ``minAvailable``), else Reject.
- JobStarvingFn: a job that is not preemptable starves while it has Pending tasks.

``maxVictims`` (``getMaxPodEvictNum``) reads the job's disruption budget from its PodGroup:
``volcano.sh/jdb-max-unavailable`` (an integer or a percentage of the job's tasks, rounded up) allows
that many unavailable tasks, counting the tasks neither Running nor finished; else
``volcano.sh/jdb-min-available`` keeps that many Running; else, or when fewer run, one.

Where vcsched differs: a window that does not parse, a zone or period that is not a string and a
period that does not parse refuse the configuration, naming the argument (Volcano fails the zone's
nodes at every predicate, panics, or keeps ``1m``).  A NodeOrderFn error (a closed zone's node when
the predicate is switched off) costs the node every plugin's node-order score in Volcano; here it
scores 0 from tdm alone.  Victims come in a fixed order (zones as configured, nodes and their
tasks as listed) where Volcano walks maps.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vcsched.api.duration import DurationError, parse_go_duration
from vcsched.api.fit_errors import Status
from vcsched.api.job_info import JobInfo
from vcsched.api.node_info import NodeInfo
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import StatusCode, TaskStatus, Vote
from vcsched.framework.arguments import ArgumentError, Arguments
from vcsched.framework.interface import Plugin, Point

if TYPE_CHECKING:
    from vcsched.framework.session import Session

REVOCABLE_ZONE_PREFIX = "tdm.revocable-zone."
EVICT_PERIOD = "tdm.evict.period"
DEFAULT_EVICT_PERIOD = 60.0
DEFAULT_POD_EVICT_NUM = 1
MAX_NODE_SCORE = 100.0
NOT_ALLOWED = "not allow to dispatch to revocable node"
_DAY = 86400
_LAYOUT = "15:04"
_INT = re.compile(r"^[+-]?[0-9]+$")


class WindowError(ValueError):
    pass


def _parse_clock(value: str) -> tuple[int, int]:
    """Go's ``time.Parse("15:04", value)``: an hour of one or two digits below 24, ``:``, a minute of
    exactly two digits below 60, nothing more; Go's error texts."""

    def cannot(rest: str, elem: str) -> WindowError:
        return WindowError(f'parsing time "{value}" as "{_LAYOUT}": cannot parse "{rest}" as "{elem}"')

    i = 0
    while i < len(value) and i < 2 and "0" <= value[i] <= "9":
        i += 1
    if i == 0:
        raise cannot(value, "15")
    hour, rest = int(value[:i]), value[i:]
    if hour >= 24:
        raise WindowError(f'parsing time "{value}": hour out of range')
    if not rest.startswith(":"):
        raise cannot(rest, ":")
    rest = rest[1:]
    if len(rest) < 2 or not ("0" <= rest[0] <= "9" and "0" <= rest[1] <= "9"):
        raise cannot(rest, "04")
    minute, rest = int(rest[:2]), rest[2:]
    if minute >= 60:
        raise WindowError(f'parsing time "{value}": minute out of range')
    if rest:
        raise WindowError(f'parsing time "{value}": extra text: "{rest}"')
    return hour, minute


@dataclass(frozen=True, slots=True)
class RevocableWindow:
    """A zone's daily window (``parseRevocableZone``), as written and as parsed."""

    raw: str
    start: tuple[int, int]
    end: tuple[int, int]

    @classmethod
    def parse(cls, raw: str) -> "RevocableWindow":
        parts = raw.strip().split("-")
        if len(parts) != 2:
            raise WindowError(f"revocable zone {raw} format error")
        return cls(raw, _parse_clock(parts[0]), _parse_clock(parts[1]))

    def bounds(self, now: float) -> tuple[int, int]:
        """Unix seconds of today's start and end (UTC), the end tomorrow when not after the start."""
        day = math.floor(now / _DAY) * _DAY
        start = day + self.start[0] * 3600 + self.start[1] * 60
        end = day + self.end[0] * 3600 + self.end[1] * 60
        if self.start >= self.end:
            end += _DAY
        return start, end

    def open_at(self, now: float) -> bool:
        start, end = self.bounds(now)
        second = math.floor(now)  # time.Unix()
        return start <= second <= end


@dataclass(slots=True)
class TdmMemory:
    """What tdm keeps across sessions: when its VictimTasksFn last looked (Volcano's lastEvictAt)."""

    last_evict_at: float | None = None


def parse_int_or_percent(raw: str, total: int) -> int:
    """``parseIntStr``: an integer, or a percentage of ``total`` rounded up; 0 for anything else
    (Volcano logs it)."""
    if _INT.match(raw):
        return int(raw)
    if raw.endswith("%") and _INT.match(raw[:-1]):
        return math.ceil(int(raw[:-1]) * float(total) / 100)
    return 0


def max_pod_evict_num(job: JobInfo) -> int:
    """``getMaxPodEvictNum``: how many of the job's tasks its disruption budget lets go now."""
    running = job.count(TaskStatus.Running)
    budget = job.budget
    if budget.max_unavailable != "":
        max_unavailable = parse_int_or_percent(budget.max_unavailable, len(job.tasks))
        finished = job.count(TaskStatus.Succeeded) + job.count(TaskStatus.Failed)
        unavailable = len(job.tasks) - finished - running
        if unavailable >= max_unavailable:
            return 0
        return max_unavailable - unavailable
    if budget.min_available != "":
        min_available = parse_int_or_percent(budget.min_available, len(job.tasks))
        if running >= min_available:
            return running - min_available
    return DEFAULT_POD_EVICT_NUM


def max_victims(job: JobInfo, victims: list[TaskInfo]) -> list[TaskInfo]:
    """``maxVictims``: the first of ``victims`` the job's budget allows."""
    return victims[:max(0, min(max_pod_evict_num(job), len(victims)))]


class TdmPlugin(Plugin):
    name = "tdm"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.zones: dict[str, RevocableWindow] = {}
        for key in arguments.keys():
            if REVOCABLE_ZONE_PREFIX not in key:
                continue
            value = arguments.values[key]
            where = f"{arguments.where}.{key}"
            if not isinstance(value, str):
                raise ArgumentError(f"{where}: expected a time window such as \"10:00-21:00\", "
                                    f"got {type(value).__name__} {value!r}")
            try:
                window = RevocableWindow.parse(value)
            except WindowError as e:
                raise ArgumentError(f"{where}: expected a time window such as \"10:00-21:00\": {e}") from None
            self.zones[key.replace(REVOCABLE_ZONE_PREFIX, "", 1)] = window
        self.evict_period = DEFAULT_EVICT_PERIOD
        if EVICT_PERIOD in arguments:
            raw = arguments.get_str(EVICT_PERIOD, "")
            try:
                self.evict_period = parse_go_duration(raw)
            except DurationError as e:
                raise ArgumentError(f"{arguments.where}.{EVICT_PERIOD}: expected a duration such as 1m, "
                                    f"got {raw!r} ({e})") from None

    def zone_closed(self, zone: str, now: float) -> str | None:
        """``availableRevocableZone``: why the zone is not open now, or None when it is."""
        window = self.zones.get(zone)
        if window is None:
            return f"revocable zone {zone} not support"
        if not window.open_at(now):
            return f"current time beyond revocable zone {zone}:{window.raw}"
        return None

    def on_session_open(self, ssn: "Session") -> None:
        now = ssn.now
        # a zone's verdict is the same for the whole session
        closed = {zone: self.zone_closed(zone, now) for zone in self.zones}

        def verdict(zone: str) -> str | None:
            return closed[zone] if zone in closed else self.zone_closed(zone, now)

        def predicate(task: TaskInfo, node: NodeInfo) -> list[Status] | None:
            zone = node.revocable_zone
            if not zone:
                return None
            why = verdict(zone)
            if why is not None:
                return [Status(StatusCode.UnschedulableAndUnresolvable, why)]
            if not task.revocable_zone:
                return [Status(StatusCode.UnschedulableAndUnresolvable, NOT_ALLOWED)]
            return None

        def node_order(task: TaskInfo, node: NodeInfo) -> float:
            zone = node.revocable_zone
            if not zone or verdict(zone) is not None or not task.revocable_zone:
                return 0.0
            return MAX_NODE_SCORE

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
            # preemptable or revocable workloads preempt nothing
            if preemptor.preemptable or preemptor.revocable_zone:
                return [], Vote.Reject
            by_job: dict[str, list[TaskInfo]] = {}
            for task in preemptees:
                if not task.preemptable or task.status != TaskStatus.Running:
                    continue
                node = ssn.nodes.get(task.node_name)
                if node is None or node.revocable_zone:
                    continue
                by_job.setdefault(task.job, []).append(task)
            victims: list[TaskInfo] = []
            for job_id, tasks in by_job.items():
                job = ssn.jobs.get(job_id)
                if job is not None:
                    victims.extend(max_victims(job, tasks))
            return victims, Vote.Permit

        def victim_tasks(_tasks: list[TaskInfo]) -> list[TaskInfo]:
            memory = ssn.state.plugins.setdefault(self.name, TdmMemory())
            if memory.last_evict_at is not None and memory.last_evict_at + self.evict_period > now:
                return []
            victims: list[TaskInfo] = []
            for zone in self.zones:
                if closed[zone] is None:
                    continue
                # the zone is closed: evict its revocable nodes' preemptable tasks, job by job
                by_job: dict[str, list[TaskInfo]] = {}
                for node in ssn.node_list:
                    if node.revocable_zone != zone:
                        continue
                    for task in node.tasks.values():
                        if task.preemptable and task.status == TaskStatus.Running:
                            by_job.setdefault(task.job, []).append(task)
                for job_id, tasks in by_job.items():
                    job = ssn.jobs.get(job_id)
                    if job is not None:
                        victims.extend(max_victims(job, tasks))
            memory.last_evict_at = now
            return victims

        ssn.add(Point.PREDICATE, self.name, predicate)
        ssn.add(Point.NODE_ORDER, self.name, node_order)
        ssn.add(Point.PREEMPTABLE, self.name, preemptable)
        ssn.add(Point.VICTIM_TASKS, self.name, victim_tasks)
        ssn.add(Point.JOB_ORDER, self.name, job_order)
        ssn.add(Point.JOB_PIPELINED, self.name, job_pipelined)
        ssn.add(Point.JOB_STARVING, self.name, job_starving)
        # the predicate and the score read the task's revocable zone, which its pod's shape omits
        ssn.add(Point.TASK_SHAPE, self.name, task_shape)


def task_shape(task: TaskInfo) -> str:
    return task.revocable_zone


def job_order(l: JobInfo, r: JobInfo) -> int:
    """Jobs that are not preemptable first."""
    if l.preemptable == r.preemptable:
        return 0
    return 1 if l.preemptable else -1


def job_pipelined(job: JobInfo) -> Vote:
    return Vote.Permit if job.is_pipelined() else Vote.Reject


def job_starving(job: JobInfo) -> bool:
    """A job that is not preemptable starves while it has Pending tasks."""
    return not job.preemptable and job.count(TaskStatus.Pending) > 0
