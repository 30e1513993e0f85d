"""One task shape's view of the nodes: each node's verdict and score in a segment tree (ShapeIndex).

NodeSearch (node_search.py) keeps one per shape of task it has searched for; a placement changes one
node, so one leaf; "the best node among the first k feasible ones from index s" is two tree walks.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from time import perf_counter
from typing import TYPE_CHECKING

from ..api.fit_errors import FitErrors
from ..api.node_info import NodeInfo
from ..api.task_info import TaskInfo
from ..api.types import FAILING_CODES

if TYPE_CHECKING:
    from .node_search import NodeSearch


@dataclass(slots=True)
class Placement:
    node: NodeInfo
    fits_idle: bool  # False: only FutureIdle fits, the task is pipelined


def _marked(flags: bytearray, ranges: Iterable[tuple[int, int]]) -> Iterable[int]:
    """The positions in ``ranges`` whose flag is set, in order (``bytearray.find``, a scan in C)."""
    for l, r in ranges:
        i = flags.find(1, l, r)
        while i >= 0:
            yield i
            i = flags.find(1, i + 1, r)


class ShapeIndex:
    """Per-node verdicts and scores for one task shape, in a segment tree over the node list.

    Each leaf holds: feasible (counted in ``cnt``), fits Idle (gradient 1) or only
    FutureIdle (gradient 2), and the node's score.  Inner nodes hold the feasible
    count and, per gradient, the leftmost best-scoring leaf below them.

    A changed node is judged and scored again only when a search needs it: its leaf is marked
    ``unverified``, and a search takes the unverified leaves from its start up to the node after
    its window's last (where Volcano's search stops) before it trusts the counts, again until no
    verdict there changes the window.  The feasible leaves before the start count alike in the
    prefix and in the rank a search looks for, so their old verdicts do not move the window; the
    tree's counts stay consistent sums of the leaves' verdicts, old or new.  So a query sees the
    verdicts and scores a full refresh would give inside its window, and a node that changes
    several times between two windows over it is judged and scored once, in one visit.  (Each
    window covers a fraction of the nodes, 42% at 1,000 nodes and 10% at 5,000, so this saves more
    the larger the cluster.)
    """

    __slots__ = ("search", "predicate_only", "size", "n", "cnt", "best1", "best2", "score", "gens", "log_pos",
                 "failure", "lazy", "unverified", "unverified_count")

    def __init__(self, search: NodeSearch, task: TaskInfo, predicate_only: bool) -> None:
        self.search = search
        self.predicate_only = predicate_only
        nodes = search.nodes
        self.n = n = len(nodes)
        size = 1
        while size < n:
            size <<= 1
        self.size = size
        # Flat arrays, not lists: a list holds a pointer per entry to a float or int object allocated
        # wherever the heap had room when it was written, so the tree walks chase pointers all over a
        # large heap (issue 22: allocate took 12 % less at 5,000 nodes / 50,000 pods, the same at 1,000).
        # Four-byte entries (node indexes and counts): the bench's 16 shapes' trees take 3.1 MB at 5,000
        # nodes, not 6.3, so more of them stays in the caches (the bench 1-4 % faster there, alike at 1,000)
        self.cnt = array("i", [0]) * (2 * size)
        self.best1 = array("i", [-1]) * (2 * size)
        self.best2 = array("i", [-1]) * (2 * size)
        self.score = array("d", [0.0]) * n
        self.gens = array("q", [-1]) * n
        for i, node in enumerate(nodes):
            self._eval_leaf(task, i, node)
        self._build(n)
        self.log_pos = len(search.ssn.node_changes)
        # (log position, FitErrors) of the last failure: identical tasks fail alike until a node changes
        self.failure: tuple[int, FitErrors] | None = None
        # a changed node judged and scored when a search reaches it (see the class docstring); a
        # subclass with a leaf evaluation of its own (PreemptIndex) re-evaluates changed leaves at once
        self.lazy = type(self)._eval_leaf is ShapeIndex._eval_leaf
        # 1: leaf i's node changed since its verdict and score were taken (the lazy index only; a
        # search finds its own with ``bytearray.find``, a scan in C)
        self.unverified = bytearray(n)
        self.unverified_count = 0

    def _eval_leaf(self, task: TaskInfo, i: int, node: NodeInfo) -> None:
        search = self.search
        self.gens[i] = node.generation
        v = self.size + i
        started = perf_counter()
        if self.predicate_only:
            ok = idle = search.predicate_failure(task, node) is None
        else:
            # ``search.check`` inlined, with the FutureIdle it caches
            resreq = task.resreq
            _, future, same = search.future_entry(i, node)
            ok = resreq.first_shortfall(future) is None
            if ok:
                statuses = search.ssn.predicate(task, node)
                ok = not (statuses and any(s.code in FAILING_CODES for s in statuses))
            # a node whose Idle equals its FutureIdle: fitting one is fitting the other
            idle = ok and (same or resreq.less_equal(node.idle))
        checked = perf_counter()
        search.predicate_time += checked - started
        self.cnt[v] = 1 if ok else 0
        if ok:
            self.score[i] = search.shared_score(task, node)
            search.scoring_time += perf_counter() - checked
        self.best1[v] = i if idle else -1
        self.best2[v] = i if ok and not idle else -1

    def _better(self, a: int, b: int) -> int:
        """The better of two leaves; on equal scores the one earlier in search order (a)."""
        if a < 0:
            return b
        if b < 0:
            return a
        return a if self.score[a] >= self.score[b] else b

    def _build(self, n: int) -> None:
        """The inner nodes from the leaves, level by level upwards, only those with a node below them:
        the tree is padded to a power of two, so at 5,000 nodes 3,192 of its 8,192 leaves are empty and
        what lies above only them keeps its initial count 0 and no best leaf.  (A call per inner node of
        the padded tree took 3.15 ms a build there, 7.6 times the 0.42 at 1,000 nodes; this 1.73 and 0.33.)"""
        cnt, score, best1, best2 = self.cnt, self.score, self.best1, self.best2
        lo, hi = self.size, self.size + n  # this level's nodes with a leaf below: [lo, hi)
        while lo > 1:
            lo, hi = lo >> 1, (hi + 1) >> 1  # their parents
            for v in range(lo, hi):
                l = 2 * v
                r = l + 1
                cnt[v] = cnt[l] + cnt[r]
                a, b = best1[l], best1[r]  # on equal scores the left one, earlier in search order
                best1[v] = b if a < 0 else a if b < 0 or score[a] >= score[b] else b
                a, b = best2[l], best2[r]
                best2[v] = b if a < 0 else a if b < 0 or score[a] >= score[b] else b

    def refresh(self, task: TaskInfo) -> None:
        """Take in the nodes changed since the last refresh: the lazy index marks their leaves
        unverified (``_verify`` judges them when a search needs them), the other judges them now."""
        changes = self.search.ssn.node_changes
        if self.log_pos == len(changes):
            return
        if self.lazy:
            unverified = self.unverified
            marked = 0
            for i in changes[self.log_pos:]:
                if not unverified[i]:
                    unverified[i] = 1
                    marked += 1
            self.unverified_count += marked
            self.log_pos = len(changes)
            return
        nodes, gens = self.search.nodes, self.gens
        for i in changes[self.log_pos:]:
            node = nodes[i]
            if gens[i] == node.generation:
                continue
            self._eval_leaf(task, i, node)
            self._walk_up(i)
        self.log_pos = len(changes)

    def _verify(self, task: TaskInfo, ranges: Iterable[tuple[int, int]]) -> bool:
        """Judge and score the unverified leaves in ``ranges`` and update the tree; whether a leaf
        became feasible or infeasible (which moves the window)."""
        search = self.search
        nodes, scorers = search.nodes, search.shared_scorers
        cnt, best1, best2, gens, score = self.cnt, self.best1, self.best2, self.gens, self.score
        size = self.size
        predicate_only = self.predicate_only
        unverified = self.unverified
        resreq = task.resreq
        predicate = search.ssn.predicate
        future_entry = search.future_entry
        moved = False
        scoring = 0.0
        started = perf_counter()
        for i in _marked(unverified, ranges):
            unverified[i] = 0
            self.unverified_count -= 1
            node = nodes[i]
            g = node.generation
            if gens[i] == g:
                continue
            gens[i] = g
            # ``_eval_leaf``'s verdict, inlined
            if predicate_only:
                ok = idle = search.predicate_failure(task, node) is None
            else:
                _, future, same = future_entry(i, node)
                ok = resreq.first_shortfall(future) is None
                if ok:
                    statuses = predicate(task, node)
                    ok = not (statuses and any(s.code in FAILING_CODES for s in statuses))
                idle = ok and (same or resreq.less_equal(node.idle))
            v = size + i
            if not ok:
                if cnt[v]:  # the leaf leaves
                    cnt[v], best1[v], best2[v] = 0, -1, -1
                    moved = True
                    self._walk_up(i)
                continue
            checked = perf_counter()
            new = 0.0  # ``shared_score`` inlined: the same sum in the same order
            for fn in scorers:
                new += fn(task, node)
            scoring += perf_counter() - checked
            if not cnt[v] or (best1[v] >= 0) != idle:  # the leaf enters or changes gradient
                moved = moved or not cnt[v]
                cnt[v] = 1
                score[i] = new
                best1[v], best2[v] = (i, -1) if idle else (-1, i)
                self._walk_up(i)
                continue
            old = score[i]
            if new == old:
                continue
            score[i] = new
            # Only the score moved, within one gradient: walk up that gradient's best leaves alone.
            # (Best leaf of a subtree: the highest score, the lowest index among equals.)
            best = best1 if idle else best2
            v >>= 1
            if new > old:  # leaf i takes over each subtree it now beats, up to the first it does not
                while v:
                    j = best[v]
                    if j != i:
                        sj = score[j]
                        if new < sj or (new == sj and j < i):
                            break
                        best[v] = i
                    v >>= 1
            else:  # the subtrees leaf i was best of choose again
                while v and best[v] == i:
                    c = 2 * v
                    x, y = best[c], best[c + 1]
                    best[v] = y if x < 0 else x if y < 0 or score[x] >= score[y] else y
                    v >>= 1
        search.scoring_time += scoring
        search.predicate_time += perf_counter() - started - scoring
        return moved

    def _walk_up(self, i: int) -> None:
        """Recompute the inner nodes above leaf ``i`` until nothing above can change: an inner node whose
        count and best leaves stay the same, and whose best leaves are not leaf i (whose score may have
        moved).  (Inlined: this runs for every re-evaluated leaf of every shape.)"""
        cnt, score, best1, best2 = self.cnt, self.score, self.best1, self.best2
        v = (self.size + i) >> 1
        while v:
            l = 2 * v
            r = l + 1
            c = cnt[l] + cnt[r]
            a, b = best1[l], best1[r]
            b1 = b if a < 0 else a if b < 0 or score[a] >= score[b] else b
            a, b = best2[l], best2[r]
            b2 = b if a < 0 else a if b < 0 or score[a] >= score[b] else b
            if c == cnt[v] and b1 == best1[v] and b2 == best2[v]:
                if b1 != i and b2 != i:
                    break
            else:
                cnt[v], best1[v], best2[v] = c, b1, b2
            v >>= 1

    def _count(self, l: int, r: int) -> int:
        """Feasible leaves in [l, r)."""
        total = 0
        cnt = self.cnt
        l += self.size
        r += self.size
        while l < r:
            if l & 1:
                total += cnt[l]
                l += 1
            if r & 1:
                r -= 1
                total += cnt[r]
            l >>= 1
            r >>= 1
        return total

    def _kth(self, k: int) -> int:
        """Position of the k-th (1-based) feasible leaf; the caller ensures it exists."""
        cnt = self.cnt
        v = 1
        while v < self.size:
            if cnt[2 * v] >= k:
                v = 2 * v
            else:
                k -= cnt[2 * v]
                v = 2 * v + 1
        return v - self.size

    def _best(self, best: list[int], l: int, r: int) -> int:
        """Leftmost best leaf in [l, r)."""
        left, right = -1, -1
        l += self.size
        r += self.size
        while l < r:
            if l & 1:
                left = self._better(left, best[l])
                l += 1
            if r & 1:
                r -= 1
                right = self._better(best[r], right)
            l >>= 1
            r >>= 1
        return self._better(left, right)

    def _window(self, task: TaskInfo) -> tuple[int, int]:
        """(start, length) of this task's search window; advances the rotating start as Volcano does."""
        self.refresh(task)
        state = self.search.ssn.state
        n, k = self.n, self.search.k
        start = state.next_start_node % n
        while True:
            before = self._count(0, start)
            total = self.cnt[1]
            after = total - before

            def position(j: int) -> int:
                """Offset from start of the j-th feasible leaf in search order, or -1."""
                if j <= after:
                    return self._kth(before + j) - start
                if j <= total:
                    return self._kth(j - after) + n - start
                return -1

            end = position(k)  # the window ends at the k-th feasible node
            stop = position(k + 1)  # Volcano counts the node that made it stop
            if not self.unverified_count:
                break
            last = start + (stop + 1 if stop >= 0 else n)  # the leaves the search reads: [start, last)
            if not self._verify(task, ((start, last),) if last <= n else ((start, n), (0, last - n))):
                break
        state.next_start_node = (start + (stop + 1 if stop >= 0 else n)) % n
        if total == 0:
            return start, 0
        return start, end + 1 if end >= 0 else n

    def find(self, task: TaskInfo) -> Placement | FitErrors:
        search = self.search
        n = self.n
        start, length = self._window(task)
        if length == 0:
            return self._failure(task, start)
        end = start + length
        ranges = ((start, end),) if end <= n else ((start, n), (0, end - n))
        bonuses = search.bonuses(task) if search.bonus_scorers else None
        for best, idle in ((self.best1, True), (self.best2, False)):
            chosen = -1
            if bonuses:
                chosen = self._best_with_bonus(best, ranges, start, bonuses)
            else:
                for l, r in ranges:
                    chosen = self._better(chosen, self._best(best, l, r))
            if chosen >= 0:
                rng = search.ssn.state.tie_break
                if rng is not None:
                    tied = self._tied(best, ranges, self.score[chosen])
                    if len(tied) > 1:
                        chosen = rng.choice(tied)
                return Placement(search.nodes[chosen], idle)
        return self._failure(task, start)

    def _roots(self, ranges: tuple[tuple[int, int], ...]) -> list[int]:
        """The tree nodes that cover the ranges, in search order."""
        size = self.size
        roots: list[int] = []
        for l, r in ranges:
            left: list[int] = []
            right: list[int] = []
            l += size
            r += size
            while l < r:
                if l & 1:
                    left.append(l)
                    l += 1
                if r & 1:
                    r -= 1
                    right.append(r)
                l >>= 1
                r >>= 1
            roots += left
            roots += reversed(right)
        return roots

    def _best_with_bonus(self, best: list[int], ranges: tuple[tuple[int, int], ...], start: int,
                         bonuses: list) -> int:
        """The leaf of ``best``'s gradient in the ranges with the highest shared score plus the task's
        bonuses, the first in search order on a tie (what the direct path chooses), or -1.

        The special nodes are totalled first; then a subtree is entered only when its best shared score
        plus the bonuses' caps can reach the best total so far, so a task whose bonus is flat outside its
        few special nodes walks about one path down the tree."""
        nodes, score, size, n = self.search.nodes, self.score, self.size, self.n
        depth = size.bit_length()
        if len(bonuses) == 1:
            special = bonuses[0].special
        else:
            special = set()
            for b in bonuses:
                special.update(b.special)
        (l0, r0), (l1, r1) = ranges[0], ranges[-1]
        top, top_pos, chosen = 0.0, n, -1
        for i in special:
            if not (l0 <= i < r0 or l1 <= i < r1) or best[size + i] != i:
                continue
            total = score[i]
            for b in bonuses:
                total += b.score(nodes[i])
            pos = (i - start) % n
            if chosen < 0 or total > top or (total == top and pos < top_pos):
                top, top_pos, chosen = total, pos, i
        caps = [b.cap for b in bonuses]
        stack = self._roots(ranges)[::-1]
        while stack:
            v = stack.pop()
            leaf = best[v]
            if leaf < 0:
                continue
            pos = ((v << (depth - v.bit_length())) - size - start) % n  # its first leaf's
            if chosen >= 0:
                bound = score[leaf]
                for c in caps:
                    bound += c
                if bound < top or (bound == top and pos > top_pos):
                    continue
            if v < size:
                stack.append(2 * v + 1)
                stack.append(2 * v)
                continue
            i = v - size
            if i in special:
                continue
            total = score[i]
            for b in bonuses:
                total += b.score(nodes[i])
            if chosen < 0 or total > top or (total == top and pos < top_pos):
                top, top_pos, chosen = total, pos, i
        return chosen

    def _tied(self, best: list[int], ranges: tuple[tuple[int, int], ...], top: float) -> list[int]:
        """The leaves of ``best``'s gradient in the ranges that score ``top``, the best, in search order.

        Only subtrees whose best leaf scores ``top`` are entered, so the walk is at most one step per
        tree level per tied leaf, and about two per tied leaf where they lie close together."""
        score, size = self.score, self.size
        out: list[int] = []
        stack = self._roots(ranges)[::-1]
        while stack:
            v = stack.pop()
            b = best[v]
            if b < 0 or score[b] != top:
                continue
            if v >= size:
                out.append(v - size)
            else:
                stack.append(2 * v + 1)
                stack.append(2 * v)
        return out

    def _failure(self, task: TaskInfo, start: int) -> FitErrors:
        if self.failure is not None and self.failure[0] == self.log_pos:
            return self.failure[1].for_task(task.namespace, task.name)
        nodes, n = self.search.nodes, self.n
        fe = self.search.fit_errors(task, [nodes[(start + i) % n] for i in range(n)], self.predicate_only)
        self.failure = (self.log_pos, fe)
        return fe
