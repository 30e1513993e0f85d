"""The cache's part of Dynamic Resource Allocation: the four ``resource.k8s.io/v1`` kinds between sessions.

``DraCache`` receives add/update/delete events of DeviceClasses, ResourceSlices, ResourceClaims and
ResourceClaimTemplates (newer ``resourceVersion`` wins), parses each once (api/dra.py), and hands a
session a ``DraSnapshot``: the objects (immutable, shared) and an index of the slices by node and by
pool, derived again only after a slice changed.

An object that fails validation (Kubernetes mode: the injected ``validator`` gives the problem, since a
CRD stand-in does not validate) is kept out and remembered under ``problems`` by kind and key, so that
the pods naming it can be told (plugins/dynamicresources.py) instead of being scheduled with it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from .dra import (
    DeviceClass,
    ResourceClaim,
    ResourceSlice,
    device_class_from,
    resource_claim_from,
    resource_slice_from,
)

log = structlog.get_logger("vcsched.cache.dra")

# (kind, object) -> None, or "field: problem"
Validator = Callable[[str, Mapping[str, Any]], str | None]


@dataclass(slots=True)
class SliceIndex:
    """The slices by the node they are published for ("" for none in particular) and by pool."""

    on_node: dict[str, list[ResourceSlice]] = field(default_factory=dict)
    shared: list[ResourceSlice] = field(default_factory=list)
    by_pool: dict[tuple[str, str], list[ResourceSlice]] = field(default_factory=dict)

    @classmethod
    def build(cls, slices: Mapping[str, ResourceSlice]) -> SliceIndex:
        index = cls()
        for name in sorted(slices):
            s = slices[name]
            if s.node_name:
                index.on_node.setdefault(s.node_name, []).append(s)
            else:
                index.shared.append(s)
            index.by_pool.setdefault((s.driver, s.pool), []).append(s)
        return index

    def for_node(self, node: str) -> list[ResourceSlice]:
        return self.on_node.get(node, []) + self.shared


@dataclass(slots=True)
class DraSnapshot:
    """What a session sees of DRA; shared, never changed by a session (its changes are its own)."""

    classes: Mapping[str, DeviceClass] = field(default_factory=dict)
    slices: SliceIndex = field(default_factory=SliceIndex)
    claims: Mapping[str, ResourceClaim] = field(default_factory=dict)
    templates: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    problems: Mapping[tuple[str, str], str] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.classes or self.slices.by_pool or self.claims)


class DraCache:
    def __init__(self, validator: Validator | None = None) -> None:
        self.validator = validator
        self.classes: dict[str, DeviceClass] = {}
        self.slices: dict[str, ResourceSlice] = {}
        self.claims: dict[str, ResourceClaim] = {}
        self.claim_objects: dict[str, Mapping[str, Any]] = {}
        self.templates: dict[str, Mapping[str, Any]] = {}
        self.problems: dict[tuple[str, str], str] = {}
        self.versions: dict[tuple[str, str], int] = {}
        self._index: SliceIndex | None = None
        # claims whose status a bind is writing (Kubernetes mode): key -> the resourceVersion it was based on
        self.assumed: dict[str, int] = {}

    def _newer(self, kind: str, key: str, obj: Mapping[str, Any]) -> bool:
        raw = (obj.get("metadata") or {}).get("resourceVersion")
        try:
            rv = int(raw) if raw is not None else None
        except (TypeError, ValueError):
            rv = None
        if rv is None:
            return True
        old = self.versions.get((kind, key))
        if old is not None and rv < old:
            return False
        self.versions[(kind, key)] = rv
        return True

    def _valid(self, kind: str, key: str, obj: Mapping[str, Any]) -> bool:
        problem = self.validator(kind, obj) if self.validator is not None else None
        if problem is None:
            self.problems.pop((kind, key), None)
            return True
        if self.problems.get((kind, key)) != problem:
            log.warning("refused: the API server would not admit it", kind=kind, object=key, problem=problem)
        self.problems[(kind, key)] = problem
        return False

    @staticmethod
    def _key(obj: Mapping[str, Any], namespaced: bool) -> str:
        meta = obj.get("metadata") or {}
        return f"{meta.get('namespace') or 'default'}/{meta['name']}" if namespaced else meta["name"]

    # -- DeviceClass ------------------------------------------------------------------------------

    def add_device_class(self, obj: Mapping[str, Any]) -> None:
        key = self._key(obj, False)
        if not self._newer("DeviceClass", key, obj):
            return
        if self._valid("DeviceClass", key, obj):
            self.classes[key] = device_class_from(obj)
        else:
            self.classes.pop(key, None)

    update_device_class = add_device_class

    def delete_device_class(self, name: str) -> None:
        self.classes.pop(name, None)
        self.problems.pop(("DeviceClass", name), None)

    # -- ResourceSlice ----------------------------------------------------------------------------

    def add_resource_slice(self, obj: Mapping[str, Any]) -> None:
        key = self._key(obj, False)
        if not self._newer("ResourceSlice", key, obj):
            return
        if self._valid("ResourceSlice", key, obj):
            self.slices[key] = resource_slice_from(obj)
        else:
            self.slices.pop(key, None)
        self._index = None

    update_resource_slice = add_resource_slice

    def delete_resource_slice(self, name: str) -> None:
        if self.slices.pop(name, None) is not None:
            self._index = None
        self.problems.pop(("ResourceSlice", name), None)

    # -- ResourceClaim ----------------------------------------------------------------------------

    def add_resource_claim(self, obj: Mapping[str, Any]) -> None:
        key = self._key(obj, True)
        if not self._newer("ResourceClaim", key, obj):
            return
        base = self.assumed.get(key)
        if base is not None:
            rv = self.versions.get(("ResourceClaim", key))
            if rv is not None and rv <= base:
                self.claim_objects[key] = obj  # not newer than what the assumption was made on: it stands
                return
            del self.assumed[key]
        if self._valid("ResourceClaim", key, obj):
            self.claims[key] = resource_claim_from(obj)
            self.claim_objects[key] = obj
        else:
            self.claims.pop(key, None)
            self.claim_objects.pop(key, None)

    update_resource_claim = add_resource_claim

    def assume_claim_status(self, key: str, allocation: Mapping[str, Any] | None,
                            reserved_for: list[Mapping[str, Any]]) -> bool:
        """A bind is writing this status (PreBind): the next session sees it at once.  The API's next
        version of the claim replaces it; ``forget_claim`` restores the API's current one."""
        obj = self.claim_objects.get(key)
        if obj is None:
            return False
        status = dict(obj.get("status") or {})
        if allocation is not None:
            status["allocation"] = allocation
        status["reservedFor"] = [dict(r) for r in reserved_for]
        self.claims[key] = resource_claim_from({**obj, "status": status})
        try:
            self.assumed[key] = int((obj.get("metadata") or {}).get("resourceVersion") or 0)
        except (TypeError, ValueError):
            self.assumed[key] = 0
        return True

    def forget_claim(self, key: str) -> None:
        """The status write failed: the claim is what the API last said again."""
        if self.assumed.pop(key, None) is not None:
            obj = self.claim_objects.get(key)
            if obj is not None:
                self.claims[key] = resource_claim_from(obj)

    def delete_resource_claim(self, key: str) -> None:
        self.assumed.pop(key, None)
        self.claims.pop(key, None)
        self.claim_objects.pop(key, None)
        self.problems.pop(("ResourceClaim", key), None)

    # -- ResourceClaimTemplate --------------------------------------------------------------------

    def add_resource_claim_template(self, obj: Mapping[str, Any]) -> None:
        key = self._key(obj, True)
        if not self._newer("ResourceClaimTemplate", key, obj):
            return
        if self._valid("ResourceClaimTemplate", key, obj):
            self.templates[key] = obj
        else:
            self.templates.pop(key, None)

    update_resource_claim_template = add_resource_claim_template

    def delete_resource_claim_template(self, key: str) -> None:
        self.templates.pop(key, None)
        self.problems.pop(("ResourceClaimTemplate", key), None)

    # -- snapshot ---------------------------------------------------------------------------------

    def snapshot(self) -> DraSnapshot:
        if self._index is None:
            self._index = SliceIndex.build(self.slices)
        return DraSnapshot(dict(self.classes), self._index, dict(self.claims), dict(self.templates),
                           dict(self.problems))
