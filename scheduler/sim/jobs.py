"""The simulator's job controller, kubelet and garbage collector: Jobs expanded as in a cluster.

Between scheduling cycles ``SimJobs.settle(now)``:
1. plays the simulated pod lifecycle: a Running pod with the annotation
   ``vcsched.io/sim-duration: 30s`` succeeds 30 simulated seconds after it started; with
   ``vcsched.io/sim-fail-after: 10s`` it fails after 10 s with exit code
   ``vcsched.io/sim-exit-code`` (default 1) in its first container. A pod without them runs on;
2. turns what changed since the last settle into job-controller requests exactly as Volcano's
   handlers do (pod added → PodPending, phase Running → PodRunning, Failed → PodFailed with the
   exit code, last replica Succeeded → TaskCompleted, deleted → PodEvicted or OutOfSync, PodGroup
   phase change → sync, Job phase change → OutOfSync), plus the delayed actions whose time has
   come and the TTL deletions of finished jobs;
3. runs every request through ``controllers.job_state.reconcile`` and carries the outcome out
   on the in-memory cluster (pods, PodGroups, plugin objects, job status), until no request is left.
"""

from __future__ import annotations

import copy
import uuid
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..api.pod_defaults import default_pod
from ..cache import Cache
from ..controllers import job_state as js
from ..controllers.job import OUT_OF_SYNC_KEY, podgroup_name

if TYPE_CHECKING:
    from .cluster import SimCluster

SIM_DURATION = "vcsched.io/sim-duration"
SIM_FAIL_AFTER = "vcsched.io/sim-fail-after"
SIM_EXIT_CODE = "vcsched.io/sim-exit-code"
SIM_ANNOTATIONS = (SIM_DURATION, SIM_FAIL_AFTER)
_UID_NS = uuid.UUID("6f1f3a52-9d3e-4c67-9a51-5a0c1f2b7e11")
_MAX_REQUESTS = 10_000  # per settle: a guard against a controller loop, never reached by Volcano's rules


def _rfc3339(ts: float) -> str:
    from .cluster import rfc3339

    return rfc3339(ts)


