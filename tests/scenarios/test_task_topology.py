"""task-topology end to end through ``vcsched simulate`` (plugins/task_topology.py, Volcano's
plugins/task-topology).

Volcano's own test, topology_test.go · Test_readTopologyFromPgAnnotations, checks only what the
annotations are read as (its cases are also unit tests, tests/unit/test_task_topology.py).  Here each
case is a job read by the running scheduler: a PodGroup ``job1`` with the case's annotations and one
pod per task of the case (``job1-ps-0`` ... with ``volcano.sh/task-spec``), 1 CPU each, on nodes of
3 CPU, and a conf where task-topology is the only scorer.  A topology that is read shows in where the
pods land (the pods of a bucket share a node, ps-0 and ps-1 do not); one that is not is a Warning event
carrying Volcano's error, and the placement is the one without the plugin.  Then the design document's
example as a Volcano batch Job, and what the Go test leaves out: task order, bound pods, the weight,
bad input.
"""

from __future__ import annotations

import pytest

from .conftest import node

AFFINITY = "volcano.sh/task-topology-affinity"
ANTI_AFFINITY = "volcano.sh/task-topology-anti-affinity"
TASK_ORDER = "volcano.sh/task-topology-task-order"

# Volcano's user guide (docs/user-guide/how_to_use_task_topology_plugin.md), less nodeorder and binpack,
# so that task-topology is the only scorer
CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: task-topology
    arguments:
      task-topology.weight: 10
  - name: proportion
"""
PLAIN_CONF = CONF.replace("  - name: task-topology\n    arguments:\n      task-topology.weight: 10\n", "")
# the user guide's conf as it stands
GUIDE_CONF = CONF + "  - name: nodeorder\n  - name: binpack\n"
assert PLAIN_CONF != CONF


def job1(tasks: list[tuple[str, int]], annotations: dict[str, str] | None, *, name: str = "job1",
         cpu: str = "1", min_member: int | None = None) -> str:
    """PodGroup ``name`` with ``annotations`` and, per (task, replicas), pods ``<name>-<task>-<i>``, made
    last task first and highest index first, so that the default order (index, then creation) is not
    the one the plugin gives."""
    ann = "".join(f"\n    {k}: {v!r}" for k, v in (annotations or {}).items())
    total = sum(n for _, n in tasks)
    docs = [f"""
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: {name}
  annotations: {{}}{ann and chr(10) + '  annotations:' + ann if ann else ''}
spec: {{minMember: {total if min_member is None else min_member}, queue: default}}
""".replace("  annotations: {}\n  annotations:", "  annotations:")]
    for task, replicas in reversed(tasks):
        for i in reversed(range(replicas)):
            docs.append(f"""
---
apiVersion: v1
kind: Pod
metadata:
  name: {name}-{task}-{i}
  annotations: {{scheduling.k8s.io/group-name: {name}, volcano.sh/task-spec: {task}}}
  labels: {{volcano.sh/task-spec: {task}}}
spec:
  schedulerName: volcano
  containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
