"""Kubernetes scheduling semantics over vcsched's types.

What kube-scheduler's filter and score plugins compute, written as small pure
functions and immutable parsed forms, so the predicates and nodeorder plugins can
compose them the way Volcano composes the kube plugins:

- label selectors (``metav1.LabelSelector``) and node selectors
  (``v1.NodeSelector`` terms with ``matchExpressions`` and ``matchFields``);
- required and preferred node affinity;
- inter-pod affinity and anti-affinity (required and preferred, with the
  symmetric "existing pods' anti-affinity" check);
- topology spread constraints (the DoNotSchedule filter and the ScheduleAnyway score);
- taints and tolerations, host ports;
- the resource scorers (LeastAllocated, MostAllocated, BalancedAllocation) and
  ImageLocality, in kube's integer arithmetic.

A pod's terms are parsed once into a ``PodTerms`` (``parse_pod_terms``, cached on
the JSON of the fields it reads); a ``TermsCache`` maps the pods of one session to
their terms by PodSpec identity.

The pods kube sees on a node (``in_node_view``) are the node's tasks, minus those
evicted in this session: Volcano's predicates plugin removes a pod from its node
view when a task is evicted (DeallocateFunc), while the pods the cluster already
reports as terminating stay in it.

Namespaces: vcsched keeps no Namespace objects, so a ``namespaceSelector`` is
matched against the one label every namespace carries,
``kubernetes.io/metadata.name: <name>``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .fit_errors import Status
from .node_info import NodeInfo
from .pod_spec import HostPort, PodSpec, Taint, Toleration
from .task_info import TaskInfo
from .types import StatusCode, TaskStatus

MAX_NODE_SCORE = 100

HOSTNAME_LABEL = "kubernetes.io/hostname"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
OBJECT_NAME_FIELD = "metadata.name"

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
DO_NOT_SCHEDULE_EFFECTS = frozenset({NO_SCHEDULE, NO_EXECUTE})
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
UNSCHEDULABLE_TAINT = Taint(TAINT_NODE_UNSCHEDULABLE, "", NO_SCHEDULE)

DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"
DEFAULT_PROTOCOL = "TCP"

# kube's filter reasons
REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_NODE_PORTS = "node(s) didn't have free ports for the requested pod ports"
REASON_POD_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_POD_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
REASON_SPREAD = "node(s) didn't match pod topology spread constraints"
REASON_SPREAD_MISSING_LABEL = REASON_SPREAD + " (missing required label)"
REASON_NODE_AFFINITY_CONFLICT = "pod affinity terms conflict"

_MAX_INT32 = 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_GO_INT = re.compile(r"[+-]?[0-9]+")


class SelectorError(ValueError):
    """A selector or affinity term the API server would not have accepted."""


def taint_reason(taint: Taint) -> str:
    """TaintToleration's filter reason, exactly kube's ``{key: value}`` format."""
    return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"


def parse_go_int64(raw: str) -> int | None:
    """``strconv.ParseInt(s, 10, 64)``: an optional sign and decimal digits, in range."""
    if not _GO_INT.fullmatch(raw):
        return None
    n = int(raw)
    return n if _INT64_MIN <= n <= _INT64_MAX else None


# -- label selectors ------------------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class Requirement:
    """One ``labels.Requirement``. ``Equals`` is stored as ``In`` with one value."""

    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist, Gt, Lt
    values: frozenset[str] = frozenset()
    number: int = 0  # the bound of Gt and Lt

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "In":
            v = labels.get(self.key)
            return v is not None and v in self.values
        if op == "NotIn":
            v = labels.get(self.key)
            return v is None or v not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        v = labels.get(self.key)
        if v is None:
            return False
        n = parse_go_int64(v)
        if n is None:
            return False
        return n > self.number if op == "Gt" else n < self.number


def new_requirement(key: Any, operator: str, values: Any) -> Requirement:
    """``labels.NewRequirement``'s checks on operator and values."""
    if not isinstance(key, str) or not key:
        raise SelectorError(f"invalid label key {key!r}")
    vals = [str(v) for v in (values or [])]
    if operator in ("In", "NotIn"):
        if not vals:
            raise SelectorError(f"{key}: for 'in', 'notin' operators, values set can't be empty")
        return Requirement(key, operator, frozenset(vals))
    if operator in ("Exists", "DoesNotExist"):
        if vals:
            raise SelectorError(f"{key}: values set must be empty for exists and does not exist")
        return Requirement(key, operator)
    if operator in ("Gt", "Lt"):
        if len(vals) != 1:
            raise SelectorError(f"{key}: for 'Gt', 'Lt' operators, exactly one value is required")
        n = parse_go_int64(vals[0])
        if n is None:
            raise SelectorError(f"{key}: for 'Gt', 'Lt' operators, the value must be an integer")
        return Requirement(key, operator, frozenset(vals), n)
    raise SelectorError(f"{operator!r} is not a valid selector operator")


