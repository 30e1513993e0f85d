"""tdm end to end: every case of Volcano's plugins/tdm/tdm_test.go through ``vcsched simulate``, and what
those Go tests leave out: a window that closes during a run, the evict period across sessions, the
preempt side (PreemptableFn, JobStarvingFn, JobPipelinedFn), the job order, and bad arguments.

Each test names the Go test and case it reproduces.  As in test_capacity.py, ``option()`` writes the
Go test's tiers flag for flag: the flags the Go case sets are on, every other one off (Go's nil flags).

Re-expressed, because a manifest cannot hold what the Go test does:

- Time.  The Go tests run at the real time of day and pick windows that work at almost any time:
  ``0:00-0:00`` (open all day) and ``0:00-0:01`` (open in the first minute after midnight only).  Here
  ``--now`` fixes the clock at noon (``NOON``), when the first is open and the second closed.
- Test_parseRevocableZone measures ``end - start`` of a parsed window.  A cluster can only see
  whether a window is open at a time, so each window gets its zone, one revocable node and a pod
  pinned to it; the pods placed at a time are the windows open then, and probing each window at its
  start, at its end and a second either side gives the same spans.  The windows Go refuses to parse
  refuse the configuration (vcsched is stricter than Volcano, which fails those zones' nodes at every
  predicate): exit 2 naming the argument.
- Test_TDM calls PredicateFn and NodeOrderFn on each node for one pod.  Here the pod alone is placed
  on the best-scored node (the nodes are listed non-revocable first, so without tdm's score it would
  land on n3); and five copies that each fill a node show which nodes pass the predicate: one lands on
  each, the fifth is refused by each with the predicate's reason in its pending reason.
- Test_TDM_victimsFn sleeps one evict period and calls VictimTasks.  Here the shuffle action calls it
  in a single cycle (``--cycles 1``; a run starts with no earlier look, as the Go package variable does)
  and evicts what it returns: the evicted pods are the victims.
"""

from __future__ import annotations

import pytest

from vcsched.conf import ENABLE_FLAGS

NOON = "2026-03-10T12:00:00Z"
ZONE = "volcano.sh/revocable-zone"
PREEMPTABLE = "volcano.sh/preemptable"


def option(name: str, *enabled: str, arguments: dict[str, str] | None = None) -> str:
    """One plugin option with every enable flag off except ``enabled`` (Go's nil flags are off)."""
    lines = [f"  - name: {name}"]
    lines += [f"    {flag}: {'true' if flag in enabled else 'false'}"
              for flag in ENABLE_FLAGS if flag != "enableHierarchy"]
    if arguments:
        lines.append("    arguments:")
        lines += [f"      {k}: {v!r}" if isinstance(v, str) else f"      {k}: {v}" for k, v in arguments.items()]
    return "\n".join(lines) + "\n"


def conf(actions: str, *tiers: str) -> str:
    """``tiers``: one string of options per tier."""
    return f'actions: "{actions}"\ntiers:\n' + "".join(f"- plugins:\n{t}" for t in tiers)


def node(name: str, zone: str | None = None, cpu: str = "16", memory: str = "64Gi", pods: int = 10) -> str:
    labels = f'{{kubernetes.io/hostname: {name}{f", {ZONE}: {zone}" if zone else ""}}}'
    return f"""
---
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {labels}}}
status: {{allocatable: {{cpu: "{cpu}", memory: {memory}, pods: "{pods}"}}}}
"""


def pod(name: str, ns: str, group: str, cpu: str = "1", memory: str = "1Gi", annotations: dict[str, str] | None = None,
        node_name: str | None = None, selector: str | None = None) -> str:
    ann = {"scheduling.k8s.io/group-name": group, **(annotations or {})}
    ann_text = ", ".join(f'{k}: "{v}"' for k, v in ann.items())
    placed = f"nodeName: {node_name}, " if node_name else ""
    pinned = f"nodeSelector: {{kubernetes.io/hostname: {selector}}}, " if selector else ""
    return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {ns}, annotations: {{{ann_text}}}}}
