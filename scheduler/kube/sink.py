"""The Kubernetes sink: a session's effects as API writes (cache.go · Bind, Evict, UpdateJobStatus).

- Bind: POST pods/{name}/binding, a v1 Binding whose metadata.annotations are the
  Bind effect's annotations (spec/devices.md §1.3).  Binds run in the background,
  at most ``bind_workers`` at once; a freed slot goes first to the binds of jobs a session
  placed at most EXPRESS_BINDS pods of, so that a single pod is not queued behind the thousands
  of a gang placed a moment before (BindSlots); the pod is assumed on its node in the cache
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
Every status write answers with the object, which goes straight into the cache.  The machinery of the
background writes (Retry, EventRecorder, Writes) is in scheduler/kube/writers.py.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import functools
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import structlog

from ..framework.effects import (
    Bind,
    ClaimStatus,
    Effect,
    Event,
    Evict,
    NodeLock,
    PodCondition,
    PodGroupStatus,
    QueueStatus,
)
from .api import (MERGE_PATCH, NODES, PODGROUPS, PODS, QUEUES, RESOURCE_CLAIMS, STRATEGIC_MERGE_PATCH, ApiError,
                  KubeClient, warn_unless_denied)
from ..metrics import Metrics
from ..api.types import GROUP_NAME_ANNOTATION
from .source import Assumed, CacheFeeder, OwedGroup, creation_time, podgroup_status_out, rfc3339
from .writers import EventRecorder, Retry, Writes

log = structlog.get_logger("vcsched.kube.sink")


class ClaimChanged(Exception):
    """A claim is no longer as the session saw it (allocated elsewhere, made again): the pod waits."""

def _object_key(e: Effect) -> tuple[str, ...]:
    """The object an effect writes: its writes are serialized (``Writes``)."""
    if isinstance(e, PodGroupStatus):
        return ("PodGroup", e.namespace, e.name)
    if isinstance(e, QueueStatus):
        return ("Queue", e.name)
    if isinstance(e, PodCondition):  # a pending pod's: never one being evicted, which is bound
        return ("PodCondition", e.namespace, e.name)
    if isinstance(e, Evict):
        return ("Pod", e.namespace, e.name)
    raise TypeError(f"not a background write: {type(e).__name__}")


# a job with at most this many binds in a session's effects is served first when a bind slot frees
EXPRESS_BINDS = 16
# how long a session's status writes and events wait for its express binds' answers (_send_after)
SENDS_WAIT = 0.05
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"


class BindSlots:
    """At most ``n`` binds on the wire.  A freed slot goes to the longest-waiting express bind, else
    to the longest-waiting other one (each lane first come, first served).  A bind of the other lane
    that finds no slot free need not be a task while it waits: ``hold`` queues a starter, called with
    the slot when its turn comes, so a gang's thousands of binds cost the loop nothing until each goes
    out (a task apiece, started at once, took it 25 µs each before the next cycle could begin)."""

    def __init__(self, n: int) -> None:
        self.free = n
        # (express, other): futures of binds waiting for a slot; the other lane holds starters too
        self._waiting: tuple[collections.deque, collections.deque] = (collections.deque(), collections.deque())
        self.held = 0  # starters waiting

    @contextlib.asynccontextmanager
    async def lane(self, express: bool, given: bool = False) -> AsyncIterator[None]:
        """A slot for the block; ``given``: the bind was started with one (``hold``)."""
        if not given:
            await self._acquire(express)
        try:
            yield
        finally:
            self._release()

    def hold(self, starter: functools.partial[None]) -> None:
        """``starter()`` with a slot: now when one is free and no bind waits, else in the other lane's turn."""
        if self.free > 0 and not self._waiting[0] and not self._waiting[1]:
            self.free -= 1
            starter()
            return
        self._waiting[1].append(starter)
        self.held += 1

    def drop_held(self) -> list[functools.partial[None]]:
        """The starters still waiting, taken out (shutdown: their binds never go out)."""
        other = self._waiting[1]
        starters = [w for w in other if not isinstance(w, asyncio.Future)]
        if starters:
            self._waiting = (self._waiting[0], collections.deque(w for w in other if isinstance(w, asyncio.Future)))
            self.held = 0
        return starters

    async def _acquire(self, express: bool) -> None:
        if self.free > 0 and not self._waiting[0] and not self._waiting[1]:
            self.free -= 1
            return
        slot = asyncio.get_running_loop().create_future()
        self._waiting[0 if express else 1].append(slot)
        try:
            await slot
        except asyncio.CancelledError:
            if slot.done() and not slot.cancelled():
                self._release()  # handed a slot as it was cancelled: pass it on
            else:
                with contextlib.suppress(ValueError):  # gone already if a release passed it over
                    self._waiting[0 if express else 1].remove(slot)
            raise

    def _release(self) -> None:
        for waiting in self._waiting:
            while waiting:
                slot = waiting.popleft()
                if not isinstance(slot, asyncio.Future):
                    self.held -= 1
                    slot()  # a held bind starts with the slot
                    return
                if not slot.done():
                    slot.set_result(None)
                    return
        self.free += 1


