"""QueueInfo: a ``scheduling.volcano.sh/v1beta1`` Queue as the scheduler reads it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .resource import Resource
from .types import QueueState


ROOT_QUEUE = "root"


@dataclass(frozen=True, slots=True)
class QueueAffinity:
    """A Queue's ``spec.affinity``: node-group names (the ``volcano.sh/nodegroup-name`` node label),
    each list as written (order matters to the nodegroup plugin's ``enablePreferredOrder``)."""

    required: tuple[str, ...] = ()  # nodeGroupAffinity.requiredDuringSchedulingIgnoredDuringExecution
    preferred: tuple[str, ...] = ()  # nodeGroupAffinity.preferredDuringSchedulingIgnoredDuringExecution
    anti_required: tuple[str, ...] = ()  # nodeGroupAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution
    anti_preferred: tuple[str, ...] = ()  # nodeGroupAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution

    @classmethod
    def from_spec(cls, raw: Any) -> "QueueAffinity | None":
        """From ``spec.affinity`` as the API holds it; None when it is absent or null (an empty
        ``affinity: {}`` is an affinity, with no names).  simulate has checked the types; what the
        API server would have refused reads as absent here."""
        if not isinstance(raw, Mapping):
            return None

        def names(terms: Any, key: str) -> tuple[str, ...]:
            items = terms.get(key) if isinstance(terms, Mapping) else None
            return tuple(x for x in items if isinstance(x, str)) if isinstance(items, list) else ()

        aff, anti = raw.get("nodeGroupAffinity"), raw.get("nodeGroupAntiAffinity")
        required, preferred = ("requiredDuringSchedulingIgnoredDuringExecution",
                               "preferredDuringSchedulingIgnoredDuringExecution")
        return cls(names(aff, required), names(aff, preferred), names(anti, required), names(anti, preferred))


@dataclass(slots=True)
class QueueInfo:
    name: str
    uid: str
    creation_timestamp: float
    weight: int = 1
    capability: Resource | None = None
    guarantee: Resource = field(default_factory=Resource)
    deserved: Resource | None = None
    reclaimable_flag: bool | None = None
    parent: str = ""
    priority: int = 0
    state: str = QueueState.OPEN
    annotations: dict[str, str] = field(default_factory=dict)
    # status.allocated as last written, compared at session close
    allocated: dict[str, str] = field(default_factory=dict)
    affinity: QueueAffinity | None = None  # spec.affinity; None when not set

    def reclaimable(self) -> bool:
        """``spec.reclaimable`` nil counts as true."""
        return self.reclaimable_flag is None or self.reclaimable_flag

    def clone(self) -> "QueueInfo":
        return QueueInfo(
            self.name, self.uid, self.creation_timestamp, self.weight, self.capability, self.guarantee,
            self.deserved, self.reclaimable_flag, self.parent, self.priority, self.state,
            dict(self.annotations), dict(self.allocated), self.affinity,
        )


def queue_ancestors(queues: Mapping[str, QueueInfo], name: str) -> tuple[list[str], str | None]:
    """The ancestors of queue ``name``, its parent first, by ``spec.parent`` (``root`` when empty), up
    to ``root``; and why the walk stopped short of ``root``, if it did (a parent that does not exist,
    or a queue met again: a cycle), else None."""
    chain: list[str] = []
    seen = {name}
    current = queues.get(name)
    while current is not None and current.name != ROOT_QUEUE:
        parent = current.parent or ROOT_QUEUE
        if parent not in queues:
            return chain, f"parent queue {parent} of queue {current.name} not found"
        if parent in seen:
            return chain, f"cycle detected in queue hierarchy for queue {parent}"
        chain.append(parent)
        seen.add(parent)
        current = queues[parent]
    return chain, None
