"""Victim voting (spec/framework.md §6.2), victim order (§6.3) and the gang victim rule (§8.2)."""

from __future__ import annotations

import textwrap

from vcsched.api.queue_info import QueueInfo
from vcsched.api.types import TaskStatus, Vote
from vcsched.conf import parse_conf
from vcsched.framework.interface import Plugin, Point
from vcsched.framework.registry import plugin_classes
from vcsched.framework.session import Session, Snapshot
from vcsched.plugins.gang import GangPlugin

from .fakes import FakeSession
from .test_plugins_order import job, open_plugin, task


def session(conf: str, jobs, nodes=(), classes=None, queues=("q",)) -> Session:
    classes = classes or plugin_classes()
    qs = {name: QueueInfo(name, name, float(i)) for i, name in enumerate(queues)}
    ssn = Session(Snapshot(list(nodes), {j.uid: j for j in jobs}, qs),
                  parse_conf(textwrap.dedent(conf), known_plugins=classes, known_actions=("allocate",)), classes, uid="s")
    ssn.open()
    return ssn


# -- gang -------------------------------------------------------------------------------------


def test_gang_registers_victim_and_starving_points() -> None:
    ssn = FakeSession()
    open_plugin(GangPlugin, ssn)
    assert {Point.PREEMPTABLE, Point.RECLAIMABLE, Point.JOB_STARVING} <= set(ssn.registered)


def test_gang_victims_keep_each_job_at_min_available() -> None:
    a = job("a", [task(f"a{i}", "a") for i in range(3)], min_member=2)
    b = job("b", [task("b1", "b")], min_member=1)
    k = job("k", [task("k1", "k", ns="kube-system"), task("k2", "k", ns="kube-system")], ns="kube-system")
    ssn = FakeSession(jobs=[a, b, k])
    open_plugin(GangPlugin, ssn)
    preemptees = [a.tasks["default/a0"], a.tasks["default/a1"], b.tasks["default/b1"],
                  k.tasks["kube-system/k1"], task("o", "gone")]
    for point in (Point.PREEMPTABLE, Point.RECLAIMABLE):
        victims, vote = ssn.fn(point, "gang")(task("p", "p"), preemptees)
        assert vote == Vote.Permit
        # a: 3 ready > 2 → a0 (then 2 > 2 fails for a1); b: 1 > 1 fails; k: 2 > 1 → k1; orphans skipped
        assert [t.name for t in victims] == ["a0", "k1"]


def test_gang_starving_is_below_min_available() -> None:
    ssn = FakeSession()
    open_plugin(GangPlugin, ssn)
    starving = ssn.fn(Point.JOB_STARVING, "gang")
    j = job("j", [task("a", "j"), task("b", "j", phase="Pending", node_name="")], min_member=2)
    assert starving(j) is True
    j.update_task_status(j.tasks["default/b"], TaskStatus.Pipelined)
    assert starving(j) is False


# -- tier voting ----------------------------------------------------------------------------------


def spec_example_jobs():
    """§6.2's worked example: P (100) preempts on a node holding a1, a2, b1 and k1."""
    p = job("p", [task("p0", "p", phase="Pending", node_name="")], priority=100)
    a = job("a", [task("a1", "a"), task("a2", "a"), task("a3", "a", node_name="n2")], priority=10, min_member=2)
    b = job("b", [task("b1", "b")], priority=10)
    k = job("k", [task("k1", "k", ns="kube-system"), task("k2", "k", ns="kube-system", node_name="n2")],
            ns="kube-system", priority=0)
    return p, [p, a, b, k]


def preemptees(jobs):
    _, a, b, k = jobs
    return [a.tasks["default/a1"], a.tasks["default/a2"], b.tasks["default/b1"], k.tasks["kube-system/k1"]]


def test_spec_worked_example_gang_enabled() -> None:
    p, jobs = spec_example_jobs()
    conf = """
    actions: "allocate"
    tiers:
    - plugins: [{name: priority}, {name: gang}, {name: conformance}]
    - plugins: [{name: drf}]
    """
    ssn = session(conf, jobs)
    assert [t.name for t in ssn.preemptable(p.tasks["default/p0"], preemptees(jobs))] == ["a1"]


