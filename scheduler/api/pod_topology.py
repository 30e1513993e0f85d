"""What kube counts across a topology domain: inter-pod affinity and anti-affinity (the
InterPodAffinity filter with its PreFilter counts, and its score) and topology spread
constraints (the DoNotSchedule filter and the ScheduleAnyway score), over the terms
``k8s.parse_pod_terms`` parsed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .fit_errors import Status
from .k8s import (
    HOSTNAME_LABEL,
    MATCH_ALL_NODES,
    MAX_NODE_SCORE,
    REASON_EXISTING_ANTI_AFFINITY,
    REASON_POD_AFFINITY,
    REASON_POD_ANTI_AFFINITY,
    REASON_SPREAD,
    REASON_SPREAD_MISSING_LABEL,
    AffinityTerm,
    LabelSelector,
    PodTerms,
    RequiredNodeAffinity,
    SpreadConstraint,
    find_untolerated_taint,
    node_pods,
)
from .node_info import NodeInfo
from .pod_spec import Toleration
from .task_info import TaskInfo
from .types import StatusCode, TaskStatus

_MAX_INT32 = 2**31 - 1

# -- inter-pod affinity: filter ----------------------------------------------------------------

TopologyCounts = dict[tuple[str, str], int]


@dataclass(slots=True)
class InterPodFilterState:
    """InterPodAffinity's PreFilter state for one pod."""

    terms: PodTerms
    affinity_counts: TopologyCounts
    anti_affinity_counts: TopologyCounts
    existing_anti_affinity_counts: TopologyCounts
    matches_own_affinity: bool

    @property
    def skip(self) -> bool:
        return not (self.existing_anti_affinity_counts or self.terms.required_affinity
                    or self.terms.required_anti_affinity)

    def clone(self) -> "InterPodFilterState":
        return InterPodFilterState(self.terms, dict(self.affinity_counts), dict(self.anti_affinity_counts),
                                   dict(self.existing_anti_affinity_counts), self.matches_own_affinity)

    def update_with_pod(self, incoming: TaskInfo, pod: TaskInfo, pod_terms: PodTerms,
                        node_labels: Mapping[str, str], multiplier: int) -> None:
        """kube's ``AddPod``/``RemovePod`` (``updateWithPod``): count ``pod`` on a node with
        ``node_labels`` in (+1) or out (-1) of the incoming pod's counts."""
        ns, labels = incoming.namespace, incoming.spec.labels
        for term in pod_terms.required_anti_affinity:
            if term.matches(ns, labels):
                _update(self.existing_anti_affinity_counts, node_labels, term.topology_key, multiplier)
        pns, plabels = pod.namespace, pod.spec.labels
        aff_terms = self.terms.required_affinity
        if pod_matches_all_terms(aff_terms, pns, plabels):
            for term in aff_terms:
                _update(self.affinity_counts, node_labels, term.topology_key, multiplier)
        for term in self.terms.required_anti_affinity:
            if term.matches(pns, plabels):
                _update(self.anti_affinity_counts, node_labels, term.topology_key, multiplier)


def _update(counts: TopologyCounts, node_labels: Mapping[str, str], key: str, value: int) -> None:
    """Add ``value`` to the node's pair for ``key``; a pair counted down to zero is dropped, as kube's."""
    v = node_labels.get(key)
    if v is not None:
        pair = (key, v)
        n = counts.get(pair, 0) + value
        if n:
            counts[pair] = n
        else:
            del counts[pair]


def _bump(counts: TopologyCounts, node_labels: Mapping[str, str], key: str) -> None:
    v = node_labels.get(key)
    if v is not None:
        pair = (key, v)
        counts[pair] = counts.get(pair, 0) + 1


def pod_matches_all_terms(terms: Sequence[AffinityTerm], namespace: str, labels: Mapping[str, str]) -> bool:
    if not terms:
        return False
    for t in terms:
        if not t.matches(namespace, labels):
            return False
    return True