def _parse_rfc3339(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


@dataclass
class _Timer:
    at: float
    job: str
    action: str
    request: js.Request
    started_by: str


@dataclass
class JobRecord:
    """One Job in the simulated cluster and what its controller recorded."""

    job: dict[str, Any]
    events: list[js.JobEvent] = field(default_factory=list)
    deleted: bool = False


class SimJobs:
    def __init__(self, cluster: "SimCluster", cache: Cache) -> None:
        self.cluster = cluster
        self.cache = cache
        self.records: dict[str, JobRecord] = {key: JobRecord(job) for key, job in cluster.jobs.items()}
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}  # (kind, ns, name) → plugin object
        self.timers: list[_Timer] = []
        self._seen_pods: dict[str, dict[str, Any]] = {}
        self._seen_pg_phase: dict[str, str] = {}
        self._started: dict[str, float] = {}  # pod key → simulated start time
        self._uids = 0
        self._queue: deque[tuple[str, js.Request, str | None]] = deque(
            (key, js.Request(event=js.OUT_OF_SYNC), None) for key in self.records)
        self._last_cycle = 0.0

    # -- clock ----------------------------------------------------------------------------------

    def next_timer(self) -> float | None:
        """The earliest simulated time at which something is due (a pod finishing, a delayed action, a TTL)."""
        times = [t.at for t in self.timers]
        for key, start in self._started.items():
            pod = self.cluster.pods.get(key)
            if pod is None or (pod.get("status") or {}).get("phase") != "Running":
                continue
            end = _finish(pod, start)
            if end is not None:
                times.append(end[0])
        for rec in self.records.values():
            if not rec.deleted:
                deadline = js.ttl_deadline(rec.job, _parse_rfc3339)
                if deadline is not None:
                    times.append(deadline)
        return min(times) if times else None

    # -- one settle ---------------------------------------------------------------------------

    def settle(self, now: float, cycle_time: float) -> bool:
        """Advance pods, raise requests, run the controller to quiescence; True if anything changed."""
        self._last_cycle = cycle_time
        changed = self._kubelet(now)
        self._observe()
        changed |= self._fire(now)
        handled = 0
        while self._queue:
            handled += 1
            if handled > _MAX_REQUESTS:
                raise RuntimeError("job controller did not settle")
            key, req, action = self._queue.popleft()
            changed |= self._handle(key, req, action, now)
            self._observe()
        return changed

    def _kubelet(self, now: float) -> bool:
        changed = False
        for key, pod in self.cluster.pods.items():
            status = pod.setdefault("status", {})
            if status.get("phase") != "Running":
                continue
            ann = (pod.get("metadata") or {}).get("annotations") or {}
            if not any(a in ann for a in SIM_ANNOTATIONS):
                continue
            start = self._started.setdefault(key, self._last_cycle)
            status.setdefault("startTime", _rfc3339(start))
            end = _finish(pod, start)
            if end is None or end[0] > now:
                continue
            phase, code = end[1], end[2]
            status["phase"] = phase
            status["containerStatuses"] = [{
                "name": ((pod["spec"].get("containers") or [{}])[0]).get("name", ""), "ready": False,
                "restartCount": 0, "state": {"terminated": {"exitCode": code,
                                                            "reason": "Completed" if code == 0 else "Error"}}}]
            self.cache.update_pod(pod)
            changed = True
        return changed

    def _observe(self) -> None:
        """Turn pod and PodGroup changes since the last look into requests (job_controller_handler)."""
        by_job = self._job_by_group()
        current = {k: p for k, p in self.cluster.pods.items()}
        for key, pod in current.items():
            job_key = by_job.get(_group_key(pod))
            old = self._seen_pods.get(key)
            if old is not None and (old.get("metadata") or {}).get("uid") != (pod.get("metadata") or {}).get("uid"):
                if job_key:
                    self._queue.append((job_key, js.request_for_pod_delete(old), None))
                old = None
            if job_key is None:
                continue
            if old is None:
                self._queue.append((job_key, js.request_for_pod_add(pod), None))
            elif _pod_state(old) != _pod_state(pod):
                job = self.records[job_key].job
                req = js.request_for_pod_update(job, old, pod, self._job_pods(job_key))
                if req is not None:
                    self._queue.append((job_key, req, None))
        for key, old in self._seen_pods.items():
            if key not in current:
                self._started.pop(key, None)
                job_key = by_job.get(_group_key(old))
                if job_key:
                    self._queue.append((job_key, js.request_for_pod_delete(old), None))
        self._seen_pods = {k: copy.deepcopy(p) for k, p in current.items()}
        for job_key, rec in self.records.items():
            if rec.deleted:
                continue
            pg = self.cluster.podgroups.get(_pg_key(rec.job))
            phase = ((pg or {}).get("status") or {}).get("phase") or ""
            if pg is not None and self._seen_pg_phase.get(job_key) != phase:
                if job_key in self._seen_pg_phase:
                    self._queue.append((job_key, js.request_for_podgroup_phase(phase), None))
                self._seen_pg_phase[job_key] = phase
            elif pg is None:
                self._seen_pg_phase.pop(job_key, None)

    def _fire(self, now: float) -> bool:
        changed = False
        due = [t for t in self.timers if t.at <= now]
        self.timers = [t for t in self.timers if t.at > now]
        for t in sorted(due, key=lambda t: t.at):
            self._queue.append((t.job, t.request, t.action))
        for key, rec in self.records.items():
            if rec.deleted:
                continue
            deadline = js.ttl_deadline(rec.job, _parse_rfc3339)
            if deadline is not None and deadline <= now:
                self._delete_job(key)
                changed = True
        return changed or bool(due)

    # -- carrying out an outcome ----------------------------------------------------------------

    def _handle(self, key: str, req: js.Request, action: str | None, now: float) -> bool:
        rec = self.records[key]
        if rec.deleted:
            return False
        job = rec.job
        self._cancel_timers(key, req)
        obs = js.Observed(job=job, pods=self._job_pods(key), podgroup=self.cluster.podgroups.get(_pg_key(job)),
                          now=_rfc3339(now), priority_classes=self.cluster.priority_classes)
        out = js.reconcile(obs, req, action=action)
        rec.events.extend(out.events)
        if out.delayed is not None:
            return self._arm(key, out.delayed, now)
        if out.action not in (js.SYNC_JOB, ""):
            self._cancel_after_action(key, out.action, req)
        changed = bool(out.events and out.action != js.SYNC_JOB)
        ns = job["metadata"].get("namespace") or "default"
        for name in out.delete_pods:
            pod = self.cluster.pods.pop(f"{ns}/{name}", None)
            if pod is not None:
                pod["metadata"].setdefault("annotations", {})[OUT_OF_SYNC_KEY] = "true"
                self._seen_pods[f"{ns}/{name}"] = copy.deepcopy(pod)  # the deletion event carries the annotation
                self.cache.delete_pod(pod["metadata"].get("uid"))
                changed = True
        refused = []
        for pod in out.create_pods:
            pkey = f"{ns}/{pod['metadata']['name']}"
            if pkey in self.cluster.pods:
                continue  # AlreadyExists is ignored
            # the API server's create: its defaults, then the Priority admission plugin
            pod["status"] = {}
            default_pod(pod)
            refusal = self.cluster.admit_pod(pod)
            if refusal is not None:
                refused.append(f"failed to create pod {pod['metadata']['name']}, err: {refusal}")
                continue
            self._uids += 1
            pod["metadata"]["uid"] = str(uuid.uuid5(_UID_NS, f"{pkey}/{self._uids}"))
            pod["metadata"]["creationTimestamp"] = _rfc3339(now)
            self.cluster.pods[pkey] = pod
            self.cache.add_pod(pod)
            changed = True
        if refused:  # syncJob: one event, and the sync fails before it writes the job's status
            rec.events.append(js.JobEvent("Warning", "FailedCreate", f"Error creating pods: [{' '.join(refused)}]"))
            changed = True
        pg_key = _pg_key(job)
        if out.delete_podgroup and pg_key in self.cluster.podgroups:
            del self.cluster.podgroups[pg_key]
            self.cache.delete_podgroup(pg_key)
            changed = True
        for pg in (out.create_podgroup, out.update_podgroup):
            if pg is None:
                continue
            if out.create_podgroup is pg:
                self._uids += 1
                pg["metadata"]["uid"] = str(uuid.uuid5(_UID_NS, f"pg/{pg_key}/{self._uids}"))
                pg["metadata"]["creationTimestamp"] = job["metadata"].get("creationTimestamp")
            self.cluster.podgroups[pg_key] = pg
            self.cache.update_podgroup(pg)
            changed = True
        for obj in out.apply_objects:
            okey = (obj["kind"], ns, obj["metadata"]["name"])
            if self.objects.get(okey) != obj:
                self.objects[okey] = obj
        for kind, name in out.delete_objects:
            self.objects.pop((kind, ns, name), None)
        if out.write_status and not refused:
            old_phase = ((job.get("status") or {}).get("state") or {}).get("phase")
            if job.get("status") != out.status:
                job["status"] = out.status
                changed = True
            if out.phase != old_phase:
                self._queue.append((key, js.Request(event=js.OUT_OF_SYNC), None))  # a job update: phase changed
        return changed

    def _arm(self, key: str, delayed: js.DelayedAction, now: float) -> bool:
        pod = delayed.request.pod_name
        if any(t.job == key and t.request.pod_name == pod and t.action == delayed.action for t in self.timers):
            return False  # a second registration for the same pod and action is ignored
        self.timers.append(_Timer(now + delayed.delay, key, delayed.action, delayed.request, delayed.request.event))
        return True

    def _cancel_timers(self, key: str, req: js.Request) -> None:
        """A PodPending delay ends with any other event of that pod; a PodFailed/PodEvicted delay when it runs."""
        if not req.pod_name:
            return
        keep = []
        for t in self.timers:
            same_pod = t.job == key and t.request.pod_name == req.pod_name
            if same_pod and t.started_by == js.POD_PENDING and req.event != js.POD_PENDING \
                    and t.request.pod_uid == req.pod_uid:
                continue
            if same_pod and t.started_by in (js.POD_FAILED, js.POD_EVICTED) and req.event == js.POD_RUNNING:
                continue
            keep.append(t)
        self.timers = keep

    def _cancel_after_action(self, key: str, action: str, req: js.Request) -> None:
        if action in js.JOB_LEVEL_ACTIONS:
            self.timers = [t for t in self.timers if not (t.job == key and t.action in js.JOB_LEVEL_ACTIONS)]
        elif action == js.RESTART_TASK:
            self.timers = [t for t in self.timers
                           if not (t.job == key and t.action == action and t.request.task == req.task)]
        elif action in (js.RESTART_POD, js.RESTART_PARTITION):
            self.timers = [t for t in self.timers
                           if not (t.job == key and t.action == action and t.request.pod_name == req.pod_name)]

    def _delete_job(self, key: str) -> None:
        """The TTL garbage collector: the Job goes, and with it (owner references) its pods, PodGroup, objects."""
        rec = self.records[key]
        rec.deleted = True
        ns = rec.job["metadata"].get("namespace") or "default"
        self.cluster.jobs.pop(key, None)
        for pkey in [k for k, p in self.cluster.pods.items() if _owned_by(p, rec.job)]:
            pod = self.cluster.pods.pop(pkey)
            self.cache.delete_pod(pod["metadata"].get("uid"))
        pg_key = _pg_key(rec.job)
        if self.cluster.podgroups.pop(pg_key, None) is not None:
            self.cache.delete_podgroup(pg_key)
        for okey in [k for k in self.objects if k[1] == ns and _owned_by(self.objects[k], rec.job)]:
            del self.objects[okey]
        self.timers = [t for t in self.timers if t.job != key]

    # -- lookups --------------------------------------------------------------------------------

    def _job_by_group(self) -> dict[str, str]:
        return {_pg_key(rec.job): key for key, rec in self.records.items() if not rec.deleted}

    def _job_pods(self, key: str) -> dict[str, dict[str, Any]]:
        job = self.records[key].job
        return {p["metadata"]["name"]: p for p in self.cluster.pods.values() if _owned_by(p, job)}


