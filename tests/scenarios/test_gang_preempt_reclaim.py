"""gangpreempt and gangreclaim end to end through ``vcsched simulate`` (actions/gangpreempt,
actions/gangreclaim and actions/utils in Volcano).

Each Go test of the two actions' packages is reproduced below and named in its docstring; the pure
functions the Go tests call directly (``PickDomainsFromGradients``, the argument parser, the bundle
helpers) are checked as functions, everything else as scenarios.
"""

import pytest

from vcsched.actions.gang_eviction import (
    CLUSTER_TOP_HYPERNODE,
    Bundle,
    BundleType,
    GangEvictionArgs,
    apply_allowed_tasks,
    create_job_bundles,
    pick_domains_from_gradients,
    sort_bundles_for_preempt,
    sort_bundles_for_reclaim,
)
from vcsched.api.job_info import JobInfo
from vcsched.api.queue_info import QueueInfo
from vcsched.api.resource import Resource
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import TaskStatus
from vcsched.conf import parse_conf

from .conftest import node, pod, queue

TIERS = """
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def conf(actions: str, arguments: dict[str, str] | None = None) -> str:
    text = f'actions: "{actions}"\n' + TIERS
    if arguments:
        text += "configurations:\n"
        for action, args in arguments.items():
            text += f"- name: {action}\n  arguments: {{{args}}}\n"
    return text


def priority_class(name: str, value: int) -> str:
    return f"""
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: {name}
value: {value}
"""


CLASSES = priority_class("low", 10) + priority_class("high", 100)


def pc(name: str) -> str:
    return f"  priorityClassName: {name}"


def group(name: str, min_member: int, q: str = "default", cls: str | None = None,
          preemptable: str | None = None) -> str:
    """A PodGroup; ``preemptable``: its ``volcano.sh/preemptable`` annotation, absent when None."""
    ann = f'  annotations: {{volcano.sh/preemptable: "{preemptable}"}}\n' if preemptable is not None else ""
    return f"""
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: {name}
  namespace: default
{ann}spec:
  minMember: {min_member}
  queue: {q}
{pc(cls) if cls else ''}
"""


def running(name: str, grp: str, node_name: str, cpu: str = "1", cls: str | None = None, q: str | None = None) -> str:
    return pod(name, cpu=cpu, group=grp, queue=q, node_name=node_name, phase="Running",
               spec_extra=pc(cls) if cls else "")


def pending(name: str, grp: str, cpu: str = "1", cls: str | None = None, q: str | None = None) -> str:
    return pod(name, cpu=cpu, group=grp, queue=q, spec_extra=pc(cls) if cls else "")


def placed(out, prefix: str) -> list[str]:
    return sorted(k for k, p in out["pods"].items() if k.startswith(f"default/{prefix}") and p["node"])


# -- pure functions the Go tests call directly ---------------------------------------------------------

def test_pick_domains_max_domains_and_dedup():
    """gangpreempt_test.go TestPickDomainsFromGradients_MaxDomainsAndDedup (cap 2) and
    gangreclaim_test.go TestPickDomainsFromGradients_MaxDomainsAndDedup (cap 3)."""
    gradients = [["d1", "d2"], ["d2", "d3"]]
    assert pick_domains_from_gradients(gradients, 2, "") == ["d1", "d2"]
    assert pick_domains_from_gradients(gradients, 3, "") == ["d1", "d2", "d3"]


def test_pick_domains_fallback():
    """gangpreempt_test.go and gangreclaim_test.go TestPickDomainsFromGradients_Fallback."""
    assert pick_domains_from_gradients([], 8, CLUSTER_TOP_HYPERNODE) == [CLUSTER_TOP_HYPERNODE]


@pytest.mark.parametrize("action, max_domains", [("gangpreempt", 3), ("gangreclaim", 5)])
def test_parse_arguments(simulate, action, max_domains):
    """gangpreempt_test.go and gangreclaim_test.go TestParseArguments: maxDomains and allowWholeBundle
    are read from the action's configuration; the conf loads and the action runs."""
    text = conf(f"enqueue, allocate, {action}",
                {action: f"maxDomains: {max_domains}, allowWholeBundle: false"})
    args = GangEvictionArgs.parse(parse_conf(text).action_arguments(action), action, warn=False)
    assert args == GangEvictionArgs(max_domains, False)
    assert GangEvictionArgs.parse(parse_conf(conf(action)).action_arguments(action), action, warn=False) == \
        GangEvictionArgs(8, True)
    code, out = simulate(node("n1") + group("g", 1) + pending("g-0", "g"), conf=text)
    assert code == 0 and placed(out, "g-0") == ["default/g-0"]


