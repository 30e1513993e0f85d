"""The simulator's input: Kubernetes manifests read from files, checked and defaulted.

``load_manifests`` reads multi-document YAML files (``-`` is stdin), unpacks
``v1`` Lists, accepts only the kinds of ``spec/simulate-contract.md`` and
refuses, with one line naming the file, the document, the object and the field,
what the Kubernetes API server (or Volcano's admission webhooks) would refuse
and what matters for scheduling; YAML that JSON cannot carry (an alias inside
the node it names), nested past ``MAX_DEPTH`` or aliased past
``MAX_EXPANDED_NODES`` is refused as a whole.  It then applies the defaults
that the API server and the webhooks apply on create, on a deep copy of each
document:

- ``metadata.namespace`` (``default``) for namespaced kinds; dropped for
  cluster-scoped ones, as the API server drops it;
- ``metadata.uid``: a uuid5 over kind, namespace and name;
- ``metadata.creationTimestamp``: ``created`` (2026-01-01T00:00:00Z unless
  given; ``simulate`` passes one hour before its clock's start) plus one second
  per object in input order; given timestamps are normalised to RFC 3339 ``Z`` form;
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

Status the cache, the session and the controllers read back (a node's images,
a PodGroup's counters and conditions, a Queue's ``allocated``, a Job's status)
is typed as the CRDs and the API types declare it; its times are normalised.

Cross-object admission (priority class lookup, queue existence and state,
queue hierarchy, a Job's queue) is left to the simulator and the controllers.

The typed field reads and ``ManifestError`` live in ``fields``; Pods and Job pod
templates are checked by ``pod_manifest``, PodDisruptionBudgets and ResourceQuotas
by ``policy_manifest``.
"""

from __future__ import annotations

import copy
import re
import sys
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from types import MappingProxyType
from typing import Any, TextIO

import yaml

from .fields import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    Checker,
    ManifestError,
    PrefixedChecker,
    as_int,
    as_item,
    as_list,
    as_mapping,
    as_string,
    check_dns_label,
    check_dns_subdomain,
    conditions,
    describe,
    format_time,
    network_topology,
    node_group_affinity,
    normalise_time,
    one_of,
    optional_bool,
    parse_time,
    plain,
    resource_list,
    string_list,
    string_map,
    sub_group_policy,
    type_name,
)
from .dra_manifest import (
    validate_device_class,
    validate_resource_claim,
    validate_resource_claim_template,
    validate_resource_slice,
)
from .hypernode_manifest import validate_hypernode
from .numatopology_manifest import validate_numatopology
from .policy_manifest import validate_pdb, validate_resource_quota
from .pod_manifest import PREEMPTION_POLICIES, TAINT_EFFECTS, validate_pod

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
        ("topology.volcano.sh/v1alpha1", "HyperNode"): False,
        ("policy/v1", "PodDisruptionBudget"): True,
        ("v1", "ResourceQuota"): True,
        ("nodeinfo.volcano.sh/v1alpha1", "Numatopology"): False,
        ("resource.k8s.io/v1", "DeviceClass"): False,
        ("resource.k8s.io/v1", "ResourceSlice"): False,
        ("resource.k8s.io/v1", "ResourceClaim"): True,
        ("resource.k8s.io/v1", "ResourceClaimTemplate"): True,
    }
)
_CLUSTER_SCOPED_KINDS = frozenset(kind for (_, kind), namespaced in _ACCEPTED.items() if not namespaced)

BASE_CREATION_TIME = datetime(2026, 1, 1, tzinfo=timezone.utc)
# a document deeper than this, or whose aliases expand it past this many nodes, is refused
MAX_DEPTH = 100
MAX_EXPANDED_NODES = 1_000_000
_UID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_DNS, "sim.vcsched.volcano.sh")

_HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_QUEUE_CREATE_STATES = ("Open", "Closed")


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


