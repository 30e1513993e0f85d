"""The simulator's field machinery: typed reads of manifest fields that fail with one line.

A ``Checker`` knows the object being read (its source and how to name it) and
raises ``ManifestError`` with the field path; the helpers here read one field
each (``as_mapping``, ``as_list``, ``as_string``, ``as_int``, ``one_of``,
``string_map``, ``resource_list``, ``parse_time``, ...) and fail as the
Kubernetes API server would word it.  The kinds themselves are validated in
``manifests`` (reading, per-kind dispatch) and ``pod_manifest`` (Pods and pod
templates).
"""

from __future__ import annotations

import re
from datetime import date, datetime, timezone
from fractions import Fraction
from typing import Any, NoReturn

from ..api.quantity import QuantityError, parse_quantity

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUALIFIED_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)

STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
# k8s helper.IsIntegerResourceName: these plus every extended resource
INTEGER_RESOURCES = frozenset(
    {
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    }
)


class ManifestError(ValueError):
    """Input the simulator refuses: one line naming file, document, object and field.

    ``ManifestError(source, detail, ref=..., field=...)`` builds
    ``source (ref): field: detail``; ``ManifestError(line)`` takes a line
    already in that form (for checks made elsewhere, such as cross-object ones).
    """

    def __init__(self, source: str, detail: str | None = None, *, ref: str | None = None, field: str | None = None) -> None:
        if detail is None:
            source, detail = "", source
        self.source = source
        self.ref = ref
        self.field = field
        self.detail = " ".join(detail.split())
        parts = [source + (f" ({ref})" if ref else ""), field, self.detail]
        super().__init__(": ".join(part for part in parts if part))


class Checker:
    """Raises ManifestError for one object; knows its source and how to name it."""

    __slots__ = ("source", "ref")

    def __init__(self, source: str, ref: str | None = None) -> None:
        self.source = source
        self.ref = ref

    def fail(self, field: str | None, detail: str) -> NoReturn:
        raise ManifestError(self.source, detail, ref=self.ref, field=field)


class PrefixedChecker(Checker):
    """Checks a nested pod template: fields are named from the enclosing object."""

    __slots__ = ("prefix",)

    def __init__(self, outer: Checker, prefix: str) -> None:
        super().__init__(outer.source, outer.ref)
        self.prefix = prefix

    def fail(self, field: str | None, detail: str) -> NoReturn:
        super().fail(self.prefix + field if field else self.prefix.rstrip("."), detail)


# -- field helpers ---------------------------------------------------------------


def type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, list):
        return "list"
    if isinstance(value, (date, datetime)):
        return "timestamp"
    return type(value).__name__


def describe(value: object) -> str:
    if isinstance(value, (dict, list)) or value is None:
        return type_name(value)
    text = value.isoformat() if isinstance(value, (date, datetime)) else repr(value)
    return f"{type_name(value)} {text}"


