"""Dynamic Resource Allocation (``resource.k8s.io/v1``) as the scheduler reads it.

DeviceClasses, ResourceSlices, ResourceClaims and ResourceClaimTemplates parsed once, when the cache
receives them, into small immutable types: the allocator (``dra_allocator``) and the predicates
plugin's DRA part (plugins/dynamicresources.py) read only these.  The manifests were validated
before (scheduler/sim/dra_manifest.py, the API server's rules for the fields read here), so parsing
trusts their shape.

Names follow k8s.io/api/resource/v1: a device is identified by driver, pool and name
(``DeviceKey``); attributes and capacities are keyed by qualified name (``memory`` is in the
driver's domain, ``example.com/memory`` in its own); a claim's allocation is its
``status.allocation`` (``AllocationResult``), and its consumers ``status.reservedFor``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from .dra_cel import Device as CelDevice
from .dra_cel import Semver
from .k8s import NodeSelector, parse_node_selector
from .pod_spec import Taint, Toleration
from .quantity import parse_quantity

ALLOCATION_RESULTS_MAX_SIZE = 32  # resourceapi.AllocationResultsMaxSize
RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE = 256  # resourceapi.ResourceClaimReservedForMaxSize
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
ALLOCATION_MODE_EXACT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
TAINT_EFFECTS_BLOCKING = ("NoSchedule", "NoExecute")

# (driver, pool, device)
DeviceKey = tuple[str, str, str]
AttributeValue = bool | int | str | Semver


# ----------------------------------------------------------------------------------------------
# DeviceClass


@dataclass(frozen=True, slots=True)
class DeviceClass:
    name: str
    selectors: tuple[str, ...]  # CEL expressions
    config: tuple[dict[str, Any], ...] = ()  # spec.config, copied into allocation results


def device_class_from(obj: Mapping[str, Any]) -> DeviceClass:
    spec = obj.get("spec") or {}
    return DeviceClass(
        name=obj["metadata"]["name"],
        selectors=tuple(_cel_expressions(spec.get("selectors"))),
        config=tuple(dict(c) for c in spec.get("config") or []),
    )


def _cel_expressions(selectors: Sequence[Mapping[str, Any]] | None) -> list[str]:
    return [str((s.get("cel") or {}).get("expression") or "") for s in selectors or []]


# ----------------------------------------------------------------------------------------------
# ResourceSlice


@dataclass(frozen=True, slots=True)
class CapacityPolicy:
    """``DeviceCapacity.requestPolicy``: what a consumer of a shared device may ask of it."""

    default: Fraction | None = None
    valid_values: tuple[Fraction, ...] = ()
    min: Fraction | None = None
    max: Fraction | None = None
    step: Fraction | None = None

    @property
    def has_range(self) -> bool:
        return self.min is not None


@dataclass(frozen=True, slots=True)
class SliceDevice:
    """One device of a ResourceSlice."""

    name: str
    cel: CelDevice  # what selectors see
    attributes: Mapping[str, AttributeValue]  # by qualified name, as published
    capacity: Mapping[str, Fraction]  # by qualified name
    policies: Mapping[str, CapacityPolicy]
    allow_multiple_allocations: bool = False
    taints: tuple[Taint, ...] = ()
    consumes_counters: tuple[tuple[str, Mapping[str, Fraction]], ...] = ()  # (counter set, counters)
    # perDeviceNodeSelection: where this device can be used
    node_name: str = ""
    all_nodes: bool = False
    node_selector: NodeSelector | None = None
    binding_conditions: tuple[str, ...] = ()
    raw_node_selector: Mapping[str, Any] | None = None

    def attribute(self, driver: str, qualified: str) -> AttributeValue | None:
        """``lookupAttribute``: the fully qualified name, or the bare name in the driver's domain."""
        value = self.attributes.get(qualified)
        if value is not None:
            return value
        domain, sep, name = qualified.partition("/")
        if sep and domain == driver:
            return self.attributes.get(name)
        return None


