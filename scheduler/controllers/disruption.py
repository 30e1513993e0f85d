"""A PodDisruptionBudget's status as Kubernetes' disruption controller writes it
(pkg/controller/disruption/disruption.go · trySync, getExpectedPodCount, getExpectedScale,
countHealthyPods, buildDisruptedPodMap, updatePdbStatus, failSafe).

A cluster's kube-controller-manager keeps every PDB's status current; ``simulate`` has none, so the
embedded cluster asks ``pdb_status`` for it (scheduler/sim/cluster.py says when).  The rules:

- the PDB's pods are every pod of its namespace its selector selects (a nil selector none, ``{}``
  all), in any phase;
- ``minAvailable`` as an integer: ``desiredHealthy`` is that number and ``expectedPods`` the number
  of those pods.  A percentage ``minAvailable``, or any ``maxUnavailable``, is taken of the scale of
  the pods' controllers: pods without a controlling owner are skipped ("unmanaged"), and a pod with
  one fails the sync, since the embedded cluster holds no ReplicaSet, StatefulSet or other workload
  with a scale subresource (a Volcano Job has none either).  A failed sync leaves the status as it
  was but for ``disruptionsAllowed: 0`` and a ``DisruptionAllowed=False`` (``SyncFailed``) condition;
- ``currentHealthy``: those pods that are Ready, not being deleted and not in ``disruptedPods``
  (entries younger than two minutes; older ones are dropped).  ``simulate`` runs no kubelet: a pod's
  ``Ready`` condition decides when it has one, else a Running pod counts as Ready;
- ``disruptionsAllowed = currentHealthy − desiredHealthy``, 0 when negative or when
  ``expectedPods`` is 0; the ``DisruptionAllowed`` condition says whether it is above 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from ..api.k8s import SelectorError, parse_label_selector
from ..api.task_info import parse_timestamp

DELETION_TIMEOUT = 120.0  # seconds: a pod in disruptedPods is expected to be gone by then
CONDITION = "DisruptionAllowed"
SUFFICIENT_PODS, INSUFFICIENT_PODS, SYNC_FAILED = "SufficientPods", "InsufficientPods", "SyncFailed"


class SyncError(Exception):
    """The controller cannot compute the status (getExpectedScale's errors)."""


def selected_pods(pdb: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``getPodsForPdb``: the pods of the PDB's namespace its selector selects."""
    meta = pdb.get("metadata") or {}
    ns = meta.get("namespace") or "default"
    try:
        selector = parse_label_selector((pdb.get("spec") or {}).get("selector"))
    except SelectorError:
        return []
    return [p for p in pods if ((p.get("metadata") or {}).get("namespace") or "default") == ns
            and selector.matches((p.get("metadata") or {}).get("labels") or {})]


def pdb_status(pdb: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], now: float) -> dict[str, Any]:
    """The status the controller leaves on ``pdb`` after a sync at ``now`` (Unix seconds), given all
    pods of the cluster (``pods``)."""
    mine = selected_pods(pdb, pods)
    old = dict(pdb.get("status") or {})
    generation = int((pdb.get("metadata") or {}).get("generation") or 1)
    try:
        expected, desired = _expected_pod_count(pdb.get("spec") or {}, mine)
    except SyncError as e:
        status = dict(old)
        status["disruptionsAllowed"] = 0
        status["conditions"] = _set_condition(old.get("conditions"), "False", SYNC_FAILED, str(e),
                                              int(old.get("observedGeneration") or 0), now)
        return status
    disrupted = _disrupted_pods(mine, old.get("disruptedPods") or {}, now)
    healthy = _count_healthy(mine, disrupted, now)
    allowed = healthy - desired
    if expected <= 0 or allowed <= 0:
        allowed = 0
    status: dict[str, Any] = {
        "currentHealthy": healthy, "desiredHealthy": desired, "expectedPods": expected,
        "disruptionsAllowed": allowed, "observedGeneration": generation,
    }
    if disrupted:
        status["disruptedPods"] = disrupted
    if allowed > 0:
        cond = ("True", SUFFICIENT_PODS)
    else:
        cond = ("False", INSUFFICIENT_PODS)
    status["conditions"] = _set_condition(old.get("conditions"), cond[0], cond[1], "", generation, now)
    return status


# -- getExpectedPodCount ---------------------------------------------------------------------


def _expected_pod_count(spec: Mapping[str, Any], pods: list[Mapping[str, Any]]) -> tuple[int, int]:
    """(expectedCount, desiredHealthy)."""
    max_unavailable, min_available = spec.get("maxUnavailable"), spec.get("minAvailable")
    if max_unavailable is not None:
        expected = _expected_scale(pods)
        desired = expected - _scaled(max_unavailable, expected)
        return expected, max(desired, 0)
    if min_available is not None:
        if isinstance(min_available, int):
            return len(pods), min_available
        expected = _expected_scale(pods)
        return expected, _scaled(min_available, expected)
    return 0, 0


def _scaled(value: int | str, total: int) -> int:
    """``intstr.GetScaledValueFromIntOrPercent`` rounding up."""
    if isinstance(value, int):
        return value
    return math.ceil(int(value.rstrip("%")) * total / 100)


def _expected_scale(pods: list[Mapping[str, Any]]) -> int:
    """``getExpectedScale``: the sum of the pods' controllers' scales.  Pods without a controller are
    unmanaged and skipped; the embedded cluster has no controller with a scale to find."""
    for pod in pods:
        meta = pod.get("metadata") or {}
        ref = next((r for r in meta.get("ownerReferences") or [] if r.get("controller")), None)
        if ref is None:
            continue
        group = str(ref.get("apiVersion") or "").rpartition("/")[0]
        if group == "batch.volcano.sh" and ref.get("kind") == "Job":
            raise SyncError("jobs.batch.volcano.sh does not implement the scale subresource")
        raise SyncError(f'found no controllers for pod "{meta.get("name")}"')
    return 0


# -- health ------------------------------------------------------------------------------------


def pod_ready(pod: Mapping[str, Any]) -> bool:
    """``IsPodReady``; without a ``Ready`` condition (no kubelet wrote one), a Running pod is Ready."""
    status = pod.get("status") or {}
    cond = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    if cond is not None:
        return cond.get("status") == "True"
    return status.get("phase") == "Running"


def _disrupted_pods(pods: list[Mapping[str, Any]], old: Mapping[str, Any], now: float) -> dict[str, str]:
    """``buildDisruptedPodMap``: the entries of pods still there, not being deleted, and younger than
    the deletion timeout."""
    out: dict[str, str] = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        name = meta.get("name")
        if meta.get("deletionTimestamp") or name not in old:
            continue
        if parse_timestamp(old[name]) + DELETION_TIMEOUT >= now:
            out[name] = old[name]
    return out


def _count_healthy(pods: list[Mapping[str, Any]], disrupted: Mapping[str, str], now: float) -> int:
    healthy = 0
    for pod in pods:
        meta = pod.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            continue
        when = disrupted.get(meta.get("name"))
        if when is not None and parse_timestamp(when) + DELETION_TIMEOUT > now:
            continue
        if pod_ready(pod):
            healthy += 1
    return healthy


def _set_condition(conditions: Any, status: str, reason: str, message: str, generation: int,
                   now: float) -> list[dict[str, Any]]:
    """``apimeta.SetStatusCondition`` for ``DisruptionAllowed``: the transition time moves only when
    the status does."""
    out = [dict(c) for c in conditions or []]
    cond = next((c for c in out if c.get("type") == CONDITION), None)
    if cond is None:
        cond = {"type": CONDITION}
        out.append(cond)
    if cond.get("status") != status or not cond.get("lastTransitionTime"):
        cond["lastTransitionTime"] = datetime.fromtimestamp(now, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    cond.update(status=status, reason=reason, message=message, observedGeneration=generation)
    return out
