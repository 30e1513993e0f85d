"""allocate for jobs with a hard network topology or subgroups (allocate.go · allocateForJob,
allocateForSubJob, allocateResourcesForTasks, the decision recorder).

Such a job is tried HyperNode by HyperNode.  The network-topology-aware plugin gives the HyperNodes
to try in *gradients* (lowest tier first); within a gradient each HyperNode gets a dry run: the
job's SubJobs are placed, each in the best HyperNode of its own gradients below the job's, on a
clean copy of the worksheet, the operations are saved and undone.  The first gradient with a
HyperNode where the job becomes ready (or pipelined) wins; among its HyperNodes the one whose
SubJobs scored highest, and its saved operations are done again for real.  A job or SubJob
already placed in part keeps to the HyperNodes its allowed tier permits above where it runs
(its AllocatedHyperNode), which becomes the lowest common ancestor of all its placements.

Without the plugin the only "gradient" is the whole cluster (the virtual cluster-top HyperNode), and
this path differs from plain allocate only in placing subgroups as gangs.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog
from vcsched.api.fit_errors import FitErrors, Status
from vcsched.api.job_info import JobInfo
from vcsched.api.queue_info import QueueInfo
from vcsched.api.sub_job import SubJobInfo
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import StatusCode, TaskStatus
from vcsched.framework.interface import ScoringError
from vcsched.framework.node_search import NodeSearch, Placement, PredicateErrorCache
from vcsched.framework.session import Session
from vcsched.framework.statement import SavedOperation, Statement, StatementError
from vcsched.framework.topology import CLUSTER_TOP, PURPOSE_ALLOCATE, SessionHyperNode
from vcsched.framework.util import PriorityQueue

log = structlog.get_logger("vcsched.allocate")


@dataclass(slots=True)
class SubJobWorksheet:
    tasks: PriorityQueue[TaskInfo]

    def empty(self) -> bool:
        return self.tasks.empty()

    def clone(self) -> "SubJobWorksheet":
        return SubJobWorksheet(self.tasks.clone())


@dataclass(slots=True)
class JobWorksheet:
    """The job's SubJobs still to place, the ones its gang needs first, and each one's pending tasks."""

    sub_jobs: PriorityQueue[SubJobInfo]
    sheets: dict[str, SubJobWorksheet]

    def empty(self) -> bool:
        return self.sub_jobs.empty()

    def clone(self) -> "JobWorksheet":
        return JobWorksheet(self.sub_jobs.clone(), {uid: s.clone() for uid, s in self.sheets.items()})

    def take(self, other: "JobWorksheet") -> None:
        """``ShallowCopyFrom``: carry on from what a dry run left."""
        self.sub_jobs, self.sheets = other.sub_jobs, other.sheets

    @classmethod
    def organize(cls, ssn: Session, job: JobInfo) -> "JobWorksheet":
        """``organizeJobWorksheet``: SubJobs not yet ready, those the policies' minSubGroups need first."""
        counts: dict[str, int] = {}
        waiting: list[SubJobInfo] = []
        for sj in job.sub_jobs.values():
            if ssn.sub_job_ready(job, sj):
                counts[sj.gid] = counts.get(sj.gid, 0) + 1
            else:
                waiting.append(sj)
        required: set[str] = set()
        for sj in PriorityQueue.sorted(ssn.sub_job_order, waiting):
            if counts.get(sj.gid, 0) < job.min_sub_jobs.get(sj.gid, 0):
                required.add(sj.uid)
                counts[sj.gid] = counts.get(sj.gid, 0) + 1

        def first(l: SubJobInfo, r: SubJobInfo) -> bool:
            lr, rr = l.uid in required, r.uid in required
            if lr != rr:
                return lr
            return ssn.sub_job_order(l, r)

        sheet = cls(PriorityQueue(first), {})
        for uid, sj in job.sub_jobs.items():
            tasks = PriorityQueue(ssn.task_order, (
                t for t in sj.tasks.values()
                if t.status == TaskStatus.Pending and not t.scheduling_gated and not t.best_effort))
            if not tasks.empty():
                sheet.sub_jobs.push(sj)
                sheet.sheets[uid] = SubJobWorksheet(tasks)
        return sheet


class Recorder:
    """Where each job and SubJob was placed in this action, applied to the job on commit."""

    __slots__ = ("jobs", "sub_jobs", "snapshot")

    def __init__(self) -> None:
        self.jobs: dict[str, str] = {}
        self.sub_jobs: dict[str, dict[str, dict[str, str]]] = {}  # job → HyperNode for the job → SubJob → HyperNode
        self.snapshot: dict[str, dict[str, str]] = {}

    def save_sub_job(self, job: str, for_job: str, sub_job: str, hypernode: str) -> None:
        self.sub_jobs.setdefault(job, {}).setdefault(for_job, {})[sub_job] = hypernode

    def snapshot_sub_jobs(self, job: JobInfo, sheet: JobWorksheet) -> None:
        self.snapshot[job.uid] = {uid: job.sub_jobs[uid].allocated_hypernode for uid in sheet.sheets}

    def recover_sub_jobs(self, job: JobInfo) -> None:
        for uid, hypernode in self.snapshot.get(job.uid, {}).items():
            job.sub_jobs[uid].allocated_hypernode = hypernode

    def update_job(self, ssn: Session, job: JobInfo) -> None:
        """``UpdateDecisionToJob``: the job's and its SubJobs' AllocatedHyperNodes after a commit."""
        for_job = self.jobs.get(job.uid)
        if not for_job:
            return
        topo = ssn.topology
        job.allocated_hypernode = topo.lca(job.allocated_hypernode, for_job)
        for uid, hypernode in self.sub_jobs.get(job.uid, {}).get(for_job, {}).items():
            sj = job.sub_jobs.get(uid)
            if sj is not None:
                sj.allocated_hypernode = topo.lca(sj.allocated_hypernode, hypernode)