def test_spec_worked_example_helm_conf() -> None:
    p, jobs = spec_example_jobs()
    conf = """
    actions: "allocate"
    tiers:
    - plugins: [{name: priority}, {name: gang, enablePreemptable: false}, {name: conformance}]
    - plugins: [{name: drf, enablePreemptable: false}]
    """
    ssn = session(conf, jobs)
    assert [t.name for t in ssn.preemptable(p.tasks["default/p0"], preemptees(jobs))] == ["a1", "a2", "b1"]


def voting_classes(answers: dict[str, tuple[list[str], Vote]]) -> dict[str, type[Plugin]]:
    """Plugins named after Volcano's that answer with fixed victims (by task name)."""
    classes: dict[str, type[Plugin]] = {}
    for name, (names, vote) in answers.items():
        def open_(self, ssn, names=names, vote=vote, name=name):
            def fn(p, ts, names=names, vote=vote):
                by_name = {t.name: t for t in ts}
                return [by_name[n] for n in names if n in by_name], vote
            ssn.add(Point.PREEMPTABLE, name, fn)
            ssn.add(Point.RECLAIMABLE, name, fn)
        classes[name] = type(name, (Plugin,), {"name": name, "on_session_open": open_})
    return classes


def vote(tier1: list[str], tier2: list[str], answers) -> list[str]:
    conf = f"""
    actions: "allocate"
    tiers:
    - plugins: [{", ".join("{name: %s}" % n for n in tier1)}]
    - plugins: [{", ".join("{name: %s}" % n for n in tier2)}]
    """
    j = job("j", [task(n, "j") for n in ("x", "y", "z")])
    ssn = session(conf, [j], classes=voting_classes(answers))
    cands = list(j.tasks.values())
    out = [t.name for t in ssn.preemptable(task("p", "j"), cands)]
    assert [t.name for t in ssn.reclaimable(task("p", "j"), cands)] == out
    return out


def test_an_empty_answer_leaves_the_tier_undecided_not_vetoed() -> None:
    answers = {"priority": ([], Vote.Permit), "gang": (["x", "y"], Vote.Permit), "drf": (["y", "z"], Vote.Permit)}
    # tier 1 stops at priority's empty answer (gang is not asked); tier 2 decides
    assert vote(["priority", "gang"], ["drf"], answers) == ["y", "z"]


def test_abstain_is_skipped_and_the_first_decided_tier_wins() -> None:
    answers = {"priority": ([], Vote.Abstain), "gang": (["x", "y"], Vote.Permit), "drf": (["z"], Vote.Permit)}
    assert vote(["priority", "gang"], ["drf"], answers) == ["x", "y"]


def test_intersection_keeps_the_first_plugins_order() -> None:
    answers = {"priority": (["z", "y", "x"], Vote.Permit), "gang": (["x", "y"], Vote.Permit),
               "drf": (["z"], Vote.Permit)}
    assert vote(["priority", "gang"], ["drf"], answers) == ["y", "x"]


def test_an_empty_intersection_restarts_the_list() -> None:
    # Volcano represents an empty intersection as nil: the next plugin of the tier starts afresh
    answers = {"priority": (["x"], Vote.Permit), "gang": (["y"], Vote.Permit),
               "conformance": (["z"], Vote.Permit), "drf": (["x"], Vote.Permit)}
    assert vote(["priority", "gang", "conformance"], ["drf"], answers) == ["z"]
    # ... and when it is the tier's last answer, the tier is undecided
    assert vote(["priority", "gang"], ["drf"], answers) == ["x"]


def test_no_tier_decides_gives_no_victims() -> None:
    answers = {"priority": ([], Vote.Permit), "drf": ([], Vote.Abstain)}
    assert vote(["priority"], ["drf"], answers) == []


