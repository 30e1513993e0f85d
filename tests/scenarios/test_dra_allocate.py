"""The DRA rows of Volcano's allocate action tests (pkg/scheduler/actions/allocate/allocate_test.go,
TestAllocateWithDRA) through simulate: gang and predicates (with
``predicate.DynamicResourceAllocationEnable``) in one tier, the allocate action alone."""

from .conftest import node, podgroup, queue
from .dra_fixtures import claim, claim_pod, claim_spec, device_class, exact, resource_slice

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: gang
    enableJobReady: true
    enablePredicate: true
    enableJobPipelined: true
    enableTaskOrder: true
  - name: predicates
    enablePredicate: true
    arguments:
      predicate.DynamicResourceAllocationEnable: true
"""


def cluster(class_selector: str) -> str:
    """One GPU (gpu-1, no attributes) in pool gpu-worker of n1; claim1 asks one device of class
    gpu.example.com; p1 (PodGroup pg1, Inqueue, queue c1) uses it."""
    return (node("n1", cpu="2", memory="4Gi", pods=10)
            + queue("c1")
            + device_class("gpu.example.com", class_selector)
            + resource_slice("n1-slice1", "n1", [{"name": "gpu-1"}], pool="gpu-worker")
            + claim("claim1", claim_spec([{"name": "gpu", "exactly": exact("gpu.example.com")}]), ns="c1")
            + podgroup("pg1", 1, queue="c1", ns="c1", extra="status: {phase: Inqueue}")
            + claim_pod("p1", {"gpu": ("claim", "claim1")}, cpu="1", group="pg1", ns="c1"))


def test_allocate_normal_resource_claim_successfully(simulate):
    """TestAllocateWithDRA "Allocate normal resourceClaim successfully": p1 is bound to n1."""
    code, out = simulate(cluster("device.driver == 'gpu.example.com'"), "--cycles", "1", conf=CONF)
    assert code == 0, out
    assert out["pods"]["c1/p1"]["node"] == "n1"
    assert out["claims"]["c1/claim1"]["devices"] == [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "gpu-worker", "device": "gpu-1"}]
    assert out["claims"]["c1/claim1"]["reservedFor"] == ["c1/p1"]


def test_claim_cel_runtime_errors(simulate):
    """TestAllocateWithDRA "claim cel runtime errors": the class selector fails on the device, nothing is
    bound and pg1 stays Inqueue; the pod says which selector failed on which device."""
    code, out = simulate(cluster('device.attributes["some-driver"].healthy'), "--cycles", "1", conf=CONF)
    assert code == 0, out
    assert out["pods"]["c1/p1"]["node"] is None
    assert out["podgroups"]["c1/pg1"]["phase"] == "Inqueue"
    reason = out["pods"]["c1/p1"]["reason"]
    assert "class gpu.example.com: selector #0 on device gpu.example.com/gpu-worker/gpu-1: CEL runtime error" in reason
    assert not out["claims"]["c1/claim1"]["allocated"]
