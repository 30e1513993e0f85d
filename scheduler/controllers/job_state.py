"""The job controller's reconcile: requests → policies → the phase state machine (spec/jobs.md §6).

Pure: ``reconcile(observed, request)`` takes the job (mutated, with its status), its pods,
its PodGroup and the time, and returns an ``Outcome``: the new status and whether to write
it, pods to create and to delete, the PodGroup to create/update/delete, plugin objects,
Events, and a delayed action to arm. The Kubernetes-mode handlers and the simulator carry it out.

Sources: job_controller_util.go · applyPolicies; job_controller_actions.go · syncJob, killPods;
job_controller_handler.go (which pod change raises which event); state/*.go; garbagecollector.go.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..api.duration import DurationError, parse_go_duration
from . import job_plugins
from .job import (
    JOB_VERSION_KEY,
    OUT_OF_SYNC_KEY,
    PARTITION_ID_KEY,
    TASK_SPEC_KEY,
    build_pod,
    build_podgroup,
    dependencies_ready,
    make_pod_name,
    podgroup_needs_update,
    task_min_available,
    total_replicas,
)

# phases (batch/v1alpha1 JobPhase)
PENDING, ABORTING, ABORTED, RUNNING = "Pending", "Aborting", "Aborted", "Running"
RESTARTING, COMPLETING, COMPLETED = "Restarting", "Completing", "Completed"
TERMINATING, TERMINATED, FAILED = "Terminating", "Terminated", "Failed"
FINISHED = (COMPLETED, TERMINATED, FAILED)

# events (bus/v1alpha1)
ANY, POD_FAILED, POD_EVICTED, POD_PENDING, POD_RUNNING = "*", "PodFailed", "PodEvicted", "PodPending", "PodRunning"
UNKNOWN, TASK_COMPLETED, TASK_FAILED = "Unknown", "TaskCompleted", "TaskFailed"
OUT_OF_SYNC, COMMAND_ISSUED, JOB_UPDATED = "OutOfSync", "CommandIssued", "JobUpdated"
INTERNAL_EVENTS = (OUT_OF_SYNC, COMMAND_ISSUED, POD_RUNNING)

# actions
ABORT_JOB, RESTART_JOB, RESTART_TASK, RESTART_POD = "AbortJob", "RestartJob", "RestartTask", "RestartPod"
RESTART_PARTITION, TERMINATE_JOB, COMPLETE_JOB, RESUME_JOB = ("RestartPartition", "TerminateJob", "CompleteJob",
                                                              "ResumeJob")
SYNC_JOB = "SyncJob"
JOB_LEVEL_ACTIONS = (ABORT_JOB, RESTART_JOB, TERMINATE_JOB, COMPLETE_JOB, RESUME_JOB)
TARGETED_ACTIONS = (RESTART_TASK, RESTART_POD, RESTART_PARTITION)

RETAIN_NONE: frozenset[str] = frozenset()
RETAIN_SOFT = frozenset({"Succeeded", "Failed"})

POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")


# -- durations (Go's time.Duration) ------------------------------------------------------------

def parse_duration(text: Any) -> float:
    """A Go duration string ("30s", "1m30s", "500ms") in seconds: Go's ParseDuration (api/duration.py)."""
    if not isinstance(text, str):
        raise DurationError(f"invalid duration {text!r}")
    return parse_go_duration(text)


def format_duration(seconds: float) -> str:
    """Go's Duration.String for whole and fractional seconds: 30s, 1m0s, 1h0m0s, 1.5s, 500ms."""
    if seconds == 0:
        return "0s"
    if seconds < 1:
        ms = seconds * 1000
        return f"{ms:g}ms"
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    s_text = f"{s:g}s" if s != int(s) else f"{int(s)}s"
    if h:
        return f"{int(h)}h{int(m)}m{s_text}"
    if m:
        return f"{int(m)}m{s_text}"
    return s_text


# -- requests and policies ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Request:
    """apis.Request: what happened, to which job, task and pod."""

    event: str = OUT_OF_SYNC
    action: str = ""
    task: str = ""
    pod_name: str = ""
    pod_uid: str = ""
    exit_code: int | None = None
    job_uid: str = ""
    job_version: int | None = None


