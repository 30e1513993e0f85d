"""The controllers in Kubernetes mode against the kmock API server (tests/kube/apiserver.py).

Most tests deliver the API server's watch events to the indexes and handlers one by one, in order
(``Feed``), so each step is deterministic; some run them under the informers (``run_controllers``).
The ``api`` fixture checks every request against the access tables.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest
import pytest_asyncio

from vcsched.kube.components import WATCHED, parse_components, run_controllers
from vcsched.kube.controllers import ControllerOptions, Controllers

from .apiserver import ApiServer
from .conftest import CONTROLLER_AGENT, client_for, eventually, queue, verb_of

BATCH, SCHED, BUS = "batch.volcano.sh", "scheduling.volcano.sh", "bus.volcano.sh"


def job(name: str = "j1", replicas: int = 2, policies: list | None = None, **spec) -> dict:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "ns"},
            "spec": {"policies": policies if policies is not None else [{"event": "PodFailed", "action": "RestartJob"}],
                     "tasks": [{"name": "worker", "replicas": replicas, "template": {"spec": {"containers": [
                         {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}], **spec}}


def command(name: str, action: str, kind: str, target: str, ns: str = "ns") -> dict:
    api_version = "batch.volcano.sh/v1alpha1" if kind == "Job" else "scheduling.volcano.sh/v1beta1"
    return {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command", "metadata": {"name": name, "namespace": ns},
            "action": action, "target": {"apiVersion": api_version, "kind": kind, "name": target}}


class Feed:
    """Delivers the API server's events since the last call to the indexes and then the handlers, until
    none is left, one event at a time: what the informers do (the same listers and handlers), without
    their concurrency across objects."""

    def __init__(self, api: ApiServer, ctl: Controllers) -> None:
        self.api, self.ctl, self.pos = api, ctl, 0
        listers = {lister.name: lister for lister in ctl.listers}
        self.watched = {(group, plural): (listers.get(index) if index else None,
                                          getattr(ctl, handler) if handler else None)
                        for group, _, plural, index, handler in WATCHED}

    def index(self, group: str, plural: str, type_: str, obj: dict) -> None:
        lister, _ = self.watched[(group, plural)]
        if lister is None:
            return
        if type_ == "DELETED":
            lister.unindex_object(obj)
        else:
            lister.index_object(obj)

    async def __call__(self) -> None:
        """Until quiet: the events, then the queue syncs they asked for (whose writes are events again)."""
        while True:
            while self.pos < len(self.api.history):
                _, kind, event = self.api.history[self.pos]
                self.pos += 1
                if kind in self.watched:
                    self.index(*kind, event["type"], event["object"])
                    lister, handler = self.watched[kind]
                    if lister is not None:
                        lister.seen(event["type"], event["object"])
                    if handler is not None:
                        await handler(type=event["type"], body=event["object"])
            await self.ctl.queue_syncs_done()
            if self.pos == len(self.api.history):
                return


@pytest_asyncio.fixture
async def env(api: ApiServer):
    client = client_for(api, agent=CONTROLLER_AGENT)
    ctl = Controllers(client, ControllerOptions(max_requeue=2, requeue_base=0.001))
    api.put(queue("default"))
    api.put(queue("root"))
    feed = Feed(api, ctl)
    yield api, ctl, feed
    await ctl.close()
    await client.close()


def pods(api: ApiServer) -> list[str]:
    return sorted(p["metadata"]["name"] for p in api.all("", "pods"))


def status(api: ApiServer, name: str = "j1") -> dict:
    return api.get(BATCH, "jobs", "ns", name).get("status") or {}


def events(api: ApiServer) -> list[tuple[str, str, str]]:
    return [(e["type"], e["reason"], e["message"]) for e in api.all("", "events")]


async def admit(api: ApiServer, feed: Feed, name: str = "j1") -> str:
    """The scheduler's part: the Job's PodGroup goes Inqueue. Returns its name."""
    await feed()
    pg = next(p for p in api.all(SCHED, "podgroups") if p["metadata"]["name"].startswith(f"{name}-"))
    api.update(SCHED, "podgroups", "ns", pg["metadata"]["name"], {"status": {"phase": "Inqueue"}})
    await feed()
    return pg["metadata"]["name"]


def set_phase(api: ApiServer, pod: str, phase: str, exit_code: int | None = None) -> None:
    st: dict = {"phase": phase}
    if exit_code is not None:
        st["containerStatuses"] = [{"name": "c", "restartCount": 0, "state": {"terminated": {"exitCode": exit_code}}}]
    api.update("", "pods", "ns", pod, {"status": st})


@pytest.mark.asyncio
async def test_job_created_gives_podgroup_then_pods_only_once_inqueue(env):
    api, ctl, feed = env
    created = api.put(job())
    await feed()
    pg_name = f"j1-{created['metadata']['uid']}"
    pg = api.get(SCHED, "podgroups", "ns", pg_name)
    assert pg["spec"]["minMember"] == 2 and pg["spec"]["queue"] == "default"
    assert pg["metadata"]["ownerReferences"][0]["kind"] == "Job"
    assert status(api)["state"]["phase"] == "Pending"
    assert pods(api) == []  # the gate: PodGroup phase empty
    api.update(SCHED, "podgroups", "ns", pg_name, {"status": {"phase": "Pending"}})
    await feed()
    assert pods(api) == []
    api.update(SCHED, "podgroups", "ns", pg_name, {"status": {"phase": "Inqueue"}})  # the PodGroup watch → sync
    await feed()
    assert pods(api) == ["j1-worker-0", "j1-worker-1"]
    ann = api.get("", "pods", "ns", "j1-worker-1")["metadata"]["annotations"]
    assert ann["scheduling.k8s.io/group-name"] == pg_name and ann["volcano.sh/task-index"] == "1"
    # the status went through jobs/status, never through a write to the Job itself
    writes = [r for r in api.requests if r.resource and r.resource.plural == "jobs" and r.method.value != "GET"]
    assert writes and all(r.subresource == "status" and r.method.value == "PUT" for r in writes)


@pytest.mark.asyncio
async def test_pod_failure_restarts_the_job_until_max_retry_then_failed(env):
    api, ctl, feed = env
    api.put(job(maxRetry=2))
    for attempt in range(1, 3):
        await admit(api, feed)
        for p in pods(api):
            set_phase(api, p, "Running")
        await feed()
        assert status(api)["state"]["phase"] == "Running"
        set_phase(api, "j1-worker-0", "Failed", exit_code=1)
        await feed()
        st = status(api)
        assert st["retryCount"] == attempt
        if attempt == 1:
            assert st["state"]["phase"] in ("Restarting", "Pending")
            assert pods(api) == []  # killed; they come back once the new PodGroup is Inqueue
    assert status(api)["state"]["phase"] == "Failed"  # retryCount 2 ≥ maxRetry 2
    assert ("Normal", "ExecuteAction", "Start to execute action RestartJob ") in events(api)


@pytest.mark.asyncio
async def test_job_deleted_takes_its_pods_and_podgroup(env):
    api, ctl, feed = env
    api.put(job())
    await admit(api, feed)
    assert pods(api) == ["j1-worker-0", "j1-worker-1"]
    api.remove(BATCH, "jobs", "ns", "j1")
    await feed()
    assert pods(api) == [] and api.all(SCHED, "podgroups") == []


@pytest.mark.asyncio
@pytest.mark.parametrize("spec, message", [
    ({"queue": "nope"}, 'unable to find job queue: queue.scheduling.volcano.sh "nope" not found;'),
    ({"minAvailable": 5}, "job 'minAvailable' should not be greater than total replicas in tasks;"),
])
async def test_invalid_job_gets_volcanos_condition_and_event_and_no_pods(env, spec, message):
    api, ctl, feed = env
    api.put(job("bad", **spec))
    await feed()
    st = status(api, "bad")
    assert message in st["conditions"][-1]["message"] and st["state"]["phase"] == "Failed"
    assert any(t == "Warning" and r == "ValidationFailed" and message in m for t, r, m in events(api))
    assert pods(api) == [] and api.all(SCHED, "podgroups") == []
    await ctl.on_job(type="MODIFIED", body={**api.get(BATCH, "jobs", "ns", "bad"), "spec": {**spec, "x": 1}})
    assert pods(api) == [] and api.all(SCHED, "podgroups") == []  # refused for good


@pytest.mark.asyncio
async def test_a_job_of_more_pods_than_a_cluster_holds_is_refused_and_not_scaled_past_it(env):
    """2,000,000,000 replicas (an int32 the API server takes) would be as many pod manifests made in the
    controller's memory: refused as the webhook's refusals are; a running job scaled past the limit keeps
    its pods and gets a Warning."""
    api, ctl, feed = env
    api.put(job("huge", replicas=2_000_000_000))
    await feed()
    st = status(api, "huge")
    message = "the job asks for more than 150,000 pods, the most a Kubernetes cluster is tested to hold"
    assert st["state"]["phase"] == "Failed" and message in st["state"]["message"]
    assert pods(api) == [] and api.all(SCHED, "podgroups") == []
    api.put(job())
    await admit(api, feed)
    assert pods(api) == ["j1-worker-0", "j1-worker-1"]
    api.update(BATCH, "jobs", "ns", "j1", {"spec": {"tasks": job(replicas=150_001)["spec"]["tasks"]}})
    await feed()
    assert pods(api) == ["j1-worker-0", "j1-worker-1"]
    assert any(t == "Warning" and r == "ValidationFailed" and "(150,001 with task worker)" in m
               for t, r, m in events(api))


@pytest.mark.asyncio
async def test_status_write_rereads_and_retries_on_conflict_and_is_idempotent(env):
    api, ctl, feed = env
    api.put(job())
    fault = api.fail(lambda r: r.method.value == "PUT" and r.subresource == "status", status=409)
    assert await ctl.write_status("ns", "j1", {"state": {"phase": "Pending"}})
    assert fault.hits == 1 and status(api) == {"state": {"phase": "Pending"}}
    puts = sum(1 for r in api.requests if r.method.value == "PUT")
    assert not await ctl.write_status("ns", "j1", {"state": {"phase": "Pending"}})  # same status: no write
    assert sum(1 for r in api.requests if r.method.value == "PUT") == puts
    gets = [r for r in api.requests if r.method.value == "GET" and r.name == "j1"]
    assert len(gets) == 2  # read (not stored yet), re-read after the 409; the idempotent call reads the store


@pytest.mark.asyncio
async def test_a_policy_timeout_is_a_timer_cancelled_when_the_pod_runs_and_fires_otherwise(env):
    api, ctl, feed = env
    api.put(job(policies=[{"event": "PodFailed", "action": "AbortJob", "timeout": "1h"}]))
    await admit(api, feed)
    for p in pods(api):
        set_phase(api, p, "Running")
    await feed()
    set_phase(api, "j1-worker-0", "Failed", exit_code=3)
    await feed()
    assert [a for a, _ in ctl.timers["ns/j1"]] == ["AbortJob"]
    assert ("Normal", "ExecuteAction", "Execute action AbortJob after 1h0m0s") in events(api)
    assert status(api)["state"]["phase"] == "Running"  # delayed, not done
    set_phase(api, "j1-worker-0", "Running")  # the pod runs again: the delayed action is cancelled
    await feed()
    assert ctl.timers == {}
    # a short timeout fires on its own
    api.put(job("j2", policies=[{"event": "PodFailed", "action": "AbortJob", "timeout": "10ms"}]))
    await admit(api, feed, "j2")
    set_phase(api, "j2-worker-0", "Failed", exit_code=3)
    await feed()

    async def aborting() -> bool:
        await feed()
        return status(api, "j2")["state"]["phase"] in ("Aborting", "Aborted")

    await eventually_async(aborting, "the delayed AbortJob ran")


async def eventually_async(cond, what: str) -> None:
    """``eventually`` for an async condition (a guard against hangs only)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 20
    while not await cond():
        assert loop.time() < deadline, f"never happened: {what}"
        await asyncio.sleep(0.01)


