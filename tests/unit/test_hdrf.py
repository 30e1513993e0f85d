"""Hierarchical DRF: the tree's share arithmetic (plugins/hdrf.py) and what drf registers with
``enableHierarchy`` (plugins/drf.py), against numbers worked out by hand from Volcano's drf.go."""

from __future__ import annotations

import math
import random

import pytest

from vcsched.api.job_info import JobInfo, PodGroup
from vcsched.api.node_info import NodeInfo, NodeSpec
from vcsched.api.queue_info import QueueInfo
from vcsched.api.resource import Resource
from vcsched.api.task_info import TaskInfo, new_task_info
from vcsched.api.types import Vote
from vcsched.conf import PluginOption
from vcsched.framework.arguments import Arguments
from vcsched.framework.interface import Point
from vcsched.framework.session import Session
from vcsched.plugins.drf import DrfPlugin
from vcsched.plugins.hdrf import (
    DrfAttr,
    HierarchyTree,
    dominant_share,
    level_weight,
    parse_go_float,
    resource_saturated,
    weight_problems,
)

from .fakes import FakeSession

G = 10**9


def res(cpu: float = 0, mem: float = 0, pods: float = 0) -> Resource:
    """cpu in cores, memory in G (10^9 bytes)."""
    r = Resource(cpu * 1000, mem * G)
    if pods:
        r.scalars["pods"] = float(pods)
    return r


# -- weights: strconv.ParseFloat ------------------------------------------------------------


@pytest.mark.parametrize(("text", "value"), [
    ("1", 1.0), ("50", 50.0), ("2.5", 2.5), ("1.", 1.0), (".5", 0.5), ("+3", 3.0), ("-2", -2.0),
    ("1e2", 100.0), ("1E-1", 0.1), ("1_0", 10.0), ("1_23.50_0_0e+1_2", 1.235e14),
    ("0x1p2", 4.0), ("0X1.8P1", 3.0), ("0x_1p0", 1.0), ("1e400", math.inf), ("-1e400", -math.inf),
    ("inf", math.inf), ("+Inf", math.inf), ("-infinity", -math.inf),
])
def test_weights_parse_as_go_parse_float(text: str, value: float) -> None:
    assert parse_go_float(text) == value


@pytest.mark.parametrize("text", [
    "", " 1", "1 ", "x", "1x", ".", "e5", "1e", "1__0", "_1", "1_", "1_.5", "0x1", "0x1.8", "+nan", "infin", "1/2",
])
def test_weights_go_refuses(text: str) -> None:
    assert parse_go_float(text) is None


def test_nan_weight_parses() -> None:
    assert math.isnan(parse_go_float("NaN"))


def test_level_weight_reads_errors_as_zero_and_raises_below_one_to_one() -> None:
    ws = "100/50/0.5/x//-3/1e400".split("/")
    assert [level_weight(ws, i) for i in range(1, 8)] == [50.0, 1.0, 1.0, 1.0, 1.0, math.inf, 1.0]
    # the root's entry is never read by the tree; a level past the list is missing (Volcano: index panic)
    assert level_weight(["100"], 1) == 1.0
    assert math.isnan(level_weight(["1", "nan"], 1))  # NaN < 1 is false: it stays


def test_weight_problems_name_what_is_read_differently() -> None:
    assert weight_problems("", "") == []
    assert weight_problems("root/a/b", "1/2/3") == []
    assert weight_problems("root/a/b", "1/2/3/4") == []  # extra weights are ignored
    assert weight_problems("root/a/b", "1/2") == ["3 levels but 2 weight(s): a missing weight counts as 1"]
    assert weight_problems("root/a", "1/x") == ["weight 'x' is not a number and counts as 1"]
    assert weight_problems("root/a", "1/0.5") == ["weight '0.5' is below 1 and counts as 1"]
    assert weight_problems("root/a", "x/2") == []  # the root's weight is never read


# -- saturation ------------------------------------------------------------------------------


def test_saturated_when_a_resource_is_allocated_up_to_the_request() -> None:
    everything = frozenset({"cpu", "memory", "pods"})
    assert resource_saturated(res(2, 1, 2), res(4, 2, 4), everything) is False
    assert resource_saturated(res(4, 1, 4), res(4, 2, 4), everything) is True  # cpu (and pods) reached
    # only the resources the job has allocated count: memory requested but none allocated
    assert resource_saturated(res(2, 0, 2), res(4, 2, 4), everything) is False
    # nothing allocated: never saturated, whatever is left in the cluster
    assert resource_saturated(res(), res(4, 2, 4), frozenset()) is False


