"""capacity's quotas on Dynamic Resource Allocation (plugins/capacity/capacity.go, ``draQuotaAttr``).

With ``capacity.DynamicResourceAllocationEnable`` a queue's capability, deserved and guarantee may name
DeviceClasses: ``deviceclass/<class>`` counts devices, ``<dimension>.deviceclass/<class>`` sums a
consumable capacity (``memory.deviceclass/gpu.example.com: 120Gi``; checked with
``capacity.DRAConsumableCapacityEnable``).  A task asks what its ResourceClaims' requests ask
(``buildTaskDRAInfo``): per ``exactly`` request of mode ExactCount its count of its class, and count ×
its capacity requests; ``firstAvailable`` and ``allocationMode: All`` requests are not counted (Volcano
logs and skips them).  A claim shared by several pods of one queue is charged once (``resourceClaimRefs``).

- allocatable: allocated + the task's new claims ≤ capability, per class with a capability (a class
  without one passes), on the count and, with consumable capacity, on each dimension asked;
- jobEnqueueable: the same with the queue's inqueue added, for the job's minimum (``GetMinDRAResources``:
  the first minAvailable tasks by namespace/name, or minTaskMember per role);
- jobEnqueued adds the job's minimum to inqueue; allocate and deallocate events move allocated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from vcsched.api.dra_quota import (
    DEVICE_CLASS_CAPACITY_SEP,
    DEVICE_CLASS_COUNT_PREFIX,
    DraRequest,
    DraResource,
    TaskDra,
    merge,
    task_dra,
)
from vcsched.api.job_info import JobInfo
from vcsched.api.resource import Resource

__all__ = ["DraQuota", "TaskDra", "job_min_dra", "task_dra", "DraResource"]


def parse_quota(r: Resource | None) -> DraRequest:
    """``parseDRAResourceList`` over a queue's parsed capability, deserved or guarantee."""
    out: DraRequest = {}
    if r is None:
        return out
    for name, milli in r.scalars.items():
        idx = name.find(DEVICE_CLASS_CAPACITY_SEP)
        if idx > 0:
            dim, cls = name[:idx], name[idx + len(DEVICE_CLASS_CAPACITY_SEP):]
            if cls:
                out.setdefault(cls, DraResource()).capacity[dim] = Fraction(milli) / 1000
        elif name.startswith(DEVICE_CLASS_COUNT_PREFIX) and len(name) > len(DEVICE_CLASS_COUNT_PREFIX):
            out.setdefault(name[len(DEVICE_CLASS_COUNT_PREFIX):], DraResource()).count = int(milli // 1000)
    return out


def job_min_dra(job: JobInfo, dra_of) -> DraRequest | None:
    """``GetMinDRAResources``: by minTaskMember per role, else the first minAvailable tasks with claims
    ordered by namespace, name and uid."""
    out: DraRequest = {}
    pg = job.podgroup
    per_role = pg.min_task_member if pg is not None else {}
    if not per_role:
        n = job.min_available
        if n <= 0:
            return None
        tasks = sorted((t for t in job.tasks.values() if dra_of(t) is not None),
                       key=lambda t: (t.namespace, t.name, t.uid))
        for t in tasks[:n]:
            merge(out, dra_of(t).total)
        return out or None
    seen: set[str] = set()
    for t in job.tasks.values():
        td = dra_of(t)
        if td is None:
            continue
        times = per_role.get(t.role, 0)
        if times <= 0 or t.role in seen:
            continue
        seen.add(t.role)
        merge(out, td.total, times)
    return out or None


@dataclass(slots=True)
class DraQuota:
    """``draQuotaAttr`` and the queue's ``resourceClaimRefs``."""

    capability: DraRequest
    deserved: DraRequest
    guarantee: DraRequest
    allocated: DraRequest = field(default_factory=dict)
    inqueue: DraRequest = field(default_factory=dict)
    claim_refs: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, capability: Resource | None, deserved: Resource | None, guarantee: Resource | None) -> DraQuota:
        return cls(parse_quota(capability), parse_quota(deserved), parse_quota(guarantee))

    def clone(self) -> DraQuota:
        c = lambda m: {k: v.clone() for k, v in m.items()}  # noqa: E731
        return DraQuota(self.capability, self.deserved, self.guarantee, c(self.allocated), c(self.inqueue),
                        dict(self.claim_refs))

    def fits(self, request: Mapping[str, DraResource], consumable: bool, with_inqueue: bool) -> bool:
        """``checkDRAAllocatable``."""
        for cls, asked in request.items():
            cap = self.capability.get(cls)
            if cap is None:
                continue
            allocated = self.allocated.get(cls)
            inqueue = self.inqueue.get(cls) if with_inqueue else None
            used = (allocated.count if allocated else 0) + (inqueue.count if inqueue else 0)
            if cap.count > 0 and used + asked.count > cap.count:
                return False
            if consumable:
                for dim, q in asked.capacity.items():
                    if dim not in cap.capacity:
                        return False
                    future = q + (allocated.capacity.get(dim, 0) if allocated else 0) \
                        + (inqueue.capacity.get(dim, 0) if inqueue else 0)
                    if future > cap.capacity[dim]:
                        return False
        return True

    def incremental(self, td: TaskDra) -> DraRequest | None:
        """``incrementalTaskDRA``: the task's claims not charged to this queue yet."""
        out: DraRequest = {}
        for key, req in td.per_claim.items():
            if self.claim_refs.get(key, 0) > 0:
                continue
            merge(out, req)
        return out or None

    def add_task(self, td: TaskDra) -> None:
        for key, req in td.per_claim.items():
            if self.claim_refs.get(key, 0) == 0:
                merge(self.allocated, req)
            self.claim_refs[key] = self.claim_refs.get(key, 0) + 1

    def remove_task(self, td: TaskDra) -> None:
        for key, req in td.per_claim.items():
            n = self.claim_refs.get(key, 0)
            if n <= 1:
                for cls, res in req.items():
                    if cls in self.allocated:
                        self.allocated[cls].sub(res)
                self.claim_refs.pop(key, None)
            else:
                self.claim_refs[key] = n - 1

    def add_inqueue(self, request: Mapping[str, DraResource]) -> None:
        merge(self.inqueue, request)

