"""nodeorder: kube-scheduler's scorers with Volcano's weights (plugins/nodeorder/nodeorder.go).

Each kube scorer gives a node 0–100; the plugin adds them up, each times its
weight (a weight of 0 switches the scorer off).

- Scores that depend only on the task and the node (LeastAllocated,
  MostAllocated, BalancedAllocation, ImageLocality) form one ``NODE_ORDER`` function.
- Scores normalised over the candidate nodes (NodeAffinity's preferred terms,
  TaintToleration's PreferNoSchedule, InterPodAffinity, PodTopologySpread) form one
  ``BATCH_NODE_ORDER`` scorer, which says per task whether any of them can tell
  the nodes apart (``applies``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from vcsched.api.k8s import (
    PREFER_NO_SCHEDULE,
    InterPodIndex,
    TermsCache,
    count_intolerable_prefer_no_schedule,
    prefer_no_schedule_tolerations,
    tolerates,
)
from vcsched.api.node_info import GPU, NodeInfo, PodRequests
from vcsched.api.node_scores import (
    balanced_resource_score,
    balanced_resource_score2,
    image_locality_score,
    least_requested_score,
    most_requested_score,
    normalized_image_name,
    scaled_image_score,
    weighted_resource_score2,
)
from vcsched.api.pod_spec import Taint, Toleration
from vcsched.api.pod_topology import (
    default_normalize_score,
    inter_pod_node_score,
    inter_pod_topology_score,
    min_max_normalize,
    spread_scores,
)
from vcsched.api.task_info import TaskInfo
from vcsched.framework.arguments import Arguments
from vcsched.framework.interface import BatchScorer, Plugin, Point

if TYPE_CHECKING:
    from vcsched.framework.session import Session

LEAST_REQUESTED_WEIGHT = "leastrequested.weight"
MOST_REQUESTED_WEIGHT = "mostrequested.weight"
BALANCED_RESOURCE_WEIGHT = "balancedresource.weight"
NODE_AFFINITY_WEIGHT = "nodeaffinity.weight"
POD_AFFINITY_WEIGHT = "podaffinity.weight"
TAINT_TOLERATION_WEIGHT = "tainttoleration.weight"
IMAGE_LOCALITY_WEIGHT = "imagelocality.weight"
POD_TOPOLOGY_SPREAD_WEIGHT = "podtopologyspread.weight"

# NodeResourcesFit's resource weights: LeastAllocated cpu/memory 50/50, MostAllocated 1/1
LEAST_ALLOCATED_WEIGHTS = (50, 50)
MOST_ALLOCATED_WEIGHTS = (1, 1)


class NodeOrderPlugin(Plugin):
    name = "nodeorder"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        a = arguments
        self.least_requested_weight = a.get_int(LEAST_REQUESTED_WEIGHT, 1)
        self.most_requested_weight = a.get_int(MOST_REQUESTED_WEIGHT, 0)
        self.balanced_resource_weight = a.get_int(BALANCED_RESOURCE_WEIGHT, 1)
        self.node_affinity_weight = a.get_int(NODE_AFFINITY_WEIGHT, 2)
        self.pod_affinity_weight = a.get_int(POD_AFFINITY_WEIGHT, 2)
        self.taint_toleration_weight = a.get_int(TAINT_TOLERATION_WEIGHT, 3)
        self.image_locality_weight = a.get_int(IMAGE_LOCALITY_WEIGHT, 1)
        self.pod_topology_spread_weight = a.get_int(POD_TOPOLOGY_SPREAD_WEIGHT, 2)
        # per session, set in on_session_open
        self._total_nodes = 0
        self._image_nodes: dict[str, int] = {}
        # ImageLocality on a node without images, by the pod's container count
        self._no_images: dict[int, int] = {}

    def on_session_open(self, ssn: "Session") -> None:
        nodes = ssn.node_list
        self._total_nodes = len(nodes)
        self._image_nodes = {}
        for n in nodes:
            for image in n.spec.images:
                self._image_nodes[image] = self._image_nodes.get(image, 0) + 1
        if (self.least_requested_weight or self.most_requested_weight or self.balanced_resource_weight
                or self.image_locality_weight):
            ssn.add(Point.NODE_ORDER, self.name, self.node_order)

        terms = TermsCache()
        scorers: list[BatchScorer] = []
        if self.node_affinity_weight:
            scorers.append(NodeAffinityScorer(self.node_affinity_weight, terms))
        if self.taint_toleration_weight:
            scorers.append(TaintTolerationScorer(self.taint_toleration_weight, nodes))
        if self.pod_affinity_weight:
            scorers.append(InterPodAffinityScorer(self.pod_affinity_weight, ssn, terms))
        if self.pod_topology_spread_weight:
            scorers.append(PodTopologySpreadScorer(self.pod_topology_spread_weight, nodes, terms))
        if scorers:
            ssn.add(Point.BATCH_NODE_ORDER, self.name, NodeOrderBatch(scorers))

    # -- per-node scores -------------------------------------------------------------------------------

    def node_order(self, task: TaskInfo, node: NodeInfo) -> float:
        """LeastAllocated, MostAllocated, BalancedAllocation and ImageLocality, weighted and summed."""
        spec = task.spec
        alloc = node.allocatable
        alloc_cpu, alloc_mem = int(alloc.milli_cpu), int(alloc.memory)
        score = 0
        least, most, balanced = self.least_requested_weight, self.most_requested_weight, self.balanced_resource_weight
        if least or most or balanced:
            used = node.requested
            if least or most:
                req_cpu = used.nonzero_milli_cpu + spec.nonzero_milli_cpu
                req_mem = used.nonzero_memory + spec.nonzero_memory
                if least:
                    score += least * weighted_resource_score2(
                        least_requested_score, req_cpu, alloc_cpu, req_mem, alloc_mem, *LEAST_ALLOCATED_WEIGHTS)
                if most:
                    score += most * weighted_resource_score2(
                        most_requested_score, req_cpu, alloc_cpu, req_mem, alloc_mem, *MOST_ALLOCATED_WEIGHTS)
            if balanced:
                score += balanced * self._balanced(task, alloc_cpu, alloc_mem, node, used)
        if self.image_locality_weight and spec.images:
            score += self.image_locality_weight * self._image_locality(task, node)
        return float(score)

    @staticmethod
    def _balanced(task: TaskInfo, alloc_cpu: int, alloc_mem: int, node: NodeInfo, used: PodRequests) -> int:
        """BalancedAllocation on actual requests; a pod that requests nothing scores 0 (PreScore Skip)."""
        req = task.resreq
        cpu, mem, gpu = int(req.milli_cpu), int(req.memory), int(req.scalars.get(GPU, 0.0))
        if not (cpu or mem or gpu):
            return 0
        if not gpu or GPU not in node.allocatable.scalars:
            return balanced_resource_score2(used.milli_cpu + cpu, alloc_cpu, used.memory + mem, alloc_mem)
        requested = [used.milli_cpu + cpu, used.memory + mem]
        allocatable = [alloc_cpu, alloc_mem]
        if gpu:
            alloc_gpu = node.allocatable.scalars.get(GPU)
            if alloc_gpu is not None:
                requested.append(used.gpu + gpu)
                allocatable.append(int(alloc_gpu))
        return balanced_resource_score(requested, allocatable)

    def _image_locality(self, task: TaskInfo, node: NodeInfo) -> int:
        images = task.spec.images
        on_node = node.spec.images
        if not on_node:
            n = len(images)
            s = self._no_images.get(n)
            if s is None:
                s = self._no_images[n] = image_locality_score(0, n)
            return s
        total = 0
        if on_node:
            for image in images:
                name = normalized_image_name(image)
                size = on_node.get(name)
                if size is not None:
                    total += scaled_image_score(size, self._image_nodes.get(name, 1), self._total_nodes)
        return image_locality_score(total, len(images))


# -- batch scorers ------------------------------------------------------------------------------------


def _weighted(nodes: Sequence[NodeInfo], scores: Sequence[int], weight: int) -> dict[str, float]:
    return {n.name: float(s * weight) for n, s in zip(nodes, scores)}


class NodeAffinityScorer(BatchScorer):
    """Preferred node-affinity terms: the matching weights, normalised to ``100 × s / max``."""

    def __init__(self, weight: int, terms: TermsCache) -> None:
        self.weight = weight
        self.terms = terms

    def applies(self, task: TaskInfo) -> bool:
        return bool(task.spec.node_affinity) and self.terms.get(task).preferred_node is not None

    def score(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, float]:
        preferred = self.terms.get(task).preferred_node
        if preferred is None:
            return {}
        raw = [preferred.score(n.name, n.spec.labels) for n in nodes]
        return _weighted(nodes, default_normalize_score(raw, reverse=False), self.weight)


class TaintTolerationScorer(BatchScorer):
    """PreferNoSchedule taints the pod does not tolerate, counted and reverse-normalised."""

    def __init__(self, weight: int, nodes: Sequence[NodeInfo]) -> None:
        self.weight = weight
        seen: dict[Taint, None] = {}
        for n in nodes:
            for t in n.spec.taints:
                if t.effect == PREFER_NO_SCHEDULE:
                    seen[t] = None
        # node taints don't change during a session
        self.prefer_taints = tuple(seen)
        self._applies: dict[tuple[Toleration, ...], bool] = {}

    def applies(self, task: TaskInfo) -> bool:
        if not self.prefer_taints:
            return False
        tolerations = task.spec.tolerations
        hit = self._applies.get(tolerations)
        if hit is None:
            prefer = prefer_no_schedule_tolerations(tolerations)
            hit = any(not tolerates(prefer, t) for t in self.prefer_taints)
            self._applies[tolerations] = hit
        return hit

    def score(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, float]:
        prefer = prefer_no_schedule_tolerations(task.spec.tolerations)
        raw = [count_intolerable_prefer_no_schedule(n.spec.taints, prefer) for n in nodes]
        return _weighted(nodes, default_normalize_score(raw, reverse=True), self.weight)


class InterPodAffinityScorer(BatchScorer):
    """Preferred pod affinity and anti-affinity, both the pod's and the existing pods', min–max normalised."""

    def __init__(self, weight: int, ssn: "Session", terms: TermsCache) -> None:
        self.weight = weight
        self.nodes = ssn.node_list
        self.changes = ssn.node_changes
        self.enabled = bool(ssn.has_inter_pod_terms)
        self.terms = terms
        self._index: InterPodIndex | None = None

    def _entries(self) -> InterPodIndex:
        if self._index is None:
            self._index = InterPodIndex(self.nodes, self.changes, self.terms)
        return self._index

    def applies(self, task: TaskInfo) -> bool:
        if not self.enabled:
            return False
        if task.spec.has_inter_pod_terms and self.terms.get(task).has_preferred_pod_terms:
            return True
        return self._entries().any_preferred()

    def score(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, float]:
        terms = self.terms.get(task)
        m = inter_pod_topology_score(task, terms, self.nodes, self._entries().entries(), self.terms.get)
        if m is None:
            return {}
        raw = [inter_pod_node_score(m, n.spec.labels) for n in nodes]
        return _weighted(nodes, min_max_normalize(raw), self.weight)


class PodTopologySpreadScorer(BatchScorer):
    """The pod's ScheduleAnyway spread constraints: fewer matching pods in a domain scores higher."""

    def __init__(self, weight: int, nodes: Sequence[NodeInfo], terms: TermsCache) -> None:
        self.weight = weight
        self.nodes = nodes
        self.terms = terms

    def applies(self, task: TaskInfo) -> bool:
        return bool(task.spec.topology_spread_constraints) and bool(self.terms.get(task).soft_spread)

    def score(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, float]:
        scores = spread_scores(task, self.terms.get(task), nodes, self.nodes)
        if scores is None:
            return {}
        return _weighted(nodes, scores, self.weight)


class NodeOrderBatch(BatchScorer):
    """The plugin's set-dependent scorers as the one batch function Volcano registers."""

    def __init__(self, scorers: list[BatchScorer]) -> None:
        self.scorers = scorers

    def applies(self, task: TaskInfo) -> bool:
        for s in self.scorers:
            if s.applies(task):
                return True
        return False

    def score(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, float]:
        total = {n.name: 0.0 for n in nodes}
        for s in self.scorers:
            if not s.applies(task):
                continue
            for name, v in s.score(task, nodes).items():
                total[name] = total.get(name, 0.0) + v
        return total
