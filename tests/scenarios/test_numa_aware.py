"""numa-aware end to end through ``vcsched simulate`` (plugins/numaaware: numaaware.go, numaaware_test.go,
and the NUMA user guide's vj-test, docs/user-guide/how_to_use_numa_aware.md).

Volcano's policy and CPU-manager tests compare hints and CPU sets, not placements: they are unit tests
(tests/unit/test_numa_aware.py).  Here: the guide's example, the predicate's refusals with Volcano's
text, the node order and its weight, the CPUs a placed pod holds in later sessions until the
Numatopology lists it (numaaware_test.go's OnSessionClose tests), and bad input.  ``simulate`` shows a
node's Numatopology state under ``nodes.<name>.numa``: the free CPUs the next session sees and the CPUs
given to pods the exporter does not list yet.
"""

from __future__ import annotations

import pytest

USER_GUIDE_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
  - name: numa-aware # add it to enable numa-aware plugin
    arguments:
      weight: 10
"""


def conf(arguments: str = "", numa: bool = True) -> str:
    args = f"    arguments: {{{arguments}}}\n" if arguments else ""
    return ('actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n'
            + ("  - name: numa-aware\n" + args if numa else ""))


def node(name: str, cpu: int = 8, memory: str = "64Gi") -> str:
    return f"""
---
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}
status: {{allocatable: {{cpu: "{cpu}", memory: {memory}, pods: "110"}}}}
"""


def numatopo(name: str, per_numa: list[int], policy: str = "best-effort", cpu_policy: str = "static",
             allocatable: str | None = None, pods: tuple[tuple[str, str], ...] = (), extra: str = "") -> str:
    """A Numatopology as the resource exporter writes it: NUMA node i is socket i, two threads a core."""
    detail = []
    cpu = 0
    for numa, n in enumerate(per_numa):
        for _ in range(n):
            detail.append(f'    "{cpu}": {{numa: {numa}, socket: {numa}, core: {cpu // 2}}}')
            cpu += 1
    allocs = "".join(f"\n  - {{namespace: {ns}, name: {p}}}" for ns, p in pods)
    return f"""
---
apiVersion: nodeinfo.volcano.sh/v1alpha1
kind: Numatopology
metadata: {{name: {name}}}
spec:
  policies: {{CPUManagerPolicy: {cpu_policy}, TopologyManagerPolicy: {policy}}}
  cpuDetail:
{chr(10).join(detail)}
  numares:
    cpu: {{allocatable: "{allocatable if allocatable is not None else f'0-{cpu - 1}'}", capacity: {cpu}}}
{extra}
{"  podAllocations:" + allocs if pods else ""}
"""


def pod(name: str, cpu: str = "2", policy: str | None = None, guaranteed: bool = True, memory: str = "1Gi") -> str:
    ann = f"volcano.sh/numa-topology-policy: {policy}" if policy else ""
    res = (f'{{limits: {{cpu: "{cpu}", memory: {memory}}}}}' if guaranteed
           else f'{{requests: {{cpu: "{cpu}", memory: {memory}}}}}')
    return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default, annotations: {{{ann}}}}}
spec: {{schedulerName: volcano, containers: [{{name: main, image: x, resources: {res}}}]}}
"""


def placed(out: dict) -> dict[str, str | None]:
    return {k.split("/", 1)[1]: p["node"] for k, p in out["pods"].items()}


def numa_of(out: dict, node_name: str) -> dict:
    return out["nodes"][node_name]["numa"]


# -- the user guide ------------------------------------------------------------------------------------


VJ_TEST = """
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: vj-test
spec:
  schedulerName: volcano
  minAvailable: 1
  tasks:
    - replicas: 1
      name: "test"
      topologyPolicy: best-effort # set the topology policy for task
      template:
        spec:
          containers:
            - image: alpine
              command: ["/bin/sh", "-c", "sleep 1000"]
              imagePullPolicy: IfNotPresent
              name: running
              resources:
                limits:
                  cpu: 16
                  memory: "100Mi"
          restartPolicy: OnFailure
"""


