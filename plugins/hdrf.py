"""hdrf: the queue tree of hierarchical DRF, drf's ``enableHierarchy`` mode (plugins/drf/drf.go).

A Queue places itself in the tree with two annotations: ``volcano.sh/hierarchy``, a
path such as ``root/eng/dev``, and ``volcano.sh/hierarchy-weights``, one weight per
level such as ``1/2/3``.  The first path element always stands for the tree's root
(whatever it is called; its weight is 1).  Every job of the session hangs as a leaf
under its queue's path; a queue without the annotation puts its jobs right under
the root.

Shares, bottom up, as Volcano computes them (``updateHierarchicalShare``):

- a resource is *demanding* while the session's total allocation of it is below the
  cluster total;
- a job's leaf is *saturated* when, for some resource it has allocated, it has
  allocated all its job requests, or the resource is no longer demanding and the job
  asks for it;
- an inner node takes ``mdr``, the smallest dominant share among its children that
  are neither empty nor saturated (at most 1), scales every such child's allocation to
  that share, adds the saturated children's allocations unscaled, and its share is the
  dominant share of the sum; it is saturated when all its children are.

Weights only enter the comparison of two queues (``compareQueues``): walk both paths
from the root, level by level; a saturated node orders after an unsaturated one, then
the lower ``share / weight`` first; equal values go one level down, and paths that
agree down to the shorter one's end are a tie.

Where Volcano would fail (its scheduler indexes past the end of a weights list shorter
than the path, and dereferences a missing node when a compared queue has no jobs), a
missing weight counts as an unreadable one (weight 1) and a missing node is a tie.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from vcsched.api.resource import Resource, share

HIERARCHY_ANNOTATION = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS_ANNOTATION = "volcano.sh/hierarchy-weights"


@dataclass(slots=True)
class DrfAttr:
    """Allocated resources and the dominant share they give (a job's, or a tree node's)."""

    allocated: Resource = field(default_factory=Resource)
    share: float = 0.0
    dominant_resource: str = ""

    def clone(self) -> "DrfAttr":
        return DrfAttr(self.allocated.clone(), self.share, self.dominant_resource)


def dominant_share(allocated: Resource, total: Resource, names: list[str]) -> tuple[str, float]:
    """``calculateShare``: the largest allocated/total ratio over ``names`` (the total's
    dimensions, ``pods`` included) and the resource that gives it ("" when all are 0)."""
    res = 0.0
    dominant = ""
    for rn in names:
        s = share(allocated.get(rn), total.get(rn))
        if s > res:
            res = s
            dominant = rn
    return dominant, res


# -- weights: strconv.ParseFloat, errors read as 0 --------------------------------------------

_SPECIAL = re.compile(r"[+-]?(?:inf|infinity)|nan", re.IGNORECASE)
_DECIMAL = re.compile(r"[+-]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)(?:[eE][+-]?[0-9_]+)?")
_HEX = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F_]+(?:\.[0-9a-fA-F_]*)?|\.[0-9a-fA-F_]+)[pP][+-]?[0-9_]+")


def _underscores_ok(text: str) -> bool:
    """Go's ``underscoreOK``: each ``_`` sits between two digits (a base prefix counts as one)."""
    s = text[1:] if text[:1] in "+-" else text
    saw, i, hexa = "^", 0, False
    if len(s) >= 2 and s[0] == "0" and s[1] in "bBoOxX":
        saw, i, hexa = "0", 2, s[1] in "xX"
    for c in s[i:]:
        if c.isdigit() or (hexa and c in "abcdefABCDEF"):
            saw = "0"
        elif c == "_":
            if saw != "0":
                return False
            saw = "_"
        elif saw == "_":
            return False
        else:
            saw = "!"
    return saw != "_"


def parse_go_float(text: str) -> float | None:
    """``strconv.ParseFloat(text, 64)``: the value, or None on a syntax error.

    Out-of-range values give ±Inf as Go's does (Go also returns an error then, which
    Volcano ignores).  Unlike Python's ``float``: no surrounding blanks, no signed NaN,
    hexadecimal mantissas with a ``p`` exponent.
    """
    if _SPECIAL.fullmatch(text):
        low = text.lower()
        if low == "nan":
            return math.nan
        return -math.inf if low.startswith("-") else math.inf
    if _HEX.fullmatch(text):
        if "_" in text and not _underscores_ok(text):
            return None
        try:
            return float.fromhex(text.replace("_", ""))
        except OverflowError:
            return -math.inf if text.startswith("-") else math.inf
    if _DECIMAL.fullmatch(text):
        if "_" in text and not _underscores_ok(text):
            return None
        return float(text.replace("_", ""))
    return None


def level_weight(weights: list[str], level: int) -> float:
    """The weight of path level ``level``: unreadable (or, unlike Volcano, missing) is 0, and
    anything below 1 counts as 1."""
    value = parse_go_float(weights[level]) if level < len(weights) else None
    w = 0.0 if value is None else value
    return 1.0 if w < 1 else w


def weight_problems(hierarchy: str, weights: str) -> list[str]:
    """What in a queue's two annotations the tree reads differently from what is written."""
    if not hierarchy:
        return []
    paths, ws = hierarchy.split("/"), weights.split("/")
    problems = []
    if len(ws) < len(paths):
        problems.append(f"{len(paths)} levels but {len(ws)} weight(s): a missing weight counts as 1")
    for w in ws[1:len(paths)]:
        value = parse_go_float(w)
        if value is None:
            problems.append(f"weight {w!r} is not a number and counts as 1")
        elif value < 1:
            problems.append(f"weight {w!r} is below 1 and counts as 1")
    return problems


