"""rescheduling + shuffle (plugins/rescheduling.py, Volcano's plugins/rescheduling and
actions/shuffle) end to end through ``vcsched simulate``, cycle by cycle.

Volcano has no ``*_test.go`` for the rescheduling plugin; these scenarios pin what its code does,
each naming the Go function it follows (low_node_utilization.go, node_utilization_util.go,
rescheduling_util.go).  Node load comes from the ``vcsched.io/sim-*-usage`` annotations; the
simulated clock moves one second per cycle, so ``interval: 1s`` first runs the strategies at cycle 3
(strictly more than 1 s after the first session) and then every other cycle.
"""

from __future__ import annotations

import pytest

from .conftest import node, podgroup

CLASSES = """
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"""


def conf(params: str = "thresholds: {cpu: 30, memory: 30}, targetThresholds: {cpu: 70, memory: 70}",
         interval: str = "1s", period: str | None = "10m", usage: bool = True) -> str:
    args = [f"interval: {interval}"]
    if period is not None:
        args.append(f"metricsPeriod: {period}")
    args.append(f"strategies: [{{name: lowNodeUtilization, params: {{{params}}}}}]")
    return f"""
actions: "enqueue, allocate, backfill, shuffle"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: proportion
{'  - name: usage' if usage else ''}
  - name: rescheduling
    arguments: {{{", ".join(args)}}}
"""


def loaded(name: str, cpu: float, mem: float, extra: str = "") -> str:
    return node(name, cpu="4", memory="8Gi", pods=20,
                extra=f'  annotations: {{vcsched.io/sim-cpu-usage: "{cpu}", vcsched.io/sim-memory-usage: "{mem}"}}'
                + (f"\n{extra}" if extra else ""))


def running(name: str, node_name: str, *, cls: str | None = "low", cpu: str | None = "1", memory: str = "1Gi",
            guaranteed: bool = False, phase: str = "Running") -> str:
    if cpu is None:
        resources = "{}"
    elif guaranteed:
        resources = f'{{requests: {{cpu: "{cpu}", memory: {memory}}}, limits: {{cpu: "{cpu}", memory: {memory}}}}}'
    else:
        resources = f'{{requests: {{cpu: "{cpu}", memory: {memory}}}}}'
    return f"""
---
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
  annotations: {{scheduling.k8s.io/group-name: pg}}
spec:
  schedulerName: volcano
  nodeName: {node_name}
  {f'priorityClassName: {cls}' if cls else ''}
  containers:
  - name: main
    image: busybox
    resources: {resources}
status: {{phase: {phase}, startTime: "2026-01-01T00:00:00Z"}}
"""


def pending(name: str, cpu: str = "1") -> str:
    return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  schedulerName: volcano
  priorityClassName: high
  containers:
  - name: main
    image: busybox
    resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}
