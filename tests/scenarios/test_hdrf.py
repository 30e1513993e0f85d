"""Hierarchical DRF (drf with ``enableHierarchy: true``), end to end through ``vcsched simulate``.

The first two tests are the cases of Volcano's pkg/scheduler/plugins/drf/hdrf_test.go
(``TestHDRF``): one session running the allocate action.  Re-expressed as follows:

- The Go test opens its session directly with one tier holding drf (enableHierarchy,
  enableQueueOrder, enableJobOrder) and proportion (enableQueueOrder, enableReclaimable,
  enableJobEnqueued; every other flag nil, which the framework reads as off).  Volcano's conf
  loader refuses drf-with-hierarchy and proportion in one tier, and so does vcsched's, so no
  manifest can hold that tier: ``test_volcano_tier_is_refused...`` pins the refusal.  In the Go
  tier proportion only breaks drf's queue-order ties (its allocatable and overused are off), so the
  cases run drf alone, which is what decides the numbers; proportion one tier below, with the Go
  flags, gives the same numbers.
- PodGroups are built Inqueue with minMember 0; pods are bare pods naming their group, with Go's
  quantities (``1G`` = 10^9 bytes); the node lists ``pods`` as the Go node does.
- The Go test compares its whole expected map with each job's allocation (never equal, so it
  cannot fail); here every job's allocation is checked against its own entry.
"""

from __future__ import annotations

import collections

import pytest

from .conftest import node, pod, podgroup

HDRF = """
actions: "allocate"
tiers:
- plugins:
  - name: drf
    enableHierarchy: {on}
"""

GO_TIER = """
actions: "allocate"
tiers:
- plugins:
  - name: drf
    enableHierarchy: true
    enableQueueOrder: true
    enableJobOrder: true
  - name: proportion
    enableJobEnqueued: true
    enableQueueOrder: true
    enableReclaimable: true
"""

# the Go tier's proportion, one tier down, with the flags the Go test leaves nil switched off
PROPORTION_BELOW = HDRF.format(on="true") + """- plugins:
  - name: proportion
    enableJobOrder: false
    enableJobReady: false
    enableJobPipelined: false
    enableTaskOrder: false
    enablePreemptable: false
    enablePreemptive: false
    enablePredicate: false
    enableBestNode: false
    enableNodeOrder: false
    enabledOverused: false
    enabledAllocatable: false
"""

RECLAIM = """
actions: "allocate, reclaim"
tiers:
- plugins:
  - name: gang
    enablePreemptable: false
    enableReclaimable: false
- plugins:
  - name: drf
    enableHierarchy: {on}
"""


def hqueue(name: str, hierarchy: str | None = None, weights: str | None = None) -> str:
    """A Queue of weight 1 with the two hierarchy annotations (each left out when None)."""
    ann = {}
    if hierarchy is not None:
        ann["volcano.sh/hierarchy"] = hierarchy
    if weights is not None:
        ann["volcano.sh/hierarchy-weights"] = weights
    annotations = ", ".join(f'{k}: "{v}"' for k, v in ann.items())
    return f"""
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: {name}
  annotations: {{{annotations}}}
spec:
  weight: 1
"""


def go_pods(n: int, cpu: str, memory: str, group: str) -> str:
    """``makePods``: n pending pods ``<group>-p<i>`` in group ``group``."""
    return "".join(pod(f"{group}-p{i}", cpu=cpu, memory=memory, group=group) for i in range(n))


def inqueue_group(name: str, queue_name: str) -> str:
    """``util.BuildPodGroup(name, "default", queue, 0, nil, PodGroupInqueue)``."""
    return podgroup(name, 0, queue=queue_name, extra="status:\n  phase: Inqueue")


def allocated_by_group(out, requests: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int, int]]:
    """Per PodGroup: (millicores, bytes, pods) of its placed pods, given each group's pod request."""
    sums: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
    for key, p in out["pods"].items():
        if p["node"]:
            group = key.split("/", 1)[1].rsplit("-p", 1)[0]
            cpu, mem = requests[group]
            s = sums[group]
            s[0] += cpu
            s[1] += mem
            s[2] += 1
    return {g: (s[0], s[1], s[2]) for g, s in sums.items()}


