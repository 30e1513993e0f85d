"""cdp, cooldown protection (plugins/cdp.py, Volcano's plugins/cdp/cdp.go), end to end through
``vcsched simulate``: a Running pod with ``volcano.sh/cooldown-time`` (label, else annotation) is no
victim of preempt or reclaim until that long after its PodScheduled condition's lastTransitionTime."""

import pytest

from .conftest import SIM_NOW, node, pod, podgroup, queue
from .test_preempt_reclaim import CLASSES, CONF, pc, placed

# cdp in tier 1 beside priority and conformance, so that it votes where preempt's victims are chosen
PREEMPT_CONF = CONF.replace("  - name: conformance\n", "  - name: conformance\n  - name: cdp\n", 1)
# reclaim's victims come from tier 2 (gang refuses every job at its minAvailable): cdp goes beside proportion
RECLAIM_CONF = CONF.replace("  - name: proportion\n", "  - name: proportion\n  - name: cdp\n", 1)

KEY = "volcano.sh/cooldown-time"
NOW = "2026-01-01T01:00:00Z"  # SIM_NOW
assert NOW == SIM_NOW


def ago(seconds: int) -> str:
    """SIM_NOW minus ``seconds`` (under an hour), RFC 3339."""
    minutes, secs = divmod(3600 - seconds, 60)
    return f"2026-01-01T00:{minutes:02d}:{secs:02d}Z"


def running(name: str, cpu: str, group: str, node_name: str, *, cooldown: str | None = None,
            label: str | None = None, scheduled: str | None = None, phase: str = "Running",
            condition: str | None = None, queue_name: str | None = None, priority: str | None = "low") -> str:
    """A pod on ``node_name`` in ``phase``; ``cooldown`` as annotation and/or ``label`` as label; a true
    PodScheduled condition at ``scheduled`` (or the raw ``condition`` list)."""
    text = pod(name, cpu=cpu, group=group, queue=queue_name, node_name=node_name,
               spec_extra=pc(priority) if priority else "",
               meta_extra=f"  labels: {{{KEY}: \"{label}\"}}" if label is not None else "")
    if cooldown is not None:
        text = text.replace("annotations: {", f"annotations: {{{KEY}: \"{cooldown}\", ", 1)
    if condition is None:
        condition = (f"[{{type: PodScheduled, status: \"True\", lastTransitionTime: \"{scheduled}\"}}]"
                     if scheduled else "[]")
    return text + f"status:\n  phase: {phase}\n  conditions: {condition}\n"


def two_low_and_a_preemptor(low0: dict, low1: dict) -> str:
    """n1 (4 CPU) full with low-0 and low-1 (2 CPU each, job ``low``); high-0 (2 CPU) waits.  Without cdp
    preempt evicts low-1 (the task that orders last goes first)."""
    return (CLASSES + node("n1") + podgroup("low", 1, extra=pc("low"))
            + running("low-0", "2", "low", "n1", **low0)
            + running("low-1", "2", "low", "n1", **low1)
            + podgroup("high", 1, extra=pc("high"))
            + pod("high-0", cpu="2", group="high", spec_extra=pc("high")))


def test_victims_inside_their_cooldown_are_kept(simulate):
    manifests = two_low_and_a_preemptor({"cooldown": "600s", "scheduled": ago(100)},
                                        {"cooldown": "600s", "scheduled": ago(100)})
    # the premise: without cdp, preempt evicts low-1 in its cooldown
    code, out = simulate(manifests, "--cycles", "1", conf=CONF)
    assert code == 0
    assert out["evicted"] == ["default/low-1"]
    code, out = simulate(manifests, "--cycles", "1", conf=PREEMPT_CONF)
    assert code == 0
    assert out["evicted"] == []
    assert out["pods"]["default/high-0"]["node"] is None
    assert placed(out, "low") == ["default/low-0", "default/low-1"]