def test_user_guide_vj_test(simulate):
    """The NUMA user guide's Practice: node-1 has 12 allocatable CPUs on each of its two NUMA nodes,
    node-2 has 20; the Job's task (best-effort, 16 CPUs) goes to node-2, where one NUMA node holds it.
    Without numa-aware the two nodes tie and node-1, first in search order, takes it."""
    cluster = (node("node-1", 40) + node("node-2", 40) + VJ_TEST
               + numatopo("node-1", [20, 20], allocatable="8-19,28-39") + numatopo("node-2", [20, 20]))
    code, out = simulate(cluster, conf=USER_GUIDE_CONF)
    assert code == 0, out
    assert placed(out) == {"vj-test-test-0": "node-2"}
    pod_out = out["pods"]["default/vj-test-test-0"]
    assert pod_out["annotations"]["volcano.sh/numa-topology-policy"] == "best-effort"
    assert numa_of(out, "node-2")["assigned"] == {"default/vj-test-test-0": {"cpu": "0-15"}}
    assert numa_of(out, "node-2")["allocatable"] == {"cpu": "16-39"}
    plain = USER_GUIDE_CONF.replace("  - name: numa-aware # add it to enable numa-aware plugin\n"
                                    "    arguments:\n      weight: 10\n", "")
    code, out = simulate(cluster, conf=plain)
    assert code == 0, out
    assert placed(out) == {"vj-test-test-0": "node-1"}


# -- the predicate -------------------------------------------------------------------------------------


def test_single_numa_node_needs_the_cpus_on_one_numa_node(simulate):
    """single-numa-node: six CPUs fit no NUMA node of small (4 + 4), so small is refused with Volcano's
    reason and the pod goes to big (8 + 8), on one NUMA node."""
    cluster = (node("small") + node("big", 16) + numatopo("small", [4, 4], "single-numa-node")
               + numatopo("big", [8, 8], "single-numa-node") + pod("p", "6", "single-numa-node"))
    code, out = simulate(cluster, conf=conf())
    assert code == 0, out
    assert placed(out) == {"p": "big"}
    assert numa_of(out, "big")["assigned"] == {"default/p": {"cpu": "0-5"}}
    code, out = simulate(node("small") + numatopo("small", [4, 4], "single-numa-node")
                         + pod("p", "6", "single-numa-node"), conf=conf())
    assert placed(out) == {"p": None}
    assert "container main cannot be assigned by numa" in out["pods"]["default/p"]["reason"]


def test_restricted_refuses_what_best_effort_spreads(simulate):
    """restricted admits only a preferred hint: four CPUs free as 2 + 2 on two NUMA nodes of four
    could fit one NUMA node, so {0,1} is not preferred and the pod is refused; best-effort takes the
    four free CPUs across both NUMA nodes."""
    for policy_, expect, cpus_ in (("restricted", None, None), ("best-effort", "n", "2-3,6-7")):
        cluster = node("n") + numatopo("n", [4, 4], policy_, allocatable="2-3,6-7") + pod("p", "4", policy_)
        code, out = simulate(cluster, conf=conf())
        assert code == 0, out
        assert placed(out) == {"p": expect}, policy_
        if cpus_:
            assert numa_of(out, "n")["assigned"] == {"default/p": {"cpu": cpus_}}
        else:
            assert "container main cannot be assigned by numa" in out["pods"]["default/p"]["reason"]


@pytest.mark.parametrize("topology, reason", [
    ("", "numa info is empty"),
    (numatopo("n", [4, 4], "best-effort", cpu_policy="none"), "cpu manager policy isn't static"),
    (numatopo("n", [4, 4], "best-effort"), "task topology policy[restricted] is different with node[best-effort]"),
    (numatopo("n", [4, 4], "restricted", allocatable=""), "cpu allocatable map is empty"),
])
def test_a_pod_with_a_policy_needs_a_matching_node(simulate, topology, reason):
    """filterNodeByPolicy's refusals for a pod with a policy, each with Volcano's text."""
    code, out = simulate(node("n") + topology + pod("p", "2", "restricted"), conf=conf())
    assert code == 0, out
    assert placed(out) == {"p": None}
    assert reason in out["pods"]["default/p"]["reason"]


