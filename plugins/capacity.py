"""capacity: queue quotas by deserved, capability and guarantee, flat or as a tree (plugins/capacity/capacity.go).

Each queue has a *deserved* share (``spec.deserved``, raised to its guarantee), a *capability*
(``spec.capability``), a *guarantee* (``spec.guarantee.resource``) and a *real capability*:
what is left of its parent (the cluster, for a flat queue or a child of ``root``) once every
sibling's guarantee is set aside, plus its own guarantee, capped by its capability.

- ``allocatable``: an Open queue takes a task while allocated + the task's request stays within
  the real capability on the dimensions the task asks for, the queue's and every ancestor's.
- ``jobEnqueueable``: minResources + allocated + inqueue − elastic within the real capability,
  up the tree; a refusal records ``queue resource quota insufficient`` on the PodGroup.
- ``preemptive`` (reclaim's gate): within the real capability, and at or below deserved on some
  dimension the tasks ask for (or, with ``ancestorReclaimLevel``, an ancestor is).
- ``reclaimable``: from other queues, a victim must leave its queue's guarantee whole, and the
  queue must be over its deserved on a dimension the victim holds (or the victim holds nothing
  deserved counts); with ``ancestorReclaimLevel`` the ancestors below a shared one must be over
  theirs too.
- queue order: queue priority, then share = max over deserved's dimensions of allocated/deserved
  (a queue without deserved has share 1, after queues with deserved on ties); in a tree, leaves
  before inner queues, and two leaves compared by their ancestors just below the common one.
  Victims are taken first from the queue closest to the reclaimer in the tree.

With ``enableHierarchy`` the queues form a tree by ``spec.parent`` (``root`` when empty); every
queue gets attributes, a child's unset cpu or memory capability is its parent's, root's unset
capability is unbounded and its deserved and guarantee are its children's sums.  A cycle, a
missing parent, a job in a queue that has children or no ``root`` queue make the plugin refuse
everything for the session, as Volcano's ``readyToSchedule``.

DRA quotas (``capacity.DynamicResourceAllocationEnable``): ``deviceclass/<class>`` and
``<dimension>.deviceclass/<class>`` keys, checked beside the resources (plugins/capacity_dra.py).
``capacity.DRAConsumableCapacityEnable`` follows the DRAConsumableCapacity feature gate, on as in
Kubernetes 1.36 (the simulate contract's switches).

Not here yet: the ``SchedulingGatesQueueAdmission`` reservations (an alpha feature, off in Volcano).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import structlog

from vcsched.api.job_info import JobInfo
from vcsched.api.queue_info import QueueInfo
from vcsched.api.resource import Default, Resource, infinite_resource, intersection, share
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import ALLOCATED_STATUS, PodGroupPhase, QueueState, TaskStatus, Vote
from vcsched.framework.arguments import Arguments
from vcsched.framework.cycle_state import CycleState
from vcsched.framework.effects import Event
from vcsched.framework.interface import EvictionContext, EvictionKind, Plugin, Point

from .capacity_dra import DraQuota, TaskDra, job_min_dra, task_dra
from vcsched.framework.session import EventHandler
from vcsched.framework.stats import QueueStats
from vcsched.plugins.util import (
    allocated_task_num,
    deduct_sch_gated_resources,
    elastic_resources,
    format_resource_names,
    get_inqueue_resource,
    plain,
    resource_max,
)

if TYPE_CHECKING:
    from vcsched.framework.session import Session

log = structlog.get_logger("vcsched.capacity")

ROOT = "root"
ANCESTOR_RECLAIM_LEVEL = "ancestorReclaimLevel"
DRA_ENABLE = "capacity.DynamicResourceAllocationEnable"
DRA_CONSUMABLE_CAPACITY_ENABLE = "capacity.DRAConsumableCapacityEnable"
# Volcano sets a non-positive flat capability cpu or memory to math.MaxFloat64
UNLIMITED = sys.float_info.max
_MAX_INT64 = float(2**63 - 1)


@dataclass(slots=True)
class QueueAttr:
    """What capacity knows of one queue."""

    name: str
    deserved: Resource
    capability: Resource
    guarantee: Resource
    real_capability: Resource = field(default_factory=Resource)
    allocated: Resource = field(default_factory=Resource)
    request: Resource = field(default_factory=Resource)
    inqueue: Resource = field(default_factory=Resource)
    elastic: Resource = field(default_factory=Resource)  # allocated beyond minResources, summed over jobs
    share: float = 0.0
    ancestors: tuple[str, ...] = ()  # root first
    children: dict[str, "QueueAttr"] = field(default_factory=dict)
    dra: DraQuota | None = None  # DeviceClass quotas (capacity.DynamicResourceAllocationEnable)

    def clone(self) -> "QueueAttr":
        """A copy for preempt's dry run, which reads only the resources and the ancestors."""
        return QueueAttr(self.name, self.deserved.clone(), self.capability.clone(), self.guarantee.clone(),
                         self.real_capability.clone(), self.allocated.clone(), self.request.clone(),
                         self.inqueue.clone(), self.elastic.clone(), self.share, self.ancestors,
                         dra=self.dra.clone() if self.dra is not None else None)


