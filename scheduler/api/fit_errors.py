"""Why a task does not fit: per-node reasons and the cluster-wide summary (unschedule_info.go)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .types import StatusCode

NODE_POD_NUMBER_EXCEEDED = "node(s) pod number exceeded"


@dataclass(slots=True)
class Status:
    """One kube-style filter status: a code and its reason."""

    code: StatusCode
    reason: str


@dataclass(slots=True)
class FitError:
    """The reasons one task failed on one node."""

    namespace: str
    task_name: str
    node_name: str
    statuses: list[Status]

    @property
    def reasons(self) -> list[str]:
        return [s.reason for s in self.statuses]

    def has_code(self, codes: frozenset[StatusCode]) -> bool:
        return any(s.code in codes for s in self.statuses)

    def __str__(self) -> str:
        return f"task {self.namespace}/{self.task_name} on node {self.node_name} fit failed: {', '.join(self.reasons)}"


@dataclass(slots=True)
class FitErrors:
    """The fit errors of one task over the nodes that rejected it."""

    nodes: dict[str, FitError] = field(default_factory=dict)
    err: str = ""

    def set_node_error(self, fe: FitError) -> None:
        self.nodes[fe.node_name] = fe

    def unresolvable_nodes(self) -> set[str]:
        return {
            name for name, fe in self.nodes.items()
            if any(s.code == StatusCode.UnschedulableAndUnresolvable for s in fe.statuses)
        }

    def error(self) -> str:
        """``FitErrors.Error()``: ``0/N nodes are unavailable: <sorted histogram>.``"""
        head = self.err or f"0/{len(self.nodes)} nodes are unavailable"
        if not self.nodes:
            return head
        counts: Counter[str] = Counter()
        for fe in self.nodes.values():
            counts.update(s.reason for s in fe.statuses)
        histogram = sorted(f"{n} {reason}" for reason, n in counts.items())
        return f"{head}: {', '.join(histogram)}."
