"""preempt and reclaim end to end through ``vcsched simulate`` (spec/framework.md §7.4, §7.5)."""

import pytest

from .conftest import node, pod, podgroup, queue

CONF = """
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""

# gang votes on victims; drf does not (so tier 1 alone decides)
GANG_CONF = """
actions: "enqueue, allocate, preempt, backfill"
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


def priority_class(name: str, value: int) -> str:
    return f"""
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: {name}
value: {value}
"""


CLASSES = priority_class("low", 10) + priority_class("high", 1000)


def pc(name: str) -> str:
    return f"  priorityClassName: {name}"


def full_node_with_low_job() -> str:
    return (CLASSES + node("n1")
            + podgroup("low", 1, extra=pc("low"))
            + pod("low-0", cpu="2", group="low", node_name="n1", phase="Running", spec_extra=pc("low"))
            + pod("low-1", cpu="2", group="low", node_name="n1", phase="Running", spec_extra=pc("low"))
            + podgroup("high", 1, extra=pc("high"))
            + pod("high-0", cpu="2", group="high", spec_extra=pc("high")))


def test_priority_preemption_inside_a_queue_binds_in_a_later_cycle(simulate):
    code, out = simulate(full_node_with_low_job(), "--cycles", "1", conf=CONF)
    assert code == 0
    # cycle 1: the victim is evicted (and gone), the preemptor only pipelined onto what it releases
    assert out["evicted"] == ["default/low-1"]
    assert "default/low-1" not in out["pods"]
    assert out["pods"]["default/high-0"]["node"] is None
    assert "once resource is released" in out["pods"]["default/high-0"]["reason"]

    code, out = simulate(full_node_with_low_job(), conf=CONF)
    assert code == 0
    assert out["evicted"] == ["default/low-1"]
    assert out["pods"]["default/high-0"]["node"] == "n1"
    assert out["pods"]["default/high-0"]["phase"] == "Running"
    assert out["pods"]["default/low-0"]["node"] == "n1"


def test_without_the_preempt_action_nothing_is_evicted(simulate):
    code, out = simulate(full_node_with_low_job())
    assert code == 0
    assert out["evicted"] == []
    assert out["pods"]["default/high-0"]["node"] is None


@pytest.mark.parametrize("victim", [
    pod("sys-0", cpu="4", group="sys", ns="kube-system", node_name="n1", phase="Running", spec_extra=pc("low"))
    + podgroup("sys", 1, ns="kube-system", extra=pc("low")),
    pod("crit-0", cpu="4", group="crit", node_name="n1", phase="Running", spec_extra=pc("system-cluster-critical"))
    + podgroup("crit", 1, extra=pc("low")),
    pod("crit-0", cpu="4", group="crit", node_name="n1", phase="Running", spec_extra=pc("system-node-critical"))
    + podgroup("crit", 1, extra=pc("low")),
])
def test_conformance_protects_the_only_candidates(simulate, victim):
    manifests = (CLASSES + node("n1") + victim
                 + podgroup("high", 1, extra=pc("high")) + pod("high-0", cpu="2", group="high", spec_extra=pc("high")))
    code, out = simulate(manifests, conf=CONF)
    assert code == 0
    assert out["evicted"] == []
    assert out["pods"]["default/high-0"]["node"] is None
    # allocate skips it: the queue's deserved share is full (proportion's allocatable; no fit error is recorded)
    assert out["pods"]["default/high-0"]["reason"].endswith("Pending: 1 Unschedulable")


def reclaim_cluster(qa_extra: str = "") -> str:
    docs = queue("qa", extra=qa_extra) + queue("qb") + node("n1") + node("n2")
    for i in range(8):
        docs += podgroup(f"a{i}", 1, queue="qa")
        docs += pod(f"a{i}-0", cpu="1", group=f"a{i}", node_name=f"n{1 + i % 2}", phase="Running")
    for i in range(6):
        docs += podgroup(f"b{i}", 1, queue="qb") + pod(f"b{i}-0", cpu="1", group=f"b{i}")
    return docs


def placed(out, prefix: str) -> list[str]:
    return sorted(k for k, p in out["pods"].items() if k.startswith(f"default/{prefix}") and p["node"])


