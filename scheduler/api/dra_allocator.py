"""The structured-parameters allocator of Dynamic Resource Allocation, for one node at a time.

Follows k8s.io/dynamic-resource-allocation/structured/internal/incubating (allocator_incubating.go,
pools_incubating.go, consumable_capacity.go), the variant kube-scheduler runs when prioritized
lists, admin access, partitionable devices, device taints or consumable capacity are on (all are,
as in Kubernetes 1.36):

- pools (``gather_pools``): the slices that serve the node (``nodeName``, ``allNodes``, a
  ``nodeSelector``, or ``perDeviceNodeSelection`` with one device that does), grouped by driver and
  pool, the newest generation only; a pool missing slices is incomplete (its devices are not used, and
  ``allocationMode: All`` over it fails), one with duplicate device names or counters that name no
  counter set is invalid.  Pools sorted by driver, then pool; slices by name.
- ``Allocator.allocate(node, claims)`` searches claims in order, each request (or the first
  subrequest of ``firstAvailable`` that can be satisfied), each device in pool order, backtracking
  over combinations (never permutations) until every claim is satisfied: the first solution wins.
  A device is taken when it is not in use (``AllocatedState``; admin access ignores that), the
  class's and the request's CEL selectors accept it, its NoSchedule/NoExecute taints are tolerated,
  its capacity admits the request (consumable capacity: shared devices hold several allocations,
  each with a share ID and its consumed capacity), its counters fit what the pool's counter sets
  have left (partitionable devices), and the claim's ``matchAttribute`` constraints still hold.
- A CEL runtime error, ``All`` over an incomplete pool, a constraint that ``All`` devices cannot meet:
  ``AllocationError`` (kube-scheduler aborts the claim's allocation on that node with the message).

Devices with binding conditions are not allocated (DRADeviceBindingConditions is off).  DeviceTaintRules
are not read (the taints a slice publishes are).  Share IDs are derived from the claim and device
(Kubernetes draws random UUIDs) so that a run can be repeated.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from .dra import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_RESULTS_MAX_SIZE,
    TAINT_EFFECTS_BLOCKING,
    AllocationResult,
    DeviceClass,
    DeviceKey,
    DeviceRequest,
    DeviceResult,
    ExactRequest,
    MatchAttribute,
    ResourceClaim,
    ResourceSlice,
    SliceDevice,
)
from .dra_cel import Selector, SelectorCompileError, SelectorError, compile_selector
from .k8s import NodeSelector, parse_node_selector

_SHARE_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_DNS, "share.dra.vcsched.volcano.sh")


class AllocationError(Exception):
    """The claims cannot be allocated on this node for a reason other than "no devices fit"."""


# ----------------------------------------------------------------------------------------------
# What is allocated already


@dataclass(slots=True)
class AllocatedState:
    """``schedulerapi.AllocatedState``: the devices the allocated claims hold.

    ``devices``: held exclusively (admin access results do not count); ``shared``: the capacity the
    shared allocations (those with a share ID) consume, summed per device, with their number."""

    devices: dict[DeviceKey, int] = field(default_factory=dict)
    shared: dict[DeviceKey, dict[str, Fraction]] = field(default_factory=dict)
    shared_count: dict[DeviceKey, int] = field(default_factory=dict)

    def add(self, allocation: AllocationResult) -> None:
        for r in allocation.results:
            if r.admin_access:
                continue
            key = r.key
            if r.share_id:
                self.shared_count[key] = self.shared_count.get(key, 0) + 1
                total = self.shared.setdefault(key, {})
                for name, q in (r.consumed_capacity or {}).items():
                    total[name] = total.get(name, Fraction(0)) + q
            else:
                self.devices[key] = self.devices.get(key, 0) + 1

    def remove(self, allocation: AllocationResult) -> None:
        for r in allocation.results:
            if r.admin_access:
                continue
            key = r.key
            if r.share_id:
                n = self.shared_count.get(key, 0) - 1
                total = self.shared.get(key, {})
                for name, q in (r.consumed_capacity or {}).items():
                    total[name] = total.get(name, Fraction(0)) - q
                if n <= 0:
                    self.shared_count.pop(key, None)
                    self.shared.pop(key, None)
                else:
                    self.shared_count[key] = n
            else:
                n = self.devices.get(key, 0) - 1
                if n <= 0:
                    self.devices.pop(key, None)
                else:
                    self.devices[key] = n

    def is_allocated(self, key: DeviceKey) -> bool:
        """``IsDeviceAllocated``: held exclusively or in part (its counters are consumed)."""
        return key in self.devices or key in self.shared_count


# ----------------------------------------------------------------------------------------------
# Pools


@dataclass(slots=True)
class Pool:
    driver: str
    name: str
    slices: list[ResourceSlice] = field(default_factory=list)  # device slices that serve the node
    others: list[ResourceSlice] = field(default_factory=list)  # the pool's other device slices
    counter_sets: dict[str, Mapping[str, Fraction]] = field(default_factory=dict)
    incomplete: bool = False
    invalid: str = ""

    @property
    def id(self) -> str:
        return f"{self.driver}/{self.name}"


def node_matches(node_name: str, labels: Mapping[str, str], name: str, all_nodes: bool,
                 selector: NodeSelector | None) -> bool:
    """``NodeMatches``."""
    if name:
        return node_name == name
    if all_nodes:
        return True
    if selector is not None:
        return selector.matches(node_name, labels)
    return False


def serves(s: ResourceSlice, node_name: str, labels: Mapping[str, str]) -> bool:
    if s.node_name or s.all_nodes or s.node_selector is not None:
        return node_matches(node_name, labels, s.node_name, s.all_nodes, s.node_selector)
    if s.per_device_node_selection:
        return any(node_matches(node_name, labels, d.node_name, d.all_nodes, d.node_selector) for d in s.devices)
    return False


def gather_pools(for_node: Sequence[ResourceSlice], node_name: str, labels: Mapping[str, str],
                 by_pool: Mapping[tuple[str, str], Sequence[ResourceSlice]]) -> list[Pool]:
    """``GatherPools``: ``for_node`` are the slices published for this node and those for no node in
    particular; ``by_pool``: every slice of the cluster by (driver, pool)."""
    found: dict[tuple[str, str], list[ResourceSlice]] = {}
    for s in for_node:
        if not serves(s, node_name, labels):
            continue
        pid = (s.driver, s.pool)
        have = found.get(pid)
        if have is None or s.generation > have[0].generation:
            found[pid] = [s]
        elif s.generation == have[0].generation:
            have.append(s)
    pools = []
    for (driver, name), slices in found.items():
        generation = slices[0].generation
        everywhere = by_pool.get((driver, name), ())
        if any(s.generation > generation for s in everywhere):
            continue  # obsolete: a newer generation is being published
        current = [s for s in everywhere if s.generation == generation]
        if len(current) != slices[0].slice_count:
            pools.append(Pool(driver, name, incomplete=True))
            continue
        pools.append(_build_pool(driver, name, slices, current))
    pools.sort(key=lambda p: (p.driver, p.name))
    return pools


def _build_pool(driver: str, name: str, serving: list[ResourceSlice], current: list[ResourceSlice]) -> Pool:
    """``buildPool``: a slice with shared counters contributes its counter sets (vcsched reads them from
    every slice of the pool, which is what upstream reads when counter slices serve no node)."""
    serving_names = {s.name for s in serving}
    pool = Pool(driver, name)
    pool.slices = sorted((s for s in serving if s.devices), key=lambda s: s.name)
    pool.others = sorted((s for s in current if s.name not in serving_names and s.devices), key=lambda s: s.name)
    names: set[str] = set()
    for s in pool.slices:
        for d in s.devices:
            if d.name in names:
                pool.invalid = f"duplicate device name {d.name}"
                return pool
            names.add(d.name)
    for s in sorted(current, key=lambda s: s.name):
        for set_name, counters in s.shared_counters.items():
            if set_name in pool.counter_sets:
                pool.invalid = f"duplicate counter set name {set_name}"
                return pool
            pool.counter_sets[set_name] = counters
    for s in pool.slices + pool.others:
        for d in s.devices:
            for set_name, counters in d.consumes_counters:
                have = pool.counter_sets.get(set_name)
                if have is None:
                    pool.invalid = f"counter set {set_name} not found"
                    return pool
                for counter in counters:
                    if counter not in have:
                        pool.invalid = f"counter {counter} not found in counter set {set_name}"
                        return pool
    return pool


# ----------------------------------------------------------------------------------------------
# Consumable capacity (consumable_capacity.go)


def _ceil(q: Fraction) -> int:
    return math.ceil(q)


def consumed_amount(requested: Fraction | None, value: Fraction, device: SliceDevice, name: str) -> Fraction:
    """``calculateConsumedCapacity``: what a request takes of one capacity, rounded up by its policy."""
    policy = device.policies.get(name)
    if requested is None:
        return policy.default if policy is not None and policy.default is not None else value
    if policy is None:
        return requested
    if policy.has_range:
        if requested < policy.min:
            return policy.min
        if policy.step is None:
            return requested
        lo, step = _ceil(policy.min), _ceil(policy.step)
        added = _ceil(requested) - lo
        n = added // step + (1 if added % step else 0)
        return Fraction(lo + step * n)
    for v in policy.valid_values:
        if requested <= v:
            return v
    return requested


def _violates(amount: Fraction, device: SliceDevice, name: str) -> bool:
    policy = device.policies.get(name)
    if policy is None or (policy.default is not None and amount == policy.default):
        return False
    if policy.has_range:
        if policy.max is not None and amount > policy.max:
            return True
        if policy.step is not None and (_ceil(amount) - _ceil(policy.min)) % _ceil(policy.step):
            return True
        return False
    if policy.valid_values:
        return amount not in policy.valid_values
    return False


def capacity_fits(device: SliceDevice, request: ExactRequest, consumed: Mapping[str, Fraction] | None,
                  allocating: Mapping[str, Fraction] | None) -> bool | None:
    """``CmpRequestOverCapacity``: True when the device has room for the request; None when the
    request names a capacity the device does not have (the device is skipped)."""
    asked = request.capacity
    if asked and any(name not in device.capacity for name in asked):
        return None
    for name, value in device.capacity.items():
        amount = consumed_amount(asked.get(name) if asked else None, value, device, name)
        if _violates(amount, device, name):
            return False
        total = amount
        if consumed:
            total += consumed.get(name, 0)
        if allocating:
            total += allocating.get(name, 0)
        if total > value:
            return False
    return True


def consumed_capacity(device: SliceDevice, request: ExactRequest) -> dict[str, Fraction]:
    asked = request.capacity
    return {name: consumed_amount(asked.get(name) if asked else None, value, device, name)
            for name, value in device.capacity.items()}


# ----------------------------------------------------------------------------------------------
# The allocator


def attributes_equal(a: Any, b: Any) -> bool:
    """matchAttribute: same type, same value (a version compares as its text)."""
    return type(a) is type(b) and (str(a) == str(b) if not isinstance(a, bool | int | str) else a == b)


def taint_prevents(device: SliceDevice, request: ExactRequest) -> bool:
    for taint in device.taints:
        if taint.effect in TAINT_EFFECTS_BLOCKING and not any(t.tolerates(taint) for t in request.tolerations):
            return True
    return False


@dataclass(slots=True)
class _Request:
    """``requestData``: one request, or one subrequest of a ``firstAvailable`` list."""

    request: ExactRequest
    parent: str  # the request's name when this is a subrequest
    device_class: DeviceClass
    num_devices: int = 0
    all_devices: list[tuple[Pool, ResourceSlice, SliceDevice]] | None = None

    @property
    def name(self) -> str:
        return f"{self.parent}/{self.request.name}" if self.parent else self.request.name


class _Constraint:
    __slots__ = ("spec", "value", "count")

    def __init__(self, spec: MatchAttribute) -> None:
        self.spec = spec
        self.value: Any = None
        self.count = 0

    def add(self, request: str, subrequest: str, driver: str, device: SliceDevice) -> bool:
        if not self.spec.applies(request, subrequest):
            return True
        value = device.attribute(driver, self.spec.attribute)
        if value is None:
            return False
        if self.count == 0:
            self.value = value
        elif not attributes_equal(value, self.value):
            return False
        self.count += 1
        return True

    def remove(self, request: str, subrequest: str) -> None:
        if self.spec.applies(request, subrequest):
            self.count -= 1


class Allocator:
    """Allocation over a fixed set of slices and classes, against an ``AllocatedState`` that the
    caller keeps up to date between calls."""

    def __init__(self, classes: Mapping[str, DeviceClass], state: AllocatedState,
                 compile_fn=compile_selector) -> None:
        self.classes = classes
        self.state = state
        self.compile = compile_fn
        self._selectors: dict[str, Selector] = {}

    def allocate(self, node_name: str, labels: Mapping[str, str], pools: list[Pool],
                 claims: Sequence[ResourceClaim]) -> list[AllocationResult] | None:
        """One AllocationResult per claim, in order; None when the devices do not suffice."""
        return _Run(self, node_name, labels, pools, claims).run()

    def fits(self, node_name: str, labels: Mapping[str, str], pools: list[Pool],
             claims: Sequence[ResourceClaim]) -> bool:
        """Whether ``allocate`` would succeed (the Filter's question), without building the results."""
        return _Run(self, node_name, labels, pools, claims).run(results=False) is not None

    def selector(self, expression: str) -> Selector:
        selector = self._selectors.get(expression)
        if selector is None:
            selector = self._selectors[expression] = self.compile(expression)
        return selector


class _Run:
    """One ``Allocate`` call (kube's ``allocator``)."""

    def __init__(self, owner: Allocator, node_name: str, labels: Mapping[str, str], pools: list[Pool],
                 claims: Sequence[ResourceClaim]) -> None:
        self.owner = owner
        self.state = owner.state
        self.node_name = node_name
        self.labels = labels
        self.pools = pools
        self.claims = claims
        self.requests: dict[tuple[int, int, int], _Request] = {}
        self.selected_sub: dict[tuple[int, int], int] = {}
        self.constraints: list[list[_Constraint]] = [[_Constraint(c) for c in claim.constraints] for claim in claims]
        self.allocating: dict[DeviceKey, set[int]] = {}
        self.allocating_capacity: dict[DeviceKey, dict[str, Fraction]] = {}
        self.available_counters: dict[str, dict[str, dict[str, Fraction]]] = {}
        self.consumed_counters: dict[str, dict[str, dict[str, Fraction]]] = {}
        self.results: list[list[DeviceResult]] = [[] for _ in claims]
        self.matches: dict[tuple[DeviceKey, tuple[int, int, int]], bool] = {}

    # -- set-up -------------------------------------------------------------------------------

    def run(self, results: bool = True) -> list[AllocationResult] | None:
        for ci, claim in enumerate(self.claims):
            minimum = 0
            for ri, request in enumerate(claim.requests):
                if request.exactly is not None:
                    data = self._validate(ci, request.exactly, "", (ci, ri, 0))
                    self.requests[(ci, ri, 0)] = data
                    minimum += data.num_devices
                else:
                    least = math.inf
                    for si, sub in enumerate(request.first_available):
                        data = self._validate(ci, sub, request.name, (ci, ri, si))
                        self.requests[(ci, ri, si)] = data
                        least = min(least, data.num_devices)
                    minimum += int(least) if least != math.inf else 0
            if minimum > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(f"claim {claim.key}: number of requested devices {minimum} exceeds the "
                                      f"claim limit of {ALLOCATION_RESULTS_MAX_SIZE}")
        if not self._one(0, 0, 0, 0, False, (0, 0, 0)):
            for pool in self.pools:
                if pool.invalid:
                    raise AllocationError("invalid resource pools were encountered")
            return None
        if not results:
            return []
        return [self._result(ci, claim) for ci, claim in enumerate(self.claims)]

    def _validate(self, ci: int, request: ExactRequest, parent: str, key: tuple[int, int, int]) -> _Request:
        claim = self.claims[ci]
        cls = self.owner.classes.get(request.device_class)
        name = f"{parent}/{request.name}" if parent else request.name
        if cls is None:
            raise AllocationError(f"claim {claim.key}, request {name}: could not retrieve device class "
                                  f"{request.device_class}")
        data = _Request(request, parent, cls)
        if request.allocation_mode != ALLOCATION_MODE_ALL:
            data.num_devices = request.count
            return data
        data.all_devices = []
        for pool in self.pools:
            if pool.incomplete:
                raise AllocationError(f"claim {claim.key}, request {name}: asks for all devices, but resource "
                                      f"pool {pool.id} is currently being updated")
            if pool.invalid:
                raise AllocationError(f"claim {claim.key}, request {name}: asks for all devices, but resource "
                                      f"pool {pool.id} is currently invalid")
            for s in pool.slices:
                for d in s.devices:
                    if not self._selectable(key, data, s, d):
                        continue
                    dk = (s.driver, s.pool, d.name)
                    if not capacity_fits(d, request, self.state.shared.get(dk), self.allocating_capacity.get(dk)):
                        continue
                    data.all_devices.append((pool, s, d))
        data.num_devices = len(data.all_devices)
        return data

    # -- the search ---------------------------------------------------------------------------

    def _one(self, ci: int, ri: int, si: int, di: int, in_sub: bool, start: tuple[int, int, int]) -> bool:
        """``allocateOne``: place device ``di`` of request (ci, ri[, si]) and everything after it."""
        if ci >= len(self.claims):
            return True
        claim = self.claims[ci]
        if ri >= len(claim.requests):
            return self._one(ci + 1, 0, 0, 0, False, (0, 0, 0))
        data = self.requests[(ci, ri, si)]
        if not in_sub and data.parent:
            si = 0
            while (ci, ri, si) in self.requests:
                if self._one(ci, ri, si, 0, True, (0, 0, 0)):
                    self.selected_sub[(ci, ri)] = si
                    return True
                si += 1
            return False
        request = data.request
        if data.all_devices is not None and not data.all_devices:
            return False
        if di >= data.num_devices:
            return self._one(ci, ri + 1, 0, 0, False, (0, 0, 0))
        if len(self.results[ci]) + data.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE:
            return False
        key = (ci, ri, si)
        if data.all_devices is not None:
            pool, s, d = data.all_devices[di]
            undo = self._take(key, data, pool, s, d, must=True)
            if undo is None:
                return False
            if self._one(ci, ri, si, di + 1, in_sub, (0, 0, 0)):
                return True
            undo()
            return False
        for pi in range(start[0], len(self.pools)):
            pool = self.pools[pi]
            if pool.incomplete or pool.invalid:
                continue
            first_slice = start[1] if pi == start[0] else 0
            for sj in range(first_slice, len(pool.slices)):
                s = pool.slices[sj]
                first_device = start[2] if pi == start[0] and sj == start[1] else 0
                devices = s.devices
                for dj in range(first_device, len(devices)):
                    d = devices[dj]
                    dk = (s.driver, s.pool, d.name)
                    if request.admin_access:
                        if ci in self.allocating.get(dk, ()):
                            continue
                    elif dk in self.state.devices or self.allocating.get(dk):
                        continue
                    if not self._selectable(key, data, s, d):
                        continue
                    if not capacity_fits(d, request, self.state.shared.get(dk), self.allocating_capacity.get(dk)):
                        continue
                    undo = self._take(key, data, pool, s, d, must=False)
                    if undo is None:
                        continue
                    if self._one(ci, ri, si, di + 1, in_sub, (pi, sj, dj + 1)):
                        return True
                    undo()
        return False

    def _selectable(self, key: tuple[int, int, int], data: _Request, s: ResourceSlice, d: SliceDevice) -> bool:
        """``isSelectable``: the class's selectors, then the request's, then the device's own nodes."""
        if d.binding_conditions:
            return False
        dk = (s.driver, s.pool, d.name)
        memo = (dk, key)
        known = self.matches.get(memo)
        if known is not None:
            return known
        ok = (self._selectors_match(data.device_class.selectors, d, dk, f"class {data.device_class.name}")
              and self._selectors_match(data.request.selectors, d, dk, f"claim {self.claims[key[0]].key}"))
        if ok and s.per_device_node_selection:
            ok = node_matches(self.node_name, self.labels, d.node_name, d.all_nodes, d.node_selector)
        self.matches[memo] = ok
        return ok

    def _selectors_match(self, expressions: Sequence[str], d: SliceDevice, dk: DeviceKey, owner: str) -> bool:
        for i, expression in enumerate(expressions):
            try:
                selector = self.owner.selector(expression)
            except SelectorCompileError as e:
                raise AllocationError(f"{owner}: selector #{i}: CEL compile error: {e.detail}") from None
            result = selector.matches(d.cel)
            if isinstance(result, SelectorError):
                raise AllocationError(f"{owner}: selector #{i} on device {'/'.join(dk)}: {result}")
            if not result:
                return False
        return True

    def _take(self, key: tuple[int, int, int], data: _Request, pool: Pool, s: ResourceSlice, d: SliceDevice,
              must: bool):
        """``allocateDevice``: the device for this request if its state and the constraints allow; the
        undo function, or None."""
        ci = key[0]
        request = data.request
        dk = (s.driver, s.pool, d.name)
        multiple = d.allow_multiple_allocations
        if not multiple and request.admin_access and ci in self.allocating.get(dk, ()):
            return None
        if not request.admin_access and (dk in self.state.devices or self.allocating.get(dk)):
            return None
        counters_taken = False
        in_use_shared = multiple and (dk in self.state.shared_count or dk in self.allocating_capacity)
        if d.consumes_counters and not in_use_shared:
            if not self._take_counters(pool, d):
                return None
            counters_taken = True
        base, sub = (data.parent, request.name) if data.parent else (request.name, "")
        if taint_prevents(d, request):
            if counters_taken:
                self._release_counters(pool, d)
            return None
        constraints = self.constraints[ci]
        for i, c in enumerate(constraints):
            if not c.add(base, sub, s.driver, d):
                if must:
                    raise AllocationError(f"claim {self.claims[ci].key}, request {request.name}: cannot add device "
                                          f"{'/'.join(dk)} because a claim constraint would not be satisfied")
                for e in range(i):
                    constraints[e].remove(base, sub)
                if counters_taken:
                    self._release_counters(pool, d)
                return None
        if not multiple:
            self.allocating.setdefault(dk, set()).add(ci)
        consumed: dict[str, Fraction] | None = None
        share_id = ""
        if multiple:
            consumed = consumed_capacity(d, request)
            share_id = str(uuid.uuid5(_SHARE_NAMESPACE, f"{self.claims[ci].uid}/{data.name}/{'/'.join(dk)}"
                                                         f"/{len(self.results[ci])}"))
            have = self.allocating_capacity.setdefault(dk, {})
            for name, q in consumed.items():
                have[name] = have.get(name, Fraction(0)) + q
        self.results[ci].append(DeviceResult(
            request=data.name, driver=s.driver, pool=s.pool, device=d.name, admin_access=request.admin_access,
            share_id=share_id, consumed_capacity=consumed or None, tolerations=request.raw_tolerations))

        def undo() -> None:
            for c in constraints:
                c.remove(base, sub)
            if multiple:
                have = self.allocating_capacity[dk]
                for name, q in (consumed or {}).items():
                    have[name] -= q
                if not any(have.values()):
                    del self.allocating_capacity[dk]
            else:
                self.allocating[dk].discard(ci)
            if counters_taken:
                self._release_counters(pool, d)
            self.results[ci].pop()

        return undo

    # -- partitionable devices ----------------------------------------------------------------

    def _available(self, pool: Pool) -> dict[str, dict[str, Fraction]]:
        have = self.available_counters.get(pool.id)
        if have is None:
            have = {name: dict(counters) for name, counters in pool.counter_sets.items()}
            for s in pool.slices + pool.others:
                for d in s.devices:
                    if not self.state.is_allocated((s.driver, s.pool, d.name)):
                        continue
                    for set_name, counters in d.consumes_counters:
                        left = have.get(set_name, {})
                        for counter, q in counters.items():
                            if counter in left:
                                left[counter] -= q
            self.available_counters[pool.id] = have
        return have

    def _take_counters(self, pool: Pool, d: SliceDevice) -> bool:
        available = self._available(pool)
        consumed = self.consumed_counters.setdefault(pool.id, {})
        for set_name, counters in d.consumes_counters:
            taken = consumed.setdefault(set_name, {})
            for counter, q in counters.items():
                taken[counter] = taken.get(counter, Fraction(0)) + q
        for set_name, counters in available.items():
            taken = consumed.get(set_name, {})
            for counter, q in counters.items():
                if q < taken.get(counter, 0):
                    self._release_counters(pool, d)
                    return False
        return True

    def _release_counters(self, pool: Pool, d: SliceDevice) -> None:
        consumed = self.consumed_counters[pool.id]
        for set_name, counters in d.consumes_counters:
            taken = consumed[set_name]
            for counter, q in counters.items():
                taken[counter] -= q

    # -- the result ---------------------------------------------------------------------------

    def _result(self, ci: int, claim: ResourceClaim) -> AllocationResult:
        results = tuple(self.results[ci])
        config: list[dict[str, Any]] = []
        class_config: dict[str, tuple[int, int]] = {}
        chosen: dict[int, _Request] = {}
        for ri, request in enumerate(claim.requests):
            data = self.requests[(ci, ri, self.selected_sub.get((ci, ri), 0))]
            chosen[ri] = data
            cls = data.device_class
            if cls.name in class_config:
                lo, hi = class_config[cls.name]
                for i in range(lo, hi):
                    config[i]["requests"].append(data.name)
                continue
            lo = len(config)
            for c in cls.config:
                config.append({"source": "FromClass", "requests": [data.name],
                               **{k: v for k, v in c.items() if k != "requests"}})
            class_config[cls.name] = (lo, len(config))
        for c in claim.config:
            wanted = list(c.get("requests") or [])
            entry = {"source": "FromClaim", "requests": wanted, **{k: v for k, v in c.items() if k != "requests"}}
            if not wanted or any(request.name in wanted or chosen[ri].name in wanted
                                 for ri, request in enumerate(claim.requests)):
                config.append(entry)
        for entry in config:
            wanted = entry["requests"]
            if wanted and all(r.name in wanted or chosen[ri].name in wanted for ri, r in enumerate(claim.requests)):
                entry["requests"] = []
        for entry in config:
            if not entry["requests"]:
                del entry["requests"]
        node, selector, raw = self._node_selector(results)
        return AllocationResult(results, tuple(config), node, selector, raw)

    def _node_selector(self, results: Sequence[DeviceResult]) -> tuple[str, NodeSelector | None, dict | None]:
        """``createNodeSelector``: a node-local device pins the claim to this node; slices with node
        selectors add their requirements; devices for all nodes add none."""
        fields: list[dict] = []
        exprs: list[dict] = []
        slices = {(s.driver, s.pool, d.name): (s, d) for p in self.pools for s in p.slices for d in s.devices}
        for r in results:
            s, d = slices[r.key]
            name, raw = (d.node_name, d.node_selector) if s.per_device_node_selection else (s.node_name, s.node_selector)
            if name:
                return self.node_name, None, None
            raw_terms = _raw_terms(s, d)
            if raw is not None and raw_terms:
                for req in raw_terms.get("matchFields") or []:
                    if req not in fields:
                        fields.append(req)
                for req in raw_terms.get("matchExpressions") or []:
                    if req not in exprs:
                        exprs.append(req)
        if not fields and not exprs:
            return "", None, None
        term: dict[str, Any] = {}
        if exprs:
            term["matchExpressions"] = exprs
        if fields:
            term["matchFields"] = fields
        raw_selector = {"nodeSelectorTerms": [term]}
        return "", parse_node_selector(raw_selector), raw_selector


def _raw_terms(s: ResourceSlice, d: SliceDevice) -> dict | None:
    raw = d.raw_node_selector if s.per_device_node_selection else s.raw_node_selector
    terms = (raw or {}).get("nodeSelectorTerms") or []
    return terms[0] if len(terms) == 1 else None


__all__ = ["AllocatedState", "AllocationError", "Allocator", "DeviceRequest", "Pool", "gather_pools",
           "node_matches", "serves"]
