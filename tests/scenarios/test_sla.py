"""sla end to end: every case of Volcano's plugins/sla/sla_test.go through ``vcsched simulate``, then what
the Go test leaves out: the waiting time on the simulated clock (``--now``), the annotations' order,
JobPipelinedFn's reservation, bad input.

TestSlaPlugin has two jobs created at the same (zero) time: job1 without a waiting time, job2 with
``WaitingTime`` 1h.  Each case checks ``JobOrderFn(job1, job2)`` and ``JobEnqueueable(job1)`` in a
session whose only plugin is sla with EnabledJobOrder and EnabledJobEnqueued (``option()``: every other
flag off, as Go's nil flags).  Re-expressed:

- ``WaitingTime`` is the PodGroup's ``sla-waiting-time`` annotation; the zero creation time is the
  same explicit ``creationTimestamp`` on both PodGroups, an hour before the clock starts.
- JobOrderFn: one node with room for one job's pod; the job ordered first is placed.  The two jobs
  tie on creation time, so without sla the one with the smaller name would go first; each case runs
  with the names both ways round, so only sla's order can place the expected job.
- JobEnqueueable: job1's PodGroup asks ``minResources`` the cluster does not have; ``enqueue`` makes it
  Inqueue when the vote is true.  With sla alone the vote is true in all three cases (Permit, or every
  plugin abstaining), as the Go test expects; the same session with ``overcommit`` in a second tier
  tells the two apart: a Permit from the first tier admits the job, an abstention leaves overcommit's
  Reject standing.
- "sla error type placement" (the argument given as the integer 1): Volcano logs it and runs without a
  global waiting time; vcsched refuses the configuration, naming the argument (exit 2), as it refuses
  every argument of the wrong type.
"""

from __future__ import annotations

import pytest

from vcsched.conf import ENABLE_FLAGS

NOW = "2026-03-10T12:00:00Z"
CREATED = "2026-03-10T11:00:00Z"
WAIT = "sla-waiting-time"


def option(name: str, *enabled: str, arguments: str = "") -> str:
    lines = [f"  - name: {name}"]
    lines += [f"    {flag}: {'true' if flag in enabled else 'false'}"
              for flag in ENABLE_FLAGS if flag != "enableHierarchy"]
    if arguments:
        lines.append(f"    arguments: {{{arguments}}}")
    return "\n".join(lines) + "\n"


def conf(actions: str, *tiers: str) -> str:
    return f'actions: "{actions}"\ntiers:\n' + "".join(f"- plugins:\n{t}" for t in tiers)


def node(name: str, cpu: str = "1") -> str:
    return f"""
---
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}
status: {{allocatable: {{cpu: "{cpu}", memory: 8Gi, pods: "10"}}}}
"""


def job(name: str, annotations: dict[str, str] | None = None, created: str | None = CREATED, pods: int = 1,
        min_member: int = 1, cpu: str = "1", min_cpu: str | None = None) -> str:
    """A PodGroup and its ``pods`` pods (``name-0``...)."""
    ann = ", ".join(f'{k}: "{v}"' for k, v in (annotations or {}).items())
    stamp = f", creationTimestamp: '{created}'" if created else ""
    min_resources = f", minResources: {{cpu: '{min_cpu}'}}" if min_cpu else ""
    text = f"""
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {{name: {name}, namespace: default, annotations: {{{ann}}}{stamp}}}
spec: {{minMember: {min_member}, queue: default{min_resources}}}
"""
    for i in range(pods):
        text += f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}-{i}, namespace: default, annotations: {{scheduling.k8s.io/group-name: {name}}}}}
