"""nodegroup's functions, and Volcano's nodegroup_test.go asked as Go asks it (plugins/nodegroup/nodegroup_test.go).

The Go tests open a session (``uthelper.TestCommonStruct.RegisterSession``) and call ``ssn.NodeOrderFn``,
``ssn.PredicateFn`` and ``ssn.Allocate`` directly.  Here a real ``Session`` is opened the same way, on a
cache fed the Go case's objects as the builders make them (``util.BuildNode`` has no ``pods``
allocatable, ``util.MakeQueue`` sets no parent unless asked, ``util.BuildPodGroup`` has minMember 0),
and ``Session.node_order`` / ``Session.predicate`` / ``Session.allocate`` are asked the same questions,
so the exact scores and status codes are checked, which ``simulate`` only shows as an order.
The end-to-end versions are in tests/scenarios/test_nodegroup.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from vcsched.api.queue_info import QueueAffinity, QueueInfo, queue_ancestors
from vcsched.api.types import StatusCode
from vcsched.cache import Cache
from vcsched.conf import ENABLE_FLAGS, ConfError, parse_conf
from vcsched.framework.interface import Point
from vcsched.framework.registry import plugin_classes
from vcsched.framework.session import Session
from vcsched.plugins.nodegroup import (
    ERR_AFFINITY_NOT_FOUND,
    ERR_LABEL_NOT_FOUND,
    ERR_LIMIT_EXCEEDED,
    ERR_LIMIT_INVALID,
    ERR_UNSATISFIED,
    GroupAffinity,
    parse_resource_limits,
)

GROUP = "volcano.sh/nodegroup-name"
SUCCESS = StatusCode.Success
UNRESOLVABLE = StatusCode.UnschedulableAndUnresolvable


# -- the Go builders ----------------------------------------------------------------------------------


def build_node(name: str, cpu: str, memory: str, group: str | None, pods: str | None = None) -> dict[str, Any]:
    allocatable = {"cpu": cpu, "memory": memory, **({"pods": pods} if pods else {})}
    return {"metadata": {"name": name, "labels": {GROUP: group} if group else {}},
            "status": {"allocatable": allocatable, "capacity": allocatable}}


def build_pod(ns: str, name: str, node_name: str, phase: str, group: str, cpu: str = "2",
              memory: str = "4Gi") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns, "uid": f"{ns}-{name}",
                         "creationTimestamp": "2026-01-01T00:00:00Z",
                         "annotations": {"scheduling.k8s.io/group-name": group}},
            "spec": {"schedulerName": "volcano", "nodeName": node_name,
                     "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]},
            "status": {"phase": phase}}


def build_podgroup(name: str, ns: str, queue: str, phase: str = "") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns, "uid": f"pg-{ns}-{name}",
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"minMember": 0, "queue": queue}, "status": {"phase": phase}}


def make_queue(name: str, affinity: dict[str, Any] | None = None, parent: str = "",
               annotations: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": 1}
    if affinity is not None:
        spec["affinity"] = affinity
    if parent:
        spec["parent"] = parent
    return {"metadata": {"name": name, "creationTimestamp": "2025-12-31T00:00:00Z", "annotations": annotations or {}},
            "spec": spec, "status": {"state": "Open"}}


def aff(required=None, preferred=None, anti_required=None, anti_preferred=None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if required is not None or preferred is not None:
        out["nodeGroupAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": required,
                                    "preferredDuringSchedulingIgnoredDuringExecution": preferred}
    if anti_required is not None or anti_preferred is not None:
        out["nodeGroupAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": anti_required,
                                        "preferredDuringSchedulingIgnoredDuringExecution": anti_preferred}
    return out


def register_session(queues, podgroups, pods, nodes, arguments: str = "", hierarchy: bool = False) -> Session:
    """``RegisterSession`` with the Go tier: nodegroup with enableNodeOrder and enablePredicate (and
    enableHierarchy as the case sets it); every other flag nil, i.e. off."""
    lines = ['actions: "allocate"', "tiers:", "- plugins:", "  - name: nodegroup"]
    lines += [f"    {f}: {'true' if f in ('enableNodeOrder', 'enablePredicate') else 'false'}"
              for f in ENABLE_FLAGS if f != "enableHierarchy"]
    lines.append(f"    enableHierarchy: {'true' if hierarchy else 'false'}")
    if arguments:
        lines.append(f"    arguments: {{{arguments}}}")
    cache = Cache()
    for q in queues:
        cache.add_queue(q)
    for n in nodes:
        cache.add_node(n)
    for pg in podgroups:
        cache.add_podgroup(pg)
    for p in pods:
        cache.add_pod(p)
    ssn = Session(cache.snapshot(), parse_conf("\n".join(lines)), plugin_classes(), now=100.0, uid="s1")
    ssn.open()
    return ssn


def code(ssn: Session, task, node) -> StatusCode:
    statuses = ssn.predicate(task, node)
    return statuses[0].code if statuses else SUCCESS


# -- TestNodeGroup --------------------------------------------------------------------------------------

N1 = build_node("n1", "2", "4Gi", "group1")
N2 = build_node("n2", "4", "16Gi", "group2")
N3 = build_node("n3", "4", "16Gi", "group3")
N4 = build_node("n4", "4", "16Gi", "group4")
N5 = build_node("n5", "4", "16Gi", None)
NODES = [N1, N2, N3, N4, N5]

FULL = aff(["group1", "group3"], ["group3"], ["group2", "group4"], ["group4"])
ROOT_Q = make_queue("root", FULL)
NO_AFFINITY_ROOT_Q = make_queue("root-no-affinity")
QUEUE1 = make_queue("q1", FULL, parent="root")
QUEUE2 = make_queue("q2", aff(["group1"], ["group3"], ["group2"], ["group4"]), parent="root")
QUEUE3 = make_queue("q3", aff(preferred=["group1", "group3"]))
NO_AFFINITY_Q = make_queue("q-no-affinity", parent="root")
QUEUE1_CHILD = make_queue("q1-child", parent="q1")
NO_AFFINITY_Q_CHILD = make_queue("q-no-affinity-child", parent="q-no-affinity")

SUBSET = ({"n1": 100, "n2": 0.0, "n3": 150, "n4": -1, "n5": 0.0},
          {"n1": SUCCESS, "n2": UNRESOLVABLE, "n3": SUCCESS, "n4": SUCCESS, "n5": UNRESOLVABLE})

# name → (queues, pod, its PodGroup's queue, arguments, enableHierarchy, scores, codes)
NODE_GROUP_CASES = {
    "case: soft constraints is subset of hard constraints": ([QUEUE1], "p1", "q1", "", False, *SUBSET),
    "case: soft constraints is not subset of hard constraints": (
        [QUEUE2], "p2", "q2", "", False,
        {"n1": 100, "n2": 0.0, "n3": 50, "n4": -1, "n5": 0.0},
        {"n1": SUCCESS, "n2": UNRESOLVABLE, "n3": SUCCESS, "n4": SUCCESS, "n5": UNRESOLVABLE}),
    "case: affinity is not set for the queue, pods still cannot be scheduled to nodes with the nodegroup label "
    "when strict=false": (
        [NO_AFFINITY_ROOT_Q], "p5", "root-no-affinity", "strict: false", False,
        dict.fromkeys(["n1", "n2", "n3", "n4", "n5"], 0.0),
        {"n1": UNRESOLVABLE, "n2": UNRESOLVABLE, "n3": UNRESOLVABLE, "n4": UNRESOLVABLE, "n5": SUCCESS}),
    "case: affinity inherits from parent queue": ([ROOT_Q, QUEUE1, QUEUE1_CHILD], "p3", "q1-child", "", True, *SUBSET),
    "case: affinity inherits from ancestor queue if parent queue has no affinity": (
        [ROOT_Q, NO_AFFINITY_Q, NO_AFFINITY_Q_CHILD], "p4", "q-no-affinity-child", "", True, *SUBSET),
    "case: queue without affinity": (
        [NO_AFFINITY_Q], "p4", "q-no-affinity", "", False,
        dict.fromkeys(["n1", "n2", "n3", "n4", "n5"], 0.0), dict.fromkeys(["n1", "n2", "n3", "n4", "n5"], UNRESOLVABLE)),
    "case: preferred nodegroup priority ordering": (
        [QUEUE3], "p6", "q3", "enablePreferredOrder: true", False,
        {"n1": 50, "n2": 0.0, "n3": 25, "n4": 0.0, "n5": 0.0},
        {"n1": SUCCESS, "n2": UNRESOLVABLE, "n3": SUCCESS, "n4": UNRESOLVABLE, "n5": UNRESOLVABLE}),
}


@pytest.mark.parametrize("name", list(NODE_GROUP_CASES), ids=lambda n: n.split(": ", 1)[1][:60])
def test_node_group(name):
    """TestNodeGroup: every node's NodeOrderFn score and PredicateFn code for the case's pod."""
    queues, pod_name, queue_name, arguments, hierarchy, scores, codes = NODE_GROUP_CASES[name]
    pg = f"pg{pod_name[1:]}"
    ssn = register_session(queues, [build_podgroup(pg, "c1", queue_name)],
                           [build_pod("c1", pod_name, "", "Pending", pg)], NODES, arguments, hierarchy)
    [task] = ssn.jobs[f"c1/{pg}"].tasks.values()
    assert {n.name: ssn.node_order(task, n) for n in ssn.node_list} == scores
    assert {n.name: code(ssn, task, n) for n in ssn.node_list} == codes


def test_the_reasons():
    """errors.go's texts, one per branch of the predicate."""
    ssn = register_session([QUEUE1, NO_AFFINITY_Q], [build_podgroup("pg1", "c1", "q1"),
                                                     build_podgroup("pg4", "c1", "q-no-affinity")],
                           [build_pod("c1", "p1", "", "Pending", "pg1"), build_pod("c1", "p4", "", "Pending", "pg4")],
                           NODES)
    [p1] = ssn.jobs["c1/pg1"].tasks.values()
    [p4] = ssn.jobs["c1/pg4"].tasks.values()
    assert [s.reason for s in ssn.predicate(p1, ssn.nodes["n2"])] == [ERR_UNSATISFIED]
    assert [s.reason for s in ssn.predicate(p1, ssn.nodes["n5"])] == [ERR_LABEL_NOT_FOUND]
    assert [s.reason for s in ssn.predicate(p4, ssn.nodes["n1"])] == [ERR_AFFINITY_NOT_FOUND]


