"""extender (plugins/extender.py, Volcano's plugins/extender/extender.go) end to end through ``vcsched
simulate``, against a real HTTP extender on loopback (tests/loopback_extender.py): what it is sent,
how its answers filter, score, choose victims and refuse, its timeouts, and ``extender.ignorable``."""

from __future__ import annotations

import json
import textwrap
import time

import pytest

from tests.loopback_extender import Answer, LoopbackExtender, unused_port
from vcsched.cli import main

from .conftest import SIM_NOW, node, pod, podgroup
from .test_preempt_reclaim import CLASSES, pc

BASE_TIERS = """
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
    enableReclaimable: false
  - name: conformance
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def conf(url: str | None, actions: str = "enqueue, allocate, backfill", tier: int = 2, **args) -> str:
    """The base tiers with the extender last in tier ``tier`` (1 or 2), its arguments as given
    (``predicateVerb="p"`` → ``extender.predicateVerb: p``)."""
    lines = [f'actions: "{actions}"', BASE_TIERS.strip("\n")]
    ext = ["  - name: extender", "    arguments:"]
    if url is not None:
        ext.append(f"      extender.urlPrefix: {url}")
    for key, value in args.items():
        ext.append(f"      extender.{key}: {json.dumps(value)}")
    text = "\n".join(lines) + "\n"
    if tier == 1:
        return text.replace("  - name: conformance\n", "  - name: conformance\n" + "\n".join(ext) + "\n", 1)
    return text + "\n".join(ext) + "\n"


@pytest.fixture
def run(tmp_path, capsys):
    """``vcsched simulate -o json``: (exit code, output or None, stderr)."""

    def go(manifests: str, conf_text: str, *args: str):
        path = tmp_path / "cluster.yaml"
        path.write_text(textwrap.dedent(manifests))
        conf_path = tmp_path / "scheduler.conf"
        conf_path.write_text(conf_text)
        code = main(["simulate", "-f", str(path), "-o", "json", "--now", SIM_NOW, "--conf", str(conf_path), *args])
        out, err = capsys.readouterr()
        return code, (json.loads(out) if code == 0 else None), err

    return go


THREE_NODES = node("n1") + node("n2") + node("n3")


def reject_n1(body):
    return {"status": "n1 has no licence", "code": 2} if body["node"]["Name"] == "n1" else {}


def prefer_n3(body):
    return {"nodeScore": {n["Name"]: 50.0 if n["Name"] == "n3" else 1.0 for n in body["nodes"]}}


# -- filtering and scoring ---------------------------------------------------------------------


def test_the_extender_filters_and_scores_and_sees_the_task_and_the_nodes(run):
    manifests = THREE_NODES + pod("p", cpu="1")
    # the premise: without the extender the pod goes to n1 (empty nodes tie; the first in search order)
    code, out, _ = run(manifests, conf(None))
    assert code == 0 and out["pods"]["default/p"]["node"] == "n1"

    with LoopbackExtender({"filter": reject_n1, "score": prefer_n3}) as ext:
        code, out, _ = run(manifests, conf(ext.url, predicateVerb="filter", prioritizeVerb="score"), "--cycles", "1")
    assert code == 0
    assert out["pods"]["default/p"]["node"] == "n3"
    assert ext.verbs() == ["filter", "filter", "filter", "score"]
    first = ext.received[0]
    assert first.path == "/ext/filter"
    assert first.headers["Content-Type"] == "application/json"
    asked = [b["node"]["Name"] for b in ext.bodies("filter")]
    assert sorted(asked) == ["n1", "n2", "n3"]
    body = ext.bodies("filter")[0]
    task, node_ = body["task"], body["node"]
    # Volcano's TaskInfo and NodeInfo as Go marshals them: field names, Resource, the pod and the node
    assert task["Name"] == "p" and task["Namespace"] == "default" and task["Status"] == 1  # Pending
    assert task["Resreq"] == {"MilliCPU": 1000, "Memory": 1 << 30, "ScalarResources": {"pods": 1}, "MaxTaskNum": 0}
    assert task["Pod"]["metadata"]["name"] == "p"
    assert task["Pod"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "1"
    assert node_["Node"]["metadata"]["name"] == node_["Name"]
    assert node_["Idle"]["MilliCPU"] == 4000 and node_["Allocatable"]["Memory"] == 8 << 30
    assert node_["State"] == {"Phase": 1, "Reason": ""} and node_["Tasks"] == {}
    # prioritize is asked about the nodes that passed, with its own envelope
    scored = ext.bodies("score")[0]
    assert set(scored) == {"task", "nodes"}
    assert sorted(n["Name"] for n in scored["nodes"]) == ["n2", "n3"]


def test_a_node_the_extender_rejects_everywhere_gives_its_message_as_the_reason(run):
    with LoopbackExtender({"filter": lambda b: {"status": "no licence", "code": 3}}) as ext:
        code, out, _ = run(THREE_NODES + pod("p"), conf(ext.url, predicateVerb="filter"), "--cycles", "1")
    assert code == 0
    assert out["pods"]["default/p"]["node"] is None
    assert out["pods"]["default/p"]["reason"] == "0/3 nodes are unavailable: 3 no licence."


def test_a_message_without_a_code_fails_the_node_and_a_code_without_a_message_does_not(run):
    """extender.go: a ``status`` with code 0 is read as Error; no message, whatever the code, passes."""
    def filter_(body):
        name = body["node"]["Name"]
        return {"n1": {"status": "busy"}, "n2": {"code": 2}, "n3": {"status": "odd", "code": 42}}[name]

    with LoopbackExtender({"filter": filter_}) as ext:
        code, out, _ = run(node("n1") + node("n2", cpu="2") + node("n3", cpu="2") + pod("a", cpu="2") + pod("b", cpu="2")
                           + pod("c", cpu="2"), conf(ext.url, predicateVerb="filter"), "--cycles", "1")
    assert code == 0
    # n1 fails (Error); n2 passes; n3's code 42 is in no failing set: it passes, as in Volcano
    placed = sorted(p["node"] for p in out["pods"].values() if p["node"])
    assert placed == ["n2", "n3"]
    waiting = [p for p in out["pods"].values() if p["node"] is None]
    assert len(waiting) == 1 and "1 busy" in waiting[0]["reason"]


def test_scores_decide_between_otherwise_equal_nodes(run):
    def score(body):
        return {"nodeScore": {"n1": 0, "n2": 100, "n3": 5}}

    with LoopbackExtender({"score": score}) as ext:
        code, out, _ = run(THREE_NODES + pod("p"), conf(ext.url, prioritizeVerb="score"), "--cycles", "1")
    assert code == 0 and out["pods"]["default/p"]["node"] == "n2"
    assert ext.verbs() == ["score"]


def test_managed_resources_limit_the_extender_to_pods_that_ask_for_them(run):
    gpu_pod = pod("gpu", cpu="1").replace("requests: {", "limits: {nvidia.com/gpu: 1}, requests: {", 1)
    with LoopbackExtender({"filter": reject_n1}) as ext:
        gpu_nodes = "".join(node(n, resources={"nvidia.com/gpu": "4"}) for n in ("n1", "n2", "n3"))
        code, out, _ = run(gpu_nodes + gpu_pod + pod("cpu"),
                           conf(ext.url, predicateVerb="filter", managedResources=["nvidia.com/gpu"]), "--cycles", "1")
    assert code == 0
    asked = {b["task"]["Name"] for b in ext.bodies("filter")}
    assert asked == {"gpu"}
    assert out["pods"]["default/gpu"]["node"] in ("n2", "n3")
    assert out["pods"]["default/cpu"]["node"] == "n1"


# -- failures: ignorable or not ---------------------------------------------------------------


def test_an_unreachable_ignorable_extender_is_a_warning_and_scheduling_goes_on(run):
    url = f"http://127.0.0.1:{unused_port()}/ext"
    code, out, err = run(THREE_NODES + pod("p"), conf(url, predicateVerb="filter", prioritizeVerb="score",
                                                       ignorable=True), "--cycles", "1")
    assert code == 0
    assert out["pods"]["default/p"]["node"] == "n1"
    assert "Predicate failed with error" in err and "connection refused" in err


def test_an_unreachable_extender_that_is_not_ignorable_fails_every_node(run):
    url = f"http://127.0.0.1:{unused_port()}/ext"
    code, out, err = run(THREE_NODES + pod("p"), conf(url, predicateVerb="filter"), "--cycles", "1")
    assert code == 0
    assert out["pods"]["default/p"]["node"] is None
    reason = out["pods"]["default/p"]["reason"]
    assert reason.startswith("0/3 nodes are unavailable: 3 Post \"" + url + "/filter\"")
    assert "connection refused" in reason


def test_a_failed_session_open_that_is_not_ignorable_leaves_the_extender_out_of_the_session(run):
    """extender.go OnSessionOpen: the open verb failing without ignorable returns before any callback
    is registered: the predicate is not asked and the pod is placed."""
    with LoopbackExtender({"open": lambda b: Answer(503), "filter": reject_n1}) as ext:
        code, out, err = run(THREE_NODES + pod("p"), conf(ext.url, onSessionOpenVerb="open", predicateVerb="filter"),
                             "--cycles", "1")
    assert code == 0
    assert ext.verbs() == ["open"]
    assert out["pods"]["default/p"]["node"] == "n1"
    assert "failed open with extender at URL " + ext.url + "/open, code 503" in err
    # ignorable: the open failure is passed over and the predicate registered
    with LoopbackExtender({"open": lambda b: Answer(503), "filter": reject_n1}) as ext:
        code, out, _ = run(THREE_NODES + pod("p"), conf(ext.url, onSessionOpenVerb="open", predicateVerb="filter",
                                                         ignorable=True), "--cycles", "1")
    assert ext.verbs()[:2] == ["open", "filter"]
    assert out["pods"]["default/p"]["node"] == "n2"


@pytest.mark.parametrize("ignorable", [True, False])
def test_a_slow_extender_times_out(run, ignorable):
    with LoopbackExtender({"filter": lambda b: Answer(body={}, delay=1.0)}) as ext:
        started = time.monotonic()
        code, out, err = run(node("n1") + pod("p"), conf(ext.url, predicateVerb="filter", httpTimeout="50ms",
                                                          ignorable=ignorable), "--cycles", "1")
        elapsed = time.monotonic() - started
    assert code == 0
    assert ext.verbs() == ["filter"]
    assert elapsed < 1.0  # the call gave up before the extender answered
    assert "Client.Timeout exceeded" in err
    if ignorable:
        assert out["pods"]["default/p"]["node"] == "n1"
    else:
        assert out["pods"]["default/p"]["node"] is None
        assert "Client.Timeout exceeded" in out["pods"]["default/p"]["reason"]


def test_an_answer_that_is_not_200_or_not_volcanos_type_is_a_failure(run):
    answers = {"n1": Answer(500, b"oops"), "n2": {"status": 7, "code": 2}, "n3": Answer(body=b"[1, 2]")}
    with LoopbackExtender({"filter": lambda b: answers[b["node"]["Name"]]}) as ext:
        code, out, _ = run(THREE_NODES + pod("p"), conf(ext.url, predicateVerb="filter"), "--cycles", "1")
    assert code == 0
    reason = out["pods"]["default/p"]["reason"]
    assert f"failed filter with extender at URL {ext.url}/filter, code 500" in reason
    assert "json: cannot unmarshal number 7 into Go struct field PredicateResponse.status of type string" in reason
    assert "json: cannot unmarshal array into Go value of type extender.PredicateResponse" in reason


def test_a_failed_prioritize_chooses_no_node_unless_ignorable(run):
    """Volcano's PrioritizeNodes returns nothing when a batch scorer errs: the gradient gives no node
    and allocate moves on; ignorable: the extender's scores are left out."""
    manifests = THREE_NODES + pod("p")
    with LoopbackExtender({"score": lambda b: Answer(500)}) as ext:
        code, out, err = run(manifests, conf(ext.url, prioritizeVerb="score"), "--cycles", "1")
    assert code == 0 and out["pods"]["default/p"]["node"] is None
    assert "Prioritize failed with error" in err
    with LoopbackExtender({"score": lambda b: Answer(500)}) as ext:
        code, out, _ = run(manifests, conf(ext.url, prioritizeVerb="score", ignorable=True), "--cycles", "1")
    assert out["pods"]["default/p"]["node"] == "n1"
    # an errorMessage in a 200 answer is an error even when ignorable
    with LoopbackExtender({"score": lambda b: {"errorMessage": "model not loaded"}}) as ext:
        code, out, _ = run(manifests, conf(ext.url, prioritizeVerb="score", ignorable=True), "--cycles", "1")
    assert out["pods"]["default/p"]["node"] is None
    # one node left after the predicates: it is taken without scoring, as in Volcano
    with LoopbackExtender({"score": lambda b: Answer(500)}) as ext:
        code, out, _ = run(node("n1") + pod("p"), conf(ext.url, prioritizeVerb="score"), "--cycles", "1")
    assert out["pods"]["default/p"]["node"] == "n1" and ext.verbs() == []


