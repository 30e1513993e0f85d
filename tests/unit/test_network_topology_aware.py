"""network-topology-aware's scores and gradients (plugins/network-topology-aware/network_topology_aware_test.go),
on sessions built through simulate's path (manifests → SimCluster → Cache → Session) with the Go cases'
HyperNodes, PodGroups and pods written as in tests/scenarios/test_network_topology.py.

TestNetworkTopologyAwareNodeScore_Hard and _Soft: the batch node score of the job's first pending task,
its job's allocated HyperNode given as the Go test gives it (``parseTask`` copies the PodGroup's
annotation onto the task), with the Go tolerance (0.1).  The Go cases write ``highestTierAllowed: 0`` in
hard mode, which simulate refuses (no tier 0 exists); the session is built with that check off, as
Kubernetes mode would take the object.  TestReverseAndCapEvictionGradients: the eviction order and cap.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from tests.scenarios.test_network_topology import (NODES8, THREE_TIER, GoCase, Group, HN, Pod, nodes)
from vcsched.cache import Cache
from vcsched.conf import parse_conf
from vcsched.framework.arguments import Arguments
from vcsched.framework.registry import plugin_classes
from vcsched.framework.session import SchedulerState, Session
from vcsched.framework.topology import PURPOSE_EVICT, SessionHyperNode
from vcsched.plugins.network_topology_aware import NetworkTopologyAwarePlugin, NodeScorer
from vcsched.sim.cluster import SimCluster
from vcsched.sim.manifests import load_manifests

EPS = 0.1


class ScoreCase:
    def __init__(self, case: GoCase, arguments: dict, allocated: str, score_nodes: list[str],
                 expected: dict[str, float]) -> None:
        self.case, self.arguments, self.allocated = case, arguments, allocated
        self.score_nodes, self.expected = score_nodes, expected


def open_session(case: GoCase, arguments: dict, monkeypatch, tmp_path) -> Session:
    monkeypatch.setattr(SimCluster, "_check_topology_tiers", lambda *args: None)
    path = tmp_path / "cluster.yaml"
    path.write_text(case.manifests())
    created = datetime(2026, 1, 1, tzinfo=timezone.utc)
    cluster = SimCluster.from_manifests(load_manifests([str(path)], created=created), ("volcano",),
                                        created.timestamp())
    cache = Cache(("volcano",))
    cluster.feed(cache)
    args = ", ".join(f"{k}: {v}" for k, v in arguments.items())
    conf = parse_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: network-topology-aware\n'
                      f"    arguments: {{{args}}}\n")
    ssn = Session(cache.snapshot(), conf, plugin_classes(), SchedulerState(), now=created.timestamp(), uid="t")
    ssn.open()
    return ssn


NODE_SCORE_HARD = [
    ScoreCase(
        GoCase(
        'Tasks in job first scheduler, score all nodes zero',
        groups=[Group('pg1', 1, mode='hard', tier=0)],
        pods=[Pod('p4', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES8,
        hypernodes=THREE_TIER,
        binds=0),
        arguments={'weight': 1}, allocated='',
        score_nodes=['s3-n1', 's4-n1', 's5-n1'],
        expected={'s3-n1': 0.0, 's4-n1': 0.0, 's5-n1': 0.0}),
    ScoreCase(
        GoCase(
        'Tasks in job rescheduled, score zero when the hyperNode of node has empty LCA hyperNode with jobAllocatedHyperNode',
        groups=[Group('pg1', 1, mode='hard', tier=0)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s3-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s3-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES8,
        hypernodes=[HN('s0', 3, children=('s1',)), HN('s1', 2, children=('s3', 's4')), HN('s2', 2, children=('s5', 's6')), HN('s3', 1, nodes=('s3-n1', 's3-n2')), HN('s4', 1, nodes=('s4-n1', 's4-n2')), HN('s5', 1, nodes=('s5-n1', 's5-n2')), HN('s6', 1, nodes=('s6-n1', 's6-n2'))],
        binds=0),
        arguments={'weight': 1}, allocated='s3',
        score_nodes=['s5-n1', 's6-n1'],
        expected={'s5-n1': 0.0, 's6-n1': 0.0}),
    ScoreCase(
        GoCase(
        'Tasks in job rescheduled, score nodes according to node hypernode LCA hyperNode tier',
        groups=[Group('pg1', 1, mode='hard', tier=0)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s3-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s3-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES8,
        hypernodes=THREE_TIER,
        binds=0),
        arguments={'weight': 1}, allocated='s3',
        score_nodes=['s3-n1', 's4-n1', 's5-n1'],
        expected={'s3-n1': 100.0, 's4-n1': 66.6, 's5-n1': 33.3}),
    ScoreCase(
        GoCase(
        'Tasks in job rescheduled, score hyperNodes according to node LCA hyperNode tier of the hyperNode and jobAllocatedHyperNode when hyperNodesInfo has two tier',
        groups=[Group('pg1', 1, mode='hard', tier=0)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s1-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'})],
        nodes=nodes('s1-n1', 's1-n2', 's2-n1', 's2-n2'),
        hypernodes=[HN('s0', 2, children=('s1', 's2')), HN('s1', 1, nodes=('s1-n1', 's1-n2')), HN('s2', 1, nodes=('s2-n1', 's2-n2'))],
        binds=0),
        arguments={'weight': 1}, allocated='s1',
        score_nodes=['s1-n1', 's2-n1'],
        expected={'s1-n1': 100.0, 's2-n1': 50.0}),
    ScoreCase(
        GoCase(
        'Tasks in job rescheduled, score hyperNodes according to node LCA hyperNode tier of the hyperNode and jobAllocatedHyperNode when hyperNodesInfo has one tier',
        groups=[Group('pg1', 1, mode='hard', tier=0)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s1-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'})],
        nodes=nodes('s1-n1', 's1-n2', 's2-n1', 's2-n2'),
        hypernodes=[HN('s1', 1, nodes=('s1-n1', 's1-n2')), HN('s2', 1, nodes=('s2-n1', 's2-n2'))],
        binds=0),
        arguments={'weight': 1}, allocated='s1',
        score_nodes=['s1-n1', 's2-n1'],
        expected={'s1-n1': 100.0, 's2-n1': 0.0}),
    ScoreCase(
        GoCase(
        'Tasks in job rescheduled, score hyperNodes according to node LCA hyperNode tier of the hyperNode and jobAllocatedHyperNode with plugin weight 2',
        groups=[Group('pg1', 1, mode='hard', tier=0)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s3-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s3-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES8,
        hypernodes=THREE_TIER,
        binds=0),
        arguments={'weight': 2}, allocated='s3',
        score_nodes=['s3-n1', 's4-n1', 's5-n1'],
        expected={'s3-n1': 200.0, 's4-n1': 133.3, 's5-n1': 66.6}),
    ScoreCase(
        GoCase(
        'Tasks in job rescheduled, score hyperNodes according to node LCA hyperNode tier and task num of the hyperNode when there are at least two hyperNodes have max hyperNode tier score',
        groups=[Group('pg1', 3, mode='hard', tier=0)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s3-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s3-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'}, node='s4-n1'),
              Pod('p4', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES8,
        hypernodes=THREE_TIER,
        binds=0),
        arguments={'weight': 1}, allocated='s1',
        score_nodes=['s3-n1', 's4-n1', 's5-n1'],
        expected={'s3-n1': 116.6, 's4-n1': 91.6, 's5-n1': 33.3}),
]

NODE_SCORE_SOFT = [
    ScoreCase(
        GoCase(
        'Tasks in job first scheduler, score all nodes zero',
        groups=[Group('pg1', 1, mode='soft', tier=0)],
        pods=[Pod('p4', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES8,
        hypernodes=THREE_TIER,
        binds=0),
        arguments={'weight': 1}, allocated='',
        score_nodes=['s3-n1', 's4-n1', 's5-n1'],
        expected={'s3-n1': 0.0, 's4-n1': 0.0, 's5-n1': 0.0}),
    ScoreCase(
        GoCase(
        'Tasks in job rescheduled, score zero when the hyperNode of node has empty LCA hyperNode with jobAllocatedHyperNode',
        groups=[Group('pg1', 1, mode='soft', tier=0)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s3-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s3-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES8,
        hypernodes=[HN('s0', 3, children=('s1',)), HN('s1', 2, children=('s3', 's4')), HN('s2', 2, children=('s5', 's6')), HN('s3', 1, nodes=('s3-n1', 's3-n2')), HN('s4', 1, nodes=('s4-n1', 's4-n2')), HN('s5', 1, nodes=('s5-n1', 's5-n2')), HN('s6', 1, nodes=('s6-n1', 's6-n2'))],
        binds=0),
        arguments={'weight': 1}, allocated='s3',
        score_nodes=['s5-n1', 's6-n1'],
        expected={'s5-n1': 0.0, 's6-n1': 0.0}),
    ScoreCase(
        GoCase(
        'Tasks in job rescheduled, score nodes according to node hypernode LCA hyperNode tier',
        groups=[Group('pg1', 1, mode='soft', tier=0)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s3-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s3-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES8,
        hypernodes=THREE_TIER,
        binds=0),
        arguments={'weight': 1}, allocated='s3',
        score_nodes=['s3-n1', 's4-n1', 's5-n1'],
        expected={'s3-n1': 100.0, 's4-n1': 66.6, 's5-n1': 33.3}),
    ScoreCase(
        GoCase(
        'Tasks in job rescheduled, score hyperNodes according to node LCA hyperNode tier of the hyperNode and jobAllocatedHyperNode when hyperNodesInfo has two tier',
        groups=[Group('pg1', 1, mode='soft', tier=0)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s1-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'})],
        nodes=nodes('s1-n1', 's1-n2', 's2-n1', 's2-n2'),
        hypernodes=[HN('s0', 2, children=('s1', 's2')), HN('s1', 1, nodes=('s1-n1', 's1-n2')), HN('s2', 1, nodes=('s2-n1', 's2-n2'))],
        binds=0),
        arguments={'weight': 1}, allocated='s1',
        score_nodes=['s1-n1', 's2-n1'],
        expected={'s1-n1': 100.0, 's2-n1': 50.0}),
    ScoreCase(
        GoCase(
        'Tasks in job rescheduled, score hyperNodes according to node LCA hyperNode tier of the hyperNode and jobAllocatedHyperNode when hyperNodesInfo has one tier',
        groups=[Group('pg1', 1, mode='soft', tier=0)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s1-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'})],
        nodes=nodes('s1-n1', 's1-n2', 's2-n1', 's2-n2'),
        hypernodes=[HN('s1', 1, nodes=('s1-n1', 's1-n2')), HN('s2', 1, nodes=('s2-n1', 's2-n2'))],
        binds=0),
        arguments={'weight': 1}, allocated='s1',
        score_nodes=['s1-n1', 's2-n1'],
        expected={'s1-n1': 100.0, 's2-n1': 0.0}),
    ScoreCase(
        GoCase(
        'Tasks in job rescheduled, score hyperNodes according to node LCA hyperNode tier of the hyperNode and jobAllocatedHyperNode with plugin weight 2',
        groups=[Group('pg1', 1, mode='soft', tier=0)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s3-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s3-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES8,
        hypernodes=THREE_TIER,
        binds=0),
        arguments={'weight': 2}, allocated='s3',
        score_nodes=['s3-n1', 's4-n1', 's5-n1'],
        expected={'s3-n1': 200.0, 's4-n1': 133.3, 's5-n1': 66.6}),
    ScoreCase(
        GoCase(
        'Tasks in job rescheduled, score hyperNodes according to node LCA hyperNode tier and task num of the hyperNode when there are at least two hyperNodes have max hyperNode tier score',
        groups=[Group('pg1', 3, mode='soft', tier=0)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s3-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s3-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'}, node='s4-n1'),
              Pod('p4', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES8,
        hypernodes=THREE_TIER,
        binds=0),
        arguments={'weight': 1}, allocated='s1',
        score_nodes=['s3-n1', 's4-n1', 's5-n1'],
        expected={'s3-n1': 116.6, 's4-n1': 91.6, 's5-n1': 33.3}),
]

def node_scores(ssn: Session, allocated: str, score_nodes: list[str]) -> dict[str, float]:
    """``ssn.BatchNodeOrderFn(parseTask(ssn.Jobs), scoreNodes)``: the first pending task, given the job's
    allocated HyperNode."""
    (job,) = ssn.jobs.values()
    task = next(t for t in job.tasks.values() if not t.node_name)
    task.job_allocated_hypernode = allocated
    plugin = ssn.plugins["network-topology-aware"]
    scorer = NodeScorer(plugin, ssn)
    nodes_ = [ssn.nodes[n] for n in score_nodes]
    return scorer.score(task, nodes_) if scorer.applies(task) else {}


@pytest.mark.parametrize("case", [pytest.param(c, id=c.case.name) for c in NODE_SCORE_HARD])
def test_node_score_hard(case, monkeypatch, tmp_path):
    """TestNetworkTopologyAwareNodeScore_Hard, the case named by the test id."""
    got = node_scores(open_session(case.case, case.arguments, monkeypatch, tmp_path), case.allocated, case.score_nodes)
    for name, want in case.expected.items():
        assert abs(got.get(name, 0.0) - want) <= EPS, (name, got)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.case.name) for c in NODE_SCORE_SOFT])
def test_node_score_soft(case, monkeypatch, tmp_path):
    """TestNetworkTopologyAwareNodeScore_Soft, the case named by the test id (soft mode: the session makes
    the job hard up to the cluster top; the scores are the hard cases')."""
    got = node_scores(open_session(case.case, case.arguments, monkeypatch, tmp_path), case.allocated, case.score_nodes)
    for name, want in case.expected.items():
        assert abs(got.get(name, 0.0) - want) <= EPS, (name, got)


def test_reverse_and_cap_eviction_gradients(monkeypatch):
    """TestReverseAndCapEvictionGradients: for eviction the gradients come highest tier first and hold at
    most ``hypernode.gradient.evict.max-hypernodes`` HyperNodes, the last ones of a gradient cut (Volcano:
    [[a, b], [c, d]] with 3 gives [[c, d], [b]]).  A cap of 0 means the default 8 here (vcsched reads a
    non-positive cap as the default, as New does; Go's function alone returns the gradients unchanged)."""
    tree = {n: SessionHyperNode(n, 1 if n in "ab" else 2) for n in "abcd"}
    tree["top"] = SessionHyperNode("top", 3, children=["c", "d"])
    tree["c"].children, tree["d"].children = ["a"], ["b"]
    plugin = NetworkTopologyAwarePlugin(Arguments({"hypernode.gradient.evict.max-hypernodes": 3}, "args"))

    class Topology:
        hypernodes = tree

        @staticmethod
        def ancestors(name):
            return [name]

    plugin.topology = Topology()
    plugin.usage = {}
    got = plugin._gradients(tree["top"], 2, "", None, PURPOSE_EVICT)
    assert [[h.name for h in g] for g in got] == [["c", "d"], ["b"]]
    uncapped = NetworkTopologyAwarePlugin(Arguments({"hypernode.gradient.evict.max-hypernodes": 0}, "args"))
    uncapped.topology, uncapped.usage = Topology(), {}
    got = uncapped._gradients(tree["top"], 2, "", None, PURPOSE_EVICT)
    assert [[h.name for h in g] for g in got] == [["c", "d"], ["a", "b"]]