@pytest.mark.asyncio
async def test_commands_abort_and_resume_a_job_and_are_deleted_first(env):
    api, ctl, feed = env
    api.put(job())
    await admit(api, feed)
    api.put(command("c1", "AbortJob", "Job", "j1"))
    await feed()
    assert api.all(BUS, "commands") == []
    assert status(api)["state"]["phase"] in ("Aborting", "Aborted") and pods(api) == []
    assert ("Normal", "CommandIssued", "Start to execute command AbortJob, and clean it up to make sure executed "
            "not more than once.") in events(api)
    await feed()
    assert status(api)["state"]["phase"] == "Aborted"
    api.put(command("c2", "ResumeJob", "Job", "j1"))
    await feed()
    assert api.all(BUS, "commands") == []
    assert status(api)["retryCount"] == 1 and status(api)["state"]["phase"] in ("Restarting", "Pending")


@pytest.mark.asyncio
async def test_ttl_deletes_a_finished_job(env):
    api, ctl, feed = env
    created = api.put(job(ttlSecondsAfterFinished=0))
    api.update(BATCH, "jobs", "ns", "j1", {"status": {"state": {
        "phase": "Completed", "lastTransitionTime": "2026-01-01T00:00:00Z"}}})
    api.put(job("keep", ttlSecondsAfterFinished=3600))
    api.update(BATCH, "jobs", "ns", "keep", {"status": {"state": {
        "phase": "Completed", "lastTransitionTime": "2999-01-01T00:00:00Z"}}})
    await feed()
    await eventually(lambda: api.get(BATCH, "jobs", "ns", "j1") is None, "the finished job deleted")
    deletes = [r for r in api.requests if r.method.value == "DELETE" and r.name == "j1"]
    assert deletes[0].data["preconditions"]["uid"] == created["metadata"]["uid"]
    assert deletes[0].data["propagationPolicy"] == "Foreground"
    assert api.get(BATCH, "jobs", "ns", "keep") is not None