@dataclass(slots=True, frozen=True)
class LabelSelector:
    """A parsed ``metav1.LabelSelector``: ``nothing`` for a nil selector, no requirements for ``{}``."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @property
    def empty(self) -> bool:
        """``Selector.Empty()``: the selector that selects everything."""
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for r in self.requirements:
            if not r.matches(labels):
                return False
        return True

    def merged_with(self, extra: Mapping[str, str]) -> "LabelSelector":
        """``mergeLabelSetWithSelector``: add ``key == value`` requirements (a nil selector stays nil)."""
        if self.nothing or not extra:
            return self
        reqs = tuple(Requirement(k, "In", frozenset((v,))) for k, v in sorted(extra.items()))
        return LabelSelector(reqs + self.requirements)


NOTHING = LabelSelector(nothing=True)
EVERYTHING = LabelSelector()


def parse_label_selector(raw: Mapping[str, Any] | None) -> LabelSelector:
    """``metav1.LabelSelectorAsSelector``: nil selects nothing, ``{}`` everything."""
    if raw is None:
        return NOTHING
    if not isinstance(raw, Mapping):
        raise SelectorError(f"label selector must be an object, got {raw!r}")
    match_labels = raw.get("matchLabels") or {}
    exprs = raw.get("matchExpressions") or []
    if not match_labels and not exprs:
        return EVERYTHING
    reqs = [new_requirement(k, "In", [v]) for k, v in match_labels.items()]
    for e in exprs:
        op = e.get("operator")
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise SelectorError(f"{op!r} is not a valid label selector operator")
        reqs.append(new_requirement(e.get("key"), op, e.get("values")))
    return LabelSelector(tuple(reqs))


def namespace_labels(namespace: str) -> dict[str, str]:
    """The labels vcsched knows of a namespace: the automatic name label only."""
    return {NAMESPACE_NAME_LABEL: namespace}


# -- node selectors and node affinity ---------------------------------------------------------


@dataclass(slots=True, frozen=True)
class FieldRequirement:
    """A ``matchFields`` entry on ``metadata.name``: ``In`` or ``NotIn`` one name."""

    name: str
    equal: bool

    def matches(self, node_name: str) -> bool:
        return (node_name == self.name) == self.equal


@dataclass(slots=True, frozen=True)
class NodeSelectorTerm:
    """One ``NodeSelectorTerm``: its requirements are ANDed. A term that failed to parse matches nothing."""

    labels: tuple[Requirement, ...] | None = None
    fields: tuple[FieldRequirement, ...] | None = None
    error: str = ""

    def matches(self, node_name: str, node_labels: Mapping[str, str]) -> bool:
        if self.error:
            return False
        if self.labels is not None:
            for r in self.labels:
                if not r.matches(node_labels):
                    return False
        if self.fields is not None and node_name:
            for f in self.fields:
                if not f.matches(node_name):
                    return False
        return True


def parse_node_selector_term(raw: Mapping[str, Any] | None) -> NodeSelectorTerm | None:
    """``newNodeSelectorTerm``; None for an empty term (which selects no node)."""
    raw = raw or {}
    exprs = raw.get("matchExpressions") or []
    fields = raw.get("matchFields") or []
    if not exprs and not fields:
        return None
    try:
        label_reqs = None
        if exprs:
            label_reqs = tuple(
                new_requirement(e.get("key"), e.get("operator") or "", e.get("values")) for e in exprs
            )
        field_reqs = None
        if fields:
            out = []
            for f in fields:
                if f.get("key") != OBJECT_NAME_FIELD:
                    raise SelectorError(f"field label not supported: {f.get('key')!r}")
                values = f.get("values") or []
                if len(values) != 1:
                    raise SelectorError("matchFields values must have one element")
                op = f.get("operator")
                if op not in ("In", "NotIn"):
                    raise SelectorError(f"{op!r} is not a valid selector operator")
                out.append(FieldRequirement(str(values[0]), op == "In"))
            field_reqs = tuple(out)
    except SelectorError as e:
        return NodeSelectorTerm(error=str(e))
    return NodeSelectorTerm(label_reqs, field_reqs)


@dataclass(slots=True, frozen=True)
class NodeSelector:
    """A ``v1.NodeSelector``: its terms are ORed; with no usable term it matches nothing."""

    terms: tuple[NodeSelectorTerm, ...]

    def matches(self, node_name: str, node_labels: Mapping[str, str]) -> bool:
        for t in self.terms:
            if t.matches(node_name, node_labels):
                return True
        return False


def parse_node_selector(raw: Mapping[str, Any]) -> NodeSelector:
    terms = []
    for t in raw.get("nodeSelectorTerms") or []:
        parsed = parse_node_selector_term(t)
        if parsed is not None:
            terms.append(parsed)
    return NodeSelector(tuple(terms))


@dataclass(slots=True, frozen=True)
class RequiredNodeAffinity:
    """``nodeaffinity.RequiredNodeAffinity``: the pod's nodeSelector AND its required node affinity."""

    node_selector: tuple[tuple[str, str], ...] = ()
    required: NodeSelector | None = None

    def matches(self, node_name: str, node_labels: Mapping[str, str]) -> bool:
        for k, v in self.node_selector:
            if node_labels.get(k) != v:
                return False
        if self.required is not None:
            return self.required.matches(node_name, node_labels)
        return True


