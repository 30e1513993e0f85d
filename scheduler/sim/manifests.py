"""The simulator's input: Kubernetes manifests read from files, checked and defaulted.

``load_manifests`` reads multi-document YAML files (``-`` is stdin), unpacks
``v1`` Lists, accepts only the kinds of ``spec/simulate-contract.md`` and
refuses, with one line naming the file, the document, the object and the field,
what the Kubernetes API server (or Volcano's admission webhooks) would refuse
and what matters for scheduling.  It then applies the defaults that the API
server and the webhooks apply on create, on a deep copy of each document:

- ``metadata.namespace`` (``default``) for namespaced kinds; dropped for
  cluster-scoped ones, as the API server drops it;
- ``metadata.uid``: a uuid5 over kind, namespace and name;
- ``metadata.creationTimestamp``: 2026-01-01T00:00:00Z plus one second per
  object in input order; given timestamps are normalised to RFC 3339 ``Z`` form;
- Pod: what the API server defaults and its default admission plugins add
  (scheduler/api/pod_defaults.py: requests from limits, ``schedulerName``,
  host ports under ``hostNetwork``, the not-ready/unreachable tolerations,
  ``status.phase`` ``Pending``, ...);
- Node: ``status.allocatable`` from ``status.capacity`` when it is missing
  (``SetDefaults_NodeStatus``);
- PodGroup: ``spec.queue`` ``default`` when missing (the CRD default);
- Queue: ``spec.weight`` 1 when missing or 0, ``spec.reclaimable`` true when
  missing (the CRD default and the queue mutating webhook).

- Job: Volcano's mutating webhook (queue, schedulerName, maxRetry, task names,
  minAvailable…) and its validating webhook's checks; a refused Job names the
  first offending field and carries Volcano's whole refusal message.

Cross-object admission (priority class lookup, queue existence and state,
queue hierarchy, a Job's queue) is left to the simulator and the controllers.
"""

from __future__ import annotations

import copy
import re
import sys
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from fractions import Fraction
from types import MappingProxyType
from typing import Any, NoReturn, TextIO

import yaml

from ..api.pod_defaults import default_pod
from ..api.quantity import QuantityError, parse_quantity

__all__ = ["Manifest", "ManifestError", "load_manifests"]

# (apiVersion, kind) → namespaced?
_ACCEPTED: Mapping[tuple[str, str], bool] = MappingProxyType(
    {
        ("v1", "Node"): False,
        ("v1", "Pod"): True,
        ("v1", "Namespace"): False,
        ("v1", "ConfigMap"): True,
        ("scheduling.k8s.io/v1", "PriorityClass"): False,
        ("scheduling.volcano.sh/v1beta1", "PodGroup"): True,
        ("scheduling.volcano.sh/v1beta1", "Queue"): False,
        ("batch.volcano.sh/v1alpha1", "Job"): True,
    }
)
_CLUSTER_SCOPED_KINDS = frozenset(kind for (_, kind), namespaced in _ACCEPTED.items() if not namespaced)

BASE_CREATION_TIME = datetime(2026, 1, 1, tzinfo=timezone.utc)
_UID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_DNS, "sim.vcsched.volcano.sh")

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)

