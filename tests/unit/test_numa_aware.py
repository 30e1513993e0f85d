"""The numa-aware plugin's pure parts against Volcano's own unit tests: the topology policies
(plugins/numaaware/policy/*_test.go), the CPU manager's hints and CPU choice
(provider/cpumanager/cpu_mng_test.go), and the ledger that holds placed pods' CPUs until the resource
exporter lists them (api/node_info.go · RefreshNumaSchedulerInfoByCrd).  Placements end to end are in
tests/scenarios/test_numa_aware.py."""

from __future__ import annotations

import pytest

from vcsched.api.numa_info import (
    CpuInfo,
    CpuTopology,
    NumaLedger,
    NumaTopology,
    PodMeta,
    format_cpuset,
    iter_numa_masks,
    parse_cpuset,
)
from vcsched.plugins import numa_aware_cpus as cpus
from vcsched.plugins import numa_aware_policy as policy
from vcsched.plugins.numa_aware import pod_qos_class


def mask(*numa: int) -> int:
    m = 0
    for n in numa:
        m |= 1 << n
    return m


def cpuset(*ids: int) -> int:
    return mask(*ids)


# -- policy/*_test.go ------------------------------------------------------------------------------
# Every case gives two providers, "cpu" and "gpu", each a list of hints; the node has NUMA nodes 0 and 1.

CPU_GPU_CASES = {
    "test-1": ([(mask(0, 1), False), (mask(0), True)], [(mask(0, 1), False), (mask(0), True)]),
    "test-2": ([(mask(0, 1), False), (mask(1), True)], [(mask(0, 1), False), (mask(1), True)]),
    "test-3": ([(mask(0, 1), False), (mask(0), True), (mask(1), True)],
               [(mask(0, 1), False), (mask(0), True), (mask(1), True)]),
    "test-4": ([(mask(0, 1), False), (mask(0), True)], [(mask(0, 1), False), (mask(1), True)]),
    "test-5": ([(mask(0, 1), False), (mask(0), True)], [(mask(0, 1), True)]),
    "test-6": ([(mask(0, 1), True)], [(mask(0, 1), True)]),
}


def _providers(case: str) -> list[policy.ProviderHints]:
    cpu_hints, gpu_hints = CPU_GPU_CASES[case]
    return [{"cpu": cpu_hints}, {"gpu": gpu_hints}]


@pytest.mark.parametrize("case, expect", [
    ("test-1", (mask(0), True)), ("test-2", (mask(1), True)), ("test-3", (mask(0), True)),
    ("test-4", (mask(0), False)), ("test-5", (mask(0), True)), ("test-6", (mask(0, 1), True)),
])
def test_best_effort_predicate(case, expect):
    """Test_best_effort_predicate, each case by name; best-effort admits every one."""
    assert policy.predicate(policy.BEST_EFFORT, [0, 1], _providers(case)) == (expect, True)


@pytest.mark.parametrize("case, expect", [
    ("test-1", (mask(0), True)), ("test-2", (mask(1), True)), ("test-3", (mask(0), True)),
    ("test-4", (mask(0), False)), ("test-5", (mask(0), True)), ("test-6", (mask(0, 1), True)),
])
def test_restricted_predicate(case, expect):
    """Test_restricted_predicate, each case by name; restricted admits only a preferred best hint."""
    assert policy.predicate(policy.RESTRICTED, [0, 1], _providers(case)) == (expect, expect[1])


@pytest.mark.parametrize("case, expect", [
    ("test-1", (mask(0), True)), ("test-2", (mask(1), True)), ("test-3", (mask(0), True)),
    ("test-4", (mask(0, 1), False)), ("test-5", (mask(0, 1), False)),
])
def test_single_numa_node_predicate(case, expect):
    """Test_single_numa_node_predicate, each case by name: only one-NUMA preferred hints count, so
    test-4 and test-5 fall back to both NUMA nodes, not preferred, and are refused."""
    assert policy.predicate(policy.SINGLE_NUMA_NODE, [0, 1], _providers(case)) == (expect, expect[1])


def test_none_predicate():
    """Test_none_predicate test-1: no hint (the zero TopologyHint), admitted."""
    assert policy.predicate(policy.NONE, [0, 1], []) == ((None, False), True)


def test_an_unknown_policy_behaves_as_none():
    """GetPolicy's default: a topology policy Volcano does not know is policyNone."""
    assert policy.predicate("bogus", [0, 1], _providers("test-1")) == ((None, False), True)


def test_no_preference_and_no_placement():
    """filterProvidersHints: a provider without preference is a preferred any-NUMA hint (all NUMA nodes
    win); a resource that fits nowhere is a non-preferred one."""
    assert policy.predicate(policy.RESTRICTED, [0, 1], [None]) == ((mask(0, 1), True), True)
    assert policy.predicate(policy.RESTRICTED, [0, 1], [{"cpu": []}]) == ((mask(0, 1), False), False)
    assert policy.predicate(policy.BEST_EFFORT, [0, 1], [{"cpu": []}]) == ((mask(0, 1), False), True)


