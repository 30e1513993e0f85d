"""task-topology (plugins/task_topology.py) piece by piece: every case of Volcano's
plugins/task-topology/topology_test.go · Test_readTopologyFromPgAnnotations (the parser: a case only
checks the topology read or the error), then the buckets, the task order and the node score of the
design document (docs/design/task-topology-plugin.md) with their numbers.  End to end through
``vcsched simulate``: tests/scenarios/test_task_topology.py."""

from __future__ import annotations

from typing import Any

import pytest

from vcsched.api.job_info import JobInfo, PodGroup
from vcsched.api.node_info import NodeInfo, NodeSpec
from vcsched.api.resource import Resource
from vcsched.api.task_info import TaskInfo, new_task_info
from vcsched.api.types import TaskStatus
from vcsched.framework.arguments import ArgumentError, Arguments
from vcsched.framework.effects import Event
from vcsched.framework.interface import Point
from vcsched.framework.session import SchedulerState
from vcsched.plugins.task_topology import (
    AFFINITY_KEY,
    ANTI_AFFINITY_KEY,
    TASK_ORDER_KEY,
    JobManager,
    TaskTopology,
    TaskTopologyPlugin,
    TopologyError,
    read_topology,
)

from .fakes import FakeSession


def task(name: str, role: str, cpu: str = "1", *, node_name: str = "", job: str = "job1",
         annotate: bool = True) -> TaskInfo:
    """A pod of ``job`` whose task is ``role`` (the ``volcano.sh/task-spec`` annotation, or only the
    label with ``annotate=False``)."""
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}",
                            "annotations": {"scheduling.k8s.io/group-name": job}}
    if annotate:
        meta["annotations"]["volcano.sh/task-spec"] = role
    else:
        meta["labels"] = {"volcano.sh/task-spec": role}
    pod = {"metadata": meta,
           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
                    **({"nodeName": node_name} if node_name else {})},
           "status": {"phase": "Running" if node_name else "Pending"}}
    return new_task_info(pod)


def job(tasks: list[TaskInfo], annotations: dict[str, str] | None, name: str = "job1",
        min_member: int = 1) -> JobInfo:
    j = JobInfo(f"default/{name}", PodGroup(name, "default", f"pg-{name}", 0.0, min_member=min_member,
                                            annotations=dict(annotations or {})))
    for t in tasks:
        j.add_task(t)
    return j


def tf_tasks(ps: str = "ps", worker: str = "worker", chief: str = "chief", evaluator: str = "evaluator"):
    return [task(f"job1-{ps}-0", ps), task(f"job1-{ps}-1", ps), task(f"job1-{worker}-0", worker),
            task(f"job1-{worker}-1", worker), task(f"job1-{chief}-0", chief), task(f"job1-{evaluator}-0", evaluator)]


# -- Test_readTopologyFromPgAnnotations ----------------------------------------------------------


def test_read_correct_annotation():
    """Test_readTopologyFromPgAnnotations, case 0 "correct annotation"."""
    j = job(tf_tasks(), {AFFINITY_KEY: "ps,worker;ps,chief", ANTI_AFFINITY_KEY: "ps;worker,chief",
                         TASK_ORDER_KEY: "ps,worker,chief,evaluator"})
    assert read_topology(j) == TaskTopology(
        affinity=[["ps", "worker"], ["ps", "chief"]],
        anti_affinity=[["ps"], ["worker", "chief"]],
        task_order=["ps", "worker", "chief", "evaluator"])


def test_read_task_names_with_dashes():
    """Test_readTopologyFromPgAnnotations, case 1 "correct annotation with tasks whose names contain `-`"."""
    j = job(tf_tasks("ps-some", "worker-another-some", "chief-kk", "evaluator-tt"), {
        AFFINITY_KEY: "ps-some,worker-another-some;ps-some,chief-kk",
        ANTI_AFFINITY_KEY: "ps-some;worker-another-some,chief-kk",
        TASK_ORDER_KEY: "ps-some,worker-another-some,chief-kk,evaluator-tt"})
    assert read_topology(j) == TaskTopology(
        affinity=[["ps-some", "worker-another-some"], ["ps-some", "chief-kk"]],
        anti_affinity=[["ps-some"], ["worker-another-some", "chief-kk"]],
        task_order=["ps-some", "worker-another-some", "chief-kk", "evaluator-tt"])