# -- the tree --------------------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class HNode:
    """``hierarchicalNode``: a path element, or (``children`` None) a job's leaf whose ``attr``
    is the job's own DrfAttr and ``request`` its total request."""

    name: str
    weight: float
    attr: DrfAttr
    request: Resource
    children: dict[str, "HNode"] | None = None
    saturated: bool = False

    def clone(self) -> "HNode":
        children = None if self.children is None else {k: c.clone() for k, c in self.children.items()}
        return HNode(self.name, self.weight, self.attr.clone(), self.request.clone(), children, self.saturated)


def resource_saturated(allocated: Resource, request: Resource, demanding: frozenset[str]) -> bool:
    """``resourceSaturated``: over the resources the job has allocated, one is fully allocated to
    its request, or no longer demanding while the job asks for it."""
    for rn in allocated.resource_names():
        a, r = allocated.get(rn), request.get(rn)
        if a != 0 and r != 0 and a >= r:
            return True
        if rn not in demanding and r != 0:
            return True
    return False


class HierarchyTree:
    """The hierarchical shares of one session (or of a reclaim's what-if copy).

    ``allocated`` is the session's total allocation (Volcano's ``totalAllocated``).  Each
    update recomputes what Volcano's full recursive pass would change: the whole tree when
    the set of demanding resources moved, else only the updated leaf and its ancestors.
    """

    __slots__ = ("total", "names", "root", "allocated", "demanding")

    def __init__(self, total: Resource, names: list[str]) -> None:
        self.total = total
        self.names = names
        self.root = HNode("root", 1.0, DrfAttr(), Resource(), {})
        self.allocated = Resource()
        self.demanding: frozenset[str] | None = None

    def clone(self) -> "HierarchyTree":
        tree = HierarchyTree(self.total, self.names)
        tree.root = self.root.clone()
        tree.allocated = self.allocated.clone()
        tree.demanding = self.demanding
        return tree

    def place(self, key: str, attr: DrfAttr, request: Resource, hierarchy: str, weights: str) -> list[HNode]:
        """``buildHierarchy``: make the missing path nodes (a node's weight is fixed by the first
        job that makes it) and put a fresh leaf for the job; return the path from the root."""
        node = self.root
        path = [node]
        paths = hierarchy.split("/")
        ws = weights.split("/")
        for level in range(1, len(paths)):
            children = node.children
            if children is None:  # a leaf's key is "namespace/name" and never a path element
                break
            child = children.get(paths[level])
            if child is None:
                child = children[paths[level]] = HNode(
                    paths[level], level_weight(ws, level), DrfAttr(), Resource(), {})
            node = child
            path.append(node)
        if node.children is not None:
            node.children[key] = HNode(key, 1.0, attr, request.clone())
        return path

    def update(self, key: str, attr: DrfAttr, request: Resource, hierarchy: str, weights: str) -> None:
        """``UpdateHierarchicalShare`` after ``attr`` (already re-shared) or ``allocated`` changed."""
        demanding = frozenset(rn for rn in self.names if self.allocated.get(rn) < self.total.get(rn))
        path = self.place(key, attr, request, hierarchy, weights)
        if demanding != self.demanding:
            self.demanding = demanding
            self._update(self.root)
            return
        leaf = (path[-1].children or {}).get(key)
        if leaf is not None:
            self._update(leaf)
        for node in reversed(path):
            self._combine(node)

    def refresh(self) -> None:
        """The full pass, for the tree built at session open."""
        self.demanding = frozenset(rn for rn in self.names if self.allocated.get(rn) < self.total.get(rn))
        self._update(self.root)

    def _update(self, node: HNode) -> None:
        if node.children is None:
            node.saturated = resource_saturated(node.attr.allocated, node.request, self.demanding or frozenset())
            return
        for child in node.children.values():
            self._update(child)
        self._combine(node)

    def _combine(self, node: HNode) -> None:
        """An inner node from its (up to date) children."""
        children = node.children
        if children is None:
            return
        total, names = self.total, self.names
        mdr = 1.0
        for child in children.values():
            # Volcano recomputes the child's dominant share here; it is always child.attr.share
            s = child.attr.share
            if s != 0 and not child.saturated and s < mdr:
                mdr = s
        allocated = Resource()
        saturated = True
        for child in children.values():
            if not child.saturated:
                saturated = False
            if child.attr.share != 0:
                if child.saturated:
                    allocated.add(child.attr.allocated)
                else:
                    allocated.add(child.attr.allocated.clone().multi(mdr / child.attr.share))
        node.attr.allocated = allocated
        node.attr.dominant_resource, node.attr.share = dominant_share(allocated, total, names)
        node.saturated = saturated

    def compare_queues(self, lhierarchy: str, rhierarchy: str) -> float:
        """``compareQueues``: < 0 when the left queue goes first, > 0 the right, 0 a tie."""
        lnode: HNode | None = self.root
        rnode: HNode | None = self.root
        lpaths, rpaths = lhierarchy.split("/"), rhierarchy.split("/")
        depth = min(len(lpaths), len(rpaths))
        for i in range(depth):
            if lnode is None or rnode is None:
                return 0.0
            if not lnode.saturated and rnode.saturated:
                return -1.0
            if lnode.saturated and not rnode.saturated:
                return 1.0
            ls = lnode.attr.share / lnode.weight
            rs = rnode.attr.share / rnode.weight
            if ls != rs:
                return ls - rs
            if i < depth - 1:
                lnode = (lnode.children or {}).get(lpaths[i + 1])
                rnode = (rnode.children or {}).get(rpaths[i + 1])
        return 0.0
