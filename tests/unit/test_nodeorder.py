"""nodeorder against spec/framework.md §8.8 and kube-scheduler's scorers, on small worked examples.

The session is a small fake: the plugin reads its node list, its change log and
whether any pod has inter-pod terms, and registers through ``add``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest
from vcsched.api.k8s import node_pods
from vcsched.api.node_info import NodeInfo, NodeSpec
from vcsched.api.node_scores import (
    balanced_resource_score,
    image_locality_score,
    normalized_image_name,
)
from vcsched.api.pod_spec import Taint
from vcsched.api.pod_topology import (
    default_normalize_score,
    min_max_normalize,
)
from vcsched.api.resource import Resource
from vcsched.api.task_info import TaskInfo, new_task_info
from vcsched.api.types import TaskStatus
from vcsched.framework.arguments import ArgumentError, Arguments
from vcsched.framework.interface import BatchScorer, Point
from vcsched.plugins.nodeorder import NodeOrderPlugin

from .fakes import FakeSession

MB = 1024 * 1024
GI = 1024 * MB
ONLY = {  # every weight 0: tests switch on the scorer they look at
    "leastrequested.weight": 0, "mostrequested.weight": 0, "balancedresource.weight": 0,
    "nodeaffinity.weight": 0, "podaffinity.weight": 0, "tainttoleration.weight": 0,
    "imagelocality.weight": 0, "podtopologyspread.weight": 0,
}


def pod(name: str, *, ns: str = "default", labels: dict[str, str] | None = None, node: str = "",
        phase: str = "Pending", cpu: str | None = None, memory: str | None = None, gpu: str | None = None,
        images: Iterable[str] = ("app:v1",), **spec: Any) -> TaskInfo:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory), ("nvidia.com/gpu", gpu)) if v}
    containers = []
    for i, image in enumerate(images):
        c: dict[str, Any] = {"name": f"c{i}", "image": image}
        if requests and i == 0:
            c["resources"] = {"requests": requests}
        containers.append(c)
    body: dict[str, Any] = {"containers": containers, **spec}
    if node:
        body["nodeName"] = node
    meta = {"name": name, "namespace": ns, "uid": f"{ns}/{name}", "labels": labels or {}}
    return new_task_info({"metadata": meta, "spec": body, "status": {"phase": phase}})


def running(name: str, node: NodeInfo, **kw: Any) -> TaskInfo:
    t = pod(name, node=node.name, phase="Running", **kw)
    node.add_task(t)
    return t


def make_node(name: str, labels: dict[str, str] | None = None, *, cpu: str = "4", memory: str = "8Gi",
              gpu: str | None = None, taints: Iterable[Taint] = (), images: dict[str, int] | None = None) -> NodeInfo:
    alloc = {"cpu": cpu, "memory": memory, "pods": "110"}
    if gpu:
        alloc["nvidia.com/gpu"] = gpu
    return NodeInfo(
        name, {"metadata": {"name": name}},
        NodeSpec(labels=dict(labels or {}), taints=tuple(taints), images=dict(images or {})),
        Resource.from_list(alloc), Resource.from_list(alloc),
    )


def open_plugin(nodes: Iterable[NodeInfo], pending: Iterable[TaskInfo] = (),
                **weights: int) -> tuple[NodeOrderPlugin, FakeSession]:
    ssn = FakeSession(nodes, pending)
    args = dict(ONLY)
    args.update({k.replace("_", "."): v for k, v in weights.items()})
    plugin = NodeOrderPlugin(Arguments(args))
    plugin.on_session_open(ssn)
    return plugin, ssn


def per_node(ssn: FakeSession) -> Callable[[TaskInfo, NodeInfo], float]:
    return ssn.registered[Point.NODE_ORDER]["nodeorder"]


def batch(ssn: FakeSession) -> BatchScorer:
    return ssn.registered[Point.BATCH_NODE_ORDER]["nodeorder"]


def batch_scores(ssn: FakeSession, task: TaskInfo, nodes: list[NodeInfo]) -> list[float]:
    scorer = batch(ssn)
    assert scorer.applies(task)
    out = scorer.score(task, nodes)
    return [out[n.name] for n in nodes]


# -- arguments and registration -------------------------------------------------------------------


def test_arguments() -> None:
    p = NodeOrderPlugin(Arguments({}))
    assert (p.least_requested_weight, p.most_requested_weight, p.balanced_resource_weight, p.node_affinity_weight,
            p.pod_affinity_weight, p.taint_toleration_weight, p.image_locality_weight,
            p.pod_topology_spread_weight) == (1, 0, 1, 2, 2, 3, 1, 2)
    with pytest.raises(ArgumentError, match="leastrequested.weight"):
        NodeOrderPlugin(Arguments({"leastrequested.weight": 1.5}))
    with pytest.raises(ArgumentError, match="podaffinity.weight"):
        NodeOrderPlugin(Arguments({"podaffinity.weight": "2"}))


def test_registration_follows_weights() -> None:
    _, ssn = open_plugin([make_node("n1")])
    assert ssn.registered == {}
    _, ssn = open_plugin([make_node("n1")], imagelocality_weight=1)
    assert set(ssn.registered) == {Point.NODE_ORDER}
    _, ssn = open_plugin([make_node("n1")], tainttoleration_weight=1)
    assert set(ssn.registered) == {Point.BATCH_NODE_ORDER}
    ssn = FakeSession([make_node("n1")])
    NodeOrderPlugin(Arguments({})).on_session_open(ssn)
    assert set(ssn.registered) == {Point.NODE_ORDER, Point.BATCH_NODE_ORDER}


def test_default_weights_sum() -> None:
    n = make_node("n1")
    ssn = FakeSession([n])
    NodeOrderPlugin(Arguments({})).on_session_open(ssn)
    # LeastAllocated 75 + BalancedAllocation 100 + ImageLocality 0
    assert per_node(ssn)(pod("p", cpu="1000m", memory="2Gi"), n) == 175.0


# -- LeastAllocated and MostAllocated ----------------------------------------------------------------


@pytest.mark.parametrize("cpu, memory, expected", [
    ("1000m", "2Gi", 75),  # cpu (4000−1000)·100/4000 = 75, memory (8−2)/8 = 75
    ("1000m", "4Gi", 62),  # (75·50 + 50·50) / 100 = 62.5 → 62
    ("5000m", "2Gi", 37),  # cpu over allocatable → 0: (0·50 + 75·50) / 100
    (None, None, 97),  # non-zero defaults 100m / 200Mi: 97 and 97
])
def test_least_allocated(cpu: str | None, memory: str | None, expected: int) -> None:
    n = make_node("n1")
    _, ssn = open_plugin([n], leastrequested_weight=1)
    assert per_node(ssn)(pod("p", cpu=cpu, memory=memory), n) == expected


def test_least_allocated_counts_existing_pods_with_defaults_and_weight() -> None:
    n = make_node("n1")
    running("sized", n, cpu="1000m", memory="2Gi")
    _, ssn = open_plugin([n], leastrequested_weight=2)
    assert per_node(ssn)(pod("p", cpu="1000m", memory="2Gi"), n) == 2 * 50
    m = make_node("m1")
    running("besteffort", m)  # counts as 100m / 200Mi
    _, ssn = open_plugin([m], leastrequested_weight=1)
    # cpu (4000−1100)·100/4000 = 72.5 → 72; memory (8Gi − 2Gi − 200Mi)·100/8Gi = 72.6 → 72
    assert per_node(ssn)(pod("p", cpu="1000m", memory="2Gi"), m) == 72


def test_least_allocated_follows_placements() -> None:
    n = make_node("n1")
    first, second = pod("a", cpu="1000m", memory="2Gi"), pod("b", cpu="1000m", memory="2Gi")
    _, ssn = open_plugin([n], [first, second], leastrequested_weight=1)
    assert per_node(ssn)(second, n) == 75
    ssn.place(first, n)
    assert per_node(ssn)(second, n) == 50


def requested(node: NodeInfo) -> tuple[int, int, int, int, int]:
    r = node.requested
    return r.nonzero_milli_cpu, r.nonzero_memory, r.milli_cpu, r.memory, r.gpu


def summed(node: NodeInfo) -> tuple[int, int, int, int, int]:
    """The same five sums taken afresh over the pods kube's node view holds."""
    pods = list(node_pods(node))
    return (sum(t.spec.nonzero_milli_cpu for t in pods), sum(t.spec.nonzero_memory for t in pods),
            sum(int(t.resreq.milli_cpu) for t in pods), sum(int(t.resreq.memory) for t in pods),
            sum(int(t.resreq.scalars.get("nvidia.com/gpu", 0)) for t in pods))