def test_the_victim_past_its_cooldown_is_evicted_and_the_one_inside_kept(simulate):
    # low-1 would go first; it is in its cooldown, so low-0, whose cooldown is over, goes instead
    code, out = simulate(two_low_and_a_preemptor({"cooldown": "600s", "scheduled": ago(800)},
                                                 {"cooldown": "600s", "scheduled": ago(100)}), conf=PREEMPT_CONF)
    assert code == 0
    assert out["evicted"] == ["default/low-0"]
    assert out["pods"]["default/high-0"]["node"] == "n1"
    assert placed(out, "low") == ["default/low-1"]


def test_a_pod_without_a_cooldown_is_not_protected(simulate):
    code, out = simulate(two_low_and_a_preemptor({"scheduled": ago(800)}, {"scheduled": ago(1)}),
                         "--cycles", "1", conf=PREEMPT_CONF)
    assert code == 0
    assert out["evicted"] == ["default/low-1"]


@pytest.mark.parametrize("now, evicted", [
    ("2026-01-01T00:59:59Z", []),                   # 599 s after PodScheduled: one second left
    ("2026-01-01T01:00:00Z", ["default/low-1"]),    # exactly 600 s: Volcano's After is strict
    ("2026-01-01T01:00:01Z", ["default/low-1"]),
])
def test_the_cooldown_ends_to_the_second(simulate, now, evicted):
    manifests = two_low_and_a_preemptor({"cooldown": "1h", "scheduled": ago(100)},
                                        {"cooldown": "600s", "scheduled": "2026-01-01T00:50:00Z"})
    code, out = simulate(manifests, "--cycles", "1", "--now", now, conf=PREEMPT_CONF)
    assert code == 0
    assert out["evicted"] == evicted


@pytest.mark.parametrize("cooldown, evicted", [
    ("600001ms", []),               # a millisecond longer: still protected at 600 s
    ("9m59s", ["default/low-1"]),
    ("10m", ["default/low-1"]),
    ("0.1666666666h", ["default/low-1"]),   # a hair under 10m
])
def test_go_durations_count_to_the_nanosecond(simulate, cooldown, evicted):
    manifests = two_low_and_a_preemptor({"cooldown": "1h", "scheduled": ago(100)},
                                        {"cooldown": cooldown, "scheduled": ago(600)})
    code, out = simulate(manifests, "--cycles", "1", conf=PREEMPT_CONF)
    assert code == 0
    assert out["evicted"] == evicted


@pytest.mark.parametrize("low1", [
    {"cooldown": "600abcde"},   # Go's "not-enabled" case: a warning, no protection
    {"cooldown": "600"},        # no unit
    {"cooldown": ""},
    {"cooldown": "10 m"},
    {"cooldown": "0"},          # valid, protects nothing
    {"cooldown": "-10m"},       # valid, negative: the cooldown ended before it began
    {"label": "600abcde", "cooldown": "600s"},  # the label is read first; the annotation is not looked at
], ids=["letters", "no-unit", "empty", "space", "zero", "negative", "bad-label-over-good-annotation"])
def test_bad_or_empty_cooldowns_protect_nothing(simulate, low1):
    code, out = simulate(two_low_and_a_preemptor({"cooldown": "1h", "scheduled": ago(100)},
                                                 {"scheduled": ago(100), **low1}),
                         "--cycles", "1", conf=PREEMPT_CONF)
    assert code == 0, out
    assert out["evicted"] == ["default/low-1"]


def test_the_label_protects_too_and_wins_over_the_annotation(simulate):
    code, out = simulate(two_low_and_a_preemptor({"scheduled": ago(800)},
                                                 {"label": "10m", "scheduled": ago(100)}),
                         "--cycles", "1", conf=PREEMPT_CONF)
    assert code == 0
    assert out["evicted"] == ["default/low-0"]
    code, out = simulate(two_low_and_a_preemptor({"scheduled": ago(800)},
                                                 {"label": "10m", "cooldown": "1s", "scheduled": ago(100)}),
                         "--cycles", "1", conf=PREEMPT_CONF)
    assert code == 0
    assert out["evicted"] == ["default/low-0"]