@pytest.mark.parametrize("action", ["gangpreempt", "gangreclaim"])
@pytest.mark.parametrize("value", [0, -1])
def test_invalid_max_domains_falls_back_to_default(simulate, action, value):
    """gangpreempt_test.go and gangreclaim_test.go TestParseArguments_InvalidMaxDomainsFallsBackToDefault
    (zero, negative): Volcano warns and uses 8, so the conf is accepted."""
    text = conf(f"enqueue, allocate, {action}", {action: f"maxDomains: {value}"})
    assert GangEvictionArgs.parse(parse_conf(text).action_arguments(action), action, warn=False).max_domains == 8
    code, out = simulate(node("n1") + group("g", 1) + pending("g-0", "g"), conf=text)
    assert code == 0


@pytest.mark.parametrize("action", ["gangpreempt", "gangreclaim"])
@pytest.mark.parametrize("arguments, field", [
    ('maxDomains: "3"', "maxDomains"),
    ("maxDomains: 2.5", "maxDomains"),
    ("allowWholeBundle: maybe", "allowWholeBundle"),
    ("allowWholeBundle: 1", "allowWholeBundle"),
])
def test_bad_arguments_refused(simulate, action, arguments, field):
    """An argument of the wrong type is refused at conf load, naming the action's field."""
    code, err = simulate(node("n1"), conf=conf(f"enqueue, allocate, {action}", {action: arguments}))
    assert code == 2, err
    assert f"configurations[0].arguments.{field}" in err, err
    assert "Traceback" not in err


# -- bundles (actions/utils/bundle_test.go, the cases without sub-groups) ------------------------------

def _task(uid: str, priority: int = 0, role: str = "worker", cpu: int = 1000,
          status: TaskStatus = TaskStatus.Running, job: str = "ns/j") -> TaskInfo:
    from vcsched.api.pod_spec import PodSpec

    return TaskInfo(uid=uid, name=uid, namespace="ns", job=job, status=status, node_name="n1",
                    resreq=Resource(milli_cpu=cpu), priority=priority, role=role, preemptable=True,
                    best_effort=False, creation_timestamp=0.0, spec=PodSpec(), pod={})


def _job(uid: str = "ns/j", min_available: int = 0, tasks: list[TaskInfo] = (), queue_name: str = "",
         task_min: dict[str, int] | None = None, priority: int = 0) -> JobInfo:
    job = JobInfo(uid)
    job.queue, job.min_available, job.priority = queue_name, min_available, priority
    if task_min:
        job.task_min_available = dict(task_min)
        job.task_min_available_total = sum(task_min.values())
    for t in tasks:
        t.job = uid
        job.add_task(t)
    return job


def _bundle(kind: BundleType, job: JobInfo, uid: str, local: int, total: int = 0) -> Bundle:
    return Bundle(kind, job, [_task(uid, cpu=local, job=job.uid)], Resource(milli_cpu=local), Resource(milli_cpu=total))


def test_create_job_bundles_safe_and_whole():
    """bundle_test.go TestCreateJobBundles_SafeAndWhole: 5 ready workers of minAvailable 3 (workers'
    minimum 3): the two of lowest priority are safe, the other three make the whole bundle, which
    costs everything the job holds."""
    tasks = [_task(chr(ord("a") + i), priority=i) for i in range(5)]
    job = _job(min_available=3, tasks=tasks, task_min={"worker": 3})
    bundles = create_job_bundles(job, list(tasks))
    assert [(b.type, [t.uid for t in b.tasks]) for b in bundles] == [
        (BundleType.SAFE, ["a", "b"]), (BundleType.WHOLE, ["c", "d", "e"])]
    assert bundles[0].job_total.milli_cpu == 0 and bundles[1].job_total.milli_cpu == 5000


def test_create_job_bundles_job_not_ready_is_all_safe():
    """bundle_test.go TestCreateJobBundles_JobNotReadyShortCircuitsAllSafe (without its sub-group):
    2 ready of minAvailable 10: the job is broken already, every task is safe."""
    tasks = [_task("a"), _task("b", priority=1)]
    bundles = create_job_bundles(_job(min_available=10, tasks=tasks), list(tasks))
    assert [(b.type, len(b.tasks)) for b in bundles] == [(BundleType.SAFE, 2)]


