"""Pods as the Kubernetes API server validates them, for Pods and Job pod templates.

``validate_pod`` checks what the scheduler reads from a pod and what the API
server would refuse (containers, resources, ports, tolerations, priority,
``spec.affinity`` as ``validateAffinity`` does, ``spec.topologySpreadConstraints``
as ``validateTopologySpreadConstraints`` does, scheduling gates, and the status
fields the simulator and the job controller read back) and then applies the API
server's defaults (scheduler/api/pod_defaults.py).  Every field is typed before
its rules are checked, so that the parsers of scheduler/api/k8s.py only ever see
what the API server would have stored.  A Job's task templates come through it
with a ``PrefixedChecker``, so that their errors name
``spec.tasks[i].template.spec...``.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from ..api.pod_defaults import default_pod
from .fields import (
    INT32_MAX,
    INT32_MIN,
    LABEL_SELECTOR_OPERATORS,
    Checker,
    as_int,
    as_list,
    as_mapping,
    as_string,
    check_container_resource_name,
    check_dns_label,
    check_dns_subdomain,
    check_label_key,
    check_port,
    check_string_keys,
    conditions,
    describe,
    format_time,
    is_extended_resource,
    label_selector,
    labels,
    normalise_time,
    one_of,
    optional_bool,
    or_empty,
    parse_time,
    plain,
    quoted,
    resource_list,
    selector_keys,
    selector_requirement,
    string_list,
)

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_TOLERATION_EFFECTS = ("", *TAINT_EFFECTS)
_TOLERATION_OPERATORS = ("", "Exists", "Equal")
_PROTOCOLS = ("TCP", "UDP", "SCTP")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
_POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
_INIT_CONTAINER_RESTART_POLICIES = ("Always",)
_NODE_SELECTOR_OPERATORS = (*LABEL_SELECTOR_OPERATORS, "Gt", "Lt")
_OBJECT_NAME_FIELD = "metadata.name"
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
_NODE_INCLUSION_POLICIES = ("Honor", "Ignore")


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
            _validate_container(container, check, f"spec.{group}[{i}]", names, init=group == "initContainers")

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
        spec["nodeSelector"] = labels(spec["nodeSelector"], check, "spec.nodeSelector")
    pod_labels = (obj.get("metadata") or {}).get("labels") or {}
    if spec.get("affinity") is not None:
        validate_affinity(spec["affinity"], pod_labels, check, "spec.affinity")
    if spec.get("topologySpreadConstraints") is not None:
        validate_spread_constraints(spec["topologySpreadConstraints"], check, "spec.topologySpreadConstraints")
    if spec.get("schedulingGates") is not None:
        _validate_scheduling_gates(spec["schedulingGates"], check, "spec.schedulingGates")
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
    if status.get("conditions") is not None:  # preempt reads DisruptionTarget, the simulator PodScheduled
        conditions(status["conditions"], check, "status.conditions")
    for key in ("containerStatuses", "initContainerStatuses"):  # the job controller reads restarts and exit codes
        if status.get(key) is not None:
            _validate_container_statuses(status[key], check, f"status.{key}")
    if spec.get("resourceClaims") is not None or status.get("resourceClaimStatuses") is not None or any(
            isinstance(c, dict) and isinstance(c.get("resources"), dict) and c["resources"].get("claims") is not None
            for group in ("containers", "initContainers") for c in spec.get(group) or []):
        from .dra_manifest import validate_pod_claims

        validate_pod_claims(spec, status, check)
    default_pod(obj)


def _validate_container(container: Any, check: Checker, path: str, names: set[str], *, init: bool) -> None:
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
    if container.get("restartPolicy") is not None:  # an init container with Always is a sidecar
        if not init:
            check.fail(f"{path}.restartPolicy", "Forbidden: may not be set for non-init containers")
        one_of(container["restartPolicy"], _INIT_CONTAINER_RESTART_POLICIES, check, f"{path}.restartPolicy")

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


def _validate_scheduling_gates(gates: Any, check: Checker, path: str) -> None:
    """``validateSchedulingGates``: qualified names, no duplicates."""
    seen: set[str] = set()
    for i, gate in enumerate(as_list(gates, check, path)):
        gate = as_mapping(gate, check, f"{path}[{i}]")
        name = as_string(or_empty(gate.get("name")), check, f"{path}[{i}].name")
        check_label_key(name, check, f"{path}[{i}]")
        if name in seen:
            check.fail(f"{path}[{i}]", f"Duplicate value: {name!r}")
        seen.add(name)


def _validate_container_statuses(statuses: Any, check: Checker, path: str) -> None:
    for i, cs in enumerate(as_list(statuses, check, path)):
        item = f"{path}[{i}]"
        cs = as_mapping(cs, check, item)
        if cs.get("name") is not None:
            as_string(cs["name"], check, f"{item}.name")
        if cs.get("restartCount") is not None:
            as_int(cs["restartCount"], check, f"{item}.restartCount", 0, INT32_MAX)
        for key in ("state", "lastState"):
            state = as_mapping(cs.get(key), check, f"{item}.{key}")
            for phase in ("waiting", "running", "terminated"):
                detail = as_mapping(state.get(phase), check, f"{item}.{key}.{phase}")
                if detail.get("exitCode") is not None:
                    as_int(detail["exitCode"], check, f"{item}.{key}.{phase}.exitCode", INT32_MIN, INT32_MAX)
                for field in ("reason", "message"):
                    if detail.get(field) is not None:
                        as_string(detail[field], check, f"{item}.{key}.{phase}.{field}")
                for field in ("startedAt", "finishedAt"):
                    normalise_time(detail, field, check, f"{item}.{key}.{phase}")


# -- affinity (ValidateAffinity and what it calls) ---------------------------------------------------


def validate_affinity(value: Any, pod_labels: Mapping[str, str], check: Checker, path: str) -> None:
    """``spec.affinity`` as the API server's ``validateAffinity`` checks it, every field typed first:
    scheduler/api/k8s.py parses what this lets through."""
    check_string_keys(value, check, path)
    affinity = as_mapping(value, check, path)
    if affinity.get("nodeAffinity") is not None:
        _validate_node_affinity(affinity["nodeAffinity"], check, f"{path}.nodeAffinity")
    for kind in ("podAffinity", "podAntiAffinity"):
        if affinity.get(kind) is not None:
            _validate_pod_affinity(affinity[kind], pod_labels, check, f"{path}.{kind}")


def _validate_node_affinity(value: Any, check: Checker, path: str) -> None:
    node_affinity = as_mapping(value, check, path)
    if node_affinity.get(_REQUIRED) is not None:
        required = as_mapping(node_affinity[_REQUIRED], check, f"{path}.{_REQUIRED}")
        terms_path = f"{path}.{_REQUIRED}.nodeSelectorTerms"
        terms = as_list(required["nodeSelectorTerms"], check, terms_path) if required.get("nodeSelectorTerms") \
            is not None else []
        if not terms:
            check.fail(terms_path, "Required value: must have at least one node selector term")
        for i, term in enumerate(terms):
            _validate_node_selector_term(term, check, f"{terms_path}[{i}]", label_values=True)
    if node_affinity.get(_PREFERRED) is not None:
        for i, weighted in enumerate(as_list(node_affinity[_PREFERRED], check, f"{path}.{_PREFERRED}")):
            item = f"{path}.{_PREFERRED}[{i}]"
            weighted = as_mapping(weighted, check, item)
            _check_weight(weighted.get("weight"), check, f"{item}.weight")
            # the API server lets invalid label values through here: a preference may still match one node
            _validate_node_selector_term(weighted.get("preference"), check, f"{item}.preference", label_values=False)


def _validate_node_selector_term(value: Any, check: Checker, path: str, *, label_values: bool) -> None:
    """``ValidateNodeSelectorTerm``: label requirements, and field requirements on ``metadata.name``."""
    term = as_mapping(value, check, path)
    if term.get("matchExpressions") is not None:
        for i, req in enumerate(as_list(term["matchExpressions"], check, f"{path}.matchExpressions")):
            selector_requirement(req, check, f"{path}.matchExpressions[{i}]",
                                 operators=_NODE_SELECTOR_OPERATORS, label_values=label_values)
    if term.get("matchFields") is not None:
        for i, req in enumerate(as_list(term["matchFields"], check, f"{path}.matchFields")):
            _validate_node_field_requirement(req, check, f"{path}.matchFields[{i}]")


def _validate_node_field_requirement(value: Any, check: Checker, path: str) -> None:
    """``ValidateNodeFieldSelectorRequirement``: ``metadata.name In|NotIn [one node name]``."""
    req = as_mapping(value, check, path)
    key = as_string(or_empty(req.get("key")), check, f"{path}.key")
    operator = as_string(or_empty(req.get("operator")), check, f"{path}.operator")
    values = string_list(req.get("values"), check, f"{path}.values")
    if operator not in ("In", "NotIn"):
        check.fail(f"{path}.operator", f"Invalid value: {operator!r}: not a valid selector operator")
    if len(values) != 1:
        check.fail(f"{path}.values",
                   "Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector")
    if key != _OBJECT_NAME_FIELD:
        check.fail(f"{path}.key", f"Invalid value: {key!r}: not a valid field selector key")
    check_dns_subdomain(values[0], check, f"{path}.values[0]")


def _validate_pod_affinity(value: Any, pod_labels: Mapping[str, str], check: Checker, path: str) -> None:
    """``validatePodAffinity`` / ``validatePodAntiAffinity``: required terms and weighted preferred ones."""
    block = as_mapping(value, check, path)
    if block.get(_REQUIRED) is not None:
        for i, term in enumerate(as_list(block[_REQUIRED], check, f"{path}.{_REQUIRED}")):
            _validate_pod_affinity_term(term, pod_labels, check, f"{path}.{_REQUIRED}[{i}]")
    if block.get(_PREFERRED) is not None:
        for i, weighted in enumerate(as_list(block[_PREFERRED], check, f"{path}.{_PREFERRED}")):
            item = f"{path}.{_PREFERRED}[{i}]"
            weighted = as_mapping(weighted, check, item)
            _check_weight(weighted.get("weight"), check, f"{item}.weight")
            _validate_pod_affinity_term(weighted.get("podAffinityTerm"), pod_labels, check, f"{item}.podAffinityTerm")


def _validate_pod_affinity_term(value: Any, pod_labels: Mapping[str, str], check: Checker, path: str) -> None:
    """``validatePodAffinityTerm``: selectors, namespaces, match/mismatch label keys, topologyKey."""
    term = as_mapping(value, check, path)
    selector = label_selector(term.get("labelSelector"), check, f"{path}.labelSelector")
    label_selector(term.get("namespaceSelector"), check, f"{path}.namespaceSelector")
    for i, namespace in enumerate(string_list(term.get("namespaces"), check, f"{path}.namespaces")):
        check_dns_label(namespace, check, f"{path}.namespaces[{i}]")
    match_keys = string_list(term.get("matchLabelKeys"), check, f"{path}.matchLabelKeys")
    mismatch_keys = string_list(term.get("mismatchLabelKeys"), check, f"{path}.mismatchLabelKeys")
    for field, keys in (("matchLabelKeys", match_keys), ("mismatchLabelKeys", mismatch_keys)):
        if keys and selector is None:
            check.fail(f"{path}.{field}", "Forbidden: must not be specified when labelSelector is not set")
        for i, key in enumerate(keys):
            check_label_key(key, check, f"{path}.{field}[{i}]")
    # the API server merges matchLabelKeys into the selector (for the pod's own labels) before it
    # validates: a key already in the selector is then there twice
    in_selector = selector_keys(selector)
    for i, key in enumerate(match_keys):
        if key in in_selector and key in pod_labels:
            check.fail(f"{path}.matchLabelKeys[{i}]", f"Invalid value: {key!r}: exists in both matchLabelKeys and labelSelector")
        if key in mismatch_keys:
            check.fail(f"{path}.matchLabelKeys[{i}]",
                       f"Invalid value: {key!r}: exists in both matchLabelKeys and mismatchLabelKeys")
    topology_key = as_string(or_empty(term.get("topologyKey")), check, f"{path}.topologyKey")
    if not topology_key:
        check.fail(f"{path}.topologyKey", "Required value: can not be empty")
    check_label_key(topology_key, check, f"{path}.topologyKey")


def _check_weight(value: Any, check: Checker, path: str) -> None:
    """A preferred term's weight: an integer in 1-100 (absent is 0, refused)."""
    weight = 0 if value is None else value
    if isinstance(weight, bool) or not isinstance(weight, int):
        check.fail(path, f"must be an integer, got {describe(value)}")
    if not 1 <= weight <= 100:
        check.fail(path, f"Invalid value: {weight}: must be in the range 1-100")


