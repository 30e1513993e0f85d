"""backfill: place BestEffort tasks, which ask for nothing (actions/backfill/backfill.go)."""

from __future__ import annotations

import structlog

from vcsched.api.fit_errors import FitError, FitErrors, Status
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import StatusCode, TaskStatus
from vcsched.framework.interface import Action, ScoringError
from vcsched.framework.node_search import Placement
from vcsched.framework.session import EventError, Session
from vcsched.framework.statement import Statement
from vcsched.framework.util import PriorityQueue

from .allocate import node_search

log = structlog.get_logger("vcsched.backfill")


class BackfillAction(Action):
    name = "backfill"

    def execute(self, ssn: Session) -> None:
        search = node_search(ssn)
        for task in self.candidates(ssn):
            job = ssn.jobs[task.job]
            err = ssn.pre_predicate(task)
            if err:
                job.record_fit_errors(task, search.pre_predicate_errors(task, err))
                continue
            try:
                found = search.find(task, predicate_only=True)
            except ScoringError as e:
                # no node chosen (Volcano's backfill would dereference the missing node)
                log.warning("backfill chose no node: scoring failed", task=task.key, error=str(e))
                continue
            if not isinstance(found, Placement):
                job.record_fit_errors(task, found)
                continue
            try:
                ssn.allocate(task, found.node)
            except EventError as e:
                log.error("backfill failed to allocate task", task=task.key, node=found.node.name, error=str(e))
                errors = FitErrors()
                errors.set_node_error(FitError(task.namespace, task.name, found.node.name,
                                               [Status(StatusCode.Error, str(e))]))
                job.record_fit_errors(task, errors)
                continue
            ssn.stats.job_placements[job.uid] += 1

    @staticmethod
    def candidates(ssn: Session) -> list[TaskInfo]:
        """BestEffort tasks of running-eligible jobs: queues, then jobs, then tasks, in order."""
        by_queue: dict[str, list] = {}
        for job in ssn.fresh_jobs:  # a reused clone is settled: no candidate in it
            if not job.by_status.get(TaskStatus.Pending) and not job.by_status.get(TaskStatus.Pipelined):
                continue  # no candidate in it (JobValid is only a check)
            if job.is_pending() or ssn.job_valid(job) is not None or job.queue not in ssn.queues:
                continue
            # pending ones first: an unpipelined task turns Pending and must not be taken twice
            tasks = [t for t in job.tasks_in(TaskStatus.Pending) if t.best_effort and not t.scheduling_gated]
            for t in job.tasks_in(TaskStatus.Pipelined):
                if t.best_effort:
                    Statement(ssn).unpipeline(t)
                    tasks.append(t)
            if tasks:
                by_queue.setdefault(job.queue, []).append((job, tasks))
        ordered: list[TaskInfo] = []
        queues = PriorityQueue(ssn.queue_order, (ssn.queues[q] for q in by_queue))
        while not queues.empty():
            queue = queues.pop()
            jobs = PriorityQueue(lambda l, r: ssn.job_order(l[0], r[0]), by_queue[queue.name])
            while not jobs.empty():
                _, tasks = jobs.pop()
                ordered.extend(PriorityQueue.sorted(ssn.task_order, tasks))
        return ordered

