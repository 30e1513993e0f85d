"""PodGroups for bare pods (controllers/podgroup: createNormalPodPGIfNotExist, buildPodGroupFromPod).

Pods with a controlling owner (a ReplicaSet's, a StatefulSet's) share one PodGroup named after the
owner's UID. With ``--inherit-owner-annotations`` (Volcano's default) the owners' annotations are
read: ``scheduling.volcano.sh/group-min-member`` gives minMember, and every ``volcano.sh/`` one is
copied onto the PodGroup. A Deployment's annotations reach its pods' PodGroup through its ReplicaSet
(the deployment controller copies them there); Volcano never reads the Deployment itself. The queue
and the priority class come from the pod only (its annotation, its spec), as in Volcano: owners pass
them on through the pod template.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..api.types import GROUP_NAME_ANNOTATION, PREEMPTABLE_KEY, QUEUE_NAME_ANNOTATION
from . import quota

_COPIED_ANNOTATIONS = (PREEMPTABLE_KEY, "volcano.sh/cooldown-time", "volcano.sh/revocable-zone")
_COPIED_LABELS = (PREEMPTABLE_KEY, "volcano.sh/cooldown-time")
GROUP_MIN_MEMBER_ANNOTATION = "scheduling.volcano.sh/group-min-member"
INHERITED_PREFIX = "volcano.sh/"  # scheduling.AnnotationPrefix
NETWORK_TOPOLOGY_MODE = "volcano.sh/network-topology-mode"
NETWORK_TOPOLOGY_HIGHEST_TIER = "volcano.sh/network-topology-highest-tier"
# the owner kinds whose annotations Volcano reads (getAnnotationsFromUpperRes): (group, kind)
OWNER_KINDS = (("apps", "ReplicaSet"), ("apps", "DaemonSet"), ("apps", "StatefulSet"), ("batch", "Job"))
_GO_INT = re.compile(r"[+-]?[0-9]+")


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


def owner_references(pod: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(group, kind, name) of the pod's owners whose annotations are inherited, in the pod's order.
    Volcano matches the kind alone (a batch.volcano.sh Job's pods carry a group name and never get here);
    we also match the group, so another API's ``Job`` is not taken for a batch/v1 one."""
    out = []
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        group = (ref.get("apiVersion") or "").rpartition("/")[0]
        if (group, ref.get("kind")) in OWNER_KINDS and ref.get("name"):
            out.append((group, ref["kind"], ref["name"]))
    return out


def merge_owner_annotations(owners: Iterable[Mapping[str, str] | None]) -> dict[str, str]:
    """The owners' annotations in one map: the first owner wins a key."""
    out: dict[str, str] = {}
    for owner in owners:
        for k, v in (owner or {}).items():
            out.setdefault(k, v)
    return out


def group_min_member(owner_annotations: Mapping[str, str]) -> int:
    """``scheduling.volcano.sh/group-min-member`` (getMinMemberFromUpperRes): an int32; unreadable or
    negative → 1. Zero is taken as it is, as Volcano does."""
    text = owner_annotations.get(GROUP_MIN_MEMBER_ANNOTATION)
    if text is None or not _GO_INT.fullmatch(text):
        return 1
    value = int(text)
    return value if 0 <= value < 2 ** 31 else 1


def network_topology(annotations: Mapping[str, str]) -> dict[str, Any] | None:
    """spec.networkTopology from the pod's annotations (parseNetworkTopologyFromPod): mode ``hard`` or
    ``soft`` (anything else: hard), highestTierAllowed when the tier reads as an int."""
    mode = annotations.get(NETWORK_TOPOLOGY_MODE)
    tier = annotations.get(NETWORK_TOPOLOGY_HIGHEST_TIER)
    if mode is None and tier is None:
        return None
    out: dict[str, Any] = {"mode": mode.lower() if mode is not None and mode.lower() in ("hard", "soft") else "hard"}
    if tier is not None and _GO_INT.fullmatch(tier):
        out["highestTierAllowed"] = int(tier)
    return out