def load_manifests(paths: list[str], stdin: TextIO | None = None,
                   created: datetime = BASE_CREATION_TIME,
                   preloaded: Sequence[tuple[str, str]] = ()) -> list[Manifest]:
    """Read, check and default every object of ``paths`` (``-`` is stdin), in input order; an object
    without ``creationTimestamp`` was created at ``created`` plus one second per object before it.
    ``preloaded``: (label, YAML text) read first, as files are (a live cluster's objects)."""
    manifests: list[Manifest] = []
    seen: dict[tuple[str, str], str] = {}
    texts = [*preloaded, *((_read(path, stdin)) for path in paths)]
    for label, text in texts:
        for source, doc in _documents(label, text):
            manifest = _build(source, doc, len(manifests), created)
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
                raise ManifestError(source, f"a manifest must be a mapping, got {type_name(doc)}")
            _check_shape(doc, source)
            if doc.get("apiVersion") == "v1" and doc.get("kind") == "List":
                items = doc.get("items")
                if items is None:
                    continue
                if not isinstance(items, list):
                    raise ManifestError(source, f"must be a list, got {describe(items)}", field="items")
                for item_index, item in enumerate(items):
                    item_source = f"{source} item {item_index}"
                    if not isinstance(item, dict):
                        raise ManifestError(item_source, f"a manifest must be a mapping, got {type_name(item)}")
                    yield item_source, item
            else:
                yield source, doc
    except yaml.YAMLError as exc:
        raise ManifestError(f"{label}: document {index}", _yaml_problem(exc)) from exc
    except ManifestError:
        raise
    except (ValueError, OverflowError) as exc:  # PyYAML's timestamp constructor: 2026-13-45 and the like
        raise ManifestError(f"{label}: document {index}", f"YAML error: invalid value: {exc}") from exc
    except RecursionError as exc:  # PyYAML composes nested nodes recursively
        raise ManifestError(f"{label}: document {index}", f"YAML error: nested more than {MAX_DEPTH} levels deep") from exc


def _children(node: Any) -> list[tuple[str, Any]]:
    if isinstance(node, dict):
        return [(f".{key}", value) for key, value in node.items()]
    if isinstance(node, list):
        return [(f"[{i}]", value) for i, value in enumerate(node)]
    return []


def _check_shape(doc: dict, source: str) -> None:
    """Refuse what JSON cannot carry or what would make a walk over the document explode: an alias used
    inside the node it names (a cycle), nesting deeper than ``MAX_DEPTH``, and aliases that expand the
    document past ``MAX_EXPANDED_NODES`` nodes and ten times its size (go-yaml's "excessive aliasing").

    One pass, without recursion; a node reached again through an alias is counted, not walked, again.
    """
    done: dict[int, int] = {}  # id → expanded size of a finished node
    distinct = 1  # nodes as written: each mapping and list once, and the scalars in them
    on_path: set[int] = {id(doc)}
    # frames: [node, path, children, expanded size so far]
    stack: list[list[Any]] = [[doc, "", iter(_children(doc)), 1]]
    while stack:
        frame = stack[-1]
        for step, child in frame[2]:
            if not isinstance(child, (dict, list)):
                frame[3] += 1
                distinct += 1
                continue
            key = id(child)
            if key in done:
                frame[3] += done[key]
                continue
            path = (frame[1] + step).lstrip(".")
            if key in on_path:
                raise ManifestError(source, "YAML error: an alias used inside the node it names (JSON has no cycles)",
                                    field=path)
            if len(stack) >= MAX_DEPTH:
                field = path if len(path) <= 60 else path[:60] + "..."
                raise ManifestError(source, f"YAML error: nested more than {MAX_DEPTH} levels deep", field=field)
            on_path.add(key)
            distinct += 1
            stack.append([child, frame[1] + step, iter(_children(child)), 1])
            break
        else:
            stack.pop()
            on_path.discard(id(frame[0]))
            done[id(frame[0])] = frame[3]
            if stack:
                stack[-1][3] += frame[3]
    expanded = done[id(doc)]
    if expanded > MAX_EXPANDED_NODES and expanded > 10 * distinct:
        raise ManifestError(source, f"YAML error: document contains excessive aliasing ({expanded} nodes once expanded)")


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc)
    what = "YAML error" if isinstance(exc, yaml.constructor.ConstructorError) else "YAML syntax error"
    if mark is not None:
        return f"{what} at line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return f"{what}: {problem}"


