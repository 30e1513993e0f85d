"""``resource.k8s.io/v1`` DeviceClass, ResourceSlice, ResourceClaim and ResourceClaimTemplate as the
API server admits them (k8s.io/kubernetes pkg/apis/resource/validation, Kubernetes 1.34-1.36), for
the fields the scheduler reads: names, requests (``exactly`` or ``firstAvailable``, allocation mode and
count, CEL selectors that compile in the DRA environment, tolerations, capacity requests), constraints
and configs naming requests that exist, a claim's ``status.allocation`` and ``status.reservedFor``;
a slice's pool, node selection, devices with their attributes, capacities, taints and counters.

The same checks serve Kubernetes mode: the cache refuses an object that fails them (the CRDs that
stand in for a v1.34+ server in the envtest tier do not validate), and the pods naming it get an event.
Also pod ``spec.resourceClaims`` and containers' ``resources.claims`` (``validate_pod_claims``).
"""

from __future__ import annotations

import re
from typing import Any

from ..api.dra_cel import SelectorCompileError, SemverError, compile_selector
from ..api.dra_cel import Semver
from ..api.quantity import QuantityError, parse_quantity
from .fields import (
    DNS1123_SUBDOMAIN,
    INT64_MAX,
    Checker,
    as_int,
    as_item,
    as_list,
    as_mapping,
    as_string,
    check_dns_label,
    check_dns_subdomain,
    describe,
    is_qualified_name,
    one_of,
    optional_bool,
    qualified_name_problem,
    string_map,
)

MAX_REQUESTS = 32  # DeviceRequestsMaxSize
MAX_SUBREQUESTS = 8  # FirstAvailableDeviceRequestMaxSize
MAX_SELECTORS = 32  # DeviceSelectorsMaxSize
MAX_CONSTRAINTS = 32
MAX_CONFIGS = 32
MAX_TOLERATIONS = 16
MAX_DEVICES_PER_SLICE = 128
MAX_ATTRIBUTES_AND_CAPACITIES = 32
MAX_RESERVED_FOR = 256
MAX_RESULTS = 32
MAX_DRIVER_NAME = 63
MAX_STRING_ATTRIBUTE = 64
ALLOCATION_MODES = ("All", "ExactCount")
DEVICE_TAINT_EFFECTS = ("NoSchedule", "NoExecute", "None")
TOLERATION_OPERATORS = ("Equal", "Exists")
TOLERATION_EFFECTS = ("", "NoSchedule", "NoExecute")
_C_IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _invalid(check: Checker, path: str, value: Any, detail: str) -> None:
    check.fail(path, f"Invalid value: {value!r}: {detail}")


def _required(value: Any, check: Checker, path: str) -> None:
    if value is None or value == "" or value == [] or value == {}:
        check.fail(path, "Required value")


def _quantity(value: Any, check: Checker, path: str):
    try:
        return parse_quantity(value)
    except QuantityError as e:
        check.fail(path, str(e))


def _driver_name(value: Any, check: Checker, path: str) -> str:
    _required(value, check, path)
    as_string(value, check, path)
    if len(value) > MAX_DRIVER_NAME:
        check.fail(path, f"Too long: may not be more than {MAX_DRIVER_NAME} bytes")
    check_dns_subdomain(value, check, path)
    return value


def _selectors(value: Any, check: Checker, path: str) -> None:
    if value is None:
        return
    items = as_list(value, check, path)
    if len(items) > MAX_SELECTORS:
        check.fail(path, f"Too many: {len(items)}: must have at most {MAX_SELECTORS} items")
    for i, raw in enumerate(items):
        selector = as_item(raw, check, f"{path}[{i}]")
        cel = as_mapping(selector.get("cel"), check, f"{path}[{i}].cel")
        if selector.get("cel") is None:
            check.fail(f"{path}[{i}].cel", "Required value")
        expression = cel.get("expression")
        field = f"{path}[{i}].cel.expression"
        _required(expression, check, field)
        as_string(expression, check, field)
        try:
            compile_selector(expression)
        except SelectorCompileError as e:
            check.fail(field, f"Invalid value: {_short(expression)}: {e.detail}")


