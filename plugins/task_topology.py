"""task-topology: affinity and anti-affinity between the tasks of one job, by buckets
(plugins/task-topology/topology.go, manager.go, bucket.go, util.go).

A job names its tasks' topology in three PodGroup annotations (a Volcano Job's annotations reach its
PodGroup), task names separated by ``,`` and groups by ``;``:

- ``volcano.sh/task-topology-affinity``: ``ps,worker;ps,chief``: the tasks of a group want to share
  nodes; a group of one (``ps``) wants its own pods together;
- ``volcano.sh/task-topology-anti-affinity``: ``ps;worker,chief``: the same, apart;
- ``volcano.sh/task-topology-task-order``: ``ps,worker,chief``: the order tasks are placed in.

A task is the ``volcano.sh/task-spec`` of its pods.  Every name must be a task of the job (a pod's
``volcano.sh/task-spec`` annotation, else label) and appear once in its group; empty names (``ps,,``)
are allowed and mean nothing.  Otherwise Volcano logs the error and treats the job as having no
topology at all; so does vcsched, and it tells the user with a Warning event ``InvalidTaskTopology``
on the PodGroup naming the annotation and carrying Volcano's message, once per PodGroup and value
(kept across sessions in ``SchedulerState.plugins``, as sla does).  Not an input error in simulate:
neither the API server nor Volcano's webhooks refuse these annotations, whether they are valid
depends on the job's pods (another object), and Volcano goes on scheduling the job, which is what
simulate shows.  "Task X do not exist" is reported only once the job has its ``minMember`` pods, so
that a job whose pods are still being created is not warned about.

At session open, for each job with Pending tasks and a valid topology (``initBucket``):

- each task gets a priority from the strongest relation it is named in: self anti-affinity 4,
  inter-affinity 3, self affinity 2, inter anti-affinity 1; a task named in none (the task order
  does not count) is out of every bucket, as are pods without a ``volcano.sh/task-spec`` annotation
  (the label is not read here, as Volcano's ``getTaskName``);
- the others are put in buckets: bound pods first, a bucket per node, then pending pods by task
  order (earlier in the task-order annotation first), then priority, then pod name; each joins the
  bucket where (affinities - anti-affinities) with the pods already in it count highest, the least
  loaded bucket on a tie (1 mCPU, 1 MiB and one unit of a scalar weigh the same), or a new bucket
  when the best count is below zero.

Registers:

- TaskOrderFn: tasks in a bucket before those outside (across jobs too); within a job the bucket
  with more pending tasks first (counted when compared: placing a task changes it), then the older
  bucket, then, in one bucket, task order and priority;
- NodeOrderFn: for a task in a bucket, on a node whose idle plus releasing resources can hold it:
  the bucket's pods bound there, minus the anti-affine pods of the job there, plus the bucket's
  pending pods, less one for each of them taken out until the rest fits the node; times
  ``task-topology.weight`` (default 1), times 100 (MaxNodeScore) over the largest bucket's size.
  Other tasks score 0.  Off the nodes of its bucket and job a task scores at most its bucket's
  pending count, so the scorer is also a BonusScorer (``Point.TASK_NODE_BONUS``): the node search
  keeps sharing the other scorers' work between tasks of one shape and adds this score only where
  it can win, choosing the node a node-by-node search would (a negative weight has no such cap: its
  tasks in buckets search node by node, ``Point.TASK_SHAPE``);
- an AllocateFunc event handler: a placed task counts as bound in its bucket and on its node.

Where vcsched differs, and why:

- the pods taken out of a bucket that does not fit a node are taken in the order they joined it
  (Volcano walks a map: its count, and so the score, can change from call to call);
- a weight that is not an integer refuses the configuration, naming the argument (Volcano logs it
  and keeps 1); bad annotations also get the Warning event above (Volcano only logs at level 4).

As in Volcano, no DeallocateFunc is registered: a placement undone (a gang's statement discarded, an
eviction) stays counted until the next session.  And as in Volcano the bucket size read by the
task order changes as tasks are placed, so which equal bucket goes next depends on the priority
queue's layout (Volcano pushes the tasks in map order).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Iterable

import structlog

from vcsched.api.job_info import JobInfo
from vcsched.api.node_info import NodeInfo
from vcsched.api.resource import Default, Resource
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import TASK_SPEC_KEY, TaskStatus
from vcsched.framework.arguments import Arguments
from vcsched.framework.effects import Event
from vcsched.framework.interface import BonusScorer, NodeBonus, Plugin, Point
from vcsched.framework.session import EventHandler

if TYPE_CHECKING:
    from vcsched.framework.session import Session

log = structlog.get_logger("vcsched.task-topology")

PLUGIN_NAME = "task-topology"
WEIGHT = "task-topology.weight"
AFFINITY_KEY = "volcano.sh/task-topology-affinity"
ANTI_AFFINITY_KEY = "volcano.sh/task-topology-anti-affinity"
TASK_ORDER_KEY = "volcano.sh/task-topology-task-order"
INVALID_TOPOLOGY_REASON = "InvalidTaskTopology"
MAX_NODE_SCORE = 100.0

# affinityPriority: the larger, the earlier a task is bucketed and placed
SELF_ANTI_AFFINITY, INTER_AFFINITY, SELF_AFFINITY, INTER_ANTI_AFFINITY = 4, 3, 2, 1


# -- reading the annotations (topology.go · readTopologyFromPgAnnotations) -------------------------


class TopologyError(ValueError):
    """An annotation names a task the job does not have, or one task twice in a group."""

    def __init__(self, key: str, message: str, missing_task: bool) -> None:
        super().__init__(message)
        self.key = key
        self.missing_task = missing_task


@dataclass(slots=True)
class TaskTopology:
    """``TaskTopology``: the groups as split (empty names kept), None where the annotation is absent."""

    affinity: list[list[str]] | None = None
    anti_affinity: list[list[str]] | None = None
    task_order: list[str] | None = None


def check_groups(job: JobInfo, key: str, groups: list[list[str]]) -> None:
    """``affinityCheck``: every non-empty name is a task role of the job, once per group."""
    roles = {t.role for t in job.tasks.values()}
    for group in groups:
        seen: set[str] = set()
        for name in group:
            if not name:
                continue
            if name not in roles:
                raise TopologyError(key, f"task {name} do not exist in job <{job.namespace}/{job.name}>", True)
            if name in seen:
                raise TopologyError(key, f"task {name} is duplicate in job <{job.namespace}/{job.name}>", False)
            seen.add(name)


def split_groups(job: JobInfo, key: str, value: str) -> list[list[str]]:
    """``splitAnnotations``: ``a,b;c`` into ``[[a, b], [c]]`` (Go's ``strings.Split``: ``""`` is ``[""]``)."""
    groups = [part.split(",") for part in value.split(";")]
    check_groups(job, key, groups)
    return groups


def read_topology(job: JobInfo) -> TaskTopology | None:
    """The job's topology from its PodGroup's annotations; None when it has none of them.
    Raises TopologyError for the first bad annotation (affinity, anti-affinity, task order)."""
    annotations = job.podgroup.annotations if job.podgroup is not None else {}
    if AFFINITY_KEY not in annotations and ANTI_AFFINITY_KEY not in annotations and TASK_ORDER_KEY not in annotations:
        return None
    topology = TaskTopology()
    if AFFINITY_KEY in annotations:
        topology.affinity = split_groups(job, AFFINITY_KEY, annotations[AFFINITY_KEY])
    if ANTI_AFFINITY_KEY in annotations:
        topology.anti_affinity = split_groups(job, ANTI_AFFINITY_KEY, annotations[ANTI_AFFINITY_KEY])
    if TASK_ORDER_KEY in annotations:
        topology.task_order = annotations[TASK_ORDER_KEY].split(",")
        check_groups(job, TASK_ORDER_KEY, [topology.task_order])
    return topology


def task_name(task: TaskInfo) -> str:
    """``getTaskName``: the pod's ``volcano.sh/task-spec`` annotation (not the label)."""
    annotations = (task.pod.get("metadata") or {}).get("annotations") or {}
    return annotations.get(TASK_SPEC_KEY) or ""


def request_score(req: Resource) -> float:
    """``CalcResReq``'s weight of a request: mCPU + MiB of memory + every scalar (pods included)."""
    return req.milli_cpu + req.memory / 1024 / 1024 + sum(req.scalars.values())


# -- buckets (bucket.go) -------------------------------------------------------------------------


class Bucket:
    """Tasks of one job meant to land together: the pending ones, and counts of the bound ones."""

    __slots__ = ("index", "tasks", "task_names", "req_score", "request", "bound", "nodes")

    def __init__(self, index: int) -> None:
        self.index = index
        self.tasks: dict[str, TaskInfo] = {}     # pending, by pod UID, in the order they joined
        self.task_names: dict[str, int] = {}     # task name → pods of it in the bucket, bound or not
        self.req_score = 0.0
        self.request = Resource()                # what the pending tasks ask for
        self.bound = 0
        self.nodes: dict[str, int] = {}          # node → the bucket's pods bound there

    @property
    def size(self) -> int:
        return len(self.tasks) + self.bound

    def add_task(self, name: str, task: TaskInfo) -> None:
        self.task_names[name] = self.task_names.get(name, 0) + 1
        if task.node_name:
            self.nodes[task.node_name] = self.nodes.get(task.node_name, 0) + 1
            self.bound += 1
            return
        self.tasks[task.uid] = task
        self.req_score += request_score(task.resreq)
        self.request.add(task.resreq)

    def task_bound(self, task: TaskInfo) -> None:
        """As Volcano: the request is taken off even when the task was not pending in the bucket."""
        self.nodes[task.node_name] = self.nodes.get(task.node_name, 0) + 1
        self.bound += 1
        self.tasks.pop(task.uid, None)
        self.req_score -= request_score(task.resreq)
        self.request.sub(task.resreq)


# -- one job's relations and buckets (manager.go) ------------------------------------------------


class JobManager:
    __slots__ = ("job", "buckets", "pod_bucket", "pod_task", "priority", "order", "inter_affinity",
                 "self_affinity", "inter_anti_affinity", "self_anti_affinity", "bucket_max_size",
                 "node_task_set")

    def __init__(self, job: str) -> None:
        self.job = job
        self.buckets: list[Bucket] = []
        self.pod_bucket: dict[str, Bucket] = {}       # pod UID → its bucket (absent: out of every bucket)
        self.pod_task: dict[str, str] = {}            # pod UID → task name, for the pods in buckets
        self.priority: dict[str, int] = {}            # taskAffinityPriority
        self.order: dict[str, int] = {}               # taskExistOrder: the first named is the highest
        self.inter_affinity: dict[str, set[str]] = {}
        self.self_affinity: set[str] = set()
        self.inter_anti_affinity: dict[str, set[str]] = {}
        self.self_anti_affinity: set[str] = set()
        self.bucket_max_size = 0
        self.node_task_set: dict[str, dict[str, int]] = {}  # node → task name → the job's pods placed there

    def _mark(self, name: str, priority: int) -> None:
        if priority > self.priority.get(name, 0):
            self.priority[name] = priority

    def _relate(self, groups: list[list[str]] | None, inter: dict[str, set[str]], alone: set[str],
                self_priority: int, inter_priority: int) -> None:
        for group in groups or ():
            if len(group) == 1:
                alone.add(group[0])
                self._mark(group[0], self_priority)
                continue
            for i, src in enumerate(group):
                for dst in group[:i]:
                    inter.setdefault(src, set()).add(dst)
                    inter.setdefault(dst, set()).add(src)
                self._mark(src, inter_priority)

    def apply(self, topology: TaskTopology) -> None:
        """``ApplyTaskTopology``."""
        self._relate(topology.affinity, self.inter_affinity, self.self_affinity, SELF_AFFINITY, INTER_AFFINITY)
        self._relate(topology.anti_affinity, self.inter_anti_affinity, self.self_anti_affinity,
                     SELF_ANTI_AFFINITY, INTER_ANTI_AFFINITY)
        order = topology.task_order or []
        for i, name in enumerate(order):
            self.order[name] = len(order) - i

    def affinity(self, name: str, names: dict[str, int], only_anti: bool) -> int:
        """``checkTaskSetAffinity``: pods of ``names`` that ``name`` is affine to, less those it is
        anti-affine to (only the latter with ``only_anti``)."""
        if not name:
            return 0
        score = 0
        inter = self.inter_affinity.get(name)
        inter_anti = self.inter_anti_affinity.get(name)
        for other, count in names.items():
            if other == name:
                if not only_anti and name in self.self_affinity:
                    score += count
                if name in self.self_anti_affinity:
                    score -= count
            else:
                if not only_anti and inter is not None and other in inter:
                    score += count
                if inter_anti is not None and other in inter_anti:
                    score -= count
        return score

    def affinity_order(self, l: TaskInfo, r: TaskInfo) -> int:
        """``taskAffinityOrder``: 1 when ``l`` goes first by task order, then priority."""
        ln, rn = self.pod_task.get(l.uid, ""), self.pod_task.get(r.uid, "")
        if ln == rn:
            return 0
        lo, ro = self.order.get(ln, 0), self.order.get(rn, 0)
        if lo != ro:
            return 1 if lo > ro else -1
        lp, rp = self.priority.get(ln, 0), self.priority.get(rn, 0)
        if lp != rp:
            return 1 if lp > rp else -1
        return 0

    def _new_bucket(self) -> Bucket:
        bucket = Bucket(len(self.buckets))
        self.buckets.append(bucket)
        return bucket

    def construct(self, tasks: Iterable[TaskInfo]) -> None:
        """``ConstructBucket``: the bound pods first, by node, then the pending by task order, priority
        and name (the order Volcano's reversed ``TaskOrder`` sort gives); each to its best bucket."""
        bound: list[tuple[str, str, TaskInfo, str]] = []
        pending: list[tuple[int, int, str, TaskInfo, str]] = []
        for task in tasks:
            name = task_name(task)
            if not name or name not in self.priority:
                continue
            self.pod_task[task.uid] = name
            if task.node_name:
                bound.append((task.node_name, task.name, task, name))
            else:
                pending.append((-self.order.get(name, 0), -self.priority.get(name, 0), task.name, task, name))
        bound.sort(key=lambda e: (e[0], e[1]))
        pending.sort(key=lambda e: (e[0], e[1], e[2]))
        by_node: dict[str, Bucket] = {}
        for node_name, _, task, name in bound:
            bucket = by_node.get(node_name)
            if bucket is None:
                bucket = by_node[node_name] = self._new_bucket()
            self._add(bucket, name, task)
        for _, _, _, task, name in pending:
            chosen: Bucket | None = None
            best = 0
            for bucket in self.buckets:
                score = self.affinity(name, bucket.task_names, False)
                if chosen is None or score > best or (score == best and bucket.req_score < chosen.req_score):
                    chosen, best = bucket, score
            if chosen is None or best < 0:
                chosen = self._new_bucket()
            self._add(chosen, name, task)

    def _add(self, bucket: Bucket, name: str, task: TaskInfo) -> None:
        self.pod_bucket[task.uid] = bucket
        bucket.add_task(name, task)
        if bucket.size > self.bucket_max_size:
            self.bucket_max_size = bucket.size

    def task_bound(self, task: TaskInfo) -> None:
        """``TaskBound``: the pod counts on its node, and as bound in its bucket."""
        name = task_name(task)
        if name:
            on_node = self.node_task_set.setdefault(task.node_name, {})
            on_node[name] = on_node.get(name, 0) + 1
        bucket = self.pod_bucket.get(task.uid)
        if bucket is not None:
            bucket.task_bound(task)


# -- the plugin (topology.go) --------------------------------------------------------------------


@dataclass(slots=True)
class TopologyMemory:
    """The bad annotations already reported, by (PodGroup key, UID, annotation) → (value, message)."""

    seen: dict[tuple[str, str, str], tuple[str, str]] = field(default_factory=dict)


def invalid_topology_message(error: TopologyError, value: str) -> str:
    return (f"metadata.annotations[{error.key}]: {error} (value {value!r}); the task-topology plugin "
            f"ignores the job's task topology")


class TaskTopologyPlugin(Plugin, BonusScorer):
    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.weight = arguments.get_int(WEIGHT, 1)
        self.managers: dict[str, JobManager] = {}
        # node name → (node, generation, idle + releasing): the score's node capacity, once per change
        self._capacity: dict[str, tuple[NodeInfo, int, Resource]] = {}
        self._nodes: dict[str, NodeInfo] = {}

    # -- session open ---------------------------------------------------------------------------

    def init_buckets(self, ssn: "Session") -> None:
        """``initBucket``, and a Warning event for each bad annotation not reported before."""
        memory = ssn.state.plugins.setdefault(self.name, TopologyMemory())
        seen: dict[tuple[str, str, str], tuple[str, str]] = {}
        resting: set[tuple[str, str]] = set()  # PodGroups not looked at this session: remembered as they were
        for job in ssn.jobs.values():
            pg = job.podgroup
            if pg is None:
                continue
            if not job.by_status.get(TaskStatus.Pending):
                resting.add((pg.key, pg.uid))
                continue
            try:
                topology = read_topology(job)
            except TopologyError as e:
                self.report(ssn, job, e, memory, seen)
                continue
            if topology is None:
                continue
            manager = JobManager(job.uid)
            manager.apply(topology)
            manager.construct(job.tasks.values())
            self.managers[job.uid] = manager
        for ident, reported in memory.seen.items():
            if ident[:2] in resting:
                seen[ident] = reported
        memory.seen = seen

    def report(self, ssn: "Session", job: JobInfo, error: TopologyError, memory: TopologyMemory,
               seen: dict[tuple[str, str, str], tuple[str, str]]) -> None:
        """A Warning event and a warning in the log the first time; later sessions log at debug level, as
        Volcano logs it at level 4 every session."""
        pg = job.podgroup
        assert pg is not None
        value = pg.annotations.get(error.key, "")
        text = f"Failed to read task topology from job <{job.namespace}/{job.name}> annotations, error: {error}."
        if error.missing_task and len(job.tasks) < job.min_available:
            log.debug(text, annotation=error.key)  # its pods may still be on their way
            return
        ident = (pg.key, pg.uid, error.key)
        reported = (value, str(error))
        seen[ident] = reported
        if memory.seen.get(ident) == reported:
            log.debug(text, annotation=error.key)
            return
        log.warning(text, annotation=error.key)
        ssn.effects.append(Event("PodGroup", pg.namespace, pg.name, "Warning", INVALID_TOPOLOGY_REASON,
                                 invalid_topology_message(error, value)))

    def on_session_open(self, ssn: "Session") -> None:
        self.init_buckets(ssn)
        ssn.add(Point.TASK_ORDER, self.name, self.task_order)
        ssn.add(Point.NODE_ORDER, self.name, self.node_order)
        # a task in a bucket scores above its bucket's pending count only where its job has pods: the
        # node search shares the other scorers' work and adds this score where it can win (bonus);
        # with a negative weight no cap holds, and such a task searches node by node
        ssn.add(Point.TASK_SHAPE, self.name, self.task_shape)
        ssn.add(Point.TASK_NODE_BONUS, self.name, self)
        self._nodes = ssn.nodes
        ssn.add_event_handler(EventHandler(allocate=self.allocated))

    def on_session_close(self, ssn: "Session") -> None:
        self.managers = {}
        self._capacity = {}
        self._nodes = {}

    # -- callbacks --------------------------------------------------------------------------------

    def bucket_of(self, task: TaskInfo) -> Bucket | None:
        manager = self.managers.get(task.job)
        return manager.pod_bucket.get(task.uid) if manager is not None else None

    def task_shape(self, task: TaskInfo) -> str | None:
        return None if self.weight < 0 and self.bucket_of(task) is not None else ""

    def bonus(self, task: TaskInfo) -> NodeBonus | None:
        """Where the task's score can exceed what its bucket's pending tasks give (the cap): the nodes
        holding the bucket's pods or the job's; None when it scores 0 everywhere."""
        manager = self.managers.get(task.job)
        if manager is None or self.weight == 0:
            return None
        bucket = manager.pod_bucket.get(task.uid)
        if bucket is None:
            return None
        nodes = self._nodes
        special = {nodes[name].index for name in bucket.nodes if name in nodes}
        special.update(nodes[name].index for name in manager.node_task_set if name in nodes)
        return NodeBonus(partial(self.node_order, task), self.scale(len(bucket.tasks), manager), special)

    def task_order(self, l: TaskInfo, r: TaskInfo) -> int:
        """``TaskOrderFn``: -1 puts ``l`` first."""
        lm, rm = self.managers.get(l.job), self.managers.get(r.job)
        if lm is None or rm is None:
            return 0
        lb, rb = lm.pod_bucket.get(l.uid), rm.pod_bucket.get(r.uid)
        if (lb is None) != (rb is None):
            return -1 if lb is not None else 1
        if l.job != r.job or lb is None or rb is None:
            return 0
        ln, rn = len(lb.tasks), len(rb.tasks)
        if ln != rn:
            return -1 if ln > rn else 1
        if lb.index == rb.index:
            return -lm.affinity_order(l, r)
        return -1 if lb.index < rb.index else 1

    def capacity(self, node: NodeInfo) -> Resource:
        """The node's idle plus releasing resources (read it, do not change it)."""
        cached = self._capacity.get(node.name)
        if cached is not None and cached[0] is node and cached[1] == node.generation:
            return cached[2]
        res = node.idle.clone().add(node.releasing)
        self._capacity[node.name] = (node, node.generation, res)
        return res

    def bucket_score(self, task: TaskInfo, node: NodeInfo) -> tuple[int, JobManager | None]:
        """``calcBucketScore``."""
        manager = self.managers.get(task.job)
        if manager is None:
            return 0, None
        bucket = manager.pod_bucket.get(task.uid)
        if bucket is None:
            return 0, manager
        room = self.capacity(node)
        if room.less_partly(task.resreq, Default.ZERO):
            return 0, None  # the task can never fit the node
        score = bucket.nodes.get(node.name, 0)
        on_node = manager.node_task_set.get(node.name)
        if on_node:
            apart = manager.affinity(task_name(task), on_node, True)
            if apart < 0:
                score += apart
        score += len(bucket.tasks)
        if bucket.request.less_equal(room):
            return score, manager
        remains = bucket.request.clone()
        # take pods out, in the order they joined, until the rest fits (the task itself stays)
        for uid, other in bucket.tasks.items():
            if uid == task.uid:
                continue
            remains.sub(other.resreq)
            score -= 1
            if remains.less_equal(room):
                break
        return score, manager

    def scale(self, score: int, manager: JobManager | None) -> float:
        value = float(score * self.weight)
        if manager is not None and manager.bucket_max_size:
            value = value * MAX_NODE_SCORE / manager.bucket_max_size
        return value

    def node_order(self, task: TaskInfo, node: NodeInfo) -> float:
        """``NodeOrderFn``."""
        score, manager = self.bucket_score(task, node)
        return self.scale(score, manager)

    def allocated(self, task: TaskInfo) -> None:
        """``AllocateFunc``."""
        manager = self.managers.get(task.job)
        if manager is not None:
            manager.task_bound(task)

