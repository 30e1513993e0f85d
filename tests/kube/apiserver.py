"""kmock's KubernetesEmulator taught the kube-apiserver behaviour vcsched depends on.

kmock serves HTTP, parses every request into (action, resource, namespace, name,
subresource) and records it in ``requests``.  Its emulator keeps plain JSON
with no resourceVersions and no subresources, so this subclass answers the
Kubernetes requests itself:

- every write stamps a global ``metadata.resourceVersion``; lists carry it;
- watches resume from a resourceVersion (history replayed, then live events),
  answer 410 Gone below the compaction point, and can be dropped by the test;
- pods/binding as BindingREST: 404 for a missing pod, 409 when already assigned
  or on a uid mismatch, else spec.nodeName set and the Binding's annotations
  copied onto the pod;
- pods/status, queues/status and jobs/status (batch.volcano.sh, as Volcano's CRD
  declares it) write only ``status``, and writes to those objects themselves leave
  ``status`` alone; podgroups have no status subresource (404), like Volcano's CRD;
- discovery (/api/v1, /apis/<group>/<version>) lists the resources in RESOURCES, so
  a client's discovery finds them;
- PUT with a stale resourceVersion → 409; DELETE honours a uid precondition;
- lists honour equality and existence label selectors;
- merge patches (RFC 7386); strategic merge patches merge ``conditions`` by type;
- injected faults: an HTTP status or a delay or a gate the test opens (after
  which the request still takes effect, like a reply lost to a client timeout,
  even when the client has disconnected meanwhile) for matching requests; a
  fault's ``effect`` is the change the status stands for (another client's
  write), made in the store before the status is answered; a ``reply_gate``
  holds the reply of a request that has already taken effect.
"""

from __future__ import annotations

import asyncio
import copy
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import aiohttp.web
from kmock import KubernetesEmulator, Request

Key = tuple[str, str]  # (group, plural)

# what discovery serves: "group/version/plural" → (kind, namespaced, subresources)
RESOURCES: dict[str, tuple[str, bool, tuple[str, ...]]] = {
    "v1/nodes": ("Node", False, ("status",)), "v1/pods": ("Pod", True, ("status", "binding")),
    "v1/configmaps": ("ConfigMap", True, ()), "v1/events": ("Event", True, ()),
    "v1/namespaces": ("Namespace", False, ()), "v1/services": ("Service", True, ()),
    "v1/secrets": ("Secret", True, ()), "v1/persistentvolumeclaims": ("PersistentVolumeClaim", True, ()),
    "scheduling.k8s.io/v1/priorityclasses": ("PriorityClass", False, ()),
    "coordination.k8s.io/v1/leases": ("Lease", True, ()),
    "networking.k8s.io/v1/networkpolicies": ("NetworkPolicy", True, ()),
    "apiextensions.k8s.io/v1/customresourcedefinitions": ("CustomResourceDefinition", False, ()),
    "scheduling.volcano.sh/v1beta1/podgroups": ("PodGroup", True, ()),
    "scheduling.volcano.sh/v1beta1/queues": ("Queue", False, ("status",)),
    "batch.volcano.sh/v1alpha1/jobs": ("Job", True, ("status",)),
    "bus.volcano.sh/v1alpha1/commands": ("Command", True, ()),
    "apps/v1/replicasets": ("ReplicaSet", True, ()), "apps/v1/statefulsets": ("StatefulSet", True, ()),
    "apps/v1/daemonsets": ("DaemonSet", True, ()), "batch/v1/jobs": ("Job", True, ()),
    "resource.k8s.io/v1/deviceclasses": ("DeviceClass", False, ()),
    "resource.k8s.io/v1/resourceslices": ("ResourceSlice", False, ()),
    "resource.k8s.io/v1/resourceclaims": ("ResourceClaim", True, ("status",)),
    "resource.k8s.io/v1/resourceclaimtemplates": ("ResourceClaimTemplate", True, ()),
}
# resources whose status is written only through /status (and only status is written there)
STATUS_SUBRESOURCE = {("", "pods"), ("scheduling.volcano.sh", "queues"), ("batch.volcano.sh", "jobs"),
                      ("resource.k8s.io", "resourceclaims")}


@dataclass
class Fault:
    match: Callable[[Request], bool]
    status: int = 0  # answer with this status (0: no)
    delay: float = 0.0  # hold the request this long first
    times: int = 1
    hits: int = 0
    released: int = 0  # hits whose delay is over
    gate: asyncio.Event | None = None  # hold the request until the test sets it (then as for a delay)
    # what another client did that the status answers for (a 409's winning write), applied just before
    # the status goes out: whoever reads after the reply sees it, as on a real API server
    effect: Callable[[], Any] | None = None
    # once the request has taken effect (its watch events out), its reply is held until the test sets
    # this: the writer learns of its own write after the watchers do
    reply_gate: asyncio.Event | None = None


