"""What preempt and reclaim share: the candidate nodes of an evicting task, and the victim checks.

Candidate nodes are Volcano's ``PredicateNodes`` run with ``PredicateForPreemptAction``
(util/predicate_helper.go, framework/session.go): nodes recorded as
UnschedulableAndUnresolvable for the task by allocate are left out; from the rotating
start index shared with allocate, nodes are examined until ``numToFind`` pass (a node
fails only on UnschedulableAndUnresolvable, Error, Skip or Wait: a resource shortfall
does not count). preempt then walks them by descending score (``PrioritizeNodes`` +
``SortNodes``, ties in search order), reclaim in search order.

Tasks of one shape get the same verdict and score on a node, so, as allocate's
``ShapeIndex`` does, a ``PreemptIndex`` keeps them per node in a segment tree refreshed
for the nodes that changed; a preemptor then costs O(log N) per node it looks at,
not a predicate and a score for every node of the window.  Tasks that cannot share
(inter-pod terms, normalising scorers, recorded unresolvable nodes) take the direct
path, node by node, as Volcano does.

preempt keeps one predicate helper for the whole action, so its predicate error cache
(``predicateErrorCacheEnable``, on by default) carries a node's failure from one task of
a job and role to the next (``NodeFailures``).  Such tasks walk the window node by
node, reading verdicts and scores from their shape's index where they can share it.
reclaim builds a helper per task: its cache never holds anything, and it has none.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from vcsched.api.node_info import NodeInfo
from vcsched.api.queue_info import QueueInfo
from vcsched.api.resource import Resource
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import UNRESOLVABLE_CODES
from vcsched.framework.interface import ScoringError
from vcsched.framework.node_search import NodeSearch
from vcsched.framework.shape_index import ShapeIndex
from vcsched.framework.session import Session
from vcsched.framework.statement import Statement

from .allocate import node_search

PREEMPT_REASON = "preempt"
RECLAIM_REASON = "reclaim"


def commit(ssn: Session, stmt: Statement, action: str) -> None:
    """Commit, counting a statement that evicts as one eviction transaction of ``action``."""
    evicts = stmt.evicted_any()
    stmt.commit()
    if evicts:
        ssn.stats.eviction_transactions[action] += 1


def preempt_predicate_fails(ssn: Session, task: TaskInfo, node: NodeInfo) -> bool:
    """``PredicateForPreemptAction``: only statuses that evictions cannot resolve reject the node."""
    statuses = ssn.predicate(task, node)
    return bool(statuses) and any(s.code in UNRESOLVABLE_CODES for s in statuses)


def validate_victims(task: TaskInfo, node: NodeInfo, victims: list[TaskInfo]) -> bool:
    """``ValidateVictims``: the task fits FutureIdle plus everything the victims hold.

    An empty victim list is valid: the node may have room already.
    """
    future_idle = node.future_idle()
    for v in victims:
        future_idle.add(v.resreq)
    return task.init_resreq.less_equal(future_idle)


def preemptor_fits_on_node(ssn: Session, queue: QueueInfo, task: TaskInfo, node: NodeInfo) -> bool:
    """``preemptorFitsOnNode``: the queue may take it, FutureIdle holds it, the plugin predicates pass."""
    return (ssn.allocatable(queue, task)
            and task.init_resreq.less_equal(node.future_idle())
            and not ssn.predicate(task, node))


def evicted_resources(victims: list[TaskInfo]) -> Resource:
    total = Resource()
    for v in victims:
        total.add(v.resreq)
    return total


class NodeFailures:
    """preempt's predicate error cache (util/predicate_helper.go, one helper per action): for each
    job and role, the nodes where one of its tasks failed ``PredicateForPreemptAction``.  Later tasks
    of that job and role take those failures without a check; tasks with no role do not use it."""

    __slots__ = ("by_group",)

    def __init__(self) -> None:
        self.by_group: dict[str, set[int]] = {}

    def for_task(self, task: TaskInfo) -> set[int] | None:
        """The node indexes the task takes as failed (and adds its own failures to), or None."""
        if not task.role:
            return None
        return self.by_group.setdefault(f"{task.job}/{task.role}", set())


class CandidateNodes:
    """Per-session candidate-node search for preempt and reclaim."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.search: NodeSearch = node_search(ssn)
        self.indexes: dict[tuple, PreemptIndex] = {}

    def nodes(self, task: TaskInfo, scored: bool, failures: NodeFailures | None = None) -> Iterator[NodeInfo]:
        """The task's candidate nodes: by descending score (preempt) or in search order (reclaim).

        The window is fixed, and the rotating start index advanced, when this is called;
        the order is computed before the caller changes any node, as in Volcano.
        ``failures``: preempt's predicate error cache.
        """
        ssn = self.ssn
        job = ssn.jobs.get(task.job)
        fe = job.nodes_fit_errors.get(task.uid) if job is not None else None
        skip = fe.unresolvable_nodes() if fe is not None else None
        failed = failures.for_task(task) if failures is not None else None
        index = None
        shape = self.search.shape_key(task) if not skip else None
        if shape is not None:
            index = self.indexes.get(shape)
            if index is None:
                index = self.indexes[shape] = PreemptIndex(self.search, task)
            if failed is None:
                return index.nodes(task, scored)
            index.refresh(task)
        nodes = ssn.node_list if not skip else [n for n in ssn.node_list if n.name not in skip]
        return iter(self._direct(task, nodes, scored, failed, index))

    def _direct(self, task: TaskInfo, nodes: list[NodeInfo], scored: bool, failed: set[int] | None,
                index: PreemptIndex | None) -> list[NodeInfo]:
        """Volcano's walk: from the rotating start until ``numToFind`` nodes pass; ``failed`` are
        the job and role's cached failures (skipped, counted as processed) and takes this task's
        new ones; ``index``, when the task's shape shares one, gives the verdicts and scores."""
        n = len(nodes)
        if n == 0:
            return []
        ssn = self.ssn
        k = ssn.state.nodes_to_find.count(n)
        start = ssn.state.next_start_node % n
        feasible: list[NodeInfo] = []
        processed = 0
        for i in range(n):
            node = nodes[(start + i) % n]
            processed += 1
            if failed is not None and node.index in failed:
                continue
            if index.feasible(node.index) if index is not None else not preempt_predicate_fails(ssn, task, node):
                if len(feasible) == k:
                    break  # Volcano counts the feasible node beyond numToFind as processed
                feasible.append(node)
            elif failed is not None:
                failed.add(node.index)
        ssn.state.next_start_node = (start + processed) % n
        if not scored or not feasible:
            return feasible
        if len(feasible) == 1 and not any(b.applies(task) for b in self.search.batch):
            return feasible  # one node: its score orders nothing (Volcano still asks a batch scorer, as below)
        if index is not None:
            score = index.score
            return sorted(feasible, key=lambda nd: -score[nd.index])
        scores = {nd.name: ssn.node_order(task, nd) for nd in feasible}
        try:
            for scorer in self.search.batch:
                if scorer.applies(task):
                    for name, s in scorer.score(task, feasible).items():
                        scores[name] = scores.get(name, 0.0) + s
        except ScoringError:
            return []  # Volcano's PrioritizeNodes gives no scores, SortNodes no nodes
        # SortNodes: descending score; equal scores keep the search order
        return sorted(feasible, key=lambda nd: -scores[nd.name])


