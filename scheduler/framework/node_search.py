"""Finding the node for a task: Volcano's feasible-node search and node choice, done once per shape.

Volcano evaluates, for every task, the predicates on nodes taken from a
rotating start index until it has found ``numToFind`` feasible ones, scores
them, and takes the best of the first non-empty gradient (fits Idle, then
fits FutureIdle) (util/predicate_helper.go · PredicateNodes,
allocate.go · prioritizeNodes).

Tasks of equal *shape* (same requests and the same scheduling constraints, see
``PodSpec``) get the same predicate result and per-node score on a node, and a
placement changes only the node it lands on.  So a ``ShapeIndex`` (shape_index.py) keeps, per
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

from collections.abc import Iterable, Sequence
from time import perf_counter

from ..api.fit_errors import FitErrors, Status
from ..api.node_info import NodeInfo
from ..api.resource import Resource
from ..api.task_info import TaskInfo
from ..api.types import FAILING_CODES, StatusCode
from .interface import Point, ScoringError
from .session import Session
from .shape_index import Placement, ShapeIndex

__all__ = ["NodeSearch", "Placement", "PredicateErrorCache", "ShapeIndex"]


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
        # shapes searched once: a shape's first search scans its window only, as Volcano does, and the
        # second builds its index over every node (a cycle for one new pod on 1,000 nodes reads the
        # 42 % its window covers, not all of them)
        self._searched: set[tuple] = set()
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
                if key not in self._searched:
                    self._searched.add(key)
                    return self._find_direct(task, predicate_only)
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