def test_saturated_when_an_allocated_resource_is_no_longer_demanding() -> None:
    no_cpu = frozenset({"memory", "pods"})
    assert resource_saturated(res(2, 1, 2), res(4, 2, 4), no_cpu) is True
    # the job does not ask for cpu: cpu running out does not saturate it
    assert resource_saturated(res(0, 1, 1), res(0, 2, 4), frozenset({"memory", "pods"})) is False


# -- the tree: Volcano's "rescaling" example, part-way -----------------------------------------


TOTAL = res(10, 10, 50)
NAMES = TOTAL.resource_names()


def attr(allocated: Resource) -> DrfAttr:
    a = DrfAttr(allocated)
    a.dominant_resource, a.share = dominant_share(allocated, TOTAL, NAMES)
    return a


def rescaling_tree(sci: Resource, dev: Resource, prod: Resource) -> HierarchyTree:
    """root/sci (weight 50) and root/eng (50) with eng/dev and eng/prod (50 each); each queue one job
    asking ten pods: sci 1 cpu + 1G each, dev 1 cpu, prod 1G."""
    tree = HierarchyTree(TOTAL, NAMES)
    for key, alloc, request, hierarchy, weights in [
        ("default/pg1", sci, res(10, 10, 10), "root/sci", "100/50"),
        ("default/pg21", dev, res(10, 0, 10), "root/eng/dev", "100/50/50"),
        ("default/pg22", prod, res(0, 10, 10), "root/eng/prod", "100/50/50"),
    ]:
        tree.allocated.add(alloc)
        tree.place(key, attr(alloc), request, hierarchy, weights)
    tree.refresh()
    return tree


def node_at(tree: HierarchyTree, *path: str):
    n = tree.root
    for p in path:
        n = n.children[p]
    return n


def test_inner_nodes_rescale_unsaturated_children_to_the_smallest_share() -> None:
    tree = rescaling_tree(sci=res(2, 2, 2), dev=res(3, 0, 3), prod=res(0, 1, 1))
    # job shares: sci 0.2 (cpu, memory), dev 0.3 (cpu), prod 0.1 (memory)
    eng = node_at(tree, "eng")
    # mdr = 0.1: dev is scaled by 1/3 to (1 cpu, 1 pod), prod stays (1G, 1 pod)
    assert eng.attr.allocated.milli_cpu == pytest.approx(1000)
    assert eng.attr.allocated.memory == pytest.approx(1 * G)
    assert eng.attr.allocated.get("pods") == pytest.approx(2)
    assert eng.attr.share == pytest.approx(0.1)
    assert node_at(tree, "sci").attr.share == pytest.approx(0.2)
    # root: mdr = 0.1, sci halved to (1, 1G, 1 pod) + eng (1, 1G, 2 pods)
    root = tree.root
    assert root.attr.allocated.milli_cpu == pytest.approx(2000)
    assert root.attr.allocated.memory == pytest.approx(2 * G)
    assert root.attr.allocated.get("pods") == pytest.approx(3)
    assert root.attr.share == pytest.approx(0.2)
    assert (eng.weight, node_at(tree, "sci").weight, node_at(tree, "eng", "dev").weight) == (50.0, 50.0, 50.0)
    assert not any(n.saturated for n in (root, eng, node_at(tree, "sci")))
    # eng (0.1/50) before sci (0.2/50); within eng, prod (0.1) before dev (0.3)
    assert tree.compare_queues("root/sci", "root/eng/dev") == pytest.approx(0.1 / 50)
    assert tree.compare_queues("root/eng/prod", "root/eng/dev") == pytest.approx((0.1 - 0.3) / 50)
    assert tree.compare_queues("root/eng/prod", "root/eng/prod") == 0