@pytest.mark.parametrize("condition", [
    "[]",                                                                        # no PodScheduled condition
    "[{type: PodScheduled, status: \"False\", lastTransitionTime: \"2026-01-01T00:59:00Z\"}]",
    "[{type: PodScheduled, status: \"True\"}]",                                  # no time: Go's zero time
    "[{type: Ready, status: \"True\", lastTransitionTime: \"2026-01-01T00:59:00Z\"}]",
], ids=["none", "false", "no-time", "other-type"])
def test_the_start_is_the_true_pod_scheduled_condition(simulate, condition):
    code, out = simulate(two_low_and_a_preemptor({"cooldown": "1h", "scheduled": ago(100)},
                                                 {"cooldown": "1h", "condition": condition}),
                         "--cycles", "1", conf=PREEMPT_CONF)
    assert code == 0, out
    assert out["evicted"] == ["default/low-1"]


@pytest.mark.parametrize("condition", ["[{type: PodScheduled, status: \"True\"}]", "[]"], ids=["no-time", "none"])
def test_a_missing_start_is_go_zero_time_not_the_unix_epoch(simulate, condition):
    # 500000h is 57 years: past 1970 + 57, but nowhere near year 1 + 57
    code, out = simulate(two_low_and_a_preemptor({"cooldown": "1h", "scheduled": ago(100)},
                                                 {"cooldown": "500000h", "condition": condition}),
                         "--cycles", "1", conf=PREEMPT_CONF)
    assert code == 0, out
    assert out["evicted"] == ["default/low-1"]


def test_the_first_true_pod_scheduled_condition_counts(simulate):
    condition = ("[{type: PodScheduled, status: \"False\", lastTransitionTime: \"2026-01-01T00:00:00Z\"}, "
                 "{type: PodScheduled, status: \"True\", lastTransitionTime: \"2026-01-01T00:59:00Z\"}]")
    code, out = simulate(two_low_and_a_preemptor({"scheduled": ago(800)},
                                                 {"cooldown": "1h", "condition": condition}),
                         "--cycles", "1", conf=PREEMPT_CONF)
    assert code == 0, out
    assert out["evicted"] == ["default/low-0"]


def test_status_start_time_is_not_the_start(simulate):
    # startTime says "just started"; the PodScheduled condition says an hour ago: Volcano reads the latter
    low1 = {"cooldown": "10m", "scheduled": "2026-01-01T00:00:00Z"}
    manifests = two_low_and_a_preemptor({"cooldown": "1h", "scheduled": ago(100)}, low1)
    manifests = manifests.replace("status:\n  phase: Running\n  conditions: [{type: PodScheduled, status: \"True\", "
                                  "lastTransitionTime: \"2026-01-01T00:00:00Z\"}]",
                                  "status:\n  phase: Running\n  startTime: \"2026-01-01T00:59:59Z\"\n"
                                  "  conditions: [{type: PodScheduled, status: \"True\", "
                                  "lastTransitionTime: \"2026-01-01T00:00:00Z\"}]")
    assert "startTime" in manifests
    code, out = simulate(manifests, "--cycles", "1", conf=PREEMPT_CONF)
    assert code == 0, out
    assert out["evicted"] == ["default/low-1"]


def test_only_running_pods_are_protected(simulate):
    # low-1 is Bound (on its node, phase Pending): a preempt victim, and cdp checks only Running pods
    code, out = simulate(two_low_and_a_preemptor({"cooldown": "1h", "scheduled": ago(100)},
                                                 {"cooldown": "1h", "scheduled": ago(100), "phase": "Pending"}),
                         "--cycles", "1", conf=PREEMPT_CONF)
    assert code == 0, out
    assert out["evicted"] == ["default/low-1"]


def test_switched_off_for_preempt_it_protects_nothing(simulate):
    conf = PREEMPT_CONF.replace("  - name: cdp\n", "  - name: cdp\n    enablePreemptable: false\n")
    code, out = simulate(two_low_and_a_preemptor({"cooldown": "600s", "scheduled": ago(100)},
                                                 {"cooldown": "600s", "scheduled": ago(100)}),
                         "--cycles", "1", conf=conf)
    assert code == 0
    assert out["evicted"] == ["default/low-1"]


