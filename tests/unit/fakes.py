"""One stand-in for the Session that plugin unit tests open plugins on.

It records what a plugin registers and offers the session fields plugins read,
so plugin tests do not depend on the real Session's internals.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from vcsched.api.job_info import JobInfo
from vcsched.api.node_info import NodeInfo
from vcsched.api.queue_info import QueueInfo
from vcsched.api.resource import Resource
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import TaskStatus
from vcsched.framework.interface import Point
from vcsched.framework.session import SchedulerState
from vcsched.framework.stats import SessionStats


class FakeSession:
    def __init__(self, nodes: Iterable[NodeInfo] = (), pending: Iterable[TaskInfo] = (), *,
                 jobs: Iterable[JobInfo] = (), queues: Iterable[QueueInfo] = ()) -> None:
        self.jobs = {j.uid: j for j in jobs}
        self.queues = {q.name: q for q in queues}
        self.node_list = list(nodes)
        for i, n in enumerate(self.node_list):
            n.index = i
        self.nodes = {n.name: n for n in self.node_list}
        self.node_changes: list[int] = []
        self.total_resource = Resource()
        for n in self.node_list:
            self.total_resource.add(n.allocatable)
        self.has_inter_pod_terms = any(
            t.spec.has_inter_pod_terms for n in self.node_list for t in n.tasks.values()
        ) or any(t.spec.has_inter_pod_terms for t in pending)
        self.effects: list[Any] = []
        self.registered: dict[Point, dict[str, Callable]] = {}
        self.handlers: list[Any] = []
        self.stats = SessionStats()
        self.dra = None  # no Dynamic Resource Allocation objects, as a Session without them
        self.state = SchedulerState()
        # nothing reused from a previous session (as simulate): every job is walked
        self.reused: frozenset[str] = frozenset()
        self.serial = 1
        self.fresh_jobs = list(self.jobs.values())
        self.changed_reused: list[JobInfo] = []
        self.unready_reused: frozenset[str] = frozenset()

    def add(self, point: Point, plugin: str, fn: Callable) -> None:
        self.registered.setdefault(point, {})[plugin] = fn

    def hierarchy_enabled(self, plugin: str) -> bool:
        return False

    def add_event_handler(self, handler: Any) -> None:
        self.handlers.append(handler)

    def fn(self, point: Point, plugin: str) -> Callable:
        return self.registered[point][plugin]

    def place(self, task: TaskInfo, node: NodeInfo) -> None:
        task.node_name = node.name
        task.status = TaskStatus.Allocated
        node.add_task(task)
        self.node_changes.append(node.index)

    def allocate(self, task: TaskInfo) -> None:
        """What a session does on allocation, as far as the fair-share plugins see it."""
        self.jobs[task.job].update_task_status(task, TaskStatus.Allocated)
        for h in self.handlers:
            h.allocate(task)

    def deallocate(self, task: TaskInfo) -> None:
        self.jobs[task.job].update_task_status(task, TaskStatus.Pending)
        for h in self.handlers:
            h.deallocate(task)