""")
    return "".join(docs)


NODES = node("n1", cpu="3") + node("n2", cpu="3") + node("n3", cpu="3")
TF = [("ps", 2), ("worker", 2), ("chief", 1), ("evaluator", 1)]


def where(out: dict, name: str) -> str | None:
    return out["pods"][f"default/{name}"]["node"]


def placements(out: dict) -> dict[str, str | None]:
    return {k: v["node"] for k, v in out["pods"].items()}


def warnings(out: dict) -> list[str]:
    return [e["message"] for e in out["events"] if e["reason"] == "InvalidTaskTopology"]


def assert_case0_buckets(out: dict, ps: str = "ps", worker: str = "worker", chief: str = "chief") -> None:
    """Buckets ps-0, worker-0, chief-0 | ps-1, worker-1 (evaluator is in the task order only: in none),
    each on a node of its own."""
    a = where(out, f"job1-{ps}-0")
    b = where(out, f"job1-{ps}-1")
    assert a is not None and b is not None and a != b
    assert where(out, f"job1-{worker}-0") == a and where(out, f"job1-{chief}-0") == a
    assert where(out, f"job1-{worker}-1") == b
    assert all(v is not None for v in placements(out).values())


def test_premise_without_the_plugin_the_buckets_do_not_form(simulate):
    code, out = simulate(NODES + job1(TF, {AFFINITY: "ps,worker;ps,chief", ANTI_AFFINITY: "ps;worker,chief",
                                           TASK_ORDER: "ps,worker,chief,evaluator"}), conf=PLAIN_CONF)
    assert code == 0
    with pytest.raises(AssertionError):
        assert_case0_buckets(out)


def test_read_correct_annotation(simulate):
    """Test_readTopologyFromPgAnnotations, case 0 "correct annotation": affinity ps,worker;ps,chief,
    anti-affinity ps;worker,chief, order ps,worker,chief,evaluator.  ps (self anti-affinity) opens two
    buckets, worker-0 joins the first, worker-1 the lighter second, chief-0 (affine to ps, anti-affine to
    worker: 0 in both) the older; the first bucket is placed on one node, the second on another."""
    code, out = simulate(NODES + job1(TF, {AFFINITY: "ps,worker;ps,chief", ANTI_AFFINITY: "ps;worker,chief",
                                           TASK_ORDER: "ps,worker,chief,evaluator"}), conf=CONF)
    assert code == 0
    assert_case0_buckets(out)
    assert warnings(out) == []


def test_read_task_names_with_dashes(simulate):
    """Test_readTopologyFromPgAnnotations, case 1 "correct annotation with tasks whose names contain `-`"."""
    tasks = [("ps-some", 2), ("worker-another-some", 2), ("chief-kk", 1), ("evaluator-tt", 1)]
    code, out = simulate(NODES + job1(tasks, {
        AFFINITY: "ps-some,worker-another-some;ps-some,chief-kk",
        ANTI_AFFINITY: "ps-some;worker-another-some,chief-kk",
        TASK_ORDER: "ps-some,worker-another-some,chief-kk,evaluator-tt"}), conf=CONF)
    assert code == 0
    assert_case0_buckets(out, "ps-some", "worker-another-some", "chief-kk")
    assert warnings(out) == []


def test_read_nil_annotation(simulate):
    """Test_readTopologyFromPgAnnotations, case 2 "nil annotation": no topology, no warning; the job is
    placed as without the plugin."""
    manifests = NODES + job1(TF, None)
    code, out = simulate(manifests, conf=CONF)
    assert code == 0
    assert warnings(out) == []
    _, plain = simulate(manifests, conf=PLAIN_CONF)
    assert placements(out) == placements(plain)


@pytest.mark.parametrize("tasks, annotations, message", [
    # case 3 "invalid annotation": the affinity is read first and fails first
    (TF, {AFFINITY: "$%GF$^trtqwrg^", ANTI_AFFINITY: "ps;worker,chief;#@FGEW^vfa897bgs;;",
          TASK_ORDER: "ps,worker,chief,evaluator,,,"},
     f"metadata.annotations[{AFFINITY}]: task $%GF$^trtqwrg^ do not exist in job <default/job1>"),
    # case 4 "invalid task name": only the task order is wrong, and the whole topology goes
    (TF[:2], {AFFINITY: "ps,worker", ANTI_AFFINITY: "ps", TASK_ORDER: "ps,worker,chief"},
     f"metadata.annotations[{TASK_ORDER}]: task chief do not exist in job <default/job1>"),
    # case 5 "duplicate task name"
    (TF[:2], {AFFINITY: "ps,worker", ANTI_AFFINITY: "ps,ps", TASK_ORDER: "ps,worker"},
     f"metadata.annotations[{ANTI_AFFINITY}]: task ps is duplicate in job <default/job1>"),
], ids=["case3-invalid-annotation", "case4-invalid-task-name", "case5-duplicate-task-name"])
def test_read_invalid(simulate, tasks, annotations, message):
    """Test_readTopologyFromPgAnnotations, cases 3 to 5: Volcano's error, as a Warning event on the
    PodGroup; the job is scheduled as if it had no topology (Volcano logs and goes on)."""
    manifests = NODES + job1(tasks, annotations)
    code, out = simulate(manifests, conf=CONF)
    assert code == 0
    [warning] = warnings(out)
    assert warning.startswith(message + " (value ")
    assert warning.endswith("the task-topology plugin ignores the job's task topology")
    [event] = [e for e in out["events"] if e["reason"] == "InvalidTaskTopology"]
    assert event["object"] == "PodGroup default/job1" and event["type"] == "Warning" and event["count"] == 1
    _, plain = simulate(manifests, conf=PLAIN_CONF)
    assert placements(out) == placements(plain)
    assert all(v is not None for v in placements(out).values())


def test_read_redundant_punctuation(simulate):
    """Test_readTopologyFromPgAnnotations, case 6 "redundant punctuations": empty names are no error and
    mean nothing; the buckets are case 0's."""
    code, out = simulate(NODES + job1(TF, {AFFINITY: "ps,worker;ps,,chief,;", ANTI_AFFINITY: "ps;worker,chief;;;",
                                           TASK_ORDER: "ps,worker,chief,evaluator,,,"}), conf=CONF)
    assert code == 0
    assert_case0_buckets(out)
    assert warnings(out) == []


