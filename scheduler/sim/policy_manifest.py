"""``policy/v1`` PodDisruptionBudget and ``v1`` ResourceQuota as the API server admits them.

PodDisruptionBudget (``ValidatePodDisruptionBudgetSpec``): ``minAvailable`` and ``maxUnavailable``
are each an integer ≥ 0 or a percentage (``^[0-9]+%$``, at most 100%), never both; ``selector`` is a
label selector; ``unhealthyPodEvictionPolicy`` is ``IfHealthyBudget`` or ``AlwaysAllow``.  A given
``status`` is typed: counts ≥ 0, ``disruptedPods`` times, conditions.

ResourceQuota (``ValidateResourceQuotaSpec``): ``spec.hard`` names are standard quota resources or
fully qualified names, quantities ≥ 0 (whole numbers for counts and extended resources); ``scopes``
and ``scopeSelector`` name standard scopes that suit every standard resource of ``hard``, with
operators that suit them, and never both halves of BestEffort/NotBestEffort or
Terminating/NotTerminating.  A given ``status.hard``/``status.used`` is checked the same way.

Quantities in a ResourceQuota are written back in the API server's canonical form (``2000m`` →
``2``), as it stores them.
"""

from __future__ import annotations

import re
from typing import Any

from ..api.quota import canonical, quantity
from .fields import (
    INT32_MAX,
    INT64_MAX,
    Checker,
    as_int,
    as_item,
    as_list,
    as_mapping,
    as_string,
    conditions,
    describe,
    format_time,
    label_selector,
    one_of,
    parse_time,
    qualified_name_problem,
    resource_list,
)

_PERCENT = re.compile(r"^[0-9]+%$")
_PERCENT_RULE = ("a valid percent string must be a numeric string followed by an ending '%' "
                 "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")
UNHEALTHY_POD_EVICTION_POLICIES = ("IfHealthyBudget", "AlwaysAllow")

# k8s core helper: standardResources, standardQuotaResources, the quota scopes and what they suit
STANDARD_RESOURCES = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "resourcequotas", "services",
    "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims", "storage", "requests.storage",
    "services.nodeports", "services.loadbalancers",
})
STANDARD_QUOTA_RESOURCES = STANDARD_RESOURCES - {"storage"}
_HUGEPAGES = ("hugepages-", "requests.hugepages-")
QUOTA_SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass",
                "CrossNamespacePodAffinity", "VolumeAttributesClass")