# -- one object ------------------------------------------------------------------


def _build(source: str, doc: dict, position: int, created: datetime = BASE_CREATION_TIME) -> Manifest:
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    check = Checker(source)
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

    meta = as_mapping(obj.get("metadata"), check, "metadata")
    obj["metadata"] = meta
    _validate_metadata(kind, namespaced, meta, check)
    check.ref = f"{kind} {meta['namespace']}/{meta['name']}" if namespaced else f"{kind} {meta['name']}"
    _validate_metadata_fields(meta, check)

    _VALIDATORS[kind](obj, check)
    if kind in ("PodGroup", "Job"):
        _check_waiting_time(meta, check)

    meta.setdefault("uid", str(uuid.uuid5(_UID_NAMESPACE, f"{kind}/{meta.get('namespace', '')}/{meta['name']}")))
    if meta.get("creationTimestamp") in (None, ""):
        meta["creationTimestamp"] = format_time(created + timedelta(seconds=position))
    return Manifest(kind=kind, api_version=api_version, obj=obj, source=source)


def _check_waiting_time(meta: dict, check: Checker) -> None:
    """The sla plugin's waiting time on a PodGroup (a Job's reaches its PodGroup): a Go duration above
    zero.  Volcano logs a bad one and ignores it; simulate refuses it, naming the annotation."""
    from ..api.duration import DurationError
    from ..api.job_info import parse_waiting_time
    from ..api.types import JOB_WAITING_TIME_KEYS

    annotations = meta.get("annotations") or {}
    for key in JOB_WAITING_TIME_KEYS:
        if key in annotations:
            try:
                parse_waiting_time(annotations[key])
            except DurationError as e:
                check.fail(f"metadata.annotations[{key}]", f"must be a duration above zero such as 1h2m3s: {e}")


def _validate_metadata(kind: str, namespaced: bool, meta: dict, check: Checker) -> None:
    """Name and namespace: what the object's key is made of (checked before it can be named)."""
    name = meta.get("name")
    if name is None or name == "":
        check.fail("metadata.name", "Required value")
    if not isinstance(name, str):
        check.fail("metadata.name", f"must be a string, got {describe(name)}")
    if kind == "Namespace":
        check_dns_label(name, check, "metadata.name")
    else:
        check_dns_subdomain(name, check, "metadata.name")
    check.ref = f"{kind} {name}"
    if not namespaced:
        meta.pop("namespace", None)
        return
    namespace = meta.get("namespace")
    if namespace is None or namespace == "":
        meta["namespace"] = "default"
        return
    if not isinstance(namespace, str):
        check.fail("metadata.namespace", f"must be a string, got {describe(namespace)}")
    check_dns_label(namespace, check, "metadata.namespace")


