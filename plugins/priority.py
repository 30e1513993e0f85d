"""priority: task, job and victim order by priority (plugins/priority/priority.go).

spec/framework.md §8.1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vcsched.api.job_info import JobInfo
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import Vote
from vcsched.framework.interface import EvictionContext, EvictionKind, Plugin, Point

if TYPE_CHECKING:
    from vcsched.framework.session import Session


class PriorityPlugin(Plugin):
    name = "priority"

    def on_session_open(self, ssn: "Session") -> None:
        jobs = ssn.jobs

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
            """Victims are lower-priority jobs' tasks, or lower-priority tasks of the preemptor's own job."""
            preemptor_job = jobs.get(preemptor.job)
            if preemptor_job is None:
                return [], Vote.Permit
            victims: list[TaskInfo] = []
            for preemptee in preemptees:
                preemptee_job = jobs.get(preemptee.job)
                if preemptee_job is None:
                    continue
                if preemptee_job.uid != preemptor_job.uid:
                    if preemptee_job.priority < preemptor_job.priority:
                        victims.append(preemptee)
                elif preemptee.priority < preemptor.priority:
                    victims.append(preemptee)
            return victims, Vote.Permit

        def unified_evictable(ctx: EvictionContext, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
            """gangpreempt: victims of jobs with a lower priority than the evicting job; gangreclaim is
            about queue shares, not priority: every candidate passes."""
            if ctx.kind is EvictionKind.GANG_RECLAIM:
                return candidates, Vote.Permit
            victims = []
            for t in candidates:
                job = jobs.get(t.job)
                if job is not None and job.priority < ctx.job.priority:
                    victims.append(t)
            return victims, Vote.Permit

        ssn.add(Point.TASK_ORDER, self.name, task_order)
        ssn.add(Point.JOB_ORDER, self.name, job_order)
        ssn.add(Point.PREEMPTABLE, self.name, preemptable)
        ssn.add(Point.UNIFIED_EVICTABLE, self.name, unified_evictable)
        ssn.add(Point.JOB_STARVING, self.name, job_starving)


def task_order(l: TaskInfo, r: TaskInfo) -> int:
    """Higher task priority first."""
    if l.priority == r.priority:
        return 0
    return -1 if l.priority > r.priority else 1


# A weak order on what a queued task keeps (its priority): allocate may sort a job's tasks once
# (actions/allocate.py · worksheet)
task_order.stable = True


def job_order(l: JobInfo, r: JobInfo) -> int:
    """Higher job priority first."""
    if l.priority > r.priority:
        return -1
    if l.priority < r.priority:
        return 1
    return 0


def job_starving(job: JobInfo) -> bool:
    """Starving while some task is neither ready nor pipelined."""
    return job.ready_task_num() + job.waiting_task_num() < len(job.tasks)
