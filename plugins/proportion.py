"""proportion: queue fair share by weight, capped by capability and request (plugins/proportion/proportion.go).

spec/framework.md §8.5.  Volcano's Resource arithmetic has a few key-set quirks the
water-filling depends on (``ExceededPart`` keeps only the scalars that exceed,
``Diff`` files a scalar under "increased" only when it grew, ``MaxTaskNum`` never
takes part); the helpers below reproduce them instead of the generic ``Resource``
methods, so the deserved shares come out as Volcano's do.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vcsched.api.job_info import JobInfo
from vcsched.api.queue_info import QueueInfo
from vcsched.api.resource import Default, Resource, share
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import ALLOCATED_STATUSES, PodGroupPhase, QueueState, TaskStatus, Vote
from vcsched.framework.arguments import Arguments
from vcsched.framework.cycle_state import CycleState
from vcsched.framework.effects import Event
from vcsched.framework.interface import Plugin, Point
from vcsched.framework.session import EventHandler
from vcsched.framework.settled import settled_book
from vcsched.framework.stats import QueueStats
from vcsched.plugins.util import (
    allocated_task_num,
    deduct_sch_gated_resources,
    elastic_resources,
    format_resource_names,
    get_inqueue_resource,
    plain,
    resource_max,
    same,
)

if TYPE_CHECKING:
    from vcsched.framework.session import Session

# Volcano sets a non-positive capability cpu or memory to math.MaxFloat64.
UNLIMITED = sys.float_info.max


@dataclass(slots=True)
class QueueAttr:
    """What proportion knows of one queue that has jobs in the session."""

    name: str
    weight: int
    real_capability: Resource
    capability: Resource | None = None
    guarantee: Resource = field(default_factory=Resource)
    deserved: Resource = field(default_factory=Resource)
    allocated: Resource = field(default_factory=Resource)
    request: Resource = field(default_factory=Resource)
    # the sum over jobs of allocated beyond minResources
    elastic: Resource = field(default_factory=Resource)
    # minResources admitted (Inqueue, or Running) but not allocated yet
    inqueue: Resource = field(default_factory=Resource)
    share: float = 0.0

    def clone(self) -> "QueueAttr":
        return QueueAttr(
            self.name, self.weight, self.real_capability.clone(),
            self.capability.clone() if self.capability is not None else None, self.guarantee.clone(),
            self.deserved.clone(), self.allocated.clone(), self.request.clone(), self.elastic.clone(),
            self.inqueue.clone(), self.share,
        )


@dataclass(slots=True)
class ProportionState:
    """The cycle state proportion's PrePredicateFn writes: a copy of every queue's attributes."""

    queue_attrs: dict[str, QueueAttr]

    def clone(self) -> "ProportionState":
        return ProportionState({name: a.clone() for name, a in self.queue_attrs.items()})


class ProportionPlugin(Plugin):
    name = "proportion"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.total = Resource()
        self.total_guarantee = Resource()
        self.queue_opts: dict[str, QueueAttr] = {}

    # -- session open -------------------------------------------------------------

    def on_session_open(self, ssn: "Session") -> None:
        self.total = plain(ssn.total_resource)
        self.total_guarantee = Resource()
        for queue in ssn.queues.values():
            if queue.guarantee is not None:
                self.total_guarantee.add(queue.guarantee)
        self.queue_opts = {}
        self._build_queue_attrs(ssn)
        self._compute_deserved()
        self._register(ssn)

    def _new_attr(self, queue: QueueInfo) -> QueueAttr:
        capability = None
        if queue.capability is not None:
            capability = plain(queue.capability)
            if capability.milli_cpu <= 0:
                capability.milli_cpu = UNLIMITED
            if capability.memory <= 0:
                capability.memory = UNLIMITED
        guarantee = plain(queue.guarantee) if queue.guarantee is not None else Resource()
        real_capability = self.total.exceeded_part(self.total_guarantee).add(guarantee)
        if capability is not None:
            real_capability.min_dimension(capability, Default.INFINITY)
        return QueueAttr(
            name=queue.name, weight=queue.weight, real_capability=real_capability,
            capability=capability, guarantee=guarantee,
        )

    def _build_queue_attrs(self, ssn: "Session") -> None:
        """Each queue's allocated, request, inqueue and elastic resources over its jobs: the settled
        jobs reused from the previous session come summed (framework/settled.py), the others are
        walked."""
        book = settled_book(ssn, self.name, 4)
        for job in book.sync(ssn, _job_part):
            attr = self._attr(ssn, job.queue)
            if attr is None:
                continue
            allocated, request, inqueue, elastic = _job_part(job)[1]
            attr.allocated.add(allocated)
            attr.request.add(request)
            attr.inqueue.add(inqueue)
            attr.elastic.add(elastic)
        for queue, (allocated, request, inqueue, elastic) in book.sums.items():
            attr = self._attr(ssn, queue)
            if attr is not None:
                attr.allocated.add(allocated)
                attr.request.add(request)
                attr.inqueue.add(inqueue)
                attr.elastic.add(elastic)

    def _attr(self, ssn: "Session", name: str) -> QueueAttr | None:
        attr = self.queue_opts.get(name)
        if attr is None:
            queue = ssn.queues.get(name)
            if queue is None:
                return None
            attr = self.queue_opts[name] = self._new_attr(queue)
        return attr

    def _compute_deserved(self) -> None:
        """Water-filling: share ``remaining`` by weight among the queues not yet met, round after round."""
        opts = self.queue_opts
        remaining = self.total.clone()
        met: set[str] = set()
        while True:
            total_weight = sum(a.weight for n, a in opts.items() if n not in met)
            if total_weight == 0:
                break
            old_remaining = remaining.clone()
            increased_sum = Resource()
            decreased_sum = Resource()
            for name, attr in opts.items():
                if name in met:
                    continue
                old = attr.deserved.clone()
                attr.deserved.add(remaining.clone().multi(attr.weight / total_weight))
                attr.deserved.min_dimension(attr.real_capability, Default.INFINITY)
                attr.deserved.min_dimension(attr.request, Default.ZERO)
                attr.deserved = resource_max(attr.deserved, attr.guarantee)
                _update_share(attr)
                if attr.request.less_equal(attr.deserved, Default.ZERO) or same(attr.deserved, old):
                    met.add(name)
                increased, decreased = attr.deserved.diff(old)
                increased_sum.add(increased)
                decreased_sum.add(decreased)
            remaining = remaining.clone().add(decreased_sum).exceeded_part(increased_sum)
            if remaining.is_empty() or same(remaining, old_remaining):
                break

    def _register(self, ssn: "Session") -> None:
        opts = self.queue_opts

        def queue_order(l: QueueInfo, r: QueueInfo) -> int:
            """Higher queue priority first, then lower share."""
            if l.priority != r.priority:
                return r.priority - l.priority
            la, ra = opts.get(l.name), opts.get(r.name)
            ls = la.share if la is not None else 0.0
            rs = ra.share if ra is not None else 0.0
            if ls == rs:
                return 0
            return -1 if ls < rs else 1

        def reclaimable(reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
            """Victims from queues whose allocation is above deserved in some dimension."""
            victims: list[TaskInfo] = []
            allocations: dict[str, Resource] = {}
            for reclaimee in reclaimees:
                job = ssn.jobs.get(reclaimee.job)
                if job is None:
                    continue
                attr = opts.get(job.queue)
                if attr is None:
                    continue
                allocated = allocations.get(job.queue)
                if allocated is None:
                    allocated = allocations[job.queue] = attr.allocated.clone()
                if not allocated.less_equal(attr.deserved, Default.ZERO):
                    allocated.sub(reclaimee.resreq)
                    victims.append(reclaimee)
            return victims, Vote.Permit

        def overused(queue: QueueInfo) -> bool:
            """Allocated has reached deserved in every dimension of deserved."""
            attr = opts.get(queue.name)
            if attr is None:
                return False
            return _overused(attr)

        def queue_allocatable(queue: QueueInfo, total_req: Resource) -> bool:
            if queue.state != QueueState.OPEN:
                return False
            attr = opts.get(queue.name)
            if attr is None:
                return True
            future_used = attr.allocated.clone().add(total_req)
            return not future_used.less_equal_strict_in(attr.deserved, total_req)

        def allocatable(queue: QueueInfo, task: TaskInfo) -> bool:
            return queue_allocatable(queue, task.resreq)

        def preemptive(queue: QueueInfo, tasks: list[TaskInfo]) -> bool:
            total_req = Resource()
            for t in tasks:
                if t is not None:
                    total_req.add(t.resreq)
            return queue_allocatable(queue, total_req)

        def job_enqueueable(job: JobInfo) -> Vote:
            queue = ssn.queues.get(job.queue)
            if queue is None:
                return Vote.Abstain
            if queue.state != QueueState.OPEN:
                return Vote.Reject
            attr = opts.get(job.queue)
            pg = job.podgroup
            if attr is None or pg is None or pg.min_resources is None:
                return Vote.Permit
            min_req = pg.min_resources
            r = min_req.clone().add(attr.allocated).add(attr.inqueue).sub(attr.elastic)
            failed = r.less_equal_strict_in(attr.real_capability, min_req)
            if not failed:
                return Vote.Permit
            ssn.effects.append(Event(
                "PodGroup", pg.namespace, pg.name, "Normal", "Unschedulable",
                format_resource_names("queue resource quota insufficient", "insufficient", failed),
            ))
            return Vote.Reject

        def job_enqueued(job: JobInfo) -> None:
            pg = job.podgroup
            if pg is None or pg.min_resources is None:
                return
            attr = opts.get(job.queue)
            if attr is None:
                return
            attr.inqueue.add(deduct_sch_gated_resources(job, pg.min_resources.clone()))

        def on_allocate(task: TaskInfo) -> None:
            attr = _attr_of(task)
            if attr is not None:
                attr.allocated.add(task.resreq)
                _update_share(attr)

        def on_deallocate(task: TaskInfo) -> None:
            attr = _attr_of(task)
            if attr is not None:
                attr.allocated.sub(task.resreq)
                _update_share(attr)

        def _attr_of(task: TaskInfo) -> QueueAttr | None:
            job = ssn.jobs.get(task.job)
            return opts.get(job.queue) if job is not None else None

        # -- preempt's dry run: the same arithmetic on the cycle state's copy --------------------

        def cycle_state(task: TaskInfo, state: CycleState) -> None:
            state.write(self.name, ProportionState({name: a.clone() for name, a in opts.items()}))

        def simulate_allocatable(state: CycleState, queue: QueueInfo, task: TaskInfo) -> bool:
            """Unlike ``allocatable``, the queue's state is not looked at (a queue that is not
            Open has no preemptors: allocatable refused their tasks before)."""
            st: ProportionState | None = state.read(self.name)
            attr = st.queue_attrs.get(queue.name) if st is not None else None
            if attr is None:
                return False
            req = task.resreq
            return not attr.allocated.clone().add(req).less_equal_strict_in(attr.deserved, req)

        def simulated_attr(state: CycleState, task: TaskInfo) -> QueueAttr | str:
            st: ProportionState | None = state.read(self.name)
            if st is None:
                return "proportion: no cycle state (its PrePredicateFn did not run)"
            job = ssn.jobs.get(task.job)
            if job is None:
                return f"[proportion] job {task.job} not found in session"
            attr = st.queue_attrs.get(job.queue)
            return attr if attr is not None else f"[proportion] queue {job.queue} not found"

        def simulate_change(state: CycleState, task: TaskInfo, adding: bool) -> str | None:
            """The dry run puts ``task`` back (adding) or takes it off: its queue's copy follows."""
            attr = simulated_attr(state, task)
            if isinstance(attr, str):
                return attr
            if adding:
                attr.allocated.add(task.resreq)
            else:
                attr.allocated.sub(task.resreq)
            _update_share(attr)
            return None

        def simulate_add_task(state: CycleState, preemptor: TaskInfo, task: TaskInfo, node) -> str | None:
            return simulate_change(state, task, True)

        def simulate_remove_task(state: CycleState, preemptor: TaskInfo, task: TaskInfo, node) -> str | None:
            return simulate_change(state, task, False)

        ssn.add(Point.QUEUE_ORDER, self.name, queue_order)
        ssn.add(Point.RECLAIMABLE, self.name, reclaimable)
        ssn.add(Point.OVERUSED, self.name, overused)
        ssn.add(Point.ALLOCATABLE, self.name, allocatable)
        ssn.add(Point.PREEMPTIVE, self.name, preemptive)
        ssn.add(Point.JOB_ENQUEUEABLE, self.name, job_enqueueable)
        ssn.add(Point.JOB_ENQUEUED, self.name, job_enqueued)
        ssn.add_event_handler(EventHandler(allocate=on_allocate, deallocate=on_deallocate))
        ssn.add(Point.CYCLE_STATE, self.name, cycle_state)
        ssn.add(Point.SIMULATE_ALLOCATABLE, self.name, simulate_allocatable)
        ssn.add(Point.SIMULATE_ADD_TASK, self.name, simulate_add_task)
        ssn.add(Point.SIMULATE_REMOVE_TASK, self.name, simulate_remove_task)

    def on_session_close(self, ssn: "Session") -> None:
        for name, attr in self.queue_opts.items():
            ssn.stats.queues[name] = QueueStats(
                attr.weight, attr.allocated, attr.request, attr.inqueue, attr.deserved, attr.share,
                _overused(attr),
            )
        self.queue_opts = {}