# -- session open and close, jobs and queues ----------------------------------------------------


def test_session_open_and_close_bodies(run):
    manifests = THREE_NODES.replace("labels: {kubernetes.io/hostname: n3}",
                                    "labels: {kubernetes.io/hostname: n3, volcano.sh/revocable-zone: rz1}")
    manifests += podgroup("g", 1) + pod("g-0", group="g")
    with LoopbackExtender({"open": lambda b: {}, "close": lambda b: {}}) as ext:
        code, out, _ = run(manifests, conf(ext.url, onSessionOpenVerb="open", onSessionCloseVerb="close"),
                           "--cycles", "2")
    assert code == 0
    assert ext.verbs() == ["open", "close", "open", "close"]
    opened = ext.bodies("open")[0]
    assert list(opened) == ["Jobs", "Nodes", "Queues", "NamespaceInfo", "RevocableNodes", "NodeList"]
    assert sorted(opened["Nodes"]) == ["n1", "n2", "n3"] and list(opened["RevocableNodes"]) == ["n3"]
    job = opened["Jobs"]["default/g"]
    assert job["Name"] == "g" and job["MinAvailable"] == 1 and job["Queue"] == "default"
    assert [t["Name"] for t in job["Tasks"].values()] == ["g-0"]
    assert job["PodGroup"]["spec"]["minMember"] == 1
    assert opened["Queues"]["default"]["Name"] == "default"
    assert ext.bodies("close") == [{}, {}]
    # the second session sees the pod bound by the first on its node
    second = ext.bodies("open")[1]
    [bound] = [n for n in second["Nodes"].values() if n["Tasks"]]
    assert [t["Name"] for t in bound["Tasks"].values()] == ["g-0"]