@dataclass(frozen=True, slots=True)
class ResourceSlice:
    name: str
    driver: str
    pool: str
    generation: int
    slice_count: int
    node_name: str = ""
    all_nodes: bool = False
    node_selector: NodeSelector | None = None
    per_device_node_selection: bool = False
    shared_counters: Mapping[str, Mapping[str, Fraction]] = field(default_factory=dict)
    devices: tuple[SliceDevice, ...] = ()
    raw_node_selector: Mapping[str, Any] | None = None

    @property
    def node_local(self) -> bool:
        """Its devices serve one node only (their use changes no other node's verdict)."""
        return bool(self.node_name)


def _attribute_value(raw: Mapping[str, Any]) -> AttributeValue:
    if "bool" in raw:
        return bool(raw["bool"])
    if "int" in raw:
        return int(raw["int"])
    if "string" in raw:
        return str(raw["string"])
    return Semver.parse(str(raw["version"]))


def _policy(raw: Mapping[str, Any] | None) -> CapacityPolicy | None:
    if not raw:
        return None
    rng = raw.get("validRange") or {}
    q = parse_quantity
    return CapacityPolicy(
        default=q(raw["default"]) if raw.get("default") is not None else None,
        valid_values=tuple(q(v) for v in raw.get("validValues") or []),
        min=q(rng["min"]) if rng.get("min") is not None else None,
        max=q(rng["max"]) if rng.get("max") is not None else None,
        step=q(rng["step"]) if rng.get("step") is not None else None,
    )


def _selector(raw: Mapping[str, Any] | None) -> NodeSelector | None:
    return parse_node_selector(raw) if raw is not None else None


def slice_device_from(driver: str, raw: Mapping[str, Any]) -> SliceDevice:
    attributes = {str(k): _attribute_value(v) for k, v in (raw.get("attributes") or {}).items()}
    capacity: dict[str, Fraction] = {}
    policies: dict[str, CapacityPolicy] = {}
    for name, cap in (raw.get("capacity") or {}).items():
        capacity[str(name)] = parse_quantity(cap.get("value"))
        policy = _policy(cap.get("requestPolicy"))
        if policy is not None:
            policies[str(name)] = policy
    allow_multiple = bool(raw.get("allowMultipleAllocations"))
    return SliceDevice(
        name=raw["name"],
        cel=CelDevice.from_qualified(driver, attributes, capacity, allow_multiple),
        attributes=attributes,
        capacity=capacity,
        policies=policies,
        allow_multiple_allocations=allow_multiple,
        taints=tuple(Taint(t.get("key") or "", str(t.get("value") or ""), t.get("effect") or "")
                     for t in raw.get("taints") or []),
        consumes_counters=tuple(
            (c["counterSet"], {str(n): parse_quantity(v.get("value")) for n, v in (c.get("counters") or {}).items()})
            for c in raw.get("consumesCounters") or []
        ),
        node_name=raw.get("nodeName") or "",
        all_nodes=bool(raw.get("allNodes")),
        node_selector=_selector(raw.get("nodeSelector")),
        binding_conditions=tuple(raw.get("bindingConditions") or ()),
        raw_node_selector=raw.get("nodeSelector"),
    )


def resource_slice_from(obj: Mapping[str, Any]) -> ResourceSlice:
    spec = obj.get("spec") or {}
    driver = spec["driver"]
    pool = spec.get("pool") or {}
    return ResourceSlice(
        name=obj["metadata"]["name"],
        driver=driver,
        pool=pool.get("name") or "",
        generation=int(pool.get("generation") or 0),
        slice_count=int(pool.get("resourceSliceCount") or 0),
        node_name=spec.get("nodeName") or "",
        all_nodes=bool(spec.get("allNodes")),
        node_selector=_selector(spec.get("nodeSelector")),
        per_device_node_selection=bool(spec.get("perDeviceNodeSelection")),
        shared_counters={
            cs["name"]: {str(n): parse_quantity(v.get("value")) for n, v in (cs.get("counters") or {}).items()}
            for cs in spec.get("sharedCounters") or []
        },
        devices=tuple(slice_device_from(driver, d) for d in spec.get("devices") or []),
        raw_node_selector=spec.get("nodeSelector"),
    )


