"""gang: all-or-nothing admission of a job's minimum (plugins/gang/gang.go)."""

from __future__ import annotations

from vcsched.api.job_info import JobInfo
from vcsched.api.sub_job import SubJobInfo
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import ALLOCATED_STATUS, TaskStatus, Vote
from vcsched.framework.interface import Plugin, Point, ValidateResult
from vcsched.framework.session import Session

NOT_ENOUGH_PODS_OF_TASK = "NotEnoughPodsOfTask"
NOT_ENOUGH_TASKS = "NotEnoughTasks"
NOT_ENOUGH_RESOURCES = "NotEnoughResources"


class GangPlugin(Plugin):
    name = "gang"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add(Point.JOB_VALID, self.name, self.job_valid)
        ssn.add(Point.PREEMPTABLE, self.name, lambda p, ts: self.victims(ssn, ts))
        ssn.add(Point.RECLAIMABLE, self.name, lambda p, ts: self.victims(ssn, ts))
        # gangpreempt/gangreclaim keep minAvailable by their safe/whole bundles: every candidate passes
        ssn.add(Point.UNIFIED_EVICTABLE, self.name, lambda ctx, ts: (ts, Vote.Permit))
        ssn.add(Point.JOB_ORDER, self.name, self.job_order)
        ssn.add(Point.JOB_READY, self.name, self.job_ready)
        ssn.add(Point.JOB_PIPELINED, self.name, self.job_pipelined)
        ssn.add(Point.JOB_STARVING, self.name, lambda job: job.is_starving())
        ssn.add(Point.SUB_JOB_ORDER, self.name, self.sub_job_order)
        ssn.add(Point.SUB_JOB_READY, self.name, SubJobInfo.is_ready)
        ssn.add(Point.SUB_JOB_PIPELINED, self.name,
                lambda sj: Vote.Permit if sj.is_pipelined() else Vote.Reject)

    @staticmethod
    def job_valid(job: JobInfo) -> ValidateResult | None:
        if not job.check_task_valid():
            return ValidateResult(False, NOT_ENOUGH_PODS_OF_TASK,
                                  "Not enough valid pods of each task for gang-scheduling")
        if not job.check_sub_job_valid():
            return ValidateResult(False, NOT_ENOUGH_PODS_OF_TASK,
                                  "Not enough valid subGroups of each task for gang-scheduling")
        valid = job.valid_task_num()
        if valid < job.min_available:
            return ValidateResult(False, NOT_ENOUGH_TASKS,
                                  f"Not enough valid tasks for gang-scheduling, valid: {valid}, min: {job.min_available}")
        return None

    @staticmethod
    def victims(ssn: Session, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        """Victims only from jobs that stay at or above minAvailable after losing them."""
        occupied: dict[str, int] = {}
        victims = []
        for t in preemptees:
            job = ssn.jobs.get(t.job)
            if job is None:
                continue
            n = occupied.get(job.uid)
            if n is None:
                n = job.ready_task_num()
            if n > job.min_available:
                n -= 1
                victims.append(t)
            occupied[job.uid] = n
        return victims, Vote.Permit

    @staticmethod
    def job_order(l: JobInfo, r: JobInfo) -> int:
        lr, rr = l.is_ready(), r.is_ready()
        if lr == rr:
            return 0
        return 1 if lr else -1

    @staticmethod
    def job_ready(job: JobInfo) -> bool:
        return job.check_task_ready() and job.check_sub_job_ready() and job.is_ready()

    @staticmethod
    def job_pipelined(job: JobInfo) -> Vote:
        ok = job.check_task_pipelined() and job.check_sub_job_pipelined() and job.is_pipelined()
        return Vote.Permit if ok else Vote.Reject

    @staticmethod
    def sub_job_order(l: SubJobInfo, r: SubJobInfo) -> int:
        """Unready SubJobs first."""
        lr, rr = l.is_ready(), r.is_ready()
        if lr == rr:
            return 0
        return 1 if lr else -1

    def on_session_close(self, ssn: Session) -> None:
        """Write the Unschedulable or Scheduled condition of every job with tasks, and count the unready."""
        stats = ssn.stats
        unschedulable_jobs = 0
        # a reused job the session left alone is settled: a ready one keeps the Scheduled condition it
        # has, so only the unready ones among them are looked at (Session.unready_reused)
        jobs = ssn.jobs
        left_alone_unready = [jobs[uid] for uid in ssn.unready_reused if not jobs[uid].mutations]
        for job in (*ssn.fresh_jobs, *ssn.changed_reused, *left_alone_unready):
            if not job.tasks or job.podgroup is None:
                continue
            unready = 0
            if not job.is_ready():
                if _releasing_shortcut(job):
                    continue
                schedulable = sum(
                    1 for t in job.tasks_in(TaskStatus.Pending)
                    if t.last_transaction is not None and t.last_transaction.status & ALLOCATED_STATUS
                )
                unready = job.min_available - (schedulable + job.ready_task_num())
                unschedulable_jobs += 1
                stats.job_retries.append(job.uid)
                condition = {
                    "type": "Unschedulable",
                    "status": "True",
                    "transitionID": ssn.uid,
                    "lastTransitionTime": ssn.now,
                    "reason": NOT_ENOUGH_RESOURCES,
                    "message": f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {job.fit_error()}",
                }
            else:
                condition = {
                    "type": "Scheduled",
                    "status": "True",
                    "transitionID": ssn.uid,
                    "lastTransitionTime": ssn.now,
                    "reason": "tasks in gang are ready to be scheduled",
                    "message": "",
                }
            _set_condition(job, condition)
            stats.unschedulable_tasks[job.uid] = unready
        stats.unschedulable_jobs = unschedulable_jobs


def _releasing_shortcut(job: JobInfo) -> bool:
    """A job whose missing tasks are only waiting for their predecessors to terminate."""
    releasing_on_nodes = any(t.node_name for t in job.tasks_in(TaskStatus.Releasing))
    return (
        releasing_on_nodes
        and job.count(TaskStatus.Pending) == 0
        and job.count(TaskStatus.Pipelined) == 0
        and job.scheduled_task_num() + job.releasing_scheduled_task_num() >= job.min_available
    )


def _set_condition(job: JobInfo, condition: dict) -> None:
    """Conditions are replaced by type; a new type is appended."""
    conds = job.podgroup.conditions
    for i, c in enumerate(conds):
        if c.get("type") == condition["type"]:
            conds[i] = condition
            return
    conds.append(condition)