def go_cluster(preemptor_cpu: str) -> str:
    """TestPreemptableFn (cdp_test.go): task1 600s scheduled 100 s ago, task2 ``600abcde`` 100 s ago, task3
    600s 800 s ago, all ``volcano.sh/preemptable: "true"``.  Named so that task1 orders last (the victim
    preempt would take first without cdp): go-2 = task1, go-0 = task2, go-1 = task3; n1 (3 CPU) is full."""
    tasks = [("go-2", "600s", 100), ("go-0", "600abcde", 100), ("go-1", "600s", 800)]
    docs = CLASSES + node("n1", cpu="3") + podgroup("go", 1, extra=pc("low"))
    for name, cooldown, age in tasks:
        docs += running(name, "1", "go", "n1", cooldown=cooldown, scheduled=ago(age)).replace(
            "annotations: {", "annotations: {volcano.sh/preemptable: \"true\", ", 1)
    return docs + podgroup("high", 1, extra=pc("high")) + pod("high-0", cpu=preemptor_cpu, group="high",
                                                                  spec_extra=pc("high"))


def test_go_TestPreemptableFn_victims_are_task2_and_task3(simulate):
    code, out = simulate(go_cluster("2"), "--cycles", "1", conf=PREEMPT_CONF)
    assert code == 0, out
    assert sorted(out["evicted"]) == ["default/go-0", "default/go-1"]
    assert placed(out, "go") == ["default/go-2"]


def test_go_TestPreemptableFn_task1_alone_is_not_enough(simulate):
    # the preemptor needs all three CPUs; task1 is no victim, so nothing is evicted
    code, out = simulate(go_cluster("3"), "--cycles", "1", conf=PREEMPT_CONF)
    assert code == 0, out
    assert out["evicted"] == []


@pytest.mark.parametrize("cooldown, evicted", [
    ("600s", []),                   # "normal": enabled, 600 s; scheduled 100 s ago
    ("600abcde", ["default/low-1"]),  # "not-enabled"
])
def test_go_Test_CooldownTimePlugin_podPreemptStableTime(simulate, cooldown, evicted):
    manifests = two_low_and_a_preemptor({"cooldown": "1h", "scheduled": ago(100)},
                                        {"cooldown": cooldown, "scheduled": ago(100)})
    code, out = simulate(manifests, "--cycles", "1", conf=PREEMPT_CONF)
    assert code == 0
    assert out["evicted"] == evicted
    # and the value is 600 s to the second: at 600 s past PodScheduled the "normal" pod is a victim
    code, out = simulate(manifests, "--cycles", "1", "--now", "2026-01-01T01:08:20Z", conf=PREEMPT_CONF)
    assert code == 0
    assert out["evicted"] == ["default/low-1"]


def reclaim_cluster(protected: set[int]) -> str:
    """Queues qa and qb (weight 1 each), n1 and n2 (4 CPU each) full with qa's eight 1-CPU jobs; qb's six
    wait.  Without cdp, reclaim takes four of qa's pods.  ``protected``: the qa pods in a 10 min cooldown
    (scheduled 100 s ago); the others were scheduled 800 s ago with the same cooldown."""
    docs = queue("qa") + queue("qb") + node("n1") + node("n2")
    for i in range(8):
        docs += podgroup(f"a{i}", 1, queue="qa")
        docs += running(f"a{i}-0", "1", f"a{i}", f"n{1 + i % 2}", cooldown="10m", priority=None,
                        scheduled=ago(100 if i in protected else 800))
    for i in range(6):
        docs += podgroup(f"b{i}", 1, queue="qb") + pod(f"b{i}-0", cpu="1", group=f"b{i}")
    return docs


def test_reclaim_keeps_pods_in_their_cooldown(simulate):
    # the premise: without cdp, reclaim takes four of qa's pods in their cooldown
    code, out = simulate(reclaim_cluster(set(range(8))), "--cycles", "1", conf=CONF)
    assert code == 0
    assert len(out["evicted"]) == 4
    code, out = simulate(reclaim_cluster(set(range(8))), "--cycles", "1", conf=RECLAIM_CONF)
    assert code == 0
    assert out["evicted"] == []
    assert len(placed(out, "a")) == 8 and placed(out, "b") == []


