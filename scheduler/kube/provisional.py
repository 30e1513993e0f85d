"""No API round trip before the first decision: a bare pod's PodGroup as the controller will make it.

Volcano's path for a bare pod (no group annotation) is: the podgroup controller creates
``podgroup-<pod uid>``, annotates the pod, and a later scheduling session enqueues and places it.
With the controllers in this process the PodGroup is known before it is written: for a pod with no
owner at all the controller's PodGroup is ``podgroup_for_pod`` of the pod alone (minMember 1, no
owner's annotations to read).  So the scheduler puts that PodGroup in its cache the moment its watch
brings the pod, and the pod's first cycle enqueues and allocates it, while the controller writes it.

The order, which makes it safe:

1. the pod is seen → the predicted PodGroup enters the cache, the pod joins it (``predict``), and the
   controller's create starts at once (``Controllers.podgroup_soon``), not when the controllers' own
   watch brings the pod;
2. a cycle decides (enqueue and allocate, as in any session) → the pod is assumed on its node at
   once, but its Binding, the PodGroup's status write and its Events wait;
3. the controller's create answers → the PodGroup it made replaces the predicted one in the cache and
   is compared with it (``confirm``): the same in everything a decision reads (minMember,
   minTaskMember, queue, priority class, minResources, annotations) → the Binding and the status go
   out; otherwise (someone made ``podgroup-<uid>`` differently first: 409, the existing one is used)
   → the Binding is never sent, the pod is pending again, and the next cycle decides on the real one;
4. the create fails for good, or no answer comes within ``timeout`` → as 3's mismatch, and the
   predicted PodGroup leaves the cache: the pod waits for its PodGroup as in Volcano.

So nothing is bound that Volcano's path would not bind: a Binding never precedes its PodGroup, and
never rests on a PodGroup other than the one the API holds.  A pod with an owner (ReplicaSet, Job,
...) keeps the usual path: its PodGroup may be shared and takes the owners' annotations, read from
the API.  The predicted PodGroup's creation time is the pod's (the controller's is a moment later),
the only thing in which it may differ from the real one: it orders jobs created within one second.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from ..cache import podgroup_from
from ..controllers.podgroup import needs_podgroup, network_topology, podgroup_for_pod

if TYPE_CHECKING:
    from .source import CacheFeeder

log = structlog.get_logger("vcsched.kube.provisional")


@dataclass(slots=True)
class Provisional:
    """A pod's predicted PodGroup, until the controller's create has answered."""

    uid: str  # the pod's
    key: str  # the PodGroup's namespace/name
    predicted: dict[str, Any]
    made: asyncio.Future[bool]  # True: the API holds this PodGroup; False: it does not (or not as predicted)
    # the timeout's timer, cancelled when the create answers: else the loop holds every settled prediction
    # (its PodGroup manifest, its future) for the whole timeout (peak RSS 458-459 -> 449-453 MiB in
    # ``vcsched bench --apiserver --scheduler vcsched --nodes 500 --pods 5000``)
    expiry: asyncio.TimerHandle | None = None


class ProvisionalGroups:
    """The predictions in flight, by pod uid; the feeder calls ``predict``, the runtime ``confirm`` and
    ``failed``, the sink waits on ``waiting`` / ``group_waiting``."""

    def __init__(self, feeder: CacheFeeder, scheduler_names: tuple[str, ...], inherit_owner_annotations: bool,
                 timeout: float = 30.0) -> None:
        self.feeder = feeder
        self.scheduler_names = scheduler_names
        self.inherit = inherit_owner_annotations
        self.timeout = timeout
        self.by_uid: dict[str, Provisional] = {}
        self.by_group: dict[str, Provisional] = {}
        self.predicted = self.confirmed = self.refused = 0
        # whether this process's podgroup controller runs (Runtime.controllers_started): a standby's
        # controllers wait for the Lease, so a prediction it made would never be confirmed, and a pod
        # it saw would be decided, on leading, on a PodGroup the old leader may have made otherwise
        self.active = False
        # the controller's create of a predicted PodGroup, started at once (Controllers.podgroup_soon):
        # the pod's Binding waits for its answer, so it must not wait for another watch to bring the pod
        self.make: Callable[[Mapping[str, Any]], None] | None = None

    def predict(self, pod: Mapping[str, Any]) -> bool:
        """A pod first seen: when its PodGroup can be known now, it enters the cache and the pod joins
        it.  Whether it did."""
        meta = pod.get("metadata") or {}
        uid = meta.get("uid") or ""
        if (not self.active or not uid or uid in self.feeder.owed or uid in self.by_uid or meta.get("ownerReferences")
                or meta.get("deletionTimestamp") or (pod.get("spec") or {}).get("nodeName")
                or not needs_podgroup(pod, self.scheduler_names)
                or network_topology(meta.get("annotations") or {}) is not None):
            return False
        manifest = podgroup_for_pod(pod, {} if self.inherit else None)
        manifest["metadata"].pop("uid", None)  # not known before the create answers
        key = f"{manifest['metadata']['namespace']}/{manifest['metadata']['name']}"
        cache = self.feeder.cache
        job = cache.jobs.get(key)
        if job is not None and job.podgroup is not None:
            return False  # the API's PodGroup is here already
        p = Provisional(uid, key, manifest, asyncio.get_running_loop().create_future())
        self.by_uid[uid] = self.by_group[key] = p
        self.predicted += 1
        cache.update_podgroup(manifest)
        self.feeder.owe_provisionally(pod, manifest["metadata"]["name"])
        p.expiry = asyncio.get_running_loop().call_later(self.timeout, self._expire, p)
        if self.make is not None:
            self.make(pod)
        return True

    def confirm(self, uid: str, stored: Mapping[str, Any]) -> bool:
        """The controller's create answered with ``stored`` (already in the cache): the Binding goes out
        when it is the PodGroup predicted.  Whether it was (the prediction held: nothing to decide again)."""
        p = self.by_uid.get(uid)
        if p is None:
            return False
        same = self._decides_alike(p.predicted, stored)
        self._settle(p, same, drop_from_cache=False)
        if not same:
            log.info("PodGroup made otherwise than predicted; the pod is decided again", podgroup=p.key)
        return same

    def may_carry_status(self, obj: Mapping[str, Any]) -> bool:
        """Whether PodGroup ``obj`` (from the watch, or the create's answer) may take the status the
        sessions gave its prediction (CacheFeeder.with_asked_status): yes unless a prediction of that name
        waits for its create and ``obj`` is not the PodGroup predicted (made otherwise: that status is
        never written to it)."""
        if not self.by_group:
            return True
        meta = obj.get("metadata") or {}
        p = self.by_group.get(f"{meta.get('namespace') or 'default'}/{meta.get('name')}")
        return p is None or self._decides_alike(p.predicted, obj)

    def failed(self, uid: str) -> None:
        """The controller could not make the pod's PodGroup: nothing waiting on it goes out."""
        p = self.by_uid.get(uid)
        if p is not None:
            self._settle(p, False, drop_from_cache=True)

    def waiting(self, uid: str) -> asyncio.Future[bool] | None:
        """What a Binding of pod ``uid`` waits for (None: nothing)."""
        p = self.by_uid.get(uid)
        return p.made if p is not None else None

    def group_waiting(self, namespace: str, name: str) -> asyncio.Future[bool] | None:
        """What a write about PodGroup ``namespace/name`` (its status, an Event) waits for (None: nothing)."""
        p = self.by_group.get(f"{namespace}/{name}")
        return p.made if p is not None else None

    def _expire(self, p: Provisional) -> None:
        if self.by_uid.get(p.uid) is p:
            log.warning("no PodGroup made for a bare pod in time; the pod waits for it", podgroup=p.key,
                        seconds=self.timeout)
            self._settle(p, False, drop_from_cache=True)

    def _settle(self, p: Provisional, made: bool, drop_from_cache: bool) -> None:
        if p.expiry is not None:
            p.expiry.cancel()
        del self.by_uid[p.uid]
        if self.by_group.get(p.key) is p:
            del self.by_group[p.key]
        if made:
            self.confirmed += 1
        else:
            self.refused += 1
            self.feeder.forget_provisional(p.uid, p.key, drop_from_cache)
        if not p.made.done():
            p.made.set_result(made)

    def _decides_alike(self, predicted: Mapping[str, Any], stored: Mapping[str, Any]) -> bool:
        """The same PodGroup in what a session reads of it, the API server's defaults applied."""
        default = self.feeder.cache.default_queue
        a, b = podgroup_from(predicted), podgroup_from(stored)
        return ((a.min_member, a.min_task_member, a.queue or default, a.priority_class_name, a.min_resources,
                 a.annotations) ==
                (b.min_member, b.min_task_member, b.queue or default, b.priority_class_name, b.min_resources,
                 b.annotations))
