"""Statement: record allocate / pipeline / evict, then commit or discard (framework/statement.go).

Every operation changes session state at once; only ``commit`` produces effects
for the cluster.  ``discard`` undoes the operations in reverse and leaves each
task's ``last_transaction`` behind for the pending messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ..api.node_info import NodeAccountingError, NodeInfo
from ..api.task_info import TaskInfo, TransactionContext
from ..api.types import TaskStatus
from .session import EventError, Session


class Op(Enum):
    EVICT = "evict"
    PIPELINE = "pipeline"
    ALLOCATE = "allocate"


@dataclass(slots=True)
class Operation:
    op: Op
    task: TaskInfo
    reason: str = ""


class StatementError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class SavedOperation:
    """An operation kept after its statement was discarded (``SaveOperations``), to be done again."""

    op: Op
    task: TaskInfo
    node: str
    eviction_occurred: bool = False
    reason: str = ""


class Statement:
    __slots__ = ("ssn", "operations")

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.operations: list[Operation] = []

    # -- operations -------------------------------------------------------------------

    def evict(self, task: TaskInfo, reason: str) -> None:
        ssn = self.ssn
        ssn.update_task_status(task, TaskStatus.Releasing)
        node = ssn.nodes.get(task.node_name)
        if node is not None and task.uid in node.tasks:
            node.update_task(task)
            ssn.node_changes.append(node.index)
        ssn.fire_deallocate(task)
        self.operations.append(Operation(Op.EVICT, task, reason))

    def pipeline(self, task: TaskInfo, node: NodeInfo, eviction_occurred: bool = False) -> None:
        ssn = self.ssn
        ssn.update_task_status(task, TaskStatus.Pipelined)
        task.node_name = node.name
        task.eviction_occurred = eviction_occurred
        try:
            node.add_task(task)
        except NodeAccountingError as e:
            self._rollback_place(task, None)
            raise StatementError(str(e)) from e
        ssn.node_changes.append(node.index)
        try:
            ssn.fire_allocate(task)
        except EventError as e:
            self._rollback_place(task, node)
            raise StatementError(str(e)) from e
        self.operations.append(Operation(Op.PIPELINE, task))

    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        ssn = self.ssn
        ssn.update_task_status(task, TaskStatus.Allocated)
        task.node_name = node.name
        try:
            node.add_task(task)
        except NodeAccountingError as e:
            self._rollback_place(task, None)
            raise StatementError(str(e)) from e
        ssn.node_changes.append(node.index)
        try:
            ssn.fire_allocate(task)
        except EventError as e:
            self._rollback_place(task, node)
            raise StatementError(str(e)) from e
        self.operations.append(Operation(Op.ALLOCATE, task))

    def _rollback_place(self, task: TaskInfo, node: NodeInfo | None) -> None:
        ssn = self.ssn
        if node is not None:
            ssn.fire_deallocate(task)
            node.remove_task(task)
            ssn.node_changes.append(node.index)
        ssn.update_task_status(task, TaskStatus.Pending)
        task.node_name = ""
        task.eviction_occurred = False

    # -- discard and commit ---------------------------------------------------------------

    def _unevict(self, task: TaskInfo) -> None:
        ssn = self.ssn
        ssn.update_task_status(task, TaskStatus.Running)
        node = ssn.nodes.get(task.node_name)
        if node is not None and task.uid in node.tasks:
            node.update_task(task)
            ssn.node_changes.append(node.index)
        for h in ssn.event_handlers:  # every handler: Volcano's unevict does not read the event's error
            if h.allocate is not None:
                try:
                    h.allocate(task)
                except EventError:
                    pass

    def _unplace(self, task: TaskInfo) -> None:
        ssn = self.ssn
        node = ssn.nodes.get(task.node_name)
        ssn.fire_deallocate(task)
        if node is not None and task.uid in node.tasks:
            node.remove_task(task)
            ssn.node_changes.append(node.index)
        ssn.update_task_status(task, TaskStatus.Pending)
        task.node_name = ""
        task.job_allocated_hypernode = ""

    def unpipeline(self, task: TaskInfo) -> None:
        """Take a pipelined task back to Pending (backfill re-places BestEffort tasks)."""
        self._unplace(task)

    def discard(self) -> None:
        for op in reversed(self.operations):
            task = op.task
            task.last_transaction = TransactionContext(task.status, task.node_name, task.eviction_occurred)
            if op.op is Op.EVICT:
                self._unevict(task)
            else:
                self._unplace(task)
                task.eviction_occurred = False
        self.operations = []

    def commit(self) -> None:
        ssn = self.ssn
        for op in self.operations:
            task = op.task
            task.last_transaction = None
            if op.op is Op.EVICT:
                ssn.evict(task, op.reason)
            elif op.op is Op.ALLOCATE:
                ssn.dispatch(task)
        self.operations = []

    def merge(self, other: "Statement") -> None:
        self.operations.extend(other.operations)
        other.operations = []

    def saved(self) -> list[SavedOperation]:
        """``SaveOperations``: what the statement did, to be done again by ``recover`` after a discard."""
        return [SavedOperation(op.op, op.task, op.task.node_name, op.task.eviction_occurred, op.reason)
                for op in self.operations]

    def recover(self, saved: list[SavedOperation]) -> None:
        """``RecoverOperations``: do the saved operations again, in order (StatementError on failure)."""
        nodes = self.ssn.nodes
        for s in saved:
            if s.op is Op.EVICT:
                self.evict(s.task, s.reason)
                continue
            node = nodes.get(s.node)
            if node is None:
                raise StatementError(f"failed to find node {s.node}")
            if s.op is Op.PIPELINE:
                self.pipeline(s.task, node, s.eviction_occurred)
            else:
                self.allocate(s.task, node)

    def evicted_any(self) -> bool:
        return any(op.op is Op.EVICT for op in self.operations)