def _validate_metadata_fields(meta: dict, check: Checker) -> None:
    for key in ("labels", "annotations"):
        if key in meta:
            meta[key] = string_map(meta[key], check, f"metadata.{key}")
    if "uid" in meta:
        uid = meta["uid"]
        if uid is None or uid == "":
            del meta["uid"]
        else:
            as_string(uid, check, "metadata.uid")
    for key in ("creationTimestamp", "deletionTimestamp"):
        if meta.get(key) not in (None, ""):
            meta[key] = format_time(parse_time(meta[key], check, f"metadata.{key}"))
    if "ownerReferences" in meta:
        refs = as_list(meta["ownerReferences"], check, "metadata.ownerReferences")
        for i, ref in enumerate(refs):
            path = f"metadata.ownerReferences[{i}]"
            ref = as_mapping(ref, check, path)
            for field in ("apiVersion", "kind", "name", "uid"):
                if ref.get(field) in (None, ""):
                    check.fail(f"{path}.{field}", "Required value")
                as_string(ref[field], check, f"{path}.{field}")
            for field in ("controller", "blockOwnerDeletion"):
                optional_bool(ref.get(field), check, f"{path}.{field}")


# -- per kind --------------------------------------------------------------------


def _validate_node(obj: dict, check: Checker) -> None:
    from .node_usage import validate_node_usage

    validate_node_usage(obj["metadata"], check)  # the load the usage and rescheduling plugins read
    spec = as_mapping(obj.get("spec"), check, "spec")
    optional_bool(spec.get("unschedulable"), check, "spec.unschedulable")
    if spec.get("taints") is not None:
        seen: set[tuple[str, str]] = set()
        for i, taint in enumerate(as_list(spec["taints"], check, "spec.taints")):
            path = f"spec.taints[{i}]"
            taint = as_mapping(taint, check, path)
            if taint.get("key") in (None, ""):
                check.fail(f"{path}.key", "Required value")
            as_string(taint["key"], check, f"{path}.key")
            if taint.get("value") is not None:
                as_string(taint["value"], check, f"{path}.value")
            if taint.get("effect") in (None, ""):
                check.fail(f"{path}.effect", "Required value")
            one_of(taint["effect"], TAINT_EFFECTS, check, f"{path}.effect")
            pair = (taint["key"], taint["effect"])
            if pair in seen:
                check.fail(path, "taints must be unique by key and effect pair")
            seen.add(pair)

    status = as_mapping(obj.get("status"), check, "status")
    for key in ("capacity", "allocatable"):
        if status.get(key) is not None:
            resource_list(status[key], check, f"status.{key}")
    if status.get("images") is not None:  # ImageLocality scores by them
        for i, image in enumerate(as_list(status["images"], check, "status.images")):
            image = as_mapping(image, check, f"status.images[{i}]")
            string_list(image.get("names"), check, f"status.images[{i}].names")
            if image.get("sizeBytes") is not None:
                as_int(image["sizeBytes"], check, f"status.images[{i}].sizeBytes", INT64_MIN, INT64_MAX)
    if status.get("allocatable") is None and status.get("capacity") is not None:
        status["allocatable"] = copy.deepcopy(status["capacity"])


def _validate_namespace(obj: dict, check: Checker) -> None:
    if obj.get("spec") is not None:
        as_mapping(obj["spec"], check, "spec")


def _validate_configmap(obj: dict, check: Checker) -> None:
    for key in ("data", "binaryData"):
        if obj.get(key) is None:
            continue
        data = string_map(obj[key], check, key)
        for name in data:
            if not _CONFIG_KEY.match(name):
                check.fail(
                    f"{key}[{name}]",
                    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                )
        obj[key] = data


def _validate_priority_class(obj: dict, check: Checker) -> None:
    if obj.get("value") is None:
        check.fail("value", "Required value")
    value = as_int(obj["value"], check, "value", INT32_MIN, INT32_MAX)
    name = obj["metadata"]["name"]
    if value > _HIGHEST_USER_DEFINABLE_PRIORITY and not name.startswith("system-"):
        check.fail("value", f"maximum allowed value of a user defined priority is {_HIGHEST_USER_DEFINABLE_PRIORITY}, got {value}")
    optional_bool(obj.get("globalDefault"), check, "globalDefault")
    if obj.get("preemptionPolicy") is not None:
        one_of(obj["preemptionPolicy"], PREEMPTION_POLICIES, check, "preemptionPolicy")