def test_a_nodes_request_record_follows_every_accounting_change() -> None:
    n = make_node("n1", gpu="4")
    sized = running("sized", n, cpu="1000m", memory="2Gi", gpu="1")
    running("besteffort", n)  # 100m / 200Mi as kube's non-zero defaults, nothing as declared
    assert requested(n) == summed(n) == (1100, 2 * GI + 200 * MB, 1000, 2 * GI, 1000)
    sized.status = TaskStatus.Releasing  # evicted in this session: out of kube's view
    n.update_task(sized)
    assert requested(n) == summed(n) == (100, 200 * MB, 0, 0, 0)
    copy = n.clone_with_tasks()
    sized.status = TaskStatus.Running  # the eviction discarded: back in
    n.update_task(sized)
    assert requested(n) == summed(n) == (1100, 2 * GI + 200 * MB, 1000, 2 * GI, 1000)
    # a clone keeps its own record, of the statuses it accounted (the task it shares is Running again)
    assert requested(copy) == (100, 200 * MB, 0, 0, 0)
    gone = pod("gone", node=n.name, phase="Running", cpu="500m")
    gone.pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    gone.status = TaskStatus.Releasing  # terminating in the cluster: kube still counts it
    n.add_task(gone)
    assert requested(n) == summed(n) == (1600, 2 * GI + 400 * MB, 1500, 2 * GI, 1000)
    n.remove_task(sized)
    n.remove_task(gone)
    assert requested(n) == summed(n) == (100, 200 * MB, 0, 0, 0)