MATCH_ALL_NODES = RequiredNodeAffinity()


@dataclass(slots=True, frozen=True)
class PreferredSchedulingTerms:
    """Weighted preferred node-affinity terms (weight 0 and empty terms dropped)."""

    terms: tuple[tuple[int, NodeSelectorTerm], ...]

    def score(self, node_name: str, node_labels: Mapping[str, str]) -> int:
        total = 0
        for weight, term in self.terms:
            if term.matches(node_name, node_labels):
                total += weight
        return total


def parse_preferred_terms(raw: Sequence[Mapping[str, Any]]) -> PreferredSchedulingTerms | None:
    """``NewPreferredSchedulingTerms``; None when there is nothing to score (or a term is invalid)."""
    out = []
    for t in raw:
        weight = int(t.get("weight") or 0)
        parsed = parse_node_selector_term(t.get("preference"))
        if weight == 0 or parsed is None:
            continue
        if parsed.error:
            return None
        out.append((weight, parsed))
    return PreferredSchedulingTerms(tuple(out)) if out else None


def node_name_conflict(required: Mapping[str, Any] | None) -> bool:
    """NodeAffinity PreFilter: a term whose ``metadata.name In`` sets do not intersect.

    Terms are walked in order; the first term without a node-name requirement makes
    every node eligible and ends the check.
    """
    if not required:
        return False
    for term in required.get("nodeSelectorTerms") or []:
        names: set[str] | None = None
        for f in (term or {}).get("matchFields") or []:
            if f.get("key") == OBJECT_NAME_FIELD and f.get("operator") == "In":
                s = {str(v) for v in f.get("values") or []}
                names = s if names is None else names & s
        if names is None:
            return False
        if not names:
            return True
    return False