@dataclass
class _Watch:
    kind: Key
    namespace: str | None
    name: str | None
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    labels: list = field(default_factory=list)  # labelSelector terms


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        elif k == "conditions" and isinstance(v, list):
            conds = {c.get("type"): c for c in out.get(k) or []}
            for c in v:
                conds[c.get("type")] = merge_patch(conds.get(c.get("type")), c)
            out[k] = list(conds.values())
        else:
            out[k] = strategic_merge_patch(out.get(k), v)
    return out


def _status(code: int, reason: str, message: str) -> aiohttp.web.Response:
    return aiohttp.web.json_response({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
                                      "code": code, "reason": reason, "message": message}, status=code)


class ApiServer(KubernetesEmulator):
    """Use as ``async with ApiServer() as api, kmock.Server(api) as server``."""

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self.objects_: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        self.rv = 0
        self.history: list[tuple[int, Key, dict[str, Any]]] = []
        self.compacted = 0
        self.watches: list[_Watch] = []
        self.faults: list[Fault] = []
        self.bindings: list[tuple[str, str, str]] = []  # (namespace, pod, node) of every accepted Binding
        self._held_tasks: set[asyncio.Task] = set()
        for res, (kind, namespaced, subs) in RESOURCES.items():
            self.resources[res] = {"kind": kind, "namespaced": namespaced, "subresources": set(subs),
                                   "verbs": {"get", "list", "watch", "create", "update", "patch", "delete"}}

    # -- test controls ----------------------------------------------------------------------

    @property
    def requests(self) -> list[Request]:
        """Every request received, in order (kmock records them)."""
        return list(self._requests)

    def put(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create an object as a client would (synchronously, for test setup)."""
        group, plural = _kind_of(obj)
        meta = obj.setdefault("metadata", {})
        return self._create((group, plural), meta.get("namespace") or "", obj)

    def get(self, group: str, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects_.get((group, plural, namespace or "", name))

    def all(self, group: str, plural: str) -> list[dict[str, Any]]:
        return [o for (g, p, _, _), o in self.objects_.items() if (g, p) == (group, plural)]

    def update(self, group: str, plural: str, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        key = (group, plural, namespace or "", name)
        return self._store(key, merge_patch(self.objects_[key], patch), "MODIFIED")

    def remove(self, group: str, plural: str, namespace: str, name: str) -> None:
        key = (group, plural, namespace or "", name)
        obj = self.objects_.pop(key)
        self._emit((group, plural), "DELETED", self._stamp(obj))

    def fail(self, match: Callable[[Request], bool], status: int = 0, delay: float = 0.0, times: int = 1,
             gate: asyncio.Event | None = None, effect: Callable[[], Any] | None = None,
             reply_gate: asyncio.Event | None = None) -> Fault:
        f = Fault(match, status, delay, times, gate=gate, effect=effect, reply_gate=reply_gate)
        self.faults.append(f)
        return f

    def drop_watches(self) -> None:
        """End every open watch stream, as a load balancer or an apiserver restart would."""
        for w in self.watches:
            w.queue.put_nowait(None)

    def compact(self) -> None:
        """Forget the event history: resuming a watch from an older resourceVersion gets 410 Gone."""
        self.compacted = self.rv
        self.history.clear()

    # -- storage --------------------------------------------------------------------------------

    def _stamp(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        obj = copy.deepcopy(obj)
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
        return obj

    def _emit(self, kind: Key, type_: str, obj: dict[str, Any]) -> None:
        event = {"type": type_, "object": obj}
        self.history.append((self.rv, kind, event))
        for w in self.watches:
            if _matches(w, kind, obj):
                w.queue.put_nowait(event)

    def _store(self, key: tuple[str, str, str, str], obj: dict[str, Any], type_: str) -> dict[str, Any]:
        obj = self._stamp(obj)
        self.objects_[key] = obj
        self._emit(key[:2], type_, obj)
        return obj

    def _create(self, kind: Key, namespace: str, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj.setdefault("metadata", {})
        key = (*kind, namespace, meta["name"])
        if key in self.objects_:
            raise _Answer(_status(409, "AlreadyExists", f"{kind[1]} {meta['name']} already exists"))
        if namespace:
            meta["namespace"] = namespace
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
        return self._store(key, obj, "ADDED")

    # -- the API ----------------------------------------------------------------------------------

    async def _handle(self, request: Request) -> aiohttp.web.StreamResponse:
        if request.resource is None or request.resource.plural is None:
            return await super()._handle(request)  # discovery
        for f in self.faults:
            if f.hits < f.times and f.match(request):
                f.hits += 1
                if f.delay or f.gate is not None or f.reply_gate is not None:
                    # held, then carried out even if the client has gone meanwhile (a kube-apiserver
                    # does not undo a write because its client disconnected)
                    held = asyncio.ensure_future(self._held(f, request))
                    self._held_tasks.add(held)
                    held.add_done_callback(self._held_tasks.discard)
                    return await asyncio.shield(held)
                f.released += 1
                if f.effect is not None:
                    f.effect()
                if f.status:
                    return _status(f.status, "Injected", f"injected {f.status}")
                break
        return await self._answer(request)

    async def _held(self, f: Fault, request: Request) -> aiohttp.web.StreamResponse:
        await asyncio.sleep(f.delay)
        if f.gate is not None:
            await f.gate.wait()
        f.released += 1
        if f.effect is not None:
            f.effect()
        if f.status:
            return _status(f.status, "Injected", f"injected {f.status}")
        reply = await self._answer(request)
        if f.reply_gate is not None:
            await f.reply_gate.wait()
        return reply

    async def _answer(self, request: Request) -> aiohttp.web.StreamResponse:
        try:
            return await self._serve(request)
        except _Answer as a:
            return a.response

    async def _serve(self, request: Request) -> aiohttp.web.StreamResponse:
        kind = (request.resource.group or "", request.resource.plural or "")
        ns = request.namespace or ""
        name = request.name
        sub = request.subresource
        method = request.method.value
        params = dict(request.params)
        key = (*kind, ns, name or "")
        if method == "GET" and name is None:
            if params.get("watch") in ("true", "1"):
                return await self._watch(request, kind, ns or None, params)
            sel = _field_name(params.get("fieldSelector"))
            labels = _label_selector(params.get("labelSelector"))
            items = [o for (g, p, n, nm), o in sorted(self.objects_.items())
                     if (g, p) == kind and (not ns or n == ns) and (sel is None or nm == sel)
                     and _labels_match(labels, o)]
            return aiohttp.web.json_response({"kind": "List", "apiVersion": "v1",
                                              "metadata": {"resourceVersion": str(self.rv)}, "items": items})
        if method == "POST" and name is None:
            return aiohttp.web.json_response(self._create(kind, ns, request.data), status=201)
        obj = self.objects_.get(key)
        if kind == ("scheduling.volcano.sh", "podgroups") and sub == "status":
            return _status(404, "NotFound", "the server could not find the requested resource")
        if method == "POST" and kind == ("", "pods") and sub == "binding":
            return self._bind(key, obj, request.data)
        if obj is None:
            return _status(404, "NotFound", f'{kind[1]} "{name}" not found')
        if method == "GET":
            return aiohttp.web.json_response(obj)
        if method == "PUT":
            if sub and sub != "status":
                return _status(404, "NotFound", f"no subresource {sub}")
            if (request.data.get("metadata") or {}).get("resourceVersion") != obj["metadata"]["resourceVersion"]:
                return _status(409, "Conflict", "the object has been modified; please apply your changes "
                                                "to the latest version and try again")
            if sub == "status":
                new = {**obj, "status": request.data.get("status") or {}}
            else:
                new = dict(request.data)
                new["metadata"] = {**obj["metadata"], **(request.data.get("metadata") or {})}
                if kind in STATUS_SUBRESOURCE:
                    new["status"] = obj.get("status")
                    if new["status"] is None:
                        new.pop("status")
            return aiohttp.web.json_response(self._store(key, new, "MODIFIED"))
        if method == "PATCH":
            ctype = request.headers.get("Content-Type", "")
            patch = request.data if isinstance(request.data, dict) else json.loads(request.text)
            if sub == "status":
                patch = {"status": patch.get("status") or {}}
            elif sub:
                return _status(404, "NotFound", f"no subresource {sub}")
            elif kind in STATUS_SUBRESOURCE:
                patch = {k: v for k, v in patch.items() if k != "status"}
            merge = strategic_merge_patch if "strategic" in ctype else merge_patch
            return aiohttp.web.json_response(self._store(key, merge(obj, patch), "MODIFIED"))
        if method == "DELETE":
            pre = ((request.data or {}).get("preconditions") or {}) if isinstance(request.data, dict) else {}
            if pre.get("uid") and pre["uid"] != obj["metadata"].get("uid"):
                return _status(409, "Conflict", "Precondition failed: UID in precondition does not match")
            del self.objects_[key]
            gone = self._stamp(obj)
            self._emit(kind, "DELETED", gone)
            return aiohttp.web.json_response(gone)
        return _status(405, "MethodNotAllowed", method)

    def _bind(self, key: tuple[str, str, str, str], pod: dict[str, Any] | None,
              binding: dict[str, Any]) -> aiohttp.web.Response:
        """BindingREST.Create → assignPod: the node and the Binding's annotations in one write."""
        ns, name = key[2], key[3]
        if pod is None:
            return _status(404, "NotFound", f'pods "{name}" not found')
        meta = binding.get("metadata") or {}
        if meta.get("uid") and meta["uid"] != pod["metadata"].get("uid"):
            return _status(409, "Conflict", "Precondition failed: UID in precondition does not match")
        if (pod.get("spec") or {}).get("nodeName"):
            return _status(409, "Conflict", f"pod {name} is already assigned to node "
                                            f"\"{pod['spec']['nodeName']}\"")
        node = (binding.get("target") or {}).get("name")
        new = copy.deepcopy(pod)
        new["spec"]["nodeName"] = node
        if meta.get("annotations"):
            new["metadata"].setdefault("annotations", {}).update(meta["annotations"])
        new.setdefault("status", {}).setdefault("conditions", []).append({"type": "PodScheduled", "status": "True"})
        self._store(key, new, "MODIFIED")
        self.bindings.append((ns, name, node))
        return aiohttp.web.json_response({"kind": "Status", "apiVersion": "v1", "metadata": {},
                                          "status": "Success", "code": 201}, status=201)

    async def _watch(self, request: Request, kind: Key, ns: str | None,
                     params: dict[str, str]) -> aiohttp.web.StreamResponse:
        w = _Watch(kind, ns, _field_name(params.get("fieldSelector")), labels=_label_selector(params.get("labelSelector")))
        resp = aiohttp.web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        await resp.prepare(request._raw_request)
        since = params.get("resourceVersion")
        try:
            if since and int(since) < self.compacted:
                gone = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410, "reason": "Expired",
                        "message": f"too old resource version: {since} ({self.compacted})"}
                await resp.write(json.dumps({"type": "ERROR", "object": gone}).encode() + b"\n")
                return resp
            if since:
                backlog = [e for rv, k, e in self.history if rv > int(since) and k == kind and _matches(w, kind, e["object"])]
            else:
                backlog = [{"type": "ADDED", "object": o} for o in self.all(*kind) if _matches(w, kind, o)]
            self.watches.append(w)
            for e in backlog:
                await resp.write(json.dumps(e).encode() + b"\n")
            while True:
                e = await w.queue.get()
                if e is None:
                    break
                await resp.write(json.dumps(e).encode() + b"\n")
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            if w in self.watches:
                self.watches.remove(w)
        return resp


