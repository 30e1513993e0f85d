"""TaskInfo: one pod as the scheduler sees it (job_info.go · NewTaskInfo, pod_info.go)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .pod_spec import PodSpec, build_pod_spec
from .resource import Resource
from .types import (
    GROUP_NAME_ANNOTATION,
    PREEMPTABLE_KEY,
    REVOCABLE_ZONE_KEY,
    TASK_PRIORITY_ANNOTATION,
    TASK_SPEC_KEY,
    VOLCANO_GATE,
    TaskStatus,
)


def parse_timestamp(raw: object) -> float:
    """RFC 3339 → Unix seconds; 0 when absent."""
    if not raw:
        return 0.0
    if isinstance(raw, datetime):
        return raw.timestamp()
    text = str(raw).replace("Z", "+00:00")
    return datetime.fromisoformat(text).timestamp()


def parse_go_bool(raw: str) -> bool | None:
    """``strconv.ParseBool``; None for anything it refuses."""
    if raw in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if raw in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None


@dataclass(slots=True)
class TransactionContext:
    status: TaskStatus
    node_name: str
    eviction_occurred: bool = False


@dataclass(slots=True, eq=False)
class TaskInfo:
    uid: str
    name: str
    namespace: str
    job: str  # job ID "<ns>/<podgroup>", or "" for a pod in no group
    status: TaskStatus
    node_name: str
    resreq: Resource
    priority: int
    role: str
    preemptable: bool
    best_effort: bool
    creation_timestamp: float
    spec: PodSpec
    pod: Mapping[str, Any]  # the manifest, read-only
    nominated_node: str = ""
    eviction_occurred: bool = False
    last_transaction: TransactionContext | None = None
    # annotations the scheduler writes; they travel with the Binding
    pod_annotations: dict[str, str] = field(default_factory=dict)
    # the key under which identical tasks share predicate and score work
    shape: tuple = ()
    # "*" when the pod may run on revocable nodes (tdm), else "" (GetPodRevocableZone)
    revocable_zone: str = ""
    # while allocate places a SubJob with a network topology: the SubJob's allocated HyperNode so far,
    # which network-topology-aware scores nodes against (JobAllocatedHyperNode); session-only
    job_allocated_hypernode: str = ""

    @property
    def init_resreq(self) -> Resource:
        """``InitResreq`` equals ``Resreq`` in this version of Volcano."""
        return self.resreq

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def scheduling_gated(self) -> bool:
        """Gated by anything but Volcano's own queue-allocation gate."""
        gates = self.spec.scheduling_gates
        return bool(gates) and any(g != VOLCANO_GATE for g in gates)

    def clone(self) -> "TaskInfo":
        t = TaskInfo(
            self.uid, self.name, self.namespace, self.job, self.status, self.node_name, self.resreq,
            self.priority, self.role, self.preemptable, self.best_effort, self.creation_timestamp,
            self.spec, self.pod, self.nominated_node, self.eviction_occurred, self.last_transaction,
            dict(self.pod_annotations), self.shape, self.revocable_zone,
        )
        return t

    def __repr__(self) -> str:
        return f"TaskInfo({self.key}, {self.status.name}, node={self.node_name or '-'})"


def task_status_of(pod: Mapping[str, Any]) -> TaskStatus:
    """``helpers.getTaskStatus``."""
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    deleting = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
    if phase == "Running":
        return TaskStatus.Releasing if deleting else TaskStatus.Running
    if phase == "Pending":
        if deleting:
            return TaskStatus.Releasing
        return TaskStatus.Bound if (pod.get("spec") or {}).get("nodeName") else TaskStatus.Pending
    if phase == "Succeeded":
        return TaskStatus.Succeeded
    if phase == "Failed":
        return TaskStatus.Failed
    return TaskStatus.Unknown