def podgroup_for_pod(pod: Mapping[str, Any], owner_annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The PodGroup manifest the controller creates for a bare pod. ``owner_annotations``: the merged
    annotations of its owners when inheriting them (None: not inheriting; minMember 1)."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    annotations = meta.get("annotations") or {}
    labels = meta.get("labels") or {}
    owners = [dict(r) for r in meta.get("ownerReferences") or []]
    if not any(r.get("controller") for r in owners):
        owners = [{"apiVersion": "v1", "kind": "Pod", "name": meta.get("name"), "uid": meta.get("uid"),
                   "controller": True}]
    inherited = owner_annotations or {}
    min_member = group_min_member(inherited) if owner_annotations is not None else 1
    # the pod's quota usage × minMember: cpu and requests.cpu, pods and count/pods, …
    min_resources = quota.format_usage(quota.scale(quota.pod_usage(spec), min_member)) if min_member else {}
    pg_spec: dict[str, Any] = {"minMember": min_member, "minResources": min_resources}
    if spec.get("priorityClassName"):
        pg_spec["priorityClassName"] = spec["priorityClassName"]
    if annotations.get(QUEUE_NAME_ANNOTATION):
        pg_spec["queue"] = annotations[QUEUE_NAME_ANNOTATION]
    topology = network_topology(annotations)
    if topology is not None:
        pg_spec["networkTopology"] = topology
    # owners' volcano.sh/ annotations first; the pod's own then overwrite them
    pg_annotations = {k: v for k, v in inherited.items() if k.startswith(INHERITED_PREFIX)}
    pg_annotations.update(_copied_annotations(annotations))
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": podgroup_name(pod),
            "namespace": meta.get("namespace") or "default",
            "ownerReferences": owners,
            "annotations": pg_annotations,
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


# -- workloads (WorkLoadSupport, on by default: ReplicaSet and StatefulSet add/update events) -----------

CONTROLLER_REVISION_HASH = "controller-revision-hash"


def workload_replicas(workload: Mapping[str, Any]) -> int:
    """spec.replicas; the API server defaults an absent one to 1."""
    replicas = (workload.get("spec") or {}).get("replicas")
    return 1 if replicas is None else int(replicas)


def workload_selector(workload: Mapping[str, Any]) -> dict[str, str]:
    """The labels the workload's pods are looked up by: selector.matchLabels, plus for a StatefulSet
    ``controller-revision-hash: <status.updateRevision>`` (its pods of the current revision)."""
    labels = dict(((workload.get("spec") or {}).get("selector") or {}).get("matchLabels") or {})
    if workload.get("kind") == "StatefulSet":
        labels[CONTROLLER_REVISION_HASH] = (workload.get("status") or {}).get("updateRevision") or ""
    return labels


def first_pod(pods: Iterable[Mapping[str, Any]], selector: Mapping[str, str]) -> Mapping[str, Any] | None:
    """The pod Volcano takes for the workload (``podList.Items[0]``): the first matching one by name."""
    matching = [p for p in pods if all(((p.get("metadata") or {}).get("labels") or {}).get(k) == v
                                       for k, v in selector.items())]
    return min(matching, key=lambda p: (p.get("metadata") or {}).get("name") or "", default=None)


def podgroup_update(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | None:
    """shouldUpdateExistingPodGroup: ``existing`` with the desired spec, labels and annotations, or None
    when they are the same. An unset queue keeps the stored one (the API's default, or the namespace's
    queue from the PodGroup webhook); absent and empty maps are the same (Go's DeepEqual would not)."""
    meta = existing.get("metadata") or {}
    want = desired["metadata"]
    spec = dict(desired.get("spec") or {})
    if "queue" not in spec and (existing.get("spec") or {}).get("queue"):
        spec["queue"] = existing["spec"]["queue"]
    if (spec == (existing.get("spec") or {}) and (meta.get("labels") or {}) == want.get("labels")
            and (meta.get("annotations") or {}) == want.get("annotations")):
        return None
    return {**existing, "metadata": {**meta, "labels": want.get("labels"), "annotations": want.get("annotations")},
            "spec": spec}
