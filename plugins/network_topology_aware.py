"""network-topology-aware: where in the switch tree a job's pods go
(plugins/network-topology-aware/network_topology_aware.go).

Registers:

- **HyperNode gradients** for jobs and SubJobs with a hard network topology (soft ones are hard up to
  the cluster top by then): from the HyperNode the caller allows (the job's, or the cluster top), a
  breadth-first walk down the tree keeps the HyperNodes at or below the highest tier allowed whose
  idle (or future idle) resources cover the job's ``minResources`` (the SubJob's pending requests),
  grouped by tier, lowest first.  A job already placed in part searches only below the highest
  HyperNode its tier allows above where it runs, with no resource filter.  For eviction (gangpreempt,
  gangreclaim) the order is reversed, highest first, and at most
  ``hypernode.gradient.evict.max-hypernodes`` HyperNodes are returned.  Jobs without a hard topology
  get the caller's HyperNode alone.
- **HyperNode order** for a SubJob: bin packing, the share of each weighted resource a HyperNode
  would have in use with the SubJob's requests added ((used + request) / allocatable, 0 when it would
  not fit), weighted; ties on the best score broken by how many of the SubJob's tasks already run
  there.  Scaled by 100 × ``weight``.
- **Batch node order**: a task of a SubJob with a network topology scores a node by the tier of the
  lowest HyperNode joining it with where the SubJob runs ((maxTier − tier) / (maxTier − minTier); 1 on
  the same HyperNode; 0 when the SubJob runs nowhere yet), ties on the best broken by the SubJob's tasks
  there.  Any other task (``hypernode.binpack.normal-pod.enable``, on by default) scores a node by the
  bin-packing score of the HyperNode holding it at every tier, tier ``t`` weighted by
  ``fading^(t-1)``; a node in no HyperNode of a tier counts in full there.  Scaled by 100 × ``weight``.
- **Event handlers** keeping each HyperNode's used resources up to date as tasks are placed.

Arguments (Volcano's names and defaults; a negative weight or fading means the default):
``weight`` (1), ``hypernode.binpack.cpu`` (1), ``hypernode.binpack.memory`` (1),
``hypernode.binpack.resources`` (comma-separated names, each with
``hypernode.binpack.resources.<name>``, 1), ``hypernode.binpack.normal-pod.enable`` (true),
``hypernode.binpack.normal-pod.fading`` (0.8), ``hypernode.gradient.evict.max-hypernodes`` (8).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from vcsched.api.job_info import JobInfo
from vcsched.api.node_info import NodeInfo
from vcsched.api.resource import CPU, MEMORY, Resource
from vcsched.api.sub_job import SubJobInfo
from vcsched.api.task_info import TaskInfo
from vcsched.framework.arguments import Arguments
from vcsched.framework.interface import BatchScorer, Plugin, Point
from vcsched.framework.session import EventHandler, Session
from vcsched.framework.topology import PURPOSE_EVICT, SessionHyperNode, SessionTopology

MAX_NODE_SCORE = 100.0
RESOURCES = "hypernode.binpack.resources"


class HyperNodeUsage:
    """A HyperNode's summed node resources (``resourceStatus``); only ``used`` follows placements."""

    __slots__ = ("allocatable", "used", "idle", "future_idle")

    def __init__(self, nodes: Iterable[NodeInfo]) -> None:
        self.allocatable, self.used, self.idle, self.future_idle = Resource(), Resource(), Resource(), Resource()
        for n in nodes:
            self.allocatable.add(n.allocatable)
            self.used.add(n.used)
            self.idle.add(n.idle)
            self.future_idle.add(n.future_idle())


