"""NodeInfo: a node's resources and the tasks on it (node_info.go)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .pod_spec import Taint
from .resource import Resource
from .task_info import TaskInfo
from .types import REVOCABLE_ZONE_KEY, TaskStatus

_GENERATIONS = itertools.count(1)  # NodeInfo.generation
GPU = "nvidia.com/gpu"


class NodeAccountingError(Exception):
    """A task that cannot be added to or removed from a node."""


@dataclass(slots=True)
class NodeSpec:
    """The static part of a node that predicates and scorers read, parsed once per node update."""

    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    # image name → size in bytes (node.status.images)
    images: dict[str, int] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)


class PodRequests:
    """What the pods kube-scheduler's NodeInfo holds request on a node (its ``Requested`` and
    ``NonZeroRequested``, the parts the scorers read): every pod but those evicted in this session (a
    pod the cluster reports as terminating stays, as kube counts it until it is gone)."""

    __slots__ = ("nonzero_milli_cpu", "nonzero_memory", "milli_cpu", "memory", "gpu")

    def __init__(self) -> None:
        self.nonzero_milli_cpu = 0
        self.nonzero_memory = 0
        self.milli_cpu = 0
        self.memory = 0
        self.gpu = 0  # nvidia.com/gpu in milli-units, as the node's allocatable

    def add(self, task: TaskInfo, sign: int) -> None:
        spec, req = task.spec, task.resreq
        self.nonzero_milli_cpu += sign * spec.nonzero_milli_cpu
        self.nonzero_memory += sign * spec.nonzero_memory
        self.milli_cpu += sign * int(req.milli_cpu)
        self.memory += sign * int(req.memory)
        gpu = req.scalars.get(GPU)
        if gpu:
            self.gpu += sign * int(gpu)

    def clone(self) -> "PodRequests":
        r = PodRequests()
        r.nonzero_milli_cpu, r.nonzero_memory = self.nonzero_milli_cpu, self.nonzero_memory
        r.milli_cpu, r.memory, r.gpu = self.milli_cpu, self.memory, self.gpu
        return r


def in_node_view(task: TaskInfo, status: TaskStatus) -> bool:
    """Whether kube's NodeInfo holds a task in ``status``: every pod but one evicted in this session (a
    pod the cluster reports as terminating, which came as Releasing, stays: kube counts it until it is
    gone)."""
    return status != TaskStatus.Releasing or bool((task.pod.get("metadata") or {}).get("deletionTimestamp"))


class NodeInfo:
    __slots__ = (
        "name", "index", "spec", "node", "allocatable", "capacity", "idle", "used", "releasing",
        "pipelined", "tasks", "accounted", "requested", "generation", "devices",
    )

    def __init__(self, name: str, node: Mapping[str, Any] | None, spec: NodeSpec,
                 allocatable: Resource, capacity: Resource) -> None:
        self.name = name
        self.index = 0  # position in the snapshot's node list
        self.node = node
        self.spec = spec
        self.allocatable = allocatable
        self.capacity = capacity
        self.idle = allocatable.clone()
        self.used = Resource()
        self.releasing = Resource()
        self.pipelined = Resource()
        self.tasks: dict[str, TaskInfo] = {}
        # the status each task was accounted with: Volcano's node keeps a copy of the task,
        # so a later status change on the task does not skew the node until update_task
        self.accounted: dict[str, TaskStatus] = {}
        # the requests of the tasks kube's node view holds, by their accounted status
        self.requested = PodRequests()
        # a new value from one counter of the process on every change (kube-scheduler's
        # nextGeneration): a node clone keeps its original's, so that work keyed on it (shared between
        # identical tasks, or kept from one session to the next) is the same while the tasks are
        self.generation = 0
        # device registry key → per-node device state (deviceshare): clone(), add_pod(task),
        # remove_pod(task) (plugins/deviceshare/base.py · NodeDevices)
        self.devices: dict[str, Any] = {}

    @property
    def ready(self) -> bool:
        return self.node is not None

    @property
    def revocable_zone(self) -> str:
        """The node's ``volcano.sh/revocable-zone`` label ("" when absent): a revocable node (tdm)."""
        return self.spec.labels.get(REVOCABLE_ZONE_KEY, "")

    def future_idle(self) -> Resource:
        """``FutureIdle = Idle + Releasing − Pipelined``."""
        return self.idle.clone().add(self.releasing).sub(self.pipelined)

    def pod_count(self) -> int:
        return len(self.tasks)

    def add_task(self, task: TaskInfo) -> None:
        """``NodeInfo.AddTask``: account the task by its status (the node keeps its own copy)."""
        if task.uid in self.tasks:
            raise NodeAccountingError(f"task <{task.key}> already on node <{self.name}>")
        req = task.resreq
        status = task.status
        if status == TaskStatus.Releasing:
            self.releasing.add(req)
            self.idle.sub(req)
            self.used.add(req)
        elif status == TaskStatus.Pipelined:
            self.pipelined.add(req)
        elif status == TaskStatus.Binding:
            if not req.less_equal(self.idle):
                raise NodeAccountingError(f"task <{task.key}> does not fit the idle resources of node <{self.name}>")
            self.idle.sub(req)
            self.used.add(req)
        else:
            self.idle.sub(req)
            self.used.add(req)
        self.tasks[task.uid] = task
        self.accounted[task.uid] = status
        if in_node_view(task, status):
            self.requested.add(task, 1)
        if self.devices and status != TaskStatus.Releasing and status != TaskStatus.Pipelined:
            # AddResource: the device ledger counts the pod from its device annotations
            for d in self.devices.values():
                d.add_pod(task)
        self.generation = next(_GENERATIONS)

    def touch(self) -> None:
        """Something a score of this node depends on changed elsewhere (its HyperNode's use, say):
        what was worked out for it is to be worked out again."""
        self.generation = next(_GENERATIONS)

    def remove_task(self, task: TaskInfo) -> None:
        t = self.tasks.pop(task.uid, None)
        if t is None:
            raise NodeAccountingError(f"task <{task.key}> is not on node <{self.name}>")
        req = t.resreq
        status = self.accounted.pop(task.uid)
        if status == TaskStatus.Releasing:
            self.releasing.sub(req)
            self.idle.add(req)
            self.used.sub(req)
        elif status == TaskStatus.Pipelined:
            self.pipelined.sub(req)
        else:
            self.idle.add(req)
            self.used.sub(req)
        if in_node_view(t, status):
            self.requested.add(t, -1)
        if self.devices:
            for d in self.devices.values():  # SubResource, by pod UID
                d.remove_pod(t)
        self.generation = next(_GENERATIONS)

    def update_task(self, task: TaskInfo) -> None:
        """Re-account a task whose status changed (``remove`` the old entry, ``add`` the new)."""
        self.remove_task(task)
        self.add_task(task)

    def clone(self) -> "NodeInfo":
        n = NodeInfo(self.name, self.node, self.spec, self.allocatable, self.capacity)
        n.index = self.index
        n.idle = self.idle.clone()
        n.used = self.used.clone()
        n.releasing = self.releasing.clone()
        n.pipelined = self.pipelined.clone()
        n.requested = self.requested.clone()
        n.devices = {k: d.clone() for k, d in self.devices.items()}
        n.generation = self.generation
        return n

    def clone_with_tasks(self) -> "NodeInfo":
        """A copy with its own task table (Volcano's ``NodeInfo.Clone``): preempt's dry run takes
        tasks off it and puts them back without touching the session's node."""
        n = self.clone()
        n.tasks = dict(self.tasks)
        n.accounted = dict(self.accounted)
        return n

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, idle=<{self.idle}>, tasks={len(self.tasks)})"
