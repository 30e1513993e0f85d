"""rescheduling's pieces on plain objects (plugins/rescheduling.py): the arguments as Volcano's
``parseArguments`` and ``LowNodeUtilizationConf.parse`` read them, the pod order of ``sortPods`` with
Kubernetes' QoS classes, and ``timeToRun``.  The strategy runs end to end in
tests/scenarios/test_rescheduling.py (Volcano has no Go test for this plugin)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from vcsched.api.task_info import new_task_info
from vcsched.framework.arguments import ArgumentError, Arguments
from vcsched.framework.session import SchedulerState
from vcsched.plugins.rescheduling import ReschedulingPlugin, eviction_order, qos_class


def plugin(**args: Any) -> ReschedulingPlugin:
    return ReschedulingPlugin(Arguments(args, "rescheduling.arguments"))


def test_defaults():
    """``NewReschedulingConfigs``: 5m, lowNodeUtilization at 100 %; MetricsPeriod 5m."""
    p = plugin()
    assert p.interval == 300 and p.metrics_period == "5m"
    [(name, conf)] = p.strategies
    assert name == "lowNodeUtilization"
    assert conf.thresholds["cpu"] == conf.target_thresholds["memory"] == 100


def test_strategies_replace_the_default_and_read_cpu_memory_and_pod():
    """``parseThreshold`` reads ``cpu``, ``memory`` and ``pod`` (not ``pods``); other keys are ignored; an
    empty list keeps the default strategy."""
    p = plugin(interval="90s", metricsPeriod="10m", strategies=[
        {"name": "lowNodeUtilization", "params": {"thresholds": {"cpu": 20, "memory": 25, "pod": 5, "gpu": 1},
                                                  "targetThresholds": {"cpu": 70}}}])
    assert p.interval == 90 and p.metrics_period == "10m"
    [(_, conf)] = p.strategies
    assert conf.thresholds == {"cpu": 20, "memory": 25, "pods": 100, "pod": 5}
    assert conf.target_thresholds == {"cpu": 70, "memory": 100, "pods": 100}
    assert plugin(strategies=[]).strategies[0][0] == "lowNodeUtilization"
    assert plugin(metricsPeriod="").metrics_period == "5m"


@pytest.mark.parametrize("args, field", [
    ({"interval": 300}, "interval: expected a string"),
    ({"interval": "5 minutes"}, "interval: expected a duration"),
    ({"strategies": [{"name": "lowNodeUtilisation"}]}, "strategies[0].name: unknown strategy"),
    ({"strategies": ["lowNodeUtilization"]}, "strategies[0]: expected a map"),
    ({"strategies": [{"name": "lowNodeUtilization", "params": [1]}]}, "strategies[0].params: expected a map"),
    ({"strategies": [{"name": "lowNodeUtilization", "params": {"thresholds": {"cpu": "20"}}}]},
     "strategies[0].params.thresholds.cpu: expected an integer percent"),
])
def test_bad_arguments(args, field):
    with pytest.raises(ArgumentError) as e:
        plugin(**args)
    assert str(e.value).startswith(f"rescheduling.arguments.{field}")


def pod(name: str, *, priority: int | None = None, requests: dict | None = None, limits: dict | None = None,
        init: dict | None = None, qos: str | None = None) -> dict:
    res: dict[str, Any] = {}
    if requests:
        res["requests"] = requests
    if limits:
        res["limits"] = limits
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": res}]}
    if init:
        spec["initContainers"] = [{"name": "i", "resources": init}]
    if priority is not None:
        spec["priority"] = priority
    obj: dict[str, Any] = {"metadata": {"name": name, "uid": name}, "spec": spec, "status": {"phase": "Running"}}
    if qos:
        obj["status"]["qosClass"] = qos
    return obj


@pytest.mark.parametrize("manifest, expected", [
    (pod("be"), "BestEffort"),
    (pod("g", requests={"cpu": "1", "memory": "1Gi"}, limits={"cpu": "1", "memory": "1Gi"}), "Guaranteed"),
    (pod("b", requests={"cpu": "1"}), "Burstable"),
    (pod("b2", requests={"cpu": "1", "memory": "1Gi"}, limits={"cpu": "2", "memory": "1Gi"}), "Burstable"),
    (pod("b3", limits={"cpu": "1"}), "Burstable"),  # no memory limit
    (pod("b4", limits={"cpu": "1", "memory": "1Gi"}, init={"requests": {"cpu": "100m"}}), "Burstable"),
    (pod("gpu", requests={"nvidia.com/gpu": "1"}), "BestEffort"),  # only CPU and memory count
    (pod("given", qos="Guaranteed"), "Guaranteed"),  # status.qosClass first
])
def test_qos_class(manifest, expected):
    """``v1qos.GetPodQOS``."""
    assert qos_class(manifest) == expected


def test_eviction_order():
    """``sortPods``: no priority first; then lower priority; then BestEffort, Burstable, Guaranteed."""
    tasks = [new_task_info(p) for p in (
        pod("high-be", priority=100),
        pod("low-g", priority=10, requests={"cpu": "1", "memory": "1Gi"}, limits={"cpu": "1", "memory": "1Gi"}),
        pod("low-b", priority=10, requests={"cpu": "1"}),
        pod("none-g", requests={"cpu": "1", "memory": "1Gi"}, limits={"cpu": "1", "memory": "1Gi"}),
        pod("low-be", priority=10),
    )]
    assert [t.name for t in sorted(tasks, key=eviction_order)] == ["none-g", "low-be", "low-b", "low-g", "high-be"]


def test_time_to_run_is_strictly_after_the_interval():
    """``timeToRun``: the first session starts the count; a run resets it."""
    p = plugin(interval="10s")
    state = SchedulerState()

    def at(now: float) -> bool:
        return p.time_to_run(SimpleNamespace(state=state, now=now))

    assert [at(t) for t in (100, 105, 110, 110.5, 115, 120.5, 121)] == [False, False, False, True, False, False, True]