def _short(expression: str) -> str:
    return repr(expression if len(expression) <= 80 else expression[:77] + "...")


def _opaque_configs(value: Any, check: Checker, path: str, request_names: set[str] | None) -> None:
    if value is None:
        return
    items = as_list(value, check, path)
    if len(items) > MAX_CONFIGS:
        check.fail(path, f"Too many: {len(items)}: must have at most {MAX_CONFIGS} items")
    for i, raw in enumerate(items):
        item = as_item(raw, check, f"{path}[{i}]")
        if request_names is not None:
            for j, name in enumerate(as_list(item.get("requests") or [], check, f"{path}[{i}].requests")):
                as_string(name, check, f"{path}[{i}].requests[{j}]")
                if name not in request_names:
                    check.fail(f"{path}[{i}].requests[{j}]", f"Invalid value: {name!r}: must be the name of a request "
                               "in the claim or the name of a request and a subrequest separated by '/'")
        opaque = item.get("opaque")
        if opaque is None:
            check.fail(f"{path}[{i}].opaque", "Required value")
        opaque = as_mapping(opaque, check, f"{path}[{i}].opaque")
        _driver_name(opaque.get("driver"), check, f"{path}[{i}].opaque.driver")
        if opaque.get("parameters") is None:
            check.fail(f"{path}[{i}].opaque.parameters", "Required value")


# -- DeviceClass -------------------------------------------------------------------------------


def validate_device_class(obj: dict, check: Checker) -> None:
    spec = as_mapping(obj.get("spec"), check, "spec")
    obj["spec"] = spec
    _selectors(spec.get("selectors"), check, "spec.selectors")
    _opaque_configs(spec.get("config"), check, "spec.config", None)
    if spec.get("extendedResourceName") is not None:
        as_string(spec["extendedResourceName"], check, "spec.extendedResourceName")


# -- ResourceClaim and its template --------------------------------------------------------------


def _tolerations(value: Any, check: Checker, path: str) -> None:
    if value is None:
        return
    items = as_list(value, check, path)
    if len(items) > MAX_TOLERATIONS:
        check.fail(path, f"Too many: {len(items)}: must have at most {MAX_TOLERATIONS} items")
    for i, raw in enumerate(items):
        p = f"{path}[{i}]"
        t = as_item(raw, check, p)
        key = t.get("key")
        if key not in (None, ""):
            as_string(key, check, f"{p}.key")
            problem = qualified_name_problem(key)
            if problem:
                _invalid(check, f"{p}.key", key, problem)
        operator = t.get("operator") or "Equal"
        one_of(operator, TOLERATION_OPERATORS, check, f"{p}.operator")
        value_ = t.get("value")
        if value_ is not None:
            as_string(value_, check, f"{p}.value")
        if operator == "Exists" and value_:
            _invalid(check, f"{p}.operator", operator, "value must be empty when `operator` is 'Exists'")
        if not key and operator != "Exists":
            _invalid(check, f"{p}.operator", operator, "operator must be Exists when `key` is empty, which means "
                     '"match all values and all keys"')
        effect = t.get("effect") or ""
        one_of(effect, TOLERATION_EFFECTS, check, f"{p}.effect")
        if t.get("tolerationSeconds") is not None:
            as_int(t["tolerationSeconds"], check, f"{p}.tolerationSeconds", -(2**63), INT64_MAX)
            if effect != "NoExecute":
                _invalid(check, f"{p}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set")
        if operator == "Equal":
            t.setdefault("operator", "Equal")