# -- the design document's example, as a Volcano batch Job -------------------------------------


DESIGN_NODES = node("node1", cpu="2") + node("node2", cpu="1") + node("node3", cpu="4")


def tf_job(annotations: str, ps: int = 2, workers: int = 4, cpu: str = "1") -> str:
    return f"""
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: tf
  annotations:
{annotations}
spec:
  minAvailable: {ps + workers}
  schedulerName: volcano
  tasks:
  - name: ps
    replicas: {ps}
    template:
      spec:
        containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
  - name: worker
    replicas: {workers}
    template:
      spec:
        containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
"""


PS_WORKER = f"    {AFFINITY}: \"ps,worker\"\n    {ANTI_AFFINITY}: \"ps\""


@pytest.mark.parametrize("conf", [CONF, GUIDE_CONF], ids=["alone", "with-nodeorder-and-binpack"])
def test_design_document_example(simulate, conf):
    """docs/design/task-topology-plugin.md: ps0, ps1, worker0..3 (1 CPU each), affinity ps,worker,
    anti-affinity ps, nodes of 2, 1 and 4 CPU.  Buckets ps0, worker0, worker2 | ps1, worker1, worker3;
    ps0 scores node3 best (the whole bucket fits) and its bucket follows; ps1 avoids node3 (anti-affinity)
    for node1 and worker1 follows it; worker3 ties node2 and node3 (the document leaves it to the other
    scorers).  The same with the guide's conf, nodeorder and binpack beside task-topology (weight 10)."""
    code, out = simulate(DESIGN_NODES + tf_job(PS_WORKER), conf=conf)
    assert code == 0
    assert [where(out, f"tf-{n}") for n in ("ps-0", "worker-0", "worker-2")] == ["node3"] * 3
    assert [where(out, f"tf-{n}") for n in ("ps-1", "worker-1")] == ["node1"] * 2
    assert where(out, "tf-worker-3") in ("node2", "node3")
    assert out["jobs"]["default/tf"]["phase"] == "Running"


def test_design_document_example_premise(simulate):
    """Without the plugin the ps do not keep their workers (the premise of the test above)."""
    code, out = simulate(DESIGN_NODES + tf_job(PS_WORKER), conf=PLAIN_CONF)
    assert code == 0
    assert not ([where(out, f"tf-{n}") for n in ("ps-0", "worker-0", "worker-2")] == ["node3"] * 3
                and [where(out, f"tf-{n}") for n in ("ps-1", "worker-1")] == ["node1"] * 2)


def test_ps_anti_affinity_spreads_parameter_servers(simulate):
    """Self anti-affinity alone: three ps, three nodes with room for all of them on each: one per node."""
    code, out = simulate(NODES + job1([("ps", 3)], {ANTI_AFFINITY: "ps"}), conf=CONF)
    assert code == 0
    assert sorted(where(out, f"job1-ps-{i}") for i in range(3)) == ["n1", "n2", "n3"]
    _, plain = simulate(NODES + job1([("ps", 3)], {ANTI_AFFINITY: "ps"}), conf=PLAIN_CONF + "  - name: binpack\n")
    assert len({where(plain, f"job1-ps-{i}") for i in range(3)}) == 1  # binpack alone packs them


def test_self_affinity_packs_a_task(simulate):
    """Self affinity: the workers share one node while it has room, against nodeorder's least-requested
    score, which alone spreads them."""
    manifests = NODES + job1([("worker", 3)], {AFFINITY: "worker"})
    nodeorder = "  - name: nodeorder\n"
    code, out = simulate(manifests, conf=CONF + nodeorder)
    assert code == 0
    assert len({where(out, f"job1-worker-{i}") for i in range(3)}) == 1
    _, plain = simulate(manifests, conf=PLAIN_CONF + nodeorder)
    assert len({where(plain, f"job1-worker-{i}") for i in range(3)}) == 3


@pytest.mark.parametrize("order, placed", [("ps,worker", "job1-ps-0"), ("worker,ps", "job1-worker-0")])
def test_task_order_decides_who_goes_first(simulate, order, placed):
    """One node with room for one of two 2-CPU pods, minMember 1: the task the task-order annotation names
    first is placed (both tasks in a bucket: they are named in the affinity)."""
    manifests = node("n1", cpu="2") + job1([("ps", 1), ("worker", 1)], {AFFINITY: "ps,worker", TASK_ORDER: order},
                                          cpu="2", min_member=1)
    code, out = simulate(manifests, conf=CONF)
    assert code == 0
    assert [k for k, v in placements(out).items() if v] == [f"default/{placed}"]