@pytest.mark.parametrize("cpu, memory, expected", [
    ("1000m", "2Gi", 25),
    ("3000m", "2Gi", 50),  # (75 + 25) / 2
    ("5000m", "8Gi", 100),  # requests above allocatable count as allocatable
])
def test_most_allocated(cpu: str, memory: str, expected: int) -> None:
    n = make_node("n1")
    _, ssn = open_plugin([n], mostrequested_weight=1)
    assert per_node(ssn)(pod("p", cpu=cpu, memory=memory), n) == expected


# -- BalancedAllocation ---------------------------------------------------------------------------------


@pytest.mark.parametrize("cpu, memory, gpu, node_gpu, expected", [
    ("1000m", "2Gi", None, None, 100),  # 0.25 and 0.25
    ("2000m", "2Gi", None, None, 87),  # |0.5 − 0.25| / 2 = 0.125 → 87.5 → 87
    ("2000m", "2Gi", "1", "4", 88),  # 0.5, 0.25, 0.25: population std 0.1179 → 88.2 → 88
    ("2000m", "2Gi", None, "4", 87),  # the GPU counts only when the pod asks for it
    ("2000m", "2Gi", "1", None, 87),  # a node without the GPU resource skips it
    ("16000m", "2Gi", None, None, 62),  # fractions are capped at 1: |1 − 0.25| / 2 → 62.5 → 62
    (None, None, None, None, 0),  # requests nothing: skipped
])
def test_balanced_allocation(cpu: str | None, memory: str | None, gpu: str | None, node_gpu: str | None,
                             expected: int) -> None:
    n = make_node("n1", gpu=node_gpu)
    _, ssn = open_plugin([n], balancedresource_weight=1)
    assert per_node(ssn)(pod("p", cpu=cpu, memory=memory, gpu=gpu), n) == expected


