"""HyperNodes: the cluster's network fabric as a tree (topology.volcano.sh/v1alpha1, api/hyper_node_info.go).

A HyperNode is a switch (or any domain of fast links) at a ``tier`` (0 and up, the higher the
farther apart its nodes are), with members: nodes (selected by exact name, by a regular expression
over node names, or by labels) or other HyperNodes (by exact name only).  From them the scheduler
derives, for every HyperNode, its parent, its children and the set of real nodes below it.

Volcano keeps that structure incrementally, rebuilding the ancestor chain of whatever changed;
``HyperNodeTree.build`` derives it at once from all HyperNodes and nodes, which gives the same tree
whenever the input is consistent.  Where it is not, the tree is not ready (Volcano's
``HyperNodesReadyToSchedule`` false: jobs with a network topology wait) and ``error`` says why:

- a HyperNode among its own descendants: ``cyclic dependency detected: ...``;
- a HyperNode claimed as a member by two HyperNodes: the first claim, by name, wins, and the second is
  ``HyperNode x already has a parent a, and cannot set another parent b``.

Regular expressions are Go's (RE2), matched anywhere in the node name as Go's ``MatchString`` does;
an invalid one selects nothing, as in Volcano (simulate refuses it at input), and so does a
``labelMatch`` that does not convert to a selector; the tree stays ready.  Every such problem, and
the one that makes the tree not ready, is in ``problems`` (HyperNode, message): the cache logs each
once and the session turns each into a Warning event on its HyperNode, once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import re2

from .k8s import LabelSelector, SelectorError, parse_label_selector

MEMBER_NODE = "Node"
MEMBER_HYPERNODE = "HyperNode"

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a bad pattern is reported by us, not on stderr by the library


def compile_pattern(pattern: str) -> Any:
    """A Go (RE2) regular expression; ``re2.error`` when Go would not compile it."""
    return re2.compile(pattern, _RE2_OPTIONS)


@dataclass(frozen=True, slots=True)
class Member:
    """One ``spec.members`` entry: exactly one of ``exact``, ``pattern`` and ``labels`` is set."""

    type: str  # Node or HyperNode
    exact: str | None = None
    pattern: str | None = None
    labels: LabelSelector | None = None  # None also for a labelMatch that selects nothing
    error: str = ""  # why this member selects nothing though it names a selector (field: message)

    def select(self, nodes: Iterable[tuple[str, Mapping[str, str]]]) -> set[str]:
        """``GetMembers``: the node names this member selects from (name, labels) pairs."""
        if self.exact is not None:
            return {self.exact} if self.exact else set()
        if self.pattern is not None:
            try:
                regex = compile_pattern(self.pattern)
            except re2.error:
                return set()
            return {name for name, _ in nodes if regex.search(name)}
        if self.labels is not None:
            return {name for name, labels in nodes if self.labels.matches(labels)}
        return set()


@dataclass(frozen=True, slots=True)
class HyperNode:
    """A HyperNode's spec as the scheduler reads it."""

    name: str
    tier: int
    tier_name: str = ""
    members: tuple[Member, ...] = ()
    uid: str = ""  # the object's metadata.uid (what an Event about it refers to)

    @property
    def has_selector_members(self) -> bool:
        """Members chosen by regex or labels: their nodes change with the cluster's nodes."""
        return any(m.pattern is not None or m.labels is not None for m in self.members)