def test_create_job_bundles_no_task_min_available():
    """bundle_test.go TestCreateJobBundles_NoTaskMinAvailableTreatsAllRolesAsUnconstrained: 4 ready of
    minAvailable 2, no role minimum: 2 safe, 2 whole.  And a role at its minimum keeps its tasks out
    of the safe bundle although the job has a surplus."""
    tasks = [_task(chr(ord("a") + i), priority=i) for i in range(4)]
    bundles = create_job_bundles(_job(min_available=2, tasks=tasks), list(tasks))
    assert [(b.type, len(b.tasks)) for b in bundles] == [(BundleType.SAFE, 2), (BundleType.WHOLE, 2)]
    tasks = [_task("a", role="ps"), _task("b", priority=1), _task("c", priority=2)]
    job = _job(min_available=2, tasks=tasks, task_min={"ps": 1, "worker": 1})
    bundles = create_job_bundles(job, list(tasks))
    assert [(b.type, [t.uid for t in b.tasks]) for b in bundles] == [
        (BundleType.SAFE, ["b"]), (BundleType.WHOLE, ["a", "c"])]


def test_apply_allowed_tasks_whole_atomic_and_safe_shrink():
    """bundle_test.go TestApplyAllowedTasks_WholeAtomicAndSafeShrink."""
    job = _job()
    t1, t2, t3 = _task("t1"), _task("t2"), _task("t3")
    bundles = [Bundle(BundleType.SAFE, job, [t1, t2], Resource(2000), Resource()),
               Bundle(BundleType.WHOLE, job, [t3], Resource(1000), Resource(3000))]
    valid = apply_allowed_tasks(bundles, {"t1", "t3x"})
    assert [(b.type, [t.uid for t in b.tasks], b.local.milli_cpu) for b in valid] == [
        (BundleType.SAFE, ["t1"], 1000)]


def test_sort_bundles_for_preempt_type_priority_and_roi():
    """bundle_test.go TestSortBundlesForPreempt_TypePriorityAndROI."""
    low, high = _job("ns/low", priority=1), _job("ns/high", priority=10)
    safe = _bundle(BundleType.SAFE, high, "s1", 1000)
    whole_low_roi = _bundle(BundleType.WHOLE, low, "w1", 1000, 4000)
    whole_high_roi = _bundle(BundleType.WHOLE, low, "w2", 1000, 2000)
    bundles = [whole_low_roi, safe, whole_high_roi]
    sort_bundles_for_preempt(bundles, Resource(1000), lambda l, r: l.priority < r.priority)
    assert [b.tasks[0].uid for b in bundles] == ["s1", "w2", "w1"]


def test_sort_bundles_for_preempt_uses_victim_job_order():
    """bundle_test.go TestSortBundlesForPreempt_UsesVictimJobOrder."""
    a = _bundle(BundleType.WHOLE, _job("ja"), "a", 1000, 2000)
    b = _bundle(BundleType.WHOLE, _job("jb"), "b", 1000, 2000)
    bundles = [a, b]
    sort_bundles_for_preempt(bundles, Resource(1000), lambda l, r: l.uid > r.uid)
    assert bundles[0].tasks[0].uid == "b"


def test_sort_bundles_for_reclaim_uses_queue_order_then_roi():
    """bundle_test.go TestSortBundlesForReclaim_UsesQueueOrderThenROI."""
    queues = {q: QueueInfo(q, q, 0.0) for q in ("qa", "qb")}
    a = _bundle(BundleType.WHOLE, _job("ja", queue_name="qa"), "a", 1000, 4000)
    b = _bundle(BundleType.WHOLE, _job("jb", queue_name="qb"), "b", 1000, 2000)
    bundles = [b, a]
    sort_bundles_for_reclaim(bundles, Resource(1000), lambda l, r: l.name < r.name, queues)
    assert bundles[0].tasks[0].uid == "a"
    c = _bundle(BundleType.WHOLE, _job("jc", queue_name="qc"), "c", 1000, 4000)
    d = _bundle(BundleType.WHOLE, _job("jd", queue_name="qd"), "d", 1000, 2000)
    bundles = [c, d]
    sort_bundles_for_reclaim(bundles, Resource(1000), None, queues)
    assert bundles[0].tasks[0].uid == "d"


