"""usage (plugins/usage.py, Volcano's plugins/usage/usage.go) end to end through ``vcsched simulate``:
node load from the nodes' ``vcsched.io/sim-*-usage`` annotations (scheduler/sim/node_usage.py).
The score, estimator and argument cases are unit tests (tests/unit/test_usage.py)."""

import pytest

from .conftest import SIM_NOW, node, pod, podgroup, queue

CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: proportion
  - name: usage
    arguments:
      usage.weight: 5
      cpu.weight: 1
      memory.weight: 1
      thresholds:
        cpu: 80
        mem: 80
"""

SIX_MINUTES_AGO = "2026-01-01T00:54:00Z"
assert SIM_NOW == "2026-01-01T01:00:00Z"


def loaded(name: str, cpu: float | None, mem: float | None, at: str | None = None) -> str:
    ann = {}
    if cpu is not None:
        ann["vcsched.io/sim-cpu-usage"] = f'"{cpu}"'
    if mem is not None:
        ann["vcsched.io/sim-memory-usage"] = f'"{mem}"'
    if at is not None:
        ann["vcsched.io/sim-usage-time"] = f'"{at}"'
    text = ", ".join(f"{k}: {v}" for k, v in ann.items())
    return node(name, cpu="4", memory="8Gi", pods=10, extra=f"  annotations: {{{text}}}")


def two_pods() -> str:
    """usage_test.go's p1 and p2 (1 CPU, 1Gi) of pg1 (minMember 0) in queue q1."""
    return (queue("q1") + podgroup("pg1", 0, queue="q1", ns="c1")
            + pod("p1", cpu="1", memory="1Gi", group="pg1", ns="c1")
            + pod("p2", cpu="1", memory="1Gi", group="pg1", ns="c1"))


@pytest.mark.parametrize("node_text, reason", [
    # "The node cannot be scheduled, because of the CPU load of the node exceeds the upper limit."
    (loaded("n1", 81, 60), "the CPU load of the node exceeds the upper limit."),
    # "The node cannot be scheduled, because of the memory load of the node exceeds the upper limit."
    (loaded("n2", 60, 81), "the memory load of the node exceeds the upper limit."),
])
def test_a_node_over_a_threshold_is_refused(simulate, node_text, reason):
    """usage_test.go · TestUsage_predicateFn, the two refusing cases: both pods wait, the node's reason
    is the plugin's, UnschedulableAndUnresolvable (so preempt would not try the node either)."""
    code, out = simulate(node_text + two_pods(), "--cycles", "1", conf=CONF)
    assert code == 0, out
    for p in ("c1/p1", "c1/p2"):
        assert out["pods"][p]["node"] is None
        assert out["pods"][p]["reason"] == f"0/1 nodes are unavailable: 1 {reason}."


@pytest.mark.parametrize("node_text", [
    # "The node can be scheduled, because of the CPU usage and memory usage do not exceed the upper limit."
    loaded("n3", 80, 79),
    # "... because of the metrics are not updated in the latest 5 minutes, and the usage function is invalid."
    loaded("n4", 90, 81, at=SIX_MINUTES_AGO),
    # "... because of the metric time is in the initial state, and the usage function is invalid."
    # (a node the source never reported: no annotations)
    node("n5", cpu="4", memory="8Gi", pods=10),
])
def test_a_node_within_its_thresholds_or_with_stale_figures_takes_pods(simulate, node_text):
    """usage_test.go · TestUsage_predicateFn, the three passing cases."""
    code, out = simulate(node_text + two_pods(), "--cycles", "1", conf=CONF)
    assert code == 0, out
    assert out["pods"]["c1/p1"]["node"] is not None
    assert out["pods"]["c1/p2"]["node"] is not None