def _validate_podgroup(obj: dict, check: Checker) -> None:
    spec = as_mapping(obj.get("spec"), check, "spec")
    obj["spec"] = spec
    if spec.get("minMember") is not None:
        as_int(spec["minMember"], check, "spec.minMember", 0, INT32_MAX)
    if spec.get("minTaskMember") is not None:
        members = as_mapping(spec["minTaskMember"], check, "spec.minTaskMember")
        for task, count in members.items():
            as_string(task, check, "spec.minTaskMember")
            as_int(count, check, f"spec.minTaskMember[{task}]", 0, INT32_MAX)
    if spec.get("minResources") is not None:
        resource_list(spec["minResources"], check, "spec.minResources", nonnegative=False, integral=False)
    for field in ("queue", "priorityClassName"):
        if spec.get(field) is not None:
            as_string(spec[field], check, f"spec.{field}")
    if spec.get("queue") is None:
        spec["queue"] = "default"
    network_topology(spec.get("networkTopology"), check, "spec.networkTopology")
    sub_group_policy(spec.get("subGroupPolicy"), check, "spec.subGroupPolicy")
    status = as_mapping(obj.get("status"), check, "status")
    if status.get("phase") is not None:
        as_string(status["phase"], check, "status.phase")
    for key in ("running", "succeeded", "failed"):
        if status.get(key) is not None:
            as_int(status[key], check, f"status.{key}", INT32_MIN, INT32_MAX)
    if status.get("conditions") is not None:
        conditions(status["conditions"], check, "status.conditions")


def _validate_queue(obj: dict, check: Checker) -> None:
    spec = as_mapping(obj.get("spec"), check, "spec")
    obj["spec"] = spec
    weight = spec.get("weight")
    if weight is None or (isinstance(weight, int) and not isinstance(weight, bool) and weight == 0):
        spec["weight"] = 1  # CRD default, and the mutating webhook's 0 → 1
    else:
        as_int(weight, check, "spec.weight", 1, 65535)
    if spec.get("reclaimable") is None:
        spec["reclaimable"] = True
    else:
        optional_bool(spec["reclaimable"], check, "spec.reclaimable")
    if spec.get("priority") is not None:
        as_int(spec["priority"], check, "spec.priority", INT32_MIN, INT32_MAX)
    if spec.get("parent") is not None:
        as_string(spec["parent"], check, "spec.parent")
    node_group_affinity(spec.get("affinity"), check, "spec.affinity")

    capability = resource_list(spec.get("capability"), check, "spec.capability")
    deserved = resource_list(spec.get("deserved"), check, "spec.deserved")
    guarantee_spec = as_mapping(spec.get("guarantee"), check, "spec.guarantee")
    guarantee = resource_list(guarantee_spec.get("resource"), check, "spec.guarantee.resource")
    # Volcano's validateResourceQuantityOfQueue: guarantee ≤ deserved ≤ capability, per resource
    for name, g in guarantee.items():
        g_text = plain(guarantee_spec["resource"][name])
        if name not in deserved:
            check.fail(f"spec.deserved.{name}", f"deserved[{name}] must be >= guarantee[{name}]={g_text}")
        if deserved[name] < g:
            d_text = plain(spec["deserved"][name])
            check.fail(f"spec.deserved.{name}", f"deserved[{name}]={d_text} must be >= guarantee[{name}]={g_text}")
    for name, d in deserved.items():
        if name in capability and d > capability[name]:
            d_text = plain(spec["deserved"][name])
            c_text = plain(spec["capability"][name])
            check.fail(f"spec.deserved.{name}", f"deserved[{name}]={d_text} must be <= capability[{name}]={c_text}")

    status = as_mapping(obj.get("status"), check, "status")
    if status.get("allocated") is not None:
        resource_list(status["allocated"], check, "status.allocated", nonnegative=False, integral=False)
    state = status.get("state")
    if state not in (None, ""):
        if state not in _QUEUE_CREATE_STATES:
            check.fail("status.state", f"queue state must be in [Open Closed], got {describe(state)}")