def test_balanced_allocation_uses_actual_requests() -> None:
    n = make_node("n1")
    running("besteffort", n)  # no requests: adds nothing here, unlike LeastAllocated
    running("sized", n, cpu="1000m")
    _, ssn = open_plugin([n], balancedresource_weight=3)
    # cpu (1000 + 1000) / 4000 = 0.5, memory 2Gi / 8Gi = 0.25 → 87
    assert per_node(ssn)(pod("p", cpu="1000m", memory="2Gi"), n) == 3 * 87
    assert balanced_resource_score([1, 1], [0, 0]) == 100


# -- ImageLocality --------------------------------------------------------------------------------------


def test_image_locality() -> None:
    big = 500 * MB
    n1 = make_node("n1", images={"repo/app:v1": big, "repo/base:latest": big})
    n2 = make_node("n2", images={"repo/base:latest": big})
    n3 = make_node("n3", images={"repo/base:latest": big, "tiny:1": 10 * MB})
    _, ssn = open_plugin([n1, n2, n3], imagelocality_weight=1)
    fn = per_node(ssn)
    # on 1 node of 3: int(500MB / 3) = 174762666; 100·(174762666 − 23MB) / (1000MB − 23MB) = 14.7 → 14
    assert [fn(pod("p", images=["repo/app:v1"]), n) for n in (n1, n2, n3)] == [14, 0, 0]
    # on every node: 500MB → 48.8 → 48; an untagged image means :latest
    assert fn(pod("q", images=["repo/base"]), n2) == 48
    # two containers: the ceiling doubles; 2 × 174762666 → 100·(349525332 − 23MB)/(2000MB − 23MB) = 15
    assert fn(pod("r", images=["repo/app:v1", "repo/app:v1"]), n1) == 15
    # under 23MB scores 0
    assert fn(pod("s", images=["tiny:1"]), n3) == 0
    _, weighted = open_plugin([n1, n2, n3], imagelocality_weight=2)
    assert per_node(weighted)(pod("t", images=["repo/base"]), n1) == 96


def test_image_helpers() -> None:
    assert normalized_image_name("nginx") == "nginx:latest"
    assert normalized_image_name("nginx:1.25") == "nginx:1.25"
    assert normalized_image_name("host:5000/app") == "host:5000/app:latest"
    assert normalized_image_name("host:5000/app:v2") == "host:5000/app:v2"
    assert image_locality_score(2000 * MB, 1) == 100
    assert image_locality_score(0, 1) == 0


# -- NodeAffinity (preferred) ----------------------------------------------------------------------------