def test_sort_bundles_for_reclaim_deterministic_tie_breaker():
    """bundle_test.go TestSortBundlesForReclaim_DeterministicTieBreaker."""
    queues = {"q": QueueInfo("q", "q", 0.0)}
    a = _bundle(BundleType.WHOLE, _job("ja", queue_name="q"), "a", 1000, 2000)
    b = _bundle(BundleType.WHOLE, _job("jb", queue_name="q"), "b", 1000, 2000)
    bundles = [b, a]
    sort_bundles_for_reclaim(bundles, Resource(1000), None, queues)
    assert [x.tasks[0].uid for x in bundles] == ["a", "b"]


# -- gangpreempt_test.go ---------------------------------------------------------------------------

def one_victim(allow_whole: bool | None = None, preemptable: str | None = None) -> tuple[str, str]:
    """A 1-CPU node held by a low-priority job's only task (minMember 1: a whole bundle); a
    high-priority job of the same queue waits for it."""
    manifests = (CLASSES + node("n1", cpu="1")
                 + group("victim", 1, cls="low", preemptable=preemptable)
                 + running("victim-0", "victim", "n1", cls="low")
                 + group("preemptor", 1, cls="high") + pending("preemptor-0", "preemptor", cls="high"))
    args = {"gangpreempt": f"allowWholeBundle: {str(allow_whole).lower()}"} if allow_whole is not None else None
    return manifests, conf("enqueue, allocate, gangpreempt", args)


@pytest.mark.parametrize("allow_whole", [False, True])
def test_gangpreempt_respects_allow_whole_bundle(simulate, allow_whole):
    """gangpreempt_test.go TestSelectDomainVictims_RespectAllowWholeBundle: the victim job would fall
    below its minAvailable, so its task is only in a whole bundle: taken when allowWholeBundle is true,
    never when false."""
    manifests, text = one_victim(allow_whole)
    code, out = simulate(manifests, conf=text)
    assert code == 0
    if allow_whole:
        assert out["evicted"] == ["default/victim-0"]
        assert out["pods"]["default/preemptor-0"]["node"] == "n1"
    else:
        assert out["evicted"] == []
        assert out["pods"]["default/preemptor-0"]["node"] is None


def test_gangpreempt_respects_victim_job_preemptable(simulate):
    """gangpreempt_test.go TestSelectDomainVictims_RespectVictimJobPreemptable: a PodGroup annotated
    ``volcano.sh/preemptable: "false"`` gives no victims."""
    manifests, text = one_victim(preemptable="false")
    code, out = simulate(manifests, conf=text)
    assert code == 0 and out["evicted"] == []
    assert out["pods"]["default/preemptor-0"]["node"] is None


def test_gangpreempt_allows_victim_job_when_preemptable_unset(simulate):
    """gangpreempt_test.go TestSelectDomainVictims_AllowVictimJobWhenPreemptableUnset: a PodGroup that
    says nothing about preemptability may be preempted (its JobInfo says false)."""
    manifests, text = one_victim()
    code, out = simulate(manifests, conf=text)
    assert code == 0 and out["evicted"] == ["default/victim-0"]
    assert out["pods"]["default/preemptor-0"]["node"] == "n1"


def test_gangpreempt_takes_no_equal_or_higher_priority_victim(simulate):
    """selectDomainBundles: only jobs of a lower priority than the preemptor's are candidates."""
    manifests = (CLASSES + node("n1", cpu="1") + group("victim", 1, cls="high")
                 + running("victim-0", "victim", "n1", cls="high")
                 + group("preemptor", 1, cls="high") + pending("preemptor-0", "preemptor", cls="high"))
    code, out = simulate(manifests, conf=conf("enqueue, allocate, gangpreempt"))
    assert code == 0 and out["evicted"] == []


def test_gangpreempt_takes_safe_bundles_before_whole_ones(simulate):
    """The victim job (minAvailable 2, 3 running) can lose one task and stay ready: a preemptor
    needing 1 CPU takes only that one (the job keeps running); one needing 2 CPU takes the safe task,
    then the whole bundle (the job is broken)."""
    def cluster(need: int) -> str:
        docs = CLASSES + node("n1", cpu="3") + group("low", 2, cls="low")
        docs += "".join(running(f"low-{i}", "low", "n1", cls="low") for i in range(3))
        docs += group("high", need, cls="high")
        docs += "".join(pending(f"high-{i}", "high", cls="high") for i in range(need))
        return docs

    code, out = simulate(cluster(1), conf=conf("enqueue, allocate, gangpreempt"))
    assert code == 0 and len(out["evicted"]) == 1
    assert len(placed(out, "low")) == 2 and out["podgroups"]["default/low"]["phase"] == "Running"
    assert placed(out, "high") == ["default/high-0"]

    code, out = simulate(cluster(2), conf=conf("enqueue, allocate, gangpreempt"))
    assert code == 0 and len(out["evicted"]) == 3
    assert placed(out, "low") == [] and placed(out, "high") == ["default/high-0", "default/high-1"]