def test_reclaim_takes_only_pods_past_their_cooldown(simulate):
    # n1's pods are in their cooldown: cdp leaves none of them, its tier is undecided there and n1 gives
    # no victims; n2's pods are past it, and reclaim takes qa down to its share from n2 alone
    code, out = simulate(reclaim_cluster({0, 2, 4, 6}), "--cycles", "1", conf=RECLAIM_CONF)
    assert code == 0
    assert sorted(out["evicted"]) == ["default/a1-0", "default/a3-0", "default/a5-0", "default/a7-0"]
    assert placed(out, "a") == ["default/a0-0", "default/a2-0", "default/a4-0", "default/a6-0"]


def test_reclaim_cdp_and_proportion_intersect(simulate):
    # on n2, proportion offers a1, a3 and a5 (taking a7 as well would leave qa below its share of 4 CPU
    # after a6 is gone) and cdp only a7: the intersection is empty, so n2 gives no victim either (§6.2)
    code, out = simulate(reclaim_cluster({0, 1, 2, 3, 4, 5}), "--cycles", "1", conf=RECLAIM_CONF)
    assert code == 0
    assert out["evicted"] == ["default/a6-0"]


def test_reclaim_switched_off_it_protects_nothing(simulate):
    conf = RECLAIM_CONF.replace("  - name: cdp\n", "  - name: cdp\n    enableReclaimable: false\n")
    code, out = simulate(reclaim_cluster(set(range(8))), "--cycles", "1", conf=conf)
    assert code == 0
    assert len(out["evicted"]) == 4


def test_in_a_lower_tier_its_permit_passes_what_the_upper_tier_refused(simulate):
    # priority refuses a victim of the preemptor's own priority, so tier 1 is undecided (§6.2); cdp,
    # alone in tier 2, offers low-1 (no cooldown) with Permit, and Volcano evicts it
    manifests = (CLASSES + node("n1") + podgroup("low", 1, extra=pc("high"))
                 + running("low-0", "2", "low", "n1", cooldown="1h", scheduled=ago(100), priority="high")
                 + running("low-1", "2", "low", "n1", scheduled=ago(100), priority="high")
                 + podgroup("high", 1, extra=pc("high"))
                 + pod("high-0", cpu="2", group="high", spec_extra=pc("high")))
    code, out = simulate(manifests, "--cycles", "1", conf=CONF)
    assert code == 0
    assert out["evicted"] == []
    code, out = simulate(manifests, "--cycles", "1", conf=RECLAIM_CONF)
    assert code == 0
    assert out["evicted"] == ["default/low-1"]


def test_a_pod_simulate_binds_carries_the_time_it_was_scheduled(tmp_path):
    """The simulated API server stamps the bind's PodScheduled condition with the cycle's clock, as a real
    one does, so cdp's cooldown runs from it for pods bound during a run."""
    from vcsched.cache import Cache
    from vcsched.conf import DEFAULT_SCHEDULER_CONF, parse_conf
    from vcsched.scheduler import Scheduler
    from vcsched.sim.cluster import SimCluster
    from vcsched.sim.manifests import load_manifests

    from .conftest import node, pod

    path = tmp_path / "in.yaml"
    path.write_text(node("n1") + pod("p"))
    cluster = SimCluster.from_manifests(load_manifests([str(path)]))
    cache = Cache()
    cluster.feed(cache)
    scheduler = Scheduler(cache, parse_conf(DEFAULT_SCHEDULER_CONF))
    now = 1767229200.0  # 2026-01-01T01:00:00Z
    for cycle in range(2):
        cluster.apply(scheduler.run_once(now=now + cycle, uid=f"s{cycle}"), cache, now=now + cycle)
    (scheduled,) = [c for c in cluster.pods["default/p"]["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert scheduled == {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T01:00:00Z"}
