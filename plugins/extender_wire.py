"""What the extender plugin sends and reads: Volcano's request and response types
(plugins/extender/argument.go) and the JSON Go's ``encoding/json`` makes of the scheduler's objects.

An extender written for Volcano reads ``api.TaskInfo``, ``api.NodeInfo``, ``api.JobInfo``,
``api.QueueInfo`` and ``api.NamespaceInfo`` as Go marshals them: no JSON tags, so each key is the Go
field's name (``UID``, ``Name``, ``Resreq``, ``Pod``...), in declaration order; a ``*Resource`` is
``{"MilliCPU", "Memory", "ScalarResources", "MaxTaskNum"}``; a map's keys are sorted; a
``metav1.Time`` is RFC 3339 in seconds (``null`` when zero); a ``time.Duration`` is nanoseconds.  The
request envelopes have their own tags: ``{"task", "node"}`` for predicate, ``{"task", "nodes"}`` for
prioritize, ``{"evictor", "evictees"}``, ``{"job"}``, ``{"queue"}``, ``{"task"}`` for the event handlers;
``OnSessionOpenRequest`` has none (``Jobs``, ``Nodes``, ``Queues``, ``NamespaceInfo``,
``RevocableNodes``, ``NodeList``).

Objects vcsched does not keep in Volcano's form are rebuilt from what it keeps: a PodGroup
(``metadata``, ``spec``, ``status``) and a Queue from their parsed fields (the Queue's ``spec`` as the
scheduler reads it, not every field of the manifest); fields vcsched has no counterpart for are
their Go zero values (``NumaInfo: null``, ``SubJobs: {}``, ``VolumeReady: false``...).  The pod and the
node are the manifests as the API server (or the simulator's input) gave them.

Responses are decoded as ``json.Decoder.Decode`` into the response struct would: keys match field
tags case-insensitively, unknown keys are ignored, ``null`` leaves the zero value, a value of the
wrong JSON type is an error (Go's ``UnmarshalTypeError``), and only the first JSON value of the body
is read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from vcsched.api.job_info import JobInfo, PodGroup
from vcsched.api.namespace_info import NamespaceInfo
from vcsched.api.node_info import NodeInfo
from vcsched.api.queue_info import QueueInfo
from vcsched.api.resource import Resource
from vcsched.api.task_info import TaskInfo, TransactionContext, parse_go_bool
from vcsched.api.types import PREEMPTABLE_KEY, REVOCABLE_ZONE_KEY

# Volcano's NodePhase
NODE_READY, NODE_NOT_READY = 1, 2
HIERARCHY_ANNOTATION = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS_ANNOTATION = "volcano.sh/hierarchy-weights"


class DecodeError(ValueError):
    """The response does not decode into Volcano's response type (Go's json error, in its words)."""


# -- encoding ----------------------------------------------------------------------------------


def _num(x: float) -> float | int:
    """A float as Go prints it: integral values without a fraction (``1000``, not ``1000.0``)."""
    if x == x and abs(x) < 1e21 and x == int(x):
        return int(x)
    return x


def go_time(ts: float) -> str | None:
    """``metav1.Time``: RFC 3339 in whole seconds, UTC; ``null`` for the zero time."""
    if not ts:
        return None
    return datetime.fromtimestamp(int(ts), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def resource(r: Resource | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "MilliCPU": _num(r.milli_cpu),
        "Memory": _num(r.memory),
        "ScalarResources": {k: _num(r.scalars[k]) for k in sorted(r.scalars)} if r.scalars else None,
        "MaxTaskNum": r.max_task_num,
    }


def _transaction(ctx: TransactionContext | None) -> dict[str, Any] | None:
    if ctx is None:
        return None
    return {"NodeName": ctx.node_name, "EvictionOccurred": ctx.eviction_occurred,
            "JobAllocatedHyperNode": "", "Status": int(ctx.status)}


def _restartable_init(pod: Mapping[str, Any]) -> bool:
    return any(c.get("restartPolicy") == "Always" for c in (pod.get("spec") or {}).get("initContainers") or [])


def task(t: TaskInfo, status: int | None = None) -> dict[str, Any]:
    """``api.TaskInfo``; ``status``: the status a node accounted the task with (its own copy)."""
    pod = t.pod
    annotations = dict((pod.get("metadata") or {}).get("annotations") or {})
    annotations.update(t.pod_annotations)
    req = resource(t.resreq)
    return {
        "UID": t.uid, "Job": t.job, "Name": t.name, "Namespace": t.namespace, "TaskRole": t.role,
        "Resreq": req, "InitResreq": req,
        "DRAResreq": None, "ResourceClaimKeys": None, "ResourceClaimDRAResreq": None,
        # TransactionContext, embedded
        "NodeName": t.node_name, "EvictionOccurred": t.eviction_occurred, "JobAllocatedHyperNode": "",
        "Status": int(t.status if status is None else status),
        "LastTransaction": _transaction(t.last_transaction),
        "Priority": t.priority, "VolumeReady": False, "Preemptable": t.preemptable,
        "BestEffort": t.best_effort, "HasRestartableInitContainer": _restartable_init(pod),
        "SchGated": t.scheduling_gated, "RevocableZone": t.revocable_zone, "NumaInfo": None,
        "Pod": pod, "PodAnnotations": {k: annotations[k] for k in sorted(annotations)} or None,
        "CustomBindErrHandlerSucceeded": False,
    }


def node(n: NodeInfo) -> dict[str, Any]:
    """``api.NodeInfo``, its tasks with the status the node accounted them with."""
    accounted = n.accounted
    return {
        "Name": n.name, "Node": n.node,
        "State": {"Phase": NODE_READY, "Reason": ""} if n.ready else {"Phase": NODE_NOT_READY, "Reason": "UnInitialized"},
        "Releasing": resource(n.releasing), "Pipelined": resource(n.pipelined), "Idle": resource(n.idle),
        "Used": resource(n.used), "Allocatable": resource(n.allocatable), "Capacity": resource(n.capacity),
        "ResourceUsage": {"MetricsTime": "0001-01-01T00:00:00Z", "CPUUsageAvg": {}, "MEMUsageAvg": {}},
        "Tasks": {uid: task(n.tasks[uid], accounted.get(uid)) for uid in sorted(n.tasks)},
        "NumaInfo": None, "UnassignedNumaPods": None, "NumaSchedulerInfo": None,
        "RevocableZone": n.revocable_zone, "Others": None,
        "OversubscriptionNode": False, "OfflineJobEvicting": False, "OversubscriptionResource": None,
        "ImageStates": None, "Generation": n.generation, "BindGeneration": 0,
    }


def _podgroup(pg: PodGroup | None) -> dict[str, Any] | None:
    if pg is None:
        return None
    meta: dict[str, Any] = {"name": pg.name, "namespace": pg.namespace, "uid": pg.uid,
                            "creationTimestamp": go_time(pg.creation_timestamp)}
    if pg.labels:
        meta["labels"] = dict(pg.labels)
    if pg.annotations:
        meta["annotations"] = dict(pg.annotations)
    spec: dict[str, Any] = {"minMember": pg.min_member}
    if pg.min_task_member:
        spec["minTaskMember"] = dict(pg.min_task_member)
    if pg.queue:
        spec["queue"] = pg.queue
    if pg.priority_class_name:
        spec["priorityClassName"] = pg.priority_class_name
    if pg.min_resources_list:
        spec["minResources"] = dict(pg.min_resources_list)
    status: dict[str, Any] = {}
    if pg.phase:
        status["phase"] = pg.phase
    if pg.conditions:
        status["conditions"] = [dict(c) for c in pg.conditions]
    for key, value in (("running", pg.running), ("succeeded", pg.succeeded), ("failed", pg.failed)):
        if value:
            status[key] = value
    return {"metadata": meta, "spec": spec, "status": status, "Version": "v1beta1"}


def _job_revocable_zone(pg: PodGroup | None) -> str:
    """``extractRevocableZone``: the PodGroup's revocable-zone annotation if ``*``, else ``*`` for a
    preemptable PodGroup (annotation), else empty."""
    if pg is None or not pg.annotations:
        return ""
    if REVOCABLE_ZONE_KEY in pg.annotations:
        return "*" if pg.annotations[REVOCABLE_ZONE_KEY] == "*" else ""
    raw = pg.annotations.get(PREEMPTABLE_KEY)
    return "*" if raw is not None and parse_go_bool(raw) else ""


def job(j: JobInfo) -> dict[str, Any]:
    """``api.JobInfo``: its tasks twice, in ``TaskStatusIndex`` (by status) and ``Tasks``."""
    tasks = {uid: task(j.tasks[uid]) for uid in sorted(j.tasks)}
    by_status = {}
    for status in sorted(j.by_status):
        members = j.by_status[status]
        if members:
            by_status[str(int(status))] = {uid: tasks[uid] for uid in sorted(members) if uid in tasks}
    pg = j.podgroup
    return {
        "UID": j.uid, "PgUID": pg.uid if pg is not None else "", "Name": j.name, "Namespace": j.namespace,
        "Queue": j.queue, "Priority": j.priority, "MinAvailable": j.min_available,
        "WaitingTime": round(j.waiting_time * 1e9) if j.waiting_time is not None else None,
        "JobFitErrors": j.job_fit_errors,
        # FitErrors has no exported field: each marshals as {}
        "NodesFitErrors": {uid: {} for uid in sorted(j.nodes_fit_errors)},
        "AllocatedHyperNode": "", "NetworkTopology": None, "SubJobs": {}, "TaskToSubJob": {}, "MinSubJobs": {},
        "TaskStatusIndex": by_status, "Tasks": tasks,
        "TaskMinAvailable": dict(sorted(j.task_min_available.items())),
        "TaskMinAvailableTotal": j.task_min_available_total,
        "Allocated": resource(j.allocated), "TotalRequest": resource(j.total_request),
        "CreationTimestamp": go_time(j.creation_timestamp), "PodGroup": _podgroup(pg),
        "ScheduleStartTimestamp": None, "Preemptable": j.preemptable,
        "RevocableZone": _job_revocable_zone(pg),
        "Budget": {"MinAvailable": j.budget.min_available, "MaxUnavailable": j.budget.max_unavailable},
    }


def _resource_list(r: Resource | None) -> dict[str, str] | None:
    """A ResourceList as ``ConvertRes2ResList`` writes it; None for no Resource."""
    return None if r is None else r.to_list()


def queue(q: QueueInfo) -> dict[str, Any]:
    """``api.QueueInfo`` with its ``scheduling.Queue`` rebuilt from what the scheduler reads."""
    spec: dict[str, Any] = {"weight": q.weight}
    for key, r in (("capability", q.capability), ("guarantee", q.guarantee), ("deserved", q.deserved)):
        if r is None or (key == "guarantee" and r.is_empty()):
            continue
        listed = _resource_list(r)
        spec[key] = {"resource": listed} if key == "guarantee" else listed
    if q.reclaimable_flag is not None:
        spec["reclaimable"] = q.reclaimable_flag
    if q.parent:
        spec["parent"] = q.parent
    if q.priority:
        spec["priority"] = q.priority
    meta: dict[str, Any] = {"name": q.name, "uid": q.uid, "creationTimestamp": go_time(q.creation_timestamp)}
    if q.annotations:
        meta["annotations"] = dict(q.annotations)
    status: dict[str, Any] = {"state": q.state}
    if q.allocated:
        status["allocated"] = dict(q.allocated)
    return {
        "UID": q.name, "Name": q.name, "Weight": q.weight,
        "Weights": q.annotations.get(HIERARCHY_WEIGHTS_ANNOTATION, ""),
        "Hierarchy": q.annotations.get(HIERARCHY_ANNOTATION, ""),
        "Queue": {"metadata": meta, "spec": spec, "status": status},
    }


def namespace(ns: NamespaceInfo) -> dict[str, Any]:
    return {"Name": ns.name, "QuotaStatus": {
        name: {"hard": dict(qs.hard_text), "used": dict(qs.used_text)}
        for name, qs in sorted(ns.quota_status.items())
    }}


def _default(value: Any) -> Any:
    """What YAML gives and JSON has no type for: timestamps (RFC 3339), dates and other scalars (text)."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(value)