@pytest.mark.parametrize("node_cpu, high_placed, low_evicted", [("4", 3, 3), ("2", 0, 0)])
def test_gangpreempt_places_the_whole_gang_or_none_where_preempt_places_its_minimum(
        simulate, node_cpu, high_placed, low_evicted):
    """The difference from plain preempt.  A high-priority job of three 1-CPU tasks with minAvailable 1
    waits on a node full of a low-priority job (minAvailable 1).  preempt evicts task by task until
    the job is no longer starving: one victim, one task placed, two left pending.  gangpreempt plans
    for every pending task at once: on a 4-CPU node three victims go and all three tasks run; on a
    2-CPU node the three cannot fit whatever is evicted, so nothing is evicted at all."""
    n = int(node_cpu)
    docs = CLASSES + node("n1", cpu=node_cpu) + group("low", 1, cls="low")
    docs += "".join(running(f"low-{i}", "low", "n1", cls="low") for i in range(n))
    docs += group("high", 1, cls="high") + "".join(pending(f"high-{i}", "high", cls="high") for i in range(3))

    code, out = simulate(docs, conf=conf("enqueue, allocate, preempt"))
    assert code == 0
    assert len(out["evicted"]) == 1 and len(placed(out, "high")) == 1

    code, out = simulate(docs, conf=conf("enqueue, allocate, gangpreempt"))
    assert code == 0
    assert len(out["evicted"]) == low_evicted and len(placed(out, "high")) == high_placed
    assert len(placed(out, "low")) == n - low_evicted


def test_gangpreempt_evicts_nothing_when_the_freed_room_is_fragmented(simulate):
    """Enough is freed in sum (4 CPU for two 2-CPU tasks) but on a 3-CPU and a 1-CPU node: the dry run
    places one task, not both, so the plan fails and nothing is evicted.  preempt, for the job's
    minimum of one, evicts the 3-CPU victim and places one task."""
    docs = (CLASSES + node("n1", cpu="3") + node("n2", cpu="1") + group("low", 1, cls="low")
            + running("low-0", "low", "n1", cpu="3", cls="low") + running("low-1", "low", "n2", cls="low")
            + group("high", 1, cls="high") + "".join(pending(f"high-{i}", "high", cpu="2", cls="high") for i in range(2)))
    code, out = simulate(docs, conf=conf("enqueue, allocate, gangpreempt"))
    assert code == 0 and out["evicted"] == [] and placed(out, "high") == []
    code, out = simulate(docs, conf=conf("enqueue, allocate, preempt"))
    assert code == 0 and out["evicted"] == ["default/low-0"] and placed(out, "high") == ["default/high-0"]


def test_gangpreempt_safe_bundle_keeps_the_victims_min_sub_groups(simulate):
    """bundle.go's SubJob rule (TestCreateJobBundles_SubJobGroupSlackCapsSafe, end to end): the victim
    job (minMember 2) is two SubJobs of two pods (subGroupSize 2, minSubGroups 1).  It can lose two
    pods and stay ready only if both come from one SubJob: the second-lowest pod (UID order) is in the
    other SubJob, so the safe bundle is the first SubJob's two pods, and the job keeps running on the
    other.  Without the policy the two lowest pods would go, one of each SubJob."""
    policy = ("  subGroupPolicy:\n  - name: part\n    subGroupSize: 2\n    minSubGroups: 1\n"
              "    matchLabelKeys: [idx]")
    docs = CLASSES + node("n1", cpu="4") + group("low", 2, cls="low").rstrip() + "\n" + policy + "\n"
    for uid, name, idx in (("u1", "low-a0", 0), ("u2", "low-b0", 1), ("u3", "low-a1", 0), ("u4", "low-b1", 1)):
        docs += pod(name, group="low", node_name="n1", phase="Running", spec_extra=pc("low"),
                    meta_extra=f"  uid: {uid}\n  labels: {{idx: \"{idx}\"}}")
    docs += group("high", 2, cls="high") + "".join(pending(f"high-{i}", "high", cls="high") for i in range(2))
    code, out = simulate(docs, conf=conf("enqueue, allocate, gangpreempt"))
    assert code == 0, out
    assert sorted(out["evicted"]) == ["default/low-a0", "default/low-a1"]
    assert placed(out, "low") == ["default/low-b0", "default/low-b1"]
    assert out["podgroups"]["default/low"]["phase"] == "Running"
    assert placed(out, "high") == ["default/high-0", "default/high-1"]