def _finish(pod: dict[str, Any], start: float) -> tuple[float, str, int] | None:
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    ends = []
    if SIM_DURATION in ann:
        ends.append((start + js.parse_duration(ann[SIM_DURATION]), "Succeeded", 0))
    if SIM_FAIL_AFTER in ann:
        ends.append((start + js.parse_duration(ann[SIM_FAIL_AFTER]), "Failed", int(ann.get(SIM_EXIT_CODE, "1"))))
    return min(ends) if ends else None


def _pod_state(pod: dict[str, Any]) -> tuple:
    status = pod.get("status") or {}
    return status.get("phase"), bool(pod["metadata"].get("deletionTimestamp")), \
        ((pod.get("metadata") or {}).get("annotations") or {}).get(OUT_OF_SYNC_KEY)


def _group_key(pod: dict[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{(meta.get('annotations') or {}).get('scheduling.k8s.io/group-name')}"


def _pg_key(job: dict[str, Any]) -> str:
    return f"{job['metadata'].get('namespace') or 'default'}/{podgroup_name(job)}"


def _owned_by(obj: dict[str, Any], job: dict[str, Any]) -> bool:
    uid = job["metadata"].get("uid")
    return any(r.get("uid") == uid and r.get("kind") == "Job" for r in (obj.get("metadata") or {}).get(
        "ownerReferences") or [])
