"""gangreclaim: a starving job of a queue below its share takes back resources from other queues, for
the whole job at once (actions/gangreclaim/gangreclaim.go).

The loop, the bundles and the dry run are gang_eviction.py's.  What is gangreclaim's own:

- an overused queue is skipped, and a job whose queue may not reclaim for all its pending tasks
  together (``ssn.preemptive``) evicts nothing;
- candidates: Running, preemptable tasks of jobs of *other*, reclaimable queues whose PodGroup does
  not say ``volcano.sh/preemptable: false``;
- bundle order between queues: the victim-queue order (``VictimQueueOrderFn`` against the reclaiming
  job's queue).

Arguments: ``maxDomains`` (8) and ``allowWholeBundle`` (true), see ``GangEvictionArgs``.
"""

from __future__ import annotations

from vcsched.api.job_info import JobInfo
from vcsched.api.node_info import NodeInfo
from vcsched.api.queue_info import QueueInfo
from vcsched.api.resource import Resource
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import TaskStatus
from vcsched.framework.interface import EvictionKind
from vcsched.framework.session import Session

from .gang_eviction import Bundle, GangEvictionAction, preemptable_for_gang_eviction, sort_bundles_for_reclaim


class GangReclaimAction(GangEvictionAction):
    name = "gangreclaim"
    kind = EvictionKind.GANG_RECLAIM

    def skip_queue(self, ssn: Session, queue: QueueInfo) -> bool:
        return ssn.overused(queue)

    def may_evict_for(self, ssn: Session, queue: QueueInfo, pending: list[TaskInfo]) -> bool:
        return ssn.preemptive(queue, pending)

    def candidates(self, ssn: Session, job: JobInfo, nodes: list[NodeInfo]) -> dict[str, list[TaskInfo]]:
        by_job: dict[str, list[TaskInfo]] = {}
        for node in nodes:
            for t in node.tasks.values():
                if t.status != TaskStatus.Running or not t.preemptable:
                    continue
                victim_job = ssn.jobs.get(t.job)
                if victim_job is None or victim_job.queue == job.queue:
                    continue
                if not preemptable_for_gang_eviction(victim_job):
                    continue
                victim_queue = ssn.queues.get(victim_job.queue)
                if victim_queue is None or not victim_queue.reclaimable():
                    continue
                by_job.setdefault(t.job, []).append(t)
        return by_job

    def sort_bundles(self, ssn: Session, job: JobInfo, bundles: list[Bundle], need: Resource) -> None:
        own = ssn.queues.get(job.queue)

        def less_queue(l: QueueInfo, r: QueueInfo) -> bool:
            if own is None:
                return ssn.queue_order(l, r)
            return ssn.victim_queue_order(l, r, own)

        sort_bundles_for_reclaim(bundles, need, less_queue, ssn.queues)
