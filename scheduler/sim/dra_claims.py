"""The simulator's Dynamic Resource Allocation objects and kube-controller-manager's resourceclaim controller.

``SimDra`` holds the input's DeviceClasses, ResourceSlices, ResourceClaims and ResourceClaimTemplates
and does what the resourceclaim controller does in a cluster (pkg/controller/resourceclaim):

- a pod naming a template in ``spec.resourceClaims`` gets a ResourceClaim made from it, owned by the pod
  (controller reference), annotated ``resource.kubernetes.io/pod-claim-name``, named as the API server
  names ``generateName`` objects (api/dra.py · ``template_claim_name``, the suffix derived from the pod's
  uid so that a run can be repeated), and recorded in the pod's ``status.resourceClaimStatuses``;
- a pod that is gone or finished is taken out of its claims' ``status.reservedFor``; a claim whose last
  consumer went is deallocated (``status.allocation`` cleared), and a claim made for a pod is deleted
  with it.

It also applies the claim part of a session's Bind (the scheduler's PreBind): ``status.allocation`` and
``status.reservedFor``.  Simulate only: in Kubernetes mode vcsched makes no claims.
"""

from __future__ import annotations

import copy
from typing import Any

from ..api.dra import POD_CLAIM_NAME_ANNOTATION, template_claim_name
from ..cache import Cache
from ..framework.effects import Bind
from .manifests import Manifest

KINDS = ("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate")
_DONE = ("Succeeded", "Failed")


