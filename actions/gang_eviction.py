"""What gangpreempt and gangreclaim share: evicting for a whole job at once (actions/utils in Volcano:
bundle.go, simulate.go, util.go; the two actions' common loop).

Plain preempt and reclaim place a starving job task by task, each on a node where evictions make
room, until the job is no longer starving.  The gang actions plan for the job as a whole, per
*domain* (a HyperNode and the real nodes below it; the plugins' eviction gradients for the job give
them, the cluster top when no plugin does):

1. the job's pending tasks (not gated, not BestEffort) are what it needs: every SubJob's for a job
   starting up, the first SubJob's for a job already ready (allocate's worksheet order);
2. the running tasks of the domain that may go are grouped per victim job into *bundles*: a
   **safe** bundle holds the tasks the job can lose and stay gang-ready (ready tasks above
   minAvailable, above each role's minimum, and each subgroup policy left its minSubGroups ready
   SubJobs); a **whole** bundle holds the rest, whose eviction breaks the job.  Safe bundles come
   before whole ones; the action's own rule orders the victim jobs (gangpreempt: the job that comes
   last in job order first; gangreclaim: the victim-queue order), then the share of the need a
   bundle frees for what its job holds in all;
3. the plugins vote on the candidates (``Session.unified_evictable``: gang, conformance, priority
   and capacity have a say, as in Volcano); a whole bundle with one task refused is dropped, a safe
   one shrinks; whole bundles go when ``allowWholeBundle`` is false;
4. bundles are added one by one until the domain's Idle + Releasing plus what they hold covers
   the need; then a dry run evicts them all and pipelines the job SubJob by SubJob (a SubJob with a
   hard network topology in the first HyperNode of its eviction gradients where it fits), every
   pending task of a SubJob or none, through allocate's search (FutureIdle and the preempt
   predicate from the rotating start, the nodes whose Idle holds the task first, the best score).
   The plan stands only if the job is then pipelined; otherwise the next bundle is added and the
   dry run repeated.

The caller's statement takes the plan (Volcano discards the dry run and replays it: the same
operations) and is committed only if the job is pipelined, as in the plain actions.

Not done: Volcano records the HyperNode each SubJob was placed in (``NominatedHyperNode``) for
allocate to try first in the next cycle; vcsched's allocate has no such fast path, so the plan's
``sub_job_hypernodes`` are not kept.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import IntEnum

import structlog

from vcsched.api.job_info import JobInfo
from vcsched.api.node_info import NodeInfo
from vcsched.api.queue_info import QueueInfo
from vcsched.api.resource import Default, Resource
from vcsched.api.sub_job import SubJobInfo
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import READY_STATUS, TaskStatus
from vcsched.framework.arguments import Arguments
from vcsched.framework.interface import Action, EvictionContext, EvictionKind, Point
from vcsched.framework.session import Session
from vcsched.framework.statement import Statement, StatementError
from vcsched.framework.topology import CLUSTER_TOP, PURPOSE_EVICT, SessionHyperNode
from vcsched.framework.util import PriorityQueue

from .allocate import node_search
from .victims import NodeFailures, commit, evicted_resources, preempt_predicate_fails

log = structlog.get_logger("vcsched.gang_eviction")

CLUSTER_TOP_HYPERNODE = CLUSTER_TOP
PREEMPTABLE_KEY = "volcano.sh/preemptable"


# -- arguments ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class GangEvictionArgs:
    """``maxDomains`` (candidate domains per job, 8; zero or less: a warning and 8, as Volcano) and
    ``allowWholeBundle`` (may a victim job be broken below its minimum, true)."""

    max_domains: int = 8
    allow_whole_bundle: bool = True

    @classmethod
    def parse(cls, args: Arguments, action: str, warn: bool = True) -> "GangEvictionArgs":
        d = cls()
        max_domains = args.get_int("maxDomains", d.max_domains)
        if max_domains <= 0:
            if warn:
                log.warning(f"Invalid maxDomains value {max_domains} for action {action}, "
                            f"falling back to default {d.max_domains}")
            max_domains = d.max_domains
        return cls(max_domains, args.get_bool("allowWholeBundle", d.allow_whole_bundle))


# -- bundles (bundle.go) --------------------------------------------------------------------------

class BundleType(IntEnum):
    SAFE = 0
    WHOLE = 1


@dataclass(slots=True)
class Bundle:
    """Tasks of one victim job on the domain's nodes; ``local``: what they hold; ``job_total``: what the
    whole job holds (empty for a safe bundle: it costs the job nothing)."""

    type: BundleType
    job: JobInfo
    tasks: list[TaskInfo]
    local: Resource
    job_total: Resource


def create_job_bundles(job: JobInfo, tasks: list[TaskInfo]) -> list[Bundle]:
    """``CreateJobBundles``: split the job's candidate tasks, lowest task priority (then UID) first,
    into a safe bundle (those it can lose and stay gang-ready: above minAvailable, above each role's
    minimum, and, with subgroup policies, leaving each policy its minSubGroups ready SubJobs) and a
    whole bundle (the rest)."""
    if not tasks:
        return []
    tasks = sorted(tasks, key=lambda t: (t.priority, t.uid))
    surplus = job.ready_task_num() - job.min_available
    if surplus < 0:  # not gang-ready already: losing more breaks nothing new
        return [Bundle(BundleType.SAFE, job, tasks, evicted_resources(tasks), Resource())]
    role_surplus: dict[str, int] = {}
    if job.min_available >= job.task_min_available_total:  # CheckTaskReady's own bypass otherwise
        ready: dict[str, int] = {}
        for status, bucket in job.by_status.items():
            for t in bucket.values():
                if status & READY_STATUS or (status == TaskStatus.Pending and t.init_resreq.is_empty()):
                    ready[t.role] = ready.get(t.role, 0) + 1
        role_surplus = {role: ready.get(role, 0) - n for role, n in job.task_min_available.items()}
    # SubJobs (a SubJob is whole or broken: its minimum is its size): ready ones a policy can spare
    enforce_sub_jobs = bool(job.min_sub_jobs)
    broken: set[str] = set()
    group_surplus: dict[str, int] = {}
    if enforce_sub_jobs:
        for sj in job.sub_jobs.values():
            if sj.is_ready():
                group_surplus[sj.gid] = group_surplus.get(sj.gid, 0) + 1
            else:
                broken.add(sj.uid)
        for gid, n in job.min_sub_jobs.items():
            group_surplus[gid] = group_surplus.get(gid, 0) - n
    safe: list[TaskInfo] = []
    whole: list[TaskInfo] = []
    for t in tasks:
        has_role_min = t.role in role_surplus
        sj = None
        sub_job_safe = True
        if enforce_sub_jobs:
            sj = job.sub_job_of(t)
            sub_job_safe = sj is not None and (sj.uid in broken or group_surplus.get(sj.gid, 0) > 0)
        if surplus > 0 and (not has_role_min or role_surplus[t.role] > 0) and sub_job_safe:
            safe.append(t)
            surplus -= 1
            if has_role_min:
                role_surplus[t.role] -= 1
            if sj is not None and sj.uid not in broken:  # the first eviction breaks the SubJob
                broken.add(sj.uid)
                group_surplus[sj.gid] = group_surplus.get(sj.gid, 0) - 1
        else:
            whole.append(t)
    bundles = []
    if safe:
        bundles.append(Bundle(BundleType.SAFE, job, safe, evicted_resources(safe), Resource()))
    if whole:
        bundles.append(Bundle(BundleType.WHOLE, job, whole, evicted_resources(whole),
                              evicted_resources(list(job.tasks.values()))))
    return bundles


def flatten_bundles(bundles: Iterable[Bundle]) -> list[TaskInfo]:
    return [t for b in bundles for t in b.tasks]


def apply_allowed_tasks(bundles: list[Bundle], allowed: set[str]) -> list[Bundle]:
    """``ApplyAllowedTasks``: a whole bundle stays only if every task is allowed; a safe one keeps
    its allowed tasks."""
    out = []
    for b in bundles:
        kept = [t for t in b.tasks if t.uid in allowed]
        if b.type is BundleType.WHOLE:
            if b.tasks and len(kept) == len(b.tasks):
                out.append(b)
        elif kept:
            out.append(Bundle(b.type, b.job, kept, evicted_resources(kept), b.job_total))
    return out


def score_against_need(res: Resource, need: Resource, cap_at_need: bool) -> float:
    """Sum over the needed dimensions of what ``res`` gives of each, as a fraction of the need."""
    score = 0.0
    for name in need.resource_names():
        n = need.get(name)
        if n <= 0:
            continue
        v = res.get(name)
        if cap_at_need and v > n:
            v = n
        score += v / n
    return score


def bundle_roi(b: Bundle, need: Resource) -> float:
    """``bundleROI``: what the bundle gives towards the need for what its job holds (a safe bundle
    costs nothing: infinite)."""
    cost = score_against_need(b.job_total, need, False)
    if cost == 0:
        return math.inf
    return score_against_need(b.local, need, True) / cost


def _stable_bundle_less(l: Bundle, r: Bundle) -> bool:
    if l.job.uid != r.job.uid:
        return l.job.uid < r.job.uid
    lf = l.tasks[0].uid if l.tasks else ""
    rf = r.tasks[0].uid if r.tasks else ""
    if lf != rf:
        return lf < rf
    return len(l.tasks) < len(r.tasks)


def _sort_bundles(bundles: list[Bundle], need: Resource,
                  owner_order: Callable[[Bundle, Bundle], bool | None]) -> None:
    """Safe first; then ``owner_order`` (None: no opinion); the higher ROI; a stable tie-break."""
    roi = {id(b): bundle_roi(b, need) for b in bundles}

    def less(l: Bundle, r: Bundle) -> bool:
        if l.type != r.type:
            return l.type < r.type
        by_owner = owner_order(l, r)
        if by_owner is not None:
            return by_owner
        lr, rr = roi[id(l)], roi[id(r)]
        if lr != rr:
            return lr > rr
        return _stable_bundle_less(l, r)

    def cmp(l: Bundle, r: Bundle) -> int:
        return -1 if less(l, r) else (1 if less(r, l) else 0)

    bundles.sort(key=functools.cmp_to_key(cmp))


def sort_bundles_for_preempt(bundles: list[Bundle], need: Resource,
                             less_victim_job: Callable[[JobInfo, JobInfo], bool]) -> None:
    """``SortBundlesForPreempt``: between jobs, ``less_victim_job`` decides when it is one-sided."""

    def owner(l: Bundle, r: Bundle) -> bool | None:
        if l.job.uid == r.job.uid:
            return None
        lr, rl = less_victim_job(l.job, r.job), less_victim_job(r.job, l.job)
        return lr if lr != rl else None

    _sort_bundles(bundles, need, owner)


def sort_bundles_for_reclaim(bundles: list[Bundle], need: Resource,
                             less_queue: Callable[[QueueInfo, QueueInfo], bool] | None,
                             queues: dict[str, QueueInfo]) -> None:
    """``SortBundlesForReclaim``: between queues, ``less_queue`` decides when it is one-sided."""

    def owner(l: Bundle, r: Bundle) -> bool | None:
        if less_queue is None:
            return None
        lq, rq = queues.get(l.job.queue), queues.get(r.job.queue)
        if lq is None or rq is None or lq.name == rq.name:
            return None
        lr, rl = less_queue(lq, rq), less_queue(rq, lq)
        return lr if lr != rl else None

    _sort_bundles(bundles, need, owner)


# -- domains and victims (util.go) -------------------------------------------------------------

def pick_domains_from_gradients(gradients: list[list[str]], max_domains: int, fallback: str) -> list[str]:
    """``PickDomainsFromGradients``: HyperNode names gradient by gradient, each once, at most
    ``max_domains`` (zero or less: no cap); ``fallback`` when there are none."""
    seen: set[str] = set()
    out: list[str] = []
    for gradient in gradients:
        for name in gradient:
            if not name or name in seen:
                continue
            seen.add(name)
            out.append(name)
            if max_domains > 0 and len(out) >= max_domains:
                return out
    if not out and fallback:
        out.append(fallback)
    return out


def candidate_domains(ssn: Session, job: JobInfo, max_domains: int) -> list[str]:
    """``GetCandidateDomains``: the HyperNodes the plugins' eviction gradients give for the job, from
    the cluster top (the cluster top itself when no plugin gives gradients; nothing for a job with a
    hard topology that no gradient admits)."""
    root = ssn.topology.top
    gradients = ssn.hypernode_gradient_for_job(job, root, PURPOSE_EVICT)
    names = [[hn.name for hn in row if hn is not None] for row in gradients]
    return pick_domains_from_gradients(names, max_domains, "" if job.contains_hard_topology else root.name)


def domain_nodes(ssn: Session, name: str) -> list[NodeInfo]:
    """``RealNodesList[name]``: the session's nodes below the HyperNode (none for an unknown one)."""
    hn = ssn.topology.hypernodes.get(name)
    return hn.nodes if hn is not None else []