def test_a_task_named_only_in_the_task_order_is_in_no_bucket(simulate):
    """worker named in the task order but in no relation: it is out of every bucket and goes after ps,
    whatever the order says."""
    manifests = node("n1", cpu="2") + job1([("ps", 1), ("worker", 1)], {ANTI_AFFINITY: "ps", TASK_ORDER: "worker,ps"},
                                          cpu="2", min_member=1)
    code, out = simulate(manifests, conf=CONF)
    assert code == 0
    assert [k for k, v in placements(out).items() if v] == ["default/job1-ps-0"]


def test_pending_workers_follow_a_running_ps(simulate):
    """A ps already Running on n3 makes a bucket there; the workers, affine to ps, join it."""
    running = job1([("ps", 1)], None).split("---\napiVersion: v1\nkind: Pod")[1]
    running = "---\napiVersion: v1\nkind: Pod" + running.replace("spec:\n", "spec:\n  nodeName: n3\n") + \
        "status: {phase: Running}\n"
    manifests = NODES + job1([("worker", 2)], {AFFINITY: "ps,worker"}, min_member=1) + running
    code, out = simulate(manifests, conf=CONF)
    assert code == 0
    assert where(out, "job1-worker-0") == where(out, "job1-worker-1") == "n3"


def test_weight_zero_is_no_preference(simulate):
    """``task-topology.weight: 0``: the scores vanish, the order stays (same placement as without scores)."""
    manifests = DESIGN_NODES + tf_job(PS_WORKER)
    code, out = simulate(manifests, conf=CONF.replace("weight: 10", "weight: 0"))
    assert code == 0
    assert not ([where(out, f"tf-{n}") for n in ("ps-0", "worker-0", "worker-2")] == ["node3"] * 3
                and [where(out, f"tf-{n}") for n in ("ps-1", "worker-1")] == ["node1"] * 2)


# -- bad input ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ['"10"', "1.5", "true", "[1]"])
def test_a_weight_that_is_not_an_integer_is_refused(simulate, value):
    """Volcano logs it and keeps 1; vcsched refuses the conf, naming the argument (exit 2)."""
    code, err = simulate(NODES, conf=CONF.replace("weight: 10", f"weight: {value}"))
    assert code == 2
    assert "task-topology.weight: expected an integer" in err
    assert "Traceback" not in err


def test_a_bad_annotation_is_reported_once_across_cycles(simulate):
    """The job waits several cycles (gang: 4 pods, room for 3); the Warning event is written once."""
    manifests = node("n1", cpu="3") + job1([("ps", 2), ("worker", 2)], {AFFINITY: "ps,chief"})
    code, out = simulate(manifests, "--cycles", "4", conf=CONF)
    assert code == 0
    [event] = [e for e in out["events"] if e["reason"] == "InvalidTaskTopology"]
    assert event["count"] == 1
    assert "task chief do not exist in job <default/job1>" in event["message"]


def test_a_bad_annotation_on_a_batch_job(simulate):
    """On a Volcano Job the annotation reaches the PodGroup (named after the Job and its UID), where
    Volcano reads it; the Job runs without topology."""
    code, out = simulate(DESIGN_NODES + tf_job(f"    {AFFINITY}: \"ps,chief\""), conf=CONF)
    assert code == 0
    [message] = warnings(out)
    assert message.startswith(f"metadata.annotations[{AFFINITY}]: task chief do not exist in job <default/tf-")
    assert out["jobs"]["default/tf"]["phase"] == "Running"


def test_a_negative_weight_turns_affinity_into_repulsion(simulate):
    """Volcano takes any integer weight: ``-10`` makes the bucket score a penalty, and the self-affine
    workers spread out (their tasks then search node by node: no cap bounds a negative score)."""
    manifests = NODES + job1([("worker", 3)], {AFFINITY: "worker"})
    code, out = simulate(manifests, conf=CONF.replace("weight: 10", "weight: -10"))
    assert code == 0
    assert sorted(where(out, f"job1-worker-{i}") for i in range(3)) == ["n1", "n2", "n3"]


def test_the_example_in_conf_examples(tmp_path, capsys):
    """conf/examples/task-topology.yaml, as its header tells it."""
    import json
    from pathlib import Path

    from vcsched.cli import main

    example = Path(__file__).resolve().parents[2] / "conf" / "examples" / "task-topology.yaml"
    assert main(["simulate", "-f", str(example), "-o", "json", "--now", "2026-01-01T01:00:00Z"]) == 0
    out = json.loads(capsys.readouterr().out)
    ps0, ps1 = where(out, "tf-ps-0"), where(out, "tf-ps-1")
    assert ps0 == "node3" and ps1 == "node1"
    workers = [where(out, f"tf-worker-{i}") for i in range(4)]
    assert None not in workers and ps0 in workers and ps1 in workers