def apply_policies(job: Mapping[str, Any], req: Request) -> tuple[str, float]:
    """applyPolicies: the action a request leads to, and its delay in seconds."""
    if req.action:
        return req.action, 0.0
    if req.event in INTERNAL_EVENTS:
        return SYNC_JOB, 0.0
    status = job.get("status") or {}
    if req.job_uid and req.job_uid != job["metadata"].get("uid"):
        return SYNC_JOB, 0.0
    if req.job_version is not None and req.job_version < int(status.get("version") or 0):
        return SYNC_JOB, 0.0
    spec = job["spec"]
    if req.task:
        task = next((t for t in spec.get("tasks") or [] if t.get("name") == req.task), None)
        if task is not None:
            found = _match(task.get("policies") or [], req)
            if found:
                return found
    found = _match(spec.get("policies") or [], req)
    if found:
        return found
    return SYNC_JOB, 0.0


def _match(policies: list[Mapping[str, Any]], req: Request) -> tuple[str, float] | None:
    for policy in policies:
        events = list(policy.get("events") or [])
        if policy.get("event"):
            events.append(policy["event"])
        timeout = policy.get("timeout")
        delay = parse_duration(timeout) if timeout else 0.0
        if req.event in events or ANY in events:
            # Volcano: PodPending matches only a policy with a timeout
            if req.event == POD_PENDING and not timeout:
                continue
            return policy.get("action") or SYNC_JOB, delay
        if policy.get("exitCode") is not None and req.exit_code is not None and \
                int(policy["exitCode"]) == req.exit_code:
            return policy.get("action") or SYNC_JOB, delay
    return None


# -- which pod change raises which request (job_controller_handler.go) ---------------------------


def _restarts(pod: Mapping[str, Any]) -> int:
    status = pod.get("status") or {}
    return sum(int(c.get("restartCount") or 0)
               for c in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []))


def first_exit_code(pod: Mapping[str, Any]) -> int | None:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    if statuses:
        term = (statuses[0].get("state") or {}).get("terminated")
        if term is not None:
            return int(term.get("exitCode") or 0)
    return None


def _pod_request(pod: Mapping[str, Any], event: str, **kw: Any) -> Request:
    meta = pod.get("metadata") or {}
    ann = meta.get("annotations") or {}
    version = ann.get(JOB_VERSION_KEY)
    return Request(event=event, task=ann.get(TASK_SPEC_KEY, ""), pod_name=meta.get("name", ""),
                   pod_uid=meta.get("uid", ""), job_version=int(version) if version is not None else None, **kw)


def request_for_pod_add(pod: Mapping[str, Any]) -> Request:
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    return _pod_request(pod, OUT_OF_SYNC if ann.get(OUT_OF_SYNC_KEY) == "true" else POD_PENDING)


def request_for_pod_update(job: Mapping[str, Any], old: Mapping[str, Any], new: Mapping[str, Any],
                           pods: Mapping[str, Mapping[str, Any]]) -> Request | None:
    """updatePod: None when nothing of interest changed (same resourceVersion in Volcano)."""
    ann = (new.get("metadata") or {}).get("annotations") or {}
    if ann.get(OUT_OF_SYNC_KEY) == "true":
        return _pod_request(new, OUT_OF_SYNC)
    old_phase = (old.get("status") or {}).get("phase")
    new_phase = (new.get("status") or {}).get("phase")
    task_name = ann.get(TASK_SPEC_KEY, "")
    task = next((t for t in job["spec"].get("tasks") or [] if t.get("name") == task_name), None)
    event = OUT_OF_SYNC
    exit_code = None
    if old_phase != "Failed" and new_phase == "Failed":
        event, exit_code = POD_FAILED, first_exit_code(new)
    elif old_phase != "Succeeded" and new_phase == "Succeeded":
        if task is not None and _task_completed(job, task, pods):
            event = TASK_COMPLETED
    elif new_phase in ("Running", "Pending") and task is not None:
        max_retry = int(task.get("maxRetry") or 0) or 3
        task_pods = [p for p in pods.values()
                     if ((p.get("metadata") or {}).get("annotations") or {}).get(TASK_SPEC_KEY) == task_name
                     and (p.get("status") or {}).get("phase") in ("Running", "Pending")]
        if max_retry != -1 and sum(_restarts(p) for p in task_pods) >= max_retry:
            event = TASK_FAILED
    if old_phase != "Running" and new_phase == "Running":
        event = POD_RUNNING
    elif old_phase != "Pending" and new_phase == "Pending":
        event = POD_PENDING
    return _pod_request(new, event, exit_code=exit_code)