def test_read_nil_annotation():
    """Test_readTopologyFromPgAnnotations, case 2 "nil annotation": no topology, no error."""
    assert read_topology(job([], None)) is None


@pytest.mark.parametrize("annotations, message", [
    # case 3 "invalid annotation": the affinity is read first, and fails first
    ({AFFINITY_KEY: "$%GF$^trtqwrg^", ANTI_AFFINITY_KEY: "ps;worker,chief;#@FGEW^vfa897bgs;;",
      TASK_ORDER_KEY: "ps,worker,chief,evaluator,,,"},
     "task $%GF$^trtqwrg^ do not exist in job <default/job1>"),
    # case 4 "invalid task name": only the task order names a task the job does not have
    ({AFFINITY_KEY: "ps,worker", ANTI_AFFINITY_KEY: "ps", TASK_ORDER_KEY: "ps,worker,chief"},
     "task chief do not exist in job <default/job1>"),
    # case 5 "duplicate task name"
    ({AFFINITY_KEY: "ps,worker", ANTI_AFFINITY_KEY: "ps,ps", TASK_ORDER_KEY: "ps,worker"},
     "task ps is duplicate in job <default/job1>"),
], ids=["invalid-annotation", "invalid-task-name", "duplicate-task-name"])
def test_read_invalid(annotations, message):
    """Test_readTopologyFromPgAnnotations, cases 3 to 5: the error Volcano returns, no topology."""
    tasks = tf_tasks() if "$" in annotations[AFFINITY_KEY] else tf_tasks()[:4]
    with pytest.raises(TopologyError) as e:
        read_topology(job(tasks, annotations))
    assert str(e.value) == message


def test_read_redundant_punctuation():
    """Test_readTopologyFromPgAnnotations, case 6 "redundant punctuations": empty names are kept, not errors."""
    j = job(tf_tasks(), {AFFINITY_KEY: "ps,worker;ps,,chief,;", ANTI_AFFINITY_KEY: "ps;worker,chief;;;",
                         TASK_ORDER_KEY: "ps,worker,chief,evaluator,,,"})
    assert read_topology(j) == TaskTopology(
        affinity=[["ps", "worker"], ["ps", "", "chief", ""], [""]],
        anti_affinity=[["ps"], ["worker", "chief"], [""], [""], [""]],
        task_order=["ps", "worker", "chief", "evaluator", "", "", ""])


def test_roles_come_from_the_label_too():
    """``affinityCheck`` reads TaskRole, which falls back to the pod's label."""
    j = job([task("job1-ps-0", "ps", annotate=False)], {AFFINITY_KEY: "ps"})
    assert read_topology(j) == TaskTopology(affinity=[["ps"]])


# -- buckets, order and score: docs/design/task-topology-plugin.md -------------------------------


def design_doc_job() -> JobInfo:
    """ps0, ps1, worker0..3, 1 CPU each; affinity ps,worker, anti-affinity ps."""
    tasks = ([task("tf-ps-0", "ps", job="tf"), task("tf-ps-1", "ps", job="tf")]
             + [task(f"tf-worker-{i}", "worker", job="tf") for i in range(4)])
    return job(tasks, {AFFINITY_KEY: "ps,worker", ANTI_AFFINITY_KEY: "ps"}, name="tf")


def manager_for(j: JobInfo) -> JobManager:
    m = JobManager(j.uid)
    topology = read_topology(j)
    assert topology is not None
    m.apply(topology)
    m.construct(j.tasks.values())
    return m


def bucket_names(m: JobManager) -> list[list[str]]:
    return [sorted(t.name for t in b.tasks.values()) for b in m.buckets]


def test_design_doc_buckets():
    """The design document's buckets: ps0 | ps1 apart (self anti-affinity); each worker is affine to both
    buckets' ps and joins the lighter one, the older on a tie: worker0 the first, worker1 the second,
    worker2 the first, worker3 the second."""
    m = manager_for(design_doc_job())
    assert bucket_names(m) == [["tf-ps-0", "tf-worker-0", "tf-worker-2"], ["tf-ps-1", "tf-worker-1", "tf-worker-3"]]
    assert m.priority == {"ps": 4, "worker": 3}
    assert m.bucket_max_size == 3


