"""The Kubernetes source: list + watch per resource (client-go's reflector), feeding the cache.

The cache needs to know when each initial list is complete (no session before
sync), and a relist after ``410 Gone`` must delete what vanished while the stream
was down, so each resource gets a small reflector (the controllers' informers,
scheduler/kube/informer.py, are built on it too):

- list (paged), replace the store (objects missing from the list are deleted, and
  so is one the list brings back under the same name with another uid: made
  again meanwhile), then watch from the list's resourceVersion with bookmarks;
- a stream that ends or breaks resumes from the last resourceVersion seen, after
  a backoff when it broke; ``410 Gone`` (as an HTTP status or an ERROR event)
  relists;
- an event older than what the store holds for that object is dropped (a replay),
  and the cache itself refuses older resourceVersions as well.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Protocol

import structlog

from ..api.task_info import parse_timestamp
from ..api.types import GROUP_NAME_ANNOTATION
from ..cache import Cache
from ..framework.effects import PodGroupStatus
from ..metrics import Metrics
from ..sim.dra_manifest import dra_problem
from .api import (
    DEVICE_CLASSES,
    HYPERNODES,
    NODES,
    NUMATOPOLOGIES,
    PDBS,
    PODGROUPS,
    PODS,
    PRIORITY_CLASSES,
    QUEUES,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    RESOURCE_QUOTAS,
    RESOURCE_SLICES,
    ApiError,
    KubeClient,
    Kind,
    warn_unless_denied,
)

log = structlog.get_logger("vcsched.kube.source")


class Handler(Protocol):
    def upsert(self, obj: dict[str, Any]) -> None: ...

    def delete(self, obj: dict[str, Any]) -> None: ...


def object_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def _rv(obj: Mapping[str, Any]) -> int | None:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion"))
    except (TypeError, ValueError):
        return None


def _uid(obj: Mapping[str, Any]) -> str | None:
    return (obj.get("metadata") or {}).get("uid")


@dataclass(slots=True)
class Backoff:
    """Exponential backoff with jitter, reset after a success."""

    base: float = 0.2
    cap: float = 10.0
    attempt: int = 0

    def next(self) -> float:
        delay = min(self.cap, self.base * (2 ** self.attempt))
        self.attempt += 1
        return delay * (0.5 + random.random() / 2)

    def reset(self) -> None:
        self.attempt = 0


class Reflector:
    """Keeps ``store`` equal to the API's view of one resource and tells ``handler`` every change."""

    # an optional kind the API does not serve is looked for again this often
    ABSENT_RETRY = 30.0

    def __init__(self, client: KubeClient, kind: Kind, handler: Handler, *, namespace: str | None = None,
                 field_selector: str | None = None, watch_timeout: float = 300.0,
                 backoff: Backoff | None = None, label_selector: str | None = None, optional: bool = False) -> None:
        self.client = client
        self.kind = kind
        self.handler = handler
        self.namespace = namespace
        self.field_selector = field_selector
        self.label_selector = label_selector
        self.watch_timeout = watch_timeout
        self.backoff = backoff or Backoff()
        self.store: dict[str, dict[str, Any]] = {}
        self.resource_version: str | None = None
        self.synced = asyncio.Event()
        self.failing_since: float | None = None  # monotonic time of the first failure since the last success
        self.opened_at: float | None = None  # when the server last accepted a watch
        # a watch stream is open: between one stream's end and the server accepting the next, events may
        # be missed (an API server restarted: the next answer may be a 410), so no session decides then
        self.streaming = False
        self.relisting = False  # a watch answered 410 Gone: the store is stale until the list is in
        # optional: a kind a cluster may not serve (its CRD not installed), which is then taken as empty
        self.optional = optional
        self.absent = False
        self.log = log.bind(resource=kind.plural, namespace=namespace, field_selector=field_selector)

    async def run(self) -> None:
        need_list = True
        while True:
            try:
                if need_list:
                    await self._list()
                    need_list = False
                    self.backoff.reset()
                await self._watch()
                # the server ended the stream (its timeout): resume at once from where we are
                self.failing_since = None
            except ApiError as e:
                if e.status == 410:
                    self.log.info("watch expired, relisting", error=str(e))
                    need_list = self.relisting = True
                    continue
                if e.status == 404 and self.optional:
                    self._not_served()
                    need_list = True
                    await asyncio.sleep(self.ABSENT_RETRY)
                    continue
                self.opened_at = None
                if self.failing_since is None:
                    self.failing_since = time.monotonic()
                delay = self.backoff.next()
                warn_unless_denied(self.log, "list/watch failed, retrying", e, retry_in=round(delay, 3))
                await asyncio.sleep(delay)

    def _not_served(self) -> None:
        """An optional kind the API server does not serve: nothing of it exists, and the cache is synced."""
        if not self.absent:
            self.log.warning("not served by the API server (is its CRD installed?): taken as empty until it is")
        self.absent = True
        self._replace([])
        self.failing_since = None
        self.relisting = False
        self.synced.set()

    async def _list(self) -> None:
        items, self.resource_version = await self.client.list(
            self.kind.path(self.namespace), {"fieldSelector": self.field_selector, "labelSelector": self.label_selector})
        if self.absent:
            self.log.info("served by the API server again")
            self.absent = False
        self._replace(items)
        self.failing_since = None
        self.relisting = False
        self.synced.set()
        self.log.debug("listed", count=len(items), resource_version=self.resource_version)

    def _replace(self, items: list[dict[str, Any]]) -> None:
        fresh = {object_key(obj): obj for obj in items}
        for key in [k for k in self.store if k not in fresh]:
            self.handler.delete(self.store.pop(key))
        for key, obj in fresh.items():
            self._upsert(key, obj)

    def observe(self, obj: dict[str, Any]) -> None:
        """An object as this process's own write returned it: stored and handed on at once, as if
        watched (its watch event, no newer, is then dropped as a replay), so a relist that no longer
        finds it deletes it like any other."""
        self._upsert(object_key(obj), obj)

    def _upsert(self, key: str, obj: dict[str, Any]) -> bool:
        old = self.store.get(key)
        if old is not None and _uid(old) != _uid(obj):
            # deleted and made again under its name while the watch was down (a relist brings the new
            # one only): the old one is deleted first, as the cache keeps pods by uid
            self.handler.delete(old)
        elif old is not None:
            old_rv, new_rv = _rv(old), _rv(obj)
            if old_rv is not None and new_rv is not None and new_rv <= old_rv:
                return False  # a replay of what we hold, or older
        self.store[key] = obj
        self.handler.upsert(obj)
        return True

    def _watching(self) -> None:
        self.opened_at = time.monotonic()  # the server accepted the watch
        self.streaming = True

    # a resumed watch the server accepted and kept open this long without a 410 is up (a 410 comes at once)
    SETTLE = 1.0

    def broken_for(self, now: float) -> float:
        """Seconds since this list/watch failed without a success since (0 when up)."""
        failed = self.failing_since
        if failed is None:
            return 0.0
        opened = self.opened_at
        if opened is not None and opened >= failed and now - opened >= self.SETTLE:
            return 0.0
        return now - failed

    def current(self, now: float) -> bool:
        """Listed, not relisting after a 410, and its watch up and streaming: what the store holds is what
        the API holds but for events in flight."""
        return (self.synced.is_set() and not self.relisting and (self.streaming or self.absent)
                and self.broken_for(now) == 0.0)

    async def _watch(self) -> None:
        query = {"resourceVersion": self.resource_version, "allowWatchBookmarks": "true",
                 "timeoutSeconds": int(self.watch_timeout), "fieldSelector": self.field_selector,
                 "labelSelector": self.label_selector}
        try:
            await self._stream(query)
        finally:
            self.streaming = False

    async def _stream(self, query: dict[str, Any]) -> None:
        # a silent stream longer than the server's own timeout is a dead connection
        async for event in self.client.watch(self.kind.path(self.namespace), query, self.watch_timeout + 30,
                                             self._watching):
            kind = event.get("type")
            obj = event.get("object") or {}
            if kind == "ERROR":
                raise ApiError(int(obj.get("code") or 500), str(obj.get("reason") or ""), obj)
            self.failing_since = None
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if kind == "BOOKMARK":
                self.resource_version = rv or self.resource_version
                continue
            key = object_key(obj)
            if kind in ("ADDED", "MODIFIED"):
                self._upsert(key, obj)
            elif kind == "DELETED":
                old = self.store.get(key)
                if old is not None and (_rv(obj) is None or _rv(old) is None or _rv(obj) >= _rv(old)):
                    del self.store[key]
                    self.handler.delete(obj)
            if rv:
                self.resource_version = rv
            self.backoff.reset()