def _key(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


class SimDra:
    def __init__(self) -> None:
        self.classes: dict[str, dict[str, Any]] = {}
        self.slices: dict[str, dict[str, Any]] = {}
        self.claims: dict[str, dict[str, Any]] = {}
        self.templates: dict[str, dict[str, Any]] = {}
        self._version = 0

    def add(self, m: Manifest) -> None:
        obj = copy.deepcopy(m.obj)
        if m.kind == "DeviceClass":
            self.classes[m.name] = obj
        elif m.kind == "ResourceSlice":
            self.slices[m.name] = obj
        elif m.kind == "ResourceClaim":
            self.claims[m.key] = obj
        elif m.kind == "ResourceClaimTemplate":
            self.templates[m.key] = obj

    @property
    def empty(self) -> bool:
        return not (self.classes or self.slices or self.claims or self.templates)

    def feed(self, cache: Cache) -> None:
        dra = cache.dra
        for obj in self.classes.values():
            dra.add_device_class(obj)
        for obj in self.slices.values():
            dra.add_resource_slice(obj)
        for obj in self.templates.values():
            dra.add_resource_claim_template(obj)
        for obj in self.claims.values():
            dra.add_resource_claim(obj)

    def _bump(self, obj: dict[str, Any]) -> None:
        self._version += 1
        obj["metadata"]["resourceVersion"] = str(self._version)

    # -- the resourceclaim controller --------------------------------------------------------------

    def sync(self, pods: dict[str, dict[str, Any]], cache: Cache | None) -> bool:
        """Claims for the pods' templates; consumers that are gone taken out; claims of pods that are gone
        deleted.  Feeds what changed to ``cache``; True if anything changed."""
        changed = False
        for pod in pods.values():
            changed |= self._make_claims(pod, cache)
        live = {str(p["metadata"].get("uid")): p for p in pods.values()
                if (p.get("status") or {}).get("phase") not in _DONE}
        for key in list(self.claims):
            claim = self.claims[key]
            owner = next((r for r in claim["metadata"].get("ownerReferences") or []
                          if r.get("kind") == "Pod" and r.get("controller")), None)
            if owner is not None and str(owner.get("uid")) not in live:
                del self.claims[key]
                if cache is not None:
                    cache.dra.delete_resource_claim(key)
                changed = True
                continue
            status = claim.get("status") or {}
            reserved = status.get("reservedFor") or []
            kept = [r for r in reserved if r.get("resource") != "pods" or str(r.get("uid")) in live]
            if len(kept) == len(reserved):
                continue
            status["reservedFor"] = kept
            if not kept:
                status.pop("reservedFor", None)
                status.pop("allocation", None)
            claim["status"] = status
            self._bump(claim)
            if cache is not None:
                cache.dra.update_resource_claim(claim)
            changed = True
        return changed

    def _make_claims(self, pod: dict[str, Any], cache: Cache | None) -> bool:
        spec, meta = pod.get("spec") or {}, pod["metadata"]
        if not spec.get("resourceClaims") or (pod.get("status") or {}).get("phase") in _DONE:
            return False
        status = pod.setdefault("status", {})
        recorded = {s.get("name") for s in status.get("resourceClaimStatuses") or []}
        namespace = meta.get("namespace") or "default"
        made = False
        for entry in spec["resourceClaims"]:
            template_name = entry.get("resourceClaimTemplateName")
            if not template_name or entry["name"] in recorded:
                continue
            template = self.templates.get(f"{namespace}/{template_name}")
            if template is None:
                continue  # the controller waits for the template
            name = template_claim_name(meta["name"], entry["name"], f"{meta.get('uid')}/{entry['name']}")
            tmeta = (template.get("spec") or {}).get("metadata") or {}
            claim = {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "uid": f"{meta.get('uid')}-claim-{entry['name']}",
                    "labels": dict(tmeta.get("labels") or {}),
                    "annotations": {**(tmeta.get("annotations") or {}), POD_CLAIM_NAME_ANNOTATION: entry["name"]},
                    "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                                         "uid": meta.get("uid"), "controller": True, "blockOwnerDeletion": True}],
                    "creationTimestamp": meta.get("creationTimestamp"),
                },
                "spec": copy.deepcopy((template.get("spec") or {}).get("spec") or {}),
            }
            self._bump(claim)
            self.claims[f"{namespace}/{name}"] = claim
            if cache is not None:
                cache.dra.add_resource_claim(claim)
            status.setdefault("resourceClaimStatuses", []).append({"name": entry["name"], "resourceClaimName": name})
            made = True
        if made and cache is not None:
            cache.update_pod(pod)
        return made

    # -- the scheduler's PreBind ----------------------------------------------------------------------

    def bind(self, e: Bind, cache: Cache) -> None:
        for status in e.claims:
            claim = self.claims.get(f"{status.namespace}/{status.name}")
            if claim is None:
                continue
            out = claim.setdefault("status", {})
            if status.allocation is not None:
                out["allocation"] = copy.deepcopy(status.allocation)
            out["reservedFor"] = [dict(r) for r in status.reserved_for]
            self._bump(claim)
            cache.dra.update_resource_claim(claim)

    # -- output -----------------------------------------------------------------------------------

    def output(self) -> dict[str, Any]:
        """The contract's ``claims``: allocated or not, the devices, the consumers."""
        out = {}
        for key, claim in sorted(self.claims.items()):
            status = claim.get("status") or {}
            allocation = status.get("allocation")
            results = ((allocation or {}).get("devices") or {}).get("results") or []
            out[key] = {
                "allocated": allocation is not None,
                "devices": [{k: r[k] for k in ("request", "driver", "pool", "device") if k in r}
                            | ({"shareID": r["shareID"]} if r.get("shareID") else {})
                            | ({"consumedCapacity": dict(r["consumedCapacity"])} if r.get("consumedCapacity") else {})
                            | ({"adminAccess": True} if r.get("adminAccess") else {})
                            for r in results],
                "reservedFor": [f"{claim['metadata'].get('namespace') or 'default'}/{r.get('name')}"
                                for r in status.get("reservedFor") or [] if r.get("resource") == "pods"],
            }
            if allocation is not None and allocation.get("nodeSelector") is not None:
                out[key]["nodeSelector"] = allocation["nodeSelector"]
        return out