def hypernode(name: str, *nodes: str) -> str:
    members = "".join(f"  - type: Node\n    selector: {{exactMatch: {{name: {n}}}}}\n" for n in nodes)
    return f"""
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata:
  name: {name}
spec:
  tier: 1
  members:
{members}"""


TOPOLOGY_TIERS = TIERS.replace("  - name: nodeorder", "  - name: nodeorder\n  - name: network-topology-aware")


@pytest.mark.parametrize("n4_free, evicted, high_nodes", [
    (True, ["default/low3-0"], ["n3", "n4"]),
    (False, [], [None, None]),
])
def test_gangpreempt_places_a_hard_topology_job_within_one_hypernode(simulate, n4_free, evicted, high_nodes):
    """Domains and the dry run follow the job's hard network topology (tier 1: switch s0 holds n1 and
    n2, s1 holds n3 and n4; 2 CPU each).  The high job needs two 2-CPU pods under one switch.  n1 is
    idle, n2 runs a high-priority pod, n3 a low-priority one; when n4 is idle, evicting n3's pod lets
    the job in under s1.  When n4 is busy too, the cluster has room for both pods (n1, and n3 once
    evicted) but no switch does, and nothing is evicted."""
    docs = (CLASSES + hypernode("s0", "n1", "n2") + hypernode("s1", "n3", "n4")
            + "".join(node(f"n{i}", cpu="2") for i in range(1, 5))
            + group("busy2", 1, cls="high") + running("busy2-0", "busy2", "n2", cpu="2", cls="high")
            + group("low3", 1, cls="low") + running("low3-0", "low3", "n3", cpu="2", cls="low"))
    if not n4_free:
        docs += group("busy4", 1, cls="high") + running("busy4-0", "busy4", "n4", cpu="2", cls="high")
    docs += group("high", 2, cls="high").rstrip() + "\n  networkTopology: {mode: hard, highestTierAllowed: 1}\n"
    docs += "".join(pending(f"high-{i}", "high", cpu="2", cls="high") for i in range(2))
    code, out = simulate(docs, conf='actions: "enqueue, allocate, gangpreempt"\n' + TOPOLOGY_TIERS)
    assert code == 0, out
    assert out["evicted"] == evicted
    assert sorted(out["pods"][f"default/high-{i}"]["node"] or "" for i in range(2)) == \
        sorted(n or "" for n in high_nodes)


@pytest.mark.parametrize("max_domains, evicted", [(1, []), (2, ["default/low3-0"])])
def test_gangpreempt_max_domains_caps_the_hypernodes_tried(simulate, max_domains, evicted):
    """``maxDomains``: the eviction gradients give s0 then s1; with one domain only s0 is tried, where
    no victim helps (n2's pod has the job's priority), and nothing is evicted; with two, s1 is tried
    too and the job goes there."""
    docs = (CLASSES + hypernode("s0", "n1", "n2") + hypernode("s1", "n3", "n4")
            + "".join(node(f"n{i}", cpu="2") for i in range(1, 5))
            + group("busy2", 1, cls="high") + running("busy2-0", "busy2", "n2", cpu="2", cls="high")
            + group("low3", 1, cls="low") + running("low3-0", "low3", "n3", cpu="2", cls="low"))
    docs += group("high", 2, cls="high").rstrip() + "\n  networkTopology: {mode: hard, highestTierAllowed: 1}\n"
    docs += "".join(pending(f"high-{i}", "high", cpu="2", cls="high") for i in range(2))
    text = ('actions: "enqueue, allocate, gangpreempt"\n' + TOPOLOGY_TIERS
            + f"configurations:\n- name: gangpreempt\n  arguments: {{maxDomains: {max_domains}}}\n")
    code, out = simulate(docs, conf=text)
    assert code == 0, out
    assert out["evicted"] == evicted


def test_gangpreempt_only_within_the_queue(simulate):
    """Victims come from the preemptor's own queue only."""
    docs = (CLASSES + queue("qa") + queue("qb") + node("n1", cpu="1") + group("victim", 1, q="qb", cls="low")
            + running("victim-0", "victim", "n1", cls="low")
            + group("preemptor", 1, q="qa", cls="high") + pending("preemptor-0", "preemptor", cls="high"))
    code, out = simulate(docs, conf=conf("enqueue, allocate, gangpreempt"))
    assert code == 0 and out["evicted"] == []


