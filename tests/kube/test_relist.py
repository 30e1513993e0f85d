"""Objects deleted while a watch was down past 410 Gone leave the controllers' indexes after the relist.

The controllers' informers relist a kind after a 410 and drop what the relist did not bring back, as
client-go's Replace does, handling each as if its DELETED event had come. Run against the kmock API
server: the watches are dropped, an object is deleted and the history compacted while they are down,
so each watch resumes into 410 Gone. At the end, the same for the scheduler's own reflectors
(scheduler/kube/source.py) and its cache.
"""

from __future__ import annotations


import pytest

from vcsched.kube.controllers import Controllers

from .apiserver import ApiServer
from .conftest import CONTROLLER_AGENT, cluster, eventually, podgroup, queue, verb_of
from .conftest import pod as sched_pod
from .test_controllers import BUS, INITIAL_LISTS, SCHED, command, job, pods, run, set_phase, status

pytestmark = pytest.mark.asyncio


def gap(api: ApiServer, *deleted: tuple[str, str, str, str]) -> None:
    """The watches go down; ``deleted`` objects go while they are down and the history is compacted:
    every watch resumes into 410 Gone and the informers relist every kind."""
    api.drop_watches()
    for obj in deleted:
        api.remove(*obj)
    api.compact()


def lists(api: ApiServer) -> list[str]:
    """The controllers' LIST requests: ``list <path>``."""
    return [f"list {r.url.path}" for r in api.requests
            if r.headers.get("User-Agent", "").startswith(CONTROLLER_AGENT) and verb_of(r) == "list"]


# every kind the controllers watch, HyperNode discovery's nodes, HyperNodes and ConfigMap included (a1472b5):
# test_controllers' list of their initial LISTs, so that a kind added there is counted here too
WATCHED_PATHS = [r.removeprefix("list ") for r in INITIAL_LISTS]


async def running_job(api: ApiServer) -> None:
    """Job ns/j1: its PodGroup Inqueue, its two pods made and Running."""
    created = api.put(job(replicas=2))
    pg_name = f"j1-{created['metadata']['uid']}"
    await eventually(lambda: api.get(SCHED, "podgroups", "ns", pg_name) is not None, "the PodGroup")
    api.update(SCHED, "podgroups", "ns", pg_name, {"status": {"phase": "Inqueue"}})
    await eventually(lambda: pods(api) == ["j1-worker-0", "j1-worker-1"], "the pods")
    for p in pods(api):
        set_phase(api, p, "Running")
    await eventually(lambda: status(api).get("running") == 2, "both running")


def made_again(api: ApiServer, name: str, old_uid: str) -> bool:
    return (api.get("", "pods", "ns", name) or {}).get("metadata", {}).get("uid") not in (None, old_uid)


async def test_a_pod_deleted_during_a_watch_gap_leaves_the_index_and_its_job_resyncs(api):
    api.put(queue("default"))
    api.put(queue("root"))

    async def body(ctl: Controllers) -> None:
        await running_job(api)
        kept = api.get("", "pods", "ns", "j1-worker-0")["metadata"]["uid"]
        gone = api.get("", "pods", "ns", "j1-worker-1")["metadata"]["uid"]
        assert sorted(lists(api)) == [f"list {k}" for k in WATCHED_PATHS]  # the initial lists only
        gap(api, ("", "pods", "ns", "j1-worker-1"))
        # the relist drops it: the Job re-syncs as on its DELETED event (PodEvicted, no policy: SyncJob)
        # and makes the missing pod again; the running count no longer has it
        await eventually(lambda: made_again(api, "j1-worker-1", gone), "j1-worker-1 made again")
        await eventually(lambda: status(api).get("running") == 1 and status(api).get("pending") == 1,
                         "the counts without the deleted pod")
        # the pod still there is not dropped; the deleted one is nowhere the handlers read
        assert ctl.pods.get("ns", "j1-worker-0")["metadata"]["uid"] == kept
        held = [p["metadata"]["uid"] for p in ctl.pods.indexed(("job", "ns", "j1"))]
        assert gone not in held and kept in held
        assert all(p["metadata"]["uid"] != gone for p in ctl._pods.values())
        # every kind relisted once after its 410: one LIST each, besides the initial ones
        assert sorted(lists(api)) == sorted(f"list {k}" for k in WATCHED_PATHS * 2)

    await run(api, body)


async def test_a_job_deleted_during_a_watch_gap_takes_its_pods_and_podgroup_after_the_relist(api):
    api.put(queue("default"))
    api.put(queue("root"))

    async def body(ctl: Controllers) -> None:
        await running_job(api)
        gap(api, ("batch.volcano.sh", "jobs", "ns", "j1"))
        # what the lost DELETED event does (the cluster's garbage collector's part, here ours)
        await eventually(lambda: pods(api) == [] and api.all(SCHED, "podgroups") == [], "pods and PodGroup gone")
        assert ctl.jobs.get("ns", "j1") is None and "ns/j1" not in ctl._jobs_seen

    await run(api, body)


def queues_and_podgroups(api: ApiServer, *podgroups: tuple[str, str]) -> None:
    """The default, root and q1 Queues, and PodGroups (name, queue) in namespace ns."""
    for name in ("default", "root", "q1"):
        api.put(queue(name))
    for name, q in podgroups:
        api.put({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                 "metadata": {"name": name, "namespace": "ns"}, "spec": {"minMember": 1, "queue": q}})


