"""Volcano's documented behaviours, end to end through ``vcsched simulate``."""

from .conftest import node, pod, podgroup, queue


def placed(out):
    return {k: p["node"] for k, p in out["pods"].items() if p["node"]}


def test_gang_that_cannot_fully_fit_binds_nothing(simulate):
    # 10 CPU in all, so the queue's share admits the third task and the nodes refuse it
    manifests = node("n1") + node("n2") + node("n3", cpu="2") + podgroup("pg", 3) + "".join(
        pod(f"w-{i}", cpu="3", group="pg") for i in range(3))
    code, out = simulate(manifests)
    assert code == 0
    assert placed(out) == {}
    pg = out["podgroups"]["default/pg"]
    assert pg["phase"] == "Inqueue"
    cond = pg["conditions"][0]
    assert cond["type"] == "Unschedulable" and cond["reason"] == "NotEnoughResources"
    assert cond["message"].startswith("1/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable; "
                                      "Pending: 1 Unschedulable, 2 Schedulable. Origin reason is w-2: "
                                      "0/3 nodes are unavailable: 3 Insufficient cpu.")
    assert out["pods"]["default/w-0"]["reason"] == \
        "Pod default/w-0 can possibly be assigned to n1, once minAvailable is satisfied"
    assert out["pods"]["default/w-2"]["reason"] == "0/3 nodes are unavailable: 3 Insufficient cpu."


def test_a_task_over_the_queue_share_is_skipped_without_a_node_reason(simulate):
    # Volcano skips a task its queue cannot afford (proportion's allocatable) and records no fit error
    manifests = node("n1") + node("n2") + podgroup("pg", 3) + "".join(
        pod(f"w-{i}", cpu="3", group="pg") for i in range(3))
    code, out = simulate(manifests)
    assert placed(out) == {}
    assert out["pods"]["default/w-2"]["reason"] == \
        "pod group is not ready, 3 Pending, 3 minAvailable; Pending: 1 Unschedulable, 2 Schedulable"


def test_gang_that_fits_binds_all_and_runs(simulate):
    manifests = node("n1") + node("n2") + podgroup("pg", 2) + pod("w-0", cpu="3", group="pg") + pod("w-1", cpu="3", group="pg")
    code, out = simulate(manifests)
    assert sorted(placed(out).values()) == ["n1", "n2"]
    assert out["podgroups"]["default/pg"]["phase"] == "Running"
    assert out["podgroups"]["default/pg"]["running"] == 2
    assert out["pods"]["default/w-0"]["phase"] == "Running"
    assert out["queues"]["default"]["allocated"] == {"cpu": "6", "memory": "2Gi", "pods": "2"}


def two_queues(a_extra: str = "", b_extra: str = "", a_weight: int = 3, b_weight: int = 1) -> str:
    """8 CPU; queues a and b each run a job (minMember 1, no minResources) of eight 1-CPU pods."""
    manifests = node("n1", cpu="8", memory="64Gi") + queue("a", a_weight, a_extra) + queue("b", b_weight, b_extra)
    for q in "ab":
        manifests += podgroup(f"job-{q}", 1, queue=q)
        manifests += "".join(pod(f"{q}-{i}", cpu="1", group=f"job-{q}") for i in range(8))
    return manifests


def per_queue(out):
    return {q: sum(1 for k in placed(out) if k.startswith(f"default/{q}-")) for q in "ab"}


def test_proportion_divides_by_weight(simulate):
    code, out = simulate(two_queues())
    assert per_queue(out) == {"a": 6, "b": 2}
    assert out["queues"]["a"]["allocated"]["cpu"] == "6"


def test_proportion_respects_capability(simulate):
    code, out = simulate(two_queues(a_extra='  capability: {cpu: "3"}'))
    assert per_queue(out) == {"a": 3, "b": 5}


def test_proportion_respects_guarantee(simulate):
    code, out = simulate(two_queues(b_extra='  guarantee: {resource: {cpu: "4"}}\n  deserved: {cpu: "4"}', a_weight=10))
    assert per_queue(out) == {"a": 4, "b": 4}


