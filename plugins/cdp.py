"""cdp: cooldown protection (plugins/cdp/cdp.go).

A pod that asks for a cooldown (``volcano.sh/cooldown-time``, read from the pod's labels first and,
when no label has that key, from its annotations) is not a victim of preempt or reclaim until the
cooldown has passed since it was scheduled.  Elastic jobs' preemptable pods would otherwise be
preempted again right after they came back.

The value is a Go duration (``time.ParseDuration``: ``600s``, ``10m``, ``1h30m``, ``0``...).  A value
Go refuses (``600``, ``600abcde``, ``""``) turns protection off for that pod: it stays a candidate, as
Volcano keeps it after a warning.  A negative or zero cooldown protects nothing.

Only a pod whose ``status.phase`` is ``Running`` is checked.  Its start is the ``lastTransitionTime``
of the first ``PodScheduled`` condition whose status is ``True`` (not ``status.startTime``); the pod
is kept while that time plus the cooldown is strictly after the session's clock (``ssn.now``; Volcano
reads the wall clock): at the very instant the cooldown ends it is a victim again.  A Running pod with
no such condition, or a condition with no ``lastTransitionTime`` (Go's zero time), is not protected.

Registers PreemptableFn and ReclaimableFn (gated by ``enablePreemptable`` and ``enableReclaimable``):
the candidates that are not protected, in their order, vote Permit, even when none is left, which
makes the tier undecided (spec/framework.md §6.2).  No arguments.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

import structlog

from vcsched.api.duration import DurationError, parse_go_duration_ns
from vcsched.api.task_info import TaskInfo, parse_timestamp
from vcsched.api.types import Vote
from vcsched.framework.interface import Plugin, Point

if TYPE_CHECKING:
    from vcsched.framework.session import Session

COOLDOWN_TIME_KEY = "volcano.sh/cooldown-time"

log = structlog.get_logger("vcsched.cdp")
_NS = 1_000_000_000


def pod_cooldown_ns(pod: Mapping[str, Any]) -> int | None:
    """``podCooldownTime``: the pod's cooldown in nanoseconds, or None when it has none or a bad one."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    if COOLDOWN_TIME_KEY in labels:
        value = labels[COOLDOWN_TIME_KEY]
    else:
        annotations = meta.get("annotations") or {}
        if COOLDOWN_TIME_KEY not in annotations:
            return None
        value = annotations[COOLDOWN_TIME_KEY]
    try:
        return parse_go_duration_ns(str(value))
    except DurationError:
        log.warning(f"invalid time duration {COOLDOWN_TIME_KEY}={value}")
        return None


def scheduled_at_ns(pod: Mapping[str, Any]) -> int | None:
    """The ``lastTransitionTime`` of the first true ``PodScheduled`` condition, in Unix nanoseconds;
    None when there is none or it has no time (Go's zero time, which no cooldown reaches past)."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "True":
            raw = cond.get("lastTransitionTime")
            return round(parse_timestamp(raw) * _NS) if raw else None
    return None


def in_cooldown(pod: Mapping[str, Any], now_ns: int) -> bool:
    cooldown = pod_cooldown_ns(pod)
    if cooldown is None:
        return False
    if (pod.get("status") or {}).get("phase") != "Running":
        return False
    start = scheduled_at_ns(pod)
    return start is not None and start + cooldown > now_ns


class CdpPlugin(Plugin):
    name = "cdp"

    def on_session_open(self, ssn: "Session") -> None:
        now_ns = round(ssn.now * _NS)

        def filter_victims(evictor: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
            return [t for t in candidates if not in_cooldown(t.pod, now_ns)], Vote.Permit

        ssn.add(Point.PREEMPTABLE, self.name, filter_victims)
        ssn.add(Point.RECLAIMABLE, self.name, filter_victims)