def preemptable_for_gang_eviction(job: JobInfo) -> bool:
    """``IsJobPreemptableForGangEviction``: a PodGroup that says nothing allows it; one that carries
    ``volcano.sh/preemptable`` (annotation or label) follows it."""
    pg = job.podgroup
    if pg is None:
        return True
    if PREEMPTABLE_KEY in pg.annotations or PREEMPTABLE_KEY in pg.labels:
        return job.preemptable
    return True


def resources_sum(tasks: Iterable[TaskInfo]) -> Resource:
    """``SumInitResreq``."""
    total = Resource()
    for t in tasks:
        total.add(t.init_resreq)
    return total


def idle_and_releasing(nodes: Iterable[NodeInfo]) -> Resource:
    """``SumIdleAndReleasing``."""
    total = Resource()
    for n in nodes:
        total.add(n.idle)
        total.add(n.releasing)
    return total


# -- the dry run (simulate.go) --------------------------------------------------------------------

def eviction_worksheet(ssn: Session, job: JobInfo) -> list[tuple[SubJobInfo, list[TaskInfo]]]:
    """``organizeEvictionWorksheet``: the job's SubJobs with pending tasks that are neither gated nor
    BestEffort, as allocate orders them (those a policy still needs for its minSubGroups first, then
    SubJob order), each with those tasks in task order."""
    sub_jobs = job.sub_jobs
    ready: dict[str, int] = {}
    unready: list[SubJobInfo] = []
    for sj in sub_jobs.values():
        if ssn.sub_job_ready(job, sj):
            ready[sj.gid] = ready.get(sj.gid, 0) + 1
        else:
            unready.append(sj)
    unready = PriorityQueue.sorted(ssn.sub_job_order, unready)
    required: set[str] = set()
    for sj in unready:
        if ready.get(sj.gid, 0) < job.min_sub_jobs.get(sj.gid, 0):
            required.add(sj.uid)
            ready[sj.gid] = ready.get(sj.gid, 0) + 1

    def less(l: SubJobInfo, r: SubJobInfo) -> bool:
        lr, rr = l.uid in required, r.uid in required
        if lr != rr:
            return lr
        return ssn.sub_job_order(l, r)

    out = []
    for sj in PriorityQueue.sorted(less, sub_jobs.values()):
        tasks = [t for t in sj.pending() if not t.scheduling_gated and not t.resreq.is_empty()]
        if tasks:
            out.append((sj, PriorityQueue.sorted(ssn.task_order, tasks)))
    return out


