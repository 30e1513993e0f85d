"""capacity's DeviceClass quotas (plugins/capacity_dra.py): Volcano's TestCapacityPluginDRA
(pkg/scheduler/plugins/capacity/capacity_test.go) case by case, and the observable rows of its
cache_dra_test.go TestBuildTaskDRAResreq (what a pod's claims are counted as), through simulate."""

import pytest

from .conftest import node, podgroup, queue
from .dra_fixtures import claim, claim_pod, claim_spec, exact

# TestCapacityPluginDRA's tiers: capacity alone, allocatable and jobEnqueued on, DRA quotas on
CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: capacity
    enabledAllocatable: true
    enabledJobEnqueued: true
    arguments:
      capacity.DynamicResourceAllocationEnable: true
"""


def dra_queue(name: str, capability: dict[str, int]) -> str:
    caps = ", ".join(f'"deviceclass/{cls}": "{n}"' for cls, n in capability.items())
    return queue(name, extra=f"  capability: {{{caps}}}")


def dra_pod(name: str, queue_name: str, device_class: str, count: int, ns: str = "ns1") -> str:
    """``buildDRAPodAndClaim``: a pod of task role worker in its own Inqueue PodGroup (minTaskMember
    worker: 1) with one claim asking ``count`` devices of ``device_class``."""
    group = podgroup(f"{name}-pg", 1, queue=queue_name, ns=ns,
                     extra="  minTaskMember: {worker: 1}\nstatus: {phase: Inqueue}")
    return (group + claim(f"{name}-claim", claim_spec([{"name": "req-1", "exactly": exact(device_class, count)}]), ns=ns)
            + claim_pod(name, {"claim-1": ("claim", f"{name}-claim")}, cpu="1", group=f"{name}-pg", ns=ns,
                        meta={"annotations": {"volcano.sh/task-spec": "worker"}}))


N1 = node("n1", cpu="10", memory="10Gi", pods=10)


def bound(out) -> dict[str, str]:
    return {k: p["node"] for k, p in out["pods"].items() if p["node"]}


@pytest.mark.parametrize("case, manifests, binds", [
    ("Case 1: DRA Request within quota",
     dra_queue("q1", {"gpu.com": 2}) + dra_pod("p1", "q1", "gpu.com", 1), {"ns1/p1": "n1"}),
    ("Case 2: DRA Request exceeds quota",
     dra_queue("q2", {"gpu.com": 1}) + dra_pod("p2", "q2", "gpu.com", 2), {}),
    ("Case 3: Multiple Device Classes and Mixed Success/Failure",
     dra_queue("q3", {"gpu.com": 1, "nic.com": 1}) + dra_pod("p3-1", "q3", "gpu.com", 1)
     + dra_pod("p3-2", "q3", "nic.com", 1) + dra_pod("p3-3", "q3", "gpu.com", 1),
     {"ns1/p3-1": "n1", "ns1/p3-2": "n1"}),
    ("Case 4: Pass-through for unconfigured DeviceClass",
     dra_queue("q4", {"gpu.com": 1}) + dra_pod("p4-1", "q4", "gpu.com", 1) + dra_pod("p4-2", "q4", "nic.com", 100),
     {"ns1/p4-1": "n1", "ns1/p4-2": "n1"}),
    ("Case 5: Job Enqueue DRA Check rejects oversize job",
     dra_queue("q5", {"gpu.com": 1}) + dra_pod("p5-1", "q5", "gpu.com", 2), {}),
])
def test_capacity_plugin_dra(simulate, case, manifests, binds):
    """TestCapacityPluginDRA, each case by its name."""
    code, out = simulate(N1 + manifests, "--cycles", "1", conf=CONF)
    assert code == 0, out
    assert bound(out) == binds, case


def test_without_the_argument_device_classes_are_not_counted(simulate):
    """The same oversize request as Case 2 goes through when capacity's DRA quotas are off."""
    conf = CONF.replace("true\n    arguments", "true\n    arguments").replace(
        "capacity.DynamicResourceAllocationEnable: true", "capacity.DynamicResourceAllocationEnable: false")
    code, out = simulate(N1 + dra_queue("q2", {"gpu.com": 1}) + dra_pod("p2", "q2", "gpu.com", 2),
                         "--cycles", "1", conf=conf)
    assert code == 0
    assert bound(out) == {"ns1/p2": "n1"}


def test_a_shared_claim_is_charged_once(simulate):
    """TestSharedResourceClaimIsChargedOnce: two pods of one queue naming the same claim of 2 GPUs fit a
    capability of 2; a third pod with its own claim does not."""
    shared = claim("shared", claim_spec([{"name": "req-1", "exactly": exact("gpu.com", 2)}]), ns="ns1")
    pods = "".join(
        podgroup(f"{n}-pg", 1, queue="q1", ns="ns1", extra="status: {phase: Inqueue}")
        + claim_pod(n, {"c": ("claim", "shared")}, group=f"{n}-pg", ns="ns1") for n in ("a", "b"))
    third = dra_pod("c", "q1", "gpu.com", 1)
    code, out = simulate(N1 + dra_queue("q1", {"gpu.com": 2}) + shared + pods + third, "--cycles", "1", conf=CONF)
    assert code == 0, out
    assert bound(out) == {"ns1/a": "n1", "ns1/b": "n1"}


