"""``vcsched run``: the scheduler against an API server (scheduler.go · Run).

Wiring: reflectors (source) → CacheFeeder → Cache → snapshot → Scheduler.run_session (worker thread) → KubeSink.
The scheduler conf comes from the ConfigMap (hot reload, last good conf kept) or
from ``--scheduler-conf``.  No session runs before every initial list is synced;
with leader election only the leader runs sessions, and a leader that loses its
Lease stops (exit 1, as Volcano's scheduler exits) so that its replacement
container starts from a fresh list.  /metrics, /healthz and /readyz (health.py) are
served on --listen.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ..api.types import TaskStatus
from ..cache import Cache
from ..conf import DEFAULT_SCHEDULER_CONF, ConfError, SchedulerConfiguration, parse_conf
from ..plugins.deviceshare import device_builder, deviceshare_args
from ..plugins.deviceshare.config import DeviceShareArgs
from ..plugins.deviceshare.mindcluster import MindClusterInfo, use_cluster_info_manager, watched_configmaps
from ..framework.effects import Effect
from ..framework.session import NodesToFind, Session, Snapshot
from ..metrics import Metrics
from ..scheduler import Scheduler, freeze_heap, session_gc_paused
from .api import CONFIGMAPS, PODGROUPS, QUEUES, ApiError, KubeClient
from .health import Health, watches_check
from .leader import LeaderElector
from .metrics_source import NodeMetricsCollector
from .provisional import ProvisionalGroups
from .sink import KubeSink
from .writers import Retry
from .cycles import CycleTrigger, touched_jobs, wait_for_work
from .source import OPTIONAL_KINDS, Backoff, CacheFeeder, Reflector, object_key

log = structlog.get_logger("vcsched.kube")

CONF_KEY = "volcano-scheduler.conf"
STALE_RECHECK = 0.05  # seconds between two looks at watches catching up
# A session runs on a worker thread, so that the Lease is renewed and watch events flow meanwhile;
# but a worker thread holding the GIL makes the loop wait up to a switch interval (5 ms) for each of
# its I/O completions, which costs a pod waiting for its bind more than a short session itself.  A
# session expected to be short (the last one took less than INLINE_SESSION seconds and there are at
# most INLINE_TASKS pending tasks) runs on the loop.
INLINE_SESSION = 0.01
INLINE_TASKS = 32

@dataclass(slots=True)
class RunOptions:
    scheduler_name: str = "volcano"
    default_queue: str = "default"
    nodes_to_find: NodesToFind = NodesToFind()
    queue_init_attempts: int = 60  # creating root / the default queue, as Volcano: 60 tries, 1 s apart
    queue_init_interval: float = 1.0
    schedule_period: float = 1.0
    # cycles start when a watched change can change a decision (cycles.py), this long after the
    # first such change so that a burst is one cycle; schedule_period stays the upper bound.
    # None: only on the clock, every schedule_period (Volcano's loop)
    cycle_coalesce: float | None = 0.001
    # and at least this many times the last session's time on the worker thread after that session
    # ended: the session thread holds the GIL at most 1/(1+ratio) of the time, so watches, binds and
    # writes keep flowing (a session on the loop owes no gap; the loop's own dispatch of the session's
    # effects is loop time, and counts toward it)
    cycle_gap_ratio: float = 1.0
    # the podgroup controller runs in this process: a bare pod's PodGroup is predicted and decided on
    # in the pod's first cycle, its Binding sent once the controller has made it (provisional.py)
    predict_groups: bool = False
    inherit_owner_annotations: bool = True
    listen: str | None = ":8080"
    scheduler_conf: str | None = None
    configmap_name: str = "volcano-scheduler-configmap"
    configmap_namespace: str = "volcano-system"
    leader_elect: bool = False
    lease_name: str = "vcsched"
    lease_namespace: str = "volcano-system"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    identity: str = ""
    # Bindings in flight at once; like a PodGroup create, a bind waits mostly on the API server's
    # commit: 32 let 2,000 dispatched binds queue up at 5,000 pending pods, 128 kept up
    bind_workers: int = 128
    retry: Retry | None = None
    watch_backoff: tuple[float, float] = (0.2, 10.0)
    watch_timeout: float = 300.0
    # on stop, how long to wait for the binds in flight (below the pod's terminationGracePeriodSeconds)
    shutdown_grace: float = 10.0
    # /healthz fails once no session has completed for this long while this replica leads
    session_stall: float = 120.0


async def serve_http(registry: Any, listen: str, health: Health) -> web.AppRunner:
    """/metrics (``registry`` in Prometheus' text format), /healthz and /readyz (``health``) on ``listen``;
    the caller cleans up.  A failing check answers 503 with what is wrong, a line each."""

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    def answer(problems: list[str]) -> web.Response:
        return web.Response(text="\n".join(problems) + "\n", status=503) if problems else web.Response(text="ok")

    async def healthz(_: web.Request) -> web.Response:
        return answer(health.problems())

    async def readyz(_: web.Request) -> web.Response:
        return answer(health.unready() or health.problems())

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    host, port = parse_listen(listen)
    await web.TCPSite(runner, host, port).start()
    log.info("serving /metrics, /healthz and /readyz", listen=f"{host}:{runner.addresses[0][1]}")
    return runner


class ConfError2(Exception):
    """``--scheduler-conf`` unreadable or invalid at start: exit 2."""


def parse_listen(text: str) -> tuple[str, int]:
    """``[HOST]:PORT`` (``:8080`` listens on every address); ValueError naming the flag."""
    host, colon, port = text.rpartition(":")
    if not colon or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"--listen: invalid address {text!r}: expected [HOST]:PORT, PORT 0-65535")
    if host.startswith("[") and host.endswith("]"):  # an IPv6 address, as Go writes one with a port
        host = host[1:-1]
    return host or "0.0.0.0", int(port)


def device_configmap_keys(conf: SchedulerConfiguration) -> set[str]:
    """The device ConfigMaps the conf's deviceshare plugin reads, as namespace/name."""
    return {f"{args.cm_namespace}/{args.cm_name}"
            for tier in conf.tiers for option in tier if option.name == "deviceshare"
            for args in (DeviceShareArgs.parse(option.arguments),)}


def mindcluster_watches(conf: SchedulerConfiguration) -> set[tuple[str, str]]:
    """(namespace, label selector) of MindCluster's device-info ConfigMaps, when the conf's deviceshare
    enables the Ascend 310P kind (``AscendMindClusterVNPUEnable``); which ones by ``init-params``.
    Volcano reads ``useClusterInfoManager`` once per process; vcsched follows a reloaded conf."""
    args = deviceshare_args(conf)
    if args is None or not args.ascend_mindcluster_vnpu:
        return set()
    return set(watched_configmaps(use_cluster_info_manager(conf.action_arguments("init-params").values)))


class ConfSource:
    """The scheduler conf: the file if given, else the ConfigMap's key, else the built-in default.

    A new text that does not parse is refused: a log line and a Warning event on
    the ConfigMap; the last good conf stays in force.
    """

    def __init__(self, runtime: "Runtime") -> None:
        self.runtime = runtime
        self.conf: SchedulerConfiguration = parse_conf(DEFAULT_SCHEDULER_CONF)
        self.text: str | None = None
        self.file_mtime: float | None = None
        self.refused = 0

    def load_file(self, path: str, initial: bool) -> None:
        try:
            st = os.stat(path)
            if not initial and st.st_mtime == self.file_mtime:
                return
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            if initial:
                raise ConfError2(f"{path}: {e.strerror}") from None
            log.error("scheduler conf unreadable; keeping the last good one", path=path, error=e.strerror)
            return
        self.file_mtime = st.st_mtime
        try:
            self._accept(text, path)
        except ConfError as e:
            if initial:
                raise ConfError2(f"{path}: {e}") from None
            self.refused += 1
            log.error("scheduler conf refused; keeping the last good one", path=path, error=str(e))

    # reflector handler for the scheduler ConfigMap
    def upsert(self, obj: dict[str, Any]) -> None:
        where = f"ConfigMap {object_key(obj)}: data[{CONF_KEY}]"
        text = (obj.get("data") or {}).get(CONF_KEY)
        try:
            if text is None:
                raise ConfError(f"no key {CONF_KEY}")
            self._accept(text, where)
        except ConfError as e:
            self.refused += 1
            log.error("scheduler conf refused; keeping the last good one", configmap=object_key(obj), error=str(e))
            meta = obj.get("metadata") or {}
            self.runtime.sink.events.emit(
                "ConfigMap", meta.get("namespace") or "", meta.get("name") or "", str(meta.get("uid") or ""),
                "Warning", "InvalidSchedulerConf", f"{where}: {e}; the last good configuration stays in force")

    def delete(self, obj: dict[str, Any]) -> None:
        log.warning("scheduler ConfigMap deleted; keeping the configuration in force", configmap=object_key(obj))

    def _accept(self, text: str, where: str) -> None:
        if text == self.text:
            return
        conf = parse_conf(text)
        self.conf, self.text = conf, text
        self.runtime.scheduler.conf = conf  # takes effect from the next session
        log.info("scheduler conf loaded", source=where, actions=list(conf.actions))
        self.runtime.conf_changed()


class _ConfigMapStore:
    """Reflector handler for one device ConfigMap: kept by namespace/name for the deviceshare config."""

    def __init__(self, runtime: "Runtime") -> None:
        self.runtime = runtime

    def upsert(self, obj: dict[str, Any]) -> None:
        self.runtime.config_maps[object_key(obj)] = obj
        self.runtime.conf_changed()

    def delete(self, obj: dict[str, Any]) -> None:
        self.runtime.config_maps.pop(object_key(obj), None)
        self.runtime.conf_changed()


class LeadershipLost(Exception):
    pass


class QueueInitError(Exception):
    """The root or default queue could not be created: exit 1, as Volcano's scheduler does."""


def pending_tasks(snapshot: Snapshot, limit: int) -> int:
    """The snapshot's pending tasks, counted up to just past ``limit`` (reused clones have none)."""
    n = 0
    for job in snapshot.fresh_jobs():
        n += job.count(TaskStatus.Pending)
        if n > limit:
            break
    return n


class Runtime:
    def __init__(self, client: KubeClient, options: RunOptions) -> None:
        self.client = client
        self.options = options
        self.cache = Cache((options.scheduler_name,), default_queue=options.default_queue)
        metrics = Metrics()
        self.feeder = CacheFeeder(self.cache, metrics)
        if options.predict_groups:
            self.feeder.provisional = ProvisionalGroups(self.feeder, (options.scheduler_name,),
                                                        options.inherit_owner_annotations)
        self.conf_source = ConfSource(self)
        # event-driven cycles keep Volcano's cadence of a session a period for what is written each
        # session whether or not it changed much: conditions of waiting pods, queue statuses
        spacing = options.schedule_period if options.cycle_coalesce is not None else 0.0
        self.scheduler = Scheduler(self.cache, self.conf_source.conf, metrics, options.nodes_to_find,
                                   condition_spacing=spacing)
        self.sink = KubeSink(client, self.feeder, scheduler_name=options.scheduler_name, metrics=metrics,
                             bind_workers=options.bind_workers, retry=options.retry, status_spacing=spacing)
        self.config_maps: dict[str, dict[str, Any]] = {}  # device ConfigMaps by namespace/name
        self.identity = options.identity or f"{socket.gethostname()}_{uuid.uuid4()}"
        self.elector: LeaderElector | None = None
        if options.leader_elect:
            self.elector = LeaderElector(client, options.lease_namespace, options.lease_name, self.identity,
                                         lease_duration=options.lease_duration,
                                         renew_deadline=options.renew_deadline, retry_period=options.retry_period)
        # what starts a cycle besides the clock: every cache kind's changes go through it
        self.trigger = CycleTrigger(self.cache)
        # the cache's kinds; they run from start_source, and the PodGroup one takes the podgroup
        # controller's PodGroups (give_group) from the start
        self._watched = {kind: self._reflector(kind, self.trigger.wrap(kind, handler), optional=kind in OPTIONAL_KINDS)
                         for kind, handler in self.feeder.handlers().items()}
        self.reflectors: list[Reflector] = []
        self._reflector_tasks: list[tuple[Reflector, asyncio.Task[None]]] = []
        self._device_watches: dict[str, tuple[Reflector, asyncio.Task[None]]] = {}
        self.mindcluster = MindClusterInfo()  # MindCluster device info and NodeD status (Ascend 310P)
        self._mindcluster_watches: dict[tuple[str, str], tuple[Reflector, asyncio.Task[None]]] = {}
        self._elector_task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.synced = asyncio.Event()
        self.sessions = 0
        self._thread_seconds = 0.0  # how long the last session held the worker thread (0: it ran on the loop)
        self._session_seconds = 1.0  # the last session's own time (none yet: assume a long one)
        self._session_done_at: float | None = None  # loop time of the last session completed (or leadership taken)
        self._thread_done_at = 0.0  # loop time the last session on the worker thread handed its effects back
        self.health = Health()
        self.health.readiness(lambda: None if self.synced.is_set() else "scheduler: caches not synced")
        self.health.liveness(watches_check(self._all_reflectors, "scheduler"))
        self.health.liveness(self._session_stalled)
        self.health.liveness(self._watch_stopped)
        self.http_port: int | None = None
        self._runner: web.AppRunner | None = None
        if options.scheduler_conf:
            self.conf_source.load_file(options.scheduler_conf, initial=True)

    # -- plumbing ------------------------------------------------------------------------------

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _reflector(self, kind, handler, **kw: Any) -> Reflector:  # type: ignore[no-untyped-def]
        base, cap = self.options.watch_backoff
        return Reflector(self.client, kind, handler, backoff=Backoff(base, cap),
                         watch_timeout=self.options.watch_timeout, **kw)

    def conf_changed(self) -> None:
        """The conf or a device ConfigMap changed: watch the device ConfigMaps the conf names now,
        and re-read every node's devices with the new configuration.  A cycle follows."""
        self.trigger.poke("conf")
        self.cache.set_device_builder(device_builder(self.scheduler.conf, self.config_maps, self.mindcluster))
        self._watch_mindcluster()
        want = device_configmap_keys(self.scheduler.conf)
        for key in [k for k in self._device_watches if k not in want]:
            _, task = self._device_watches.pop(key)
            task.cancel()
            self.config_maps.pop(key, None)
        for key in want - self._device_watches.keys():
            ns, name = key.split("/", 1)
            r = self._reflector(CONFIGMAPS, _ConfigMapStore(self), namespace=ns, field_selector=f"metadata.name={name}")
            self._device_watches[key] = (r, self.spawn(r.run()))

    def _watch_mindcluster(self) -> None:
        want = mindcluster_watches(self.scheduler.conf)
        for key in [k for k in self._mindcluster_watches if k not in want]:
            r, task = self._mindcluster_watches.pop(key)
            task.cancel()
            for obj in list(r.store.values()):  # what this watch said no longer counts
                self.mindcluster.delete(obj)
        for ns, selector in sorted(want - self._mindcluster_watches.keys()):
            # the store is the reflector's handler (its upsert/delete), as Volcano's informer feeds its
            # cmManager; the 310P kind reads it at session open, no device rebuild
            r = self._reflector(CONFIGMAPS, self.trigger.wrap(CONFIGMAPS, self.mindcluster), namespace=ns,
                                label_selector=selector)
            self._mindcluster_watches[(ns, selector)] = (r, self.spawn(r.run()))

    # -- health and http ----------------------------------------------------------------------

    def _all_reflectors(self) -> list[Reflector]:
        return [*self.reflectors, *(r for r, _ in self._device_watches.values()),
                *(r for r, _ in self._mindcluster_watches.values())]

    def _watch_stopped(self) -> str | None:
        """A reflector's task that ended (a bug in what it feeds: only cancellation ends one otherwise)."""
        tasks = [*self._reflector_tasks, *self._device_watches.values(), *self._mindcluster_watches.values()]
        stopped = sorted(r.kind.plural for r, t in tasks if t.done() and not t.cancelled())
        return f"scheduler: watch of {', '.join(stopped)} stopped" if stopped else None

    def _session_stalled(self) -> str | None:
        done = self._session_done_at
        if done is None or (self.elector is not None and not self.elector.leading.is_set()):
            return None
        idle = asyncio.get_running_loop().time() - done
        if idle > self.options.session_stall:
            return f"scheduler: no session completed for {idle:.0f} s"
        return None

    async def _start_http(self) -> None:
        if not self.options.listen:
            return
        self._runner = await serve_http(self.scheduler.metrics.registry, self.options.listen, self.health)
        self.http_port = self._runner.addresses[0][1]

    # -- the loop -------------------------------------------------------------------------------

    async def ensure_default_queues(self) -> None:
        """cache.go · newDefaultAndRootQueue: ``root`` (not reclaimable), then the default queue
        (reclaimable), weight 1 and no status, created when a GET does not find them.  Each create
        is tried ``queue_init_attempts`` times ``queue_init_interval`` apart; AlreadyExists (another
        replica or a user was first) is fine; when every attempt fails the scheduler exits, as
        Volcano's does (klog.Fatalf)."""
        o = self.options
        for name, reclaimable in (("root", False), (o.default_queue, True)):
            try:
                await self.client.request("GET", QUEUES.path(None, name))
                continue
            except ApiError as e:
                if e.status != 404:  # Volcano logs it and goes on to create
                    log.error("failed to get queue", queue=name, error=str(e))
            body = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
                    "spec": {"weight": 1, "reclaimable": reclaimable}}
            for attempt in range(1, o.queue_init_attempts + 1):
                try:
                    await self.client.request("POST", QUEUES.path(), body=body)
                    log.info("queue created", queue=name)
                    break
                except ApiError as e:
                    if e.status == 409:
                        break
                    if attempt == o.queue_init_attempts:
                        raise QueueInitError(f"failed to init {name} queue: {e}") from None
                    log.error("failed to create queue, will retry", queue=name, error=str(e))
                    await asyncio.sleep(o.queue_init_interval)

    async def start_source(self) -> None:
        o = self.options
        await self.ensure_default_queues()
        self.reflectors = list(self._watched.values())
        if not o.scheduler_conf:
            self.reflectors.append(self._reflector(CONFIGMAPS, self.conf_source, namespace=o.configmap_namespace,
                                                   field_selector=f"metadata.name={o.configmap_name}"))
        self._reflector_tasks = [(r, self.spawn(r.run())) for r in self.reflectors]
        for r, t in self._reflector_tasks:
            t.add_done_callback(lambda t, kind=r.kind.plural: _log_watch_end(t, kind))
        self.conf_changed()
        await asyncio.gather(*(r.synced.wait() for r in self.reflectors))
        await asyncio.gather(*(r.synced.wait() for r, _ in self._device_watches.values()))
        await asyncio.gather(*(r.synced.wait() for r, _ in self._mindcluster_watches.values()))
        freeze_heap()  # the cache as first listed: no full collection walks it in every later session
        self.synced.set()
        # node load from the conf's metrics source, into the cache between sessions (usage, rescheduling)
        self.spawn(NodeMetricsCollector(self.cache, lambda: self.scheduler.conf).run())
        log.info("caches synced", nodes=len(self.cache.nodes), pods=len(self.cache.tasks),
                 jobs=len(self.cache.jobs), queues=len(self.cache.queues))

    # -- the podgroup controller in this process (controllers.GroupHandoff) --------------------

    def give_group(self, pod: Mapping[str, Any], podgroup: Mapping[str, Any]) -> bool:
        """A bare pod's PodGroup, as its create returned it: into the cache through the PodGroup
        reflector, and the pod into its job with the annotation owed (CacheFeeder.give_group).  False
        for a pod this scheduler does not place."""
        if not self.cache.responsible_for(pod):
            return False
        uid = (pod.get("metadata") or {}).get("uid") or ""
        prov = self.feeder.provisional
        held = prov.confirm(uid, podgroup) if prov is not None else False
        # the PodGroup as predicted carries what the sessions decided for it (its status write waited
        # for this create): the made one takes it over (CacheFeeder.with_asked_status), so that no cycle
        # decides it again; one made otherwise does not, the prediction being forgotten by now
        self._watched[PODGROUPS].observe(dict(podgroup))
        given = self.feeder.give_group(pod, (podgroup.get("metadata") or {}).get("name") or "")
        if given and not held:  # a prediction that held: the pod's cycle has decided on this PodGroup already
            self.trigger.poke("podgroup given")
        return given

    def controllers_started(self, make_podgroup: Callable[[Mapping[str, Any]], None] | None = None) -> None:
        """The controllers run in this process from now on (as leader): bare pods seen from now on have
        their PodGroups predicted (provisional.py), and ``make_podgroup(pod)`` starts the controller's
        create of a predicted one at once."""
        if self.feeder.provisional is not None:
            self.feeder.provisional.active = True
            self.feeder.provisional.make = make_podgroup

    def group_not_made(self, pod: Mapping[str, Any]) -> None:
        """The podgroup controller gave up on the pod's PodGroup: a prediction of it goes, unbound."""
        if self.feeder.provisional is not None:
            self.feeder.provisional.failed((pod.get("metadata") or {}).get("uid") or "")

    def owes_group(self, uid: str) -> bool:
        return self.feeder.owes_group(uid)

    def _session(self, snapshot: Snapshot) -> tuple[Session, list[Effect]]:
        started = time.perf_counter()
        ssn, effects = self.scheduler.run_session(snapshot)
        self._session_seconds = time.perf_counter() - started
        return ssn, effects

    def _session_handed_over(self, handover: list) -> None:
        """``_session`` on a worker thread, the snapshot taken from ``handover`` and the session and effects
        put back in it.  Not returned: the executor's work item holds what its call returns, and the worker
        thread drops it only when it next runs, which on a busy machine comes after the cycle has ended and
        the collector has resumed (it then walked the session); the loop empties the list at once."""
        handover.append(self._session(handover.pop()))

    async def run_session(self) -> None:
        if self.options.scheduler_conf:
            self.conf_source.load_file(self.options.scheduler_conf, initial=False)
        # The cyclic collector resumes once the session and its effects are gone (``_cycle``'s locals):
        # resumed at the session's end, its first collection walked them all before a single Bind went
        # out (790,000 objects in 0.39 s at 50,000 pending pods on 5,000 nodes, docs/bench.md).
        with session_gc_paused():
            await self._cycle()

    async def _cycle(self) -> None:
        # The snapshot is taken here, on the loop, which alone touches the cache; the session runs
        # on a worker thread, so the Lease is renewed and watch events flow into the cache meanwhile;
        # its effects come back to the loop.  (Volcano's session also runs beside its informers.)
        generation = self.feeder.next_generation()
        self.trigger.take()  # a change from now on starts the next cycle
        snapshot = self.cache.snapshot()
        if self._session_seconds < INLINE_SESSION and pending_tasks(snapshot, INLINE_TASKS) <= INLINE_TASKS:
            ssn, effects = self._session(snapshot)
            self._thread_seconds = 0.0
        else:
            handover: list = [snapshot]
            await asyncio.to_thread(self._session_handed_over, handover)
            ssn, effects = handover.pop()
            self._thread_seconds = self._session_seconds
            self._thread_done_at = asyncio.get_running_loop().time()
        self.sessions += 1
        if self.elector is not None and self.elector.lost.is_set():
            raise LeadershipLost()  # decided as leader, but another replica may lead now: write nothing
        await self.sink.apply(effects)
        await asyncio.sleep(0)  # the Bindings on the wire before what follows, which is off the pods' path
        # the settled jobs the session left as they were, kept for the next snapshot, which need not
        # clone them again (Cache.keep_clones reads only the session's clones)
        self.cache.keep_clones(ssn, *touched_jobs(effects))
        self.scheduler.publish(ssn)
        self.sink.annotate_due(generation)

    async def run(self, stop: asyncio.Event | None = None) -> int:
        """Serve until ``stop`` is set (0), leadership is lost or the default queues cannot be made (1)."""
        stop = stop or asyncio.Event()
        stopping = self.spawn(stop.wait())
        try:
            await self._start_http()
            if await _first(self.spawn(self.start_source()), stopping) is stopping:
                return 0
            if self.elector is not None:
                self._elector_task = self.spawn(self.elector.run())
                log.info("waiting for leadership", lease=f"{self.options.lease_namespace}/{self.options.lease_name}",
                         identity=self.identity)
                if await _first(self.spawn(self.elector.leading.wait()), stopping) is stopping:
                    return 0
            loop = asyncio.get_running_loop()
            self._session_done_at = loop.time()
            while not stop.is_set():
                if self.elector is not None and self.elector.lost.is_set():
                    raise LeadershipLost()
                stale: list[str] = []
                try:
                    now = time.monotonic()
                    stale = [r.kind.plural for r in self._all_reflectors() if not r.current(now)]
                    if stale:
                        # a watch is down or relisting: what the cache holds of that kind may be gone (a
                        # node deleted meanwhile would get pods); wait for it rather than bind on it
                        log.debug("caches catching up; no session", kinds=stale)
                    else:
                        await self.run_session()
                    self._session_done_at = loop.time()
                except LeadershipLost:
                    raise
                except Exception:
                    log.exception("session failed")
                lost = self.spawn(self.elector.lost.wait()) if self.elector is not None else None
                others = [t for t in (stopping, lost) if t is not None]
                if stale:  # looked at again shortly: a watch between two streams is back in a round trip
                    await asyncio.wait(others, timeout=min(self.options.schedule_period, STALE_RECHECK))
                elif self.options.cycle_coalesce is None:
                    await asyncio.wait(others, timeout=self.options.schedule_period)
                else:
                    gap = self.options.cycle_gap_ratio * self._thread_seconds
                    await wait_for_work(self.trigger, self.options.schedule_period, self.options.cycle_coalesce,
                                        *others, not_before=self._thread_done_at + gap)
                if lost is not None:
                    lost.cancel()
            return 0
        except LeadershipLost:
            log.error("leadership lost; stopping")
            return 1
        except QueueInitError as e:
            log.error(str(e))
            return 1
        finally:
            await self.shutdown()

    async def shutdown(self) -> None:
        # Binds on the wire are waited for, not abandoned: the API server carries out a Binding
        # even when its client has gone, so a successor that started while they were pending
        # would see those pods pending and their GPUs free, and place something else there.
        # Binds still queued for a slot are not sent at all (a large session decides thousands at
        # once): their pods stay pending for the successor.  Then the Lease is given up, so that a
        # standby leads at once; the status writes, evictions and events in flight get what is left
        # of the grace period after that (a successor recomputes every status anyway).
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.options.shutdown_grace
        self.sink.close_binds()
        binds_done = await self.sink.drain_binds(self.options.shutdown_grace)
        if self.elector is not None:
            # stop renewing first: a renewal racing the release would make it fail with 409
            if self._elector_task is not None:
                self._elector_task.cancel()
                await asyncio.gather(self._elector_task, return_exceptions=True)
            await self.elector.release()
        if not binds_done or not await self.sink.drain(max(0.0, deadline - loop.time())):
            log.warning("writes still in flight at shutdown; abandoning them", binds=self.sink.binds_in_flight,
                        writes=self.sink.writes_in_flight)
        await self.sink.cancel()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


def _log_watch_end(task: asyncio.Task[None], kind: str) -> None:
    """A reflector's task ended other than by cancellation: say why (/healthz says that it did)."""
    if not task.cancelled() and task.exception() is not None:
        log.error("watch stopped", resource=kind, exc_info=task.exception())


async def _first(a: asyncio.Task[Any], b: asyncio.Task[Any]) -> asyncio.Task[Any]:
    done, _ = await asyncio.wait([a, b], return_when=asyncio.FIRST_COMPLETED)
    if a in done:
        a.result()
        return a
    return b

