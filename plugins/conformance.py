"""conformance: never evict critical pods (plugins/conformance/conformance.go).

spec/framework.md §8.3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vcsched.api.task_info import TaskInfo
from vcsched.api.types import Vote
from vcsched.framework.interface import Plugin, Point

if TYPE_CHECKING:
    from vcsched.framework.session import Session

SYSTEM_CLUSTER_CRITICAL = "system-cluster-critical"
SYSTEM_NODE_CRITICAL = "system-node-critical"
NAMESPACE_SYSTEM = "kube-system"


class ConformancePlugin(Plugin):
    name = "conformance"

    def on_session_open(self, ssn: "Session") -> None:
        ssn.add(Point.PREEMPTABLE, self.name, evictable)
        ssn.add(Point.RECLAIMABLE, self.name, evictable)
        ssn.add(Point.UNIFIED_EVICTABLE, self.name, evictable)  # the same rule for gangpreempt/gangreclaim


def evictable(evictor: TaskInfo, evictees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
    """Every evictee but critical-class pods and pods in kube-system."""
    victims = [
        t for t in evictees
        if t.spec.priority_class_name not in (SYSTEM_CLUSTER_CRITICAL, SYSTEM_NODE_CRITICAL)
        and t.namespace != NAMESPACE_SYSTEM
    ]
    return victims, Vote.Permit
