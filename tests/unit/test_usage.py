"""usage (plugins/usage.py) on plain objects: Volcano's plugins/usage/usage_test.go, estimator_test.go
and shadow_cache_test.go cases that check a score, a formula or an argument.  The predicate cases run
end to end in tests/scenarios/test_usage.py."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from vcsched.api.node_info import NodeInfo, NodeSpec
from vcsched.api.node_usage import NODE_METRICS_PERIOD, NodeUsage
from vcsched.api.resource import Resource
from vcsched.api.task_info import TaskInfo, new_task_info
from vcsched.api.types import TaskStatus
from vcsched.conf import ConfError, parse_conf
from vcsched.framework.arguments import ArgumentError, Arguments
from vcsched.framework.interface import Point
from vcsched.plugins.usage import (
    ShadowLoadCache,
    UsagePlugin,
    applied_risk_factor,
    composite_utilization,
    estimate_best_effort_resource,
    estimate_pod_resource,
    in_monitoring_blind_spot,
    load_composite_percentage,
    node_score,
    pod_limit,
)

from .fakes import FakeSession

NOW = 1_767_229_200.0  # 2026-01-01T01:00:00Z
MI = 1024 * 1024
GI = 1024 * MI
EPS = 1e-8


def plugin(**args: Any) -> UsagePlugin:
    return UsagePlugin(Arguments(args, "usage.arguments"))


def node(name: str, cpu: str = "4", memory: str = "8Gi") -> NodeInfo:
    res = {"cpu": cpu, "memory": memory, "pods": "10"}
    r = Resource.from_list(res)
    return NodeInfo(name, {"metadata": {"name": name}, "status": {"capacity": res, "allocatable": res}},
                    NodeSpec(), r, r.clone())


def task(name: str, *, node_name: str = "", phase: str = "Pending", requests: dict | None = None,
         limits: dict | None = None, start: str | None = None) -> TaskInfo:
    res: dict[str, Any] = {}
    if requests:
        res["requests"] = requests
    if limits:
        res["limits"] = limits
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x", "resources": res}]}
    if node_name:
        spec["nodeName"] = node_name
    status: dict[str, Any] = {"phase": phase}
    if start:
        status["startTime"] = start
    return new_task_info({"metadata": {"name": name, "namespace": "c1", "uid": name}, "spec": spec,
                          "status": status})


def opened(p: UsagePlugin, nodes: list[NodeInfo], usage: dict[str, NodeUsage],
           metrics: dict[str, str] | None = None) -> FakeSession:
    ssn = FakeSession(nodes)
    ssn.now = NOW
    ssn.node_usage = usage
    ssn.conf = SimpleNamespace(metrics=metrics or {})
    p.on_session_open(ssn)
    return ssn


def usage(cpu: float, mem: float, at: float = NOW) -> NodeUsage:
    return NodeUsage.measured(cpu, mem, at)


NODE_ORDER_USAGE = {
    "n1": usage(30, 50), "n2": usage(60, 50), "n3": usage(60, 80),
    # not updated in the last 5 minutes: the usage function is off, the score 0
    "n4": usage(10, 20, NOW - 360),
    # the metric time in its initial state (Go's zero time): score 0
    "n5": NodeUsage.measured(0, 0, 0.0),
}


@pytest.mark.parametrize("weights, expected", [
    # TestUsage_nodeOrderFn "Node scoring in the default weight configuration scenario."
    ({"usage.weight": 5, "cpu.weight": 1, "memory.weight": 1},
     {"n1": 300, "n2": 225, "n3": 150, "n4": 0, "n5": 0}),
    # TestUsage_nodeOrderFn "Node scoring gives priority to memory resources"
    ({"usage.weight": 5, "cpu.weight": 2, "memory.weight": 8},
     {"n1": 270, "n2": 240, "n3": 120, "n4": 0, "n5": 0}),
])
def test_node_order_scores_as_volcano(weights, expected):
    """usage_test.go · TestUsage_nodeOrderFn, both cases (thresholds cpu 80, mem 80)."""
    nodes = [node(n) for n in expected]
    ssn = opened(plugin(**weights, thresholds={"cpu": 80, "mem": 80}), nodes, NODE_ORDER_USAGE)
    score = ssn.fn(Point.NODE_ORDER, "usage")
    p1 = task("p1", requests={"cpu": "1", "memory": "1Gi"})
    for n in nodes:
        assert score(p1, n) == pytest.approx(expected[n.name], abs=EPS), n.name


def test_the_score_is_counted_once_by_the_session():
    """usage_test.go · TestUsage_prioritizeNodesDoesNotDoubleCountNodeOrder: through the real session's
    node order (every registered plugin's score summed once), n1 300 and n2 225."""
    from vcsched.framework.registry import plugin_classes
    from vcsched.framework.session import Session, Snapshot

    conf = parse_conf("actions: allocate\ntiers:\n- plugins:\n  - name: usage\n    arguments:\n"
                      "      usage.weight: 5\n      cpu.weight: 1\n      memory.weight: 1\n")
    nodes = [node("n1"), node("n2")]
    ssn = Session(Snapshot(nodes, {}, {}, node_usage={"n1": usage(30, 50), "n2": usage(60, 50)}), conf,
                  plugin_classes(), now=NOW)
    ssn.open()
    p1 = task("p1", requests={"cpu": "1", "memory": "1Gi"})
    assert ssn.node_order(p1, ssn.nodes["n1"]) == pytest.approx(300, abs=EPS)
    assert ssn.node_order(p1, ssn.nodes["n2"]) == pytest.approx(225, abs=EPS)


def test_shadow_estimates_lower_the_score_of_a_node_with_fresh_pods():
    """The composite load: a pod the session allocates counts on its node until un-allocated."""
    n1 = node("n1")
    ssn = opened(plugin(), [n1], {"n1": usage(30, 50)})
    score = ssn.fn(Point.NODE_ORDER, "usage")
    p = task("p", requests={"cpu": "1", "memory": "2Gi"})
    assert score(p, n1) == pytest.approx(300)
    p.node_name = "n1"
    p.status = TaskStatus.Allocated
    ssn.handlers[0].allocate(p)
    # composite 30 % + 0.7 * 1000m / 4000m = 47.5 %; 50 % + 0.7 * 2Gi / 8Gi = 67.5 %; load 57.5 % < 0.6
    assert score(p, n1) == pytest.approx(((1 - 0.475) + (1 - 0.675)) / 2 * 100 * 5)
    ssn.handlers[0].deallocate(p)
    assert score(p, n1) == pytest.approx(300)


def test_warm_up_counts_the_pods_the_metrics_cannot_show_yet():
    """OnSessionOpen's warm-up: a Bound pod and one Running for 10 s count (monitoring delay 30 s); one
    Running for 10 minutes does not."""
    n1, n2 = node("n1"), node("n2")
    fresh = task("fresh", node_name="n1", phase="Running", requests={"cpu": "1", "memory": "1Gi"},
                 start="2026-01-01T00:59:50Z")
    bound = task("bound", node_name="n1", requests={"cpu": "1", "memory": "1Gi"})
    old = task("old", node_name="n2", phase="Running", requests={"cpu": "1", "memory": "1Gi"},
               start="2026-01-01T00:50:00Z")
    n1.add_task(fresh)
    n1.add_task(bound)
    n2.add_task(old)
    ssn = opened(plugin(), [n1, n2], {"n1": usage(0, 0), "n2": usage(0, 0)})
    score = ssn.fn(Point.NODE_ORDER, "usage")
    # n1: 2 * 700m of 4000m = 35 %, 2 * 0.7Gi of 8Gi = 17.5 %
    assert score(fresh, n1) == pytest.approx(((1 - 0.35) + (1 - 0.175)) / 2 * 500)
    assert score(old, n2) == pytest.approx(500)
    # with metrics.interval 15m the old pod is still in the blind spot
    ssn = opened(plugin(), [n1, n2], {"n1": usage(0, 0), "n2": usage(0, 0)}, {"interval": "15m"})
    assert ssn.fn(Point.NODE_ORDER, "usage")(old, n2) < 500


@pytest.mark.parametrize("status, phase_start, expected", [
    (TaskStatus.Pending, None, False),      # "pending with node is not treated as allocated"
    (TaskStatus.Allocated, None, True),     # "allocated task is tracked"
    (TaskStatus.Binding, None, True),       # "binding task is tracked"
    (TaskStatus.Bound, None, True),         # "bound task is tracked"
    (TaskStatus.Running, "2026-01-01T00:59:00Z", True),   # "recent running task is tracked"
    (TaskStatus.Running, "2026-01-01T00:50:00Z", False),  # "old running task is not tracked"
    (TaskStatus.Running, None, True),       # Running without status.startTime
    (TaskStatus.Succeeded, None, False),    # "completed task is not tracked"
])
def test_should_add_to_shadow_cache(status, phase_start, expected):
    """usage_test.go · TestShouldAddToShadowCache (metrics delay 5 minutes)."""
    t = task("t", node_name="node1", phase="Running" if phase_start else "Pending", start=phase_start)
    t.status = status
    assert in_monitoring_blind_spot(t, NOW, 300) is expected
    t.node_name = ""  # "pending without node is not tracked"
    assert in_monitoring_blind_spot(t, NOW, 300) is False


# -- estimator_test.go ---------------------------------------------------------------------------------


@pytest.mark.parametrize("cpu, mem, cw, mw, expected", [
    (0.4, 0.6, 1, 1, 0.5), (0.8, 0.2, 3, 1, 0.65), (0.8, 0.2, 0, 0, 0),
])
def test_load_composite_percentage(cpu, mem, cw, mw, expected):
    """TestCalcLoadCompositePercentage."""
    assert load_composite_percentage(cpu, mem, cw, mw) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("load, threshold, factor, expected", [
    (0.59, 0.6, 1.2, 1.0), (0.6, 0.6, 1.2, 1.2), (0.9, 0.6, 1.2, 1.2), (0.9, 0.6, 0.8, 1.0),
])
def test_applied_risk_factor(load, threshold, factor, expected):
    """TestCalcAppliedRiskFactor."""
    assert applied_risk_factor(load, threshold, factor) == pytest.approx(expected)


@pytest.mark.parametrize("req, lim, rw, bw, risk, expected", [
    (500, 2000, 1.0, 0.0, 1.0, 500), (500, 2000, 0.0, 0.0, 1.0, 0), (500, 2000, 1.0, 1.0, 1.0, 2000),
    (500, 2000, 0.5, 0.2, 1.0, 550), (500, 600, 1.0, 0.0, 1.2, 600), (500, 0, 1.0, 1.0, 1.2, 500),
])
def test_estimate_pod_resource(req, lim, rw, bw, risk, expected):
    """TestEstimatePodResource."""
    assert estimate_pod_resource(req, lim, rw, bw, risk) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("configured, risk, expected", [(250, 1.0, 250), (250, 1.2, 300), (-1, 1.2, 0)])
def test_estimate_best_effort_resource(configured, risk, expected):
    """TestEstimateBestEffortResource."""
    assert estimate_best_effort_resource(configured, risk) == pytest.approx(expected)


@pytest.mark.parametrize("real, shadow, capacity, expected", [
    (50, 0, 8000, 0.5), (50, 2000, 8000, 0.75), (80, 5000, 8000, 1.0), (50, 1000, 0, 0),
    (0, 0, 8000, 0), (100, 0, 8000, 1.0),
])
def test_composite_utilization(real, shadow, capacity, expected):
    """TestCalcCompositeUtilization."""
    assert composite_utilization(real, shadow, capacity) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("cpu, mem, cw, mw, uw, expected", [
    (0, 0, 1, 1, 1, 100), (1, 1, 1, 1, 1, 0), (0.5, 0.5, 1, 1, 5, 250), (0.3, 0.5, 1, 1, 5, 300),
    (0.6, 0.5, 2, 8, 5, 240), (0.5, 0.5, 0, 0, 5, 0),
])
def test_node_score(cpu, mem, cw, mw, uw, expected):
    """TestCalcNodeScore."""
    assert node_score(cpu, mem, cw, mw, uw) == pytest.approx(expected, abs=1e-6)


def _pod(containers: list[dict], init: list[dict] | None = None) -> dict:
    return {"metadata": {"name": "p"}, "spec": {"containers": containers, "initContainers": init or []}}


def _c(req_cpu: str, req_mem: str, lim_cpu: str, lim_mem: str, **extra: Any) -> dict:
    return {"name": "c", "resources": {"requests": {"cpu": req_cpu, "memory": req_mem},
                                       "limits": {"cpu": lim_cpu, "memory": lim_mem}}, **extra}


@pytest.mark.parametrize("pod, req, lim", [
    # "single container with cpu and memory request and limit"
    (_pod([_c("500m", "1Gi", "1000m", "2Gi")]), (500, GI), (1000, 2 * GI)),
    # "multiple containers - requests/limits summed"
    (_pod([_c("200m", "1Gi", "500m", "2Gi"), _c("300m", "2Gi", "700m", "3Gi")]), (500, 3 * GI), (1200, 5 * GI)),
    # "init container takes max"
    (_pod([_c("500m", "1Gi", "1000m", "2Gi")], [_c("2000m", "4Gi", "3000m", "5Gi")]), (2000, 4 * GI), (3000, 5 * GI)),
    # "restartable init container is added as sidecar"
    (_pod([_c("1000m", "2Gi", "2000m", "3Gi")], [_c("1000m", "1Gi", "2000m", "2Gi", restartPolicy="Always")]),
     (2000, 3 * GI), (4000, 5 * GI)),
    # "no resources specified (BestEffort)"
    (_pod([{"name": "c", "resources": {}}]), (0, 0), (0, 0)),
])
def test_pod_request_and_limit(pod, req, lim):
    """TestGetPodResourceRequestLimit."""
    t = new_task_info(pod)
    assert (t.resreq.milli_cpu, t.resreq.memory) == req
    assert pod_limit(pod) == lim


# -- shadow_cache_test.go ---------------------------------------------------------------------------


def test_shadow_cache_add_replace_remove():
    """TestShadowLoadCache_AddEstimate, _UpdateExistingTask, _SubEstimateBySnapshot(_NonExistent),
    _MultipleNodes, _GetNodeEst_NonExistentNode, _AllocateDeallocateExactMatch."""
    c = ShadowLoadCache()
    assert c.node("nowhere") == (0.0, 0.0)
    c.add("n1", "t1", 500, 1024)
    c.add("n1", "t2", 300, 2048)
    c.add("n2", "t3", 100, 10)
    assert c.node("n1") == (800, 3072) and c.node("n2") == (100, 10)
    c.add("n2", "t1", 700, 4096)  # t1 again, elsewhere: its first estimate is taken off
    assert c.node("n1") == (300, 2048) and c.node("n2") == (800, 4106)
    c.remove("t1")
    c.remove("t1")  # no snapshot: nothing happens
    assert c.node("n2") == (100, 10)
    c.remove("t2")
    c.remove("t3")
    assert c.node("n1") == (0, 0) and c.node("n2") == (0, 0) and not c.pods


# -- arguments (usage_test.go's config tests) ----------------------------------------------------------


def test_defaults():
    """TestUsageEstimatorConfig, the defaults."""
    p = plugin()
    assert (p.usage_weight, p.cpu_weight, p.memory_weight) == (5, 1, 1)
    assert (p.cpu_threshold, p.mem_threshold) == (80, 80)
    assert (p.request_ratio, p.burst_ratio, p.risk_threshold, p.risk_factor) == (0.7, 0.0, 0.6, 1.2)
    assert (p.be_cpu, p.be_memory) == (250, 200 * MI)


def test_configured_estimator():
    """TestUsageEstimatorConfig, configured; TestUsageConfigParsesBestEffortResourceValues."""
    p = plugin(estimator={"request_ratio": 0.8, "burst_ratio": 0.3, "risk_threshold": 0.75, "risk_factor": 1.5,
                          "be_cpu": "500m", "be_mem": "300Mi"})
    assert (p.request_ratio, p.burst_ratio, p.risk_threshold, p.risk_factor) == (0.8, 0.3, 0.75, 1.5)
    assert (p.be_cpu, p.be_memory) == (500, 300 * MI)
    p = plugin(estimator={"be_cpu": 500, "be_mem": 200})  # ints: milli-CPU and Mi
    assert (p.be_cpu, p.be_memory) == (500, 200 * MI)


def test_out_of_range_values_keep_their_defaults():
    """TestUsageEstimatorConfig (invalid values), TestUsageThresholdsKeepDefaultWhenOutOfRange,
    TestUsageWeightsKeepDefaultWhenNegative."""
    p = plugin(estimator={"request_ratio": 1.5, "burst_ratio": -0.1, "risk_threshold": 2.0, "risk_factor": 0.5,
                          "be_cpu": "-1", "be_mem": -3},
               thresholds={"cpu": -1, "mem": 101}, **{"usage.weight": -1, "cpu.weight": -1, "memory.weight": -1})
    assert (p.request_ratio, p.burst_ratio, p.risk_threshold, p.risk_factor) == (0.7, 0.0, 0.6, 1.2)
    assert (p.be_cpu, p.be_memory) == (250, 200 * MI)
    assert (p.cpu_threshold, p.mem_threshold) == (80, 80)
    assert (p.usage_weight, p.cpu_weight, p.memory_weight) == (5, 1, 1)


@pytest.mark.parametrize("args, field", [
    # TestUsageConfigKeepsDefaultForGenericStringValues: Volcano keeps the defaults; vcsched refuses
    ({"usage.weight": "7"}, "usage.weight"),
    ({"cpu.weight": "2"}, "cpu.weight"),
    ({"memory.weight": 1.5}, "memory.weight"),
    ({"thresholds": {"cpu": "85"}}, "thresholds.cpu"),
    ({"thresholds": {"mem": 75.5}}, "thresholds.mem"),
    ({"estimator": {"request_ratio": "0.8"}}, "estimator.request_ratio"),
    ({"estimator": {"be_mem": "bad"}}, "estimator.be_mem"),
    ({"estimator": {"be_cpu": 0.5}}, "estimator.be_cpu"),
    ({"thresholds": [80, 80]}, "thresholds"),
    ({"estimator": "fast"}, "estimator"),
])
def test_arguments_of_the_wrong_type_are_refused(args, field):
    with pytest.raises(ArgumentError, match=rf"usage\.arguments\.{field}: expected"):
        plugin(**args)


def test_a_bad_argument_refuses_the_configuration():
    text = ("actions: allocate\ntiers:\n- plugins:\n  - name: usage\n    arguments:\n"
            "      thresholds: {cpu: high}\n")
    with pytest.raises(ConfError, match=r"tiers\[0\]\.plugins\[0\]\.arguments\.thresholds\.cpu: expected an integer"):
        parse_conf(text)


def test_the_metrics_period_is_volcanos():
    assert NODE_METRICS_PERIOD == "10m"
    assert plugin().period == "10m"
