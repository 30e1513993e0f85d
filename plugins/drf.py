"""drf: dominant resource fairness between jobs, and between queues with ``enableHierarchy``
(plugins/drf/drf.go).

spec/framework.md §8.4.  A job's share is the largest allocated/total ratio over the
cluster's resources (``pods`` included).  Always registered: job order (lower share
first), preemptable (a preemptee is a victim while its job's share without it stays at
or above the preemptor job's share with the preemptor), and the event handlers that
keep the shares current.

With ``enableHierarchy: true`` on the (first) ``drf`` entry of the tiers (Volcano's
``HierarchyEnabled``), hierarchical DRF (hdrf) is on as well: the queues form a tree
from their ``volcano.sh/hierarchy`` and ``volcano.sh/hierarchy-weights`` annotations
(plugins/hdrf.py has the tree and its share arithmetic), and drf also registers

- queue order: by the tree, level by level from the root (unsaturated before saturated,
  then lower share/weight);
- reclaimable: a reclaimee is a victim when, in a copy of the tree where the reclaimer's
  job holds the reclaimer and the reclaimee's job no longer holds the reclaimee, the
  reclaimer's queue still orders strictly before the reclaimee's; every reclaimee is
  judged on its own, not cumulatively;
- the event handlers also keep the tree and the session's total allocation current.

hdrf cannot share a tier with proportion (the conf refuses it, as Volcano does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog
from vcsched.api.job_info import JobInfo
from vcsched.api.queue_info import QueueInfo
from vcsched.api.resource import Resource
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import ALLOCATED_STATUSES, Vote
from vcsched.framework.arguments import Arguments
from vcsched.framework.interface import Plugin, Point
from vcsched.framework.session import EventHandler
from vcsched.plugins.hdrf import (
    HIERARCHY_ANNOTATION,
    HIERARCHY_WEIGHTS_ANNOTATION,
    DrfAttr,
    HierarchyTree,
    dominant_share,
    weight_problems,
)

if TYPE_CHECKING:
    from vcsched.framework.session import Session

log = structlog.get_logger("vcsched.drf")

SHARE_DELTA = 0.000001


def queue_hierarchy(queue: QueueInfo) -> tuple[str, str]:
    """The queue's path and weights annotations ("" when absent)."""
    ann = queue.annotations
    return ann.get(HIERARCHY_ANNOTATION, ""), ann.get(HIERARCHY_WEIGHTS_ANNOTATION, "")


