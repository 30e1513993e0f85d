"""The controllers in Kubernetes mode: Volcano's job, PodGroup (bare pods), queue and garbage-collector
controllers as event handlers that call the pure reconcile functions of scheduler/controllers, and its
hypernode controller's discovery of HyperNodes from node labels (scheduler/kube/hypernode_discovery.py).

- An informer per kind the controllers read (scheduler/kube/informer.py: a Reflector keeping a
  ``Lister``'s index, as Volcano's listers: a Job, its pods by the job-name label, its PodGroup, the
  queues, ...): a request costs no API read; only writes (and their conflict re-reads) go out.  No
  handler runs before every informer has its initial list (Volcano's WaitForCacheSync), and one
  name's events are handled in order, different names concurrently.  What our own writes return (created
  pods and PodGroups, written Job status) is read at once (``Lister`` keeps it until the index catches
  up), so the next request does not act on an older view than the one we wrote; the watch event of
  that write still reaches the handlers.  A relist after 410 Gone drops what it did not bring back and
  the handlers get its DELETED event, as client-go's Replace.
- Every API call goes through ``KubeClient``; CONTROLLER_ACCESS in access.py lists them.
- One job is never processed concurrently (a lock per job, as Volcano routes a job's requests to one
  worker); a request that fails is retried with backoff up to ``max_requeue`` times, then the job gets
  Volcano's ``Job failed on action <A> for retry limit reached`` and TerminateJob.
- Status writes go with the resourceVersion of the stored Job, skip the write when nothing changed and
  re-read and retry on 409 Conflict.
- Delayed actions (policy timeouts) and ttlSecondsAfterFinished are asyncio timers.
- With the scheduler in this process, a bare pod's group is handed over (``GroupHandoff``) rather
  than written to the pod first: the scheduler's Binding carries the annotation, or the scheduler
  writes it for a pod its session did not bind (scheduler/kube/source.py · CacheFeeder).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import secrets
import string
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Protocol

import structlog

from ..api.types import GROUP_NAME_ANNOTATION
from ..controllers import job_state as js
from ..controllers.job import JOB_API_VERSION, JOB_NAME_KEY, OUT_OF_SYNC_KEY, job_owner_reference, mutate_job, \
    podgroup_name, replica_problems, validate_job, volcano_message
from ..controllers.podgroup import first_pod, merge_owner_annotations, needs_podgroup, owner_references, \
    podgroup_for_pod, podgroup_update, workload_replicas, workload_selector
from ..controllers.podgroup import podgroup_name as bare_podgroup_name
from ..metrics import ControllerMetrics
from .api import (BATCH_JOBS, COMMANDS, CONFIGMAPS, DAEMON_SETS, EVENTS, JOBS, MERGE_PATCH, NETWORK_POLICIES,
                  PERSISTENT_VOLUME_CLAIMS, PODGROUPS, PODS, REPLICA_SETS, SECRETS, SERVICES,
                  STATEFUL_SETS, STRATEGIC_MERGE_PATCH, ApiError, Kind, KubeClient, warn_unless_denied)
from .hypernode_discovery import HyperNodeDiscovery
from .lister import Lister, pod_index_keys, podgroup_queue_keys
from .queue_controller import QueueController

log = structlog.get_logger("vcsched.controllers")

Handler = Callable[..., Awaitable[None]]

COMPONENT = "vc-controller-manager"
INVALID_REASON = "ValidationFailed"  # state.reason of a Job the (absent) webhook would have refused
_OWNER_KINDS: dict[tuple[str, str], Kind] = {("apps", "ReplicaSet"): REPLICA_SETS, ("apps", "DaemonSet"): DAEMON_SETS,
                                              ("apps", "StatefulSet"): STATEFUL_SETS, ("batch", "Job"): BATCH_JOBS}
_PLUGIN_KINDS: dict[str, Kind] = {"ConfigMap": CONFIGMAPS, "Service": SERVICES, "Secret": SECRETS,
                                  "NetworkPolicy": NETWORK_POLICIES}


@dataclass(slots=True)
class ControllerOptions:
    scheduler_names: tuple[str, ...] = ("volcano",)
    conflict_retries: int = 5
    max_requeue: int = 15  # Volcano's --max-requeue-num
    requeue_base: float = 0.05
    requeue_cap: float = 5.0
    inherit_owner_annotations: bool = True  # Volcano's --inherit-owner-annotations
    # PodGroups of bare pods made at once (Volcano's --worker-threads-for-podgroup).  Each create waits
    # mostly on the API server's commit, not on CPU: at 500 nodes / 5,000 pods 64 left the backlog
    # waiting on the PodGroups, 128 did not, 256 was no faster (docs/real-apiserver-bench.md)
    podgroup_workers: int = 128
    # HyperNode discovery's configuration: Volcano's <release>-controller-configmap in the release namespace
    discovery_namespace: str = "volcano-system"
    discovery_configmap: str = "volcano-controller-configmap"


@dataclass(slots=True)
class _Timer:
    action: str
    request: js.Request
    task: asyncio.Task[None] | None = None


class SyncError(Exception):
    """A sync that cannot go on yet (a missing PVC): retried like an API error."""


def now_rfc3339() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _plain(body: Mapping[str, Any]) -> dict[str, Any]:
    """An object from the informers (shared with the index) → a copy we may change."""
    return copy.deepcopy(dict(body))


class GroupHandoff(Protocol):
    """The scheduler in this process, told a bare pod's PodGroup (scheduler/kube/runtime.py · Runtime)."""

    def give_group(self, pod: Mapping[str, Any], podgroup: Mapping[str, Any]) -> bool: ...

    def owes_group(self, uid: str) -> bool: ...