def hypernode_from(obj: Mapping[str, Any]) -> HyperNode:
    """Parse a HyperNode manifest (validated by simulate, or as the API server stores it)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    members = []
    for i, raw in enumerate(spec.get("members") or []):
        selector = raw.get("selector") or {}
        exact = (selector.get("exactMatch") or {}).get("name") if "exactMatch" in selector else None
        pattern = (selector.get("regexMatch") or {}).get("pattern") if "regexMatch" in selector else None
        labels = None
        error = ""
        if pattern is not None:
            try:
                compile_pattern(pattern)
            except re2.error as e:  # Volcano: "Failed to compile regex pattern", the member selects nothing
                error = (f"spec.members[{i}].selector.regexMatch.pattern: {pattern!r} is not a valid regular "
                         f"expression ({e}); the member selects no node")
        label_match = selector.get("labelMatch")
        if label_match is not None and (label_match.get("matchLabels") or label_match.get("matchExpressions")):
            try:
                labels = parse_label_selector(label_match)
            except SelectorError as e:  # Volcano: a selector that does not convert selects nothing
                labels = None
                error = f"spec.members[{i}].selector.labelMatch: {e}; the member selects no node"
        members.append(Member(str(raw.get("type") or ""), exact, pattern, labels, error))
    return HyperNode(str(meta.get("name") or ""), int(spec.get("tier") or 0), str(spec.get("tierName") or ""),
                     tuple(members), str(meta.get("uid") or ""))


@dataclass(slots=True)
class HyperNodeInfo:
    """One HyperNode in the tree: its place and the real nodes below it."""

    name: str
    tier: int
    tier_name: str = ""
    parent: str = ""
    children: set[str] = field(default_factory=set)
    nodes: frozenset[str] = frozenset()  # Volcano's realNodesSet
    exists: bool = True  # False: named as a member, no such HyperNode (yet)


class HyperNodeTree:
    """The derived structure the sessions read (immutable once built)."""

    __slots__ = ("hypernodes", "by_tier", "tier_names", "ready", "error", "error_at", "problems")

    def __init__(self) -> None:
        self.hypernodes: dict[str, HyperNodeInfo] = {}
        self.by_tier: dict[int, set[str]] = {}
        self.tier_names: dict[str, int] = {}
        self.ready = True
        self.error = ""
        self.error_at = ""  # the HyperNode whose members the error is about
        # (HyperNode, message): members that select nothing by mistake, and the error above
        self.problems: list[tuple[str, str]] = []

    @classmethod
    def build(cls, hypernodes: Mapping[str, HyperNode],
              nodes: Iterable[tuple[str, Mapping[str, str]]]) -> "HyperNodeTree":
        tree = cls()
        node_list = list(nodes)
        infos = tree.hypernodes
        for name in sorted(hypernodes):
            hn = hypernodes[name]
            infos[name] = HyperNodeInfo(name, hn.tier, hn.tier_name)
            tree.by_tier.setdefault(hn.tier, set()).add(name)
            if hn.tier_name:
                tree.tier_names[hn.tier_name] = hn.tier  # the last one wins on a conflict, as in Volcano
            tree.problems.extend((name, m.error) for m in hn.members if m.error)
        # parents first: a member already claimed by another HyperNode is an error
        for name in sorted(hypernodes):
            for m in hypernodes[name].members:
                if m.type != MEMBER_HYPERNODE or not m.exact:
                    continue  # a HyperNode member is named exactly, or not at all
                child = infos.get(m.exact)
                if child is None:
                    child = infos[m.exact] = HyperNodeInfo(m.exact, 0, exists=False)
                if child.parent and child.parent != name:
                    tree._fail(name, f"HyperNode {m.exact} already has a parent {child.parent}, "
                                     f"and cannot set another parent {name}")
                    continue
                child.parent = name
                infos[name].children.add(m.exact)
        resolved: dict[str, frozenset[str]] = {}
        for name in sorted(hypernodes):
            tree._real_nodes(name, hypernodes, node_list, resolved, [])
        for name, info in infos.items():
            info.nodes = resolved.get(name, frozenset())
        return tree

    def _fail(self, at: str, error: str) -> None:
        if self.ready:
            self.ready = False
            self.error = error
            self.error_at = at
            self.problems.append((at, error))

    def _real_nodes(self, name: str, hypernodes: Mapping[str, HyperNode], nodes: list[tuple[str, Mapping[str, str]]],
                    resolved: dict[str, frozenset[str]], chain: list[str]) -> frozenset[str]:
        """The real nodes below ``name``; a HyperNode met again on its own chain is a cycle."""
        if name in chain:
            self._fail(chain[-1], f"cyclic dependency detected: HyperNode {name} is already in the ancestor chain "
                       f"{sorted(chain)}")
            return frozenset()
        done = resolved.get(name)
        if done is not None:
            return done
        hn = hypernodes.get(name)
        if hn is None:
            return frozenset()
        chain.append(name)
        out: set[str] = set()
        for m in hn.members:
            if m.type == MEMBER_NODE:
                out |= m.select(nodes)
            elif m.type == MEMBER_HYPERNODE and m.exact:
                out |= self._real_nodes(m.exact, hypernodes, nodes, resolved, chain)
        chain.pop()
        resolved[name] = frozenset(out)
        return resolved[name]

    # -- queries ------------------------------------------------------------------------------

    def ancestors(self, name: str) -> list[str]:
        """``GetAncestors``: ``name``, its parent, and so on up to a top HyperNode."""
        return ancestors(name, self.hypernodes)

    def lowest_common_ancestor(self, a: str, b: str) -> str:
        """``GetLCAHyperNode``: the lowest HyperNode above both ("" when they share none)."""
        return lowest_common_ancestor(a, b, self.hypernodes)

    def tier_of(self, name: str) -> int | None:
        info = self.hypernodes.get(name)
        return info.tier if info is not None and info.exists else None

    def nodes_in_no_hypernode(self, nodes: Iterable[str]) -> list[str]:
        """The given nodes no HyperNode holds."""
        held: set[str] = set()
        for info in self.hypernodes.values():
            held |= info.nodes
        return [n for n in nodes if n not in held]


def ancestors(name: str, hypernodes: Mapping[str, Any]) -> list[str]:
    """``name``, its parent, and so on up to a top HyperNode, in any map of things with a ``parent``."""
    out = [name]
    info = hypernodes.get(name)
    while info is not None and info.parent and info.parent not in out:
        out.append(info.parent)
        info = hypernodes.get(info.parent)
    return out


def lowest_common_ancestor(a: str, b: str, hypernodes: Mapping[str, Any]) -> str:
    """The lowest HyperNode above both; the other one when one is "", "" when they share none."""
    if not a:
        return b
    if not b:
        return a
    mine = set(ancestors(a, hypernodes))
    for x in ancestors(b, hypernodes):
        if x in mine:
            return x
    return ""