def as_mapping(value: Any, check: Checker, path: str) -> dict:
    """A mapping; null (absent) is an empty one."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        check.fail(path, f"must be a mapping, got {describe(value)}")
    return value


def as_item(value: Any, check: Checker, path: str) -> dict:
    """A list item that must be a mapping: null is refused, as a structural schema refuses it."""
    if value is None:
        check.fail(path, "must be a mapping, got null")
    return as_mapping(value, check, path)


def as_list(value: Any, check: Checker, path: str) -> list:
    if not isinstance(value, list):
        check.fail(path, f"must be a list, got {describe(value)}")
    return value


def as_string(value: Any, check: Checker, path: str) -> str:
    if not isinstance(value, str):
        check.fail(path, f"must be a string, got {describe(value)}")
    return value


def optional_bool(value: Any, check: Checker, path: str) -> None:
    if value is not None and not isinstance(value, bool):
        check.fail(path, f"must be a boolean, got {describe(value)}")


def as_int(value: Any, check: Checker, path: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        check.fail(path, f"must be an integer, got {describe(value)}")
    if value < low:
        check.fail(path, f"must be greater than or equal to {low}, got {value}")
    if value > high:
        check.fail(path, f"must be less than or equal to {high}, got {value}")
    return value


def check_port(value: Any, check: Checker, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        check.fail(path, f"must be between 1 and 65535, inclusive, got {describe(value)}")


def one_of(value: Any, allowed: tuple[str, ...], check: Checker, path: str) -> str:
    if not isinstance(value, str) or value not in allowed:
        supported = ", ".join(repr(a) for a in allowed)
        check.fail(path, f"Unsupported value: {describe(value)}: supported values: {supported}")
    return value


def string_map(value: Any, check: Checker, path: str) -> dict:
    """A map of strings to strings, as metadata.labels, nodeSelector or ConfigMap data."""
    data = as_mapping(value, check, path)
    for key, item in data.items():
        if not isinstance(key, str):
            check.fail(path, f"keys must be strings, got {describe(key)}")
        if not isinstance(item, str):
            check.fail(f"{path}[{key}]", f"must be a string, got {describe(item)}")
    return data


def string_list(value: Any, check: Checker, path: str) -> list[str]:
    """A list of strings; null (absent) is an empty one."""
    if value is None:
        return []
    for i, item in enumerate(as_list(value, check, path)):
        as_string(item, check, f"{path}[{i}]")
    return value


def check_string_keys(value: Any, check: Checker, path: str) -> None:
    """Every mapping inside ``value`` has string keys, as JSON has (YAML allows ``1: x``)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                check.fail(path, f"keys must be strings, got {describe(key)}")
            check_string_keys(item, check, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            check_string_keys(item, check, f"{path}[{i}]")


def node_group_affinity(value: Any, check: Checker, path: str) -> None:
    """A Queue's ``spec.affinity`` as the Queue CRD's schema types it: optional ``nodeGroupAffinity``
    and ``nodeGroupAntiAffinity`` objects, each with optional ``requiredDuringSchedulingIgnoredDuringExecution``
    and ``preferredDuringSchedulingIgnoredDuringExecution`` lists of node-group names.  The schema puts no
    pattern on the names and Volcano's queue webhooks do not look at them: any string is a name."""
    if value is None:
        return
    check_string_keys(value, check, path)
    affinity = as_mapping(value, check, path)
    for part in ("nodeGroupAffinity", "nodeGroupAntiAffinity"):
        terms = as_mapping(affinity.get(part), check, f"{path}.{part}")
        for when in ("required", "preferred"):
            key = f"{when}DuringSchedulingIgnoredDuringExecution"
            string_list(terms.get(key), check, f"{path}.{part}.{key}")


# -- label keys, label values, label selectors (apimachinery's validation) -------------------------

_QUALIFIED_NAME_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_LABEL_VALUE_RULE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
    "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
_DNS1123_SUBDOMAIN_RULE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def qualified_name_problem(value: str) -> str | None:
    """``validation.IsQualifiedName``'s first complaint about ``value``, or None."""
    parts = value.split("/")
    if len(parts) > 2:
        return (f"a qualified name {_QUALIFIED_NAME_RULE} with an optional DNS subdomain prefix and '/' "
                "(e.g. 'example.com/MyName')")
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            return "prefix part must be non-empty"
        if len(prefix) > 253:
            return "prefix part must be no more than 253 characters"
        if not DNS1123_SUBDOMAIN.match(prefix):
            return f"prefix part {_DNS1123_SUBDOMAIN_RULE}"
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not QUALIFIED_NAME_PART.match(name):
        return f"name part {_QUALIFIED_NAME_RULE}"
    return None


def check_label_key(value: Any, check: Checker, path: str) -> str:
    """``ValidateLabelName``: a string that is a qualified name."""
    as_string(value, check, path)
    problem = qualified_name_problem(value)
    if problem:
        check.fail(path, f"Invalid value: {value!r}: {problem}")
    return value


def check_label_value(value: Any, check: Checker, path: str) -> str:
    """``IsValidLabelValue``: at most 63 characters of the qualified-name alphabet, or empty."""
    as_string(value, check, path)
    if len(value) > 63:
        check.fail(path, f"Invalid value: {value!r}: must be no more than 63 characters")
    if not LABEL_VALUE.match(value):
        check.fail(path, f"Invalid value: {value!r}: {_LABEL_VALUE_RULE}")
    return value


def labels(value: Any, check: Checker, path: str) -> dict[str, str]:
    """``ValidateLabels``: a string map whose keys are label keys and whose values are label values."""
    data = string_map(value, check, path)
    for key, item in data.items():
        check_label_key(key, check, path)
        check_label_value(item, check, f"{path}[{key}]")
    return data


def selector_requirement(value: Any, check: Checker, path: str, *, operators: tuple[str, ...],
                         label_values: bool) -> dict:
    """A ``LabelSelectorRequirement`` or a node selector's ``NodeSelectorRequirement`` (``Gt``, ``Lt``):
    ``ValidateLabelSelectorRequirement`` / ``ValidateNodeSelectorRequirement``."""
    req = as_mapping(value, check, path)
    key = as_string(or_empty(req.get("key")), check, f"{path}.key")
    operator = as_string(or_empty(req.get("operator")), check, f"{path}.operator")
    values = string_list(req.get("values"), check, f"{path}.values")
    if operator in ("In", "NotIn"):
        if not values:
            check.fail(f"{path}.values", "Required value: must be specified when `operator` is 'In' or 'NotIn'")
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            check.fail(f"{path}.values", "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
    elif operator in ("Gt", "Lt") and operator in operators:
        if len(values) != 1:
            check.fail(f"{path}.values", "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'")
    else:
        check.fail(f"{path}.operator", f"Invalid value: {operator!r}: not a valid selector operator")
    check_label_key(key, check, f"{path}.key")
    if label_values:
        for i, item in enumerate(values):
            check_label_value(item, check, f"{path}.values[{i}]")
    return req


def label_selector(value: Any, check: Checker, path: str, *, label_values: bool = True) -> dict | None:
    """A ``metav1.LabelSelector`` (``ValidateLabelSelector``); None when absent."""
    if value is None:
        return None
    selector = as_mapping(value, check, path)
    if selector.get("matchLabels") is not None:
        labels(selector["matchLabels"], check, f"{path}.matchLabels")
    if selector.get("matchExpressions") is not None:
        for i, req in enumerate(as_list(selector["matchExpressions"], check, f"{path}.matchExpressions")):
            selector_requirement(req, check, f"{path}.matchExpressions[{i}]",
                                 operators=LABEL_SELECTOR_OPERATORS, label_values=label_values)
    return selector


def selector_keys(selector: dict | None) -> set[str]:
    """The label keys a validated selector names, in matchLabels or matchExpressions."""
    if not selector:
        return set()
    keys = set(selector.get("matchLabels") or {})
    keys.update((e or {}).get("key") or "" for e in selector.get("matchExpressions") or [])
    return keys


# -- names -------------------------------------------------------------------------------------------


def check_dns_subdomain(value: str, check: Checker, path: str) -> None:
    if len(value) > 253:
        check.fail(path, f"must be no more than 253 characters, got {len(value)}")
    if not DNS1123_SUBDOMAIN.match(value):
        check.fail(
            path,
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
            f"and must start and end with an alphanumeric character, got {value!r}",
        )


def check_dns_label(value: str, check: Checker, path: str) -> None:
    if len(value) > 63:
        check.fail(path, f"must be no more than 63 characters, got {len(value)}")
    if not DNS1123_LABEL.match(value):
        check.fail(
            path,
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
            f"and must start and end with an alphanumeric character, got {value!r}",
        )


def is_qualified_name(name: str) -> bool:
    """k8s validation.IsQualifiedName: ``[prefix/]name``, prefix a DNS subdomain."""
    prefix, slash, rest = name.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
        return False
    return 0 < len(rest) <= 63 and bool(QUALIFIED_NAME_PART.match(rest))


def is_native_resource(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_extended_resource(name: str) -> bool:
    """k8s helper.IsExtendedResourceName."""
    if is_native_resource(name) or name.startswith("requests."):
        return False
    return is_qualified_name(f"requests.{name}")


def check_container_resource_name(name: Any, check: Checker, path: str) -> None:
    as_string(name, check, path)
    if "/" not in name:
        if name not in STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            check.fail(path, f"must be a standard resource for containers, got {name!r}")
    elif not is_qualified_name(name) or (not is_native_resource(name) and not is_extended_resource(name)):
        check.fail(path, f"doesn't follow extended resource name standard, got {name!r}")


def resource_list(
    value: Any, check: Checker, path: str, *, nonnegative: bool = True, integral: bool = True
) -> dict[str, Fraction]:
    """A ResourceList: every quantity parses; ``ValidateResourceQuantityValue`` when asked."""
    parsed: dict[str, Fraction] = {}
    for name, raw in as_mapping(value, check, path).items():
        field = f"{path}.{name}"
        if not isinstance(name, str):
            check.fail(path, f"resource names must be strings, got {describe(name)}")
        try:
            quantity = parse_quantity(raw)
        except QuantityError as exc:
            check.fail(field, str(exc))
        if nonnegative and quantity < 0:
            check.fail(field, f"must be greater than or equal to 0, got {quoted(raw)}")
        if integral and (name in INTEGER_RESOURCES or is_extended_resource(name)) and quantity.denominator != 1:
            check.fail(field, f"must be an integer, got {quoted(raw)}")
        parsed[name] = quantity
    return parsed


def plain(raw: Any) -> str:
    """A quantity as written: ``1``, ``500m``."""
    return raw.strip() if isinstance(raw, str) else str(raw)


def quoted(raw: Any) -> str:
    """A quantity as written, quoted as a ``got`` value: ``'500m'``."""
    return repr(plain(raw))


def or_empty(value: Any) -> Any:
    """An optional string field: null is the empty string."""
    return "" if value is None else value


def parse_time(value: Any, check: Checker, path: str) -> datetime:
    """An RFC 3339 date-time; YAML gives unquoted ones as datetime (naive means UTC)."""
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
    if isinstance(value, str) and RFC3339.match(value.strip()):
        text = value.strip().upper().replace("Z", "+00:00")
        try:
            return datetime.fromisoformat(text)
        except ValueError:
            pass
    check.fail(path, f"must be an RFC 3339 date-time such as '2026-01-01T00:00:00Z', got {describe(value)}")


def format_time(moment: datetime) -> str:
    """``metav1.Time`` form: UTC, whole seconds, ``Z``."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def normalise_time(data: dict, key: str, check: Checker, path: str) -> None:
    """An optional ``metav1.Time`` field of ``data``, checked and rewritten in ``format_time`` form."""
    if data.get(key) not in (None, ""):
        data[key] = format_time(parse_time(data[key], check, f"{path}.{key}"))


_CONDITION_STRINGS = ("type", "status", "reason", "message", "transitionID")
_CONDITION_TIMES = ("lastTransitionTime", "lastProbeTime", "lastUpdateTime", "lastHeartbeatTime")


def conditions(value: Any, check: Checker, path: str, *, required: tuple[str, ...] = ("type",)) -> list[dict]:
    """A status's ``conditions``: mappings whose string fields are strings and whose times are times
    (rewritten in ``format_time`` form, so that they print as the API server would give them back)."""
    if value is None:
        return []
    out = as_list(value, check, path)
    for i, cond in enumerate(out):
        item = f"{path}[{i}]"
        cond = as_item(cond, check, item)
        check_string_keys(cond, check, item)
        for key in required:
            if cond.get(key) in (None, ""):
                check.fail(f"{item}.{key}", "Required value")
        for key in _CONDITION_STRINGS:
            if cond.get(key) is not None:
                as_string(cond[key], check, f"{item}.{key}")
        for key in _CONDITION_TIMES:
            normalise_time(cond, key, check, item)
    return out


def network_topology(value: Any, check: Checker, path: str) -> None:
    """A ``NetworkTopologySpec`` as the CRD's schema and Volcano's webhook admit it; ``mode`` defaulted
    to ``hard`` (the CRD default)."""
    if value is None:
        return
    spec = as_mapping(value, check, path)
    mode = spec.get("mode")
    if mode is None:
        spec["mode"] = "hard"
    elif mode not in ("hard", "soft"):
        check.fail(f"{path}.mode", f'Unsupported value: {describe(mode)}: supported values: "hard", "soft"')
    if spec.get("highestTierAllowed") is not None:
        as_int(spec["highestTierAllowed"], check, f"{path}.highestTierAllowed", 0, 2**63 - 1)
    if spec.get("highestTierName") is not None:
        name = as_string(spec["highestTierName"], check, f"{path}.highestTierName")
        if len(name) > 253:
            check.fail(f"{path}.highestTierName", "may not be longer than 253 characters")
    if spec.get("highestTierAllowed") is not None and spec.get("highestTierName"):
        check.fail(path, "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously")


def sub_group_policy(value: Any, check: Checker, path: str) -> None:
    """A PodGroup's ``spec.subGroupPolicy`` list; ``subGroupSize`` 1 and ``minSubGroups`` 0 by default."""
    if value is None:
        return
    names: set[str] = set()
    for i, raw in enumerate(as_list(value, check, path)):
        where = f"{path}[{i}]"
        policy = as_mapping(raw, check, where)
        if policy.get("name") is not None:
            name = as_string(policy["name"], check, f"{where}.name")
            if name in names:
                check.fail(f"{where}.name", f"Duplicate value: {describe(name)}")
            names.add(name)
        if policy.get("subGroupSize") is None:
            policy["subGroupSize"] = 1
        else:
            as_int(policy["subGroupSize"], check, f"{where}.subGroupSize", 1, 2**31 - 1)
        if policy.get("minSubGroups") is None:
            policy["minSubGroups"] = 0
        else:
            as_int(policy["minSubGroups"], check, f"{where}.minSubGroups", 0, 2**31 - 1)
        label_selector(policy.get("labelSelector"), check, f"{where}.labelSelector")
        if policy.get("matchLabelKeys") is not None:
            for j, key in enumerate(as_list(policy["matchLabelKeys"], check, f"{where}.matchLabelKeys")):
                as_string(key, check, f"{where}.matchLabelKeys[{j}]")
        network_topology(policy.get("networkTopology"), check, f"{where}.networkTopology")
