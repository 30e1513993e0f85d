"""What a plugin and an action are (framework/interface.go).

An Action is a name and ``execute(session)``.  A Plugin is a name, built from its
``arguments``, that registers callbacks on the session in ``on_session_open`` and
may write results in ``on_session_close``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, ClassVar

from .arguments import Arguments

if TYPE_CHECKING:
    from ..api.job_info import JobInfo
    from .session import Session


class Point(Enum):
    """Extension points, each with the enable flag that gates it (None: always on)."""

    JOB_ORDER = "enableJobOrder"
    QUEUE_ORDER = "enableQueueOrder"
    TASK_ORDER = "enableTaskOrder"
    PRE_PREDICATE = "enablePredicate#pre"
    PREDICATE = "enablePredicate"
    NODE_ORDER = "enableNodeOrder"
    BATCH_NODE_ORDER = "enableNodeOrder#batch"
    BEST_NODE = "enableBestNode"
    JOB_VALID = "#jobValid"
    JOB_READY = "enableJobReady"
    JOB_PIPELINED = "enableJobPipelined"
    JOB_ENQUEUEABLE = "enableJobEnqueued"
    JOB_ENQUEUED = "enableJobEnqueued#enqueued"
    JOB_STARVING = "enableJobStarving"
    OVERUSED = "enabledOverused"
    ALLOCATABLE = "enabledAllocatable"
    PREEMPTABLE = "enablePreemptable"
    RECLAIMABLE = "enableReclaimable"
    PREEMPTIVE = "enablePreemptive"
    VICTIM_QUEUE_ORDER = "#victimQueueOrder"
    VICTIM_TASKS = "enabledVictim"  # shuffle's victims (tdm, pdb, rescheduling)
    # gangpreempt's and gangreclaim's victim filter (UnifiedEvictableFn): no conf flag gates it
    UNIFIED_EVICTABLE = "#unifiedEvictable"
    # vcsched's own: what a task's predicate verdicts and node scores depend on besides its pod (its
    # queue, say), a hashable value, or None when they cannot be shared with another task at all;
    # tasks share the node search's work only when their pods' shapes and these values agree
    TASK_SHAPE = "enablePredicate|enableNodeOrder#taskShape"
    # vcsched's own: a NODE_ORDER scorer whose score for a task rises above a cap on a few nodes only
    # (task-topology's buckets), a BonusScorer: the node search shares the other scorers' work between
    # tasks of one shape and adds this score per task where it can win
    TASK_NODE_BONUS = "enableNodeOrder#taskNodeBonus"
    # preempt's dry run (enableTopologyAwarePreemption, session_plugins.go): the cycle state a
    # plugin's PrePredicateFn writes, built only when the dry run reads it; the simulate hooks
    CYCLE_STATE = "enablePredicate#cycleState"
    SIMULATE_ALLOCATABLE = "enabledAllocatable#simulate"
    SIMULATE_PREDICATE = "enablePredicate#simulate"
    SIMULATE_ADD_TASK = "enablePreemptable|enabledAllocatable#simulateAdd"
    SIMULATE_REMOVE_TASK = "enablePreemptable|enabledAllocatable#simulateRemove"
    # network topology (session_plugins.go): HyperNode scores for a SubJob, the gradients of HyperNodes
    # a job or SubJob is tried in, and the SubJob gang verdicts and order
    HYPERNODE_ORDER = "enabledHyperNodeOrder"
    HYPERNODE_GRADIENT_FOR_JOB = "enabledHyperNodeGradient#job"
    HYPERNODE_GRADIENT_FOR_SUB_JOB = "enabledHyperNodeGradient#subJob"
    SUB_JOB_READY = "enabledSubJobReady"
    SUB_JOB_PIPELINED = "enabledSubJobPipelined"
    SUB_JOB_ORDER = "enabledSubJobOrder"

    @property
    def flags(self) -> tuple[str, ...]:
        """The conf flags that switch this point (any one on enables it); none: it is always on."""
        names = self.value.split("#", 1)[0]
        return tuple(names.split("|")) if names else ()


class Plugin:
    name: ClassVar[str]

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def on_session_open(self, ssn: "Session") -> None:
        raise NotImplementedError

    def on_session_close(self, ssn: "Session") -> None:
        pass


class Action:
    name: ClassVar[str]

    @classmethod
    def validate_arguments(cls, arguments: Arguments) -> None:
        """Raise ArgumentError for an argument of the wrong type (the conf is checked before any session)."""

    def execute(self, ssn: "Session") -> None:
        raise NotImplementedError


class BatchScorer:
    """A node scorer whose scores depend on the whole set of candidate nodes (it normalises).

    Registered under ``Point.BATCH_NODE_ORDER``.  ``applies(task)`` is False when the
    scorer would give every node the same score for this task (no preferred terms,
    no PreferNoSchedule taints…): the session may then skip it and share per-node
    work between identical tasks.
    """

    def applies(self, task) -> bool:
        raise NotImplementedError

    def score(self, task, nodes) -> dict[str, float]:
        raise NotImplementedError


class EvictionKind(Enum):
    """``api.EvictionKind``: which action asks ``Session.unified_evictable``."""

    GANG_PREEMPT = "gangpreempt"
    GANG_RECLAIM = "gangreclaim"


@dataclass(frozen=True, slots=True)
class EvictionContext:
    """``api.EvictionContext``: who evicts (a whole job), for what, in which hyper-node domain."""

    kind: EvictionKind
    job: "JobInfo"
    hypernode: str = ""


class ScoringError(Exception):
    """A batch scorer could not score the nodes (the extender's prioritize failing).  Volcano's
    ``PrioritizeNodes`` then returns no scores, so no node of that gradient is chosen."""


class NodeBonus:
    """One task's score from a BonusScorer: ``score(node)``, which is at most ``cap`` on every node
    but the ``special`` ones (a set of indexes in the session's node list)."""

    __slots__ = ("score", "cap", "special")

    def __init__(self, score, cap: float, special) -> None:
        self.score = score
        self.cap = cap
        self.special = special


class BonusScorer:
    """A node scorer registered under ``Point.NODE_ORDER`` (its ``node_order``) and, itself, under
    ``Point.TASK_NODE_BONUS``.  ``bonus(task)`` says where the task's score can exceed a cap (a
    NodeBonus; None when it is 0 everywhere), so that tasks of one shape may share the other scorers'
    work: ``node_order`` is then called for the task on its special nodes and on the nodes whose shared
    score plus the cap can still win, and nowhere else."""

    def node_order(self, task, node) -> float:
        raise NotImplementedError

    def bonus(self, task) -> NodeBonus | None:
        raise NotImplementedError


class ValidateResult:
    """A failed ``JobValid`` verdict."""

    __slots__ = ("passed", "reason", "message")

    def __init__(self, passed: bool, reason: str = "", message: str = "") -> None:
        self.passed = passed
        self.reason = reason
        self.message = message