def test_pods_the_plugin_does_not_look_at(simulate):
    """A Burstable pod with a policy is not checked (GetPodQOS first), nor is a Guaranteed pod without
    one on a node whose topology policy is none; neither holds CPUs afterwards."""
    cluster = (node("n") + numatopo("n", [4, 4], "none") + pod("burstable", "2", "single-numa-node", guaranteed=False)
               + pod("plain", "2"))
    code, out = simulate(cluster, conf=conf())
    assert code == 0, out
    assert placed(out) == {"burstable": "n", "plain": "n"}
    assert numa_of(out, "n")["assigned"] == {}


def test_a_pod_without_policy_is_placed_by_the_nodes_policy(simulate):
    """A Guaranteed pod without the annotation on a static node with a topology policy: the node's
    policy decides (single-numa-node refuses five CPUs on 4 + 4), as the kubelet would."""
    code, out = simulate(node("n") + numatopo("n", [4, 4], "single-numa-node") + pod("p", "5"), conf=conf())
    assert code == 0, out
    assert placed(out) == {"p": None}
    assert "container main cannot be assigned by numa" in out["pods"]["default/p"]["reason"]
    code, out = simulate(node("n") + numatopo("n", [4, 4], "single-numa-node") + pod("p", "3"), conf=conf())
    assert placed(out) == {"p": "n"}
    assert numa_of(out, "n")["assigned"] == {"default/p": {"cpu": "0-2"}}


def test_cpus_taken_within_a_session(simulate):
    """The allocate event handler: two pods in one session take different CPUs of the node (the second
    sees what the first took), and a third no longer fits a NUMA node."""
    cluster = (node("n", 16) + numatopo("n", [4, 4], "single-numa-node")
               + pod("a", "3", "single-numa-node") + pod("b", "3", "single-numa-node")
               + pod("c", "3", "single-numa-node"))
    code, out = simulate(cluster, "--cycles", "1", conf=conf())
    assert code == 0, out
    assert placed(out) == {"a": "n", "b": "n", "c": None}
    assert numa_of(out, "n")["assigned"] == {"default/a": {"cpu": "0-2"}, "default/b": {"cpu": "4-6"}}


def test_allocate_takes_aligned_cpus_first(simulate):
    """Test_Allocate test-4 on a node: CPU 0 taken, five CPUs asked with best-effort: the whole second
    socket, then CPU 1 (a free core's thread before a whole core)."""
    code, out = simulate(node("n") + numatopo("n", [4, 4], allocatable="1-7") + pod("p", "5", "best-effort"),
                         conf=conf())
    assert code == 0, out
    assert numa_of(out, "n")["assigned"] == {"default/p": {"cpu": "1,4-7"}}


# -- the node order -----------------------------------------------------------------------------------


@pytest.mark.parametrize("arguments, expect", [("", "whole"), ("weight: 0", "split")])
def test_fewer_numa_nodes_score_higher_times_weight(simulate, arguments, expect):
    """batchNodeOrderFn: on split the four CPUs span two NUMA nodes (score 0), on whole one (score 50);
    with weight 0 the nodes tie and the first in search order wins."""
    cluster = (node("split") + node("whole") + numatopo("split", [4, 4], allocatable="2-3,6-7")
               + numatopo("whole", [4, 4]) + pod("p", "4", "best-effort"))
    code, out = simulate(cluster, conf=conf(arguments))
    assert code == 0, out
    assert placed(out) == {"p": expect}