def test_reclaim_from_an_overused_queue_down_to_its_deserved_share(simulate):
    code, out = simulate(reclaim_cluster(), conf=CONF)
    assert code == 0
    # 8 CPU and two queues of weight 1: each deserves 4 CPU; qa held all 8
    assert len(out["evicted"]) == 4 and all(k.startswith("default/a") for k in out["evicted"])
    assert len(placed(out, "a")) == 4
    assert len(placed(out, "b")) == 4
    # and no further: the two qb pods beyond its share stay pending, nothing more is evicted
    assert out["queues"]["qa"]["allocated"]["cpu"] == "4"
    assert out["queues"]["qb"]["allocated"]["cpu"] == "4"


def test_a_queue_that_is_not_reclaimable_is_left_alone(simulate):
    code, out = simulate(reclaim_cluster(qa_extra="  reclaimable: false"), conf=CONF)
    assert code == 0
    assert out["evicted"] == []
    assert len(placed(out, "a")) == 8 and placed(out, "b") == []


def gang_victim_cluster() -> str:
    docs = CLASSES + node("n1", cpu="3") + podgroup("low", 2, extra=pc("low"))
    for i in range(3):
        docs += pod(f"low-{i}", cpu="1", group="low", node_name="n1", phase="Running", spec_extra=pc("low"))
    for i in range(2):
        docs += podgroup(f"high{i}", 1, extra=pc("high"))
        docs += pod(f"high{i}-0", cpu="1", group=f"high{i}", spec_extra=pc("high"))
    return docs


def test_a_gang_victim_job_is_not_left_below_min_available(simulate):
    code, out = simulate(gang_victim_cluster(), conf=GANG_CONF)
    assert code == 0
    # gang lets one of the three go (3 ready > minAvailable 2), not a second one
    assert len(out["evicted"]) == 1
    assert len(placed(out, "low")) == 2
    assert out["podgroups"]["default/low"]["phase"] == "Running"
    assert len(placed(out, "high")) == 1


def test_with_gang_victims_switched_off_volcano_breaks_the_gang(simulate):
    # the Helm conf (gang enablePreemptable: false): priority alone decides, as in Volcano
    code, out = simulate(gang_victim_cluster(), conf=CONF)
    assert code == 0
    assert len(out["evicted"]) == 2
    assert len(placed(out, "low")) == 1 and len(placed(out, "high")) == 2


def test_preemption_between_tasks_of_one_job(simulate):
    manifests = (CLASSES + node("n1") + podgroup("j", 2)
                 + pod("j-0", cpu="4", group="j", node_name="n1", phase="Running", spec_extra=pc("low"))
                 + pod("j-1", cpu="4", group="j", spec_extra=pc("high")))
    code, out = simulate(manifests, "--cycles", "1", conf=CONF)
    assert code == 0
    assert out["evicted"] == ["default/j-0"]
    assert "once resource is released" in out["pods"]["default/j-1"]["reason"]


def test_negative_priorities_are_preempted_by_the_default(simulate):
    manifests = (priority_class("batch", -100) + node("n1")
                 + podgroup("low", 1, extra=pc("batch"))
                 + pod("low-0", cpu="4", group="low", node_name="n1", phase="Running", spec_extra=pc("batch"))
                 + podgroup("p", 1) + pod("p-0", cpu="2", group="p"))
    code, out = simulate(manifests, conf=CONF)
    assert code == 0
    assert out["evicted"] == ["default/low-0"]
    assert out["pods"]["default/p-0"]["node"] == "n1"


def test_a_podgroup_naming_a_missing_priority_class_gets_priority_zero(simulate):
    # Volcano resolves a PodGroup's class at snapshot and falls back to the default (0)
    manifests = (node("n1") + podgroup("low", 1, extra=pc("nope"))
                 + pod("low-0", cpu="4", group="low", node_name="n1", phase="Running")
                 + podgroup("p", 1) + pod("p-0", cpu="2", group="p"))
    code, out = simulate(manifests, conf=CONF)
    assert code == 0
    assert out["evicted"] == []  # equal priorities: nothing to preempt


