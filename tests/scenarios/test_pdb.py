"""pdb end to end: Volcano's plugins/pdb/pdb_test.go through ``vcsched simulate``, then what the Go test
leaves out (the status the disruption controller computes, the budget spent across candidates,
``disruptedPods``, namespaces, unlabelled pods) and input the API server refuses.

``TestPreemptableAndReclaimableFn`` opens one session with pdb alone in its tier (its preemptable,
reclaimable and victim switches on) and asks ``ssn.Preemptable``, ``ssn.Reclaimable`` and
``ssn.VictimTasks`` about two pods ``test-pod1`` and ``test-pod2`` (label ``volcano.sh/job-name: job-1``,
namespace ``default``) under three budgets: none, a PDB selecting them with
``status.disruptionsAllowed: 0``, the same with 1.  Each case runs here three times, once per
question, as the action that asks it in one cycle (``--cycles 1``):

- Preemptable: ``preempt``, the two pods Running on a full node in one job, a pending preemptor of
  another job in the same queue;
- Reclaimable: ``reclaim``, the same with the preemptor in another queue;
- VictimTasks: ``shuffle``, which evicts exactly what ``ssn.VictimTasks`` returns.

Re-expressed: the Go preemptor is an empty TaskInfo; here it is a pod of its own job asking for one
cpu (so one victim makes room) or two (both must go), which shows which pods the victims are.  The
Go test's PDB has no ``minAvailable``/``maxUnavailable`` and a hand-written status no disruption
controller would write (it would find 0 disruptions allowed); ``simulate`` keeps a status given with
the PDB, as observed, until a pod it selects changes.  The other plugins the actions need (gang's
JobStarving, predicates) sit in a second tier with every victim switch off, so pdb alone decides,
as in the Go tier.
"""

from __future__ import annotations

import pytest

from vcsched.conf import ENABLE_FLAGS

from .conftest import node, queue

LABEL = "volcano.sh/job-name"


def option(name: str, *enabled: str) -> str:
    """One plugin option with every enable flag off except ``enabled`` (Go's nil flags are off)."""
    lines = [f"  - name: {name}"]
    lines += [f"    {flag}: {'true' if flag in enabled else 'false'}" for flag in ENABLE_FLAGS
              if flag != "enableHierarchy"]
    return "\n".join(lines) + "\n"


# pdb_test.go's pluginOption: EnabledPreemptable, EnabledReclaimable, EnabledVictim
PDB = option("pdb", "enablePreemptable", "enableReclaimable", "enabledVictim")


def conf(actions: str) -> str:
    return (f'actions: "{actions}"\ntiers:\n- plugins:\n{PDB}- plugins:\n'
            + option("gang", "enableJobStarving") + option("predicates", "enablePredicate"))


def running(name: str, group: str, *, labels: dict[str, str] | None = None, ns: str = "default",
            node_name: str = "n1", cpu: str = "1") -> str:
    lab = ", ".join(f"{k}: {v}" for k, v in (labels or {}).items())
    return f"""
---
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {ns}
  labels: {{{lab}}}
  annotations: {{scheduling.k8s.io/group-name: {group}}}
spec:
  schedulerName: volcano
  nodeName: {node_name}
  containers: [{{name: main, image: busybox, resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}}}]
status: {{phase: Running}}
"""


def group(name: str, queue_name: str = "default", phase: str = "Running", ns: str = "default") -> str:
    return f"""
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {{name: {name}, namespace: {ns}}}
spec: {{minMember: 1, queue: {queue_name}}}
status: {{phase: {phase}}}
"""


def preemptor(cpu: str, queue_name: str = "default", ns: str = "default") -> str:
    return f"""
---
apiVersion: v1
kind: Pod
metadata:
  name: preemptor
  namespace: {ns}
  annotations: {{scheduling.k8s.io/group-name: preemptor}}
spec:
  schedulerName: volcano
  containers: [{{name: main, image: busybox, resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}}}]
""" + group("preemptor", queue_name, "Inqueue", ns)


def pdb(name: str = "test-pdb", *, selector: str = f"{{matchLabels: {{{LABEL}: job-1}}}}", spec: str = "",
        status: str | None = None, ns: str = "default") -> str:
    return f"""
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: {name}, namespace: {ns}}}
spec:
  selector: {selector}
{spec}
""" + (f"status: {status}\n" if status is not None else "")


