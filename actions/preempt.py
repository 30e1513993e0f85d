"""preempt: starving jobs evict lower-priority work of their queue (actions/preempt/preempt.go).

spec/framework.md §7.4.  Phase 1, per queue and per starving job: its pending tasks
evict tasks of *other* jobs of the same queue, and the job's statement is committed
only if the job is then pipelined.  Phase 2, per starving job of the queue: its
pending tasks evict lower-priority tasks of the *same* job, one statement per task.

Victims are chosen by the plugins (``ssn.preemptable``, tier voting §6.2), evicted
in ``BuildVictimsPriorityQueue`` order (§6.3) through a per-node statement until the
preemptor fits, then the preemptor is pipelined onto what they release.  Every
session change goes through ``Statement``, so plugins (and device state) follow the
evictions and their rollback through the session's event handlers.

With ``enableTopologyAwarePreemption`` the victims are chosen by a dry run over several
candidate nodes instead (preempt_dry_run.py, §7.4.4).

Not implemented: jobs with network topology (none are modelled).
"""

from __future__ import annotations

from collections.abc import Callable

import structlog
from vcsched.api.job_info import JobInfo
from vcsched.api.node_info import NodeInfo
from vcsched.api.queue_info import QueueInfo
from vcsched.api.resource import Resource
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import PREEMPTABLE_STATUS, StatusCode, TaskStatus
from vcsched.framework.arguments import Arguments
from vcsched.framework.interface import Action
from vcsched.framework.session import Session
from vcsched.framework.statement import Statement, StatementError
from vcsched.framework.util import PriorityQueue

from .preempt_dry_run import DryRunArgs, pod_priority, topology_aware_preempt
from .victims import (
    PREEMPT_REASON,
    CandidateNodes,
    NodeFailures,
    commit,
    preemptor_fits_on_node,
    validate_victims,
)

log = structlog.get_logger("vcsched.preempt")

PREEMPT_NEVER = "Never"
# the DisruptionTarget condition the evictor sets (cache.go · defaultEvictor)
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"

Filter = Callable[[TaskInfo], bool]


def pending_preemptors(ssn: Session, job: JobInfo) -> PriorityQueue[TaskInfo]:
    """The job's Pending, non-gated tasks in task order."""
    return PriorityQueue(ssn.task_order, (t for t in job.tasks_in(TaskStatus.Pending) if not t.scheduling_gated))