@pytest.mark.parametrize("manifests, expected", [
    (node("n1") + pod("p", spec_extra=pc("nope")),
     "(Pod default/p): spec.priorityClassName: no PriorityClass with name nope was found"),
    (CLASSES + node("n1") + pod("p", spec_extra=pc("high") + "\n  priority: 5"),
     "(Pod default/p): spec.priority: the integer value of priority (5) must not be provided in pod spec; "
     "priority admission controller computed 1000 from the given PriorityClass name"),
    (node("n1") + pod("p", spec_extra="  priority: 7"),
     "spec.priority: the integer value of priority (7) must not be provided in pod spec; "
     "priority admission controller computed 0"),
    (node("n1") + pod("p", spec_extra="  priority: 99999999999"), "(Pod default/p): spec.priority"),
    (priority_class("huge", 2000000000), "(PriorityClass huge): value: maximum allowed value of a user defined priority"),
    (priority_class("huger", 2**31), "(PriorityClass huger): value"),
])
def test_bad_priorities_exit_2_naming_the_field(simulate, manifests, expected):
    code, err = simulate(manifests, conf=CONF)
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert expected in err


def test_a_vgpu_pod_preempts_a_lower_priority_vgpu_pod_on_a_full_gpu(simulate):
    from .test_deviceshare import A100, gpu_node, ids, mem, vgpu_pod

    preempt_conf = CONF.replace("  - name: binpack\n", """  - name: binpack
  - name: deviceshare
    arguments: {deviceshare.VGPUEnable: true}
""")
    low = {"volcano.sh/vgpu-ids-new": "GPU-a,NVIDIA,30000,0:", "scheduling.k8s.io/group-name": "low"}
    # the GPU has room for another pod but not for 20000 MiB more: only the eviction makes room
    manifests = (CLASSES + gpu_node("n1", [("GPU-a", 10, 40960, A100)])
                 + podgroup("low", 1, extra=pc("low"))
                 + vgpu_pod("low-0", mem(30000, 1), annotations=low, node_name="n1")
                 .replace("spec:\n", "spec:\n" + pc("low") + "\n", 1)
                 + podgroup("high", 1, extra=pc("high"))
                 + vgpu_pod("high-0", mem(20000, 1), group="high").replace("spec:\n", "spec:\n" + pc("high") + "\n", 1))
    code, out = simulate(manifests, conf=preempt_conf)
    assert code == 0, out
    assert out["evicted"] == ["default/low-0"]
    assert out["pods"]["default/high-0"]["node"] == "n1"
    assert ids(out, "high-0") == "GPU-a,NVIDIA,20000,0:"
    (gpu,) = out["nodes"]["n1"]["devices"]
    assert gpu["pods"] == ["default/high-0"]


def _role_worker(name: str, extra: str = "") -> str:
    """A 2-CPU pod of the high-priority PodGroup ``high`` with role ``worker`` (``volcano.sh/task-spec``)."""
    return pod(name, cpu="2", memory="0", group="high", spec_extra=pc("high") + extra).replace(
        "annotations: {", "annotations: {volcano.sh/task-spec: worker, ")


def error_cache_cluster() -> str:
    """n1 (tainted) is full of a low-priority pod; n2 has room for one worker beside a pod of equal priority.

    allocate places worker-0 on n2, cannot afford worker-1 (the queue's share), and discards the gang, so
    neither records a fit error.  preempt: worker-0, which does not tolerate the taint, fails n1 and is
    pipelined on n2; worker-1, which tolerates it, can make room only on n1, by evicting low-0.
    """
    taint = "spec:\n  taints: [{key: dedicated, value: x, effect: NoSchedule}]"
    tolerate = "\n  tolerations: [{key: dedicated, operator: Exists}]"
    return (CLASSES + node("n1", cpu="2", extra=taint) + node("n2")
            + podgroup("low", 1, extra=pc("low"))
            + pod("low-0", cpu="2", memory="0", group="low", node_name="n1", phase="Running", spec_extra=pc("low"))
            + podgroup("keep", 1, extra=pc("high"))
            + pod("keep-0", cpu="2", memory="0", group="keep", node_name="n2", phase="Running", spec_extra=pc("high"))
            + podgroup("high", 2, extra=pc("high"))
            + _role_worker("high-worker-0") + _role_worker("high-worker-1", tolerate))