# -- inter-pod affinity terms ---------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class AffinityTerm:
    """A parsed ``PodAffinityTerm`` (``weight`` is set for preferred terms)."""

    selector: LabelSelector
    namespaces: frozenset[str]
    namespace_selector: LabelSelector
    topology_key: str
    weight: int = 0

    def matches(self, namespace: str, labels: Mapping[str, str]) -> bool:
        """``AffinityTerm.Matches``: the pod is in one of the term's namespaces and its labels match."""
        if namespace in self.namespaces or (
            not self.namespace_selector.nothing and self.namespace_selector.matches(namespace_labels(namespace))
        ):
            return self.selector.matches(labels)
        return False


def parse_affinity_term(raw: Mapping[str, Any], pod_namespace: str, weight: int = 0) -> AffinityTerm:
    """``newAffinityTerm``: no namespaces and no namespaceSelector means the pod's own namespace."""
    selector = parse_label_selector(raw.get("labelSelector"))
    namespaces = raw.get("namespaces") or []
    ns_raw = raw.get("namespaceSelector")
    if not namespaces and ns_raw is None:
        ns = frozenset((pod_namespace,))
    else:
        ns = frozenset(str(n) for n in namespaces)
    return AffinityTerm(selector, ns, parse_label_selector(ns_raw), str(raw.get("topologyKey") or ""), weight)


# -- topology spread constraints ----------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class SpreadConstraint:
    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int = 1
    honor_node_affinity: bool = True  # nodeAffinityPolicy, default Honor
    honor_node_taints: bool = False  # nodeTaintsPolicy, default Ignore


def parse_spread_constraints(raw: Sequence[Mapping[str, Any]], pod_labels: Mapping[str, str],
                             action: str) -> tuple[SpreadConstraint, ...]:
    """``filterTopologySpreadConstraints``: the constraints with ``whenUnsatisfiable == action``."""
    out = []
    for c in raw:
        if c.get("whenUnsatisfiable") != action:
            continue
        selector = parse_label_selector(c.get("labelSelector"))
        keys = c.get("matchLabelKeys") or []
        if keys:
            selector = selector.merged_with({k: pod_labels[k] for k in keys if k in pod_labels})
        min_domains = c.get("minDomains")
        out.append(SpreadConstraint(
            max_skew=int(c.get("maxSkew") or 0),
            topology_key=str(c.get("topologyKey") or ""),
            selector=selector,
            min_domains=1 if min_domains is None else int(min_domains),
            honor_node_affinity=(c.get("nodeAffinityPolicy") or "Honor") == "Honor",
            honor_node_taints=(c.get("nodeTaintsPolicy") or "Ignore") == "Honor",
        ))
    return tuple(out)


