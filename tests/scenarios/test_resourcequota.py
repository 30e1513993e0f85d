"""resourcequota end to end: Volcano's plugins/resourcequota/resourcequota_test.go through ``vcsched
simulate``, then what the Go tests leave out (used counted from the pods, the pending use within a
session, ``requests.*`` names, the quota admission of a Job's pods) and input the API server refuses.

The Go tests open one session with resourcequota alone in its tier (``EnabledJobEnqueued``) and either
ask ``ssn.JobEnqueueable`` of each job (``TestResourceQuotaPlugin``) or run the ``enqueue`` action
(``TestJobEnqueuedOnOtherPluginsReject``).  Here each runs ``enqueue`` for one cycle
(``--cycles 1``): a PodGroup the plugins let through is ``Inqueue`` afterwards, one they refuse stays
``Pending``, with the plugin's event.

Re-expressed:

- ``TestResourceQuotaPlugin`` builds its PodGroups already ``Inqueue`` and asks the plugin directly;
  ``enqueue`` asks only about ``Pending`` ones, so they are given ``Pending``.  The enqueue action lets
  a PodGroup without ``minResources`` in without asking any plugin (spec/framework.md §7.1), so the
  case "MinResources field of pg is not set" holds whatever the plugin answers; the plugin's own
  Permit for it is pinned in tests/unit/test_pdb_resourcequota.py.
- ``util.BuildResourceQuota`` writes ``status.hard`` and no ``used``, a status the quota controller
  would not write (it counts ``used``); the manifests give that status, which ``simulate`` keeps, as
  observed.  The API server stores quantities in canonical form, so ``2000m`` reads back ``2``.
- ``TestJobEnqueuedOnOtherPluginsReject`` rejects ``pgA`` with a test double (``RejecterPlugin``) in the
  tier; here ``proportion`` in the same tier rejects it, ``pgA`` being in a queue whose capability is
  below its ``minResources``.  Its queue is older, so ``enqueue`` looks at ``pgA`` first, as in Go.
"""

from __future__ import annotations

import pytest

from vcsched.conf import ENABLE_FLAGS

from .conftest import node, pod, podgroup, queue

NS = "default"


def option(name: str, *enabled: str) -> str:
    """One plugin option with every enable flag off except ``enabled`` (Go's nil flags are off)."""
    lines = [f"  - name: {name}"]
    lines += [f"    {flag}: {'true' if flag in enabled else 'false'}" for flag in ENABLE_FLAGS
              if flag != "enableHierarchy"]
    return "\n".join(lines) + "\n"


RQ = option("resourcequota", "enableJobEnqueued")


def conf(*options: str, actions: str = "enqueue") -> str:
    return f'actions: "{actions}"\ntiers:\n- plugins:\n' + (RQ + "".join(options))


def flow(rl: dict[str, str]) -> str:
    return "{" + ", ".join(f'{k}: "{v}"' for k, v in rl.items()) + "}"


def pg(name: str, min_resources: dict[str, str] | None, queue_name: str = "c1", ns: str = NS,
       min_member: int = 2) -> str:
    extra = f"  minResources: {flow(min_resources)}\n" if min_resources is not None else ""
    return podgroup(name, min_member, queue=queue_name, ns=ns, extra=extra + "status: {phase: Pending}")


def rq(name: str, hard: dict[str, str], ns: str = NS, status: str | None = None, extra: str = "") -> str:
    doc = f"""
---
apiVersion: v1
kind: ResourceQuota
metadata: {{name: {name}, namespace: {ns}}}
spec:
  hard: {flow(hard)}
{extra}
"""
    return doc + (f"status: {status}\n" if status is not None else "")


def go_quota(name: str, hard: dict[str, str], ns: str = NS) -> str:
    """``util.BuildResourceQuota``: ``status.hard`` = hard, no ``used``."""
    return rq(name, hard, ns, status=f"{{hard: {flow(hard)}}}")


HUGE = {"cpu": "20000m", "memory": "20G"}
NORMAL = {"cpu": "2000m", "memory": "2G"}


def phase(out: dict, key: str) -> str:
    return out["podgroups"][key]["phase"]


def quota_events(out: dict, podgroup: str | None = None) -> list[dict]:
    return [e for e in out["events"] if e["message"].startswith("resource quota insufficient")
            and (podgroup is None or e["object"] == f"PodGroup {podgroup}")]


# -- TestResourceQuotaPlugin ----------------------------------------------------------------------


