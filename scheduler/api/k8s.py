"""Kubernetes scheduling semantics over vcsched's types.

What kube-scheduler's filter and score plugins compute, written as small pure
functions and immutable parsed forms, so the predicates and nodeorder plugins can
compose them the way Volcano composes the kube plugins:

- label selectors (``metav1.LabelSelector``) and node selectors
  (``v1.NodeSelector`` terms with ``matchExpressions`` and ``matchFields``);
- required and preferred node affinity;
- inter-pod affinity and anti-affinity terms, topology spread constraints (what
  they count across a domain is in ``pod_topology``);
- taints and tolerations, host ports.

The scorers in kube's integer arithmetic are in ``node_scores``.

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
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .node_info import NodeInfo, in_node_view
from .pod_spec import HostPort, PodSpec, Taint, Toleration
from .task_info import TaskInfo

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
        if not _has_terms(spec):
            return EMPTY_TERMS  # nothing parsed, nothing kept: most pods of a large session
        entry = self._by_spec.get(id(spec))
        if entry is not None and entry[0] is spec and entry[1] == task.namespace:
            return entry[2]
        terms = parse_pod_terms(spec, task.namespace)
        self._by_spec[id(spec)] = (spec, task.namespace, terms)
        return terms


# -- the pods kube sees on a node ----------------------------------------------------------------


def node_pods(node: NodeInfo) -> Iterator[TaskInfo]:
    for t in node.tasks.values():
        if in_node_view(t, t.status):
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
