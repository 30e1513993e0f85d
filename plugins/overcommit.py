"""overcommit: admit jobs while the cluster, scaled by a factor, has room (plugins/overcommit/overcommit.go).

spec/framework.md §8.10.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from vcsched.api.job_info import JobInfo
from vcsched.api.resource import Resource
from vcsched.api.types import PodGroupPhase, Vote
from vcsched.framework.arguments import Arguments
from vcsched.framework.effects import Event
from vcsched.framework.interface import Plugin, Point
from vcsched.framework.settled import settled_book
from vcsched.plugins.util import (
    allocated_task_num,
    deduct_sch_gated_resources,
    format_resource_names,
    get_inqueue_resource,
)

if TYPE_CHECKING:
    from vcsched.framework.session import Session

log = structlog.get_logger("vcsched.overcommit")

OVERCOMMIT_FACTOR = "overcommit-factor"
DEFAULT_OVERCOMMIT_FACTOR = 1.2


class OvercommitPlugin(Plugin):
    name = "overcommit"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        factor = arguments.get_float(OVERCOMMIT_FACTOR, DEFAULT_OVERCOMMIT_FACTOR)
        if factor < 1.0:
            log.warning(
                f"Invalid input {factor:f} for overcommit-factor, reason: overcommit-factor cannot be less than 1,"
                f" using default value: {DEFAULT_OVERCOMMIT_FACTOR:f}.",
                plugin=self.name, overcommit_factor=factor,
            )
            factor = DEFAULT_OVERCOMMIT_FACTOR
        self.factor = factor
        self.idle = Resource()
        self.inqueue = Resource()

    def on_session_open(self, ssn: "Session") -> None:
        total = ssn.total_resource
        used = Resource()
        for node in ssn.node_list:
            used.add(node.used)
        # total × factor − used; may go negative
        self.idle = Resource(total.milli_cpu, total.memory, dict(total.scalars)).multi(self.factor).sub(used)
        # what the admitted jobs hold back: the reused settled jobs' summed across sessions (settled.py)
        self.inqueue = Resource()
        book = settled_book(ssn, self.name, 1)
        for job in book.sync(ssn, _job_part):
            self.inqueue.add(_job_part(job)[1][0])
        for (held,) in book.sums.values():
            self.inqueue.add(held)

        def job_enqueueable(job: JobInfo) -> Vote:
            pg = job.podgroup
            if pg is None or pg.min_resources is None:
                return Vote.Permit
            min_req = pg.min_resources
            failed = self.inqueue.clone().add(min_req).less_equal_strict_in(self.idle, min_req)
            if not failed:
                return Vote.Permit
            ssn.effects.append(Event(
                "PodGroup", pg.namespace, pg.name, "Normal", "Unschedulable",
                format_resource_names("resource in cluster is overused", "overused", failed),
            ))
            return Vote.Reject

        def job_enqueued(job: JobInfo) -> None:
            pg = job.podgroup
            if pg is None or pg.min_resources is None:
                return
            self.inqueue.add(deduct_sch_gated_resources(job, pg.min_resources.clone()))

        ssn.add(Point.JOB_ENQUEUEABLE, self.name, job_enqueueable)
        ssn.add(Point.JOB_ENQUEUED, self.name, job_enqueued)


def _job_part(job: JobInfo) -> tuple[str, tuple[Resource]]:
    """What ``job`` holds back from admission: an Inqueue job its minResources, a Running one with at
    least minMember allocated what of them is not allocated yet (scheduling-gated pods aside)."""
    held = Resource()
    pg = job.podgroup
    if pg is not None and pg.min_resources is not None:
        if pg.phase == PodGroupPhase.INQUEUE:
            held = deduct_sch_gated_resources(job, pg.min_resources.clone())
        elif pg.phase == PodGroupPhase.RUNNING and allocated_task_num(job) >= pg.min_member:
            held = deduct_sch_gated_resources(job, get_inqueue_resource(job, job.allocated))
    return "", (held,)
