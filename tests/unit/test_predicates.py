"""predicates against spec/framework.md §8.7 and kube-scheduler's filters.

The session is a small fake: the plugin reads its node list, its change log and
whether any pod has inter-pod terms, and registers through ``add``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from vcsched.api.fit_errors import Status
from vcsched.api.k8s import (
    EVERYTHING,
    NOTHING,
    HostPortInfo,
    node_name_conflict,
    parse_label_selector,
    parse_node_selector_term,
)
from vcsched.api.node_info import NodeInfo, NodeSpec
from vcsched.api.pod_spec import HostPort, Taint
from vcsched.api.resource import Resource
from vcsched.api.task_info import TaskInfo, new_task_info
from vcsched.api.types import StatusCode, TaskStatus
from vcsched.framework.arguments import ArgumentError, Arguments
from vcsched.framework.interface import Point
from vcsched.plugins.predicates import PredicatesPlugin

from .fakes import FakeSession

U = StatusCode.Unschedulable
UU = StatusCode.UnschedulableAndUnresolvable

POD_AFFINITY = "node(s) didn't match pod affinity rules"
POD_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI = "node(s) didn't satisfy existing pods anti-affinity rules"
SPREAD = "node(s) didn't match pod topology spread constraints"
NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
PORTS = "node(s) didn't have free ports for the requested pod ports"


# -- fixtures -----------------------------------------------------------------------------------


def pod(name: str, *, ns: str = "default", labels: dict[str, str] | None = None, node: str = "",
        phase: str = "Pending", cpu: str | None = None, ports: list[dict[str, Any]] | None = None,
        annotations: dict[str, str] | None = None, deleting: bool = False, **spec: Any) -> TaskInfo:
    container: dict[str, Any] = {"name": "c", "image": "app:v1"}
    if cpu:
        container["resources"] = {"requests": {"cpu": cpu}}
    if ports:
        container["ports"] = ports
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"{ns}/{name}", "labels": labels or {},
                            "annotations": annotations or {}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    body: dict[str, Any] = {"containers": [container], **spec}
    if node:
        body["nodeName"] = node
    return new_task_info({"metadata": meta, "spec": body, "status": {"phase": phase}})


def running(name: str, node: NodeInfo, **kw: Any) -> TaskInfo:
    t = pod(name, node=node.name, phase="Running", **kw)
    node.add_task(t)
    return t


def make_node(name: str, labels: dict[str, str] | None = None, *, taints: Iterable[Taint] = (),
              unschedulable: bool = False, pods: str = "110") -> NodeInfo:
    alloc = {"cpu": "4", "memory": "8Gi", "pods": pods}
    return NodeInfo(
        name, {"metadata": {"name": name}},
        NodeSpec(labels=dict(labels or {}), taints=tuple(taints), unschedulable=unschedulable),
        Resource.from_list(alloc), Resource.from_list(alloc),
    )


def open_plugin(nodes: Iterable[NodeInfo], pending: Iterable[TaskInfo] = (),
                args: dict[str, Any] | None = None) -> tuple[PredicatesPlugin, FakeSession]:
    ssn = FakeSession(nodes, pending)
    plugin = PredicatesPlugin(Arguments(args or {}))
    plugin.on_session_open(ssn)
    return plugin, ssn


def check(ssn: FakeSession, task: TaskInfo, node: NodeInfo) -> list[tuple[StatusCode, str]] | None:
    pre = ssn.registered[Point.PRE_PREDICATE]["predicates"](task)
    assert pre is None
    out = ssn.registered[Point.PREDICATE]["predicates"](task, node)
    return None if out is None else [(s.code, s.reason) for s in out]


def affinity_term(labels: dict[str, str], key: str, **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key, **extra}


# -- arguments ------------------------------------------------------------------------------------


def test_arguments_defaults_and_types() -> None:
    p = PredicatesPlugin(Arguments({}))
    assert (p.node_affinity_enable, p.node_ports_enable, p.taint_toleration_enable, p.pod_affinity_enable,
            p.node_volume_limits_enable, p.volume_zone_enable, p.pod_topology_spread_enable,
            p.volume_binding_enable, p.cache_enable) == (True,) * 8 + (False,)
    assert (p.volume_binding_timeout_seconds, p.volume_binding_weight, p.dra_filter_timeout_seconds) == (600, 1, 10)
    p = PredicatesPlugin(Arguments({"predicate.NodeAffinityEnable": "false", "predicate.CacheEnable": True}))
    assert not p.node_affinity_enable and p.cache_enable
    with pytest.raises(ArgumentError, match="predicate.PodAffinityEnable"):
        PredicatesPlugin(Arguments({"predicate.PodAffinityEnable": 1}))
    with pytest.raises(ArgumentError, match="volumebinding.weight"):
        PredicatesPlugin(Arguments({"volumebinding.weight": "1"}))


def test_registers_pre_predicate_predicate_and_the_dry_run_hooks() -> None:
    hooks = {Point.PRE_PREDICATE, Point.PREDICATE, Point.CYCLE_STATE, Point.SIMULATE_ADD_TASK,
             Point.SIMULATE_REMOVE_TASK, Point.SIMULATE_PREDICATE}
    _, ssn = open_plugin([make_node("n1")], args={"predicate.DynamicResourceAllocationEnable": False})
    assert set(ssn.registered) == hooks
    # DRA on (its feature gate's default since Kubernetes 1.34): a pod's claims are part of its shape
    _, ssn = open_plugin([make_node("n1")])
    assert set(ssn.registered) == hooks | {Point.TASK_SHAPE}


# -- pod count and abort order -------------------------------------------------------------------


def test_pod_count_accumulates_then_stable_filter_aborts() -> None:
    n = make_node("n1", taints=[Taint("dedicated", "gpu", "NoSchedule")], pods="2", unschedulable=False)
    running("a", n)
    running("b", n)
    task = pod("p", ports=[{"containerPort": 80, "hostPort": 80}])
    running("c", make_node("other"))  # a pod elsewhere does not count
    _, ssn = open_plugin([n], [task])
    assert check(ssn, task, n) == [
        (U, "node(s) pod number exceeded"),
        (UU, "node(s) had untolerated taint {dedicated: gpu}"),
    ]


def test_pod_count_alone_does_not_abort() -> None:
    n = make_node("n1", pods="1")
    running("a", n, ports=[{"containerPort": 80, "hostPort": 80}])
    task = pod("p", ports=[{"containerPort": 80, "hostPort": 80}])
    _, ssn = open_plugin([n], [task])
    assert check(ssn, task, n) == [(U, "node(s) pod number exceeded"), (U, PORTS)]


def test_pod_count_ignores_pods_evicted_in_the_session_but_not_terminating_ones() -> None:
    n = make_node("n1", pods="2")
    running("a", n)
    evicted = running("b", n)
    _, ssn = open_plugin([n])
    task = pod("p")
    assert check(ssn, task, n) == [(U, "node(s) pod number exceeded")]
    evicted.status = TaskStatus.Releasing  # evicted by this session: gone from kube's view
    assert check(ssn, task, n) is None
    n2 = make_node("n2", pods="1")
    running("c", n2, deleting=True)  # terminating in the cluster: still on the node
    assert check(ssn, task, n2) == [(U, "node(s) pod number exceeded")]


def test_unschedulable_aborts_before_node_affinity() -> None:
    n = make_node("n1", {"zone": "a"}, unschedulable=True)
    task = pod("p", nodeSelector={"zone": "b"})
    _, ssn = open_plugin([n], [task])
    assert check(ssn, task, n) == [(UU, "node(s) were unschedulable")]


def test_unschedulable_tolerated() -> None:
    n = make_node("n1", unschedulable=True)
    _, ssn = open_plugin([n])
    key = "node.kubernetes.io/unschedulable"
    assert check(ssn, pod("a", tolerations=[{"key": key, "operator": "Exists", "effect": "NoSchedule"}]), n) is None
    assert check(ssn, pod("b", tolerations=[{"key": key, "operator": "Exists"}]), n) is None
    assert check(ssn, pod("c", tolerations=[{"operator": "Exists"}]), n) is None
    assert check(ssn, pod("d", tolerations=[{"key": key, "operator": "Exists", "effect": "NoExecute"}]), n) == [
        (UU, "node(s) were unschedulable")]


def test_node_affinity_aborts_before_taints() -> None:
    n = make_node("n1", {"zone": "a"}, taints=[Taint("k", "v", "NoSchedule")])
    task = pod("p", nodeSelector={"zone": "b"})
    _, ssn = open_plugin([n], [task])
    assert check(ssn, task, n) == [(UU, NODE_AFFINITY)]


# -- node affinity -------------------------------------------------------------------------------------


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


@pytest.mark.parametrize("expression, labels, ok", [
    (expr("zone", "In", "a", "b"), {"zone": "b"}, True),
    (expr("zone", "In", "a", "b"), {"zone": "c"}, False),
    (expr("zone", "In", "a"), {}, False),
    (expr("zone", "NotIn", "a"), {"zone": "b"}, True),
    (expr("zone", "NotIn", "a"), {}, True),
    (expr("zone", "NotIn", "a"), {"zone": "a"}, False),
    (expr("gpu", "Exists"), {"gpu": ""}, True),
    (expr("gpu", "Exists"), {}, False),
    (expr("gpu", "DoesNotExist"), {}, True),
    (expr("gpu", "DoesNotExist"), {"gpu": "x"}, False),
    (expr("cores", "Gt", "8"), {"cores": "16"}, True),
    (expr("cores", "Gt", "8"), {"cores": "8"}, False),
    (expr("cores", "Gt", "8"), {"cores": "many"}, False),
    (expr("cores", "Gt", "8"), {}, False),
    (expr("cores", "Lt", "8"), {"cores": "-3"}, True),
    (expr("cores", "Lt", "8"), {"cores": "9"}, False),
    (expr("cores", "Gt", "eight"), {"cores": "16"}, False),  # invalid term matches nothing
    (expr("zone", "In"), {"zone": "a"}, False),  # In without values is invalid
])
def test_node_affinity_operators(expression: dict[str, Any], labels: dict[str, str], ok: bool) -> None:
    n = make_node("n1", labels)
    _, ssn = open_plugin([n])
    task = pod("p", affinity=required({"matchExpressions": [expression]}))
    assert check(ssn, task, n) == (None if ok else [(UU, NODE_AFFINITY)])


def test_node_affinity_terms_or_expressions_and_fields() -> None:
    a = make_node("a", {"zone": "z1", "disk": "ssd"})
    b = make_node("b", {"zone": "z2"})
    c = make_node("c", {"zone": "z3"})
    _, ssn = open_plugin([a, b, c])
    task = pod("p", affinity=required(
        {"matchExpressions": [expr("zone", "In", "z1"), expr("disk", "In", "ssd")]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b"]}]},
    ))
    assert [check(ssn, task, n) is None for n in (a, b, c)] == [True, True, False]
    not_b = pod("q", affinity=required({"matchFields": [{"key": "metadata.name", "operator": "NotIn",
                                                          "values": ["b"]}]}))
    assert [check(ssn, not_b, n) is None for n in (a, b, c)] == [True, False, True]
    # an empty term selects nothing; with the nodeSelector both must hold
    empty = pod("r", affinity=required({}))
    assert check(ssn, empty, a) == [(UU, NODE_AFFINITY)]
    both = pod("s", nodeSelector={"disk": "ssd"}, affinity=required({"matchExpressions": [expr("zone", "Exists")]}))
    assert [check(ssn, both, n) is None for n in (a, b)] == [True, False]


def test_preferred_only_node_affinity_is_no_filter() -> None:
    n = make_node("n1")
    _, ssn = open_plugin([n])
    task = pod("p", affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": {"matchExpressions": [expr("zone", "In", "a")]}}]}})
    assert check(ssn, task, n) is None


def test_node_affinity_disabled() -> None:
    n = make_node("n1", {"zone": "a"})
    _, ssn = open_plugin([n], args={"predicate.NodeAffinityEnable": False})
    assert check(ssn, pod("p", nodeSelector={"zone": "b"}), n) is None


def test_pre_predicate_node_name_conflict() -> None:
    _, ssn = open_plugin([make_node("a")])
    task = pod("p", affinity=required({"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["a"]},
        {"key": "metadata.name", "operator": "In", "values": ["b"]},
    ]}))
    assert ssn.registered[Point.PRE_PREDICATE]["predicates"](task) == \
        "plugin NodeAffinity pre-predicates failed pod affinity terms conflict"
    # the first term without a node-name requirement makes every node eligible
    raw = {"nodeSelectorTerms": [{"matchExpressions": [expr("x", "Exists")]},
                                 {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]},
                                                  {"key": "metadata.name", "operator": "In", "values": ["b"]}]}]}
    assert not node_name_conflict(raw)


def test_pre_predicate_invalid_selectors() -> None:
    _, ssn = open_plugin([make_node("a")])
    bad = {"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}
    task = pod("p", affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": bad, "topologyKey": "zone"}]}})
    err = ssn.registered[Point.PRE_PREDICATE]["predicates"](task)
    assert err is not None and err.startswith("plugin InterPodAffinity pre-predicates failed parsing pod: ")
    task = pod("q", topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "zone",
                                                "whenUnsatisfiable": "DoNotSchedule", "labelSelector": bad}])
    err = ssn.registered[Point.PRE_PREDICATE]["predicates"](task)
    assert err is not None and err.startswith("plugin PodTopologySpread pre-predicates failed ")


def test_label_selector_forms() -> None:
    assert parse_label_selector(None) is NOTHING and not NOTHING.matches({})
    assert parse_label_selector({}) is EVERYTHING and EVERYTHING.matches({"a": "b"}) and EVERYTHING.empty
    sel = parse_label_selector({"matchLabels": {"app": "web"},
                                "matchExpressions": [expr("tier", "NotIn", "db"), expr("env", "Exists")]})
    assert sel.matches({"app": "web", "env": "x"})
    assert not sel.matches({"app": "web", "env": "x", "tier": "db"})
    assert not sel.matches({"app": "web"})
    assert parse_node_selector_term({}) is None


# -- taints ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tolerations, ok", [
    ([], False),
    ([{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}], True),
    ([{"key": "dedicated", "value": "gpu"}], True),  # no operator means Equal; no effect means all
    ([{"key": "dedicated", "operator": "Equal", "value": "cpu", "effect": "NoSchedule"}], False),
    ([{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}], True),
    ([{"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}], False),
    ([{"operator": "Exists"}], True),  # empty key with Exists tolerates everything
    ([{"key": "other", "operator": "Exists"}], False),
])
def test_taint_tolerations(tolerations: list[dict[str, Any]], ok: bool) -> None:
    n = make_node("n1", taints=[Taint("dedicated", "gpu", "NoSchedule")])
    _, ssn = open_plugin([n])
    expected = None if ok else [(UU, "node(s) had untolerated taint {dedicated: gpu}")]
    assert check(ssn, pod("p", tolerations=tolerations), n) == expected


def test_taint_effects_and_first_untolerated() -> None:
    n = make_node("n1", taints=[Taint("soft", "", "PreferNoSchedule"), Taint("a", "1", "NoSchedule"),
                                Taint("b", "", "NoExecute")])
    _, ssn = open_plugin([n])
    assert check(ssn, pod("p"), n) == [(UU, "node(s) had untolerated taint {a: 1}")]
    tol = [{"key": "a", "operator": "Exists"}]
    assert check(ssn, pod("q", tolerations=tol), n) == [(UU, "node(s) had untolerated taint {b: }")]
    tol.append({"key": "b", "operator": "Exists", "effect": "NoExecute"})
    assert check(ssn, pod("r", tolerations=tol), n) is None  # PreferNoSchedule is not a filter
    _, off = open_plugin([n], args={"predicate.TaintTolerationEnable": False})
    assert check(off, pod("s"), n) is None


# -- host ports ---------------------------------------------------------------------------------------------


def test_host_ports() -> None:
    n = make_node("n1")
    running("web", n, ports=[{"containerPort": 80, "hostPort": 8080}])
    running("dns", n, ports=[{"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"}])
    _, ssn = open_plugin([n])
    assert check(ssn, pod("a", ports=[{"containerPort": 80, "hostPort": 8080}]), n) == [(U, PORTS)]
    assert check(ssn, pod("b", ports=[{"containerPort": 80, "hostPort": 8080, "protocol": "UDP"}]), n) is None
    assert check(ssn, pod("c", ports=[{"containerPort": 80, "hostPort": 8081}]), n) is None
    assert check(ssn, pod("d", ports=[{"containerPort": 80}]), n) is None  # no host port
    # 0.0.0.0 conflicts with a specific IP; two specific IPs don't
    assert check(ssn, pod("e", ports=[{"containerPort": 5, "hostPort": 53, "protocol": "UDP"}]), n) == [(U, PORTS)]
    assert check(ssn, pod("f", ports=[{"containerPort": 5, "hostPort": 53, "protocol": "UDP",
                                       "hostIP": "10.0.0.2"}]), n) is None
    assert check(ssn, pod("g", ports=[{"containerPort": 5, "hostPort": 8080, "hostIP": "10.0.0.2"}]), n) == [
        (U, PORTS)]
    _, off = open_plugin([n], args={"predicate.NodePortsEnable": False})
    assert check(off, pod("h", ports=[{"containerPort": 80, "hostPort": 8080}]), n) is None


def test_host_port_info_sanitizes() -> None:
    info = HostPortInfo()
    info.add(HostPort("", "", 80))
    assert info.conflicts(HostPort("TCP", "0.0.0.0", 80))
    assert info.conflicts(HostPort("TCP", "127.0.0.1", 80))
    assert not info.conflicts(HostPort("TCP", "", 0))


# -- inter-pod affinity ----------------------------------------------------------------------------------------


def zones() -> tuple[NodeInfo, NodeInfo, NodeInfo, NodeInfo]:
    return (make_node("a1", {"zone": "a", "kubernetes.io/hostname": "a1"}),
            make_node("a2", {"zone": "a", "kubernetes.io/hostname": "a2"}),
            make_node("b1", {"zone": "b", "kubernetes.io/hostname": "b1"}),
            make_node("x", {"kubernetes.io/hostname": "x"}))


def test_required_pod_affinity() -> None:
    a1, a2, b1, x = zones()
    running("cache", a1, labels={"app": "cache"})
    task = pod("web", labels={"app": "web"}, affinity={"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [affinity_term({"app": "cache"}, "zone")]}})
    _, ssn = open_plugin([a1, a2, b1, x], [task])
    assert [check(ssn, task, n) for n in (a1, a2)] == [None, None]
    assert check(ssn, task, b1) == [(UU, POD_AFFINITY)]
    assert check(ssn, task, x) == [(UU, POD_AFFINITY)]  # no topology label


def test_required_pod_affinity_first_of_its_group() -> None:
    a1, a2, b1, x = zones()
    term = affinity_term({"app": "web"}, "zone")
    task = pod("web-0", labels={"app": "web"}, affinity={"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term]}})
    _, ssn = open_plugin([a1, a2, b1, x], [task])
    # no pod matches yet and the pod matches its own term: any node with the label
    assert [check(ssn, task, n) for n in (a1, b1)] == [None, None]
    assert check(ssn, task, x) == [(UU, POD_AFFINITY)]
    # a pod that does not match its own term has nowhere to go
    other = pod("db", labels={"app": "db"}, affinity={"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term]}})
    assert check(ssn, other, a1) == [(UU, POD_AFFINITY)]
    # once placed in zone a, the group sticks to zone a
    ssn.place(task, a1)
    follower = pod("web-1", labels={"app": "web"}, affinity={"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term]}})
    assert check(ssn, follower, a2) is None
    assert check(ssn, follower, b1) == [(UU, POD_AFFINITY)]


def test_required_anti_affinity_both_directions() -> None:
    a1, a2, b1, x = zones()
    running("db", a1, labels={"app": "db"})
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        affinity_term({"app": "db"}, "zone")]}}
    task = pod("db-2", labels={"app": "db"}, affinity=anti)
    _, ssn = open_plugin([a1, a2, b1, x], [task])
    assert check(ssn, task, a2) == [(U, POD_ANTI_AFFINITY)]
    assert check(ssn, task, b1) is None
    assert check(ssn, task, x) is None  # no zone label: the term does not apply

    # the existing pod's anti-affinity keeps matching pods away even without terms of their own
    a1, a2, b1, x = zones()
    running("db", a1, labels={"app": "db"}, affinity=anti)
    _, ssn = open_plugin([a1, a2, b1, x])
    assert check(ssn, pod("plain", labels={"app": "db"}), a2) == [(U, EXISTING_ANTI)]
    assert check(ssn, pod("plain2", labels={"app": "web"}), a2) is None
    assert check(ssn, pod("plain3", labels={"app": "db"}), b1) is None


def test_anti_affinity_namespaces() -> None:
    a1, a2, b1, x = zones()
    running("db", a1, ns="other", labels={"app": "db"})
    own_ns = pod("p", labels={"app": "x"}, affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [affinity_term({"app": "db"}, "zone")]}})
    all_ns = pod("q", labels={"app": "x"}, affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            affinity_term({"app": "db"}, "zone", namespaceSelector={})]}})
    listed = pod("r", labels={"app": "x"}, affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            affinity_term({"app": "db"}, "zone", namespaces=["other"])]}})
    by_name = pod("s", labels={"app": "x"}, affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [affinity_term(
            {"app": "db"}, "zone",
            namespaceSelector={"matchLabels": {"kubernetes.io/metadata.name": "other"}})]}})
    _, ssn = open_plugin([a1, a2, b1, x], [own_ns])
    assert check(ssn, own_ns, a2) is None  # default: the pod's own namespace only
    assert check(ssn, all_ns, a2) == [(U, POD_ANTI_AFFINITY)]
    assert check(ssn, listed, a2) == [(U, POD_ANTI_AFFINITY)]
    assert check(ssn, by_name, a2) == [(U, POD_ANTI_AFFINITY)]


def test_in_session_placements_are_seen() -> None:
    a1, a2, b1, x = zones()
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        affinity_term({"app": "db"}, "kubernetes.io/hostname")]}}
    first = pod("db-0", labels={"app": "db"}, affinity=anti)
    second = pod("db-1", labels={"app": "db"}, affinity=anti)
    _, ssn = open_plugin([a1, a2, b1, x], [first, second])
    assert check(ssn, second, a1) is None
    ssn.place(first, a1)
    assert check(ssn, second, a1) == [(U, POD_ANTI_AFFINITY)]
    assert check(ssn, second, a2) is None
    # a plain pod with matching labels is kept off by the placed pod's anti-affinity
    assert check(ssn, pod("plain", labels={"app": "db"}), a1) == [(U, EXISTING_ANTI)]


def test_filters_after_the_stable_ones_accumulate() -> None:
    a1, a2, b1, x = zones()
    running("db", a1, labels={"app": "db"}, ports=[{"containerPort": 80, "hostPort": 80}])
    task = pod("p", labels={"app": "db"}, ports=[{"containerPort": 80, "hostPort": 80}], affinity={
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            affinity_term({"app": "db"}, "zone")]}})
    _, ssn = open_plugin([a1, a2, b1, x], [task])
    assert check(ssn, task, a1) == [(U, PORTS), (U, POD_ANTI_AFFINITY)]


def test_pod_affinity_failure_aborts_before_spread() -> None:
    a1, a2, b1, x = zones()
    running("cache", a1, labels={"app": "cache"})
    running("web", b1, labels={"app": "web"})
    task = pod("web-2", labels={"app": "web"}, affinity={"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [affinity_term({"app": "cache"}, "zone")]}},
        topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                                    "labelSelector": {"matchLabels": {"app": "web"}}}])
    _, ssn = open_plugin([a1, a2, b1, x], [task])
    assert check(ssn, task, b1) == [(UU, POD_AFFINITY)]


def test_pod_affinity_disabled() -> None:
    a1, a2, b1, x = zones()
    running("db", a1, labels={"app": "db"}, affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [affinity_term({"app": "db"}, "zone")]}})
    _, ssn = open_plugin([a1, a2, b1, x], args={"predicate.PodAffinityEnable": False})
    assert check(ssn, pod("p", labels={"app": "db"}), a2) is None


# -- topology spread ------------------------------------------------------------------------------------------


def spread(max_skew: int = 1, key: str = "zone", **extra: Any) -> list[dict[str, Any]]:
    return [{"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": "web"}}, **extra}]


def test_spread_skew() -> None:
    a1, a2, b1, x = zones()
    running("w1", a1, labels={"app": "web"})
    running("w2", a2, labels={"app": "web"})
    running("other-ns", b1, ns="other", labels={"app": "web"})  # another namespace: not counted
    running("leaving", b1, labels={"app": "web"}, deleting=True)  # terminating: not counted
    task = pod("w3", labels={"app": "web"}, topologySpreadConstraints=spread())
    _, ssn = open_plugin([a1, a2, b1, x], [task])
    # zone a: 2 + 1 - min(0) = 3 > 1; zone b: 0 + 1 - 0 = 1
    assert check(ssn, task, a1) == [(U, SPREAD)]
    assert check(ssn, task, b1) is None
    assert check(ssn, task, x) == [(UU, SPREAD + " (missing required label)")]
    # maxSkew 2 still refuses zone a (skew 3); 3 allows it
    assert check(ssn, pod("w4", labels={"app": "web"}, topologySpreadConstraints=spread(2)), a1) == [(U, SPREAD)]
    assert check(ssn, pod("w5", labels={"app": "web"}, topologySpreadConstraints=spread(3)), a1) is None
    # a pod that does not match the selector does not count itself
    assert check(ssn, pod("x1", labels={"app": "x"}, topologySpreadConstraints=spread(2)), a1) is None


def test_spread_follows_placements_and_min_domains() -> None:
    a1, a2, b1, x = zones()
    t1 = pod("w1", labels={"app": "web"}, topologySpreadConstraints=spread())
    t2 = pod("w2", labels={"app": "web"}, topologySpreadConstraints=spread())
    _, ssn = open_plugin([a1, a2, b1, x], [t1, t2])
    assert check(ssn, t1, a1) is None
    ssn.place(t1, a1)
    assert check(ssn, t2, a2) == [(U, SPREAD)]
    assert check(ssn, t2, b1) is None
    ssn.place(t2, b1)
    # minDomains 3 with two zones: the global minimum is taken as 0
    t3 = pod("w3", labels={"app": "web"}, topologySpreadConstraints=spread(1, minDomains=3))
    assert check(ssn, t3, a2) == [(U, SPREAD)]  # 1 + 1 - 0 = 2 > 1
    t4 = pod("w4", labels={"app": "web"}, topologySpreadConstraints=spread(1))
    assert check(ssn, t4, a2) is None  # 1 + 1 - 1 = 1


def test_spread_node_affinity_policy() -> None:
    a1, a2, b1, x = zones()
    running("w1", a1, labels={"app": "web"})
    # only zone a nodes are eligible: zone b is no domain, so the minimum is zone a's count
    honor = pod("p", labels={"app": "web"}, nodeSelector={"zone": "a"}, topologySpreadConstraints=spread())
    ignore = pod("q", labels={"app": "web"}, nodeSelector={"zone": "a"},
                 topologySpreadConstraints=spread(1, nodeAffinityPolicy="Ignore"))
    _, ssn = open_plugin([a1, a2, b1, x], [honor])
    assert check(ssn, honor, a2) is None  # 1 + 1 - 1 = 1
    assert check(ssn, ignore, a2) == [(U, SPREAD)]  # 1 + 1 - 0 = 2


def test_spread_schedule_anyway_is_no_filter() -> None:
    a1, a2, b1, x = zones()
    running("w1", a1, labels={"app": "web"})
    running("w2", a1, labels={"app": "web"})
    soft = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": {"app": "web"}}}]
    _, ssn = open_plugin([a1, a2, b1, x])
    assert check(ssn, pod("p", labels={"app": "web"}, topologySpreadConstraints=soft), x) is None


# -- equivalence cache -------------------------------------------------------------------------------------------


def test_predicate_cache() -> None:
    n = make_node("n1", {"zone": "a"})
    _, ssn = open_plugin([n], args={"predicate.CacheEnable": True})
    ann = {"volcano.sh/template-uid": "tmpl-1"}
    assert check(ssn, pod("p0", annotations=ann, nodeSelector={"zone": "b"}), n) == [(UU, NODE_AFFINITY)]
    assert check(ssn, pod("p1", annotations=ann, nodeSelector={"zone": "b"}), n) == [
        (StatusCode.Error, "plugin equivalence cache predicates failed")]
    assert check(ssn, pod("p2", nodeSelector={"zone": "b"}), n) == [(UU, NODE_AFFINITY)]


def test_status_objects_are_fresh() -> None:
    n = make_node("n1", unschedulable=True)
    _, ssn = open_plugin([n])
    fn = ssn.registered[Point.PREDICATE]["predicates"]
    first, second = fn(pod("a"), n), fn(pod("b"), n)
    assert first == second == [Status(UU, "node(s) were unschedulable")]
    assert first[0] is not second[0]


def test_the_terms_cache_keeps_nothing_for_a_pod_without_terms() -> None:
    """A session's TermsCache answers every pod; only the pods with terms take an entry (a session of
    50,000 plain pods kept 50,000 entries, one tuple and a dict slot each, of the shared empty terms)."""
    from vcsched.api.k8s import EMPTY_TERMS, TermsCache

    cache = TermsCache()
    plain = pod("plain")
    assert cache.get(plain) is EMPTY_TERMS
    selective = pod("selective", nodeSelector={"zone": "a"})
    terms = cache.get(selective)
    assert terms.required_node is not None and cache.get(selective) is terms
    assert len(cache._by_spec) == 1