def node(name: str, cpu: str) -> NodeInfo:
    alloc = Resource.from_list({"cpu": cpu, "pods": "110"})
    return NodeInfo(name, {"metadata": {"name": name}}, NodeSpec(), alloc, alloc.clone())


def open_plugin(j: JobInfo, nodes: list[NodeInfo], weight: int | None = None) -> tuple[TaskTopologyPlugin, FakeSession]:
    ssn = FakeSession(nodes, jobs=[j])
    ssn.state = SchedulerState()
    plugin = TaskTopologyPlugin(Arguments({} if weight is None else {"task-topology.weight": weight}))
    plugin.on_session_open(ssn)
    return plugin, ssn


def test_design_doc_task_order():
    """The design document: ``ps0, worker0, worker2, ps1, worker1, worker3`` (the bigger bucket, then the
    older, then, in a bucket, the task with the higher priority, ps before worker)."""
    j = design_doc_job()
    plugin, ssn = open_plugin(j, [])
    order = ssn.fn(Point.TASK_ORDER, "task-topology")
    tasks = sorted(j.tasks.values(), key=lambda t: t.name)
    from functools import cmp_to_key
    ranked = sorted(tasks, key=cmp_to_key(order))
    assert [t.name for t in ranked][:3] == ["tf-ps-0", "tf-worker-0", "tf-worker-2"]
    assert [t.name for t in ranked][3:] == ["tf-ps-1", "tf-worker-1", "tf-worker-3"]


def test_design_doc_scores():
    """The design document's bucket scores, walked task by task, times 100 / the largest bucket (3)."""
    j = design_doc_job()
    n1, n2, n3 = node("node1", "2"), node("node2", "1"), node("node3", "4")
    plugin, ssn = open_plugin(j, [n1, n2, n3])
    score = ssn.fn(Point.NODE_ORDER, "task-topology")
    by = {t.name: t for t in j.tasks.values()}

    def scores(name: str) -> list[float]:
        return [round(score(by[name], n) * 3 / 100) for n in (n1, n2, n3)]

    def place(name: str, n: NodeInfo) -> None:
        ssn.place(by[name], n)
        ssn.allocate(by[name])

    assert scores("tf-ps-0") == [2, 1, 3]      # the bucket: 3 tasks, of which 2 fit node1, 1 node2
    place("tf-ps-0", n3)
    assert scores("tf-worker-0") == [2, 1, 3]  # 1 bound on node3 + 2 pending
    place("tf-worker-0", n3)
    place("tf-worker-2", n3)
    assert scores("tf-ps-1") == [2, 1, 0]      # node3 holds ps0: -1 for the anti-affinity
    place("tf-ps-1", n1)
    assert scores("tf-worker-1") == [2, 1, 1]      # 1 bound + 2 pending, less worker3 where only 1 CPU is left
    place("tf-worker-1", n1)
    # worker3: node1 is full and cannot hold it at all; node2 and node3 tie
    assert scores("tf-worker-3") == [0, 1, 1]


def test_weight_and_tasks_out_of_buckets_score_zero():
    """The weight multiplies; a task named in no relation (evaluator, in the task order only) and a pod
    without the task-spec annotation are in no bucket and score 0."""
    tasks = [task("job1-ps-0", "ps"), task("job1-evaluator-0", "evaluator"), task("job1-ps-1", "ps", annotate=False)]
    j = job(tasks, {AFFINITY_KEY: "ps", TASK_ORDER_KEY: "evaluator,ps"})
    n = node("n", "4")
    plugin, ssn = open_plugin(j, [n], weight=7)
    score = ssn.fn(Point.NODE_ORDER, "task-topology")
    by = {t.name: t for t in j.tasks.values()}
    assert score(by["job1-ps-0"], n) == 1 * 7 * 100 / 1
    assert score(by["job1-evaluator-0"], n) == 0
    assert score(by["job1-ps-1"], n) == 0
    order = ssn.fn(Point.TASK_ORDER, "task-topology")
    # the task in a bucket first, whatever the task order says of the others
    assert order(by["job1-ps-0"], by["job1-evaluator-0"]) == -1
    assert order(by["job1-evaluator-0"], by["job1-ps-1"]) == 0