def _task_completed(job: Mapping[str, Any], task: Mapping[str, Any],
                    pods: Mapping[str, Mapping[str, Any]]) -> bool:
    name = job["metadata"]["name"]
    replicas = int(task.get("replicas") or 0)
    done = sum(1 for i in range(replicas)
               if ((pods.get(make_pod_name(name, task["name"], i)) or {}).get("status") or {}).get("phase")
               == "Succeeded")
    return replicas > 0 and done == replicas


def request_for_pod_delete(pod: Mapping[str, Any]) -> Request:
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    return _pod_request(pod, OUT_OF_SYNC if ann.get(OUT_OF_SYNC_KEY) == "true" else POD_EVICTED)


def request_for_podgroup_phase(new_phase: str) -> Request:
    return Request(event=UNKNOWN if new_phase == "Unknown" else "")


# -- outcome ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JobEvent:
    type: str  # Normal | Warning
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class DelayedAction:
    action: str
    delay: float
    request: Request


@dataclass
class Outcome:
    status: dict[str, Any]
    write_status: bool = False
    create_pods: list[dict[str, Any]] = field(default_factory=list)
    delete_pods: list[str] = field(default_factory=list)  # names: mark out-of-sync, then delete
    create_podgroup: dict[str, Any] | None = None
    update_podgroup: dict[str, Any] | None = None
    delete_podgroup: bool = False
    apply_objects: list[dict[str, Any]] = field(default_factory=list)  # plugin objects to create or update
    delete_objects: list[tuple[str, str]] = field(default_factory=list)  # (kind, name)
    events: list[JobEvent] = field(default_factory=list)
    delayed: DelayedAction | None = None
    action: str = SYNC_JOB

    @property
    def phase(self) -> str:
        return (self.status.get("state") or {}).get("phase") or ""


@dataclass
class Observed:
    """What the controller sees of one job: the (mutated) Job with status, its pods and PodGroup."""

    job: dict[str, Any]
    pods: dict[str, dict[str, Any]]  # pod name → manifest, the job's pods only
    podgroup: dict[str, Any] | None
    now: str  # RFC 3339, for lastTransitionTime
    priority_classes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def new_condition(phase: str, now: str) -> dict[str, str]:
    return {"status": phase, "lastTransitionTime": now}


def append_condition(conditions: list[dict[str, Any]], cond: dict[str, Any]) -> list[dict[str, Any]]:
    """appendJobCondition: one entry per phase, the newest last."""
    return [c for c in conditions if c.get("status") != cond["status"]] + [cond]


def _count_key(status: Mapping[str, Any]) -> tuple:
    return tuple(int(status.get(k) or 0) for k in ("pending", "running", "succeeded", "failed", "terminating",
                                                    "unknown"))


# -- reconcile -------------------------------------------------------------------------------------


def reconcile(obs: Observed, req: Request, *, action: str | None = None) -> Outcome:
    """processNextReq for one request: pick the action (or arm a delay), then run the state's operation.

    ``action`` forces the action (a delayed action whose timer fired).
    """
    job = obs.job
    status = copy.deepcopy(job.get("status") or {})
    out = Outcome(status=status)
    if action is None:
        action, delay = apply_policies(job, req)
        if delay > 0:
            out.events.append(JobEvent("Normal", "ExecuteAction",
                                       f"Execute action {action} after {format_duration(delay)}"))
            out.delayed = DelayedAction(action, delay, req)
            out.action = action
            return out
    out.action = action
    if req.event == COMMAND_ISSUED:
        out.events.append(JobEvent("Normal", "CommandIssued", f"Start to execute command {action}, and clean it "
                                   "up to make sure executed not more than once."))
    if action != SYNC_JOB:
        out.events.append(JobEvent("Normal", "ExecuteAction", f"Start to execute action {action} "))
    if (job.get("metadata") or {}).get("deletionTimestamp"):
        return out
    _StateMachine(obs, out, req).execute(action)
    return out