def pending_for_gang_eviction(ssn: Session, job: JobInfo) -> list[TaskInfo]:
    """``CollectPendingTasksForGangEviction``: for a job that is ready, the first SubJob's worksheet
    tasks (it asks for one more SubJob); for one starting up, every SubJob's."""
    worksheet = eviction_worksheet(ssn, job)
    if not worksheet:
        return []
    if ssn.job_ready(job):
        return list(worksheet[0][1])
    return [t for _, tasks in worksheet for t in tasks]


@dataclass(slots=True)
class NominationPlan:
    """A dry run that made the job pipelined: its statement, still applied, and the HyperNode each
    SubJob was placed in."""

    statement: Statement
    sub_job_hypernodes: dict[str, str]


def build_nomination_plan(ssn: Session, queue: QueueInfo | None, job: JobInfo, domain: SessionHyperNode,
                          victims: list[TaskInfo], reason: str, error_cache: bool) -> NominationPlan | None:
    """``BuildNominationPlanInDomain``: evict ``victims``, then pipeline the job's SubJobs one by one in
    the domain (a SubJob with a hard topology in the first HyperNode of its eviction gradients where
    it fits) until the job is pipelined (a job already ready: one SubJob); the plan, or None with
    the session as it was."""
    if not domain.nodes:
        return None
    worksheet = eviction_worksheet(ssn, job)
    if not worksheet:
        return None
    was_ready = ssn.job_ready(job)
    plan = Statement(ssn)
    for v in victims:
        plan.evict(v, reason)
    hard = job.contains_hard_topology
    placed_in: dict[str, str] = {}
    pipelined = False
    for sub_job, tasks in worksheet:
        if hard:
            rows = ssn.hypernode_gradient_for_sub_job(sub_job, domain, PURPOSE_EVICT)
        else:
            rows = [[domain]]
        winner = None
        for row in rows:
            for hn in row:
                if hn is None:
                    continue
                trial = _place_all(ssn, queue, job, sub_job, tasks, hn.nodes, bool(victims), error_cache)
                if trial is not None:
                    winner = (trial, hn.name)
                    break
            if winner is not None:
                break
        if winner is None:
            plan.discard()
            return None
        plan.merge(winner[0])
        placed_in[sub_job.uid] = winner[1]
        pipelined = ssn.job_pipelined(job)
        if was_ready or pipelined:
            break
    if not pipelined:
        plan.discard()
        return None
    return NominationPlan(plan, placed_in)


