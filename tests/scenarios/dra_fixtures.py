"""Builders for Dynamic Resource Allocation scenarios (resource.k8s.io/v1 manifests as YAML text)."""

from __future__ import annotations

import json

from .conftest import node

DRIVER = "gpu.example.com"


def device_class(name: str = DRIVER, *selectors: str, extra: str = "") -> str:
    sel = "".join(f"\n  - cel: {{expression: {json.dumps(s)}}}" for s in selectors)
    return f"""
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: {name}}}
spec:
  selectors:{sel or ' []'}
{extra}
"""


def gpu(name: str, model: str = "a100", memory: str = "40Gi", extra: str = "", attrs: dict | None = None) -> dict:
    attributes = {"model": {"string": model}, **(attrs or {})}
    d = {"name": name, "attributes": attributes, "capacity": {"memory": {"value": memory}}}
    if extra:
        d.update(json.loads(extra))
    return d


def resource_slice(name: str, node_name: str | None, devices: list[dict], driver: str = DRIVER, pool: str | None = None,
                   generation: int = 1, count: int = 1, spec_extra: dict | None = None) -> str:
    spec: dict = {"driver": driver, "pool": {"name": pool or node_name or name, "generation": generation,
                                             "resourceSliceCount": count}, "devices": devices}
    if node_name:
        spec["nodeName"] = node_name
    spec.update(spec_extra or {})
    return "\n---\n" + json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                   "metadata": {"name": name}, "spec": spec}) + "\n"


def gpu_node(name: str, gpus: int = 2, cpu: str = "8", models: list[str] | None = None, attrs=None) -> str:
    devices = [gpu(f"gpu-{i}", (models or ["a100"] * gpus)[i], attrs=(attrs[i] if attrs else None))
               for i in range(gpus)]
    return node(name, cpu=cpu, memory="32Gi") + resource_slice(f"{name}-gpus", name, devices)


def exact(cls: str = DRIVER, count: int | None = None, selectors: tuple[str, ...] = (), **more) -> dict:
    e: dict = {"deviceClassName": cls}
    if count is not None:
        e["count"] = count
    if selectors:
        e["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    e.update(more)
    return e


def claim_spec(requests: list[dict], constraints: list[dict] | None = None) -> dict:
    devices: dict = {"requests": requests}
    if constraints:
        devices["constraints"] = constraints
    return {"devices": devices}


def claim(name: str, spec: dict, ns: str = "default", status: dict | None = None) -> str:
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"name": name, "namespace": ns}, "spec": spec}
    if status:
        obj["status"] = status
    return "\n---\n" + json.dumps(obj) + "\n"


def template(name: str, spec: dict, ns: str = "default") -> str:
    return "\n---\n" + json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                                   "metadata": {"name": name, "namespace": ns}, "spec": {"spec": spec}}) + "\n"


def claim_pod(name: str, claims: dict[str, tuple[str, str]], cpu: str = "1", group: str | None = None,
              ns: str = "default", node_name: str | None = None, phase: str | None = None,
              priority_class: str | None = None, status: dict | None = None, meta: dict | None = None) -> str:
    """``claims``: pod claim name -> ("claim" | "template", object name)."""
    spec: dict = {
        "schedulerName": "volcano",
        "resourceClaims": [{"name": n, ("resourceClaimName" if kind == "claim" else "resourceClaimTemplateName"): o}
                           for n, (kind, o) in claims.items()],
        "containers": [{"name": "main", "image": "busybox",
                        "resources": {"requests": {"cpu": cpu, "memory": "1Gi"},
                                      "claims": [{"name": n} for n in claims]}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    if priority_class:
        spec["priorityClassName"] = priority_class
    metadata: dict = {"name": name, "namespace": ns, **(meta or {})}
    if group:
        metadata.setdefault("annotations", {})["scheduling.k8s.io/group-name"] = group
    obj: dict = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
    st = dict(status or {})
    if phase:
        st["phase"] = phase
    if st:
        obj["status"] = st
    return "\n---\n" + json.dumps(obj) + "\n"


def devices_of(out: dict, claim_key: str) -> list[str]:
    return [d["device"] for d in out["claims"][claim_key]["devices"]]


def pod_claim(out: dict, pod_key: str, name: str) -> str:
    return out["pods"][pod_key]["claims"][name]
