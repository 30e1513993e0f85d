"""Faults on the real API server: the scheduler killed mid-backlog, the API server restarted under it, its
watches expired by an etcd compaction, and conflicting writes to the objects whose status it keeps.

Each test ends with the invariant "nothing lost" (faults_support.nothing_lost): every pod bound once or
without room anywhere, no node over its allocatable cpu, memory or pods, no GPU over its memory, cores
or split, no pod on a node that is gone, every PodGroup whose pods are all bound Running.  A pod's
spec.nodeName cannot change once set on a real server (a second Binding answers 409), so "bound once"
is checked as: the API server refused no Binding of the restarted scheduler for being bound already
where the test can tell (its own counters, apiserver_request_total).
"""

from __future__ import annotations

import asyncio
import signal

import pytest

from .conftest import Kube, VcschedRunner
from .faults_support import (GPU_MIB, SPLIT, VGPU_CONF, alive, bare_pod, bindings, bound_count, conf_map,
                             create_all, delete_bare_pod, gpu_node, log_lines, more_sessions, nothing_lost, pods, request_counts,
                             restart_apiserver, vgpu_pod)

pytestmark = pytest.mark.asyncio


async def _kill_mid_backlog(kube: Kube, proc, total: int, at_least: int) -> int:
    """SIGKILL ``proc`` once at least ``at_least`` pods are bound; how many were bound when it died."""
    await kube.eventually(lambda: _at_least(kube, at_least), f"{at_least} pods bound before the kill",
                          timeout=300)
    proc.proc.send_signal(signal.SIGSTOP)  # frozen: no new Binding goes out; those on the wire land
    await asyncio.sleep(1)
    bound = await bound_count(kube)
    proc.kill(signal.SIGKILL)
    assert 0 < bound < total, f"the kill was not mid-backlog: {bound} of {total} bound"
    return bound


async def _at_least(kube: Kube, n: int) -> bool:
    return await bound_count(kube) >= n


# -- 1. the scheduler killed mid-backlog -----------------------------------------------------------------


