"""ResourceQuota usage as Kubernetes counts it: the quota controller's ``status``
(pkg/controller/resourcequota · syncResourceQuota, apiserver quota/v1 · CalculateUsage) and the
quota admission plugin's check of a pod being created (apiserver admission/plugin/resourcequota ·
CheckRequest), both with the pod evaluator (pkg/quota/v1/evaluator/core/pods.go).

``simulate`` has neither a controller manager nor an API server; its embedded cluster calls these.

- A pod's usage (``pod_usage``, ``PodUsageFunc``): ``count/pods`` 1 always; unless the pod is
  terminal (Succeeded, Failed) or past its deletion grace period, also ``pods`` 1, ``cpu`` and
  ``requests.cpu``, ``memory`` and ``requests.memory``, ``ephemeral-storage`` and
  ``requests.ephemeral-storage`` from its requests, ``limits.*`` from its limits (containers
  summed, init containers as their maximum, sidecars added, overhead added),
  ``hugepages-*``/``requests.hugepages-*`` and ``requests.<name>`` for extended resources.
- A quota's scopes (``spec.scopes``, ``spec.scopeSelector``) select the pods it counts:
  ``Terminating`` (``activeDeadlineSeconds`` set), ``NotTerminating``, ``BestEffort`` (no cpu or
  memory request or limit), ``NotBestEffort``, ``PriorityClass`` (by ``priorityClassName``),
  ``CrossNamespacePodAffinity`` (affinity terms naming other namespaces).
- ``status.hard`` is ``spec.hard``; ``status.used`` holds, for each hard resource the controller
  tracks, the sum over the namespace's pods the quota selects.  Besides the pod resources, the
  embedded cluster counts ``resourcequotas`` and ``configmaps`` (and their ``count/`` names) and
  reports 0 for the other standard object counts (services, secrets, PersistentVolumeClaims,
  ReplicationControllers, node ports, load balancers, storage requests), objects it never holds.
  A hard resource it cannot track keeps the ``used`` it had.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..api.k8s import SelectorError, new_requirement
from ..api.quota import (
    DECIMAL_SI,
    Quantity,
    ResourceList,
    add,
    add_quantity,
    exceeds,
    mask,
    pretty,
    quantity,
    resource_list,
    text_list,
)
from ..api.task_info import parse_timestamp

_POD_RESOURCES = frozenset({
    "count/pods", "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods",
})
_POD_RESOURCE_PREFIXES = ("hugepages-", "requests.hugepages-")
# if a quota limits these, every container must state them (the evaluator's validationSet)
_VALIDATION_SET = frozenset({"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"})
# object counts of kinds the embedded cluster holds (counted) and of kinds it never holds (always 0)
_COUNTED = {"resourcequotas": "ResourceQuota", "count/resourcequotas": "ResourceQuota",
            "configmaps": "ConfigMap", "count/configmaps": "ConfigMap"}
_NEVER_HELD = frozenset({
    "services", "secrets", "persistentvolumeclaims", "replicationcontrollers", "services.nodeports",
    "services.loadbalancers", "requests.storage", "count/services", "count/secrets",
    "count/persistentvolumeclaims", "count/replicationcontrollers",
})
_ONE = Quantity(quantity(1).value, DECIMAL_SI)


# -- the pod evaluator ---------------------------------------------------------------------------


def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def _is_extended(name: str) -> bool:
    """``helper.IsExtendedResourceName``: not native, not ``requests.``-prefixed, and a qualified name
    once ``requests.`` is put before it."""
    if _is_native(name) or name.startswith("requests."):
        return False
    prefix, _, rest = f"requests.{name}".rpartition("/")
    return (0 < len(prefix) <= 253 and bool(_DNS_SUBDOMAIN.match(prefix)) and 0 < len(rest) <= 63
            and bool(_NAME_PART.match(rest)))


def matching_resources(names: Iterable[str]) -> list[str]:
    """``podEvaluator.MatchingResources``: the names among ``names`` the pod evaluator counts."""
    return sorted(n for n in names if n in _POD_RESOURCES or n.startswith(_POD_RESOURCE_PREFIXES)
                  or (not _is_native(n) and n.startswith("requests.")))


def _add_into(total: ResourceList, rl: Mapping[str, Quantity]) -> None:
    for name, q in rl.items():
        total[name] = add_quantity(total[name], q) if name in total else q


def _max_into(total: ResourceList, rl: Mapping[str, Quantity]) -> None:
    for name, q in rl.items():
        if name not in total or q.value > total[name].value:
            total[name] = q


def _aggregate(spec: Mapping[str, Any], kind: str) -> ResourceList:
    """``AggregateContainerRequests`` / ``AggregateContainerLimits``, then the overhead (added to
    every request, and to the limits that are set)."""
    total: ResourceList = {}
    for c in spec.get("containers") or []:
        _add_into(total, resource_list((c.get("resources") or {}).get(kind)))
    sidecars: ResourceList = {}
    init_max: ResourceList = {}
    for c in spec.get("initContainers") or []:
        own = resource_list((c.get("resources") or {}).get(kind))
        if c.get("restartPolicy") == "Always":
            _add_into(total, own)
            _add_into(sidecars, own)
            own = dict(sidecars)
        else:
            own = dict(own)
            _add_into(own, sidecars)
        _max_into(init_max, own)
    _max_into(total, init_max)
    overhead = resource_list(spec.get("overhead"))
    if kind == "requests":
        _add_into(total, overhead)
    else:
        _add_into(total, {k: q for k, q in overhead.items() if k in total})
    return total


def _compute_usage(requests: Mapping[str, Quantity], limits: Mapping[str, Quantity]) -> ResourceList:
    """``podComputeUsageHelper``."""
    out: ResourceList = {"pods": _ONE}
    for name in ("cpu", "memory", "ephemeral-storage"):
        if name in requests:
            out[name] = out[f"requests.{name}"] = requests[name]
        if name in limits:
            out[f"limits.{name}"] = limits[name]
    for name, q in requests.items():
        if name.startswith("hugepages-"):
            out[name] = out[f"requests.{name}"] = q
        if _is_extended(name):
            out[f"requests.{name}"] = q
    return out


def charged(pod: Mapping[str, Any], now: float) -> bool:
    """``QuotaV1Pod``: not terminal, and not past the grace period of its deletion."""
    status, meta = pod.get("status") or {}, pod.get("metadata") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return False
    grace = meta.get("deletionGracePeriodSeconds")
    if meta.get("deletionTimestamp") and grace is not None:
        return now <= parse_timestamp(meta["deletionTimestamp"]) + float(grace)
    return True


def pod_usage(pod: Mapping[str, Any], now: float) -> ResourceList:
    """``PodUsageFunc``."""
    usage: ResourceList = {"count/pods": _ONE}
    if not charged(pod, now):
        return usage
    spec = pod.get("spec") or {}
    return add(usage, _compute_usage(_aggregate(spec, "requests"), _aggregate(spec, "limits")))


# -- scopes --------------------------------------------------------------------------------------


def scope_selectors(quota: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """``GetScopeSelectorsFromQuota``: each of ``spec.scopes`` as an ``Exists``, then the
    ``scopeSelector``'s expressions."""
    spec = quota.get("spec") or {}
    out: list[Mapping[str, Any]] = [{"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or []]
    out += list(((spec.get("scopeSelector") or {}).get("matchExpressions")) or [])
    return out


def _best_effort(pod: Mapping[str, Any]) -> bool:
    qos = (pod.get("status") or {}).get("qosClass")
    if qos:
        return qos == "BestEffort"
    spec = pod.get("spec") or {}
    for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        res = c.get("resources") or {}
        for kind in ("requests", "limits"):
            for name, q in resource_list(res.get(kind)).items():
                if name in ("cpu", "memory") and q.value > 0:
                    return False
    return True


def _cross_namespace_affinity(pod: Mapping[str, Any]) -> bool:
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        a = affinity.get(kind) or {}
        terms = list(a.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
        terms += [(w or {}).get("podAffinityTerm") or {}
                  for w in a.get("preferredDuringSchedulingIgnoredDuringExecution") or []]
        if any((t or {}).get("namespaces") or (t or {}).get("namespaceSelector") is not None for t in terms):
            return True
    return False


def scope_matches(selector: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """``podMatchesScopeFunc``."""
    scope = selector.get("scopeName")
    if scope in ("Terminating", "NotTerminating"):
        deadline = (pod.get("spec") or {}).get("activeDeadlineSeconds")
        return (deadline is not None and deadline >= 0) == (scope == "Terminating")
    if scope == "BestEffort":
        return _best_effort(pod)
    if scope == "NotBestEffort":
        return not _best_effort(pod)
    if scope == "PriorityClass":
        name = (pod.get("spec") or {}).get("priorityClassName") or ""
        if selector.get("operator") == "Exists":
            return bool(name)
        try:
            req = new_requirement("PriorityClass", str(selector.get("operator")), selector.get("values"))
        except SelectorError:
            return False
        return req.matches({"PriorityClass": name} if name else {})
    if scope == "CrossNamespacePodAffinity":
        return _cross_namespace_affinity(pod)
    return False


def selects(quota: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    return all(scope_matches(s, pod) for s in scope_selectors(quota))


# -- the controller -------------------------------------------------------------------------------


def quota_status(quota: Mapping[str, Any], objects: Mapping[str, Iterable[Mapping[str, Any]]],
                 now: float) -> dict[str, dict[str, str]]:
    """``syncResourceQuota``: ``{"hard": spec.hard, "used": ...}`` as text.  ``objects``: the
    namespace's objects by kind (``Pod``, ``ConfigMap``, ``ResourceQuota``)."""
    hard = resource_list((quota.get("spec") or {}).get("hard"))
    used = resource_list(((quota.get("status") or {}).get("used")))
    pod_names = matching_resources(hard)
    observed: ResourceList = {name: Quantity(quantity(0).value, DECIMAL_SI) for name in pod_names}
    if pod_names:
        for pod in objects.get("Pod") or ():
            if selects(quota, pod):
                observed = add(observed, pod_usage(pod, now))
    for name in hard:
        if name in _COUNTED:
            n = sum(1 for _ in objects.get(_COUNTED[name]) or ())
            observed[name] = Quantity(quantity(n).value, DECIMAL_SI)
        elif name in _NEVER_HELD:
            observed[name] = Quantity(quantity(0).value, DECIMAL_SI)
    used.update(mask(observed, set(pod_names) | (set(hard) & (set(_COUNTED) | _NEVER_HELD))))
    return {"hard": text_list(hard), "used": text_list(mask(used, hard))}


# -- admission -----------------------------------------------------------------------------------


def admit(quotas: list[Mapping[str, Any]], pod: Mapping[str, Any], now: float
          ) -> tuple[str | None, dict[int, dict[str, str]]]:
    """The quota admission plugin on creating ``pod`` under ``quotas`` (its namespace's, in order):
    the refusal (``exceeded quota: ...``, ``failed quota: ...: must specify ...``), or None and the
    new ``status.used`` text of each quota charged, by index."""
    interesting: list[int] = []
    for i, q in enumerate(quotas):
        status = q.get("status") or {}
        hard_names = list((status.get("hard") or {}))
        restricted = matching_resources(hard_names)
        if not restricted or not selects(q, pod):
            continue
        missing = _missing(pod, set(restricted) & _VALIDATION_SET)
        name = (q.get("metadata") or {}).get("name")
        if missing:
            return f"failed quota: {name}: must specify {missing}", {}
        used = status.get("used") or {}
        unknown = [r for r in hard_names if r in restricted and r not in used]
        if unknown:
            return f"status unknown for quota: {name}, resources: {','.join(sorted(restricted))}", {}
        interesting.append(i)
    delta = {k: q for k, q in pod_usage(pod, now).items() if q.value != 0}
    if not delta:
        return None, {}
    charged_used: dict[int, dict[str, str]] = {}
    for i in interesting:
        q = quotas[i]
        status = q.get("status") or {}
        hard = resource_list(status.get("hard"))
        used = resource_list(status.get("used"))
        requested, exceeded = exceeds(delta, used, hard)
        if exceeded:
            name = (q.get("metadata") or {}).get("name")
            return (f"exceeded quota: {name}, requested: {pretty(mask(requested, exceeded))}, "
                    f"used: {pretty(mask(used, exceeded))}, limited: {pretty(mask(hard, exceeded))}"), {}
        charged_used[i] = text_list(add(used, requested))
    return None, charged_used


def _missing(pod: Mapping[str, Any], required: set[str]) -> str:
    """``podEvaluator.Constraints``: ``cpu for: a,b; memory for: a`` for what containers do not state."""
    if not required:
        return ""
    spec = pod.get("spec") or {}
    missing: dict[str, set[str]] = {}
    for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        res = c.get("resources") or {}
        have = _compute_usage(resource_list(res.get("requests")), resource_list(res.get("limits")))
        for name in required - set(have):
            missing.setdefault(name, set()).add(str(c.get("name") or ""))
    return "; ".join(f"{name} for: {','.join(sorted(cs))}" for name, cs in sorted(missing.items()))