def test_bound_pods_make_a_bucket_per_node():
    """A Running ps on n2 makes a bucket there; the pending worker joins it (affinity) and scores n2 best."""
    ps = task("job1-ps-0", "ps", node_name="n2")
    w = task("job1-worker-0", "worker")
    j = job([ps, w], {AFFINITY_KEY: "ps,worker"})
    n1, n2 = node("n1", "4"), node("n2", "4")
    n2.add_task(ps)
    plugin, ssn = open_plugin(j, [n1, n2])
    m = plugin.managers["default/job1"]
    assert len(m.buckets) == 1 and m.buckets[0].nodes == {"n2": 1} and list(m.buckets[0].tasks) == [w.uid]
    score = ssn.fn(Point.NODE_ORDER, "task-topology")
    assert score(w, n2) == 2 * 100 / 2 and score(w, n1) == 1 * 100 / 2


def test_a_job_without_pending_tasks_gets_no_manager():
    j = job([task("job1-ps-0", "ps", node_name="n1")], {AFFINITY_KEY: "ps"})
    plugin, _ = open_plugin(j, [node("n1", "4")])
    assert plugin.managers == {}


def test_bad_annotation_is_one_warning_event_and_no_topology():
    j = job(tf_tasks()[:4], {AFFINITY_KEY: "ps,worker", TASK_ORDER_KEY: "ps,worker,chief"})
    plugin, ssn = open_plugin(j, [])
    assert plugin.managers == {}
    [event] = ssn.effects
    assert isinstance(event, Event) and (event.kind, event.name, event.type, event.reason) == (
        "PodGroup", "job1", "Warning", "InvalidTaskTopology")
    assert event.message.startswith(f"metadata.annotations[{TASK_ORDER_KEY}]: task chief do not exist in job "
                                    "<default/job1>")
    # the next session remembers it
    ssn2 = FakeSession([], jobs=[j])
    ssn2.state = ssn.state
    TaskTopologyPlugin(Arguments({})).on_session_open(ssn2)
    assert ssn2.effects == []


def test_a_missing_task_is_not_reported_while_the_job_lacks_pods():
    j = job(tf_tasks()[:4], {AFFINITY_KEY: "ps,chief"}, min_member=6)
    plugin, ssn = open_plugin(j, [])
    assert plugin.managers == {} and ssn.effects == []


@pytest.mark.parametrize("value", ["10", 1.5, True])
def test_a_weight_that_is_not_an_integer_is_refused(value):
    with pytest.raises(ArgumentError, match=r"task-topology\.weight: expected an integer"):
        TaskTopologyPlugin(Arguments({"task-topology.weight": value}))


def test_taking_out_pods_until_the_bucket_fits():
    """A bucket of five 1-CPU workers and a ps on a 2-CPU node: the task stays, three others go (-3)."""
    tasks = [task("job1-ps-0", "ps")] + [task(f"job1-worker-{i}", "worker") for i in range(5)]
    j = job(tasks, {AFFINITY_KEY: "ps,worker"})
    n = node("n", "2")
    plugin, ssn = open_plugin(j, [n])
    m = plugin.managers["default/job1"]
    assert len(m.buckets) == 1
    ps = j.tasks["uid-job1-ps-0"]
    assert plugin.bucket_score(ps, n)[0] == 6 - 4
    assert TaskStatus.Pending in j.by_status


# -- the node search: shared work plus the task's bucket score, as node by node ----------------------