def test_quota_capacity_can_match_the_needs_of_this_pg(simulate):
    """resourcequota_test.go · TestResourceQuotaPlugin, "ResourceQuota capacity can match the needs of
    this pg": pg1 asks 2000m/2G, the quota allows 2000m/2G."""
    code, out = simulate(queue("c1") + pg("pg1", NORMAL) + go_quota("test", NORMAL), "--cycles", "1", conf=conf())
    assert code == 0, out
    assert phase(out, "default/pg1") == "Inqueue"
    assert quota_events(out) == []


def test_quota_capacity_cannot_match_the_needs_of_this_pg(simulate):
    """resourcequota_test.go · TestResourceQuotaPlugin, "ResourceQuota capacity can't match the needs of
    this pg": pg2 asks 20000m/20G; it stays Pending with Volcano's event, Go's ``%v`` of the three
    ResourceLists masked to the exceeded resources."""
    code, out = simulate(queue("c1") + pg("pg2", HUGE) + go_quota("test", NORMAL), "--cycles", "1", conf=conf())
    assert code == 0, out
    assert phase(out, "default/pg2") == "Pending"
    assert quota_events(out) == [{
        "object": "PodGroup default/pg2", "type": "Normal", "reason": "Unschedulable", "count": 1,
        "message": "resource quota insufficient, requested: map[cpu:{{20000 -3} {<nil>}  DecimalSI} "
                   "memory:{{20 9} {<nil>} 20G DecimalSI}], used: map[], limited: map[cpu:{{2 0} {<nil>} 2 "
                   "DecimalSI} memory:{{2 9} {<nil>} 2G DecimalSI}]"}]


def test_no_resource_quota_object(simulate):
    """resourcequota_test.go · TestResourceQuotaPlugin, "No ResourceQuota resource object": pg2 in a
    namespace without quotas is let through."""
    code, out = simulate(queue("c1") + pg("pg2", HUGE), "--cycles", "1", conf=conf())
    assert code == 0, out
    assert phase(out, "default/pg2") == "Inqueue"


def test_min_resources_field_of_pg_is_not_set(simulate):
    """resourcequota_test.go · TestResourceQuotaPlugin, "MinResources field of pg is not set": pg3 has no
    minResources and is let through (by enqueue itself; see the module docstring)."""
    code, out = simulate(queue("c1") + pg("pg3", None) + go_quota("test", NORMAL), "--cycles", "1", conf=conf())
    assert code == 0, out
    assert phase(out, "default/pg3") == "Inqueue"


# -- TestJobEnqueuedOnOtherPluginsReject --------------------------------------------------------------


def test_job_enqueued_on_other_plugins_reject(simulate):
    """resourcequota_test.go · TestJobEnqueuedOnOtherPluginsReject: ns1's quota holds one job's 1 cpu /
    1G; pgA, looked at first, is refused by another plugin of the tier, so it must not take ns1's
    quota, and pgB is admitted.  The API server refuses capitals in names: ``podA``, ``pgA`` are
    spelled ``pod-a``, ``pg-a``."""
    res = {"cpu": "1", "memory": "1G"}
    manifests = (node("n1", cpu="4", memory="4G", pods=10)
                 + queue("q0", extra="  capability: {cpu: 500m, memory: 4G}") + queue("q1")
                 + go_quota("rq1", res, ns="ns1")
                 + pod("pod-a", cpu="1", memory="1G", group="pg-a", ns="ns1")
                 + pod("pod-b", cpu="1", memory="1G", group="pg-b", ns="ns1")
                 + pg("pg-a", res, queue_name="q0", ns="ns1", min_member=1)
                 + pg("pg-b", res, queue_name="q1", ns="ns1", min_member=1))
    code, out = simulate(manifests, "--cycles", "1", conf=conf(option("proportion", "enableJobEnqueued")))
    assert code == 0, out
    assert phase(out, "ns1/pg-b") == "Inqueue"
    assert phase(out, "ns1/pg-a") == "Pending"
    assert quota_events(out) == []
    assert "queue resource quota insufficient: insufficient cpu" in [
        e["message"] for e in out["events"] if e["object"] == "PodGroup ns1/pg-a"]


# -- beyond the Go tests ----------------------------------------------------------------------------


def test_what_one_session_enqueued_counts_against_the_next(simulate):
    """JobEnqueuedFn: pg-a's 1 cpu is pending use for the rest of the session, so pg-b, asking another
    1 cpu of a 1 cpu quota, is refused in the same cycle; ``used`` in the event is the quota's own."""
    res = {"cpu": "1"}
    manifests = queue("c1") + go_quota("rq", res) + pg("pg-a", res) + pg("pg-b", res)
    code, out = simulate(manifests, "--cycles", "1", conf=conf())
    assert code == 0, out
    assert (phase(out, "default/pg-a"), phase(out, "default/pg-b")) == ("Inqueue", "Pending")
    assert quota_events(out)[0]["message"] == (
        "resource quota insufficient, requested: map[cpu:{{1 0} {<nil>} 1 DecimalSI}], used: map[], "
        "limited: map[cpu:{{1 0} {<nil>} 1 DecimalSI}]")