def test_overcommit_holds_back_podgroups_beyond_the_cluster(simulate):
    # bare pods get minResources; overcommit admits them while they fit 1.2 x the cluster
    manifests = node("n1", cpu="4") + "".join(pod(f"p-{i}", cpu="2") for i in range(4))
    code, out = simulate(manifests, "--cycles", "1")
    phases = sorted(pg["phase"] for pg in out["podgroups"].values())
    assert phases == ["Inqueue", "Inqueue", "Pending", "Pending"]


BINPACK_ONLY = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
  - name: binpack
    arguments: {ARGS}
"""


def test_binpack_prefers_the_fuller_node(simulate):
    manifests = (node("empty", cpu="8") + node("busy", cpu="8")
                 + pod("running", cpu="4", node_name="busy", phase="Running") + pod("new", cpu="1"))
    code, out = simulate(manifests, conf=BINPACK_ONLY.replace("{ARGS}", "{}"))
    assert placed(out)["default/new"] == "busy"


def test_binpack_weights_change_the_choice(simulate):
    # "busy" is fuller in cpu, "memfull" in memory; weighting memory heavily flips the choice
    manifests = (node("busy", cpu="8", memory="8Gi") + node("memfull", cpu="8", memory="8Gi")
                 + pod("a", cpu="4", memory="1Gi", node_name="busy", phase="Running")
                 + pod("b", cpu="1", memory="6Gi", node_name="memfull", phase="Running")
                 + pod("new", cpu="1", memory="1Gi"))
    code, out = simulate(manifests, conf=BINPACK_ONLY.replace("{ARGS}", "{binpack.cpu: 10, binpack.memory: 1}"))
    assert placed(out)["default/new"] == "busy"
    code, out = simulate(manifests, conf=BINPACK_ONLY.replace("{ARGS}", "{binpack.cpu: 1, binpack.memory: 10}"))
    assert placed(out)["default/new"] == "memfull"


def test_taints_block_without_toleration(simulate):
    tainted = "spec:\n  taints: [{key: gpu, value: \"true\", effect: NoSchedule}]"
    manifests = node("n1", extra=tainted) + pod("plain") + pod(
        "tolerant", spec_extra="  tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]")
    code, out = simulate(manifests)
    assert placed(out) == {"default/tolerant": "n1"}
    assert out["pods"]["default/plain"]["reason"] == \
        "0/1 nodes are unavailable: 1 node(s) had untolerated taint {gpu: true}."


def test_pipelined_task_lands_once_releasing_resources_are_gone(simulate):
    terminating = "  deletionTimestamp: \"2026-01-01T00:00:00Z\""
    manifests = (node("n1", cpu="4") + pod("old", cpu="3", node_name="n1", phase="Running", meta_extra=terminating)
                 + podgroup("pg-new", 1) + pod("new", cpu="3", group="pg-new"))
    code, out = simulate(manifests, "--cycles", "1")
    assert placed(out) == {}
    assert out["pods"]["default/new"]["reason"] == ("Pod default/new can possibly be assigned to n1, "
                                                    "once resource is released and minAvailable is satisfied")
    code, out = simulate(manifests)
    assert placed(out) == {"default/new": "n1"}
    assert "default/old" not in out["pods"]


def test_backfill_places_best_effort_pods(simulate):
    manifests = node("n1", cpu="1") + pod("full", cpu="1") + pod("besteffort", cpu="")
    code, out = simulate(manifests)
    assert placed(out) == {"default/full": "n1", "default/besteffort": "n1"}


def test_other_schedulers_pods_are_left_alone_but_count(simulate):
    manifests = node("n1", cpu="2") + podgroup("pg", 1) + pod("mine", cpu="2", group="pg") + """
---
apiVersion: v1
kind: Pod
metadata: {name: theirs}
spec:
  schedulerName: default-scheduler
  nodeName: n1
  containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
