"""The one interface every deviceshare sub-allocator implements (api/shared_device_pool.go · Devices).

A ``NodeDevices`` is one device kind's state on one node: parsed once per node
update from what the device plugin publishes, then kept as a ledger of the pods
holding its devices.  The ledger is keyed by pod UID, so a pod leaves it whole
whatever its annotations say (Volcano's vGPU ledger cannot undo an allocation
inside a session, spec §1.4; this one can).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from vcsched.api.fit_errors import Status
from vcsched.api.quantity import QuantityError, parse_quantity, value
from vcsched.api.task_info import TaskInfo


class AllocateError(Exception):
    """The sub-allocator cannot allocate what its filter accepted (Volcano's Allocate error)."""


# a failed ``FilterNode``: Volcano's code and reason (a reason may follow the pod's name, see ``Status``)
FilterResult = Status


@dataclass(slots=True)
class DeviceUse:
    """One device's use, for ``simulate`` output and metrics."""

    id: str
    type: str
    memory_used: int
    memory_total: int
    cores_used: int
    slots_used: int
    slots_total: int
    pods: list[str]
    health: bool = True


class DeviceFamily:
    """One device kind with its configuration: reads pods' requests and builds per-node state.

    One instance per scheduler configuration, shared by every node's ``NodeDevices``.
    """

    key: ClassVar[str]
    rank: int = 0  # the place in Volcano's RegisteredDevices (plugin.build_families sets it)
    # True: the plugin calls ``open_session(node)`` on this kind's NodeDevices at every session
    # open (Volcano's ``initializeDevicesWithSession``, today only the MindCluster 310P kind)
    session_init: ClassVar[bool] = False
    # Volcano's NodeInfo holds this kind on every node, nil where the node's registry does not parse
    # (setNodeOthersResource: gpushare and vGPU): a pod asking for it fails such a node ("node not
    # initialized with device").  Other kinds are absent there, and the predicate skips them.
    on_every_node: ClassVar[bool] = False
    # True: scoring a node leaves state that Allocate reads (HAMi vNPU's stored policy, spec/devices.md
    # §6.8.6), so which nodes are scored must be Volcano's: such a task searches node by node, where
    # a lone feasible node is taken unscored (node_search.py), never through a shape's index, which
    # scores every feasible node
    score_stores_state: ClassVar[bool] = False

    def request(self, task: TaskInfo) -> Any | None:
        """``HasDeviceRequest`` and the parsed request: None when the pod asks nothing of this kind."""
        raise NotImplementedError

    def build(self, node: Mapping[str, Any], name: str) -> "NodeDevices | None":
        """The node's devices of this kind from its manifest, or None when it has none."""
        raise NotImplementedError


class NodeDevices:
    """One device kind on one node (Volcano's ``NodeInfo.Others[key]``)."""

    key: ClassVar[str]
    family: DeviceFamily  # the kind, with its configuration

    def clone(self) -> "NodeDevices":
        raise NotImplementedError

    def open_session(self, node: Any) -> None:
        """Per-session setup on the session's copy of the node (only when ``family.session_init``)."""

    # -- the ledger ---------------------------------------------------------------------

    def add_pod(self, task: TaskInfo) -> None:
        """``AddResource``: count a pod bound here, from its device annotations."""
        raise NotImplementedError

    def remove_pod(self, task: TaskInfo) -> None:
        """``SubResource``: forget the pod (by UID); a pod not in the ledger is a no-op."""
        raise NotImplementedError

    def holds(self, uid: str) -> bool:
        raise NotImplementedError

    # -- scheduling -----------------------------------------------------------------------

    def filter(self, task: TaskInfo, req: Any, policy: str) -> FilterResult | None:
        """None when the pod fits; else Volcano's code and reason."""
        raise NotImplementedError

    def score(self, task: TaskInfo, req: Any, policy: str) -> float:
        return 0.0

    def allocate(self, task: TaskInfo, req: Any, policy: str, now: float) -> dict[str, str]:
        """Take the devices (the ledger changes) and return the annotations for the Binding."""
        raise NotImplementedError

    def release(self, task: TaskInfo) -> tuple[str, ...]:
        """Undo ``allocate`` in the ledger; the annotation keys to drop from the Binding."""
        raise NotImplementedError

    def describe(self) -> list[DeviceUse]:
        return []

    def queue_resource(self, task: TaskInfo) -> Mapping[str, float] | None:
        """``AddQueueResource``: scalars (milli) that replace the pod's requests in its queue's
        ``status.allocated`` (session close); None to keep the requests (HAMi Ascend, gpushare)."""
        return None


# -- reading pods ---------------------------------------------------------------------------


def pod_annotations(task: TaskInfo) -> Mapping[str, str]:
    """The pod's annotations as the cluster has them (what the device plugins read back)."""
    return ((task.pod.get("metadata") or {}).get("annotations")) or {}


def release_keys(task: TaskInfo, bind_phase: str, keys: tuple[str, ...]) -> tuple[str, ...]:
    """The annotation keys a release drops from the Binding, for the kinds that speak HAMi's bind
    protocol: none once the device plugin has marked ``bind_phase`` success (it owns them then)."""
    return () if pod_annotations(task).get(bind_phase) == "success" else keys


def annotation(task: TaskInfo, key: str) -> str | None:
    """An annotation this session wrote, else the pod's own."""
    v = task.pod_annotations.get(key)
    if v is not None:
        return v
    return pod_annotations(task).get(key)


def containers(task: TaskInfo) -> list[Mapping[str, Any]]:
    return (task.pod.get("spec") or {}).get("containers") or []


def init_containers(task: TaskInfo) -> list[Mapping[str, Any]]:
    return (task.pod.get("spec") or {}).get("initContainers") or []


def quantity(raw: Any) -> int:
    """``Quantity.Value()``: the integer value (rounded up), 0 for what does not parse."""
    try:
        return value(parse_quantity(raw))
    except (QuantityError, ValueError, TypeError):
        return 0


def limits(c: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((c.get("resources") or {}).get("limits")) or {}


def requests(c: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((c.get("resources") or {}).get("requests")) or {}


def group_key(task: TaskInfo) -> str:
    """``getPodGroupKey``: ``<ns>/<pg>`` from scheduling.k8s.io/group-name, else the volcano key."""
    ann = pod_annotations(task)
    name = ann.get("scheduling.k8s.io/group-name") or ann.get("scheduling.volcano.sh/group-name") or ""
    return f"{task.namespace}/{name}" if name else ""