spec: {{schedulerName: volcano, containers: [{{name: c, image: x, resources: {{requests: {{cpu: "{cpu}"}}}}}}]}}
"""
    return text


SLA_ONLY = option("sla", "enableJobOrder", "enableJobEnqueued")
# (case, arguments, expectedOrder: job1 before job2, expectedEnqueueAble, job1's vote: Permit or Abstain)
CASES = [
    ("sla normal placement", f"{WAIT}: 3m", True, True, "Permit"),
    ("none placement", "", False, True, "Abstain"),
]


@pytest.mark.parametrize(("case", "arguments", "job1_first", "enqueueable", "vote"), CASES)
@pytest.mark.parametrize("names", [("a-job1", "b-job2"), ("b-job1", "a-job2")])
def test_sla_plugin_job_order(simulate, case, arguments, job1_first, enqueueable, vote, names):
    """TestSlaPlugin, ``ssn.JobOrderFn(job1, job2)``: with a global 3m, job1 (deadline creation + 3m)
    goes before job2 (creation + 1h); with no global waiting time job1 has none and goes after job2."""
    job1, job2 = names
    cluster = node("n1") + job(job1) + job(job2, {WAIT: "1h"})
    sla = option("sla", "enableJobOrder", "enableJobEnqueued", arguments=arguments)
    code, out = simulate(cluster, "--now", NOW, "--cycles", "1", conf=conf("enqueue, allocate", sla))
    assert code == 0
    first, second = (job1, job2) if job1_first else (job2, job1)
    assert out["pods"][f"default/{first}-0"]["node"] == "n1"
    assert out["pods"][f"default/{second}-0"]["node"] is None


@pytest.mark.parametrize(("case", "arguments", "job1_first", "enqueueable", "vote"), CASES)
def test_sla_plugin_job_enqueueable(simulate, case, arguments, job1_first, enqueueable, vote):
    """TestSlaPlugin, ``ssn.JobEnqueueable(job1)``: true in both cases with sla alone; job1 has waited an
    hour, past the global 3m (Permit), or has no waiting time (Abstain).  Behind overcommit, which rejects
    job1 (it asks 8 cpus of a 1-cpu cluster), only the Permit admits it."""
    cluster = node("n1") + job("job1", min_cpu="8") + job("job2", {WAIT: "1h"}, min_cpu="8")
    sla = option("sla", "enableJobOrder", "enableJobEnqueued", arguments=arguments)
    code, out = simulate(cluster, "--now", NOW, "--cycles", "1", conf=conf("enqueue", sla))
    assert code == 0
    assert (out["podgroups"]["default/job1"]["phase"] == "Inqueue") is enqueueable
    code, out = simulate(cluster, "--now", NOW, "--cycles", "1",
                         conf=conf("enqueue", sla, option("overcommit", "enableJobEnqueued")))
    assert code == 0
    assert out["podgroups"]["default/job1"]["phase"] == ("Inqueue" if vote == "Permit" else "Pending")
    # job2 has waited an hour of its hour: admitted by sla in both cases
    assert out["podgroups"]["default/job2"]["phase"] == "Inqueue"


@pytest.mark.parametrize("value", ["1", "1.5"])
def test_sla_plugin_error_type_placement_refuses_the_conf(simulate, value):
    """TestSlaPlugin "sla error type placement": ``sla-waiting-time: 1``, an integer, not a duration string.
    Volcano ignores it (expectedOrder false: job1 then has no waiting time); vcsched refuses it."""
    code, err = simulate(node("n1") + job("job1"), conf=conf("enqueue, allocate", option(
        "sla", "enableJobOrder", "enableJobEnqueued", arguments=f"{WAIT}: {value}")))
    assert code == 2
    assert f"tiers[0].plugins[0].arguments.{WAIT}: expected a string" in err


@pytest.mark.parametrize(("value", "problem"), [
    ("'1'", 'time: missing unit in duration "1"'),
    ("soon", 'time: invalid duration "soon"'),
    ("3d", 'time: unknown unit "d" in duration "3d"'),
    ("0s", "invalid sla waiting time"),
    ("-5m", "invalid sla waiting time"),
    ("'1h '", 'time: unknown unit "h " in duration "1h "'),
])
def test_sla_waiting_time_argument_that_does_not_parse_refuses_the_conf(simulate, value, problem):
    """Not in sla_test.go: a string that is no Go duration, or none above zero (Volcano logs and runs without)."""
    code, err = simulate(node("n1") + job("job1"), conf=conf("enqueue, allocate", option(
        "sla", "enableJobOrder", arguments=f"{WAIT}: {value}")))
    assert code == 2
    assert f"tiers[0].plugins[0].arguments.{WAIT}" in err and problem in err


# -- the waiting time on the simulated clock --------------------------------------------------------

# sla first, overcommit behind it: a job asking more than the cluster is admitted only by sla's Permit
ADMIT = conf("enqueue", option("sla", "enableJobEnqueued", "enableJobOrder"), option("overcommit", "enableJobEnqueued"))


@pytest.mark.parametrize(("now", "cycles", "phase"), [
    ("2026-03-10T10:29:59Z", 1, "Pending"),  # 29m59s waited of 30m
    ("2026-03-10T10:30:00Z", 1, "Inqueue"),  # 30m: time.Since < waiting time no longer holds
    ("2026-03-10T10:29:58Z", 2, "Pending"),  # the second cycle is at 10:29:59
    ("2026-03-10T10:29:58Z", 3, "Inqueue"),  # the third at 10:30:00
])
def test_waiting_time_counts_on_the_simulated_clock(simulate, now, cycles, phase):
    """JobEnqueueableFn permits once ``now - creationTimestamp`` reaches the waiting time; ``--now`` sets
    the first session's clock, each cycle adds a second."""
    cluster = node("n1") + job("late", {WAIT: "30m"}, created="2026-03-10T10:00:00Z", min_cpu="8")
    code, out = simulate(cluster, "--now", now, "--cycles", str(cycles), conf=ADMIT)
    assert code == 0 and out["podgroups"]["default/late"]["phase"] == phase


