"""The Kubernetes sink: a session's effects as API writes (cache.go · Bind, Evict, UpdateJobStatus).

- Bind: POST pods/{name}/binding, a v1 Binding whose metadata.annotations are the
  Bind effect's annotations (spec/devices.md §1.3).  Binds run in the background,
  at most ``bind_workers`` at once; the pod is assumed on its node in the cache
  at dispatch.  429, 5xx and timeouts are retried with backoff; 409 means the pod
  is bound already (by us, on a retry whose first answer was lost, or by someone
  else): the pod is re-read, never bound again.  A bind that fails for good
  writes PodScheduled=False/SchedulerError and FailedScheduling, and the task is
  pending again in the cache, its devices free.
- PodGroup status: a merge PATCH of the object (Volcano's CRD has no status subresource).
- Queue status: a merge PATCH of queues/{name}/status.
- PodScheduled=False and nominatedNodeName: a strategic merge PATCH of pods/{name}/status,
  only when they changed, with a FailedScheduling event then.
- Evict: the pod is Releasing in the cache at once (cache.go · Evict); a Warning Evict event,
  Ready=False and DisruptionTarget on the pod, then DELETE (uid precondition).  A failed
  eviction gives the cache the pod as the API last showed it.
- Events: v1 Events from component ``volcano``; a repeat is a PATCH of count and lastTimestamp,
  as client-go's event correlator does.
Every status write answers with the object, which goes straight into the cache.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from typing import Any

import structlog

from ..framework.effects import Bind, Effect, Event, Evict, NodeLock, PodCondition, PodGroupStatus, QueueStatus
from .api import EVENTS, MERGE_PATCH, NODES, PODGROUPS, PODS, QUEUES, STRATEGIC_MERGE_PATCH, ApiError, KubeClient
from ..metrics import Metrics
from .source import Assumed, Backoff, CacheFeeder, creation_time

log = structlog.get_logger("vcsched.kube.sink")

EVENT_CACHE = 4096
KIND_API_VERSION = {"Pod": "v1", "PodGroup": "scheduling.volcano.sh/v1beta1", "ConfigMap": "v1"}


def rfc3339(ts: float | None = None, micro: bool = False) -> str:
    t = datetime.fromtimestamp(time.time() if ts is None else ts, timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def _condition_out(c: dict[str, Any]) -> dict[str, Any]:
    out = dict(c)
    for k in ("lastTransitionTime", "lastProbeTime"):
        if isinstance(out.get(k), (int, float)):
            out[k] = rfc3339(out[k])
    return out


class Retry:
    """How often and how patiently to retry a retriable API error."""

    def __init__(self, attempts: int = 5, base: float = 0.1, cap: float = 5.0) -> None:
        self.attempts = attempts
        self.base = base
        self.cap = cap

    async def call(self, fn: Callable[[], Awaitable[Any]], what: str) -> Any:
        backoff = Backoff(self.base, self.cap)
        for attempt in range(1, self.attempts + 1):
            try:
                return await fn()
            except ApiError as e:
                if not e.retriable or attempt == self.attempts:
                    raise
                delay = backoff.next()
                log.info("retrying", what=what, error=str(e), attempt=attempt, retry_in=round(delay, 3))
                await asyncio.sleep(delay)


class EventRecorder:
    """v1 Events as Volcano's recorder writes them; repeats patch count and lastTimestamp."""

    def __init__(self, client: KubeClient, component: str, host: str = "") -> None:
        self.client = client
        self.component = component
        self.host = host
        self._seen: OrderedDict[tuple[str, ...], tuple[str, int]] = OrderedDict()

    async def record(self, kind: str, namespace: str, name: str, uid: str, type_: str, reason: str,
                     message: str) -> None:
        key = (kind, namespace, name, uid, type_, reason, message)
        now = rfc3339()
        seen = self._seen.get(key)
        try:
            if seen is not None:
                ev_name, count = seen
                await self.client.request("PATCH", EVENTS.path(namespace, ev_name), content_type=MERGE_PATCH,
                                          body={"count": count + 1, "lastTimestamp": now})
                self._seen[key] = (ev_name, count + 1)
                self._seen.move_to_end(key)
                return
        except ApiError as e:
            if e.status != 404:
                log.warning("event not recorded", reason=reason, object=f"{namespace}/{name}", error=str(e))
                return
            # the event expired on the server: write a new one
        ev_name = f"{name}.{uuid.uuid4().hex[:16]}"
        body = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": ev_name, "namespace": namespace},
            "involvedObject": {"kind": kind, "namespace": namespace, "name": name, "uid": uid,
                               "apiVersion": KIND_API_VERSION.get(kind, "v1")},
            "reason": reason, "message": message, "type": type_,
            "source": {"component": self.component, **({"host": self.host} if self.host else {})},
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
            "reportingComponent": self.component, "reportingInstance": self.host,
        }
        try:
            await self.client.request("POST", EVENTS.path(namespace), body=body)
        except ApiError as e:
            log.warning("event not recorded", reason=reason, object=f"{namespace}/{name}", error=str(e))
            return
        self._seen[key] = (ev_name, 1)
        if len(self._seen) > EVENT_CACHE:
            self._seen.popitem(last=False)