def test_saturated_children_are_added_unscaled_and_order_last() -> None:
    # all cpu is used: every job holding cpu is saturated; prod (memory only) is not
    tree = rescaling_tree(sci=res(5, 5, 5), dev=res(5, 0, 5), prod=res(0, 1, 1))
    dev, prod, eng, sci = (node_at(tree, *p) for p in (("eng", "dev"), ("eng", "prod"), ("eng",), ("sci",)))
    assert tree.demanding == frozenset({"memory", "pods"})
    assert dev.saturated and not prod.saturated and not eng.saturated and sci.saturated
    assert eng.attr.allocated.milli_cpu == pytest.approx(5000)  # dev unscaled
    assert eng.attr.allocated.memory == pytest.approx(1 * G)  # prod is the only one setting mdr: 0.1/0.1
    assert eng.attr.share == pytest.approx(0.5)
    # eng, unsaturated, goes first though its share is no lower than sci's
    assert tree.compare_queues("root/eng/prod", "root/sci") == -1
    assert tree.compare_queues("root/sci", "root/eng/dev") == 1
    assert tree.compare_queues("root/eng/dev", "root/eng/prod") == 1


def test_fully_allocated_job_saturates_its_queue() -> None:
    tree = rescaling_tree(sci=res(10, 10, 10), dev=res(), prod=res())
    assert node_at(tree, "sci").saturated
    # empty jobs are not saturated and take no part in the sums
    assert not node_at(tree, "eng").saturated and node_at(tree, "eng").attr.share == 0
    assert tree.compare_queues("root/eng/dev", "root/sci") == -1


def test_ties_a_queue_without_hierarchy_and_a_queue_without_jobs() -> None:
    tree = rescaling_tree(sci=res(5, 5, 5), dev=res(1, 0, 1), prod=res(0, 1, 1))
    # no annotation: only the root is compared, with itself
    assert tree.compare_queues("", "root/sci") == 0
    assert tree.compare_queues("root/eng/dev", "") == 0
    # a queue with no jobs has no node (Volcano would dereference nil): a tie
    assert tree.compare_queues("root/ops/x", "root/eng/dev") == 0
    # the first path element is not looked at: it always stands for the root
    assert tree.compare_queues("top/sci", "anything/eng/dev") == tree.compare_queues("root/sci", "root/eng/dev")


def test_weights_divide_the_share_and_the_first_job_fixes_a_node_weight() -> None:
    tree = HierarchyTree(TOTAL, NAMES)
    tree.place("default/a", attr(res(2, 0, 2)), res(10, 0, 10), "root/eng/dev", "1/4/1")
    tree.place("default/b", attr(res(1, 0, 1)), res(10, 0, 10), "root/eng/prod", "1/9/1")  # eng stays 4
    tree.place("default/c", attr(res(1, 0, 1)), res(10, 0, 10), "root/sci", "1/1")
    tree.allocated = res(4, 0, 4)
    tree.refresh()
    assert node_at(tree, "eng").weight == 4.0
    # eng: mdr 0.1 → (2 cpu, 2 pods), share 0.2 / 4 = 0.05 < sci 0.1 / 1
    assert tree.compare_queues("root/eng/prod", "root/sci") == pytest.approx(0.05 - 0.1)


def test_a_nan_weight_makes_a_tie() -> None:
    tree = HierarchyTree(TOTAL, NAMES)
    tree.place("default/a", attr(res(2, 0, 2)), res(10, 0, 10), "root/a", "1/nan")
    tree.place("default/b", attr(res(1, 0, 1)), res(10, 0, 10), "root/b", "1/1")
    tree.allocated = res(3, 0, 3)
    tree.refresh()
    # share / NaN is NaN: neither below nor above 0, so the queue order fn returns 0
    assert math.isnan(tree.compare_queues("root/a", "root/b"))


def snapshot(tree: HierarchyTree) -> list:
    out = []

    def walk(n, path):
        a = n.attr.allocated
        out.append((path, n.saturated, n.attr.share, a.milli_cpu, a.memory, sorted(a.scalars.items())))
        for k, c in (n.children or {}).items():
            walk(c, f"{path}/{k}")

    walk(tree.root, "")
    return out


