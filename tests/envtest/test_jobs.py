"""batch.volcano.sh Jobs on the real API server, through ``vcsched run`` as shipped (controllers included).

There is no kubelet: the test writes pod status as one would (phase, container statuses) and finishes the
deletion of pods that are Terminating (a kubelet kills the containers, then deletes the pod with grace 0).
"""

from __future__ import annotations

import pytest

from .conftest import Kube, VcschedRunner

pytestmark = pytest.mark.asyncio

JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"
NOW = "2024-01-01T00:00:00Z"


def job(name: str, replicas: int = 2, policies: list | None = None, plugins: dict | None = None,
        **spec: object) -> dict:
    body: dict = {"schedulerName": "volcano", "minAvailable": replicas, "queue": "default",
                  "tasks": [{"name": "worker", "replicas": replicas, "template": {"spec": {
                      "restartPolicy": "Never",
                      "containers": [{"name": "c", "image": "busybox",
                                      "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}],
                  **spec}
    if policies is not None:
        body["policies"] = policies
    if plugins is not None:
        body["plugins"] = plugins
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default"}, "spec": body}


def running() -> dict:
    return {"containerStatuses": [{"name": "c", "ready": True, "restartCount": 0, "image": "busybox",
                                   "imageID": "", "state": {"running": {"startedAt": NOW}}}]}


def terminated(code: int) -> dict:
    return {"containerStatuses": [{"name": "c", "ready": False, "restartCount": 0, "image": "busybox",
                                   "imageID": "", "state": {"terminated": {
                                       "exitCode": code, "reason": "Completed" if code == 0 else "Error",
                                       "startedAt": NOW, "finishedAt": NOW}}}]}


async def job_pods(kube: Kube, name: str) -> list[dict]:
    pods = await kube.list("/api/v1/namespaces/default/pods", labelSelector=f"volcano.sh/job-name={name}")
    return sorted(pods, key=lambda p: p["metadata"]["name"])


async def kubelet(kube: Kube, pods: list[dict]) -> None:
    """What a kubelet does with pods being deleted: kill them and remove them (grace 0)."""
    for p in pods:
        if p["metadata"].get("deletionTimestamp"):
            await kube.delete(f"/api/v1/namespaces/default/pods/{p['metadata']['name']}")


async def bound_pods(kube: Kube, name: str, n: int, exclude: set[str] = frozenset()) -> list[dict] | None:
    """The job's ``n`` live pods once all are bound (none of uids ``exclude``), else None."""
    pods = await job_pods(kube, name)
    await kubelet(kube, pods)
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    if len(live) == n and all(p["spec"].get("nodeName") and p["metadata"]["uid"] not in exclude for p in live):
        return live
    return None


async def job_phase(kube: Kube, name: str, *phases: str) -> dict | None:
    j = await kube.get(f"{JOBS}/{name}")
    return j if j and ((j.get("status") or {}).get("state") or {}).get("phase") in phases else None


async def start(kube: Kube, vcsched: VcschedRunner) -> None:
    """vcsched started, and the default queue Open: a Job submitted to a queue that does not exist or is
    not (yet) Open is refused (by Volcano's admission webhook; vcsched's controller marks it Failed for good)."""
    vcsched.start()
    await kube.eventually(lambda: _queue_open(kube, "default"), "the default queue Open")


async def _queue_open(kube: Kube, name: str) -> bool:
    q = await kube.get(f"/apis/scheduling.volcano.sh/v1beta1/queues/{name}")
    return bool(q) and (q.get("status") or {}).get("state") == "Open"


async def test_a_job_runs_from_creation_to_completed(kube: Kube, vcsched: VcschedRunner):
    await kube.node("n0")
    await start(kube, vcsched)
    created = await kube.create(job("j1", plugins={"env": [], "svc": []}))
    pods = await kube.eventually(lambda: bound_pods(kube, "j1", 2), "the job's two pods made and bound")
    assert [p["metadata"]["name"] for p in pods] == ["j1-worker-0", "j1-worker-1"]
    # its PodGroup, owned by the Job, named after it; every pod says which group it belongs to
    groups = await kube.list("/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups")
    pg = next(g for g in groups if g["metadata"]["name"].startswith("j1-"))
    assert pg["spec"]["minMember"] == 2 and pg["spec"]["queue"] == "default"
    assert pg["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
    for p in pods:
        assert p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == pg["metadata"]["name"]
        assert p["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
    # the env and svc plugins: task index in the environment, hostname/subdomain, the Service and its ConfigMap
    env = {e["name"]: e.get("value") for e in pods[1]["spec"]["containers"][0]["env"]}
    assert env["VK_TASK_INDEX"] == "1" and env["VC_TASK_INDEX"] == "1"
    assert pods[1]["spec"]["hostname"] == "j1-worker-1" and pods[1]["spec"]["subdomain"] == "j1"
    svc = await kube.get("/api/v1/namespaces/default/services/j1")
    assert svc is not None and svc["spec"]["clusterIP"] == "None"
    hosts = await kube.get("/api/v1/namespaces/default/configmaps/j1-svc")
    assert hosts is not None and hosts["data"]["VC_WORKER_NUM"] == "2"
    assert hosts["data"]["VC_WORKER_HOSTS"] == "j1-worker-0.j1,j1-worker-1.j1"
    # the kubelet's part: the pods run, the job is Running
    for p in pods:
        await kube.pod_status("default", p["metadata"]["name"], "Running", **running())
    j = await kube.eventually(lambda: job_phase(kube, "j1", "Running"), "the job Running")
    assert j["status"]["running"] == 2
    # they finish: Completed
    for p in pods:
        await kube.pod_status("default", p["metadata"]["name"], "Succeeded", **terminated(0))
    j = await kube.eventually(lambda: job_phase(kube, "j1", "Completed"), "the job Completed")
    assert j["status"].get("retryCount", 0) == 0
    # finished: the soft kill retains the Succeeded pods; the svc plugin's objects go with the kill
    # (spec/jobs.md §6.4: the counts are rebuilt from the kill alone, so retained pods are not counted)
    assert {p["metadata"]["name"]: p["status"]["phase"] for p in await job_pods(kube, "j1")} == {
        "j1-worker-0": "Succeeded", "j1-worker-1": "Succeeded"}
    await kube.eventually(lambda: _gone(kube, "/api/v1/namespaces/default/services/j1"), "the job's Service deleted")


async def _gone(kube: Kube, path: str) -> bool:
    return await kube.get(path) is None


async def test_a_failed_pod_restarts_the_job(kube: Kube, vcsched: VcschedRunner):
    await kube.node("n0")
    await start(kube, vcsched)
    await kube.create(job("j2", policies=[{"event": "PodFailed", "action": "RestartJob"}], maxRetry=3))
    first = await kube.eventually(lambda: bound_pods(kube, "j2", 2), "the first pods bound")
    for p in first:
        await kube.pod_status("default", p["metadata"]["name"], "Running", **running())
    await kube.eventually(lambda: job_phase(kube, "j2", "Running"), "the job Running")
    await kube.pod_status("default", "j2-worker-0", "Failed", **terminated(1))
    # RestartJob: every pod killed and made again (new uids), bound again; retryCount counts the restart
    old = {p["metadata"]["uid"] for p in first}
    again = await kube.eventually(lambda: bound_pods(kube, "j2", 2, exclude=old), "the pods made again and bound")
    assert [p["metadata"]["name"] for p in again] == ["j2-worker-0", "j2-worker-1"]
    j = await kube.get(f"{JOBS}/j2")
    assert j["status"]["retryCount"] == 1
    for p in again:  # the new pods say which version of the job made them (spec/jobs.md §6.5)
        assert p["metadata"]["annotations"]["volcano.sh/job-version"] == "1"
        assert p["metadata"]["annotations"]["volcano.sh/job-retry-count"] == "1"
    assert await kube.events("default", reason="ExecuteAction", kind="Job", name="j2")
    for p in again:
        await kube.pod_status("default", p["metadata"]["name"], "Running", **running())
    j = await kube.eventually(lambda: job_phase(kube, "j2", "Running"), "the job Running again")
    assert j["status"]["retryCount"] == 1


async def test_a_job_out_of_retries_fails(kube: Kube, vcsched: VcschedRunner):
    """maxRetry 1: the first RestartJob uses the only retry; Restarting with retryCount ≥ maxRetry → Failed."""
    await kube.node("n0")
    await start(kube, vcsched)
    await kube.create(job("j3", policies=[{"event": "PodFailed", "action": "RestartJob"}], maxRetry=1))
    pods = await kube.eventually(lambda: bound_pods(kube, "j3", 2), "the pods bound")
    for p in pods:
        await kube.pod_status("default", p["metadata"]["name"], "Running", **running())
    await kube.eventually(lambda: job_phase(kube, "j3", "Running"), "the job Running")
    await kube.pod_status("default", "j3-worker-0", "Failed", **terminated(2))
    j = await kube.eventually(lambda: _failed_finishing(kube, "j3"), "the job Failed")
    assert j["status"]["retryCount"] == 1


async def _failed_finishing(kube: Kube, name: str) -> dict | None:
    await kubelet(kube, await job_pods(kube, name))
    return await job_phase(kube, name, "Failed")


async def test_a_job_of_more_pods_than_a_cluster_holds_is_refused(kube: Kube, vcsched: VcschedRunner):
    """The API server takes 2,000,000,000 replicas (an int32 of the CRD); vcsched's controller refuses the
    Job (Failed, a condition and a Warning Event, as for what Volcano's webhook refuses) and makes no pod,
    where making them one by one would exhaust its memory."""
    await kube.node("n0")
    await start(kube, vcsched)
    await kube.create(job("huge", replicas=2_000_000_000, minAvailable=1))
    j = await kube.eventually(lambda: job_phase(kube, "huge", "Failed"), "the job refused")
    # the state says why (the CRD's conditions keep only a status and a time)
    message = ("the job asks for more than 150,000 pods, the most a Kubernetes cluster is tested to hold "
               "(2,000,000,000 with task worker)")
    assert j["status"]["state"]["reason"] == "ValidationFailed" and message in j["status"]["state"]["message"]
    events = await kube.eventually(lambda: kube.events("default", reason="ValidationFailed", name="huge"),
                                   "the Warning Event")
    assert events[0]["type"] == "Warning" and message in events[0]["message"]
    assert await job_pods(kube, "huge") == []
    # vcsched still serves: a job of two pods runs
    await kube.create(job("j2"))
    await kube.eventually(lambda: bound_pods(kube, "j2", 2), "the next job's pods made and bound")
