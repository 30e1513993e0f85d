"""Why a task does not fit: per-node reasons and the cluster-wide summary (unschedule_info.go)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .types import StatusCode

NODE_POD_NUMBER_EXCEEDED = "node(s) pod number exceeded"


@dataclass(slots=True)
class Status:
    """One kube-style filter status: a code and its reason.

    ``names_task``: the reason follows the task's name ("<task> <reason>"), which is added where the
    reason is read, so that the tasks of one shape can share the status."""

    code: StatusCode
    reason: str
    names_task: bool = False

    def text(self, task_name: str) -> str:
        return f"{task_name} {self.reason}" if self.names_task else self.reason


@dataclass(slots=True)
class FitError:
    """The reasons one task failed on one node."""

    namespace: str
    task_name: str
    node_name: str
    statuses: Sequence[Status]

    @property
    def reasons(self) -> list[str]:
        return [s.text(self.task_name) for s in self.statuses]

    def has_code(self, codes: frozenset[StatusCode]) -> bool:
        return any(s.code in codes for s in self.statuses)

    def __str__(self) -> str:
        return f"task {self.namespace}/{self.task_name} on node {self.node_name} fit failed: {', '.join(self.reasons)}"


@dataclass(slots=True)
class FitErrors:
    """The fit errors of one task over the nodes that rejected it.

    Kept as node name → statuses (a task failing everywhere records one entry per node, for
    every pending task of a session): the node search may hand the same read-only statuses
    list to many nodes and tasks, and ``FitError`` objects are built only when asked for.
    ``error()`` is computed once.
    """

    err: str = ""
    namespace: str = ""
    task_name: str = ""
    statuses: dict[str, Sequence[Status]] = field(default_factory=dict)
    _error: str | None = None
    _names_task: bool = False  # a reason of the built message names the task
    hypernode: str = ""  # the HyperNode the nodes were searched in (SetHyperNode), "" for the cluster

    def set_node_error(self, fe: FitError) -> None:
        self.namespace, self.task_name = fe.namespace, fe.task_name
        self.statuses[fe.node_name] = fe.statuses
        self._error = None

    @property
    def nodes(self) -> dict[str, FitError]:
        return {name: FitError(self.namespace, self.task_name, name, list(st)) for name, st in self.statuses.items()}

    def for_task(self, namespace: str, task_name: str) -> FitErrors:
        """The same failure for another task of the same shape: the statuses are shared (read-only),
        the message too unless a reason names the task."""
        if namespace == self.namespace and task_name == self.task_name:
            return self
        other = FitErrors(self.err, namespace, task_name, self.statuses)
        if self._error is not None and not self._names_task:
            other._error = self._error
        return other

    def set_hypernode(self, name: str) -> None:
        """``SetHyperNode``: the message says which HyperNode's nodes refused the task."""
        self.hypernode = name
        self._error = None

    def unresolvable_nodes(self) -> set[str]:
        return {
            name for name, st in self.statuses.items()
            if any(s.code == StatusCode.UnschedulableAndUnresolvable for s in st)
        }

    def error(self) -> str:
        """``FitErrors.Error()``: ``0/N nodes are unavailable: <sorted histogram>.``"""
        if self._error is None:
            self._error = self._build_error()
        return self._error

    def _build_error(self) -> str:
        head = self.err or f"0/{len(self.statuses)} nodes are unavailable"
        if not self.statuses:
            return head
        counts: dict[str, int] = {}
        task = self.task_name
        for st in self.statuses.values():
            for s in st:
                if s.names_task:
                    self._names_task = True
                    reason = s.text(task)
                else:
                    reason = s.reason
                counts[reason] = counts.get(reason, 0) + 1
        histogram = sorted(f"{n} {reason}" for reason, n in counts.items())
        message = f"{head}: {', '.join(histogram)}."
        return f"In hyperNode {self.hypernode}: {message}" if self.hypernode else message