def error_cache_conf(preempt_cache: bool) -> str:
    # allocate's own cache would hand worker-0's taint failure to worker-1 as an unresolvable fit error
    return CONF + f"""configurations:
- name: allocate
  arguments: {{predicateErrorCacheEnable: false}}
- name: preempt
  arguments: {{predicateErrorCacheEnable: {str(preempt_cache).lower()}}}
"""


def test_preempt_error_cache_keeps_a_node_failed_for_the_rest_of_the_role(simulate):
    """Volcano's preempt keeps one predicate helper for the action: worker-0's failure on n1 is
    cached for job high, role worker, so worker-1 never looks at n1; the gang cannot be pipelined
    and nothing is evicted (issue 16)."""
    code, out = simulate(error_cache_cluster(), conf=error_cache_conf(True))
    assert code == 0
    assert out["evicted"] == []
    assert placed(out, "high") == []


def test_without_the_preempt_error_cache_the_tolerating_worker_preempts(simulate):
    code, out = simulate(error_cache_cluster(), conf=error_cache_conf(False))
    assert code == 0
    assert out["evicted"] == ["default/low-0"]
    assert out["pods"]["default/high-worker-0"]["node"] == "n2"
    assert out["pods"]["default/high-worker-1"]["node"] == "n1"


# -- topology-aware preemption (enableTopologyAwarePreemption, spec/framework.md §7.4.4) --------------

def dry_run_conf(predicates_flags: str = "", arguments: str = "") -> str:
    conf = CONF.replace("  - name: predicates\n", "  - name: predicates\n" + predicates_flags)
    return conf + f"""configurations:
- name: preempt
  arguments: {{enableTopologyAwarePreemption: true{arguments}}}
"""


def test_dry_run_evicts_only_the_victims_it_cannot_reprieve(simulate):
    """low-a (priority 10) is evicted first and is not enough; with low-b (20) gone the preemptor fits.
    Normal preemption stops there and evicts both; the dry run then puts back low-b (the preemptor no
    longer fits) and low-a (it still does), so only low-b goes."""
    manifests = (CLASSES + priority_class("low20", 20) + node("n1", memory="0")
                 + podgroup("low", 1, extra=pc("low"))
                 + pod("low-a", cpu="1", memory="0", group="low", node_name="n1", phase="Running", spec_extra=pc("low"))
                 + podgroup("low20", 1, extra=pc("low20"))
                 + pod("low-b", cpu="3", memory="0", group="low20", node_name="n1", phase="Running",
                       spec_extra=pc("low20"))
                 + podgroup("high", 1, extra=pc("high"))
                 + pod("high-0", cpu="3", memory="0", group="high", spec_extra=pc("high")))
    code, out = simulate(manifests, conf=CONF)
    assert code == 0
    assert sorted(out["evicted"]) == ["default/low-a", "default/low-b"]

    code, out = simulate(manifests, conf=dry_run_conf())
    assert code == 0
    assert out["evicted"] == ["default/low-b"]
    assert out["pods"]["default/high-0"]["node"] == "n1"
    assert out["pods"]["default/low-a"]["node"] == "n1"


def two_full_nodes() -> str:
    """n1 runs a priority-100 pod, n2 a priority-10 one; both are full and score alike."""
    return (CLASSES + priority_class("mid", 100) + node("n1") + node("n2")
            + podgroup("mid", 1, extra=pc("mid"))
            + pod("mid-0", cpu="4", memory="0", group="mid", node_name="n1", phase="Running", spec_extra=pc("mid"))
            + podgroup("low", 1, extra=pc("low"))
            + pod("low-0", cpu="4", memory="0", group="low", node_name="n2", phase="Running", spec_extra=pc("low"))
            + podgroup("high", 1, extra=pc("high"))
            + pod("high-0", cpu="4", memory="0", group="high", spec_extra=pc("high")))