def _place_all(ssn: Session, queue: QueueInfo | None, job: JobInfo, sub_job: SubJobInfo, tasks: list[TaskInfo],
               nodes: list[NodeInfo], eviction_occurred: bool, error_cache: bool) -> Statement | None:
    """``runSimulateTrialAtHyperNode``: every task of the SubJob pipelined onto ``nodes`` and the SubJob
    then ready or pipelined, or None and nothing changed."""
    if not nodes:
        return None
    trial = Statement(ssn)
    failures = NodeFailures() if error_cache else None
    for task in tasks:
        node = _node_for(ssn, queue, job, task, nodes, failures)
        if node is None:
            trial.discard()
            return None
        try:
            trial.pipeline(task, node, eviction_occurred)
        except StatementError as e:
            log.error("Simulate pipeline failed", task=task.key, node=node.name, error=str(e))
            trial.discard()
            return None
    if not trial.operations or not (ssn.sub_job_ready(job, sub_job) or ssn.sub_job_pipelined(job, sub_job)):
        trial.discard()
        return None
    return trial


def _node_for(ssn: Session, queue: QueueInfo | None, job: JobInfo, task: TaskInfo, domain: list[NodeInfo],
              failures: NodeFailures | None) -> NodeInfo | None:
    """One task's node in the dry run, or None when it has none."""
    if queue is not None and not ssn.allocatable(queue, task):
        return None
    nodes = _without_unresolvable(ssn, job, task, domain)
    if not nodes or ssn.pre_predicate(task):
        return None
    feasible = _feasible_nodes(ssn, task, nodes, failures)
    node = _best_node(ssn, task, feasible)
    if node is None or not task.init_resreq.less_equal(node.future_idle()):
        return None
    return node