MIN_RESOURCES = "  minResources: {cpu: \"1\"}"  # enqueue asks JobEnqueueable only of a group with minResources


def test_job_enqueueable_keeps_a_job_out_and_job_enqueued_is_told(run):
    manifests = (node("n1") + podgroup("a", 1, extra=MIN_RESOURCES) + pod("a-0", group="a")
                 + podgroup("b", 1, extra=MIN_RESOURCES) + pod("b-0", group="b"))

    def enqueueable(body):
        return {"status": -1 if body["job"]["Name"] == "b" else 1}

    with LoopbackExtender({"enq": enqueueable, "enqd": lambda b: {}}) as ext:
        code, out, _ = run(manifests, conf(ext.url, jobEnqueueableVerb="enq", jobEnqueuedVerb="enqd"), "--cycles", "1")
    assert code == 0
    assert out["pods"]["default/a-0"]["node"] == "n1"
    assert out["pods"]["default/b-0"]["node"] is None
    assert out["podgroups"]["default/b"]["phase"] == "Pending"
    assert [b["job"]["Name"] for b in ext.bodies("enqd")] == ["a"]


@pytest.mark.parametrize("ignorable, admitted", [(True, True), (False, False)])
def test_job_enqueueable_failing(run, ignorable, admitted):
    manifests = node("n1") + podgroup("a", 1, extra=MIN_RESOURCES) + pod("a-0", group="a")
    url = f"http://127.0.0.1:{unused_port()}/ext"
    code, out, _ = run(manifests, conf(url, jobEnqueueableVerb="enq", ignorable=ignorable), "--cycles", "1")
    assert code == 0
    assert (out["pods"]["default/a-0"]["node"] == "n1") is admitted