status: {phase: Running}
"""
    code, out = simulate(manifests)
    assert placed(out) == {"default/theirs": "n1"}
    assert out["pods"]["default/mine"]["reason"] == "0/1 nodes are unavailable: 1 Insufficient cpu."


def test_closed_queue_admits_no_podgroup_with_min_resources(simulate):
    manifests = node("n1") + queue("shut", extra="status: {state: Closed}") + pod("p", queue="shut")
    code, out = simulate(manifests)
    assert placed(out) == {}
    assert out["queues"]["shut"]["state"] == "Closed"
    assert out["podgroups"][next(iter(out["podgroups"]))]["phase"] == "Pending"


def test_node_selector_reason(simulate):
    manifests = node("n1") + pod("p", spec_extra="  nodeSelector: {disk: ssd}")
    code, out = simulate(manifests)
    assert out["pods"]["default/p"]["reason"] == \
        "0/1 nodes are unavailable: 1 node(s) didn't match Pod's node affinity/selector."


def test_zone_anti_affinity_of_a_placed_pod_keeps_its_zone_from_matching_pods(simulate):
    def zoned(name, zone, cpu):
        return node(name, cpu=cpu).replace(f"labels: {{kubernetes.io/hostname: {name}}}",
                                           f"labels: {{kubernetes.io/hostname: {name}, zone: {zone}}}")

    anti = """  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {app: web}}
        topologyKey: zone"""
    web = "  labels: {app: web}"
    # guard's zone is closed to every web pod, on all its nodes, whichever order they are placed in
    manifests = (zoned("a1", "a", "1") + zoned("b1", "b", "4") + zoned("b2", "b", "4")
                 + pod("web-0", meta_extra=web) + pod("guard", spec_extra=anti) + pod("web-1", meta_extra=web)
                 + pod("web-2", meta_extra=web))
    code, out = simulate(manifests)
    where = placed(out)
    zone = {"a1": "a", "b1": "b", "b2": "b"}
    guard_zone = zone[where["default/guard"]]
    assert all(zone[n] != guard_zone for k, n in where.items() if k.startswith("default/web-"))


SPREAD_ONLY_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: gang
  - name: predicates
  - name: nodeorder
"""


def test_a_pod_placed_with_anti_affinity_closes_its_zone_to_identical_pods_placed_later(simulate):
    # web-0 takes a1 (least requested); guard is pinned to b2 and, by its anti-affinity, closes
    # zone b to web pods; web-1 would now score b1 above the loaded a1, but b1 is in guard's zone.
    # Work shared between web-0 and web-1 would still call b1 feasible: it must not be reused.
    def zoned(name, zone, cpu):
        return node(name, cpu=cpu).replace(f"labels: {{kubernetes.io/hostname: {name}}}",
                                           f"labels: {{kubernetes.io/hostname: {name}, zone: {zone}}}")

    guard = """  nodeSelector: {kubernetes.io/hostname: b2}
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {app: web}}
        topologyKey: zone"""
    web = "  labels: {app: web}"
    manifests = (zoned("a1", "a", "4") + zoned("b1", "b", "3") + zoned("b2", "b", "2")
                 + pod("web-0", meta_extra=web) + pod("guard", spec_extra=guard) + pod("web-1", meta_extra=web))
    code, out = simulate(manifests, "--cycles", "1", conf=SPREAD_ONLY_CONF)
    assert placed(out) == {"default/web-0": "a1", "default/guard": "b2", "default/web-1": "a1"}


def _worker(name: str, cpu: str) -> str:
    """A pod of PodGroup pg with role ``worker`` (``volcano.sh/task-spec``)."""
    return pod(name, cpu=cpu, memory="1Gi", group="pg").replace(
        "annotations: {", "annotations: {volcano.sh/task-spec: worker, ")


ERROR_CACHE_CLUSTER = (node("n1", cpu="2") + node("n2", cpu="4") + podgroup("pg", 2)
                       + _worker("a-big", "3") + _worker("b-small", "1"))


def test_predicate_error_cache_keeps_a_failed_node_failed_for_the_rest_of_the_role(simulate):
    """Volcano's allocate (predicateErrorCacheEnable, default true): a-big (3 CPU) does not fit n1, so in
    the same pass b-small, of the same job and role, does not try n1 and joins a-big on n2, where
    leastrequested alone would have sent it to the emptier n1 (issue 16)."""
    code, out = simulate(ERROR_CACHE_CLUSTER)
    assert code == 0
    assert out["pods"]["default/a-big"]["node"] == "n2"
    assert out["pods"]["default/b-small"]["node"] == "n2"


def test_without_the_predicate_error_cache_each_task_is_checked_on_every_node(simulate):
    conf = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
configurations:
- name: allocate
  arguments: {predicateErrorCacheEnable: false}
"""
    code, out = simulate(ERROR_CACHE_CLUSTER, conf=conf)
    assert code == 0
    assert out["pods"]["default/a-big"]["node"] == "n2"
    assert out["pods"]["default/b-small"]["node"] == "n1"