def bench_placements(monkeypatch, shared: bool, conf_text: str, nodes: int, pods: int, gang: int,
                     weight: int = 10) -> list[tuple[str, str]]:
    """Bench jobs made ps/worker jobs (``bench --task-topology``), two sessions; the binds in order."""
    import argparse

    from vcsched import bench
    from vcsched.conf import parse_conf
    from vcsched.framework.effects import Bind
    from vcsched.framework.node_search import NodeSearch

    from . import bench_cluster

    def build(args):
        nodes_, pgs, pods_ = bench.build_cluster(args)
        bench.task_topology_jobs(pgs, pods_)
        return nodes_, pgs, pods_

    monkeypatch.setattr(bench_cluster, "build_cluster", build)
    if not shared:
        monkeypatch.setattr(NodeSearch, "shareable", lambda self, task: False)
    plugin = bench.TASK_TOPOLOGY_PLUGIN.replace("weight: 10", f"weight: {weight}")
    conf = parse_conf(conf_text.replace("  - name: predicates\n", "  - name: predicates\n" + plugin, 1))
    args = argparse.Namespace(nodes=nodes, node_cpu="8", node_memory="16Gi", node_pods=20, pods=pods,
                              gang_size=gang, cpu="250m,1,3", memory="512Mi,2Gi,5Gi", seed=7)
    effects = bench_cluster.run_cycles(args, conf, 2)
    monkeypatch.undo()
    return [(e.name, e.node) for e in effects if isinstance(e, Bind)]


ONLY_TOPOLOGY = 'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n'


@pytest.mark.parametrize("conf_name, nodes, pods, gang, weight", [
    ("default", 150, 900, 4, 10), ("default", 40, 400, 8, 10), ("default", 60, 500, 6, 1),
    ("only-topology", 60, 600, 8, 10), ("only-topology", 60, 600, 8, -10), ("default", 40, 400, 8, -3),
])
def test_shared_search_with_bucket_scores_equals_node_by_node(monkeypatch, conf_name, nodes, pods, gang, weight):
    """The node search shares the other scorers' work and adds each task's bucket score where it can win
    (its bucket's and job's nodes, and where the shared score plus its cap still reaches the best): the
    same placements, pod by pod, as scoring every node for every task; on a cluster that fills up, so that
    buckets stop fitting nodes (the score below the cap on ordinary nodes)."""
    from vcsched.conf import DEFAULT_SCHEDULER_CONF

    conf_text = DEFAULT_SCHEDULER_CONF if conf_name == "default" else ONLY_TOPOLOGY
    direct = bench_placements(monkeypatch, False, conf_text, nodes, pods, gang, weight)
    shared = bench_placements(monkeypatch, True, conf_text, nodes, pods, gang, weight)
    assert shared == direct
    assert len(direct) > pods // 3


# -- vcsched bench --task-topology -----------------------------------------------------------------------


def test_bench_task_topology_places_ps_worker_jobs(capsys, monkeypatch):
    """The flag makes every job ps/worker with the annotations, enables the plugin (which builds a
    manager per job), and every pod is placed."""
    import json

    from vcsched.cli import main

    managed: list[int] = []
    init = TaskTopologyPlugin.init_buckets

    def counting(self, ssn):
        init(self, ssn)
        managed.append(len(self.managers))

    monkeypatch.setattr(TaskTopologyPlugin, "init_buckets", counting)
    assert main(["bench", "--nodes", "20", "--pods", "80", "--gang-size", "8", "--task-topology", "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["pods_placed"] == 80
    assert managed[0] == 10


def test_bench_task_topology_jobs():
    import argparse

    from vcsched import bench

    args = argparse.Namespace(nodes=2, node_cpu="8", node_memory="16Gi", node_pods=20, pods=9, gang_size=5,
                              cpu="1", memory="1Gi", seed=1)
    _, pgs, pods = bench.build_cluster(args)
    bench.task_topology_jobs(pgs, pods)
    roles = [p["metadata"]["annotations"]["volcano.sh/task-spec"] for p in pods]
    assert roles == ["ps", "worker", "worker", "worker", "worker", "ps", "worker", "worker", "worker"]
    assert all(pg["metadata"]["annotations"] == bench.TASK_TOPOLOGY_ANNOTATIONS for pg in pgs)


def test_bench_task_topology_needs_two_pods_a_job(capsys):
    from vcsched.cli import main

    assert main(["bench", "--nodes", "2", "--pods", "4", "--task-topology"]) == 2
    assert "--task-topology: expected --gang-size of at least 2" in capsys.readouterr().err
