"""The network topology as one session sees it (framework/session.go: HyperNodes, RealNodesList,
HyperNodesTiers, the cluster-top HyperNode, adjustNetworkTopologySpec, the allocated HyperNodes).

At open, the cache's HyperNode tree gains a virtual ``<cluster-top-hypernode>`` one tier above the
highest real tier (tier 1 when there are none), parent of every top HyperNode and holding every
node of the session, so that the whole cluster is one more HyperNode to search.  Jobs' network
topology specs are then made uniform: ``highestTierName`` becomes ``highestTierAllowed``, and soft
mode becomes hard mode up to the cluster top (Volcano runs both through one path: soft mode is the
gradient search with nothing refused).

What outlives a session (``SchedulerState.hypernode_decisions``): each job's AllocatedHyperNode and
its SubJobs', which Volcano keeps in its cache; after a restart they are recovered from the nodes
the job's tasks run on, as Volcano does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import structlog

from ..api.hypernode import HyperNodeTree, ancestors, lowest_common_ancestor
from ..api.job_info import JobInfo
from ..api.node_info import NodeInfo
from ..api.sub_job import HARD, SOFT, NetworkTopology
from ..api.task_info import TaskInfo
from ..api.types import ALLOCATED_STATUS

log = structlog.get_logger("vcsched.topology")

CLUSTER_TOP = "<cluster-top-hypernode>"
PURPOSE_ALLOCATE = "allocate"
PURPOSE_EVICT = "evict"


@dataclass(slots=True, eq=False)
class SessionHyperNode:
    """A HyperNode in the session: its place in the tree and the session's nodes below it."""

    name: str
    tier: int
    parent: str = ""
    children: list[str] = field(default_factory=list)
    nodes: list[NodeInfo] = field(default_factory=list)  # RealNodesList, in the session's node order
    node_names: frozenset[str] = frozenset()  # RealNodesSet


@dataclass(slots=True, frozen=True)
class HyperNodeDecision:
    """A job's AllocatedHyperNode and its SubJobs', kept between sessions."""

    job: str
    sub_jobs: tuple[tuple[str, str], ...] = ()