@dataclass(slots=True)
class CapacityState:
    """The cycle state capacity's PrePredicateFn writes: a copy of every queue's attributes."""

    attrs: dict[str, QueueAttr]

    def clone(self) -> "CapacityState":
        return CapacityState({name: a.clone() for name, a in self.attrs.items()})


def update_share(attr: QueueAttr) -> None:
    """The largest allocated/deserved over deserved's dimensions; 1 for a queue without deserved
    (a best-effort queue goes after every queue still below its deserved)."""
    deserved = attr.deserved
    if deserved.is_empty():
        attr.share = 1.0
        return
    res = 0.0
    for rn in deserved.resource_names():
        res = max(res, share(attr.allocated.get(rn), deserved.get(rn)))
    attr.share = res


def compare_share(l: QueueAttr, r: QueueAttr) -> int:
    """By share; on equal shares a queue with deserved first."""
    if l.share == r.share:
        lh, rh = not l.deserved.is_empty(), not r.deserved.is_empty()
        if lh == rh:
            return 0
        return -1 if lh else 1
    return -1 if l.share < r.share else 1


def common_level(l: QueueAttr, r: QueueAttr) -> int:
    """``getQueueLevel``: the index of the deepest ancestor the two share (0, root, when none)."""
    level = 0
    for i in range(min(len(l.ancestors), len(r.ancestors))):
        if l.ancestors[i] != r.ancestors[i]:
            return level
        level = i
    return level


def ancestor_at_depth(attr: QueueAttr, depth: int) -> str | None:
    """The ancestor ``depth`` levels up (1: the parent), or None."""
    if depth <= 0 or len(attr.ancestors) < depth:
        return None
    return attr.ancestors[len(attr.ancestors) - depth]


