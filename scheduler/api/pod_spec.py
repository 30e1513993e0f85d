"""What the predicates and scorers read from a pod, parsed once per pod.

The cache builds one ``PodSpec`` per pod from its manifest; plugins read these
fields, never the raw manifest.  ``shape`` is the part of it that placement
depends on: two tasks of equal shape (and equal requests) get the same
predicate and score on a node, which is what lets a session share that work
between identical tasks.  Any pod field a predicate or scorer reads must take
part in ``shape`` (or make the pod ``shareable = False``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# kube-scheduler's non-zero defaults for containers that request nothing (LeastAllocated).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


@dataclass(slots=True, frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: "Taint") -> bool:
        """k8s ``Toleration.ToleratesTaint``."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return False


@dataclass(slots=True, frozen=True)
class Taint:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return f"{{{self.key}: {self.value}}}"


@dataclass(slots=True, frozen=True)
class HostPort:
    protocol: str
    host_ip: str
    port: int


@dataclass(slots=True)
class PodSpec:
    labels: dict[str, str] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)
    # spec.affinity.nodeAffinity, as in the manifest (plugins parse and cache what they need)
    node_affinity: dict[str, Any] = field(default_factory=dict)
    pod_affinity: dict[str, Any] = field(default_factory=dict)
    pod_anti_affinity: dict[str, Any] = field(default_factory=dict)
    topology_spread_constraints: list[dict[str, Any]] = field(default_factory=list)
    tolerations: tuple[Toleration, ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    images: tuple[str, ...] = ()
    # requests with kube-scheduler's non-zero defaults, summed over containers (cpu milli, memory bytes)
    nonzero_milli_cpu: int = 0
    nonzero_memory: int = 0
    owner_kinds: tuple[str, ...] = ()
    scheduling_gates: tuple[str, ...] = ()
    preemption_policy: str = ""
    priority_class_name: str = ""
    shape: tuple = ()

    @property
    def has_inter_pod_terms(self) -> bool:
        return bool(self.pod_affinity or self.pod_anti_affinity)

    @property
    def shareable(self) -> bool:
        """False when a placement elsewhere can change this pod's predicate or score on a node."""
        return not (self.has_inter_pod_terms or self.topology_spread_constraints)


def _requests_nonzero(containers: list[Mapping[str, Any]], parse_cpu, parse_mem) -> tuple[int, int]:
    cpu = mem = 0
    for c in containers:
        req = ((c.get("resources") or {}).get("requests")) or {}
        cpu += parse_cpu(req["cpu"]) if "cpu" in req else DEFAULT_MILLI_CPU_REQUEST
        mem += parse_mem(req["memory"]) if "memory" in req else DEFAULT_MEMORY_REQUEST
    return cpu, mem


def build_pod_spec(pod: Mapping[str, Any]) -> PodSpec:
    """Parse a validated pod manifest."""
    from .resource import _milli, _whole  # quantity strings converted once each (cached)

    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    affinity = spec.get("affinity") or {}
    containers = spec.get("containers") or []
    tolerations = tuple(
        Toleration(
            key=t.get("key") or "",
            operator=t.get("operator") or "Equal",
            value=str(t.get("value") or ""),
            effect=t.get("effect") or "",
        )
        for t in spec.get("tolerations") or []
    )
    ports = []
    for c in containers:
        for p in c.get("ports") or []:
            if p.get("hostPort"):
                ports.append(HostPort(p.get("protocol") or "TCP", p.get("hostIP") or "0.0.0.0", int(p["hostPort"])))
    cpu, mem = _requests_nonzero(containers, _milli, _whole)
    ps = PodSpec(
        labels=dict(meta.get("labels") or {}),
        node_selector={str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()},
        node_affinity=affinity.get("nodeAffinity") or {},
        pod_affinity=affinity.get("podAffinity") or {},
        pod_anti_affinity=affinity.get("podAntiAffinity") or {},
        topology_spread_constraints=list(spec.get("topologySpreadConstraints") or []),
        tolerations=tolerations,
        host_ports=tuple(ports),
        images=tuple(c.get("image") or "" for c in containers),
        nonzero_milli_cpu=cpu,
        nonzero_memory=mem,
        owner_kinds=tuple(o.get("kind") or "" for o in meta.get("ownerReferences") or []),
        scheduling_gates=tuple(g.get("name") or "" for g in spec.get("schedulingGates") or []),
        preemption_policy=spec.get("preemptionPolicy") or "",
        priority_class_name=spec.get("priorityClassName") or "",
    )
    ps.shape = (
        tuple(sorted(ps.node_selector.items())),
        json.dumps(ps.node_affinity, sort_keys=True) if ps.node_affinity else "",
        ps.tolerations,
        ps.host_ports,
        ps.images,
        ps.nonzero_milli_cpu,
        ps.nonzero_memory,
        ps.owner_kinds,
        _device_shape(meta, spec),
    )
    return ps


# pod annotations device sharing reads (spec/devices.md §5.1); the PodGroup too when a spread policy names it
_DEVICE_ANNOTATION_PREFIXES = ("volcano.sh/vgpu-", "nvidia.com/", "huawei.com/")
_GROUP_ANNOTATIONS = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")


def _device_shape(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> tuple:
    """What device sharing reads from a pod that asks for extended resources: each container's
    extended requests and limits (how they split over containers matters), the device
    annotations and the labels (GPU exclusivity rules, Ascend labels).  Empty for other pods."""
    containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
    if not any("/" in k for c in containers for kind in ("limits", "requests")
               for k in ((c.get("resources") or {}).get(kind) or ())):
        return ()
    per_container = []
    for c in containers:
        res = c.get("resources") or {}
        items = tuple(
            (kind, k, str(v)) for kind in ("limits", "requests") for k, v in sorted((res.get(kind) or {}).items())
            if "/" in k
        )
        per_container.append(items)
    ann = meta.get("annotations") or {}
    prefixes = _DEVICE_ANNOTATION_PREFIXES + (_GROUP_ANNOTATIONS if "volcano.sh/vgpu-podgroup-policy" in ann else ())
    return (
        tuple(per_container),
        tuple(sorted((k, str(v)) for k, v in ann.items() if k.startswith(prefixes))),
        tuple(sorted((str(k), str(v)) for k, v in (meta.get("labels") or {}).items())),
    )
