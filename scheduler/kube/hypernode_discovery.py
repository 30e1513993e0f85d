"""HyperNode discovery in ``vcsched run``'s controllers: Volcano's hypernode controller with its ``label``
source (pkg/controllers/hypernode: hypernode_controller.go, configmap_handler.go, discovery/manager.go,
discovery/label/label.go), over the pure functions of scheduler/controllers/hypernode_discovery.py.

- Three informers of the controllers' set (scheduler/kube/components.py): nodes, HyperNodes (optional:
  a cluster without the CRD has none) and the one controllers' ConfigMap (``--controller-configmap-name``
  in ``--controller-configmap-namespace``; Volcano: ``<release>-controller-configmap``, key
  ``volcano-controller.conf``), listed and watched by a field selector on its name, as Volcano does.
- The ConfigMap's ``networkTopologyDiscovery`` starts, restarts or stops the label source.  A
  configuration that cannot be used is a Warning Event on the ConfigMap and a log line, and the last
  one in force stays (Volcano's reload fails and retries; its discoverers run on).  ``ufm`` and ``roce``
  (they need the fabric's manager) and sources nobody knows are named in a warning and skipped.
  Stopping the source leaves the HyperNodes it made, as Volcano does.
- While the label source runs, a discovery is due when a node with topology labels comes or goes,
  when a node's topology labels change, and when any HyperNode is deleted (``AddNode``/``UpdateNode``/
  ``DeleteNode``/``DeleteHyperNode``); bursts gather into one (Volcano's work queue key ``update``).
  A discovery reads the listers, computes the HyperNodes the labels describe and writes the
  difference to the HyperNodes labelled ``volcano.sh/network-topology-source: label``: others are
  never written.  What our writes return is read at once (``Lister.observe``), so the next discovery
  reuses the names just made.  A discovery whose writes failed is retried with backoff (Volcano: the
  failed writes are logged and wait for the next change).
- Not done: Volcano's same controller also keeps ``status.nodeCount`` of every HyperNode.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import structlog

from ..controllers.hypernode_discovery import (
    HARDWARE_SOURCES, LABEL_SOURCE, DiscoveryConfigError, DiscoveryError, LabelTopology, discover_from_labels,
    load_config, parse_label_config, plan_reconcile, updated)
from .api import CONFIGMAPS, HYPERNODES, NODES, ApiError, Kind, KubeClient, warn_unless_denied
from .lister import Lister

log = structlog.get_logger("vcsched.controllers")

EventFn = Callable[[Mapping[str, Any], str, str, str], Awaitable[None]]
Spawn = Callable[[Any], "asyncio.Task[Any]"]

REASON_FAILED = "HyperNodeDiscoveryFailed"
REASON_UNSUPPORTED = "HyperNodeDiscoverySourceUnsupported"


class HyperNodeDiscovery:
    """The label source, its listers and its handlers (``type``/``body`` as the informers call them)."""

    def __init__(self, client: KubeClient, event: EventFn, spawn: Spawn, *, namespace: str, name: str,
                 delay: float = 0.05, conflict_retries: int = 5, max_requeue: int = 15,
                 requeue_base: float = 0.05, requeue_cap: float = 5.0) -> None:
        self.client = client
        self.event = event
        self.spawn = spawn
        self.namespace = namespace
        self.name = name
        self.delay = delay  # a burst of node events gathers into one discovery
        self.conflict_retries = conflict_retries
        self.max_requeue = max_requeue
        self.requeue_base = requeue_base
        self.requeue_cap = requeue_cap
        self.nodes = Lister("nodes")
        self.hypernodes = Lister("hypernodes")
        self.configmaps = Lister("controllerconfigmaps")
        self.topology: LabelTopology | None = None  # the label source's, while it runs
        self.discoveries = 0  # completed (for tests and logs)
        self._data: Any = ...  # the ConfigMap data last acted on (``...``: none seen yet)
        self._node_values: dict[str, dict[str, str]] = {}  # node → its topology labels when last seen
        self._due = False
        self._task: asyncio.Task[Any] | None = None

    def watches(self) -> list[tuple[Kind, Lister, Callable[..., Awaitable[None]], dict[str, Any]]]:
        """What the controllers' informer set watches for discovery: (kind, lister, handler, options)."""
        return [(NODES, self.nodes, self.on_node, {}),
                (HYPERNODES, self.hypernodes, self.on_hypernode, {"optional": True}),
                (CONFIGMAPS, self.configmaps, self.on_config,
                 {"namespace": self.namespace, "field_selector": f"metadata.name={self.name}"})]

    @property
    def listers(self) -> list[Lister]:
        return [self.nodes, self.hypernodes, self.configmaps]

    # -- the configuration -----------------------------------------------------------------------

    def _configmap_ref(self, body: Mapping[str, Any]) -> dict[str, Any]:
        meta = body.get("metadata") or {}
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": self.name, "namespace": self.namespace, "uid": meta.get("uid", "")}}

    async def on_config(self, type: str | None, body: Mapping[str, Any], **_: Any) -> None:
        """The controllers' ConfigMap added, changed or deleted: the label source (re)started or stopped."""
        data = None if type == "DELETED" else copy.deepcopy(dict(body.get("data") or {}))
        if data == self._data:
            return  # a relist, or a change elsewhere in the object
        self._data = data
        where = f"{self.namespace}/{self.name}"
        ref = self._configmap_ref(body)
        try:
            cfg = load_config(data)
        except DiscoveryConfigError as e:
            state = "the label source runs on as before" if self.topology is not None else "nothing is discovered"
            log.warning("network topology discovery configuration refused", configmap=where, error=str(e),
                        consequence=state)
            await self.event(ref, "Warning", REASON_FAILED, f"{e}; {state}")
            return
        for source in cfg.enabled_sources():
            if source == LABEL_SOURCE:
                continue
            why = ("it needs the network fabric's manager" if source in HARDWARE_SOURCES
                   else "no such discovery source")
            log.warning("network topology discovery source not supported; skipped", configmap=where,
                        source=source, reason=why)
            await self.event(ref, "Warning", REASON_UNSUPPORTED,
                             f"network topology discovery source {source} is not supported by vcsched ({why}); "
                             "skipped")
        label = cfg.source(LABEL_SOURCE)
        if label is None:
            if self.topology is not None:
                log.info("label discovery stopped; the HyperNodes it made stay", configmap=where)
            self.topology = None
            self._node_values.clear()
            return
        topology = parse_label_config(label.config)
        for problem in topology.problems:
            log.warning("network topology type refused", configmap=where, error=problem)
            await self.event(ref, "Warning", REASON_FAILED, f"label source: {problem}")
        self.topology = topology
        self._node_values = {name: topology.node_values((node.get("metadata") or {}).get("labels"))
                             for name, node in self.nodes.objects.items()}
        log.info("label discovery started", configmap=where, types={k: list(v) for k, v in topology.types.items()})
        self.trigger()

    # -- what asks for a discovery ------------------------------------------------------------------

    async def on_node(self, type: str | None, body: Mapping[str, Any], **_: Any) -> None:
        topology = self.topology
        if topology is None:
            return
        meta = body.get("metadata") or {}
        name = meta.get("name") or ""
        if type == "DELETED":
            if self._node_values.pop(name, None):
                self.trigger()
            return
        new = topology.node_values(meta.get("labels"))
        old = self._node_values.get(name)
        self._node_values[name] = new
        if (bool(new) if old is None else old != new):  # a labelled node came, or its topology labels changed
            self.trigger()

    async def on_hypernode(self, type: str | None, body: Mapping[str, Any], **_: Any) -> None:
        if type == "DELETED" and self.topology is not None:
            self.trigger()  # one of ours deleted by someone is made again

    def trigger(self) -> None:
        self._due = True
        if self._task is None or self._task.done():
            self._task = self.spawn(self._loop())

    async def _loop(self) -> None:
        attempt = 0
        while self._due:
            await asyncio.sleep(self.delay)
            self._due = False
            topology = self.topology
            if topology is None:
                return
            if await self.discover_once(topology):
                attempt = 0
                continue
            if attempt >= self.max_requeue:
                log.warning("HyperNode discovery keeps failing; retried at the next change", attempts=attempt + 1)
                attempt = 0
                continue
            await asyncio.sleep(min(self.requeue_cap, self.requeue_base * 2 ** attempt))
            attempt += 1
            self._due = True

    # -- one discovery ---------------------------------------------------------------------------------

    async def discover_once(self, topology: LabelTopology) -> bool:
        """Discover and write; False when something failed (the whole is retried)."""
        stored = self.hypernodes.objects
        nodes = [(name, (n.get("metadata") or {}).get("labels")) for name, n in self.nodes.objects.items()]
        try:
            found = discover_from_labels(nodes, topology, stored)
        except DiscoveryError as e:
            log.warning("HyperNode discovery failed", error=str(e))
            return False
        plan = plan_reconcile(LABEL_SOURCE, found, stored)
        (log.info if plan else log.debug)("topology reconciliation", source=LABEL_SOURCE, discovered=len(found),
                                          created=len(plan.create), updated=len(plan.update),
                                          deleted=len(plan.delete))
        ok = True
        for obj in plan.create:
            ok &= await self._write("create", obj["metadata"]["name"], self._create(obj))
        for obj in plan.update:
            ok &= await self._write("update", obj["metadata"]["name"], self._update(obj))
        for name in plan.delete:
            ok &= await self._write("delete", name, self._delete(name))
        self.discoveries += 1
        return ok

    async def _write(self, verb: str, name: str, call: Awaitable[None]) -> bool:
        try:
            await call
            log.info(f"HyperNode {verb}d", hypernode=name, source=LABEL_SOURCE)
            return True
        except ApiError as e:
            warn_unless_denied(log, f"HyperNode {verb} failed", e, hypernode=name, source=LABEL_SOURCE)
            return False

    async def _create(self, obj: dict[str, Any]) -> None:
        self.hypernodes.observe(await self.client.request("POST", HYPERNODES.path(), body=obj))

    async def _update(self, obj: dict[str, Any]) -> None:
        """PUT with the stored resourceVersion; on 409 Conflict the object is read again and the change
        made again (Volcano's RetryOnConflict)."""
        path = HYPERNODES.path(None, obj["metadata"]["name"])
        body: dict[str, Any] | None = obj
        for attempt in range(self.conflict_retries):
            if body is None:
                return
            try:
                self.hypernodes.observe(await self.client.request("PUT", path, body=body))
                return
            except ApiError as e:
                if e.status != 409 or attempt + 1 == self.conflict_retries:
                    raise
            fresh = await self.client.get(path)
            if fresh is None:
                raise ApiError(404, f"HyperNode {obj['metadata']['name']} is gone")
            body = updated(fresh, obj)

    async def _delete(self, name: str) -> None:
        try:
            gone = await self.client.request("DELETE", HYPERNODES.path(None, name))
        except ApiError as e:
            if e.status != 404:
                raise
            gone = None
        self.hypernodes.deleted(None, name, gone)