def test_job_ready_holds_a_job_back(run):
    manifests = node("n1") + podgroup("a", 1) + pod("a-0", group="a") + podgroup("b", 1) + pod("b-0", group="b")
    with LoopbackExtender({"ready": lambda b: {"status": b["job"]["Name"] != "b"}}) as ext:
        code, out, _ = run(manifests, conf(ext.url, jobReadyVerb="ready"), "--cycles", "1")
    assert code == 0
    assert out["pods"]["default/a-0"]["node"] == "n1"
    assert out["pods"]["default/b-0"]["node"] is None
    assert all(set(b) == {"job"} for b in ext.bodies("ready"))


@pytest.mark.parametrize("ignorable, bound", [(True, False), (False, True)])
def test_job_ready_and_queue_overused_failing(run, ignorable, bound):
    """extender.go answers ``!ignorable`` for both: ignorable, the job is not ready (and the queue not
    overused); not ignorable, the job is ready, and an overused queue takes nothing."""
    url = f"http://127.0.0.1:{unused_port()}/ext"
    manifests = node("n1") + podgroup("a", 1) + pod("a-0", group="a")
    code, out, _ = run(manifests, conf(url, jobReadyVerb="ready", ignorable=ignorable), "--cycles", "1")
    assert code == 0 and (out["pods"]["default/a-0"]["node"] == "n1") is bound
    code, out, _ = run(manifests, conf(url, queueOverusedVerb="over", ignorable=ignorable), "--cycles", "1")
    assert code == 0 and (out["pods"]["default/a-0"]["node"] == "n1") is ignorable


