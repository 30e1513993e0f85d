"""The controllers' informers: one Reflector per watched kind, its index, and its events to a handler.

client-go's shared informer, in the controllers' terms: a ``Reflector`` (scheduler/kube/source.py:
paged list, watch from its resourceVersion, relist after 410 Gone with what vanished deleted) keeps
a ``Lister``'s index current, and each change reaches the kind's handler as an event: ``type`` None
for an object of the initial list, ``ADDED``, ``MODIFIED`` or ``DELETED``, and ``body`` the object.

- No handler runs before every informer of the set has its initial list (Volcano's WaitForCacheSync):
  a handler reads the other kinds' listers.
- One object's events (one name's: a deleted object and the one made again under its name) are
  handled in order, one at a time; different names concurrently.
- The index holds an event before any handler sees it, so a handler reads a lister at least as new
  as the event it handles.

Why not kopf, which the controllers used first: kopf processes each event through its whole
operator machinery (memories, throttlers, causes, a worker per object) and, while its indexes load,
wakes every waiting object's worker for every object indexed: quadratic in the backlog.  Measured on
a real API server (``vcsched bench --apiserver``), 5,000 pending pods kept the controllers busy for
90 s before the first PodGroup was made.  kopf also never drops an index entry on a relist; the
Reflector does, as client-go's Replace.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from .api import Kind, KubeClient
from .source import Backoff, Reflector, object_key

log = structlog.get_logger("vcsched.controllers")

Handler = Callable[..., Awaitable[None]]


class InformerSet:
    """The informers of one controller process; ``run()`` until cancelled, ``synced`` once all have listed."""

    def __init__(self, client: KubeClient, *, watch_timeout: float = 300.0,
                 watch_backoff: tuple[float, float] = (0.2, 10.0)) -> None:
        self.client = client
        self.watch_timeout = watch_timeout
        self.watch_backoff = watch_backoff
        self.reflectors: list[Reflector] = []
        self.synced = asyncio.Event()  # every initial list is indexed: handlers may run
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}  # (plural, object) → its events' turn
        self._queued: dict[tuple[str, str], int] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def add(self, kind: Kind, lister: Any | None, handler: Handler | None, *, namespace: str | None = None,
            field_selector: str | None = None, optional: bool = False) -> None:
        """Watch ``kind`` (all namespaces, or ``namespace``; ``field_selector``: those objects only):
        ``lister`` (a Lister, or None) indexes it; ``handler`` (or None) gets its events.  ``optional``: a
        kind the API server may not serve (its CRD not installed) is taken as empty until it is."""
        base, cap = self.watch_backoff
        feed = _Feed(self, kind.plural, lister, handler)
        self.reflectors.append(Reflector(self.client, kind, feed, watch_timeout=self.watch_timeout,
                                         backoff=Backoff(base, cap), namespace=namespace,
                                         field_selector=field_selector, optional=optional))

    async def run(self) -> None:
        tasks = [asyncio.ensure_future(r.run()) for r in self.reflectors]
        try:
            await asyncio.gather(*(r.synced.wait() for r in self.reflectors))
            self.synced.set()
            log.info("controllers' caches synced", kinds=[r.kind.plural for r in self.reflectors])
            await asyncio.gather(*tasks)
        finally:
            for t in (*tasks, *self._tasks):
                t.cancel()
            await asyncio.gather(*tasks, *self._tasks, return_exceptions=True)

    def dispatch(self, plural: str, type_: str | None, obj: dict[str, Any], lister: Any | None,
                 handler: Handler | None) -> None:
        # by namespace/name, as client-go's work queues: an object deleted and made again under its
        # name is handled in that order (its DELETED never after the new one's ADDED)
        key = (plural, object_key(obj))
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        self._queued[key] = self._queued.get(key, 0) + 1
        task = asyncio.ensure_future(self._handle(key, lock, type_, obj, lister, handler))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _handle(self, key: tuple[str, str], lock: asyncio.Lock, type_: str | None, obj: dict[str, Any],
                      lister: Any | None, handler: Handler | None) -> None:
        try:
            async with lock:  # asyncio.Lock wakes its waiters first come, first served: events in order
                await self.synced.wait()
                if lister is not None:
                    lister.seen(type_, obj)
                if handler is not None:
                    try:
                        await handler(type=type_, body=obj)
                    except asyncio.CancelledError:
                        raise
                    except Exception:
                        log.exception("handler failed", kind=key[0], object=object_key(obj), event=type_)
        finally:
            left = self._queued[key] - 1
            if left:
                self._queued[key] = left
            else:
                del self._queued[key]
                del self._locks[key]


class _Feed:
    """A Reflector's handler: the lister's index first, then the event for the handler."""

    __slots__ = ("informers", "plural", "lister", "handler", "known")

    def __init__(self, informers: InformerSet, plural: str, lister: Any | None, handler: Handler | None) -> None:
        self.informers = informers
        self.plural = plural
        self.lister = lister
        self.handler = handler
        self.known: set[str] = set()  # object keys indexed (ADDED or MODIFIED)

    def upsert(self, obj: dict[str, Any]) -> None:
        key = object_key(obj)
        if not self.informers.synced.is_set() and key not in self.known:
            type_: str | None = None  # the initial list, as kopf and Volcano's informers report it
        else:
            type_ = "MODIFIED" if key in self.known else "ADDED"
        self.known.add(key)
        if self.lister is not None:
            self.lister.index_object(obj)
        self.informers.dispatch(self.plural, type_, obj, self.lister, self.handler)

    def delete(self, obj: dict[str, Any]) -> None:
        self.known.discard(object_key(obj))
        if self.lister is not None:
            self.lister.unindex_object(obj)
        self.informers.dispatch(self.plural, "DELETED", obj, self.lister, self.handler)


__all__ = ["InformerSet", "Handler"]
