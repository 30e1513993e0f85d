"""Incremental snapshots (issue 25): a settled job's clone, left as it was by a session, is reused by the
next snapshot, and no session decides otherwise for it.

Two caches are fed the same cluster and the same changes between sessions (new pods and gangs, pods
finishing or deleted, a PodGroup's spec changed, a node added); one reuses clones
(``Cache.keep_clones``, as ``vcsched run`` does), the other clones everything (as ``simulate``); every
session's effects must be equal, and the reusing cache must really have reused clones.
"""

from __future__ import annotations

import copy
import random

import pytest

from vcsched.cache import Cache
from vcsched.conf import DEFAULT_SCHEDULER_CONF, parse_conf
from vcsched.framework.effects import Bind, PodGroupStatus
from vcsched.kube.cycles import touched_jobs
from vcsched.scheduler import Scheduler

EPOCH = 1_700_000_000
PREEMPTING = DEFAULT_SCHEDULER_CONF.replace('actions: "enqueue, allocate, backfill"',
                                            'actions: "enqueue, allocate, preempt, reclaim, backfill"')


def ts(t: int) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(EPOCH + t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class World:
    """The manifests both caches are fed, and the changes made to them."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.rv = 0
        self.t = 0
        self.pods: dict[str, dict] = {}
        self.pgs: dict[str, dict] = {}
        self.nodes: list[dict] = []
        self.jobs = 0

    def stamp(self, obj: dict) -> dict:
        self.rv += 1
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self.rv)
        return obj

    def node(self) -> dict:
        name = f"n{len(self.nodes)}"
        n = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
             "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "20"}}}
        self.nodes.append(n)
        return self.stamp(n)

    def job(self, size: int, priority: str = "", cpu: str | None = None) -> list[dict]:
        self.jobs += 1
        self.t += 1
        name = f"j{self.jobs}"
        pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
              "metadata": {"name": name, "namespace": "ns", "uid": f"pg-{name}", "creationTimestamp": ts(self.t)},
              "spec": {"minMember": size, "queue": self.rng.choice(["default", "default", "batch"]), **({"priorityClassName": priority} if priority else {})},
              "status": {"phase": "Pending"}}
        self.pgs[f"ns/{name}"] = pg
        out = [self.stamp(pg)]
        cpu = cpu or self.rng.choice(["500m", "1", "2"])
        for i in range(size):
            p = {"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": f"{name}-{i}", "namespace": "ns", "uid": f"u-{name}-{i}",
                              "creationTimestamp": ts(self.t),
                              "annotations": {"scheduling.k8s.io/group-name": name}},
                 "spec": {"schedulerName": "volcano", **({"priorityClassName": priority} if priority else {}),
                          "containers": [{"name": "c", "image": "i",
                                          "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]},
                 "status": {"phase": "Pending"}}
            self.pods[p["metadata"]["uid"]] = p
            out.append(self.stamp(p))
        return out

    def bind(self, e: Bind) -> dict:
        p = self.pods[e.uid]
        p["spec"]["nodeName"] = e.node
        p["status"]["phase"] = "Running"
        return self.stamp(p)


def feed(cache: Cache, obj: dict) -> None:
    if obj["kind"] == "Node":
        cache.update_node(obj)
    elif obj["kind"] == "PodGroup":
        cache.update_podgroup(obj)
    elif obj["kind"] == "Pod":
        cache.update_pod(obj)


def clone_view(job) -> tuple:
    """What a session reads of a job clone: its tasks in order with their state, each status bucket's
    tasks in order (no reader depends on the order of the buckets), the sums and counters, the
    PodGroup's status."""
    pg = job.podgroup
    return (
        [(u, t.status, t.node_name, t.resreq.to_list(), t.nominated_node, t.last_transaction, dict(t.pod_annotations))
         for u, t in job.tasks.items()],
        {st: list(b) for st, b in job.by_status.items() if b},  # each bucket in order (read in order)
        job.allocated.to_list(), job.total_request.to_list(), job.ready, job.pending_best_effort,
        job.nodes_fit_errors, job.job_fit_errors, job.min_available, job.queue,
        (pg.phase, pg.running, pg.succeeded, pg.failed, [dict(c) for c in pg.conditions]) if pg else None,
    )


def apply(cache: Cache, world_obj: list[dict], effects: list) -> None:
    for e in effects:
        if isinstance(e, PodGroupStatus):
            cache.set_podgroup_status(f"{e.namespace}/{e.name}", e.phase, e.running, e.succeeded, e.failed,
                                      e.conditions)
    for obj in world_obj:
        feed(cache, obj)


@pytest.mark.parametrize("conf_text", [DEFAULT_SCHEDULER_CONF, PREEMPTING], ids=["default", "preempt-reclaim"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_reused_clones_decide_as_fresh_ones(seed, conf_text):
    world = World(seed)
    caches = [Cache(), Cache()]  # [reusing, cloning everything]
    setup = [*(world.node() for _ in range(6))]
    for c in caches:
        c.add_priority_class({"metadata": {"name": "high"}, "value": 1000})
        for q in ("root", "default", "batch"):
            c.add_queue({"metadata": {"name": q, "creationTimestamp": ts(0)},
                         "spec": {"weight": 1, "reclaimable": q != "root"}, "status": {"state": "Open"}})
    for _ in range(12):
        setup += world.job(world.rng.choice([1, 1, 1, 2, 3]))
    for c in caches:
        for obj in setup:
            feed(c, obj)
    conf = parse_conf(conf_text)
    schedulers = [Scheduler(c, conf) for c in caches]
    reused_total = nodes_reused = 0
    previous: dict[str, object] = {}
    previous_nodes: dict[str, object] = {}
    for cycle in range(14):
        results, sessions = [], []
        for i, (c, s) in enumerate(zip(caches, schedulers)):
            snap = c.snapshot()
            if i == 0:
                reused_total += sum(1 for uid, j in snap.jobs.items() if previous.get(uid) is j)
                previous = dict(snap.jobs)
                nodes_reused += sum(1 for n in snap.nodes if previous_nodes.get(n.name) is n)
                previous_nodes = {n.name: n for n in snap.nodes}
                # every job clone, reused, brought up to date or cloned whole, is what a whole clone gives
                for uid, j in snap.jobs.items():
                    assert clone_view(j) == clone_view(c.jobs[uid].clone()), f"cycle {cycle}: {uid} differs"
            # a node's task is its job's task, whether the node or the job was reused or cloned
            for n in snap.nodes:
                for uid, t in n.tasks.items():
                    job = snap.jobs.get(t.job)
                    assert job is None or job.tasks[uid] is t, f"cycle {cycle}: {n.name} holds a stale {uid}"
            ssn, effects = s.run_session(snap, now=EPOCH + 100 + cycle, uid=f"session-{cycle}")
            if i == 0:
                c.keep_clones(ssn, *touched_jobs(effects))
            s.publish(ssn)
            results.append(effects)
            sessions.append(ssn)
        assert results[0] == results[1], f"cycle {cycle}: the sessions decided differently"
        # and they published the same: job shares and unready counts, queue attributes
        published = [({uid: (r.share, r.unschedulable_tasks, r.retries) for uid, r in s.metrics.jobs.records.items()},
                      {name: (q.allocated, q.request, q.inqueue, q.deserved, q.share)
                       for name, q in ssn.stats.queues.items()},
                      ssn.stats.unschedulable_jobs) for s, ssn in zip(schedulers, sessions)]
        assert published[0] == published[1], f"cycle {cycle}: the sessions published differently"
        # what the API would show next: the binds, then the world's own changes
        changes = [world.bind(e) for e in results[1] if isinstance(e, Bind)]
        rng = world.rng
        running = [u for u, p in world.pods.items() if p["status"]["phase"] == "Running"]
        if running and rng.random() < 0.6:
            done = world.pods[rng.choice(running)]
            done["status"]["phase"] = rng.choice(["Succeeded", "Failed"])
            changes.append(world.stamp(done))
        if rng.random() < 0.5:
            changes += world.job(rng.choice([1, 2, 4]), priority=rng.choice(["", "", "high"]))
        if rng.random() < 0.15:  # a job that fits nowhere: fit errors every session
            changes += world.job(2, cpu="64")
        # two pods of one job change between sessions, the first twice (their order in the job matters)
        groups: dict[str, list[str]] = {}
        for u, p in world.pods.items():
            if p["status"]["phase"] in ("Running", "Pending"):
                groups.setdefault(p["metadata"]["annotations"]["scheduling.k8s.io/group-name"], []).append(u)
        pairs = [us for us in groups.values() if len(us) >= 2]
        if pairs and rng.random() < 0.4:
            a, b = rng.choice(pairs)[:2]
            for n, u in enumerate((a, b, a)):
                p = world.pods[u]
                p["metadata"].setdefault("labels", {})["touched"] = f"{cycle}-{n}"
                changes.append(world.stamp(p))
        if rng.random() < 0.2:
            changes.append(world.node())
        if rng.random() < 0.2 and world.pgs:
            key = rng.choice(sorted(world.pgs))
            world.pgs[key]["spec"]["minMember"] = max(1, world.pgs[key]["spec"]["minMember"] - 1)
            changes.append(world.stamp(world.pgs[key]))
        deleted = None
        if running and rng.random() < 0.2:
            deleted = rng.choice(running)
        for c, effects in zip(caches, results):
            apply(c, changes, effects)
            if deleted is not None:
                c.delete_pod(deleted)
        if deleted is not None:
            world.pods.pop(deleted)
    assert reused_total > 0 and nodes_reused > 0, "no clone was ever reused: the comparison proves nothing"


def settled_job() -> tuple[World, Cache, Scheduler, object, list]:
    """One node and one single-pod job, run through three sessions (bound, then Running, then a
    session that writes nothing for it): the world, the cache, the scheduler, the last session and
    its effects."""
    world = World(7)
    c = Cache()
    for q in ("root", "default"):
        c.add_queue({"metadata": {"name": q, "creationTimestamp": ts(0)},
                     "spec": {"weight": 1}, "status": {"state": "Open"}})
    for obj in [world.node(), *world.job(1)]:
        feed(c, obj)
    s = Scheduler(c, parse_conf(DEFAULT_SCHEDULER_CONF))
    for _ in range(3):
        ssn, effects = s.run_session(c.snapshot())
        for e in effects:
            if isinstance(e, Bind):
                feed(c, world.bind(e))
            elif isinstance(e, PodGroupStatus):
                c.set_podgroup_status(f"{e.namespace}/{e.name}", e.phase, e.running, e.succeeded, e.failed,
                                      e.conditions)
    return world, c, s, ssn, effects


def test_a_job_the_cache_changed_is_not_reused_as_it_was():
    world, c, s, ssn, effects = settled_job()
    assert touched_jobs(effects) == (set(), set())
    c.keep_clones(ssn, *touched_jobs(effects))
    kept = ssn.jobs["ns/j1"]
    assert c.snapshot().jobs["ns/j1"] is kept  # reused
    ssn, effects = s.run_session(c.snapshot())
    c.keep_clones(ssn, set())
    again = ssn.jobs["ns/j1"]
    pod = world.pods["u-j1-0"]
    pod["status"]["phase"] = "Succeeded"
    feed(c, world.stamp(pod))  # the pod finished: the job changed
    snap = c.snapshot()
    fresh = snap.jobs["ns/j1"]
    # not reused as it was: brought up to date with the pod's change (the same clone object, the
    # session having left it alone), as a whole clone would be
    assert "ns/j1" not in snap.reused and fresh.tasks["u-j1-0"].status.name == "Succeeded"
    assert fresh is again
    assert clone_view(fresh) == clone_view(c.jobs["ns/j1"].clone())


def test_a_session_whose_snapshot_came_before_a_new_priority_class_keeps_nothing():
    """A priority class made while a session runs (on its worker thread) may change any job's priority:
    the clones that session keeps afterwards would carry the old one, so it keeps none."""
    _, c, s, ssn, effects = settled_job()
    c.keep_clones(ssn, *touched_jobs(effects))
    ssn, effects = s.run_session(c.snapshot())
    c.add_priority_class({"metadata": {"name": "high"}, "value": 1000, "globalDefault": True})  # meanwhile
    c.keep_clones(ssn, *touched_jobs(effects))
    snap = c.snapshot()
    assert not snap.reused and snap.jobs["ns/j1"].priority == 1000


def test_a_reused_job_a_session_changes_is_closed_as_a_fresh_one():
    """A settled job's reused clone that a session changes (preempt evicts its pod for a job of higher
    priority) notes itself in the session's change log: its status and conditions are worked out at
    close as for a clone made afresh."""
    world = World(11)
    caches = [Cache(), Cache()]  # [reusing, cloning everything]
    conf = parse_conf(PREEMPTING)
    schedulers = [Scheduler(c, conf) for c in caches]

    def in_default(objs: list[dict]) -> list[dict]:
        objs[0]["spec"]["queue"] = "default"
        world.pgs[f"ns/{objs[0]['metadata']['name']}"]["spec"]["queue"] = "default"
        return objs

    setup = [world.node(), *in_default(world.job(1, cpu="8"))]  # j1 fills the node
    for c in caches:
        c.add_priority_class({"metadata": {"name": "high"}, "value": 1000})
        for q in ("root", "default"):
            c.add_queue({"metadata": {"name": q, "creationTimestamp": ts(0)},
                         "spec": {"weight": 1}, "status": {"state": "Open"}})
        for obj in setup:
            feed(c, obj)
    for cycle in range(4):
        if cycle == 3:  # j1 settled and reused by now; a job that only preemption can place comes
            arrivals = in_default(world.job(1, priority="high", cpu="8"))
            for c in caches:
                for obj in arrivals:
                    feed(c, obj)
        results = []
        for i, (c, s) in enumerate(zip(caches, schedulers)):
            snap = c.snapshot()
            ssn, effects = s.run_session(snap, now=EPOCH + 100 + cycle, uid=f"session-{cycle}")
            if i == 0:
                if cycle == 3:
                    assert "ns/j1" in snap.reused and ssn.changed_reused == [ssn.jobs["ns/j1"]]
                c.keep_clones(ssn, *touched_jobs(effects))
            results.append(effects)
        assert results[0] == results[1], f"cycle {cycle}: the sessions decided differently"
        apply(caches[0], [world.bind(e) for e in results[1] if isinstance(e, Bind)], results[0])
        for e in results[1]:
            if isinstance(e, PodGroupStatus):
                caches[1].set_podgroup_status(f"{e.namespace}/{e.name}", e.phase, e.running, e.succeeded,
                                              e.failed, e.conditions)
        for obj in [world.stamp(world.pods[e.uid]) for e in results[1] if isinstance(e, Bind)]:
            feed(caches[1], obj)
    assert any(type(e).__name__ == "Evict" for e in results[0])
    assert any(isinstance(e, PodGroupStatus) and e.name == "j1" for e in results[0])
