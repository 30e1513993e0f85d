"""The preempt and reclaim actions on a real session (spec/framework.md §7.4, §7.5)."""

from __future__ import annotations

import random
import textwrap

import pytest

from vcsched.api.types import TaskStatus
from vcsched.cache import Cache
from vcsched.conf import parse_conf
from vcsched.framework.effects import Event, Evict
from vcsched.framework.node_search import NodeSearch
from vcsched.scheduler import Scheduler

HELM_TIERS = """
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


def node(name: str, cpu: str = "4", memory: str = "16Gi") -> dict:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}}


def pod(name: str, group: str, cpu: str = "1", *, node_name: str = "", priority: int | None = None,
        ns: str = "default", **spec) -> dict:
    spec = {"schedulerName": "volcano",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}], **spec}
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    return {"metadata": {"name": name, "namespace": ns, "uid": f"{ns}/{name}", "creationTimestamp": "2026-01-01T00:00:00Z",
                         "annotations": {"scheduling.k8s.io/group-name": group}},
            "spec": spec, "status": {"phase": "Running" if node_name else "Pending"}}


def podgroup(name: str, min_member: int = 1, queue: str = "default", priority_class: str = "",
             ns: str = "default") -> dict:
    spec = {"minMember": min_member, "queue": queue}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"metadata": {"name": name, "namespace": ns, "uid": f"pg-{ns}-{name}",
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": spec, "status": {"phase": "Inqueue"}}


def run(actions: str, nodes, podgroups, pods, queues=(("default", 1, True),), tiers: str = HELM_TIERS):
    cache = Cache()
    for name, value in (("low", 10), ("mid", 50), ("high", 100)):
        cache.add_priority_class({"metadata": {"name": name}, "value": value})
    for name, weight, reclaimable in queues:
        cache.add_queue({"metadata": {"name": name, "creationTimestamp": "2026-01-01T00:00:00Z"},
                         "spec": {"weight": weight, "reclaimable": reclaimable}, "status": {"state": "Open"}})
    for n in nodes:
        cache.add_node(n)
    for pg in podgroups:
        cache.add_podgroup(pg)
    for p in pods:
        cache.add_pod(p)
    scheduler = Scheduler(cache, parse_conf(f'actions: "{actions}"\n' + textwrap.dedent(tiers)))
    effects = scheduler.run_once(now=0.0, uid="s1")
    return scheduler.last_session, effects


def evicted(effects) -> list[tuple[str, str]]:
    return [(e.name, e.reason) for e in effects if isinstance(e, Evict)]


def task(ssn, key: str):
    for job in ssn.jobs.values():
        if key in job.tasks:
            return job.tasks[key]
    raise KeyError(key)


# -- preempt -----------------------------------------------------------------------------------


def test_preempt_evicts_the_lowest_priority_job_first_until_the_preemptor_fits() -> None:
    pods = [pod("l-0", "l", node_name="n1"), pod("l-1", "l", node_name="n1"),
            pod("m-0", "m", node_name="n1"), pod("m-1", "m", node_name="n1"),
            pod("p-0", "p", cpu="2")]
    pgs = [podgroup("l", priority_class="low"), podgroup("m", priority_class="mid"), podgroup("p", priority_class="high")]
    ssn, effects = run("preempt", [node("n1")], pgs, pods)
    # the job that orders last (lowest priority) first, and inside it the task that would be scheduled last
    assert evicted(effects) == [("l-1", "preempt"), ("l-0", "preempt")]
    assert [e.message for e in effects if isinstance(e, Event) and e.reason == "Evict"] == ["preempt", "preempt"]
    p0 = task(ssn, "default/p-0")
    assert (p0.status, p0.node_name, p0.eviction_occurred) == (TaskStatus.Pipelined, "n1", True)
    assert task(ssn, "default/m-0").status == TaskStatus.Running
    # what the metrics are made of: one committed statement with evictions, one node tried
    assert ssn.stats.eviction_transactions == {"preempt": 1}
    assert ssn.stats.preemption_attempts == 1
    assert ssn.stats.preemption_victims == 4


def test_preempt_takes_free_room_without_evicting() -> None:
    pods = [pod("l-0", "l", node_name="n1"), pod("p-0", "p", cpu="2")]
    pgs = [podgroup("l", priority_class="low"), podgroup("p", priority_class="high")]
    ssn, effects = run("preempt", [node("n1")], pgs, pods)
    assert evicted(effects) == []
    p0 = task(ssn, "default/p-0")
    assert (p0.status, p0.eviction_occurred) == (TaskStatus.Pipelined, False)
    assert ssn.stats.eviction_transactions == {}


def test_preempt_never_touches_equal_or_higher_priority_or_other_queues() -> None:
    pods = [pod("m-0", "m", cpu="2", node_name="n1"), pod("o-0", "o", cpu="2", node_name="n1"),
            pod("p-0", "p", cpu="2")]
    pgs = [podgroup("m", priority_class="high"), podgroup("o", queue="other", priority_class="low"),
           podgroup("p", priority_class="high")]
    ssn, effects = run("preempt", [node("n1")], pgs, pods, queues=(("default", 1, True), ("other", 1, True)))
    assert evicted(effects) == []
    assert task(ssn, "default/p-0").status == TaskStatus.Pending


def test_preempt_discards_when_the_gang_cannot_be_pipelined() -> None:
    pods = [pod(f"l-{i}", "l", node_name="n1") for i in range(4)]
    pods += [pod("p-0", "p", cpu="3"), pod("p-1", "p", cpu="3")]
    pgs = [podgroup("l", priority_class="low"), podgroup("p", min_member=2, priority_class="high")]
    ssn, effects = run("preempt", [node("n1")], pgs, pods)
    assert evicted(effects) == []
    assert all(task(ssn, f"default/l-{i}").status == TaskStatus.Running for i in range(4))
    assert {task(ssn, "default/p-0").status, task(ssn, "default/p-1").status} == {TaskStatus.Pending}


def test_preempt_between_tasks_of_one_job() -> None:
    # a starving gang (1 of 2 ready) whose pending task outranks its running one
    pods = [pod("j-0", "j", cpu="4", node_name="n1", priority=1), pod("j-1", "j", cpu="4", priority=100)]
    ssn, effects = run("preempt", [node("n1")], [podgroup("j", min_member=2)], pods)
    assert evicted(effects) == [("j-0", "preempt")]
    assert task(ssn, "default/j-1").status == TaskStatus.Pipelined


def test_preemption_policy_never_does_not_preempt() -> None:
    pods = [pod("l-0", "l", cpu="4", node_name="n1"), pod("p-0", "p", cpu="2", preemptionPolicy="Never")]
    pgs = [podgroup("l", priority_class="low"), podgroup("p", priority_class="high")]
    _, effects = run("preempt", [node("n1")], pgs, pods)
    assert evicted(effects) == []


def test_preempt_spares_kube_system_and_critical_pods() -> None:
    pods = [pod("k-0", "k", cpu="2", node_name="n1", ns="kube-system"),
            pod("c-0", "c", cpu="2", node_name="n1", priorityClassName="system-cluster-critical"),
            pod("p-0", "p", cpu="2")]
    pgs = [podgroup("k", ns="kube-system", priority_class="low"), podgroup("c", priority_class="low"),
           podgroup("p", priority_class="high")]
    ssn, effects = run("preempt", [node("n1")], pgs, pods)
    assert evicted(effects) == []
    assert task(ssn, "default/p-0").status == TaskStatus.Pending


@pytest.mark.parametrize("drf_preemptable, evictions", [(False, 2), (True, 3)])
def test_gang_preemptable_keeps_victim_jobs_at_min_available(drf_preemptable, evictions) -> None:
    """With gang's preemptable vote on, tier 1 keeps a victim job at minAvailable.

    When gang has no victim left, tier 1 is only undecided, not a veto: a lower tier
    that votes (drf in Volcano's fallback conf) may still choose one.  Copied from Volcano.
    """
    tiers = f"""
    tiers:
    - plugins: [{{name: priority}}, {{name: gang}}, {{name: conformance}}]
    - plugins: [{{name: drf, enablePreemptable: {str(drf_preemptable).lower()}}}, {{name: predicates}},
                {{name: proportion}}, {{name: nodeorder}}]
    """
    pods = [pod(f"l-{i}", "l", node_name="n1") for i in range(4)]
    pods += [pod(f"p{i}-0", f"p{i}", cpu="1") for i in range(3)]
    pgs = [podgroup("l", min_member=2, priority_class="low")] + [podgroup(f"p{i}", priority_class="high")
                                                                  for i in range(3)]
    ssn, effects = run("preempt", [node("n1")], pgs, pods, tiers=tiers)
    assert len(evicted(effects)) == evictions
    assert ssn.jobs["default/l"].ready_task_num() == 4 - evictions
    pending = [f"p{i}" for i in range(3) if task(ssn, f"default/p{i}-0").status == TaskStatus.Pending]
    assert len(pending) == 3 - evictions


# -- reclaim -----------------------------------------------------------------------------------


def reclaim_cluster(qa_reclaimable: bool = True):
    nodes = [node("n1"), node("n2")]
    pods = [pod(f"a{i}-0", f"a{i}", node_name=f"n{1 + i % 2}") for i in range(8)]
    pods += [pod(f"b{i}-0", f"b{i}") for i in range(6)]
    pgs = [podgroup(f"a{i}", queue="qa") for i in range(8)] + [podgroup(f"b{i}", queue="qb") for i in range(6)]
    queues = (("qa", 1, qa_reclaimable), ("qb", 1, True))
    return nodes, pgs, pods, queues


def test_reclaim_takes_back_down_to_the_deserved_share_and_no_further() -> None:
    nodes, pgs, pods, queues = reclaim_cluster()
    ssn, effects = run("reclaim", nodes, pgs, pods, queues)
    # 8 CPU, equal weights: each queue deserves 4; qa holds 8
    assert len(evicted(effects)) == 4
    assert all(reason == "reclaim" for _, reason in evicted(effects))
    pipelined = [t for j in ssn.jobs.values() if j.queue == "qb" for t in j.tasks_in(TaskStatus.Pipelined)]
    assert len(pipelined) == 4 and all(t.eviction_occurred for t in pipelined)
    running_a = sum(j.count(TaskStatus.Running) for j in ssn.jobs.values() if j.queue == "qa")
    assert running_a == 4
    assert sum(ssn.stats.eviction_transactions.values()) == ssn.stats.eviction_transactions["reclaim"] >= 1


def test_reclaim_leaves_a_queue_that_is_not_reclaimable_alone() -> None:
    nodes, pgs, pods, queues = reclaim_cluster(qa_reclaimable=False)
    ssn, effects = run("reclaim", nodes, pgs, pods, queues)
    assert evicted(effects) == []
    assert all(j.count(TaskStatus.Pipelined) == 0 for j in ssn.jobs.values())


def test_reclaim_does_not_take_from_its_own_queue() -> None:
    nodes, pgs, pods, _ = reclaim_cluster()
    pgs = [dict(pg, spec=dict(pg["spec"], queue="qa")) for pg in pgs]
    _, effects = run("reclaim", nodes, pgs, pods, (("qa", 1, True), ("qb", 1, True)))
    assert evicted(effects) == []


# -- the shared candidate search equals Volcano's node-by-node search -----------------------------


def preempt_run(monkeypatch, shared: bool, seed: int) -> list:
    if not shared:
        monkeypatch.setattr(NodeSearch, "shareable", lambda self, task: False)
    rng = random.Random(seed)
    nodes = [node(f"n{i:03d}", cpu=rng.choice(["4", "8"])) for i in range(150)]
    pods, pgs = [], []
    for i, n in enumerate(nodes):
        cpus = int(n["status"]["allocatable"]["cpu"])
        used = 0
        while used < cpus - 1 or (used < cpus and rng.random() < 0.7):
            size = rng.choice([1, 2]) if cpus - used >= 2 else 1
            name = f"l{i}-{used}"
            pgs.append(podgroup(name, priority_class=rng.choice(["low", "mid"])))
            pods.append(pod(f"{name}-0", name, cpu=str(size), node_name=n["metadata"]["name"]))
            used += size
    for i in range(200):
        pgs.append(podgroup(f"p{i}", priority_class="high"))
        pods.append(pod(f"p{i}-0", f"p{i}", cpu=rng.choice(["1", "2", "3"])))
    ssn, effects = run("allocate, preempt", nodes, pgs, pods)
    pipelined = sorted((t.name, t.node_name) for j in ssn.jobs.values() for t in j.tasks_in(TaskStatus.Pipelined))
    return [evicted(effects), pipelined]


@pytest.mark.parametrize("seed", [1, 2])
def test_shared_candidates_equal_node_by_node_candidates(monkeypatch, seed) -> None:
    direct = preempt_run(monkeypatch, False, seed)
    monkeypatch.undo()
    shared = preempt_run(monkeypatch, True, seed)
    assert shared == direct
    assert len(direct[0]) > 50 and len(direct[1]) > 50


# -- eligibility (taskEligibleToPreempt) -----------------------------------------------------------


def with_nominated(p: dict, node_name: str) -> dict:
    p["status"]["nominatedNodeName"] = node_name
    return p


@pytest.mark.parametrize("nominated, evictions", [
    ("gone", 0),  # the nominated node is not in the session
    ("n2", 0),    # the plugin predicates pass on the nominated node: "already schedulable"
    ("", 1),
])
def test_nominated_node_decides_eligibility(nominated, evictions) -> None:
    pods = [pod("l-0", "l", cpu="4", node_name="n1"), pod("f-0", "f", cpu="4", node_name="n2"),
            with_nominated(pod("p-0", "p", cpu="2"), nominated)]
    pgs = [podgroup("l", priority_class="low"), podgroup("f", priority_class="high"),
           podgroup("p", priority_class="high")]
    _, effects = run("preempt", [node("n1"), node("n2")], pgs, pods)
    assert len(evicted(effects)) == evictions


# -- bench --preempt ---------------------------------------------------------------------------------


def test_bench_preempt_shape_evicts_one_low_pod_per_preemptor() -> None:
    import argparse

    from vcsched import bench

    parser = argparse.ArgumentParser()
    bench.add_parser(parser.add_subparsers())
    res = bench.run(parser.parse_args(["bench", "--nodes", "30", "--preempt", "40"]))
    assert (res.pods, res.pods_placed, res.evictions, res.cycles) == (40, 40, 40, 2)