class KubeSink:
    def __init__(self, client: KubeClient, feeder: CacheFeeder, *, scheduler_name: str = "volcano",
                 bind_workers: int = 32, status_workers: int = 16, retry: Retry | None = None,
                 metrics: Metrics | None = None, status_spacing: float = 0.0) -> None:
        self.client = client
        self.metrics = metrics or Metrics()
        self.feeder = feeder
        self.scheduler_name = scheduler_name
        self.retry = retry or Retry()
        self.events = EventRecorder(client, scheduler_name)
        self._bind_slots = BindSlots(bind_workers)
        # what Volcano's one session per period writes at most once a period, whatever the cycles:
        # a queue's status.allocated (it changes with every pod placed) and a pending pod's condition
        # (a gang's message counts its members, which change with every one created)
        self.writes = Writes(status_workers, {"Queue": status_spacing, "PodCondition": status_spacing})
        self._binds: set[asyncio.Task[None]] = set()
        self._sending: set[asyncio.Task[None]] = set()  # writes and events waiting for binds (_send_after)
        self._last_sends: asyncio.Task[None] | None = None
        self._claim_locks: dict[str, list] = {}  # claim key -> [lock, binds waiting on it]
        self.bound = 0
        self.bind_failures = 0
        self.closing = False  # shutting down: a Bind still waiting for a slot is not sent
        self._closed = asyncio.Event()

    # -- the session's effects -------------------------------------------------------------

    async def apply(self, effects: list[Effect]) -> None:
        """Dispatch the effects: binds, status writes, evictions and events go out in the background;
        only node locks are awaited, as the Bind after one must find the lock in place.

        What the next session must see is in the cache at once: a bound pod assumed on its node, an
        evicted pod Releasing, a PodGroup's new status.  The status writes and events go out once the
        binds of the session's few-pod jobs have been answered (``_send_after``)."""
        unlocked: str | None = None  # the node whose lock was just refused: its Bind does not go out
        express: list[asyncio.Task[None]] = []
        sends: list[Callable[[], None]] = []
        binds_per_job: dict[str, int] = {}
        for e in effects:
            if isinstance(e, Bind):
                job = self._job_of(e)
                binds_per_job[job] = binds_per_job.get(job, 0) + 1
        for e in effects:
            if isinstance(e, NodeLock):
                # awaited: the lock is on the node before the next Bind goes out
                unlocked = None if await self._node_lock(e) else e.node
            elif isinstance(e, Bind) and e.node == unlocked:
                # Volcano's Allocate fails when LockNode does: the pod stays pending for the next session
                unlocked = None
                self.events.emit("Pod", e.namespace, e.name, e.uid, "Warning", "FailedScheduling",
                                 f"failed to lock node {e.node}; the pod stays pending")
            elif isinstance(e, Bind):
                lane = binds_per_job[self._job_of(e)] <= EXPRESS_BINDS
                owed = self.feeder.group_annotation(e.uid)
                if owed:  # the pod's group annotation, owed by the controller in this process, goes with it
                    e = dataclasses.replace(e, annotations={**owed, **e.annotations})
                mine = self.feeder.assume(e.uid, e.node, e.annotations)
                for st in e.claims:  # DRA's PreBind: the claims' new status, seen by the next session at once
                    self.feeder.cache.dra.assume_claim_status(f"{st.namespace}/{st.name}", st.allocation,
                                                              list(st.reserved_for))
                if mine is not None:  # statement.go · allocate: the task is assumed on its node
                    self.metrics.task_stage("Assumed", creation_time(self.feeder.pods[e.uid]), time.time())
                made = self._group_made(e.uid)
                if lane or made is not None:
                    task = self._start_bind(self._bind(e, mine, made, lane))
                    if lane:
                        express.append(task)
                else:  # a bind of a big job, which nothing else waits for: a task once it has a slot
                    self._bind_slots.hold(functools.partial(self._start_held, e, mine))
            elif isinstance(e, Event):
                made = self._podgroup_made(e.namespace, e.name) if e.kind == "PodGroup" else None
                if made is not None:  # about a predicted PodGroup: once the API holds it
                    sends.append(functools.partial(self._after, made, functools.partial(self._emit, e)))
                else:
                    sends.append(functools.partial(self._emit, e))
            elif isinstance(e, Evict):
                self.feeder.evict(e.uid)
                self.writes.submit(_object_key(e), e, self._write)
            elif isinstance(e, PodCondition):
                sends.append(functools.partial(self._condition, e))
            elif isinstance(e, PodGroupStatus):
                write = functools.partial(self._submit_status, e, self.feeder.ask_podgroup_status(e))
                made = self._podgroup_made(e.namespace, e.name)
                if made is not None:  # a predicted PodGroup's status: written once the API holds it
                    write = functools.partial(self._after, made, write)
                sends.append(write)
            else:
                sends.append(functools.partial(self.writes.submit, _object_key(e), e, self._write))
        self._send_after(express, sends)

    def _submit_status(self, e: PodGroupStatus, asked: dict[str, Any]) -> None:
        """The write of PodGroup status ``asked``, unless a later session has asked for another since.
        Writes keeps the last status submitted for an object, so submissions must come in the order the
        sessions asked: a status that waited for its predicted PodGroup's create (``_after``) can come
        after the next session's, asked once the create had answered and submitted at once.  Submitted
        then, it would replace the later one, and the API would keep the earlier status while the cache
        shows the later one, which no session then writes again."""
        if self.feeder.asked_status.get(f"{e.namespace}/{e.name}") is asked:
            self.writes.submit(_object_key(e), e, self._write)

    def _start_bind(self, bind: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.create_task(bind)
        self._binds.add(task)
        task.add_done_callback(self._binds.discard)
        return task

    def _start_held(self, e: Bind, mine: Assumed | None) -> None:
        """A held bind's turn (BindSlots.hold): it goes out with the slot it is given."""
        self._start_bind(self._bind(e, mine, given=True))

    def _send_after(self, binds: list[asyncio.Task[None]], sends: list[Callable[[], None]]) -> None:
        """``send()`` each of ``sends`` once ``binds`` have been answered (at most SENDS_WAIT seconds),
        and after every earlier session's sends.  A pod's wait ends with its Binding; its PodGroup's
        status, the queue's and the events can wait a round trip, rather than have the API server (and,
        on a small machine, the cores it shares with this process) serve them in the Binding's stead.
        Sessions' sends never overtake one another: a later status of an object always replaces an
        earlier one (Writes keeps the last asked for), never the other way round."""
        prior = self._last_sends if self._last_sends is not None and not self._last_sends.done() else None
        if not sends:
            return
        if not binds and prior is None:
            for send in sends:
                send()
            return

        async def when_answered() -> None:
            if binds:
                await asyncio.wait(binds, timeout=SENDS_WAIT)
            if prior is not None:
                await asyncio.wait([prior])
            for send in sends:
                send()

        task = self._last_sends = asyncio.create_task(when_answered())
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    def _job_of(self, e: Bind) -> str:
        """The PodGroup a bound pod belongs to (its own uid for a pod without one)."""
        pod = self.feeder.pods.get(e.uid)
        annotations = ((pod or {}).get("metadata") or {}).get("annotations") or {}
        group = annotations.get(GROUP_ANNOTATION) or e.annotations.get(GROUP_ANNOTATION)
        return f"{e.namespace}/{group}" if group else e.uid

    # -- predicted PodGroups (provisional.py): their writes wait until the controller has made them ----

    def _group_made(self, uid: str) -> asyncio.Future[bool] | None:
        p = self.feeder.provisional
        return None if p is None else p.waiting(uid)

    def _podgroup_made(self, namespace: str, name: str) -> asyncio.Future[bool] | None:
        p = self.feeder.provisional
        return None if p is None else p.group_waiting(namespace, name)

    def _after(self, made: asyncio.Future[bool], then: Callable[[], None]) -> None:
        """``then()`` once ``made`` is True; nothing when it is False (the next session decides again)."""
        made.add_done_callback(lambda f: then() if not f.cancelled() and f.result() else None)

    def _emit(self, e: Event) -> None:
        uid = self._uid(e.kind, e.namespace, e.name)
        self.events.emit(e.kind, e.namespace, e.name, uid, e.type, e.reason, e.message)

    def annotate_due(self, generation: int) -> None:
        """The group annotations owed for pods that the session of snapshot ``generation`` did not bind:
        the podgroup controller's PATCH, in the background."""
        for uid, owed in self.feeder.due_groups(generation):
            owed.sent = True
            self.writes.submit(("PodGroupName", owed.namespace, owed.name), (uid, owed), self._annotate)

    async def _annotate(self, item: tuple[str, OwedGroup]) -> None:
        """updatePodAnnotations; the uid in the patch makes it fail (422) on another pod of that name."""
        uid, owed = item
        body = {"metadata": {"uid": uid, "annotations": {GROUP_NAME_ANNOTATION: owed.podgroup}}}
        try:
            await self._patch(PODS.path(owed.namespace, owed.name), body, STRATEGIC_MERGE_PATCH,
                              f"pod {owed.namespace}/{owed.name} group annotation")
        except ApiError as err:
            if err.status in (404, 422):  # gone, or made again under its name
                if self.feeder.owed.get(uid) is owed:
                    del self.feeder.owed[uid]
                return
            owed.sent = False  # the next session's end tries again
            warn_unless_denied(log, "pod group annotation not written", err, pod=f"{owed.namespace}/{owed.name}",
                               podgroup=owed.podgroup)

    @property
    def binds_in_flight(self) -> int:
        return len(self._binds) + self._bind_slots.held

    @property
    def writes_in_flight(self) -> int:
        return len(self.writes)

    def close_binds(self) -> None:
        """From now on a Bind that has not gone out yet stays unsent (its pod pending); those on the wire
        finish.  Shutdown waits only for these, so a backlog of decided pods does not hold the Lease."""
        self.closing = True
        self._closed.set()
        for starter in self._bind_slots.drop_held():  # never sent: pending for whoever schedules next
            e, mine = starter.args
            self.feeder.forget(e.uid, mine)

    async def _made(self, made: asyncio.Future[bool]) -> bool:
        """Whether the pod's predicted PodGroup was made as predicted; False once shutdown begins first
        (the controllers stop too: the create's answer may never come)."""
        if not made.done():
            closed = asyncio.ensure_future(self._closed.wait())
            await asyncio.wait((made, closed), return_when=asyncio.FIRST_COMPLETED)
            closed.cancel()
        return made.done() and made.result() and not self.closing

    async def drain_binds(self, timeout: float | None = None) -> bool:
        """Wait for the binds in flight (at most ``timeout`` seconds); whether they all answered."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while self._binds:
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                return False
            await asyncio.wait(list(self._binds), timeout=left)
        return True

    async def drain(self, timeout: float | None = None) -> bool:
        """Wait for the binds in flight, the status writes and evictions, then the events they
        emitted (at most ``timeout`` seconds in all); whether everything was written."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        if not await self.drain_binds(timeout):
            return False
        if self._sending:
            left = None if deadline is None else max(0.0, deadline - loop.time())
            await asyncio.wait(list(self._sending), timeout=left)
        if not await self.writes.drain(deadline):
            return False
        return await self.events.flush(None if deadline is None else max(0.0, deadline - loop.time()))

    async def cancel(self) -> None:
        self._bind_slots.drop_held()
        for t in [*self._binds, *self._sending]:
            t.cancel()
        await asyncio.gather(*self._binds, *self._sending, return_exceptions=True)
        await self.writes.cancel()
        await self.events.close()

    async def _write(self, e: Effect) -> None:
        try:
            if isinstance(e, PodGroupStatus):
                await self._podgroup_status(e)
            elif isinstance(e, QueueStatus):
                await self._queue_status(e)
            elif isinstance(e, PodCondition):
                await self._pod_condition(e)
            elif isinstance(e, Evict):
                try:
                    await self._evict(e)
                except ApiError:
                    self.feeder.evict_failed(e.uid)
                    raise
        except ApiError as err:
            warn_unless_denied(log, "write failed", err, effect=type(e).__name__,
                               object=f"{getattr(e, 'namespace', '')}/{e.name}".lstrip("/"))

    def _uid(self, kind: str, namespace: str, name: str) -> str:
        if kind == "Pod":
            return self.feeder.uid_of(namespace, name) or ""
        if kind == "PodGroup":
            job = self.feeder.cache.jobs.get(f"{namespace}/{name}")
            return job.podgroup.uid if job is not None and job.podgroup is not None else ""
        if kind == "HyperNode":
            hn = self.feeder.cache.hypernodes.get(name)
            return hn.uid if hn is not None else ""
        return ""

    # -- bind ----------------------------------------------------------------------------------

    async def _bind(self, e: Bind, mine: Assumed | None, made: asyncio.Future[bool] | None = None,
                    express: bool = False, given: bool = False) -> None:
        started = time.perf_counter()
        if made is not None and not await self._made(made):
            # its PodGroup is not the one predicted, or was not made (or shutdown came first): never
            # bound on it; pending again
            self.feeder.forget(e.uid, mine)
            return
        body = {
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": e.name, "namespace": e.namespace, "uid": e.uid, "annotations": dict(e.annotations)},
            "target": {"apiVersion": "v1", "kind": "Node", "name": e.node},
        }
        path = PODS.path(e.namespace, e.name, "binding")
        async with self._bind_slots.lane(express, given):
            if self.closing:
                # never sent: the pod is pending for whoever schedules next, nothing of it on the node
                self.feeder.forget(e.uid, mine)
                return
            sent = time.perf_counter()
            if e.claims:
                try:
                    await self._write_claims(e)
                except (ApiError, ClaimChanged) as err:
                    self.bind_failures += 1
                    log.warning("claim status not written; the pod is not bound", pod=f"{e.namespace}/{e.name}",
                                error=str(err))
                    for st in e.claims:
                        self.feeder.cache.dra.forget_claim(f"{st.namespace}/{st.name}")
                    self.feeder.forget(e.uid, mine)
                    msg = f"running PreBind plugin \"DynamicResources\": {err}"
                    await self._write_condition(e.namespace, e.name, "SchedulerError", msg, "")
                    self.events.emit("Pod", e.namespace, e.name, e.uid, "Warning", "FailedScheduling", msg)
                    return
            try:
                await self.retry.call(lambda: self.client.request("POST", path, body=body), f"bind {e.namespace}/{e.name}")
            except ApiError as err:
                if err.status == 409:
                    # bound already: never bind twice; take the API's word for where it runs
                    log.info("pod already bound", pod=f"{e.namespace}/{e.name}", node=e.node, error=str(err))
                    await self._resync(e, mine)
                    return
                self.bind_failures += 1
                warn_unless_denied(log, "bind failed", err, pod=f"{e.namespace}/{e.name}", node=e.node)
                self.feeder.forget(e.uid, mine)
                msg = f"failed to bind to node {e.node}: {err}"
                await self._write_condition(e.namespace, e.name, "SchedulerError", msg, "")
                self.events.emit("Pod", e.namespace, e.name, e.uid, "Warning", "FailedScheduling", msg)
                await self._resync(e, mine)
                return
        self.bound += 1
        # DefaultBinder.Bind: the Bind stage (the API call, its retries included) and creation → Bound
        self.metrics.scheduling_stage("Bind", time.perf_counter() - sent)
        pod = self.feeder.pods.get(e.uid)
        if pod is not None:
            self.metrics.task_stage("Bound", creation_time(pod), time.time())
        log.debug("bound", pod=f"{e.namespace}/{e.name}", node=e.node, seconds=round(time.perf_counter() - started, 4))
        self.events.emit("Pod", e.namespace, e.name, e.uid, "Normal", "Scheduled",
                         f"Successfully assigned {e.namespace}/{e.name} to {e.node}")

    async def _write_claims(self, e: Bind) -> None:
        """DynamicResources' PreBind: each claim's ``status.allocation`` (when this session allocated it)
        and ``status.reservedFor`` with the pod, written through ``resourceclaims/status`` on the claim as
        the API holds it now (a conflict re-reads it, twice at most), one write per claim at a time."""
        for st in e.claims:
            key = f"{st.namespace}/{st.name}"
            entry = self._claim_locks.get(key)
            if entry is None:
                entry = self._claim_locks[key] = [asyncio.Lock(), 0]
            entry[1] += 1
            try:
                async with entry[0]:
                    written = await self._write_claim(e, st)
            finally:
                entry[1] -= 1
                if entry[1] == 0:
                    del self._claim_locks[key]
            self.feeder.cache.dra.update_resource_claim(written)

    async def _write_claim(self, e: Bind, st: ClaimStatus) -> dict[str, Any]:
        path = RESOURCE_CLAIMS.path(st.namespace, st.name)
        what = f"resourceclaim {st.namespace}/{st.name}"
        for attempt in range(3):
            claim = await self.retry.call(lambda: self.client.request("GET", path), f"get {what}")
            if st.uid and (claim.get("metadata") or {}).get("uid") != st.uid:
                raise ClaimChanged(f"{what} was deleted and made again")
            status = dict(claim.get("status") or {})
            if st.allocation is not None:
                if status.get("allocation") not in (None, st.allocation):
                    raise ClaimChanged(f"{what} was allocated meanwhile")
                status["allocation"] = st.allocation
            elif status.get("allocation") is None:
                raise ClaimChanged(f"{what} is no longer allocated")
            reserved = [dict(r) for r in status.get("reservedFor") or []]
            if not any(r.get("uid") == e.uid for r in reserved):
                reserved.append({"resource": "pods", "name": e.name, "uid": e.uid})
            status["reservedFor"] = reserved
            claim["status"] = status
            try:
                return await self.retry.call(
                    lambda: self.client.request("PUT", RESOURCE_CLAIMS.path(st.namespace, st.name, "status"),
                                                body=claim), f"update {what} status")
            except ApiError as err:
                if err.status != 409 or attempt == 2:
                    raise
                log.info("conflict on a claim's status, re-reading", claim=f"{st.namespace}/{st.name}")
        raise AssertionError("unreachable")

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
            warn_unless_denied(log, "resync failed; the watch will correct the pod", err, pod=f"{e.namespace}/{e.name}")
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
            warn_unless_denied(log, "node lock failed; not binding there", err, node=e.node, lock=e.key)
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
        status, obj = podgroup_status_out(e), None
        try:
            obj = await self._patch(PODGROUPS.path(e.namespace, e.name), {"status": status}, MERGE_PATCH,
                                    f"podgroup {e.namespace}/{e.name}")
        finally:
            self.feeder.podgroup_status_answered(f"{e.namespace}/{e.name}", status, obj)

    async def _queue_status(self, e: QueueStatus) -> None:
        obj = await self._patch(QUEUES.path(None, e.name, "status"), {"status": {"allocated": e.allocated}},
                                MERGE_PATCH, f"queue {e.name}")
        if obj.get("metadata"):
            self.feeder.cache.update_queue(obj)

    def _condition(self, e: PodCondition) -> None:
        """Submit ``e`` when it may change what the API holds: a write of the pod's condition is waiting
        or under way (``e`` replaces what waits), or the pod, pending, holds another condition or
        nominated node.  The thousands of pods of a gang whose message has not changed cost no write
        task; the write checks again when its turn comes."""
        key = _object_key(e)
        if key in self.writes or self._condition_changes(e) is not None:
            self.writes.submit(key, e, self._write)

    def _condition_changes(self, e: PodCondition) -> str | None:
        """The uid of ``e``'s pod when it is pending and ``e`` changes its PodScheduled condition or its
        nominated node (Volcano writes and records only a change), else None."""
        uid = self.feeder.uid_of(e.namespace, e.name)
        pod = self.feeder.pods.get(uid) if uid else None
        if pod is None or uid in self.feeder.assumed or (pod.get("spec") or {}).get("nodeName"):
            return None
        status = pod.get("status") or {}
        old = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
        same = old is not None and (old.get("status"), old.get("reason"), old.get("message")) == (
            "False", e.reason, e.message)
        nominated_changed = bool(e.nominated_node) and status.get("nominatedNodeName") != e.nominated_node
        return None if same and not nominated_changed else uid

    async def _pod_condition(self, e: PodCondition) -> None:
        uid = self._condition_changes(e)
        if uid is None:
            return
        await self._write_condition(e.namespace, e.name, e.reason, e.message, e.nominated_node)
        self.events.emit("Pod", e.namespace, e.name, uid, "Warning", "FailedScheduling", e.message)

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
            warn_unless_denied(log, "pod condition not written", err, pod=f"{namespace}/{name}")
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
        self.events.emit("Pod", e.namespace, e.name, e.uid, "Warning", "Evict", msg)
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