async def run(api: ApiServer, body, watch_timeout: float = 300.0, controllers: type[Controllers] = Controllers):
    """``run_controllers`` (informers: indexes, then the handlers) around ``await body(ctl)``;
    ``controllers``: the class to run (a test's subclass)."""
    client = client_for(api, agent=CONTROLLER_AGENT)
    ctl = controllers(client, ControllerOptions())
    before = asyncio.all_tasks()
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(run_controllers(client, stop, ready=ready, ctl=ctl, watch_timeout=watch_timeout))
    try:
        await eventually(ready.is_set, "the initial lists")
        await body(ctl)
    finally:
        stop.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 20)
        await client.close()
    assert task.done() and not task.cancelled()
    left = [t for t in asyncio.all_tasks() - before if not t.done()]
    assert [t for t in left if "/scheduler/kube/" in t.get_coro().cr_code.co_filename] == []  # ours all ended


def reads(api: ApiServer, agent: str = CONTROLLER_AGENT) -> list[str]:
    """The GET and LIST requests (watches left out) of the controllers' client."""
    return [f"{verb_of(r)} {r.url.path}" for r in api.requests
            if r.method.value == "GET" and r.resource and r.params.get("watch") != "true"
            and r.headers.get("User-Agent", "").startswith(agent)
            and len(r.url.path.strip("/").split("/")) > (2 if r.url.path.startswith("/api/") else 3)]  # not discovery