class KubeSink:
    def __init__(self, client: KubeClient, feeder: CacheFeeder, *, scheduler_name: str = "volcano",
                 bind_workers: int = 32, status_workers: int = 16, retry: Retry | None = None,
                 metrics: Metrics | None = None) -> None:
        self.client = client
        self.metrics = metrics or Metrics()
        self.feeder = feeder
        self.scheduler_name = scheduler_name
        self.retry = retry or Retry()
        self.events = EventRecorder(client, scheduler_name)
        self._bind_slots = asyncio.Semaphore(bind_workers)
        self._status_slots = asyncio.Semaphore(status_workers)
        self._binds: set[asyncio.Task[None]] = set()
        self.bound = 0
        self.bind_failures = 0

    # -- the session's effects -------------------------------------------------------------

    async def apply(self, effects: list[Effect]) -> None:
        """Dispatch binds (background) and carry out every other effect before returning."""
        writes = []
        unlocked: str | None = None  # the node whose lock was just refused: its Bind does not go out
        for e in effects:
            if isinstance(e, NodeLock):
                # awaited: the lock is on the node before the next Bind goes out
                unlocked = None if await self._node_lock(e) else e.node
            elif isinstance(e, Bind) and e.node == unlocked:
                # Volcano's Allocate fails when LockNode does: the pod stays pending for the next session
                unlocked = None
                await self.events.record("Pod", e.namespace, e.name, e.uid, "Warning", "FailedScheduling",
                                         f"failed to lock node {e.node}; the pod stays pending")
            elif isinstance(e, Bind):
                mine = self.feeder.assume(e.uid, e.node, e.annotations)
                if mine is not None:  # statement.go · allocate: the task is assumed on its node
                    self.metrics.task_stage("Assumed", creation_time(self.feeder.pods[e.uid]), time.time())
                task = asyncio.create_task(self._bind(e, mine))
                self._binds.add(task)
                task.add_done_callback(self._binds.discard)
            else:
                if isinstance(e, Evict):
                    self.feeder.evict(e.uid)
                writes.append(self._bounded(e))
        if writes:
            await asyncio.gather(*writes)

    @property
    def binds_in_flight(self) -> int:
        return len(self._binds)

    async def drain(self, timeout: float | None = None) -> bool:
        """Wait for the binds in flight (at most ``timeout`` seconds); whether they all finished."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while self._binds:
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                return False
            await asyncio.wait(list(self._binds), timeout=left)
        return True

    async def cancel(self) -> None:
        for t in list(self._binds):
            t.cancel()
        await asyncio.gather(*list(self._binds), return_exceptions=True)

    async def _bounded(self, e: Effect) -> None:
        async with self._status_slots:
            try:
                if isinstance(e, PodGroupStatus):
                    await self._podgroup_status(e)
                elif isinstance(e, QueueStatus):
                    await self._queue_status(e)
                elif isinstance(e, PodCondition):
                    await self._pod_condition(e)
                elif isinstance(e, Event):
                    uid = self._uid(e.kind, e.namespace, e.name)
                    await self.events.record(e.kind, e.namespace, e.name, uid, e.type, e.reason, e.message)
                elif isinstance(e, Evict):
                    try:
                        await self._evict(e)
                    except ApiError:
                        self.feeder.evict_failed(e.uid)
                        raise
            except ApiError as err:
                log.warning("write failed", effect=type(e).__name__, error=str(err),
                            object=f"{getattr(e, 'namespace', '')}/{e.name}".lstrip("/"))

    def _uid(self, kind: str, namespace: str, name: str) -> str:
        if kind == "Pod":
            return self.feeder.uid_of(namespace, name) or ""
        if kind == "PodGroup":
            job = self.feeder.cache.jobs.get(f"{namespace}/{name}")
            return job.podgroup.uid if job is not None and job.podgroup is not None else ""
        return ""

    # -- bind ----------------------------------------------------------------------------------

    async def _bind(self, e: Bind, mine: Assumed | None) -> None:
        started = time.perf_counter()
        body = {
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": e.name, "namespace": e.namespace, "uid": e.uid, "annotations": dict(e.annotations)},
            "target": {"apiVersion": "v1", "kind": "Node", "name": e.node},
        }
        path = PODS.path(e.namespace, e.name, "binding")
        async with self._bind_slots:
            sent = time.perf_counter()
            try:
                await self.retry.call(lambda: self.client.request("POST", path, body=body), f"bind {e.namespace}/{e.name}")
            except ApiError as err:
                if err.status == 409:
                    # bound already: never bind twice; take the API's word for where it runs
                    log.info("pod already bound", pod=f"{e.namespace}/{e.name}", node=e.node, error=str(err))
                    await self._resync(e, mine)
                    return
                self.bind_failures += 1
                log.warning("bind failed", pod=f"{e.namespace}/{e.name}", node=e.node, error=str(err))
                self.feeder.forget(e.uid, mine)
                msg = f"failed to bind to node {e.node}: {err}"
                await self._write_condition(e.namespace, e.name, "SchedulerError", msg, "")
                await self.events.record("Pod", e.namespace, e.name, e.uid, "Warning", "FailedScheduling", msg)
                await self._resync(e, mine)
                return
        self.bound += 1
        # DefaultBinder.Bind: the Bind stage (the API call, its retries included) and creation → Bound
        self.metrics.scheduling_stage("Bind", time.perf_counter() - sent)
        pod = self.feeder.pods.get(e.uid)
        if pod is not None:
            self.metrics.task_stage("Bound", creation_time(pod), time.time())
        log.debug("bound", pod=f"{e.namespace}/{e.name}", node=e.node, seconds=round(time.perf_counter() - started, 4))
        await self.events.record("Pod", e.namespace, e.name, e.uid, "Normal", "Scheduled",
                                 f"Successfully assigned {e.namespace}/{e.name} to {e.node}")

    async def _resync(self, e: Bind, mine: Assumed | None) -> None:
        """Re-read the pod (cache.go · resyncTask) so the cache holds what the API holds.

        Only this bind's own assumption is dropped: once a failed bind has forgotten the pod, a
        later session may have dispatched it again, and that newer bind's assumption must stand."""
        try:
            pod = await self.retry.call(lambda: self.client.request("GET", PODS.path(e.namespace, e.name)),
                                        f"get {e.namespace}/{e.name}")
        except ApiError as err:
            if err.status == 404:
                self.feeder.settle(e.uid, mine)  # gone: its DELETED event removes it
                return
            log.warning("resync failed; the watch will correct the pod", pod=f"{e.namespace}/{e.name}", error=str(err))
            self.feeder.forget(e.uid, mine)
            return
        self.feeder.settle(e.uid, mine)
        self.feeder.pod(pod)

    async def _node_lock(self, e: NodeLock) -> bool:
        """deviceshare NodeLockEnable: the lock annotation, as Volcano's LockNode writes it (spec §4.5).
        Whether the node is locked now."""
        body = {"metadata": {"annotations": {e.key: e.value}}}
        try:
            obj = await self._patch(NODES.path(None, e.node), body, MERGE_PATCH, f"node lock {e.node} {e.key}")
        except ApiError as err:
            log.warning("node lock failed; not binding there", node=e.node, lock=e.key, error=str(err))
            return False
        if obj.get("metadata"):
            self.feeder.cache.update_node(obj)  # the next session sees the lock without waiting for the watch
        return True

    # -- status writes ---------------------------------------------------------------------------

    async def _patch(self, path: str, body: dict[str, Any], content_type: str, what: str) -> dict[str, Any]:
        """A PATCH, retried on 429/5xx/timeouts; a 409 re-reads the object and tries again once."""
        try:
            return await self.retry.call(lambda: self.client.request("PATCH", path, body=body,
                                                                     content_type=content_type), what)
        except ApiError as err:
            if err.status != 409:
                raise
            log.info("conflict, re-reading", what=what)
            await self.retry.call(lambda: self.client.request("GET", path), what)
            return await self.retry.call(lambda: self.client.request("PATCH", path, body=body,
                                                                     content_type=content_type), what)

    async def _podgroup_status(self, e: PodGroupStatus) -> None:
        status = {"phase": e.phase, "running": e.running, "succeeded": e.succeeded, "failed": e.failed,
                  "conditions": [_condition_out(c) for c in e.conditions]}
        obj = await self._patch(PODGROUPS.path(e.namespace, e.name), {"status": status}, MERGE_PATCH,
                                f"podgroup {e.namespace}/{e.name}")
        if obj.get("metadata"):
            self.feeder.cache.update_podgroup(obj)

    async def _queue_status(self, e: QueueStatus) -> None:
        obj = await self._patch(QUEUES.path(None, e.name, "status"), {"status": {"allocated": e.allocated}},
                                MERGE_PATCH, f"queue {e.name}")
        if obj.get("metadata"):
            self.feeder.cache.update_queue(obj)

    async def _pod_condition(self, e: PodCondition) -> None:
        uid = self.feeder.uid_of(e.namespace, e.name)
        pod = self.feeder.pods.get(uid) if uid else None
        if pod is None or uid in self.feeder.assumed or (pod.get("spec") or {}).get("nodeName"):
            return
        status = pod.get("status") or {}
        old = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
        same = old is not None and (old.get("status"), old.get("reason"), old.get("message")) == (
            "False", e.reason, e.message)
        nominated_changed = bool(e.nominated_node) and status.get("nominatedNodeName") != e.nominated_node
        if same and not nominated_changed:
            return  # Volcano writes and records only a change
        await self._write_condition(e.namespace, e.name, e.reason, e.message, e.nominated_node)
        await self.events.record("Pod", e.namespace, e.name, uid, "Warning", "FailedScheduling", e.message)

    async def _write_condition(self, namespace: str, name: str, reason: str, message: str, nominated: str) -> None:
        cond = {"type": "PodScheduled", "status": "False", "reason": reason, "message": message,
                "lastProbeTime": None, "lastTransitionTime": rfc3339()}
        body: dict[str, Any] = {"status": {"conditions": [cond]}}
        if nominated:
            body["status"]["nominatedNodeName"] = nominated
        try:
            obj = await self._patch(PODS.path(namespace, name, "status"), body, STRATEGIC_MERGE_PATCH,
                                    f"pod status {namespace}/{name}")
        except ApiError as err:
            log.warning("pod condition not written", pod=f"{namespace}/{name}", error=str(err))
            return
        if obj.get("metadata"):
            self.feeder.pod(obj)

    # -- evict -------------------------------------------------------------------------------------

    async def _evict(self, e: Evict) -> None:
        """defaultEvictor.Evict: conditions, a Warning event, then the DELETE."""
        msg = f"Pod is evicted, because of {e.reason}"
        pod = self.feeder.pods.get(e.uid)
        ready = next((c for c in ((pod or {}).get("status") or {}).get("conditions") or []
                      if c.get("type") == "Ready"), None)
        if ready is not None and (ready.get("status"), ready.get("reason"), ready.get("message")) == (
                "False", "Evict", msg):
            return  # already being evicted
        await self.events.record("Pod", e.namespace, e.name, e.uid, "Warning", "Evict", msg)
        now = rfc3339()
        conds = [
            {"type": "Ready", "status": "False", "reason": "Evict", "message": msg, "lastTransitionTime": now},
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
             "message": f"{self.scheduler_name}: preempting to accommodate a higher priority pod",
             "lastTransitionTime": now},
        ]
        try:
            await self._patch(PODS.path(e.namespace, e.name, "status"), {"status": {"conditions": conds}},
                              STRATEGIC_MERGE_PATCH, f"pod status {e.namespace}/{e.name}")
        except ApiError as err:
            if err.status == 404:
                return  # gone already
            raise
        try:
            await self.retry.call(lambda: self.client.request(
                "DELETE", PODS.path(e.namespace, e.name),
                body={"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": e.uid}}),
                f"delete {e.namespace}/{e.name}")
        except ApiError as err:
            if err.status not in (404, 409):  # gone already, or another pod of that name
                raise