def _ns_name(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "default", meta.get("name") or ""


def _controller_ref(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == kind:
            return ref
    return None


def _pod_state(pod: Mapping[str, Any]) -> tuple:
    """What a job pod update is about: phase, deletion, the out-of-sync mark, restarts."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    restarts = sum(int(c.get("restartCount") or 0)
                   for c in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []))
    return (status.get("phase"), bool(meta.get("deletionTimestamp")),
            (meta.get("annotations") or {}).get(OUT_OF_SYNC_KEY), restarts)


class Controllers(QueueController):
    """The handlers (informer events: ``type`` None for the initial listing, ADDED, MODIFIED or DELETED,
    ``body`` the object) and what they share: the indexes they read (Listers), per-job locks, the last
    seen pods and PodGroup phases, timers."""

    def __init__(self, client: KubeClient, options: ControllerOptions | None = None,
                 metrics: ControllerMetrics | None = None, handoff: GroupHandoff | None = None) -> None:
        self.client = client
        self.options = options or ControllerOptions()
        self.metrics = metrics or ControllerMetrics()
        self.handoff = handoff  # the scheduler in this process, if any
        # what the handlers read: the informers' indexes and our own writes
        self.jobs = Lister("jobs")
        self.pods = Lister("pods", pod_index_keys)
        self.podgroups = Lister("podgroups", podgroup_queue_keys)  # the queue controller's queue → PodGroups
        self.queues = Lister("queues")
        self.priority_classes = Lister("priorityclasses")
        self.workloads = {"ReplicaSet": Lister("replicasets"), "StatefulSet": Lister("statefulsets")}
        self._locks: dict[str, asyncio.Lock] = {}
        self._jobs_seen: dict[str, tuple[Any, ...]] = {}  # job key → (uid, spec, phase)
        self._pods: dict[str, dict[str, Any]] = {}  # pod key → last seen manifest (job pods)
        self._pg_seen: dict[str, tuple[str, str, str]] = {}  # PodGroup key → (uid, queue, phase)
        self._queue_parent: dict[str, str] = {}
        self._podgroup_slots = asyncio.Semaphore(self.options.podgroup_workers)
        self._bare_making: set[str] = set()  # pods whose PodGroup create is under way (by uid)
        self.synced: asyncio.Event | None = None  # the informers' (run_controllers): handlers may run
        self._queue_syncs: dict[str, asyncio.Task[None]] = {}  # queues with a syncQueue due (queue_changed)
        self._timers: dict[str, list[_Timer]] = {}  # job key → delayed actions
        self._ttl: dict[str, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        o = self.options  # the hypernode controller: HyperNodes from node labels
        self.hypernode_discovery = HyperNodeDiscovery(
            client, self.event, self._spawn, namespace=o.discovery_namespace, name=o.discovery_configmap,
            conflict_retries=o.conflict_retries, max_requeue=o.max_requeue, requeue_base=o.requeue_base,
            requeue_cap=o.requeue_cap)

    @property
    def listers(self) -> list[Lister]:
        return [self.jobs, self.pods, self.podgroups, self.queues, self.priority_classes, *self.workloads.values()]

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def close(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)

    @property
    def timers(self) -> dict[str, list[tuple[str, js.Request]]]:
        """The armed delayed actions by job key (for tests and logs)."""
        return {k: [(t.action, t.request) for t in ts] for k, ts in self._timers.items() if ts}

    # -- handlers ------------------------------------------------------------------------------

    async def on_job(self, type: str | None, body: Mapping[str, Any], **_: Any) -> None:
        job = _plain(body)
        ns, name = _ns_name(job)
        key = f"{ns}/{name}"
        if type == "DELETED":
            self._forget_job(key)
            await self._collect_job(job)
            return
        seen = (job["metadata"].get("uid"), job.get("spec"), ((job.get("status") or {}).get("state") or {}).get("phase"))
        old = self._jobs_seen.get(key)
        self._jobs_seen[key] = seen
        self._arm_ttl(key, job)
        if old != seen:  # added, spec changed or phase changed: OutOfSync (our own count writes are not)
            await self.process(key, js.Request(event=js.OUT_OF_SYNC))

    async def on_pod(self, type: str | None, body: Mapping[str, Any], **_: Any) -> None:
        ns, name = _ns_name(body)
        key = f"{ns}/{name}"
        job_ref = _controller_ref(body, "Job")
        annotations = (body.get("metadata") or {}).get("annotations") or {}
        job_key = f"{ns}/{annotations[JOB_NAME_KEY]}" if job_ref and annotations.get(JOB_NAME_KEY) else None
        old = self._pods.get(key)
        if job_key is None:
            # a bare pod: its PodGroup when first seen (read, not kept: no copy); later events ask nothing
            if type == "DELETED":
                self._pods.pop(key, None)
            elif old is None and type in (None, "ADDED"):
                await self.podgroup_for_bare_pod(body)
            return
        pod = _plain(body)
        if type == "DELETED":
            self._pods.pop(key, None)
            # a pod the controller never saw is OutOfSync, as in Volcano's deletePod
            await self.process(job_key, js.request_for_pod_delete(pod) if old is not None
                               else js.Request(event=js.OUT_OF_SYNC))
            return
        self._pods[key] = pod
        if old is None or old["metadata"].get("uid") != pod["metadata"].get("uid"):
            await self.process(job_key, js.request_for_pod_add(pod))
        elif _pod_state(old) != _pod_state(pod):
            await self.process(job_key, pod_update=(old, pod))

    async def on_podgroup(self, type: str | None, body: Mapping[str, Any], **_: Any) -> None:
        pg = body  # read, not kept: no copy (a deep copy of every PodGroup event cost more than the rest)
        ns, name = _ns_name(pg)
        key = f"{ns}/{name}"
        uid = pg["metadata"].get("uid") or ""
        queue = (pg.get("spec") or {}).get("queue") or "default"
        phase = (pg.get("status") or {}).get("phase") or ""
        old = self._pg_seen.get(key)
        job_ref = _controller_ref(pg, "Job")
        if type == "DELETED":
            if old is not None and old[0] == uid:  # not a PodGroup made again under the name since
                del self._pg_seen[key]
                self.queue_changed(old[1])
            return
        if old is not None and old[0] != uid:  # the name's earlier PodGroup: this one is new
            self.queue_changed(old[1])
            old = None
        self._pg_seen[key] = (uid, queue, phase)
        if old != (uid, queue, phase):
            self.queue_changed(queue)
            if old is not None and old[1] != queue:
                self.queue_changed(old[1])
        # Volcano's job controller watches PodGroups: a phase change is a request for the job
        if job_ref is not None and old is not None and old[2] != phase:
            await self.process(f"{ns}/{job_ref.get('name')}", js.request_for_podgroup_phase(phase))

    async def on_queue(self, type: str | None, body: Mapping[str, Any], **_: Any) -> None:
        queue = body  # read, not kept: no copy
        name = queue["metadata"]["name"]
        parent = (queue.get("spec") or {}).get("parent") or ""
        if type == "DELETED":
            self._queue_parent.pop(name, None)
            self.metrics.remove_queue(name)
            return
        old = self._queue_parent.get(name)
        self._queue_parent[name] = parent
        if old is None or old != parent:  # queue added, or its parent changed
            await self.sync_queue(name)

    async def on_command(self, type: str | None, body: Mapping[str, Any], **_: Any) -> None:
        """bus.volcano.sh Commands: deleted first (so each runs at most once), then acted on."""
        if type == "DELETED":
            return
        cmd = _plain(body)
        ns, name = _ns_name(cmd)
        target = cmd.get("target") or {}
        action = cmd.get("action") or ""
        kind = target.get("kind")
        if kind not in ("Job", "Queue"):
            return
        gone = False

        async def delete() -> None:
            nonlocal gone
            try:
                await self.client.request("DELETE", COMMANDS.path(ns, name))
            except ApiError as e:
                if e.status != 404:
                    raise
                gone = True  # consumed already

        if await self._retrying(f"delete Command {ns}/{name}", delete) is not None or gone:
            return
        if kind == "Job":
            await self.process(f"{ns}/{target.get('name')}", js.Request(event=js.COMMAND_ISSUED, action=action))
        else:
            await self.sync_queue(target.get("name") or "", action)

    # -- the job controller ------------------------------------------------------------------------

    async def process(self, key: str, request: js.Request | None = None, action: str | None = None,
                      pod_update: tuple[dict[str, Any], dict[str, Any]] | None = None) -> None:
        """One request for one job, retried with backoff on API errors (processNextReq + requeue)."""
        lock = self._locks.setdefault(key, asyncio.Lock())
        o = self.options
        async with lock:
            for attempt in range(o.max_requeue + 1):
                try:
                    await self._sync(key, request, action, pod_update)
                    return
                except (ApiError, SyncError) as e:
                    warn_unless_denied(log, "job request failed", e, job=key, action=action or "", attempt=attempt)
                    if attempt < o.max_requeue:
                        await asyncio.sleep(min(o.requeue_cap, o.requeue_base * 2 ** attempt))
            with contextlib.suppress(ApiError, SyncError):
                job = self.jobs.get(*key.split("/", 1))
                if job is not None:
                    await self.event(job, "Normal", "ExecuteAction",
                                     f"Job failed on action {action or js.SYNC_JOB} for retry limit reached")
                    await self._sync(key, js.Request(event=js.OUT_OF_SYNC), js.TERMINATE_JOB, None)

    async def _sync(self, key: str, request: js.Request | None, action: str | None,
                    pod_update: tuple[dict[str, Any], dict[str, Any]] | None) -> None:
        ns, name = key.split("/", 1)
        raw = copy.deepcopy(self.jobs.get(ns, name))
        if raw is None:
            return
        state = (raw.get("status") or {}).get("state") or {}
        if state.get("reason") == INVALID_REASON:
            return  # refused: no pods, ever
        job = mutate_job(raw, self.options.scheduler_names[0])
        if not state.get("phase") and not await self._admit(job):
            return
        too_many = replica_problems(job)
        if too_many:
            # scaled past the limit once admitted: left as it is until scaled back (each path below walks
            # every replica), and said why
            await self.event(job, "Warning", INVALID_REASON, volcano_message(too_many))
            return
        pods = self._job_pods(job)
        if pod_update is not None:
            request = js.request_for_pod_update(job, pod_update[0], pod_update[1], pods)
            if request is None:
                return
        request = request or js.Request(event=js.OUT_OF_SYNC)
        volumes: dict[str, str] = {}
        chosen = action or js.apply_policies(job, request)[0]
        if state.get("phase") in (None, "", js.PENDING) and job["spec"].get("volumes") and \
                chosen in (js.SYNC_JOB, js.RESUME_JOB):
            # initiateJob (the sync of a job not yet initiated; kills skip it) runs createJobIOIfNotExist
            raw, volumes = await self._ensure_pvcs(raw, job)
            job = mutate_job(raw, self.options.scheduler_names[0])
        pg = copy.deepcopy(self.podgroups.get(ns, podgroup_name(job)))
        obs = js.Observed(job=job, pods=pods, podgroup=pg, now=now_rfc3339(),
                          priority_classes=self.priority_classes.objects)  # task priorities order minResources
        self._cancel_timers(key, request)
        out = js.reconcile(obs, request, action=action)
        controlled = out.status.setdefault("controlledResources", {}) if volumes else {}
        for pvc in volumes:
            if controlled.get(f"volume-pvc-{pvc}") != pvc:
                controlled[f"volume-pvc-{pvc}"] = pvc
                out.write_status = out.delayed is None
        await self.carry_out(key, job, request, out)

    async def _ensure_pvcs(self, raw: dict[str, Any], job: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        """Volcano's createJobIOIfNotExist: a ``volumeClaim`` gets a PVC ``<job>-pvc-<12 random [0-9a-z]>`` owned
        by the Job, and that name is written back into ``spec.volumes``; a ``volumeClaimName`` must exist."""
        ns, name = _ns_name(job)
        spec_volumes = copy.deepcopy(raw["spec"].get("volumes") or [])
        names: dict[str, str] = {}
        changed = False
        for vol in spec_volumes:
            claim = vol.get("volumeClaimName")
            if not claim:
                while True:
                    claim = f"{name}-pvc-" + "".join(secrets.choice(string.digits + string.ascii_lowercase)
                                                     for _ in range(12))
                    if await self.client.get(PERSISTENT_VOLUME_CLAIMS.path(ns, claim)) is None:
                        break
                vol["volumeClaimName"] = claim
                changed = True
                if vol.get("volumeClaim") is not None:
                    await self._create(PERSISTENT_VOLUME_CLAIMS.path(ns), {
                        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                        "metadata": {"name": claim, "namespace": ns,
                                     "ownerReferences": [job_owner_reference(job)]},
                        "spec": vol["volumeClaim"]})
            elif await self.client.get(PERSISTENT_VOLUME_CLAIMS.path(ns, claim)) is None:
                message = f"pvc {claim} is not found, the job will be in the Pending state until the PVC is created"
                await self.event(job, "Warning", "PVCError", f"Failed to create PVC, err: {message}")
                raise SyncError(message)
            names[claim] = claim
        if changed:
            updated = await self.client.request("PUT", JOBS.path(ns, name),
                                                body={**raw, "spec": {**raw["spec"], "volumes": spec_volumes}})
            raw = {**updated, "status": raw.get("status")}
        return raw, names

    async def _admit(self, job: dict[str, Any]) -> bool:
        """What Volcano's validating webhook refuses gets a condition, a Warning Event and no pods."""
        problems = validate_job(job, self.queues.objects) + replica_problems(job)
        if not problems:
            return True
        message = volcano_message(problems)
        now = now_rfc3339()
        status = copy.deepcopy(job.get("status") or {})
        status["state"] = {"phase": js.FAILED, "reason": INVALID_REASON, "message": message,
                           "lastTransitionTime": now}
        status["conditions"] = js.append_condition(status.get("conditions") or [], {
            "status": js.FAILED, "type": "Invalid", "reason": INVALID_REASON, "message": message,
            "lastTransitionTime": now})
        ns, name = _ns_name(job)
        await self.write_status(ns, name, status)
        await self.event(job, "Warning", INVALID_REASON, message)
        return False

    def _job_pods(self, job: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        ns, name = _ns_name(job)
        uid = job["metadata"].get("uid")
        return {p["metadata"]["name"]: p for p in self.pods.indexed(("job", ns, name))
                if (_controller_ref(p, "Job") or {}).get("uid") == uid}

    async def carry_out(self, key: str, job: dict[str, Any], req: js.Request, out: js.Outcome) -> None:
        ns, name = _ns_name(job)
        for ev in out.events:
            await self.event(job, ev.type, ev.reason, ev.message)
        if out.delayed is not None:
            self._arm(key, out.delayed)
            return
        if out.action not in (js.SYNC_JOB, ""):
            self._cancel_after_action(key, out.action, req)
        for pod_name in out.delete_pods:
            path = PODS.path(ns, pod_name)
            try:  # the mark first: the deletion then reads as OutOfSync, not PodEvicted
                await self.client.request("PATCH", path, content_type=MERGE_PATCH,
                                          body={"metadata": {"annotations": {OUT_OF_SYNC_KEY: "true"}}})
            except ApiError as e:
                if e.status != 404:
                    raise
            await self._delete(path, self.pods, ns, pod_name)
        for obj in out.apply_objects:
            await self._apply(ns, obj)
        for kind, obj_name in out.delete_objects:
            await self._delete(_PLUGIN_KINDS[kind].path(ns, obj_name))
        if out.create_podgroup is not None:
            await self._create(PODGROUPS.path(ns), out.create_podgroup, self.podgroups)
        if out.update_podgroup is not None:
            await self._update_podgroup(ns, out.update_podgroup)
        for pod in out.create_pods:
            await self._create(PODS.path(ns), pod, self.pods)
        if out.write_status:
            await self.write_status(ns, name, out.status)
        if out.delete_podgroup:
            await self._delete(PODGROUPS.path(ns, podgroup_name(job)), self.podgroups, ns, podgroup_name(job))

    async def write_status(self, ns: str, name: str, status: dict[str, Any]) -> bool:
        """The stored Job (read from the API when not stored), skip when equal, PUT jobs/status with its
        resourceVersion; on 409 re-read from the API and retry."""
        path = JOBS.path(ns, name)
        current = self.jobs.get(ns, name)
        for attempt in range(self.options.conflict_retries):
            if current is None or attempt:
                current = await self.client.get(path)
            if current is None:
                return False
            if current.get("status") == status:
                return False
            body = {"apiVersion": JOB_API_VERSION, "kind": "Job",
                    "metadata": {"name": name, "namespace": ns,
                                 "resourceVersion": current["metadata"].get("resourceVersion")},
                    "status": status}
            try:
                self.jobs.observe(await self.client.request("PUT", JOBS.path(ns, name, "status"), body=body))
                return True
            except ApiError as e:
                if e.status != 409:
                    raise
        raise ApiError(409, f"Job {ns}/{name}: status write kept conflicting")

    async def _update_podgroup(self, ns: str, desired: dict[str, Any]) -> None:
        """PodGroup has no status subresource: PUT the current object with the new spec; re-read on 409."""
        path = PODGROUPS.path(ns, desired["metadata"]["name"])
        current = self.podgroups.get(ns, desired["metadata"]["name"])
        for attempt in range(self.options.conflict_retries):
            if current is None or attempt:
                current = await self.client.get(path)
            if current is None:
                return
            if current.get("spec") == desired.get("spec"):
                return
            try:
                self.podgroups.observe(await self.client.request("PUT", path,
                                                                 body={**current, "spec": desired.get("spec")}))
                return
            except ApiError as e:
                if e.status != 409:
                    raise
        raise ApiError(409, f"PodGroup {ns}/{desired['metadata']['name']}: update kept conflicting")

    async def _apply(self, ns: str, obj: dict[str, Any]) -> None:
        """A plugin object: created, or (the svc ConfigMap on OnJobUpdate) updated when its data differ."""
        kind = _PLUGIN_KINDS[obj["kind"]]
        try:
            await self.client.request("POST", kind.path(ns), body=obj)
            return
        except ApiError as e:
            if e.status != 409:
                raise
        if kind is not CONFIGMAPS:
            return
        path = kind.path(ns, obj["metadata"]["name"])
        current = await self.client.get(path)
        if current is not None and current.get("data") != obj.get("data"):
            await self.client.request("PUT", path, body={**current, "data": obj.get("data")})

    async def _create(self, path: str, obj: dict[str, Any], lister: Lister | None = None) -> None:
        try:
            created = await self.client.request("POST", path, body=obj)
            if lister is not None:
                lister.observe(created)
        except ApiError as e:
            if e.status != 409:  # AlreadyExists is ignored, as Volcano does
                raise

    async def _delete(self, path: str, lister: Lister | None = None, ns: str = "", name: str = "") -> None:
        try:
            gone = await self.client.request("DELETE", path)
        except ApiError as e:
            if e.status != 404:
                raise
            gone = None
        if lister is not None:
            lister.deleted(ns, name, gone)

    async def event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") or "default"  # a cluster-scoped object's (Queue) events go to default
        now = now_rfc3339()
        body = {"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": f"{meta.get('name')}.{uuid.uuid4().hex[:16]}", "namespace": ns},
                "involvedObject": {"apiVersion": obj.get("apiVersion") or JOB_API_VERSION,
                                   "kind": obj.get("kind") or "Job", "name": meta.get("name"),
                                   "uid": meta.get("uid", ""),
                                   **({"namespace": meta["namespace"]} if meta.get("namespace") else {})},
                "type": type_, "reason": reason, "message": message, "count": 1,
                "source": {"component": COMPONENT}, "reportingComponent": COMPONENT,
                "firstTimestamp": now, "lastTimestamp": now}
        try:
            await self.client.request("POST", EVENTS.path(ns), body=body)
        except ApiError as e:
            warn_unless_denied(log, "event not recorded", e, reason=reason, object=f"{ns}/{meta.get('name')}")

    # -- delayed actions ---------------------------------------------------------------------------

    def _arm(self, key: str, delayed: js.DelayedAction) -> None:
        timers = self._timers.setdefault(key, [])
        pod = delayed.request.pod_name
        if any(t.request.pod_name == pod and t.action == delayed.action for t in timers):
            return  # a second registration for the same pod and action is ignored
        timer = _Timer(delayed.action, delayed.request)
        timers.append(timer)
        timer.task = self._spawn(self._fire(key, timer, delayed.delay))

    async def _fire(self, key: str, timer: _Timer, delay: float) -> None:
        await asyncio.sleep(delay)
        timers = self._timers.get(key) or []
        if timer not in timers:
            return
        timers.remove(timer)
        await self.process(key, timer.request, action=timer.action)

    def _drop(self, key: str, keep) -> None:  # type: ignore[no-untyped-def]
        timers = self._timers.get(key) or []
        for t in [t for t in timers if not keep(t)]:
            timers.remove(t)
            if t.task is not None and t.task is not asyncio.current_task():
                t.task.cancel()

    def _cancel_timers(self, key: str, req: js.Request) -> None:
        """A PodPending delay ends with any other event of that pod; a PodFailed/PodEvicted delay when it runs."""
        if not req.pod_name:
            return

        def keep(t: _Timer) -> bool:
            if t.request.pod_name != req.pod_name:
                return True
            if t.request.event == js.POD_PENDING and req.event != js.POD_PENDING and t.request.pod_uid == req.pod_uid:
                return False
            return not (t.request.event in (js.POD_FAILED, js.POD_EVICTED) and req.event == js.POD_RUNNING)

        self._drop(key, keep)

    def _cancel_after_action(self, key: str, action: str, req: js.Request) -> None:
        if action in js.JOB_LEVEL_ACTIONS:
            self._drop(key, lambda t: t.action not in js.JOB_LEVEL_ACTIONS)
        elif action == js.RESTART_TASK:
            self._drop(key, lambda t: not (t.action == action and t.request.task == req.task))
        elif action in (js.RESTART_POD, js.RESTART_PARTITION):
            self._drop(key, lambda t: not (t.action == action and t.request.pod_name == req.pod_name))

    # -- garbage collection ------------------------------------------------------------------------

    def _arm_ttl(self, key: str, job: dict[str, Any]) -> None:
        """garbagecollector: a finished Job with ttlSecondsAfterFinished goes at lastTransitionTime + ttl."""
        old = self._ttl.pop(key, None)
        if old is not None and old is not asyncio.current_task():
            old.cancel()
        deadline = js.ttl_deadline(job, parse_rfc3339)
        if deadline is not None:
            self._ttl[key] = self._spawn(self._expire(key, job["metadata"].get("uid"), deadline - time.time()))

    async def _expire(self, key: str, uid: str, delay: float) -> None:
        if delay > 0:
            await asyncio.sleep(delay)
        ns, name = key.split("/", 1)
        try:  # foreground propagation, and only the Job we saw (a re-created one has another uid)
            await self.client.request("DELETE", JOBS.path(ns, name),
                                      body={"propagationPolicy": "Foreground", "preconditions": {"uid": uid}})
            log.info("finished job deleted (ttlSecondsAfterFinished)", job=key)
        except ApiError as e:
            if e.status not in (404, 409):
                warn_unless_denied(log, "TTL deletion failed", e, job=key)

    def _forget_job(self, key: str) -> None:
        self._jobs_seen.pop(key, None)
        self._locks.pop(key, None)
        self._drop(key, lambda t: False)
        self._timers.pop(key, None)
        ttl = self._ttl.pop(key, None)
        if ttl is not None and ttl is not asyncio.current_task():
            ttl.cancel()

    async def _collect_job(self, job: dict[str, Any]) -> None:
        """The Job is gone: its pods and PodGroup go too (what owner references make the cluster's GC do)."""
        ns, _ = _ns_name(job)
        for pod_name in self._job_pods(job):
            await self._delete(PODS.path(ns, pod_name), self.pods, ns, pod_name)
        await self._delete(PODGROUPS.path(ns, podgroup_name(job)), self.podgroups, ns, podgroup_name(job))

    # -- the PodGroup controller -------------------------------------------------------------------

    async def _retrying(self, what: str, fn) -> ApiError | None:  # type: ignore[no-untyped-def]
        """``fn()`` retried with backoff on API errors, up to ``max_requeue`` times; the last error if it
        never succeeded, else None."""
        o = self.options
        for attempt in range(o.max_requeue + 1):
            try:
                await fn()
                return None
            except ApiError as e:
                warn_unless_denied(log, "request failed", e, what=what, attempt=attempt)
                if attempt == o.max_requeue:
                    return e
                await asyncio.sleep(min(o.requeue_cap, o.requeue_base * 2 ** attempt))
        return None

    def podgroup_soon(self, pod: Mapping[str, Any]) -> None:
        """The scheduler in this process has predicted the bare pod's PodGroup (provisional.py), and its
        Binding waits for the create: made now, not when the controllers' own watch brings the pod (that
        event finds the create under way or done).  Before the informers have listed, the watch's event
        does it, as any handler."""
        if self.synced is not None and self.synced.is_set():
            self._spawn(self.podgroup_for_bare_pod(pod))

    async def podgroup_for_bare_pod(self, pod: Mapping[str, Any]) -> None:
        """``podgroup-<uid>`` for a pod with schedulerName volcano and no group; the pod is annotated."""
        if not needs_podgroup(pod, self.options.scheduler_names):
            return
        uid = (pod.get("metadata") or {}).get("uid") or ""
        if self.handoff is not None and self.handoff.owes_group(uid):
            return  # handed over already (this is a relist's or a restarted watch's ADDED)
        if uid in self._bare_making:
            return  # under way (podgroup_soon, then the watch's ADDED)
        self._bare_making.add(uid)
        try:
            async with self._podgroup_slots:
                failed = await self._retrying(f"PodGroup for pod {'/'.join(_ns_name(pod))}",
                                              lambda: self._create_pod_group(pod))
        finally:
            self._bare_making.discard(uid)
        not_made = getattr(self.handoff, "group_not_made", None)
        if failed is not None and not_made is not None:
            not_made(pod)  # a prediction of it (provisional.py) must not be bound

    async def _create_pod_group(self, pod: Mapping[str, Any], update: bool = False) -> None:
        """createNormalPodPGIfNotExist (a pod added), or with ``update`` createOrUpdateNormalPodPG (a
        workload added or updated: an existing PodGroup follows the owner's annotations)."""
        ns, name = _ns_name(pod)
        pg_name = bare_podgroup_name(pod)
        existing = self.podgroups.get(ns, pg_name)
        if existing is None or update:  # else made for the owner's other pods: the annotation only
            owners = await self._owner_annotations(pod) if self.options.inherit_owner_annotations else None
            pg = podgroup_for_pod(pod, owners)
            pg["metadata"].pop("uid", None)
            pg["metadata"].pop("creationTimestamp", None)
            if existing is None:
                await self._create(PODGROUPS.path(ns), pg, self.podgroups)
            else:
                changed = podgroup_update(existing, pg)
                if changed is not None:  # with the stored resourceVersion: a 409 is retried after a re-read
                    try:
                        self.podgroups.observe(await self.client.request("PUT", PODGROUPS.path(ns, pg_name),
                                                                         body=changed))
                    except ApiError as e:
                        if e.status == 409:
                            self.podgroups.observe(await self.client.get(PODGROUPS.path(ns, pg_name)))
                        raise
        stored = self.podgroups.get(ns, pg_name)
        if self.handoff is not None and stored is not None and self.handoff.give_group(pod, stored):
            return  # the scheduler in this process owes the annotation now
        try:
            await self.client.request("PATCH", PODS.path(ns, name), content_type=STRATEGIC_MERGE_PATCH,
                                      body={"metadata": {"annotations": {GROUP_NAME_ANNOTATION: pg_name}}})
        except ApiError as e:
            if e.status != 404:
                raise

    async def on_workload(self, type: str | None, body: Mapping[str, Any], **_: Any) -> None:
        """addReplicaSet / addStatefulSet (and their updates): scaled to 0, the PodGroup goes; else the
        PodGroup of its first pod (of the current revision) is made or brought up to date."""
        if type == "DELETED":
            return  # the PodGroup is owned by the workload: the cluster's garbage collector takes it
        workload = _plain(body)
        ns, name = _ns_name(workload)
        uid = workload["metadata"].get("uid")
        if workload_replicas(workload) == 0:
            if self.podgroups.get(ns, f"podgroup-{uid}") is not None:
                await self._retrying(f"delete PodGroup of {workload.get('kind')} {ns}/{name}", lambda: self._delete(
                    PODGROUPS.path(ns, f"podgroup-{uid}"), self.podgroups, ns, f"podgroup-{uid}"))
            return
        # its pods by their controlling owner, then Volcano's label match (Volcano lists by labels alone)
        pod = first_pod(self.pods.indexed(("owner", uid)), workload_selector(workload))
        if pod is None or not needs_podgroup(pod, self.options.scheduler_names):
            return
        await self._retrying(f"PodGroup for {workload.get('kind')} {ns}/{name}",
                             lambda: self._create_pod_group(pod, update=True))

    async def _owner_annotations(self, pod: Mapping[str, Any]) -> dict[str, str]:
        """getAnnotationsFromUpperRes: each owner read from the API (not watched: a pod's owners are read
        once per PodGroup); one that cannot be read is left out, as Volcano does."""
        ns, _ = _ns_name(pod)
        found = []
        for group, kind, name in owner_references(pod):
            stored = self.workloads.get(kind) if group == "apps" else None
            try:  # ReplicaSets and StatefulSets are watched; DaemonSets and batch Jobs read when needed
                owner = stored.get(ns, name) if stored is not None and stored.get(ns, name) is not None else \
                    await self.client.get(_OWNER_KINDS[(group, kind)].path(ns, name))
            except ApiError as e:
                warn_unless_denied(log, "pod owner not read", e, pod="/".join(_ns_name(pod)), owner=f"{kind}/{name}")
                continue
            if owner is not None:
                found.append((owner.get("metadata") or {}).get("annotations"))
        return merge_owner_annotations(found)