class DrfPlugin(Plugin):
    name = "drf"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.total = Resource()
        self.total_names: list[str] = []
        self.job_attrs: dict[str, DrfAttr] = {}  # a JobShares while a session is open
        # hdrf: None when enableHierarchy is off
        self.tree: HierarchyTree | None = None

    # -- shares -------------------------------------------------------------------

    def calculate_share(self, allocated: Resource) -> tuple[str, float]:
        """The dominant resource and its share of the cluster total."""
        return dominant_share(allocated, self.total, self.total_names)

    def update_share(self, attr: DrfAttr) -> None:
        attr.dominant_resource, attr.share = self.calculate_share(attr.allocated)

    # -- session ------------------------------------------------------------------

    def on_session_open(self, ssn: "Session") -> None:
        self.total = ssn.total_resource.clone()
        self.total_names = self.total.resource_names()
        self.job_attrs = JobShares(self, ssn)

        ssn.add(Point.PREEMPTABLE, self.name, self.preemptable)
        if ssn.hierarchy_enabled(self.name):
            self._open_hierarchy(ssn)
            ssn.add(Point.QUEUE_ORDER, self.name, self.queue_order)
            ssn.add(Point.RECLAIMABLE, self.name, lambda l, r: self.reclaimable(ssn, l, r))
        ssn.add(Point.JOB_ORDER, self.name, self.job_order)
        ssn.add_event_handler(EventHandler(
            allocate=lambda task: self.on_allocate(ssn, task),
            deallocate=lambda task: self.on_deallocate(ssn, task),
        ))

    def _open_hierarchy(self, ssn: "Session") -> None:
        """Every job of the session as a leaf under its queue's path, then one pass over the tree
        (Volcano updates the tree job by job; only the last pass's result remains)."""
        tree = self.tree = HierarchyTree(self.total, self.total_names)
        warned: set[str] = set()
        for job in ssn.jobs.values():
            queue = ssn.queues.get(job.queue)
            if queue is None:
                continue
            hierarchy, weights = queue_hierarchy(queue)
            if queue.name not in warned:
                warned.add(queue.name)
                problems = weight_problems(hierarchy, weights)
                if problems:
                    log.warning("drf: queue hierarchy weights read differently from what is written",
                                queue=queue.name, field=f"metadata.annotations[{HIERARCHY_WEIGHTS_ANNOTATION}]",
                                hierarchy=hierarchy, weights=weights, problems="; ".join(problems))
            attr = self.job_attrs[job.uid]
            tree.allocated.add(attr.allocated)
            tree.place(job.uid, attr, job.total_request, hierarchy, weights)
        tree.refresh()

    def preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        """A preemptee is a victim while its job's share, without it, stays at or above the preemptor's."""
        latt = self.job_attrs.get(preemptor.job)
        if latt is None:
            return [], Vote.Permit
        _, ls = self.calculate_share(latt.allocated.clone().add(preemptor.resreq))
        allocations: dict[str, Resource] = {}
        victims: list[TaskInfo] = []
        for preemptee in preemptees:
            ralloc = allocations.get(preemptee.job)
            if ralloc is None:
                ratt = self.job_attrs.get(preemptee.job)
                if ratt is None:
                    continue
                ralloc = allocations[preemptee.job] = ratt.allocated.clone()
            ralloc.sub(preemptee.resreq)
            _, rs = self.calculate_share(ralloc)
            if ls < rs or abs(ls - rs) <= SHARE_DELTA:
                victims.append(preemptee)
        return victims, Vote.Permit

    def job_order(self, l: JobInfo, r: JobInfo) -> int:
        """Lower dominant share first."""
        la, ra = self.job_attrs.get(l.uid), self.job_attrs.get(r.uid)
        ls = la.share if la is not None else 0.0
        rs = ra.share if ra is not None else 0.0
        if ls == rs:
            return 0
        return -1 if ls < rs else 1

    # -- hdrf ---------------------------------------------------------------------

    def queue_order(self, l: QueueInfo, r: QueueInfo) -> int:
        """The queue the tree serves first goes first."""
        assert self.tree is not None
        ret = self.tree.compare_queues(queue_hierarchy(l)[0], queue_hierarchy(r)[0])
        if ret < 0:
            return -1
        if ret > 0:
            return 1
        return 0

    def reclaimable(self, ssn: "Session", reclaimer: TaskInfo,
                    reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        """Victims whose queue would still be served after the reclaimer's, each judged on a copy
        of the tree with only that reclaimee taken away and the reclaimer added."""
        assert self.tree is not None
        victims: list[TaskInfo] = []
        ljob = ssn.jobs.get(reclaimer.job)
        lqueue = ssn.queues.get(ljob.queue) if ljob is not None else None
        attr = self.job_attrs.get(ljob.uid) if ljob is not None else None
        if ljob is None or lqueue is None or attr is None:
            return victims, Vote.Permit
        tree = self.tree.clone()
        lattr = DrfAttr(attr.allocated.clone().add(reclaimer.resreq))
        tree.allocated.add(reclaimer.resreq)
        self.update_share(lattr)
        lhierarchy, lweights = queue_hierarchy(lqueue)
        tree.update(ljob.uid, lattr, ljob.total_request, lhierarchy, lweights)

        for reclaimee in reclaimees:
            rjob = ssn.jobs.get(reclaimee.job)
            rqueue = ssn.queues.get(rjob.queue) if rjob is not None else None
            ratt = self.job_attrs.get(rjob.uid) if rjob is not None else None
            if rjob is None or rqueue is None or ratt is None:
                continue
            rhierarchy, rweights = queue_hierarchy(rqueue)
            # the reclaimee's job without it ...
            tree.allocated.sub(reclaimee.resreq)
            rattr = DrfAttr(ratt.allocated.clone().sub(reclaimee.resreq))
            self.update_share(rattr)
            tree.update(rjob.uid, rattr, rjob.total_request, rhierarchy, rweights)
            ret = tree.compare_queues(lhierarchy, rhierarchy)
            # ... and with it again, for the next reclaimee
            tree.allocated.add(reclaimee.resreq)
            rattr.allocated.add(reclaimee.resreq)
            self.update_share(rattr)
            tree.update(rjob.uid, rattr, rjob.total_request, rhierarchy, rweights)
            if ret < 0:
                victims.append(reclaimee)
        return victims, Vote.Permit

    # -- events -------------------------------------------------------------------

    def _changed(self, ssn: "Session", task: TaskInfo, sign: int) -> None:
        job = ssn.jobs.get(task.job)
        attrs = self.job_attrs
        attr = dict.get(attrs, task.job)
        if attr is None:  # a reused job's, first asked for now: worked out with this change in it
            attr = attrs.get(task.job)
            if job is None or attr is None:
                return
        elif job is None:
            return
        else:
            if sign > 0:
                attr.allocated.add(task.resreq)
            else:
                attr.allocated.sub(task.resreq)
            self.update_share(attr)
        tree = self.tree
        if tree is None:
            return
        queue = ssn.queues.get(job.queue)
        if queue is None:
            return
        if sign > 0:
            tree.allocated.add(task.resreq)
        else:
            tree.allocated.sub(task.resreq)
        hierarchy, weights = queue_hierarchy(queue)
        tree.update(job.uid, attr, job.total_request, hierarchy, weights)

    def on_allocate(self, ssn: "Session", task: TaskInfo) -> None:
        self._changed(ssn, task, 1)

    def on_deallocate(self, ssn: "Session", task: TaskInfo) -> None:
        self._changed(ssn, task, -1)

    def on_session_close(self, ssn: "Session") -> None:
        shares = self.job_attrs
        if ssn.state.plugins.get("drf:total") != self.total.to_list():
            # the cluster changed: every job's share did (else the reused jobs' not asked for are as
            # published: the same allocation of the same total)
            ssn.state.plugins["drf:total"] = self.total.to_list()
            for uid in ssn.jobs:
                shares.get(uid)
        ssn.stats.job_shares.update((uid, attr.share) for uid, attr in shares.items())
        self.job_attrs = {}
        self.tree = None


class JobShares(dict):
    """Each job's allocation and dominant share (uid → DrfAttr).  The jobs the snapshot cloned afresh
    are worked out at open; a reused settled job's when first asked for (a session asks for those of
    the jobs it orders or takes tasks from, rarely a settled one's), from ``JobInfo.allocated``: its
    tasks were all settled at open, so the only changes a session makes to it (evictions and their
    undoing) move ``JobInfo.allocated`` exactly as drf's event handlers move a share's allocation."""

    def __init__(self, drf: DrfPlugin, ssn: "Session") -> None:
        super().__init__()
        self.drf = drf
        self.jobs = ssn.jobs
        for job in ssn.fresh_jobs:
            attr = DrfAttr()
            for t in job.tasks.values():
                if t.status in ALLOCATED_STATUSES:
                    attr.allocated.add(t.resreq)
            drf.update_share(attr)
            self[job.uid] = attr

    def get(self, uid: str, default: DrfAttr | None = None) -> DrfAttr | None:
        attr = dict.get(self, uid)
        if attr is None:
            job = self.jobs.get(uid)
            if job is None:
                return default
            attr = DrfAttr(job.allocated.clone())
            self.drf.update_share(attr)
            self[uid] = attr
        return attr

    def __getitem__(self, uid: str) -> DrfAttr:
        attr = self.get(uid)
        if attr is None:
            raise KeyError(uid)
        return attr