# -- provider/cpumanager/cpu_mng_test.go ------------------------------------------------------------
# Two sockets, one NUMA node each, two cores of two threads per socket: CPUs 0-3 on NUMA 0, 4-7 on NUMA 1.

CPU_DETAIL = {
    0: CpuInfo(0, 0, 0), 1: CpuInfo(0, 0, 0), 2: CpuInfo(0, 0, 1), 3: CpuInfo(0, 0, 1),
    4: CpuInfo(1, 1, 2), 5: CpuInfo(1, 1, 2), 6: CpuInfo(1, 1, 3), 7: CpuInfo(1, 1, 3),
}


def numa_info(reserved: int | None = None) -> NumaTopology:
    return NumaTopology("n", {}, {}, {}, CpuTopology(CPU_DETAIL), reserved)


def container(n: int) -> cpus.ContainerCpu:
    return cpus.ContainerCpu("c", True, n)


@pytest.mark.parametrize("case, request_, free, expect", [
    ("test-1", 4, cpuset(*range(8)), [(mask(0), True), (mask(1), True), (mask(0, 1), False)]),
    ("test-2", 4, cpuset(*range(1, 8)), [(mask(1), True), (mask(0, 1), False)]),
    ("test-3", 5, cpuset(*range(8)), [(mask(0, 1), True)]),
    ("test-4", 8, cpuset(*range(8)), [(mask(0, 1), True)]),
    ("test-5", 9, cpuset(*range(8)), []),
    ("test-6", 4, cpuset(2, 3, 4, 5), [(mask(0, 1), False)]),
])
def test_get_topology_hints(case, request_, free, expect):
    """Test_GetTopologyHints, each case by name."""
    assert cpus.cpu_hints(container(request_), numa_info(), {"cpu": free}) == {"cpu": expect}


@pytest.mark.parametrize("case, request_, free, best, expect", [
    ("test-1", 4, cpuset(*range(8)), (mask(0), True), cpuset(0, 1, 2, 3)),
    ("test-2", 4, cpuset(*range(1, 8)), (mask(1), True), cpuset(4, 5, 6, 7)),
    ("test-3", 5, cpuset(*range(8)), (mask(0, 1), True), cpuset(0, 1, 2, 3, 4)),
    ("test-4", 5, cpuset(*range(1, 8)), (mask(0, 1), True), cpuset(1, 4, 5, 6, 7)),
    ("test-5", 8, cpuset(*range(1, 8)), (mask(0, 1), True), cpuset()),
])
def test_allocate(case, request_, free, best, expect):
    """Test_Allocate, each case by name (test-5: eight CPUs asked of seven, none given)."""
    assert cpus.allocate(container(request_), best, numa_info(), {"cpu": free}) == {"cpu": expect}


def test_hints_without_a_whole_cpu_request_have_no_preference():
    """GetTopologyHints: no CPU request, or one that is not a whole number of CPUs, gives no hints
    (nil: the policy takes any NUMA node)."""
    assert cpus.cpu_hints(cpus.ContainerCpu("c", False, 0), numa_info(), {"cpu": cpuset(0)}) is None
    assert cpus.cpu_hints(cpus.ContainerCpu("c", True, 0), numa_info(), {"cpu": cpuset(0)}) is None
    assert cpus.cpu_hints(container(1), numa_info(), {}) is None


def test_reserved_cpus_are_never_offered():
    """resReserved cpu: the CPU manager keeps back ceil(cpu) CPUs taken by topology from all CPUs (a
    whole core here: 0 and 1), so four CPUs no longer fit NUMA node 0."""
    topo = numa_info(reserved=2)
    assert cpus.cpu_hints(container(4), topo, {"cpu": cpuset(*range(8))}) == {
        "cpu": [(mask(1), True), (mask(0, 1), False)]}
    assert cpus.allocate(container(2), (mask(0), True), topo, {"cpu": cpuset(*range(8))}) == {"cpu": cpuset(2, 3)}


# -- CPU sets and the ledger --------------------------------------------------------------------------


def test_cpuset_text():
    """cpuset.Parse and String: ranges and single CPUs, empty text, Go's errors."""
    assert parse_cpuset("0-3,8,10-11") == cpuset(0, 1, 2, 3, 8, 10, 11)
    assert parse_cpuset("") == 0
    assert format_cpuset(cpuset(0, 1, 2, 3, 8, 10, 11)) == "0-3,8,10-11"
    for bad in ("3-1", "a", "1,,2", "-1", "1-", "0-70000"):
        with pytest.raises(ValueError):
            parse_cpuset(bad)


def test_numa_masks_in_kubelets_order():
    """bitmask.IterateBitMasks: by size, then lexicographically."""
    assert iter_numa_masks([0, 1, 2]) == [mask(0), mask(1), mask(2), mask(0, 1), mask(0, 2), mask(1, 2),
                                         mask(0, 1, 2)]


