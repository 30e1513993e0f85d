"""Network-topology-aware scheduling end to end: Volcano's allocate_test.go cases that set HyperNodes or
subgroup policies (TestAllocateWithNetWorkTopologies, TestNodeLevelScoreWithNetWorkTopologies,
TestHyperNodeBinpackWithNetWorkTopologies, TestAllocateWithPartitionPolicyNetworkTopology) through
``vcsched simulate``, and the behaviour around them that those tests do not reach: a job placed over two
cycles, its HyperNode recovered after a restart, ``highestTierName``, ``minSubGroups``, preempt.

Each Go case runs one session of the allocate action, so each runs here with ``--cycles 1`` and the Go
test's tiers flag for flag (``option()``: every enable flag off but those the Go tiers set, as Go reads a
nil flag as off).  That includes the SubJob flags: TestAllocateWithPartitionPolicyNetworkTopology turns
gang's ``enabledSubJobReady`` and ``enabledSubJobOrder`` on; the other tests leave them unset.  The
checks are the Go ones (the number of binds; the binds themselves when ``MinimalBindCheck`` is false),
and the binds a ``MinimalBindCheck`` case names though Go does not check them (all hold but one, which
cannot: see that case).  Where Go breaks a tie at random (map order: equal HyperNode scores, equal node
scores) vcsched takes the first candidate (HyperNodes in name order, nodes in the session's order); no
Go case's checks depend on it.

Not here: allocate_test.go's nomination tests (TestAllocateFromNomination_*, TestValidateNomination_*,
TestInvalidateSubJobNomination, TestAllocate_FlatPathHonorsAndClearsNomination) call
``allocateFromNomination``, the fast path for a SubJob's NominatedHyperNode set by gangpreempt or
gangreclaim, which vcsched does not have; the benchmarks are ``vcsched bench --fabric``'s business.  The
plugin's own tests are in tests/unit/test_network_topology_aware.py.

How the Go input is written as manifests:

- ``HyperNodesMap`` becomes HyperNode objects (members by exact name).  Cases that give the tree only
  as ``HyperNodesSetByTier`` and ``HyperNodes`` (sets of node names, no HyperNode objects: Volcano's
  session then has no HyperNode but the cluster top to search) get HyperNode objects of those tiers and
  node sets; every such case's checks come out the same either way.
- Where the Go map key and the HyperNode's own name differ (a typo in four highestTierName cases: key
  ``s0`` holds a HyperNode named ``s1``), the key is the name, as the Go session uses the key.
- ``BuildPodGroupWithNetWorkTopologies``' hyperNodeName goes into an annotation that Volcano's scheduler
  no longer reads (the allocated HyperNode is recovered from the nodes the job's pods run on); it is left
  out.  Soft mode's ``highestTierAllowed: 0`` is left out too: soft mode ignores it (the session makes
  the job hard up to the cluster top), and ``simulate`` refuses a tier below the lowest HyperNode tier.
- Pods keep the Go order (UIDs ``c1-p1`` …, created a second apart), so task order is the Go one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
import yaml

from vcsched.conf import ENABLE_FLAGS
from vcsched.sim.cluster import SimCluster

from .conftest import node as node_manifest
from .conftest import queue

NS = "c1"


def option(name: str, *enabled: str, arguments: str = "") -> str:
    """One plugin option with every enable flag off except ``enabled`` (Go's nil flags are off)."""
    lines = [f"  - name: {name}"]
    lines += [f"    {flag}: {'true' if flag in enabled else 'false'}"
              for flag in ENABLE_FLAGS if flag != "enableHierarchy"]
    if arguments:
        lines.append(f"    arguments: {{{arguments}}}")
    return "\n".join(lines) + "\n"


GANG = option("gang", "enableJobOrder", "enableJobReady", "enableJobPipelined", "enableJobStarving")
PREDICATES = option("predicates", "enablePredicate")
BINPACK = option("binpack", "enableNodeOrder")
TOPOLOGY = option("network-topology-aware", "enableNodeOrder", "enabledHyperNodeOrder",
                  "enabledHyperNodeGradient")
# TestAllocateWithNetWorkTopologies and TestHyperNodeBinpackWithNetWorkTopologies: gang, predicates,
# network-topology-aware
GO_CONF = 'actions: "allocate"\ntiers:\n- plugins:\n' + GANG + PREDICATES + TOPOLOGY
# TestNodeLevelScoreWithNetWorkTopologies: binpack too
GO_CONF_BINPACK = 'actions: "allocate"\ntiers:\n- plugins:\n' + GANG + PREDICATES + BINPACK + TOPOLOGY
# TestAllocateWithPartitionPolicyNetworkTopology: gang's SubJob readiness and order too
GANG_SUB_JOBS = option("gang", "enableJobOrder", "enableJobReady", "enableJobPipelined", "enableJobStarving",
                       "enabledSubJobReady", "enabledSubJobOrder")
GO_CONF_SUB_JOBS = 'actions: "allocate"\ntiers:\n- plugins:\n' + GANG_SUB_JOBS + PREDICATES + TOPOLOGY


# -- the Go cases' objects ------------------------------------------------------------------------


@dataclass(frozen=True)
class Policy:
    """``BuildSubGroupPolicy*``: pods grouped by ``keys``; ``mode`` "" means no network topology."""

    name: str
    keys: tuple[str, ...]
    mode: str = ""
    tier: int = 0
    size: int = 1
    min_groups: int = 0

    def manifest(self) -> dict:
        out: dict = {"name": self.name, "matchLabelKeys": list(self.keys), "subGroupSize": self.size,
                     "minSubGroups": self.min_groups}
        if self.mode:
            out["networkTopology"] = _topology(self.mode, self.tier, "")
        return out


@dataclass(frozen=True)
class Group:
    """A PodGroup in queue q1 (``BuildPodGroupWithNetWorkTopologies`` and its siblings)."""

    name: str
    min_member: int
    mode: str = ""
    tier: int | None = None
    tier_name: str = ""
    phase: str = "Inqueue"
    task_min: dict | None = None
    policies: list[Policy] = field(default_factory=list)
    priority_class: str = ""

    def manifest(self) -> dict:
        spec: dict = {"minMember": self.min_member, "queue": "q1"}
        if self.priority_class:
            spec["priorityClassName"] = self.priority_class
        if self.task_min:
            spec["minTaskMember"] = dict(self.task_min)
        if self.mode:
            spec["networkTopology"] = _topology(self.mode, self.tier, self.tier_name)
        if self.policies:
            spec["subGroupPolicy"] = [p.manifest() for p in self.policies]
        return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                "metadata": {"name": self.name, "namespace": NS}, "spec": spec,
                "status": {"phase": self.phase}}


def _topology(mode: str, tier: int | None, tier_name: str) -> dict:
    out: dict = {"mode": mode}
    if tier_name:
        out["highestTierName"] = tier_name
    elif tier is not None and mode == "hard":
        out["highestTierAllowed"] = tier
    return out