@dataclass(slots=True)
class Assumed:
    """A pod dispatched to a node whose binding the API has not confirmed yet (kube-scheduler's assume)."""

    node: str
    annotations: dict[str, str]


@dataclass(slots=True)
class OwedGroup:
    """A pod's PodGroup, told in process by the podgroup controller, whose ``scheduling.k8s.io/group-name``
    annotation this process has not written yet."""

    namespace: str
    name: str
    podgroup: str
    since: int  # the feeder's generation when told (or when the pod came, if later): due once a later
    # session has passed the pod by
    sent: bool = False  # its PATCH is out (or done, until the watch shows the annotation)
    # the PodGroup is predicted, its create not answered yet (provisional.py): no PATCH, and the
    # controller is still to make it
    provisional: bool = False


def rfc3339(ts: float | None = None, micro: bool = False) -> str:
    t = datetime.fromtimestamp(time.time() if ts is None else ts, timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def podgroup_status_out(e: PodGroupStatus) -> dict[str, Any]:
    """The PodGroup status a session's write sets, as the API will hold it."""
    conditions = []
    for c in e.conditions:
        out = dict(c)
        for k in ("lastTransitionTime", "lastProbeTime"):
            if isinstance(out.get(k), (int, float)):
                out[k] = rfc3339(out[k])
        conditions.append(out)
    return {"phase": e.phase, "running": e.running, "succeeded": e.succeeded, "failed": e.failed,
            "conditions": conditions}


class CacheFeeder:
    """Turns reflector events into cache calls, and keeps dispatched pods on their node until confirmed.

    A pod is assumed on its node from the moment its Bind effect is dispatched.
    Until a watch event shows it with ``spec.nodeName`` (or the bind fails), any
    newer version of the pod (its own status patch, say) is fed to the cache with
    the assumed node and annotations laid over it, so no later session places it
    twice and its devices stay taken.

    With the controllers in this process, the podgroup controller hands a bare pod's group over
    (``give_group``) instead of writing the pod's annotation first: the pod is in its job for the
    next session at once, and the annotation goes out inside the pod's Binding (Volcano's binder
    sends the pod's annotations with it), or, for a pod a session passed by, as the controller's
    PATCH after that session (``due_groups``).  Either way the API ends with the annotation Volcano's
    controller writes; a bound pod costs one write less, and no session sees its PodGroup without it.
    """

    def __init__(self, cache: Cache, metrics: Metrics | None = None) -> None:
        self.cache = cache
        self.metrics = metrics
        self.pods: dict[str, dict[str, Any]] = {}  # uid → the latest manifest from the API
        self.pod_uids: dict[str, str] = {}  # ns/name → uid
        self.assumed: dict[str, Assumed] = {}
        self.evicting: set[str] = set()  # pods being evicted, Releasing until the API deletes them
        self.owed: dict[str, OwedGroup] = {}  # uid → its group, told in process, annotation not yet seen
        # a bare pod's PodGroup predicted as the controller in this process will make it (provisional.py)
        self.provisional: Any = None
        # the PodGroup statuses sessions have asked for (KubeSink), by namespace/name, until the API has
        # answered the write of the latest: see with_asked_status
        self.asked_status: dict[str, dict[str, Any]] = {}
        # each PodGroup as the API last gave it (the newest of the watch's and the write answers'), by
        # namespace/name: the cache holds it with the statuses still asked for laid over
        self.podgroups: dict[str, dict[str, Any]] = {}
        self.generation = 0  # counts snapshots (``next_generation``)
        # the resource.k8s.io objects are checked as the API server checks them: the CRDs that stand in
        # for them on an older server do not (sim/dra_manifest.py)
        cache.dra.validator = dra_problem

    # -- pods ------------------------------------------------------------------------

    def _feed_pod(self, obj: dict[str, Any]) -> None:
        uid = obj["metadata"].get("uid") or object_key(obj)
        owed = self.owed.get(uid)
        if owed is not None:
            if GROUP_NAME_ANNOTATION in (obj["metadata"].get("annotations") or {}):
                del self.owed[uid]  # the API holds the annotation now
            else:
                obj = with_annotations(obj, {GROUP_NAME_ANNOTATION: owed.podgroup})
        if uid in self.evicting:
            if obj["metadata"].get("deletionTimestamp"):
                self.evicting.discard(uid)
            else:
                obj = with_deletion(obj)
        a = self.assumed.get(uid)
        if a is not None:
            if (obj.get("spec") or {}).get("nodeName") or (obj["metadata"].get("deletionTimestamp")):
                del self.assumed[uid]
            else:
                obj = with_binding(obj, a.node, a.annotations)
        self.cache.update_pod(obj)

    def pod(self, obj: dict[str, Any]) -> None:
        uid = obj["metadata"].get("uid") or object_key(obj)
        if (self.metrics is not None and uid not in self.pods and not (obj.get("spec") or {}).get("nodeName")
                and self.cache.responsible_for(obj)):
            # event_handlers.go · AddPod: an unbound pod of ours entered the cache
            self.metrics.task_stage("Watched", creation_time(obj), time.time())
        if uid not in self.pods and uid in self.owed:
            # told its group before this watch brought it: due after a session that has seen it
            self.owed[uid].since = self.generation
        new = uid not in self.pods
        self.pods[uid] = obj
        self.pod_uids[object_key(obj)] = uid
        if new and self.provisional is not None:
            self.provisional.predict(obj)
        self._feed_pod(obj)

    def pod_deleted(self, obj: dict[str, Any]) -> None:
        uid = obj["metadata"].get("uid") or object_key(obj)
        if self.provisional is not None:
            self.provisional.failed(uid)  # its predicted PodGroup, if any, goes with it
        self.pods.pop(uid, None)
        if self.pod_uids.get(object_key(obj)) == uid:
            del self.pod_uids[object_key(obj)]
        self.assumed.pop(uid, None)
        self.evicting.discard(uid)
        self.owed.pop(uid, None)
        self.cache.delete_pod(uid)

    def podgroup(self, obj: dict[str, Any]) -> None:
        """A watched PodGroup, with the status on its way to the API laid over (``with_asked_status``).
        One predicted in process (provisional.py) can come from the watch before the controller's create
        has answered (two connections): it keeps the status the sessions gave the prediction, written
        once that answer comes; the API's status of the create would have the next cycle enqueue it
        again."""
        self.podgroups[object_key(obj)] = obj
        self.cache.update_podgroup(self.with_asked_status(obj))

    def ask_podgroup_status(self, e: PodGroupStatus) -> dict[str, Any]:
        """A session's PodGroup status, dispatched: in the cache at once (Cache.set_podgroup_status), and
        laid over what the API says of the PodGroup until its write is answered.  The status as asked
        for: the latest ask for the PodGroup while ``asked_status`` holds this very object."""
        key = f"{e.namespace}/{e.name}"
        self.cache.set_podgroup_status(key, e.phase, e.running, e.succeeded, e.failed, e.conditions)
        asked = self.asked_status[key] = podgroup_status_out(e)
        return asked

    def podgroup_status_answered(self, key: str, status: dict[str, Any], obj: dict[str, Any] | None) -> None:
        """The write of ``status`` answered with ``obj`` (None: it failed for good): the API's status from
        now on, unless a later one has been asked for meanwhile."""
        if self.asked_status.get(key) == status:
            del self.asked_status[key]
        if obj is not None and obj.get("metadata"):
            held = self.podgroups.get(key)
            if held is None or (_rv(obj) or 0) >= (_rv(held) or 0):  # an answer may come after a newer event
                self.podgroups[key] = obj
        self._take_api_status(key)

    def _take_api_status(self, key: str) -> None:
        """The cache takes the newest PodGroup the API has given, with a status still on its way laid
        over.  After a write that failed for good, or one that waited on a prediction that was refused,
        that is the API's status back: left ahead of the API, the cache would show every later session
        the status it decides, which then writes nothing, and the API would keep the old one for good."""
        obj = self.podgroups.get(key)
        if obj is not None:
            self.cache.update_podgroup(self.with_asked_status(obj))

    def with_asked_status(self, obj: dict[str, Any]) -> dict[str, Any]:
        """``obj`` (a PodGroup from the watch, or the answer to a write) with the status a session has
        asked for since, while that write is on its way.  The echo of an earlier write (Inqueue, say)
        can come after the next session has moved the PodGroup on (Running): taken as it is, it would
        put the cache back to a status this process has left, and a cycle would start for the change
        and write the later status again.  What is on its way will be the API's status once written."""
        if not self.asked_status:
            return obj
        meta = obj.get("metadata") or {}
        asked = self.asked_status.get(f"{meta.get('namespace') or 'default'}/{meta.get('name')}")
        if asked is None or (self.provisional is not None and not self.provisional.may_carry_status(obj)):
            return obj
        return {**obj, "status": {**(obj.get("status") or {}), **asked}}

    def podgroup_gone(self, obj: dict[str, Any]) -> None:
        key = object_key(obj)
        self.asked_status.pop(key, None)
        self.podgroups.pop(key, None)
        self.cache.delete_podgroup(key)

    # -- groups told in process ------------------------------------------------------------

    def give_group(self, pod: Mapping[str, Any], podgroup: str) -> bool:
        """``pod`` belongs to PodGroup ``podgroup`` (the podgroup controller made it): in its job from
        now on, the annotation owed.  False (the controller writes it) for a pod this scheduler does
        not place."""
        meta = pod.get("metadata") or {}
        if not self.cache.responsible_for(pod) or not meta.get("uid"):
            return False
        uid = meta["uid"]
        self.owed[uid] = OwedGroup(meta.get("namespace") or "default", meta.get("name") or "", podgroup,
                                   self.generation)
        if uid in self.pods:
            self._feed_pod(self.pods[uid])
        return True

    def owes_group(self, uid: str) -> bool:
        """Whether the controller has handed the pod's group over (a prediction alone is not that)."""
        owed = self.owed.get(uid)
        return owed is not None and not owed.provisional

    def owe_provisionally(self, pod: Mapping[str, Any], podgroup: str) -> None:
        """The pod belongs to its predicted PodGroup ``podgroup`` until the controller has made it."""
        meta = pod.get("metadata") or {}
        self.owed[meta["uid"]] = OwedGroup(meta.get("namespace") or "default", meta.get("name") or "", podgroup,
                                           self.generation, provisional=True)

    def forget_provisional(self, uid: str, key: str, drop_podgroup: bool) -> None:
        """The prediction did not hold: the pod leaves the predicted group (it joins the real one when the
        controller hands that over), and with ``drop_podgroup`` the predicted PodGroup leaves the cache
        unless the API's has replaced it."""
        owed = self.owed.get(uid)
        if owed is not None and owed.provisional:
            del self.owed[uid]
            if uid in self.pods:
                self._feed_pod(self.pods[uid])
        if self.asked_status.pop(key, None) is not None:  # its status writes waited for the create: none goes out
            self._take_api_status(key)
        job = self.cache.jobs.get(key)
        if drop_podgroup and job is not None and job.podgroup is not None and not job.podgroup.uid:
            self.cache.delete_podgroup(key)

    def group_annotation(self, uid: str) -> dict[str, str]:
        """The owed annotation a Binding of the pod carries ({} when none is owed)."""
        owed = self.owed.get(uid)
        return {GROUP_NAME_ANNOTATION: owed.podgroup} if owed is not None else {}

    def next_generation(self) -> int:
        """Called as a snapshot is taken: groups given before it are due after that session."""
        self.generation += 1
        return self.generation

    def due_groups(self, generation: int) -> list[tuple[str, OwedGroup]]:
        """Owed annotations to PATCH now: given before snapshot ``generation``, not out yet, and the pod
        not being bound (its Binding carries the annotation) and watched already (a pod the controller
        told of before this process's watch brought it is due after a session that saw it)."""
        return [(uid, o) for uid, o in self.owed.items()
                if o.since < generation and not o.sent and not o.provisional and uid not in self.assumed
                and uid in self.pods]

    def assume(self, uid: str, node: str, annotations: dict[str, str]) -> Assumed | None:
        """The pod is being bound: account it on ``node`` with its annotations (devices) right away.
        Returns the assumption, which only the bind that made it may settle or forget."""
        obj = self.pods.get(uid)
        if obj is None:
            return None
        a = self.assumed[uid] = Assumed(node, dict(annotations))
        self.cache.update_pod(with_binding(obj, node, annotations))
        return a

    def forget(self, uid: str, a: Assumed | None) -> None:
        """The bind failed: the pod is pending again in the cache, its resources and devices free.
        Only assumption ``a``: a later bind of the same pod (a later session) keeps its own."""
        if a is not None and self.assumed.get(uid) is a:
            del self.assumed[uid]
            if uid in self.pods:
                self._feed_pod(self.pods[uid])

    def settle(self, uid: str, a: Assumed | None) -> None:
        """The API has answered for assumption ``a`` (bound, or the pod gone): the API's pod rules again."""
        if a is not None and self.assumed.get(uid) is a:
            del self.assumed[uid]

    def evict(self, uid: str) -> None:
        """The pod is being evicted (cache.go · Evict): Releasing from now on, so no later session
        counts its resources as in use or picks it as a victim again before the API's DELETED arrives."""
        obj = self.pods.get(uid)
        if obj is None:
            return
        self.evicting.add(uid)
        self._feed_pod(obj)

    def evict_failed(self, uid: str) -> None:
        """The eviction failed: the pod is what the API last said again (cache.go · resyncTask)."""
        if uid in self.evicting:
            self.evicting.discard(uid)
            if uid in self.pods:
                self._feed_pod(self.pods[uid])

    def uid_of(self, namespace: str, name: str) -> str | None:
        return self.pod_uids.get(f"{namespace}/{name}")

    # -- the reflectors' handlers --------------------------------------------------------

    def handlers(self) -> dict[Kind, Handler]:
        c = self.cache
        return {
            NODES: _Fn(c.update_node, lambda o: c.delete_node(o["metadata"]["name"])),
            PODS: _Fn(self.pod, self.pod_deleted),
            PODGROUPS: _Fn(self.podgroup, self.podgroup_gone),
            QUEUES: _Fn(c.update_queue, lambda o: c.delete_queue(o["metadata"]["name"])),
            PRIORITY_CLASSES: _Fn(c.add_priority_class, lambda o: c.delete_priority_class(o["metadata"]["name"])),
            HYPERNODES: _Fn(c.update_hypernode, lambda o: c.delete_hypernode(o["metadata"]["name"])),
            PDBS: _Fn(c.update_pdb, lambda o: c.delete_pdb(object_key(o))),
            RESOURCE_QUOTAS: _Fn(c.update_resource_quota, lambda o: c.delete_resource_quota(object_key(o))),
            NUMATOPOLOGIES: _Fn(c.update_numatopology, lambda o: c.delete_numatopology(o["metadata"]["name"])),
            DEVICE_CLASSES: _Fn(c.dra.update_device_class, lambda o: c.dra.delete_device_class(o["metadata"]["name"])),
            RESOURCE_SLICES: _Fn(c.dra.update_resource_slice,
                                 lambda o: c.dra.delete_resource_slice(o["metadata"]["name"])),
            RESOURCE_CLAIMS: _Fn(c.dra.update_resource_claim, lambda o: c.dra.delete_resource_claim(object_key(o))),
            RESOURCE_CLAIM_TEMPLATES: _Fn(c.dra.update_resource_claim_template,
                                          lambda o: c.dra.delete_resource_claim_template(object_key(o))),
        }


# the kinds a cluster may not serve (CRDs an older Volcano did not install): taken as empty then
OPTIONAL_KINDS = frozenset({HYPERNODES, NUMATOPOLOGIES, DEVICE_CLASSES, RESOURCE_SLICES, RESOURCE_CLAIMS,
                            RESOURCE_CLAIM_TEMPLATES})


class _Fn:
    __slots__ = ("upsert", "delete")

    def __init__(self, upsert, delete) -> None:  # type: ignore[no-untyped-def]
        self.upsert = upsert
        self.delete = delete


def with_binding(pod: Mapping[str, Any], node: str, annotations: Mapping[str, str]) -> dict[str, Any]:
    """``pod`` as the API server will store it after the Binding: on ``node``, annotations merged."""
    bound = with_annotations(pod, annotations) if annotations else dict(pod)
    bound["spec"] = {**(pod.get("spec") or {}), "nodeName": node}
    return bound


def with_annotations(pod: Mapping[str, Any], annotations: Mapping[str, str]) -> dict[str, Any]:
    """``pod`` with ``annotations`` merged into its own."""
    meta = dict(pod.get("metadata") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
    return {**pod, "metadata": meta}


def with_deletion(pod: Mapping[str, Any]) -> dict[str, Any]:
    """``pod`` as being deleted: Releasing for the cache, like Volcano's cache marks an evicted task."""
    meta = dict(pod.get("metadata") or {})
    meta["deletionTimestamp"] = meta.get("deletionTimestamp") or datetime.now(timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    return {**pod, "metadata": meta}


def creation_time(pod: Mapping[str, Any]) -> float:
    """metadata.creationTimestamp in Unix seconds; 0 when absent or unreadable."""
    try:
        return parse_timestamp((pod.get("metadata") or {}).get("creationTimestamp"))
    except (TypeError, ValueError):
        return 0.0
