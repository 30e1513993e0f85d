"""gangpreempt: a starving job evicts lower-priority jobs of its queue, for the whole job at once
(actions/gangpreempt/gangpreempt.go).

The loop, the bundles and the dry run are gang_eviction.py's.  What is gangpreempt's own:

- candidates: Bound or Running, preemptable tasks of *other* jobs of the *same* queue with a lower
  job priority, whose PodGroup does not say ``volcano.sh/preemptable: false`` (one that says
  nothing may be preempted here, unlike in plain preempt).  Plain preempt's rule that a BestEffort
  preemptor takes only BestEffort victims is not applied: the plugins' votes decide;
- bundle order between victim jobs: the job that comes *last* in job order is evicted first;
- no check that the queue is overused.

Arguments: ``maxDomains`` (8) and ``allowWholeBundle`` (true), see ``GangEvictionArgs``.
"""

from __future__ import annotations

from vcsched.api.job_info import JobInfo
from vcsched.api.node_info import NodeInfo
from vcsched.api.resource import Resource
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import PREEMPTABLE_STATUS
from vcsched.framework.interface import EvictionKind
from vcsched.framework.session import Session

from .gang_eviction import Bundle, GangEvictionAction, preemptable_for_gang_eviction, sort_bundles_for_preempt


class GangPreemptAction(GangEvictionAction):
    name = "gangpreempt"
    kind = EvictionKind.GANG_PREEMPT

    def candidates(self, ssn: Session, job: JobInfo, nodes: list[NodeInfo]) -> dict[str, list[TaskInfo]]:
        by_job: dict[str, list[TaskInfo]] = {}
        for node in nodes:
            for t in node.tasks.values():
                if not t.status & PREEMPTABLE_STATUS or not t.preemptable or t.job == job.uid:
                    continue
                victim_job = ssn.jobs.get(t.job)
                if victim_job is None or victim_job.queue != job.queue:
                    continue
                if not preemptable_for_gang_eviction(victim_job) or victim_job.priority >= job.priority:
                    continue
                by_job.setdefault(t.job, []).append(t)
        return by_job

    def sort_bundles(self, ssn: Session, job: JobInfo, bundles: list[Bundle], need: Resource) -> None:
        sort_bundles_for_preempt(bundles, need, lambda l, r: not ssn.job_order(l, r))