_POD_COUNT = frozenset({"pods"})
_POD_COMPUTE = frozenset({"cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory"})
_PVC = frozenset({"persistentvolumeclaims", "requests.storage"})
_EXISTS_ONLY = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "CrossNamespacePodAffinity")
_CONFLICTS = (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating"))
_SCOPE_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


# -- PodDisruptionBudget ---------------------------------------------------------------------------


def validate_pdb(obj: dict, check: Checker) -> None:
    meta = obj["metadata"]
    if meta.get("generation") is not None:
        as_int(meta["generation"], check, "metadata.generation", 0, INT64_MAX)
    spec = as_mapping(obj.get("spec"), check, "spec")
    obj["spec"] = spec
    given = [key for key in ("minAvailable", "maxUnavailable") if spec.get(key) is not None]
    if len(given) == 2:
        check.fail("spec", "Invalid value: minAvailable and maxUnavailable cannot be both set")
    for key in given:
        _int_or_percent(spec[key], check, f"spec.{key}")
    label_selector(spec.get("selector"), check, "spec.selector")
    if spec.get("unhealthyPodEvictionPolicy") is not None:
        one_of(spec["unhealthyPodEvictionPolicy"], UNHEALTHY_POD_EVICTION_POLICIES, check,
               "spec.unhealthyPodEvictionPolicy")
    if obj.get("status") is None:
        return
    status = as_mapping(obj["status"], check, "status")
    for key in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
        if status.get(key) is not None:
            as_int(status[key], check, f"status.{key}", 0, INT32_MAX)
    if status.get("observedGeneration") is not None:
        as_int(status["observedGeneration"], check, "status.observedGeneration", 0, INT64_MAX)
    disrupted = as_mapping(status.get("disruptedPods"), check, "status.disruptedPods")
    for name, when in list(disrupted.items()):
        as_string(name, check, "status.disruptedPods")
        disrupted[name] = format_time(parse_time(when, check, f"status.disruptedPods[{name}]"))
    if disrupted:
        status["disruptedPods"] = disrupted
    if status.get("conditions") is not None:
        conditions(status["conditions"], check, "status.conditions")


def _int_or_percent(value: Any, check: Checker, path: str) -> None:
    """``ValidatePositiveIntOrPercent`` and ``IsNotMoreThan100Percent`` on an IntOrString."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        check.fail(path, f"must be an integer or a percentage (e.g. '5%'), got {describe(value)}")
    if isinstance(value, int):
        as_int(value, check, path, 0, INT32_MAX)
        return
    if not _PERCENT.match(value):
        check.fail(path, f"Invalid value: {value!r}: {_PERCENT_RULE}")
    if int(value[:-1]) > 100:
        check.fail(path, f"Invalid value: {value!r}: must not be greater than 100%")


# -- ResourceQuota ---------------------------------------------------------------------------------


def validate_resource_quota(obj: dict, check: Checker) -> None:
    spec = as_mapping(obj.get("spec"), check, "spec")
    obj["spec"] = spec
    hard = _quota_list(spec, "hard", check, "spec.hard")
    scopes = []
    if spec.get("scopes") is not None:
        for i, scope in enumerate(as_list(spec["scopes"], check, "spec.scopes")):
            as_string(scope, check, f"spec.scopes[{i}]")
            _check_scope(scope, hard, check, f"spec.scopes[{i}]")
            scopes.append(scope)
        _check_conflicts(scopes, check, "spec.scopes")
    if spec.get("scopeSelector") is not None:
        selector = as_mapping(spec["scopeSelector"], check, "spec.scopeSelector")
        names = []
        path = "spec.scopeSelector.matchExpressions"
        for i, req in enumerate(as_list(selector.get("matchExpressions") or [], check, path)):
            item = f"{path}[{i}]"
            req = as_item(req, check, item)
            scope = as_string(req.get("scopeName") or "", check, f"{item}.scopeName")
            operator = as_string(req.get("operator") or "", check, f"{item}.operator")
            values = req.get("values")
            if values is not None:
                for j, v in enumerate(as_list(values, check, f"{item}.values")):
                    as_string(v, check, f"{item}.values[{j}]")
            _check_scope(scope, hard, check, f"{item}.scopeName")
            if scope in _EXISTS_ONLY and operator != "Exists":
                check.fail(f"{item}.operator", f"Invalid value: {operator!r}: must be 'Exist' when scope is any of "
                           "ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, "
                           "ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or "
                           "ResourceQuotaScopeCrossNamespacePodAffinity")
            if operator in ("In", "NotIn"):
                if not values:
                    check.fail(f"{item}.values", "Required value: must be at least one value when `operator` is "
                               "'In' or 'NotIn' for scope selector")
            elif operator in ("Exists", "DoesNotExist"):
                if values:
                    check.fail(f"{item}.values", "Invalid value: must be no value when `operator` is 'Exist' or "
                               "'DoesNotExist' for scope selector")
            else:
                check.fail(f"{item}.operator", f"Invalid value: {operator!r}: not a valid selector operator "
                           f"(supported: {', '.join(_SCOPE_OPERATORS)})")
            names.append(scope)
        _check_conflicts(names, check, path)
    if obj.get("status") is not None:
        status = as_mapping(obj["status"], check, "status")
        for key in ("hard", "used"):
            _quota_list(status, key, check, f"status.{key}")


def _quota_list(parent: dict, key: str, check: Checker, path: str) -> dict[str, Any]:
    """A quota ResourceList: ``ValidateResourceQuotaResourceName`` and ``ValidateResourceQuantityValue``
    on each entry, written back in canonical form."""
    raw = as_mapping(parent.get(key), check, path)
    for name in raw:
        if not isinstance(name, str):
            check.fail(path, f"resource names must be strings, got {describe(name)}")
        problem = qualified_name_problem(name)
        if problem:
            check.fail(f"{path}.{name}", f"Invalid value: {name!r}: {problem}")
        if "/" not in name:
            standard = name.startswith(_HUGEPAGES)
            if not standard and name not in STANDARD_RESOURCES:
                check.fail(f"{path}.{name}", f"Invalid value: {name!r}: must be a standard resource type or "
                           "fully qualified")
            if not standard and name not in STANDARD_QUOTA_RESOURCES:
                check.fail(f"{path}.{name}", f"Invalid value: {name!r}: must be a standard resource for quota")
    resource_list(raw, check, path)
    if raw:
        parent[key] = {name: canonical(quantity(value)) for name, value in raw.items()}
    return raw


def _check_scope(scope: str, hard: dict[str, Any], check: Checker, path: str) -> None:
    if scope not in QUOTA_SCOPES:
        check.fail(path, f"Invalid value: {scope!r}: unsupported scope (supported: {', '.join(QUOTA_SCOPES)})")
    for name in sorted(hard):
        if (name in STANDARD_QUOTA_RESOURCES or name.startswith(_HUGEPAGES)) and not _scope_suits(scope, name):
            check.fail(path, f"Invalid value: {scope!r}: unsupported scope applied to resource {name!r}")


def _scope_suits(scope: str, resource: str) -> bool:
    """``IsResourceQuotaScopeValidForResource``."""
    if scope in ("Terminating", "NotTerminating", "NotBestEffort", "PriorityClass", "CrossNamespacePodAffinity"):
        return resource in _POD_COUNT or resource in _POD_COMPUTE
    if scope == "BestEffort":
        return resource in _POD_COUNT
    if scope == "VolumeAttributesClass":
        return resource in _PVC
    return True


def _check_conflicts(scopes: list[str], check: Checker, path: str) -> None:
    for pair in _CONFLICTS:
        if all(s in scopes for s in pair):
            check.fail(path, f"Invalid value: conflicting scopes {pair[0]} and {pair[1]}")