def inter_pod_filter_state(task: TaskInfo, terms: PodTerms, nodes: Iterable[NodeInfo],
                           with_inter_pod_terms: Iterable[tuple[NodeInfo, TaskInfo, PodTerms]]) -> InterPodFilterState:
    """Count, per topology pair, the existing pods the incoming pod's required terms select, and the
    existing pods whose required anti-affinity selects the incoming pod.

    ``nodes`` is every node of the session; ``with_inter_pod_terms`` the pods in the node
    view that carry inter-pod terms, with their node.
    """
    ns, labels = task.namespace, task.spec.labels
    existing: TopologyCounts = {}
    for node, _pod, pod_terms in with_inter_pod_terms:
        for term in pod_terms.required_anti_affinity:
            if term.matches(ns, labels):
                _bump(existing, node.spec.labels, term.topology_key)
    affinity: TopologyCounts = {}
    anti: TopologyCounts = {}
    aff_terms, anti_terms = terms.required_affinity, terms.required_anti_affinity
    if aff_terms or anti_terms:
        for node in nodes:
            node_labels = node.spec.labels
            for pod in node_pods(node):
                pns, plabels = pod.namespace, pod.spec.labels
                if aff_terms and pod_matches_all_terms(aff_terms, pns, plabels):
                    for term in aff_terms:
                        _bump(affinity, node_labels, term.topology_key)
                for term in anti_terms:
                    if term.matches(pns, plabels):
                        _bump(anti, node_labels, term.topology_key)
    return InterPodFilterState(terms, affinity, anti, existing, pod_matches_all_terms(aff_terms, ns, labels))


def inter_pod_filter(state: InterPodFilterState, node_labels: Mapping[str, str]) -> Status | None:
    """InterPodAffinity Filter: the pod's affinity, its anti-affinity, then existing pods' anti-affinity."""
    aff_terms = state.terms.required_affinity
    if aff_terms:
        counts = state.affinity_counts
        pods_exist = True
        for term in aff_terms:
            v = node_labels.get(term.topology_key)
            if v is None:
                return Status(StatusCode.UnschedulableAndUnresolvable, REASON_POD_AFFINITY)
            if counts.get((term.topology_key, v), 0) <= 0:
                pods_exist = False
        # the first pod of a group with affinity to itself may go anywhere with the topology labels
        if not pods_exist and not (not counts and state.matches_own_affinity):
            return Status(StatusCode.UnschedulableAndUnresolvable, REASON_POD_AFFINITY)
    anti = state.anti_affinity_counts
    if anti:
        for term in state.terms.required_anti_affinity:
            v = node_labels.get(term.topology_key)
            if v is not None and anti.get((term.topology_key, v), 0) > 0:
                return Status(StatusCode.Unschedulable, REASON_POD_ANTI_AFFINITY)
    existing = state.existing_anti_affinity_counts
    if existing:
        if len(existing) < len(node_labels):
            for (k, v), n in existing.items():
                if n > 0 and node_labels.get(k) == v:
                    return Status(StatusCode.Unschedulable, REASON_EXISTING_ANTI_AFFINITY)
        else:
            for k, v in node_labels.items():
                if existing.get((k, v), 0) > 0:
                    return Status(StatusCode.Unschedulable, REASON_EXISTING_ANTI_AFFINITY)
    return None


# -- inter-pod affinity: score --------------------------------------------------------------------

TopologyScore = dict[str, dict[str, int]]


def _add_score(m: TopologyScore, node_labels: Mapping[str, str], key: str, value: int) -> None:
    v = node_labels.get(key)
    if v is not None:
        per_key = m.setdefault(key, {})
        per_key[v] = per_key.get(v, 0) + value


