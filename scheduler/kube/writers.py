"""What the sink writes in the background, each as client-go's machinery would: ``Retry`` (a retriable
API error tried again with backoff), ``EventRecorder`` (v1 Events through a bounded queue, with
client-go's spam filter and correlator: a repeat is a PATCH of count and lastTimestamp) and ``Writes``
(status writes, one in flight per object, the latest asked for replacing one that waits, a kind's
writes of one object spaced).  scheduler/kube/sink.py dispatches a session's effects to them.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import structlog

from ..framework.effects import Effect
from .api import EVENTS, MERGE_PATCH, ApiError, KubeClient, warn_unless_denied
from .source import Backoff, rfc3339

log = structlog.get_logger("vcsched.kube.sink")

EVENT_CACHE = 4096
EVENT_QUEUE = 1000  # client-go's broadcaster queue length
# client-go's EventSourceObjectSpamFilter: per source and object, a burst of 25 events, then one per 5 min
SPAM_BURST, SPAM_QPS = 25, 1 / 300
KIND_API_VERSION = {"Pod": "v1", "PodGroup": "scheduling.volcano.sh/v1beta1", "ConfigMap": "v1",
                    "HyperNode": "topology.volcano.sh/v1alpha1"}


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
    """v1 Events as Volcano's recorder writes them; repeats patch count and lastTimestamp.

    ``emit`` never waits for the API, as client-go's broadcaster does not: events wait in a queue
    of ``capacity`` and ``workers`` tasks write them.  When the queue is full an event is dropped
    and counted (client-go drops too), so a burst of events never slows a session or a bind.
    Like client-go's spam filter, an object gets a burst of SPAM_BURST events, then one per
    1/SPAM_QPS seconds (a pod pending for an hour is not an event write per session).
    ``record`` writes one event and waits for it.
    """

    def __init__(self, client: KubeClient, component: str, host: str = "", *, workers: int = 8,
                 capacity: int = EVENT_QUEUE) -> None:
        self.client = client
        self.component = component
        self.host = host
        self.workers = workers
        self.capacity = capacity
        self.dropped = 0
        self._seen: OrderedDict[tuple[str, ...], tuple[str, int]] = OrderedDict()
        self._queue: asyncio.Queue[tuple[str, ...]] | None = None
        self._workers: list[asyncio.Task[None]] = []
        self._tokens: OrderedDict[tuple[str, ...], tuple[float, float]] = OrderedDict()  # object → (tokens, at)
        self.filtered = 0

    def _allow(self, key: tuple[str, ...]) -> bool:
        """client-go's token bucket per source and object (LRU of EVENT_CACHE objects)."""
        now = time.monotonic()
        tokens, at = self._tokens.pop(key, (float(SPAM_BURST), now))
        tokens = min(float(SPAM_BURST), tokens + (now - at) * SPAM_QPS)
        allowed = tokens >= 1.0
        self._tokens[key] = (tokens - 1.0 if allowed else tokens, now)
        if len(self._tokens) > EVENT_CACHE:
            self._tokens.popitem(last=False)
        return allowed

    def emit(self, kind: str, namespace: str, name: str, uid: str, type_: str, reason: str, message: str) -> None:
        if not self._allow((kind, namespace, name, uid)):
            self.filtered += 1
            return
        if self._queue is None:
            self._queue = asyncio.Queue(self.capacity)
            self._workers = [asyncio.create_task(self._work()) for _ in range(self.workers)]
        try:
            self._queue.put_nowait((kind, namespace, name, uid, type_, reason, message))
        except asyncio.QueueFull:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning("event queue full; events dropped", dropped=self.dropped, reason=reason,
                            object=f"{namespace}/{name}")

    async def _work(self) -> None:
        assert self._queue is not None
        while True:
            event = await self._queue.get()
            try:
                await self.record(*event)
            finally:
                self._queue.task_done()

    async def flush(self, timeout: float | None = None) -> bool:
        """Wait until every emitted event is written (at most ``timeout`` seconds); whether they were."""
        if self._queue is None:
            return True
        try:
            await asyncio.wait_for(self._queue.join(), timeout)
            return True
        except TimeoutError:
            return False

    async def close(self) -> None:
        for t in self._workers:
            t.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers, self._queue = [], None

    async def record(self, kind: str, namespace: str, name: str, uid: str, type_: str, reason: str,
                     message: str) -> None:
        key = (kind, namespace, name, uid, type_, reason, message)
        now = rfc3339()
        seen = self._seen.get(key)
        # a cluster-scoped object ("" namespace): its events live in default, as client-go writes them
        ev_ns = namespace or "default"
        try:
            if seen is not None:
                ev_name, count = seen
                await self.client.request("PATCH", EVENTS.path(ev_ns, ev_name), content_type=MERGE_PATCH,
                                          body={"count": count + 1, "lastTimestamp": now})
                self._seen[key] = (ev_name, count + 1)
                self._seen.move_to_end(key)
                return
        except ApiError as e:
            if e.status != 404:
                warn_unless_denied(log, "event not recorded", e, reason=reason, object=f"{namespace}/{name}")
                return
            # the event expired on the server: write a new one
        ev_name = f"{name}.{uuid.uuid4().hex[:16]}"
        involved = {"kind": kind, "namespace": namespace, "name": name, "uid": uid,
                    "apiVersion": KIND_API_VERSION.get(kind, "v1")}
        if not namespace:
            del involved["namespace"]
        body = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": ev_name, "namespace": ev_ns},
            "involvedObject": involved,
            "reason": reason, "message": message, "type": type_,
            "source": {"component": self.component, **({"host": self.host} if self.host else {})},
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
            "reportingComponent": self.component, "reportingInstance": self.host,
        }
        try:
            await self.client.request("POST", EVENTS.path(ev_ns), body=body)
        except ApiError as e:
            warn_unless_denied(log, "event not recorded", e, reason=reason, object=f"{namespace}/{name}")
            return
        self._seen[key] = (ev_name, 1)
        if len(self._seen) > EVENT_CACHE:
            self._seen.popitem(last=False)