def test_dry_run_chooses_the_node_whose_victims_matter_least(simulate):
    code, out = simulate(two_full_nodes(), conf=CONF)
    assert code == 0
    assert out["evicted"] == ["default/mid-0"]  # normal mode: the first node of equal score

    code, out = simulate(two_full_nodes(), conf=dry_run_conf(arguments=", minCandidateNodesAbsolute: 2"))
    assert code == 0
    assert out["evicted"] == ["default/low-0"]  # the lowest highest-victim priority
    assert out["pods"]["default/high-0"]["node"] == "n2"


def anti_affinity_cluster() -> str:
    """high-0 refuses to share a node with app=v pods; the only one, victim-0, fills n1."""
    anti = """  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {app: v}}
        topologyKey: kubernetes.io/hostname"""
    return (CLASSES + node("n1")
            + podgroup("low", 1, extra=pc("low"))
            + pod("victim-0", cpu="4", memory="0", group="low", node_name="n1", phase="Running",
                  spec_extra=pc("low"), meta_extra="  labels: {app: v}")
            + podgroup("high", 1, extra=pc("high"))
            + pod("high-0", cpu="2", memory="0", group="high", spec_extra=pc("high") + "\n" + anti))


@pytest.mark.parametrize("flags, evicts", [
    ("", True),
    ("    enablePreemptable: false\n", True),  # the simulate hooks run if either switch is on
    ("    enabledAllocatable: false\n", True),
    # both off: predicates' SimulateRemoveTask does not run, the dry run still counts victim-0
    # against high-0's anti-affinity, and n1 yields no candidate
    ("    enablePreemptable: false\n    enabledAllocatable: false\n", False),
    # its predicate switch off: no SimulatePredicate, so the anti-affinity is not checked at all
    ("    enablePreemptable: false\n    enabledAllocatable: false\n    enablePredicate: false\n", True),
])
def test_dry_run_hooks_follow_the_plugin_switches(simulate, flags, evicts):
    code, out = simulate(anti_affinity_cluster(), conf=dry_run_conf(flags))
    assert code == 0
    assert out["evicted"] == (["default/victim-0"] if evicts else [])


def test_a_vgpu_pod_preempts_in_the_dry_run_on_the_cards_a_victim_frees(simulate):
    from .test_deviceshare import A100, gpu_node, ids, mem, vgpu_pod

    conf = dry_run_conf().replace("  - name: binpack\n", """  - name: binpack
  - name: deviceshare
    arguments: {deviceshare.VGPUEnable: true}
""")
    low = {"volcano.sh/vgpu-ids-new": "GPU-a,NVIDIA,30000,0:", "scheduling.k8s.io/group-name": "low"}
    small = {"volcano.sh/vgpu-ids-new": "GPU-a,NVIDIA,5000,0:", "scheduling.k8s.io/group-name": "low"}
    # taking small-0 off is not enough for 20000 MiB; low-0 is; then small-0 is reprieved
    manifests = (CLASSES + gpu_node("n1", [("GPU-a", 10, 40960, A100)])
                 + podgroup("low", 1, extra=pc("low"))
                 + vgpu_pod("low-0", mem(30000, 1), annotations=low, node_name="n1")
                 .replace("spec:\n", "spec:\n" + pc("low") + "\n", 1)
                 + vgpu_pod("small-0", mem(5000, 1), annotations=small, node_name="n1")
                 .replace("spec:\n", "spec:\n" + pc("low") + "\n", 1)
                 + podgroup("high", 1, extra=pc("high"))
                 + vgpu_pod("high-0", mem(20000, 1), group="high").replace("spec:\n", "spec:\n" + pc("high") + "\n", 1))
    code, out = simulate(manifests, conf=conf)
    assert code == 0, out
    assert out["evicted"] == ["default/low-0"]
    assert out["pods"]["default/high-0"]["node"] == "n1"
    assert ids(out, "high-0") == "GPU-a,NVIDIA,20000,0:"


def test_a_pod_start_time_that_is_not_a_date_exits_2(simulate):
    manifests = node("n1") + pod("p", phase="Running", node_name="n1").replace(
        "status: {phase: Running}", "status: {phase: Running, startTime: yesterday}")
    code, err = simulate(manifests, conf=CONF)
    assert code == 2
    assert "(Pod default/p): status.startTime: must be an RFC 3339 date-time" in err