def test_queue_overused_stops_allocation_in_the_queue(run):
    manifests = node("n1") + podgroup("a", 1) + pod("a-0", group="a")
    with LoopbackExtender({"over": lambda b: {"overused": True}}) as ext:
        code, out, _ = run(manifests, conf(ext.url, queueOverusedVerb="over"), "--cycles", "1")
    assert code == 0 and out["pods"]["default/a-0"]["node"] is None
    assert ext.bodies("over")[0]["queue"]["Name"] == "default"
    with LoopbackExtender({"over": lambda b: {"overused": False}}) as ext:
        code, out, _ = run(manifests, conf(ext.url, queueOverusedVerb="over"), "--cycles", "1")
    assert out["pods"]["default/a-0"]["node"] == "n1"


# -- event handlers --------------------------------------------------------------------------------


def test_allocate_func_refuses_a_placement_and_deallocate_func_is_told_of_the_rollback(run):
    def allocate(body):
        return {"errorMessage": "device busy"} if body["task"]["NodeName"] == "n1" else {}

    with LoopbackExtender({"alloc": allocate, "dealloc": lambda b: {}}) as ext:
        code, out, _ = run(node("n1") + pod("p"), conf(ext.url, allocateFuncVerb="alloc", deallocateFuncVerb="dealloc"),
                           "--cycles", "1")
    assert code == 0 and out["pods"]["default/p"]["node"] is None
    assert ext.verbs()[:2] == ["alloc", "dealloc"]
    assert ext.bodies("alloc")[0]["task"]["Status"] == 2  # Allocated, on n1
    assert ext.bodies("dealloc")[0]["task"]["Name"] == "p"
    # an answer that says nothing lets the placement stand
    with LoopbackExtender({"alloc": lambda b: {}}) as ext:
        code, out, _ = run(node("n1") + pod("p"), conf(ext.url, allocateFuncVerb="alloc"), "--cycles", "1")
    assert out["pods"]["default/p"]["node"] == "n1" and ext.verbs() == ["alloc"]


@pytest.mark.parametrize("ignorable, placed", [(True, "n1"), (False, None)])
def test_allocate_func_unreachable(run, ignorable, placed):
    url = f"http://127.0.0.1:{unused_port()}/ext"
    code, out, _ = run(node("n1") + pod("p"), conf(url, allocateFuncVerb="alloc", ignorable=ignorable), "--cycles", "1")
    assert code == 0 and out["pods"]["default/p"]["node"] == placed


# -- victims ---------------------------------------------------------------------------------------


def low_and_high() -> str:
    """n1 full with low-0 and low-1 (2 CPU each); high-0 (2 CPU, higher priority) waits."""
    return (CLASSES + node("n1") + podgroup("low", 1, extra=pc("low"))
            + pod("low-0", cpu="2", group="low", node_name="n1", phase="Running", spec_extra=pc("low"))
            + pod("low-1", cpu="2", group="low", node_name="n1", phase="Running", spec_extra=pc("low"))
            + podgroup("high", 1, extra=pc("high"))
            + pod("high-0", cpu="2", group="high", spec_extra=pc("high")))