def test_creation_times_follow_the_clock(simulate):
    """A PodGroup without creationTimestamp dates from an hour before ``--now``: with a 59m59s waiting time
    it is admitted at once, whatever ``--now`` is; with 1h1m it is not."""
    for now in ("2026-03-10T12:00:00Z", "2031-07-01T00:00:00Z"):
        cluster = (node("n1") + job("soon", {WAIT: "59m59s"}, created=None, min_cpu="8")
                   + job("later", {WAIT: "1h1m"}, created=None, min_cpu="8"))
        code, out = simulate(cluster, "--now", now, "--cycles", "1", conf=ADMIT)
        assert code == 0, out
        assert out["podgroups"]["default/soon"]["phase"] == "Inqueue"
        assert out["podgroups"]["default/later"]["phase"] == "Pending"


@pytest.mark.parametrize(("annotations", "arguments", "phase"), [
    ({"volcano.sh/sla-waiting-time": "2h", WAIT: "1m"}, "", "Pending"),  # volcano.sh/ first
    ({WAIT: "1m"}, "", "Inqueue"),
    ({"volcano.sh/sla-waiting-time": "1m"}, "", "Inqueue"),
    ({WAIT: "2h"}, f"{WAIT}: 1m", "Pending"),  # the job's own before the global one
    ({}, f"{WAIT}: 1m", "Inqueue"),
    ({}, f"{WAIT}: 2h", "Pending"),
])
def test_which_waiting_time_applies(simulate, annotations, arguments, phase):
    """``SetPodGroup`` reads ``volcano.sh/sla-waiting-time``, else ``sla-waiting-time``; the plugin falls
    back to its argument.  The job has waited an hour."""
    cluster = node("n1") + job("j", annotations, min_cpu="8")
    admit = conf("enqueue", option("sla", "enableJobEnqueued", arguments=arguments),
                 option("overcommit", "enableJobEnqueued"))
    code, out = simulate(cluster, "--now", NOW, "--cycles", "1", conf=admit)
    assert code == 0 and out["podgroups"]["default/j"]["phase"] == phase


@pytest.mark.parametrize(("kind", "doc", "key"), [
    ("PodGroup", job("j", {WAIT: "soon"}), WAIT),
    ("PodGroup", job("j", {"volcano.sh/sla-waiting-time": "0s"}), "volcano.sh/sla-waiting-time"),
    ("Job", """
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j, annotations: {sla-waiting-time: "5 minutes"}}
spec:
  tasks:
  - {name: w, replicas: 1, template: {spec: {containers: [{name: c, image: x}]}}}
""", WAIT),
])
def test_waiting_time_annotation_that_does_not_parse_is_bad_input(simulate, kind, doc, key):
    """A PodGroup's or a Job's waiting time that is no Go duration above zero: exit 2 naming the object and
    the annotation (Volcano logs it and the job has no waiting time of its own)."""
    code, err = simulate(node("n1") + doc)
    assert code == 2
    assert f"{kind} default/j" in err and f"metadata.annotations[{key}]" in err


def _lift_input_check(monkeypatch):
    """simulate refuses a bad waiting time at input (above); a PodGroup on a live cluster meets no such
    check.  With it lifted, ``vcsched simulate`` runs what ``vcsched run`` runs on that PodGroup."""
    from vcsched.sim import manifests

    monkeypatch.setattr(manifests, "_check_waiting_time", lambda meta, check: None)


def warnings(out: dict) -> list[dict]:
    return [e for e in out["events"] if e["reason"] == "InvalidSlaWaitingTime"]


