"""The controllers in Kubernetes mode: kopf handlers that call the pure reconcile functions.

Only this layer talks to the API server. ``KubeApi`` is a small async client over aiohttp
(the base URL and headers come from kopf's login or a test's API emulator); ``JobHandlers``
holds the handlers, ``register(registry, handlers)`` wires them into a kopf registry.
Status writes re-read the object, skip the write when nothing changed (idempotent) and retry
on 409 Conflict.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

import aiohttp
import kopf

from ..controllers import job_state as js
from ..controllers.job import (JOB_NAME_KEY, OUT_OF_SYNC_KEY, mutate_job, podgroup_name, validate_job,
                               volcano_message)
from ..controllers.podgroup import needs_podgroup, podgroup_for_pod

JOBS = "/apis/batch.volcano.sh/v1alpha1"
SCHED = "/apis/scheduling.volcano.sh/v1beta1"
CONFLICT_RETRIES = 5


class ApiError(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"{status}: {text}")
        self.status = status


class KubeApi:
    def __init__(self, session: aiohttp.ClientSession, base_url: str) -> None:
        self.session, self.base = session, base_url.rstrip("/")

    async def _call(self, method: str, path: str, body: Any = None, params: Mapping[str, str] | None = None) -> Any:
        async with self.session.request(method, self.base + path, json=body, params=params) as resp:
            if resp.status >= 400:
                raise ApiError(resp.status, await resp.text())
            return await resp.json(content_type=None)

    async def get(self, path: str) -> dict[str, Any] | None:
        try:
            return await self._call("GET", path)
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    async def list(self, path: str, selector: str) -> list[dict[str, Any]]:
        return list((await self._call("GET", path, params={"labelSelector": selector})).get("items") or [])

    async def create(self, path: str, obj: dict[str, Any]) -> None:
        try:
            await self._call("POST", path, obj)
        except ApiError as e:
            if e.status != 409:  # AlreadyExists is ignored, as Volcano does
                raise

    async def patch(self, path: str, patch: dict[str, Any]) -> None:
        await self._call("PATCH", path, patch)

    async def put(self, path: str, obj: dict[str, Any]) -> None:
        await self._call("PUT", path, obj)

    async def delete(self, path: str) -> None:
        try:
            await self._call("DELETE", path)
        except ApiError as e:
            if e.status != 404:
                raise


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


_PLURALS = {"ConfigMap": "/api/v1/namespaces/{ns}/configmaps", "Service": "/api/v1/namespaces/{ns}/services",
            "Secret": "/api/v1/namespaces/{ns}/secrets",
            "NetworkPolicy": "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies"}


class JobHandlers:
    """The job, podgroup (bare pods) controller handlers, in kopf's calling convention (keyword arguments)."""

    def __init__(self, api: KubeApi, scheduler_names: tuple[str, ...] = ("volcano",)) -> None:
        self.api = api
        self.scheduler_names = scheduler_names

    # -- paths ---------------------------------------------------------------------------------

    @staticmethod
    def job_path(ns: str, name: str) -> str:
        return f"{JOBS}/namespaces/{ns}/jobs/{name}"

    @staticmethod
    def pods_path(ns: str) -> str:
        return f"/api/v1/namespaces/{ns}/pods"

    @staticmethod
    def pg_path(ns: str, name: str = "") -> str:
        return f"{SCHED}/namespaces/{ns}/podgroups" + (f"/{name}" if name else "")

    # -- handlers ------------------------------------------------------------------------------

    async def job_event(self, body: Mapping[str, Any], request: js.Request | None = None, **_: Any) -> None:
        """Job created or its phase changed (OutOfSync), or a request from a pod or the PodGroup."""
        job = copy.deepcopy(dict(body))
        ns, name = job["metadata"].get("namespace") or "default", job["metadata"]["name"]
        job = mutate_job(job)
        queues = {q["metadata"]["name"]: q for q in (await self.api._call("GET", f"{SCHED}/queues")).get("items") or []}
        problems = validate_job(job, queues)
        if problems:
            # no webhook in front of us: the refusal becomes a condition and an Event, and no pods
            message = volcano_message(problems)
            status = dict(job.get("status") or {})
            status["conditions"] = js.append_condition(status.get("conditions") or [], {
                "status": "Failed", "type": "Invalid", "reason": "ValidationFailed", "message": message,
                "lastTransitionTime": _now()})
            status.setdefault("state", {})["phase"] = js.FAILED
            status["state"]["reason"], status["state"]["message"] = "ValidationFailed", message
            await self.write_status(ns, name, status)
            await self.event(job, "Warning", "ValidationFailed", message)
            return
        pods = {p["metadata"]["name"]: p for p in await self.api.list(self.pods_path(ns), f"{JOB_NAME_KEY}={name}")}
        pg = await self.api.get(self.pg_path(ns, podgroup_name(job)))
        obs = js.Observed(job=job, pods=pods, podgroup=pg, now=_now())
        out = js.reconcile(obs, request or js.Request(event=js.OUT_OF_SYNC, job_uid=job["metadata"].get("uid", "")))
        await self.carry_out(job, out)

    async def pod_phase_changed(self, body: Mapping[str, Any], old: Any, new: Any, **_: Any) -> None:
        pod = dict(body)
        ns = pod["metadata"].get("namespace") or "default"
        name = ((pod["metadata"].get("labels") or {}).get(JOB_NAME_KEY))
        job = await self.api.get(self.job_path(ns, name)) if name else None
        if job is None:
            return
        old_pod = copy.deepcopy(pod)
        old_pod.setdefault("status", {})["phase"] = old
        pods = {p["metadata"]["name"]: p for p in await self.api.list(self.pods_path(ns), f"{JOB_NAME_KEY}={name}")}
        req = js.request_for_pod_update(mutate_job(job), old_pod, pod, pods)
        if req is not None:
            await self.job_event(job, request=req)

    async def pod_deleted(self, body: Mapping[str, Any], **_: Any) -> None:
        ns = body["metadata"].get("namespace") or "default"
        name = (body["metadata"].get("labels") or {}).get(JOB_NAME_KEY)
        job = await self.api.get(self.job_path(ns, name)) if name else None
        if job is not None:
            await self.job_event(job, request=js.request_for_pod_delete(body))

    async def job_deleted(self, body: Mapping[str, Any], **_: Any) -> None:
        """The Job is gone: its pods and PodGroup go with it (what owner-reference GC does in a cluster)."""
        ns, name = body["metadata"].get("namespace") or "default", body["metadata"]["name"]
        for pod in await self.api.list(self.pods_path(ns), f"{JOB_NAME_KEY}={name}"):
            await self.api.delete(f"{self.pods_path(ns)}/{pod['metadata']['name']}")
        await self.api.delete(self.pg_path(ns, podgroup_name(body)))

    async def bare_pod_created(self, body: Mapping[str, Any], **_: Any) -> None:
        """The podgroup controller: a PodGroup ``podgroup-<uid>`` for a pod without one."""
        if not needs_podgroup(body, self.scheduler_names):
            return
        pg = podgroup_for_pod(body)
        ns = pg["metadata"]["namespace"]
        pg["metadata"].pop("uid", None)
        pg["metadata"].pop("creationTimestamp", None)
        await self.api.create(self.pg_path(ns), pg)
        await self.api.patch(f"{self.pods_path(ns)}/{body['metadata']['name']}", {
            "metadata": {"annotations": {"scheduling.k8s.io/group-name": pg["metadata"]["name"]}}})

    # -- carrying out ----------------------------------------------------------------------------

    async def carry_out(self, job: dict[str, Any], out: js.Outcome) -> None:
        ns, name = job["metadata"].get("namespace") or "default", job["metadata"]["name"]
        for ev in out.events:
            await self.event(job, ev.type, ev.reason, ev.message)
        if out.delayed is not None:
            return  # kopf mode arms delays through kopf's own timers (not done here)
        for pod_name in out.delete_pods:
            path = f"{self.pods_path(ns)}/{pod_name}"
            await self.api.patch(path, {"metadata": {"annotations": {OUT_OF_SYNC_KEY: "true"}}})
            await self.api.delete(path)
        for obj in out.apply_objects:
            await self.api.create(_PLURALS[obj["kind"]].format(ns=ns), obj)
        for kind, obj_name in out.delete_objects:
            await self.api.delete(_PLURALS[kind].format(ns=ns) + f"/{obj_name}")
        if out.create_podgroup is not None:
            await self.api.create(self.pg_path(ns), out.create_podgroup)
        if out.update_podgroup is not None:
            await self.api.put(self.pg_path(ns, podgroup_name(job)), out.update_podgroup)
        for pod in out.create_pods:
            await self.api.create(self.pods_path(ns), pod)
        if out.write_status:
            await self.write_status(ns, name, out.status)
        if out.delete_podgroup:
            await self.api.delete(self.pg_path(ns, podgroup_name(job)))

    async def write_status(self, ns: str, name: str, status: dict[str, Any]) -> bool:
        """Re-read, skip when equal, PUT with the read resourceVersion, retry on 409. True if written."""
        path = self.job_path(ns, name)
        for _ in range(CONFLICT_RETRIES):
            current = await self.api.get(path)
            if current is None:
                return False
            if current.get("status") == status:
                return False
            body = {"apiVersion": current.get("apiVersion"), "kind": current.get("kind"),
                    "metadata": {"name": name, "namespace": ns,
                                 "resourceVersion": current["metadata"].get("resourceVersion")},
                    "status": status}
            try:
                await self.api.put(path + "/status", body)
                return True
            except ApiError as e:
                if e.status != 409:
                    raise
        raise kopf.TemporaryError(f"Job {ns}/{name}: status write kept conflicting", delay=1)

    async def event(self, job: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        meta = job["metadata"]
        ns = meta.get("namespace") or "default"
        await self.api.create(f"/api/v1/namespaces/{ns}/events", {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{meta['name']}.", "namespace": ns},
            "involvedObject": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": meta["name"],
                               "namespace": ns, "uid": meta.get("uid", "")},
            "type": type_, "reason": reason, "message": message,
            "source": {"component": "vc-controller-manager"}, "firstTimestamp": _now(), "lastTimestamp": _now()})


def register(registry: kopf.OperatorRegistry, handlers: JobHandlers) -> kopf.OperatorRegistry:
    """Wire the handlers into a kopf registry (not the global one)."""
    kopf.on.create("batch.volcano.sh", "v1alpha1", "jobs", registry=registry)(handlers.job_event)
    kopf.on.field("batch.volcano.sh", "v1alpha1", "jobs", field="status.state.phase",
                  registry=registry)(handlers.job_event)
    kopf.on.delete("batch.volcano.sh", "v1alpha1", "jobs", registry=registry, optional=True)(handlers.job_deleted)
    kopf.on.field("", "v1", "pods", field="status.phase", labels={JOB_NAME_KEY: kopf.PRESENT},
                  registry=registry)(handlers.pod_phase_changed)
    kopf.on.delete("", "v1", "pods", labels={JOB_NAME_KEY: kopf.PRESENT}, registry=registry,
                   optional=True)(handlers.pod_deleted)
    kopf.on.create("", "v1", "pods", registry=registry)(handlers.bare_pod_created)
    return registry
