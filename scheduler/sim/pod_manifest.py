"""Pods as the Kubernetes API server validates them, for Pods and Job pod templates.

``validate_pod`` checks what the scheduler reads from a pod and what the API
server would refuse (containers, resources, ports, tolerations, priority, ...)
and then applies the API server's defaults (scheduler/api/pod_defaults.py).  A
Job's task templates come through it with a ``PrefixedChecker``, so that their
errors name ``spec.tasks[i].template.spec...``.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from ..api.pod_defaults import default_pod
from .fields import (
    INT32_MAX,
    INT32_MIN,
    Checker,
    as_int,
    as_list,
    as_mapping,
    as_string,
    check_container_resource_name,
    check_dns_label,
    check_dns_subdomain,
    check_port,
    format_time,
    is_extended_resource,
    one_of,
    optional_bool,
    or_empty,
    parse_time,
    plain,
    quoted,
    resource_list,
    string_map,
)

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_TOLERATION_EFFECTS = ("", *TAINT_EFFECTS)
_TOLERATION_OPERATORS = ("", "Exists", "Equal")
_PROTOCOLS = ("TCP", "UDP", "SCTP")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
_POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")


def validate_pod(obj: dict, check: Checker) -> None:
    validate_sim_annotations((obj.get("metadata") or {}).get("annotations") or {}, check, "metadata.annotations")
    if obj.get("spec") is None:
        check.fail("spec", "Required value")
    spec = as_mapping(obj["spec"], check, "spec")
    containers = spec.get("containers")
    if containers is None or containers == []:
        check.fail("spec.containers", "Required value")
    names: set[str] = set()
    for group in ("initContainers", "containers"):
        if spec.get(group) is None:
            continue
        for i, container in enumerate(as_list(spec[group], check, f"spec.{group}")):
            _validate_container(container, check, f"spec.{group}[{i}]", names)

    if spec.get("overhead") is not None:
        resource_list(spec["overhead"], check, "spec.overhead")
    for field in ("schedulerName", "nodeName", "priorityClassName", "serviceAccountName", "restartPolicy"):
        if spec.get(field) is not None:
            as_string(spec[field], check, f"spec.{field}")
    if spec.get("nodeName"):
        check_dns_subdomain(spec["nodeName"], check, "spec.nodeName")
    if spec.get("priority") is not None:
        as_int(spec["priority"], check, "spec.priority", INT32_MIN, INT32_MAX)
    if spec.get("preemptionPolicy") is not None:
        one_of(spec["preemptionPolicy"], PREEMPTION_POLICIES, check, "spec.preemptionPolicy")
    if "nodeSelector" in spec:
        spec["nodeSelector"] = string_map(spec["nodeSelector"], check, "spec.nodeSelector")
    if spec.get("tolerations") is not None:
        for i, toleration in enumerate(as_list(spec["tolerations"], check, "spec.tolerations")):
            _validate_toleration(toleration, check, f"spec.tolerations[{i}]")
    optional_bool(spec.get("hostNetwork"), check, "spec.hostNetwork")
    if spec.get("terminationGracePeriodSeconds") is not None:
        as_int(spec["terminationGracePeriodSeconds"], check, "spec.terminationGracePeriodSeconds", 0, 2**63 - 1)

    status = as_mapping(obj.get("status"), check, "status")
    obj["status"] = status
    if status.get("phase") not in (None, ""):
        one_of(status["phase"], _POD_PHASES, check, "status.phase")
    for field in ("nominatedNodeName", "reason", "message"):
        if status.get(field) is not None:
            as_string(status[field], check, f"status.{field}")
    if status.get("startTime") not in (None, ""):  # preempt's topology-aware mode reads it
        status["startTime"] = format_time(parse_time(status["startTime"], check, "status.startTime"))
    default_pod(obj)


def _validate_container(container: Any, check: Checker, path: str, names: set[str]) -> None:
    container = as_mapping(container, check, path)
    name = container.get("name")
    if name is None or name == "":
        check.fail(f"{path}.name", "Required value")
    as_string(name, check, f"{path}.name")
    check_dns_label(name, check, f"{path}.name")
    if name in names:
        check.fail(f"{path}.name", f"Duplicate value: {name!r}")
    names.add(name)
    if container.get("image") is not None:
        as_string(container["image"], check, f"{path}.image")

    if container.get("resources") is not None:
        resources = as_mapping(container["resources"], check, f"{path}.resources")
        _validate_resource_requirements(resources, check, f"{path}.resources")

    if container.get("ports") is not None:
        for i, port in enumerate(as_list(container["ports"], check, f"{path}.ports")):
            port_path = f"{path}.ports[{i}]"
            port = as_mapping(port, check, port_path)
            if port.get("containerPort") is None:
                check.fail(f"{port_path}.containerPort", "Required value")
            check_port(port["containerPort"], check, f"{port_path}.containerPort")
            host_port = port.get("hostPort")
            if host_port is not None and host_port != 0:
                check_port(host_port, check, f"{port_path}.hostPort")
            if port.get("protocol") is not None:
                one_of(port["protocol"], _PROTOCOLS, check, f"{port_path}.protocol")
            if port.get("hostIP") is not None:
                as_string(port["hostIP"], check, f"{port_path}.hostIP")


def _validate_resource_requirements(resources: dict, check: Checker, path: str) -> None:
    """requests/limits: names, values, requests defaulted from limits, then requests ≤ limits."""
    parsed: dict[str, dict[str, Fraction]] = {}
    for key in ("requests", "limits"):
        raw = as_mapping(resources.get(key), check, f"{path}.{key}")
        for name in raw:
            check_container_resource_name(name, check, f"{path}.{key}.{name}")
        parsed[key] = resource_list(raw, check, f"{path}.{key}")
    # a limit without a request makes the request (api/pod_defaults.py, after these checks): equal, valid
    requests, limits = parsed["requests"], parsed["limits"]
    limits_raw = resources.get("limits") or {}
    requests_raw = resources.get("requests") or {}
    for name, request in requests.items():
        if name not in limits:
            continue
        limit_text = plain(limits_raw[name])
        got = quoted(requests_raw[name])
        if is_extended_resource(name):
            if request != limits[name]:
                check.fail(f"{path}.requests.{name}", f"must be equal to {name} limit of {limit_text}, got {got}")
        elif request > limits[name]:
            check.fail(f"{path}.requests.{name}", f"must be less than or equal to {name} limit of {limit_text}, got {got}")


def _validate_toleration(toleration: Any, check: Checker, path: str) -> None:
    toleration = as_mapping(toleration, check, path)
    key = as_string(or_empty(toleration.get("key")), check, f"{path}.key")
    operator = one_of(or_empty(toleration.get("operator")), _TOLERATION_OPERATORS, check, f"{path}.operator")
    value = as_string(or_empty(toleration.get("value")), check, f"{path}.value")
    one_of(or_empty(toleration.get("effect")), _TOLERATION_EFFECTS, check, f"{path}.effect")
    if not key and operator != "Exists":
        check.fail(
            f"{path}.operator",
            'operator must be Exists when `key` is empty, which means "match all values and all keys"',
        )
    if operator == "Exists" and value:
        check.fail(f"{path}.value", "value must be empty when `operator` is 'Exists'")
    if toleration.get("tolerationSeconds") is not None:
        as_int(toleration["tolerationSeconds"], check, f"{path}.tolerationSeconds", -(2**63), 2**63 - 1)


def validate_sim_annotations(annotations: Mapping[str, str], check: Checker, path: str) -> None:
    """The simulated pod lifecycle's annotations: durations and an integer exit code."""
    from ..controllers.job_state import DurationError, parse_duration
    from .jobs import SIM_ANNOTATIONS, SIM_EXIT_CODE

    for key in SIM_ANNOTATIONS:
        if key in annotations:
            try:
                if parse_duration(annotations[key]) < 0:
                    raise DurationError("must not be negative")
            except DurationError as e:
                check.fail(f"{path}[{key}]", f"{e} (a duration such as 30s or 1m30s)")
    if SIM_EXIT_CODE in annotations:
        try:
            int(annotations[SIM_EXIT_CODE])
        except ValueError:
            check.fail(f"{path}[{SIM_EXIT_CODE}]", f"must be an integer exit code, got {annotations[SIM_EXIT_CODE]!r}")