@dataclass(frozen=True)
class Pod:
    """``util.BuildPod``: Running on ``node`` when it has one, else Pending."""

    name: str
    labels: dict
    node: str = ""
    cpu: str = "2"
    memory: str = "4G"
    group: str = "pg1"
    selector: dict | None = None
    priority_class: str = ""

    @property
    def key(self) -> str:
        return f"{NS}/{self.name}"

    def manifest(self) -> dict:
        spec: dict = {"schedulerName": "volcano", "containers": [{
            "name": "main", "image": "busybox",
            "resources": {"requests": {"cpu": self.cpu, "memory": self.memory}}}]}
        if self.node:
            spec["nodeName"] = self.node
        if self.selector:
            spec["nodeSelector"] = dict(self.selector)
        if self.priority_class:
            spec["priorityClassName"] = self.priority_class
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": self.name, "namespace": NS, "uid": f"{NS}-{self.name}",
                             "labels": dict(self.labels),
                             "annotations": {"scheduling.k8s.io/group-name": self.group}},
                "spec": spec, "status": {"phase": "Running" if self.node else "Pending"}}


@dataclass(frozen=True)
class Node:
    name: str
    cpu: str = "2"
    memory: str = "4Gi"
    labels: dict | None = None

    def manifest(self) -> str:
        extra = "".join(f"    {k}: {v}\n" for k, v in (self.labels or {}).items())
        return node_manifest(self.name, cpu=self.cpu, memory=self.memory, pods=10).replace(
            "  labels: {kubernetes.io/hostname: " + self.name + "}\n",
            "  labels:\n    kubernetes.io/hostname: " + self.name + "\n" + extra)


def nodes(*names: str) -> list[Node]:
    return [Node(n) for n in names]


@dataclass(frozen=True)
class HN:
    """A HyperNode: its member nodes or its member HyperNodes, by exact name."""

    name: str
    tier: int
    nodes: tuple[str, ...] = ()
    children: tuple[str, ...] = ()
    tier_name: str = ""

    def manifest(self) -> dict:
        kind, names = ("Node", self.nodes) if self.nodes else ("HyperNode", self.children)
        spec: dict = {"tier": self.tier,
                      "members": [{"type": kind, "selector": {"exactMatch": {"name": n}}} for n in names]}
        if self.tier_name:
            spec["tierName"] = self.tier_name
        return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                "metadata": {"name": self.name}, "spec": spec}


NODES4 = nodes("s0-n1", "s0-n2", "s1-n3", "s1-n4")
NODES8 = nodes(*(f"s{i}-n{j}" for i in (3, 4, 5, 6) for j in (1, 2)))
# s2 (tier 2) over the switches s0 and s1 (tier 1), two nodes each
TWO_TIER = [HN("s0", 1, nodes=("s0-n1", "s0-n2")), HN("s1", 1, nodes=("s1-n3", "s1-n4")),
            HN("s2", 2, children=("s0", "s1"))]
# s0 (tier 3) over s1 and s2 (tier 2), over s3, s4 and s5, s6 (tier 1), two nodes each
THREE_TIER = [HN("s0", 3, children=("s1", "s2")), HN("s1", 2, children=("s3", "s4")),
              HN("s2", 2, children=("s5", "s6"))] + [
    HN(f"s{i}", 1, nodes=(f"s{i}-n1", f"s{i}-n2")) for i in (3, 4, 5, 6)]


@dataclass
class GoCase:
    name: str
    groups: list[Group]
    pods: list[Pod]
    nodes: list[Node]
    hypernodes: list[HN]
    binds: int = 0
    bind_map: dict | None = None
    minimal: bool = False
    per_hypernode: list[int] | None = None
    # the job names a tier name no HyperNode has: simulate refuses it (exit 2), Kubernetes mode runs it
    unknown_tier_name: bool = False

    def manifests(self) -> str:
        docs = [h.manifest() for h in self.hypernodes] + [g.manifest() for g in self.groups]
        docs += [p.manifest() for p in self.pods]
        text = yaml.safe_dump_all(docs, sort_keys=False)
        return "".join(n.manifest() for n in self.nodes) + queue("q1") + "---\n" + text


def run_go_case(simulate, case: GoCase, conf: str = GO_CONF, monkeypatch=None) -> dict:
    """One allocate session; the Go checks (``CheckBind``, ``CheckBindInHyperNode``), and the binds a
    ``MinimalBindCheck`` case names though Go does not check them."""
    if case.unknown_tier_name:
        # as in Kubernetes mode, where the API server takes any highestTierName: the session warns and
        # leaves the job without a tier (Volcano's translateHighestTierNameToAllowed), so it is not hard
        monkeypatch.setattr(SimCluster, "_check_topology_tiers", lambda *args: None)
    code, out = simulate(case.manifests(), "--cycles", "1", conf=conf)
    assert code == 0, out
    placed_before = {p.key for p in case.pods if p.node}
    binds = {k: v["node"] for k, v in out["pods"].items() if v["node"] and k not in placed_before}
    assert len(binds) == case.binds, binds
    if not case.minimal and case.per_hypernode is None:
        assert binds == (case.bind_map or {})
    elif case.bind_map:
        assert {k: binds.get(k) for k in case.bind_map} == case.bind_map, binds
    if case.per_hypernode is not None:
        leaf = {n: h.name for h in case.hypernodes for n in h.nodes}
        counts: dict[str, int] = {}
        for n in binds.values():
            counts[leaf[n]] = counts.get(leaf[n], 0) + 1
        assert sorted(counts.values()) == case.per_hypernode, binds
    return out


def ids(cases: list[GoCase]) -> list:
    return [pytest.param(c, id=c.name) for c in cases]


# -- TestAllocateWithNetWorkTopologies ------------------------------------------------------------