def go_fixture(allowed: int | None, job_queue: str = "default") -> str:
    """The Go test's two pods, Running on a node they fill, and its PDB (None: "test without pdbs")."""
    out = node("n1", cpu="2") + group("job-1", job_queue)
    out += running("test-pod1", "job-1", labels={LABEL: "job-1"}) + running("test-pod2", "job-1", labels={LABEL: "job-1"})
    if job_queue != "default":
        out += queue(job_queue)
    if allowed is not None:
        out += pdb(status=f"{{disruptionsAllowed: {allowed}}}")
    return out


GO_CASES = [
    # (Go case name, disruptionsAllowed, victims among test-pod1/test-pod2)
    pytest.param(None, ["test-pod1", "test-pod2"], id="test without pdbs"),
    pytest.param(0, [], id="test with pdbs(can evict 0 pod)"),
    pytest.param(1, ["test-pod1"], id="test with pdbs(can evict 1 pod)"),
]


def evicted(out: dict) -> list[str]:
    return sorted(key.split("/", 1)[1] for key in out["evicted"])


# -- TestPreemptableAndReclaimableFn ------------------------------------------------------------------


@pytest.mark.parametrize(("allowed", "victims"), GO_CASES)
def test_preemptable(simulate, allowed, victims):
    """pdb_test.go · TestPreemptableAndReclaimableFn, ``ssn.Preemptable``: a preemptor that needs both
    pods' room evicts exactly the victims when they are both; one that needs one pod's room evicts
    ``test-pod1`` when it is the only victim (without a PDB the later ``test-pod2`` would go first)."""
    need = "2" if len(victims) == 2 else "1"
    code, out = simulate(go_fixture(allowed) + preemptor(need), "--cycles", "1", conf=conf("allocate, preempt"))
    assert code == 0, out
    assert evicted(out) == victims
    assert out["pods"]["default/preemptor"]["node"] is None
    if victims:
        assert "once resource is released" in out["pods"]["default/preemptor"]["reason"]


def test_preemptable_without_pdb_takes_the_later_pod_first(simulate):
    """The counterpart of the 1-pod case: with no PDB both are victims, and the eviction order takes
    ``test-pod2`` (created later) for a one-cpu preemptor; the budget is what makes it ``test-pod1``."""
    code, out = simulate(go_fixture(None) + preemptor("1"), "--cycles", "1", conf=conf("allocate, preempt"))
    assert code == 0, out
    assert evicted(out) == ["test-pod2"]


def test_preemptable_one_victim_cannot_make_room_for_two(simulate):
    """pdb_test.go, "can evict 1 pod": test-pod1 alone is a victim, so a preemptor that needs both
    pods' room finds too little and evicts nothing."""
    code, out = simulate(go_fixture(1) + preemptor("2"), "--cycles", "1", conf=conf("allocate, preempt"))
    assert code == 0, out
    assert out["evicted"] == []


@pytest.mark.parametrize(("allowed", "victims"), GO_CASES)
def test_reclaimable(simulate, allowed, victims):
    """pdb_test.go · TestPreemptableAndReclaimableFn, ``ssn.Reclaimable``: job-1 runs in queue ``qa``, the
    reclaimer waits in ``default``."""
    need = "2" if len(victims) == 2 else "1"
    code, out = simulate(go_fixture(allowed, job_queue="qa") + preemptor(need), "--cycles", "1",
                         conf=conf("allocate, reclaim"))
    assert code == 0, out
    assert evicted(out) == victims


@pytest.mark.parametrize(("allowed", "victims"), GO_CASES)
def test_victim_tasks(simulate, allowed, victims):
    """pdb_test.go · TestPreemptableAndReclaimableFn, ``ssn.VictimTasks``: ``shuffle`` evicts exactly the
    tasks it returns, here out of the two Running pods."""
    code, out = simulate(go_fixture(allowed), "--cycles", "1", conf=conf("shuffle"))
    assert code == 0, out
    assert evicted(out) == victims


# -- beyond the Go test -------------------------------------------------------------------------------