def _exact_request(raw: dict, check: Checker, path: str, *, subrequest: bool) -> None:
    cls = raw.get("deviceClassName")
    _required(cls, check, f"{path}.deviceClassName")
    as_string(cls, check, f"{path}.deviceClassName")
    check_dns_subdomain(cls, check, f"{path}.deviceClassName")
    _selectors(raw.get("selectors"), check, f"{path}.selectors")
    mode = raw.get("allocationMode")
    if mode in (None, ""):
        mode = raw["allocationMode"] = "ExactCount"
    one_of(mode, ALLOCATION_MODES, check, f"{path}.allocationMode")
    if mode == "ExactCount":
        if raw.get("count") is None:
            raw["count"] = 1
        count = as_int(raw["count"], check, f"{path}.count", -(2**63), INT64_MAX)
        if count <= 0:
            _invalid(check, f"{path}.count", count, "must be greater than zero")
    elif raw.get("count") not in (None, 0):
        _invalid(check, f"{path}.count", raw["count"], "must not be specified when allocationMode is 'All'")
    if subrequest and raw.get("adminAccess") is not None:
        check.fail(f"{path}.adminAccess", "Forbidden: not allowed for subrequests")
    optional_bool(raw.get("adminAccess"), check, f"{path}.adminAccess")
    _tolerations(raw.get("tolerations"), check, f"{path}.tolerations")
    capacity = as_mapping(raw.get("capacity"), check, f"{path}.capacity")
    for name, q in as_mapping(capacity.get("requests"), check, f"{path}.capacity.requests").items():
        qp = f"{path}.capacity.requests[{name}]"
        if not isinstance(name, str) or not is_qualified_name(name):
            _invalid(check, f"{path}.capacity.requests", name, "must be a qualified name")
        if _quantity(q, check, qp) < 0:
            _invalid(check, qp, q, "must be greater than or equal to 0")


def request_names(devices: dict) -> set[str]:
    """The names a constraint or config may name: each request, and ``request/subrequest``."""
    names: set[str] = set()
    for r in devices.get("requests") or []:
        names.add(r.get("name"))
        for s in r.get("firstAvailable") or []:
            names.add(f"{r.get('name')}/{s.get('name')}")
    return names


def _unique_name(item: dict, check: Checker, path: str, seen: set[str]) -> None:
    """A request's or subrequest's ``name``: required, a DNS label, not used before in ``seen``."""
    name = item.get("name")
    _required(name, check, f"{path}.name")
    as_string(name, check, f"{path}.name")
    check_dns_label(name, check, f"{path}.name")
    if name in seen:
        check.fail(f"{path}.name", f"Duplicate value: {name!r}")
    seen.add(name)