def _without_unresolvable(ssn: Session, job: JobInfo, task: TaskInfo, domain: list[NodeInfo]) -> list[NodeInfo]:
    """The domain's nodes allocate did not find UnschedulableAndUnresolvable for the task (Volcano keeps
    the whole domain when that leaves no node of the cluster at all)."""
    fe = job.nodes_fit_errors.get(task.uid)
    skip = fe.unresolvable_nodes() if fe is not None else None
    if not skip or all(n.name in skip for n in ssn.node_list):
        return domain
    return [n for n in domain if n.name not in skip]


def _feasible_nodes(ssn: Session, task: TaskInfo, nodes: list[NodeInfo],
                    failures: NodeFailures | None) -> list[NodeInfo]:
    """``PredicateNodes`` with the dry run's predicate (FutureIdle holds the task, the preempt
    predicate passes): from the rotating start until ``numToFind`` nodes pass; ``failures`` is the
    trial's error cache by job and role."""
    n = len(nodes)
    k = ssn.state.nodes_to_find.count(n)
    start = ssn.state.next_start_node % n
    failed = failures.for_task(task) if failures is not None else None
    resreq = task.init_resreq
    future_idle = node_search(ssn).future_idle  # cached per node generation
    feasible: list[NodeInfo] = []
    processed = 0
    for i in range(n):
        node = nodes[(start + i) % n]
        processed += 1
        if failed is not None and node.index in failed:
            continue
        if not resreq.less_equal(future_idle(node)) or preempt_predicate_fails(ssn, task, node):
            if failed is not None:
                failed.add(node.index)
            continue
        if len(feasible) == k:
            break  # Volcano counts the feasible node beyond numToFind as processed
        feasible.append(node)
    ssn.state.next_start_node = (start + processed) % n
    return feasible