"""


def hot_cluster() -> str:
    """hot (90 % CPU, 60 % memory) runs four pods; warm (50 %/50 %) is neither low nor high; cool
    (10 %/10 %) is the only low node.  new-0 arrives."""
    return (CLASSES + loaded("hot", 90, 60) + loaded("warm", 50, 50) + loaded("cool", 10, 10)
            + podgroup("pg", 0, extra="status: {phase: Running}")
            + running("high-0", "hot", cls="high")
            + running("low-g", "hot", guaranteed=True)
            + running("low-b", "hot")
            + running("be-0", "hot", cpu=None)
            + pending("new-0"))


def test_over_utilised_node_is_relieved_cycle_by_cycle(simulate):
    """The issue's acceptance: shuffle + rescheduling relieve an over-utilised node, stepped cycle by cycle.

    Room on the low node up to its target: cool has 70 % - 10 % of 4 CPU = 2400m and 60 % of 8Gi.
    The walk over hot (``evictPodsFromSourceNodes``, ``sortPods``, ``isContinueEvictPods``): be-0 first
    (priority 10, BestEffort, no requests: nothing changes), then low-b (10, Burstable: hot's CPU falls to
    65 %, below its target 70 %), and the walk stops before low-g (10, Guaranteed) and high-0 (1000).
    """
    manifests = hot_cluster()
    # cycles 1 and 2: the interval has not passed; usage keeps new-0 off hot (90 % > 80 %) and puts it
    # on the least loaded node
    for cycles in (1, 2):
        code, out = simulate(manifests, "--cycles", str(cycles), conf=conf())
        assert code == 0, out
        assert out["evicted"] == []
        assert out["pods"]["default/new-0"]["node"] == "cool"
    # cycle 3: the strategies run: the two pods at the bottom of hot's order are evicted
    code, out = simulate(manifests, "--cycles", "3", conf=conf())
    assert out["evicted"] == ["default/be-0", "default/low-b"]
    assert {k for k, p in out["pods"].items() if p["node"] == "hot"} == {"default/high-0", "default/low-g"}
    # cycles 4 and 5: hot's load has gone down with low-b (65 %), so at the next run (cycle 5) no node is
    # above its target and nothing more is evicted
    for cycles in (4, 5, 7):
        code, out = simulate(manifests, "--cycles", str(cycles), conf=conf())
        assert out["evicted"] == ["default/be-0", "default/low-b"]


def test_without_shuffle_nothing_is_evicted(simulate):
    """The plugin only names victims; the ``shuffle`` action evicts them."""
    code, out = simulate(hot_cluster(), "--cycles", "3", conf=conf().replace(", shuffle", ""))
    assert code == 0, out
    assert out["evicted"] == []


def test_the_interval_is_counted_from_the_first_session(simulate):
    """``timeToRun``: strictly more than ``interval`` since the last run, the first counted from the start.
    With 3s the first run is at cycle 5 (4 s after the first session)."""
    code, out = simulate(hot_cluster(), "--cycles", "4", conf=conf(interval="3s"))
    assert out["evicted"] == []
    code, out = simulate(hot_cluster(), "--cycles", "5", conf=conf(interval="3s"))
    assert out["evicted"] == ["default/be-0", "default/low-b"]
    # the default interval, 5m: not within 20 cycles
    code, out = simulate(hot_cluster(), "--cycles", "20", conf=conf(interval="''"))
    assert code == 2  # '' is no duration: refused
    text = conf().replace("interval: 1s, ", "")
    code, out = simulate(hot_cluster(), "--cycles", "20", conf=text)
    assert code == 0, out
    assert out["evicted"] == []


def test_the_default_metrics_period_reads_no_load(simulate):
    """``getNodeUtilization`` reads ``CPUUsageAvg[MetricsPeriod]``, default ``5m``; the cache files the
    load under ``10m`` only, so every node reads 0 %, every node is low and nothing is evicted."""
    code, out = simulate(hot_cluster(), "--cycles", "3", conf=conf(period=None))
    assert code == 0, out
    assert out["evicted"] == []
    code, out = simulate(hot_cluster(), "--cycles", "3", conf=conf(period="5m"))
    assert out["evicted"] == []


def test_the_default_thresholds_evict_nothing(simulate):
    """``DefaultLowNodeConf``: thresholds and targets at 100 %, so no node is ever above its target."""
    text = conf().replace(
        "strategies: [{name: lowNodeUtilization, params: {thresholds: {cpu: 30, memory: 30}, "
        "targetThresholds: {cpu: 70, memory: 70}}}]", "strategies: [{name: lowNodeUtilization}]")
    code, out = simulate(hot_cluster(), "--cycles", "3", conf=text)
    assert code == 0, out
    assert out["evicted"] == []


@pytest.mark.parametrize("cool, why", [
    ((40, 10), "no low node: cool's CPU is at or above 30 % (lowThresholdFilter)"),
    ((10, 30), "no low node: cool's memory is at 30 % (at or above the threshold is not low)"),
])
def test_without_a_low_node_nothing_is_evicted(simulate, cool, why):
    """``victimsFnForLnu``: no low node, no victims."""
    manifests = hot_cluster().replace(loaded("cool", 10, 10), loaded("cool", *cool))
    code, out = simulate(manifests, "--cycles", "3", conf=conf())
    assert code == 0, out
    assert out["evicted"] == [], why


def test_an_unschedulable_node_is_never_low(simulate):
    """``lowThresholdFilter``: ``spec.unschedulable`` nodes are not targets."""
    manifests = hot_cluster().replace(loaded("cool", 10, 10), loaded("cool", 10, 10, extra="spec: {unschedulable: true}"))
    code, out = simulate(manifests, "--cycles", "3", conf=conf())
    assert code == 0, out
    assert out["evicted"] == []


def test_when_every_node_is_low_nothing_is_evicted(simulate):
    """``victimsFnForLnu``: all nodes below the thresholds."""
    manifests = (CLASSES + loaded("a", 10, 10) + loaded("b", 20, 20) + podgroup("pg", 0)
                 + running("low-b", "a"))
    code, out = simulate(manifests, "--cycles", "3", conf=conf())
    assert code == 0, out
    assert out["evicted"] == []


def test_without_a_high_node_nothing_is_evicted(simulate):
    """``highThresholdFilter``: above the target is strictly above; hot at exactly 70 % is not high."""
    manifests = hot_cluster().replace(loaded("hot", 90, 60), loaded("hot", 70, 70))
    code, out = simulate(manifests, "--cycles", "3", conf=conf())
    assert code == 0, out
    assert out["evicted"] == []


def test_room_exactly_zero_stops_the_walk(simulate):
    """``isContinueEvictPods``: with a low node at exactly its target (thresholds 80, targets 70, cool at
    70 %) the room is 0 and no pod is evicted; at 75 % the room is negative, which does not stop it
    (Volcano compares with zero only), and the walk evicts as before."""
    params = "thresholds: {cpu: 80, memory: 80}, targetThresholds: {cpu: 70, memory: 70}"
    manifests = hot_cluster().replace(loaded("cool", 10, 10), loaded("cool", 70, 10)).replace(
        loaded("warm", 50, 50), loaded("warm", 90, 90, extra="spec: {unschedulable: true}"))
    code, out = simulate(manifests, "--cycles", "3", conf=conf(params))
    assert code == 0, out
    assert out["evicted"] == []
    manifests = manifests.replace(loaded("cool", 70, 10), loaded("cool", 75, 10))
    code, out = simulate(manifests, "--cycles", "3", conf=conf(params))
    assert out["evicted"] == ["default/be-0", "default/low-b"]


def test_the_hottest_node_goes_first_and_uses_up_the_room(simulate):
    """``sortNodes``: high nodes by CPU + memory load, highest first; ``evict`` takes each victim's requests
    off the shared room.  cool has 30 % - 10 % of 4 CPU = 800m of room at target 30: the first victim on
    hotter (95 %+80 %) takes 1000m, the room is negative, not zero, so the walk goes on while hotter is
    still at or above its target; hot (90 %+60 %) comes next."""
    params = "thresholds: {cpu: 20, memory: 20}, targetThresholds: {cpu: 30, memory: 100}"
    manifests = (CLASSES + loaded("hot", 90, 60) + loaded("hotter", 95, 80) + loaded("cool", 10, 10)
                 + podgroup("pg", 0, extra="status: {phase: Running}")
                 + running("a-0", "hot") + running("b-0", "hotter") + running("b-1", "hotter", cls="high"))
    code, out = simulate(manifests, "--cycles", "3", conf=conf(params, usage=False))
    assert code == 0, out
    # hotter: b-0 (95 -> 70 % CPU), b-1 (-> 45 %); hot: a-0 (-> 65 %); all still above 30 % between
    assert out["evicted"] == ["default/b-0", "default/b-1", "default/a-0"]


def test_only_running_pods_are_victims(simulate):
    """shuffle's candidates are the Running tasks: a pod bound to hot but not running yet is passed over
    (and does not stop the walk)."""
    manifests = hot_cluster().replace(running("be-0", "hot", cpu=None), running("be-0", "hot", cpu=None, phase="Pending"))
    code, out = simulate(manifests, "--cycles", "3", conf=conf())
    assert code == 0, out
    assert out["evicted"] == ["default/low-b"]


@pytest.mark.parametrize("arguments, field", [
    ("interval: 5", "arguments.interval: expected a string"),
    ("interval: soon", "arguments.interval: expected a duration such as 5m"),
    ("strategies: [{name: highNodeUtilization}]", "arguments.strategies[0].name: unknown strategy"),
    ("strategies: [{name: lowNodeUtilization, params: {thresholds: {cpu: 20.5}}}]",
     "arguments.strategies[0].params.thresholds.cpu: expected an integer percent"),
    ("strategies: [{name: lowNodeUtilization, params: {targetThresholds: [80]}}]",
     "arguments.strategies[0].params.targetThresholds: expected a map"),
    ("strategies: lowNodeUtilization", "arguments.strategies: expected a list"),
    ("metricsPeriod: 10", "arguments.metricsPeriod: expected a string"),
])
def test_bad_arguments_are_bad_input(simulate, arguments, field):
    text = f"""
actions: "allocate, shuffle"
tiers:
- plugins:
  - name: rescheduling
    arguments: {{{arguments}}}
"""
    code, err = simulate(hot_cluster(), conf=text)
    assert code == 2
    assert f"tiers[0].plugins[0].{field}" in err and "Traceback" not in err


def test_the_load_aware_example_tells_the_truth(tmp_path, capsys):
    """conf/examples/load-aware.yaml, as its header tells it, cycle by cycle."""
    import json
    from pathlib import Path

    from vcsched.cli import main

    example = Path(__file__).resolve().parents[2] / "conf" / "examples" / "load-aware.yaml"
    seen = {}
    for cycles in (2, 3, 5, 8):
        assert main(["simulate", "-f", str(example), "--cycles", str(cycles), "--now", "2026-01-01T01:00:00Z",
                     "-o", "json"]) == 0
        out = json.loads(capsys.readouterr().out)
        seen[cycles] = (out["evicted"], out["pods"]["default/web-new"]["node"])
    assert seen[2] == ([], "node-cool")
    for cycles in (3, 5, 8):
        assert seen[cycles] == (["default/batch-scratch", "default/batch-1"], "node-cool")