def test_the_ledger_holds_cpus_until_the_exporter_lists_every_pod():
    """RefreshNumaSchedulerInfoByCrd: while one placed pod is not in podAllocations, everything the
    ledger holds on the node stays taken; once all are listed, the node's entries go."""
    a, b = PodMeta("uid-a", "a", "ns"), PodMeta("uid-b", "b", "ns")
    ledger = NumaLedger()
    ledger.add("n", a, {"cpu": cpuset(0, 1)})
    ledger.add("n", b, {"cpu": cpuset(4, 5)})
    listed_a = NumaTopology("n", {}, {"cpu": cpuset(*range(8))}, {}, CpuTopology(CPU_DETAIL), None, (a,))
    assert ledger.free_sets("n", listed_a) == {"cpu": cpuset(2, 3, 6, 7)}
    both = NumaTopology("n", {}, {"cpu": cpuset(2, 3, 6, 7)}, {}, CpuTopology(CPU_DETAIL), None,
                        (PodMeta("", "a", "ns"), PodMeta("uid-b", "", "")))  # by name, by uid
    assert ledger.free_sets("n", both, refresh=False) == {"cpu": cpuset(2, 3, 6, 7)}
    assert ledger.nodes
    assert ledger.free_sets("n", both) == {"cpu": cpuset(2, 3, 6, 7)}
    assert not ledger.nodes


def test_the_ledger_forgets_pods_that_are_gone():
    """clearUnassignedNumaTask: a deleted pod holds nothing."""
    ledger = NumaLedger()
    ledger.add("n", PodMeta("uid-a", "a", "ns"), {"cpu": cpuset(0)})
    ledger.add("n", PodMeta("uid-b", "b", "ns"), {"cpu": cpuset(1)})
    ledger.forget_missing({"uid-b"})
    assert list(ledger.nodes["n"]) == [PodMeta("uid-b", "b", "ns")]
    ledger.forget_missing(set())
    assert ledger.nodes == {}


# -- QoS ------------------------------------------------------------------------------------------------


def _pod(*containers: dict, init: tuple = (), qos: str | None = None) -> dict:
    pod = {"spec": {"containers": [{"name": f"c{i}", "resources": r} for i, r in enumerate(containers)],
                    "initContainers": [{"name": "i", "resources": r} for r in init]}}
    if qos:
        pod["status"] = {"qosClass": qos}
    return pod


def test_pod_qos_class():
    """GetPodQOS: status.qosClass first; Guaranteed needs CPU and memory limits on every container and
    requests equal to them; nothing asked is BestEffort."""
    full = {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}
    assert pod_qos_class(_pod(full)) == "Guaranteed"
    assert pod_qos_class(_pod(full, full)) == "Guaranteed"
    assert pod_qos_class(_pod({"requests": {"cpu": "2000m", "memory": "1Gi"},
                               "limits": {"cpu": "2", "memory": "1024Mi"}})) == "Guaranteed"
    assert pod_qos_class(_pod(full, {"requests": {"cpu": "1"}})) == "Burstable"
    assert pod_qos_class(_pod({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}})) \
        == "Burstable"
    assert pod_qos_class(_pod(full, init=({"limits": {"cpu": "1"}, "requests": {"cpu": "1"}},))) == "Burstable"
    assert pod_qos_class(_pod({})) == "BestEffort"
    assert pod_qos_class(_pod(full, qos="Burstable")) == "Burstable"


# -- the cache ------------------------------------------------------------------------------------------


def test_the_cache_keeps_a_numatopology_it_can_read_and_drops_one_it_cannot():
    """addNumaInfo: a Numatopology is the node's topology by name; one Volcano could not hold (a NUMA id
    above 63) is logged and leaves the node without one; a malformed allocatable set is empty and a
    refused resReserved reserves nothing, as Volcano's cache reads them."""
    from vcsched.cache import Cache

    def topo(numa: int = 1, allocatable: str = "0-1", reserved: dict | None = None) -> dict:
        return {"metadata": {"name": "n", "resourceVersion": "1"},
                "spec": {"policies": {"CPUManagerPolicy": "static"},
                         "cpuDetail": {"0": {"numa": 0}, "1": {"numa": numa}},
                         "numares": {"cpu": {"allocatable": allocatable, "capacity": 2}},
                         "resReserved": reserved or {}}}

    cache = Cache()
    cache.add_numatopology(topo())
    assert cache.numatopologies["n"].allocatable == {"cpu": cpuset(0, 1)}
    assert cache.numatopologies["n"].topology.numa_nodes == [0, 1]
    bad = topo(numa=64)
    bad["metadata"]["resourceVersion"] = "2"
    cache.update_numatopology(bad)
    assert "n" not in cache.numatopologies
    odd = topo(allocatable="1-0", reserved={"cpu": "x"})
    odd["metadata"]["resourceVersion"] = "3"
    cache.update_numatopology(odd)
    assert cache.numatopologies["n"].allocatable == {"cpu": 0}
    assert cache.numatopologies["n"].reserved_cpus is None
    cache.delete_numatopology("n")
    assert cache.snapshot().numatopologies == {}