def test_count_multiplies_consumable_capacity(simulate):
    """TestBuildTaskDRAResreq "Count multiplies consumable capacity": 2 devices × 16Gi count as 32Gi of
    memory.deviceclass/gpu.com, over a capability of 30Gi."""
    ask = {"name": "req-1", "exactly": exact("gpu.com", 2, capacity={"requests": {"memory": "16Gi"}})}
    q = queue("q1", extra='  capability: {"deviceclass/gpu.com": "4", "memory.deviceclass/gpu.com": "30Gi"}')
    group = podgroup("p-pg", 1, queue="q1", ns="ns1", extra="status: {phase: Inqueue}")
    manifests = (N1 + q + group + claim("cap", claim_spec([ask]), ns="ns1")
                 + claim_pod("p", {"c": ("claim", "cap")}, group="p-pg", ns="ns1"))
    code, out = simulate(manifests, "--cycles", "1", conf=CONF)
    assert code == 0
    assert bound(out) == {}
    code, out = simulate(manifests.replace('"30Gi"', '"32Gi"'), "--cycles", "1", conf=CONF)
    assert code == 0
    assert bound(out) == {"ns1/p": "n1"}


def test_mixed_device_classes_are_counted_apart(simulate):
    """TestBuildTaskDRAResreq "Mixed device classes": one claim asking a GPU and a NIC is held to each
    class's capability."""
    both = claim("both", claim_spec([{"name": "req1", "exactly": exact("gpu.com", 1)},
                                     {"name": "req2", "exactly": exact("nic.com", 2)}]), ns="ns1")
    group = podgroup("p-pg", 1, queue="q1", ns="ns1", extra="status: {phase: Inqueue}")
    pod = claim_pod("p", {"c": ("claim", "both")}, group="p-pg", ns="ns1")
    for nic, expected in ((1, {}), (2, {"ns1/p": "n1"})):
        code, out = simulate(N1 + dra_queue("q1", {"gpu.com": 1, "nic.com": nic}) + both + group + pod,
                             "--cycles", "1", conf=CONF)
        assert code == 0
        assert bound(out) == expected


def test_an_unresolved_template_claim_keeps_the_pod_waiting(simulate):
    """TestBuildTaskDRAResreq "Unresolved ResourceClaimTemplate returns pending error" and
    TestAddPodWithUnresolvedResourceClaimTemplateCachesTaskForResync: a pod whose template claim does not
    exist yet is not scheduled, and says why (with DRA in predicates)."""
    conf = CONF.replace("    arguments:\n", "    arguments:\n").rstrip() + "\n  - name: predicates\n"
    manifests = (N1 + dra_queue("q1", {"gpu.com": 1})
                 + podgroup("p-pg", 1, queue="q1", ns="ns1", extra="status: {phase: Inqueue}")
                 + claim_pod("p", {"c": ("template", "missing")}, group="p-pg", ns="ns1"))
    code, out = simulate(manifests, "--cycles", "1", conf=conf)
    assert code == 0, out
    assert out["pods"]["ns1/p"]["node"] is None
    assert "waiting for the resourceclaim controller to create the ResourceClaim" in out["pods"]["ns1/p"]["reason"]


def test_queue_status_counts_device_classes_and_a_shared_claim_once(simulate):
    """framework/session_dra_queue_status.go (TestAddTaskDRAAllocatedByQueueDeduplicatesSharedClaims,
    TestMergeDRAAllocatedIntoResourceList): a queue's status.allocated carries deviceclass/<class> and
    <dimension>.deviceclass/<class> beside the resources, a claim shared by two pods counted once, summed
    into root."""
    from .dra_fixtures import device_class, gpu, resource_slice

    shared_dev = gpu("gpu-0", extra='{"allowMultipleAllocations": true}')
    ask = {"name": "req-1", "exactly": exact("gpu.com", 1, capacity={"requests": {"memory": "8Gi"}})}
    manifests = (node("n1", cpu="10", memory="10Gi", pods=10) + queue("q1") + device_class("gpu.com")
                 + resource_slice("n1-gpus", "n1", [shared_dev, gpu("gpu-1")], driver="gpu.com")
                 + claim("shared", claim_spec([ask]), ns="ns1")
                 + "".join(podgroup(f"{n}-pg", 1, queue="q1", ns="ns1")
                           + claim_pod(n, {"c": ("claim", "shared")}, group=f"{n}-pg", ns="ns1") for n in ("a", "b")))
    conf = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: predicates
  - name: proportion
"""
    code, out = simulate(manifests, conf=conf)
    assert code == 0, out
    assert bound(out) == {"ns1/a": "n1", "ns1/b": "n1"}
    allocated = out["queues"]["q1"]["allocated"]
    assert allocated["deviceclass/gpu.com"] == "1"
    assert allocated["memory.deviceclass/gpu.com"] == "8Gi"
    assert out["queues"]["root"]["allocated"]["deviceclass/gpu.com"] == "1"