def test_preemptable_victims_are_the_extenders_choice(run):
    # the premise: without the extender preempt evicts low-1 (the task that orders last goes first)
    code, out, _ = run(low_and_high(), conf(None, actions="enqueue, allocate, preempt"), "--cycles", "1")
    assert out["evicted"] == ["default/low-1"]

    def preemptable(body):
        chosen = [t for t in body["evictees"] if t["Name"] == "low-0"]
        return {"status": 1, "victims": chosen}

    with LoopbackExtender({"victims": preemptable}) as ext:
        code, out, _ = run(low_and_high(), conf(ext.url, actions="enqueue, allocate, preempt", tier=1,
                                                 preemptableVerb="victims"), "--cycles", "1")
    assert code == 0
    assert out["evicted"] == ["default/low-0"]
    asked = ext.bodies("victims")[0]
    assert asked["evictor"]["Name"] == "high-0"
    assert sorted(t["Name"] for t in asked["evictees"]) == ["low-0", "low-1"]


@pytest.mark.parametrize("answer, evicted", [
    (lambda b: {"status": 0}, ["default/low-1"]),  # abstains: the other plugins decide
    (lambda b: {"status": 1, "victims": []}, []),  # permits none
    (lambda b: {"status": 1, "victims": [{"UID": "not-a-candidate"}]}, []),  # names no candidate
    (lambda b: Answer(500), []),  # fails, not ignorable: Reject
])
def test_preemptable_answers(run, answer, evicted):
    with LoopbackExtender({"victims": answer}) as ext:
        code, out, _ = run(low_and_high(), conf(ext.url, actions="enqueue, allocate, preempt", tier=1,
                                                 preemptableVerb="victims"), "--cycles", "1")
    assert code == 0 and out["evicted"] == evicted


def test_reclaimable_victims_are_the_extenders_choice(run):
    queues = "".join(f"""
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: {q}
spec:
  weight: 1
""" for q in ("qa", "qb"))
    manifests = (queues + node("n1") + podgroup("a", 1, queue="qa")
                 + pod("a-0", cpu="2", group="a", node_name="n1", phase="Running")
                 + pod("a-1", cpu="2", group="a", node_name="n1", phase="Running")
                 + podgroup("b", 1, queue="qb") + pod("b-0", cpu="2", group="b"))

    def reclaimable(body):
        return {"status": 1, "victims": [t for t in body["evictees"] if t["Name"] == "a-0"]}

    with LoopbackExtender({"victims": reclaimable}) as ext:
        code, out, _ = run(manifests, conf(ext.url, actions="enqueue, allocate, reclaim", tier=1,
                                           reclaimableVerb="victims"), "--cycles", "1")
    assert code == 0
    assert ext.bodies("victims"), "reclaim asked the extender"
    assert out["evicted"] == ["default/a-0"]


# -- bad arguments -----------------------------------------------------------------------------------


@pytest.mark.parametrize("args, field, problem", [
    ({"urlPrefix": "ftp://127.0.0.1/x", "predicateVerb": "p"}, "extender.urlPrefix", "expected an http:// or https:// URL"),
    ({"urlPrefix": "http://127.0.0.1:port/x"}, "extender.urlPrefix", "'http://127.0.0.1:port/x'"),
    ({"predicateVerb": "p"}, "extender.urlPrefix", "required when a verb is set"),
    ({"urlPrefix": "http://127.0.0.1", "httpTimeout": "1x"}, "extender.httpTimeout", "expected a duration"),
    ({"urlPrefix": "http://127.0.0.1", "httpTimeout": 5}, "extender.httpTimeout", "expected a string"),
    ({"urlPrefix": "http://127.0.0.1", "predicateVerb": 5}, "extender.predicateVerb", "expected a string"),
    ({"urlPrefix": "http://127.0.0.1", "ignorable": "maybe"}, "extender.ignorable", "expected a bool"),
    ({"urlPrefix": "http://127.0.0.1", "managedResources": "nvidia.com/gpu"}, "extender.managedResources",
     "expected a list of resource names"),
    ({"urlPrefix": "http://127.0.0.1", "managedResources": ["nvidia.com/gpu", 3]}, "extender.managedResources",
     "expected a list of resource names"),
])
def test_bad_arguments_refuse_the_conf(run, args, field, problem):
    url = args.pop("urlPrefix", None)
    code, _, err = run(node("n1") + pod("p"), conf(url, **args))
    assert code == 2
    assert f"tiers[1].plugins[4].arguments.{field}" in err and problem in err
    assert "Traceback" not in err