async def test_sigkill_mid_backlog_restarted_binds_everything_once(kube: Kube, vcsched: VcschedRunner):
    """20 nodes with room for exactly 30 pods each, 600 bare pods and 10 more that fit nowhere; the scheduler
    is SIGKILLed once some are bound and started again: the new process rebuilds what is used from the
    bound pods it lists, binds the rest, over-fills no node and binds none of the 10."""
    nodes, per_node, extra = 20, 30, 10
    for i in range(nodes):
        await kube.node(f"n{i:02}", cpu=str(per_node), memory=f"{per_node}Gi", pods=per_node)
    total = nodes * per_node
    before = bindings(kube.cp)
    await create_all(kube, [bare_pod(f"p{i:03}") for i in range(total + extra)])
    first = vcsched.start()
    at_kill = await _kill_mid_backlog(kube, first, total, at_least=total // 6)
    second = vcsched.start()
    await nothing_lost(kube, expect_bound=total, timeout=600)
    # and it stays so: more sessions place none of the 10 and move nothing
    await more_sessions(kube, second, 5)
    await nothing_lost(kube, expect_bound=total)
    after = bindings(kube.cp)
    print(f"\nSIGKILL mid-backlog: {at_kill}/{total} bound at the kill; Bindings accepted "
          f"{after['201'] - before['201']}, refused as bound already {after['409'] - before['409']}")
    assert after["201"] - before["201"] == total
    # the restarted scheduler knew what was bound: it sent no Binding for a pod bound already
    assert after["409"] - before["409"] == 0, log_lines(second, "pod already bound")
    assert alive(second)


async def test_sigkill_mid_backlog_rebuilds_the_gpu_ledger_from_bound_pods(kube: Kube, vcsched: VcschedRunner):
    """The vGPU variant: 10 nodes with 2 GPUs each (40960 MiB, split 10); pods of 10240 MiB, so exactly four
    per GPU; 80 that fit and 8 more.  Killed with a backlog and restarted, the scheduler must take each
    GPU's use from the bound pods' volcano.sh/vgpu-ids-new annotations: no GPU over its memory.

    A vGPU backlog this size is bound in one session, too fast to kill in its middle for sure; so the
    first scheduler binds a first wave, is frozen (SIGSTOP: it binds nothing more), gets the rest of the
    backlog it will never place, and is SIGKILLed."""
    await kube.create(conf_map(VGPU_CONF))
    nodes, gpus_per_node = 10, 2
    for i in range(nodes):
        await gpu_node(kube, f"g{i}", [f"GPU-{i}-{j}" for j in range(gpus_per_node)])
    per_gpu = GPU_MIB // 10240
    assert per_gpu * 25 <= 100 and per_gpu <= SPLIT
    total, extra = nodes * gpus_per_node * per_gpu, 8
    pods = [vgpu_pod(f"v{i:03}", 10240, cores=25) for i in range(total + extra)]
    wave = total // 3
    await create_all(kube, pods[:wave])
    first = vcsched.start()
    await kube.eventually(lambda: _at_least(kube, wave), "the first wave bound")
    first.proc.send_signal(signal.SIGSTOP)
    await create_all(kube, pods[wave:])
    first.kill(signal.SIGKILL)
    at_kill = await bound_count(kube)
    assert at_kill == wave
    second = vcsched.start()
    led = await nothing_lost(kube, expect_bound=total, timeout=600)
    await more_sessions(kube, second, 5)
    led = await nothing_lost(kube, expect_bound=total)
    per = sorted(len(t) for t in led.gpu_used.values())
    print(f"\nvGPU SIGKILL mid-backlog: {at_kill}/{total} bound at the kill; pods per GPU {per}")
    assert per == [per_gpu] * (nodes * gpus_per_node)
    assert alive(second)


# -- 2. the API server restarted under a running scheduler -------------------------------------------------


async def test_apiserver_restart_under_a_running_scheduler(kube: Kube, vcsched: VcschedRunner):
    """The API server stopped for a while (etcd kept) and started again, the scheduler left running: it
    resumes its watches by itself and sees what changed after: a pod deleted (its room is used again),
    new bare pods (the controllers give them PodGroups), a new node (pods that fit only there)."""
    for i in range(4):
        await kube.node(f"n{i}", cpu="4", memory="16Gi")
    await create_all(kube, [bare_pod(f"p{i:02}") for i in range(16)])  # the four nodes' cpu, exactly
    proc = vcsched.start()
    await nothing_lost(kube, expect_bound=16)

    def outage() -> None:  # the scheduler's calls are refused a while: its watches and lists fail
        import time
        time.sleep(3)

    await restart_apiserver(kube.cp, between=outage)
    # at once, while its watches are still backing off: four bound pods go, four new pods need their room
    for i in range(4):
        await delete_bare_pod(kube, f"p{i:02}")
    await create_all(kube, [bare_pod(f"q{i}") for i in range(4)])
    await nothing_lost(kube, expect_bound=16)
    # a node added after the restart: two pods of 4 cpu fit there only
    await kube.node("big", cpu="8", memory="16Gi")
    await create_all(kube, [bare_pod(f"w{i}", cpu="4") for i in range(2)])
    await nothing_lost(kube, expect_bound=18)
    for i in range(2):
        assert (await kube.get(f"/api/v1/namespaces/default/pods/w{i}"))["spec"]["nodeName"] == "big"
    assert alive(proc), "the scheduler exited"
    assert log_lines(proc, "list/watch failed"), "the outage was never seen"


# -- 3. watches expired by an etcd compaction -----------------------------------------------------------------


async def test_watches_expired_by_compaction_relist_and_forget_what_was_deleted(kube: Kube, vcsched: VcschedRunner):
    """Changes the scheduler never got as watch events, then etcd compacted past its resourceVersions: every
    watch it resumes answers 410 Gone, it relists, and its view is the API server's: a node deleted
    meanwhile gets no pod, a pod deleted meanwhile frees its room, a node added meanwhile is used.

    So that no event of those changes reaches it on a connection opened before (the kernel would buffer
    them while it is stopped), it is frozen (SIGSTOP), the API server restarted (its connections die),
    the changes made, the API server restarted again with etcd compacted, and then it resumes (SIGCONT)."""
    await kube.node("n0", cpu="4", memory="16Gi")
    await kube.node("n1", cpu="8", memory="16Gi")
    await create_all(kube, [bare_pod(f"p{i}", node_selector={"kubernetes.io/hostname": "n0"}) for i in range(4)])
    proc = vcsched.start()
    await nothing_lost(kube, expect_bound=4)
    proc.proc.send_signal(signal.SIGSTOP)
    try:
        await restart_apiserver(kube.cp)
        # what it misses: n1 deleted, a pod of the full n0 deleted, a node n2 added, six new pods:
        # one fits n0's freed room, four fill n2, the sixth fits only on n1, which is gone
        await kube.delete("/api/v1/nodes/n1")
        await delete_bare_pod(kube, "p0")
        await kube.node("n2", cpu="4", memory="16Gi")
        await create_all(kube, [bare_pod(f"q{i}") for i in range(6)])
        revision = {}
        await restart_apiserver(kube.cp, between=lambda: revision.setdefault("compacted", kube.cp.compact()))
    finally:
        proc.proc.send_signal(signal.SIGCONT)
    led = await nothing_lost(kube, expect_bound=3 + 5)
    await more_sessions(kube, proc, 5)
    led = await nothing_lost(kube, expect_bound=3 + 5)
    assert not led.orphans, f"pods bound to the deleted node n1: {led.orphans}"
    pending = [p["metadata"]["name"] for p in await pods(kube, "default") if not p["spec"].get("nodeName")]
    assert len(pending) == 1 and pending[0].startswith("q"), pending
    assert log_lines(proc, "watch expired, relisting"), "no watch answered 410 Gone"
    assert alive(proc)


# -- 4. conflicting writes: the 409 path -------------------------------------------------------------------------

JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"
PGS = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups"
NOW = "2024-01-01T00:00:00Z"
# what giving up looks like: the job controller after its requeues (then it terminates the Job), the sink
# dropping a status write; a "job request failed ... kept conflicting" line is a retry, not a give-up
GIVE_UP = ("retry limit reached", "write failed")


def vcjob(name: str, replicas: int) -> dict:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulerName": "volcano", "minAvailable": replicas, "queue": "default",
                     "tasks": [{"name": "worker", "replicas": replicas, "template": {"spec": {
                         "restartPolicy": "Never",
                         "containers": [{"name": "c", "image": "busybox",
                                         "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}]}}


async def _job_pods_running(kube: Kube, name: str, n: int) -> bool:
    """The job's ``n`` pods bound; each bound one given phase Running, as a kubelet would."""
    ps = await kube.list("/api/v1/namespaces/default/pods", labelSelector=f"volcano.sh/job-name={name}")
    for p in ps:
        if p["spec"].get("nodeName") and (p.get("status") or {}).get("phase") != "Running":
            await kube.pod_status("default", p["metadata"]["name"], "Running", containerStatuses=[
                {"name": "c", "ready": True, "restartCount": 0, "image": "busybox", "imageID": "",
                 "state": {"running": {"startedAt": NOW}}}])
    return len(ps) == n and all(p["spec"].get("nodeName") for p in ps)


async def _job_status(kube: Kube, name: str, phase: str, running: int) -> dict | None:
    j = await kube.get(f"{JOBS}/{name}")
    st = (j or {}).get("status") or {}
    return j if (st.get("state") or {}).get("phase") == phase and st.get("running") == running else None


async def _queue_open(kube: Kube) -> bool:
    q = await kube.get("/apis/scheduling.volcano.sh/v1beta1/queues/default")
    return bool(q) and (q.get("status") or {}).get("state") == "Open"


async def test_conflicting_writes_to_job_and_podgroup_are_reread_and_retried(kube: Kube, vcsched: VcschedRunner):
    """While the controllers and the scheduler write a batch Job's status and its PodGroup (the Job status
    PUT and the PodGroup spec PUT carry the resourceVersion they read), the test keeps patching an
    unrelated label on both: the API server answers those writes 409 Conflict (counted by its own
    apiserver_request_total), they are re-read and retried, and the end state is right: the Job scaled
    from 4 to n is Running with n running, its PodGroup asks for n and is Running, nothing given up.
    (The scheduler's own PodGroup status write is a merge PATCH without a resourceVersion: the API server
    applies it to the latest object and never answers it 409.)"""
    import asyncio

    cp = kube.cp
    await kube.node("n0", cpu="16", memory="32Gi")
    proc = vcsched.start()
    await kube.eventually(lambda: _queue_open(kube), "the default queue Open")
    job_409 = request_counts(cp, verb="PUT", resource="jobs", subresource="status")["409"]
    pg_409 = request_counts(cp, verb="PUT", resource="podgroups", subresource="")["409"]
    await kube.create(vcjob("j1", 4))
    stop = asyncio.Event()
    writes = {"job": 0, "podgroup": 0}

    async def noise() -> None:
        """An unrelated writer: a label on the Job and on its PodGroup, over and over (merge patches
        without a resourceVersion, so its own writes always go through)."""
        i = 0
        while not stop.is_set():
            i += 1
            await kube.patch(f"{JOBS}/j1", {"metadata": {"labels": {"noise": str(i)}}})
            writes["job"] += 1
            for pg in await kube.list(PGS):
                if pg["metadata"]["name"].startswith("j1-"):
                    await kube.patch(f"{PGS}/{pg['metadata']['name']}", {"metadata": {"labels": {"noise": str(i)}}})
                    writes["podgroup"] += 1
            await asyncio.sleep(0.005)

    def conflicts() -> tuple[int, int]:
        return (request_counts(cp, verb="PUT", resource="jobs", subresource="status")["409"] - job_409,
                request_counts(cp, verb="PUT", resource="podgroups", subresource="")["409"] - pg_409)

    writer = asyncio.create_task(noise())
    n = 4
    try:
        await kube.eventually(lambda: _job_pods_running(kube, "j1", n), f"j1's {n} pods bound and running")
        await kube.eventually(lambda: _job_status(kube, "j1", "Running", n), f"j1 Running with {n} running")
        # scaled up one at a time: each step has the controller PUT the PodGroup's new spec, make a pod and
        # write the Job's status a few times, and the scheduler bind the pod and write the PodGroup's status;
        # at least two steps, and on until the Job's status write has met a conflict (a guard: 12 replicas)
        while n < 6 or (conflicts()[0] == 0 and n < 12):
            n += 1
            await kube.patch(f"{JOBS}/j1", [{"op": "replace", "path": "/spec/minAvailable", "value": n},
                                            {"op": "replace", "path": "/spec/tasks/0/replicas", "value": n}],
                             content_type="application/json-patch+json")
            await kube.eventually(lambda: _job_pods_running(kube, "j1", n), f"j1's {n} pods bound and running")
            await kube.eventually(lambda: _job_status(kube, "j1", "Running", n), f"j1 Running with {n} running")
    finally:
        stop.set()
        await writer
    job_conflicts, pg_conflicts = conflicts()
    print(f"\nconflicts: scaled 4 -> {n}; {writes} noise writes; Job status PUTs answered 409: {job_conflicts}; "
          f"PodGroup PUTs answered 409: {pg_conflicts}")
    assert job_conflicts > 0, "the test made no conflict: the 409 path never ran"
    pg = next(g for g in await kube.list(PGS) if g["metadata"]["name"].startswith("j1-"))
    assert pg["spec"]["minMember"] == n, pg["spec"]
    assert pg["metadata"]["labels"]["noise"] == str(writes["job"])  # the unrelated writes were kept too
    await nothing_lost(kube, expect_bound=n)
    assert await _job_status(kube, "j1", "Running", n)
    assert not [line for line in proc.output().splitlines() if any(g in line for g in GIVE_UP)], \
        [line for line in proc.output().splitlines() if any(g in line for g in GIVE_UP)][:5]
    assert alive(proc)


async def test_a_scaled_jobs_status_min_available_follows_its_spec(kube: Kube, vcsched: VcschedRunner):
    """Found by the conflict test above, without any conflict: Volcano's syncJob rebuilds the status with
    MinAvailable: job.Spec.MinAvailable on every sync (spec/jobs.md §2.5: "Copy of spec.minAvailable")."""
    await kube.node("n0", cpu="16", memory="32Gi")
    vcsched.start()
    await kube.eventually(lambda: _queue_open(kube), "the default queue Open")
    await kube.create(vcjob("j1", 2))
    await kube.eventually(lambda: _job_pods_running(kube, "j1", 2), "j1's 2 pods bound and running")
    await kube.eventually(lambda: _job_status(kube, "j1", "Running", 2), "j1 Running with 2 running")
    await kube.patch(f"{JOBS}/j1", [{"op": "replace", "path": "/spec/minAvailable", "value": 3},
                                    {"op": "replace", "path": "/spec/tasks/0/replicas", "value": 3}],
                     content_type="application/json-patch+json")
    await kube.eventually(lambda: _job_pods_running(kube, "j1", 3), "j1's 3 pods bound and running")
    j = await kube.eventually(lambda: _job_status(kube, "j1", "Running", 3), "j1 Running with 3 running")
    assert j["status"].get("minAvailable") == 3, j["status"]
