"""What a session decides, for a sink to carry out.  The session itself does no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True, frozen=True)
class ClaimStatus:
    """DRA's PreBind: a ResourceClaim's status to write before the pod's binding, as kube-scheduler
    writes it: ``allocation`` (``status.allocation``, None when the claim was allocated before) and the
    whole ``reservedFor`` list with the pod in it."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    allocation: dict[str, Any] | None
    reserved_for: tuple[dict[str, str], ...]


@dataclass(slots=True, frozen=True)
class Bind:
    """Bind a pod to a node through the binding subresource, annotations inside the Binding.

    ``claims``: the pod's ResourceClaims' status to write first (a failed write fails the bind)."""

    namespace: str
    name: str
    uid: str
    node: str
    annotations: dict[str, str] = field(default_factory=dict)
    claims: tuple[ClaimStatus, ...] = ()


@dataclass(slots=True, frozen=True)
class NodeLock:
    """deviceshare ``NodeLockEnable``: write the node annotation ``key: value`` (RFC 3339 time)
    before the Bind that follows it; the device plugin removes it after its Allocate."""

    node: str
    key: str
    value: str


@dataclass(slots=True, frozen=True)
class Evict:
    namespace: str
    name: str
    uid: str
    reason: str


@dataclass(slots=True, frozen=True)
class PodGroupStatus:
    """The whole PodGroup status, written when it changed (Volcano updates the object)."""

    namespace: str
    name: str
    phase: str
    running: int
    succeeded: int
    failed: int
    conditions: list[dict[str, Any]]


@dataclass(slots=True, frozen=True)
class QueueStatus:
    name: str
    allocated: dict[str, str]


@dataclass(slots=True, frozen=True)
class PodCondition:
    """``PodScheduled=False`` with a reason and message, and the nominated node if any."""

    namespace: str
    name: str
    reason: str
    message: str
    nominated_node: str = ""


@dataclass(slots=True, frozen=True)
class Event:
    kind: str  # "Pod", "PodGroup" or "HyperNode"
    namespace: str  # "" for a cluster-scoped object (a HyperNode)
    name: str
    type: str  # "Normal" or "Warning"
    reason: str
    message: str


Effect = Bind | NodeLock | Evict | PodGroupStatus | QueueStatus | PodCondition | Event