def rescaling() -> str:
    """Go case "rescaling test": root/sci (50) against root/eng (50) = eng/dev (50) + eng/prod (50);
    sci asks cpu and memory, dev only cpu, prod only memory, ten 1-unit pods each."""
    return (
        node("n", cpu="10", memory="10G", pods=50)
        + hqueue("root-sci", "root/sci", "100/50")
        + hqueue("root-eng-dev", "root/eng/dev", "100/50/50")
        + hqueue("root-eng-prod", "root/eng/prod", "100/50/50")
        + inqueue_group("pg1", "root-sci") + inqueue_group("pg21", "root-eng-dev")
        + inqueue_group("pg22", "root-eng-prod")
        + go_pods(10, "1", "1G", "pg1") + go_pods(10, "1", "0G", "pg21") + go_pods(10, "0", "1G", "pg22")
    )


RESCALING_REQUESTS = {"pg1": (1000, 10**9), "pg21": (1000, 0), "pg22": (0, 10**9)}
RESCALING_EXPECTED = {
    "pg1": (5000, 5_000_000_000, 5),
    "pg21": (5000, 0, 5),
    "pg22": (0, 5_000_000_000, 5),
}


def blocking_nodes() -> str:
    """Go case "blocking nodes test": four queues under the root at weight 25; pg31 (cpu) and pg32
    (memory) both sit in queue root-pg3-pg31 (root-pg3-pg32 exists but has no job)."""
    manifests = node("n", cpu="30", memory="30G", pods=500)
    for name, hierarchy, weights in [
        ("root-pg1", "root/pg1", "100/25"), ("root-pg2", "root/pg2", "100/25"),
        ("root-pg3-pg31", "root/pg3/pg31", "100/25/50"), ("root-pg3-pg32", "root/pg3/pg32", "100/25/50"),
        ("root-pg4", "root/pg4", "100/25"),
    ]:
        manifests += hqueue(name, hierarchy, weights)
    for group, queue_name in [("pg1", "root-pg1"), ("pg2", "root-pg2"), ("pg31", "root-pg3-pg31"),
                              ("pg32", "root-pg3-pg31"), ("pg4", "root-pg4")]:
        manifests += inqueue_group(group, queue_name)
    manifests += (go_pods(30, "1", "0G", "pg1") + go_pods(30, "1", "0G", "pg2") + go_pods(30, "1", "0G", "pg31")
                  + go_pods(30, "0", "1G", "pg32") + go_pods(30, "0", "1G", "pg4"))
    return manifests


BLOCKING_REQUESTS = {"pg1": (1000, 0), "pg2": (1000, 0), "pg31": (1000, 0), "pg32": (0, 10**9), "pg4": (0, 10**9)}
BLOCKING_EXPECTED = {
    "pg1": (10000, 0, 10),
    "pg2": (10000, 0, 10),
    "pg31": (10000, 0, 10),
    "pg32": (0, 15_000_000_000, 15),
    "pg4": (0, 15_000_000_000, 15),
}


def test_volcano_rescaling(simulate):
    """sci and eng split the cluster evenly; inside eng, dev's cpu and prod's memory are rescaled to
    one dominant share, so dev and prod each get as much as sci's dominant resource."""
    code, out = simulate(rescaling(), "--cycles", "1", conf=HDRF.format(on="true"))
    assert code == 0
    assert allocated_by_group(out, RESCALING_REQUESTS) == RESCALING_EXPECTED


def test_volcano_blocking_nodes(simulate):
    """Once cpu is used up, pg31's leaf is saturated and no longer holds back its queue: pg32 (same
    queue) and pg4 share the memory evenly."""
    code, out = simulate(blocking_nodes(), "--cycles", "1", conf=HDRF.format(on="true"))
    assert code == 0
    assert allocated_by_group(out, BLOCKING_REQUESTS) == BLOCKING_EXPECTED


@pytest.mark.parametrize(("manifests", "requests", "expected"), [
    (rescaling, RESCALING_REQUESTS, RESCALING_EXPECTED), (blocking_nodes, BLOCKING_REQUESTS, BLOCKING_EXPECTED),
])
def test_volcano_tier_is_refused_and_proportion_one_tier_down_gives_the_same(simulate, manifests, requests, expected):
    code, err = simulate(manifests(), "--cycles", "1", conf=GO_TIER)
    assert code == 2
    assert "tiers[0]: proportion and drf with hierarchy enabled conflicts" in err
    code, out = simulate(manifests(), "--cycles", "1", conf=PROPORTION_BELOW)
    assert code == 0
    assert allocated_by_group(out, requests) == expected


