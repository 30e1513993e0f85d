"""Finding the node for a task: Volcano's feasible-node search and node choice, done once per shape.

Volcano evaluates, for every task, the predicates on nodes taken from a
rotating start index until it has found ``numToFind`` feasible ones, scores
them, and takes the best of the first non-empty gradient (fits Idle, then
fits FutureIdle) (util/predicate_helper.go · PredicateNodes,
allocate.go · prioritizeNodes).

Tasks of equal *shape* (same requests and the same scheduling constraints, see
``PodSpec``) get the same predicate result and per-node score on a node, and a
placement changes only the node it lands on.  So a ``ShapeIndex`` keeps, per
shape, each node's verdict and score in a segment tree: a placement refreshes one
leaf (O(log N)), and the answer to "the best node among the first k feasible
ones from index s" is two tree walks.  Tasks whose result on a node can change by
placements elsewhere (inter-pod affinity, topology spread, scorers that normalise
over the candidate set) take the direct path, which does what Volcano does, node
by node.

Ties between equal best scores go to the first node in search order, or, when
``SchedulerState.tie_break`` holds a random generator, to one drawn uniformly
among them, as Volcano does (util/scheduler_helper.go · SelectBestNodeAndScore).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from time import perf_counter

from ..api.fit_errors import FitErrors, Status
from ..api.node_info import NodeInfo
from ..api.resource import Resource
from ..api.task_info import TaskInfo
from ..api.types import FAILING_CODES, StatusCode
from .interface import Point, ScoringError
from .session import Session


def _same(a: Resource, b: Resource) -> bool:
    """Every dimension ``less_equal`` compares is equal (a missing scalar counts as 0)."""
    if a.milli_cpu != b.milli_cpu or a.memory != b.memory:
        return False
    sa, sb = a.scalars, b.scalars
    for name, v in sa.items():
        if sb.get(name, 0.0) != v:
            return False
    for name, v in sb.items():
        if sa.get(name, 0.0) != v:
            return False
    return True


@dataclass(slots=True)
class Placement:
    node: NodeInfo
    fits_idle: bool  # False: only FutureIdle fits, the task is pipelined


class PredicateErrorCache:
    """Volcano's predicate error cache (predicate_helper.go, ``predicateErrorCacheEnable``, on by
    default) over one pass of allocate over a job's tasks: once a task of a job and role has failed on
    a node, later tasks of that job and role take that failure there without being checked (tasks with
    no role do not use it).

    It changes a placement only where tasks of one job and role differ (a 3-CPU and a 1-CPU task of
    role ``worker``: the node the first did not fit stays failed for the second); for tasks of one
    shape a node that failed stays failed within a pass anyway.  So only the groups of the pass with
    more than one shape search node by node with the cache; the others keep the shared search.
    """

    __slots__ = ("mixed", "failures")

    def __init__(self, mixed: frozenset[str]) -> None:
        self.mixed = mixed  # the job/role groups whose tasks differ in shape (mixed_groups)
        self.failures: dict[str, dict[str, Sequence[Status]]] = {}

    @staticmethod
    def mixed_groups(tasks: Iterable[TaskInfo]) -> frozenset[str]:
        """``job/role`` of the tasks with a role whose group holds more than one shape."""
        shapes: dict[str, set[tuple]] = {}
        for t in tasks:
            if t.role:
                shapes.setdefault(f"{t.job}/{t.role}", set()).add(t.shape)
        return frozenset(group for group, s in shapes.items() if len(s) > 1)

    def for_task(self, task: TaskInfo) -> dict[str, Sequence[Status]] | None:
        """The node failures ``task`` takes as its own (and adds to), None when the cache stays out."""
        group = f"{task.job}/{task.role}"
        if not task.role or group not in self.mixed:
            return None
        return self.failures.setdefault(group, {})


class NodeSearch:
    """Per-session node search; ``find`` returns a Placement or the task's FitErrors."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.nodes = ssn.node_list
        self.k = ssn.state.nodes_to_find.count(len(self.nodes))
        self.batch = ssn.fns(Point.BATCH_NODE_ORDER)
        self.best_node = ssn.fns(Point.BEST_NODE)
        self.shape_fns = ssn.fns(Point.TASK_SHAPE)
        # scorers whose score for a task exceeds a cap on a few nodes only (task-topology): the shared
        # scores leave them out, and each task adds them where they can win (ShapeIndex.find)
        self.bonus_scorers = ssn.fns(Point.TASK_NODE_BONUS)
        own = [b.node_order for b in self.bonus_scorers]
        self.own_scorers = tuple(own)
        self.shared_scorers = tuple(fn for fn in ssn.fns(Point.NODE_ORDER) if fn not in own)
        self.indexes: dict[tuple, ShapeIndex] = {}
        # per node index: (generation, FutureIdle, FutureIdle == Idle), shared by every shape that
        # re-checks the node
        self._future: list[tuple[int, Resource, bool] | None] = [None] * len(self.nodes)
        # "Insufficient <name>" statuses, one read-only list per resource name, shared by every
        # (task, node) pair that fails on it (a failing task records one per node)
        self._insufficient: dict[str, list[Status]] = {}
        # the direct search's resource check per request: (node generation, its "Insufficient"
        # statuses or None) per node index; a task that fits nowhere checks every node, its likes follow
        self._shortfalls: dict[tuple, tuple[list[int], list[list[Status] | None]]] = {}
        # seconds spent in predicates and in scoring, for the per-task stage durations
        self.predicate_time = 0.0
        self.scoring_time = 0.0

    def release(self) -> None:
        """The session is over (Session.release): the shape indexes refer back to this search."""
        self.indexes.clear()

    # -- predicates ------------------------------------------------------------------

    def future_entry(self, i: int, node: NodeInfo) -> tuple[int, Resource, bool]:
        """(generation, FutureIdle, FutureIdle == Idle) of ``self.nodes[i]``, computed once per node
        generation; read the Resource, do not change it."""
        cached = self._future[i]
        if cached is not None and cached[0] == node.generation:
            return cached
        r = node.future_idle()
        cached = self._future[i] = (node.generation, r, _same(r, node.idle))
        return cached

    def future_idle(self, node: NodeInfo) -> Resource:
        """``node.future_idle()``, cached per node generation; read it, do not change it."""
        i = node.index
        if 0 <= i < len(self.nodes) and self.nodes[i] is node:
            return self.future_entry(i, node)[1]
        return node.future_idle()

    def insufficient(self, name: str) -> list[Status]:
        """``[Status(Unschedulable, "Insufficient <name>")]``, shared: read it, do not change it."""
        st = self._insufficient.get(name)
        if st is None:
            st = self._insufficient[name] = [Status(StatusCode.Unschedulable, f"Insufficient {name}")]
        return st

    def check(self, task: TaskInfo, node: NodeInfo) -> list[Status] | None:
        """The allocate predicate: resources against FutureIdle, then the plugins."""
        short = task.resreq.first_shortfall(self.future_idle(node))
        if short is not None:
            return self.insufficient(short)
        statuses = self.ssn.predicate(task, node)
        if statuses and any(s.code in FAILING_CODES for s in statuses):
            return statuses
        return None

    def predicate_failure(self, task: TaskInfo, node: NodeInfo) -> list[Status] | None:
        """Backfill's predicate: the plugins only, no resource check."""
        statuses = self.ssn.predicate(task, node)
        return statuses if statuses and any(s.code in FAILING_CODES for s in statuses) else None

    def pre_predicate_errors(self, task: TaskInfo, err: str) -> FitErrors:
        """A PrePredicate failure, recorded against every node."""
        statuses = [Status(StatusCode.Error, err)]
        return FitErrors(namespace=task.namespace, task_name=task.name,
                         statuses={node.name: statuses for node in self.nodes})

    def fit_errors(self, task: TaskInfo, nodes: list[NodeInfo], predicate_only: bool = False) -> FitErrors:
        failed = {}
        check = self.predicate_failure if predicate_only else self.check
        for node in nodes:
            statuses = check(task, node)
            if statuses:
                failed[node.name] = statuses
        return FitErrors(namespace=task.namespace, task_name=task.name, statuses=failed)

    def shareable(self, task: TaskInfo) -> bool:
        """May this task's verdicts be shared with its shape?

        Not when any pod in the session has inter-pod (anti-)affinity terms: placing
        such a pod changes other nodes of its topology domain, not only its own.
        """
        return (task.spec.shareable and not self.ssn.has_inter_pod_terms and not self.best_node
                and not any(b.applies(task) for b in self.batch))

    def shared_score(self, task: TaskInfo, node: NodeInfo) -> float:
        """The node-order score that tasks of one shape share: every scorer but the bonus scorers."""
        if not self.bonus_scorers:
            return self.ssn.node_order(task, node)
        score = 0.0
        for fn in self.shared_scorers:
            score += fn(task, node)
        return score

    def node_score(self, task: TaskInfo, node: NodeInfo) -> float:
        """``ssn.node_order``, the bonus scorers added last, as the shared path adds them."""
        if not self.bonus_scorers:
            return self.ssn.node_order(task, node)
        score = self.shared_score(task, node)
        for fn in self.own_scorers:
            score += fn(task, node)
        return score

    def bonuses(self, task: TaskInfo) -> list:
        """The task's NodeBonus from each bonus scorer that scores it anywhere."""
        out = []
        for scorer in self.bonus_scorers:
            b = scorer.bonus(task)
            if b is not None:
                out.append(b)
        return out

    def shape_key(self, task: TaskInfo) -> tuple | None:
        """What ``task`` shares verdicts and scores under: its shape, and what the plugins' ``TASK_SHAPE``
        functions say the verdicts depend on besides the pod (nodegroup: the task's queue); None when
        the task cannot share them."""
        if not self.shareable(task):
            return None
        if not self.shape_fns:
            return task.shape
        parts = [task.shape]
        for fn in self.shape_fns:
            part = fn(task)
            if part is None:
                return None
            parts.append(part)
        return tuple(parts)

    # -- the search ---------------------------------------------------------------------

    def find(self, task: TaskInfo, predicate_only: bool = False,
             errors: PredicateErrorCache | None = None) -> Placement | FitErrors:
        """Best node for the task, or why there is none.

        ``predicate_only`` is backfill's variant: plugin predicates only, no resource
        check and no gradients.  The time this task spent in predicates and in scoring
        goes to ``scheduling_stage_duration{stage=Predicate|Scoring}``, as Volcano's
        PredicateNodes and PrioritizeNodes record it; a task whose shape was searched
        before pays only for the nodes that changed since.  ScoringError when nodes passed
        but a batch scorer failed on every gradient (Volcano then picks no node).
        """
        predicate, scoring = self.predicate_time, self.scoring_time
        cached = errors.for_task(task) if errors is not None else None
        try:
            return self._find(task, predicate_only, cached)
        finally:  # a ScoringError (no node chosen) passes through to the action
            stats = self.ssn.stats
            stats.predicate_durations.append(self.predicate_time - predicate)
            if self.scoring_time != scoring:
                stats.scoring_durations.append(self.scoring_time - scoring)

    def _find(self, task: TaskInfo, predicate_only: bool,
              cached: dict[str, Sequence[Status]] | None = None) -> Placement | FitErrors:
        if not self.nodes:
            return FitErrors()
        ssn = self.ssn
        nominated = ssn.nodes.get(task.nominated_node) if task.nominated_node and not predicate_only else None
        if nominated is not None and task.resreq.less_equal(nominated.future_idle()) and not (
                cached and nominated.name in cached):
            statuses = self.check(task, nominated)
            if statuses is None:
                return Placement(nominated, task.resreq.less_equal(nominated.idle))
            if cached is not None:
                cached[nominated.name] = statuses
        if cached is not None:
            return self._find_direct(task, predicate_only, cached)
        shape = self.shape_key(task)
        if shape is not None and self.bonus_scorers and ssn.state.tie_break is not None and self.bonuses(task):
            shape = None  # drawing among tied nodes needs every node's total: node by node
        if shape is not None:
            key = (shape, predicate_only)
            index = self.indexes.get(key)
            if index is None:
                index = self.indexes[key] = ShapeIndex(self, task, predicate_only)
            return index.find(task)
        return self._find_direct(task, predicate_only)

    def find_in(self, task: TaskInfo, nodes: list[NodeInfo],
                errors: PredicateErrorCache | None = None) -> Placement | FitErrors:
        """``find`` among ``nodes`` only (a HyperNode's), node by node: a task nominated to a node among
        them tries it first, as allocate does for a HyperNode's leaf set."""
        predicate, scoring = self.predicate_time, self.scoring_time
        cached = errors.for_task(task) if errors is not None else None
        try:
            nominated = self.ssn.nodes.get(task.nominated_node) if task.nominated_node else None
            if (nominated is not None and any(nd is nominated for nd in nodes)
                    and task.resreq.less_equal(nominated.future_idle()) and not (cached and nominated.name in cached)):
                statuses = self.check(task, nominated)
                if statuses is None:
                    return Placement(nominated, task.resreq.less_equal(nominated.idle))
                if cached is not None:
                    cached[nominated.name] = statuses
            return self._find_direct(task, False, cached, nodes)
        finally:
            stats = self.ssn.stats
            stats.predicate_durations.append(self.predicate_time - predicate)
            if self.scoring_time != scoring:
                stats.scoring_durations.append(self.scoring_time - scoring)

    def _find_direct(self, task: TaskInfo, predicate_only: bool,
                     cached: dict[str, Sequence[Status]] | None = None,
                     among: list[NodeInfo] | None = None) -> Placement | FitErrors:
        ssn = self.ssn
        nodes = self.nodes if among is None else among
        n = len(nodes)
        if not n:
            return FitErrors(namespace=task.namespace, task_name=task.name)
        start = ssn.state.next_start_node % n
        feasible: list[NodeInfo] = []
        failed: dict[str, Sequence[Status]] = {}
        processed = 0
        started = perf_counter()
        # ``check`` inlined (a task that fits nowhere runs this for every node)
        resreq, predicate = task.resreq, ssn.predicate
        k = self.k if among is None else ssn.state.nodes_to_find.count(n)  # numToFind of the nodes searched
        key = (resreq.milli_cpu, resreq.memory, tuple(resreq.scalars.items()))
        shortfalls = self._shortfalls.get(key)
        if shortfalls is None:
            everywhere = len(self.nodes)
            shortfalls = self._shortfalls[key] = ([-1] * everywhere, [None] * everywhere)
        gens, shorts = shortfalls
        for i in range(n):
            j = start + i
            if j >= n:
                j -= n
            node = nodes[j]
            if among is not None:
                j = node.index  # the node's place in the session, which the caches are indexed by
            processed += 1
            if cached:
                known = cached.get(node.name)
                if known is not None:  # failed for an earlier task of the job and role: not checked again
                    failed[node.name] = known
                    continue
            if predicate_only:
                statuses = self.predicate_failure(task, node)
            else:
                if gens[j] == node.generation:
                    statuses = shorts[j]
                else:
                    short = resreq.first_shortfall(self.future_entry(j, node)[1])
                    statuses = shorts[j] = None if short is None else self.insufficient(short)
                    gens[j] = node.generation
                if statuses is None:
                    statuses = predicate(task, node)
                    if statuses:
                        for st in statuses:
                            if st.code in FAILING_CODES:
                                break
                        else:
                            statuses = None
            if statuses:
                failed[node.name] = statuses
                if cached is not None:
                    cached[node.name] = statuses
                continue
            if len(feasible) == k:
                break  # Volcano stops at the first feasible node beyond numToFind
            feasible.append(node)
        ssn.state.next_start_node = (start + processed) % n
        self.predicate_time += perf_counter() - started
        fe = FitErrors(namespace=task.namespace, task_name=task.name, statuses=failed)
        if not feasible:
            return fe
        if predicate_only:
            gradient, idle = feasible, True
        else:
            gradient = [nd for nd in feasible if task.resreq.less_equal(nd.idle)]
            idle = bool(gradient)
            if not gradient:
                gradient = [nd for nd in feasible if task.resreq.less_equal(nd.future_idle())]
            if not gradient:
                return fe
        try:
            return self._best(task, gradient, idle)
        except ScoringError:
            # Volcano chooses no node of a gradient its batch scorers failed on and tries the next
            if predicate_only or not idle:
                raise
            later = [nd for nd in feasible if not task.resreq.less_equal(nd.idle)
                     and task.resreq.less_equal(nd.future_idle())]
            if not later:
                raise
            return self._best(task, later, False)

    def _best(self, task: TaskInfo, gradient: list[NodeInfo], idle: bool) -> Placement:
        """The best-scored node of one gradient; ScoringError when a batch scorer fails."""
        ssn = self.ssn
        if len(gradient) == 1:
            return Placement(gradient[0], idle)
        started = perf_counter()
        scores = {nd.name: self.node_score(task, nd) for nd in gradient}
        try:
            for scorer in self.batch:
                if scorer.applies(task):
                    for name, s in scorer.score(task, gradient).items():
                        scores[name] = scores.get(name, 0.0) + s
        finally:
            self.scoring_time += perf_counter() - started
        for fn in self.best_node:
            chosen = fn(task, scores)
            if chosen is not None:
                return Placement(chosen, idle)
        best = gradient[0]
        best_score = scores[best.name]
        for nd in gradient[1:]:
            s = scores[nd.name]
            if s > best_score:
                best, best_score = nd, s
        rng = ssn.state.tie_break
        if rng is not None:
            tied = [nd for nd in gradient if scores[nd.name] == best_score]
            if len(tied) > 1:
                best = rng.choice(tied)
        return Placement(best, idle)