class _StateMachine:
    """state/*.go: the operation each (phase, action) pair runs, and its status function."""

    def __init__(self, obs: Observed, out: Outcome, req: Request) -> None:
        self.obs, self.out, self.req = obs, out, req
        self.job = obs.job
        self.spec = obs.job["spec"]
        self.replicas = total_replicas(obs.job)

    def execute(self, action: str) -> None:
        phase = (self.out.status.get("state") or {}).get("phase") or PENDING
        if phase in (PENDING, RUNNING):
            if action == RESTART_JOB:
                return self.kill(RETAIN_NONE, None, self._restart)
            if action in TARGETED_ACTIONS:
                return self.kill(RETAIN_NONE, action, self._restart)
            if action == ABORT_JOB:
                return self.kill(RETAIN_SOFT, None, self._to(ABORTING))
            if action == COMPLETE_JOB:
                return self.kill(RETAIN_SOFT, None, self._to(COMPLETING))
            if action == TERMINATE_JOB:
                return self.kill(RETAIN_SOFT, None, self._to(TERMINATING))
            return self.sync(self._pending_status if phase == PENDING else self._running_status)
        if phase == RESTARTING:
            if action == SYNC_JOB:
                return self.sync(self._restarting_status)
            if action in TARGETED_ACTIONS:
                return self.kill(RETAIN_NONE, action, self._restarting_status)
            return self.kill(RETAIN_NONE, None, self._restarting_status)
        if phase in (ABORTING, ABORTED):
            if action == RESUME_JOB:
                return self.kill(RETAIN_SOFT, None, self._restart)
            if phase == ABORTING:
                return self.kill(RETAIN_SOFT, None, self._when_drained(ABORTED))
            return self.kill(RETAIN_SOFT, None, None)
        if phase == COMPLETING:
            return self.kill(RETAIN_SOFT, None, self._when_drained(COMPLETED))
        if phase == TERMINATING:
            return self.kill(RETAIN_SOFT, None, self._when_drained(TERMINATED))
        return self.kill(RETAIN_SOFT, None, None)  # Completed / Terminated / Failed

    # -- status functions: mutate the status, return True when the phase changed --------------------

    def _set_phase(self, status: dict[str, Any], phase: str) -> bool:
        state = status.setdefault("state", {})
        state["phase"] = phase
        return True

    def _restart(self, status: dict[str, Any]) -> bool:
        status["retryCount"] = int(status.get("retryCount") or 0) + 1
        return self._set_phase(status, RESTARTING)

    def _to(self, phase: str):
        return lambda status: self._set_phase(status, phase)

    def _when_drained(self, phase: str):
        def fn(status: dict[str, Any]) -> bool:
            if not any(int(status.get(k) or 0) for k in ("terminating", "pending", "running")):
                return self._set_phase(status, phase)
            return False
        return fn

    def _pending_status(self, status: dict[str, Any]) -> bool:
        active = sum(int(status.get(k) or 0) for k in ("running", "succeeded", "failed"))
        if int(self.spec.get("minAvailable") or 0) <= active:
            return self._set_phase(status, RUNNING)
        return False

    def _running_status(self, status: dict[str, Any]) -> bool:
        r = self.replicas
        if r == 0:
            return False
        succeeded, failed, pending = (int(status.get(k) or 0) for k in ("succeeded", "failed", "pending"))
        min_success = self.spec.get("minSuccess")
        min_available = int(self.spec.get("minAvailable") or 0)
        if min_success is not None and succeeded >= int(min_success):
            return self._set_phase(status, COMPLETED)
        if succeeded + failed == r:
            tasks = self.spec.get("tasks") or []
            total_min = sum(task_min_available(t) if t.get("minAvailable") is not None else int(t.get("replicas") or 0)
                            for t in tasks)
            if min_available >= total_min:
                counts = status.get("taskStatusCount") or {}
                for t in tasks:
                    if t.get("minAvailable") is None or t["name"] not in counts:
                        continue
                    done = int(((counts[t["name"]] or {}).get("phase") or {}).get("Succeeded") or 0)
                    if done < int(t["minAvailable"]):
                        return self._set_phase(status, FAILED)
            if min_success is not None and succeeded < int(min_success):
                return self._set_phase(status, FAILED)
            if succeeded >= min_available:
                return self._set_phase(status, COMPLETED)
            return self._set_phase(status, FAILED)
        if pending > r - min_available:
            phase = (status.get("state") or {}).get("phase")
            if phase != PENDING:
                return self._set_phase(status, PENDING)
        return False

    def _restarting_status(self, status: dict[str, Any]) -> bool:
        if int(status.get("retryCount") or 0) >= int(self.spec.get("maxRetry") or 3):
            return self._set_phase(status, FAILED)
        if self.replicas - int(status.get("terminating") or 0) >= int(status.get("minAvailable") or 0):
            return self._set_phase(status, PENDING)
        return False

    # -- Sync -------------------------------------------------------------------------------------

    def sync(self, status_fn) -> None:
        obs, out, job = self.obs, self.out, self.job
        status = out.status
        phase = (status.get("state") or {}).get("phase") or ""
        plugins = self.spec.get("plugins") or {}
        if phase in ("", PENDING):
            if phase == "":
                status.setdefault("state", {})["phase"] = PENDING
                status["minAvailable"] = int(self.spec.get("minAvailable") or 0)
                status["state"]["lastTransitionTime"] = obs.now
                status["conditions"] = append_condition(status.get("conditions") or [],
                                                        new_condition(PENDING, obs.now))
                out.write_status = True
            err = job_plugins.on_job_add(job, plugins, status, out)
            if err:
                out.events.append(JobEvent("Warning", "PluginError",
                                           f"Execute plugin when job add failed, err: {err}"))
                return
        else:
            err = job_plugins.on_job_update(job, plugins, status, out)
            if err:
                out.events.append(JobEvent("Warning", "PluginError",
                                           f"Execute plugin when job update failed, err: {err}"))
                return
        before = copy.deepcopy(status)
        desired = build_podgroup(job, obs.priority_classes)
        pg = obs.podgroup
        if pg is None:
            out.create_podgroup = desired
        elif podgroup_needs_update(pg, desired):
            updated = copy.deepcopy(pg)
            updated["spec"].update({k: desired["spec"][k] for k in ("minMember", "minTaskMember", "minResources")})
            for key in ("priorityClassName", "subGroupPolicy"):
                if key in desired["spec"]:
                    updated["spec"][key] = desired["spec"][key]
                else:
                    updated["spec"].pop(key, None)
            out.update_podgroup = updated
        if pg is not None:
            cond = _latest_true_condition(pg)
            if cond is not None and cond.get("type") != "Scheduled":
                meta = job["metadata"]
                out.events.append(JobEvent("Warning", "PodGroupPending",
                                           f"PodGroup {meta.get('namespace')}:{meta['name']} "
                                           f"{str(cond.get('type', '')).lower()}, reason: {cond.get('message', '')}"))
        pg_phase = ((pg or {}).get("status") or {}).get("phase") or ""
        if pg is None or pg_phase in ("", "Pending"):
            status_fn(status)
        else:
            self._reconcile_pods(status)
            status_fn(status)
        if _status_changed(before, status):
            # Volcano: every Sync write stamps lastTransitionTime and re-appends the phase's condition
            status.setdefault("state", {})["lastTransitionTime"] = obs.now
            status["conditions"] = append_condition(status.get("conditions") or [],
                                                    new_condition(status["state"]["phase"], obs.now))
            out.write_status = True

    def _reconcile_pods(self, status: dict[str, Any]) -> None:
        obs, out = self.obs, self.out
        job = self.job
        name = job["metadata"]["name"]
        counts = dict.fromkeys(("pending", "running", "succeeded", "failed", "terminating", "unknown"), 0)
        task_counts: dict[str, dict[str, int]] = {}
        seen: set[str] = set()
        for task in self.spec.get("tasks") or []:
            tname = task["name"]
            replicas = int(task.get("replicas") or 0)
            deps_ok = dependencies_ready(job, task, obs.pods)
            for i in range(replicas):
                pod_name = make_pod_name(name, tname, i)
                seen.add(pod_name)
                pod = obs.pods.get(pod_name)
                if pod is None:
                    if not deps_ok:
                        continue  # deferred until the tasks it depends on are ready
                    new_pod = build_pod(job, task, i)
                    job_plugins.on_pod_create(job, self.spec.get("plugins") or {}, new_pod)
                    out.create_pods.append(new_pod)
                    counts["pending"] += 1
                    _task_count(task_counts, tname, "Pending")
                    continue
                ann = (pod.get("metadata") or {}).get("annotations") or {}
                if ann.get(OUT_OF_SYNC_KEY) == "true" and not pod["metadata"].get("deletionTimestamp"):
                    out.delete_pods.append(pod_name)
                    counts["terminating"] += 1
                    continue
                _count_pod(pod, counts, task_counts, tname)
            # pods of this task beyond its replicas (scale down) are deleted
            for pod_name, pod in obs.pods.items():
                ann = (pod.get("metadata") or {}).get("annotations") or {}
                if ann.get(TASK_SPEC_KEY) == tname and pod_name not in seen:
                    seen.add(pod_name)
                    if not pod["metadata"].get("deletionTimestamp"):
                        out.delete_pods.append(pod_name)
                    counts["terminating"] += 1
        status.update(counts)
        status["taskStatusCount"] = {t: {"phase": c} for t, c in task_counts.items()}
        status["minAvailable"] = int(self.spec.get("minAvailable") or 0)  # syncJob: a copy of the spec's, each sync

    # -- Kill -------------------------------------------------------------------------------------

    def kill(self, retain: frozenset[str], target: str | None, status_fn) -> None:
        obs, out, req = self.obs, self.out, self.req
        status = out.status
        counts = dict.fromkeys(("pending", "running", "succeeded", "failed", "terminating", "unknown"), 0)
        task_counts: dict[str, dict[str, int]] = {}
        to_kill: list[str] = []
        if target is not None:
            for pod_name, pod in obs.pods.items():
                ann = (pod.get("metadata") or {}).get("annotations") or {}
                if ann.get(TASK_SPEC_KEY) != req.task:
                    continue
                if target == RESTART_POD and pod_name != req.pod_name:
                    continue
                if target == RESTART_PARTITION:
                    mine = ((obs.pods.get(req.pod_name) or {}).get("metadata") or {}).get("labels") or {}
                    labels = (pod.get("metadata") or {}).get("labels") or {}
                    if labels.get(PARTITION_ID_KEY) != mine.get(PARTITION_ID_KEY):
                        continue
                to_kill.append(pod_name)
        else:
            status["version"] = int(status.get("version") or 0) + 1
            last_retry = int(status.get("retryCount") or 0) >= int(self.spec.get("maxRetry") or 3) - 1
            keep = RETAIN_SOFT if last_retry else retain
            for pod_name, pod in obs.pods.items():
                if pod["metadata"].get("deletionTimestamp"):
                    counts["terminating"] += 1
                    continue
                if ((pod.get("status") or {}).get("phase") or "Pending") not in keep:
                    to_kill.append(pod_name)
        for pod_name in to_kill:
            counts["terminating"] += 1
            if not obs.pods[pod_name]["metadata"].get("deletionTimestamp"):
                out.delete_pods.append(pod_name)
        status.update(counts)
        status["taskStatusCount"] = task_counts
        if status_fn is not None and status_fn(status):
            status.setdefault("state", {})["lastTransitionTime"] = obs.now
            status["conditions"] = append_condition(status.get("conditions") or [],
                                                    new_condition(status["state"]["phase"], obs.now))
        job_plugins.on_job_delete(self.job, self.spec.get("plugins") or {}, status, out)
        out.write_status = True
        if target is None and obs.podgroup is not None:
            out.delete_podgroup = True


