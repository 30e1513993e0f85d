"""proportion, drf and overcommit against the worked examples of spec/framework.md §8.4, §8.5 and §8.10.

The session here is a small fake: the plugins only need its snapshot attributes,
``effects``, ``add`` and ``add_event_handler``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
import structlog

from vcsched.api.job_info import JobInfo, PodGroup
from vcsched.api.node_info import NodeInfo, NodeSpec
from vcsched.api.queue_info import QueueInfo
from vcsched.api.resource import Resource
from vcsched.api.task_info import TaskInfo, new_task_info
from vcsched.api.types import PodGroupPhase, QueueState, TaskStatus, Vote
from vcsched.framework.arguments import ArgumentError, Arguments
from vcsched.framework.effects import Event
from vcsched.framework.interface import Point
from vcsched.plugins.drf import DrfPlugin
from vcsched.plugins.overcommit import OvercommitPlugin
from vcsched.plugins.proportion import ProportionPlugin

from .fakes import FakeSession

GI = 1024**3


# -- fixtures ----------------------------------------------------------------------------


def res(**rl: str) -> Resource:
    return Resource.from_list(rl)


def node(name: str, cpu: str = "4", memory: str = "16Gi", pods: str = "110", **extra: str) -> NodeInfo:
    allocatable = Resource.from_list({"cpu": cpu, "memory": memory, "pods": pods, **extra})
    return NodeInfo(name, {"metadata": {"name": name}}, NodeSpec(), allocatable, allocatable.clone())


def task(name: str, group: str, cpu: str = "1", memory: str = "1Gi", *, ns: str = "default",
         phase: str = "Pending", node_name: str = "", gates: Iterable[str] = ()) -> TaskInfo:
    pod = {
        "metadata": {
            "name": name, "namespace": ns, "uid": f"{ns}/{name}",
            "annotations": {"scheduling.k8s.io/group-name": group},
        },
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
            "nodeName": node_name,
            "schedulingGates": [{"name": g} for g in gates],
        },
        "status": {"phase": phase},
    }
    return new_task_info(pod)


def job(name: str, queue: str, tasks: Iterable[TaskInfo] = (), *, ns: str = "default",
        min_member: int = 1, min_resources: Resource | None = None, phase: str = PodGroupPhase.PENDING,
        priority: int = 0) -> JobInfo:
    pg = PodGroup(name, ns, f"uid-{name}", 0.0, min_member=min_member, queue=queue,
                  min_resources=min_resources, phase=phase)
    j = JobInfo(f"{ns}/{name}", pg)
    j.priority = priority
    for t in tasks:
        j.add_task(t)
    return j


def tasks(prefix: str, group: str, n: int, cpu: str = "1", memory: str = "1Gi", **kw: Any) -> list[TaskInfo]:
    return [task(f"{prefix}-{i}", group, cpu, memory, **kw) for i in range(n)]


def queue(name: str, weight: int = 1, *, capability: Resource | None = None, guarantee: Resource | None = None,
          priority: int = 0, state: str = QueueState.OPEN) -> QueueInfo:
    return QueueInfo(name, name, 0.0, weight=weight, capability=capability,
                     guarantee=guarantee or Resource(), priority=priority, state=state)


def open_plugin(cls, ssn: FakeSession, args: dict[str, Any] | None = None):
    plugin = cls(Arguments(args or {}))
    plugin.on_session_open(ssn)
    return plugin


# -- proportion ------------------------------------------------------------------------


def three_nodes() -> list[NodeInfo]:
    # 12 CPU, 48 Gi, 330 pods
    return [node("n1"), node("n2"), node("n3")]


def worked_example(b_running: int = 0, c_running: int = 0) -> FakeSession:
    """§8.5: A(1) asks 2/2Gi, B(1) 8/8Gi, C(2) 10/10Gi of a 12 CPU / 48 Gi cluster."""
    b = [task(f"b-{i}", "jb", phase="Running", node_name="n1") for i in range(b_running)]
    b += tasks("bp", "jb", 8 - b_running)
    c = [task(f"c-{i}", "jc", phase="Running", node_name="n2") for i in range(c_running)]
    c += tasks("cp", "jc", 10 - c_running)
    return FakeSession(
        jobs=[job("ja", "A", tasks("a", "ja", 2)), job("jb", "B", b), job("jc", "C", c)],
        queues=[queue("A", 1), queue("B", 1), queue("C", 2)],
        nodes=three_nodes(),
    )


def test_proportion_worked_example_deserved() -> None:
    ssn = worked_example()
    p = open_plugin(ProportionPlugin, ssn)
    a, b, c = (p.queue_opts[n].deserved for n in "ABC")
    assert a.milli_cpu == pytest.approx(2000) and a.memory == pytest.approx(2 * GI)
    assert b.milli_cpu == pytest.approx(3333.333, abs=0.01) and b.memory == pytest.approx(8 * GI)
    assert c.milli_cpu == pytest.approx(6666.667, abs=0.01) and c.memory == pytest.approx(10 * GI)
    # pods: each queue gets what it asks for, in round 1
    assert (a.get("pods"), b.get("pods"), c.get("pods")) == (2, 8, 10)
    assert f"{b.milli_cpu:.1f}m" == "3333.3m" and f"{c.milli_cpu:.1f}m" == "6666.7m"
    assert p.queue_opts["B"].request.milli_cpu == 8000


def test_proportion_b_not_overused_but_not_allocatable() -> None:
    ssn = worked_example(b_running=4, c_running=6)
    p = open_plugin(ProportionPlugin, ssn)
    b = p.queue_opts["B"]
    assert b.deserved.milli_cpu == pytest.approx(3333.333, abs=0.01)  # request unchanged: 8 tasks
    assert b.allocated.milli_cpu == 4000 and b.allocated.memory == 4 * GI
    assert b.share == pytest.approx(1.2)
    overused = ssn.fn(Point.OVERUSED, "proportion")
    allocatable = ssn.fn(Point.ALLOCATABLE, "proportion")
    assert overused(ssn.queues["B"]) is False  # memory 4 Gi < 8 Gi deserved
    assert allocatable(ssn.queues["B"], task("extra-b", "jb")) is False  # 5000m > 3333.3m
    assert allocatable(ssn.queues["C"], task("extra-c", "jc")) is False  # 7000 > 6666.7
    assert allocatable(ssn.queues["A"], task("extra-a", "ja")) is True
    preemptive = ssn.fn(Point.PREEMPTIVE, "proportion")
    assert preemptive(ssn.queues["A"], [task("x1", "ja"), task("x2", "ja")]) is True
    assert preemptive(ssn.queues["A"], [task("x1", "ja"), task("x2", "ja"), task("x3", "ja")]) is False


def test_proportion_overused_when_every_dimension_reached() -> None:
    ssn = FakeSession(jobs=[job("ja", "A", tasks("a", "ja", 2, phase="Running", node_name="n1"))],
                      queues=[queue("A")], nodes=three_nodes())
    open_plugin(ProportionPlugin, ssn)
    assert ssn.fn(Point.OVERUSED, "proportion")(ssn.queues["A"]) is True


def test_proportion_allocatable_requires_open_queue() -> None:
    ssn = FakeSession(jobs=[job("ja", "A", tasks("a", "ja", 2))],
                      queues=[queue("A", state=QueueState.CLOSED)], nodes=three_nodes())
    open_plugin(ProportionPlugin, ssn)
    t = ssn.jobs["default/ja"].tasks["default/a-0"]
    assert ssn.fn(Point.ALLOCATABLE, "proportion")(ssn.queues["A"], t) is False
    assert ssn.fn(Point.PREEMPTIVE, "proportion")(ssn.queues["A"], [t]) is False
    ssn.queues["A"].state = ""
    assert ssn.fn(Point.ALLOCATABLE, "proportion")(ssn.queues["A"], t) is False
    ssn.queues["A"].state = QueueState.OPEN
    assert ssn.fn(Point.ALLOCATABLE, "proportion")(ssn.queues["A"], t) is True


def test_proportion_attrs_only_for_queues_with_jobs() -> None:
    ssn = worked_example()
    ssn.queues["empty"] = queue("empty", 10)
    p = open_plugin(ProportionPlugin, ssn)
    assert set(p.queue_opts) == {"A", "B", "C"}


def test_proportion_capability_caps_deserved() -> None:
    # A is capped at 2 CPU: round 1 A 6→2, B 6; round 2 A unchanged (met), B 8; round 3 B 10 (met).
    ssn = FakeSession(
        jobs=[job("ja", "A", tasks("a", "ja", 10)), job("jb", "B", tasks("b", "jb", 10))],
        queues=[queue("A", capability=res(cpu="2")), queue("B")],
        nodes=three_nodes(),
    )
    p = open_plugin(ProportionPlugin, ssn)
    assert p.queue_opts["A"].deserved.milli_cpu == pytest.approx(2000)
    assert p.queue_opts["A"].deserved.memory == pytest.approx(10 * GI)  # memory capability unset → unlimited
    assert p.queue_opts["B"].deserved.milli_cpu == pytest.approx(10000)


def test_proportion_real_capability_and_guarantee() -> None:
    ssn = FakeSession(
        jobs=[job("ja", "A", tasks("a", "ja", 1)), job("jb", "B", tasks("b", "jb", 1))],
        queues=[queue("A", guarantee=res(cpu="4", memory="8Gi")), queue("B", capability=res(cpu="10")),
                queue("G", guarantee=res(cpu="2"))],  # no jobs, but its guarantee counts
        nodes=three_nodes(),
    )
    p = open_plugin(ProportionPlugin, ssn)
    a, b = p.queue_opts["A"], p.queue_opts["B"]
    # total 12 CPU / 48 Gi, total guarantee 6 CPU / 8 Gi
    assert a.real_capability.milli_cpu == 6000 + 4000 and a.real_capability.memory == 40 * GI + 8 * GI
    assert b.real_capability.milli_cpu == 6000 and b.real_capability.memory == 40 * GI
    # deserved is raised to the guarantee even above the request
    assert a.deserved.milli_cpu == 4000 and a.deserved.memory == 8 * GI
    assert b.deserved.milli_cpu == 1000


def test_proportion_queue_order() -> None:
    ssn = worked_example(b_running=4)
    ssn.queues["C"].priority = 5
    open_plugin(ProportionPlugin, ssn)
    order = ssn.fn(Point.QUEUE_ORDER, "proportion")
    q = ssn.queues
    assert order(q["C"], q["A"]) < 0  # higher priority first
    assert order(q["A"], q["B"]) < 0  # A share 0 < B share 1.2
    assert order(q["B"], q["A"]) > 0
    assert order(q["A"], q["A"]) == 0


def test_proportion_event_handlers_update_share() -> None:
    ssn = worked_example()
    p = open_plugin(ProportionPlugin, ssn)
    t = ssn.jobs["default/ja"].tasks["default/a-0"]
    ssn.allocate(t)
    assert p.queue_opts["A"].allocated.milli_cpu == 1000
    assert p.queue_opts["A"].share == pytest.approx(0.5)
    ssn.deallocate(t)
    assert p.queue_opts["A"].allocated.milli_cpu == 0
    assert p.queue_opts["A"].share == 0


def test_proportion_reclaimable_until_within_deserved() -> None:
    ssn = worked_example(b_running=6)  # B: 6 CPU allocated, 3333.3m deserved
    open_plugin(ProportionPlugin, ssn)
    reclaimees = [t for t in ssn.jobs["default/jb"].tasks.values() if t.status == TaskStatus.Running]
    victims, vote = ssn.fn(Point.RECLAIMABLE, "proportion")(task("r", "ja"), reclaimees)
    assert vote == Vote.Permit
    # 6000 > 3333 → victim (5000), victim (4000), victim (3000), then within deserved
    assert [v.name for v in victims] == ["b-0", "b-1", "b-2"]


def test_proportion_enqueue_capability_and_event() -> None:
    inq = job("inq", "A", tasks("i", "inq", 1, phase="Running", node_name="n1"), min_member=2,
              min_resources=res(cpu="4"), phase=PodGroupPhase.INQUEUE)
    new = job("new", "A", tasks("n", "new", 6), min_resources=res(cpu="6"))
    big = job("big", "A", tasks("g", "big", 1), min_resources=res(cpu="1", memory="100Gi"))
    ssn = FakeSession(jobs=[inq, new, big], queues=[queue("A", capability=res(cpu="10", memory="40Gi"))],
                      nodes=three_nodes())
    p = open_plugin(ProportionPlugin, ssn)
    attr = p.queue_opts["A"]
    assert attr.inqueue.milli_cpu == 3000  # 4 min − 1 allocated
    assert attr.allocated.milli_cpu == 1000
    enqueueable = ssn.fn(Point.JOB_ENQUEUEABLE, "proportion")
    enqueued = ssn.fn(Point.JOB_ENQUEUED, "proportion")
    assert enqueueable(new) == Vote.Permit  # 6 + 1 + 3 = 10 ≤ 10
    enqueued(new)
    assert attr.inqueue.milli_cpu == 9000
    assert ssn.effects == []
    assert enqueueable(big) == Vote.Reject  # 1 + 1 + 9 > 10 cpu, 100Gi > 40Gi
    assert ssn.effects == [Event("PodGroup", "default", "big", "Normal", "Unschedulable",
                                 "queue resource quota insufficient: insufficient cpu, insufficient memory")]


def test_proportion_enqueue_elastic_and_running_inqueue() -> None:
    # a Running job with min 1 CPU and 3 allocated: 2 CPU elastic, nothing left to reserve
    running = job("run", "A", tasks("r", "run", 3, phase="Running", node_name="n1"), min_member=1,
                  min_resources=res(cpu="1"), phase=PodGroupPhase.RUNNING)
    new = job("new", "A", tasks("n", "new", 1), min_resources=res(cpu="8"))
    ssn = FakeSession(jobs=[running, new], queues=[queue("A", capability=res(cpu="9"))], nodes=three_nodes())
    p = open_plugin(ProportionPlugin, ssn)
    attr = p.queue_opts["A"]
    assert attr.elastic.milli_cpu == 2000 and attr.inqueue.milli_cpu == 0
    assert ssn.fn(Point.JOB_ENQUEUEABLE, "proportion")(new) == Vote.Permit  # 8 + 3 + 0 − 2 = 9 ≤ 9
    new.podgroup.min_resources = res(cpu="8100m")
    assert ssn.fn(Point.JOB_ENQUEUEABLE, "proportion")(new) == Vote.Reject


def test_proportion_enqueue_closed_queue_and_no_min_resources() -> None:
    j = job("j", "A", tasks("t", "j", 1))
    ssn = FakeSession(jobs=[j], queues=[queue("A")], nodes=three_nodes())
    open_plugin(ProportionPlugin, ssn)
    enqueueable = ssn.fn(Point.JOB_ENQUEUEABLE, "proportion")
    assert enqueueable(j) == Vote.Permit
    ssn.queues["A"].state = QueueState.CLOSING
    assert enqueueable(j) == Vote.Reject
    assert ssn.effects == []


def test_proportion_scheduling_gated_tasks_deducted_from_inqueue() -> None:
    gated = tasks("g", "j", 2, gates=["example.com/hold"])
    volcano_gated = tasks("v", "j", 1, gates=["volcano.sh/queue-allocation-gate"])
    j = job("j", "A", gated + volcano_gated, min_member=3, min_resources=res(cpu="3"), phase=PodGroupPhase.INQUEUE)
    ssn = FakeSession(jobs=[j], queues=[queue("A")], nodes=three_nodes())
    p = open_plugin(ProportionPlugin, ssn)
    assert p.queue_opts["A"].inqueue.milli_cpu == 1000


def test_resource_helpers_keep_volcano_key_sets() -> None:
    l = Resource(1000, 0, {"pods": 5, "nvidia.com/gpu": 0})
    r = Resource(500, 10, {"pods": 5, "example.com/x": 2})
    inc, dec = l.diff(r)
    assert inc.milli_cpu == 500 and inc.scalars == {}
    assert dec.memory == 10 and dec.scalars == {"pods": 0, "nvidia.com/gpu": 0, "example.com/x": 2}
    assert list(dec.scalars) == ["pods", "nvidia.com/gpu", "example.com/x"]
    assert l.exceeded_part(r).scalars == {}


# -- drf ---------------------------------------------------------------------------------


def drf_session() -> FakeSession:
    # 10 CPU, 100 Gi, 110 pods
    n = node("n1", cpu="10", memory="100Gi")
    p = job("p", "q", [task("p-0", "p", phase="Running", node_name="n1"), task("p-1", "p")])
    v = job("v", "q", [task(f"v-{i}", "v", phase="Running", node_name="n1") for i in range(4)])
    return FakeSession(jobs=[p, v], queues=[queue("q")], nodes=[n])


def test_drf_share_and_job_order() -> None:
    ssn = drf_session()
    d = open_plugin(DrfPlugin, ssn)
    assert d.job_attrs["default/p"].share == pytest.approx(0.1)
    assert d.job_attrs["default/v"].share == pytest.approx(0.4)
    assert d.job_attrs["default/v"].dominant_resource == "cpu"
    order = ssn.fn(Point.JOB_ORDER, "drf")
    assert order(ssn.jobs["default/p"], ssn.jobs["default/v"]) == -1
    assert order(ssn.jobs["default/v"], ssn.jobs["default/p"]) == 1
    assert order(ssn.jobs["default/v"], ssn.jobs["default/v"]) == 0


def test_drf_share_counts_pods() -> None:
    n = node("n1", cpu="100", memory="100Gi", pods="4")
    j = job("j", "q", tasks("t", "j", 2, cpu="100m", memory="1Mi", phase="Running", node_name="n1"))
    ssn = FakeSession(jobs=[j], queues=[queue("q")], nodes=[n])
    d = open_plugin(DrfPlugin, ssn)
    assert d.job_attrs["default/j"].share == pytest.approx(0.5)
    assert d.job_attrs["default/j"].dominant_resource == "pods"


def test_drf_preemptable_victim_rule() -> None:
    ssn = drf_session()
    open_plugin(DrfPlugin, ssn)
    preemptor = ssn.jobs["default/p"].tasks["default/p-1"]
    v = ssn.jobs["default/v"]
    preemptees = [v.tasks[f"default/v-{i}"] for i in range(3)]
    victims, vote = ssn.fn(Point.PREEMPTABLE, "drf")(preemptor, preemptees)
    # ls = (1+1)/10 = 0.2; without v-0: 0.3 ≥ 0.2, without v-1 too: 0.2 ≈ 0.2, without v-2: 0.1 < 0.2
    assert vote == Vote.Permit
    assert [t.name for t in victims] == ["v-0", "v-1"]


def test_drf_preemptable_skips_orphans_and_unknown_preemptor() -> None:
    ssn = drf_session()
    open_plugin(DrfPlugin, ssn)
    fn = ssn.fn(Point.PREEMPTABLE, "drf")
    orphan = task("o", "gone", phase="Running", node_name="n1")
    victims, vote = fn(ssn.jobs["default/p"].tasks["default/p-1"], [orphan])
    assert victims == [] and vote == Vote.Permit
    victims, vote = fn(orphan, [ssn.jobs["default/v"].tasks["default/v-0"]])
    assert victims == [] and vote == Vote.Permit


def test_drf_event_handlers_keep_allocated() -> None:
    ssn = drf_session()
    d = open_plugin(DrfPlugin, ssn)
    t = ssn.jobs["default/p"].tasks["default/p-1"]
    ssn.allocate(t)
    assert d.job_attrs["default/p"].allocated.milli_cpu == 2000
    assert d.job_attrs["default/p"].share == pytest.approx(0.2)
    ssn.deallocate(t)
    assert d.job_attrs["default/p"].share == pytest.approx(0.1)


def test_drf_registers_job_order_preemptable_and_handlers_only() -> None:
    ssn = drf_session()
    open_plugin(DrfPlugin, ssn)
    # no hierarchy: no queue order, no reclaim
    assert set(ssn.registered) == {Point.JOB_ORDER, Point.PREEMPTABLE}
    assert len(ssn.handlers) == 1


# -- overcommit ----------------------------------------------------------------------------


def overcommit_session() -> FakeSession:
    """§8.10: total 10 CPU × 1.2 = 12, 6 used, 3 already Inqueue."""
    n = node("n1", cpu="10", memory="100Gi")
    running = job("run", "q", [task(f"r-{i}", "run", phase="Running", node_name="n1") for i in range(6)],
                  min_member=6, phase=PodGroupPhase.RUNNING)
    for t in running.tasks.values():
        n.add_task(t)
    inq = job("inq", "q", tasks("i", "inq", 3), min_member=3, min_resources=res(cpu="3"),
              phase=PodGroupPhase.INQUEUE)
    x = job("x", "q", tasks("x", "x", 4), min_member=4, min_resources=res(cpu="4"))
    y = job("y", "q", tasks("y", "y", 3), min_member=3, min_resources=res(cpu="3"))
    z = job("z", "q", tasks("z", "z", 1), min_member=1, min_resources=res(cpu="100m"))
    free = job("free", "q", tasks("f", "free", 1))
    return FakeSession(jobs=[running, inq, x, y, z, free], queues=[queue("q")], nodes=[n])


def test_overcommit_worked_example() -> None:
    ssn = overcommit_session()
    oc = open_plugin(OvercommitPlugin, ssn)
    assert oc.idle.milli_cpu == pytest.approx(6000)
    assert oc.inqueue.milli_cpu == pytest.approx(3000)
    enqueueable = ssn.fn(Point.JOB_ENQUEUEABLE, "overcommit")
    enqueued = ssn.fn(Point.JOB_ENQUEUED, "overcommit")
    jobs = ssn.jobs
    assert enqueueable(jobs["default/x"]) == Vote.Reject  # 3 + 4 > 6
    assert ssn.effects == [Event("PodGroup", "default", "x", "Normal", "Unschedulable",
                                 "resource in cluster is overused: overused cpu")]
    assert enqueueable(jobs["default/y"]) == Vote.Permit  # 3 + 3 ≤ 6
    enqueued(jobs["default/y"])
    assert oc.inqueue.milli_cpu == pytest.approx(6000)
    assert enqueueable(jobs["default/z"]) == Vote.Reject  # any further cpu minimum
    assert enqueueable(jobs["default/free"]) == Vote.Permit  # no minResources
    assert len(ssn.effects) == 2


def test_overcommit_running_job_reserves_unallocated_minimum() -> None:
    n = node("n1", cpu="10", memory="100Gi")
    running = job("run", "q", [task("r-0", "run", phase="Running", node_name="n1"), task("r-1", "run")],
                  min_member=1, min_resources=res(cpu="3"), phase=PodGroupPhase.RUNNING)
    ssn = FakeSession(jobs=[running], queues=[queue("q")], nodes=[n])
    oc = open_plugin(OvercommitPlugin, ssn)
    assert oc.inqueue.milli_cpu == pytest.approx(2000)  # 3 − 1 allocated


def test_overcommit_factor_argument() -> None:
    ssn = overcommit_session()
    oc = open_plugin(OvercommitPlugin, ssn, {"overcommit-factor": 2})
    assert oc.factor == 2.0 and oc.idle.milli_cpu == pytest.approx(14000)
    assert OvercommitPlugin(Arguments({})).factor == 1.2
    assert OvercommitPlugin(Arguments({"overcommit-factor": 1.5})).factor == 1.5
    with structlog.testing.capture_logs() as logs:
        assert OvercommitPlugin(Arguments({"overcommit-factor": 0.5})).factor == 1.2
    assert any(entry["log_level"] == "warning" for entry in logs)


@pytest.mark.parametrize("value", ["1.5", True, [1.5]])
def test_overcommit_factor_type_error(value: Any) -> None:
    with pytest.raises(ArgumentError, match="overcommit-factor"):
        OvercommitPlugin(Arguments({"overcommit-factor": value}))