def validate_claim_spec(spec: dict, check: Checker, path: str) -> None:
    """``validateResourceClaimSpec``."""
    devices = as_mapping(spec.get("devices"), check, f"{path}.devices")
    requests = as_list(devices.get("requests") or [], check, f"{path}.devices.requests")
    if len(requests) > MAX_REQUESTS:
        check.fail(f"{path}.devices.requests", f"Too many: {len(requests)}: must have at most {MAX_REQUESTS} items")
    seen: set[str] = set()
    for i, raw in enumerate(requests):
        p = f"{path}.devices.requests[{i}]"
        request = as_item(raw, check, p)
        _unique_name(request, check, p, seen)
        exactly, first = request.get("exactly"), request.get("firstAvailable")
        if exactly is not None and first is not None:
            check.fail(p, "Invalid value: exactly one of `exactly` or `firstAvailable` is required, "
                       "but multiple fields are set")
        if exactly is None and first is None:
            check.fail(p, "Required value: exactly one of `exactly` or `firstAvailable` is required")
        if exactly is not None:
            _exact_request(as_mapping(exactly, check, f"{p}.exactly"), check, f"{p}.exactly", subrequest=False)
            continue
        subs = as_list(first, check, f"{p}.firstAvailable")
        if not subs:
            check.fail(f"{p}.firstAvailable", "Required value")
        if len(subs) > MAX_SUBREQUESTS:
            check.fail(f"{p}.firstAvailable", f"Too many: {len(subs)}: must have at most {MAX_SUBREQUESTS} items")
        sub_names: set[str] = set()
        for j, sub_raw in enumerate(subs):
            sp = f"{p}.firstAvailable[{j}]"
            sub = as_item(sub_raw, check, sp)
            _unique_name(sub, check, sp, sub_names)
            _exact_request(sub, check, sp, subrequest=True)
    names = request_names(devices)
    constraints = as_list(devices.get("constraints") or [], check, f"{path}.devices.constraints")
    if len(constraints) > MAX_CONSTRAINTS:
        check.fail(f"{path}.devices.constraints", f"Too many: {len(constraints)}: must have at most "
                   f"{MAX_CONSTRAINTS} items")
    for i, raw in enumerate(constraints):
        p = f"{path}.devices.constraints[{i}]"
        c = as_item(raw, check, p)
        for j, name in enumerate(as_list(c.get("requests") or [], check, f"{p}.requests")):
            as_string(name, check, f"{p}.requests[{j}]")
            if name not in names:
                check.fail(f"{p}.requests[{j}]", f"Invalid value: {name!r}: must be the name of a request in the "
                           "claim or the name of a request and a subrequest separated by '/'")
        given = [k for k in ("matchAttribute", "distinctAttribute") if c.get(k) is not None]
        if not given:
            check.fail(p, "Required value: exactly one of `matchAttribute` or `distinctAttribute` is required")
        if len(given) > 1:
            check.fail(p, "Invalid value: exactly one of `matchAttribute` or `distinctAttribute` is required, "
                       "but multiple fields are set")
        _fully_qualified(c[given[0]], check, f"{p}.{given[0]}")
    _opaque_configs(devices.get("config"), check, f"{path}.devices.config", names)


def _fully_qualified(value: Any, check: Checker, path: str) -> None:
    as_string(value, check, path)
    domain, sep, name = value.partition("/")
    if not sep:
        _invalid(check, path, value, "a fully qualified name must be a domain and a name separated by a slash")
    if not domain or len(domain) > 63 or not _is_subdomain(domain):
        _invalid(check, path, value, "the domain must be a DNS subdomain of at most 63 characters")
    if not name or len(name) > 32 or not _C_IDENTIFIER(name):
        _invalid(check, path, value, "the name must be a C identifier (letters, digits, '_') of at most 32 characters")


def _is_subdomain(value: str) -> bool:
    return bool(DNS1123_SUBDOMAIN.match(value))


def _C_IDENTIFIER(value: str) -> bool:  # noqa: N802 - a predicate named after Kubernetes' rule
    return bool(_C_IDENTIFIER_RE.match(value))


def validate_resource_claim(obj: dict, check: Checker) -> None:
    spec = as_mapping(obj.get("spec"), check, "spec")
    obj["spec"] = spec
    validate_claim_spec(spec, check, "spec")
    status = as_mapping(obj.get("status"), check, "status")
    devices = spec.get("devices") or {}
    names = request_names(devices)
    if status.get("allocation") is not None:
        allocation = as_mapping(status["allocation"], check, "status.allocation")
        results = as_list((as_mapping(allocation.get("devices"), check, "status.allocation.devices")
                           .get("results") or []), check, "status.allocation.devices.results")
        if len(results) > MAX_RESULTS:
            check.fail("status.allocation.devices.results", f"Too many: {len(results)}: must have at most "
                       f"{MAX_RESULTS} items")
        for i, raw in enumerate(results):
            p = f"status.allocation.devices.results[{i}]"
            r = as_item(raw, check, p)
            request = r.get("request")
            _required(request, check, f"{p}.request")
            if request not in names:
                _invalid(check, f"{p}.request", request, "must be the name of a request in the claim or the name of a "
                         "request and a subrequest separated by '/'")
            _driver_name(r.get("driver"), check, f"{p}.driver")
            for key in ("pool", "device"):
                _required(r.get(key), check, f"{p}.{key}")
                as_string(r[key], check, f"{p}.{key}")
            optional_bool(r.get("adminAccess"), check, f"{p}.adminAccess")
            for name, q in as_mapping(r.get("consumedCapacity"), check, f"{p}.consumedCapacity").items():
                _quantity(q, check, f"{p}.consumedCapacity[{name}]")
        if allocation.get("nodeSelector") is not None:
            _node_selector(allocation["nodeSelector"], check, "status.allocation.nodeSelector")
    reserved = as_list(status.get("reservedFor") or [], check, "status.reservedFor")
    if len(reserved) > MAX_RESERVED_FOR:
        check.fail("status.reservedFor", f"Too many: {len(reserved)}: must have at most {MAX_RESERVED_FOR} items")
    if reserved and status.get("allocation") is None:
        check.fail("status.reservedFor", "Forbidden: may not be specified when `allocated` is not set")
    uids: set[str] = set()
    for i, raw in enumerate(reserved):
        p = f"status.reservedFor[{i}]"
        ref = as_item(raw, check, p)
        for key in ("resource", "name", "uid"):
            _required(ref.get(key), check, f"{p}.{key}")
            as_string(ref[key], check, f"{p}.{key}")
        if ref["uid"] in uids:
            check.fail(f"{p}.uid", f"Duplicate value: {ref['uid']!r}")
        uids.add(ref["uid"])