def _validate_job(obj: dict, check: Checker) -> None:
    """The Job's fields as the CRD schema types them, its pod templates as the API server checks pods,
    then Volcano's mutating and validating webhooks (controllers/job.py; the queue is checked by the
    cluster, which knows the queues)."""
    from ..controllers.job import mutate_job, replica_problems, validate_job, volcano_message

    if obj.get("spec") is None:
        check.fail("spec", "Required value")
    spec = as_mapping(obj["spec"], check, "spec")
    for key in ("minAvailable", "maxRetry", "ttlSecondsAfterFinished", "minSuccess"):
        if spec.get(key) is not None:
            as_int(spec[key], check, f"spec.{key}", 1 if key == "minSuccess" else 0, INT32_MAX)
    for key in ("queue", "schedulerName", "priorityClassName"):
        if spec.get(key) is not None:
            as_string(spec[key], check, f"spec.{key}")
    if spec.get("plugins") is not None:
        for name, args in as_mapping(spec["plugins"], check, "spec.plugins").items():
            for j, arg in enumerate(as_list(args, check, f"spec.plugins.{name}") if args is not None else []):
                as_string(arg, check, f"spec.plugins.{name}[{j}]")
    _validate_policies(spec.get("policies"), check, "spec.policies")
    network_topology(spec.get("networkTopology"), check, "spec.networkTopology")
    for i, task in enumerate(as_list(spec.get("tasks") or [], check, "spec.tasks")):
        path = f"spec.tasks[{i}]"
        task = as_item(task, check, path)
        if task.get("name") is not None:
            as_string(task["name"], check, f"{path}.name")
        for key in ("replicas", "minAvailable", "maxRetry"):
            if task.get(key) is not None:
                as_int(task[key], check, f"{path}.{key}", 0, INT32_MAX)
        _validate_policies(task.get("policies"), check, f"{path}.policies")
        _validate_partition_policy(task.get("partitionPolicy"), check, f"{path}.partitionPolicy")
        if task.get("dependsOn") is not None:
            depends = as_mapping(task["dependsOn"], check, f"{path}.dependsOn")
            for j, dep in enumerate(as_list(depends.get("name") or [], check, f"{path}.dependsOn.name")):
                as_string(dep, check, f"{path}.dependsOn.name[{j}]")
            if depends.get("iteration") is not None:
                one_of(depends["iteration"], ("any", "all"), check, f"{path}.dependsOn.iteration")
        template = as_mapping(task.get("template"), check, f"{path}.template")
        tmeta = as_mapping(template.get("metadata"), check, f"{path}.template.metadata")
        for key in ("labels", "annotations"):
            if key in tmeta:
                tmeta[key] = string_map(tmeta[key], check, f"{path}.template.metadata.{key}")
        pod = {"metadata": copy.deepcopy(tmeta), "spec": copy.deepcopy(template.get("spec")), "status": {}}
        validate_pod(pod, PrefixedChecker(check, f"{path}.template."))
    _validate_job_status(obj, check)
    mutated = mutate_job(obj)
    problems = validate_job(mutated, None) + replica_problems(mutated)
    if problems:
        hint = next((p.hint for p in problems if p.hint), "")
        check.fail(problems[0].field, volcano_message(problems) + (f" ({hint})" if hint else ""))
    obj["spec"] = mutated["spec"]


