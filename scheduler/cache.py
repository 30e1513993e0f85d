"""The cache: the scheduler's in-memory truth between sessions (cache/cache.go, event_handlers.go).

Sources feed it add/update/delete events of plain manifests; ``snapshot`` hands
a session clones it may change freely.  Objects carrying a ``resourceVersion``
are applied only when newer than what the cache holds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from operator import is_
from typing import Any

import structlog

from .api.dra_cache import DraCache
from .api.hypernode import HyperNode, HyperNodeTree, hypernode_from
from .api.job_info import ChangeLog, JobInfo, PodGroup
from .api.namespace_info import NamespaceInfo, quota_status_from
from .api.node_info import NodeInfo, NodeSpec
from .api.node_usage import NodeUsage
from .api.numa_info import NumaTopology, NumaTopologyError, numatopology_from
from .api.pdb import PodDisruptionBudget, pdb_from
from .api.pod_spec import Taint
from .api.queue_info import QueueAffinity, QueueInfo
from .api.resource import Resource
from .api.sub_job import NetworkTopology, SubGroupPolicy
from .api.task_info import TaskInfo, new_task_info, parse_timestamp, pod_request
from .api.types import ALLOCATED_STATUSES, COMPLETED_STATUSES, TaskStatus
from .framework.session import Session, Snapshot

log = structlog.get_logger("vcsched.cache")


@dataclass(slots=True)
class PriorityClass:
    name: str
    value: int
    global_default: bool


def _rv(obj: Mapping[str, Any]) -> int | None:
    raw = (obj.get("metadata") or {}).get("resourceVersion")
    try:
        return int(raw) if raw is not None else None
    except (TypeError, ValueError):
        return None


def node_info_from(node: Mapping[str, Any], ignored: frozenset[str] = frozenset()) -> NodeInfo:
    meta = node.get("metadata") or {}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    allocatable = Resource.from_list(status.get("allocatable") or {}, ignored)
    capacity = Resource.from_list(status.get("capacity") or status.get("allocatable") or {}, ignored)
    node_spec = NodeSpec(
        labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        taints=tuple(
            Taint(t.get("key") or "", str(t.get("value") or ""), t.get("effect") or "") for t in spec.get("taints") or []
        ),
        unschedulable=bool(spec.get("unschedulable")),
        images={
            name: int(img.get("sizeBytes") or 0)
            for img in status.get("images") or [] for name in img.get("names") or []
        },
        annotations=dict(meta.get("annotations") or {}),
    )
    return NodeInfo(meta["name"], node, node_spec, allocatable, capacity)


def podgroup_from(obj: Mapping[str, Any], ignored: frozenset[str] = frozenset()) -> PodGroup:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    min_res = spec.get("minResources")
    return PodGroup(
        name=meta["name"],
        namespace=meta.get("namespace") or "default",
        uid=str(meta.get("uid") or ""),
        creation_timestamp=parse_timestamp(meta.get("creationTimestamp")),
        min_member=int(spec.get("minMember") or 0),
        min_task_member={str(k): int(v) for k, v in (spec.get("minTaskMember") or {}).items()},
        queue=spec.get("queue") or "",
        priority_class_name=spec.get("priorityClassName") or "",
        min_resources=Resource.from_list(min_res, ignored) if min_res is not None else None,
        annotations=dict(meta.get("annotations") or {}),
        labels=dict(meta.get("labels") or {}),
        phase=status.get("phase") or "",
        conditions=[dict(c) for c in status.get("conditions") or []],
        running=int(status.get("running") or 0),
        succeeded=int(status.get("succeeded") or 0),
        failed=int(status.get("failed") or 0),
        min_resources_list=dict(min_res) if min_res is not None else None,
        network_topology=NetworkTopology.of(spec.get("networkTopology")),
        sub_group_policy=tuple(SubGroupPolicy.of(p) for p in spec.get("subGroupPolicy") or ()),
    )


def queue_from(obj: Mapping[str, Any]) -> QueueInfo:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    cap = spec.get("capability")
    deserved = spec.get("deserved")
    return QueueInfo(
        name=meta["name"],
        uid=str(meta.get("uid") or meta["name"]),
        creation_timestamp=parse_timestamp(meta.get("creationTimestamp")),
        weight=int(spec.get("weight") or 1),
        capability=Resource.from_list(cap) if cap else None,
        guarantee=Resource.from_list((spec.get("guarantee") or {}).get("resource") or {}),
        deserved=Resource.from_list(deserved) if deserved else None,
        reclaimable_flag=spec.get("reclaimable"),
        parent=spec.get("parent") or "",
        priority=int(spec.get("priority") or 0),
        state=status.get("state") or "",
        annotations=dict(meta.get("annotations") or {}),
        allocated={str(k): str(v) for k, v in (status.get("allocated") or {}).items()},
        affinity=QueueAffinity.from_spec(spec.get("affinity")),
    )


class Cache:
    def __init__(self, scheduler_names: tuple[str, ...] = ("volcano",), default_queue: str = "default",
                 devices: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None) -> None:
        self.scheduler_names = scheduler_names
        # parses a node's device registry (deviceshare's NodeDeviceBuilder), once per node update
        self.devices = devices
        # resource names the device kinds leave out of pods' requests (GetIgnoredDevices)
        self.ignored: frozenset[str] = frozenset(getattr(devices, "ignored", ()))
        self.default_queue = default_queue
        self.nodes: dict[str, NodeInfo] = {}  # insertion order = the order nodes were first seen
        self.tasks: dict[str, TaskInfo] = {}
        self.jobs: dict[str, JobInfo] = {}
        self.queues: dict[str, QueueInfo] = {}
        self.priority_classes: dict[str, PriorityClass] = {}
        self.versions: dict[tuple[str, str], int] = {}
        self._queue_missing: set[tuple[str, str]] = set()  # (job, queue) said once to be missing
        # topology.volcano.sh HyperNodes; their tree is derived again when they or the nodes change
        self.hypernodes: dict[str, HyperNode] = {}
        self._hypernode_tree: HyperNodeTree | None = None
        self._hypernode_problems: set[tuple[str, str]] = set()  # those logged, while they last
        # policy/v1 PodDisruptionBudgets by namespace/name, and each namespace's ResourceQuota status
        # (Volcano's NamespaceCollection): what the pdb and resourcequota plugins read
        self.pdbs: dict[str, PodDisruptionBudget] = {}
        self.namespaces: dict[str, NamespaceInfo] = {}
        # settled jobs' clones a completed session left as they were, reused by the next snapshot when
        # the cache has not changed the job since (keep_clones; ``vcsched run`` only)
        self._reusable: dict[str, JobInfo] = {}
        # of those, the ones not ready (JobInfo.is_ready), which gang looks at in every session
        self._reusable_unready: set[str] = set()
        # where the reused clones note a session's changes to them (JobInfo.change_log)
        self._change_log = ChangeLog()
        # counts what makes every kept clone stale (devices, priority classes): a session whose snapshot
        # was taken before such a change keeps nothing (keep_clones)
        self._reuse_epoch = self._snapshot_epoch = 0
        self._changed_jobs: set[str] = set()
        # since the last snapshot: each changed job's pods added, updated or deleted (uid, in the order of
        # their last change)
        self._task_changes: dict[str, dict[str, None]] = {}
        # a session's clones of jobs it left as it found them, which the next snapshot brings up to date
        # with their pods' changes rather than cloning every pod again (keep_clones)
        self._delta_bases: dict[str, JobInfo] = {}
        self._snapshots = 0  # snapshots taken (Snapshot.serial)
        # node name -> (the cache's node, a session's clone of it) that the next snapshot may use again
        self._node_clones: dict[str, tuple[NodeInfo, NodeInfo]] = {}
        self._inter_pod_tasks: set[str] = set()  # uids of the pods with inter-pod (anti-)affinity terms
        # resource.k8s.io DeviceClasses, ResourceSlices, ResourceClaims and their templates (api/dra_cache.py)
        self.dra = DraCache()
        # each node's measured load, as the metrics source last reported it (usage, rescheduling)
        self.node_usage: dict[str, NodeUsage] = {}
        # nodeinfo.volcano.sh Numatopologies by name (the node's name): what the numa-aware plugin reads
        self.numatopologies: dict[str, NumaTopology] = {}

    # -- event plumbing ------------------------------------------------------------------

    def _newer(self, kind: str, key: str, obj: Mapping[str, Any]) -> bool:
        rv = _rv(obj)
        if rv is None:
            return True
        old = self.versions.get((kind, key))
        if old is not None and rv < old:
            return False
        self.versions[(kind, key)] = rv
        return True

    # -- nodes ------------------------------------------------------------------------------

    def set_device_builder(self, devices: Callable[[Mapping[str, Any]], dict[str, Any]] | None) -> None:
        """A new device configuration (conf or device ConfigMap): re-read every node's devices."""
        self.devices = devices
        self._reusable.clear()  # requests are counted again
        self._reuse_epoch += 1
        self._delta_bases.clear()
        self._node_clones.clear()
        ignored = frozenset(getattr(devices, "ignored", ()))
        changed, self.ignored = ignored != self.ignored, ignored
        if changed:
            for job in self.jobs.values():  # minResources go through NewResource too
                if job.podgroup is not None and job.podgroup.min_resources is not None:
                    for name in ignored:
                        job.podgroup.min_resources.scalars.pop(name, None)
            # re-count the requests, keeping each task's state; the nodes are rebuilt below, except
            # the placeholders of pods bound to a node not seen yet
            for task in list(self.tasks.values()):
                job = self.jobs.get(task.job)
                node = self.nodes.get(task.node_name)
                placeholder = node is not None and node.node is None and task.uid in node.tasks
                if job is not None:
                    job.delete_task(task)
                if placeholder:
                    node.remove_task(task)
                task.resreq = pod_request(task.pod, ignored)
                if placeholder:
                    node.add_task(task)
                if job is not None:
                    job.add_task(task)
        for name, old in list(self.nodes.items()):
            if old.node is not None:
                self._build_node(old.node)

    def add_node(self, node: Mapping[str, Any]) -> None:
        if self._newer("Node", node["metadata"]["name"], node):
            self._build_node(node)

    def _build_node(self, node: Mapping[str, Any]) -> None:
        name = node["metadata"]["name"]
        info = node_info_from(node, self.ignored)
        if self.devices is not None:
            info.devices = self.devices(node)
        old = self.nodes.get(name)
        if old is not None:
            for task in old.tasks.values():
                info.add_task(task)
        if old is None or not old.ready or old.spec.labels != info.spec.labels:
            self._hypernode_tree = None  # regex and label members select by name and labels
        self.nodes[name] = info

    update_node = add_node

    def delete_node(self, name: str) -> None:
        node = self.nodes.get(name)
        if node is None:
            return
        self._hypernode_tree = None
        self.node_usage.pop(name, None)
        if node.tasks:
            # keep the pods' accounting; the entry is not ready without a Node object
            placeholder = NodeInfo(name, None, NodeSpec(), Resource(), Resource())
            for task in node.tasks.values():
                placeholder.add_task(task)
            self.nodes[name] = placeholder
        else:
            del self.nodes[name]

    # -- pods -----------------------------------------------------------------------------------

    def responsible_for(self, pod: Mapping[str, Any]) -> bool:
        spec = pod.get("spec") or {}
        return spec.get("schedulerName") in self.scheduler_names or bool(spec.get("nodeName"))

    def add_pod(self, pod: Mapping[str, Any]) -> None:
        if not self.responsible_for(pod):
            return
        meta = pod["metadata"]
        key = f"{meta.get('namespace') or 'default'}/{meta['name']}"
        if not self._newer("Pod", key, pod):
            return
        uid = meta.get("uid") or key
        self._add_task(new_task_info(pod, self.ignored, self.tasks.get(uid)))

    def _add_task(self, task: TaskInfo) -> None:
        old = self.tasks.get(task.uid)
        if old is not None:
            self._remove_task(old)
        self.tasks[task.uid] = task
        self._changed_jobs.add(task.job)
        self._task_changed(task)
        if task.spec.has_inter_pod_terms:
            self._inter_pod_tasks.add(task.uid)
        if task.job:
            job = self.jobs.get(task.job)
            if job is None:
                job = self.jobs[task.job] = JobInfo(task.job)
            job.add_task(task)
        if task.node_name and task.status not in COMPLETED_STATUSES:
            node = self.nodes.get(task.node_name)
            if node is None:
                node = self.nodes[task.node_name] = NodeInfo(task.node_name, None, NodeSpec(), Resource(), Resource())
            node.add_task(task)

    update_pod = add_pod

    def _task_changed(self, task: TaskInfo) -> None:
        changes = self._task_changes.get(task.job)
        if changes is None:
            changes = self._task_changes[task.job] = {}
        else:
            changes.pop(task.uid, None)  # to the end: the order of the job's tasks in the cache
        changes[task.uid] = None

    def _remove_task(self, task: TaskInfo) -> None:
        self.tasks.pop(task.uid, None)
        self._inter_pod_tasks.discard(task.uid)
        self._changed_jobs.add(task.job)
        self._task_changed(task)
        job = self.jobs.get(task.job)
        if job is not None:
            job.delete_task(task)
            if job.podgroup is None and not job.tasks:
                del self.jobs[task.job]
        node = self.nodes.get(task.node_name)
        if node is not None and task.uid in node.tasks:
            node.remove_task(task)
            if node.node is None and not node.tasks:
                del self.nodes[task.node_name]

    def delete_pod(self, uid: str) -> None:
        task = self.tasks.get(uid)
        if task is not None:
            self._remove_task(task)

    # -- podgroups, queues, priority classes ------------------------------------------------------

    def add_podgroup(self, obj: Mapping[str, Any]) -> None:
        pg = podgroup_from(obj, self.ignored)
        if not self._newer("PodGroup", pg.key, obj):
            return
        job = self.jobs.get(pg.key)
        if job is None:
            job = self.jobs[pg.key] = JobInfo(pg.key)
        job.set_podgroup(pg, self.default_queue)
        self._changed_jobs.add(pg.key)

    update_podgroup = add_podgroup

    def set_podgroup_status(self, key: str, phase: str, running: int, succeeded: int, failed: int,
                            conditions: list[dict[str, Any]]) -> None:
        """A session's PodGroup status, on its way to the API: the next session starts from it, not
        from the older status the API still shows (which would make it decide and write it again).
        The API's answer, or any newer version from the watch, replaces it as usual."""
        job = self.jobs.get(key)
        if job is None or job.podgroup is None:
            return
        pg = job.podgroup
        self._changed_jobs.add(key)
        pg.phase, pg.running, pg.succeeded, pg.failed = phase, running, succeeded, failed
        pg.conditions = [dict(c) for c in conditions]

    def delete_podgroup(self, key: str) -> None:
        job = self.jobs.get(key)
        if job is None:
            return
        self._changed_jobs.add(key)
        job.podgroup = None
        if not job.tasks:
            del self.jobs[key]

    def add_queue(self, obj: Mapping[str, Any]) -> None:
        q = queue_from(obj)
        if self._newer("Queue", q.name, obj):
            if q.name not in self.queues and self._queue_missing:  # said missing: say it again if it goes
                self._queue_missing = {m for m in self._queue_missing if m[1] != q.name}
            self.queues[q.name] = q

    update_queue = add_queue

    def delete_queue(self, name: str) -> None:
        self.queues.pop(name, None)

    # -- HyperNodes --------------------------------------------------------------------------

    def add_hypernode(self, obj: Mapping[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if self._newer("HyperNode", name, obj):
            self.hypernodes[name] = hypernode_from(obj)
            self._hypernode_tree = None

    update_hypernode = add_hypernode

    def delete_hypernode(self, name: str) -> None:
        if self.hypernodes.pop(name, None) is not None:
            self._hypernode_tree = None

    def hypernode_tree(self) -> HyperNodeTree:
        """The HyperNode tree over the ready nodes, derived again only after a change."""
        tree = self._hypernode_tree
        if tree is None:
            nodes = [(n.name, n.spec.labels) for n in self.nodes.values() if n.ready]
            tree = self._hypernode_tree = HyperNodeTree.build(self.hypernodes, nodes)
            said, self._hypernode_problems = self._hypernode_problems, set(tree.problems)
            for name, problem in tree.problems:  # each once, until it is gone (the session makes it an event)
                if (name, problem) in said:
                    continue
                if not tree.ready and (name, problem) == (tree.error_at, tree.error):
                    log.error("HyperNodes are not ready to schedule: jobs with a network topology wait",
                              hypernode=name, error=problem)
                else:
                    log.error("HyperNode member refused: it selects no node", hypernode=name, error=problem)
        return tree

    # -- Numatopologies ------------------------------------------------------------------------

    def add_numatopology(self, obj: Mapping[str, Any]) -> None:
        """``addNumaInfo``: the node's NUMA topology; one the scheduler cannot hold is logged and the
        node keeps none (numa_info.NumaTopologyError)."""
        name = obj["metadata"]["name"]
        if not self._newer("Numatopology", name, obj):
            return
        try:
            self.numatopologies[name] = numatopology_from(obj)
        except NumaTopologyError as e:
            log.error("Numatopology refused: its node is scheduled as one without a NUMA topology",
                      numatopology=name, field=e.field, error=e.message)
            self.numatopologies.pop(name, None)

    update_numatopology = add_numatopology

    def delete_numatopology(self, name: str) -> None:
        self.numatopologies.pop(name, None)

    # -- node load from the metrics source ------------------------------------------------------

    def set_node_usage(self, usages: Mapping[str, NodeUsage]) -> None:
        """``setMetricsData``: the load the metrics source reported, for the nodes the cache knows
        (another is logged and skipped, as Volcano does)."""
        for name, usage in usages.items():
            node = self.nodes.get(name)
            if node is None or not node.ready:
                log.error("the metrics source reported a node the cache does not know", node=name)
                continue
            self.node_usage[name] = usage

    # -- PodDisruptionBudgets and ResourceQuotas ------------------------------------------------

    def add_pdb(self, obj: Mapping[str, Any]) -> None:
        pdb = pdb_from(obj)
        if not self._newer("PodDisruptionBudget", pdb.key, obj):
            return
        if pdb.selector is None:
            log.warning("PodDisruptionBudget selector does not convert; the pdb plugin skips it",
                        pdb=pdb.key, field="spec.selector")
        self.pdbs[pdb.key] = pdb

    update_pdb = add_pdb

    def delete_pdb(self, key: str) -> None:
        self.pdbs.pop(key, None)

    def add_resource_quota(self, obj: Mapping[str, Any]) -> None:
        """``updateResourceQuota``: the quota's status, in its namespace's collection."""
        meta = obj.get("metadata") or {}
        ns, name = meta.get("namespace") or "default", meta.get("name") or ""
        if not self._newer("ResourceQuota", f"{ns}/{name}", obj):
            return
        info = self.namespaces.get(ns)
        if info is None:
            info = self.namespaces[ns] = NamespaceInfo(ns)
        info.quota_status[name] = quota_status_from(obj)

    update_resource_quota = add_resource_quota

    def delete_resource_quota(self, key: str) -> None:
        """``deleteResourceQuota``: the namespace's collection stays, without the quota."""
        ns, _, name = key.partition("/")
        info = self.namespaces.get(ns)
        if info is not None:
            info.quota_status.pop(name, None)

    def add_priority_class(self, obj: Mapping[str, Any]) -> None:
        name = obj["metadata"]["name"]
        self.priority_classes[name] = PriorityClass(name, int(obj.get("value") or 0), bool(obj.get("globalDefault")))
        self._reusable.clear()  # a job's priority may change
        self._delta_bases.clear()
        self._reuse_epoch += 1

    def delete_priority_class(self, name: str) -> None:
        self.priority_classes.pop(name, None)
        self._reusable.clear()
        self._delta_bases.clear()
        self._reuse_epoch += 1

    # -- snapshot -----------------------------------------------------------------------------------

    def job_priority(self, job: JobInfo) -> int:
        pc = self.priority_classes.get(job.podgroup.priority_class_name) if job.podgroup.priority_class_name else None
        if pc is not None:
            return pc.value
        for pc in self.priority_classes.values():
            if pc.global_default:
                return pc.value
        return 0

    def snapshot(self) -> Snapshot:
        """Clones of the ready nodes, every job with a PodGroup and a known queue, and all queues."""
        jobs: dict[str, JobInfo] = {}
        reused: set[str] = set()
        fresh_on: set[str] = set()  # the nodes holding a task of a job cloned afresh
        self._snapshots += 1
        reusable, changed = self._reusable, self._changed_jobs
        self._reusable, self._changed_jobs = {}, set()  # only a completed session gives clones back
        fresh: list[JobInfo] = []
        self._change_log.jobs = changed_reused = []  # what the reused clones note from now on
        self._snapshot_epoch = self._reuse_epoch
        node_clones, self._node_clones = self._node_clones, {}
        bases, self._delta_bases = self._delta_bases, {}
        task_changes, self._task_changes = self._task_changes, {}
        for uid, job in self.jobs.items():
            if job.podgroup is None:
                continue
            if job.queue not in self.queues:
                if (uid, job.queue) not in self._queue_missing:  # Volcano: "... does not exist, ignore it"
                    self._queue_missing.add((uid, job.queue))
                    log.warning("PodGroup names a queue that does not exist; its pods wait until it does",
                                podgroup=uid, field="spec.queue", queue=job.queue)
                continue
            c = reusable.get(uid)
            if c is not None and uid not in changed:
                reused.add(uid)
                jobs[uid] = c  # with the priority it was given: a priority class's change reuses nothing
                continue
            base = c if c is not None else bases.get(uid)
            if base is not None:
                base.change_log = None  # a fresh clone from here on: its changes are no reused clone's
                c = _bring_up_to_date(base, job, task_changes.get(uid, {}), fresh_on)
            else:
                c = job.clone()
                if node_clones:
                    fresh_on.update(t.node_name for t in c.tasks.values() if t.node_name)
            c.mutations = 0  # from here on, what a session changes
            c.priority = self.job_priority(job)
            jobs[uid] = c
            fresh.append(c)
        nodes = []
        for name, node in self.nodes.items():
            if not node.ready:
                continue
            kept = node_clones.get(name)
            if (kept is not None and kept[0] is node and kept[1].generation == node.generation
                    and name not in fresh_on):
                nodes.append(kept[1])  # as the cache has it, and the last session left it
                continue
            n = node.clone()
            tasks = n.tasks
            for uid, task in node.tasks.items():
                job = jobs.get(task.job)
                t = job.tasks.get(uid) if job is not None else None
                tasks[uid] = t if t is not None else task.clone()
            n.accounted = dict(node.accounted)
            nodes.append(n)
        queues = {name: q.clone() for name, q in self.queues.items()}
        pdbs = tuple(self.pdbs[key] for key in sorted(self.pdbs))
        namespaces = {name: info.snapshot() for name, info in self.namespaces.items()}
        return Snapshot(nodes, jobs, queues, self.hypernode_tree(), pdbs, namespaces, dict(self.node_usage),
                        dra=self.dra.snapshot(), numatopologies=dict(self.numatopologies), reused=frozenset(reused),
                        serial=self._snapshots, has_inter_pod_terms=bool(self._inter_pod_tasks), fresh=fresh,
                        changed_reused=changed_reused, unready_reused=frozenset(self._reusable_unready & reused))

    def keep_clones(self, ssn: Session, touched: set[str],
                    touched_pods: frozenset[str] | set[str] = frozenset()) -> None:
        """After a completed session over a snapshot: the clones of its settled jobs (PodGroup Running or
        Completed, every task Bound, Running, Succeeded or Failed, no fit errors, no network topology, no
        HyperNode kept) that its effects do not name (``touched``: the PodGroups of status writes and
        events; ``touched_pods``: uids and namespace/names of the pods of binds, evictions, conditions
        and events) are as the session found them, once their PodGroup conditions are put back to those
        it opened with (``JobInfo.opened_status``, conditions by reference): the next snapshot reuses each
        one whose job the cache has not changed since.

        A session's writes to a job either change its status (a PodGroupStatus effect), its tasks (a
        Bind or Evict, which leaves a task Binding or Releasing) or concern a waiting job (Events,
        PodConditions); a settled job it left unnamed is the clone the cache would give again.  A clone
        whose tasks the session changed, even if it put them back (``mutations``), is never kept; one it
        reused and left alone is kept as it is, without a look at its tasks.  The others it left alone
        are kept as bases the next snapshot brings up to date (_keep_base).  What the cache changes (a pod's or PodGroup's update, a
        status written, a priority class or the device configuration) makes a fresh clone.  Safe to call
        from the session's thread: it reads only the session's clones.  A session whose snapshot came
        before a change that makes every clone stale (a device configuration, a priority class) keeps
        nothing."""
        if self._snapshot_epoch != self._reuse_epoch:
            return
        jobs, reused = ssn.jobs, ssn.reused
        for uid in touched:  # its status written: not reused as it is, but brought up to date
            job = jobs.get(uid)
            if job is not None:
                self._keep_base(job)
        # the reused clones it left alone: kept again as they are, without a look at their tasks (a
        # changed one, even put back, is cloned afresh, so that what was kept of it across sessions,
        # framework/settled.py, is never stale)
        keep = {uid: jobs[uid] for uid in reused}
        for job in ssn.changed_reused:
            keep.pop(job.uid, None)
        for uid in touched:
            keep.pop(uid, None)
        unready = set()
        for uid in ssn.unready_reused:  # gang gave these a condition of this session: the opened ones again
            job = keep.get(uid)
            if job is not None:
                conditions, opened = job.podgroup.conditions, job.opened_status[4]
                if len(conditions) != len(opened) or not all(map(is_, conditions, opened)):
                    job.podgroup.conditions = list(opened)
                unready.add(uid)
        log = self._change_log
        for job in ssn.fresh_jobs:
            uid = job.uid
            pg = job.podgroup
            if uid in touched or pg is None or job.mutations:  # a clone the session changed is never kept
                continue
            old = job.opened_status
            if pg.phase not in _SETTLED_PHASES:
                self._keep_base(job)
                continue
            unsettled = False
            for status, tasks in job.by_status.items():
                if tasks and status not in _SETTLED_TASKS:
                    unsettled = True
                    break
            if (unsettled or old is None or old[0] != pg.phase or old[1] != pg.running or old[2] != pg.succeeded
                    or old[3] != pg.failed or job.nodes_fit_errors or job.job_fit_errors or job.network_topology is not None
                    or job.allocated_hypernode or job.min_sub_jobs):
                self._keep_base(job)
                continue
            if touched_pods and any(t.uid in touched_pods or f"{t.namespace}/{t.name}" in touched_pods
                                    for t in job.tasks.values()):
                self._keep_base(job)
                continue
            job._sub_jobs = None  # built when asked for, as on a fresh clone
            # the conditions it opened with, which the cache holds: gang gives every job a new one each
            # session, equal but for its transitionID and time (else a status write would name the job)
            pg.conditions = list(old[4])
            job.change_log = log
            keep[uid] = job
            if not job.is_ready():
                unready.add(uid)
        self._reusable = keep
        self._reusable_unready = unready
        self._keep_node_clones(ssn)

    def _keep_base(self, job: JobInfo) -> None:
        """A clone whose tasks the session did not change (and without a network topology, which a
        session translates), for the next snapshot to bring up to date (_bring_up_to_date): its
        PodGroup taken again from the cache, its pods' changes applied; what the session noted on it
        goes (fit errors, SubJobs built)."""
        if (job.mutations or job.podgroup is None or job.network_topology is not None or job.allocated_hypernode
                or job.min_sub_jobs):
            return
        job.nodes_fit_errors = {}
        job.job_fit_errors = ""
        job._sub_jobs = None
        job.change_log = None
        self._delta_bases[job.uid] = job

    def _keep_node_clones(self, ssn: Session) -> None:
        """The session's node clones without devices, for the next snapshot to use again while neither the
        cache nor a session has changed the node since (its ``generation``, which a clone takes from its
        original and every change of tasks makes new) and no task on it belongs to a job cloned afresh
        (its clone's task objects are those of the jobs reused).  A node with devices is cloned each time:
        plugins keep state in its device ledgers."""
        cache_nodes = self.nodes
        kept: dict[str, tuple[NodeInfo, NodeInfo]] = {}
        for n in ssn.node_list:
            if n.devices:
                continue
            node = cache_nodes.get(n.name)
            if node is not None and node.generation == n.generation:
                kept[n.name] = (node, n)
        self._node_clones = kept


def _bring_up_to_date(base: JobInfo, job: JobInfo, changes: Mapping[str, None], fresh_on: set[str]) -> JobInfo:
    """``base`` (a clone of ``job`` as the previous snapshot had it, whose tasks its session left as they
    were) with ``job``'s PodGroup taken again and the pods that changed since cloned again, in the
    order of their last change: what ``job.clone()`` would give, at the cost of what changed.  The
    nodes of the pods replaced go into ``fresh_on`` (a node clone holding one is not used again)."""
    base.take_podgroup_of(job)
    tasks = job.tasks
    removed = False
    for uid in changes:
        old = base.tasks.get(uid)
        new = tasks.get(uid)
        if old is not None:
            base.delete_task(old)
            # what was subtracted is added back (a pod bound, say): the sums stay what a fresh clone's
            # are, without a walk over a 5,000-pod gang for each of its binds
            removed = removed or new is None or new.resreq != old.resreq or (
                old.status in ALLOCATED_STATUSES and new.status not in ALLOCATED_STATUSES)
            if old.node_name:
                fresh_on.add(old.node_name)
        if new is not None:
            t = new.clone()
            base.add_task(t)
            if t.node_name:
                fresh_on.add(t.node_name)
    if removed:  # summed afresh: taking a pod away leaves its resource names behind at 0
        allocated, total = base.allocated, base.total_request = Resource(), Resource()
        for t in base.tasks.values():
            total.add(t.resreq)
            if t.status in ALLOCATED_STATUSES:
                allocated.add(t.resreq)
    return base


_SETTLED_PHASES = ("Running", "Completed")
_SETTLED_TASKS = frozenset((TaskStatus.Bound, TaskStatus.Running, TaskStatus.Succeeded, TaskStatus.Failed))