def validate_resource_claim_template(obj: dict, check: Checker) -> None:
    spec = as_mapping(obj.get("spec"), check, "spec")
    obj["spec"] = spec
    meta = as_mapping(spec.get("metadata"), check, "spec.metadata")
    for key in ("labels", "annotations"):
        if key in meta:
            string_map(meta[key], check, f"spec.metadata.{key}")
    if spec.get("spec") is None:
        check.fail("spec.spec", "Required value")
    validate_claim_spec(as_mapping(spec["spec"], check, "spec.spec"), check, "spec.spec")


# -- ResourceSlice --------------------------------------------------------------------------------


def _node_selector(value: Any, check: Checker, path: str) -> None:
    selector = as_mapping(value, check, path)
    terms = as_list(selector.get("nodeSelectorTerms") or [], check, f"{path}.nodeSelectorTerms")
    if not terms:
        check.fail(f"{path}.nodeSelectorTerms", "Required value: must have at least one node selector term")
    for i, term in enumerate(terms):
        term = as_item(term, check, f"{path}.nodeSelectorTerms[{i}]")
        for key in ("matchExpressions", "matchFields"):
            for j, req in enumerate(as_list(term.get(key) or [], check, f"{path}.nodeSelectorTerms[{i}].{key}")):
                rp = f"{path}.nodeSelectorTerms[{i}].{key}[{j}]"
                req = as_item(req, check, rp)
                _required(req.get("key"), check, f"{rp}.key")
                one_of(req.get("operator"), ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"), check,
                       f"{rp}.operator")


def _node_selection(spec: dict, check: Checker, path: str, *, allow_per_device: bool) -> list[str]:
    given = [k for k in ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")
             if spec.get(k) not in (None, "", False)]
    if not allow_per_device and "perDeviceNodeSelection" in given:
        given.remove("perDeviceNodeSelection")
    if spec.get("nodeName") not in (None, ""):
        as_string(spec["nodeName"], check, f"{path}nodeName")
        check_dns_subdomain(spec["nodeName"], check, f"{path}nodeName")
    if spec.get("nodeSelector") is not None:
        _node_selector(spec["nodeSelector"], check, f"{path}nodeSelector")
    optional_bool(spec.get("allNodes"), check, f"{path}allNodes")
    return given