class PreemptAction(Action):
    name = "preempt"
    dry_run: DryRunArgs | None = None  # enableTopologyAwarePreemption's arguments, when it is on

    @classmethod
    def validate_arguments(cls, arguments: Arguments) -> None:
        arguments.get_bool("predicateErrorCacheEnable", True)
        arguments.get_bool("enableTopologyAwarePreemption", False)
        DryRunArgs.parse(arguments)

    def execute(self, ssn: Session) -> None:
        args = ssn.conf.action_arguments(self.name)
        self.dry_run = DryRunArgs.parse(args) if args.get_bool("enableTopologyAwarePreemption", False) else None
        candidates = CandidateNodes(ssn)
        # one predicate helper for the whole action, as Volcano's: its error cache spans both phases
        failures = NodeFailures() if args.get_bool("predicateErrorCacheEnable", True) else None

        preemptors_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        preemptor_tasks: dict[str, PriorityQueue[TaskInfo]] = {}
        under_request: dict[str, list[JobInfo]] = {}
        for job in ssn.jobs.values():
            if job.is_pending():
                continue
            vr = ssn.job_valid(job)
            if vr is not None:
                log.debug("skip preemption", job=job.uid, reason=vr.reason, message=vr.message)
                continue
            if job.queue not in ssn.queues:
                log.debug("queue not found for job, skip preemption", job=job.uid, queue=job.queue)
                continue
            if not ssn.job_starving(job):
                continue
            if job.contains_network_topology:  # Volcano: not supported yet (volcano-sh/volcano#4374)
                log.debug("skip preemption: jobs containing networkTopology do not support preemption", job=job.uid)
                continue
            if job.queue not in preemptors_by_queue:
                preemptors_by_queue[job.queue] = PriorityQueue(ssn.job_order)
            preemptors_by_queue[job.queue].push(job)
            under_request.setdefault(job.queue, []).append(job)
            preemptor_tasks[job.uid] = pending_preemptors(ssn, job)

        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order, (ssn.queues[q] for q in preemptors_by_queue))
        while not queues.empty():
            queue = queues.pop()
            # Preemption between jobs within the queue.
            preemptors = preemptors_by_queue.get(queue.name)
            while preemptors is not None and not preemptors.empty():
                preemptor_job = preemptors.pop()
                stmt = Statement(ssn)
                tasks = preemptor_tasks[preemptor_job.uid]
                while ssn.job_starving(preemptor_job) and not tasks.empty():
                    preemptor = tasks.pop()

                    def between_jobs(task: TaskInfo, preemptor: TaskInfo = preemptor,
                                     preemptor_job: JobInfo = preemptor_job) -> bool:
                        if not task.status & PREEMPTABLE_STATUS:
                            return False
                        # a BestEffort pod may not preempt a pod that asks for resources
                        if preemptor.best_effort and not task.best_effort:
                            return False
                        if not task.preemptable:
                            return False
                        job = ssn.jobs.get(task.job)
                        if job is None:
                            return False
                        return job.queue == preemptor_job.queue and preemptor.job != task.job

                    self.preempt(ssn, candidates, failures, stmt, preemptor, between_jobs)
                # commit only if the job is pipelined, otherwise try the next job
                if ssn.job_pipelined(preemptor_job):
                    commit(ssn, stmt, self.name)
                else:
                    stmt.discard()

            # Preemption between tasks within a job.
            for job in under_request.get(queue.name, ()):
                intra = pending_preemptors(ssn, job)
                while not intra.empty():
                    preemptor = intra.pop()

                    def within_job(task: TaskInfo, preemptor: TaskInfo = preemptor) -> bool:
                        if not task.status & PREEMPTABLE_STATUS:
                            return False
                        if preemptor.best_effort and not task.best_effort:
                            return False
                        if not task.preemptable:
                            return False
                        return preemptor.job == task.job

                    stmt = Statement(ssn)
                    if not self.preempt(ssn, candidates, failures, stmt, preemptor, within_job):
                        stmt.discard()
                        break
                    commit(ssn, stmt, self.name)

    # -- one preemptor -----------------------------------------------------------------

    def preempt(self, ssn: Session, candidates: CandidateNodes, failures: NodeFailures | None, stmt: Statement,
                preemptor: TaskInfo, filter_: Filter) -> bool:
        """Evict victims for ``preemptor`` on the first candidate node where that makes it fit."""
        reason = eligible_to_preempt(ssn, preemptor)
        if reason:
            log.debug("preemptor not eligible", task=preemptor.key, reason=reason)
            return False
        err = ssn.pre_predicate(preemptor)
        if err:
            log.debug("PrePredicate failed", task=preemptor.key, error=err)
            return False
        job = ssn.jobs.get(preemptor.job)
        if job is None:
            return False
        queue = ssn.queues[job.queue]
        if self.dry_run is not None:
            nodes = list(candidates.nodes(preemptor, False, failures))
            return topology_aware_preempt(ssn, stmt, queue, preemptor, nodes, filter_, self.dry_run)
        for node in candidates.nodes(preemptor, True, failures):
            if self.preempt_on_node(ssn, stmt, queue, preemptor, node, filter_):
                return True
        return False

    @staticmethod
    def preempt_on_node(ssn: Session, stmt: Statement, queue: QueueInfo, preemptor: TaskInfo, node: NodeInfo,
                        filter_: Filter) -> bool:
        """``normalPreempt`` on one node: evict in victim order until the preemptor fits, then pipeline it."""
        preemptees = [t for t in node.tasks.values() if filter_(t)]
        victims = ssn.preemptable(preemptor, preemptees)
        ssn.stats.preemption_victims = len(victims)
        if not validate_victims(preemptor, node, victims):
            return False
        # evictions on this node are kept only if the preemptor lands here
        node_stmt = Statement(ssn)
        victims_queue = ssn.build_victims_priority_queue(victims, preemptor)
        preempted = Resource()
        fits = preemptor_fits_on_node(ssn, queue, preemptor, node)
        while not fits and not victims_queue.empty():
            preemptee = victims_queue.pop()
            node_stmt.evict(preemptee, PREEMPT_REASON)
            preempted.add(preemptee.resreq)
            fits = preemptor_fits_on_node(ssn, queue, preemptor, node)
        ssn.stats.preemption_attempts += 1
        if fits:
            try:
                node_stmt.pipeline(preemptor, node, not preempted.is_empty())
            except StatementError as e:
                log.error("failed to pipeline task", task=preemptor.key, node=node.name, error=str(e))
                node_stmt.discard()
                return False
            stmt.merge(node_stmt)
            return True
        node_stmt.discard()
        return False


def terminating_by_preemption(task: TaskInfo) -> bool:
    """The pod carries ``DisruptionTarget=True`` with reason ``PreemptionByScheduler`` and is being deleted."""
    meta = task.pod.get("metadata") or {}
    if not meta.get("deletionTimestamp"):
        return False
    for c in (task.pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == DISRUPTION_TARGET:  # the first one decides
            return c.get("status") == "True" and c.get("reason") == PREEMPTION_BY_SCHEDULER
    return False


def eligible_to_preempt(ssn: Session, preemptor: TaskInfo) -> str:
    """``taskEligibleToPreempt``: why the task may not preempt, or "" when it may."""
    if preemptor.spec.preemption_policy == PREEMPT_NEVER:
        return "not eligible to preempt other tasks due to preemptionPolicy is Never"
    nominated = preemptor.nominated_node
    if not nominated:
        return ""
    node = ssn.nodes.get(nominated)
    if node is None:
        return "not eligible due to the pod's nominated node is not found in the session"
    statuses = ssn.predicate(preemptor, node)
    if not statuses:
        return ("not eligible due to the pod's nominated node is already schedulable, which should not happen "
                "as preemption means no node is schedulable")
    if any(s.code == StatusCode.UnschedulableAndUnresolvable for s in statuses):
        return ""
    priority = pod_priority(preemptor)
    for t in node.tasks.values():
        if pod_priority(t) < priority and terminating_by_preemption(t):
            return "not eligible due to a terminating pod caused by preemption on the nominated node"
    return ""