def test_status_is_computed_as_the_disruption_controller_would_and_again_after_an_eviction(simulate):
    """A PDB given without status gets the disruption controller's: minAvailable 1 over two Running
    pods allows one disruption, which the first candidate walked (test-pod1) takes.  The eviction is
    a pod deleted, so the controller syncs the PDB again: one pod left, none allowed."""
    manifests = go_fixture(None) + pdb(spec="  minAvailable: 1") + preemptor("1")
    code, out = simulate(manifests, "--cycles", "1", conf=conf("allocate, preempt"))
    assert code == 0, out
    assert evicted(out) == ["test-pod1"]
    status = out["podDisruptionBudgets"]["default/test-pdb"]
    assert {k: status[k] for k in ("expectedPods", "currentHealthy", "desiredHealthy", "disruptionsAllowed")} == {
        "expectedPods": 1, "currentHealthy": 1, "desiredHealthy": 1, "disruptionsAllowed": 0}
    assert status["conditions"][0]["type"] == "DisruptionAllowed"
    assert status["conditions"][0]["reason"] == "InsufficientPods"


def test_computed_status_before_any_change(simulate):
    """With nothing evicted, the status is the first sync's: two healthy, one desired, one allowed."""
    code, out = simulate(go_fixture(None) + pdb(spec="  minAvailable: 1"), "--cycles", "1",
                         conf=conf("allocate"))
    assert code == 0, out
    status = out["podDisruptionBudgets"]["default/test-pdb"]
    assert (status["expectedPods"], status["currentHealthy"], status["desiredHealthy"],
            status["disruptionsAllowed"]) == (2, 2, 1, 1)
    assert status["conditions"][0]["status"] == "True"
    assert status["conditions"][0]["reason"] == "SufficientPods"


def test_a_computed_budget_protects_what_it_must(simulate):
    """minAvailable 2 over the two pods: no disruption allowed, the preemptor waits."""
    code, out = simulate(go_fixture(None) + pdb(spec="  minAvailable: 2") + preemptor("1"), "--cycles", "1",
                         conf=conf("allocate, preempt"))
    assert code == 0, out
    assert out["evicted"] == []
    assert out["podDisruptionBudgets"]["default/test-pdb"]["disruptionsAllowed"] == 0


def test_max_unavailable_over_unmanaged_pods_allows_nothing(simulate):
    """maxUnavailable is taken of the pods' controllers' scale; pods without a controller are
    unmanaged, so expectedPods is 0 and no disruption is allowed (Kubernetes warns UnmanagedPods)."""
    code, out = simulate(go_fixture(None) + pdb(spec="  maxUnavailable: 1") + preemptor("1"), "--cycles", "1",
                         conf=conf("allocate, preempt"))
    assert code == 0, out
    assert out["evicted"] == []
    status = out["podDisruptionBudgets"]["default/test-pdb"]
    assert (status["expectedPods"], status["disruptionsAllowed"]) == (0, 0)


def test_a_percentage_over_a_volcano_jobs_pods_fails_the_sync(simulate):
    """A percentage needs the controller's scale; a Volcano Job has no scale subresource, so the sync
    fails safe: disruptionsAllowed 0 and DisruptionAllowed=False, SyncFailed, with Kubernetes' message."""
    owner = ("  ownerReferences: [{apiVersion: batch.volcano.sh/v1alpha1, kind: Job, name: job-1, "
             "uid: 0c1d, controller: true}]\n")
    manifests = go_fixture(None).replace("  annotations: {scheduling.k8s.io/group-name: job-1}\n",
                                         "  annotations: {scheduling.k8s.io/group-name: job-1}\n" + owner)
    code, out = simulate(manifests + pdb(spec='  minAvailable: "50%"'), "--cycles", "1", conf=conf("allocate"))
    assert code == 0, out
    status = out["podDisruptionBudgets"]["default/test-pdb"]
    assert status["disruptionsAllowed"] == 0
    cond = status["conditions"][0]
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False", "SyncFailed", "jobs.batch.volcano.sh does not implement the scale subresource")


def test_a_pod_in_disrupted_pods_does_not_spend_the_budget(simulate):
    """``status.disruptedPods`` lists test-pod1 (its eviction is under way): it is a victim without
    taking the one disruption allowed, which test-pod2 then takes; both go."""
    status = "{disruptionsAllowed: 1, disruptedPods: {test-pod1: '2026-01-01T00:59:30Z'}}"
    manifests = go_fixture(None) + pdb(status=status)
    code, out = simulate(manifests, "--cycles", "1", conf=conf("shuffle"))
    assert code == 0, out
    assert evicted(out) == ["test-pod1", "test-pod2"]


