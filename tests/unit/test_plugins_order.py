"""priority, conformance and binpack against spec/framework.md §8.1, §8.3 and §8.9.

The session here is a small fake: the plugins only need its snapshot attributes
and ``add``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from vcsched.api.job_info import JobInfo, PodGroup
from vcsched.api.node_info import NodeInfo, NodeSpec
from vcsched.api.resource import Resource
from vcsched.api.task_info import TaskInfo, new_task_info
from vcsched.api.types import TaskStatus, Vote
from vcsched.framework.arguments import ArgumentError, Arguments
from vcsched.framework.interface import Point
from vcsched.plugins.binpack import BinpackPlugin
from vcsched.plugins.conformance import ConformancePlugin
from vcsched.plugins.priority import PriorityPlugin

from .fakes import FakeSession


def task(name: str, group: str, cpu: str = "1", memory: str = "1Gi", *, ns: str = "default",
         phase: str = "Running", node_name: str = "n1", priority: int | None = None,
         priority_class: str = "", extra: dict[str, str] | None = None) -> TaskInfo:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory, **(extra or {})}}}],
        "nodeName": node_name,
    }
    if priority is not None:
        spec["priority"] = priority
    if priority_class:
        spec["priorityClassName"] = priority_class
    pod = {
        "metadata": {"name": name, "namespace": ns, "uid": f"{ns}/{name}",
                     "annotations": {"scheduling.k8s.io/group-name": group}},
        "spec": spec,
        "status": {"phase": phase},
    }
    return new_task_info(pod)


def job(name: str, tasks: Iterable[TaskInfo] = (), *, ns: str = "default", priority: int = 0,
        min_member: int = 1) -> JobInfo:
    j = JobInfo(f"{ns}/{name}", PodGroup(name, ns, f"uid-{name}", 0.0, min_member=min_member, queue="q"))
    j.priority = priority
    for t in tasks:
        j.add_task(t)
    return j


def node(name: str, used: Iterable[TaskInfo] = (), **allocatable: str) -> NodeInfo:
    alloc = Resource.from_list({"pods": "110", **allocatable})
    n = NodeInfo(name, {"metadata": {"name": name}}, NodeSpec(), alloc, alloc.clone())
    for t in used:
        n.add_task(t)
    return n


def open_plugin(cls, ssn: FakeSession, args: dict[str, Any] | None = None):
    plugin = cls(Arguments(args or {}))
    plugin.on_session_open(ssn)
    return plugin


# -- priority ------------------------------------------------------------------------------


def test_priority_registers_its_points() -> None:
    ssn = FakeSession()
    open_plugin(PriorityPlugin, ssn)
    assert set(ssn.registered) == {Point.TASK_ORDER, Point.JOB_ORDER, Point.PREEMPTABLE, Point.UNIFIED_EVICTABLE,
                                   Point.JOB_STARVING}


def test_priority_task_and_job_order() -> None:
    ssn = FakeSession()
    open_plugin(PriorityPlugin, ssn)
    task_order = ssn.fn(Point.TASK_ORDER, "priority")
    hi, lo, default = task("hi", "j", priority=10), task("lo", "j", priority=5), task("d", "j")
    assert default.priority == 1
    assert task_order(hi, lo) == -1 and task_order(lo, hi) == 1 and task_order(hi, hi) == 0
    assert task_order(lo, default) == -1
    job_order = ssn.fn(Point.JOB_ORDER, "priority")
    a, b = job("a", priority=100), job("b", priority=10)
    assert job_order(a, b) == -1 and job_order(b, a) == 1 and job_order(a, job("c", priority=100)) == 0


def test_priority_victim_rule() -> None:
    p_tasks = [task("p-0", "p", priority=50), task("p-1", "p", priority=20), task("p-2", "p", priority=80),
               task("p-new", "p", phase="Pending", node_name="", priority=50)]
    p = job("p", p_tasks, priority=100)
    low = job("low", [task("l-0", "low")], priority=10)
    equal = job("eq", [task("e-0", "eq")], priority=100)
    higher = job("hi", [task("h-0", "hi")], priority=200)
    ssn = FakeSession(jobs=[p, low, equal, higher])
    open_plugin(PriorityPlugin, ssn)
    preemptable = ssn.fn(Point.PREEMPTABLE, "priority")
    preemptor = p.tasks["default/p-new"]
    orphan = task("o-0", "gone")
    preemptees = [
        p.tasks["default/p-0"], p.tasks["default/p-1"], p.tasks["default/p-2"],
        low.tasks["default/l-0"], equal.tasks["default/e-0"], higher.tasks["default/h-0"], orphan,
    ]
    victims, vote = preemptable(preemptor, preemptees)
    assert vote == Vote.Permit
    # same job: task priority strictly lower; other jobs: job priority strictly lower; orphans skipped
    assert [t.name for t in victims] == ["p-1", "l-0"]
    # a preemptor whose job is not in the session finds no victims
    assert preemptable(task("x", "gone", phase="Pending", node_name=""), preemptees) == ([], Vote.Permit)


def test_priority_job_starving() -> None:
    ssn = FakeSession()
    open_plugin(PriorityPlugin, ssn)
    starving = ssn.fn(Point.JOB_STARVING, "priority")
    j = job("j", [task("a", "j"), task("b", "j", phase="Pending", node_name="")])
    assert starving(j) is True  # 1 ready + 0 waiting < 2 tasks
    j.update_task_status(j.tasks["default/b"], TaskStatus.Pipelined)
    assert starving(j) is False


# -- conformance -----------------------------------------------------------------------------


def test_conformance_spares_critical_pods() -> None:
    ssn = FakeSession()
    open_plugin(ConformancePlugin, ssn)
    preemptable = ssn.fn(Point.PREEMPTABLE, "conformance")
    assert ssn.fn(Point.RECLAIMABLE, "conformance") is preemptable
    evictees = [
        task("plain", "j"),
        task("kube", "j", ns="kube-system"),
        task("cluster", "j", priority_class="system-cluster-critical"),
        task("node", "j", priority_class="system-node-critical"),
        task("other", "j", priority_class="high"),
    ]
    victims, vote = preemptable(task("x", "p"), evictees)
    assert vote == Vote.Permit
    assert [t.name for t in victims] == ["plain", "other"]


def test_conformance_all_critical_gives_empty_list() -> None:
    ssn = FakeSession()
    open_plugin(ConformancePlugin, ssn)
    victims, vote = ssn.fn(Point.RECLAIMABLE, "conformance")(task("x", "p"), [task("k", "j", ns="kube-system")])
    assert victims == [] and vote == Vote.Permit


# -- binpack ---------------------------------------------------------------------------------


def binpack_nodes() -> tuple[NodeInfo, NodeInfo]:
    n1 = node("n1", [task("u1", "other", cpu="2", memory="4Gi")], cpu="8", memory="16Gi")
    n2 = node("n2", [task("u2", "other", cpu="6", memory="4Gi", node_name="n2")], cpu="8", memory="16Gi")
    return n1, n2


def test_binpack_worked_example() -> None:
    n1, n2 = binpack_nodes()
    ssn = FakeSession(nodes=[n1, n2])
    open_plugin(BinpackPlugin, ssn)
    score = ssn.fn(Point.NODE_ORDER, "binpack")
    t = task("t", "j", cpu="2", memory="4Gi", phase="Pending", node_name="")
    assert score(t, n1) == pytest.approx(50)
    assert score(t, n2) == pytest.approx(75)


def test_binpack_overfull_node_scores_zero() -> None:
    _, n2 = binpack_nodes()
    t = task("t", "j", cpu="3", memory="1Gi", phase="Pending", node_name="")
    assert BinpackPlugin(Arguments({})).score(t, n2) == 0


def test_binpack_weights() -> None:
    n1, n2 = binpack_nodes()
    t = task("t", "j", cpu="2", memory="4Gi", phase="Pending", node_name="")
    # cpu weight 3: n2 = (1.0×3 + 0.5×1) / 4 × 100 × 2
    bp = BinpackPlugin(Arguments({"binpack.weight": 2, "binpack.cpu": 3}))
    assert bp.score(t, n2) == pytest.approx(175)
    # memory weight 0: memory adds 0 to both the score and the weight sum
    bp = BinpackPlugin(Arguments({"binpack.memory": 0}))
    assert bp.score(t, n2) == pytest.approx(100)
    # negative resource weights are reset to 1
    bp = BinpackPlugin(Arguments({"binpack.cpu": -4, "binpack.memory": -1}))
    assert (bp.cpu_weight, bp.memory_weight) == (1, 1)
    assert bp.score(t, n2) == pytest.approx(75)


def test_binpack_zero_weight_registers_nothing() -> None:
    ssn = FakeSession(nodes=list(binpack_nodes()))
    open_plugin(BinpackPlugin, ssn, {"binpack.weight": 0})
    assert ssn.registered == {}


def test_binpack_extra_resources() -> None:
    gpu = "nvidia.com/gpu"
    n = node("g1", [task("u", "other", cpu="2", memory="4Gi", node_name="g1", extra={gpu: "3"})],
             cpu="8", memory="16Gi", **{gpu: "4"})
    t = task("t", "j", cpu="2", memory="4Gi", phase="Pending", node_name="", extra={gpu: "1"})
    args = {"binpack.resources": f" {gpu}, example.com/foo,", f"binpack.resources.{gpu}": 2,
            "binpack.resources.example.com/foo": -3}
    bp = BinpackPlugin(Arguments(args))
    assert bp.resource_weights == {gpu: 2, "example.com/foo": 1, "cpu": 1, "memory": 1}
    # cpu 0.5, memory 0.5, gpu (1+3)/4 × 2 = 2.0; / (1+1+2) × 100
    assert bp.score(t, n) == pytest.approx(75)
    # without binpack.resources the gpu is ignored
    assert BinpackPlugin(Arguments({})).score(t, n) == pytest.approx(50)
    # a gpu request on a node without gpus: capacity 0 gives 0 but the weight still counts
    n1, _ = binpack_nodes()
    assert bp.score(t, n1) == pytest.approx((0.5 + 0.5) / 4 * 100)


def test_binpack_cpu_listed_in_resources_keeps_binpack_cpu() -> None:
    bp = BinpackPlugin(Arguments({"binpack.resources": "cpu", "binpack.resources.cpu": 7, "binpack.cpu": 2}))
    assert bp.resource_weights["cpu"] == 2


@pytest.mark.parametrize("args", [
    {"binpack.weight": "2"},
    {"binpack.weight": 1.5},
    {"binpack.cpu": True},
    {"binpack.memory": "1"},
    {"binpack.resources": ["nvidia.com/gpu"]},
    {"binpack.resources": "nvidia.com/gpu", "binpack.resources.nvidia.com/gpu": 2.0},
])
def test_binpack_argument_type_errors(args: dict[str, Any]) -> None:
    with pytest.raises(ArgumentError):
        BinpackPlugin(Arguments(args))