def preferred(*terms: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": w, "preference": p} for w, p in terms]}}


def test_node_affinity_preferred() -> None:
    a, b, c = make_node("a", {"zone": "z1"}), make_node("b", {"disk": "ssd"}), make_node("c")
    _, ssn = open_plugin([a, b, c], nodeaffinity_weight=2)
    task = pod("p", affinity=preferred(
        (80, {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}),
        (20, {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}),
        (0, {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}),  # weight 0: ignored
    ))
    # raw 80, 20, 0 → 100, 25, 0 → × 2
    assert batch_scores(ssn, task, [a, b, c]) == [200.0, 50.0, 0.0]
    # normalisation is over the candidates given
    assert batch_scores(ssn, task, [b, c]) == [200.0, 0.0]
    assert not batch(ssn).applies(pod("q"))
    assert not batch(ssn).applies(pod("r", nodeSelector={"zone": "z1"}))


# -- TaintToleration (PreferNoSchedule) ---------------------------------------------------------------------


def test_taint_toleration_score() -> None:
    soft1, soft2 = Taint("a", "1", "PreferNoSchedule"), Taint("b", "", "PreferNoSchedule")
    n1 = make_node("n1", taints=[Taint("hard", "", "NoSchedule")])  # other effects don't count
    n2 = make_node("n2", taints=[soft1])
    n3 = make_node("n3", taints=[soft1, soft2])
    _, ssn = open_plugin([n1, n2, n3], tainttoleration_weight=3)
    # counts 0, 1, 2 → 100, 50, 0 → × 3
    assert batch_scores(ssn, pod("p"), [n1, n2, n3]) == [300.0, 150.0, 0.0]
    tol_a = pod("q", tolerations=[{"key": "a", "operator": "Exists", "effect": "PreferNoSchedule"}])
    assert batch_scores(ssn, tol_a, [n1, n2, n3]) == [300.0, 300.0, 0.0]
    # a toleration for another effect does not count; one with no effect covers all
    assert batch_scores(ssn, pod("r", tolerations=[{"key": "a", "operator": "Exists", "effect": "NoSchedule"}]),
                        [n2, n3]) == [150.0, 0.0]
    all_tol = pod("s", tolerations=[{"operator": "Exists"}])
    assert not batch(ssn).applies(all_tol)
    _, clean = open_plugin([n1], tainttoleration_weight=3)
    assert not batch(clean).applies(pod("t"))


def test_normalize_helpers() -> None:
    assert default_normalize_score([0, 0], reverse=True) == [100, 100]
    assert default_normalize_score([0, 0], reverse=False) == [0, 0]
    assert default_normalize_score([3, 1, 0], reverse=False) == [100, 33, 0]
    assert min_max_normalize([1, 3, 0]) == [33, 100, 0]
    assert min_max_normalize([-5, 10, 10]) == [0, 100, 100]
    assert min_max_normalize([4, 4]) == [0, 0]


# -- InterPodAffinity ---------------------------------------------------------------------------------------


def zones() -> list[NodeInfo]:
    return [make_node("a1", {"zone": "a", "kubernetes.io/hostname": "a1"}),
            make_node("a2", {"zone": "a", "kubernetes.io/hostname": "a2"}),
            make_node("b1", {"zone": "b", "kubernetes.io/hostname": "b1"})]


def weighted_term(weight: int, labels: dict[str, str], key: str) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": {"labelSelector": {"matchLabels": labels}, "topologyKey": key}}


def test_inter_pod_preferred_affinity_and_anti_affinity() -> None:
    a1, a2, b1 = nodes = zones()
    running("cache", a1, labels={"app": "cache"})
    running("db", b1, labels={"app": "db"})
    task = pod("web", labels={"app": "web"}, affinity={
        "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            weighted_term(10, {"app": "cache"}, "zone")]},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            weighted_term(5, {"app": "db"}, "kubernetes.io/hostname")]},
    })
    _, ssn = open_plugin(nodes, [task], podaffinity_weight=2)
    # raw zone a +10, host b1 −5: 10, 10, −5 → 100, 100, 0 → × 2
    assert batch_scores(ssn, task, nodes) == [200.0, 200.0, 0.0]


def test_inter_pod_truncation_and_no_match() -> None:
    a1, a2, b1 = nodes = zones()
    running("c1", a1, labels={"app": "cache"})
    task = pod("web", labels={"app": "web"}, affinity={
        "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            weighted_term(3, {"app": "cache"}, "kubernetes.io/hostname"),
            weighted_term(1, {"app": "cache"}, "zone")]}})
    _, ssn = open_plugin(nodes, [task], podaffinity_weight=1)
    # a1: 3 + 1 = 4, a2: 1, b1: 0 → 100, 25, 0
    assert batch_scores(ssn, task, nodes) == [100.0, 25.0, 0.0]
    # nothing matches: Skip, every node 0
    lonely = pod("x", labels={"app": "x"}, affinity={"podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [weighted_term(3, {"app": "none"}, "zone")]}})
    assert batch_scores(ssn, lonely, nodes) == [0.0, 0.0, 0.0]


def test_inter_pod_existing_pods_preferred_terms_are_symmetric() -> None:
    a1, a2, b1 = nodes = zones()
    running("web-0", a1, labels={"app": "web"}, affinity={"podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            weighted_term(7, {"app": "web"}, "kubernetes.io/hostname")]}})
    _, ssn = open_plugin(nodes, podaffinity_weight=2)
    plain = pod("web-1", labels={"app": "web"})
    assert batch_scores(ssn, plain, nodes) == [200.0, 0.0, 0.0]
    assert batch_scores(ssn, pod("other", labels={"app": "x"}), nodes) == [0.0, 0.0, 0.0]


def test_inter_pod_required_terms_only_do_not_score() -> None:
    a1, a2, b1 = nodes = zones()
    running("db", a1, labels={"app": "db"}, affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}]}})
    _, ssn = open_plugin(nodes, podaffinity_weight=2)
    assert not batch(ssn).applies(pod("p", labels={"app": "db"}))


