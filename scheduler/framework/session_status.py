"""What a session writes when it closes: each PodGroup's status (``getPodGroupPhase``) with its events and
its waiting pods' conditions (``RecordJobStatusEvent``), and each Queue's ``status.allocated``, summed into
its ancestors, with the DRA devices its jobs hold (``session_dra_queue_status.go``).

A status is written only when it differs from the one the session opened with (``status_changed``);
``Session.close`` passes over the settled jobs the snapshot reused and the session left alone
(``JobInfo.mutations`` still 0), whose status an earlier session wrote.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..api.dra_quota import queue_allocated
from ..api.job_info import JobInfo
from ..api.resource import Resource
from ..api.task_info import TaskInfo
from ..api.types import PodGroupPhase, TaskStatus
from .effects import Event, PodCondition, PodGroupStatus, QueueStatus
from .settled import settled_book

if TYPE_CHECKING:
    from .session import Session


def conditions_compared(conditions) -> tuple:
    """The conditions as PodGroup.status_tuple compares them: times and transition IDs ignored."""
    return tuple(
        tuple(sorted((k, str(v)) for k, v in c.items() if k not in ("lastTransitionTime", "transitionID")))
        for c in conditions
    )


def status_changed(old: tuple | None, pg) -> bool:
    """Whether ``pg``'s status differs from ``old`` (phase, counts, conditions at open) as
    ``PodGroup.status_tuple`` compares them."""
    if old is None:
        return True
    phase, running, succeeded, failed, conditions = old
    if (phase, running, succeeded, failed) != (pg.phase, pg.running, pg.succeeded, pg.failed):
        return True
    now = pg.conditions
    if len(now) == len(conditions) and all(a is b or same_condition(a, b) for a, b in zip(conditions, now)):
        return False
    return conditions_compared(conditions) != conditions_compared(now)


_UNCOMPARED = ("lastTransitionTime", "transitionID")


def same_condition(a: dict, b: dict) -> bool:
    """True when ``a`` and ``b`` have the same fields with equal values, times and transition IDs aside
    (then their compared forms are equal too); False means only "not shown equal this way"."""
    for k, v in a.items():
        if k not in _UNCOMPARED and (k not in b or b[k] != v):
            return False
    for k in b:
        if k not in _UNCOMPARED and k not in a:
            return False
    return True


def job_phase(ssn: "Session", job: JobInfo) -> str:
    """``getPodGroupPhase`` (spec/framework.md §9.1)."""
    pg = job.podgroup
    unschedulable = any(
        c.get("type") == "Unschedulable" and c.get("status") == "True" and c.get("transitionID") == ssn.uid
        for c in pg.conditions
    )
    if job.count(TaskStatus.Running) > 0 and unschedulable:
        return PodGroupPhase.UNKNOWN
    scheduled = job.scheduled_task_num() + job.releasing_scheduled_task_num()
    if scheduled >= pg.min_member:
        completed = job.count(TaskStatus.Succeeded) + job.count(TaskStatus.Failed)
        return PodGroupPhase.COMPLETED if scheduled == completed else PodGroupPhase.RUNNING
    if pg.phase != PodGroupPhase.INQUEUE:
        return PodGroupPhase.PENDING
    return PodGroupPhase.INQUEUE


def write_job_status(ssn: "Session", job: JobInfo) -> None:
    """``updateJobStatus`` at close: the PodGroup's phase and counts, written when they changed, and its
    events and pods' conditions."""
    pg = job.podgroup
    if pg is None:
        return
    pg.phase = job_phase(ssn, job)
    pg.running = job.count(TaskStatus.Running)
    pg.failed = job.count(TaskStatus.Failed)
    pg.succeeded = job.count(TaskStatus.Succeeded)
    written = status_changed(job.opened_status, pg)
    if written:
        ssn.effects.append(PodGroupStatus(
            pg.namespace, pg.name, pg.phase, pg.running, pg.succeeded, pg.failed,
            [dict(c) for c in pg.conditions],
        ))
    record_job_status_event(ssn, job, written)


def record_job_status_event(ssn: "Session", job: JobInfo, written: bool) -> None:
    """``RecordJobStatusEvent``: PodGroup events, and PodScheduled on waiting pods."""
    pg = job.podgroup
    fit_error = None
    if pg.phase in (PodGroupPhase.PENDING, PodGroupPhase.INQUEUE, PodGroupPhase.UNKNOWN):
        fit_error = job.fit_error()
        ssn.effects.append(Event(
            "PodGroup", pg.namespace, pg.name, "Warning", "Unschedulable",
            f"{job.count(TaskStatus.Pending)}/{len(job.tasks)} tasks in gang unschedulable: {fit_error}",
        ))
    elif written and pg.phase in (PodGroupPhase.RUNNING, PodGroupPhase.COMPLETED):
        ssn.effects.append(Event("PodGroup", pg.namespace, pg.name, "Normal", "Scheduled", "pod group is ready"))
    waiting = (TaskStatus.Allocated, TaskStatus.Pending, TaskStatus.Pipelined)
    if not any(job.count(status) for status in waiting) or not conditions_due(ssn, job):
        return
    for status in waiting:
        for task in job.tasks_in(status):
            if task.scheduling_gated:
                continue
            reason, message, nominated = job.task_scheduling_reason(task)
            if not message:
                if fit_error is None:
                    fit_error = job.fit_error()
                message = fit_error
            ssn.effects.append(PodCondition(task.namespace, task.name, reason, message, nominated))