def test_a_node_where_no_cpus_can_be_chosen_scores_best(simulate):
    """Volcano's quirk, kept: with best-effort a node whose Numatopology has one free CPU admits a
    two-CPU pod (no hint, best-effort admits) but chooses no CPUs, so it counts 0 NUMA nodes and scores
    100, beating a node that would hold the pod on one NUMA node (score 0).  The shared search must see
    that the counts differ (0 and 1) and score node by node."""
    cluster = (node("roomy") + node("tiny") + numatopo("roomy", [4, 4]) + numatopo("tiny", [4, 4], allocatable="0")
               + pod("p", "2", "best-effort"))
    code, out = simulate(cluster, conf=conf())
    assert code == 0, out
    assert placed(out) == {"p": "tiny"}
    assert numa_of(out, "tiny")["assigned"] == {"default/p": {"cpu": ""}}


def test_identical_pods_share_the_search_and_stay_exact(simulate):
    """Eight identical pods with a policy on four nodes: each takes the node where its CPUs stay on one
    NUMA node; the last ones find every node split the same way (shared search) or not (node by node)."""
    nodes = "".join(node(f"n{i}") + numatopo(f"n{i}", [4, 4]) for i in range(4))
    pods = "".join(pod(f"p{i}", "3", "best-effort") for i in range(8))
    code, out = simulate(nodes + pods, "--cycles", "1", conf=conf())
    assert code == 0, out
    assert all(placed(out).values())
    for i in range(4):
        assigned = numa_of(out, f"n{i}")["assigned"]
        assert sorted(c["cpu"] for c in assigned.values()) == ["0-2", "4-6"], assigned


# -- the ledger across sessions (numaaware_test.go · TestNuma_OnSessionClose*) ---------------------------


def test_a_placed_pods_cpus_are_held_in_later_sessions(simulate):
    """TestNuma_OnSessionClose "normal case" and TestNuma_OnSessionClose_VerifiesContent: after three
    sessions the pod's CPUs are still recorded on the node it was placed on (n2), keyed by the pod, and
    the node's free set the next session sees lacks them; n1, without a Numatopology, records nothing."""
    first = node("n1", 16) + node("n2", 16) + numatopo("n2", [4, 4], "single-numa-node") + pod("p1", "4", "single-numa-node")
    code, out = simulate(first, "--cycles", "3", conf=conf())
    assert code == 0, out
    assert placed(out) == {"p1": "n2"}
    assert numa_of(out, "n2")["assigned"] == {"default/p1": {"cpu": "0-3"}}
    assert numa_of(out, "n2")["allocatable"] == {"cpu": "4-7"}
    assert "numa" not in out["nodes"]["n1"]


def test_the_held_cpus_stay_taken_across_cycles(simulate):
    """The ledger is what keeps a later session from giving the same CPUs twice: p1 and p2 take both
    NUMA nodes in cycle 1; p3 waits over three cycles, because the node's Numatopology still shows all
    eight CPUs free."""
    cluster = (node("n", 32) + numatopo("n", [4, 4], "single-numa-node") + pod("p1", "4", "single-numa-node")
               + pod("p2", "4", "single-numa-node"))
    late = pod("p3", "4", "single-numa-node").replace("metadata: {", "metadata: {creationTimestamp: '2026-01-01T00:59:00Z', ")
    code, out = simulate(cluster + late, "--cycles", "3", conf=conf())
    assert code == 0, out
    assert placed(out) == {"p1": "n", "p2": "n", "p3": None}
    assert numa_of(out, "n")["allocatable"] == {"cpu": ""}


def test_cpus_are_given_back_once_the_exporter_lists_every_pod(simulate):
    """RefreshNumaSchedulerInfoByCrd: the Numatopology already lists p1 (the exporter has seen the
    kubelet's choice), so from the next session the node's own allocatable set is what counts and the
    ledger is empty."""
    cluster = node("n") + numatopo("n", [4, 4], pods=(("default", "p1"),)) + pod("p1", "2", "best-effort")
    code, out = simulate(cluster, "--cycles", "2", conf=conf())
    assert code == 0, out
    assert placed(out) == {"p1": "n"}
    assert numa_of(out, "n")["assigned"] == {}
    assert numa_of(out, "n")["allocatable"] == {"cpu": "0-7"}