class ShapeIndex:
    """Per-node verdicts and scores for one task shape, in a segment tree over the node list.

    Each leaf holds: feasible (counted in ``cnt``), fits Idle (gradient 1) or only
    FutureIdle (gradient 2), and the node's score.  Inner nodes hold the feasible
    count and, per gradient, the leftmost best-scoring leaf below them.

    A changed node's verdict is taken at once (the search window is counted in feasible
    nodes), but its score only when a search window first covers it: a leaf whose verdict and
    gradient stay the same is marked ``stale`` and keeps its old score until then.  A query reads
    only tree nodes inside its window, so it sees the same scores as a full refresh would give,
    and a node that changes several times between two windows over it is scored once.  (Each
    window covers a fraction of the nodes, 42% at 1,000 nodes and 10% at 5,000, so this saves
    more the larger the cluster.)
    """

    __slots__ = ("search", "predicate_only", "size", "n", "cnt", "best1", "best2", "score", "gens", "log_pos",
                 "failure", "lazy", "stale", "dirty")

    def __init__(self, search: NodeSearch, task: TaskInfo, predicate_only: bool) -> None:
        self.search = search
        self.predicate_only = predicate_only
        nodes = search.nodes
        self.n = n = len(nodes)
        size = 1
        while size < n:
            size <<= 1
        self.size = size
        self.cnt = [0] * (2 * size)
        self.best1 = [-1] * (2 * size)
        self.best2 = [-1] * (2 * size)
        self.score = [0.0] * n
        self.gens = [-1] * n
        for i, node in enumerate(nodes):
            self._eval_leaf(task, i, node)
        for v in range(size - 1, 0, -1):
            self._pull(v)
        self.log_pos = len(search.ssn.node_changes)
        # (log position, FitErrors) of the last failure: identical tasks fail alike until a node changes
        self.failure: tuple[int, FitErrors] | None = None
        # scores taken when a window covers the node (see the class docstring); a subclass with a leaf
        # evaluation of its own (PreemptIndex) re-evaluates whole leaves at once
        self.lazy = type(self)._eval_leaf is ShapeIndex._eval_leaf
        self.stale = bytearray(n)  # 1: leaf i's verdict is current, its score is not
        self.dirty: list[int] = []  # the stale leaves, ascending

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

    def _pull(self, v: int) -> bool:
        """Recompute inner node ``v`` from its children; whether its feasible count or a best leaf changed."""
        l = 2 * v
        r = l + 1
        cnt, score, best1, best2 = self.cnt, self.score, self.best1, self.best2
        c = cnt[l] + cnt[r]
        a, b = best1[l], best1[r]
        b1 = b if a < 0 else a if b < 0 or score[a] >= score[b] else b
        a, b = best2[l], best2[r]
        b2 = b if a < 0 else a if b < 0 or score[a] >= score[b] else b
        if c == cnt[v] and b1 == best1[v] and b2 == best2[v]:
            return False
        cnt[v], best1[v], best2[v] = c, b1, b2
        return True

    def refresh(self, task: TaskInfo) -> None:
        """Bring the verdicts up to date with the nodes changed since the last refresh (scores of
        leaves whose verdict stays wait for ``_rescore``)."""
        changes = self.search.ssn.node_changes
        if self.log_pos == len(changes):
            return
        if self.lazy:
            self._refresh_verdicts(task, changes)
            return
        nodes = self.search.nodes
        cnt, score, best1, best2, gens = self.cnt, self.score, self.best1, self.best2, self.gens
        size = self.size
        for i in changes[self.log_pos:]:
            node = nodes[i]
            if gens[i] == node.generation:
                continue
            self._eval_leaf(task, i, node)
            v = (size + i) >> 1
            # Up the tree until nothing above can change: an inner node whose count and best
            # leaves stay the same, and whose best leaves are not leaf i (whose score may have moved).
            # (``_pull`` inlined: this loop runs for every re-evaluated leaf of every shape.)
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
        self.log_pos = len(changes)

    def _refresh_verdicts(self, task: TaskInfo, changes: list[int]) -> None:
        """``refresh`` for the lazy index: each changed node's verdict now; a node that stays in the
        same gradient only marked stale, its score taken by ``_rescore`` when a window covers it."""
        search = self.search
        nodes = search.nodes
        cnt, best1, best2, gens, stale = self.cnt, self.best1, self.best2, self.gens, self.stale
        size = self.size
        predicate_only = self.predicate_only
        resreq = task.resreq
        predicate = search.ssn.predicate
        future_entry = search.future_entry
        started = perf_counter()
        for i in changes[self.log_pos:]:
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
            if ok and cnt[v] and (best1[v] >= 0) == idle:
                if not stale[i]:  # same gradient: only the score may have moved
                    stale[i] = 1
                    insort(self.dirty, i)
                continue
            # the leaf enters, leaves or changes gradient: score it now and walk up
            search.predicate_time += perf_counter() - started
            if stale[i]:
                stale[i] = 0
                dirty = self.dirty
                del dirty[bisect_left(dirty, i)]
            cnt[v] = 1 if ok else 0
            if ok:
                checked = perf_counter()
                self.score[i] = search.shared_score(task, node)
                search.scoring_time += perf_counter() - checked
            best1[v] = i if idle else -1
            best2[v] = i if ok and not idle else -1
            self._walk_up(i)
            started = perf_counter()
        search.predicate_time += perf_counter() - started
        self.log_pos = len(changes)

    def _rescore(self, task: TaskInfo, ranges: Iterable[tuple[int, int]]) -> None:
        """Score the stale leaves in ``ranges`` (the window about to be searched) and update the tree."""
        dirty = self.dirty
        if not dirty:
            return
        search = self.search
        nodes, score, stale, best1, best2 = search.nodes, self.score, self.stale, self.best1, self.best2
        scorers = search.shared_scorers  # ``shared_score`` inlined: the same sum in the same order
        size = self.size
        for l, r in ranges:
            a = bisect_left(dirty, l)
            b = bisect_left(dirty, r, a)
            if a == b:
                continue
            started = perf_counter()
            for i in dirty[a:b]:
                stale[i] = 0
                node = nodes[i]
                new = 0.0
                for fn in scorers:
                    new += fn(task, node)
                old = score[i]
                if new == old:
                    continue
                score[i] = new
                # Only the score moved, within one gradient: walk up that gradient's best leaves alone.
                # (Best leaf of a subtree: the highest score, the lowest index among equals.)
                best = best1 if best1[size + i] == i else best2
                v = (size + i) >> 1
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
            del dirty[a:b]
            search.scoring_time += perf_counter() - started

    def _walk_up(self, i: int) -> None:
        """Recompute the inner nodes above leaf ``i`` until nothing above can change: an inner node whose
        count and best leaves stay the same, and whose best leaves are not leaf i (whose score may have
        moved).  (``_pull`` inlined: this runs for every re-evaluated leaf of every shape.)"""
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
        before = self._count(0, start)
        after = self.cnt[1] - before
        total = self.cnt[1]

        def position(j: int) -> int:
            """Offset from start of the j-th feasible leaf in search order, or -1."""
            if j <= after:
                return self._kth(before + j) - start
            if j <= total:
                return self._kth(j - after) + n - start
            return -1

        end = position(k)  # the window ends at the k-th feasible node
        stop = position(k + 1)  # Volcano counts the node that made it stop
        state.next_start_node = (start + (stop + 1 if stop >= 0 else n)) % n
        if total == 0:
            return start, 0
        length = end + 1 if end >= 0 else n
        if self.dirty:
            last = start + length
            self._rescore(task, ((start, last),) if last <= n else ((start, n), (0, last - n)))
        return start, length

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