def conditions_due(ssn: "Session", job: JobInfo) -> bool:
    """Whether this session gives ``job``'s waiting pods their PodScheduled condition.

    Volcano gives it in every session, one session a period.  Cycles that start on every change
    (``vcsched run``: ``SchedulerState.condition_spacing`` is its period) give it at most once a period
    for a job, keeping that cadence: a gang created pod by pod changes its message (it counts the pods)
    in every cycle, and each cycle would otherwise make, and the sink compare, a condition for each of
    its thousands of pods."""
    state = ssn.state
    spacing = state.condition_spacing
    if not spacing:
        return True
    given, now = state.conditions_given, ssn.now
    last = given.get(job.uid)
    if last is not None and now - last < spacing:
        return False
    if now - state.conditions_swept >= spacing:  # what is older than a period holds nothing back
        state.conditions_given = given = {uid: t for uid, t in given.items() if now - t < spacing}
        state.conditions_swept = now
    given[job.uid] = now
    return True


def queue_request(ssn: "Session", t: TaskInfo) -> Resource:
    """``addNodeSharableDeviceUsage``: the node's device kinds may replace scalars of the request
    (vGPU: the granted memory and cores, spec/devices.md §6.3.9)."""
    node = ssn.nodes.get(t.node_name)
    if node is None or not node.devices:
        return t.resreq
    req = t.resreq
    for d in node.devices.values():
        over = d.queue_resource(t)
        if over:
            if req is t.resreq:
                req = req.clone()
            req.scalars.update(over)
    return req


def dra_queue_allocated(ssn: "Session") -> dict[str, dict[str, str]]:
    """The allocated tasks' ResourceClaims per queue and its ancestors, as ``deviceclass/<class>``
    counts and ``<dimension>.deviceclass/<class>`` capacities, each claim once (api/dra_quota.py)."""
    if ssn.dra is None or not ssn.dra.claims:
        return {}

    def pairs():
        for job in ssn.jobs.values():
            if job.queue not in ssn.queues:
                continue
            for status in (TaskStatus.Allocated, TaskStatus.Binding, TaskStatus.Bound, TaskStatus.Running):
                for t in job.tasks_in(status):
                    yield job.queue, t
                    if "root" not in ssn.queues:
                        continue
                    name, seen = job.queue, {job.queue}
                    while name != "root":
                        name = ssn.queues[name].parent or "root" if name in ssn.queues else ""
                        if not name or name in seen:
                            break
                        seen.add(name)
                        yield name, t

    return queue_allocated(pairs(), ssn.dra)


def write_queue_statuses(ssn: "Session") -> None:
    """Queue ``status.allocated``: allocated tasks of the queue's jobs, summed into ancestors under ``root``."""
    allocated: dict[str, Resource] = {name: Resource() for name in ssn.queues}

    def part(job: JobInfo) -> tuple[str, tuple[Resource]] | None:
        """What a job adds to its queue; None (walked every session) while one of its tasks is on a
        node with devices, or on none in the snapshot: the node's device kinds decide what it adds."""
        total = Resource()
        for status in (TaskStatus.Allocated, TaskStatus.Binding, TaskStatus.Bound, TaskStatus.Running):
            for t in job.tasks_in(status):
                node = ssn.nodes.get(t.node_name)
                if node is None or node.devices:
                    return None
                total.add(t.resreq)
        return job.queue, (total,)

    book = settled_book(ssn, "queue-status", 1)
    for job in book.sync(ssn, part):
        if job.queue not in allocated:
            continue
        for status in (TaskStatus.Allocated, TaskStatus.Binding, TaskStatus.Bound, TaskStatus.Running):
            for t in job.tasks_in(status):
                allocated[job.queue].add(queue_request(ssn, t))
    for name, (total,) in book.sums.items():
        if name in allocated:
            allocated[name].add(total)
    if "root" in ssn.queues:
        own = {name: r.clone() for name, r in allocated.items()}
        for name, r in own.items():
            seen = {name}
            parent = ssn.queues[name].parent or "root" if name != "root" else ""
            while parent and parent in ssn.queues and parent not in seen:
                allocated[parent].add(r)
                seen.add(parent)
                parent = (ssn.queues[parent].parent or "root") if parent != "root" else ""
    dra = dra_queue_allocated(ssn)
    for name, q in ssn.queues.items():
        new = allocated[name].to_list()
        if name in dra:  # DRA's devices beside the resources (session_dra_queue_status.go)
            new.update(dra[name])
        if new != q.allocated:
            q.allocated = new
            ssn.effects.append(QueueStatus(name, new))