def test_updating_one_leaf_gives_what_the_full_pass_gives() -> None:
    """Only the updated leaf and its ancestors are recomputed while the demanding set stays."""
    rng = random.Random(7)
    total = res(8, 8, 20)
    names = total.resource_names()
    queues = [("root/a", "1/2"), ("root/b/x", "1/1/3"), ("root/b/y", "1/1/1"), ("", ""), ("root/c", "1/5")]
    jobs = {}
    tree = HierarchyTree(total, names)
    for i in range(8):
        h, w = queues[i % len(queues)]
        a = DrfAttr(Resource())
        request = res(rng.choice([0, 1, 2]), rng.choice([0, 1, 2]), 1).multi(4)
        request.scalars["pods"] = 4.0
        jobs[f"ns/j{i}"] = (a, request, h, w)
        tree.place(f"ns/j{i}", a, request, h, w)
    tree.refresh()
    full_passes = 0
    for _ in range(300):
        key = rng.choice(sorted(jobs))
        a, request, h, w = jobs[key]
        step = request.clone().multi(0.25)
        sign = rng.choice([1, 1, -1]) if a.share else 1
        if sign > 0:
            a.allocated.add(step)
            tree.allocated.add(step)
        else:
            a.allocated.sub(step)
            tree.allocated.sub(step)
        a.dominant_resource, a.share = dominant_share(a.allocated, total, names)
        before = tree.demanding
        tree.update(key, a, request, h, w)
        full_passes += tree.demanding != before
        reference = tree.clone()
        reference.refresh()
        assert snapshot(tree) == snapshot(reference)
    assert full_passes > 0  # the walk did cross demanding-set changes


def test_clone_is_independent() -> None:
    tree = rescaling_tree(sci=res(2, 2, 2), dev=res(3, 0, 3), prod=res(0, 1, 1))
    copy = tree.clone()
    leaf = node_at(copy, "sci").children["default/pg1"]
    leaf.attr.allocated.add(res(3, 3, 3))
    leaf.attr.share = 0.5
    copy.update("default/pg1", leaf.attr, leaf.request, "root/sci", "100/50")
    assert node_at(tree, "sci").attr.share == pytest.approx(0.2)
    assert node_at(copy, "sci").attr.share == pytest.approx(0.5)


# -- the plugin ------------------------------------------------------------------------------


def make_node(name: str, cpu: str, memory: str, pods: str = "110") -> NodeInfo:
    allocatable = Resource.from_list({"cpu": cpu, "memory": memory, "pods": pods})
    return NodeInfo(name, {"metadata": {"name": name}}, NodeSpec(), allocatable, allocatable.clone())


def make_task(name: str, group: str, cpu: str = "1", *, running: bool = False) -> TaskInfo:
    pod = {
        "metadata": {"name": name, "namespace": "default", "uid": f"default/{name}",
                     "annotations": {"scheduling.k8s.io/group-name": group}},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
                 "nodeName": "n1" if running else ""},
        "status": {"phase": "Running" if running else "Pending"},
    }
    return new_task_info(pod)


def make_job(name: str, queue: str, tasks: list[TaskInfo]) -> JobInfo:
    j = JobInfo(f"default/{name}", PodGroup(name, "default", f"uid-{name}", 0.0, min_member=1, queue=queue))
    for t in tasks:
        j.add_task(t)
    return j


class TieredSession(FakeSession):
    """The fake session with tiers and the real session's ``hierarchy_enabled`` rule."""

    tiers: list[list[PluginOption]] = []
    hierarchy_enabled = Session.hierarchy_enabled


def hqueue(name: str, hierarchy: str | None, weights: str | None) -> QueueInfo:
    ann = {}
    if hierarchy is not None:
        ann["volcano.sh/hierarchy"] = hierarchy
    if weights is not None:
        ann["volcano.sh/hierarchy-weights"] = weights
    return QueueInfo(name, name, 0.0, annotations=ann)


def drf_option(hierarchy: bool | None) -> PluginOption:
    flags = {} if hierarchy is None else {"enableHierarchy": hierarchy}
    return PluginOption("drf", flags, Arguments({}))


def reclaim_session(b_weights: str) -> FakeSession:
    """4 CPU; queue a (root/a) runs 4 one-CPU tasks, queue b (root/b, ``b_weights``) waits with two."""
    a = make_job("ja", "a", [make_task(f"a-{i}", "ja", running=True) for i in range(4)])
    b = make_job("jb", "b", [make_task(f"b-{i}", "jb") for i in range(2)])
    ssn = TieredSession([make_node("n1", "4", "64Gi")], jobs=[a, b],
                      queues=[hqueue("a", "root/a", "1/1"), hqueue("b", "root/b", b_weights)])
    ssn.tiers = [[drf_option(True)]]
    return ssn


def open_drf(ssn: FakeSession) -> DrfPlugin:
    d = DrfPlugin(Arguments({}))
    d.on_session_open(ssn)
    return d