@pytest.mark.parametrize(("key", "value", "problem"), [
    (WAIT, "soon", 'time: invalid duration "soon"'),
    ("volcano.sh/sla-waiting-time", "0s", "invalid sla waiting time"),
    ("volcano.sh/sla-waiting-time", "5 minutes", 'time: unknown unit " minutes" in duration "5 minutes"'),
])
def test_waiting_time_annotation_that_does_not_parse_is_a_warning_event_once(simulate, monkeypatch, key, value,
                                                                            problem):
    """What Kubernetes mode does with it: a Warning event on the PodGroup naming the annotation and the value,
    recorded once in five sessions (a repeat would count), and the job scheduled as if the annotation were
    absent: here by the plugin's argument, which admits it; the other jobs are scheduled as usual."""
    _lift_input_check(monkeypatch)
    cluster = node("n1", "4") + job("bad", {key: value}, min_cpu="8") + job("good", {WAIT: "2h"}, min_cpu="8")
    cluster += job("plain")
    code, out = simulate(cluster, "--now", NOW, "--cycles", "5", conf=conf("enqueue, allocate", option(
        "sla", "enableJobEnqueued", "enableJobOrder", arguments=f"{WAIT}: 1m"), option("overcommit", "enableJobEnqueued")))
    assert code == 0, out
    assert warnings(out) == [{
        "object": "PodGroup default/bad", "type": "Warning", "reason": "InvalidSlaWaitingTime", "count": 1,
        "message": f"metadata.annotations[{key}]: must be a duration above zero such as 1h2m3s, got \"{value}\" "
                   f"({problem}); the sla plugin ignores it"}]
    # ignored: the plugin's 1m applies, and bad has waited an hour; good waits its own 2h
    assert out["pods"]["default/bad-0"]["node"] == "n1"
    assert out["pods"]["default/good-0"]["node"] is None
    assert out["pods"]["default/plain-0"]["node"] == "n1"


def test_a_bad_annotation_beside_a_good_one_is_reported_and_the_good_one_used(simulate, monkeypatch):
    """``volcano.sh/sla-waiting-time`` does not parse, ``sla-waiting-time`` does: the event names the bad one
    only, and the job waits the good one's time (2h: not admitted yet)."""
    _lift_input_check(monkeypatch)
    cluster = node("n1", "4") + job("j", {"volcano.sh/sla-waiting-time": "soon", WAIT: "2h"}, min_cpu="8")
    code, out = simulate(cluster, "--now", NOW, "--cycles", "3", conf=ADMIT)
    assert code == 0, out
    assert [(e["object"], e["count"]) for e in warnings(out)] == [("PodGroup default/j", 1)]
    assert "metadata.annotations[volcano.sh/sla-waiting-time]" in warnings(out)[0]["message"]
    assert out["podgroups"]["default/j"]["phase"] == "Pending"


# -- JobPipelinedFn: what a job that has waited keeps ----------------------------------------------

def reservation_cluster(wait: str) -> str:
    """n1, n2 free and n3 full; ``big`` (created first: 3 pods of 2 cpu, minMember 3) fits only twice;
    ``small`` (1 pod of 2 cpu) fits once."""
    holder = """
---
apiVersion: v1
kind: Pod
metadata: {name: holder, namespace: default}
spec: {schedulerName: volcano, nodeName: n3, containers: [{name: c, image: x, resources: {requests: {cpu: "2"}}}]}
status: {phase: Running}
"""
    return (node("n1", "2") + node("n2", "2") + node("n3", "2") + holder
            + job("big", {WAIT: wait}, created="2026-03-10T11:00:00Z", pods=3, min_member=3, cpu="2")
            + job("small", created="2026-03-10T11:00:01Z", cpu="2"))


RESERVE = conf("enqueue, allocate", option("sla", "enableJobPipelined", "enableJobOrder"),
               option("gang", "enableJobReady", "enableJobPipelined"))


def test_a_job_past_its_waiting_time_keeps_what_allocate_gave_it(simulate):
    """JobPipelinedFn: big has waited its 30m, so sla (tier 1) counts it pipelined although gang (tier 2)
    would not; allocate keeps its two allocations for the session and small finds no room."""
    code, out = simulate(reservation_cluster("30m"), "--now", NOW, "--cycles", "1", conf=RESERVE)
    assert code == 0
    assert out["pods"]["default/small-0"]["node"] is None
    reasons = sorted(out["pods"][f"default/big-{i}"]["reason"] for i in range(2))
    assert reasons == [f"Pod default/big-{i} can possibly be assigned to n{i + 1}, once minAvailable is satisfied"
                       for i in range(2)]


def test_a_job_within_its_waiting_time_keeps_nothing(simulate):
    """The same job with 2h to wait: sla abstains, gang rejects, allocate undoes big's allocations and
    small takes a node."""
    code, out = simulate(reservation_cluster("2h"), "--now", NOW, "--cycles", "1", conf=RESERVE)
    assert code == 0
    assert out["pods"]["default/small-0"]["node"] == "n1"