class PreemptIndex(ShapeIndex):
    """Per-node preempt verdicts and scores for one task shape.

    The allocate index's tree with a single gradient: a leaf is feasible when
    ``PredicateForPreemptAction`` passes, whatever the node's free resources.
    """

    __slots__ = ()

    def __init__(self, search: NodeSearch, task: TaskInfo) -> None:
        super().__init__(search, task, False)

    def _eval_leaf(self, task: TaskInfo, i: int, node: NodeInfo) -> None:
        ssn = self.search.ssn
        self.gens[i] = node.generation
        v = self.size + i
        ok = not preempt_predicate_fails(ssn, task, node)
        self.cnt[v] = 1 if ok else 0
        if ok:
            self.score[i] = ssn.node_order(task, node)
        self.best1[v] = i if ok else -1
        self.best2[v] = -1

    def feasible(self, i: int) -> bool:
        """Does node ``i`` pass ``PredicateForPreemptAction`` (as of the last refresh)?"""
        return self.cnt[self.size + i] == 1

    def nodes(self, task: TaskInfo, scored: bool) -> Iterator[NodeInfo]:
        start, length = self._window(task)
        if length == 0:
            return iter(())
        n = self.n
        ranges = [(start, min(n, start + length))]
        if start + length > n:
            ranges.append((0, start + length - n))
        if scored:
            return self._by_score(start, ranges)
        return self._in_order(ranges)

    def _in_order(self, ranges: list[tuple[int, int]]) -> Iterator[NodeInfo]:
        nodes = self.search.nodes
        for lo, hi in ranges:
            seen = self._count(0, lo)
            for j in range(self._count(lo, hi)):
                yield nodes[self._kth(seen + j + 1)]

    def _by_score(self, start: int, ranges: list[tuple[int, int]]) -> Iterator[NodeInfo]:
        """Feasible leaves by descending score, equal scores in search order: best-first over sub-ranges."""
        n, score, best = self.n, self.score, self.best1
        heap: list[tuple[float, int, int, int, int]] = []

        def push(lo: int, hi: int) -> None:
            if lo < hi:
                leaf = self._best(best, lo, hi)
                if leaf >= 0:
                    heapq.heappush(heap, (-score[leaf], (leaf - start) % n, leaf, lo, hi))

        for lo, hi in ranges:
            push(lo, hi)
        nodes = self.search.nodes
        while heap:
            _, _, leaf, lo, hi = heapq.heappop(heap)
            yield nodes[leaf]
            push(lo, leaf)
            push(leaf + 1, hi)