def _best_node(ssn: Session, task: TaskInfo, feasible: list[NodeInfo]) -> NodeInfo | None:
    """``prioritizeNodesForSimulate``: among the nodes whose Idle holds the task, else those whose
    FutureIdle does, the best-scored (plugins' BestNode first; ties as allocate breaks them)."""
    resreq = task.init_resreq
    gradient = [nd for nd in feasible if resreq.less_equal(nd.idle)]
    if not gradient:
        gradient = [nd for nd in feasible if resreq.less_equal(nd.future_idle())]
    if not gradient:
        return None
    if len(gradient) == 1:
        return gradient[0]
    scores = {nd.name: ssn.node_order(task, nd) for nd in gradient}
    for scorer in ssn.fns(Point.BATCH_NODE_ORDER):
        if scorer.applies(task):
            for name, s in scorer.score(task, gradient).items():
                scores[name] = scores.get(name, 0.0) + s
    for fn in ssn.fns(Point.BEST_NODE):
        chosen = fn(task, scores)
        if chosen is not None:
            return chosen
    top = max(scores[nd.name] for nd in gradient)
    tied = [nd for nd in gradient if scores[nd.name] == top]
    rng = ssn.state.tie_break
    return rng.choice(tied) if rng is not None and len(tied) > 1 else tied[0]


# -- the two actions' common loop ----------------------------------------------------------------

