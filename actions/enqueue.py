"""enqueue: admit pending PodGroups into their queues (actions/enqueue/enqueue.go)."""

from __future__ import annotations

import structlog

from vcsched.api.job_info import JobInfo
from vcsched.api.queue_info import QueueInfo
from vcsched.api.types import PodGroupPhase
from vcsched.framework.interface import Action
from vcsched.framework.session import Session
from vcsched.framework.util import OrderedQueue, PriorityQueue

log = structlog.get_logger("vcsched.enqueue")


class EnqueueAction(Action):
    name = "enqueue"

    def execute(self, ssn: Session) -> None:
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order)
        jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        for job in ssn.fresh_jobs:  # a reused clone is settled, its PodGroup Running or Completed
            queue = ssn.queues.get(job.queue)
            if queue is None:
                log.error("job's queue is not in the session", job=job.uid, queue=job.queue)
                continue
            if queue.name not in jobs_by_queue:
                jobs_by_queue[queue.name] = OrderedQueue(ssn.job_order)
                queues.push(queue)
            if job.is_pending():
                jobs_by_queue[queue.name].push(job)

        while not queues.empty():
            queue = queues.pop()
            jobs = jobs_by_queue[queue.name]
            if jobs.empty():
                continue
            job = jobs.pop()
            if job.podgroup.min_resources is None or ssn.job_enqueueable(job):
                ssn.job_enqueued(job)
                job.podgroup.phase = PodGroupPhase.INQUEUE
            queues.push(queue)