# -- TestNodeGroupResourceLimits -------------------------------------------------------------------------

LIMIT_NODES = [build_node("n1", "16", "64Gi", "group1", "32"), build_node("n2", "16", "64Gi", "group2", "32")]
LIMIT_AFFINITY = aff(["group1", "group2"], ["group1"])
ANN = "volcano.sh/nodegroup-resource-limits"

# name → (queue, annotation, the "used" pod on n1 too, codes of the pending pod)
LIMIT_CASES = {
    "no annotation keeps existing behavior": ("q-no-limit", None, False, (SUCCESS, SUCCESS)),
    "under nodegroup limit permits preferred nodegroup": (
        "q-under-limit", '{"group1":{"cpu":"3","memory":"8Gi"}}', False, (SUCCESS, SUCCESS)),
    "omitted resource dimension is unlimited": ("q-cpu-only-limit", '{"group1":{"cpu":"3"}}', False, (SUCCESS, SUCCESS)),
    "specified resource dimension is enforced": (
        "q-cpu-only-over-limit", '{"group1":{"cpu":"1"}}', False, (UNRESOLVABLE, SUCCESS)),
    "over nodegroup limit rejects preferred nodegroup and permits fallback": (
        "q-over-limit", '{"group1":{"cpu":"3","memory":"8Gi"}}', True, (UNRESOLVABLE, SUCCESS)),
    "invalid annotation rejects queue tasks": ("q-invalid-limit", '{"group1":{"cpu":', False, (UNRESOLVABLE, UNRESOLVABLE)),
}


