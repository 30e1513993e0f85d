"""Task statuses, PodGroup phases and the small enums of Volcano's api package."""

from __future__ import annotations

from enum import IntFlag, IntEnum


class TaskStatus(IntFlag):
    """``api.TaskStatus``: bit flags, in Volcano's order."""

    Pending = 1
    Allocated = 2
    Pipelined = 4
    Binding = 8
    Bound = 16
    Running = 32
    Releasing = 64
    Succeeded = 128
    Failed = 256
    Unknown = 512


ALLOCATED_STATUS = TaskStatus.Allocated | TaskStatus.Binding | TaskStatus.Bound | TaskStatus.Running
SCHEDULED_STATUS = TaskStatus.Running | TaskStatus.Bound | TaskStatus.Failed | TaskStatus.Succeeded
COMPLETED_STATUS = TaskStatus.Failed | TaskStatus.Succeeded
PREEMPTABLE_STATUS = TaskStatus.Bound | TaskStatus.Running
READY_STATUS = ALLOCATED_STATUS | TaskStatus.Succeeded
VALID_STATUS = ALLOCATED_STATUS | TaskStatus.Succeeded | TaskStatus.Pipelined | TaskStatus.Pending
# ALLOCATED_STATUS as a set: ``status in ALLOCATED_STATUSES`` costs a hash, ``status & ALLOCATED_STATUS`` makes
# a flag object (for hot loops)
ALLOCATED_STATUSES = frozenset((TaskStatus.Allocated, TaskStatus.Binding, TaskStatus.Bound, TaskStatus.Running))
READY_STATUSES = ALLOCATED_STATUSES | {TaskStatus.Succeeded}
COMPLETED_STATUSES = frozenset((TaskStatus.Succeeded, TaskStatus.Failed))


def allocated_status(s: TaskStatus) -> bool:
    return bool(s & ALLOCATED_STATUS)


class PodGroupPhase:
    PENDING = "Pending"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    INQUEUE = "Inqueue"
    COMPLETED = "Completed"


class QueueState:
    OPEN = "Open"
    CLOSED = "Closed"
    CLOSING = "Closing"
    UNKNOWN = "Unknown"


class Vote(IntEnum):
    """Vote results of pipelined/enqueueable/preemptable functions (plugins/util)."""

    Reject = -1
    Abstain = 0
    Permit = 1


class StatusCode(IntEnum):
    """kube-scheduler framework status codes, as Volcano's fit errors carry them."""

    Success = 0
    Error = 1
    Unschedulable = 2
    UnschedulableAndUnresolvable = 3
    Wait = 4
    Skip = 5


# Codes that make a predicate failure count (session.go · PredicateForAllocateAction).
FAILING_CODES = frozenset(
    {StatusCode.Unschedulable, StatusCode.UnschedulableAndUnresolvable, StatusCode.Error, StatusCode.Skip, StatusCode.Wait}
)
# Codes that exclude a node from preemption (PredicateForPreemptAction).
UNRESOLVABLE_CODES = frozenset({StatusCode.UnschedulableAndUnresolvable, StatusCode.Error, StatusCode.Skip, StatusCode.Wait})

# Annotations and labels the scheduler reads.
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
TASK_SPEC_KEY = "volcano.sh/task-spec"
TASK_PRIORITY_ANNOTATION = "volcano.sh/task-priority"
PREEMPTABLE_KEY = "volcano.sh/preemptable"
# tdm: a node's zone (label), a pod allowed on revocable nodes ("*", annotation)
REVOCABLE_ZONE_KEY = "volcano.sh/revocable-zone"
# sla: a PodGroup's waiting time, read under v1beta1.JobWaitingTime, then under api.JobWaitingTime
JOB_WAITING_TIME_KEYS = ("volcano.sh/sla-waiting-time", "sla-waiting-time")
# a job's disruption budget (tdm), on its PodGroup
JDB_MIN_AVAILABLE_KEY = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE_KEY = "volcano.sh/jdb-max-unavailable"
VOLCANO_GATE = "volcano.sh/queue-allocation-gate"
