"""When ``vcsched run`` starts a cycle: as soon as something can change a decision, not only on the clock.

Volcano's scheduler runs a session every ``--schedule-period`` (1 s) whatever happened; a pod
created just after a session waits up to a period, then a second one when its PodGroup has to be
enqueued first.  Here a cycle starts when a watched change can change what a session decides:

- a pod of ours that is new and pending, a pod that finished (Succeeded/Failed), is being deleted
  or is gone (its resources come free), any pod bound to a node that goes (another scheduler's too);
- a PodGroup added or deleted, or whose spec or phase differs from what the cache holds (the cache
  holds the status this process wrote, so the echo of its own status write is no change);
- a node added, deleted, or changed in what a predicate or score reads (labels, annotations, taints,
  unschedulable, allocatable, Ready), not in its heartbeat times;
- a queue added, deleted, or changed in its spec or state (opened, closed); not its ``allocated``,
  which this process writes;
- any change of the other kinds the cache watches (PriorityClasses, HyperNodes, PDBs,
  ResourceQuotas, and any kind added later), the scheduler conf, and a PodGroup handed over by the
  podgroup controller in this process.

A change is ``poke``d; the loop (runtime.Runtime.run) then waits a short coalescing window so that
a burst of creates becomes one cycle, and ``--schedule-period`` stays the upper bound between two
cycles for the periodic work (sla's waiting times, tdm's windows, a bind that failed).  A change
that arrives while a cycle runs starts the next one once it ends: the flag is cleared as the
snapshot is taken, never after.  Nothing a session decides depends on why it started, so every
decision is the one the periodic loop would make on the same cache.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping
from typing import Any

from ..cache import Cache
from .api import NODES, PODGROUPS, PODS, QUEUES, Kind
from .source import Handler, object_key

TERMINAL_PHASES = ("Succeeded", "Failed")


class CycleTrigger:
    """The flag the loop waits on, and why it was set (counted by reason, for the log and tests)."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        self.work = asyncio.Event()
        self.reasons: Counter[str] = Counter()
        self._node_sigs: dict[str, tuple] = {}
        self._queue_sigs: dict[str, tuple] = {}

    def poke(self, reason: str) -> None:
        self.reasons[reason] += 1
        self.work.set()

    def take(self) -> None:
        """A cycle is about to snapshot the cache: what came before is in it."""
        self.work.clear()

    def wrap(self, kind: Kind, handler: Handler) -> Handler:
        """``handler`` (a reflector's), poking when the change it carries can change a decision."""
        if kind == PODS:
            return _Wrapped(handler, self._pod_upsert, self._pod_delete)
        if kind == PODGROUPS:
            return _Wrapped(handler, self._podgroup_upsert, self._podgroup_delete)
        if kind == NODES:
            return _Wrapped(handler, self._node_upsert, self._node_delete)
        if kind == QUEUES:
            return _Wrapped(handler, self._queue_upsert, self._queue_delete)
        reason = kind.plural
        return _Wrapped(handler, lambda obj, apply: (apply(obj), self.poke(reason)),
                        lambda obj, apply: (apply(obj), self.poke(reason)))

    # -- pods -------------------------------------------------------------------------------------

    def _pod_upsert(self, obj: dict[str, Any], apply: Any) -> None:
        meta = obj.get("metadata") or {}
        old = self.cache.tasks.get(meta.get("uid") or "")
        apply(obj)
        if old is None:
            spec = obj.get("spec") or {}
            if not spec.get("nodeName") and self.cache.responsible_for(obj) and not meta.get("deletionTimestamp"):
                self.poke("pod pending")
            return
        old_pod = old.pod
        if meta.get("deletionTimestamp") and not (old_pod.get("metadata") or {}).get("deletionTimestamp"):
            self.poke("pod deleting")
        elif (obj.get("status") or {}).get("phase") in TERMINAL_PHASES and \
                (old_pod.get("status") or {}).get("phase") not in TERMINAL_PHASES:
            self.poke("pod finished")

    def _pod_delete(self, obj: dict[str, Any], apply: Any) -> None:
        known = (obj.get("metadata") or {}).get("uid") in self.cache.tasks
        apply(obj)
        if known or (obj.get("spec") or {}).get("nodeName"):
            self.poke("pod deleted")

    # -- podgroups --------------------------------------------------------------------------------

    def _podgroup_sig(self, key: str) -> tuple | None:
        job = self.cache.jobs.get(key)
        pg = job.podgroup if job is not None else None
        if pg is None:
            return None
        return (pg.min_member, tuple(sorted(pg.min_task_member.items())), pg.queue or self.cache.default_queue,
                pg.priority_class_name, repr(pg.min_resources_list), tuple(sorted(pg.annotations.items())), pg.phase)

    def _podgroup_upsert(self, obj: dict[str, Any], apply: Any) -> None:
        key = _ns_key(obj)
        before = self._podgroup_sig(key)
        apply(obj)
        if self._podgroup_sig(key) != before:
            self.poke("podgroup")

    def _podgroup_delete(self, obj: dict[str, Any], apply: Any) -> None:
        apply(obj)
        self.poke("podgroup deleted")

    # -- nodes ------------------------------------------------------------------------------------

    def _node_upsert(self, obj: dict[str, Any], apply: Any) -> None:
        apply(obj)
        name = (obj.get("metadata") or {}).get("name") or ""
        sig = node_signature(obj)
        if self._node_sigs.get(name) != sig:
            self._node_sigs[name] = sig
            self.poke("node")

    def _node_delete(self, obj: dict[str, Any], apply: Any) -> None:
        apply(obj)
        self._node_sigs.pop((obj.get("metadata") or {}).get("name") or "", None)
        self.poke("node deleted")

    # -- queues -----------------------------------------------------------------------------------

    def _queue_upsert(self, obj: dict[str, Any], apply: Any) -> None:
        apply(obj)
        name = (obj.get("metadata") or {}).get("name") or ""
        sig = (repr(obj.get("spec")), (obj.get("status") or {}).get("state"),
               repr((obj.get("metadata") or {}).get("annotations")))
        if self._queue_sigs.get(name) != sig:
            self._queue_sigs[name] = sig
            self.poke("queue")

    def _queue_delete(self, obj: dict[str, Any], apply: Any) -> None:
        apply(obj)
        self._queue_sigs.pop((obj.get("metadata") or {}).get("name") or "", None)
        self.poke("queue deleted")