@pytest.mark.parametrize("name", list(LIMIT_CASES))
def test_node_group_resource_limits(name):
    """TestNodeGroupResourceLimits: PredicateFn's code for the pending task on n1 and n2."""
    queue_name, limits, used, (c1, c2) = LIMIT_CASES[name]
    q = make_queue(queue_name, LIMIT_AFFINITY, annotations={ANN: limits} if limits is not None else None)
    pods = [build_pod("limit", "pending", "", "Pending", "pg-pending")]
    pgs = [build_podgroup("pg-pending", "limit", queue_name)]
    if used:
        pods.insert(0, build_pod("limit", "used", "n1", "Running", "pg-used"))
        pgs.insert(0, build_podgroup("pg-used", "limit", queue_name, "Running"))
    ssn = register_session([q], pgs, pods, LIMIT_NODES)
    task = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == "pending")
    assert (code(ssn, task, ssn.nodes["n1"]), code(ssn, task, ssn.nodes["n2"])) == (c1, c2)
    reasons = {s.reason for n in ssn.node_list for s in ssn.predicate(task, n) or []}
    assert reasons <= {ERR_LIMIT_EXCEEDED, ERR_LIMIT_INVALID}


def test_node_group_resource_limit_allocation_event():
    """TestNodeGroupResourceLimitAllocationEvent: ``ssn.Allocate`` of the first task counts for the second."""
    q = make_queue("q-event-limit", aff(["group1"]), annotations={ANN: '{"group1":{"cpu":"3","memory":"8Gi"}}'})
    ssn = register_session([q], [build_podgroup("pg-1", "limit", "q-event-limit"),
                                 build_podgroup("pg-2", "limit", "q-event-limit")],
                           [build_pod("limit", "pending-1", "", "Pending", "pg-1"),
                            build_pod("limit", "pending-2", "", "Pending", "pg-2")],
                           [build_node("n1", "16", "64Gi", "group1", "32")])
    [task1] = ssn.jobs["limit/pg-1"].tasks.values()
    [task2] = ssn.jobs["limit/pg-2"].tasks.values()
    node = ssn.nodes["n1"]
    assert ssn.predicate(task1, node) is None
    ssn.allocate(task1, node)
    assert [s.reason for s in ssn.predicate(task2, node)] == [ERR_LIMIT_EXCEEDED]