def test_gangpreempt_conformance_protects_critical_pods(simulate):
    """conformance's UnifiedEvictableFn: a system-cluster-critical pod is never a victim."""
    docs = (CLASSES + node("n1", cpu="1") + group("victim", 1, cls="low")
            + running("victim-0", "victim", "n1", cls="system-cluster-critical")
            + group("preemptor", 1, cls="high") + pending("preemptor-0", "preemptor", cls="high"))
    code, out = simulate(docs, conf=conf("enqueue, allocate, gangpreempt"))
    assert code == 0 and out["evicted"] == []


# -- gangreclaim_test.go ---------------------------------------------------------------------------

def reclaim_cluster(victim_preemptable: str | None = None, other_reclaimable: bool = False) -> str:
    """A 2-CPU node held by a job of q2 (reclaimable) and one of q3 (reclaimable per argument); q1
    (weight 2: it deserves 1 CPU) has a job waiting for 1 CPU."""
    return (queue("q1", weight=2) + queue("q2") + queue("q3", extra=f"  reclaimable: {str(other_reclaimable).lower()}")
            + node("n1", cpu="2")
            + group("victim", 1, q="q2", preemptable=victim_preemptable) + running("victim-0", "victim", "n1")
            + group("other", 1, q="q3") + running("other-0", "other", "n1")
            + group("reclaimer", 1, q="q1") + pending("reclaimer-0", "reclaimer"))


def test_gangreclaim_reclaimable_cross_queue_only(simulate):
    """gangreclaim_test.go TestSelectDomainVictims_ReclaimableCrossQueueOnly: of the two other queues'
    tasks only the reclaimable queue's is a victim."""
    code, out = simulate(reclaim_cluster(), conf=conf("enqueue, allocate, gangreclaim"))
    assert code == 0
    assert out["evicted"] == ["default/victim-0"]
    assert out["pods"]["default/reclaimer-0"]["node"] == "n1"
    assert out["pods"]["default/other-0"]["node"] == "n1"


def test_gangreclaim_respects_victim_job_preemptable(simulate):
    """gangreclaim_test.go TestSelectDomainVictims_RespectVictimJobPreemptable."""
    code, out = simulate(reclaim_cluster(victim_preemptable="false"), conf=conf("enqueue, allocate, gangreclaim"))
    assert code == 0 and out["evicted"] == []
    assert out["pods"]["default/reclaimer-0"]["node"] is None


def test_gangreclaim_allows_victim_job_when_preemptable_unset(simulate):
    """gangreclaim_test.go TestSelectDomainVictims_AllowVictimJobWhenPreemptableUnset (and a
    PodGroup that says ``"true"`` likewise)."""
    for value in (None, "true"):
        code, out = simulate(reclaim_cluster(victim_preemptable=value), conf=conf("enqueue, allocate, gangreclaim"))
        assert code == 0 and out["evicted"] == ["default/victim-0"], value
        assert out["pods"]["default/reclaimer-0"]["node"] == "n1"


def test_gangreclaim_never_within_the_queue(simulate):
    """The reclaimer's own queue gives no victims, however low their priority."""
    docs = (CLASSES + queue("q1") + queue("q2") + node("n1", cpu="1") + group("victim", 1, q="q1", cls="low")
            + running("victim-0", "victim", "n1", cls="low")
            + group("reclaimer", 1, q="q1", cls="high") + pending("reclaimer-0", "reclaimer", cls="high"))
    code, out = simulate(docs, conf=conf("enqueue, allocate, gangreclaim"))
    assert code == 0 and out["evicted"] == []


@pytest.mark.parametrize("q2_weight, q2_placed, q1_evicted", [(3, 3, 3), (1, 0, 0)])
def test_gangreclaim_places_the_whole_gang_or_none_where_reclaim_places_its_minimum(
        simulate, q2_weight, q2_placed, q1_evicted):
    """The difference from plain reclaim.  q1 holds a 4-CPU node with one job (minAvailable 1); q2's
    job of three 1-CPU tasks (minAvailable 1) waits.  reclaim takes back task by task until the job
    is no longer starving: one victim, one task placed.  gangreclaim asks for the three at once: with
    weight 3, q2 deserves 3 CPU, three victims go and the whole job runs; with weight 1 it deserves 2,
    the queue may not take the three (proportion's preemptive), and nothing is evicted."""
    docs = queue("q1") + queue("q2", weight=q2_weight) + node("n1", cpu="4") + group("a", 1, q="q1")
    docs += "".join(running(f"a-{i}", "a", "n1") for i in range(4))
    docs += group("b", 1, q="q2") + "".join(pending(f"b-{i}", "b") for i in range(3))

    code, out = simulate(docs, conf=conf("enqueue, allocate, reclaim"))
    assert code == 0
    assert len(out["evicted"]) == 1 and len(placed(out, "b")) == 1

    code, out = simulate(docs, conf=conf("enqueue, allocate, gangreclaim"))
    assert code == 0
    assert len(out["evicted"]) == q1_evicted and len(placed(out, "b")) == q2_placed
    assert len(placed(out, "a")) == 4 - q1_evicted