def test_the_budget_is_spent_by_candidates_kept_too(simulate):
    """Volcano counts a disruption for every PDB a candidate matches, kept or not: test-pod1 matches A
    (1 allowed) and B (0 allowed), so it is kept, yet it spent A's disruption: test-pod2, under A
    only, is kept too."""
    manifests = node("n1", cpu="2") + group("job-1")
    manifests += running("test-pod1", "job-1", labels={LABEL: "job-1", "tier": "b"})
    manifests += running("test-pod2", "job-1", labels={LABEL: "job-1"})
    manifests += pdb("a", status="{disruptionsAllowed: 1}")
    manifests += pdb("b", selector="{matchLabels: {tier: b}}", status="{disruptionsAllowed: 0}")
    code, out = simulate(manifests, "--cycles", "1", conf=conf("shuffle"))
    assert code == 0, out
    assert out["evicted"] == []


def test_a_pdb_protects_only_its_namespace(simulate):
    """The same selector in another namespace protects nothing here."""
    code, out = simulate(go_fixture(None) + pdb(ns="other", status="{disruptionsAllowed: 0}"), "--cycles", "1",
                         conf=conf("shuffle"))
    assert code == 0, out
    assert evicted(out) == ["test-pod1", "test-pod2"]


def test_an_empty_selector_protects_nothing_in_the_plugin(simulate):
    """``selector: {}`` selects every pod of the namespace for the disruption controller, but Volcano's
    plugin skips an empty selector: both pods are victims though no disruption is allowed."""
    code, out = simulate(go_fixture(None) + pdb(selector="{}", status="{disruptionsAllowed: 0}"), "--cycles", "1",
                         conf=conf("shuffle"))
    assert code == 0, out
    assert evicted(out) == ["test-pod1", "test-pod2"]


def test_a_pod_without_labels_is_never_a_victim(simulate):
    """Volcano's filter passes over a pod without labels before looking at any budget (``len(pod.Labels)
    == 0``), so it is no victim even with no PDB at all."""
    manifests = node("n1", cpu="2") + group("job-1") + running("bare-1", "job-1") + running("bare-2", "job-1",
                                                                                             labels={"a": "b"})
    code, out = simulate(manifests, "--cycles", "1", conf=conf("shuffle"))
    assert code == 0, out
    assert evicted(out) == ["bare-2"]


# -- input the API server refuses ------------------------------------------------------------------


@pytest.mark.parametrize(("doc", "field", "message"), [
    (pdb(selector="{matchExpressions: [{key: app, operator: Equals, values: [a]}]}"),
     "spec.selector.matchExpressions[0].operator", "not a valid selector operator"),
    (pdb(selector="{matchLabels: {'bad key!': x}}"), "spec.selector.matchLabels", "name part must consist"),
    (pdb(selector="{matchExpressions: [{key: app, operator: In}]}"), "spec.selector.matchExpressions[0].values",
     "must be specified when `operator` is 'In' or 'NotIn'"),
    (pdb(spec="  minAvailable: 1\n  maxUnavailable: 1"), "spec", "minAvailable and maxUnavailable cannot be both set"),
    (pdb(spec='  minAvailable: "50"'), "spec.minAvailable", "a valid percent string must be a numeric string"),
    (pdb(spec='  maxUnavailable: "150%"'), "spec.maxUnavailable", "must not be greater than 100%"),
    (pdb(spec="  minAvailable: -1"), "spec.minAvailable", "must be greater than or equal to 0"),
    (pdb(spec="  minAvailable: 1.5"), "spec.minAvailable", "must be an integer or a percentage"),
    (pdb(spec="  unhealthyPodEvictionPolicy: Never"), "spec.unhealthyPodEvictionPolicy", "Unsupported value"),
    (pdb(status="{disruptionsAllowed: -1}"), "status.disruptionsAllowed", "must be greater than or equal to 0"),
    (pdb(status="{disruptedPods: {p: yesterday}}"), "status.disruptedPods[p]", "RFC 3339"),
])
def test_refused_pdbs(simulate, doc, field, message):
    code, err = simulate(node("n1") + doc)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert "document 1" in lines[0] and "PodDisruptionBudget default/test-pdb" in lines[0]
    assert f": {field}: " in lines[0] and message in lines[0]