# -- a pod's terms, parsed once -------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class PodTerms:
    """Everything the affinity, spread and node-affinity plugins read from one pod, parsed.

    ``required_node`` is None when the pod has neither a nodeSelector nor required
    node affinity (the NodeAffinity filter is skipped).  An ``*_error`` is the
    message of a term that failed to parse; the terms of that kind are then empty.
    """

    required_node: RequiredNodeAffinity | None = None
    node_name_conflict: bool = False
    preferred_node: PreferredSchedulingTerms | None = None
    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[AffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[AffinityTerm, ...] = ()
    affinity_error: str = ""
    hard_spread: tuple[SpreadConstraint, ...] = ()
    soft_spread: tuple[SpreadConstraint, ...] = ()
    spread_error: str = ""

    @property
    def has_preferred_pod_terms(self) -> bool:
        return bool(self.preferred_affinity or self.preferred_anti_affinity)


EMPTY_TERMS = PodTerms()


def _has_terms(spec: PodSpec) -> bool:
    return bool(spec.node_selector or spec.node_affinity or spec.pod_affinity or spec.pod_anti_affinity
                or spec.topology_spread_constraints)


def parse_pod_terms(spec: PodSpec, namespace: str) -> PodTerms:
    """The pod's parsed terms; identical pod templates share one parse (cached on their JSON)."""
    if not _has_terms(spec):
        return EMPTY_TERMS
    spread = spec.topology_spread_constraints
    # labels matter only through matchLabelKeys of spread constraints
    labels = spec.labels if any(c.get("matchLabelKeys") for c in spread) else {}
    key = json.dumps(
        [namespace, spec.node_selector, spec.node_affinity, spec.pod_affinity, spec.pod_anti_affinity, spread, labels],
        sort_keys=True, default=str,
    )
    return _parse_pod_terms_json(key)


@lru_cache(maxsize=4096)
def _parse_pod_terms_json(key: str) -> PodTerms:
    namespace, node_selector, node_affinity, pod_affinity, pod_anti, spread, labels = json.loads(key)
    required_raw = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    required_node = None
    if node_selector or required_raw is not None:
        required_node = RequiredNodeAffinity(
            tuple(sorted((str(k), str(v)) for k, v in node_selector.items())),
            parse_node_selector(required_raw) if required_raw is not None else None,
        )
    preferred_node = parse_preferred_terms(node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or [])

    affinity: dict[str, tuple[AffinityTerm, ...]] = {}
    errors = []
    for name, block, required in (
        ("required_affinity", pod_affinity, True),
        ("required_anti_affinity", pod_anti, True),
        ("preferred_affinity", pod_affinity, False),
        ("preferred_anti_affinity", pod_anti, False),
    ):
        try:
            if required:
                terms = tuple(parse_affinity_term(t, namespace)
                              for t in block.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
            else:
                terms = tuple(
                    parse_affinity_term(w.get("podAffinityTerm") or {}, namespace, int(w.get("weight") or 0))
                    for w in block.get("preferredDuringSchedulingIgnoredDuringExecution") or []
                )
        except SelectorError as e:
            errors.append(str(e))
            terms = ()
        affinity[name] = terms

    spread_error = ""
    try:
        hard = parse_spread_constraints(spread, labels, "DoNotSchedule")
        soft = parse_spread_constraints(spread, labels, "ScheduleAnyway")
    except SelectorError as e:
        spread_error = str(e)
        hard = soft = ()
    return PodTerms(
        required_node=required_node,
        node_name_conflict=node_name_conflict(required_raw),
        preferred_node=preferred_node,
        affinity_error="; ".join(errors),
        hard_spread=hard,
        soft_spread=soft,
        spread_error=spread_error,
        **affinity,
    )


class TermsCache:
    """The parsed terms of each pod of one session, by PodSpec identity.

    Holding the spec in the entry keeps its ``id`` from being reused while cached.
    """

    __slots__ = ("_by_spec",)

    def __init__(self) -> None:
        self._by_spec: dict[int, tuple[PodSpec, str, PodTerms]] = {}

    def get(self, task: TaskInfo) -> PodTerms:
        spec = task.spec
        entry = self._by_spec.get(id(spec))
        if entry is not None and entry[0] is spec and entry[1] == task.namespace:
            return entry[2]
        terms = parse_pod_terms(spec, task.namespace)
        self._by_spec[id(spec)] = (spec, task.namespace, terms)
        return terms


# -- the pods kube sees on a node ----------------------------------------------------------------


def is_terminating(task: TaskInfo) -> bool:
    """The pod carries a deletionTimestamp (it came from the cluster as Releasing)."""
    return bool((task.pod.get("metadata") or {}).get("deletionTimestamp"))


def in_node_view(task: TaskInfo) -> bool:
    """Whether kube's NodeInfo holds this pod: everything but tasks evicted in this session."""
    return task.status != TaskStatus.Releasing or is_terminating(task)


def node_pods(node: NodeInfo) -> Iterator[TaskInfo]:
    for t in node.tasks.values():
        if t.status != TaskStatus.Releasing or is_terminating(t):
            yield t


def node_pod_count(node: NodeInfo) -> int:
    return sum(1 for _ in node_pods(node))


class InterPodIndex:
    """The pods of the node view that carry inter-pod terms, per node, kept current from a change log.

    ``nodes`` is the session's node list and ``changes`` its log of changed node
    positions (``Session.node_changes``): ``sync`` rescans only the nodes logged
    since the last call.
    """

    __slots__ = ("nodes", "changes", "terms", "pos", "by_node", "preferred")

    def __init__(self, nodes: Sequence[NodeInfo], changes: Sequence[int], terms: TermsCache) -> None:
        self.nodes = nodes
        self.changes = changes
        self.terms = terms
        self.by_node: dict[int, list[tuple[NodeInfo, TaskInfo, PodTerms]]] = {}
        # node position → number of its pods with preferred pod (anti-)affinity terms
        self.preferred: dict[int, int] = {}
        for i, node in enumerate(nodes):
            self._scan(i, node)
        self.pos = len(changes)

    def _scan(self, i: int, node: NodeInfo) -> None:
        entries = [(node, t, self.terms.get(t)) for t in node_pods(node) if t.spec.has_inter_pod_terms]
        if entries:
            self.by_node[i] = entries
        else:
            self.by_node.pop(i, None)
        n = sum(1 for e in entries if e[2].has_preferred_pod_terms)
        if n:
            self.preferred[i] = n
        else:
            self.preferred.pop(i, None)

    def sync(self) -> None:
        if self.pos == len(self.changes):
            return
        for i in set(self.changes[self.pos:]):
            self._scan(i, self.nodes[i])
        self.pos = len(self.changes)

    def entries(self) -> Iterator[tuple[NodeInfo, TaskInfo, PodTerms]]:
        self.sync()
        for entries in self.by_node.values():
            yield from entries

    def any_preferred(self) -> bool:
        """Some pod in the node view has preferred pod (anti-)affinity terms."""
        self.sync()
        return bool(self.preferred)


# -- taints and tolerations -----------------------------------------------------------------


def tolerates(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    """``TolerationsTolerateTaint``."""
    for t in tolerations:
        if t.tolerates(taint):
            return True
    return False


def find_untolerated_taint(taints: Iterable[Taint], tolerations: Sequence[Toleration],
                           effects: frozenset[str] = DO_NOT_SCHEDULE_EFFECTS) -> Taint | None:
    """``FindMatchingUntoleratedTaint``: the first taint with one of ``effects`` no toleration covers."""
    for taint in taints:
        if taint.effect in effects and not tolerates(tolerations, taint):
            return taint
    return None


def prefer_no_schedule_tolerations(tolerations: Iterable[Toleration]) -> tuple[Toleration, ...]:
    """Tolerations with effect PreferNoSchedule or no effect (which covers every effect)."""
    return tuple(t for t in tolerations if not t.effect or t.effect == PREFER_NO_SCHEDULE)


def count_intolerable_prefer_no_schedule(taints: Iterable[Taint], tolerations: Sequence[Toleration]) -> int:
    return sum(1 for taint in taints if taint.effect == PREFER_NO_SCHEDULE and not tolerates(tolerations, taint))


# -- host ports -----------------------------------------------------------------------------------


class HostPortInfo:
    """``framework.HostPortInfo``: host IP → set of (protocol, port) in use."""

    __slots__ = ("by_ip",)

    def __init__(self) -> None:
        self.by_ip: dict[str, set[tuple[str, int]]] = {}

    def add(self, hp: HostPort) -> None:
        if hp.port <= 0:
            return
        ip = hp.host_ip or DEFAULT_BIND_ALL_HOST_IP
        self.by_ip.setdefault(ip, set()).add((hp.protocol or DEFAULT_PROTOCOL, hp.port))

    def conflicts(self, hp: HostPort) -> bool:
        """``CheckConflict``: 0.0.0.0 conflicts with any IP; a specific IP with itself and 0.0.0.0."""
        if hp.port <= 0:
            return False
        ip = hp.host_ip or DEFAULT_BIND_ALL_HOST_IP
        pp = (hp.protocol or DEFAULT_PROTOCOL, hp.port)
        if ip == DEFAULT_BIND_ALL_HOST_IP:
            return any(pp in used for used in self.by_ip.values())
        for key in (DEFAULT_BIND_ALL_HOST_IP, ip):
            used = self.by_ip.get(key)
            if used is not None and pp in used:
                return True
        return False


def node_host_ports(node: NodeInfo) -> HostPortInfo:
    info = HostPortInfo()
    for t in node_pods(node):
        for hp in t.spec.host_ports:
            info.add(hp)
    return info


def fits_ports(wanted: Iterable[HostPort], used: HostPortInfo) -> bool:
    for hp in wanted:
        if used.conflicts(hp):
            return False
    return True


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


# -- resource scorers (noderesources) -------------------------------------------------------------


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    if requested > capacity:
        requested = capacity
    return requested * MAX_NODE_SCORE // capacity


def weighted_resource_score(per_resource, requested: Sequence[int], allocatable: Sequence[int],
                            weights: Sequence[int]) -> int:
    """``leastResourceScorer``/``mostResourceScorer``: ``Σ score×w / Σw`` over resources with allocatable."""
    total = wsum = 0
    for req, alloc, w in zip(requested, allocatable, weights):
        if alloc == 0:
            continue
        total += per_resource(req, alloc) * w
        wsum += w
    return total // wsum if wsum else 0


def weighted_resource_score2(per_resource, req0: int, alloc0: int, req1: int, alloc1: int, w0: int, w1: int) -> int:
    """``weighted_resource_score`` for two resources (cpu, memory), without building sequences."""
    total = wsum = 0
    if alloc0 != 0:
        total += per_resource(req0, alloc0) * w0
        wsum += w0
    if alloc1 != 0:
        total += per_resource(req1, alloc1) * w1
        wsum += w1
    return total // wsum if wsum else 0


def balanced_resource_score2(req0: int, alloc0: int, req1: int, alloc1: int) -> int:
    """``balanced_resource_score`` for two resources (cpu, memory): the same arithmetic, no lists."""
    if alloc0 == 0 or alloc1 == 0:
        return MAX_NODE_SCORE  # at most one fraction: std 0, int((1 - 0.0) × 100.0)
    f0 = float(req0) / float(alloc0)
    f1 = float(req1) / float(alloc1)
    if f0 > 1:
        f0 = 1.0
    if f1 > 1:
        f1 = 1.0
    return int((1 - abs((f0 - f1) / 2)) * float(MAX_NODE_SCORE))


def balanced_resource_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """``balancedResourceScorer``: ``(1 − std of the used fractions) × 100``, truncated."""
    fractions = []
    for req, alloc in zip(requested, allocatable):
        if alloc == 0:
            continue
        f = float(req) / float(alloc)
        fractions.append(1.0 if f > 1 else f)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
    return int((1 - std) * float(MAX_NODE_SCORE))


# -- image locality ---------------------------------------------------------------------------------

MB = 1024 * 1024
IMAGE_MIN_THRESHOLD = 23 * MB
IMAGE_MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    """Add ``:latest`` when the image has no tag."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def scaled_image_score(size: int, num_nodes: int, total_nodes: int) -> int:
    """An image's size scaled by the share of nodes that have it."""
    spread = float(num_nodes) / float(total_nodes)
    return int(float(size) * spread)


def image_locality_score(sum_scores: int, num_containers: int) -> int:
    """``calculatePriority``: the summed score clamped to [23MB, 1000MB × containers], mapped to 0–100."""
    max_threshold = IMAGE_MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < IMAGE_MIN_THRESHOLD:
        sum_scores = IMAGE_MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    return _go_div(MAX_NODE_SCORE * (sum_scores - IMAGE_MIN_THRESHOLD), max_threshold - IMAGE_MIN_THRESHOLD)


def _go_div(a: int, b: int) -> int:
    """Go's integer division, truncating toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q