class NetworkTopologyAwarePlugin(Plugin):
    name = "network-topology-aware"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.weight = _weight(arguments, "weight")
        self.binpack: dict[str, int] = {CPU: _weight(arguments, "hypernode.binpack.cpu"),
                                        MEMORY: _weight(arguments, "hypernode.binpack.memory")}
        for name in arguments.get_str(RESOURCES, "").split(","):
            name = name.strip()
            if name:
                self.binpack[name] = _weight(arguments, f"{RESOURCES}.{name}")
        self.normal_pods = arguments.get_bool("hypernode.binpack.normal-pod.enable", True)
        fading = arguments.get_float("hypernode.binpack.normal-pod.fading", 0.8)
        self.fading = 0.8 if fading < 0 else fading
        evict = arguments.get_int("hypernode.gradient.evict.max-hypernodes", 8)
        self.evict_max = 8 if evict <= 0 else evict
        self.usage: dict[str, HyperNodeUsage] = {}
        self.topology: SessionTopology | None = None
        self.min_tier = self.max_tier = 0
        # HyperNodes holding every node of the session: their bin-packing term is the same for every
        # node, so it is left out of the normal-pod node score (the order of nodes does not change)
        self.uniform: frozenset[str] = frozenset()
        self.session: Session | None = None
        self.tier_weights: list[tuple[int, float]] = []
        self.requests: dict[str, dict[str, float]] = {}  # what each SubJob's tasks ask, by weighted resource
        self.total_tier_weight = 0.0
        self.missing_tier_weight = 0.0

    def on_session_open(self, ssn: Session) -> None:
        topo = self.topology = ssn.topology
        tiers = topo.tiers  # the tiers HyperNodes have, ascending
        self.min_tier, self.max_tier = tiers[0], tiers[-1]
        # Every tier from the lowest to the cluster top weighs fading^(tier−1).  (tier, weight) for the tiers
        # HyperNodes have; a tier between them that none has counts in full for every node, so those are
        # one sum, taken in closed form: tiers are integers from 0 up, and a span of 2^31 would not be
        # walked one by one (nor is it by a node's score, which walks the tiers HyperNodes have)
        self.tier_weights = [(t, _power(self.fading, t - 1)) for t in tiers]
        self.missing_tier_weight = sum(_gap_weight(self.fading, a, b) for a, b in zip(tiers, tiers[1:]))
        self.total_tier_weight = sum(w for _, w in self.tier_weights) + self.missing_tier_weight
        self.usage = {name: HyperNodeUsage(h.nodes) for name, h in topo.hypernodes.items()}
        self.session = ssn
        everywhere = len(ssn.node_list)
        self.uniform = frozenset(name for name, h in topo.hypernodes.items() if len(h.node_names) == everywhere)
        ssn.add(Point.HYPERNODE_ORDER, self.name, lambda sj, names: self.hypernode_order(ssn, sj, names))
        ssn.add(Point.BATCH_NODE_ORDER, self.name, NodeScorer(self, ssn))
        if self.normal_pods and len(self.uniform) < len(topo.hypernodes):
            ssn.add(Point.NODE_ORDER, self.name, self.normal_node_score)
        ssn.add(Point.HYPERNODE_GRADIENT_FOR_JOB, self.name, self.job_gradients)
        ssn.add(Point.HYPERNODE_GRADIENT_FOR_SUB_JOB, self.name, self.sub_job_gradients)
        ssn.add_event_handler(EventHandler(allocate=lambda t: self._use(t, 1), deallocate=lambda t: self._use(t, -1)))

    def _use(self, task: TaskInfo, sign: int) -> None:
        usage, uniform = self.usage, self.uniform
        touched: SessionHyperNode | None = None  # the largest HyperNode whose use, not every node's, moved
        for name in self.topology.holders(task.node_name):
            used = usage[name].used
            if sign > 0:
                used.add(task.resreq)
            else:
                used.sub(task.resreq)
            if name not in uniform:
                h = self.topology.hypernodes[name]
                if touched is None or len(h.node_names) > len(touched.node_names):
                    touched = h
        if touched is not None and self.normal_pods:
            # the normal-pod scores of its other nodes moved: the node search re-scores them
            for n in touched.nodes:
                if n.name != task.node_name:
                    self.session.touch_node(n)

    # -- gradients -----------------------------------------------------------------------------

    def job_gradients(self, job: JobInfo, hypernode: SessionHyperNode, purpose: str) -> list[list[SessionHyperNode]]:
        tier = job.hard_tier()
        if tier is None:
            return [[hypernode]]
        return self._gradients(hypernode, tier, job.allocated_hypernode, job.min_resources(), purpose)

    def sub_job_gradients(self, sj: SubJobInfo, hypernode: SessionHyperNode,
                          purpose: str) -> list[list[SessionHyperNode]]:
        tier = sj.hard_tier()
        if tier is None:
            return [[hypernode]]
        return self._gradients(hypernode, tier, sj.allocated_hypernode, sj.min_resources(), purpose)

    def _gradients(self, hypernode: SessionHyperNode, highest: int, allocated: str, minimum: Resource,
                   purpose: str) -> list[list[SessionHyperNode]]:
        """``hyperNodeGradientFn``: eligible HyperNodes by tier, lowest first (highest first, capped,
        for eviction); none when the job's allowed HyperNode and the caller's do not meet."""
        topo = self.topology
        root = self._search_root(hypernode, highest, allocated)
        if root is None:
            return []
        by_tier: dict[int, list[SessionHyperNode]] = {}
        queue, seen = deque([root]), {root.name}
        while queue:
            current = queue.popleft()
            if self._eligible(current, highest, allocated, minimum, purpose):
                by_tier.setdefault(current.tier, []).append(current)
            for child in current.children:
                if child not in seen and child in topo.hypernodes:
                    seen.add(child)
                    queue.append(topo.hypernodes[child])
        gradients = [by_tier[t] for t in sorted(by_tier)]
        if purpose != PURPOSE_EVICT:
            return gradients
        left, capped = self.evict_max, []
        for gradient in reversed(gradients):
            if not left:
                break
            taken = gradient if len(gradient) <= left else gradient[len(gradient) - left:]
            capped.append(taken)
            left -= len(taken)
        return capped

    def _search_root(self, available: SessionHyperNode, highest: int, allocated: str) -> SessionHyperNode | None:
        """``getSearchRoot``: the caller's HyperNode narrowed to the highest one the job's allowed tier
        permits above where it already runs."""
        if not allocated:
            return available
        topo = self.topology
        allowed = ""
        for ancestor in topo.ancestors(allocated):
            h = topo.hypernodes.get(ancestor)
            if h is None or h.tier > highest:
                break
            allowed = ancestor
        if not allowed:
            return None  # the job already spans more than its allowed tier
        lca = topo.lca(available.name, allowed)
        if lca == allowed:
            return available
        if lca == available.name:
            return topo.hypernodes[allowed]
        return None

    def _eligible(self, h: SessionHyperNode, highest: int, allocated: str, minimum: Resource, purpose: str) -> bool:
        if h.tier > highest:
            return False
        if allocated:
            return True
        usage = self.usage.get(h.name)
        if usage is None:
            return True
        if purpose == PURPOSE_EVICT:
            return minimum.less_equal(usage.allocatable)
        return minimum.less_equal(usage.idle) or minimum.less_equal(usage.future_idle)

    # -- scores ---------------------------------------------------------------------------------

    def hypernode_order(self, ssn: Session, sj: SubJobInfo, names: list[str]) -> dict[str, float]:
        """``HyperNodeOrderFn``: bin packing of the SubJob's requests, ties broken by its tasks there."""
        request = self.requests.get(sj.uid)
        if request is None:  # all the SubJob's tasks, placed or not (a session does not add or drop tasks)
            request = self.requests[sj.uid] = {}
            for t in sj.tasks.values():
                for name in t.resreq.resource_names():
                    if name in self.binpack:
                        request[name] = request.get(name, 0.0) + t.resreq.get(name)
        scores = {name: self._binpack(name, request) for name in names}
        best = max(scores.values(), default=0.0)
        tied = [name for name, s in scores.items() if s == best]
        if len(tied) > 1:
            for name in tied:
                scores[name] += self._task_share(name, sj)
        return {name: self._scaled(s) for name, s in scores.items()}

    def _binpack(self, hypernode: str, request: dict[str, float]) -> float:
        usage = self.usage.get(hypernode)
        if usage is None:
            return 0.0
        total, weights = 0.0, 0
        for name, req in request.items():
            weight = self.binpack[name]
            allocatable, used = usage.allocatable.get(name), usage.used.get(name)
            if used + req > allocatable:
                return 0.0
            total += weight * (used + req) / allocatable
            weights += weight
        return total / weights if weights > 0 else 0.0

    def _task_share(self, hypernode: str, sj: SubJobInfo) -> float:
        """``scoreWithTaskNum``: the share of the SubJob's tasks on the HyperNode's nodes."""
        if not sj.tasks:
            return 0.0
        return self.topology.task_count(hypernode, sj.tasks.values()) / len(sj.tasks)

    def _scaled(self, score: float) -> float:
        return MAX_NODE_SCORE * self.weight * score

    def tier_score(self, tier: int) -> float:
        if self.min_tier == self.max_tier:
            return 1.0
        if self.min_tier <= tier <= self.max_tier:
            return (self.max_tier - tier) / (self.max_tier - self.min_tier)
        return 0.0

    def topology_scores(self, task: TaskInfo, sj: SubJobInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        """``batchNodeOrderFnForNetworkAwarePods``."""
        allocated = task.job_allocated_hypernode
        if not allocated:
            return {}
        topo = self.topology
        scores: dict[str, float] = {}
        for n in nodes:
            leaf = topo.leaf_of(n.name)
            if not leaf:
                s = 0.0
            elif leaf == allocated:
                s = 1.0
            else:
                lca = topo.lca(leaf, allocated)
                s = self.tier_score(topo.hypernodes[lca].tier) if lca in topo.hypernodes else 0.0
            scores[n.name] = s
        best = max(scores.values(), default=0.0)
        tied = [name for name, s in scores.items() if s == best]
        if len(tied) > 1:
            shares: dict[str, float] = {}
            for name in tied:
                leaf = topo.leaf_of(name)
                share = shares.get(leaf)
                if share is None:
                    share = shares[leaf] = self._task_share(leaf, sj)
                scores[name] += share
        return scores

    def normal_node_score(self, task: TaskInfo, node: NodeInfo) -> float:
        """``batchNodeOrderFnForNormalPods`` for one node: its score depends on that node's HyperNodes
        alone, so the node search may share it between pods of one shape.  The terms of HyperNodes
        holding every node (the same for all) are left out.  0 for a pod with a network topology (the
        batch scorer's) and for a pod of no job."""
        job = self.session.jobs.get(task.job)
        if job is None:
            return 0.0
        if job.network_topology is not None or job.contains_sub_job_policy:
            sj = job.sub_job_of(task)
            if sj is not None and sj.with_network_topology:
                return 0.0
        return self._scaled(self._normal_score(task, node.name, self.uniform))

    def normal_scores(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        """``batchNodeOrderFnForNormalPods``: the HyperNodes' bin packing at every tier, faded by tier."""
        return {n.name: self._normal_score(task, n.name) for n in nodes}

    def _normal_score(self, task: TaskInfo, node: str, skip: frozenset[str] = frozenset()) -> float:
        weights, total_weight = self.tier_weights, self.total_tier_weight
        if total_weight <= 0:
            return 0.0
        request = {name: task.resreq.get(name) for name in task.resreq.resource_names() if name in self.binpack}
        held = self.topology.holder_by_tier(node)
        total = 0.0
        for t, w in weights:
            name = held.get(t)
            if name is None:
                total += w  # a node in no HyperNode of this tier counts in full
            elif name not in skip:
                total += w * self._binpack(name, request)
        return (total + self.missing_tier_weight) / total_weight


class NodeScorer(BatchScorer):
    """The plugin's BatchNodeOrderFn."""

    __slots__ = ("plugin", "ssn")

    def __init__(self, plugin: NetworkTopologyAwarePlugin, ssn: Session) -> None:
        self.plugin = plugin
        self.ssn = ssn

    def _sub_job(self, task: TaskInfo) -> SubJobInfo | None:
        job = self.ssn.jobs.get(task.job)
        if job is None or (job.network_topology is None and not job.contains_sub_job_policy):
            return None
        return job.sub_job_of(task)

    def applies(self, task: TaskInfo) -> bool:
        """Pods with a network topology, once their SubJob runs somewhere (other pods are scored node by
        node: ``normal_node_score``)."""
        sj = self._sub_job(task)
        return sj is not None and sj.with_network_topology and bool(task.job_allocated_hypernode)

    def score(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        plugin = self.plugin
        sj = self._sub_job(task)
        if sj is None or not sj.with_network_topology:
            return {}
        return {name: plugin._scaled(s) for name, s in plugin.topology_scores(task, sj, nodes).items()}


def _power(base: float, exponent: int) -> float:
    """Go's ``math.Pow``: 0 to the power 0 is 1, to a negative power +Inf."""
    if base == 0 and exponent < 0:
        return float("inf")
    return base ** exponent


def _gap_weight(fading: float, a: int, b: int) -> float:
    """The weights of the tiers strictly between ``a`` and ``b``: fading^a + ... + fading^(b−2)."""
    n = b - a - 1
    if n <= 0:
        return 0.0
    if fading == 1:
        return float(n)
    return (_power(fading, a) - _power(fading, b - 1)) / (1 - fading)


def _weight(arguments: Arguments, key: str) -> int:
    value = arguments.get_int(key, 1)
    return 1 if value < 0 else value
