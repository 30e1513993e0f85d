"""QueueInfo: a ``scheduling.volcano.sh/v1beta1`` Queue as the scheduler reads it."""

from __future__ import annotations

from dataclasses import dataclass, field

from .resource import Resource
from .types import QueueState


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

    def reclaimable(self) -> bool:
        """``spec.reclaimable`` nil counts as true."""
        return self.reclaimable_flag is None or self.reclaimable_flag

    def clone(self) -> "QueueInfo":
        return QueueInfo(
            self.name, self.uid, self.creation_timestamp, self.weight, self.capability, self.guarantee,
            self.deserved, self.reclaimable_flag, self.parent, self.priority, self.state,
            dict(self.annotations), dict(self.allocated),
        )