def test_figures_go_stale_five_minutes_after_they_were_measured(simulate):
    """MetricsActiveTime: measured 4 min 59 s before the clock, the figures still refuse the node;
    the same node with figures measured 5 min 01 s before takes the pods."""
    code, out = simulate(loaded("n1", 90, 10, at="2026-01-01T00:55:01Z") + two_pods(), "--cycles", "1", conf=CONF)
    assert out["pods"]["c1/p1"]["node"] is None
    code, out = simulate(loaded("n1", 90, 10, at="2026-01-01T00:54:59Z") + two_pods(), "--cycles", "1", conf=CONF)
    assert out["pods"]["c1/p1"]["node"] == "n1"


def test_enable_predicate_false_lets_a_loaded_node_take_pods(simulate):
    """The conf's documented switch: ``enablePredicate: false`` keeps only the score."""
    conf = CONF.replace("  - name: usage\n", "  - name: usage\n    enablePredicate: false\n")
    code, out = simulate(loaded("n1", 95, 95) + two_pods(), "--cycles", "1", conf=conf)
    assert code == 0, out
    assert out["pods"]["c1/p1"]["node"] == "n1"


def test_pods_go_to_the_least_loaded_node(simulate):
    """The node order end to end: of three nodes with room, the one with the lowest composite load wins
    (n1 30 %/50 % scores 300, n2 225, n3 150, as in TestUsage_nodeOrderFn)."""
    manifests = (loaded("n2", 60, 50) + loaded("n3", 60, 80) + loaded("n1", 30, 50)
                 + queue("q1") + podgroup("pg1", 0, queue="q1", ns="c1")
                 + pod("p1", cpu="1", memory="1Gi", group="pg1", ns="c1"))
    code, out = simulate(manifests, "--cycles", "1", conf=CONF)
    assert code == 0, out
    assert out["pods"]["c1/p1"]["node"] == "n1"


def test_shadow_estimates_spread_a_burst_of_pods(simulate):
    """n1 at 10 % (score 450) and n2 at 20 % (400), three 1-CPU pods in one session.  The first goes to
    n1; its estimate (0.7 CPU of 4, 0.7Gi of 8Gi) puts n1 at 384 and the second goes to n2 (334 after
    it), the third to n1 again.  Without the shadow estimates n1 would take all three."""
    manifests = (loaded("n1", 10, 10) + loaded("n2", 20, 20) + queue("q1") + podgroup("pg1", 0, queue="q1", ns="c1")
                 + "".join(pod(f"p{i}", cpu="1", memory="1Gi", group="pg1", ns="c1") for i in range(3)))
    code, out = simulate(manifests, "--cycles", "1", conf=CONF)
    assert code == 0, out
    assert [out["pods"][f"c1/p{i}"]["node"] for i in range(3)] == ["n1", "n2", "n1"]


@pytest.mark.parametrize("annotation, value, problem", [
    ("vcsched.io/sim-cpu-usage", "high", "must be a percentage from 0 to 100"),
    ("vcsched.io/sim-cpu-usage", "101", "must be a percentage from 0 to 100"),
    ("vcsched.io/sim-memory-usage", "-1", "must be a percentage from 0 to 100"),
    ("vcsched.io/sim-memory-usage", "nan", "must be a percentage from 0 to 100"),
    ("vcsched.io/sim-usage-time", "yesterday", ""),
])
def test_bad_load_annotations_are_bad_input(simulate, annotation, value, problem):
    text = node("n1", extra=f'  annotations: {{{annotation}: "{value}"}}')
    code, err = simulate(text + two_pods(), "--cycles", "1", conf=CONF)
    assert code == 2
    assert "Node n1" in err and f"metadata.annotations[{annotation}]" in err and problem in err
    assert "cluster.yaml" in err and "Traceback" not in err


def test_bad_usage_arguments_are_bad_input(simulate):
    code, err = simulate(loaded("n1", 1, 1) + two_pods(), conf=CONF.replace("cpu: 80", "cpu: eighty"))
    assert code == 2
    assert "tiers[1].plugins[2].arguments.thresholds.cpu: expected an integer" in err