_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_TOLERATION_EFFECTS = ("", *_TAINT_EFFECTS)
_TOLERATION_OPERATORS = ("", "Exists", "Equal")
_PROTOCOLS = ("TCP", "UDP", "SCTP")
_PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
_POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
_QUEUE_CREATE_STATES = ("Open", "Closed")
_STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
# k8s helper.IsIntegerResourceName: these plus every extended resource
_INTEGER_RESOURCES = frozenset(
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


@dataclass(slots=True)
class Manifest:
    """One accepted object, validated and defaulted."""

    kind: str
    api_version: str
    obj: dict
    source: str

    @property
    def name(self) -> str:
        return str(self.obj.get("metadata", {}).get("name", ""))

    @property
    def namespace(self) -> str:
        if self.kind in _CLUSTER_SCOPED_KINDS:
            return ""
        return str(self.obj.get("metadata", {}).get("namespace") or "default")

    @property
    def key(self) -> str:
        """``namespace/name`` for namespaced kinds, ``name`` for cluster-scoped ones."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @property
    def ref(self) -> str:
        """``Kind key``, as error messages name the object."""
        return f"{self.kind} {self.key}"


# -- reading -------------------------------------------------------------------


def load_manifests(paths: list[str], stdin: TextIO | None = None) -> list[Manifest]:
    """Read, check and default every object of ``paths`` (``-`` is stdin), in input order."""
    manifests: list[Manifest] = []
    seen: dict[tuple[str, str], str] = {}
    for path in paths:
        label, text = _read(path, stdin)
        for source, doc in _documents(label, text):
            manifest = _build(source, doc, len(manifests))
            ident = (manifest.kind, manifest.key)
            if ident in seen:
                raise ManifestError(
                    source, f"duplicate object, already defined in {seen[ident]}", ref=manifest.ref
                )
            seen[ident] = source
            manifests.append(manifest)
    return manifests


def _read(path: str, stdin: TextIO | None) -> tuple[str, str]:
    if path == "-":
        stream = stdin if stdin is not None else sys.stdin
        try:
            return "<stdin>", stream.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise ManifestError("<stdin>", f"cannot read: {exc}") from exc
    try:
        with open(path, encoding="utf-8") as handle:
            return path, handle.read()
    except OSError as exc:
        raise ManifestError(path, f"cannot read file: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ManifestError(path, f"cannot read file: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def _documents(label: str, text: str) -> Iterator[tuple[str, dict]]:
    """(source, mapping) for every non-empty document and every item of a ``v1`` List."""
    index = 0
    try:
        for doc in yaml.safe_load_all(text):
            source = f"{label}: document {index}"
            index += 1
            if doc is None:
                continue
            if not isinstance(doc, dict):
                raise ManifestError(source, f"a manifest must be a mapping, got {_type_name(doc)}")
            if doc.get("apiVersion") == "v1" and doc.get("kind") == "List":
                items = doc.get("items")
                if items is None:
                    continue
                if not isinstance(items, list):
                    raise ManifestError(source, f"must be a list, got {_describe(items)}", field="items")
                for item_index, item in enumerate(items):
                    item_source = f"{source} item {item_index}"
                    if not isinstance(item, dict):
                        raise ManifestError(item_source, f"a manifest must be a mapping, got {_type_name(item)}")
                    yield item_source, item
            else:
                yield source, doc
    except yaml.YAMLError as exc:
        raise ManifestError(f"{label}: document {index}", _yaml_problem(exc)) from exc
    except ManifestError:
        raise
    except (ValueError, OverflowError) as exc:  # PyYAML's timestamp constructor: 2026-13-45 and the like
        raise ManifestError(f"{label}: document {index}", f"YAML error: invalid value: {exc}") from exc


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc)
    what = "YAML error" if isinstance(exc, yaml.constructor.ConstructorError) else "YAML syntax error"
    if mark is not None:
        return f"{what} at line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return f"{what}: {problem}"


# -- one object ------------------------------------------------------------------


class _Checker:
    """Raises ManifestError for one object; knows its source and how to name it."""

    __slots__ = ("source", "ref")

    def __init__(self, source: str, ref: str | None = None) -> None:
        self.source = source
        self.ref = ref

    def fail(self, field: str | None, detail: str) -> NoReturn:
        raise ManifestError(self.source, detail, ref=self.ref, field=field)


def _build(source: str, doc: dict, position: int) -> Manifest:
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    check = _Checker(source)
    if api_version is None or api_version == "":
        check.fail("apiVersion", "Required value")
    if kind is None or kind == "":
        check.fail("kind", "Required value")
    if not isinstance(api_version, str) or not isinstance(kind, str) or (api_version, kind) not in _ACCEPTED:
        accepted = ", ".join(f"{v} {k}" for v, k in _ACCEPTED)
        check.fail(None, f"unsupported apiVersion/kind {api_version} {kind} (accepted: {accepted}, and v1 List)")
    namespaced = _ACCEPTED[(api_version, kind)]
    check.ref = kind
    obj = copy.deepcopy(doc)

    meta = _mapping(obj.get("metadata"), check, "metadata")
    obj["metadata"] = meta
    _validate_metadata(kind, namespaced, meta, check)
    check.ref = f"{kind} {meta['namespace']}/{meta['name']}" if namespaced else f"{kind} {meta['name']}"
    _validate_metadata_fields(meta, check)

    _VALIDATORS[kind](obj, check)

    meta.setdefault("uid", str(uuid.uuid5(_UID_NAMESPACE, f"{kind}/{meta.get('namespace', '')}/{meta['name']}")))
    if meta.get("creationTimestamp") in (None, ""):
        meta["creationTimestamp"] = _format_time(BASE_CREATION_TIME + timedelta(seconds=position))
    return Manifest(kind=kind, api_version=api_version, obj=obj, source=source)


def _validate_metadata(kind: str, namespaced: bool, meta: dict, check: _Checker) -> None:
    """Name and namespace: what the object's key is made of (checked before it can be named)."""
    name = meta.get("name")
    if name is None or name == "":
        check.fail("metadata.name", "Required value")
    if not isinstance(name, str):
        check.fail("metadata.name", f"must be a string, got {_describe(name)}")
    if kind == "Namespace":
        _check_dns_label(name, check, "metadata.name")
    else:
        _check_dns_subdomain(name, check, "metadata.name")
    check.ref = f"{kind} {name}"
    if not namespaced:
        meta.pop("namespace", None)
        return
    namespace = meta.get("namespace")
    if namespace is None or namespace == "":
        meta["namespace"] = "default"
        return
    if not isinstance(namespace, str):
        check.fail("metadata.namespace", f"must be a string, got {_describe(namespace)}")
    _check_dns_label(namespace, check, "metadata.namespace")


def _validate_metadata_fields(meta: dict, check: _Checker) -> None:
    for key in ("labels", "annotations"):
        if key in meta:
            meta[key] = _string_map(meta[key], check, f"metadata.{key}")
    if "uid" in meta:
        uid = meta["uid"]
        if uid is None or uid == "":
            del meta["uid"]
        else:
            _string(uid, check, "metadata.uid")
    for key in ("creationTimestamp", "deletionTimestamp"):
        if meta.get(key) not in (None, ""):
            meta[key] = _format_time(_parse_time(meta[key], check, f"metadata.{key}"))
    if "ownerReferences" in meta:
        refs = _list(meta["ownerReferences"], check, "metadata.ownerReferences")
        for i, ref in enumerate(refs):
            path = f"metadata.ownerReferences[{i}]"
            ref = _mapping(ref, check, path)
            for field in ("apiVersion", "kind", "name", "uid"):
                if ref.get(field) in (None, ""):
                    check.fail(f"{path}.{field}", "Required value")
                _string(ref[field], check, f"{path}.{field}")
            for field in ("controller", "blockOwnerDeletion"):
                _optional_bool(ref.get(field), check, f"{path}.{field}")


# -- per kind --------------------------------------------------------------------


def _validate_pod(obj: dict, check: _Checker) -> None:
    _validate_sim_annotations((obj.get("metadata") or {}).get("annotations") or {}, check, "metadata.annotations")
    if obj.get("spec") is None:
        check.fail("spec", "Required value")
    spec = _mapping(obj["spec"], check, "spec")
    containers = spec.get("containers")
    if containers is None or containers == []:
        check.fail("spec.containers", "Required value")
    names: set[str] = set()
    for group in ("initContainers", "containers"):
        if spec.get(group) is None:
            continue
        for i, container in enumerate(_list(spec[group], check, f"spec.{group}")):
            _validate_container(container, check, f"spec.{group}[{i}]", names)

    if spec.get("overhead") is not None:
        _resource_list(spec["overhead"], check, "spec.overhead")
    for field in ("schedulerName", "nodeName", "priorityClassName", "serviceAccountName", "restartPolicy"):
        if spec.get(field) is not None:
            _string(spec[field], check, f"spec.{field}")
    if spec.get("nodeName"):
        _check_dns_subdomain(spec["nodeName"], check, "spec.nodeName")
    if spec.get("priority") is not None:
        _int(spec["priority"], check, "spec.priority", _INT32_MIN, _INT32_MAX)
    if spec.get("preemptionPolicy") is not None:
        _one_of(spec["preemptionPolicy"], _PREEMPTION_POLICIES, check, "spec.preemptionPolicy")
    if "nodeSelector" in spec:
        spec["nodeSelector"] = _string_map(spec["nodeSelector"], check, "spec.nodeSelector")
    if spec.get("tolerations") is not None:
        for i, toleration in enumerate(_list(spec["tolerations"], check, "spec.tolerations")):
            _validate_toleration(toleration, check, f"spec.tolerations[{i}]")
    _optional_bool(spec.get("hostNetwork"), check, "spec.hostNetwork")
    if spec.get("terminationGracePeriodSeconds") is not None:
        _int(spec["terminationGracePeriodSeconds"], check, "spec.terminationGracePeriodSeconds", 0, 2**63 - 1)

    status = _mapping(obj.get("status"), check, "status")
    obj["status"] = status
    if status.get("phase") not in (None, ""):
        _one_of(status["phase"], _POD_PHASES, check, "status.phase")
    for field in ("nominatedNodeName", "reason", "message"):
        if status.get(field) is not None:
            _string(status[field], check, f"status.{field}")
    if status.get("startTime") not in (None, ""):  # preempt's topology-aware mode reads it
        status["startTime"] = _format_time(_parse_time(status["startTime"], check, "status.startTime"))
    default_pod(obj)


def _validate_container(container: Any, check: _Checker, path: str, names: set[str]) -> None:
    container = _mapping(container, check, path)
    name = container.get("name")
    if name is None or name == "":
        check.fail(f"{path}.name", "Required value")
    _string(name, check, f"{path}.name")
    _check_dns_label(name, check, f"{path}.name")
    if name in names:
        check.fail(f"{path}.name", f"Duplicate value: {name!r}")
    names.add(name)
    if container.get("image") is not None:
        _string(container["image"], check, f"{path}.image")

    if container.get("resources") is not None:
        resources = _mapping(container["resources"], check, f"{path}.resources")
        _validate_resource_requirements(resources, check, f"{path}.resources")

    if container.get("ports") is not None:
        for i, port in enumerate(_list(container["ports"], check, f"{path}.ports")):
            port_path = f"{path}.ports[{i}]"
            port = _mapping(port, check, port_path)
            if port.get("containerPort") is None:
                check.fail(f"{port_path}.containerPort", "Required value")
            _port(port["containerPort"], check, f"{port_path}.containerPort")
            host_port = port.get("hostPort")
            if host_port is not None and host_port != 0:
                _port(host_port, check, f"{port_path}.hostPort")
            if port.get("protocol") is not None:
                _one_of(port["protocol"], _PROTOCOLS, check, f"{port_path}.protocol")
            if port.get("hostIP") is not None:
                _string(port["hostIP"], check, f"{port_path}.hostIP")


def _validate_resource_requirements(resources: dict, check: _Checker, path: str) -> None:
    """requests/limits: names, values, requests defaulted from limits, then requests ≤ limits."""
    parsed: dict[str, dict[str, Fraction]] = {}
    for key in ("requests", "limits"):
        raw = _mapping(resources.get(key), check, f"{path}.{key}")
        for name in raw:
            _check_container_resource_name(name, check, f"{path}.{key}.{name}")
        parsed[key] = _resource_list(raw, check, f"{path}.{key}")
    # a limit without a request makes the request (api/pod_defaults.py, after these checks): equal, valid
    requests, limits = parsed["requests"], parsed["limits"]
    limits_raw = resources.get("limits") or {}
    requests_raw = resources.get("requests") or {}
    for name, request in requests.items():
        if name not in limits:
            continue
        limit_text = _plain(limits_raw[name])
        got = _quoted(requests_raw[name])
        if _is_extended_resource(name):
            if request != limits[name]:
                check.fail(f"{path}.requests.{name}", f"must be equal to {name} limit of {limit_text}, got {got}")
        elif request > limits[name]:
            check.fail(f"{path}.requests.{name}", f"must be less than or equal to {name} limit of {limit_text}, got {got}")


def _validate_toleration(toleration: Any, check: _Checker, path: str) -> None:
    toleration = _mapping(toleration, check, path)
    key = _string(_or_empty(toleration.get("key")), check, f"{path}.key")
    operator = _one_of(_or_empty(toleration.get("operator")), _TOLERATION_OPERATORS, check, f"{path}.operator")
    value = _string(_or_empty(toleration.get("value")), check, f"{path}.value")
    _one_of(_or_empty(toleration.get("effect")), _TOLERATION_EFFECTS, check, f"{path}.effect")
    if not key and operator != "Exists":
        check.fail(
            f"{path}.operator",
            'operator must be Exists when `key` is empty, which means "match all values and all keys"',
        )
    if operator == "Exists" and value:
        check.fail(f"{path}.value", "value must be empty when `operator` is 'Exists'")
    if toleration.get("tolerationSeconds") is not None:
        _int(toleration["tolerationSeconds"], check, f"{path}.tolerationSeconds", -(2**63), 2**63 - 1)


def _validate_node(obj: dict, check: _Checker) -> None:
    spec = _mapping(obj.get("spec"), check, "spec")
    _optional_bool(spec.get("unschedulable"), check, "spec.unschedulable")
    if spec.get("taints") is not None:
        seen: set[tuple[str, str]] = set()
        for i, taint in enumerate(_list(spec["taints"], check, "spec.taints")):
            path = f"spec.taints[{i}]"
            taint = _mapping(taint, check, path)
            if taint.get("key") in (None, ""):
                check.fail(f"{path}.key", "Required value")
            _string(taint["key"], check, f"{path}.key")
            if taint.get("value") is not None:
                _string(taint["value"], check, f"{path}.value")
            if taint.get("effect") in (None, ""):
                check.fail(f"{path}.effect", "Required value")
            _one_of(taint["effect"], _TAINT_EFFECTS, check, f"{path}.effect")
            pair = (taint["key"], taint["effect"])
            if pair in seen:
                check.fail(path, "taints must be unique by key and effect pair")
            seen.add(pair)

    status = _mapping(obj.get("status"), check, "status")
    for key in ("capacity", "allocatable"):
        if status.get(key) is not None:
            _resource_list(status[key], check, f"status.{key}")
    if status.get("allocatable") is None and status.get("capacity") is not None:
        status["allocatable"] = copy.deepcopy(status["capacity"])


def _validate_namespace(obj: dict, check: _Checker) -> None:
    if obj.get("spec") is not None:
        _mapping(obj["spec"], check, "spec")


def _validate_configmap(obj: dict, check: _Checker) -> None:
    for key in ("data", "binaryData"):
        if obj.get(key) is None:
            continue
        data = _string_map(obj[key], check, key)
        for name in data:
            if not _CONFIG_KEY.match(name):
                check.fail(
                    f"{key}[{name}]",
                    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                )
        obj[key] = data


def _validate_priority_class(obj: dict, check: _Checker) -> None:
    if obj.get("value") is None:
        check.fail("value", "Required value")
    value = _int(obj["value"], check, "value", _INT32_MIN, _INT32_MAX)
    name = obj["metadata"]["name"]
    if value > _HIGHEST_USER_DEFINABLE_PRIORITY and not name.startswith("system-"):
        check.fail("value", f"maximum allowed value of a user defined priority is {_HIGHEST_USER_DEFINABLE_PRIORITY}, got {value}")
    _optional_bool(obj.get("globalDefault"), check, "globalDefault")
    if obj.get("preemptionPolicy") is not None:
        _one_of(obj["preemptionPolicy"], _PREEMPTION_POLICIES, check, "preemptionPolicy")


def _validate_podgroup(obj: dict, check: _Checker) -> None:
    spec = _mapping(obj.get("spec"), check, "spec")
    obj["spec"] = spec
    if spec.get("minMember") is not None:
        _int(spec["minMember"], check, "spec.minMember", 0, _INT32_MAX)
    if spec.get("minTaskMember") is not None:
        members = _mapping(spec["minTaskMember"], check, "spec.minTaskMember")
        for task, count in members.items():
            _string(task, check, "spec.minTaskMember")
            _int(count, check, f"spec.minTaskMember[{task}]", 0, _INT32_MAX)
    if spec.get("minResources") is not None:
        _resource_list(spec["minResources"], check, "spec.minResources", nonnegative=False, integral=False)
    for field in ("queue", "priorityClassName"):
        if spec.get(field) is not None:
            _string(spec[field], check, f"spec.{field}")
    if spec.get("queue") is None:
        spec["queue"] = "default"
    status = _mapping(obj.get("status"), check, "status")
    if status.get("phase") is not None:
        _string(status["phase"], check, "status.phase")


def _validate_queue(obj: dict, check: _Checker) -> None:
    spec = _mapping(obj.get("spec"), check, "spec")
    obj["spec"] = spec
    weight = spec.get("weight")
    if weight is None or (isinstance(weight, int) and not isinstance(weight, bool) and weight == 0):
        spec["weight"] = 1  # CRD default, and the mutating webhook's 0 → 1
    else:
        _int(weight, check, "spec.weight", 1, 65535)
    if spec.get("reclaimable") is None:
        spec["reclaimable"] = True
    else:
        _optional_bool(spec["reclaimable"], check, "spec.reclaimable")
    if spec.get("priority") is not None:
        _int(spec["priority"], check, "spec.priority", _INT32_MIN, _INT32_MAX)
    if spec.get("parent") is not None:
        _string(spec["parent"], check, "spec.parent")

    capability = _resource_list(spec.get("capability"), check, "spec.capability")
    deserved = _resource_list(spec.get("deserved"), check, "spec.deserved")
    guarantee_spec = _mapping(spec.get("guarantee"), check, "spec.guarantee")
    guarantee = _resource_list(guarantee_spec.get("resource"), check, "spec.guarantee.resource")
    # Volcano's validateResourceQuantityOfQueue: guarantee ≤ deserved ≤ capability, per resource
    for name, g in guarantee.items():
        g_text = _plain(guarantee_spec["resource"][name])
        if name not in deserved:
            check.fail(f"spec.deserved.{name}", f"deserved[{name}] must be >= guarantee[{name}]={g_text}")
        if deserved[name] < g:
            d_text = _plain(spec["deserved"][name])
            check.fail(f"spec.deserved.{name}", f"deserved[{name}]={d_text} must be >= guarantee[{name}]={g_text}")
    for name, d in deserved.items():
        if name in capability and d > capability[name]:
            d_text = _plain(spec["deserved"][name])
            c_text = _plain(spec["capability"][name])
            check.fail(f"spec.deserved.{name}", f"deserved[{name}]={d_text} must be <= capability[{name}]={c_text}")

    status = _mapping(obj.get("status"), check, "status")
    state = status.get("state")
    if state not in (None, ""):
        if state not in _QUEUE_CREATE_STATES:
            check.fail("status.state", f"queue state must be in [Open Closed], got {_describe(state)}")


def _validate_job(obj: dict, check: _Checker) -> None:
    """The Job's fields as the CRD schema types them, its pod templates as the API server checks pods,
    then Volcano's mutating and validating webhooks (controllers/job.py; the queue is checked by the
    cluster, which knows the queues)."""
    from ..controllers.job import mutate_job, validate_job, volcano_message

    if obj.get("spec") is None:
        check.fail("spec", "Required value")
    spec = _mapping(obj["spec"], check, "spec")
    for key in ("minAvailable", "maxRetry", "ttlSecondsAfterFinished", "minSuccess"):
        if spec.get(key) is not None:
            _int(spec[key], check, f"spec.{key}", 1 if key == "minSuccess" else 0, _INT32_MAX)
    for key in ("queue", "schedulerName", "priorityClassName"):
        if spec.get(key) is not None:
            _string(spec[key], check, f"spec.{key}")
    if spec.get("plugins") is not None:
        for name, args in _mapping(spec["plugins"], check, "spec.plugins").items():
            for j, arg in enumerate(_list(args, check, f"spec.plugins.{name}") if args is not None else []):
                _string(arg, check, f"spec.plugins.{name}[{j}]")
    _validate_policies(spec.get("policies"), check, "spec.policies")
    for i, task in enumerate(_list(spec.get("tasks") or [], check, "spec.tasks")):
        path = f"spec.tasks[{i}]"
        task = _item(task, check, path)
        if task.get("name") is not None:
            _string(task["name"], check, f"{path}.name")
        for key in ("replicas", "minAvailable", "maxRetry"):
            if task.get(key) is not None:
                _int(task[key], check, f"{path}.{key}", 0, _INT32_MAX)
        _validate_policies(task.get("policies"), check, f"{path}.policies")
        if task.get("dependsOn") is not None:
            depends = _mapping(task["dependsOn"], check, f"{path}.dependsOn")
            for j, dep in enumerate(_list(depends.get("name") or [], check, f"{path}.dependsOn.name")):
                _string(dep, check, f"{path}.dependsOn.name[{j}]")
            if depends.get("iteration") is not None:
                _one_of(depends["iteration"], ("any", "all"), check, f"{path}.dependsOn.iteration")
        template = _mapping(task.get("template"), check, f"{path}.template")
        tmeta = _mapping(template.get("metadata"), check, f"{path}.template.metadata")
        for key in ("labels", "annotations"):
            if key in tmeta:
                tmeta[key] = _string_map(tmeta[key], check, f"{path}.template.metadata.{key}")
        _validate_sim_annotations(tmeta.get("annotations") or {}, check, f"{path}.template.metadata.annotations")
        pod = {"spec": copy.deepcopy(template.get("spec")), "status": {}}
        _validate_pod(pod, _PrefixedChecker(check, f"{path}.template."))
    mutated = mutate_job(obj)
    problems = validate_job(mutated, None)
    if problems:
        hint = next((p.hint for p in problems if p.hint), "")
        check.fail(problems[0].field, volcano_message(problems) + (f" ({hint})" if hint else ""))
    obj["spec"] = mutated["spec"]


def _validate_policies(policies: Any, check: _Checker, path: str) -> None:
    from ..controllers.job_state import DurationError, parse_duration

    if policies is None:
        return
    for i, policy in enumerate(_list(policies, check, path)):
        policy = _item(policy, check, f"{path}[{i}]")
        for key in ("event", "action"):
            if policy.get(key) is not None:
                _string(policy[key], check, f"{path}[{i}].{key}")
        if policy.get("events") is not None:
            for j, e in enumerate(_list(policy["events"], check, f"{path}[{i}].events")):
                _string(e, check, f"{path}[{i}].events[{j}]")
        if policy.get("exitCode") is not None:
            _int(policy["exitCode"], check, f"{path}[{i}].exitCode", _INT32_MIN, _INT32_MAX)
        if policy.get("timeout") is not None:
            try:
                parse_duration(policy["timeout"])
            except DurationError as e:
                check.fail(f"{path}[{i}].timeout", str(e))


def _validate_sim_annotations(annotations: Mapping[str, str], check: _Checker, path: str) -> None:
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


class _PrefixedChecker(_Checker):
    """Checks a nested pod template: fields are named from the enclosing object."""

    __slots__ = ("prefix",)

    def __init__(self, outer: _Checker, prefix: str) -> None:
        super().__init__(outer.source, outer.ref)
        self.prefix = prefix

    def fail(self, field: str | None, detail: str) -> NoReturn:
        super().fail(self.prefix + field if field else self.prefix.rstrip("."), detail)


_VALIDATORS = MappingProxyType(
    {
        "Pod": _validate_pod,
        "Node": _validate_node,
        "Namespace": _validate_namespace,
        "ConfigMap": _validate_configmap,
        "PriorityClass": _validate_priority_class,
        "PodGroup": _validate_podgroup,
        "Queue": _validate_queue,
        "Job": _validate_job,
    }
)


# -- field helpers ---------------------------------------------------------------


def _type_name(value: object) -> str:
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


def _describe(value: object) -> str:
    if isinstance(value, (dict, list)) or value is None:
        return _type_name(value)
    text = value.isoformat() if isinstance(value, (date, datetime)) else repr(value)
    return f"{_type_name(value)} {text}"


def _mapping(value: Any, check: _Checker, path: str) -> dict:
    """A mapping; null (absent) is an empty one."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        check.fail(path, f"must be a mapping, got {_describe(value)}")
    return value


def _item(value: Any, check: _Checker, path: str) -> dict:
    """A list item that must be a mapping: null is refused, as a structural schema refuses it."""
    if value is None:
        check.fail(path, "must be a mapping, got null")
    return _mapping(value, check, path)


def _list(value: Any, check: _Checker, path: str) -> list:
    if not isinstance(value, list):
        check.fail(path, f"must be a list, got {_describe(value)}")
    return value


def _string(value: Any, check: _Checker, path: str) -> str:
    if not isinstance(value, str):
        check.fail(path, f"must be a string, got {_describe(value)}")
    return value


def _optional_bool(value: Any, check: _Checker, path: str) -> None:
    if value is not None and not isinstance(value, bool):
        check.fail(path, f"must be a boolean, got {_describe(value)}")


def _int(value: Any, check: _Checker, path: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        check.fail(path, f"must be an integer, got {_describe(value)}")
    if value < low:
        check.fail(path, f"must be greater than or equal to {low}, got {value}")
    if value > high:
        check.fail(path, f"must be less than or equal to {high}, got {value}")
    return value


def _port(value: Any, check: _Checker, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        check.fail(path, f"must be between 1 and 65535, inclusive, got {_describe(value)}")


def _one_of(value: Any, allowed: tuple[str, ...], check: _Checker, path: str) -> str:
    if not isinstance(value, str) or value not in allowed:
        supported = ", ".join(repr(a) for a in allowed)
        check.fail(path, f"Unsupported value: {_describe(value)}: supported values: {supported}")
    return value


def _string_map(value: Any, check: _Checker, path: str) -> dict:
    """A map of strings to strings, as metadata.labels, nodeSelector or ConfigMap data."""
    data = _mapping(value, check, path)
    for key, item in data.items():
        if not isinstance(key, str):
            check.fail(path, f"keys must be strings, got {_describe(key)}")
        if not isinstance(item, str):
            check.fail(f"{path}[{key}]", f"must be a string, got {_describe(item)}")
    return data


def _check_dns_subdomain(value: str, check: _Checker, path: str) -> None:
    if len(value) > 253:
        check.fail(path, f"must be no more than 253 characters, got {len(value)}")
    if not _DNS1123_SUBDOMAIN.match(value):
        check.fail(
            path,
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
            f"and must start and end with an alphanumeric character, got {value!r}",
        )


def _check_dns_label(value: str, check: _Checker, path: str) -> None:
    if len(value) > 63:
        check.fail(path, f"must be no more than 63 characters, got {len(value)}")
    if not _DNS1123_LABEL.match(value):
        check.fail(
            path,
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
            f"and must start and end with an alphanumeric character, got {value!r}",
        )


def _is_qualified_name(name: str) -> bool:
    """k8s validation.IsQualifiedName: ``[prefix/]name``, prefix a DNS subdomain."""
    prefix, slash, rest = name.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix)):
        return False
    return 0 < len(rest) <= 63 and bool(_QUALIFIED_NAME_PART.match(rest))


def _is_native_resource(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _is_extended_resource(name: str) -> bool:
    """k8s helper.IsExtendedResourceName."""
    if _is_native_resource(name) or name.startswith("requests."):
        return False
    return _is_qualified_name(f"requests.{name}")


def _check_container_resource_name(name: Any, check: _Checker, path: str) -> None:
    _string(name, check, path)
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            check.fail(path, f"must be a standard resource for containers, got {name!r}")
    elif not _is_qualified_name(name) or (not _is_native_resource(name) and not _is_extended_resource(name)):
        check.fail(path, f"doesn't follow extended resource name standard, got {name!r}")


def _resource_list(
    value: Any, check: _Checker, path: str, *, nonnegative: bool = True, integral: bool = True
) -> dict[str, Fraction]:
    """A ResourceList: every quantity parses; ``ValidateResourceQuantityValue`` when asked."""
    parsed: dict[str, Fraction] = {}
    for name, raw in _mapping(value, check, path).items():
        field = f"{path}.{name}"
        if not isinstance(name, str):
            check.fail(path, f"resource names must be strings, got {_describe(name)}")
        try:
            quantity = parse_quantity(raw)
        except QuantityError as exc:
            check.fail(field, str(exc))
        if nonnegative and quantity < 0:
            check.fail(field, f"must be greater than or equal to 0, got {_quoted(raw)}")
        if integral and (name in _INTEGER_RESOURCES or _is_extended_resource(name)) and quantity.denominator != 1:
            check.fail(field, f"must be an integer, got {_quoted(raw)}")
        parsed[name] = quantity
    return parsed


def _plain(raw: Any) -> str:
    """A quantity as written: ``1``, ``500m``."""
    return raw.strip() if isinstance(raw, str) else str(raw)


def _quoted(raw: Any) -> str:
    """A quantity as written, quoted as a ``got`` value: ``'500m'``."""
    return repr(_plain(raw))


def _or_empty(value: Any) -> Any:
    """An optional string field: null is the empty string."""
    return "" if value is None else value


def _parse_time(value: Any, check: _Checker, path: str) -> datetime:
    """An RFC 3339 date-time; YAML gives unquoted ones as datetime (naive means UTC)."""
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
    if isinstance(value, str) and _RFC3339.match(value.strip()):
        text = value.strip().upper().replace("Z", "+00:00")
        try:
            return datetime.fromisoformat(text)
        except ValueError:
            pass
    check.fail(path, f"must be an RFC 3339 date-time such as '2026-01-01T00:00:00Z', got {_describe(value)}")


def _format_time(moment: datetime) -> str:
    """``metav1.Time`` form: UTC, whole seconds, ``Z``."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
