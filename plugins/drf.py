"""drf: dominant resource fairness between jobs (plugins/drf/drf.go).

spec/framework.md §8.4.  Hierarchical DRF (``enableHierarchy``) is not implemented:
the flag is ignored and no queue order or reclaim function is registered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vcsched.api.job_info import JobInfo
from vcsched.api.resource import Resource, share
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import ALLOCATED_STATUS, Vote
from vcsched.framework.arguments import Arguments
from vcsched.framework.interface import Plugin, Point
from vcsched.framework.session import EventHandler

if TYPE_CHECKING:
    from vcsched.framework.session import Session

SHARE_DELTA = 0.000001


@dataclass(slots=True)
class DrfAttr:
    """A job's allocated resources and the dominant share they give."""

    allocated: Resource = field(default_factory=Resource)
    share: float = 0.0
    dominant_resource: str = ""


class DrfPlugin(Plugin):
    name = "drf"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.total = Resource()
        self.total_names: list[str] = []
        self.job_attrs: dict[str, DrfAttr] = {}

    # -- shares -------------------------------------------------------------------

    def calculate_share(self, allocated: Resource) -> tuple[str, float]:
        """The dominant resource and its share of the cluster total."""
        res = 0.0
        dominant = ""
        total = self.total
        for rn in self.total_names:
            s = share(allocated.get(rn), total.get(rn))
            if s > res:
                res = s
                dominant = rn
        return dominant, res

    def update_share(self, attr: DrfAttr) -> None:
        attr.dominant_resource, attr.share = self.calculate_share(attr.allocated)

    # -- session ------------------------------------------------------------------

    def on_session_open(self, ssn: "Session") -> None:
        self.total = ssn.total_resource.clone()
        self.total_names = self.total.resource_names()
        self.job_attrs = {}
        for job in ssn.jobs.values():
            attr = DrfAttr()
            for t in job.tasks.values():
                if t.status & ALLOCATED_STATUS:
                    attr.allocated.add(t.resreq)
            self.update_share(attr)
            self.job_attrs[job.uid] = attr

        ssn.add(Point.PREEMPTABLE, self.name, self.preemptable)
        ssn.add(Point.JOB_ORDER, self.name, self.job_order)
        ssn.add_event_handler(EventHandler(allocate=self.on_allocate, deallocate=self.on_deallocate))

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

    def on_allocate(self, task: TaskInfo) -> None:
        attr = self.job_attrs.get(task.job)
        if attr is None:
            return
        attr.allocated.add(task.resreq)
        self.update_share(attr)

    def on_deallocate(self, task: TaskInfo) -> None:
        attr = self.job_attrs.get(task.job)
        if attr is None:
            return
        attr.allocated.sub(task.resreq)
        self.update_share(attr)

    def on_session_close(self, ssn: "Session") -> None:
        ssn.stats.job_shares.update((uid, attr.share) for uid, attr in self.job_attrs.items())
        self.job_attrs = {}
