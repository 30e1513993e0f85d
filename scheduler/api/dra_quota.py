"""What a pod's ResourceClaims ask, per DeviceClass, as Volcano counts it for queues
(cache.go · buildTaskDRAInfo, framework/session_dra_queue_status.go, api · DRAResource).

A task asks, per ``exactly`` request of mode ExactCount, its count of its class, and with consumable
capacity count × its capacity requests; ``firstAvailable`` and ``allocationMode: All`` requests are not
counted (Volcano logs and skips them).  Read by the capacity plugin's quotas (plugins/capacity_dra.py)
and by the queues' ``status.allocated`` (``deviceclass/<class>`` and ``<dimension>.deviceclass/<class>``
beside the resources, a claim shared by several pods of a queue counted once).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from .dra import ALLOCATION_MODE_ALL, format_quantity, pod_claim_refs
from .dra_cache import DraSnapshot
from .task_info import TaskInfo

DEVICE_CLASS_COUNT_PREFIX = "deviceclass/"
DEVICE_CLASS_CAPACITY_SEP = ".deviceclass/"


@dataclass(slots=True)
class DraResource:
    """``api.DRAResource``: devices of one class, and the capacity asked of them."""

    count: int = 0
    capacity: dict[str, Fraction] = field(default_factory=dict)

    def clone(self) -> DraResource:
        return DraResource(self.count, dict(self.capacity))

    def add(self, other: DraResource, times: int = 1) -> None:
        self.count += other.count * times
        for dim, q in other.capacity.items():
            self.capacity[dim] = self.capacity.get(dim, Fraction(0)) + q * times

    def sub(self, other: DraResource) -> None:
        """Never below zero, as Volcano's ``Sub``."""
        self.count = max(self.count - other.count, 0)
        for dim, q in other.capacity.items():
            if dim in self.capacity:
                self.capacity[dim] = max(self.capacity[dim] - q, Fraction(0))


DraRequest = dict[str, DraResource]  # by DeviceClass


def merge(dst: DraRequest, src: Mapping[str, DraResource], times: int = 1) -> None:
    for cls, res in src.items():
        dst.setdefault(cls, DraResource()).add(res, times)


@dataclass(slots=True)
class TaskDra:
    """What one pod's claims ask (``DRAResreq``), in total and per claim (``ResourceClaimDRAResreq``)."""

    total: DraRequest
    per_claim: dict[str, DraRequest]


def task_dra(task: TaskInfo, snap: DraSnapshot, consumable: bool) -> TaskDra | None:
    """``buildTaskDRAInfo``: None for a pod without counted claims (or claims not made yet)."""
    refs = pod_claim_refs(task.pod)
    if not refs:
        return None
    total: DraRequest = {}
    per_claim: dict[str, DraRequest] = {}
    for ref in refs:
        if not ref.claim:
            continue
        key = f"{task.namespace}/{ref.claim}"
        claim = snap.claims.get(key)
        if claim is None or key in per_claim:
            continue
        mine: DraRequest = {}
        for request in claim.requests:
            exact = request.exactly
            if exact is None or exact.allocation_mode == ALLOCATION_MODE_ALL or not exact.device_class:
                continue
            res = DraResource(exact.count or 1)
            if consumable and exact.capacity:
                res.capacity = {dim: q * res.count for dim, q in exact.capacity.items()}
            merge(mine, {exact.device_class: res})
        if mine:
            per_claim[key] = mine
            merge(total, mine)
    if not per_claim:
        return None
    return TaskDra(total, dict(sorted(per_claim.items())))


def queue_allocated(tasks: Iterable[tuple[str, TaskInfo]], snap: DraSnapshot, consumable: bool = True,
                    ) -> dict[str, dict[str, str]]:
    """``updateQueueStatus``'s DRA part: per queue, its allocated tasks' claims (each claim once) as
    resource names and quantities.  ``tasks``: (queue, task) for every allocated task and every queue it
    counts in (its own and its ancestors)."""
    totals: dict[str, DraRequest] = {}
    seen: dict[str, set[str]] = {}
    for queue, task in tasks:
        td = task_dra(task, snap, consumable)
        if td is None:
            continue
        mine = totals.setdefault(queue, {})
        charged = seen.setdefault(queue, set())
        for key, req in td.per_claim.items():
            if key not in charged:
                charged.add(key)
                merge(mine, req)
    out: dict[str, dict[str, str]] = {}
    for queue, req in totals.items():
        names: dict[str, str] = {}
        for cls, res in req.items():
            if res.count > 0:
                names[DEVICE_CLASS_COUNT_PREFIX + cls] = str(res.count)
            for dim, q in res.capacity.items():
                if q:
                    names[dim + DEVICE_CLASS_CAPACITY_SEP + cls] = format_quantity(q)
        if names:
            out[queue] = names
    return out