def node_signature(node: Mapping[str, Any]) -> tuple:
    """What a node's predicates and scores read, without the times a kubelet refreshes."""
    meta = node.get("metadata") or {}
    status = node.get("status") or {}
    ready = next((c.get("status") for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    return (repr(meta.get("labels")), repr(meta.get("annotations")), repr(node.get("spec")),
            repr(status.get("allocatable")), repr(status.get("capacity")), ready)


def _ns_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}" if meta.get("name") else object_key(obj)


class _Wrapped:
    """A reflector handler whose upsert and delete go through ``on_upsert(obj, apply)`` / ``on_delete``
    (attributes, like the feeder's handlers, so a test may replace one)."""

    def __init__(self, handler: Handler, on_upsert: Any, on_delete: Any) -> None:
        self.handler = handler
        self.upsert = lambda obj: on_upsert(obj, handler.upsert)
        self.delete = lambda obj: on_delete(obj, handler.delete)


async def wait_for_work(trigger: CycleTrigger, period: float, coalesce: float, *others: asyncio.Future[Any],
                        not_before: float = 0.0) -> None:
    """Until there is work, then up to ``coalesce`` seconds more (so that a burst is one cycle) and not
    before loop time ``not_before`` (the gap a cycle leaves after itself); or until ``period`` seconds have
    passed, or one of ``others`` is done.  Work that comes long after the last cycle waits only the
    coalescing window: the gap is measured from that cycle's end, not from the work."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + period
    woken = asyncio.ensure_future(trigger.work.wait())
    try:
        done, _ = await asyncio.wait([woken, *others], timeout=period, return_when=asyncio.FIRST_COMPLETED)
    finally:
        woken.cancel()
    now = loop.time()
    window = min(max(coalesce, not_before - now), deadline - now)
    if woken in done and window > 0 and not any(o.done() for o in others):
        if others:
            await asyncio.wait(others, timeout=window)
        else:
            await asyncio.sleep(window)


def touched_jobs(effects: list[Any]) -> tuple[set[str], set[str]]:
    """What a session's effects name: the PodGroups (namespace/name) of status writes and events, and
    the pods (uid, or namespace/name) of binds, evictions, conditions and events.  Those jobs' clones
    are not reused by the next snapshot (Cache.keep_clones)."""
    from ..framework.effects import Bind, Event, Evict, PodCondition, PodGroupStatus

    groups: set[str] = set()
    pods: set[str] = set()
    for e in effects:
        if isinstance(e, (Bind, Evict)):
            pods.add(e.uid)
        elif isinstance(e, PodGroupStatus):
            groups.add(f"{e.namespace}/{e.name}")
        elif isinstance(e, PodCondition):
            pods.add(f"{e.namespace}/{e.name}")
        elif isinstance(e, Event):
            (groups if e.kind == "PodGroup" else pods).add(f"{e.namespace}/{e.name}")
    return groups, pods