def inter_pod_topology_score(task: TaskInfo, terms: PodTerms, nodes: Iterable[NodeInfo],
                             with_inter_pod_terms: Iterable[tuple[NodeInfo, TaskInfo, PodTerms]],
                             terms_of) -> TopologyScore | None:
    """InterPodAffinity PreScore (hardPodAffinityWeight 0, as Volcano configures it).

    With preferred terms of its own the pod is compared with every pod of every node;
    otherwise only the pods that carry inter-pod terms count.  None means Skip: no
    term matched anything.
    """
    ns, labels = task.namespace, task.spec.labels
    own_aff, own_anti = terms.preferred_affinity, terms.preferred_anti_affinity
    m: TopologyScore = {}
    if own_aff or own_anti:
        entries: Iterable[tuple[NodeInfo, TaskInfo, PodTerms]] = (
            (node, pod, terms_of(pod)) for node in nodes if node.spec.labels for pod in node_pods(node)
        )
    else:
        entries = with_inter_pod_terms
    for node, pod, pod_terms in entries:
        node_labels = node.spec.labels
        if not node_labels:
            continue
        for t in own_aff:
            if t.matches(pod.namespace, pod.spec.labels):
                _add_score(m, node_labels, t.topology_key, t.weight)
        for t in own_anti:
            if t.matches(pod.namespace, pod.spec.labels):
                _add_score(m, node_labels, t.topology_key, -t.weight)
        for t in pod_terms.preferred_affinity:
            if t.matches(ns, labels):
                _add_score(m, node_labels, t.topology_key, t.weight)
        for t in pod_terms.preferred_anti_affinity:
            if t.matches(ns, labels):
                _add_score(m, node_labels, t.topology_key, -t.weight)
    return m or None


def inter_pod_node_score(m: TopologyScore, node_labels: Mapping[str, str]) -> int:
    score = 0
    for key, values in m.items():
        v = node_labels.get(key)
        if v is not None:
            score += values.get(v, 0)
    return score


def min_max_normalize(scores: list[int]) -> list[int]:
    """InterPodAffinity NormalizeScore: ``100 × (s − min) / (max − min)``, truncated."""
    if not scores:
        return []
    lo, hi = min(scores), max(scores)
    diff = hi - lo
    if diff <= 0:
        return [0] * len(scores)
    return [int(float(MAX_NODE_SCORE) * ((s - lo) / diff)) for s in scores]


def default_normalize_score(scores: list[int], reverse: bool) -> list[int]:
    """``helper.DefaultNormalizeScore(MaxNodeScore, reverse, scores)``."""
    top = max(scores, default=0)
    if top <= 0:
        return [MAX_NODE_SCORE if reverse else s for s in scores]
    out = []
    for s in scores:
        s = MAX_NODE_SCORE * s // top
        out.append(MAX_NODE_SCORE - s if reverse else s)
    return out


# -- topology spread ------------------------------------------------------------------------------


def count_spread_matches(node: NodeInfo, selector: LabelSelector, namespace: str) -> int:
    """``countPodsMatchSelector``: terminating pods and other namespaces don't count; ``{}`` counts nothing."""
    if selector.empty:
        return 0
    n = 0
    for t in node.tasks.values():
        if t.status == TaskStatus.Releasing or t.namespace != namespace:
            continue
        if selector.matches(t.spec.labels):
            n += 1
    return n


def _has_all_keys(node_labels: Mapping[str, str], constraints: Sequence[SpreadConstraint]) -> bool:
    for c in constraints:
        if c.topology_key not in node_labels:
            return False
    return True


def _included(c: SpreadConstraint, node: NodeInfo, required: RequiredNodeAffinity,
              tolerations: Sequence[Toleration]) -> bool:
    """``matchNodeInclusionPolicies``."""
    if c.honor_node_affinity and not required.matches(node.name, node.spec.labels):
        return False
    if c.honor_node_taints and find_untolerated_taint(node.spec.taints, tolerations) is not None:
        return False
    return True


@dataclass(slots=True)
class SpreadFilterState:
    """PodTopologySpread's PreFilter state: matching pods per domain of each hard constraint."""

    constraints: tuple[SpreadConstraint, ...]
    counts: list[dict[str, int]]
    min_counts: list[int]
    self_match: list[bool]


def spread_filter_state(task: TaskInfo, terms: PodTerms, nodes: Iterable[NodeInfo]) -> SpreadFilterState:
    constraints = terms.hard_spread
    counts: list[dict[str, int]] = [{} for _ in constraints]
    if constraints:
        required = terms.required_node or MATCH_ALL_NODES
        tolerations = task.spec.tolerations
        ns = task.namespace
        for node in nodes:
            node_labels = node.spec.labels
            if not _has_all_keys(node_labels, constraints):
                continue
            for i, c in enumerate(constraints):
                if not _included(c, node, required, tolerations):
                    continue
                v = node_labels[c.topology_key]
                counts[i][v] = counts[i].get(v, 0) + count_spread_matches(node, c.selector, ns)
    mins = [min(c.values(), default=_MAX_INT32) for c in counts]
    labels = task.spec.labels
    return SpreadFilterState(constraints, counts, mins, [c.selector.matches(labels) for c in constraints])


