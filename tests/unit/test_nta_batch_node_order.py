"""network-topology-aware's batch node order (plugins/network-topology-aware/network_topology_aware_test.go,
TestBatchNodeOrderFn), on sessions built through simulate's path as in test_network_topology_aware.py.

Go's ``ssn.BatchNodeOrderFn(parseTask(ssn.Jobs), ssn.NodeList)`` returns one map for every pod: pods of a
SubJob with a network topology are scored by the LCA tier of where the SubJob runs
(``batchNodeOrderFnForNetworkAwarePods``), the others by HyperNode bin packing faded by tier
(``batchNodeOrderFnForNormalPods``), both scaled by 100 × weight.  vcsched splits this: the first is the
plugin's registered BatchScorer (``NodeScorer``); the second is a per-node NODE_ORDER callback
(``normal_node_score``) that leaves out the terms of HyperNodes holding every node of the session (the same
for all nodes), so its scores are Go's less one constant.  Each case therefore checks, on a real session:

- the Go scores (tolerance 0.1, as Go's ``eps``) against the registered BatchScorer for network-topology
  pods, and against ``plugin.normal_scores`` (the full faded bin packing, scaled by 100 × weight) for the
  others;
- the observable callback for normal pods: ``ssn.node_order`` (the sum of the registered NODE_ORDER
  callbacks) equals the Go score less the same constant on every node, and nothing is registered at
  all when Go returns an empty map (``hypernode.binpack.normal-pod.enable: false``).

Nodes and pods carry the Go case's cpu, memory (``G``, decimal, as in Go) and ``example.com/foo``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.scenarios.conftest import node as node_manifest
from tests.scenarios.test_network_topology import THREE_TIER, GoCase, Group, Node, Pod, Policy
from tests.unit.test_network_topology_aware import open_session
from vcsched.framework.interface import Point
from vcsched.plugins.network_topology_aware import NodeScorer

EPS = 0.1
NAMES = [f"s{i}-n{j}" for i in (3, 4, 5, 6) for j in (1, 2)]


@dataclass(frozen=True)
class FooNode(Node):
    """``util.BuildNode`` with pods 10 and, when ``foo`` is set, ``example.com/foo`` allocatable."""

    foo: str = ""

    def manifest(self) -> str:
        extra = {"example.com/foo": self.foo} if self.foo else None
        return node_manifest(self.name, cpu=self.cpu, memory=self.memory, pods=10, resources=extra)


@dataclass(frozen=True)
class FooPod(Pod):
    """``util.BuildPod`` requesting ``example.com/foo`` besides cpu and memory when ``foo`` is set."""

    foo: str = ""

    def manifest(self) -> dict:
        out = super().manifest()
        if self.foo:
            out["spec"]["containers"][0]["resources"]["requests"]["example.com/foo"] = self.foo
        return out


def go_nodes(foo: bool = False) -> list[FooNode]:
    """s3: 2 cpu 4G, s4: 4 cpu 4G, s5: 2 cpu 8G, s6: 4 cpu 8G (foo 8, 8, 16, 16 when ``foo``)."""
    shape = {"s3": ("2", "4G", "8"), "s4": ("4", "4G", "8"), "s5": ("2", "8G", "16"), "s6": ("4", "8G", "16")}
    return [FooNode(n, cpu=shape[n[:2]][0], memory=shape[n[:2]][1], foo=shape[n[:2]][2] if foo else "")
            for n in NAMES]


CUSTOM = {"weight": 10, "hypernode.binpack.cpu": 1, "hypernode.binpack.memory": 4,
          "hypernode.binpack.resources": '"nvidia.com/gpu, example.com/foo"',
          "hypernode.binpack.resources.nvidia.com/gpu": 2, "hypernode.binpack.resources.example.com/foo": 3,
          "hypernode.binpack.normal-pod.enable": "true", "hypernode.binpack.normal-pod.fading": 0}


@dataclass
class BatchCase:
    case: GoCase
    arguments: dict
    expected: dict[str, float]
    allocated: str = ""  # the PodGroup's allocated-HyperNode annotation, which parseTask copies to the task


def _pair(s3: float, s4: float, s5: float, s6: float) -> dict[str, float]:
    return {n: {"s3": s3, "s4": s4, "s5": s5, "s6": s6}[n[:2]] for n in NAMES}


CASES = [
    BatchCase(GoCase(
        "score empty nodes for single task with no network topology and no hypernode-level binpacking",
        groups=[Group("pg1", 1)], pods=[FooPod("p1", {})], nodes=go_nodes(), hypernodes=THREE_TIER),
        arguments={"hypernode.binpack.normal-pod.enable": "false"}, expected={}),
    BatchCase(GoCase(
        "score empty nodes for single task with no network topology and default plugin arguments",
        groups=[Group("pg1", 1)], pods=[FooPod("p1", {})], nodes=go_nodes(), hypernodes=THREE_TIER),
        arguments={}, expected=_pair(25.8, 21.6, 19.9, 15.7)),
    BatchCase(GoCase(
        "score empty nodes for single task with no network topology and customized plugin arguments",
        groups=[Group("pg1", 1)], pods=[FooPod("p1", {}, foo="8")], nodes=go_nodes(foo=True),
        hypernodes=THREE_TIER),
        arguments=CUSTOM, expected=_pair(500.0, 468.75, 281.3, 250.0)),
    BatchCase(GoCase(
        "score non-empty nodes for single task with no network topology and customized plugin arguments",
        groups=[Group("pg1", 1)],
        pods=[FooPod("p1", {}, foo="8"), FooPod("p2", {}, node="s3-n1", foo="8"),
              FooPod("p3", {}, node="s3-n2", foo="8")],
        nodes=go_nodes(foo=True), hypernodes=THREE_TIER),
        arguments=CUSTOM, expected=_pair(0.0, 468.8, 281.3, 250.0)),
    BatchCase(GoCase(
        "score nodes for tasks with network topology",
        groups=[Group("pg1", 2, mode="hard", tier=2,
                      policies=[Policy("task1", ("volcano.sh/task-spec",), "hard", 2)])],
        pods=[FooPod("p1", {"volcano.sh/task-spec": "worker"}),
              FooPod("p2", {"volcano.sh/task-spec": "worker"}, node="s4-n1")],
        nodes=go_nodes(), hypernodes=THREE_TIER),
        arguments={}, expected=_pair(66.7, 116.7, 33.3, 33.3), allocated="s1"),
]


def pending_task(ssn, allocated: str):
    """``parseTask``: the job's pending task, given the PodGroup's allocated HyperNode."""
    (job,) = ssn.jobs.values()
    task = next(t for t in job.tasks.values() if not t.node_name)
    task.job_allocated_hypernode = allocated
    return task


@pytest.mark.parametrize("case", [pytest.param(c, id=c.case.name) for c in CASES])
def test_batch_node_order(case, monkeypatch, tmp_path):
    """TestBatchNodeOrderFn, the case named by the test id."""
    ssn = open_session(case.case, case.arguments, monkeypatch, tmp_path)
    task = pending_task(ssn, case.allocated)
    plugin = ssn.plugins["network-topology-aware"]
    scorer = NodeScorer(plugin, ssn)
    nodes = ssn.node_list
    own_node_order = [fn for fn in ssn.fns(Point.NODE_ORDER) if getattr(fn, "__self__", None) is plugin]
    if scorer.applies(task):  # a pod with a network topology: the registered batch scorer
        got = scorer.score(task, nodes)
        assert not own_node_order or all(fn(task, n) == 0.0 for fn in own_node_order for n in nodes)
    elif not plugin.normal_pods:  # Go: an empty map; vcsched registers no per-node score
        assert not own_node_order
        assert scorer.score(task, nodes) == {}
        got = {}
    else:
        got = {name: plugin._scaled(s) for name, s in plugin.normal_scores(task, nodes).items()}
        # the registered per-node callback: Go's score less one constant (the HyperNodes holding every node)
        assert own_node_order
        shift = {n.name: got[n.name] - ssn.node_order(task, n) for n in nodes}
        assert max(shift.values()) - min(shift.values()) <= 1e-9, shift
    assert len(got) == len(case.expected), got
    for name, want in case.expected.items():
        assert abs(got[name] - want) <= EPS, (name, want, got)