# -- the plugin's own functions ------------------------------------------------------------------------


def test_preferred_order_with_a_repeated_name():
    """``queueGroupAffinityPreferredIndexes`` keeps a repeated name's last position and counts distinct
    names: [a, b, a] gives a 50·(2−2)/2 = 0 and b 50·(2−1)/2 = 25."""
    ga = GroupAffinity.of(QueueAffinity(preferred=("a", "b", "a")))
    assert (ga.score("a", True), ga.score("b", True)) == (0.0, 25.0)
    assert (ga.score("a", False), ga.score("b", False)) == (50.0, 50.0)


def test_anti_affinity_wins():
    """The user guide's third example: a group both required and anti-required is refused; one
    anti-preferred is allowed (and scores −1) whatever else says."""
    ga = GroupAffinity.of(QueueAffinity(required=("g1", "g2"), preferred=("g1",), anti_required=("g1",),
                                        anti_preferred=("g2",)))
    assert (ga.satisfied("g1"), ga.satisfied("g2"), ga.satisfied("g3")) == (False, True, False)
    assert (ga.score("g1", False), ga.score("g2", False), ga.score("g3", False)) == (150.0, -1, 0.0)


@pytest.mark.parametrize("raw, expected", [
    ('{"g1": {"cpu": "3", "memory": "8Gi"}}', {"g1": ({"cpu", "memory"}, 3000, 8 * 2**30)}),
    ('{"g1": {"cpu": 3}}', {"g1": ({"cpu"}, 3000, 0)}),  # a JSON number is a quantity too
    ('{"g1": {"cpu": 1.5e0}}', {"g1": ({"cpu"}, 1500, 0)}),
    ('{"g1": {"cpu": null}}', {"g1": ({"cpu"}, 0, 0)}),  # null: a zero quantity, still a listed name
    ('{"g1": null}', {"g1": (set(), 0, 0)}),  # null: an empty list, nothing limited
    ("null", {}),
    ('  {"g1": {}} ', {"g1": (set(), 0, 0)}),
])
def test_resource_limits_decode_as_go_does(raw, expected):
    limits = parse_resource_limits(raw)
    assert {g: (set(lim.names), lim.resource.milli_cpu, lim.resource.memory) for g, lim in limits.items()} == expected


@pytest.mark.parametrize("raw", [
    '{"group1":{"cpu":', "[]", '"g1"', '{"g1": []}', '{"g1": "3"}', '{"g1": {"cpu": true}}', '{"g1": {"cpu": {}}}',
    '{"g1": {"cpu": "3x"}}', '{"g1": {"cpu": NaN}}', '{"g1": {}} x', "",
])
def test_resource_limits_that_go_does_not_decode(raw):
    with pytest.raises(ValueError, match="parse annotation volcano.sh/nodegroup-resource-limits"):
        parse_resource_limits(raw)


def test_limits_count_only_the_names_listed_and_pods_too():
    """Only listed names limit; ``pods`` counts tasks (each asks one)."""
    q = make_queue("q", aff(["group1"]), annotations={ANN: '{"group1": {"pods": "1"}}'})
    ssn = register_session([q], [build_podgroup("pg", "ns", "q", "Running"), build_podgroup("pg2", "ns", "q")],
                           [build_pod("ns", "run", "n1", "Running", "pg", cpu="100"),
                            build_pod("ns", "new", "", "Pending", "pg2", cpu="1")],
                           [build_node("n1", "16", "64Gi", "group1", "32")])
    [new] = ssn.jobs["ns/pg2"].tasks.values()
    assert [s.reason for s in ssn.predicate(new, ssn.nodes["n1"])] == [ERR_LIMIT_EXCEEDED]