def recorder(ssn: Session) -> Recorder:
    rec = ssn.scratch.get("allocate_recorder")
    if rec is None:
        rec = ssn.scratch["allocate_recorder"] = Recorder()
    return rec


def allocate_for_job(ssn: Session, search: NodeSearch, queue: QueueInfo, job: JobInfo,
                     sheet: JobWorksheet) -> Statement | None:
    """``allocateForJob``: the job in the best HyperNode of the first gradient where it fits."""
    if sheet.empty():
        return None
    rec = recorder(ssn)
    rec.snapshot_sub_jobs(job, sheet)
    for gradient in ssn.hypernode_gradient_for_job(job, ssn.topology.top, PURPOSE_ALLOCATE):
        solutions: dict[str, tuple[list[SavedOperation], JobWorksheet, float]] = {}
        ordered = _best_first(ssn, sheet, gradient)
        for hypernode in ordered or gradient:
            job.reset_fit_errors()
            trial = sheet.clone()
            statements: list[Statement] = []
            score = 0.0
            while not trial.empty():
                sj = trial.sub_jobs.pop()
                sj_sheet = trial.sheets[sj.uid]
                stmt, sj_score = allocate_for_sub_job(ssn, search, queue, job, sj, sj_sheet, hypernode)
                if stmt is not None and stmt.operations:
                    statements.append(stmt)
                    score += sj_score
                    if not sj_sheet.empty():
                        trial.sub_jobs.push(sj)
                    if ssn.job_ready(job):
                        break
            rec.recover_sub_jobs(job)
            saved = [op for stmt in statements for op in stmt.saved()]
            if saved and (ssn.job_ready(job) or ssn.job_pipelined(job)):
                solutions[hypernode.name] = (saved, trial, score)
            for stmt in reversed(statements):  # a dry run in every HyperNode
                stmt.discard()
            if ordered and solutions:
                break  # tried best first: the first that fits is the one the full search would choose
        if not solutions:
            continue
        best = _best(ssn, {name: s[2] for name, s in solutions.items()})
        saved, trial, _ = solutions[best]
        final = Statement(ssn)
        try:
            final.recover(saved)
        except StatementError as e:
            log.error("Failed to recover operations", job=job.uid, hypernode=best, error=str(e))
            final.discard()
            return None
        sheet.take(trial)
        rec.jobs[job.uid] = best
        return final
    return None


def _best_first(ssn: Session, sheet: JobWorksheet, gradient: list[SessionHyperNode]) -> list[SessionHyperNode]:
    """The gradient's HyperNodes in the order the job would choose among them, when that order is known
    before any trial; [] when it is not.

    It is known when the job has one SubJob left to place and each HyperNode is, for that SubJob, its
    own only gradient (a lowest-tier HyperNode, say): the job's score in a HyperNode is then that
    HyperNode's score for the SubJob, which the plugins compute from what is placed already (the
    trials are undone before scoring), not from the trial.  Trying the HyperNodes best first (equal
    scores in gradient order) and stopping at the first where the job fits chooses what trying all
    of them would, at a fraction of the trials.  Not with a random tie-break (Volcano's), which must see
    every tied HyperNode that fits.  What differs: a task still pending after the job is placed
    keeps the fit errors of the last HyperNode tried, which is another one.
    """
    if ssn.state.tie_break is not None or len(sheet.sub_jobs) != 1 or len(gradient) < 2:
        return []
    sj = sheet.sub_jobs.clone().pop()
    for h in gradient:
        if ssn.hypernode_gradient_for_sub_job(sj, h, PURPOSE_ALLOCATE) != [[h]]:
            return []
    scores = {h.name: ssn.hypernode_scores(sj, [h.name])[h.name] for h in gradient}  # each alone, as in its trial
    order = {h.name: i for i, h in enumerate(gradient)}
    return sorted(gradient, key=lambda h: (-scores[h.name], order[h.name]))