def _validate_job_status(obj: dict, check: Checker) -> None:
    """What the job controller reads back from a given status: counters, phase, conditions, per-task counts."""
    status = as_mapping(obj.get("status"), check, "status")
    if "status" in obj:
        obj["status"] = status
    for key in ("pending", "running", "succeeded", "failed", "terminating", "unknown", "minAvailable", "version",
                "retryCount"):
        if status.get(key) is not None:
            as_int(status[key], check, f"status.{key}", INT32_MIN, INT32_MAX)
    state = as_mapping(status.get("state"), check, "status.state")
    for key in ("phase", "reason", "message"):
        if state.get(key) is not None:
            as_string(state[key], check, f"status.state.{key}")
    normalise_time(state, "lastTransitionTime", check, "status.state")
    if status.get("conditions") is not None:
        conditions(status["conditions"], check, "status.conditions", required=())
    counts = as_mapping(status.get("taskStatusCount"), check, "status.taskStatusCount")
    for task, count in counts.items():
        as_string(task, check, "status.taskStatusCount")
        phases = as_mapping(as_mapping(count, check, f"status.taskStatusCount[{task}]").get("phase"),
                            check, f"status.taskStatusCount[{task}].phase")
        for phase, n in phases.items():
            as_string(phase, check, f"status.taskStatusCount[{task}].phase")
            as_int(n, check, f"status.taskStatusCount[{task}].phase[{phase}]", INT32_MIN, INT32_MAX)
    if status.get("controlledResources") is not None:
        string_map(status["controlledResources"], check, "status.controlledResources")


def _validate_partition_policy(value: Any, check: Checker, path: str) -> None:
    """A task's ``partitionPolicy`` as the Job CRD types it: ``totalPartitions`` and ``partitionSize``
    required, at least 1; ``minPartitions`` at least 0, 0 by default; a ``networkTopology`` of its own.
    How they fit the task's replicas is the webhook's (controllers/job.py)."""
    if value is None:
        return
    policy = as_mapping(value, check, path)
    for key in ("totalPartitions", "partitionSize"):
        if policy.get(key) is None:
            check.fail(f"{path}.{key}", "Required value")
        as_int(policy[key], check, f"{path}.{key}", 1, INT32_MAX)
    if policy.get("minPartitions") is None:
        policy["minPartitions"] = 0
    else:
        as_int(policy["minPartitions"], check, f"{path}.minPartitions", 0, INT32_MAX)
    network_topology(policy.get("networkTopology"), check, f"{path}.networkTopology")


def _validate_policies(policies: Any, check: Checker, path: str) -> None:
    from ..controllers.job_state import DurationError, parse_duration

    if policies is None:
        return
    for i, policy in enumerate(as_list(policies, check, path)):
        policy = as_item(policy, check, f"{path}[{i}]")
        for key in ("event", "action"):
            if policy.get(key) is not None:
                as_string(policy[key], check, f"{path}[{i}].{key}")
        if policy.get("events") is not None:
            for j, e in enumerate(as_list(policy["events"], check, f"{path}[{i}].events")):
                as_string(e, check, f"{path}[{i}].events[{j}]")
        if policy.get("exitCode") is not None:
            as_int(policy["exitCode"], check, f"{path}[{i}].exitCode", INT32_MIN, INT32_MAX)
        if policy.get("timeout") is not None:
            try:
                parse_duration(policy["timeout"])
            except DurationError as e:
                check.fail(f"{path}[{i}].timeout", str(e))


_VALIDATORS = MappingProxyType(
    {
        "Pod": validate_pod,
        "Node": _validate_node,
        "Namespace": _validate_namespace,
        "ConfigMap": _validate_configmap,
        "PriorityClass": _validate_priority_class,
        "PodGroup": _validate_podgroup,
        "Queue": _validate_queue,
        "Job": _validate_job,
        "HyperNode": validate_hypernode,
        "PodDisruptionBudget": validate_pdb,
        "ResourceQuota": validate_resource_quota,
        "Numatopology": validate_numatopology,
        "DeviceClass": validate_device_class,
        "ResourceSlice": validate_resource_slice,
        "ResourceClaim": validate_resource_claim,
        "ResourceClaimTemplate": validate_resource_claim_template,
    }
)