def test_used_is_counted_from_the_namespaces_pods(simulate):
    """A quota given without status gets the quota controller's: ``used`` sums the non-terminal pods of
    the namespace (3 cpu Running, a Succeeded pod not counted, whatever their scheduler), so 2 more
    cpu do not fit under 4."""
    others = (pod("run", cpu="3", node_name="n1", phase="Running")
              + pod("done", cpu="3", node_name="n1", phase="Succeeded"))
    # pods of another scheduler count all the same, and bring no PodGroup of their own
    others = others.replace("schedulerName: volcano", "schedulerName: default-scheduler")
    manifests = node("n1", cpu="8") + queue("c1") + rq("rq", {"cpu": "4", "pods": "10"}) + others + pg("pg", {"cpu": "2"})
    code, out = simulate(manifests, "--cycles", "1", conf=conf())
    assert code == 0, out
    assert out["resourceQuotas"]["default/rq"] == {"hard": {"cpu": "4", "pods": "10"},
                                                   "used": {"cpu": "3", "pods": "1"}}
    assert phase(out, "default/pg") == "Pending"
    assert quota_events(out, "default/pg")[0]["message"] == (
        "resource quota insufficient, requested: map[cpu:{{2 0} {<nil>} 2 DecimalSI}], "
        "used: map[cpu:{{3 0} {<nil>} 3 DecimalSI}], limited: map[cpu:{{4 0} {<nil>} 4 DecimalSI}]")


def test_quota_names_are_matched_as_written(simulate):
    """The plugin compares ResourceList names as they are: a quota on ``requests.cpu`` does not limit a
    PodGroup whose minResources says ``cpu``, and does limit one that says ``requests.cpu`` (as the
    podgroup controller writes for a bare pod: its quota usage)."""
    quota = go_quota("rq", {"requests.cpu": "1"})
    code, out = simulate(queue("c1") + quota + pg("plain", {"cpu": "4"}) + pg("named", {"requests.cpu": "4"}),
                         "--cycles", "1", conf=conf())
    assert code == 0, out
    assert (phase(out, "default/plain"), phase(out, "default/named")) == ("Inqueue", "Pending")


def test_a_bare_pods_podgroup_is_held_by_a_pods_quota(simulate):
    """A bare pod's PodGroup carries the pod's quota usage (``pods``, ``count/pods``, ``requests.cpu``…);
    with one Running pod charged to a ``pods: 1`` quota, the second pod's PodGroup waits."""
    manifests = (node("n1", cpu="8") + rq("rq", {"pods": "1"})
                 + pod("running", node_name="n1", phase="Running") + pod("waiting"))
    code, out = simulate(manifests, "--cycles", "1", conf=conf(option("gang", "enableJobReady"),
                                                                actions="enqueue, allocate"))
    assert code == 0, out
    assert out["pods"]["default/waiting"]["node"] is None
    assert "pods:{{1 0} {<nil>} 1 DecimalSI}" in quota_events(out)[0]["message"]


def test_a_pod_that_finishes_releases_its_quota(simulate):
    """The quota controller recounts when a pod of the namespace finishes: the 2-cpu pod that ran
    under a 2-cpu quota succeeds after 30 s, and the waiting PodGroup is then let in."""
    manifests = (node("n1", cpu="8") + queue("c1") + rq("rq", {"cpu": "2"})
                 + pod("short", cpu="2", node_name="n1", phase="Running",
                       meta_extra="  labels: {}\n").replace(
                     "annotations: {}", "annotations: {vcsched.io/sim-duration: 30s}")
                 + pg("later", {"cpu": "2"}))
    code, out = simulate(manifests, conf=conf())
    assert code == 0, out
    assert out["pods"]["default/short"]["phase"] == "Succeeded"
    assert phase(out, "default/later") == "Inqueue"
    assert out["resourceQuotas"]["default/rq"]["used"] == {"cpu": "0"}
    assert len(quota_events(out, "default/later")) == 1  # refused while the pod ran