def test_hierarchy_enabled_reads_the_first_drf_option() -> None:
    ssn = TieredSession()
    assert ssn.hierarchy_enabled("drf") is False  # no tiers at all
    ssn.tiers = [[PluginOption("gang", {}, Arguments({}))], [drf_option(True), drf_option(False)]]
    assert ssn.hierarchy_enabled("drf") is True
    ssn.tiers = [[drf_option(None)], [drf_option(True)]]
    assert ssn.hierarchy_enabled("drf") is False  # the first drf decides; unset is off


def test_hierarchy_registers_queue_order_and_reclaimable() -> None:
    ssn = reclaim_session("1/1")
    open_drf(ssn)
    assert set(ssn.registered) == {Point.JOB_ORDER, Point.PREEMPTABLE, Point.QUEUE_ORDER, Point.RECLAIMABLE}
    assert len(ssn.handlers) == 1
    ssn = reclaim_session("1/1")
    ssn.tiers = [[drf_option(False)]]
    d = open_drf(ssn)
    assert set(ssn.registered) == {Point.JOB_ORDER, Point.PREEMPTABLE}
    assert d.tree is None


def test_queue_order_follows_the_tree_and_the_handlers_keep_it() -> None:
    ssn = reclaim_session("1/1")
    d = open_drf(ssn)
    order = ssn.fn(Point.QUEUE_ORDER, "drf")
    a, b = ssn.queues["a"], ssn.queues["b"]
    assert order(b, a) == -1 and order(a, b) == 1  # b has nothing; a is saturated (all its tasks run)
    assert d.tree.allocated.milli_cpu == 4000
    t = ssn.jobs["default/jb"].tasks["default/b-0"]
    ssn.allocate(t)
    assert d.tree.allocated.milli_cpu == 5000
    assert node_at(d.tree, "b").attr.share == pytest.approx(0.25)
    ssn.deallocate(t)
    assert d.tree.allocated.milli_cpu == 4000 and node_at(d.tree, "b").attr.share == 0


def test_reclaim_takes_a_victim_only_while_the_reclaimer_stays_strictly_ahead() -> None:
    ssn = reclaim_session("1/1")
    d = open_drf(ssn)
    reclaim = ssn.fn(Point.RECLAIMABLE, "drf")
    a_tasks = list(ssn.jobs["default/ja"].tasks.values())
    b0, b1 = (ssn.jobs["default/jb"].tasks[f"default/b-{i}"] for i in range(2))
    # b with one task (0.25) against a without one (0.75): every reclaimee, each judged alone
    victims, vote = reclaim(b0, a_tasks)
    assert vote == Vote.Permit and victims == a_tasks
    # once b holds one and a three, the next one would leave them equal (0.5 each): no victim
    ssn.deallocate(a_tasks[0])
    ssn.allocate(b0)
    victims, _ = reclaim(b1, a_tasks[1:])
    assert victims == []
    # the what-if left the session's tree alone
    assert d.tree.allocated.milli_cpu == 4000
    assert node_at(d.tree, "a").attr.share == pytest.approx(0.75)


def test_reclaim_with_weights() -> None:
    ssn = reclaim_session("1/3")
    open_drf(ssn)
    reclaim = ssn.fn(Point.RECLAIMABLE, "drf")
    a_tasks = list(ssn.jobs["default/ja"].tasks.values())
    ssn.deallocate(a_tasks[0])
    ssn.allocate(ssn.jobs["default/jb"].tasks["default/b-0"])
    # b at 2 CPU counts 0.5 / 3 against a's 0.5: still ahead
    victims, _ = reclaim(ssn.jobs["default/jb"].tasks["default/b-1"], a_tasks[1:])
    assert victims == a_tasks[1:]


def test_reclaim_skips_unknown_jobs() -> None:
    ssn = reclaim_session("1/1")
    open_drf(ssn)
    reclaim = ssn.fn(Point.RECLAIMABLE, "drf")
    orphan = make_task("o", "gone", running=True)
    b0 = ssn.jobs["default/jb"].tasks["default/b-0"]
    assert reclaim(orphan, list(ssn.jobs["default/ja"].tasks.values())) == ([], Vote.Permit)
    assert reclaim(b0, [orphan]) == ([], Vote.Permit)


def test_queue_without_annotations_hangs_its_jobs_under_the_root() -> None:
    ssn = reclaim_session("1/1")
    ssn.queues["a"] = hqueue("a", None, None)
    d = open_drf(ssn)
    assert "default/ja" in d.tree.root.children
    order = ssn.fn(Point.QUEUE_ORDER, "drf")
    assert order(ssn.queues["a"], ssn.queues["b"]) == 0