def _container_requests(c: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((c.get("resources") or {}).get("requests")) or {}


def pod_request(pod: Mapping[str, Any], ignored: frozenset[str] = frozenset()) -> Resource:
    """``GetPodResourceRequest``: containers, init containers (sidecars included), overhead, pods=1."""
    spec = pod.get("spec") or {}
    total = Resource()
    for c in spec.get("containers") or []:
        total.add(Resource.from_list(_container_requests(c), ignored))
    sidecars = Resource()
    init_max = Resource()
    for c in spec.get("initContainers") or []:
        req = Resource.from_list(_container_requests(c), ignored)
        if c.get("restartPolicy") == "Always":
            sidecars.add(req)
            total.add(req)
        else:
            init_max.set_max(req.clone().add(sidecars))
    total.set_max(init_max)
    overhead = spec.get("overhead")
    if overhead:
        total.add(Resource.from_list(overhead, ignored))
    total.scalars["pods"] = total.scalars.get("pods", 0.0) + 1
    return total


def revocable_zone(annotations: Mapping[str, str]) -> str:
    """``GetPodRevocableZone``: ``*`` when the ``volcano.sh/revocable-zone`` annotation is ``*`` (any other
    value: none), or, without that annotation, when ``volcano.sh/preemptable`` is a true bool.  Labels
    are not read."""
    if REVOCABLE_ZONE_KEY in annotations:
        return "*" if annotations[REVOCABLE_ZONE_KEY] == "*" else ""
    if PREEMPTABLE_KEY in annotations and parse_go_bool(str(annotations[PREEMPTABLE_KEY])):
        return "*"
    return ""


_ABSENT = object()


def reads_alike(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether ``build_pod_spec`` and ``pod_request`` read the same of two versions of a pod: its spec
    but ``nodeName`` (a Binding, a status change), its labels, annotations and owners."""
    so, sn = old.get("spec") or {}, new.get("spec") or {}
    if len(so) - ("nodeName" in so) != len(sn) - ("nodeName" in sn):
        return False
    for k, v in sn.items():
        if k != "nodeName":
            w = so.get(k, _ABSENT)
            if w is not v and w != v:
                return False
    mo, mn = old.get("metadata") or {}, new.get("metadata") or {}
    for k in ("labels", "annotations", "ownerReferences"):
        a, b = mo.get(k), mn.get(k)
        if a is not b and (a or None) != (b or None):
            return False
    return True


def new_task_info(pod: Mapping[str, Any], ignored: frozenset[str] = frozenset(),
                  previous: TaskInfo | None = None) -> TaskInfo:
    """``NewTaskInfo`` from a validated pod manifest.  ``previous``: the task of an earlier version of
    the pod, whose parsed spec and requests are taken again when the new version reads alike."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    annotations = meta.get("annotations") or {}
    labels = meta.get("labels") or {}
    namespace = meta.get("namespace") or "default"
    group = annotations.get(GROUP_NAME_ANNOTATION) or ""
    if previous is not None and reads_alike(previous.pod, pod):
        ps, resreq, shape = previous.spec, previous.resreq, previous.shape
    else:
        ps, resreq = build_pod_spec(pod), pod_request(pod, ignored)
        shape = (resreq.milli_cpu, resreq.memory, tuple(sorted(resreq.scalars.items())), ps.shape)

    priority = spec.get("priority")
    priority = 1 if priority is None else int(priority)
    if TASK_PRIORITY_ANNOTATION in annotations:
        try:
            priority = int(annotations[TASK_PRIORITY_ANNOTATION])
        except ValueError:
            pass

    raw_preemptable = annotations.get(PREEMPTABLE_KEY, labels.get(PREEMPTABLE_KEY))
    preemptable = True if raw_preemptable is None else bool(parse_go_bool(str(raw_preemptable)))

    task = TaskInfo(
        uid=str(meta.get("uid") or f"{namespace}/{meta.get('name')}"),
        name=meta.get("name") or "",
        namespace=namespace,
        job=f"{namespace}/{group}" if group else "",
        status=task_status_of(pod),
        node_name=spec.get("nodeName") or "",
        resreq=resreq,
        priority=priority,
        role=annotations.get(TASK_SPEC_KEY) or labels.get(TASK_SPEC_KEY) or "",
        preemptable=preemptable,
        best_effort=resreq.is_empty(),
        creation_timestamp=parse_timestamp(meta.get("creationTimestamp")),
        spec=ps,
        pod=pod,
        nominated_node=(pod.get("status") or {}).get("nominatedNodeName") or "",
        revocable_zone=revocable_zone(annotations),
    )
    # made of the requests and the parsed spec: the earlier version's when they are its (three tuples
    # fewer per bind for the cyclic collector to walk)
    task.shape = shape
    return task