def _overused(attr: QueueAttr) -> bool:
    return attr.deserved.less_equal(attr.allocated, Default.ZERO)


def _update_share(attr: QueueAttr) -> None:
    """The largest allocated/deserved ratio over deserved's dimensions (``pods`` included)."""
    res = 0.0
    deserved, allocated = attr.deserved, attr.allocated
    for rn in deserved.resource_names():
        s = share(allocated.get(rn), deserved.get(rn))
        if s > res:
            res = s
    attr.share = res


def _job_part(job: JobInfo) -> tuple[str, tuple[Resource, Resource, Resource, Resource]]:
    """What ``job`` adds to its queue: allocated, request (allocated and pending tasks), inqueue (an
    Inqueue job's, or a Running one's with at least minMember allocated: its minResources less what
    is allocated and the scheduling-gated pods) and elastic resources."""
    allocated, request, inqueue = Resource(), Resource(), Resource()
    for t in job.tasks.values():
        status = t.status
        if status in ALLOCATED_STATUSES:
            allocated.add(t.resreq)
            request.add(t.resreq)
        elif status == TaskStatus.Pending:
            request.add(t.resreq)
    pg = job.podgroup
    if pg is not None and pg.min_resources is not None:
        if pg.phase == PodGroupPhase.INQUEUE or (
            pg.phase == PodGroupPhase.RUNNING and allocated_task_num(job) >= pg.min_member
        ):
            inqueue.add(deduct_sch_gated_resources(job, get_inqueue_resource(job, job.allocated)))
    return job.queue, (allocated, request, inqueue, elastic_resources(job))
