"""Why a pod's ResourceClaims cannot be allocated on a node, with numbers (``vcsched explain``, simulate's
diagnosis).

For each request (each subrequest of a ``firstAvailable`` list) of the pod's unallocated claims, over the
node's pools as the allocator gathers them: how many devices the pools have, how many the DeviceClass's
selectors accept, how many the request's selectors accept too, and how many of those are free (not held by
another claim, their capacity and taints admitting the request), beside how many the request needs.  A
selector that fails on a device is shown with its error.  Read only: it evaluates the state it is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .dra import ALLOCATION_MODE_ALL, ExactRequest, ResourceClaim
from .dra_allocator import AllocatedState, Pool, capacity_fits, gather_pools, taint_prevents
from .dra_cache import DraSnapshot
from .dra_cel import SelectorCompileError, SelectorError, compile_selector


def allocated_state(snap: DraSnapshot) -> AllocatedState:
    state = AllocatedState()
    for claim in snap.claims.values():
        if claim.allocation is not None:
            state.add(claim.allocation)
    return state


def explain_claims(claims: list[ResourceClaim], node_name: str, labels: Mapping[str, str], snap: DraSnapshot,
                   state: AllocatedState | None = None) -> list[dict[str, Any]]:
    """One entry per request of the unallocated ``claims`` on this node."""
    if state is None:
        state = allocated_state(snap)
    pools = gather_pools(snap.slices.for_node(node_name), node_name, labels, snap.slices.by_pool)
    out = []
    for claim in claims:
        if claim.allocation is not None:
            if not claim.allocation.available_on(node_name, labels):
                out.append({"claim": claim.key, "allocated": True, "availableHere": False})
            continue
        for request in claim.requests:
            for alt in request.alternatives():
                name = f"{request.name}/{alt.name}" if request.first_available else request.name
                out.append(_explain_request(claim, name, alt, pools, snap, state))
    return out


def _explain_request(claim: ResourceClaim, name: str, request: ExactRequest, pools: list[Pool], snap: DraSnapshot,
                     state: AllocatedState) -> dict[str, Any]:
    entry: dict[str, Any] = {"claim": claim.key, "request": name, "deviceClass": request.device_class,
                             "needed": "all" if request.allocation_mode == ALLOCATION_MODE_ALL else request.count}
    cls = snap.classes.get(request.device_class)
    if cls is None:
        entry["error"] = f"device class {request.device_class} does not exist"
        return entry
    entry["selectors"] = list(cls.selectors) + list(request.selectors)
    devices = of_class = matched = free = 0
    errors: list[str] = []
    for pool in pools:
        if pool.incomplete or pool.invalid:
            entry.setdefault("unusablePools", []).append(
                {"pool": pool.id, "why": "incomplete" if pool.incomplete else pool.invalid})
            continue
        for s in pool.slices:
            for d in s.devices:
                devices += 1
                if not _accepts(cls.selectors, d, errors):
                    continue
                of_class += 1
                if not _accepts(request.selectors, d, errors):
                    continue
                matched += 1
                key = (s.driver, s.pool, d.name)
                if not request.admin_access and key in state.devices:
                    continue
                if not capacity_fits(d, request, state.shared.get(key), None) or taint_prevents(d, request):
                    continue
                free += 1
    entry.update(devices=devices, ofClass=of_class, matched=matched, free=free)
    if errors:
        entry["errors"] = sorted(set(errors))[:3]
    return entry


def _accepts(expressions, device, errors: list[str]) -> bool:
    for expression in expressions:
        try:
            result = compile_selector(expression).matches(device.cel)
        except SelectorCompileError as e:
            errors.append(f"{expression}: {e.detail}")
            return False
        if isinstance(result, SelectorError):
            errors.append(f"{expression} on {device.name}: {result}")
            return False
        if not result:
            return False
    return True


def summary_line(node: str, entry: dict[str, Any]) -> str:
    """For a person: ``n1: claim default/c1 request gpu (class gpu.example.com): 8 devices, 8 of the
    class, 2 match the selectors, 0 free; 1 needed``."""
    head = f"{node}: claim {entry['claim']}"
    if entry.get("allocated"):
        return f"{head} is allocated to devices another node has"
    head += f" request {entry['request']} (class {entry['deviceClass']})"
    if "error" in entry:
        return f"{head}: {entry['error']}"
    line = (f"{head}: {entry['devices']} devices, {entry['ofClass']} of the class, {entry['matched']} match the "
            f"selectors, {entry['free']} free; {entry['needed']} needed")
    if entry.get("errors"):
        line += f"; selector error: {entry['errors'][0]}"
    return line