# -- topology spread constraints (validateTopologySpreadConstraints) --------------------------------


def validate_spread_constraints(value: Any, check: Checker, path: str) -> None:
    check_string_keys(value, check, path)
    constraints = as_list(value, check, path)
    seen: set[tuple[str, str]] = set()
    for i, raw in enumerate(constraints):
        item = f"{path}[{i}]"
        c = as_mapping(raw, check, item)
        max_skew = as_int(0 if c.get("maxSkew") is None else c["maxSkew"], check, f"{item}.maxSkew", INT32_MIN, INT32_MAX)
        if max_skew <= 0:
            check.fail(f"{item}.maxSkew", f"Invalid value: {max_skew}: must be greater than zero")
        topology_key = as_string(or_empty(c.get("topologyKey")), check, f"{item}.topologyKey")
        if not topology_key:
            check.fail(f"{item}.topologyKey", "Required value: can not be empty")
        action = one_of(or_empty(c.get("whenUnsatisfiable")), _WHEN_UNSATISFIABLE, check, f"{item}.whenUnsatisfiable")
        if (topology_key, action) in seen:
            check.fail(f"{item}.{{topologyKey, whenUnsatisfiable}}", f"Duplicate value: '{{{topology_key}, {action}}}'")
        seen.add((topology_key, action))
        if c.get("minDomains") is not None:
            min_domains = as_int(c["minDomains"], check, f"{item}.minDomains", INT32_MIN, INT32_MAX)
            if min_domains <= 0:
                check.fail(f"{item}.minDomains", f"Invalid value: {min_domains}: must be greater than zero")
            if action != "DoNotSchedule":
                check.fail(f"{item}.minDomains",
                           f"Invalid value: {min_domains}: can only use minDomains if whenUnsatisfiable=DoNotSchedule, "
                           f"not {action}")
        for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            if c.get(policy) is not None:
                one_of(c[policy], _NODE_INCLUSION_POLICIES, check, f"{item}.{policy}")
        selector = label_selector(c.get("labelSelector"), check, f"{item}.labelSelector")
        keys = string_list(c.get("matchLabelKeys"), check, f"{item}.matchLabelKeys")
        if keys and selector is None:
            check.fail(f"{item}.matchLabelKeys", "Forbidden: must not be specified when labelSelector is not set")
        in_selector = selector_keys(selector)
        for j, key in enumerate(keys):
            check_label_key(key, check, f"{item}.matchLabelKeys[{j}]")
            if key in in_selector:
                check.fail(f"{item}.matchLabelKeys[{j}]",
                           f"Invalid value: {key!r}: exists in both matchLabelKeys and labelSelector")
