"""PodGroup and JobInfo: a gang of tasks and its counters (job_info.go)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from .duration import DurationError, parse_go_duration
from .fit_errors import FitErrors
from .resource import Resource
from .sub_job import NetworkTopology, SubGroupPolicy, SubJobInfo, sub_job_gid, sub_job_uid
from .task_info import TaskInfo, TransactionContext, parse_go_bool
from .types import (
    ALLOCATED_STATUS,
    ALLOCATED_STATUSES,
    JDB_MAX_UNAVAILABLE_KEY,
    JDB_MIN_AVAILABLE_KEY,
    JOB_WAITING_TIME_KEYS,
    PREEMPTABLE_KEY,
    READY_STATUS,
    READY_STATUSES,
    VALID_STATUS,
    PodGroupPhase,
    TaskStatus,
)

log = structlog.get_logger("vcsched.job_info")


@dataclass(slots=True)
class PodGroup:
    """A ``scheduling.volcano.sh/v1beta1`` PodGroup, spec and status."""

    name: str
    namespace: str
    uid: str
    creation_timestamp: float
    min_member: int = 0
    min_task_member: dict[str, int] = field(default_factory=dict)
    queue: str = ""
    priority_class_name: str = ""
    min_resources: Resource | None = None
    annotations: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    # status
    phase: str = ""
    conditions: list[dict[str, Any]] = field(default_factory=list)
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    # spec.minResources as written (ResourceList names such as requests.cpu, quantities as text):
    # the resourcequota plugin compares it with ResourceQuotas, which Resource cannot hold
    min_resources_list: Mapping[str, Any] | None = None
    # spec.networkTopology and spec.subGroupPolicy (network-topology-aware scheduling)
    network_topology: NetworkTopology | None = None
    sub_group_policy: tuple[SubGroupPolicy, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def clone(self) -> "PodGroup":
        """A copy whose status a session may change.  The spec's maps are shared (no session writes
        them), and so are the condition dicts: a session replaces a condition, never edits one."""
        return PodGroup(
            self.name, self.namespace, self.uid, self.creation_timestamp, self.min_member,
            self.min_task_member, self.queue, self.priority_class_name, self.min_resources,
            self.annotations, self.labels, self.phase, list(self.conditions),
            self.running, self.succeeded, self.failed, self.min_resources_list,
            self.network_topology, self.sub_group_policy,
        )

    def status_tuple(self) -> tuple:
        """The status as compared at session close: condition times and transition IDs ignored."""
        conds = tuple(
            tuple(sorted((k, str(v)) for k, v in c.items() if k not in ("lastTransitionTime", "transitionID")))
            for c in self.conditions
        )
        return (self.phase, self.running, self.succeeded, self.failed, conds)


@dataclass(slots=True, frozen=True)
class DisruptionBudget:
    """A job's disruption budget from its PodGroup's annotations (``extractBudget``): an integer or a
    percentage, kept as written; ``jdb-min-available`` wins when both are given."""

    min_available: str = ""
    max_unavailable: str = ""

    @classmethod
    def of(cls, annotations: dict[str, str]) -> "DisruptionBudget":
        if JDB_MIN_AVAILABLE_KEY in annotations:
            return cls(min_available=annotations[JDB_MIN_AVAILABLE_KEY])
        if JDB_MAX_UNAVAILABLE_KEY in annotations:
            return cls(max_unavailable=annotations[JDB_MAX_UNAVAILABLE_KEY])
        return NO_BUDGET


# the budget of every job whose PodGroup sets none: one object (the budget is frozen), not one more for
# the cyclic collector to walk per PodGroup version the cache takes in
NO_BUDGET = DisruptionBudget()


def parse_waiting_time(raw: str) -> float:
    """An sla waiting time in seconds: a Go duration above zero (``extractWaitingTime``); DurationError
    with Go's message, or ``invalid sla waiting time``, otherwise."""
    seconds = parse_go_duration(raw)
    if seconds <= 0:
        raise DurationError("invalid sla waiting time")
    return seconds