class Writes:
    """Writes in the background, at most ``workers`` at once, one at a time per object, and only the
    latest asked for: what the API must hold in the end.

    A write asked for while the object waits for a slot replaces the one waiting (a PodGroup that
    went Inqueue and then Running before its turn came is written once, Running); one asked for
    while the object's write is in flight goes after it, unless it is the same write.  A session
    therefore never waits for the status writes of the one before it, and the busier the API
    server, the fewer writes it is sent.

    ``spacing`` (by an object key's kind) is the least time between two writes of one object: a
    queue's ``status.allocated`` changes with every pod placed, and Volcano, one session per period,
    writes it at most once a period; cycles that start on every change would write it for every pod.
    (The first write of an object goes at once.)
    """

    def __init__(self, workers: int, spacing: Mapping[str, float] | None = None) -> None:
        self._slots = asyncio.Semaphore(workers)
        self._spacing = dict(spacing or {})
        self._written: dict[Any, float] = {}  # object with a spacing → loop time its last write ended
        self._next: dict[Any, Effect] = {}  # object → the latest write asked for, not sent yet
        self._sent: dict[Any, Effect] = {}  # object → its write in flight
        self._tasks: dict[Any, asyncio.Task[None]] = {}  # object → the task that writes it

    def submit(self, key: Any, effect: Effect, write: Callable[[Effect], Awaitable[None]]) -> None:
        if self._sent.get(key) == effect:
            self._next.pop(key, None)
            return
        self._next[key] = effect
        if key not in self._tasks:
            self._tasks[key] = asyncio.create_task(self._run(key, write))

    async def _run(self, key: Any, write: Callable[[Effect], Awaitable[None]]) -> None:
        spacing = self._spacing.get(key[0], 0.0)
        loop = asyncio.get_running_loop()
        try:
            while key in self._next:
                if spacing:
                    wait = self._written.get(key, -spacing) + spacing - loop.time()
                    if wait > 0:
                        await asyncio.sleep(wait)  # what is asked for meanwhile replaces what waits
                async with self._slots:
                    effect = self._next.pop(key, None)
                    if effect is None:
                        break
                    self._sent[key] = effect
                    try:
                        await write(effect)
                    finally:
                        del self._sent[key]
                        if spacing:
                            self._written[key] = loop.time()
        finally:
            del self._tasks[key]
            written = self._written.get(key)
            if written is not None:  # forgotten once it no longer holds a write back (one per pod waiting)
                loop.call_at(written + spacing, self._forget, key, written)

    def _forget(self, key: Any, written: float) -> None:
        if self._written.get(key) == written and key not in self._tasks:
            del self._written[key]

    def __len__(self) -> int:
        return len(self._next) + len(self._sent)

    def __contains__(self, key: Any) -> bool:
        """Whether a write of ``key`` waits (for a slot or its spacing) or is under way."""
        return key in self._next or key in self._sent

    async def drain(self, deadline: float | None) -> bool:
        """Wait for every write, those that wait their turn included, until the loop time ``deadline``."""
        loop = asyncio.get_running_loop()
        while self._tasks:
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                return False
            await asyncio.wait(list(self._tasks.values()), timeout=left)
        return True

    async def cancel(self) -> None:
        self._next.clear()
        tasks = list(self._tasks.values())
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