def dumps(body: Any) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, default=_default).encode()


# -- decoding ----------------------------------------------------------------------------------

_JSON_KIND = {dict: "object", list: "array", str: "string", bool: "bool", int: "number", float: "number"}


def first_value(body: bytes) -> Any:
    """The first JSON value of ``body`` (what ``Decoder.Decode`` reads; what follows it is not looked at)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DecodeError(f"invalid character in response body: {e}") from None
    start = len(text) - len(text.lstrip(" \t\r\n"))
    if start == len(text):
        raise DecodeError("EOF")
    try:
        value, _ = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as e:
        raise DecodeError(f"invalid JSON at offset {e.pos}: {e.msg}") from None
    return value


def _kind(value: Any) -> str:
    return _JSON_KIND.get(type(value), type(value).__name__)


def _type_error(value: Any, struct: str, field: str, go_type: str) -> DecodeError:
    shown = f"number {value}" if _kind(value) == "number" else _kind(value)
    return DecodeError(f"json: cannot unmarshal {shown} into Go struct field {struct}.{field} of type {go_type}")


def fields(value: Any, struct: str, tags: tuple[str, ...]) -> dict[str, Any]:
    """The tagged fields of a JSON object decoded into Go struct ``struct``: exact key first, else a
    case-insensitive match (Go's rule); missing and ``null`` fields are left out."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise DecodeError(f"json: cannot unmarshal {_kind(value)} into Go value of type extender.{struct}")
    out: dict[str, Any] = {}
    for key, v in value.items():
        tag = key if key in tags else next((t for t in tags if t.lower() == key.lower()), None)
        if tag is None or v is None:
            continue
        if tag in out and key != tag:
            continue  # an exact match wins over a folded one
        out[tag] = v
    return out


def as_str(value: Any, struct: str, field: str) -> str:
    if not isinstance(value, str):
        raise _type_error(value, struct, field, "string")
    return value


def as_bool(value: Any, struct: str, field: str) -> bool:
    if not isinstance(value, bool):
        raise _type_error(value, struct, field, "bool")
    return value


def as_int(value: Any, struct: str, field: str) -> int:
    """A Go ``int`` (64 bits): a JSON number with no fraction."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _type_error(value, struct, field, "int")
    if isinstance(value, float) and value != int(value):
        raise _type_error(value, struct, field, "int")
    if not -(1 << 63) <= int(value) < (1 << 63):
        raise _type_error(value, struct, field, "int")
    return int(value)


def as_score_map(value: Any, struct: str, field: str) -> dict[str, float]:
    """A ``map[string]float64``; a ``null`` score is 0."""
    if not isinstance(value, dict):
        raise _type_error(value, struct, field, "map[string]float64")
    scores: dict[str, float] = {}
    for name, s in value.items():
        if s is None:
            scores[name] = 0.0
        elif isinstance(s, bool) or not isinstance(s, (int, float)):
            raise _type_error(s, struct, f"{field}", "float64")
        else:
            scores[name] = float(s)
    return scores


def as_task_uids(value: Any, struct: str, field: str) -> list[str | None]:
    """A ``[]*api.TaskInfo``, of which the scheduler reads each task's ``UID`` (None for a ``null``)."""
    if not isinstance(value, list):
        raise _type_error(value, struct, field, "[]*api.TaskInfo")
    uids: list[str | None] = []
    for item in value:
        if item is None:
            uids.append(None)
            continue
        got = fields(item, "TaskInfo", ("UID",)) if isinstance(item, dict) else None
        if got is None:
            raise _type_error(item, struct, field, "api.TaskInfo")
        uids.append(as_str(got["UID"], "TaskInfo", "UID") if "UID" in got else "")
    return uids