def test_deallocation_gives_back_what_the_queue_holds_in_the_group():
    """What a queue holds in a group goes down again on deallocation (a discarded statement, an eviction)."""
    q = make_queue("q", aff(["group1"]), annotations={ANN: '{"group1": {"cpu": "3"}}'})
    ssn = register_session([q], [build_podgroup("a", "ns", "q"), build_podgroup("b", "ns", "q")],
                           [build_pod("ns", "a", "", "Pending", "a"), build_pod("ns", "b", "", "Pending", "b")],
                           [build_node("n1", "16", "64Gi", "group1", "32")])
    [a] = ssn.jobs["ns/a"].tasks.values()
    [b] = ssn.jobs["ns/b"].tasks.values()
    n1 = ssn.nodes["n1"]
    a.node_name = "n1"
    ssn.fire_allocate(a)
    assert ssn.predicate(b, n1) is not None
    ssn.fire_deallocate(a)
    assert ssn.predicate(b, n1) is None


def test_task_shape_tells_the_node_search_what_it_depends_on():
    """Tasks of queues with the same affinity share the node search's work, those of queues with other
    affinities do not, and those of a queue with limits never do."""
    qa = make_queue("qa", aff(["group1"]))
    qa2 = make_queue("qa2", aff(["group1"]))
    qb = make_queue("qb", aff(["group3"]))
    ql = make_queue("ql", aff(["group1"]), annotations={ANN: '{"group1": {"cpu": "3"}}'})
    names = ["qa", "qa2", "qb", "ql"]
    ssn = register_session([qa, qa2, qb, ql], [build_podgroup(f"pg-{q}", "ns", q) for q in names],
                           [build_pod("ns", f"p-{q}", "", "Pending", f"pg-{q}") for q in names], NODES)
    [shape] = ssn.fns(Point.TASK_SHAPE)
    task = {q: next(iter(ssn.jobs[f"ns/pg-{q}"].tasks.values())) for q in names}
    assert shape(task["qa"]) == shape(task["qa2"]) != shape(task["qb"])
    assert shape(task["ql"]) is None


def test_hierarchy_through_a_cycle_or_a_missing_parent():
    """What ``simulate`` refuses but a cluster without Volcano's webhook may hold: a cycle (a ↔ b) and a
    parent that does not exist.  The walk stops there, as Volcano's does: a takes b's affinity, c
    (under the missing x) has none."""
    queues = [make_queue("root"), make_queue("a", parent="b"), make_queue("b", aff(["group1"]), parent="a"),
              make_queue("c", parent="x")]
    ssn = register_session(queues, [build_podgroup("pa", "ns", "a"), build_podgroup("pc", "ns", "c")],
                           [build_pod("ns", "a", "", "Pending", "pa"), build_pod("ns", "c", "", "Pending", "pc")],
                           NODES, hierarchy=True)
    [a] = ssn.jobs["ns/pa"].tasks.values()
    [c] = ssn.jobs["ns/pc"].tasks.values()
    assert code(ssn, a, ssn.nodes["n1"]) == SUCCESS and ssn.node_order(a, ssn.nodes["n1"]) == 100
    assert [s.reason for s in ssn.predicate(c, ssn.nodes["n1"])] == [ERR_AFFINITY_NOT_FOUND]


def test_queue_ancestors():
    def q(name: str, parent: str = "") -> QueueInfo:
        return QueueInfo(name, name, 0.0, parent=parent)

    queues = {x.name: x for x in [q("root"), q("a"), q("b", "a"), q("c", "b"), q("x", "y"), q("y", "x"), q("m", "gone")]}
    assert queue_ancestors(queues, "c") == (["b", "a", "root"], None)
    assert queue_ancestors(queues, "root") == ([], None)
    assert queue_ancestors(queues, "x") == (["y"], "cycle detected in queue hierarchy for queue x")
    assert queue_ancestors(queues, "m") == ([], "parent queue gone of queue m not found")


def test_queue_affinity_from_spec():
    assert QueueAffinity.from_spec(None) is None
    assert QueueAffinity.from_spec({}) == QueueAffinity()
    assert QueueAffinity.from_spec(aff(["a", "b"], None, None, ["c"])) == QueueAffinity(("a", "b"), (), (), ("c",))


def test_arguments_are_typed():
    with pytest.raises(ConfError, match=r"tiers\[0\].plugins\[0\].arguments.strict: expected a bool"):
        parse_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: nodegroup\n    arguments: {strict: 3}\n')
    conf = parse_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: nodegroup\n')
    plugin = plugin_classes()["nodegroup"](conf.tiers[0][0].arguments)
    assert (plugin.strict, plugin.preferred_order) == (True, False)