def _task_count(task_counts: dict[str, dict[str, int]], task: str, phase: str) -> None:
    phases = task_counts.setdefault(task, {})
    phases[phase] = phases.get(phase, 0) + 1


def _count_pod(pod: Mapping[str, Any], counts: dict[str, int], task_counts: dict[str, dict[str, int]],
               task: str) -> None:
    if pod["metadata"].get("deletionTimestamp"):
        counts["terminating"] += 1
        return
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    key = phase.lower() if phase in POD_PHASES else "unknown"
    counts[key] += 1
    _task_count(task_counts, task, phase if phase in POD_PHASES else "Unknown")


def _latest_true_condition(pg: Mapping[str, Any]) -> Mapping[str, Any] | None:
    conds = [c for c in (pg.get("status") or {}).get("conditions") or [] if c.get("status") == "True"]
    if not conds:
        return None
    return max(conds, key=lambda c: str(c.get("lastTransitionTime") or ""))


def _status_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    strip = ("conditions",)
    a = {k: v for k, v in old.items() if k not in strip}
    b = {k: v for k, v in new.items() if k not in strip}
    sa = dict(a.get("state") or {})
    sb = dict(b.get("state") or {})
    sa.pop("lastTransitionTime", None)
    sb.pop("lastTransitionTime", None)
    a["state"], b["state"] = sa, sb
    return a != b


# -- TTL -------------------------------------------------------------------------------------------


def ttl_deadline(job: Mapping[str, Any], parse_time) -> float | None:
    """The time (seconds, the caller's clock) at which a finished job with ttlSecondsAfterFinished goes,
    or None if it never does. ``parse_time`` turns lastTransitionTime into seconds."""
    ttl = job["spec"].get("ttlSecondsAfterFinished")
    status = job.get("status") or {}
    state = status.get("state") or {}
    if ttl is None or state.get("phase") not in FINISHED:
        return None
    last = state.get("lastTransitionTime")
    if not last:
        return None
    return parse_time(last) + int(ttl)