class CapacityPlugin(Plugin):
    name = "capacity"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.ancestor_reclaim_level = arguments.get_int(ANCESTOR_RECLAIM_LEVEL, 0)
        # read (and type-checked) now; DRA quotas come with DRA itself
        self.dra_enable = arguments.get_bool(DRA_ENABLE, True)
        self.dra_consumable_capacity_enable = arguments.get_bool(DRA_CONSUMABLE_CAPACITY_ENABLE, True)
        self._dra_snap = None
        self._task_dra: dict[str, TaskDra | None] = {}
        self.total = Resource()
        self.attrs: dict[str, QueueAttr] = {}
        self.hierarchy = False
        self.ready = True

    # -- session open ---------------------------------------------------------------------------

    def on_session_open(self, ssn: "Session") -> None:
        if self.ancestor_reclaim_level < 0:
            log.warning(f"{ANCESTOR_RECLAIM_LEVEL} should be non-negative, got {self.ancestor_reclaim_level}. "
                        "Falling back to 0.")
            self.ancestor_reclaim_level = 0
        self.total = plain(ssn.total_resource)
        self.attrs = {}
        self._dra_snap = ssn.dra if self.dra_enable and ssn.dra is not None else None
        self._task_dra = {}
        self.hierarchy = ssn.hierarchy_enabled(self.name)
        if self.hierarchy:
            self.ready = self._build_tree(ssn)
        else:
            self._build_flat(ssn)
            self.ready = True
        self._register(ssn)

    def _account(self, job: JobInfo) -> tuple[Resource, Resource, Resource, Resource]:
        """What ``job`` adds to its queue: (allocated, request, inqueue, elastic)."""
        allocated, request, inqueue = Resource(), Resource(), Resource()
        for t in job.tasks.values():
            if t.status & ALLOCATED_STATUS:
                allocated.add(t.resreq)
                request.add(t.resreq)
            elif t.status == TaskStatus.Pending:
                request.add(t.resreq)
        pg = job.podgroup
        if pg is not None and pg.min_resources is not None:
            # Inqueue, or Running with minMember allocated (a finished Spark driver keeps its group
            # Running: without the count its resources would be reserved again)
            if pg.phase == PodGroupPhase.INQUEUE or (
                    pg.phase == PodGroupPhase.RUNNING and allocated_task_num(job) >= pg.min_member):
                inqueue.add(deduct_sch_gated_resources(job, get_inqueue_resource(job, job.allocated)))
        return allocated, request, inqueue, elastic_resources(job)

    @staticmethod
    def _add_usage(attr: QueueAttr, usage: tuple[Resource, Resource, Resource, Resource]) -> None:
        attr.allocated.add(usage[0])
        attr.request.add(usage[1])
        attr.inqueue.add(usage[2])
        attr.elastic.add(usage[3])

    def _build_flat(self, ssn: "Session") -> None:
        """``buildQueueAttrs``: attributes for the queues that have jobs."""
        total_guarantee = Resource()
        for queue in ssn.queues.values():
            total_guarantee.add(queue.guarantee)
        for job in ssn.jobs.values():
            attr = self.attrs.get(job.queue)
            if attr is None:
                attr = self.attrs[job.queue] = self._flat_attr(ssn.queues[job.queue], total_guarantee)
            self._add_usage(attr, self._account(job))
            self._add_dra_usage((attr,), job)
        for attr in self.attrs.values():
            attr.deserved.min_dimension(attr.real_capability, Default.INFINITY)
            attr.deserved = resource_max(attr.deserved, attr.guarantee)
            update_share(attr)

    def _flat_attr(self, queue: QueueInfo, total_guarantee: Resource) -> QueueAttr:
        guarantee = queue.guarantee.clone()
        real = self.total.exceeded_part(total_guarantee).add(guarantee)
        capability = Resource()
        if queue.capability is not None:
            capability = queue.capability.clone()
            if capability.milli_cpu <= 0:
                capability.milli_cpu = UNLIMITED
            if capability.memory <= 0:
                capability.memory = UNLIMITED
            real.min_dimension(capability, Default.INFINITY)
        deserved = queue.deserved.clone() if queue.deserved is not None else Resource()
        return QueueAttr(queue.name, deserved, capability, guarantee, real, dra=self._dra_quota(queue))

    def _build_tree(self, ssn: "Session") -> bool:
        """``buildHierarchicalQueueAttrs``: every queue, linked to its parent; False when the tree is broken."""
        for queue in ssn.queues.values():
            if queue.name in self.attrs:
                continue
            self.attrs[queue.name] = self._tree_attr(queue)
            err = self._link(ssn, queue, set())
            if err is not None:
                log.error(f"Failed to update Queue <{queue.name}> attributes, error: {err}")
                return False
        for job in ssn.jobs.values():
            attr = self.attrs.get(job.queue)
            if attr is None:
                continue
            if attr.children:
                log.error(f"The Queue <{attr.name}> of Job <{job.namespace}/{job.name}> is not leaf queue")
                return False
            usage = self._account(job)
            self._add_usage(attr, usage)
            for ancestor in attr.ancestors:
                self._add_usage(self.attrs[ancestor], usage)
            self._add_dra_usage((attr, *(self.attrs[a] for a in attr.ancestors)), job)
        root = self.attrs.get(ROOT)
        if root is None:
            log.warning(f'Root queue "{ROOT}" not found in session queues, skipping hierarchy initialization')
            return False
        # root is not bounded by what the cluster has now: users restrict with queues of their own
        if root.capability.is_empty():
            unbounded = infinite_resource()
            for name in self.total.scalars:
                unbounded.scalars[name] = _MAX_INT64
            root.capability = unbounded
        root.real_capability = root.capability
        self._settle(root)
        for attr in self.attrs.values():
            update_share(attr)
        return True

    def _tree_attr(self, queue: QueueInfo) -> QueueAttr:
        return QueueAttr(
            queue.name,
            queue.deserved.clone() if queue.deserved is not None else Resource(),
            queue.capability.clone() if queue.capability is not None else Resource(),
            queue.guarantee.clone(),
            dra=self._dra_quota(queue),
        )

    # -- DRA quotas (plugins/capacity_dra.py) ---------------------------------------------------------

    def _dra_quota(self, queue: QueueInfo) -> DraQuota | None:
        return DraQuota.of(queue.capability, queue.deserved, queue.guarantee) if self._dra_snap is not None else None

    def task_dra(self, task: TaskInfo) -> TaskDra | None:
        """What the task's claims ask (``DRAResreq``), once per session."""
        if self._dra_snap is None:
            return None
        if task.uid not in self._task_dra:
            self._task_dra[task.uid] = task_dra(task, self._dra_snap, self.dra_consumable_capacity_enable)
        return self._task_dra[task.uid]

    def _add_dra_usage(self, attrs: tuple[QueueAttr, ...], job: JobInfo) -> None:
        if self._dra_snap is None:
            return
        for t in job.tasks.values():
            if t.status & ALLOCATED_STATUS:
                td = self.task_dra(t)
                if td is not None:
                    for a in attrs:
                        if a.dra is not None:
                            a.dra.add_task(td)

    def _dra_allocatable(self, attr: QueueAttr, task: TaskInfo) -> bool:
        td = self.task_dra(task) if attr.dra is not None else None
        if td is None:
            return True
        wanted = attr.dra.incremental(td)
        return wanted is None or attr.dra.fits(wanted, self.dra_consumable_capacity_enable, False)

    def job_min_dra(self, job: JobInfo):
        return job_min_dra(job, self.task_dra) if self._dra_snap is not None else None

    def _link(self, ssn: "Session", queue: QueueInfo, visiting: set[str]) -> str | None:
        """``updateAncestors``: link ``queue`` under its parent, creating and linking the parent first."""
        if queue.name == ROOT:
            return None
        if queue.name in visiting:
            return f"cycle detected in queue hierarchy for queue {queue.name}"
        visiting.add(queue.name)
        try:
            parent = queue.parent or ROOT
            parent_info = ssn.queues.get(parent)
            if parent_info is None:
                return f"the queue {queue.name} has invalid parent queue {parent}"
            if parent not in self.attrs:
                self.attrs[parent] = self._tree_attr(parent_info)
                err = self._link(ssn, parent_info, visiting)
                if err is not None:
                    return err
            parent_attr = self.attrs[parent]
            attr = self.attrs[queue.name]
            parent_attr.children[queue.name] = attr
            attr.ancestors = (*parent_attr.ancestors, parent)
            return None
        finally:
            visiting.discard(queue.name)

    def _settle(self, attr: QueueAttr) -> None:
        """``checkHierarchicalQueue``: children's deserved, inherited capability and real capability,
        top down; what does not add up is logged, not refused."""
        total_guarantee, total_deserved = Resource(), Resource()
        cap = attr.capability
        for child in attr.children.values():
            child.deserved = resource_max(child.deserved, child.guarantee)
            total_deserved.add(child.deserved)
            total_guarantee.add(child.guarantee)
            ccap = child.capability
            if ccap.milli_cpu <= 0:
                ccap.milli_cpu = cap.milli_cpu
            if ccap.memory <= 0:
                ccap.memory = cap.memory
            for name, v in cap.scalars.items():
                ccap.scalars.setdefault(name, v)
            over = ccap.less_equal_with_names(cap, Default.INFINITY)
            if over:
                log.error(f"Child queue {child.name} capability ({ccap}) exceeds parent queue {attr.name} capability "
                          f"({cap}) on resources {over}. Child's effective capability will be limited by parent.")
        if attr.name == ROOT:
            attr.guarantee = total_guarantee
            attr.deserved = total_deserved
        for child in attr.children.values():
            child.real_capability = attr.real_capability.exceeded_part(total_guarantee).add(child.guarantee)
            child.real_capability.min_dimension(child.capability, Default.INFINITY)
        if attr.deserved.less_partly(total_deserved, Default.ZERO):
            log.error(f"Sum of child queue deserved ({total_deserved}) exceeds parent queue {attr.name} deserved "
                      f"({attr.deserved}). This may affect resource distribution during scheduling.")
        if attr.guarantee.less_partly(total_guarantee, Default.ZERO):
            log.error(f"Sum of child queue guarantees ({total_guarantee}) exceeds parent queue {attr.name} guarantee "
                      f"({attr.guarantee}). Not all child guarantees can be satisfied simultaneously.")
        for child in attr.children.values():
            self._settle(child)

    def is_leaf(self, queue: str) -> bool:
        return not self.attrs[queue].children

    # -- the checks -----------------------------------------------------------------------------

    def _chain(self, attrs: dict[str, QueueAttr], queue: str) -> list[QueueAttr]:
        """The queue, then its ancestors up to root (the order Volcano checks them in)."""
        attr = attrs[queue]
        return [attr, *(attrs[a] for a in reversed(attr.ancestors))]

    def allocatable_in(self, attrs: dict[str, QueueAttr], queue: str, task: TaskInfo) -> bool:
        """``checkQueueAllocatableHierarchically`` over ``attrs`` (the session's, or a dry run's copy)."""
        req = task.resreq
        for attr in self._chain(attrs, queue):
            if not self._dra_allocatable(attr, task):
                return False
            future = attr.allocated.clone().add(req)
            if future.less_equal_strict_in(attr.real_capability, req):
                return False
        return True

    def job_enqueueable(self, ssn: "Session", job: JobInfo) -> bool:
        """``checkJobEnqueueableHierarchically``: the job's minResources fit every queue up the tree."""
        min_req = job.podgroup.min_resources or Resource()
        min_dra = self.job_min_dra(job)
        for attr in self._chain(self.attrs, job.queue):
            r = min_req.clone().add(attr.allocated).add(attr.inqueue).sub(attr.elastic)
            failed = r.less_equal_strict_in(attr.real_capability, min_req)
            if not failed and min_dra is not None and attr.dra is not None and not attr.dra.fits(
                    min_dra, self.dra_consumable_capacity_enable, True):
                failed = ["dra-resource-exceeded"]
            if failed:
                pg = job.podgroup
                ssn.effects.append(Event(
                    "PodGroup", pg.namespace, pg.name, "Normal", "Unschedulable",
                    format_resource_names("queue resource quota insufficient", "insufficient", failed),
                ))
                return False
        return True

    def preemptive(self, queue: QueueInfo, tasks: list[TaskInfo]) -> bool:
        if not self.ready or queue.state != QueueState.OPEN:
            return False
        attr = self.attrs[queue.name]
        total_req = Resource()
        for t in tasks:
            if t is not None:
                total_req.add(t.resreq)
        future = attr.allocated.clone().add(total_req)
        if future.less_equal_strict_in(attr.real_capability, total_req):
            return False
        # some dimension the tasks ask for is still at or below deserved: they may reclaim
        if future.less_equal_partly_zero_filtered(attr.deserved, total_req):
            return True
        if self.hierarchy and self.ancestor_reclaim_level > 0:
            for level in self._levels_up(attr):
                ancestor = ancestor_at_depth(attr, level)
                if ancestor is None or ancestor == ROOT or ancestor not in self.attrs:
                    continue
                a = self.attrs[ancestor]
                if a.allocated.clone().add(total_req).less_equal_partly_zero_filtered(a.deserved, total_req):
                    return True
        return False

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo], ssn: "Session"
                    ) -> tuple[list[TaskInfo], Vote]:
        if not self.ready:
            return [], Vote.Reject
        reclaimer_job = ssn.jobs.get(reclaimer.job)
        reclaimer_attr = self.attrs.get(reclaimer_job.queue) if reclaimer_job is not None else None
        if reclaimer_attr is None:
            return [], Vote.Reject
        victims: list[TaskInfo] = []
        # each queue's allocated as victims are chosen: the next victim of a queue sees the earlier ones gone
        allocations: dict[str, Resource] = {}
        order = ssn.build_victims_priority_queue(reclaimees, reclaimer)
        while not order.empty():
            reclaimee = order.pop()
            job = ssn.jobs.get(reclaimee.job)
            attr = self.attrs.get(job.queue) if job is not None else None
            if attr is None:
                continue
            # nothing in common with what the reclaimer asks for (pods aside): no use taking it
            if not [n for n in intersection(reclaimee.resreq, reclaimer.init_resreq) if n != "pods"]:
                continue
            allocated = allocations.get(attr.name)
            if allocated is None:
                allocated = allocations[attr.name] = attr.allocated.clone()
            # the victim's queue keeps its guarantee
            if not attr.guarantee.less_equal(allocated.clone().sub(reclaimee.resreq), Default.ZERO):
                continue
            if not intersection(reclaimee.resreq, attr.deserved):
                # it holds nothing the queue's deserved counts: a victim, unless the two queues share an
                # ancestor within the level and the reclaimer's queue has no deserved for what it asks
                if (self.hierarchy and self.ancestor_reclaim_level > 0
                        and self._share_ancestor(reclaimer_attr, attr)
                        and not intersection(reclaimer.resreq, reclaimer_attr.deserved)):
                    continue
            elif not allocated.greater_partly_relevant(attr.deserved, reclaimee.resreq):
                continue
            ancestor_allocations: dict[str, Resource] = {}
            if self.hierarchy and self.ancestor_reclaim_level > 0 and not self._ancestors_over(
                    reclaimer_attr, attr, reclaimee, allocations, ancestor_allocations):
                continue
            allocated.sub(reclaimee.resreq)
            for a in ancestor_allocations.values():
                a.sub(reclaimee.resreq)
            victims.append(reclaimee)
        return victims, Vote.Permit

    def unified_evictable(self, ctx: EvictionContext, candidates: list[TaskInfo], ssn: "Session"
                          ) -> tuple[list[TaskInfo], Vote]:
        """gangpreempt: every candidate passes (capacity has no say in preemption).  gangreclaim: in the
        order given, a victim leaves its queue at or above its guarantee and holds nothing the queue's
        deserved counts, or its queue is above deserved on its dimensions (Volcano skips the
        no-shared-dimension and ancestor checks here)."""
        if ctx.kind is EvictionKind.GANG_PREEMPT:
            return candidates, Vote.Permit
        if not self.ready:
            return [], Vote.Reject
        victims: list[TaskInfo] = []
        allocations: dict[str, Resource] = {}
        for reclaimee in candidates:
            job = ssn.jobs.get(reclaimee.job)
            attr = self.attrs.get(job.queue) if job is not None else None
            if attr is None:
                continue
            allocated = allocations.get(attr.name)
            if allocated is None:
                allocated = allocations[attr.name] = attr.allocated.clone()
            if not attr.guarantee.less_equal(allocated.clone().sub(reclaimee.resreq), Default.ZERO):
                continue
            if intersection(reclaimee.resreq, attr.deserved) and not allocated.greater_partly_relevant(
                    attr.deserved, reclaimee.resreq):
                continue
            allocated.sub(reclaimee.resreq)
            victims.append(reclaimee)
        return victims, Vote.Permit

    def _ancestors_over(self, reclaimer_attr: QueueAttr, attr: QueueAttr, reclaimee: TaskInfo,
                        allocations: dict[str, Resource], ancestor_allocations: dict[str, Resource]) -> bool:
        """With ``ancestorReclaimLevel``: each of the victim queue's ancestors up to that level that the
        reclaimer's queue does not share must be over its deserved on the victim's dimensions too."""
        for level in self._levels_up(attr):
            ancestor = ancestor_at_depth(attr, level)
            if ancestor is None or ancestor == ROOT or ancestor_at_depth(reclaimer_attr, level) == ancestor:
                continue
            a = self.attrs.get(ancestor)
            if a is None:
                return False
            allocated = allocations.get(ancestor)
            if allocated is None:
                allocated = allocations[ancestor] = a.allocated.clone()
            ancestor_allocations[ancestor] = allocated
            if not intersection(reclaimee.resreq, a.deserved):
                continue
            if not allocated.greater_partly_relevant(a.deserved, reclaimee.resreq):
                return False
        return True

    def _share_ancestor(self, a: QueueAttr, b: QueueAttr) -> bool:
        """Do the two queues share a non-root ancestor within ``ancestorReclaimLevel`` levels up?"""
        mine = {ancestor_at_depth(a, d) for d in self._levels_up(a)}
        theirs = {ancestor_at_depth(b, d) for d in self._levels_up(b)}
        return any(x != ROOT and x in theirs for x in mine)

    def _levels_up(self, attr: QueueAttr) -> range:
        """The levels ``ancestorReclaimLevel`` asks about that the queue has an ancestor at: none above
        its root, whatever the argument says (a conf's 10^12 once counted up to it)."""
        return range(1, min(self.ancestor_reclaim_level, len(attr.ancestors)) + 1)

    # -- callbacks ------------------------------------------------------------------------------

    def _register(self, ssn: "Session") -> None:
        attrs = self.attrs
        hierarchy = self.hierarchy

        def queue_order(l: QueueInfo, r: QueueInfo) -> int:
            if l.priority != r.priority:
                return r.priority - l.priority
            la, ra = attrs.get(l.name), attrs.get(r.name)
            if la is None or ra is None:
                return 0
            if not hierarchy:
                return compare_share(la, ra)
            l_leaf, r_leaf = not la.children, not ra.children
            if l_leaf != r_leaf:
                return -1 if l_leaf else 1
            if not l_leaf:
                return compare_share(la, ra)
            level = common_level(la, ra)
            lp = la.ancestors[level + 1] if level + 1 < len(la.ancestors) else la.name
            rp = ra.ancestors[level + 1] if level + 1 < len(ra.ancestors) else ra.name
            return compare_share(attrs[lp], attrs[rp])

        def victim_queue_order(l: QueueInfo, r: QueueInfo, preemptor: QueueInfo) -> int:
            p = attrs[preemptor.name]
            ll, rl = common_level(attrs[l.name], p), common_level(attrs[r.name], p)
            if ll == rl:
                return 0
            return -1 if ll > rl else 1

        def allocatable(queue: QueueInfo, task: TaskInfo) -> bool:
            if queue.state != QueueState.OPEN or not self.ready:
                return False
            if hierarchy and not self.is_leaf(queue.name):
                return False
            return self.allocatable_in(attrs, queue.name, task)

        def job_enqueueable(job: JobInfo) -> Vote:
            if not self.ready:
                return Vote.Reject
            if hierarchy and not self.is_leaf(job.queue):
                return Vote.Reject
            if ssn.queues[job.queue].state != QueueState.OPEN:
                return Vote.Reject
            pg = job.podgroup
            if pg is None or (pg.min_resources is None and self.job_min_dra(job) is None):
                return Vote.Permit
            return Vote.Permit if self.job_enqueueable(ssn, job) else Vote.Reject

        def job_enqueued(job: JobInfo) -> None:
            pg = job.podgroup
            attr = attrs.get(job.queue)
            min_dra = self.job_min_dra(job) if pg is not None else None
            if pg is None or (pg.min_resources is None and min_dra is None) or attr is None:
                return
            deducted = deduct_sch_gated_resources(job, (pg.min_resources or Resource()).clone())
            attr.inqueue.add(deducted)
            chain = [attr, *(attrs[a] for a in attr.ancestors)] if hierarchy else [attr]
            if hierarchy:
                for a in attr.ancestors:
                    attrs[a].inqueue.add(deducted)
            if min_dra is not None:
                for a in chain:
                    if a.dra is not None:
                        a.dra.add_inqueue(min_dra)

        def _change(task: TaskInfo, sign: int, table: dict[str, QueueAttr]) -> str | None:
            job = ssn.jobs.get(task.job)
            if job is None:
                return f"[capacity] job {task.job} not found in session"
            attr = table.get(job.queue)
            if attr is None:
                return f"[capacity] queue {job.queue} not found"
            chain = [attr, *(table[a] for a in attr.ancestors)] if hierarchy else [attr]
            td = self.task_dra(task) if attr.dra is not None else None
            for a in chain:
                if sign > 0:
                    a.allocated.add(task.resreq)
                else:
                    a.allocated.sub(task.resreq)
                if td is not None and a.dra is not None:
                    (a.dra.add_task if sign > 0 else a.dra.remove_task)(td)
            update_share(attr)
            return None

        def on_allocate(task: TaskInfo) -> None:
            _change(task, 1, attrs)

        def on_deallocate(task: TaskInfo) -> None:
            _change(task, -1, attrs)

        # -- preempt's dry run --------------------------------------------------------------------

        def cycle_state(task: TaskInfo, state: CycleState) -> None:
            state.write(self.name, CapacityState({name: a.clone() for name, a in attrs.items()}))

        def dry_run_attrs(state: CycleState) -> dict[str, QueueAttr] | str:
            st: CapacityState | None = state.read(self.name)
            return st.attrs if st is not None else "capacity: no cycle state (its PrePredicateFn did not run)"

        def simulate_add_task(state: CycleState, preemptor: TaskInfo, task: TaskInfo, node) -> str | None:
            table = dry_run_attrs(state)
            return table if isinstance(table, str) else _change(task, 1, table)

        def simulate_remove_task(state: CycleState, preemptor: TaskInfo, task: TaskInfo, node) -> str | None:
            table = dry_run_attrs(state)
            return table if isinstance(table, str) else _change(task, -1, table)

        def simulate_allocatable(state: CycleState, queue: QueueInfo, task: TaskInfo) -> bool:
            table = dry_run_attrs(state)
            if isinstance(table, str) or not self.ready:
                return False
            if hierarchy and not self.is_leaf(queue.name):
                return False
            return self.allocatable_in(table, queue.name, task)

        # Volcano adds these two as it ends building the attributes: a broken tree adds neither
        if not hierarchy or self.ready:
            ssn.add(Point.QUEUE_ORDER, self.name, queue_order)
        if hierarchy and self.ready:
            ssn.add(Point.VICTIM_QUEUE_ORDER, self.name, victim_queue_order)
        ssn.add(Point.RECLAIMABLE, self.name, lambda r, rs: self.reclaimable(r, rs, ssn))
        ssn.add(Point.PREEMPTIVE, self.name, self.preemptive)
        ssn.add(Point.UNIFIED_EVICTABLE, self.name, lambda ctx, ts: self.unified_evictable(ctx, ts, ssn))
        ssn.add(Point.ALLOCATABLE, self.name, allocatable)
        ssn.add(Point.JOB_ENQUEUEABLE, self.name, job_enqueueable)
        ssn.add(Point.JOB_ENQUEUED, self.name, job_enqueued)
        ssn.add(Point.CYCLE_STATE, self.name, cycle_state)
        ssn.add(Point.SIMULATE_ADD_TASK, self.name, simulate_add_task)
        ssn.add(Point.SIMULATE_REMOVE_TASK, self.name, simulate_remove_task)
        ssn.add(Point.SIMULATE_ALLOCATABLE, self.name, simulate_allocatable)
        ssn.add_event_handler(EventHandler(allocate=on_allocate, deallocate=on_deallocate))

    def on_session_close(self, ssn: "Session") -> None:
        for name, attr in self.attrs.items():
            queue = ssn.queues.get(name)
            ssn.stats.queues[name] = QueueStats(
                queue.weight if queue is not None else 1, attr.allocated, attr.request, attr.inqueue,
                attr.deserved, attr.share, attr.share > 1,
            )
        self.attrs = {}
