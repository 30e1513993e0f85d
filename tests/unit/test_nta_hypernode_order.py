"""network-topology-aware's HyperNode order and its HyperNode resource cache
(plugins/network-topology-aware/network_topology_aware_test.go: TestHyperNodeOrderFn,
Test_initHyperNodeResourceCache), on sessions built through simulate's path (manifests → SimCluster →
Cache → Session) with ``open_session`` and the Go objects written as in tests/scenarios/test_network_topology.py.

TestHyperNodeOrderFn: the Go test calls ``ssn.HyperNodeOrderMapFn(subJob, ssn.RealNodesList)`` for the
SubJob ``ns1/pg1/task1-worker`` (here ``c1/pg1/task1-worker``: the helpers' namespace is ``c1``); here the
callback the plugin registers for ``enabledHyperNodeOrder`` is called with every HyperNode of the session
(the cluster top included, as RealNodesList has it), and its scores are checked with the Go tolerance (0.1),
and their number (8) as Go checks it.  The Go quantities are kept as written (``4G`` is 4·10⁹ bytes).

Test_initHyperNodeResourceCache: vcsched has no ``initHyperNodeResourceCache`` on a plugin built by hand;
its counterpart is the per-HyperNode usage (``HyperNodeUsage``: allocatable, used, idle, future idle) the
plugin builds at session open.  The Go test hands a bare Session 2,000 nodes whose Used is set by hand and
HyperNode names with their node sets (node ``i`` in ``hypernode-tier-t-index-(i mod n_t)``, n = 200, 40, 5,
1); here the same nodes are manifests, each with one Running pod asking what Go's Used holds, and the same
node sets are a HyperNode tree (each of those sets is the union of the sets below it, since 1 | 5 | 40 |
200), and the check is on ``plugin.usage`` after a real session opened.  Go stores its scalar by hand (10,
used 5); a manifest quantity of ``example.com/foo`` is held in milli-units as Volcano's NewResource holds
it, so the expected scalar is Go's number × 1000.  vcsched also keeps the cluster top's usage (every node):
checked too.  Go only prints the time taken; it is not asserted here (the machine is shared).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.scenarios.conftest import node as node_manifest
from tests.scenarios.test_network_topology import THREE_TIER, GoCase, Group, HN, Node, Pod, Policy
from tests.unit.test_network_topology_aware import open_session
from vcsched.framework.interface import Point
from vcsched.framework.topology import CLUSTER_TOP

EPS = 0.1
FOO = "example.com/foo"


@dataclass(frozen=True)
class ResNode(Node):
    """``util.BuildNode`` with ``pods: 10`` and the extended resources the Go case gives."""

    extended: tuple[tuple[str, str], ...] = ()

    def manifest(self) -> str:
        return node_manifest(self.name, cpu=self.cpu, memory=self.memory, pods=10, resources=dict(self.extended))


@dataclass(frozen=True)
class ResPod(Pod):
    """``util.BuildPod`` asking the extended resources the Go case gives."""

    extended: tuple[tuple[str, str], ...] = ()

    def manifest(self) -> dict:
        out = super().manifest()
        if self.extended:
            resources = out["spec"]["containers"][0]["resources"]
            resources["requests"].update(dict(self.extended))
            resources["limits"] = dict(self.extended)
        return out


# -- TestHyperNodeOrderFn -------------------------------------------------------------------------

WORKER = {"volcano.sh/task-spec": "worker"}
# BuildPodGroupWithSubGroupPolicy("pg1", ..., 2, nil, Inqueue, "hard", 2, [BuildSubGroupPolicy("task1",
# ["volcano.sh/task-spec"], "", 0)]): a hard job up to tier 2, one policy without a topology of its own
PG1 = Group("pg1", 2, mode="hard", tier=2, policies=[Policy("task1", ("volcano.sh/task-spec",))])


def _nodes(foo: dict[str, str] | None = None) -> list[ResNode]:
    shapes = {"s3": ("2", "4G"), "s4": ("4", "4G"), "s5": ("2", "8G"), "s6": ("4", "8G")}
    out = []
    for switch, (cpu, memory) in shapes.items():
        for j in (1, 2):
            name = f"{switch}-n{j}"
            extended = ((FOO, foo[name]),) if foo else ()
            out.append(ResNode(name, cpu=cpu, memory=memory, extended=extended))
    return out


@dataclass
class OrderCase:
    case: GoCase
    arguments: dict
    expected: dict[str, float]


HYPERNODE_ORDER = [
    OrderCase(
        GoCase("score hypernodes for a subjob with default plugin arguments",
               groups=[PG1],
               pods=[ResPod("p1", WORKER, cpu="4", memory="4G"), ResPod("p2", WORKER, cpu="4", memory="4G")],
               nodes=_nodes(),
               hypernodes=THREE_TIER),
        arguments={},
        expected={"s0": 25.0, "s1": 58.3, "s2": 45.8, "s3": 0.0, "s4": 100.0, "s5": 0.0, "s6": 75.0,
                  CLUSTER_TOP: 25.0}),
    OrderCase(
        GoCase("score hypernodes for a subjob with customized plugin arguments",
               groups=[PG1],
               pods=[ResPod("p1", WORKER, cpu="4", memory="4G", extended=((FOO, "8"),)),
                     ResPod("p2", WORKER, cpu="4", memory="4G", extended=((FOO, "8"),))],
               nodes=_nodes({"s3-n1": "8", "s3-n2": "0", "s4-n1": "8", "s4-n2": "0",
                             "s5-n1": "16", "s5-n2": "0", "s6-n1": "16", "s6-n2": "0"}),
               hypernodes=THREE_TIER),
        arguments={"weight": 10, "hypernode.binpack.cpu": 3, "hypernode.binpack.memory": 4,
                   "hypernode.binpack.resources": '"nvidia.com/gpu, example.com/foo"',
                   "hypernode.binpack.resources.nvidia.com/gpu": 2,
                   "hypernode.binpack.resources.example.com/foo": 3,
                   "hypernode.binpack.normal-pod.enable": "true",
                   "hypernode.binpack.normal-pod.fading": 0},
        expected={"s0": 266.7, "s1": 700.0, "s2": 450.0, "s3": 0.0, "s4": 0.0, "s5": 0.0, "s6": 800.0,
                  CLUSTER_TOP: 266.7}),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.case.name) for c in HYPERNODE_ORDER])
def test_hypernode_order(case, monkeypatch, tmp_path):
    """TestHyperNodeOrderFn, the case named by the test id: the plugin's HyperNode order callback for the
    SubJob ``task1-worker`` over every HyperNode of the session."""
    ssn = open_session(case.case, case.arguments, monkeypatch, tmp_path)
    (job,) = ssn.jobs.values()
    sub_job = job.sub_jobs["c1/pg1/task1-worker"]
    assert len(sub_job.tasks) == 2
    (order,) = ssn.fns(Point.HYPERNODE_ORDER)
    got = order(sub_job, list(ssn.topology.hypernodes))
    assert len(got) == len(case.expected), got
    for name, want in case.expected.items():
        assert abs(got[name] - want) <= EPS, (name, got)


# -- Test_initHyperNodeResourceCache --------------------------------------------------------------

NODE_NUMBER = 2000
TIER_SIZES = (200, 40, 5, 1)


def hypernode_name(tier: int, index: int) -> str:
    return f"hypernode-tier-{tier}-index-{index}"


def large_scale_case() -> GoCase:
    """2,000 nodes (100 cpu, 8000 bytes, 10 example.com/foo), each half used by one Running pod; node ``i``
    in ``hypernode-tier-t-index-(i mod n_t)`` for n = 200, 40, 5, 1 (tier 1 to 4)."""
    nodes = [ResNode(f"node-{i}", cpu="100", memory="8000", extended=((FOO, "10"),)) for i in range(NODE_NUMBER)]
    pods = [ResPod(f"used-{i}", {}, node=f"node-{i}", cpu="50", memory="4000", extended=((FOO, "5"),))
            for i in range(NODE_NUMBER)]
    hypernodes = [HN(hypernode_name(1, k), 1,
                     nodes=tuple(f"node-{i}" for i in range(k, NODE_NUMBER, TIER_SIZES[0])))
                  for k in range(TIER_SIZES[0])]
    for tier in range(2, len(TIER_SIZES) + 1):
        size, below = TIER_SIZES[tier - 1], TIER_SIZES[tier - 2]
        hypernodes += [HN(hypernode_name(tier, k), tier,
                          children=tuple(hypernode_name(tier - 1, c) for c in range(k, below, size)))
                       for k in range(size)]
    return GoCase("evaluate the time efficiency of the initHyperNodeResourceCache function in large scale",
                  groups=[Group("pg1", 1, phase="Running")], pods=pods, nodes=nodes, hypernodes=hypernodes)


def test_init_hypernode_resource_cache(monkeypatch, tmp_path):
    """Test_initHyperNodeResourceCache, case "evaluate the time efficiency of the initHyperNodeResourceCache
    function in large scale": each HyperNode's summed allocatable and used cpu, memory and example.com/foo
    are those of its 2000/n nodes (the plugin's usage after session open, vcsched's resource cache)."""
    arguments = {"weight": 10, "hypernode.binpack.cpu": 5, "hypernode.binpack.memory": 5,
                 "hypernode.binpack.resources": '"example.com/foo"',
                 "hypernode.binpack.resources.example.com/foo": 5,
                 "hypernode.binpack.normal-pod.enable": "true", "hypernode.binpack.normal-pod.fading": 0.8}
    ssn = open_session(large_scale_case(), arguments, monkeypatch, tmp_path)
    usage = ssn.plugins["network-topology-aware"].usage
    expected: dict[str, int] = {hypernode_name(t, k): NODE_NUMBER // n
                                for t, n in enumerate(TIER_SIZES, start=1) for k in range(n)}
    expected[CLUSTER_TOP] = NODE_NUMBER
    assert set(usage) == set(expected)
    milli = 1000  # a scalar quantity is held in milli-units
    for name, count in expected.items():
        status = usage[name]
        assert (status.allocatable.get("cpu"), status.allocatable.get("memory"), status.allocatable.get(FOO)) == (
            count * 100000, count * 8000, count * 10 * milli), name
        assert (status.used.get("cpu"), status.used.get("memory"), status.used.get(FOO)) == (
            count * 50000, count * 4000, count * 5 * milli), name
