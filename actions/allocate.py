"""allocate: place pending tasks, queue by queue and job by job, gang by gang (actions/allocate/allocate.go)."""

from __future__ import annotations

import structlog
from vcsched.api.fit_errors import FitErrors
from vcsched.api.job_info import JobInfo
from vcsched.api.queue_info import QueueInfo
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import PodGroupPhase, TaskStatus
from vcsched.framework.arguments import Arguments
from vcsched.framework.interface import Action, Point, ScoringError
from vcsched.framework.node_search import NodeSearch, Placement, PredicateErrorCache
from vcsched.framework.session import Session
from vcsched.framework.statement import Statement
from vcsched.framework.util import OrderedQueue, PriorityQueue

from .allocate_topology import JobWorksheet, allocate_for_job, place, recorder

log = structlog.get_logger("vcsched.allocate")


def node_search(ssn: Session) -> NodeSearch:
    """The session's node search, shared by the actions that place tasks."""
    search = ssn.scratch.get("node_search")
    if search is None:
        search = ssn.scratch["node_search"] = NodeSearch(ssn)
    return search


def predicate_error_cache(ssn: Session, job: JobInfo) -> PredicateErrorCache | None:
    """A fresh predicate error cache for one pass over ``job``'s tasks, when allocate's
    ``predicateErrorCacheEnable`` (default true) is on and it can change something: the job's groups
    of tasks with one role and several shapes, found once per session."""
    if not ssn.conf.action_arguments("allocate").get_bool("predicateErrorCacheEnable", True):
        return None
    mixed_by_job = ssn.scratch.setdefault("mixed_role_groups", {})
    mixed = mixed_by_job.get(job.uid)
    if mixed is None:
        if job.count(TaskStatus.Pending) < 2:  # a group of one task holds one shape
            return None
        mixed = mixed_by_job[job.uid] = PredicateErrorCache.mixed_groups(job.tasks_in(TaskStatus.Pending))
    return PredicateErrorCache(mixed) if mixed else None


def worksheet(ssn: Session, job: JobInfo) -> PriorityQueue[TaskInfo]:
    """The job's pending tasks that allocate may place: not gated, not BestEffort.

    Sorted once (OrderedQueue) when Session.task_order is a strict total order on them whose answers
    do not change while they wait: every TaskOrderFn says it is such a weak order (``stable``), and
    the default comparison (CompareTask) either compares every pair by pod-name index or none (with
    some names indexed and others not it need not be transitive, and a heap's pops depend on its
    layout).  A gang of 10,000 tasks: about 10,000 comparisons in place of 150,000."""
    tasks = [t for t in job.tasks_in(TaskStatus.Pending) if not t.scheduling_gated and not t.best_effort]
    if len(tasks) > 16 and _sortable(ssn, tasks):
        return OrderedQueue(ssn.task_order, tasks)
    return PriorityQueue(ssn.task_order, tasks)


def _sortable(ssn: Session, tasks: list[TaskInfo]) -> bool:
    if not all(getattr(fn, "stable", False) for fn in ssn.fns(Point.TASK_ORDER)):
        return False
    indexed = None
    for t in tasks:  # CompareTask's test: three or more "-"-separated parts, the last an integer
        parts = t.name.split("-")
        has = False
        if len(parts) >= 3:
            try:
                int(parts[-1])
                has = True
            except ValueError:
                pass
        if indexed is None:
            indexed = has
        elif has != indexed:
            return False
    return True


class AllocateAction(Action):
    name = "allocate"

    @classmethod
    def validate_arguments(cls, arguments: Arguments) -> None:
        arguments.get_bool("predicateErrorCacheEnable", True)

    def execute(self, ssn: Session) -> None:
        search = node_search(ssn)
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order)
        jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        tasks_by_job: dict[str, PriorityQueue[TaskInfo]] = {}
        sheets: dict[str, JobWorksheet] = {}  # jobs with a hard network topology or subgroups
        for job in ssn.fresh_jobs:  # a reused clone is settled: nothing to place (Session.fresh_jobs)
            if job.is_pending():
                if "enqueue" in ssn.enabled_actions:
                    continue
                job.podgroup.phase = PodGroupPhase.INQUEUE
            hard = job.contains_hard_topology or job.contains_sub_job_policy
            if not hard and not job.by_status.get(TaskStatus.Pending):
                continue  # no task to place (its worksheet would be empty): JobValid is only a check
            if ssn.job_valid(job) is not None:
                continue
            queue = ssn.queues.get(job.queue)
            if queue is None:
                continue
            if job.contains_network_topology and not ssn.topology.ready:
                continue  # Volcano: hyperNodes are not ready for scheduling
            if hard:
                sheet = sheets[job.uid] = JobWorksheet.organize(ssn, job)
                if sheet.empty():
                    continue
            else:
                tasks = worksheet(ssn, job)
                if tasks.empty():
                    continue
                tasks_by_job[job.uid] = tasks
            if queue.name not in jobs_by_queue:
                jobs_by_queue[queue.name] = OrderedQueue(ssn.job_order)
                queues.push(queue)
            jobs_by_queue[queue.name].push(job)

        while not queues.empty():
            queue = queues.pop()
            if ssn.overused(queue):
                continue
            jobs = jobs_by_queue.get(queue.name)
            if jobs is None or jobs.empty():
                continue
            job = jobs.pop()
            sheet = sheets.get(job.uid)
            if sheet is not None:
                stmt = allocate_for_job(ssn, search, queue, job, sheet)
                if stmt is not None and ssn.job_ready(job):
                    stmt.commit()
                    recorder(ssn).update_job(ssn, job)
                    if not sheet.empty():
                        jobs.push(job)
                queues.push(queue)
                continue
            tasks = tasks_by_job[job.uid]
            stmt = allocate_tasks(ssn, search, queue, job, tasks)
            if stmt is not None and ssn.job_ready(job):
                stmt.commit()
                if not tasks.empty():
                    jobs.push(job)
            queues.push(queue)


def allocate_tasks(ssn: Session, search: NodeSearch, queue: QueueInfo, job: JobInfo,
                   tasks: PriorityQueue[TaskInfo]) -> Statement | None:
    """``allocateResourcesForTasks``: one attempt at making the job ready (or pipelined)."""
    stmt = Statement(ssn)
    errors = predicate_error_cache(ssn, job)
    while not tasks.empty():
        task = tasks.pop()
        if not ssn.allocatable(queue, task):
            continue
        if task.scheduling_gated:
            continue
        if job.task_has_fit_errors(task):
            job.record_fit_errors(task, FitErrors(
                err=f"Task {task.name} with role spec {task.role} has already predicated failed, skip"))
            continue
        err = ssn.pre_predicate(task)
        if err:
            job.record_fit_errors(task, search.pre_predicate_errors(task, err))
            if job.need_continue_allocating():
                continue
            break
        try:
            found = search.find(task, errors=errors)
        except ScoringError as e:
            log.warning("no node chosen: scoring failed", task=task.key, error=str(e))
            continue  # Volcano: no best node, the next task
        if not isinstance(found, Placement):
            job.record_fit_errors(task, found)
            if job.need_continue_allocating():
                continue
            break
        if not place(ssn, stmt, job, task, found):
            continue
        if ssn.job_ready(job):
            break
    if ssn.job_ready(job) or ssn.job_pipelined(job):
        return stmt
    stmt.discard()
    return None
