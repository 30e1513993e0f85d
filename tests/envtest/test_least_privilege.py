"""Least privilege on the real API server: ``vcsched run`` (scheduler and controllers) as the user bound only to
the Helm chart's ClusterRole does every kind of write it needs without one refusal: binds with annotations,
evictions (pods/status, DELETE), Events, PodGroup/Queue/Job status, its Lease, the controllers' PodGroups and pods."""

from __future__ import annotations

import asyncio
import contextlib
import urllib.error
import urllib.request
from collections.abc import AsyncIterator

import pytest

from .conftest import USER, Kube, VcschedRunner, condition, forbidden_lines, pod, podgroup, priority_class
from .faults_support import metrics_port
from .test_jobs import _queue_open, job, job_phase
from .test_preempt_reclaim import PREEMPT_CONF, run_bound

pytestmark = pytest.mark.asyncio

LEASE = "/apis/coordination.k8s.io/v1/namespaces/volcano-system/leases/vcsched"


async def test_a_busy_run_as_the_chart_role_is_never_forbidden(kube: Kube, vcsched: VcschedRunner):
    await kube.conf_map(PREEMPT_CONF)
    await kube.ensure(priority_class("envtest-low", 10))
    await kube.ensure(priority_class("envtest-high", 1000))
    await kube.node("n0", cpu="4")
    await kube.create(podgroup("low", 1, priority_class="envtest-low"))
    for i in range(2):
        await kube.create(pod(f"low-{i}", cpu="2", group="low", priority_class="envtest-low"))
    proc = vcsched.start("--leader-elect", user=USER)
    # the Lease (create, then renewals)
    lease = await kube.eventually(lambda: _lease_held(kube), "the Lease held")
    # binds and status writes
    await run_bound(kube, "default", ["low-0", "low-1"])
    await kube.eventually(lambda: _pg_running(kube, "low"), "PodGroup status written")
    await kube.eventually(lambda: _queue_allocated(kube), "queue status written")
    # an eviction: pods/status conditions, an Event, a DELETE; then the preemptor bound
    await kube.create(podgroup("high", 1, priority_class="envtest-high"))
    await kube.create(pod("high-0", cpu="2", group="high", priority_class="envtest-high"))
    await kube.eventually(lambda: kube.bound("default", "high-0"), "the preemptor bound after an eviction")
    assert await kube.events("default", reason="Evict", kind="Pod")
    # the controllers: a Job's PodGroup, pods and status; an unschedulable pod's PodScheduled condition
    await kube.eventually(lambda: _queue_open(kube, "default"), "the default queue Open")
    await kube.create(job("j1", replicas=1))
    await kube.eventually(lambda: _job_pod(kube), "the job's pod made")
    await kube.create(pod("huge", cpu="64"))
    await kube.eventually(lambda: _unschedulable(kube, "huge"), "huge's PodScheduled=False written")
    await kube.eventually(lambda: job_phase(kube, "j1", "Pending", "Running"), "the job's status written")
    # the lease was renewed at least once (retry period 2 s) with nothing refused meanwhile
    await kube.eventually(lambda: _renewed(kube, lease["spec"]["renewTime"]), "a renewal of the Lease")
    assert proc.alive()
    assert forbidden_lines(proc) == []
    assert not any(r.get("level") == "error" for r in proc.records()), [r for r in proc.records()
                                                                        if r.get("level") == "error"]


async def _lease_held(kube: Kube) -> dict | None:
    lease = await kube.get(LEASE)
    return lease if lease and lease["spec"].get("holderIdentity") else None


async def _renewed(kube: Kube, first: str) -> bool:
    lease = await kube.get(LEASE)
    return lease["spec"]["renewTime"] != first


async def _pg_running(kube: Kube, name: str) -> bool:
    pg = await kube.podgroup("default", name)
    return bool(pg) and (pg.get("status") or {}).get("phase") == "Running"


async def _queue_allocated(kube: Kube) -> bool:
    q = await kube.get("/apis/scheduling.volcano.sh/v1beta1/queues/default")
    return bool(((q or {}).get("status") or {}).get("allocated"))


async def _job_pod(kube: Kube) -> bool:
    return bool(await kube.list("/api/v1/namespaces/default/pods", labelSelector="volcano.sh/job-name=j1"))


async def _unschedulable(kube: Kube, name: str) -> bool:
    c = condition(await kube.pod("default", name), "PodScheduled")
    return bool(c) and c.get("status") == "False"


CRB = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/vcsched"


@contextlib.asynccontextmanager
async def binding_removed(kube: Kube) -> AsyncIterator[None]:
    """The ClusterRoleBinding of the user ``vcsched`` deleted for the block, made again after it."""
    binding = await kube.get(CRB)
    assert binding is not None
    restore = {k: binding[k] for k in ("apiVersion", "kind", "roleRef", "subjects")} | {"metadata": {"name": "vcsched"}}
    await kube.delete(CRB)
    try:
        yield
    finally:
        if await kube.get(CRB) is None:
            await kube.client.request("POST", CRB.rsplit("/", 1)[0], body=restore)


async def test_a_permission_lost_mid_run_is_logged_once_counted_and_work_resumes_when_it_returns(
        kube: Kube, vcsched: VcschedRunner):
    """The ClusterRoleBinding removed mid-run: nothing is bound meanwhile, each refused resource and verb is
    logged once (not per pod and session) and counted in vcsched_api_errors_total; once the binding is back,
    every pod is bound without a restart."""
    await kube.node("n0", cpu="8")
    proc = vcsched.start(user=USER)
    await kube.eventually(lambda: _queue_open(kube, "default"), "the default queue Open")
    await kube.eventually(lambda: proc.logged("caches synced") and proc.logged("controllers' caches synced"),
                          "vcsched synced")
    names = [f"p{i}" for i in range(5)]
    async with binding_removed(kube):
        for name in names:
            await kube.create(pod(name))  # bare: the podgroup controller's creates are refused now
        await kube.eventually(lambda: proc.logged("permission denied"), "the denial logged")
        await asyncio.sleep(2)  # many sessions and controller retries while refused
        assert not [n for n in names if (await kube.bound("default", n))]
        denied = [(r["resource"], r["verb"]) for r in proc.logged("permission denied")]
        assert len(denied) == len(set(denied)), denied  # once per resource and verb
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port(proc)}/metrics", timeout=10) as resp:
            text = resp.read().decode()
        assert 'vcsched_api_errors_total{code="403",resource="podgroups",verb="create"}' in text
    for name in names:
        await kube.eventually(lambda: kube.bound("default", name), f"{name} bound once the permission is back")
    assert proc.logged("permission restored") and proc.alive()


async def test_readyz_waits_for_the_caches_healthz_does_not(kube: Kube, vcsched: VcschedRunner):
    """Started before its ClusterRoleBinding exists (a chart whose RBAC lands late): not ready, since nothing
    can be listed, yet alive; ready once the binding is there and the caches have synced."""
    def probe(proc, path: str) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port(proc)}{path}", timeout=10) as resp:
                return resp.status
        except urllib.error.HTTPError as e:
            return e.code

    async with binding_removed(kube):
        proc = vcsched.start(user=USER)
        await kube.eventually(lambda: metrics_port(proc), "serving")
        await kube.eventually(lambda: proc.logged("permission denied"), "lists refused")
        assert probe(proc, "/readyz") == 503 and probe(proc, "/healthz") == 200
    await kube.eventually(lambda: probe(proc, "/readyz") == 200, "ready once the caches have synced", timeout=120)
    assert proc.logged("caches synced") and probe(proc, "/healthz") == 200
