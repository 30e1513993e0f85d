"""reclaim: a queue below its entitlement takes back resources from other queues (actions/reclaim/reclaim.go).

spec/framework.md §7.5.  Queues in queue order; an overused queue is skipped.  For
each starving job of the queue, its pending tasks that the queue may still take
(``ssn.preemptive``) evict Running tasks of *other, reclaimable* queues chosen by
the plugins (``ssn.reclaimable``, tier voting §6.2), in victim order (§6.3), until
the task fits the node's future idle resources; the task is then pipelined there.
The job's statement is committed only if the job is pipelined.
"""

from __future__ import annotations

import structlog

from vcsched.api.job_info import JobInfo
from vcsched.api.queue_info import QueueInfo
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import TaskStatus
from vcsched.framework.interface import Action
from vcsched.framework.session import Session
from vcsched.framework.statement import Statement, StatementError
from vcsched.framework.util import PriorityQueue

from .preempt import PREEMPT_NEVER, pending_preemptors
from .victims import RECLAIM_REASON, CandidateNodes, commit, validate_victims

log = structlog.get_logger("vcsched.reclaim")


class ReclaimAction(Action):
    name = "reclaim"

    def execute(self, ssn: Session) -> None:
        candidates = CandidateNodes(ssn)
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order)
        seen: set[str] = set()
        preemptors_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        preemptor_tasks: dict[str, PriorityQueue[TaskInfo]] = {}
        for job in ssn.jobs.values():
            if job.is_pending():
                continue
            vr = ssn.job_valid(job)
            if vr is not None:
                log.debug("skip reclaim", job=job.uid, reason=vr.reason, message=vr.message)
                continue
            queue = ssn.queues.get(job.queue)
            if queue is None:
                log.error(f"Failed to find Queue <{job.queue}> for Job <{job.namespace}/{job.name}>")
                continue
            if queue.name not in seen:
                seen.add(queue.name)
                queues.push(queue)
            if ssn.job_starving(job):
                if job.queue not in preemptors_by_queue:
                    preemptors_by_queue[job.queue] = PriorityQueue(ssn.job_order)
                preemptors_by_queue[job.queue].push(job)
                preemptor_tasks[job.uid] = pending_preemptors(ssn, job)

        while not queues.empty():
            queue = queues.pop()
            if ssn.overused(queue):
                log.debug("queue is overused, ignore it", queue=queue.name)
                continue
            while True:
                jobs = preemptors_by_queue.get(queue.name)
                if jobs is None or jobs.empty():
                    break
                job = jobs.pop()
                stmt = Statement(ssn)
                while ssn.job_starving(job):
                    tasks = preemptor_tasks.get(job.uid)
                    if tasks is None or tasks.empty():
                        break
                    task = tasks.pop()
                    if task.spec.preemption_policy == PREEMPT_NEVER:
                        continue
                    if not ssn.preemptive(queue, [task]):
                        continue
                    if ssn.pre_predicate(task):
                        continue
                    self.reclaim_for_task(ssn, candidates, stmt, task, job)
                if ssn.job_pipelined(job):
                    commit(ssn, stmt, self.name)
                else:
                    stmt.discard()
                # Volcano pushes the queue back here and also goes on with its next job at once;
                # the later pop finds no jobs left.  Copied, so queue order is consulted the same way.
                if not jobs.empty():
                    queues.push(queue)

    @staticmethod
    def reclaim_for_task(ssn: Session, candidates: CandidateNodes, stmt: Statement, task: TaskInfo,
                         job: JobInfo) -> None:
        for node in candidates.nodes(task, scored=False):
            reclaimees: list[TaskInfo] = []
            for t in node.tasks.values():
                if t.status != TaskStatus.Running or not t.preemptable:
                    continue
                j = ssn.jobs.get(t.job)
                if j is None or j.queue == job.queue:
                    continue
                if not ssn.queues[j.queue].reclaimable():
                    continue
                reclaimees.append(t)
            if not reclaimees:
                continue
            victims = ssn.reclaimable(task, reclaimees)
            if not validate_victims(task, node, victims):
                continue
            victims_queue = ssn.build_victims_priority_queue(victims, task)
            resreq = task.init_resreq
            # what the evictions release counts at once, so no more is reclaimed than needed
            available = node.future_idle()
            node_stmt = Statement(ssn)
            eviction_occurred = False
            while not victims_queue.empty():
                if resreq.less_equal(available):
                    break
                reclaimee = victims_queue.pop()
                node_stmt.evict(reclaimee, RECLAIM_REASON)
                available.add(reclaimee.resreq)
                eviction_occurred = True
            if not resreq.less_equal(available):
                node_stmt.discard()
                continue
            try:
                node_stmt.pipeline(task, node, eviction_occurred)
            except StatementError as e:
                log.error("failed to pipeline task", task=task.key, node=node.name, error=str(e))
                node_stmt.discard()
                continue
            stmt.merge(node_stmt)
            return