# ----------------------------------------------------------------------------------------------
# ResourceClaim


@dataclass(frozen=True, slots=True)
class ExactRequest:
    """A request's ``exactly`` or one of its ``firstAvailable`` subrequests."""

    name: str
    device_class: str
    selectors: tuple[str, ...] = ()
    allocation_mode: str = ALLOCATION_MODE_EXACT
    count: int = 1
    admin_access: bool = False
    tolerations: tuple[Toleration, ...] = ()
    capacity: Mapping[str, Fraction] | None = None  # capacity.requests
    raw_tolerations: tuple[dict[str, Any], ...] = ()  # as given, copied into allocation results


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    name: str
    exactly: ExactRequest | None = None
    first_available: tuple[ExactRequest, ...] = ()

    def alternatives(self) -> tuple[ExactRequest, ...]:
        return (self.exactly,) if self.exactly is not None else self.first_available


@dataclass(frozen=True, slots=True)
class MatchAttribute:
    """``constraints[].matchAttribute``: the devices of ``requests`` (all when empty) agree on it."""

    attribute: str
    requests: frozenset[str] = frozenset()

    def applies(self, request: str, subrequest: str) -> bool:
        if not self.requests:
            return True
        return request in self.requests or (bool(subrequest) and f"{request}/{subrequest}" in self.requests)


@dataclass(frozen=True, slots=True)
class DeviceResult:
    """One entry of ``status.allocation.devices.results``."""

    request: str  # "req" or "req/subreq"
    driver: str
    pool: str
    device: str
    admin_access: bool = False
    share_id: str = ""
    consumed_capacity: Mapping[str, Fraction] | None = None
    tolerations: tuple[dict[str, Any], ...] = ()

    @property
    def key(self) -> DeviceKey:
        return (self.driver, self.pool, self.device)

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {"request": self.request, "driver": self.driver, "pool": self.pool,
                               "device": self.device}
        if self.admin_access:
            out["adminAccess"] = True
        if self.tolerations:
            out["tolerations"] = [dict(t) for t in self.tolerations]
        if self.share_id:
            out["shareID"] = self.share_id
        if self.consumed_capacity:
            out["consumedCapacity"] = {k: format_quantity(v) for k, v in sorted(self.consumed_capacity.items())}
        return out