def test_disabled_flag_removes_the_plugin_from_the_vote() -> None:
    conf = """
    actions: "allocate"
    tiers:
    - plugins: [{name: priority, enablePreemptable: false, enableReclaimable: false}]
    - plugins: [{name: drf}]
    """
    answers = {"priority": ([], Vote.Permit), "drf": (["x"], Vote.Permit)}
    j = job("j", [task(n, "j") for n in ("x", "y")])
    ssn = session(conf, [j], classes=voting_classes(answers))
    assert [t.name for t in ssn.preemptable(task("p", "j"), list(j.tasks.values()))] == ["x"]
    assert [t.name for t in ssn.reclaimable(task("p", "j"), list(j.tasks.values()))] == ["x"]


# -- victim order -----------------------------------------------------------------------------------


ORDER_CONF = """
actions: "allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
"""


def popped(ssn: Session, victims, preemptor) -> list[str]:
    pq = ssn.build_victims_priority_queue(victims, preemptor)
    return [pq.pop().name for _ in range(len(pq))]


def test_victim_order_within_a_job_is_reverse_task_order() -> None:
    j = job("j", [task("j-t-0", "j", priority=5), task("j-t-1", "j", priority=5), task("j-t-2", "j", priority=1)])
    ssn = session(ORDER_CONF, [j])
    # task order: priority 5 (index 0, 1), then priority 1; eviction is the reverse
    assert popped(ssn, list(j.tasks.values()), task("p", "p")) == ["j-t-2", "j-t-1", "j-t-0"]


def test_victim_order_between_jobs_of_a_queue_and_orphans() -> None:
    hi = job("hi", [task("h", "hi")], priority=50)
    lo = job("lo", [task("l", "lo")], priority=5)
    p = job("p", [task("p0", "p", phase="Pending", node_name="")], priority=100)
    ssn = session(ORDER_CONF, [hi, lo, p])
    victims = [hi.tasks["default/h"], lo.tasks["default/l"], task("o", "gone")]
    # the orphan first, then the job that orders last (the lower priority)
    assert popped(ssn, victims, p.tasks["default/p0"]) == ["o", "l", "h"]
    # a preemptor whose job is gone still orders its victims by job order
    assert popped(ssn, victims[:2], task("x", "gone")) == ["l", "h"]


def test_victim_order_across_queues_evicts_the_queue_served_last() -> None:
    a = job("a", [task("a0", "a")], priority=50)
    b = job("b", [task("b0", "b")], priority=5)
    a.queue, b.queue = "qa", "qb"
    p = job("p", [task("p0", "p", phase="Pending", node_name="")])
    ssn = session(ORDER_CONF, [a, b, p], queues=("q", "qa", "qb"))
    # no queue-order plugin: qa (created earlier) is served first, so qb's task goes first,
    # whatever the job priorities say
    assert popped(ssn, [a.tasks["default/a0"], b.tasks["default/b0"]], p.tasks["default/p0"]) == ["b0", "a0"]
    ssn.queues["qa"].creation_timestamp = 99.0
    assert popped(ssn, [a.tasks["default/a0"], b.tasks["default/b0"]], p.tasks["default/p0"]) == ["a0", "b0"]


def test_victim_queue_order_plugin_decides_first() -> None:
    a = job("a", [task("a0", "a")])
    b = job("b", [task("b0", "b")])
    a.queue, b.queue = "qa", "qb"
    p = job("p", [task("p0", "p", phase="Pending", node_name="")])

    class VictimQueues(Plugin):
        name = "capacity"

        def on_session_open(self, ssn) -> None:
            ssn.add(Point.VICTIM_QUEUE_ORDER, self.name, lambda l, r, pq: -1 if l.name == "qa" else 1)

    classes = {**plugin_classes(), "capacity": VictimQueues}
    conf = 'actions: "allocate"\ntiers:\n- plugins: [{name: capacity}]'
    ssn = session(conf, [a, b, p], classes=classes, queues=("q", "qa", "qb"))
    assert popped(ssn, [b.tasks["default/b0"], a.tasks["default/a0"]], p.tasks["default/p0"]) == ["a0", "b0"]

