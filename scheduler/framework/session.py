"""One scheduling cycle: a snapshot, the plugins opened on it, and how their answers combine.

Combination rules are Volcano's (framework/session_plugins.go); see
spec/framework.md §6.  The session never does I/O: what it decides is collected
as effects (``effects.py``) for a sink to carry out.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from ..api.hypernode import HyperNodeTree
from ..api.job_info import JobInfo
from ..api.namespace_info import NamespaceInfo
from ..api.node_info import NodeAccountingError, NodeInfo
from ..api.node_usage import NodeUsage
from ..api.numa_info import NumaTopology
from ..api.pdb import PodDisruptionBudget
from ..api.queue_info import QueueInfo
from ..api.resource import Resource
from ..api.sub_job import SubJobInfo
from ..api.task_info import TaskInfo
from ..api.types import TaskStatus, Vote
from .cycle_state import CycleState
from .effects import Bind, Effect, Event, Evict
from .interface import Plugin, Point
from .session_status import write_job_status, write_queue_statuses
from .stats import SessionStats
from .topology import HyperNodeDecision, SessionHyperNode, SessionTopology, decision_of
from .util import PriorityQueue

log = structlog.get_logger("vcsched.session")


class EventError(Exception):
    """Raised by an allocate handler to refuse a placement (Volcano's ``event.Err``)."""


@dataclass(slots=True)
class Snapshot:
    """The cache's state at session open: clones the session may change freely."""

    nodes: list[NodeInfo]
    jobs: dict[str, JobInfo]
    queues: dict[str, QueueInfo]
    hypernodes: HyperNodeTree = field(default_factory=HyperNodeTree)  # shared, never changed by a session
    # PodDisruptionBudgets (the pdb plugin's lister) and each namespace's ResourceQuota status
    # (Volcano's ssn.NamespaceInfo, read by resourcequota); shared, never changed by a session
    pdbs: tuple[PodDisruptionBudget, ...] = ()
    namespaces: dict[str, NamespaceInfo] = field(default_factory=dict)
    # each node's measured load by node name (Volcano's NodeInfo.ResourceUsage), read by usage and
    # rescheduling; a node missing here was never reported; shared, never changed by a session
    node_usage: dict[str, NodeUsage] = field(default_factory=dict)
    # Dynamic Resource Allocation's classes, slices, claims and templates (api/dra_cache.py · DraSnapshot)
    dra: Any = None
    # nodeinfo.volcano.sh Numatopologies by node name (the numa-aware plugin); shared, never changed
    # by a session; keyword only, last, so that positional callers keep working
    numatopologies: dict[str, NumaTopology] = field(default_factory=dict)
    # the settled jobs whose clones the previous session left as they were (Cache.keep_clones): their
    # status is what the last session computed and wrote, so a session that leaves their tasks alone
    # has nothing to write for them
    reused: frozenset[str] = frozenset()
    # the cache's count of snapshots taken (framework/settled.py trusts what it kept from the previous one)
    serial: int = 0
    # whether a pod the cache holds has inter-pod (anti-)affinity terms (None: the session looks)
    has_inter_pod_terms: bool | None = None
    # the jobs cloned afresh, in the order of ``jobs`` (None: ``fresh_jobs()`` finds them, the jobs not reused)
    fresh: list[JobInfo] | None = None
    # where the reused clones note the session's first change to each (JobInfo.change_log), and the
    # reused ones that are not ready (gang looks at those in every session)
    changed_reused: list[JobInfo] = field(default_factory=list)
    unready_reused: frozenset[str] = frozenset()

    def fresh_jobs(self) -> list[JobInfo]:
        """The jobs cloned afresh, in the order of ``jobs``: those not reused."""
        if self.fresh is None:
            self.fresh = [job for uid, job in self.jobs.items() if uid not in self.reused]
        return self.fresh


@dataclass(slots=True)
class EventHandler:
    allocate: Callable[[TaskInfo], None] | None = None
    deallocate: Callable[[TaskInfo], None] | None = None


@dataclass(slots=True, frozen=True)
class NodesToFind:
    """How many feasible nodes a task's search looks for: Volcano's ``--minimum-feasible-nodes``,
    ``--minimum-percentage-nodes-to-find`` and ``--percentage-nodes-to-find`` (0: adaptive)."""

    minimum: int = 100
    minimum_percentage: int = 5
    percentage: int = 0

    def count(self, n: int) -> int:
        """``CalculateNumOfFeasibleNodesToFind`` for ``n`` nodes."""
        if n <= self.minimum or self.percentage >= 100:
            return n
        pct = self.percentage
        if pct <= 0:
            pct = max(50 - n // 125, self.minimum_percentage)
        return max(n * pct // 100, self.minimum)


@dataclass(slots=True)
class SchedulerState:
    """What outlives a session: the rotating start of the feasible-node search, and its options.

    ``tie_break``: how the node search chooses among nodes of equal best score.  None (the
    scheduler's choice): the first in search order, so that a run can be repeated.  A random
    generator: uniformly at random among them, as Volcano does (``SelectBestNodeAndScore``);
    the trace replay uses it so that Volcano's policies run as they do in Volcano.
    """

    next_start_node: int = 0
    nodes_to_find: NodesToFind = NodesToFind()
    tie_break: random.Random | None = None
    # where preempt's topology-aware dry run starts in its candidate nodes (Volcano: rand.Intn);
    # seeded, so that a run can be repeated
    preempt_offset: random.Random = field(default_factory=lambda: random.Random("vcsched preempt offset"))
    # what a plugin keeps from one session to the next, by plugin name (tdm: when it last looked for
    # victims, Volcano's package variable lastEvictAt)
    plugins: dict[str, Any] = field(default_factory=dict)
    # each job's AllocatedHyperNode and its SubJobs' (Volcano keeps them in its cache's JobInfo)
    hypernode_decisions: dict[str, HyperNodeDecision] = field(default_factory=dict)
    # the network-topology problems already reported as events: (PodGroup, uid, problem)
    topology_warnings: set[tuple[str, str, str]] = field(default_factory=set)
    # the HyperNode tree's problems already reported as events: (HyperNode, problem)
    hypernode_warnings: set[tuple[str, str]] = field(default_factory=set)
    # the least time between two sessions' PodScheduled conditions for one job's waiting pods (0: every
    # session gives them), and when each job's were last given (session_status.conditions_due)
    condition_spacing: float = 0.0
    conditions_given: dict[str, float] = field(default_factory=dict)
    conditions_swept: float = 0.0


def _compare_task_default(l: TaskInfo, r: TaskInfo) -> int:
    """``CompareTask``: the pod-name index, then creation time, then UID."""
    lp, rp = l.name.split("-"), r.name.split("-")
    if len(lp) >= 3 and len(rp) >= 3:
        try:
            li, ri = int(lp[-1]), int(rp[-1])
            if li != ri:
                return -1 if li < ri else 1
        except ValueError:
            pass
    if l.creation_timestamp != r.creation_timestamp:
        return -1 if l.creation_timestamp < r.creation_timestamp else 1
    if l.uid != r.uid:
        return -1 if l.uid < r.uid else 1
    return 0


class Session:
    def __init__(self, snapshot: Snapshot, conf, plugin_classes: dict[str, type[Plugin]],
                 state: SchedulerState | None = None, now: float | None = None,
                 uid: str | None = None) -> None:
        self.uid = uid or str(uuid.uuid4())
        self.now = time.time() if now is None else now
        self.conf = conf
        self.tiers = conf.tiers
        self.state = state or SchedulerState()
        self.jobs = snapshot.jobs
        self.queues = snapshot.queues
        self.hypernodes = snapshot.hypernodes
        self.pdbs = snapshot.pdbs
        self.namespace_info = snapshot.namespaces
        self.numatopologies = snapshot.numatopologies
        self.dra = snapshot.dra
        self.node_usage = snapshot.node_usage
        self.node_list = snapshot.nodes
        self.nodes = {n.name: n for n in snapshot.nodes}
        # the settled jobs whose clones the previous session left as they were; one this session leaves
        # alone too (its ``mutations`` still 0) has nothing to write at close
        self.reused = snapshot.reused
        # every node change is logged here, so work shared between identical tasks can be
        # refreshed for the changed nodes only
        self.node_changes: list[int] = []
        for i, n in enumerate(self.node_list):
            n.index = i
        self.effects: list[Effect] = []  # before the topology: its problems are the first effects
        # each PodGroup's status at open, compared at close (session_status.status_changed): the
        # condition dicts are kept by reference, as no session edits one in place (PodGroup.clone), so an
        # unchanged status costs no comparison of their contents; a reused clone keeps the one it opened
        # with last time, which is still its status (Cache.keep_clones)
        reused = self.reused
        self.serial = snapshot.serial
        # the jobs cloned afresh for this session, in the order of ``jobs``: the only ones that can have
        # a task to place or a PodGroup to enqueue (a reused clone is settled), and what a sum kept over
        # the reused ones walks (settled.py)
        self.fresh_jobs = snapshot.fresh_jobs()
        for job in self.fresh_jobs:
            pg = job.podgroup
            job.opened_status = (None if pg is None else
                                 (pg.phase, pg.running, pg.succeeded, pg.failed, tuple(pg.conditions)))
        # the reused clones this session changes, each once as it first changes it (Cache.keep_clones
        # gave them the log), and those not ready: with the fresh ones, all that gang's close, the job
        # statuses and the HyperNode decisions look at
        self.changed_reused = snapshot.changed_reused
        self.unready_reused = snapshot.unready_reused
        self.topology = SessionTopology(snapshot.hypernodes, self.node_list)
        self._report_hypernode_problems(snapshot.hypernodes)
        # a reused clone has no network topology (Cache.keep_clones): only the fresh ones can
        self._report_topology_problems(self.topology.adjust(self.fresh_jobs))
        decisions = self.state.hypernode_decisions
        if decisions:
            for uid, job in self.jobs.items():
                decision = decisions.get(uid)
                if decision is not None or (uid not in reused and job.contains_network_topology):
                    self.topology.restore(job, decision)
        else:
            for job in self.fresh_jobs:
                if job.contains_network_topology:
                    self.topology.restore(job, None)
        self.total_resource = Resource()
        for n in self.node_list:
            self.total_resource.add(n.allocatable)
        self.enabled_actions = set(conf.actions)
        # any pod with inter-pod (anti-)affinity terms makes labels part of a task's shape
        self.has_inter_pod_terms = snapshot.has_inter_pod_terms
        if self.has_inter_pod_terms is None:
            self.has_inter_pod_terms = any(
                t.spec.has_inter_pod_terms for n in self.node_list for t in n.tasks.values()
            ) or any(t.spec.has_inter_pod_terms for j in self.jobs.values() for t in j.tasks.values())
        self.plugins: dict[str, Plugin] = {}
        self._fns: dict[Point, dict[str, Callable]] = {p: {} for p in Point}
        self._tiered: dict[Point, list[list[Callable]]] = {}
        self._flat: dict[Point, list[Callable]] = {}
        # the per (task, node) chains, fixed at open (an enum-keyed lookup per call costs a Python __hash__)
        self._predicate_fns: tuple[Callable, ...] = ()
        self._node_order_fns: tuple[Callable, ...] = ()
        self.event_handlers: list[EventHandler] = []
        # per-session scratch space for actions and plugins, by owner name
        self.scratch: dict[str, Any] = {}
        self.stats = SessionStats()
        self.plugin_classes = plugin_classes

    def _report_topology_problems(self, problems: list[tuple[JobInfo, str]]) -> None:
        """A Warning event on a PodGroup whose network topology names no tier, once per problem (Volcano
        only logs it and schedules the job as if it had no tier limit)."""
        warned = self.state.topology_warnings
        now: set[tuple[str, str, str]] = set()
        for job, problem in problems:
            pg = job.podgroup
            if pg is None:
                continue
            ident = (pg.key, pg.uid, problem)
            now.add(ident)
            if ident not in warned:
                log.warning("Failed to translate highestTierName, skip translation", job=job.uid, error=problem)
                self.effects.append(Event("PodGroup", pg.namespace, pg.name, "Warning", "InvalidNetworkTopology",
                                          f"spec.networkTopology: {problem}; the job is scheduled without a tier limit"))
        self.state.topology_warnings = now

    def _report_hypernode_problems(self, tree: HyperNodeTree) -> None:
        """A Warning event ``InvalidHyperNode`` on each HyperNode the tree found a problem with (a cycle,
        a second parent: jobs with a network topology wait; a member that selects nothing by mistake),
        once per problem while it lasts.  Volcano only logs them; a HyperNode is cluster-scoped, so the
        event's namespace is left empty (the sink writes it in ``default``, as client-go does)."""
        warned = self.state.hypernode_warnings
        if not tree.problems and not warned:
            return
        now = set(tree.problems)
        for name, problem in tree.problems:
            if (name, problem) in warned or name not in tree.hypernodes or not tree.hypernodes[name].exists:
                continue
            if not tree.ready and (name, problem) == (tree.error_at, tree.error):
                problem = f"{problem}; the HyperNodes are not ready: jobs with a network topology wait"
            self.effects.append(Event("HyperNode", "", name, "Warning", "InvalidHyperNode", problem))
        self.state.hypernode_warnings = now

    # -- open and close ------------------------------------------------------------

    def open(self) -> None:
        for tier in self.tiers:
            for option in tier:
                cls = self.plugin_classes.get(option.name)
                if cls is None:
                    log.warning("Failed to get plugin %s." % option.name, plugin=option.name)
                    continue
                plugin = cls(option.arguments)
                self.plugins[option.name] = plugin
                started = time.perf_counter()
                plugin.on_session_open(self)
                self.stats.plugin_latency.append((option.name, "OnSessionOpen", time.perf_counter() - started))
        for point in Point:
            tiers: list[list[Callable]] = []
            for tier in self.tiers:
                fns = []
                for option in tier:
                    fn = self._fns[point].get(option.name)
                    if fn is None:
                        continue
                    flags = point.flags
                    if flags and not any(option.enabled(f) for f in flags):
                        continue
                    fns.append(fn)
                tiers.append(fns)
            self._tiered[point] = tiers
            self._flat[point] = [fn for t in tiers for fn in t]
        self._predicate_fns = tuple(self._flat[Point.PREDICATE])
        self._node_order_fns = tuple(self._flat[Point.NODE_ORDER])

    def release(self) -> None:
        """Drop what refers back to the session (plugins, their callbacks, the scratch space), once
        nothing will call them again: reference counting then frees the session and its snapshot as
        soon as the last reference goes, instead of a full garbage collection finding the cycles."""
        self.plugins.clear()
        self._fns.clear()
        self._tiered.clear()
        self._flat.clear()
        self._predicate_fns = self._node_order_fns = ()
        self.event_handlers.clear()
        for value in self.scratch.values():  # an owner's scratch value may hold cycles of its own
            release = getattr(value, "release", None)
            if release is not None:
                release()
        self.scratch.clear()

    def hierarchy_enabled(self, plugin: str) -> bool:
        """``HierarchyEnabled``: the first option naming ``plugin`` sets ``enableHierarchy``."""
        for tier in self.tiers:
            for option in tier:
                if option.name == plugin:
                    return option.enabled("enableHierarchy")
        return False

    def add(self, point: Point, plugin: str, fn: Callable) -> None:
        """Register a plugin's callback for an extension point (``ssn.AddXxxFn``)."""
        self._fns[point][plugin] = fn

    def add_event_handler(self, handler: EventHandler) -> None:
        self.event_handlers.append(handler)

    def fns(self, point: Point) -> list[Callable]:
        return self._flat[point]

    # -- orders -----------------------------------------------------------------------

    def job_order_compare(self, l: JobInfo, r: JobInfo) -> int:
        for fn in self._flat[Point.JOB_ORDER]:
            c = fn(l, r)
            if c != 0:
                return c
        return 0

    def job_order(self, l: JobInfo, r: JobInfo) -> bool:
        c = self.job_order_compare(l, r)
        if c != 0:
            return c < 0
        if l.creation_timestamp != r.creation_timestamp:
            return l.creation_timestamp < r.creation_timestamp
        return l.uid < r.uid

    def queue_order(self, l: QueueInfo, r: QueueInfo) -> bool:
        for fn in self._flat[Point.QUEUE_ORDER]:
            c = fn(l, r)
            if c != 0:
                return c < 0
        if l.creation_timestamp != r.creation_timestamp:
            return l.creation_timestamp < r.creation_timestamp
        return l.name < r.name

    def task_order(self, l: TaskInfo, r: TaskInfo) -> bool:
        for fn in self._flat[Point.TASK_ORDER]:
            c = fn(l, r)
            if c != 0:
                return c < 0
        return _compare_task_default(l, r) < 0

    def victim_queue_order(self, l: QueueInfo, r: QueueInfo, preemptor: QueueInfo) -> bool:
        for fn in self._flat[Point.VICTIM_QUEUE_ORDER]:
            c = fn(l, r, preemptor)
            if c != 0:
                return c < 0
        return not self.queue_order(l, r)

    # -- job and queue verdicts ----------------------------------------------------------

    def job_valid(self, job: JobInfo):
        """The first failing validation result (an object with ``passed``, ``reason``, ``message``), or None."""
        for fn in self._flat[Point.JOB_VALID]:
            res = fn(job)
            if res is not None and not res.passed:
                return res
        return None

    def job_ready(self, job: JobInfo) -> bool:
        return all(fn(job) for fn in self._flat[Point.JOB_READY])

    def _vote(self, point: Point, *args) -> bool:
        for tier in self._tiered[point]:
            permitted = False
            for fn in tier:
                v = fn(*args)
                if v == Vote.Reject:
                    return False
                if v == Vote.Permit:
                    permitted = True
            if permitted:
                return True
        return True

    def job_pipelined(self, job: JobInfo) -> bool:
        return self._vote(Point.JOB_PIPELINED, job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        return self._vote(Point.JOB_ENQUEUEABLE, job)

    def job_enqueued(self, job: JobInfo) -> None:
        for fn in self._flat[Point.JOB_ENQUEUED]:
            fn(job)

    def job_starving(self, job: JobInfo) -> bool:
        for tier in self._tiered[Point.JOB_STARVING]:
            if not tier:
                continue
            return all(fn(job) for fn in tier)
        return False

    # -- SubJobs and HyperNodes (session_plugins.go) ---------------------------------------------

    def sub_job_ready(self, job: JobInfo, sub_job: SubJobInfo) -> bool:
        if not job.contains_sub_job_policy:
            return self.job_ready(job)
        return all(fn(sub_job) for fn in self._flat[Point.SUB_JOB_READY])

    def sub_job_pipelined(self, job: JobInfo, sub_job: SubJobInfo) -> bool:
        if not job.contains_sub_job_policy:
            return self.job_pipelined(job)
        return self._vote(Point.SUB_JOB_PIPELINED, sub_job)

    def sub_job_order(self, l: SubJobInfo, r: SubJobInfo) -> bool:
        for fn in self._flat[Point.SUB_JOB_ORDER]:
            c = fn(l, r)
            if c != 0:
                return c < 0
        if l.match_index != r.match_index:
            return l.match_index < r.match_index
        return l.uid < r.uid

    def hypernode_gradient_for_job(self, job: JobInfo, hypernode: SessionHyperNode,
                                   purpose: str) -> list[list[SessionHyperNode]]:
        """The first plugin's gradients of HyperNodes to try the job in; the given one alone by default."""
        for fn in self._flat[Point.HYPERNODE_GRADIENT_FOR_JOB]:
            return fn(job, hypernode, purpose)
        return [[hypernode]]

    def hypernode_gradient_for_sub_job(self, sub_job: SubJobInfo, hypernode: SessionHyperNode,
                                       purpose: str) -> list[list[SessionHyperNode]]:
        for fn in self._flat[Point.HYPERNODE_GRADIENT_FOR_SUB_JOB]:
            return fn(sub_job, hypernode, purpose)
        return [[hypernode]]

    def hypernode_scores(self, sub_job: SubJobInfo, candidates: list[str]) -> dict[str, float]:
        """``PrioritizeHyperNodes``: each candidate's summed plugin scores (0 when none scores it)."""
        total = dict.fromkeys(candidates, 0.0)
        for fn in self._flat[Point.HYPERNODE_ORDER]:
            for name, score in fn(sub_job, candidates).items():
                if name in total:
                    total[name] += score
        return total

    def overused(self, queue: QueueInfo) -> bool:
        return any(fn(queue) for fn in self._flat[Point.OVERUSED])

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return all(fn(queue, task) for fn in self._flat[Point.ALLOCATABLE])

    def preemptive(self, queue: QueueInfo, tasks: list[TaskInfo]) -> bool:
        return all(fn(queue, tasks) for fn in self._flat[Point.PREEMPTIVE])

    def _victims(self, point: Point, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Tier-walk with intersection (spec/framework.md §6.2)."""
        for tier in self._tiered[point]:
            victims: list[TaskInfo] | None = None
            for fn in tier:
                found, vote = fn(preemptor, candidates)
                if vote == Vote.Abstain:
                    continue
                if not found:
                    victims = None
                    break
                if victims is None:
                    victims = list(found)
                else:
                    keep = {t.uid for t in found}
                    victims = [t for t in victims if t.uid in keep] or None
            if victims:
                return victims
        return []

    def preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> list[TaskInfo]:
        return self._victims(Point.PREEMPTABLE, preemptor, preemptees)

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> list[TaskInfo]:
        return self._victims(Point.RECLAIMABLE, reclaimer, reclaimees)

    def unified_evictable(self, ctx, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """``UnifiedEvictable``: gangpreempt's and gangreclaim's victims, voted as ``preemptable``
        (an ``EvictionContext`` in place of the preemptor task)."""
        return self._victims(Point.UNIFIED_EVICTABLE, ctx, candidates)

    def victim_tasks(self, tasks: list[TaskInfo]) -> list[TaskInfo]:
        """``VictimTasks``: the union of the victims the plugins of the first tier that names any pick
        from ``tasks``, each once, in the order first picked."""
        for tier in self._tiered[Point.VICTIM_TASKS]:
            chosen: dict[str, TaskInfo] = {}
            for fn in tier:
                for t in fn(tasks):
                    chosen.setdefault(t.uid, t)
            if chosen:
                return list(chosen.values())
        return []

    def build_victims_priority_queue(self, victims: list[TaskInfo], preemptor: TaskInfo) -> PriorityQueue[TaskInfo]:
        """``BuildVictimsPriorityQueue``: the victim to evict first pops first (spec/framework.md §6.3)."""
        jobs, queues, task_order = self.jobs, self.queues, self.task_order
        preemptor_job = jobs.get(preemptor.job)

        def job_then_task(lj: JobInfo, rj: JobInfo, l: TaskInfo, r: TaskInfo) -> bool:
            c = self.job_order_compare(lj, rj)
            if c != 0:
                return c > 0
            return not task_order(l, r)

        def less(l: TaskInfo, r: TaskInfo) -> bool:
            if l.job == r.job:
                return not task_order(l, r)
            lj, rj = jobs.get(l.job), jobs.get(r.job)
            if lj is None or rj is None:
                if lj is None and rj is None:
                    return not task_order(l, r)
                return lj is None  # the orphan first
            if preemptor_job is None or lj.queue == rj.queue:
                return job_then_task(lj, rj, l, r)
            return self.victim_queue_order(queues[lj.queue], queues[rj.queue], queues[preemptor_job.queue])

        return PriorityQueue(less, victims)

    # -- node-level callbacks ------------------------------------------------------------

    def pre_predicate(self, task: TaskInfo) -> str | None:
        for fn in self._flat[Point.PRE_PREDICATE]:
            err = fn(task)
            if err:
                return err
        return None

    def predicate(self, task: TaskInfo, node: NodeInfo):
        """The statuses of the first plugin that rejects the node, or None."""
        for fn in self._predicate_fns:
            statuses = fn(task, node)
            if statuses:
                return statuses
        return None

    # -- preempt's dry run (enableTopologyAwarePreemption) ------------------------------------

    def cycle_state(self, task: TaskInfo) -> CycleState:
        """What the plugins' PrePredicateFns write for ``task`` (``GetCycleState`` after PrePredicate)."""
        state = CycleState()
        for fn in self._flat[Point.CYCLE_STATE]:
            fn(task, state)
        return state

    def simulate_allocatable(self, state: CycleState, queue: QueueInfo, task: TaskInfo) -> bool:
        return all(fn(state, queue, task) for fn in self._flat[Point.SIMULATE_ALLOCATABLE])

    def simulate_predicate(self, state: CycleState, task: TaskInfo, node: NodeInfo) -> str | None:
        """The first plugin's reason the task does not fit the dry-run node, or None."""
        for fn in self._flat[Point.SIMULATE_PREDICATE]:
            err = fn(state, task, node)
            if err:
                return err
        return None

    def simulate_add_task(self, state: CycleState, preemptor: TaskInfo, task: TaskInfo, node: NodeInfo) -> str | None:
        for fn in self._flat[Point.SIMULATE_ADD_TASK]:
            err = fn(state, preemptor, task, node)
            if err:
                return err
        return None

    def simulate_remove_task(self, state: CycleState, preemptor: TaskInfo, task: TaskInfo,
                             node: NodeInfo) -> str | None:
        for fn in self._flat[Point.SIMULATE_REMOVE_TASK]:
            err = fn(state, preemptor, task, node)
            if err:
                return err
        return None

    def node_order(self, task: TaskInfo, node: NodeInfo) -> float:
        score = 0.0
        for fn in self._node_order_fns:
            score += fn(task, node)
        return score

    # -- task state changes outside statements (session.go) -------------------------------

    def fire_allocate(self, task: TaskInfo) -> None:
        for h in self.event_handlers:
            if h.allocate is not None:
                h.allocate(task)

    def fire_deallocate(self, task: TaskInfo) -> None:
        for h in self.event_handlers:
            if h.deallocate is not None:
                h.deallocate(task)

    def update_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        job = self.jobs.get(task.job)
        if job is not None and task.uid in job.tasks:
            job.update_task_status(task, status)
        else:
            task.status = status

    def touch_node(self, node: NodeInfo) -> None:
        """Something a verdict or score of ``node`` depends on changed besides its tasks (its devices'
        ledger, its HyperNode's use): a new generation, and the node logged for the node search."""
        node.touch()
        self.node_changes.append(node.index)

    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        """``ssn.Allocate`` (backfill): allocate and bind at once when the job is ready."""
        job = self.jobs[task.job]
        self.update_task_status(task, TaskStatus.Allocated)
        task.node_name = node.name
        try:
            node.add_task(task)
        except NodeAccountingError as e:
            # Volcano returns the error and leaves the task Allocated; we put it back to Pending
            self.update_task_status(task, TaskStatus.Pending)
            task.node_name = ""
            raise EventError(str(e)) from e
        self.node_changes.append(node.index)
        try:
            self.fire_allocate(task)
        except EventError:
            self.fire_deallocate(task)
            node.remove_task(task)
            self.node_changes.append(node.index)
            self.update_task_status(task, TaskStatus.Pending)
            task.node_name = ""
            raise
        if self.job_ready(job):
            for t in job.tasks_in(TaskStatus.Allocated):
                self.dispatch(t)

    def dispatch(self, task: TaskInfo) -> None:
        """Send an allocated task to be bound; the session task becomes Binding."""
        self.effects.append(Bind(task.namespace, task.name, task.uid, task.node_name, dict(task.pod_annotations)))
        self.update_task_status(task, TaskStatus.Binding)
        node = self.nodes.get(task.node_name)
        if node is not None and task.uid in node.tasks:
            node.accounted[task.uid] = TaskStatus.Binding

    def evict(self, task: TaskInfo, reason: str) -> None:
        """``cache.Evict``: the pod is asked to go; event on its PodGroup."""
        self.effects.append(Evict(task.namespace, task.name, task.uid, reason))
        job = self.jobs.get(task.job)
        if job is not None and job.podgroup is not None:
            self.effects.append(Event("PodGroup", job.podgroup.namespace, job.podgroup.name, "Normal", "Evict", reason))

    # -- close ----------------------------------------------------------------------------

    def close(self) -> list[Effect]:
        for name, plugin in self.plugins.items():
            started = time.perf_counter()
            plugin.on_session_close(self)
            self.stats.plugin_latency.append((name, "OnSessionClose", time.perf_counter() - started))
        # a reused job the session left alone is settled, its status written by an earlier session:
        # nothing to do; the others in the order of ``jobs`` (the order of the status writes)
        if self.changed_reused:
            reused = self.reused
            closing = [job for uid, job in self.jobs.items() if uid not in reused or job.mutations]
        else:
            closing = self.fresh_jobs
        for job in closing:
            write_job_status(self, job)
        write_queue_statuses(self)
        self._keep_hypernode_decisions()
        return self.effects

    def _keep_hypernode_decisions(self) -> None:
        """``updateJobInfo``: the jobs' allocated HyperNodes, for the next session."""
        kept: dict[str, HyperNodeDecision] = {}
        # a reused job the session left alone has what it was given at open, if anything
        jobs = self.jobs
        restored = [jobs[uid] for uid in self.state.hypernode_decisions if uid in self.reused and uid in jobs]
        for job in (*self.fresh_jobs, *self.changed_reused, *restored):
            if job.allocated_hypernode or job._sub_jobs is not None:
                decision = decision_of(job)
                if decision is not None:
                    kept[job.uid] = decision
        self.state.hypernode_decisions = kept