def validate_resource_slice(obj: dict, check: Checker) -> None:
    spec = as_mapping(obj.get("spec"), check, "spec")
    obj["spec"] = spec
    _driver_name(spec.get("driver"), check, "spec.driver")
    pool = as_mapping(spec.get("pool"), check, "spec.pool")
    if spec.get("pool") is None:
        check.fail("spec.pool", "Required value")
    _required(pool.get("name"), check, "spec.pool.name")
    as_string(pool["name"], check, "spec.pool.name")
    as_int(pool.get("generation") or 0, check, "spec.pool.generation", 0, INT64_MAX)
    count = pool.get("resourceSliceCount")
    if count is None:
        check.fail("spec.pool.resourceSliceCount", "Required value")
    if as_int(count, check, "spec.pool.resourceSliceCount", -(2**63), INT64_MAX) <= 0:
        _invalid(check, "spec.pool.resourceSliceCount", count, "must be greater than zero")
    optional_bool(spec.get("perDeviceNodeSelection"), check, "spec.perDeviceNodeSelection")
    given = _node_selection(spec, check, "spec.", allow_per_device=True)
    counters = as_list(spec.get("sharedCounters") or [], check, "spec.sharedCounters")
    devices = as_list(spec.get("devices") or [], check, "spec.devices")
    if len(given) != 1 and not (counters and not devices and not given):
        check.fail("spec", "Invalid value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                   "`perDeviceNodeSelection` is required" + (", but multiple fields are set" if given else ""))
    set_names: set[str] = set()
    for i, raw in enumerate(counters):
        p = f"spec.sharedCounters[{i}]"
        cs = as_item(raw, check, p)
        _required(cs.get("name"), check, f"{p}.name")
        check_dns_label(as_string(cs["name"], check, f"{p}.name"), check, f"{p}.name")
        if cs["name"] in set_names:
            check.fail(f"{p}.name", f"Duplicate value: {cs['name']!r}")
        set_names.add(cs["name"])
        for name, c in as_mapping(cs.get("counters"), check, f"{p}.counters").items():
            _quantity(as_mapping(c, check, f"{p}.counters[{name}]").get("value"), check,
                      f"{p}.counters[{name}].value")
    if len(devices) > MAX_DEVICES_PER_SLICE:
        check.fail("spec.devices", f"Too many: {len(devices)}: must have at most {MAX_DEVICES_PER_SLICE} items")
    per_device = bool(spec.get("perDeviceNodeSelection"))
    names: set[str] = set()
    for i, raw in enumerate(devices):
        _validate_device(as_item(raw, check, f"spec.devices[{i}]"), check, f"spec.devices[{i}]", names, per_device)


def _validate_device(device: dict, check: Checker, path: str, names: set[str], per_device: bool) -> None:
    name = device.get("name")
    _required(name, check, f"{path}.name")
    as_string(name, check, f"{path}.name")
    check_dns_label(name, check, f"{path}.name")
    if name in names:
        check.fail(f"{path}.name", f"Duplicate value: {name!r}")
    names.add(name)
    attributes = as_mapping(device.get("attributes"), check, f"{path}.attributes")
    capacity = as_mapping(device.get("capacity"), check, f"{path}.capacity")
    if len(attributes) + len(capacity) > MAX_ATTRIBUTES_AND_CAPACITIES:
        check.fail(path, f"Too many: {len(attributes) + len(capacity)}: the total number of attributes and "
                   f"capacities must not exceed {MAX_ATTRIBUTES_AND_CAPACITIES}")
    for key, raw in attributes.items():
        p = f"{path}.attributes[{key}]"
        if not isinstance(key, str) or not is_qualified_name(key):
            _invalid(check, f"{path}.attributes", key, "must be a qualified name")
        attr = as_mapping(raw, check, p)
        given = [k for k in ("int", "bool", "string", "version") if attr.get(k) is not None]
        if len(given) != 1:
            check.fail(p, "Invalid value: exactly one value must be specified")
        kind = given[0]
        value = attr[kind]
        if kind == "int":
            as_int(value, check, f"{p}.int", -(2**63), INT64_MAX)
        elif kind == "bool":
            optional_bool(value, check, f"{p}.bool")
        elif kind == "string":
            as_string(value, check, f"{p}.string")
            if len(value) > MAX_STRING_ATTRIBUTE:
                check.fail(f"{p}.string", f"Too long: may not be more than {MAX_STRING_ATTRIBUTE} bytes")
        else:
            as_string(value, check, f"{p}.version")
            try:
                Semver.parse(value)
            except SemverError:
                _invalid(check, f"{p}.version", value, "must be a string compatible with semver.org spec 2.0.0")
    for key, raw in capacity.items():
        p = f"{path}.capacity[{key}]"
        if not isinstance(key, str) or not is_qualified_name(key):
            _invalid(check, f"{path}.capacity", key, "must be a qualified name")
        cap = as_mapping(raw, check, p)
        if cap.get("value") is None:
            check.fail(f"{p}.value", "Required value")
        total = _quantity(cap["value"], check, f"{p}.value")
        _request_policy(cap.get("requestPolicy"), total, check, f"{p}.requestPolicy")
    optional_bool(device.get("allowMultipleAllocations"), check, f"{path}.allowMultipleAllocations")
    for i, raw in enumerate(as_list(device.get("taints") or [], check, f"{path}.taints")):
        p = f"{path}.taints[{i}]"
        t = as_item(raw, check, p)
        _required(t.get("key"), check, f"{p}.key")
        problem = qualified_name_problem(as_string(t["key"], check, f"{p}.key"))
        if problem:
            _invalid(check, f"{p}.key", t["key"], problem)
        if t.get("value") is not None:
            as_string(t["value"], check, f"{p}.value")
        _required(t.get("effect"), check, f"{p}.effect")
        one_of(t["effect"], DEVICE_TAINT_EFFECTS, check, f"{p}.effect")
    for i, raw in enumerate(as_list(device.get("consumesCounters") or [], check, f"{path}.consumesCounters")):
        p = f"{path}.consumesCounters[{i}]"
        c = as_item(raw, check, p)
        _required(c.get("counterSet"), check, f"{p}.counterSet")
        for name, counter in as_mapping(c.get("counters"), check, f"{p}.counters").items():
            _quantity(as_mapping(counter, check, f"{p}.counters[{name}]").get("value"), check,
                      f"{p}.counters[{name}].value")
    given = _node_selection(device, check, f"{path}.", allow_per_device=False)
    if per_device and len(given) != 1:
        check.fail(path, "Invalid value: exactly one of `nodeName`, `nodeSelector`, `allNodes` is required when "
                   "`perDeviceNodeSelection` is set to true in the ResourceSlice spec")
    if not per_device and given:
        check.fail(f"{path}.{given[0]}", "Forbidden: may only be set when `perDeviceNodeSelection` is true in the "
                   "ResourceSlice spec")


def _request_policy(value: Any, total, check: Checker, path: str) -> None:
    if value is None:
        return
    policy = as_mapping(value, check, path)
    default = _quantity(policy["default"], check, f"{path}.default") if policy.get("default") is not None else None
    if default is not None and default > total:
        _invalid(check, f"{path}.default", policy["default"], "must be less than or equal to capacity value")
    valid_values = policy.get("validValues")
    valid_range = policy.get("validRange")
    if valid_values is not None and valid_range is not None:
        check.fail(path, "Invalid value: exactly one policy can be specified, cannot specify `validValues` and "
                   "`validRange` at the same time")
    if valid_values is not None:
        last = None
        for i, v in enumerate(as_list(valid_values, check, f"{path}.validValues")):
            q = _quantity(v, check, f"{path}.validValues[{i}]")
            if q > total:
                _invalid(check, f"{path}.validValues[{i}]", v, "option is larger than capacity value")
            if last is not None and q <= last:
                _invalid(check, f"{path}.validValues[{i}]", v, "values must be sorted in ascending order")
            last = q
    if valid_range is not None:
        rng = as_mapping(valid_range, check, f"{path}.validRange")
        if rng.get("min") is None:
            check.fail(f"{path}.validRange.min", "Required value")
        low = _quantity(rng["min"], check, f"{path}.validRange.min")
        if low > total:
            _invalid(check, f"{path}.validRange.min", rng["min"], "min is larger than capacity value")
        if rng.get("max") is not None:
            high = _quantity(rng["max"], check, f"{path}.validRange.max")
            if high < low:
                _invalid(check, f"{path}.validRange.max", rng["max"], "max must be greater than or equal to min")
            if high > total:
                _invalid(check, f"{path}.validRange.max", rng["max"], "max is larger than capacity value")
        if rng.get("step") is not None and _quantity(rng["step"], check, f"{path}.validRange.step") <= 0:
            _invalid(check, f"{path}.validRange.step", rng["step"], "step must be positive")


# -- a pod's claims ------------------------------------------------------------------------------


def validate_pod_claims(spec: dict, status: dict, check: Checker) -> None:
    """``spec.resourceClaims``, the containers' ``resources.claims`` and ``status.resourceClaimStatuses``."""
    names: set[str] = set()
    for i, raw in enumerate(as_list(spec.get("resourceClaims") or [], check, "spec.resourceClaims")):
        p = f"spec.resourceClaims[{i}]"
        claim = as_item(raw, check, p)
        name = claim.get("name")
        _required(name, check, f"{p}.name")
        check_dns_label(as_string(name, check, f"{p}.name"), check, f"{p}.name")
        if name in names:
            check.fail(f"{p}.name", f"Duplicate value: {name!r}")
        names.add(name)
        given = [k for k in ("resourceClaimName", "resourceClaimTemplateName") if claim.get(k) not in (None, "")]
        if not given:
            check.fail(p, "Invalid value: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`")
        if len(given) > 1:
            check.fail(p, "Invalid value: at most one of `resourceClaimName` or `resourceClaimTemplateName` may be "
                       "specified")
        check_dns_subdomain(as_string(claim[given[0]], check, f"{p}.{given[0]}"), check, f"{p}.{given[0]}")
    for group in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(group) or []):
            if not isinstance(container, dict):
                continue
            resources = container.get("resources") or {}
            if not isinstance(resources, dict) or resources.get("claims") is None:
                continue
            p = f"spec.{group}[{i}].resources.claims"
            seen: set[tuple[str, str]] = set()
            for j, raw in enumerate(as_list(resources["claims"], check, p)):
                ref = as_item(raw, check, f"{p}[{j}]")
                name = ref.get("name")
                _required(name, check, f"{p}[{j}].name")
                as_string(name, check, f"{p}[{j}].name")
                if name not in names:
                    check.fail(f"{p}[{j}]", f"Not found: {name!r}: must be one of the names in pod.spec.resourceClaims")
                request = ref.get("request") or ""
                as_string(request, check, f"{p}[{j}].request")
                if (name, request) in seen:
                    check.fail(f"{p}[{j}]", f"Duplicate value: {describe(name)}")
                seen.add((name, request))
    for i, raw in enumerate(as_list(status.get("resourceClaimStatuses") or [], check, "status.resourceClaimStatuses")):
        p = f"status.resourceClaimStatuses[{i}]"
        entry = as_item(raw, check, p)
        if entry.get("name") not in names:
            check.fail(f"{p}.name", f"Invalid value: {entry.get('name')!r}: must match the name of an entry in "
                       "`spec.resourceClaims`")
        if entry.get("resourceClaimName") is not None:
            check_dns_subdomain(as_string(entry["resourceClaimName"], check, f"{p}.resourceClaimName"), check,
                                f"{p}.resourceClaimName")


_VALIDATORS = {
    "DeviceClass": validate_device_class,
    "ResourceSlice": validate_resource_slice,
    "ResourceClaim": validate_resource_claim,
    "ResourceClaimTemplate": validate_resource_claim_template,
}


def dra_problem(kind: str, obj: dict) -> str | None:
    """Kubernetes mode: what the API server would refuse in this object, as ``field: problem``, or None."""
    import copy

    from .fields import ManifestError

    try:
        _VALIDATORS[kind](copy.deepcopy(dict(obj)), Checker(""))
    except ManifestError as e:
        return f"{e.field}: {e.detail}" if e.field else e.detail
    return None