@dataclass(frozen=True, slots=True)
class AllocationResult:
    """A claim's ``status.allocation``; ``node`` is set when it binds the claim to one node."""

    results: tuple[DeviceResult, ...]
    config: tuple[dict[str, Any], ...] = ()
    node: str = ""  # nodeSelector: metadata.name In [node]
    node_selector: NodeSelector | None = None  # any other node selector
    raw_node_selector: Mapping[str, Any] | None = None

    def available_on(self, node_name: str, labels: Mapping[str, str]) -> bool:
        if self.node:
            return node_name == self.node
        if self.node_selector is not None:
            return self.node_selector.matches(node_name, labels)
        return True

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {"devices": {"results": [r.to_api() for r in self.results]}}
        if self.config:
            out["devices"]["config"] = [dict(c) for c in self.config]
        if self.node:
            out["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [self.node]}]}]}
        elif self.raw_node_selector is not None:
            out["nodeSelector"] = dict(self.raw_node_selector)
        return out


@dataclass(frozen=True, slots=True)
class Consumer:
    """One ``status.reservedFor`` entry (pods only are scheduled; others are kept as they are)."""

    resource: str
    name: str
    uid: str
    api_group: str = ""

    def to_api(self) -> dict[str, Any]:
        out = {"resource": self.resource, "name": self.name, "uid": self.uid}
        if self.api_group:
            out["apiGroup"] = self.api_group
        return out


@dataclass(frozen=True, slots=True)
class ResourceClaim:
    namespace: str
    name: str
    uid: str
    requests: tuple[DeviceRequest, ...]
    constraints: tuple[MatchAttribute, ...] = ()
    config: tuple[dict[str, Any], ...] = ()  # spec.devices.config
    allocation: AllocationResult | None = None
    reserved_for: tuple[Consumer, ...] = ()
    deleting: bool = False
    owner_pod_uid: str = ""  # the pod a template claim was made for (its controller owner reference)
    pod_claim_name: str = ""  # annotation resource.kubernetes.io/pod-claim-name
    resource_version: str = ""
    signature: str = ""  # the spec, canonical: claims with equal signatures ask the same

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def reserved_for_pod(self, uid: str) -> bool:
        return any(c.resource == "pods" and c.uid == uid for c in self.reserved_for)


def format_quantity(q: Fraction) -> str:
    """A quantity as the API server would print it, for the exact values DRA uses."""
    if q.denominator == 1:
        n = q.numerator
        for suffix, base in (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if n and n % base == 0:
                return f"{n // base}{suffix}"
        return str(n)
    milli = q * 1000
    if milli.denominator == 1:
        return f"{milli.numerator}m"
    return str(float(q))


def _tolerations(raw: Sequence[Mapping[str, Any]] | None) -> tuple[Toleration, ...]:
    return tuple(Toleration(t.get("key") or "", t.get("operator") or "Equal", str(t.get("value") or ""),
                            t.get("effect") or "") for t in raw or [])


def _exact(name: str, raw: Mapping[str, Any], admin: bool) -> ExactRequest:
    capacity = ((raw.get("capacity") or {}).get("requests"))
    mode = raw.get("allocationMode") or ALLOCATION_MODE_EXACT
    return ExactRequest(
        name=name,
        device_class=raw.get("deviceClassName") or "",
        selectors=tuple(_cel_expressions(raw.get("selectors"))),
        allocation_mode=mode,
        count=int(raw.get("count") or 1) if mode == ALLOCATION_MODE_EXACT else 0,
        admin_access=admin and bool(raw.get("adminAccess")),
        tolerations=_tolerations(raw.get("tolerations")),
        capacity={str(k): parse_quantity(v) for k, v in capacity.items()} if capacity is not None else None,
        raw_tolerations=tuple(dict(t) for t in raw.get("tolerations") or []),
    )


def device_request_from(raw: Mapping[str, Any]) -> DeviceRequest:
    name = raw["name"]
    if raw.get("exactly") is not None:
        return DeviceRequest(name, exactly=_exact(name, raw["exactly"], admin=True))
    return DeviceRequest(name, first_available=tuple(
        _exact(sub["name"], sub, admin=False) for sub in raw.get("firstAvailable") or []))


def allocation_from(raw: Mapping[str, Any] | None) -> AllocationResult | None:
    if not raw:
        return None
    devices = raw.get("devices") or {}
    results = tuple(
        DeviceResult(
            request=r.get("request") or "", driver=r.get("driver") or "", pool=r.get("pool") or "",
            device=r.get("device") or "", admin_access=bool(r.get("adminAccess")),
            share_id=str(r.get("shareID") or ""),
            consumed_capacity={str(k): parse_quantity(v) for k, v in (r.get("consumedCapacity") or {}).items()} or None,
            tolerations=tuple(dict(t) for t in r.get("tolerations") or []),
        )
        for r in devices.get("results") or []
    )
    node, selector, raw_selector = "", None, raw.get("nodeSelector")
    if raw_selector:
        terms = raw_selector.get("nodeSelectorTerms") or []
        fields = (terms[0].get("matchFields") or []) if len(terms) == 1 else []
        if (len(terms) == 1 and not terms[0].get("matchExpressions") and len(fields) == 1
                and fields[0].get("key") == "metadata.name" and fields[0].get("operator") == "In"
                and len(fields[0].get("values") or []) == 1):
            node = str(fields[0]["values"][0])
        else:
            selector = parse_node_selector(raw_selector)
    return AllocationResult(results, tuple(dict(c) for c in devices.get("config") or []), node, selector,
                            raw_selector if selector is not None else None)


def claim_signature(spec: Mapping[str, Any]) -> str:
    return hashlib.sha1(json.dumps(spec.get("devices") or {}, sort_keys=True, default=str).encode()).hexdigest()


def resource_claim_from(obj: Mapping[str, Any]) -> ResourceClaim:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    devices = spec.get("devices") or {}
    owner = next((r for r in meta.get("ownerReferences") or []
                  if r.get("kind") == "Pod" and r.get("controller")), None)
    return ResourceClaim(
        namespace=meta.get("namespace") or "default",
        name=meta["name"],
        uid=str(meta.get("uid") or ""),
        requests=tuple(device_request_from(r) for r in devices.get("requests") or []),
        constraints=tuple(
            MatchAttribute(c["matchAttribute"], frozenset(c.get("requests") or ()))
            for c in devices.get("constraints") or [] if c.get("matchAttribute")
        ),
        config=tuple(dict(c) for c in devices.get("config") or []),
        allocation=allocation_from(status.get("allocation")),
        reserved_for=tuple(Consumer(r.get("resource") or "", r.get("name") or "", str(r.get("uid") or ""),
                                    r.get("apiGroup") or "") for r in status.get("reservedFor") or []),
        deleting=bool(meta.get("deletionTimestamp")),
        owner_pod_uid=str(owner.get("uid") or "") if owner else "",
        pod_claim_name=(meta.get("annotations") or {}).get(POD_CLAIM_NAME_ANNOTATION, ""),
        resource_version=str(meta.get("resourceVersion") or ""),
        signature=claim_signature(spec),
    )


# ----------------------------------------------------------------------------------------------
# A pod's claims


@dataclass(frozen=True, slots=True)
class PodClaimRef:
    """One ``spec.resourceClaims`` entry, resolved to the claim's name where known.

    ``claim``: the ResourceClaim's name; "" when it is made from a template and the resourceclaim
    controller has not recorded it in ``status.resourceClaimStatuses`` yet; None when the controller
    recorded that none is needed."""

    name: str
    claim: str | None
    template: str = ""


def pod_claim_refs(pod: Mapping[str, Any]) -> tuple[PodClaimRef, ...]:
    spec = pod.get("spec") or {}
    entries = spec.get("resourceClaims") or []
    if not entries:
        return ()
    statuses = {s.get("name"): s for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
    refs = []
    for e in entries:
        name = e.get("name") or ""
        if e.get("resourceClaimName"):
            refs.append(PodClaimRef(name, e["resourceClaimName"]))
            continue
        template = e.get("resourceClaimTemplateName") or ""
        status = statuses.get(name)
        if status is None:
            refs.append(PodClaimRef(name, "", template))
        else:
            refs.append(PodClaimRef(name, status.get("resourceClaimName") or None, template))
    return tuple(refs)


def template_claim_name(pod_name: str, pod_claim_name: str, seed: str) -> str:
    """The name the resourceclaim controller's ``generateName`` gets from the API server:
    ``<pod>-<claim name in the pod>-`` (both shortened in proportion past 57 characters) and five
    characters of the API server's alphabet, here derived from ``seed`` so that a run can be repeated."""
    base = f"{pod_name}-{pod_claim_name}-"
    max_base = 57
    if len(base) > max_base:
        base = (pod_name[: len(pod_name) * max_base // len(base)] + "-"
                + pod_claim_name[: len(pod_claim_name) * max_base // len(base)])
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    digest = hashlib.sha256(seed.encode()).digest()
    return base + "".join(alphabet[b % len(alphabet)] for b in digest[:5])
