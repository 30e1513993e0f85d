"""The queue controller's part of the controllers (Volcano's queue controller: syncQueue, openQueue,
closeQueue), a mixin of ``Controllers`` (controllers.py), whose indexes, locks, client, events and
retries it uses."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ..controllers.queue import SYNC_QUEUE, reconcile_queue_request
from .api import MERGE_PATCH, QUEUES

if TYPE_CHECKING:
    from ..metrics import ControllerMetrics
    from .api import ApiError, KubeClient
    from .lister import Lister

QUEUE_SYNC_DELAY = 0.5  # seconds a queue's PodGroup changes gather before one syncQueue (each counts them all)


class QueueController:
    """Queue requests, each retried, one at a time per queue; a burst of PodGroup changes is one sync."""

    # what Controllers provides
    client: KubeClient
    queues: Lister
    podgroups: Lister
    metrics: ControllerMetrics
    _queue_syncs: dict[str, asyncio.Task[None]]
    _locks: dict[str, asyncio.Lock]

    if TYPE_CHECKING:
        def _spawn(self, coro: Any) -> asyncio.Task[Any]: ...
        async def _retrying(self, what: str, fn: Any) -> ApiError | None: ...
        async def event(self, obj: Any, type_: str, reason: str, message: str) -> None: ...

    def queue_changed(self, name: str) -> None:
        """A PodGroup of queue ``name`` came, went or changed phase: one syncQueue soon, however many of
        its PodGroups change meanwhile, as Volcano's queue controller holds a queue's request once in
        its work queue.  (A sync per PodGroup event would count the queue's PodGroups once per event:
        quadratic in a burst of new PodGroups.)"""
        if name and name not in self._queue_syncs:
            self._queue_syncs[name] = self._spawn(self._sync_queue_soon(name))

    async def _sync_queue_soon(self, name: str) -> None:
        await asyncio.sleep(QUEUE_SYNC_DELAY)
        del self._queue_syncs[name]  # a change from now on asks for another sync
        await self.sync_queue(name)

    async def queue_syncs_done(self) -> None:
        """Wait for the queue syncs that are due (``queue_changed``), and for those they lead to."""
        while self._queue_syncs:
            await asyncio.gather(*self._queue_syncs.values(), return_exceptions=True)

    async def sync_queue(self, name: str, action: str = SYNC_QUEUE) -> None:
        """One queue request (syncQueue / openQueue / closeQueue), retried; follow-up requests after it."""
        if not name:
            return
        follow: list[tuple[str, str]] = []

        async def once() -> None:
            follow[:] = await self._sync_queue_once(name, action)

        error = await self._retrying(f"{action} queue {name}", once)
        if error is not None:  # Volcano after --max-requeue-num: one Warning event
            await self.event({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                              "metadata": {"name": name}},
                             "Warning", action, f"{action} queue failed for {error}")
        for target, follow_action in follow:
            await self.sync_queue(target, follow_action)

    async def _sync_queue_once(self, name: str, action: str) -> list[tuple[str, str]]:
        follow: list[tuple[str, str]] = []
        async with self._locks.setdefault(f"queue/{name}", asyncio.Lock()):
            queue = self.queues.get(None, name)
            if queue is None:
                return []
            queues = self.queues.objects
            podgroups = self.podgroups.indexed(("queue", name))  # the index's: also those whose events are still queued
            count = len(podgroups)
            # syncQueue (open and close run it too) counts the queue's PodGroups by phase for the metrics
            self.metrics.queue_pod_groups(name, [(pg.get("status") or {}).get("phase") or "" for pg in podgroups])
            out = reconcile_queue_request(queue, action, count, queues)
            if out.error:
                await self.event(queue, "Warning", action, f"{action} queue failed for {out.error}")
                return []
            if out.set_parent:
                self.queues.observe(await self.client.request(
                    "PATCH", QUEUES.path(None, name), content_type=MERGE_PATCH,
                    body={"spec": {"parent": out.set_parent}}))
            if out.state is not None:
                self.queues.observe(await self.client.request(
                    "PATCH", QUEUES.path(None, name, "status"), content_type=MERGE_PATCH,
                    body={"status": {"state": out.state}}))
            for target, wanted in out.annotations.items():
                current = ((queues.get(target) or {}).get("metadata") or {}).get("annotations") or {}
                if target in queues and any(current.get(k) != v for k, v in wanted.items()):
                    self.queues.observe(await self.client.request(
                        "PATCH", QUEUES.path(None, target), content_type=MERGE_PATCH,
                        body={"metadata": {"annotations": wanted}}))
            for type_, reason, message in out.events:
                await self.event(queue, type_, reason, message)
            follow = out.requests
        return follow