async def test_a_podgroup_deleted_during_a_watch_gap_no_longer_holds_its_queue_closing(api):
    queues_and_podgroups(api, ("pg1", "q1"), ("pg2", "q1"))

    async def body(ctl: Controllers) -> None:
        api.put(command("close", "CloseQueue", "Queue", "q1"))
        await eventually(lambda: api.all(BUS, "commands") == [], "the command consumed")
        await eventually(lambda: api.get(SCHED, "queues", "", "q1")["status"]["state"] == "Closing", "Closing")
        gap(api, (SCHED, "podgroups", "ns", "pg1"))
        await eventually(lambda: ctl.podgroups.count(("queue", "q1")) == 1, "pg1 dropped from the queue's PodGroups")
        assert ctl.podgroups.get("ns", "pg2") is not None  # still there: kept
        # pg2 still holds the queue Closing; its deletion (seen live) closes it
        assert api.get(SCHED, "queues", "", "q1")["status"]["state"] == "Closing"
        api.remove(SCHED, "podgroups", "ns", "pg2")
        await eventually(lambda: api.get(SCHED, "queues", "", "q1")["status"]["state"] == "Closed", "Closed")

    await run(api, body)


async def test_the_last_podgroup_of_a_queue_deleted_during_a_gap_closes_it(api):
    """The relist of PodGroups brings back other queues' PodGroups only: the deleted one still goes."""
    queues_and_podgroups(api, ("pg1", "q1"), ("other", "default"))

    async def body(ctl: Controllers) -> None:
        api.put(command("close", "CloseQueue", "Queue", "q1"))
        await eventually(lambda: api.get(SCHED, "queues", "", "q1")["status"]["state"] == "Closing", "Closing")
        gap(api, (SCHED, "podgroups", "ns", "pg1"))
        await eventually(lambda: api.get(SCHED, "queues", "", "q1")["status"]["state"] == "Closed",
                         "Closed once the relist dropped pg1")
        assert ctl.podgroups.get("ns", "other") is not None

    await run(api, body)


async def test_a_relist_bringing_only_objects_made_during_the_gap_still_drops_the_deleted(api):
    """Every PodGroup the handlers knew is gone and a new one came while the watch was down: the relist
    lists no known object, its new one shows it."""
    queues_and_podgroups(api, ("pg1", "q1"))

    async def body(ctl: Controllers) -> None:
        api.put(command("close", "CloseQueue", "Queue", "q1"))
        await eventually(lambda: api.get(SCHED, "queues", "", "q1")["status"]["state"] == "Closing", "Closing")
        api.drop_watches()
        api.remove(SCHED, "podgroups", "ns", "pg1")
        api.put({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                 "metadata": {"name": "new", "namespace": "ns"}, "spec": {"minMember": 1, "queue": "default"}})
        api.compact()
        await eventually(lambda: api.get(SCHED, "queues", "", "q1")["status"]["state"] == "Closed",
                         "Closed once the relist dropped pg1")
        assert ctl.podgroups.get("ns", "new") is not None
        assert lists(api).count("list /apis/scheduling.volcano.sh/v1beta1/podgroups") == 2  # initial, relist

    await run(api, body)


async def test_a_dropped_watch_that_resumes_lists_nothing_of_ours(api):
    """No 410 (the history still holds the resourceVersion): the watch resumes, nothing is relisted, and a
    deletion while down comes as its DELETED event."""
    queues_and_podgroups(api, ("pg1", "q1"))

    async def body(ctl: Controllers) -> None:
        await eventually(lambda: ctl.podgroups.count(("queue", "q1")) == 1, "pg1 counted")
        api.drop_watches()
        api.remove(SCHED, "podgroups", "ns", "pg1")
        await eventually(lambda: ctl.podgroups.count(("queue", "q1")) == 0, "pg1 gone by its DELETED event")
        assert sorted(lists(api)) == [f"list {k}" for k in WATCHED_PATHS]  # the initial lists only

    await run(api, body)


async def test_the_schedulers_relist_drops_a_pod_made_again_under_its_name_during_the_gap(api, start):
    """client-go's Replace keys objects by namespace/name but the cache keys pods by uid: a pod deleted and
    made again under the same name while the watch was down (a StatefulSet's) must not leave the old one
    accounted on its node."""
    cluster(api, nodes=1)  # n0: 4 cpu
    api.put(podgroup("pg1"))
    old = api.put(sched_pod("p0", "pg1", cpu="3", node_name="n0"))
    rt = await start()
    await eventually(lambda: rt.synced.is_set() and old["metadata"]["uid"] in rt.cache.tasks, "synced")
    api.drop_watches()
    api.remove("", "pods", "default", "p0")
    new = api.put(sched_pod("p0", "pg1", cpu="1"))
    api.compact()
    await eventually(lambda: new["metadata"]["uid"] in rt.cache.tasks, "the new p0 relisted")
    assert old["metadata"]["uid"] not in rt.cache.tasks and old["metadata"]["uid"] not in rt.feeder.pods
    # n0's 3 cpu are free again: the new p0 (1) and p1 (3) both fit
    api.put(sched_pod("p1", "pg1", cpu="3"))
    await eventually(lambda: sorted(b[1] for b in api.bindings) == ["p0", "p1"], "both bound on n0")