def test_inter_pod_sees_placements() -> None:
    a1, a2, b1 = nodes = zones()
    leader = pod("web-0", labels={"app": "web"}, affinity={"podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [weighted_term(5, {"app": "web"}, "zone")]}})
    follower = pod("web-1", labels={"app": "web"})
    _, ssn = open_plugin(nodes, [leader, follower], podaffinity_weight=1)
    assert not batch(ssn).applies(follower)
    ssn.place(leader, b1)
    assert batch_scores(ssn, follower, nodes) == [0.0, 0.0, 100.0]


# -- PodTopologySpread (ScheduleAnyway) -----------------------------------------------------------------------


def soft(key: str, max_skew: int = 1) -> list[dict[str, Any]]:
    return [{"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": {"app": "web"}}}]


def test_spread_score_zones() -> None:
    a1, a2, b1 = nodes = zones()
    running("w1", a1, labels={"app": "web"})
    running("w2", a1, labels={"app": "web"})
    running("elsewhere", b1, labels={"app": "web"}, ns="other")  # another namespace: not counted
    _, ssn = open_plugin(nodes, podtopologyspread_weight=2)
    # 2 zones → weight ln(4) = 1.386; zone a: 2 × 1.386 = 2.77 → 3, zone b: 0
    # normalise: 100 × (3 + 0 − s) / 3 → a: 0, b: 100; × 2
    assert batch_scores(ssn, pod("w3", labels={"app": "web"}, topologySpreadConstraints=soft("zone")),
                        nodes) == [0.0, 0.0, 200.0]
    # maxSkew 2 adds 1 everywhere: 3.77 → 4 and 1 → 100 × (4 + 1 − 4) / 4 = 25, 100
    assert batch_scores(ssn, pod("w4", labels={"app": "web"}, topologySpreadConstraints=soft("zone", 2)),
                        nodes) == [50.0, 50.0, 200.0]


def test_spread_score_hostname_and_missing_labels() -> None:
    n1, n2, n3 = (make_node(f"n{i}", {"kubernetes.io/hostname": f"n{i}"}) for i in (1, 2, 3))
    nolabel = make_node("bare")
    running("w1", n1, labels={"app": "web"})
    running("w2", n1, labels={"app": "web"})
    running("w3", n2, labels={"app": "web"})
    _, ssn = open_plugin([n1, n2, n3, nolabel], podtopologyspread_weight=1)
    task = pod("w4", labels={"app": "web"}, topologySpreadConstraints=soft("kubernetes.io/hostname"))
    # 3 eligible candidates → ln(5) = 1.609: 3.22 → 3, 1.61 → 2, 0 → 0
    # → 100·(3 − 3)/3 = 0, 100·(3 − 2)/3 = 33, 100; the unlabelled node scores 0
    assert batch_scores(ssn, task, [n1, n2, n3, nolabel]) == [0.0, 33.0, 100.0, 0.0]


def test_spread_score_applies_only_to_soft_constraints() -> None:
    _, ssn = open_plugin(zones(), podtopologyspread_weight=2)
    hard = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": "web"}}}]
    assert not batch(ssn).applies(pod("p", topologySpreadConstraints=hard))
    assert not batch(ssn).applies(pod("q"))


def test_batch_sums_its_scorers() -> None:
    a1, a2, b1 = nodes = zones()
    b1.spec = NodeSpec(labels=dict(b1.spec.labels), taints=(Taint("x", "", "PreferNoSchedule"),))
    _, ssn = open_plugin(nodes, nodeaffinity_weight=2, tainttoleration_weight=3)
    task = pod("p", affinity=preferred((10, {"matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["b"]}]})))
    # node affinity 0, 0, 200; taints 300, 300, 0
    assert batch_scores(ssn, task, nodes) == [300.0, 300.0, 200.0]