class SessionTopology:
    __slots__ = ("hypernodes", "by_tier", "tiers", "tier_names", "ready", "top", "_leaf_of", "_holders",
                 "_by_tier_of")

    def __init__(self, tree: HyperNodeTree, node_list: list[NodeInfo]) -> None:
        self.ready = tree.ready
        self.tier_names = dict(tree.tier_names)
        by_name = {n.name: n for n in node_list}
        hypernodes: dict[str, SessionHyperNode] = {}
        for name in sorted(tree.hypernodes):
            info = tree.hypernodes[name]
            if not info.exists:
                continue
            nodes = [by_name[n] for n in sorted(info.nodes, key=_node_order(by_name)) if n in by_name]
            hypernodes[name] = SessionHyperNode(name, info.tier, info.parent, sorted(info.children), nodes,
                                                frozenset(n.name for n in nodes))
        top_tier = max((h.tier + 1 for h in hypernodes.values()), default=1)
        top = SessionHyperNode(CLUSTER_TOP, top_tier, "", [], list(node_list), frozenset(by_name))
        for h in hypernodes.values():
            if not h.parent or h.parent not in hypernodes:
                h.parent = CLUSTER_TOP
                top.children.append(h.name)
        hypernodes[CLUSTER_TOP] = top
        self.hypernodes = hypernodes
        self.top = top
        self.by_tier: dict[int, list[str]] = {}
        for h in hypernodes.values():
            self.by_tier.setdefault(h.tier, []).append(h.name)
        self.tiers = sorted(self.by_tier)
        self._leaf_of: dict[str, str] | None = None  # built when first asked for
        self._holders: dict[str, tuple[str, ...]] | None = None
        self._by_tier_of: dict[str, dict[int, str]] = {}

    # -- queries ------------------------------------------------------------------------------

    @property
    def has_real_hypernodes(self) -> bool:
        return len(self.hypernodes) > 1

    def leaf_of(self, node: str) -> str:
        """``FindHyperNodeForNode``: the lowest-tier HyperNode holding ``node`` ("" when none does)."""
        leaf_of = self._leaf_of
        if leaf_of is None:
            leaf_of = self._leaf_of = {}
            for name in self.by_tier[self.tiers[0]]:
                for n in self.hypernodes[name].node_names:
                    leaf_of.setdefault(n, name)
        return leaf_of.get(node, "")

    def holders(self, node: str) -> tuple[str, ...]:
        """Every HyperNode holding ``node`` (the cluster top included)."""
        holders = self._holders
        if holders is None:
            lists: dict[str, list[str]] = {}
            for name, h in self.hypernodes.items():
                for n in h.node_names:
                    lists.setdefault(n, []).append(name)
            holders = self._holders = {n: tuple(names) for n, names in lists.items()}
        return holders.get(node, ())

    def holder_by_tier(self, node: str) -> dict[int, str]:
        """The HyperNode holding ``node`` at each tier (the first by name where two do)."""
        found = self._by_tier_of.get(node)
        if found is None:
            found = {}
            for name in sorted(self.holders(node)):
                found.setdefault(self.hypernodes[name].tier, name)
            self._by_tier_of[node] = found
        return found

    def ancestors(self, name: str) -> list[str]:
        return ancestors(name, self.hypernodes)

    def lca(self, a: str, b: str) -> str:
        """``GetLCAHyperNode``: the lowest HyperNode above both; one name when the other is ""."""
        return lowest_common_ancestor(a, b, self.hypernodes)

    def tier_of(self, name: str) -> int | None:
        h = self.hypernodes.get(name)
        return h.tier if h is not None else None

    def task_count(self, name: str, tasks: Iterable[TaskInfo]) -> int:
        """``FindJobTaskNumOfHyperNode``: the tasks placed on a node of the HyperNode."""
        h = self.hypernodes.get(name)
        if h is None:
            return 0
        held = h.node_names
        return sum(1 for t in tasks if t.node_name in held)

    # -- jobs at session open -----------------------------------------------------------------

    def adjust(self, jobs: Iterable[JobInfo]) -> list[tuple[JobInfo, str]]:
        """``adjustNetworkTopologySpec``: tier names to tiers, soft mode to hard mode.  Returns the
        jobs whose tier name names no tier, with the message (the spec is left as it is)."""
        max_tier = self.top.tier
        problems: list[tuple[JobInfo, str]] = []
        for job in jobs:
            if not job.contains_network_topology:
                continue
            for nt in [job.network_topology, *(sj.network_topology for sj in job.sub_jobs.values())]:
                problem = self._translate(job, nt)
                if problem and (job, problem) not in problems:
                    problems.append((job, problem))
            if job.podgroup is None:
                continue
            nt = job.network_topology
            if nt is not None and nt.mode == SOFT:
                _harden(nt, max_tier)
            sub_max = nt.highest_tier_allowed if nt is not None and nt.highest_tier_allowed is not None else max_tier
            for sj in job.sub_jobs.values():
                if sj.network_topology is not None and sj.network_topology.mode == SOFT:
                    _harden(sj.network_topology, sub_max)
        return problems

    def _translate(self, job: JobInfo, nt: NetworkTopology | None) -> str:
        if nt is None or nt.highest_tier_allowed is not None or not nt.highest_tier_name:
            return ""
        tier = self.tier_names.get(nt.highest_tier_name)
        if tier is None:
            # Volcano logs "Failed to translate highestTierName, skip translation" every session; the
            # session logs it once per problem, with its event
            return f"failed to find hypernode tier name {nt.highest_tier_name}"
        nt.highest_tier_allowed = tier
        nt.highest_tier_name = ""
        return ""

    def restore(self, job: JobInfo, decision: HyperNodeDecision | None) -> None:
        """The job's allocated HyperNodes from the last session, dropped when they no longer exist or
        hold nothing (``removeInvalidAllocatedHyperNode``), recovered from the nodes its tasks run on
        when unknown (``recoverAllocatedHyperNode``)."""
        if decision is not None:
            job.allocated_hypernode = decision.job
            recorded = dict(decision.sub_jobs)
            for uid, sj in job.sub_jobs.items():
                sj.allocated_hypernode = recorded.get(uid, "")
        if not self.ready:
            return
        if job.allocated_hypernode and (job.allocated_hypernode not in self.hypernodes
                                        or not job.allocated_task_num()):
            job.allocated_hypernode = ""
        if not job.contains_network_topology:
            return
        changed = False
        for sj in job.sub_jobs.values():
            if sj.allocated_hypernode and (sj.allocated_hypernode not in self.hypernodes
                                           or not sj.allocated_task_num()):
                sj.allocated_hypernode = ""
            if not sj.with_network_topology or sj.allocated_hypernode:
                continue
            candidates: set[str] | None = None
            for t in sj.tasks.values():
                if not t.node_name or not (t.status & ALLOCATED_STATUS):
                    continue
                search = candidates if candidates is not None else self.hypernodes.keys()
                candidates = {h for h in search if t.node_name in self.hypernodes[h].node_names}
                if not candidates:
                    log.error("failed to find allocated hyperNode for subJob by allocated nodes", sub_job=sj.uid)
                    break
            lowest = min(candidates, key=lambda h: (self.hypernodes[h].tier, h)) if candidates else ""
            if lowest and lowest != sj.allocated_hypernode:
                sj.allocated_hypernode = lowest
                changed = True
        if not job.allocated_hypernode or changed:
            lca = ""
            for sj in job.sub_jobs.values():
                if sj.allocated_hypernode:
                    lca = self.lca(lca, sj.allocated_hypernode)
                    if not lca:
                        break
            job.allocated_hypernode = lca


def decision_of(job: JobInfo) -> HyperNodeDecision | None:
    """What to keep of ``job`` for the next session (None: nothing)."""
    if job._sub_jobs is None:
        return HyperNodeDecision(job.allocated_hypernode) if job.allocated_hypernode else None
    subs = tuple(sorted((uid, sj.allocated_hypernode) for uid, sj in job._sub_jobs.items() if sj.allocated_hypernode))
    if not job.allocated_hypernode and not subs:
        return None
    return HyperNodeDecision(job.allocated_hypernode, subs)


def _harden(nt: NetworkTopology, tier: int) -> None:
    nt.mode = HARD
    nt.highest_tier_allowed = tier
    nt.highest_tier_name = ""


def _node_order(by_name: dict[str, NodeInfo]):
    return lambda name: by_name[name].index if name in by_name else -1