NETWORK_TOPOLOGIES = [
    GoCase(
        'soft network topology constrain, can allocate job when resources are enough',
        groups=[Group('pg1', 3, mode='soft', tier=0)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=[HN('s0', 0, nodes=('s0-n1', 's0-n2')), HN('s1', 0, nodes=('s1-n3', 's1-n4')), HN('s2', 1, children=('s0', 's1'))],  # only as the sets of nodes (no HyperNode objects)
        binds=3, minimal=True),
    GoCase(
        'soft network topology constrain, can allocate job when minavailable < replicas',
        groups=[Group('pg1', 1, mode='soft', tier=0)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}),
              Pod('p2', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=2, minimal=True),
    GoCase(
        'soft network topology constrain, two available hyperNodes, can allocate job to nodes with affinity',
        groups=[Group('pg1', 1, mode='soft', tier=0)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, selector={'nodeRole': 'master'})],
        nodes=[Node('s0-n1'), Node('s1-n2', labels={'nodeRole': 'master'})],
        hypernodes=[HN('s0', 0, nodes=('s0-n1',)), HN('s1', 0, nodes=('s1-n2',))],  # only as the sets of nodes (no HyperNode objects)
        binds=1, bind_map={'c1/p1': 's1-n2'}),
    GoCase(
        'soft network topology constrain and tasks in job rescheduled, can allocate job when resources are enough',
        groups=[Group('pg1', 2, mode='soft', tier=0)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s0-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=1, minimal=True),
    GoCase(
        'soft network topology constrain and tasks in job rescheduled, can allocate job when resources are enough and minavailable = replicas',
        groups=[Group('pg1', 3, mode='soft', tier=0)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s0-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=1, minimal=True),
    GoCase(
        'soft network topology constrain and tasks in job rescheduled, can allocate job when cross highestTierAllowed tier and hyperNodesInfo has three tier',
        groups=[Group('pg1', 2, mode='soft', tier=0)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s3-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s3-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES8,
        hypernodes=THREE_TIER,
        binds=1, minimal=True),
    GoCase(
        'hard network topology constrain, can not allocate job when cross highestTierAllowed tier',
        groups=[Group('pg1', 3, mode='hard', tier=1)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=0, minimal=True),
    GoCase(
        'hard network topology constrain, can allocate job when highestTierAllowed not reached',
        groups=[Group('pg1', 3, mode='hard', tier=2)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=3, minimal=True),
    GoCase(
        'hard network topology constrain, can allocate job when multi hyperNodes are available',
        groups=[Group('pg1', 2, mode='hard', tier=1)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}),
              Pod('p2', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=2, minimal=True),
    GoCase(
        'hard network topology constrain, can allocate job when minavailable < replicas',
        groups=[Group('pg1', 1, mode='hard', tier=1)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}),
              Pod('p2', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=2, minimal=True),
    GoCase(
        'hard network topology constrain, two available hyperNodes, can allocate job to nodes with affinity',
        groups=[Group('pg1', 1, mode='hard', tier=1)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, selector={'nodeRole': 'master'})],
        nodes=[Node('s0-n1'), Node('s1-n2', labels={'nodeRole': 'master'})],
        hypernodes=[HN('s0', 0, nodes=('s0-n1',)), HN('s1', 0, nodes=('s1-n2',))],  # only as the sets of nodes (no HyperNode objects)
        binds=1, bind_map={'c1/p1': 's1-n2'}),
    GoCase(
        'hard network topology constrain and tasks in job rescheduled, can allocate job when highestTierAllowed not reached',
        groups=[Group('pg1', 2, mode='hard', tier=2)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s0-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=1, minimal=True),
    GoCase(
        'hard network topology constrain and tasks in job rescheduled, can allocate job when highestTierAllowed not reached and minavailable = replicas',
        groups=[Group('pg1', 3, mode='hard', tier=2)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s0-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=1, minimal=True),
    GoCase(
        'hard network topology constrain and tasks in job rescheduled, can allocate job when highestTierAllowed not reached and hyperNodesInfo has three tier',
        groups=[Group('pg1', 2, mode='hard', tier=2)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s3-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s3-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES8,
        hypernodes=THREE_TIER,
        binds=1, minimal=True),
    GoCase(
        'hard network topology constrain and tasks in job rescheduled, can not allocate job when cross highestTierAllowed tier',
        groups=[Group('pg1', 2, mode='hard', tier=1)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s0-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=0, minimal=True),
    GoCase(
        'hard network topology constrain and tasks in job rescheduled, can not allocate job when cross highestTierAllowed tier and hyperNodesInfo has three tier',
        groups=[Group('pg1', 2, mode='hard', tier=1)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s3-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s3-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES8,
        hypernodes=THREE_TIER,
        binds=0, minimal=True),
    GoCase(
        'hard network topology constrain and tasks in job rescheduled, can allocate job when LCAHyperNode is empty',
        groups=[Group('pg1', 2, mode='hard', tier=2)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s0-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=[HN('s0', 1, nodes=('s0-n1', 's0-n2')), HN('s1', 1, nodes=('s1-n3', 's1-n4'))],
        binds=1, minimal=True),
    GoCase(
        'hard network topology constrain, can not allocate job when cross highestTierName tier',
        groups=[Group('pg1', 3, mode='hard', tier_name='volcano.sh/task-spec')],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=[HN('s0', 1, nodes=('s0-n1', 's0-n2'), tier_name='volcano.sh/task-spec'), HN('s1', 1, nodes=('s1-n3', 's1-n4'), tier_name='volcano.sh/task-spec'), HN('s2', 2, children=('s0', 's1'), tier_name='volcano.sh/job-spec')],
        binds=0, minimal=True),
    GoCase(
        'hard network topology constrain, can allocate job when the tier corresponding to highestTierName not reached',
        groups=[Group('pg1', 3, mode='hard', tier_name='volcano.sh/job-spec')],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=[HN('s0', 1, nodes=('s0-n1', 's0-n2'), tier_name='volcano.sh/task-spec'), HN('s1', 1, nodes=('s1-n3', 's1-n4'), tier_name='volcano.sh/task-spec'), HN('s2', 2, children=('s0', 's1'), tier_name='volcano.sh/job-spec')],
        binds=3, minimal=True),
    GoCase(
        'hard network topology constrain, can allocate job when multi hyperNodes are available',
        groups=[Group('pg1', 2, mode='hard', tier_name='volcano.sh/task-spec')],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}),
              Pod('p2', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=[HN('s0', 1, nodes=('s0-n1', 's0-n2'), tier_name='volcano.sh/task-spec'), HN('s1', 1, nodes=('s1-n3', 's1-n4'), tier_name='volcano.sh/task-spec'), HN('s2', 2, children=('s0', 's1'), tier_name='volcano.sh/job-spec')],
        binds=2, minimal=True),
    GoCase(
        'hard network topology constrain and task in job rescheduled, can allocate job when the tier corresponding to highestTierName not reached',
        groups=[Group('pg1', 2, mode='hard', tier_name='volcano.sh/job-spec')],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s0-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=[HN('s0', 1, nodes=('s0-n1', 's0-n2'), tier_name='volcano.sh/task-spec'), HN('s1', 1, nodes=('s1-n3', 's1-n4'), tier_name='volcano.sh/task-spec'), HN('s2', 2, children=('s0', 's1'), tier_name='volcano.sh/job-spec')],
        binds=1, minimal=True),
    GoCase(
        'hard network topology constrain and task in job rescheduled, can allocate job when the tier corresponding to highestTierName not reached and minavailable = replicas',
        groups=[Group('pg1', 3, mode='hard', tier_name='volcano.sh/job-spec')],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s0-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=[HN('s0', 1, nodes=('s0-n1', 's0-n2'), tier_name='volcano.sh/task-spec'), HN('s1', 1, nodes=('s1-n3', 's1-n4'), tier_name='volcano.sh/task-spec'), HN('s2', 2, children=('s0', 's1'), tier_name='volcano.sh/job-spec')],
        binds=1, minimal=True),
    GoCase(
        'hard network topology constrain and task in job rescheduled, can allocate job when the tier corresponding to highestTierName not reached and hyperNodesInfo has three tier',
        groups=[Group('pg1', 2, mode='hard', tier_name='volcano.sh/job-spec')],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s0-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES8,
        hypernodes=[HN('s0', 3, children=('s1', 's2'), tier_name='volcano.sh/hypernode-spec'), HN('s1', 2, children=('s3', 's4'), tier_name='volcano.sh/job-spec'), HN('s2', 2, children=('s5', 's6'), tier_name='volcano.sh/job-spec'), HN('s3', 1, nodes=('s3-n1', 's3-n2'), tier_name='volcano.sh/task-spec'), HN('s4', 1, nodes=('s4-n1', 's4-n2'), tier_name='volcano.sh/task-spec'), HN('s5', 1, nodes=('s5-n1', 's5-n2'), tier_name='volcano.sh/task-spec'), HN('s6', 1, nodes=('s6-n1', 's6-n2'), tier_name='volcano.sh/task-spec')],
        binds=1, minimal=True),
    GoCase(
        'hard network topology constrain and tasks in job rescheduled, can not allocate job when cross the tier corresponding to highestTierName',
        groups=[Group('pg1', 2, mode='hard', tier_name='volcano.sh/task-spec')],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s0-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=[HN('s0', 1, nodes=('s0-n1', 's0-n2'), tier_name='volcano.sh/task-spec'), HN('s1', 1, nodes=('s1-n3', 's1-n4'), tier_name='volcano.sh/task-spec'), HN('s2', 2, children=('s0', 's1'), tier_name='volcano.sh/job-spec')],
        binds=0, minimal=True),
    GoCase(
        'hard network topology with highestTierName constrain and tasks in job rescheduled, can allocate job when here is no corresponding highestTierAllowed for highestTierName',
        groups=[Group('pg1', 2, mode='hard', tier_name='volcano.sh/hypercluster')],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s0-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=[HN('s0', 1, nodes=('s0-n1', 's0-n2'), tier_name='volcano.sh/task-spec'), HN('s1', 1, nodes=('s1-n3', 's1-n4'), tier_name='volcano.sh/task-spec')],
        binds=1, minimal=True, unknown_tier_name=True),
]


@pytest.mark.parametrize("case", ids(NETWORK_TOPOLOGIES))
def test_allocate_with_network_topologies(simulate, monkeypatch, case):
    """TestAllocateWithNetWorkTopologies, the case named by the test id."""
    run_go_case(simulate, case, monkeypatch=monkeypatch)


# -- TestNodeLevelScoreWithNetWorkTopologies, TestHyperNodeBinpackWithNetWorkTopologies -------------

NODE_LEVEL_SCORE = [
    GoCase(
        'hard network topology constrain, allocate job to highest score hypeNode with node level binpack',
        groups=[Group('pg1', 2, mode='hard', tier=1), Group('pg2', 2, phase='Running')],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, cpu='2', memory='4Gi'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, cpu='4', memory='8Gi'),
              Pod('p3', {'volcano.sh/task-spec': 'master'}, node='s0-n1', cpu='2', memory='4Gi', group='pg2'),
              Pod('p4', {'volcano.sh/task-spec': 'worker'}, node='s0-n2', cpu='4', memory='8Gi', group='pg2')],
        nodes=[Node('s0-n1', '4', '8Gi'), Node('s0-n2', '8', '16Gi'), Node('s1-n3', '4', '8Gi'), Node('s1-n4', '8', '16Gi')],
        hypernodes=TWO_TIER,
        binds=2, bind_map={'c1/p1': 's0-n1', 'c1/p2': 's0-n2'}),
]

HYPERNODE_BINPACK = [
    GoCase(
        'hard network topology constrain, allocate task to node under LCAHyperNode',
        groups=[Group('pg1', 4, mode='hard', tier=2)],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, cpu='4', memory='8Gi'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, cpu='4', memory='8Gi'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'}, cpu='4', memory='8Gi'),
              Pod('p4', {'volcano.sh/task-spec': 'worker'}, cpu='4', memory='8Gi')],
        nodes=[Node('s0-n1', '4', '8Gi'), Node('s0-n2', '4', '8Gi'), Node('s1-n3', '4', '8Gi'), Node('s1-n4', '4', '8Gi'), Node('s2-n5', '4', '8Gi'), Node('s2-n6', '4', '8Gi')],
        hypernodes=[HN('s0', 1, nodes=('s0-n1', 's0-n2')), HN('s1', 1, nodes=('s1-n3', 's1-n4')), HN('s2', 1, nodes=('s2-n5', 's2-n6')), HN('s3', 2, children=('s0', 's1', 's2'))],
        binds=4, per_hypernode=[2, 2]),
]


@pytest.mark.parametrize("case", ids(NODE_LEVEL_SCORE))
def test_node_level_score_with_network_topologies(simulate, case):
    """TestNodeLevelScoreWithNetWorkTopologies: binpack beside network-topology-aware; s0's nodes, where
    pg2 runs, score higher."""
    run_go_case(simulate, case, GO_CONF_BINPACK)


@pytest.mark.parametrize("case", ids(HYPERNODE_BINPACK))
def test_hypernode_binpack_with_network_topologies(simulate, case):
    """TestHyperNodeBinpackWithNetWorkTopologies: once a pod is on one switch, the next goes beside it
    (the tier score of the LCA with the job's HyperNode), so the four pods fill two switches."""
    run_go_case(simulate, case)


# -- TestAllocateWithPartitionPolicyNetworkTopology ----------------------------------------------

PARTITION_POLICY = [
    GoCase(
        'podgroup hard network topology constrain and subGroup soft network topology constrain, can allocate job when resources are enough',
        groups=[Group('pg1', 3, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'soft', 0)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=[HN('s0', 0, nodes=('s0-n1', 's0-n2')), HN('s1', 0, nodes=('s1-n3', 's1-n4')), HN('s2', 1, children=('s0', 's1'))],  # only as the sets of nodes (no HyperNode objects)
        binds=3, minimal=True),
    GoCase(
        'podgroup hard network topology constrain and subGroup soft network topology constrain, can allocate job when minavailable < replicas',
        groups=[Group('pg1', 1, mode='hard', tier=1, policies=[Policy('task1', ('volcano.sh/task-spec',), 'soft', 0)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}),
              Pod('p2', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=2, minimal=True),
    GoCase(
        'podgroup hard network topology constrain and subGroup soft network topology constrain, two available hyperNodes, can allocate job to nodes with affinity',
        groups=[Group('pg1', 1, mode='hard', tier=1, policies=[Policy('task1', ('volcano.sh/task-spec',), 'soft', 0)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, selector={'nodeRole': 'master'})],
        nodes=[Node('s0-n1'), Node('s1-n2', labels={'nodeRole': 'master'})],
        hypernodes=[HN('s0', 0, nodes=('s0-n1',)), HN('s1', 0, nodes=('s1-n2',))],  # only as the sets of nodes (no HyperNode objects)
        binds=1, bind_map={'c1/p1': 's1-n2'}),
    GoCase(
        'podgroup hard network topology constrain and subGroup soft network topology constrain and tasks in job rescheduled, can allocate job when resources are enough',
        groups=[Group('pg1', 2, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'soft', 0)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s0-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=1, minimal=True),
    GoCase(
        'podgroup hard network topology constrain and subGroup soft network topology constrain and tasks in job rescheduled, can allocate job when resources are enough and minavailable = replicas',
        groups=[Group('pg1', 3, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'soft', 0)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s0-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=1, minimal=True),
    GoCase(
        'podgroup hard network topology constrain and subGroup soft network topology constrain and tasks in job rescheduled, can allocate job when cross highestTierAllowed tier and hyperNodesInfo has three tier',
        groups=[Group('pg1', 2, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'soft', 0)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s3-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s3-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES8,
        hypernodes=THREE_TIER,
        binds=1, minimal=True),
    GoCase(
        'podgroup soft network topology constrain and subGroup hard network topology constrain, can allocate job when resources are enough',
        groups=[Group('pg1', 3, mode='soft', tier=0, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 1, size=2), Policy('task2', ('volcano.sh/task-instance',), 'hard', 1)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}),
              Pod('p2', {'volcano.sh/task-spec': 'master'}),
              Pod('p3', {'volcano.sh/task-instance': 'worker'})],
        nodes=nodes('s0-n1', 's0-n2', 's1-n3'),
        hypernodes=[HN('s0', 1, nodes=('s0-n1', 's0-n2')), HN('s1', 1, nodes=('s1-n3',)), HN('s2', 2, children=('s0', 's1'))],
        # the Go case's ExpectBindMap {c1/p1: s1-n3}, unchecked there (MinimalBindCheck), cannot hold: p1 and p2
        # form one subgroup of 2 that must share a tier-1 HyperNode, and only s0 has two nodes
        binds=3, minimal=True),
    GoCase(
        'podgroup soft network topology constrain and subGroup hard network topology constrain, can allocate job when minavailable < replicas',
        groups=[Group('pg1', 1, mode='soft', tier=0, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 1)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}),
              Pod('p2', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=2, minimal=True),
    GoCase(
        'podgroup soft network topology constrain and subGroup hard network topology constrain, can not allocate job when cross highestTierAllowed tier',
        groups=[Group('pg1', 3, mode='soft', tier=0, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 1)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}),
              Pod('p3', {'volcano.sh/task-spec': 'worker'}),
              Pod('p4', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,  # only as the sets of nodes (no HyperNode objects)
        binds=0, minimal=True),
    GoCase(
        'podgroup soft network topology constrain and subGroup hard network topology constrain and tasks in job rescheduled, can allocate job when resources are enough',
        groups=[Group('pg1', 2, mode='soft', tier=0, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 1)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s1-n3'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=1, bind_map={'c1/p3': 's1-n4'}, minimal=True),
    GoCase(
        'podgroup soft network topology constrain and subGroup hard network topology constrain and tasks in job rescheduled, can not allocate job when cross highestTierAllowed tier and hyperNodesInfo has three tier',
        groups=[Group('pg1', 2, mode='soft', tier=0, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 2)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s3-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s3-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'}, node='s4-n1'),
              Pod('p4', {'volcano.sh/task-spec': 'worker'}, node='s4-n2'),
              Pod('p5', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES8,
        hypernodes=THREE_TIER,
        binds=0, minimal=True),
    GoCase(
        'podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate job when highestTierAllowed not reached',
        groups=[Group('pg1', 3, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 1)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=3, minimal=True),
    GoCase(
        'podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate job according to the network topology constrain of subGroup policy',
        groups=[Group('pg1', 3, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 1), Policy('task2', ('volcano.sh/task-instance',), 'hard', 1, size=2)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}),
              Pod('p2', {'volcano.sh/task-instance': 'worker'}),
              Pod('p3', {'volcano.sh/task-instance': 'worker'})],
        nodes=nodes('s0-n1', 's0-n2', 's1-n3'),
        hypernodes=[HN('s0', 1, nodes=('s0-n1', 's0-n2')), HN('s1', 1, nodes=('s1-n3',)), HN('s2', 2, children=('s0', 's1'))],
        binds=3, bind_map={'c1/p1': 's1-n3'}, minimal=True),
    GoCase(
        'podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate job when multi hyperNodes are available',
        groups=[Group('pg1', 2, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 1)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}),
              Pod('p2', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=2, minimal=True),
    GoCase(
        'podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate job when minavailable < replicas',
        groups=[Group('pg1', 1, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 1)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}),
              Pod('p2', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=2, minimal=True),
    GoCase(
        'podgroup hard network topology constrain and subGroup hard network topology constrain and tasks in job rescheduled, two available hyperNodes, can allocate job to nodes with affinity',
        groups=[Group('pg1', 2, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 1)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s1-n3'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=1, bind_map={'c1/p3': 's1-n4'}, minimal=True),
    GoCase(
        'podgroup hard network topology constrain and subGroup hard network topology constrain and tasks in job rescheduled, can allocate job when highestTierAllowed not reached and minavailable = replicas',
        groups=[Group('pg1', 3, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 2)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s0-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=1, minimal=True),
    GoCase(
        'podgroup hard network topology constrain and subGroup hard network topology constrain and tasks in job rescheduled, can allocate job when highestTierAllowed not reached and hyperNodesInfo has three tier',
        groups=[Group('pg1', 2, mode='hard', tier=3, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 2)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s3-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s3-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES8,
        hypernodes=THREE_TIER,
        binds=1, minimal=True),
    GoCase(
        'podgroup hard network topology constrain and subGroup hard network topology constrain and tasks in job rescheduled, can not allocate job when cross highestTierAllowed tier',
        groups=[Group('pg1', 2, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 1)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s0-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=0, minimal=True),
    GoCase(
        'podgroup hard network topology constrain and subGroup hard network topology constrain and tasks in job rescheduled, can not allocate job when cross highestTierAllowed tier and hyperNodesInfo has three tier',
        groups=[Group('pg1', 2, mode='hard', tier=3, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 2)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s3-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s3-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'}, node='s4-n1'),
              Pod('p4', {'volcano.sh/task-spec': 'worker'}, node='s4-n2'),
              Pod('p5', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES8,
        hypernodes=THREE_TIER,
        binds=0, minimal=True),
    GoCase(
        'podgroup hard network topology constrain and subGroup hard network topology constrain and tasks in job rescheduled, can allocate job when LCAHyperNode is empty',
        groups=[Group('pg1', 2, mode='hard', tier=3, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 2)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s0-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=[HN('s0', 1, nodes=('s0-n1', 's0-n2')), HN('s1', 1, nodes=('s1-n3', 's1-n4'))],
        binds=1, minimal=True),
    GoCase(
        'podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate job according to the network topology constrain of subGroup policy with minSubGroups',
        groups=[Group('pg1', 5, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 1, min_groups=1), Policy('task2', ('volcano.sh/task-instance',), 'hard', 1, size=2, min_groups=2)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, cpu='2', memory='4Gi'),
              Pod('p2', {'volcano.sh/task-instance': 'worker'}, cpu='2', memory='4Gi'),
              Pod('p3', {'volcano.sh/task-instance': 'worker'}, cpu='2', memory='4Gi'),
              Pod('p4', {'volcano.sh/task-instance': 'worker2'}, cpu='2', memory='4Gi'),
              Pod('p5', {'volcano.sh/task-instance': 'worker2'}, cpu='2', memory='4Gi')],
        nodes=nodes('s0-n1', 's0-n2', 's1-n3', 's1-n4', 's2-n5'),
        hypernodes=[HN('s0', 1, nodes=('s0-n1', 's0-n2')), HN('s1', 1, nodes=('s1-n3', 's1-n4')), HN('s2', 1, nodes=('s2-n5',)), HN('s3', 2, children=('s0', 's1', 's2'))],
        binds=5, bind_map={'c1/p1': 's2-n5'}, minimal=True),
    GoCase(
        'podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate job according to the network topology constrain of subGroup policy with minSubGroups and minavailable = replicas',
        groups=[Group('pg1', 3, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 1, min_groups=1), Policy('task2', ('volcano.sh/task-instance',), 'hard', 1, size=2, min_groups=1)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, cpu='2', memory='4Gi'),
              Pod('p2', {'volcano.sh/task-instance': 'worker'}, cpu='2', memory='4Gi'),
              Pod('p3', {'volcano.sh/task-instance': 'worker'}, cpu='2', memory='4Gi'),
              Pod('p4', {'volcano.sh/task-instance': 'worker2'}, cpu='2', memory='4Gi'),
              Pod('p5', {'volcano.sh/task-instance': 'worker2'}, cpu='2', memory='4Gi')],
        nodes=nodes('s0-n1', 's0-n2', 's1-n3'),
        hypernodes=[HN('s0', 1, nodes=('s0-n1', 's0-n2')), HN('s1', 1, nodes=('s1-n3',)), HN('s2', 2, children=('s0', 's1'))],
        binds=3, bind_map={'c1/p1': 's1-n3'}, minimal=True),
    GoCase(
        'podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate job according to the network topology constrain of subGroup policy with minSubGroups and hypernode resources meet minSubGroups',
        groups=[Group('pg1', 3, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 1, min_groups=2), Policy('task2', ('volcano.sh/task-instance',), 'hard', 1, size=2, min_groups=1)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, cpu='2', memory='4Gi'),
              Pod('p2', {'volcano.sh/task-spec': 'master2'}, cpu='2', memory='4Gi'),
              Pod('p3', {'volcano.sh/task-spec': 'master3'}, cpu='2', memory='4Gi'),
              Pod('p4', {'volcano.sh/task-spec': 'master4'}, cpu='2', memory='4Gi'),
              Pod('p5', {'volcano.sh/task-instance': 'worker'}, cpu='2', memory='4Gi'),
              Pod('p6', {'volcano.sh/task-instance': 'worker'}, cpu='2', memory='4Gi'),
              Pod('p7', {'volcano.sh/task-instance': 'worker2'}, cpu='2', memory='4Gi'),
              Pod('p8', {'volcano.sh/task-instance': 'worker2'}, cpu='2', memory='4Gi')],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=4, minimal=True),
    GoCase(
        'podgroup hard network topology constrain and subGroup hard network topology constrain, can not allocate job when minMember is not satisfied',
        groups=[Group('pg1', 5, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 1, min_groups=1), Policy('task2', ('volcano.sh/task-instance',), 'hard', 1, size=2, min_groups=1)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, cpu='2', memory='4Gi'),
              Pod('p2', {'volcano.sh/task-instance': 'worker'}, cpu='2', memory='4Gi'),
              Pod('p3', {'volcano.sh/task-instance': 'worker'}, cpu='2', memory='4Gi'),
              Pod('p4', {'volcano.sh/task-instance': 'worker2'}, cpu='2', memory='4Gi'),
              Pod('p5', {'volcano.sh/task-instance': 'worker2'}, cpu='2', memory='4Gi')],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=0, minimal=True),
    GoCase(
        'podgroup hard network topology constrain and subGroup hard network topology constrain, can not allocate job when minSubGroups is not satisfied',
        groups=[Group('pg1', 3, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 1, min_groups=1), Policy('task2', ('volcano.sh/task-instance',), 'hard', 1, size=2, min_groups=2)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, cpu='2', memory='4Gi'),
              Pod('p2', {'volcano.sh/task-instance': 'worker'}, cpu='2', memory='4Gi'),
              Pod('p3', {'volcano.sh/task-instance': 'worker'}, cpu='2', memory='4Gi'),
              Pod('p4', {'volcano.sh/task-instance': 'worker2'}, cpu='2', memory='4Gi'),
              Pod('p5', {'volcano.sh/task-instance': 'worker2'}, cpu='2', memory='4Gi')],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=0, minimal=True),
    GoCase(
        'podgroup hard network topology constrain and subGroup hard network topology constrain with minSubGroups and tasks in job rescheduled, two available hyperNodes, can allocate job to nodes with affinity',
        groups=[Group('pg1', 2, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 1, size=2, min_groups=1)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s1-n3'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=1, bind_map={'c1/p3': 's1-n4'}, minimal=True),
    GoCase(
        'podgroup hard network topology constrain and subGroup hard network topology constrain with minSubGroups and tasks in job rescheduled, can not allocate job when hypernode resources are insufficient.',
        groups=[Group('pg1', 2, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 1, size=2, min_groups=1)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s1-n3'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'}, node='s1-n4'),
              Pod('p4', {'volcano.sh/task-spec': 'worker'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=0, minimal=True),
    GoCase(
        'podgroup hard network topology constrain and subGroup hard network topology constrain with minSubGroups and tasks in job rescheduled, can allocate job when highestTierAllowed not reached and minAvailable = replicas',
        groups=[Group('pg1', 4, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 2, size=2, min_groups=2)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s0-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'}),
              Pod('p4', {'volcano.sh/task-spec': 'master'})],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=2, minimal=True),
    GoCase(
        'podgroup hard network topology constrain and subGroup hard network topology constrain with minSubGroups and tasks in job rescheduled, can allocate job when subGroup is rescheduled',
        groups=[Group('pg1', 3, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 1, min_groups=2), Policy('task2', ('volcano.sh/task-instance',), 'hard', 1, size=2, min_groups=1)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, cpu='2', memory='4Gi'),
              Pod('p2', {'volcano.sh/task-spec': 'master2'}, cpu='2', memory='4Gi'),
              Pod('p3', {'volcano.sh/task-spec': 'master3'}, node='s0-n1', cpu='2', memory='4Gi'),
              Pod('p4', {'volcano.sh/task-spec': 'master4'}, node='s0-n2', cpu='2', memory='4Gi'),
              Pod('p5', {'volcano.sh/task-instance': 'worker'}, cpu='2', memory='4Gi'),
              Pod('p6', {'volcano.sh/task-instance': 'worker'}, cpu='2', memory='4Gi'),
              Pod('p7', {'volcano.sh/task-instance': 'worker2'}, cpu='2', memory='4Gi'),
              Pod('p8', {'volcano.sh/task-instance': 'worker2'}, cpu='2', memory='4Gi')],
        nodes=NODES4,
        hypernodes=TWO_TIER,
        binds=2, minimal=True),
    GoCase(
        'rescheduling scenario: SubJob with multiple pending tasks, GetMinResources returns sum of all pending tasks resources',
        groups=[Group('pg1', 4, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 1, size=4)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'worker'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s0-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'}),
              Pod('p4', {'volcano.sh/task-spec': 'worker'})],
        nodes=[Node('s0-n1', '4', '8Gi'), Node('s0-n2', '4', '8Gi'), Node('s1-n3', '4', '8Gi'), Node('s1-n4', '4', '8Gi')],
        hypernodes=TWO_TIER,
        binds=2, minimal=True),
    GoCase(
        'rescheduling scenario: SubJob with single pending task',
        groups=[Group('pg1', 3, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 1, size=3)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'worker'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s0-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'})],
        nodes=[Node('s0-n1', '4', '8Gi'), Node('s0-n2', '4', '8Gi'), Node('s1-n3', '4', '8Gi')],
        hypernodes=[HN('s0', 1, nodes=('s0-n1', 's0-n2')), HN('s1', 1, nodes=('s1-n3',)), HN('s2', 2, children=('s0', 's1'))],
        binds=1, minimal=True),
    GoCase(
        'rescheduling scenario: multiple SubJobs with different pending task counts',
        groups=[Group('pg1', 6, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 1, size=3), Policy('task2', ('volcano.sh/task-instance',), 'hard', 1, size=3)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'master'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'master'}, node='s0-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'master'}),
              Pod('p4', {'volcano.sh/task-instance': 'worker'}, node='s1-n3'),
              Pod('p5', {'volcano.sh/task-instance': 'worker'}),
              Pod('p6', {'volcano.sh/task-instance': 'worker'})],
        nodes=[Node('s0-n1', '4', '8Gi'), Node('s0-n2', '4', '8Gi'), Node('s1-n3', '4', '8Gi'), Node('s1-n4', '4', '8Gi')],
        hypernodes=TWO_TIER,
        binds=3, minimal=True),
    GoCase(
        'rescheduling scenario: pending tasks with different resource requirements',
        groups=[Group('pg1', 3, mode='hard', tier=1, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 1, size=3)])],
        pods=[Pod('p1-running', {'volcano.sh/task-spec': 'worker'}, node='s0-n1'),
              Pod('p2-pending-small', {'volcano.sh/task-spec': 'worker'}),
              Pod('p3-pending-large', {'volcano.sh/task-spec': 'worker'}, cpu='4', memory='8G')],
        nodes=[Node('s0-n1', '10', '20Gi'), Node('s0-n2', '10', '20Gi')],
        hypernodes=[HN('s0', 1, nodes=('s0-n1', 's0-n2'))],
        binds=2, minimal=True),
    GoCase(
        'rescheduling scenario: insufficient resources for pending tasks allocation',
        groups=[Group('pg1', 3, mode='hard', tier=1, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 1, size=3)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'worker'}, node='s0-n1', cpu='4', memory='4G'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, cpu='4', memory='4G'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'}, cpu='4', memory='4G')],
        nodes=[Node('s0-n1', '4', '8Gi'), Node('s0-n2', '4', '8Gi')],
        hypernodes=[HN('s0', 1, nodes=('s0-n1', 's0-n2'))],
        binds=0, minimal=True),
    GoCase(
        'rescheduling scenario: SubJob rescheduling within tier-2 HyperNode constraint',
        groups=[Group('pg1', 4, mode='hard', tier=2, policies=[Policy('task1', ('volcano.sh/task-spec',), 'hard', 2, size=4)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'worker'}, node='s0-n1'),
              Pod('p2', {'volcano.sh/task-spec': 'worker'}, node='s0-n2'),
              Pod('p3', {'volcano.sh/task-spec': 'worker'}),
              Pod('p4', {'volcano.sh/task-spec': 'worker'})],
        nodes=[Node('s0-n1', '4', '8Gi'), Node('s0-n2', '4', '8Gi'), Node('s1-n3', '4', '8Gi'), Node('s1-n4', '4', '8Gi')],
        hypernodes=TWO_TIER,
        binds=2, minimal=True),
    GoCase(
        'no network topology at job or subgroup level but has SubJobPolicy, can allocate job successfully',
        groups=[Group('pg1', 2, policies=[Policy('worker', ('volcano.sh/task-spec',), min_groups=2)])],
        pods=[Pod('p1', {'volcano.sh/task-spec': 'worker-0'}),
              Pod('p2', {'volcano.sh/task-spec': 'worker-1'})],
        nodes=nodes('n1', 'n2'),
        hypernodes=[],  # only as the sets of nodes (no HyperNode objects)
        binds=2, minimal=True),
]


@pytest.mark.parametrize("case", ids(PARTITION_POLICY))
def test_allocate_with_partition_policy_network_topology(simulate, case):
    """TestAllocateWithPartitionPolicyNetworkTopology, the case named by the test id."""
    run_go_case(simulate, case, GO_CONF_SUB_JOBS)


# -- beyond the Go cases: cycles, a restart, tier names, minSubGroups, preempt ------------------------

TOPOLOGY_CONF = """\
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: network-topology-aware
"""


def topology_case(pods: list[Pod], group: Group, hypernodes: list[HN] = TWO_TIER,
                  node_list: list[Node] = NODES4) -> GoCase:
    return GoCase("", [group], pods, node_list, hypernodes)


def podgroup_of(out: dict) -> dict:
    return out["podgroups"][f"{NS}/pg1"]


@pytest.mark.parametrize("tier, placed, hypernode", [
    (1, ["s0-n1", "s0-n2", None, None], ("s0", 1)),       # s1's free nodes are not for it
    (2, ["s0-n1", "s0-n2", "s1-n3", "s1-n4"], ("s2", 2)),  # allowed up to the spine, it spreads to s1
])
def test_a_job_placed_in_part_keeps_within_its_allowed_tier_cycle_after_cycle(simulate, tier, placed, hypernode):
    """A job of four 1-CPU 1G pods with minMember 2: p1 and p2 may only run in zone a (s0's nodes), p3 and p4
    only in zone b (s1's).  The first try places p1 and p2 on s0, the gang is ready and the job is put
    back for the rest (allocate.go: the worksheet is not empty); from then on the job's HyperNode (s0, the
    lowest holding its pods) bounds where the rest may go: the plugin's search root is the highest
    HyperNode its allowed tier permits above it (getSearchRoot).  Over three cycles a tier-1 job never
    reaches s1; a tier-2 job does, and its HyperNode becomes the spine."""
    zone_a, zone_b = {"zone": "a"}, {"zone": "b"}
    pods = [Pod(f"p{i}", {}, cpu="1", memory="1G", selector=zone_a if i < 3 else zone_b) for i in range(1, 5)]
    node_list = [Node("s0-n1", labels=zone_a), Node("s0-n2", labels=zone_a),
                 Node("s1-n3", labels=zone_b), Node("s1-n4", labels=zone_b)]
    case = topology_case(pods, Group("pg1", 2, mode="hard", tier=tier), node_list=node_list)
    code, out = simulate(case.manifests(), "--cycles", "3", conf=TOPOLOGY_CONF)
    assert code == 0, out
    assert [out["pods"][p.key]["node"] for p in pods] == placed
    assert (podgroup_of(out)["hypernode"], podgroup_of(out)["tier"]) == hypernode
    assert podgroup_of(out)["phase"] == "Running"


def test_a_subjob_is_tried_only_where_all_its_pending_pods_fit(simulate):
    """Volcano's gradient pre-filter asks a HyperNode for the idle room of *all* the SubJob's pending pods
    (SubJobInfo.GetMinResources), even when the job's minMember is smaller: four 2-CPU pods with minMember
    2 and tier 1 fit no switch of two 2-CPU nodes, and none is placed (with the whole cluster free)."""
    pods = [Pod(f"p{i}", {}) for i in range(1, 5)]
    code, out = simulate(topology_case(pods, Group("pg1", 2, mode="hard", tier=1)).manifests(), "--cycles", "1",
                         conf=TOPOLOGY_CONF)
    assert code == 0, out
    assert [out["pods"][p.key]["node"] for p in pods] == [None] * 4


@pytest.mark.parametrize("tier, binds, hypernode", [(1, {}, ("s0", 1)),
                                                     (2, {"c1/p3": "s1-n3", "c1/p4": "s1-n4"}, ("s2", 2))])
def test_the_allocated_hypernode_is_recovered_after_a_restart(simulate, tier, binds, hypernode):
    """A fresh scheduler (a new ``simulate``) finds the job's pods p1 and p2 running on s0's nodes and
    knows nothing of earlier sessions: the session recovers the job's HyperNode from the nodes its pods run
    on (session.go recoverAllocatedHyperNode: the lowest-tier HyperNode holding all of them, s0), and the
    pending p3 and p4 may only go where the allowed tier permits above s0: nowhere with tier 1 (s0 is full,
    s1 is empty but another switch), s1's nodes with tier 2."""
    pods = [Pod("p1", {}, node="s0-n1"), Pod("p2", {}, node="s0-n2"), Pod("p3", {}), Pod("p4", {})]
    case = topology_case(pods, Group("pg1", 2, mode="hard", tier=tier, phase="Running"))
    code, out = simulate(case.manifests(), "--cycles", "1", conf=TOPOLOGY_CONF)
    assert code == 0, out
    assert {k: out["pods"][k]["node"] for k in ("c1/p3", "c1/p4") if out["pods"][k]["node"]} == binds
    assert (podgroup_of(out)["hypernode"], podgroup_of(out)["tier"]) == hypernode


LEAF_SPINE = [HN("s0", 1, nodes=("s0-n1", "s0-n2"), tier_name="leaf"),
              HN("s1", 1, nodes=("s1-n3", "s1-n4"), tier_name="leaf"),
              HN("s2", 2, children=("s0", "s1"), tier_name="spine")]


@pytest.mark.parametrize("tier_name, placed, hypernode", [("leaf", 0, None), ("spine", 3, ("s2", 2))])
def test_highest_tier_name_is_translated_to_its_tier(simulate, tier_name, placed, hypernode):
    """``highestTierName`` names the HyperNodes' ``tierName``: the session turns it into the tier
    (adjustNetworkTopologySpec).  Three pods of one node each fit no leaf switch (two nodes each): under
    ``leaf`` nothing is placed, under ``spine`` all three are, and the job's HyperNode is the spine."""
    pods = [Pod(f"p{i}", {}) for i in range(1, 4)]
    case = topology_case(pods, Group("pg1", 3, mode="hard", tier_name=tier_name), hypernodes=LEAF_SPINE)
    code, out = simulate(case.manifests(), "--cycles", "1", conf=TOPOLOGY_CONF)
    assert code == 0, out
    assert len([p for p in pods if out["pods"][p.key]["node"]]) == placed
    got = podgroup_of(out)
    assert ((got["hypernode"], got["tier"]) if "hypernode" in got else None) == hypernode


@pytest.mark.parametrize("s1_nodes, placed", [(2, {"0", "1"}), (1, set())])
def test_min_sub_groups_needs_two_of_three_subgroups(simulate, s1_nodes, placed):
    """``subGroupPolicy`` with ``minSubGroups: 2``: three subgroups of two pods (label ``partition`` 0, 1,
    2), each a gang that must share a switch (tier 1), and the job needs two of them (and its minMember
    4).  With two switches of two nodes, subgroups 0 and 1 (the required ones, by MatchIndex) land one per
    switch and subgroup 2 waits; with one switch of two nodes, no two subgroups fit and nothing is placed."""
    policy = Policy("part", ("partition",), "hard", 1, size=2, min_groups=2)
    pods = [Pod(f"p{i}", {"partition": str(i // 2)}) for i in range(6)]
    switch1 = ("s1-n3", "s1-n4")[:s1_nodes]
    hypernodes = [HN("s0", 1, nodes=("s0-n1", "s0-n2")), HN("s1", 1, nodes=switch1),
                  HN("s2", 1, nodes=("s2-n5",)), HN("spine", 2, children=("s0", "s1", "s2"))]
    node_list = nodes("s0-n1", "s0-n2", *switch1, "s2-n5")
    case = topology_case(pods, Group("pg1", 4, policies=[policy]), hypernodes, node_list)
    code, out = simulate(case.manifests(), "--cycles", "1", conf=TOPOLOGY_CONF)
    assert code == 0, out
    on = {p.labels["partition"]: set() for p in pods}
    for p in pods:
        if out["pods"][p.key]["node"]:
            on[p.labels["partition"]].add(out["pods"][p.key]["node"].split("-")[0])
    assert {part for part, switches in on.items() if switches} == placed
    assert all(len(switches) <= 1 for switches in on.values())  # a subgroup never spans switches
    if placed:
        assert on["0"] != on["1"]


PREEMPT_CONF = TOPOLOGY_CONF.replace('"enqueue, allocate"', '"enqueue, allocate, preempt"')
CLASSES = """
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 100
"""


@pytest.mark.parametrize("mode, evicted", [("", 1), ("hard", 0), ("soft", 0)])
def test_preempt_passes_over_jobs_with_a_network_topology(simulate, mode, evicted):
    """preempt.go: "jobs containing networkTopology do not support preemption" (volcano-sh/volcano#4374).
    Two low-priority pods fill s0's two nodes; a high-priority pod of the same queue waits.  Without a
    network topology it evicts one of them; with one, hard or soft, nothing is evicted."""
    low = [Pod("low-0", {}, node="s0-n1", group="low", priority_class="low"),
           Pod("low-1", {}, node="s0-n2", group="low", priority_class="low")]
    high = Pod("high-0", {}, group="pg1", priority_class="high")
    hypernodes = [HN("s0", 1, nodes=("s0-n1", "s0-n2"))]
    groups = [Group("low", 1, phase="Running", priority_class="low"),
              Group("pg1", 1, mode=mode, tier=1, priority_class="high")]
    case = GoCase("", groups, low + [high], nodes("s0-n1", "s0-n2"), hypernodes)
    code, out = simulate(CLASSES + case.manifests(), "--cycles", "1", conf=PREEMPT_CONF)
    assert code == 0, out
    assert len(out["evicted"]) == evicted
    assert all(k.startswith("c1/low-") for k in out["evicted"])