def spread_filter(state: SpreadFilterState, node_labels: Mapping[str, str]) -> Status | None:
    """PodTopologySpread Filter: ``matchNum + selfMatch − globalMin ≤ maxSkew`` for every constraint."""
    for i, c in enumerate(state.constraints):
        v = node_labels.get(c.topology_key)
        if v is None:
            return Status(StatusCode.UnschedulableAndUnresolvable, REASON_SPREAD_MISSING_LABEL)
        counts = state.counts[i]
        # fewer eligible domains than minDomains: the global minimum is taken as 0
        min_match = 0 if len(counts) < c.min_domains else state.min_counts[i]
        skew = counts.get(v, 0) + (1 if state.self_match[i] else 0) - min_match
        if skew > c.max_skew:
            return Status(StatusCode.Unschedulable, REASON_SPREAD)
    return None


def _round_half_away(x: float) -> int:
    """Go's ``math.Round``."""
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def spread_scores(task: TaskInfo, terms: PodTerms, candidates: Sequence[NodeInfo],
                  all_nodes: Iterable[NodeInfo]) -> list[int] | None:
    """PodTopologySpread PreScore, Score and NormalizeScore over the candidate nodes (0–100 each).

    Only the pod's own ScheduleAnyway constraints: vcsched has no Service, ReplicaSet
    or StatefulSet objects to build the system-default constraints' selector from,
    so those default to nothing, as in kube when none selects the pod.  None: Skip.
    """
    constraints = terms.soft_spread
    if not constraints or not candidates:
        return None
    ns = task.namespace
    counts: list[dict[str, int]] = [{} for _ in constraints]
    ignored: set[str] = set()
    sizes = [0] * len(constraints)
    for node in candidates:
        node_labels = node.spec.labels
        if not _has_all_keys(node_labels, constraints):
            ignored.add(node.name)
            continue
        for i, c in enumerate(constraints):
            if c.topology_key == HOSTNAME_LABEL:
                continue
            v = node_labels[c.topology_key]
            if v not in counts[i]:
                counts[i][v] = 0
                sizes[i] += 1
    weights = []
    for i, c in enumerate(constraints):
        size = len(candidates) - len(ignored) if c.topology_key == HOSTNAME_LABEL else sizes[i]
        weights.append(math.log(float(size + 2)))
    required = terms.required_node or MATCH_ALL_NODES
    tolerations = task.spec.tolerations
    for node in all_nodes:
        node_labels = node.spec.labels
        if not _has_all_keys(node_labels, constraints):
            continue
        for i, c in enumerate(constraints):
            if not _included(c, node, required, tolerations):
                continue
            v = node_labels[c.topology_key]
            if v not in counts[i]:
                continue
            counts[i][v] += count_spread_matches(node, c.selector, ns)
    raw: list[int] = []
    for node in candidates:
        if node.name in ignored:
            raw.append(-1)
            continue
        node_labels = node.spec.labels
        score = 0.0
        for i, c in enumerate(constraints):
            v = node_labels.get(c.topology_key)
            if v is None:
                continue
            if c.topology_key == HOSTNAME_LABEL:
                cnt = count_spread_matches(node, c.selector, ns)
            else:
                cnt = counts[i][v]
            score += float(cnt) * weights[i] + float(c.max_skew - 1)
        raw.append(_round_half_away(score))
    valid = [s for s, nd in zip(raw, candidates) if nd.name not in ignored]
    lo = min(valid, default=0)
    hi = max(max(valid, default=0), 0)
    out = []
    for s, nd in zip(raw, candidates):
        if nd.name in ignored:
            out.append(0)
        elif hi == 0:
            out.append(MAX_NODE_SCORE)
        else:
            out.append(MAX_NODE_SCORE * (hi + lo - s) // hi)
    return out
