"""PodGroups for bare pods (controllers/podgroup: createNormalPodPGIfNotExist, buildPodGroupFromPod)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..api.types import GROUP_NAME_ANNOTATION, PREEMPTABLE_KEY, QUEUE_NAME_ANNOTATION
from . import quota

_COPIED_ANNOTATIONS = (PREEMPTABLE_KEY, "volcano.sh/cooldown-time", "volcano.sh/revocable-zone")
_COPIED_LABELS = (PREEMPTABLE_KEY, "volcano.sh/cooldown-time")


def needs_podgroup(pod: Mapping[str, Any], scheduler_names: tuple[str, ...]) -> bool:
    meta = pod.get("metadata") or {}
    return ((pod.get("spec") or {}).get("schedulerName") in scheduler_names
            and not (meta.get("annotations") or {}).get(GROUP_NAME_ANNOTATION))


def podgroup_name(pod: Mapping[str, Any]) -> str:
    """``podgroup-<uid>``: the controlling owner's UID if there is one, else the pod's."""
    meta = pod.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller"):
            return f"podgroup-{ref.get('uid')}"
    return f"podgroup-{meta.get('uid')}"


def podgroup_for_pod(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The PodGroup manifest the controller creates for a bare pod (minMember 1)."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    annotations = meta.get("annotations") or {}
    labels = meta.get("labels") or {}
    owners = [dict(r) for r in meta.get("ownerReferences") or []]
    if not any(r.get("controller") for r in owners):
        owners = [{"apiVersion": "v1", "kind": "Pod", "name": meta.get("name"), "uid": meta.get("uid"),
                   "controller": True}]
    # the pod's quota usage × minMember (1): cpu and requests.cpu, pods and count/pods, …
    min_resources = quota.format_usage(quota.pod_usage(spec))
    pg_spec: dict[str, Any] = {"minMember": 1, "minResources": min_resources}
    if spec.get("priorityClassName"):
        pg_spec["priorityClassName"] = spec["priorityClassName"]
    if annotations.get(QUEUE_NAME_ANNOTATION):
        pg_spec["queue"] = annotations[QUEUE_NAME_ANNOTATION]
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": podgroup_name(pod),
            "namespace": meta.get("namespace") or "default",
            "ownerReferences": owners,
            "annotations": _copied_annotations(annotations),
            "labels": {k: labels[k] for k in _COPIED_LABELS if k in labels},
            "creationTimestamp": meta.get("creationTimestamp"),
            "uid": f"pg-{meta.get('uid')}",
        },
        "spec": pg_spec,
        "status": {"phase": "Pending"},
    }


def _copied_annotations(annotations: Mapping[str, str]) -> dict[str, str]:
    out = {k: annotations[k] for k in _COPIED_ANNOTATIONS if k in annotations}
    if "volcano.sh/jdb-min-available" in annotations:
        out["volcano.sh/jdb-min-available"] = annotations["volcano.sh/jdb-min-available"]
    elif "volcano.sh/jdb-max-unavailable" in annotations:
        out["volcano.sh/jdb-max-unavailable"] = annotations["volcano.sh/jdb-max-unavailable"]
    return out
