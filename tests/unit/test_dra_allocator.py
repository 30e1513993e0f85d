"""The structured allocator (scheduler/api/dra_allocator.py) on rows of Kubernetes' allocator tests
(k8s.io/dynamic-resource-allocation structured/internal/allocatortesting/allocator_testing.go), each
named by its case; driver-a, pool-1, node-1 in region-1 as there."""

from __future__ import annotations

import pytest

from vcsched.api.dra import device_class_from, resource_claim_from, resource_slice_from
from vcsched.api.dra_allocator import AllocatedState, AllocationError, Allocator, gather_pools
from vcsched.api.dra_cache import SliceIndex

DRIVER = "driver-a"
CLASS_A = "class-a"
NODE, LABELS = "node-1", {"region": "region-1"}


def cls(name: str = CLASS_A, driver: str = DRIVER) -> dict:
    return {"metadata": {"name": name}, "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}}


def dev(name: str, memory: str | None = None, **attrs) -> dict:
    d: dict = {"name": name}
    if memory:
        d["capacity"] = {"memory": {"value": memory}}
    if attrs:
        d["attributes"] = {k: ({"version": v[1:]} if isinstance(v, str) and v.startswith("v") else {"string": v})
                           for k, v in attrs.items()}
    return d


def slice_(name: str, devices: list[dict], pool: str = "pool-1", count: int = 1, node: str | None = NODE,
           selector: dict | None = None, generation: int = 1) -> dict:
    spec: dict = {"driver": DRIVER, "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
                  "devices": devices}
    if node:
        spec["nodeName"] = node
    if selector:
        spec["nodeSelector"] = selector
    return {"metadata": {"name": name}, "spec": spec}


def req(name: str, count: int = 1, *selectors: str, mode: str = "ExactCount") -> dict:
    e: dict = {"deviceClassName": CLASS_A, "allocationMode": mode}
    if mode == "ExactCount":
        e["count"] = count
    if selectors:
        e["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": e}


def claim(name: str, *requests: dict, constraints: list | None = None) -> dict:
    devices: dict = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return {"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": {"devices": devices}}


def allocate(claims: list[dict], slices: list[dict], classes: list[dict] = (cls(),)):
    parsed = {s["metadata"]["name"]: resource_slice_from(s) for s in slices}
    index = SliceIndex.build(parsed)
    pools = gather_pools(index.for_node(NODE), NODE, LABELS, index.by_pool)
    allocator = Allocator({c["metadata"]["name"]: device_class_from(c) for c in classes}, AllocatedState())
    return allocator.allocate(NODE, LABELS, pools, [resource_claim_from(c) for c in claims])


def results(allocations) -> list[list[tuple[str, str, str]]]:
    return [[(r.request, r.pool, r.device) for r in a.results] for a in allocations]


def mem(n: str) -> str:
    return f'device.capacity["{DRIVER}"].memory.compareTo(quantity("{n}")) >= 0'


def test_small_and_large_backtrack_claims():
    """"small-and-large-backtrack-claims": the large device listed first goes to the small claim, then
    must be taken back for the large one."""
    out = allocate([claim("claim-0", req("req-0", 1, mem("1Gi"))), claim("claim-1", req("req-1", 1, mem("2Gi")))],
                   [slice_("slice-1", [dev("device-2", "2Gi"), dev("device-1", "1Gi")])])
    assert results(out) == [[("req-0", "pool-1", "device-1")], [("req-1", "pool-1", "device-2")]]
    assert out[0].node == NODE  # localNodeSelector(node1)


def test_duplicate_slice():
    """"duplicate-slice": two slices of a pool of two hold the same device: the pool is invalid."""
    with pytest.raises(AllocationError, match="invalid resource pools were encountered"):
        allocate([claim("claim-0", req("req-0"))],
                 [slice_("slice-1", [dev("device-1")], count=2), slice_("slice-1-2", [dev("device-1")], count=2)])


def test_all_devices_of_the_incomplete_pool():
    """"all-devices-of-the-incomplete-pool"."""
    with pytest.raises(AllocationError, match="claim default/claim-0, request req-0: asks for all devices, but "
                                              "resource pool driver-a/pool-1 is currently being updated"):
        allocate([claim("claim-0", req("req-0", mode="All"))], [slice_("slice-1", [dev("device-1")], count=2)])


def test_network_attached_device():
    """"network-attached-device": a slice for the nodes of region-1; the allocation carries its selector."""
    selector = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "region", "operator": "In",
                                                             "values": ["region-1"]}]}]}
    out = allocate([claim("claim-0", req("req-0"))], [slice_("slice-1", [dev("device-1")], node=None, selector=selector)])
    assert results(out) == [[("req-0", "pool-1", "device-1")]]
    assert out[0].node == "" and out[0].to_api()["nodeSelector"] == selector


def test_with_constraint_for_request_retry():
    """"with-constraint-for-request-retry": device-1 satisfies req-0's version constraint alone but not the
    string attribute shared with req-1: the allocator backtracks to device-2 and device-3."""
    constraints = [{"requests": ["req-0"], "matchAttribute": f"{DRIVER}/driverVersion"},
                   {"matchAttribute": f"{DRIVER}/stringAttribute"}]
    devices = [dev("device-1", driverVersion="v1.0.0", stringAttribute="a"),
               dev("device-2", driverVersion="v2.0.0", stringAttribute="b"),
               dev("device-3", driverVersion="v3.0.0", stringAttribute="b")]
    out = allocate([claim("claim-0", req("req-0"), req("req-1"), constraints=constraints)], [slice_("slice-1", devices)])
    assert results(out) == [[("req-0", "pool-1", "device-2"), ("req-1", "pool-1", "device-3")]]


def test_too_many_devices_total():
    """"too-many-devices-total": 32 + 1 devices in one claim."""
    with pytest.raises(AllocationError, match="exceeds the claim limit"):
        allocate([claim("claim-0", req("req-0", 32), req("req-1", 1))],
                 [slice_("slice-1", [dev(f"device-{i}") for i in range(33)])])


def test_prioritized_list_with_backtracking():
    """"prioritized-list-with-backtracking": req-0's first subrequest (8Gi) would take the only 8Gi device
    that req-1 needs: the second subrequest (4Gi) is chosen."""
    first = {"name": "req-0", "firstAvailable": [
        {"name": "subreq-0", "deviceClassName": CLASS_A, "allocationMode": "ExactCount", "count": 1,
         "selectors": [{"cel": {"expression": mem("8Gi")}}]},
        {"name": "subreq-1", "deviceClassName": CLASS_A, "allocationMode": "ExactCount", "count": 1,
         "selectors": [{"cel": {"expression": mem("4Gi")}}]}]}
    out = allocate([claim("claim-0", first, req("req-1", 1, mem("8Gi")))],
                   [slice_("slice-1", [dev("device-1", "8Gi")], pool="pool-1"),
                    slice_("slice-2", [dev("device-2", "4Gi")], pool="pool-2")])
    assert results(out) == [[("req-0/subreq-1", "pool-2", "device-2"), ("req-1", "pool-1", "device-1")]]


def test_not_enough_suitable_devices():
    """"not-enough-suitable-devices": two asked, one there: no allocation, no error."""
    assert allocate([claim("claim-0", req("req-0", 2))], [slice_("slice-1", [dev("device-1")])]) is None


def test_other_node():
    """"other-node": the slice is for another node: nothing to allocate from."""
    assert allocate([claim("claim-0", req("req-0"))], [slice_("slice-1", [dev("device-1")], node="node-2")]) is None