class GangEvictionAction(Action):
    """gangpreempt's and gangreclaim's ``Execute``: queues in queue order, each queue's starving jobs
    in job order, one statement per job, committed only if the job is then pipelined."""

    kind: EvictionKind
    args: GangEvictionArgs = GangEvictionArgs()

    @classmethod
    def validate_arguments(cls, arguments: Arguments) -> None:
        GangEvictionArgs.parse(arguments, cls.name, warn=False)

    # what each action decides

    def skip_queue(self, ssn: Session, queue: QueueInfo) -> bool:
        return False

    def may_evict_for(self, ssn: Session, queue: QueueInfo, pending: list[TaskInfo]) -> bool:
        return True

    def candidates(self, ssn: Session, job: JobInfo, nodes: list[NodeInfo]) -> dict[str, list[TaskInfo]]:
        """The domain's tasks this action may evict for ``job``, by victim job."""
        raise NotImplementedError

    def sort_bundles(self, ssn: Session, job: JobInfo, bundles: list[Bundle], need: Resource) -> None:
        raise NotImplementedError

    # the loop

    def execute(self, ssn: Session) -> None:
        self.args = GangEvictionArgs.parse(ssn.conf.action_arguments(self.name), self.name)
        # the dry run honours allocate's predicateErrorCacheEnable (on when allocate is not configured)
        error_cache = ssn.conf.action_arguments("allocate").get_bool("predicateErrorCacheEnable", True)
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order)
        seen: set[str] = set()
        starving: dict[str, PriorityQueue[JobInfo]] = {}
        for job in ssn.jobs.values():
            if job.is_pending() or ssn.job_valid(job) is not None:
                continue
            queue = ssn.queues.get(job.queue)
            if queue is None:
                continue
            if queue.name not in seen:
                seen.add(queue.name)
                queues.push(queue)
            if not ssn.job_starving(job):
                continue
            if job.queue not in starving:
                starving[job.queue] = PriorityQueue(ssn.job_order)
            starving[job.queue].push(job)

        while not queues.empty():
            queue = queues.pop()
            if self.skip_queue(ssn, queue):
                continue
            jobs = starving.get(queue.name)
            while jobs is not None and not jobs.empty():
                job = jobs.pop()
                stmt = Statement(ssn)
                self.evict_for_job(ssn, stmt, queue, job, error_cache)
                if ssn.job_pipelined(job):
                    commit(ssn, stmt, self.name)
                else:
                    stmt.discard()

    def evict_for_job(self, ssn: Session, stmt: Statement, queue: QueueInfo, job: JobInfo,
                      error_cache: bool) -> None:
        """``preemptJobInDomains`` / ``reclaimJobInDomains``: the first domain and the fewest bundles
        (in their order) with which the job can be pipelined go into ``stmt``."""
        pending = pending_for_gang_eviction(ssn, job)
        if not pending or not self.may_evict_for(ssn, queue, pending):
            return
        need = resources_sum(pending)
        for domain in candidate_domains(ssn, job, self.args.max_domains):
            nodes = domain_nodes(ssn, domain)
            if not nodes:
                continue
            bundles = self.select_domain_bundles(ssn, job, need, domain, nodes)
            if not bundles:
                continue
            idle = idle_and_releasing(nodes)
            hypernode = ssn.topology.hypernodes.get(domain) or ssn.topology.top
            selected: list[TaskInfo] = []
            for bundle in bundles:
                selected.extend(bundle.tasks)
                if not need.less_equal(idle.clone().add(evicted_resources(selected)), Default.ZERO):
                    continue
                plan = build_nomination_plan(ssn, queue, job, hypernode, list(selected), self.name, error_cache)
                if plan is None:
                    continue
                stmt.merge(plan.statement)
                return

    def select_domain_bundles(self, ssn: Session, job: JobInfo, need: Resource, domain: str,
                              nodes: list[NodeInfo]) -> list[Bundle]:
        """``selectDomainBundles``: the domain's victim bundles the plugins allow, in eviction order."""
        bundles: list[Bundle] = []
        for victim_job, tasks in self.candidates(ssn, job, nodes).items():
            bundles.extend(create_job_bundles(ssn.jobs[victim_job], tasks))
        if not bundles:
            return []
        self.sort_bundles(ssn, job, bundles, need)
        allowed = ssn.unified_evictable(EvictionContext(self.kind, job, domain), flatten_bundles(bundles))
        if not allowed:
            return []
        valid = apply_allowed_tasks(bundles, {t.uid for t in allowed})
        if not valid:
            return []
        self.sort_bundles(ssn, job, valid, need)
        return [b for b in valid if b.type is BundleType.SAFE or self.args.allow_whole_bundle]
