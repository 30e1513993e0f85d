"""preempt's topology-aware mode (``enableTopologyAwarePreemption``, spec/framework.md §7.4.4).

Instead of evicting on the first candidate node where that makes room, Volcano dry-runs
kube-scheduler's default preemption on copies of the candidate nodes
(actions/preempt/preempt.go · topologyAwarePreempt):

1. from a random offset into the preemptor's candidate nodes, nodes are tried until
   ``clamp(N·minCandidateNodesPercentage/100, minCandidateNodesAbsolute,
   maxCandidateNodesAbsolute)`` of them yield victims;
2. on a node's copy (``SelectVictimsOnNode``), the preemptable tasks come off in eviction
   order until the preemptor fits, then each is put back, the highest first, and stays
   only if the preemptor still fits: the victims are what could not be reprieved.  "Fits"
   is the plugins' simulate hooks (``Session.simulate_*``) on a clone of the preemptor's
   cycle state, plus FutureIdle;
3. the best candidate (``SelectCandidate``): the lowest highest-victim priority, the lowest
   sum of priorities, the fewest victims, the latest start among the highest-priority
   victims, else the first; its victims are evicted and the preemptor pipelined there.

Volcano runs step 2 on ``topologyAwarePreemptWorkerNum`` goroutines and stops once enough
candidates are in, so which nodes get in depends on timing, and its last tie-break follows
Go's map order.  vcsched tries the nodes one by one from the offset (what Volcano does
with one worker) and breaks the last tie by that order; the offset comes from a seeded
generator, so a run can be repeated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import structlog

from vcsched.api.node_info import NodeInfo
from vcsched.api.queue_info import QueueInfo
from vcsched.api.task_info import TaskInfo, parse_timestamp
from vcsched.framework.arguments import Arguments
from vcsched.framework.cycle_state import CycleState
from vcsched.framework.session import Session
from vcsched.framework.statement import Statement, StatementError

from .victims import PREEMPT_REASON, validate_victims

log = structlog.get_logger("vcsched.preempt")

Filter = Callable[[TaskInfo], bool]

# kube's pickOneNodeForPreemption adds MaxInt32+1 to every priority so that all are >= 0
_PRIORITY_OFFSET = 2**31


@dataclass(frozen=True, slots=True)
class DryRunArgs:
    """The mode's arguments, with Volcano's defaults."""

    worker_num: int = 16  # accepted; the dry run here is sequential (see the module's text)
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 1
    max_candidate_nodes_absolute: int = 100

    @classmethod
    def parse(cls, args: Arguments) -> "DryRunArgs":
        d = cls()
        return cls(
            args.get_int("topologyAwarePreemptWorkerNum", d.worker_num),
            args.get_int("minCandidateNodesPercentage", d.min_candidate_nodes_percentage),
            args.get_int("minCandidateNodesAbsolute", d.min_candidate_nodes_absolute),
            args.get_int("maxCandidateNodesAbsolute", d.max_candidate_nodes_absolute),
        )

    def num_candidates(self, num_nodes: int) -> int:
        """``calculateNumCandidates``."""
        n = num_nodes * self.min_candidate_nodes_percentage // 100
        n = max(n, self.min_candidate_nodes_absolute)
        n = min(n, self.max_candidate_nodes_absolute)
        return min(n, num_nodes)


@dataclass(slots=True)
class Candidate:
    node: NodeInfo
    victims: list[TaskInfo]  # in reprieve order: the highest priority first


def pod_priority(task: TaskInfo) -> int:
    """``PodPriority``: ``spec.priority``, 0 when unset."""
    p = (task.pod.get("spec") or {}).get("priority")
    return int(p) if p is not None else 0


def topology_aware_preempt(ssn: Session, stmt: Statement, queue: QueueInfo, preemptor: TaskInfo,
                           nodes: list[NodeInfo], filter_: Filter, args: DryRunArgs) -> bool:
    """Dry-run the candidate nodes, then evict the best candidate's victims and pipeline the preemptor."""
    if not nodes:
        return False
    state = ssn.cycle_state(preemptor)
    offset = ssn.state.preempt_offset.randrange(len(nodes))
    wanted = args.num_candidates(len(nodes))
    candidates: list[Candidate] = []
    for i in range(len(nodes)):
        node = nodes[(offset + i) % len(nodes)]
        victims = select_victims_on_node(ssn, state.clone(), queue, preemptor, node, filter_)
        if isinstance(victims, str):
            log.debug("no preemption candidate", task=preemptor.key, node=node.name, reason=victims)
            continue
        if not victims:
            log.debug("no preemption candidate", task=preemptor.key, node=node.name,
                      reason=f'expected at least one victim pod on node "{node.name}"')
            continue
        candidates.append(Candidate(node, victims))
        if len(candidates) >= wanted:
            break
    best = select_candidate(ssn, candidates)
    if best is None:
        return False
    node_stmt = Statement(ssn)
    for victim in best.victims:
        node_stmt.evict(victim, PREEMPT_REASON)
    ssn.stats.preemption_attempts += 1
    try:
        node_stmt.pipeline(preemptor, best.node, True)
    except StatementError as e:
        log.error("failed to pipeline task", task=preemptor.key, node=best.node.name, error=str(e))
        node_stmt.discard()
        return False
    stmt.merge(node_stmt)
    return True