def _waiting_time(pg: PodGroup) -> float | None:
    """``extractWaitingTime``: the PodGroup's ``volcano.sh/sla-waiting-time`` annotation, else its
    ``sla-waiting-time``; a Go duration above zero, in seconds.  None when neither is given or valid
    (an invalid one is logged, as Volcano does, and the next key is tried)."""
    for key in JOB_WAITING_TIME_KEYS:
        raw = pg.annotations.get(key)
        if raw is None:
            continue
        try:
            return parse_waiting_time(raw)
        except DurationError as e:
            log.warning(f"Error occurs in parsing waiting time for job <{pg.namespace}/{pg.name}>, err: {e}.",
                        podgroup=pg.key, annotation=key)
    return None


class ChangeLog:
    """The reused clones a session changed, each once, in the order of their first change
    (``JobInfo.change_log``); the cache hands each snapshot a new list."""

    __slots__ = ("jobs",)

    def __init__(self) -> None:
        self.jobs: list[JobInfo] = []


class JobInfo:
    """A PodGroup and its tasks, with the counters gang and the actions consult."""

    __slots__ = (
        "uid", "name", "namespace", "queue", "priority", "min_available", "task_min_available",
        "task_min_available_total", "podgroup", "creation_timestamp", "tasks", "by_status",
        "allocated", "total_request", "nodes_fit_errors", "job_fit_errors", "preemptable",
        "pending_best_effort", "ready", "waiting_time", "budget",
        "network_topology", "allocated_hypernode", "_sub_jobs", "min_sub_jobs", "mutations", "opened_status",
        "change_log",
    )

    def __init__(self, uid: str, podgroup: PodGroup | None = None) -> None:
        self.uid = uid
        ns, _, name = uid.partition("/")
        self.name = name
        self.namespace = ns
        self.queue = ""
        self.priority = 0
        self.min_available = 0
        self.task_min_available: dict[str, int] = {}
        self.task_min_available_total = 0
        self.podgroup: PodGroup | None = None
        self.creation_timestamp = 0.0
        self.tasks: dict[str, TaskInfo] = {}
        self.by_status: dict[TaskStatus, dict[str, TaskInfo]] = {}
        self.allocated = Resource()
        self.total_request = Resource()
        self.nodes_fit_errors: dict[str, FitErrors] = {}
        self.job_fit_errors = ""
        self.preemptable = False
        # sla-waiting-time of the PodGroup in seconds, None when absent or invalid (WaitingTime)
        self.waiting_time: float | None = None
        # the job disruption budget (Budget): jdb-min-available, jdb-max-unavailable ("" when unset)
        self.budget = NO_BUDGET
        self.pending_best_effort = 0
        self.ready = 0  # tasks in READY_STATUS, kept as tasks move
        # the session's copy of spec.networkTopology (session open translates and hardens it), the
        # lowest HyperNode holding the job's placed tasks (AllocatedHyperNode), its SubJobs (built
        # when first asked for) and minSubGroups per subgroup policy
        self.network_topology: NetworkTopology | None = None
        self.allocated_hypernode = ""
        self._sub_jobs: dict[str, SubJobInfo] | None = None
        self.min_sub_jobs: dict[str, int] = {}
        # task changes (added, deleted, moved between statuses): a session tells by it whether it left a
        # job it reused as it found it (Cache.keep_clones sets it to 0 on a clone it keeps)
        self.mutations = 0
        # where a reused clone notes its first change in a session (Cache.keep_clones gives a clone it
        # keeps the cache's ChangeLog), so that the session's walks over what it changed need not look at
        # every reused job; None for the cache's jobs and the fresh clones
        self.change_log: ChangeLog | None = None
        # the PodGroup status the session opened with (phase, running, succeeded, failed, conditions),
        # compared at close; set at session open, or kept with a reused clone
        self.opened_status: tuple | None = None
        if podgroup is not None:
            self.set_podgroup(podgroup)

    def set_podgroup(self, pg: PodGroup, default_queue: str = "default") -> None:
        self.podgroup = pg
        self.name = pg.name
        self.namespace = pg.namespace
        self.min_available = pg.min_member
        self.task_min_available = dict(pg.min_task_member)
        self.task_min_available_total = sum(pg.min_task_member.values())
        self.queue = pg.queue or default_queue
        self.creation_timestamp = pg.creation_timestamp
        # extractPreemptable: the annotation, else the label; strconv.ParseBool, false when it refuses
        raw = pg.annotations.get(PREEMPTABLE_KEY, pg.labels.get(PREEMPTABLE_KEY))
        self.preemptable = bool(parse_go_bool(raw)) if raw is not None else False
        self.waiting_time = _waiting_time(pg)
        self.budget = DisruptionBudget.of(pg.annotations)
        self.network_topology = pg.network_topology.copy() if pg.network_topology is not None else None
        self.min_sub_jobs = {sub_job_gid(self.uid, p.name): p.min_sub_groups or 0 for p in pg.sub_group_policy}
        self._sub_jobs = None

    # -- tasks ---------------------------------------------------------------------

    def add_task(self, task: TaskInfo) -> None:
        self._sub_jobs = None
        if not self.mutations and self.change_log is not None:
            self.change_log.jobs.append(self)
        self.mutations += 1
        self.tasks[task.uid] = task
        self.by_status.setdefault(task.status, {})[task.uid] = task
        if task.best_effort and task.status == TaskStatus.Pending:
            self.pending_best_effort += 1
        if task.status in READY_STATUSES:
            self.ready += 1
        self.total_request.add(task.resreq)
        if task.status in ALLOCATED_STATUSES:
            self.allocated.add(task.resreq)

    def delete_task(self, task: TaskInfo) -> None:
        t = self.tasks.pop(task.uid, None)
        if t is None:
            return
        self._sub_jobs = None
        if not self.mutations and self.change_log is not None:
            self.change_log.jobs.append(self)
        self.mutations += 1
        self.by_status.get(t.status, {}).pop(t.uid, None)
        if t.best_effort and t.status == TaskStatus.Pending:
            self.pending_best_effort -= 1
        if t.status in READY_STATUSES:
            self.ready -= 1
        self.total_request.sub(t.resreq)
        if t.status in ALLOCATED_STATUSES:
            self.allocated.sub(t.resreq)

    def update_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        """Move a task between status buckets and keep ``allocated`` right."""
        old = task.status
        if old == status:
            return
        if not self.mutations and self.change_log is not None:
            self.change_log.jobs.append(self)
        self.mutations += 1
        bucket = self.by_status.get(old)
        if bucket is not None:
            bucket.pop(task.uid, None)
            if not bucket:
                del self.by_status[old]
        if task.best_effort:
            if old == TaskStatus.Pending:
                self.pending_best_effort -= 1
            elif status == TaskStatus.Pending:
                self.pending_best_effort += 1
        self.ready += (status in READY_STATUSES) - (old in READY_STATUSES)
        was, now = old in ALLOCATED_STATUSES, status in ALLOCATED_STATUSES
        if was and not now:
            self.allocated.sub(task.resreq)
        elif now and not was:
            self.allocated.add(task.resreq)
        task.status = status
        self.by_status.setdefault(status, {})[task.uid] = task

    def clone(self) -> "JobInfo":
        j = JobInfo(self.uid)
        j.take_podgroup_of(self)
        for t in self.tasks.values():
            j.add_task(t.clone())
        return j

    def take_podgroup_of(self, job: "JobInfo") -> None:
        """What a clone takes of ``job`` besides its tasks: its PodGroup (a copy) and what follows from it."""
        self.name, self.namespace, self.queue, self.priority = job.name, job.namespace, job.queue, job.priority
        self.min_available = job.min_available
        self.task_min_available = dict(job.task_min_available)
        self.task_min_available_total = job.task_min_available_total
        self.podgroup = job.podgroup.clone() if job.podgroup else None
        self.creation_timestamp = job.creation_timestamp
        self.preemptable = job.preemptable
        self.waiting_time = job.waiting_time
        self.budget = job.budget
        self.network_topology = job.network_topology.copy() if job.network_topology is not None else None
        self.allocated_hypernode = job.allocated_hypernode
        self.min_sub_jobs = job.min_sub_jobs

    # -- counters ------------------------------------------------------------------

    def count(self, status: TaskStatus) -> int:
        b = self.by_status.get(status)
        return len(b) if b else 0

    def tasks_in(self, status: TaskStatus) -> list[TaskInfo]:
        b = self.by_status.get(status)
        return list(b.values()) if b else []

    def ready_task_num(self) -> int:
        """Bound, Binding, Running, Allocated and Succeeded tasks."""
        return self.ready

    def waiting_task_num(self) -> int:
        return self.count(TaskStatus.Pipelined)

    def pending_best_effort_task_num(self) -> int:
        return self.pending_best_effort

    def valid_task_num(self) -> int:
        c = self.count
        return (c(TaskStatus.Allocated) + c(TaskStatus.Binding) + c(TaskStatus.Bound) + c(TaskStatus.Running)
                + c(TaskStatus.Succeeded) + c(TaskStatus.Pipelined) + c(TaskStatus.Pending))

    def is_ready(self) -> bool:
        return self.ready_task_num() + self.pending_best_effort_task_num() >= self.min_available

    def is_pipelined(self) -> bool:
        return (self.waiting_task_num() + self.ready_task_num() + self.pending_best_effort_task_num()
                >= self.min_available)

    def is_starving(self) -> bool:
        return self.waiting_task_num() + self.ready_task_num() < self.min_available

    def is_pending(self) -> bool:
        pg = self.podgroup
        return pg is None or pg.phase in ("", PodGroupPhase.PENDING)

    def scheduled_task_num(self) -> int:
        c = self.count
        return c(TaskStatus.Running) + c(TaskStatus.Bound) + c(TaskStatus.Failed) + c(TaskStatus.Succeeded)

    def allocated_task_num(self) -> int:
        return sum(len(b) for status, b in self.by_status.items() if status & ALLOCATED_STATUS)

    def releasing_scheduled_task_num(self) -> int:
        return sum(1 for t in self.by_status.get(TaskStatus.Releasing, {}).values() if t.node_name)

    # -- fit errors and messages (job_info.go · FitError, TaskSchedulingReason) ------

    def record_fit_errors(self, task: TaskInfo, fe: FitErrors) -> None:
        self.nodes_fit_errors[task.uid] = fe

    @staticmethod
    def _scheduling_reason(task: TaskInfo) -> str:
        """``task_scheduling_reason``'s reason alone (FitError counts them for every pending task)."""
        status = task.last_transaction.status if task.last_transaction is not None else task.status
        if status == TaskStatus.Allocated:
            return "Schedulable"
        if status == TaskStatus.Pipelined or status == TaskStatus.Pending:
            return "Unschedulable"
        return status.name

    def task_scheduling_reason(self, task: TaskInfo) -> tuple[str, str, str]:
        """(reason, message, nominated node) for a task's PodScheduled condition."""
        ctx = task.last_transaction or TransactionContext(task.status, task.node_name, task.eviction_occurred)
        if ctx.status == TaskStatus.Allocated:
            return ("Schedulable",
                    f"Pod {task.namespace}/{task.name} can possibly be assigned to {ctx.node_name}, "
                    "once minAvailable is satisfied", "")
        if ctx.status == TaskStatus.Pipelined:
            return ("Unschedulable",
                    f"Pod {task.namespace}/{task.name} can possibly be assigned to {ctx.node_name}, "
                    "once resource is released and minAvailable is satisfied",
                    ctx.node_name if ctx.eviction_occurred else "")
        if ctx.status == TaskStatus.Pending:
            fe = self.nodes_fit_errors.get(task.uid)
            return ("Unschedulable", fe.error() if fe else self.job_fit_errors, "")
        return (ctx.status.name, self.job_fit_errors, "")

    def fit_error(self) -> str:
        """``job.FitError()``: readiness, a histogram of task statuses, pending reasons, one origin reason."""
        counts: Counter[str] = Counter()
        for status, bucket in self.by_status.items():
            if bucket:
                counts[status.name] += len(bucket)
        counts["minAvailable"] = self.min_available
        histogram = ", ".join(sorted(f"{n} {k}" for k, n in counts.items()))
        head = "pod group is ready" if self.is_ready() else "pod group is not ready"
        msg = f"{head}, {histogram}"
        pending = self.by_status.get(TaskStatus.Pending)
        if pending:
            reasons: Counter[str] = Counter(map(self._scheduling_reason, pending.values()))
            msg += "; Pending: " + ", ".join(sorted(f"{n} {k}" for k, n in reasons.items()))
        if self.job_fit_errors:
            return f"{msg}. Origin reason is: {self.job_fit_errors}"
        fit_errors = self.nodes_fit_errors
        if fit_errors:  # the first task, in the job's order, with fit errors recorded
            for t in self.tasks.values():
                fe = fit_errors.get(t.uid)
                if fe is not None:
                    msg += f". Origin reason is {t.name}: {fe.error()}"
                    break
        return msg

    # -- gang bookkeeping per role (job_info.go) --------------------------------------

    def _roles(self, statuses: TaskStatus, pending_best_effort: bool) -> Counter[str]:
        counts: Counter[str] = Counter()
        for status, bucket in self.by_status.items():
            if status & statuses:
                for t in bucket.values():
                    counts[t.role] += 1
            elif pending_best_effort and status == TaskStatus.Pending:
                for t in bucket.values():
                    if t.best_effort:
                        counts[t.role] += 1
        return counts

    def _roles_meet_minimum(self, counts: Counter[str]) -> bool:
        return all(counts[role] >= n for role, n in self.task_min_available.items())

    def check_task_valid(self) -> bool:
        if not self.task_min_available or self.min_available < self.task_min_available_total:
            return True
        counts = self._roles(VALID_STATUS, False)
        return all(n == 0 or counts[role] >= n for role, n in self.task_min_available.items())

    def check_task_ready(self) -> bool:
        if not self.task_min_available or self.min_available < self.task_min_available_total:
            return True
        return self._roles_meet_minimum(self._roles(READY_STATUS, True))

    def check_task_pipelined(self) -> bool:
        if not self.task_min_available or self.min_available < self.task_min_available_total:
            return True
        return self._roles_meet_minimum(self._roles(READY_STATUS | TaskStatus.Pipelined, True))

    def fit_failed_roles(self, sub_job: SubJobInfo | None = None) -> set[str]:
        """Roles of the tasks (of ``sub_job`` when given) with fit errors (``FitFailedRoles``)."""
        tasks = self.tasks if sub_job is None else sub_job.tasks
        return {tasks[uid].role for uid in self.nodes_fit_errors if uid in tasks}

    def task_has_fit_errors(self, task: TaskInfo, sub_job: SubJobInfo | None = None) -> bool:
        return bool(task.role) and task.role in self.fit_failed_roles(sub_job)

    def need_continue_allocating(self, sub_job: SubJobInfo | None = None) -> bool:
        """``NeedContinueAllocating``: may allocation go on after a task of this job failed?"""
        if self.min_available == len(self.tasks):
            return False
        if sub_job is not None:
            if sub_job.min_available >= len(sub_job.tasks):
                return False
            if self.contains_sub_job_policy:
                return True
        failed = self.fit_failed_roles(sub_job)
        if self.min_available < self.task_min_available_total:
            left = sum(1 for t in self.by_status.get(TaskStatus.Pending, {}).values() if t.role not in failed)
            return self.ready_task_num() + left >= self.min_available
        allocated = self._roles(READY_STATUS, True)
        for role in failed:
            n = self.task_min_available.get(role, 0)
            if n and allocated[role] < n:
                return False
        return True

    # -- SubJobs and network topology (job_info.go) -----------------------------------------------

    @property
    def contains_sub_job_policy(self) -> bool:
        return self.podgroup is not None and bool(self.podgroup.sub_group_policy)

    @property
    def default_sub_job_uid(self) -> str:
        return self.uid

    @property
    def sub_jobs(self) -> dict[str, SubJobInfo]:
        """The job's SubJobs by UID, built from its tasks when first asked for (tasks added or removed
        build them again; status changes need not: a SubJob counts its tasks' statuses when asked)."""
        built = self._sub_jobs
        if built is None:
            built = self._sub_jobs = {}
            for task in self.tasks.values():
                self._sub_job_for(task, built).add(task)
        return built

    def _sub_job_for(self, task: TaskInfo, sub_jobs: dict[str, SubJobInfo]) -> SubJobInfo:
        """``getOrCreateSubJob``: the first policy that takes the pod, else the default SubJob."""
        pg = self.podgroup
        if pg is not None:
            labels = (task.pod.get("metadata") or {}).get("labels") or {}
            for policy in pg.sub_group_policy:
                values = policy.match_values(labels)
                if values:  # [] (a policy without keys) takes no pod, as in Volcano
                    uid = sub_job_uid(self.uid, policy.name, values)
                    sj = sub_jobs.get(uid)
                    if sj is None:
                        size = policy.sub_group_size if policy.sub_group_size is not None else 1
                        sj = sub_jobs[uid] = SubJobInfo(sub_job_gid(self.uid, policy.name), uid, self.uid, size,
                                                        policy.network_topology, values)
                    return sj
        uid = self.default_sub_job_uid
        sj = sub_jobs.get(uid)
        if sj is None:
            minimum = 1 if self.contains_sub_job_policy else self.min_available
            sj = sub_jobs[uid] = SubJobInfo(uid, uid, self.uid, minimum, self.network_topology)
        return sj

    def sub_job_of(self, task: TaskInfo) -> SubJobInfo | None:
        for sj in self.sub_jobs.values():
            if task.uid in sj.tasks:
                return sj
        return None

    def hard_tier(self) -> int | None:
        return self.network_topology.hard_tier() if self.network_topology is not None else None

    @property
    def contains_hard_topology(self) -> bool:
        if self.hard_tier() is not None:
            return True
        if self.network_topology is None and not self.contains_sub_job_policy:
            return False  # the default SubJob's topology is the job's
        return any(sj.hard_tier() is not None for sj in self.sub_jobs.values())

    @property
    def contains_network_topology(self) -> bool:
        if self.network_topology is not None:
            return True
        if not self.contains_sub_job_policy:
            return False
        return any(sj.with_network_topology for sj in self.sub_jobs.values())

    def min_resources(self) -> Resource:
        """``GetMinResources``: the PodGroup's ``spec.minResources`` (empty when unset)."""
        pg = self.podgroup
        return pg.min_resources if pg is not None and pg.min_resources is not None else Resource()

    def _sub_jobs_meeting(self, condition) -> bool:
        """``checkSubJobCondition``: every policy with minSubGroups has that many SubJobs meeting it."""
        if not self.min_sub_jobs:
            return True
        met: Counter[str] = Counter()
        for sj in self.sub_jobs.values():
            if condition(sj):
                met[sj.gid] += 1
        return all(n == 0 or met[gid] >= n for gid, n in self.min_sub_jobs.items())

    def check_sub_job_valid(self) -> bool:
        return self._sub_jobs_meeting(lambda sj: True)

    def check_sub_job_ready(self) -> bool:
        return self._sub_jobs_meeting(SubJobInfo.is_ready)

    def check_sub_job_pipelined(self) -> bool:
        return self._sub_jobs_meeting(SubJobInfo.is_pipelined)

    def reset_fit_errors(self, sub_job: SubJobInfo | None = None) -> None:
        """``ResetFitErr`` (all) or ``ResetSubJobFitErr`` (the SubJob's tasks)."""
        if sub_job is None:
            self.job_fit_errors = ""
            self.nodes_fit_errors = {}
        else:
            for uid in sub_job.tasks:
                self.nodes_fit_errors.pop(uid, None)
