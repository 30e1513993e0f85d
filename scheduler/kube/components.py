"""What ``vcsched run`` runs: the scheduler, the controllers, or both in one event loop.

The controllers' informers (scheduler/kube/informer.py) feed their handlers
(scheduler/kube/controllers.py); with leader election they run only while this replica leads.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog

from ..metrics import ControllerMetrics, api_errors
from .api import Kind, KubeClient
from .controllers import ControllerOptions, Controllers, GroupHandoff
from .health import Health, watches_check
from .informer import InformerSet

log = structlog.get_logger("vcsched.controllers")

COMPONENTS = ("scheduler", "controllers")


def parse_components(text: str) -> tuple[str, ...]:
    """``--components scheduler,controllers``: a non-empty subset of COMPONENTS, else ValueError."""
    names = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    unknown = [n for n in names if n not in COMPONENTS]
    if not names or unknown:
        raise ValueError(f"--components: invalid value {text!r}: expected a comma-separated list of "
                         f"{', '.join(COMPONENTS)}" + (f" (unknown: {', '.join(unknown)})" if unknown else ""))
    return names


# (group, version, plural) → the Lister that indexes it (None: none) and its handler (None: none)
WATCHED: tuple[tuple[str, str, str, str | None, str | None], ...] = (
    ("scheduling.volcano.sh", "v1beta1", "queues", "queues", "on_queue"),
    ("scheduling.volcano.sh", "v1beta1", "podgroups", "podgroups", "on_podgroup"),
    ("batch.volcano.sh", "v1alpha1", "jobs", "jobs", "on_job"),
    ("", "v1", "pods", "pods", "on_pod"),
    ("bus.volcano.sh", "v1alpha1", "commands", None, "on_command"),
    ("apps", "v1", "replicasets", "replicasets", "on_workload"),
    ("apps", "v1", "statefulsets", "statefulsets", "on_workload"),
    ("scheduling.k8s.io", "v1", "priorityclasses", "priorityclasses", None),
)


def build_informers(ctl: Controllers, client: KubeClient, watch_timeout: float = 300.0) -> InformerSet:
    """An informer per WATCHED kind, all namespaces: its Lister's index, then its handler."""
    informers = InformerSet(client, watch_timeout=watch_timeout)
    listers = {lister.name: lister for lister in ctl.listers}
    for group, version, plural, index, handler in WATCHED:
        informers.add(Kind(group, version, plural, namespaced=False), listers.get(index or ""),
                      getattr(ctl, handler) if handler else None)
    for kind, lister, on_event, options in ctl.hypernode_discovery.watches():  # nodes, HyperNodes, its ConfigMap
        informers.add(kind, lister, on_event, **options)
    return informers


async def run_controllers(client: KubeClient, stop: asyncio.Event, options: ControllerOptions | None = None,
                          ready: asyncio.Event | None = None, ctl: Controllers | None = None,
                          watch_timeout: float = 300.0, metrics: ControllerMetrics | None = None,
                          handoff: GroupHandoff | None = None, health: Health | None = None) -> None:
    """Run the controllers until ``stop`` is set, in the calling event loop (``ready``: set once every
    informer has its initial list and the handlers run; ``handoff``: the scheduler in this process;
    ``health``: where their readiness and watches are checked from now on)."""
    ctl = ctl or Controllers(client, options or ControllerOptions(), metrics, handoff)
    informers = build_informers(ctl, client, watch_timeout)
    ctl.synced = informers.synced
    if health is not None:
        health.readiness(lambda: None if informers.synced.is_set() else "controllers: caches not synced")
        health.liveness(watches_check(lambda: informers.reflectors, "controllers"))
    running = asyncio.ensure_future(informers.run())
    stopping = asyncio.ensure_future(stop.wait())
    synced = asyncio.ensure_future(informers.synced.wait())
    try:
        if ready is not None:
            await asyncio.wait([synced, stopping, running], return_when=asyncio.FIRST_COMPLETED)
            if informers.synced.is_set():
                ready.set()
        await asyncio.wait([stopping, running], return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in (running, stopping, synced):
            t.cancel()
        await asyncio.gather(running, stopping, synced, return_exceptions=True)
        await ctl.close()


async def run_components(client: KubeClient, controller_client: KubeClient | None, runtime: Any | None,
                         stop: asyncio.Event, options: ControllerOptions | None = None,
                         elector: Any | None = None, listen: str | None = None) -> int:
    """``vcsched run``: the scheduler ``runtime`` (None: not run) and, with a ``controller_client``, the
    controllers, in this event loop. Exit code as the Runtime's: 0 on stop, 1 when leadership is lost.

    With leader election the controllers run only while this replica leads: the scheduler's elector
    when the scheduler runs, else ``elector`` (a LeaderElector of the controllers' own Lease).
    The controllers' metrics go on the scheduler's /metrics; run alone, they get their own on ``listen``.
    """
    from .runtime import serve_http

    ctl_stop = asyncio.Event()
    leader = runtime.elector if runtime is not None else elector
    tasks: list[asyncio.Task[Any]] = []
    if runtime is not None:
        metrics = ControllerMetrics(runtime.scheduler.metrics.registry)
        health = runtime.health
    else:
        metrics = ControllerMetrics()
        health = Health()
    http = await serve_http(metrics.registry, listen, health) if runtime is None and listen else None
    refused = api_errors(metrics.registry)
    for c in (client, controller_client):
        if c is not None:
            c.errors.on_error = lambda code, resource, verb: refused.labels(code, resource, verb).inc()

    async def controllers() -> int:
        if controller_client is None:
            return 0
        if leader is not None:
            waits = [asyncio.ensure_future(leader.leading.wait()), asyncio.ensure_future(ctl_stop.wait())]
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for w in waits:
                w.cancel()
            if ctl_stop.is_set():
                return 0
        log.info("controllers starting")
        ctl = Controllers(controller_client, options or ControllerOptions(), metrics, runtime)
        if runtime is not None:
            runtime.controllers_started(ctl.podgroup_soon)
        try:
            await run_controllers(controller_client, ctl_stop, ctl=ctl, health=health)
        except Exception:
            log.exception("controllers failed")
        if not ctl_stop.is_set():
            # never half alive: the whole process stops, non-zero, and Kubernetes restarts it
            log.error("controllers stopped unexpectedly; stopping")
            stop.set()
            return 1
        return 1 if leader is not None and leader.lost.is_set() else 0

    async def watch_stop() -> int:
        waits = [asyncio.ensure_future(stop.wait())]
        if runtime is None and leader is not None:
            waits.append(asyncio.ensure_future(leader.lost.wait()))
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for w in waits:
            w.cancel()
        ctl_stop.set()
        return 1 if runtime is None and leader is not None and leader.lost.is_set() else 0

    if runtime is None and leader is not None:
        tasks.append(asyncio.ensure_future(leader.run()))
    stopper = asyncio.ensure_future(watch_stop())
    ctl_task = asyncio.ensure_future(controllers())
    code = 0
    try:
        if runtime is not None:
            code = await runtime.run(stop)
            ctl_stop.set()
        else:
            code = await stopper
        code = max(code, await ctl_task)
    finally:
        ctl_stop.set()
        stopper.cancel()
        for t in tasks:
            t.cancel()
        await asyncio.gather(stopper, ctl_task, *tasks, return_exceptions=True)
        if runtime is None and leader is not None:
            await leader.release()
        if http is not None:
            await http.cleanup()
    return code