spec:
  {{schedulerName: volcano, {placed}{pinned}containers: [{{name: c, image: x, resources: {{requests: {{cpu: "{cpu}", memory: {memory}}}}}}}]}}
{'status: {phase: Running}' if node_name else ''}
"""


def podgroup(name: str, ns: str, queue: str, min_member: int = 0, annotations: dict[str, str] | None = None,
             extra: str = "") -> str:
    ann_text = ", ".join(f'{k}: "{v}"' for k, v in (annotations or {}).items())
    return f"""
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {{name: {name}, namespace: {ns}, annotations: {{{ann_text}}}}}
spec: {{minMember: {min_member}, queue: {queue}{extra}}}
"""


def queue(name: str) -> str:
    return f"""
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {{name: {name}}}
spec: {{weight: 1}}
"""


def placed(out: dict) -> dict[str, str | None]:
    return {k: p["node"] for k, p in out["pods"].items()}


# -- Test_parseRevocableZone ---------------------------------------------------------------------

# the Go cases that parse, each a zone: (window, what Go measures as end - start)
WINDOWS = {
    "a": ("00:00-01:00", 3600),
    "b": ("0:00-23:59", 23 * 3600 + 59 * 60),
    "c": ("1:00-0:00", 23 * 3600),
    "d": ("   1:00-0:00    ", 23 * 3600),
    "e": ("23:59-23:59", 24 * 3600),
}


@pytest.mark.parametrize(("now", "open_zones"), [
    ("2026-03-09T23:59:59Z", "cde"),  # a second before a and b start
    ("2026-03-10T00:00:00Z", "ab"),  # a and b start; c, d and e start later today
    ("2026-03-10T01:00:00Z", "abcd"),  # a's end (inclusive); c and d start
    ("2026-03-10T01:00:01Z", "bcd"),  # a is over: its span is 1h
    ("2026-03-10T23:59:00Z", "bcde"),  # b's end (23h59m after its start); e starts
    ("2026-03-10T23:59:01Z", "cde"),  # b is over; c and d run to midnight, e on
])
def test_parse_revocable_zone_windows_open_from_start_to_end(simulate, now, open_zones):
    """Test_parseRevocableZone, the five cases that parse: ``00:00-01:00`` (1h), ``0:00-23:59``
    (23h59m), ``1:00-0:00`` and the same with spaces around it (23h: to midnight), ``23:59-23:59``
    (24h).  A window reaching past midnight ends tomorrow, but on the next day Volcano computes the
    window from that day's start, so what a cluster sees of ``c``, ``d`` and ``e`` is: open from their
    start to midnight (the first and last probes)."""
    cluster = queue("c1") + podgroup("pg", "c1", "c1")
    for zone in WINDOWS:
        cluster += node(f"n-{zone}", zone) + pod(f"p-{zone}", "c1", "pg", annotations={ZONE: "*"}, selector=f"n-{zone}")
    tdm = option("tdm", "enablePredicate", arguments={f"tdm.revocable-zone.{z}": w for z, (w, _) in WINDOWS.items()})
    code, out = simulate(cluster, "--cycles", "1", "--now", now,
                         conf=conf("enqueue, allocate", tdm + option("predicates", "enablePredicate")))
    assert code == 0
    assert {k for k, n in placed(out).items() if n} == {f"c1/p-{z}" for z in open_zones}
    for z in set(WINDOWS) - set(open_zones):
        assert f"current time beyond revocable zone {z}:{WINDOWS[z][0]}" in out["pods"][f"c1/p-{z}"]["reason"]


@pytest.mark.parametrize(("window", "problem"), [
    ("00:00_01:00", "revocable zone 00:00_01:00 format error"),
    ("0:00", "revocable zone 0:00 format error"),
    ("1:0-0:0", 'parsing time "1:0" as "15:04": cannot parse "0" as "04"'),
    ("63:59-23:59", 'parsing time "63:59": hour out of range'),
])
def test_parse_revocable_zone_malformed_windows_refuse_the_conf(simulate, window, problem):
    """Test_parseRevocableZone, the four cases Go refuses: a conf error naming the argument, exit 2."""
    tdm = option("tdm", "enablePredicate", arguments={"tdm.revocable-zone.rz1": window})
    code, err = simulate(node("n1", "rz1"), conf=conf("enqueue, allocate", tdm))
    assert code == 2
    assert "tiers[0].plugins[0].arguments.tdm.revocable-zone.rz1" in err and problem in err


@pytest.mark.parametrize(("arguments", "field", "problem"), [
    ({"tdm.revocable-zone.rz1": 5}, "tdm.revocable-zone.rz1", "got int 5"),
    ({"tdm.revocable-zone.rz1": "10:00-21:00", "tdm.evict.period": "soon"}, "tdm.evict.period",
     'time: invalid duration "soon"'),
    ({"tdm.revocable-zone.rz1": "10:00-21:00", "tdm.evict.period": 60}, "tdm.evict.period", "expected a string"),
    ({"tdm.revocable-zone.rz1": "10:00 - 21:00"}, "tdm.revocable-zone.rz1", 'extra text: " "'),
    ({"tdm.revocable-zone.rz1": "24:00-21:00"}, "tdm.revocable-zone.rz1", "hour out of range"),
])
def test_bad_arguments_refuse_the_conf(simulate, arguments, field, problem):
    """Not in tdm_test.go: a zone or period that is not a string (Volcano's type assertion panics), a period
    that does not parse (Volcano keeps 1m), spaces inside a window, an hour past 23."""
    code, err = simulate(node("n1", "rz1"), conf=conf("enqueue, allocate", option("tdm", arguments=arguments)))
    assert code == 2
    assert f"tiers[0].plugins[0].arguments.{field}" in err and problem in err


# -- Test_TDM: PredicateFn and NodeOrderFn ----------------------------------------------------------

TDM_ARGS = {"tdm.revocable-zone.rz1": "0:00-0:00", "tdm.revocable-zone.rz2": "0:00-0:01"}
TDM_TIER = option("tdm", "enableNodeOrder", "enablePredicate", arguments=TDM_ARGS)
# non-revocable first: without tdm's score, the first node searched (n3) would take a lone pod
NODES = node("n3") + node("n4") + node("n5", "rz2") + node("n1", "rz1") + node("n2", "rz1")
REVOCABLE_POD = {ZONE: "*"}
ZONE_CLOSED = "current time beyond revocable zone rz2:0:00-0:01"


def tdm_cluster(pods: str) -> str:
    return NODES + queue("c1") + podgroup("pg1", "c1", "c1") + pods


@pytest.mark.parametrize("case", ["preemptable task rz available", "preemptable task and multiple rz"])
def test_tdm_revocable_pod_prefers_open_revocable_nodes(simulate, case):
    """Test_TDM cases 0 and 2 (p1 and p3, both ``volcano.sh/revocable-zone: "*"``): scores n1 and n2
    100, n3 and n4 0; the pod takes a revocable node."""
    code, out = simulate(tdm_cluster(pod("p1", "c1", "pg1", annotations=REVOCABLE_POD)), "--now", NOON,
                         conf=conf("enqueue, allocate", TDM_TIER))
    assert code == 0 and out["pods"]["c1/p1"]["node"] in ("n1", "n2")


@pytest.mark.parametrize("case", ["preemptable task rz available", "preemptable task and multiple rz"])
def test_tdm_revocable_pod_passes_every_node_but_the_closed_zone(simulate, case):
    """Test_TDM cases 0 and 2: the predicate passes n1, n2 (rz1 open), n3 and n4; it refuses n5 (rz2
    closed).  Five pods that each fill a node: one on each passing node, the fifth refused by n5."""
    pods = "".join(pod(f"p1-{i}", "c1", "pg1", cpu="10", annotations=REVOCABLE_POD) for i in range(5))
    code, out = simulate(tdm_cluster(pods), "--now", NOON, conf=conf("enqueue, allocate", TDM_TIER))
    assert code == 0
    assert sorted(n for n in placed(out).values() if n) == ["n1", "n2", "n3", "n4"]
    assert out["pods"]["c1/p1-4"]["reason"] == f"0/5 nodes are unavailable: 1 {ZONE_CLOSED}, 4 Insufficient cpu."


def test_tdm_not_preemptable_task_keeps_off_revocable_nodes(simulate):
    """Test_TDM case 1 (p2, no annotation): only n3 and n4 pass, both score 0."""
    code, out = simulate(tdm_cluster(pod("p2", "c1", "pg1")), "--now", NOON, conf=conf("enqueue, allocate", TDM_TIER))
    assert code == 0 and out["pods"]["c1/p2"]["node"] in ("n3", "n4")
    pods = "".join(pod(f"p2-{i}", "c1", "pg1", cpu="10") for i in range(5))
    code, out = simulate(tdm_cluster(pods), "--now", NOON, conf=conf("enqueue, allocate", TDM_TIER))
    assert sorted(n for n in placed(out).values() if n) == ["n3", "n4"]
    assert out["pods"]["c1/p2-4"]["reason"] == (
        f"0/5 nodes are unavailable: 1 {ZONE_CLOSED}, 2 Insufficient cpu, 2 not allow to dispatch to revocable node.")


def test_tdm_zone_without_a_window_is_refused(simulate):
    """Not in tdm_test.go: a node in a zone the arguments do not name fails the predicate for every pod."""
    cluster = node("n6", "rz9") + queue("c1") + podgroup("pg1", "c1", "c1") + pod("p", "c1", "pg1", annotations=REVOCABLE_POD)
    code, out = simulate(cluster, "--now", NOON, conf=conf("enqueue, allocate", TDM_TIER))
    assert code == 0
    assert out["pods"]["c1/p"]["reason"] == "0/1 nodes are unavailable: 1 revocable zone rz9 not support."


def test_tdm_verdicts_are_not_shared_between_pods_of_one_shape(simulate):
    """Not in tdm_test.go: two pods alike but for the revocable annotation get their own verdicts (tdm
    names the zone in the task's shape): the revocable one takes r1, the other may not follow it there."""
    cluster = (node("r1", "rz1", cpu="4") + queue("c1") + podgroup("pg1", "c1", "c1")
               + pod("a", "c1", "pg1", annotations=REVOCABLE_POD) + pod("b", "c1", "pg1"))
    code, out = simulate(cluster, "--now", NOON, conf=conf("enqueue, allocate", TDM_TIER))
    assert code == 0 and placed(out) == {"c1/a": "r1", "c1/b": None}
    assert out["pods"]["c1/b"]["reason"] == "0/1 nodes are unavailable: 1 not allow to dispatch to revocable node."


# -- Test_TDM_victimsFn ----------------------------------------------------------------------------

# p1..p5 on n1 in job c1/pg1 (p4 and p5 not preemptable), p6..p10 on n2 in job c2/pg2; both nodes in rz1
C1_PODS = "".join(pod(f"p{i}", "c1", "pg1", node_name="n1", annotations={PREEMPTABLE: "true" if i <= 3 else "false"})
                  for i in range(1, 6))
C2_PODS = "".join(pod(f"p{i}", "c2", "pg2", node_name="n2", annotations={PREEMPTABLE: "true"}) for i in range(6, 11))
C1_PREEMPTABLE = {"c1/p1", "c1/p2", "c1/p3"}
C2_PREEMPTABLE = {f"c2/p{i}" for i in range(6, 11)}
MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"
MIN_AVAILABLE = "volcano.sh/jdb-min-available"


def victims_cluster(c1: str | None, c2: str | None) -> str:
    """``c1``/``c2``: the budget annotation of pg1/pg2 as ``key=value``, or None to leave the job out."""
    text = ""
    for ns, group, budget, nodes, pods in (("c1", "pg1", c1, "n1", C1_PODS), ("c2", "pg2", c2, "n2", C2_PODS)):
        if budget is None:
            continue
        key, _, value = budget.partition("=")
        text += node(nodes, "rz1") + queue(ns) + podgroup(group, ns, ns, annotations={key: value}) + pods
    return text


@pytest.mark.parametrize(("case", "c1", "c2", "window", "period", "want"), [
    (0, f"{MAX_UNAVAILABLE}=30%", None, "0:00-0:01", "100ms", 2),
    (1, f"{MAX_UNAVAILABLE}=30%", None, "0:00-0:00", "100ms", 0),
    (2, f"{MAX_UNAVAILABLE}=99%", None, "0:00-0:01", "1s", 3),
    (3, None, f"{MAX_UNAVAILABLE}=50%", "0:00-0:01", "1s", 3),
    (4, f"{MAX_UNAVAILABLE}=90%", f"{MAX_UNAVAILABLE}=50%", "0:00-0:01", "1s", 6),
    (5, None, f"{MAX_UNAVAILABLE}=3", "0:00-0:01", "1s", 3),
    (6, None, f"{MIN_AVAILABLE}=3", "0:00-0:01", "1s", 2),
    (7, None, f"{MIN_AVAILABLE}=30%", "0:00-0:01", "1s", 3),
    (8, f"{MAX_UNAVAILABLE}=3", f"{MIN_AVAILABLE}=2", "0:00-0:01", "1s", 6),
])
def test_tdm_victims_fn(simulate, case, c1, c2, window, period, want):
    """Test_TDM_victimsFn, case by case: the Running preemptable pods on rz1's nodes once rz1 is closed,
    as many per job as its budget allows (max-unavailable, a count or a percentage of the job's tasks
    rounded up, less the tasks already unavailable; else min-available kept running)."""
    tdm = option("tdm", "enabledVictim", arguments={"tdm.revocable-zone.rz1": window, "tdm.evict.period": period})
    code, out = simulate(victims_cluster(c1, c2), "--cycles", "1", "--now", NOON, conf=conf("shuffle", tdm))
    assert code == 0
    evicted = out["evicted"]
    assert len(evicted) == want
    assert set(evicted) <= C1_PREEMPTABLE | C2_PREEMPTABLE  # never p4 or p5 ("false")
    if c1 is not None and c2 is not None:  # each job gave its share
        assert len(set(evicted) & C1_PREEMPTABLE) == 3 and len(set(evicted) & C2_PREEMPTABLE) == 3


def test_tdm_victims_need_the_victim_switch(simulate):
    """Test_TDM_victimsFn sets EnabledVictim; without it shuffle asks no one."""
    tdm = option("tdm", arguments={"tdm.revocable-zone.rz1": "0:00-0:01"})
    code, out = simulate(victims_cluster(f"{MAX_UNAVAILABLE}=99%", None), "--cycles", "1", "--now", NOON,
                         conf=conf("shuffle", tdm))
    assert code == 0 and out["evicted"] == []


# -- a window closing during the run -----------------------------------------------------------------

def closing_cluster(budget: dict[str, str] | None = None) -> str:
    """Two revocable nodes in zone ``day`` (09:00-17:00), one ordinary node; job ``batch`` (three
    revocable pods, placed on the revocable nodes by tdm's score) and job ``web`` (two ordinary pods)."""
    return (node("base", cpu="4") + node("r1", "day", cpu="4") + node("r2", "day", cpu="4")
            + queue("q") + podgroup("batch", "default", "q", 3, annotations=budget)
            + "".join(pod(f"batch-{i}", "default", "batch", annotations={PREEMPTABLE: "true"}) for i in range(3))
            + podgroup("web", "default", "q", 2)
            + "".join(pod(f"web-{i}", "default", "web", annotations={PREEMPTABLE: "false"}) for i in range(2)))


def closing_conf(period: str) -> str:
    args = {"tdm.revocable-zone.day": "09:00-17:00", "tdm.evict.period": period}
    return conf("enqueue, allocate, shuffle", option("tdm", "enablePredicate", "enableNodeOrder", "enabledVictim",
                                                     "enableJobPipelined", arguments=args))


@pytest.mark.parametrize(("cycles", "evicted"), [
    # the clock starts at 16:59:57 and adds a second per cycle; tdm looks at most every 2s
    (1, 0),  # 16:59:57: all placed; tdm looks (zone open), nothing
    (4, 0),  # 16:59:58 too early to look; 16:59:59 open; 17:00:00 too early (and the end is inclusive)
    (5, 1),  # 17:00:01: closed, one batch pod goes (no budget: one per job and look)
    (6, 1),  # 17:00:02: too early
    (7, 2),  # 17:00:03: the next
    (9, 3),  # 17:00:05: the last
    (12, 3),  # nothing left on the revocable nodes; web never moves
])
def test_window_closes_during_the_run_and_the_revocable_pods_go(simulate, cycles, evicted):
    """The scenario the issue asks for, stepped cycle by cycle: revocable pods run on revocable nodes
    while their zone's window is open; once it closes, shuffle evicts them, a few per evict period."""
    code, out = simulate(closing_cluster(), "--now", "2026-03-10T16:59:57Z", "--cycles", str(cycles),
                         conf=closing_conf("2s"))
    assert code == 0
    assert len(out["evicted"]) == evicted
    assert all(k.startswith("default/batch-") for k in out["evicted"])
    assert {out["pods"][f"default/web-{i}"]["node"] for i in range(2)} == {"base"}
    remaining = {k: n for k, n in placed(out).items() if k.startswith("default/batch-")}
    assert set(remaining.values()) <= {"r1", "r2"} and len(remaining) == 3 - evicted


def test_window_closing_honours_the_job_budget(simulate):
    """The same with ``volcano.sh/jdb-max-unavailable: "2"`` on batch: two go at the first look after the
    window closed (17:00:01), the third at the next (17:00:03)."""
    budget = {MAX_UNAVAILABLE: "2"}
    for cycles, evicted in ((5, 2), (6, 2), (7, 3)):
        code, out = simulate(closing_cluster(budget), "--now", "2026-03-10T16:59:57Z", "--cycles", str(cycles),
                             conf=closing_conf("2s"))
        assert code == 0 and len(out["evicted"]) == evicted, cycles


def test_evict_period_counts_from_the_last_look_even_an_idle_one(simulate):
    """``tdm.evict.period`` left at 1m: tdm last looked at 16:59:57 (window open), so the revocable pods
    stay until 17:00:57, the first look after the window closed, and one goes then."""
    args = {"tdm.revocable-zone.day": "09:00-17:00"}
    tdm_conf = conf("enqueue, allocate, shuffle", option("tdm", "enablePredicate", "enableNodeOrder",
                                                         "enabledVictim", arguments=args))
    code, out = simulate(closing_cluster(), "--now", "2026-03-10T16:59:57Z", "--cycles", "60", conf=tdm_conf)
    assert code == 0 and out["evicted"] == []  # the 60th cycle is at 17:00:56
    code, out = simulate(closing_cluster(), "--now", "2026-03-10T16:59:57Z", "--cycles", "61", conf=tdm_conf)
    assert code == 0 and len(out["evicted"]) == 1


# -- PreemptableFn, JobStarvingFn, JobPipelinedFn, JobOrderFn (not in tdm_test.go) ------------------

def preempt_cluster(preemptor: dict[str, str] | None, group: dict[str, str] | None = None) -> str:
    """``base`` (4 cpu, not revocable) full with job ``batch``'s four preemptable pods; ``urgent`` (2 pods,
    minMember 2) waits, its pods annotated with ``preemptor``, its PodGroup with ``group``."""
    return (node("base", cpu="4") + node("r1", "day", cpu="4") + queue("q")
            + podgroup("batch", "default", "q", 1)
            + "".join(pod(f"batch-{i}", "default", "batch", node_name="base", annotations={PREEMPTABLE: "true"})
                      for i in range(4))
            + podgroup("urgent", "default", "q", 2, annotations=group)
            + "".join(pod(f"urgent-{i}", "default", "urgent", annotations=preemptor) for i in range(2)))


# the window is closed at noon: r1 takes nobody, so urgent must preempt on base
PREEMPT_CONF = conf("enqueue, allocate, preempt", option(
    "tdm", "enablePredicate", "enablePreemptable", "enableJobStarving", "enableJobPipelined", "enableJobOrder",
    arguments={"tdm.revocable-zone.day": "18:00-23:00"}))


def test_a_job_that_may_not_be_revoked_preempts_preemptable_pods(simulate):
    """PreemptableFn: a preemptor that is neither preemptable nor revocable (``volcano.sh/preemptable:
    "false"``) gets the Running preemptable tasks on non-revocable nodes, one per job and call (no
    budget); JobStarvingFn makes urgent a preemptor, JobPipelinedFn commits its evictions.  Two batch
    pods go; urgent binds in the next cycle."""
    code, out = simulate(preempt_cluster({PREEMPTABLE: "false"}), "--now", NOON, "--cycles", "2", conf=PREEMPT_CONF)
    assert code == 0
    assert len(out["evicted"]) == 2 and all(k.startswith("default/batch-") for k in out["evicted"])
    assert {out["pods"][f"default/urgent-{i}"]["node"] for i in range(2)} == {"base"}


def test_preemptable_pods_on_revocable_nodes_are_no_preempt_victims(simulate):
    """PreemptableFn leaves the tasks on revocable nodes to VictimTasksFn.  With tdm's predicate off, the
    full revocable node r1 (listed first) is a candidate too, but its preemptable pods are no victims:
    the two batch pods evicted are on base."""
    cluster = (node("r1", "day", cpu="4") + preempt_cluster({PREEMPTABLE: "false"}).replace(node("r1", "day", cpu="4"), "")
               + "".join(pod(f"spare-{i}", "default", "batch", node_name="r1", annotations={PREEMPTABLE: "true"})
                         for i in range(4)))
    tdm = option("tdm", "enablePreemptable", "enableJobStarving", "enableJobPipelined",
                 arguments={"tdm.revocable-zone.day": "18:00-23:00"})
    code, out = simulate(cluster, "--now", NOON, "--cycles", "1", conf=conf("enqueue, allocate, preempt", tdm))
    assert code == 0
    assert len(out["evicted"]) == 2 and all(k.startswith("default/batch-") for k in out["evicted"])


def test_a_preemptable_preemptor_preempts_nothing(simulate):
    """PreemptableFn rejects a preemptor that is preemptable: a pod without the annotation counts as
    preemptable (``GetPodPreemptable`` defaults to true), as does one that may be revoked."""
    for preemptor in (None, {ZONE: "*", PREEMPTABLE: "false"}):
        code, out = simulate(preempt_cluster(preemptor), "--now", NOON, "--cycles", "2", conf=PREEMPT_CONF)
        assert code == 0 and out["evicted"] == [], preemptor
        assert out["pods"]["default/urgent-0"]["node"] is None


def test_a_preemptable_job_does_not_starve(simulate):
    """JobStarvingFn: a job whose PodGroup is ``volcano.sh/preemptable: "true"`` never starves, so it
    preempts nothing even though its pods may not be revoked."""
    code, out = simulate(preempt_cluster({PREEMPTABLE: "false"}, {PREEMPTABLE: "true"}), "--now", NOON,
                         "--cycles", "2", conf=PREEMPT_CONF)
    assert code == 0 and out["evicted"] == []


def test_jobs_that_may_not_be_preempted_go_first(simulate):
    """JobOrderFn: of two jobs that each fill the only node, the one whose PodGroup is not preemptable is
    placed, although the preemptable one is older."""
    cluster = (node("base", cpu="2") + queue("q")
               + podgroup("spot", "default", "q", 2, annotations={PREEMPTABLE: "true"})
               + "".join(pod(f"spot-{i}", "default", "spot") for i in range(2))
               + podgroup("steady", "default", "q", 2)
               + "".join(pod(f"steady-{i}", "default", "steady") for i in range(2)))
    tiers = option("tdm", "enableJobOrder", arguments={"tdm.revocable-zone.day": "09:00-17:00"})
    code, out = simulate(cluster, "--now", NOON, "--cycles", "1",
                         conf=conf("enqueue, allocate", tiers + option("gang", "enableJobReady", "enableJobPipelined")))
    assert code == 0
    assert placed(out) == {"default/spot-0": None, "default/spot-1": None,
                           "default/steady-0": "base", "default/steady-1": "base"}