def select_victims_on_node(ssn: Session, state: CycleState, queue: QueueInfo, preemptor: TaskInfo,
                           node: NodeInfo, filter_: Filter) -> list[TaskInfo] | str:
    """``SelectVictimsOnNode`` on a copy of ``node``: the fewest victims that let the preemptor fit
    (possibly none), or why there are none."""
    dry = node.clone_with_tasks()
    preemptees = [t for t in node.tasks.values() if filter_(t)]
    all_victims = ssn.preemptable(preemptor, preemptees)
    ssn.stats.preemption_victims = len(all_victims)
    if not validate_victims(preemptor, dry, all_victims):
        return f"no validated victims on Node <{node.name}>"

    def fits() -> bool:
        return (ssn.simulate_allocatable(state, queue, preemptor)
                and preemptor.init_resreq.less_equal(dry.future_idle())
                and ssn.simulate_predicate(state, preemptor, dry) is None)

    def take_off(task: TaskInfo) -> str | None:
        err = ssn.simulate_remove_task(state, preemptor, task, dry)
        if err is None:
            dry.remove_task(task)
        return err

    potential: list[TaskInfo] = []
    order = ssn.build_victims_priority_queue(all_victims, preemptor)
    while not order.empty():
        task = order.pop()
        potential.append(task)
        err = take_off(task)
        if err is not None:
            return err
        if fits():
            break
    if not potential:
        return "no preemption victims found for incoming pod"
    err = ssn.simulate_predicate(state, preemptor, dry)
    if err is not None:
        return f"failed to predicate pod {preemptor.key} on node {node.name}: {err}"
    victims: list[TaskInfo] = []
    for task in reversed(potential):  # reprieve the highest priority first
        err = ssn.simulate_add_task(state, preemptor, task, dry)
        if err is not None:
            return err
        dry.add_task(task)
        if not fits():
            err = take_off(task)
            if err is not None:
                return err
            victims.append(task)
    return victims


def select_candidate(ssn: Session, candidates: list[Candidate]) -> Candidate | None:
    """``SelectCandidate`` (kube's ``pickOneNodeForPreemption`` without PDBs): each rule keeps the
    candidates it scores highest, until one is left."""
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    rules: tuple[Callable[[Candidate], float], ...] = (
        lambda c: -pod_priority(c.victims[0]),
        lambda c: -sum(pod_priority(v) + _PRIORITY_OFFSET for v in c.victims),
        lambda c: -len(c.victims),
        lambda c: earliest_start_time(ssn, c.victims),
    )
    best = candidates
    for rule in rules:
        scores = [rule(c) for c in best]
        top = max(scores)
        best = [c for c, s in zip(best, scores) if s == top]
        if len(best) == 1:
            break
    return best[0]


def earliest_start_time(ssn: Session, victims: list[TaskInfo]) -> float:
    """``GetEarliestPodStartTime``: the earliest start among the victims of the highest priority."""
    top = pod_priority(victims[0])
    earliest = _start_time(ssn, victims[0])
    for t in victims:
        p = pod_priority(t)
        if p == top:
            earliest = min(earliest, _start_time(ssn, t))
        elif p > top:
            top, earliest = p, _start_time(ssn, t)
    return earliest


def _start_time(ssn: Session, task: TaskInfo) -> float:
    """``status.startTime``, or now for a pod that has not started."""
    raw = (task.pod.get("status") or {}).get("startTime")
    return parse_timestamp(raw) if raw else ssn.now