INITIAL_LISTS = ["list /api/v1/namespaces/volcano-system/configmaps", "list /api/v1/nodes",
                 "list /api/v1/pods", "list /apis/apps/v1/replicasets", "list /apis/apps/v1/statefulsets",
                 "list /apis/batch.volcano.sh/v1alpha1/jobs", "list /apis/bus.volcano.sh/v1alpha1/commands",
                 "list /apis/scheduling.k8s.io/v1/priorityclasses",
                 "list /apis/scheduling.volcano.sh/v1beta1/podgroups",
                 "list /apis/scheduling.volcano.sh/v1beta1/queues",
                 "list /apis/topology.volcano.sh/v1alpha1/hypernodes"]  # nodes to configmaps: HyperNode discovery


@pytest.mark.asyncio
async def test_the_pods_of_a_replicaset_share_one_podgroup_inheriting_its_annotations(env):
    api, ctl, feed = env
    rs = api.put({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                  "metadata": {"name": "web-1", "namespace": "ns", "annotations": {
                      "scheduling.volcano.sh/group-min-member": "2", "volcano.sh/custom": "v",
                      "deployment.kubernetes.io/revision": "1"}}})
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": rs["metadata"]["uid"],
           "controller": True}
    for name in ("web-1-a", "web-1-b"):
        api.put({"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": name, "namespace": "ns", "ownerReferences": [ref]},
                 "spec": {"schedulerName": "volcano", "containers": [
                     {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}})
    await feed()
    (pg,) = api.all(SCHED, "podgroups")
    assert pg["metadata"]["name"] == f"podgroup-{rs['metadata']['uid']}"
    assert pg["metadata"]["ownerReferences"] == [ref]
    assert pg["spec"]["minMember"] == 2 and pg["spec"]["minResources"]["cpu"] == "2"
    assert pg["metadata"]["annotations"] == {"volcano.sh/custom": "v"}
    for name in ("web-1-a", "web-1-b"):
        assert api.get("", "pods", "ns", name)["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == \
            pg["metadata"]["name"]
    # the owner comes from the ReplicaSets' store; the second pod finds the PodGroup there: no second create
    assert [r for r in api.requests if r.resource and r.resource.plural == "replicasets"] == []
    assert len([r for r in api.requests if r.method.value == "POST" and r.resource.plural == "podgroups"]) == 1


@pytest.mark.asyncio
async def test_a_statefulset_update_brings_its_podgroup_up_to_date_and_scaled_to_zero_removes_it(env):
    """WorkLoadSupport: StatefulSet events make or update the PodGroup of its first pod of the current
    revision still without a group, and delete it at 0 replicas."""
    api, ctl, feed = env
    sts = api.put({"apiVersion": "apps/v1", "kind": "StatefulSet",
                   "metadata": {"name": "db", "namespace": "ns",
                                "annotations": {"scheduling.volcano.sh/group-min-member": "2"}},
                   "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "db"}}},
                   "status": {"updateRevision": "db-r1"}})
    uid = sts["metadata"]["uid"]
    ref = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": uid, "controller": True}

    def db_pod(name: str, revision: str) -> dict:
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "ns", "ownerReferences": [ref],
                             "labels": {"app": "db", "controller-revision-hash": revision}},
                "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "x"}]}}

    api.put(db_pod("db-0", "db-r1"))
    await feed()
    assert api.get(SCHED, "podgroups", "ns", f"podgroup-{uid}")["spec"]["minMember"] == 2
    # a new revision with another group-min-member: its pod's add finds the PodGroup and only annotates the
    # pod; the StatefulSet's update (seen while that pod had no group yet) updates the PodGroup
    api.put(db_pod("db-1", "db-r2"))
    api.update("apps", "statefulsets", "ns", "db", {"metadata": {"annotations": {
        "scheduling.volcano.sh/group-min-member": "3"}}, "status": {"updateRevision": "db-r2"}})
    await feed()
    pg = api.get(SCHED, "podgroups", "ns", f"podgroup-{uid}")
    assert pg["spec"]["minMember"] == 3
    assert api.get("", "pods", "ns", "db-1")["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == \
        f"podgroup-{uid}"
    api.update("apps", "statefulsets", "ns", "db", {"spec": {"replicas": 0}})
    await feed()
    assert api.get(SCHED, "podgroups", "ns", f"podgroup-{uid}") is None


@pytest.mark.asyncio
async def test_a_pod_whose_owner_cannot_be_read_gets_min_member_one(env):
    api, ctl, feed = env
    ref = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "gone", "uid": "sts-uid", "controller": True}
    api.put({"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": "db-0", "namespace": "ns", "ownerReferences": [ref]},
             "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "x"}]}})
    await feed()
    pg = api.get(SCHED, "podgroups", "ns", "podgroup-sts-uid")
    assert pg["spec"]["minMember"] == 1 and pg["metadata"]["annotations"] == {}


@pytest.mark.asyncio
async def test_the_handlers_start_after_the_initial_lists(api):
    api.put(queue("default"))
    api.put(queue("root"))
    early = api.put(job("early"))  # there before the controllers: seen in the initial list

    async def body(ctl) -> None:
        pg_name = f"early-{early['metadata']['uid']}"
        await eventually(lambda: api.get(SCHED, "podgroups", "ns", pg_name) is not None, "the PodGroup")
        api.update(SCHED, "podgroups", "ns", pg_name, {"status": {"phase": "Inqueue"}})
        await eventually(lambda: pods(api) == ["early-worker-0", "early-worker-1"], "the pods")
        await eventually(lambda: (status(api, "early").get("state") or {}).get("phase") == "Pending", "the status")

    await run(api, body)
    watched = {r.resource.plural for r in api.requests if r.resource and r.params.get("watch") == "true"}
    assert watched == {"jobs", "pods", "podgroups", "queues", "commands", "replicasets", "statefulsets",
                       "priorityclasses", "nodes", "hypernodes", "configmaps"}
    # one initial list per kind; every later read came from the indexes
    assert sorted(reads(api)) == INITIAL_LISTS
    # no handler ran before every kind was listed
    sent = [(r.headers.get("User-Agent", ""), r) for r in api.requests]
    first_write = next(i for i, (agent, r) in enumerate(sent) if agent.startswith(CONTROLLER_AGENT)
                       and r.method.value != "GET")
    listed = {r.resource.plural for agent, r in sent[:first_write] if agent.startswith(CONTROLLER_AGENT)
              and r.resource and r.method.value == "GET" and r.params.get("watch") != "true" and r.name is None}
    assert listed == {"jobs", "pods", "podgroups", "queues", "commands", "replicasets", "statefulsets",
                      "priorityclasses", "nodes", "hypernodes", "configmaps"}


@pytest.mark.asyncio
@pytest.mark.parametrize("replicas", [4, 24])
async def test_a_job_reconciled_on_pod_events_reads_nothing_from_the_api(api, replicas):
    """Volcano's listers: a request reads the informers' indexes, so pod events cost no GET/LIST however many pods."""
    api.put(queue("default"))
    api.put(queue("root"))

    api.put({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
             "value": 1000})

    async def body(ctl) -> None:
        spec = job(replicas=replicas)
        spec["spec"]["tasks"][0]["template"]["spec"]["priorityClassName"] = "high"  # read from its store too
        created = api.put(spec)
        pg_name = f"j1-{created['metadata']['uid']}"
        await eventually(lambda: api.get(SCHED, "podgroups", "ns", pg_name) is not None, "the PodGroup")
        api.update(SCHED, "podgroups", "ns", pg_name, {"status": {"phase": "Inqueue"}})
        await eventually(lambda: len(pods(api)) == replicas, "the pods")
        for p in pods(api):
            set_phase(api, p, "Running")
        await eventually(lambda: (status(api).get("state") or {}).get("phase") == "Running"
                         and status(api).get("running") == replicas, "the job Running")

    await run(api, body)
    # one initial list per kind and nothing else, for 4 pods as for 24: before the indexes, each of the
    # 2×replicas pod events cost a GET of the Job, a LIST of its pods and a GET of its PodGroup. (Our
    # status writes go with the stored resourceVersion, which our own last write refreshed: no 409, no re-read.)
    assert sorted(reads(api)) == INITIAL_LISTS


@pytest.mark.asyncio
async def test_a_pod_made_behind_the_stores_back_is_seen_once_the_watch_brings_it(api):
    """No lost pods: a Job's pod created by someone else while the watches are down (and their history
    compacted: 410, relist) is counted once the relist brings it."""
    api.put(queue("default"))
    api.put(queue("root"))

    async def body(ctl) -> None:
        created = api.put(job(replicas=2))
        pg_name = f"j1-{created['metadata']['uid']}"
        await eventually(lambda: api.get(SCHED, "podgroups", "ns", pg_name) is not None, "the PodGroup")
        api.update(SCHED, "podgroups", "ns", pg_name, {"status": {"phase": "Inqueue"}})
        await eventually(lambda: status(api).get("pending") == 2, "two pods pending")
        worker = api.get("", "pods", "ns", "j1-worker-1")
        api.drop_watches()
        api.remove("", "pods", "ns", "j1-worker-1")
        api.compact()
        # the same pod, made again by someone else: the controllers never wrote it
        api.put({**worker, "metadata": {k: v for k, v in worker["metadata"].items()
                                        if k not in ("uid", "resourceVersion")},
                 "status": {"phase": "Running"}})
        await eventually(lambda: status(api).get("running") == 1, "the pod made behind our back, counted")

    await run(api, body, watch_timeout=300.0)
    assert len([r for r in reads(api) if r.startswith("list")]) > 8  # the relists after 410


def test_components_flag_is_validated():
    assert parse_components("scheduler,controllers") == ("scheduler", "controllers")
    assert parse_components("controllers") == ("controllers",)
    for bad in ("", "sched", "scheduler,nope"):
        with pytest.raises(ValueError, match="--components"):
            parse_components(bad)


@contextlib.asynccontextmanager
async def components(api: ApiServer, runtime=None, elector=None, listen: str | None = None):
    """``vcsched run`` (``run_components``) until the block ends, then stopped: it must exit 0.
    ``runtime`` / ``elector``: built from the scheduler's client (None: no scheduler / no Lease).
    Yields the runtime."""
    from vcsched.kube.components import run_components

    client, ctl_client = client_for(api), client_for(api, agent=CONTROLLER_AGENT)
    rt = runtime(client) if runtime else None
    stop = asyncio.Event()
    task = asyncio.create_task(run_components(client, ctl_client, rt, stop, ControllerOptions(),
                                              elector(client) if elector else None, listen=listen))
    try:
        yield rt
    finally:
        stop.set()
        code = await asyncio.wait_for(task, 20)
        await client.close()
        await ctl_client.close()
    assert code == 0


@pytest.mark.asyncio
async def test_scheduler_and_controllers_in_one_process(api):
    """``vcsched run``'s default: a Job goes PodGroup → Inqueue (our scheduler) → pods (our controllers) → bound."""
    from vcsched.kube.runtime import RunOptions, Runtime

    from .conftest import FAST, cluster

    cluster(api)
    async with components(api, runtime=lambda client: Runtime(client, RunOptions(**FAST))):
        api.put(job())
        await eventually(lambda: sorted(b[1] for b in api.bindings) == ["j1-worker-0", "j1-worker-1"],
                         "both pods bound")
        for p in pods(api):  # the kubelet's part
            set_phase(api, p, "Running")
        await eventually(lambda: status(api).get("state", {}).get("phase") == "Running", "the job Running")
        first = api.get("", "pods", "ns", "j1-worker-0")["metadata"]["uid"]
        set_phase(api, "j1-worker-0", "Failed", exit_code=1)  # PodFailed → RestartJob: kill, new PodGroup,
        await eventually(lambda: len(api.bindings) == 4, "the pods re-created and bound again")  # Inqueue, pods
        assert status(api)["retryCount"] == 1
        again = api.get("", "pods", "ns", "j1-worker-0")
        assert again["metadata"]["uid"] != first and again["metadata"]["annotations"]["volcano.sh/job-version"] == "1"


def test_run_refuses_a_bad_components_value(capsys):
    import argparse

    from vcsched.kube.command import add_parser

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["run", "--components", "scheduler,webhook"])
    assert args.run(args) == 2  # refused before any cluster configuration is looked for
    err = capsys.readouterr().err
    assert "--components" in err and "webhook" in err and "Traceback" not in err


@pytest.mark.asyncio
async def test_a_volume_claim_becomes_a_pvc_owned_by_the_job_and_mounted_in_its_pods(env):
    api, ctl, feed = env
    claim = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    created = api.put(job(volumes=[{"mountPath": "/data", "volumeClaim": claim}]))
    pg = await admit(api, feed)
    (pvc,) = api.all("", "persistentvolumeclaims")
    name = pvc["metadata"]["name"]
    assert name.startswith("j1-pvc-") and len(name) == len("j1-pvc-") + 12 and pvc["spec"] == claim
    assert pvc["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
    assert api.get(BATCH, "jobs", "ns", "j1")["spec"]["volumes"][0]["volumeClaimName"] == name
    assert status(api)["controlledResources"][f"volume-pvc-{name}"] == name
    assert pg and pods(api) == ["j1-worker-0", "j1-worker-1"]
    pod = api.get("", "pods", "ns", "j1-worker-0")
    assert [v["persistentVolumeClaim"]["claimName"] for v in pod["spec"]["volumes"]] == [name]
    assert pod["spec"]["containers"][0]["volumeMounts"][0]["mountPath"] == "/data"


@pytest.mark.asyncio
async def test_a_missing_volume_claim_name_holds_the_job_back_with_volcanos_message(env):
    api, ctl, feed = env
    api.put(job(volumes=[{"mountPath": "/in", "volumeClaimName": "missing"}]))
    await feed()
    msg = "Failed to create PVC, err: pvc missing is not found, the job will be in the Pending state until the PVC is created"
    assert ("Warning", "PVCError", msg) in events(api)
    assert api.all(SCHED, "podgroups") == [] and pods(api) == []


@pytest.mark.asyncio
async def test_close_counts_the_stored_podgroups_whose_events_are_still_queued(env):
    api, ctl, feed = env
    await feed()
    q1 = api.put(queue("q1"))
    pg = api.put({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                  "metadata": {"name": "pg1", "namespace": "ns"}, "spec": {"minMember": 1, "queue": "q1"}})
    feed.index(SCHED, "queues", "ADDED", q1)
    feed.index(SCHED, "podgroups", "ADDED", pg)  # indexed; its handler has not run yet
    cmd = api.put(command("close", "CloseQueue", "Queue", "q1"))
    await ctl.on_command(type="ADDED", body=cmd)
    assert api.get(SCHED, "queues", "", "q1")["status"]["state"] == "Closing"
    assert [r for r in api.requests if r.method.value == "GET"] == []  # the queue controller reads the indexes


@pytest.mark.asyncio
async def test_a_podgroup_gone_unknown_raises_the_unknown_event(env):
    api, ctl, feed = env
    api.put(job(policies=[{"event": "Unknown", "action": "AbortJob"}]))
    pg = await admit(api, feed)
    for p in pods(api):
        set_phase(api, p, "Running")
    await feed()
    api.update(SCHED, "podgroups", "ns", pg, {"status": {"phase": "Unknown"}})
    await feed()
    assert status(api)["state"]["phase"] in ("Aborting", "Aborted") and pods(api) == []


@pytest.mark.asyncio
async def test_api_errors_are_retried_pods_podgroups_and_commands(env):
    api, ctl, feed = env
    api.fail(lambda r: r.method.value == "POST" and r.resource.plural == "pods", status=500)
    api.fail(lambda r: r.method.value == "POST" and r.resource.plural == "podgroups", status=503)
    api.fail(lambda r: r.method.value == "DELETE" and r.resource.plural == "commands", status=500)
    api.put(job())
    await admit(api, feed)
    assert pods(api) == ["j1-worker-0", "j1-worker-1"]
    bare = api.put({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
                    "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "x"}]}})
    api.put(command("c1", "AbortJob", "Job", "j1"))
    await feed()
    assert api.get(SCHED, "podgroups", "ns", f"podgroup-{bare['metadata']['uid']}") is not None
    assert api.all(BUS, "commands") == [] and status(api)["state"]["phase"] in ("Aborting", "Aborted")
    assert all(f.hits == 1 for f in api.faults)


@pytest.mark.asyncio
async def test_controllers_alone_with_their_own_lease(api):
    """``--components controllers --leader-elect``: they run while holding ``<lease>-controllers``."""
    from vcsched.kube.leader import LeaderElector

    api.put(queue("default"))
    async with components(api, elector=lambda client: LeaderElector(
            client, "volcano-system", "vcsched-controllers", "me",
            lease_duration=1.0, renew_deadline=0.6, retry_period=0.1)):
        api.put(job())
        await eventually(lambda: len(api.all(SCHED, "podgroups")) == 1, "the PodGroup")
        lease = api.get("coordination.k8s.io", "leases", "volcano-system", "vcsched-controllers")
        assert lease["spec"]["holderIdentity"] == "me"
    lease = api.get("coordination.k8s.io", "leases", "volcano-system", "vcsched-controllers")
    assert not lease["spec"].get("holderIdentity")  # released on stop


@pytest.mark.asyncio
async def test_job_plugins_make_their_objects_and_a_kill_removes_them(env):
    api, ctl, feed = env
    api.put(job(plugins={"svc": [], "ssh": [], "env": []}))
    await admit(api, feed)
    assert [c["metadata"]["name"] for c in api.all("", "configmaps")] == ["j1-svc"]
    assert api.get("", "configmaps", "ns", "j1-svc")["data"]["VC_WORKER_HOSTS"] == "j1-worker-0.j1,j1-worker-1.j1"
    assert api.get("", "services", "ns", "j1")["spec"]["clusterIP"] == "None"
    assert api.get("networking.k8s.io", "networkpolicies", "ns", "j1") is not None
    secret = api.get("", "secrets", "ns", "j1-ssh")  # stringData: the API server stores it as data
    assert set(secret["stringData"]) == {"id_rsa", "id_rsa.pub", "authorized_keys", "config"}
    env_vars = {e["name"]: e.get("value") for e in api.get("", "pods", "ns", "j1-worker-1")["spec"]["containers"][0]["env"]}
    assert env_vars["VK_TASK_INDEX"] == env_vars["VC_TASK_INDEX"] == "1"
    assert status(api)["controlledResources"] == {"plugin-env": "env", "plugin-ssh": "ssh", "plugin-svc": "svc"}
    api.put(command("stop", "TerminateJob", "Job", "j1"))  # a full kill: OnJobDelete for every plugin
    await feed()
    assert api.all("", "configmaps") == [] and api.all("", "services") == [] and api.all("", "secrets") == []


@pytest.mark.asyncio
async def test_queue_podgroup_counts_are_scraped_from_the_schedulers_metrics(api):
    """volcano_queue_pod_group_<phase>_count{queue_name}, as Volcano's queue controller exports them,
    on the one /metrics of ``vcsched run``; a deleted queue's series go."""
    from collections import Counter

    import aiohttp
    from prometheus_client.parser import text_string_to_metric_families

    from vcsched.kube.runtime import RunOptions, Runtime

    from .conftest import FAST, cluster

    cluster(api)
    api.put(queue("q1"))
    for name, phase in (("a", "Running"), ("b", "Running"), ("c", "Inqueue"), ("d", "Completed")):
        api.put({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                 "metadata": {"name": name, "namespace": "ns"}, "spec": {"minMember": 9, "queue": "q1"},
                 "status": {"phase": phase}})
    async def scrape() -> dict[tuple[str, str], float]:
        async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{runtime.http_port}/metrics") as r:
            text = await r.text()
        return {(sample.name, sample.labels["queue_name"]): sample.value
                for family in text_string_to_metric_families(text) for sample in family.samples
                if sample.name.startswith("volcano_queue_pod_group_")}

    hourly = RunOptions(**{**FAST, "schedule_period": 3600})
    async with components(api, runtime=lambda client: Runtime(client, hourly)) as runtime:
        await eventually(lambda: runtime.http_port, "serving")
        # the scheduler writes PodGroup phases too (here: none of them has pods): the counts must follow
        # the API's phases, whatever the scheduler made of them (its one session of the hour)

        async def follows() -> bool:
            got = await scrape()
            phases = Counter((pg.get("status") or {}).get("phase") for pg in api.all(SCHED, "podgroups"))
            return all(got.get((f"volcano_queue_pod_group_{p.lower()}_count", "q1")) == phases.get(p, 0)
                       for p in ("Inqueue", "Pending", "Running", "Unknown", "Completed"))

        await eventually_async(follows, "q1's PodGroups counted by phase")
        api.update(SCHED, "podgroups", "ns", "c", {"status": {"phase": "Unknown"}})
        await eventually_async(follows, "the phase change counted")
        api.remove(SCHED, "queues", "", "q1")

        async def gone() -> bool:
            return not [k for k in await scrape() if k[1] == "q1"]

        await eventually_async(gone, "the deleted queue's series removed")


@pytest.mark.asyncio
async def test_controllers_alone_serve_their_own_metrics_and_healthz(api):
    """``--components controllers``: no scheduler runtime, so the controllers serve /metrics on --listen."""
    import socket

    import aiohttp

    with socket.socket() as s:  # a free port for the listener
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    api.put(queue("q1"))
    api.put({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "a", "namespace": "ns"}, "spec": {"minMember": 1, "queue": "q1"},
             "status": {"phase": "Running"}})
    async def get(path: str) -> str:
        try:
            async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{port}{path}") as r:
                return await r.text()
        except aiohttp.ClientConnectionError:
            return ""

    async def counted() -> bool:
        return 'volcano_queue_pod_group_running_count{queue_name="q1"} 1.0' in await get("/metrics")

    async with components(api, listen=f"127.0.0.1:{port}"):
        await eventually_async(counted, "q1's running PodGroup on the controllers' own /metrics")
        assert await get("/healthz") == "ok"
    assert await get("/healthz") == ""  # the listener is closed on stop

def test_a_lister_reads_its_index_and_our_writes_until_the_index_catches_up():
    from vcsched.kube.lister import Lister, pod_index_keys

    def p(rv: int, job: str | None = "j1", uid: str = "u1", **meta) -> dict:
        return {"metadata": {"name": "p", "namespace": "ns", "resourceVersion": str(rv), "uid": uid,
                             "labels": {"volcano.sh/job-name": job} if job else {}, **meta}}

    lister = Lister("pods", pod_index_keys)

    def watch(obj: dict) -> None:  # what the informer does with an event: indexed, then seen
        lister.index_object(obj)
        lister.seen("MODIFIED", obj)

    watch(p(5))
    assert [o["metadata"]["resourceVersion"] for o in lister.indexed(("job", "ns", "j1"))] == ["5"]
    lister.observe(p(9, "j2"))  # what our write returned: relabelled, before the watch brings it
    assert lister.count(("job", "ns", "j1")) == 0 and lister.count(("job", "ns", "j2")) == 1
    watch(p(7, "j2"))  # the watch not yet caught up: does not undo it
    assert lister.get("ns", "p")["metadata"]["resourceVersion"] == "9"
    watch(p(9, "j2"))  # caught up: ours is dropped
    assert lister._written == {} and lister.get("ns", "p")["metadata"]["resourceVersion"] == "9"
    lister.deleted("ns", "p", p(10, "j2", deletionTimestamp="2026-01-01T00:00:00Z"))  # graceful: still there
    assert lister.get("ns", "p")["metadata"]["deletionTimestamp"]
    lister.deleted("ns", "p", None)
    assert lister.get("ns", "p") is None and lister.count(("job", "ns", "j2")) == 0
    lister.observe(p(12, "j2", uid="u2"))  # made again by us under the same name: a new object
    assert lister.get("ns", "p")["metadata"]["uid"] == "u2"