# -- weights and annotations -----------------------------------------------------------------


def two_queues(a_hierarchy: str | None, a_weights: str | None) -> str:
    """6 CPU; queue a (annotations as given) and queue b (root/b, weight 1) each run a job of ten
    1-CPU pods (minMember 1)."""
    manifests = node("n", cpu="6", memory="64Gi") + hqueue("a", a_hierarchy, a_weights) + hqueue("b", "root/b", "1/1")
    for q in "ab":
        manifests += podgroup(f"job-{q}", 1, queue=q)
        manifests += "".join(pod(f"{q}-{i}", cpu="1", memory="1Gi", group=f"job-{q}") for i in range(10))
    return manifests


def per_queue(out) -> dict[str, int]:
    placed = [k for k, p in out["pods"].items() if p["node"]]
    return {q: sum(1 for k in placed if k.startswith(f"default/{q}-")) for q in "ab"}


@pytest.mark.parametrize(("hierarchy", "weights", "expected"), [
    ("root/a", "1/5", {"a": 5, "b": 1}),      # share / weight: a is served until 5/6 / 5 passes 1/6
    ("root/a", "1/5/9", {"a": 5, "b": 1}),    # weights past the path's end are ignored
    ("root/a", "1/1", {"a": 3, "b": 3}),
    ("root/a", "7/1", {"a": 3, "b": 3}),      # the root's weight is never read
    ("root/a", "1/0.5", {"a": 3, "b": 3}),    # below 1: 1
    ("root/a", "5", {"a": 3, "b": 3}),        # too few weights: the missing one counts as 1
    ("root/a", "1/x", {"a": 3, "b": 3}),      # not a number: 1
])
def test_weights_split_the_cluster(simulate, hierarchy, weights, expected):
    """The last two queues are ones Volcano's validating webhook refuses at creation (simulate does
    not run its annotation checks); they pin how the scheduler reads such a queue if it exists anyway
    (Volcano's own scheduler would index past the weights of "5" and fail)."""
    code, out = simulate(two_queues(hierarchy, weights), conf=HDRF.format(on="true"))
    assert code == 0
    assert per_queue(out) == expected


def test_a_queue_without_hierarchy_is_never_ordered_by_hdrf(simulate):
    """Its jobs hang right under the root: against any queue only the root is compared, a tie,
    so queue creation time and then name decide, as without hdrf."""
    code, out = simulate(two_queues(None, None), conf=HDRF.format(on="true"))
    assert per_queue(out) == {"a": 6, "b": 0}


# -- reclaim ---------------------------------------------------------------------------------


def reclaim_cluster(b_weights: str) -> str:
    """4 CPU, all held by queue a (root/a, 1/1): four running 1-CPU pods.  Queue b (root/b) waits
    with a gang of two 1-CPU pods."""
    manifests = node("n", cpu="4", memory="64Gi") + hqueue("a", "root/a", "1/1") + hqueue("b", "root/b", b_weights)
    manifests += podgroup("job-a", 1, queue="a") + "".join(
        pod(f"a-{i}", cpu="1", memory="1Gi", group="job-a", node_name="n", phase="Running") for i in range(4))
    manifests += podgroup("job-b", 2, queue="b") + "".join(
        pod(f"b-{i}", cpu="1", memory="1Gi", group="job-b") for i in range(2))
    return manifests


def test_reclaim_by_weighted_hierarchical_share(simulate):
    """b weighs 3: with two pods it counts 0.5/3 against a's 0.5, still ahead, so both of its pods
    reclaim a CPU from a."""
    code, out = simulate(reclaim_cluster("1/3"), conf=RECLAIM.format(on="true"))
    assert code == 0
    assert len(out["evicted"]) == 2 and all(k.startswith("default/a-") for k in out["evicted"])
    assert per_queue(out) == {"a": 2, "b": 2}
    assert out["podgroups"]["default/job-b"]["phase"] == "Running"


def test_reclaim_stops_at_an_equal_share(simulate):
    """At equal weights b's second pod would leave b and a at 0.5 each: not strictly ahead, no
    victim, so the gang of two cannot be pipelined and nothing is evicted."""
    code, out = simulate(reclaim_cluster("1/1"), conf=RECLAIM.format(on="true"))
    assert code == 0
    assert out["evicted"] == []
    assert per_queue(out) == {"a": 4, "b": 0}