# -- with the capacity plugin: its UnifiedEvictableFn and PreemptiveFn ----------------------------------

# capacity votes in the first tier: UnifiedEvictable, as Preemptable, stops at the first tier with a
# verdict, and priority, gang and conformance permit every candidate of a gang reclaim
CAPACITY_CONF = """
actions: "enqueue, allocate, gangreclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: capacity
- plugins:
  - name: predicates
  - name: nodeorder
"""


def capacity_cluster(qa_guarantee: str = "", qb_deserved: str = "3", qa_deserved_cpu: str = "1") -> str:
    """qa (deserved ``qa_deserved_cpu`` CPU and 3Gi; guaranteed ``qa_guarantee`` of memory) holds a 4-CPU node with one job of
    four 1-CPU/1Gi tasks (minAvailable 1); qb (deserved ``qb_deserved`` CPU and as many Gi) has a job
    of three such tasks waiting."""
    guarantee = f"  guarantee: {{resource: {{memory: {qa_guarantee}}}}}\n" if qa_guarantee else ""
    docs = (queue("qa", extra=f"  deserved: {{cpu: \"{qa_deserved_cpu}\", memory: 3Gi}}\n{guarantee}")
            + queue("qb", extra=f"  deserved: {{cpu: \"{qb_deserved}\", memory: {qb_deserved}Gi}}")
            + node("n1", cpu="4", memory="16Gi") + group("a", 1, q="qa"))
    docs += "".join(running(f"a-{i}", "a", "n1") for i in range(4))
    docs += group("b", 1, q="qb") + "".join(pending(f"b-{i}", "b") for i in range(3))
    return docs


@pytest.mark.parametrize("qa_deserved_cpu, evicted", [("1", 3), ("2", 0)])
def test_gangreclaim_capacity_takes_the_queue_down_to_deserved(simulate, qa_deserved_cpu, evicted):
    """capacity's UnifiedEvictableFn (GangReclaim): qa's tasks are victims while qa is above its
    deserved on some dimension of theirs.  Deserving 1 CPU, qa gives three and qb's three tasks run;
    deserving 2 CPU it gives two, not enough, and nothing is evicted."""
    code, out = simulate(capacity_cluster(qa_deserved_cpu=qa_deserved_cpu), conf=CAPACITY_CONF)
    assert code == 0, out
    assert len(out["evicted"]) == evicted and len(placed(out, "a")) == 4 - evicted
    assert len(placed(out, "b")) == evicted


@pytest.mark.parametrize("guarantee, evicted", [("", 3), ("3Gi", 0)])
def test_gangreclaim_capacity_keeps_the_victim_queue_guarantee(simulate, guarantee, evicted):
    """capacity's UnifiedEvictableFn keeps qa at its guarantee: without one, three of qa's tasks go
    (qa stays above its deserved CPU until then); with 3Gi guaranteed only one may (qa holds 4Gi), not
    enough for the three tasks, and nothing is evicted."""
    code, out = simulate(capacity_cluster(qa_guarantee=guarantee), conf=CAPACITY_CONF)
    assert code == 0, out
    assert len(out["evicted"]) == evicted and len(placed(out, "b")) == evicted


def test_gangreclaim_asks_preemptive_for_all_pending_tasks_at_once(simulate):
    """reclaimJobInDomains asks ``Preemptive`` for the job's pending tasks together: with qb deserving
    2 CPU and 2Gi, three 1-CPU/1Gi tasks are over it on every dimension, and capacity says no (its
    allocatable, by capability, would have let each task in)."""
    code, out = simulate(capacity_cluster(qb_deserved="2"), conf=CAPACITY_CONF)
    assert code == 0, out
    assert out["evicted"] == [] and placed(out, "b") == []