def test_the_api_server_refuses_a_jobs_pod_beyond_the_quota(simulate):
    """Without the plugin, a Job is admitted on its minAvailable alone; the quota admission then refuses
    the pod that would pass ``pods: 1`` (the job controller records FailedCreate), and charges the
    one it lets through."""
    job = """
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j}
spec:
  minAvailable: 1
  schedulerName: volcano
  tasks:
  - name: w
    replicas: 2
    template:
      spec:
        containers: [{name: main, image: busybox, resources: {requests: {cpu: "1"}}}]
"""
    manifests = node("n1", cpu="8") + rq("rq", {"pods": "1"}) + job
    code, out = simulate(manifests, conf="""
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: predicates
""")
    assert code == 0, out
    assert out["jobs"]["default/j"]["pods"]["running"] + out["jobs"]["default/j"]["pods"]["pending"] == 1
    assert out["resourceQuotas"]["default/rq"]["used"] == {"pods": "1"}


def test_scopes_select_the_pods_a_quota_counts(simulate):
    """A ``BestEffort`` quota counts only pods without cpu or memory requests; a ``PriorityClass In``
    scope only pods of those classes."""
    pc = "\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: gold}\nvalue: 100\n"
    manifests = (node("n1", cpu="8") + pc
                 + rq("be", {"pods": "9"}, extra="  scopes: [BestEffort]")
                 + rq("gold", {"pods": "9", "cpu": "9"},
                      extra="  scopeSelector: {matchExpressions: [{scopeName: PriorityClass, operator: In, "
                            "values: [gold]}]}")
                 + pod("empty", cpu="", node_name="n1", phase="Running")
                 + pod("g", cpu="2", node_name="n1", phase="Running", spec_extra="  priorityClassName: gold")
                 + pod("plain", node_name="n1", phase="Running"))
    code, out = simulate(manifests, "--cycles", "1", conf=conf())
    assert code == 0, out
    assert out["resourceQuotas"]["default/be"]["used"] == {"pods": "1"}
    assert out["resourceQuotas"]["default/gold"]["used"] == {"cpu": "2", "pods": "1"}


# -- input the API server refuses ------------------------------------------------------------------


@pytest.mark.parametrize(("doc", "field", "message"), [
    (rq("rq", {"gpus": "1"}), "spec.hard.gpus", "must be a standard resource type or fully qualified"),
    (rq("rq", {"storage": "1"}), "spec.hard.storage", "must be a standard resource for quota"),
    (rq("rq", {"cpu": "-1"}), "spec.hard.cpu", "must be greater than or equal to 0"),
    (rq("rq", {"pods": "1.5"}), "spec.hard.pods", "must be an integer"),
    (rq("rq", {"nvidia.com/gpu": "500m"}), "spec.hard.nvidia.com/gpu", "must be an integer"),
    (rq("rq", {"cpu": "two"}), "spec.hard.cpu", "quantities must match the regular expression"),
    (rq("rq", {"example.com/bad name": "1"}), "spec.hard.example.com/bad name", "name part must consist"),
    (rq("rq", {"cpu": "1"}, extra="  scopes: [Forever]"), "spec.scopes[0]", "unsupported scope"),
    (rq("rq", {"cpu": "1"}, extra="  scopes: [BestEffort]"), "spec.scopes[0]",
     "unsupported scope applied to resource 'cpu'"),
    (rq("rq", {"pods": "1"}, extra="  scopes: [Terminating, NotTerminating]"), "spec.scopes", "conflicting scopes"),
    (rq("rq", {"pods": "1"}, extra="  scopeSelector: {matchExpressions: [{scopeName: BestEffort, operator: In, "
                                   "values: [x]}]}"),
     "spec.scopeSelector.matchExpressions[0].operator", "must be 'Exist' when scope is any of"),
    (rq("rq", {"pods": "1"}, extra="  scopeSelector: {matchExpressions: [{scopeName: PriorityClass, "
                                   "operator: In}]}"),
     "spec.scopeSelector.matchExpressions[0].values", "must be at least one value"),
    (rq("rq", {"pods": "1"}, extra="  scopeSelector: {matchExpressions: [{scopeName: PriorityClass, "
                                   "operator: Exists, values: [a]}]}"),
     "spec.scopeSelector.matchExpressions[0].values", "must be no value"),
    (rq("rq", {"pods": "1"}, extra="  scopeSelector: {matchExpressions: [{scopeName: PriorityClass, "
                                   "operator: Has}]}"),
     "spec.scopeSelector.matchExpressions[0].operator", "not a valid selector operator"),
    (rq("rq", {"pods": "1"}, status="{used: {pods: '-2'}}"), "status.used.pods", "must be greater than or equal to 0"),
])
def test_refused_quotas(simulate, doc, field, message):
    code, err = simulate(node("n1") + doc)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert "document 1" in lines[0] and "ResourceQuota default/rq" in lines[0]
    assert f": {field}: " in lines[0] and message in lines[0]