class _Answer(Exception):
    def __init__(self, response: aiohttp.web.Response) -> None:
        self.response = response


def _field_name(sel: str | None) -> str | None:
    if sel and sel.startswith("metadata.name="):
        return sel.split("=", 1)[1]
    return None


def _label_selector(text: str | None) -> list[tuple[str, str | None]]:
    """Equality (``k=v``, ``k==v``) and existence (``k``) requirements, comma-separated."""
    out: list[tuple[str, str | None]] = []
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        key, sep, value = part.replace("==", "=").partition("=")
        out.append((key.strip(), value.strip() if sep else None))
    return out


def _labels_match(selector: list[tuple[str, str | None]], obj: dict[str, Any]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(k in labels and (v is None or labels[k] == v) for k, v in selector)


def _matches(w: _Watch, kind: Key, obj: dict[str, Any]) -> bool:
    meta = obj.get("metadata") or {}
    return (w.kind == kind and (w.namespace is None or meta.get("namespace") == w.namespace)
            and (w.name is None or meta.get("name") == w.name) and _labels_match(w.labels, obj))


KINDS = {
    "Node": ("", "nodes"), "Pod": ("", "pods"), "ConfigMap": ("", "configmaps"), "Event": ("", "events"),
    "PriorityClass": ("scheduling.k8s.io", "priorityclasses"),
    "PodGroup": ("scheduling.volcano.sh", "podgroups"), "Queue": ("scheduling.volcano.sh", "queues"),
    "Lease": ("coordination.k8s.io", "leases"),
    "Job": ("batch.volcano.sh", "jobs"), "Command": ("bus.volcano.sh", "commands"),
    "Service": ("", "services"), "Secret": ("", "secrets"),
    "NetworkPolicy": ("networking.k8s.io", "networkpolicies"),
    "PersistentVolumeClaim": ("", "persistentvolumeclaims"),
    "DeviceClass": ("resource.k8s.io", "deviceclasses"), "ResourceSlice": ("resource.k8s.io", "resourceslices"),
    "ResourceClaim": ("resource.k8s.io", "resourceclaims"),
    "ResourceClaimTemplate": ("resource.k8s.io", "resourceclaimtemplates"),
}


def _kind_of(obj: dict[str, Any]) -> Key:
    group = (obj.get("apiVersion") or "").rpartition("/")[0]
    if group in ("apps", "batch"):  # apps/v1 workloads and batch/v1 Jobs (KINDS' "Job" is Volcano's)
        return group, obj["kind"].lower() + "s"
    return KINDS[obj["kind"]]
