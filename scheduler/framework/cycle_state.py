"""kube-scheduler's CycleState as Volcano's preempt dry run uses it (framework.CycleState).

A plugin's PrePredicateFn writes what it computed for a task (proportion: its queue
attributes; predicates: the InterPodAffinity PreFilter counts).  The topology-aware
dry run clones that state for every node it tries, and the plugins' simulate hooks
update and read the clone as victims are taken off and put back.  vcsched builds it
only when the dry run asks (``Session.cycle_state``): nothing else reads it.
"""

from __future__ import annotations

from typing import Any, Protocol


class StateData(Protocol):
    def clone(self) -> "StateData": ...


class CycleState:
    """Plugin state by plugin name; ``clone`` clones each entry."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        self._data: dict[str, Any] = data if data is not None else {}

    def read(self, key: str) -> Any | None:
        return self._data.get(key)

    def write(self, key: str, value: StateData) -> None:
        self._data[key] = value

    def clone(self) -> "CycleState":
        return CycleState({k: v.clone() for k, v in self._data.items()})