def test_several_pods_accumulate_on_their_own_nodes(simulate):
    """TestNuma_OnSessionClose_MultipleTasksAccumulate and the "empty taskBindNodeMap" case: each placed
    Guaranteed pod is recorded on the node it went to; a Burstable pod, for which no CPUs were chosen
    (as for a task missing from assignRes or taskPodMetaMap), is not."""
    cluster = (node("n1") + node("n2") + numatopo("n1", [4, 4]) + numatopo("n2", [4, 4])
               + pod("p1", "6", "best-effort") + pod("p2", "6", "best-effort")
               + pod("p3", "1", "best-effort", guaranteed=False))
    code, out = simulate(cluster, "--cycles", "1", conf=conf())
    assert code == 0, out
    where = placed(out)
    assert where["p1"] and where["p2"] and where["p1"] != where["p2"] and where["p3"]
    assert numa_of(out, where["p1"])["assigned"] == {"default/p1": {"cpu": "0-5"}}
    assert numa_of(out, where["p2"])["assigned"] == {"default/p2": {"cpu": "0-5"}}


# -- bad input -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec, field", [
    ('  policies: {CPUManagerPolicy: 1}', "spec.policies[CPUManagerPolicy]"),
    ('  policies: {TopologyManagerPolicy: best_effort}', "spec.policies[TopologyManagerPolicy]"),
    ('  numares: {cpu: {allocatable: "0-3,x"}}', "spec.numares[cpu].allocatable"),
    ('  numares: {cpu: {allocatable: "3-1"}}', "spec.numares[cpu].allocatable"),
    ('  numares: {cpu: {capacity: "8"}}', "spec.numares[cpu].capacity"),
    ('  cpuDetail: {"0": {numa: -1}}', "spec.cpuDetail[0].numa"),
    ('  cpuDetail: {"0": {numa: 64}}', "spec.cpuDetail[0].numa"),
    ('  cpuDetail: {"0": {core: "a"}}', "spec.cpuDetail[0].core"),
    ('  cpuDetail: {cpu0: {numa: 0}}', "spec.cpuDetail[cpu0]"),
    ('  cpuDetail: {"0": []}', "spec.cpuDetail[0]"),
    ('  resReserved: {cpu: lots}', "spec.resReserved[cpu]"),
    ('  resReserved: {cpu: "-1"}', "spec.resReserved[cpu]"),
    ('  resReserved: {nvidia.com/gpu: "1"}', "spec.resReserved[nvidia.com/gpu]"),
    ('  podAllocations: [{name: 3}]', "spec.podAllocations[0].name"),
    ('  podAllocations: {name: p}', "spec.podAllocations"),
    ('  podAllocations: [{containerAllocations: [{allocations: {cpu: 1}}]}]',
     "spec.podAllocations[0].containerAllocations[0].allocations[cpu]"),
])
def test_malformed_numatopology_is_refused(simulate, spec, field):
    """What the CRD schema refuses, and what Volcano would misread: exit 2, naming file, document,
    object and field."""
    doc = f"""
---
apiVersion: nodeinfo.volcano.sh/v1alpha1
kind: Numatopology
metadata: {{name: n}}
spec:
{spec}
"""
    code, err = simulate(node("n") + doc, conf=conf())
    assert code == 2, err
    assert "document 1" in err and "(Numatopology n)" in err and f": {field}: " in err, err


def test_a_numatopology_key_written_as_a_yaml_integer_is_a_cpu_id(simulate):
    """kubectl turns ``0:`` into ``"0"``: so does simulate."""
    doc = numatopo("n", [4, 4]).replace('    "', "    ").replace('": {', ": {")
    code, out = simulate(node("n") + doc + pod("p", "2", "best-effort"), conf=conf())
    assert code == 0, out
    assert placed(out) == {"p": "n"}


def test_bad_weight_is_refused_at_conf_load(simulate):
    """The weight argument must be an integer (Volcano's GetInt keeps the default; vcsched refuses)."""
    code, err = simulate(node("n") + pod("p"), conf=conf('weight: "10"'))
    assert code == 2
    assert "tiers[0].plugins[2].arguments.weight: expected an integer" in err
