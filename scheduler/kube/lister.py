"""The controllers' listers: what an informer indexes, and our own writes until the index has them.

Volcano's controllers read listers (informers' caches), never the API; so do ours.  A ``Lister``
is one kind's index (kept by scheduler/kube/informer.py) plus the objects our own writes returned
that the index has not caught up with yet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..controllers.job import JOB_NAME_KEY


def _resource_version(obj: Mapping[str, Any]) -> int | None:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion"))
    except (TypeError, ValueError):
        return None


Key = tuple[Any, ...]


class Lister:
    """One kind as the controllers read it (Volcano's lister): an in-memory index (``index``: key → the
    objects filed under it, what ``index_keys`` gives plus ``(namespace, name)``), kept by the kind's
    informer (scheduler/kube/informer.py), and the objects our own writes returned that the index has
    not caught up with yet (``observe``, ``deleted``): the next request does not act on an older view
    than the one we wrote.  An entry of ours goes once the handlers see that resourceVersion or the
    deletion (``seen``).  An object we deleted before its watch event came may show again until its
    DELETED event, as with Volcano's informers."""

    def __init__(self, name: str, index_keys: Callable[[Mapping[str, Any]], Iterable[Key]] | None = None) -> None:
        self.name = name
        self.index: dict[Key, dict[Any, dict[str, Any]]] = {}
        self._filed: dict[Any, list[Key]] = {}  # object → the index keys it is filed under
        self._extra = index_keys
        self._written: dict[tuple[str | None, str], dict[str, Any]] = {}
        self._written_at: dict[Key, set[tuple[str | None, str]]] = {}  # index key → our writes filed there
        self._gone: dict[tuple[str | None, str], str | None] = {}  # deleted by us → its uid

    def keys(self, obj: Mapping[str, Any]) -> list[Key]:
        meta = obj.get("metadata") or {}
        return [(meta.get("namespace"), meta.get("name") or ""), *(self._extra(obj) if self._extra else ())]

    def index_object(self, obj: dict[str, Any]) -> None:
        """The informer's add or update: ``obj`` filed under its keys (and no longer under its old ones)."""
        ident = _identity(obj)
        self.unindex_object(obj)
        keys = self.keys(obj)
        for k in keys:
            self.index.setdefault(k, {})[ident] = obj
        self._filed[ident] = keys

    def unindex_object(self, obj: Mapping[str, Any]) -> None:
        ident = _identity(obj)
        for k in self._filed.pop(ident, ()):
            filed = self.index.get(k)
            if filed is not None:
                filed.pop(ident, None)
                if not filed:
                    del self.index[k]

    def seen(self, type_: str | None, obj: Mapping[str, Any]) -> None:
        """The handlers get an event the index holds: our entries for that object it has caught up with go."""
        key = _ns_name_raw(obj)
        uid = (obj.get("metadata") or {}).get("uid")
        mine = self._written.get(key)
        if type_ == "DELETED":
            if mine is not None and (mine.get("metadata") or {}).get("uid") == uid:
                self._unwrite(key)
            if self._gone.get(key) == uid:
                del self._gone[key]
        elif mine is not None and (_resource_version(obj) or 0) >= (_resource_version(mine) or 0):
            self._unwrite(key)

    def _write(self, key: tuple[str | None, str], obj: dict[str, Any]) -> None:
        self._unwrite(key)
        self._written[key] = obj
        for k in self.keys(obj):
            self._written_at.setdefault(k, set()).add(key)

    def _unwrite(self, key: tuple[str | None, str]) -> None:
        old = self._written.pop(key, None)
        if old is None:
            return
        for k in self.keys(old):
            filed = self._written_at.get(k)
            if filed is not None:
                filed.discard(key)
                if not filed:
                    del self._written_at[k]

    def indexed(self, key: Key) -> list[dict[str, Any]]:
        found: dict[tuple[str | None, str], dict[str, Any]] = {}
        for obj in self.index.get(key, {}).values():
            found[_ns_name_raw(obj)] = obj
        # our writes filed under ``key``, and those of the objects found there (a write may move one out)
        mine_here = self._written_at.get(key, ()) if self._written else ()
        moved = [k for k in found if k in self._written] if self._written else ()
        for k in sorted({*mine_here, *moved}, key=lambda k: (k[0] or "", k[1])):
            mine = self._written[k]
            old = found.get(k)
            if old is not None and (_resource_version(old) or 0) >= (_resource_version(mine) or 0):
                continue  # the index has caught up
            if key in self.keys(mine):
                found[k] = mine
            elif old is not None:
                del found[k]  # our write moved it out of this key
        for k, uid in list(self._gone.items()):
            obj = found.get(k)
            if obj is not None and (obj.get("metadata") or {}).get("uid") == uid:
                del found[k]
            elif not any(True for _ in self.index.get(k, ())):
                del self._gone[k]  # the watch brought the deletion
        return list(found.values())

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        return next(iter(self.indexed((namespace if namespace else None, name))), None)

    def count(self, key: Key) -> int:
        return len(self.indexed(key))

    @property
    def objects(self) -> dict[str, dict[str, Any]]:
        """A cluster-scoped kind's objects by name."""
        names = {k[1] for k in self.index if len(k) == 2 and k[0] is None} | {k[1] for k in self._written}
        return {n: o for n in names if (o := self.get(None, n)) is not None}

    def observe(self, obj: Mapping[str, Any] | None) -> None:
        """An object as one of our writes returned it: readable at once (its watch event follows)."""
        if obj and (obj.get("metadata") or {}).get("name") and _resource_version(obj) is not None:
            key = _ns_name_raw(obj)
            self._gone.pop(key, None)
            held = self.get(*key)
            if held is None or (_resource_version(obj) or 0) >= (_resource_version(held) or 0):
                self._write(key, dict(obj))

    def deleted(self, namespace: str | None, name: str, answer: Mapping[str, Any] | None) -> None:
        """Our DELETE succeeded (or found nothing): gone, unless the answer shows the object still there,
        terminating (a pod's graceful deletion); the watch's DELETED event follows."""
        meta = (answer or {}).get("metadata") or {}
        if meta.get("deletionTimestamp") and meta.get("name") == name:
            self.observe(answer)
            return
        key = (namespace if namespace else None, name)
        held = self.get(*key)
        self._unwrite(key)
        if held is not None:
            self._gone[key] = (held.get("metadata") or {}).get("uid")


def _identity(obj: Mapping[str, Any]) -> Any:
    """An object's identity in an index: its uid (namespace and name for an object without one)."""
    meta = obj.get("metadata") or {}
    return meta.get("uid") or (meta.get("namespace"), meta.get("name"))


def _ns_name_raw(obj: Mapping[str, Any]) -> tuple[str | None, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace"), meta.get("name") or ""


def podgroup_queue_keys(pg: Mapping[str, Any]) -> list[Key]:
    return [("queue", (pg.get("spec") or {}).get("queue") or "default")]


def pod_index_keys(pod: Mapping[str, Any]) -> list[Key]:
    """``("job", ns, name)`` (the job-name label) and ``("owner", uid)`` (the controlling owner)."""
    meta = pod.get("metadata") or {}
    out: list[Key] = []
    name = (meta.get("labels") or {}).get(JOB_NAME_KEY)
    if name:
        out.append(("job", meta.get("namespace") or "default", name))
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller") and ref.get("uid"):
            out.append(("owner", ref["uid"]))
    return out
