"""shuffle: evict what the plugins name as victims (actions/shuffle/shuffle.go).

spec/framework.md §7.6.  The candidates are every Running task of every job in the session;
``ssn.victim_tasks`` asks the plugins that registered a VictimTasksFn (tdm, and later pdb and
rescheduling), tier by tier (§6: the first tier whose union is not empty decides), and each victim
is evicted with the reason ``shuffle``.  Volcano calls ``ssn.Evict`` on each: the eviction is sent at
once, the session task becomes Releasing and the plugins' deallocate handlers run; here each goes
through a one-operation Statement committed at once, which does exactly that.  No eviction
transaction is counted (Volcano counts them in preempt and reclaim only).
"""

from __future__ import annotations

import structlog

from vcsched.api.task_info import TaskInfo
from vcsched.api.types import TaskStatus
from vcsched.framework.interface import Action
from vcsched.framework.session import Session
from vcsched.framework.statement import Statement

log = structlog.get_logger("vcsched.shuffle")

SHUFFLE_REASON = "shuffle"


class ShuffleAction(Action):
    name = "shuffle"

    def execute(self, ssn: Session) -> None:
        tasks: list[TaskInfo] = [t for job in ssn.jobs.values() for t in job.tasks_in(TaskStatus.Running)]
        for victim in ssn.victim_tasks(tasks):
            log.info("pod will be evicted", pod=victim.key, job=victim.job, reason=SHUFFLE_REASON)
            stmt = Statement(ssn)
            stmt.evict(victim, SHUFFLE_REASON)
            stmt.commit()