def allocate_for_sub_job(ssn: Session, search: NodeSearch, queue: QueueInfo, job: JobInfo, sj: SubJobInfo,
                         sheet: SubJobWorksheet, for_job: SessionHyperNode) -> tuple[Statement | None, float]:
    """``allocateForSubJob``: the SubJob in the best HyperNode of the first gradient (below the job's
    HyperNode) where it fits; that HyperNode's score."""
    if sheet.empty():
        return None, 0.0
    topo = ssn.topology
    for gradient in ssn.hypernode_gradient_for_sub_job(sj, for_job, PURPOSE_ALLOCATE):
        solutions: dict[str, tuple[list[SavedOperation], SubJobWorksheet]] = {}
        for hypernode in gradient:
            job.reset_fit_errors(sj)
            trial = sheet.clone()
            stmt = allocate_tasks_in(ssn, search, queue, job, sj, trial.tasks, hypernode)
            if stmt is not None and stmt.operations:
                solutions[hypernode.name] = (stmt.saved(), trial)
                stmt.discard()
        if not solutions:
            continue
        scores = ssn.hypernode_scores(sj, list(solutions))
        best = _best(ssn, scores)
        saved, trial = solutions[best]
        final = Statement(ssn)
        try:
            final.recover(saved)
        except StatementError as e:
            log.error("Failed to recover operations", sub_job=sj.uid, hypernode=best, error=str(e))
            final.discard()
            return None, 0.0
        sj.allocated_hypernode = topo.lca(sj.allocated_hypernode, best)
        sheet.tasks = trial.tasks
        recorder(ssn).save_sub_job(job.uid, for_job.name, sj.uid, sj.allocated_hypernode)
        return final, scores[best]
    return None, 0.0


def _best(ssn: Session, scores: dict[str, float]) -> str:
    """The highest score; among equals the first tried (Volcano: any, at random — so does a session
    with a random ``tie_break``)."""
    top = max(scores.values())
    tied = [name for name, s in scores.items() if s == top]
    rng = ssn.state.tie_break
    return rng.choice(tied) if rng is not None and len(tied) > 1 else tied[0]


def allocate_tasks_in(ssn: Session, search: NodeSearch, queue: QueueInfo, job: JobInfo, sj: SubJobInfo,
                      tasks: PriorityQueue[TaskInfo], hypernode: SessionHyperNode) -> Statement | None:
    """``allocateResourcesForTasks``: the SubJob's tasks on the HyperNode's nodes, until it is ready."""
    nodes = hypernode.nodes
    if not nodes:
        return None
    stmt = Statement(ssn)
    errors = _error_cache(ssn, sj)
    allocated = sj.allocated_hypernode
    topo = ssn.topology
    while not tasks.empty():
        task = tasks.pop()
        if not ssn.allocatable(queue, task):
            continue
        if task.scheduling_gated:
            continue
        if job.task_has_fit_errors(task, sj):
            job.record_fit_errors(task, FitErrors(
                err=f"Task {task.name} with role spec {task.role} has already predicated failed, skip"))
            continue
        err = ssn.pre_predicate(task)
        if err:
            statuses = [Status(StatusCode.Error, err)]
            job.record_fit_errors(task, FitErrors(namespace=task.namespace, task_name=task.name,
                                                  statuses={n.name: statuses for n in nodes}))
            if job.need_continue_allocating(sj):
                continue
            break
        if sj.with_network_topology:
            task.job_allocated_hypernode = allocated
        try:
            found = search.find_in(task, nodes, errors)
        except ScoringError as e:
            log.warning("no node chosen: scoring failed", task=task.key, error=str(e))
            continue
        if not isinstance(found, Placement):
            if hypernode.name != CLUSTER_TOP:
                found.set_hypernode(hypernode.name)
            job.record_fit_errors(task, found)
            if job.need_continue_allocating(sj):
                continue
            break
        if not place(ssn, stmt, job, task, found):
            continue
        if sj.with_network_topology:
            leaf = topo.leaf_of(found.node.name)
            if leaf:
                allocated = topo.lca(leaf, allocated) if allocated else leaf
        if ssn.sub_job_ready(job, sj):
            break
    if ssn.sub_job_ready(job, sj):
        if sj.is_soft:
            sj.allocated_hypernode = allocated
        return stmt
    if ssn.sub_job_pipelined(job, sj):
        return stmt
    stmt.discard()
    return None


def place(ssn: Session, stmt: Statement, job: JobInfo, task: TaskInfo, found: Placement) -> bool:
    """``allocateResourcesForTask``: allocate on idle resources, else pipeline on releasing ones; False
    (logged) when the statement refuses it."""
    try:
        if found.fits_idle:
            stmt.allocate(task, found.node)
        else:
            stmt.pipeline(task, found.node, False)
    except StatementError as e:
        log.error("allocate resources for task failed", task=task.key, error=str(e))
        return False
    ssn.stats.job_placements[job.uid] += 1
    return True


def _error_cache(ssn: Session, sj: SubJobInfo) -> PredicateErrorCache | None:
    """A fresh predicate error cache per HyperNode tried (Volcano builds a predicate helper per call)."""
    if not ssn.conf.action_arguments("allocate").get_bool("predicateErrorCacheEnable", True):
        return None
    mixed = PredicateErrorCache.mixed_groups(t for t in sj.tasks.values() if t.status == TaskStatus.Pending)
    return PredicateErrorCache(mixed) if mixed else None
