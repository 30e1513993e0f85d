"""Network-topology-aware scheduling on the real API server (issue 18): the chart's HyperNode CRD, a two-tier
fabric of fake nodes (two leaf switches of four nodes under one spine), and ``vcsched run`` as the chart's
ClusterRole allows, with ``network-topology-aware`` in its conf.

- a Volcano Job in hard mode lands whole under one leaf, its PodGroup and pods written as usual;
- with no leaf that has room, a hard job waits and the same job in soft mode spans the spine;
- a job that runs keeps to its leaf when it grows, in the same scheduler and across a restart (the leaf
  is recovered from its pods' nodes);
- a PodGroup's ``subGroupPolicy`` places each subgroup under one leaf, and so does a Volcano Job's
  ``partitionPolicy`` (through the job controller's subgroup policy);
- bad input the API server accepts: a ``highestTierName`` naming no tier (one InvalidNetworkTopology
  Warning event on the PodGroup), a member regex Go does not compile and a cycle of HyperNodes (a log line
  naming the HyperNode and one InvalidHyperNode Warning event on it, in ``default`` as for any
  cluster-scoped object); the loop runs on.

Nodes are made spread-out on purpose (``nodeorder`` prefers the least requested node): without the
topology the pods of these jobs would cross leaves.
"""

from __future__ import annotations

import pytest

from .conftest import Kube, VcschedRunner, condition, forbidden_lines, pod, podgroup

pytestmark = pytest.mark.asyncio

HYPERNODES = "/apis/topology.volcano.sh/v1alpha1/hypernodes"
LEAF_LABEL = "network/leaf"

NT_CONF = """
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
  - name: network-topology-aware
"""


def hypernode(name: str, tier: int, members: list[dict], tier_name: str = "") -> dict:
    spec: dict = {"tier": tier, "members": members}
    if tier_name:
        spec["tierName"] = tier_name
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": spec}


def child(name: str) -> dict:
    return {"type": "HyperNode", "selector": {"exactMatch": {"name": name}}}


# the leaves alternate in the nodes' order (by name, as the API server lists them): a search that ignores
# the topology walks from one leaf to the other at every node
LEAF_NODES = {"leaf-0": [f"node-{i}" for i in (0, 2, 4, 6)], "leaf-1": [f"node-{i}" for i in (1, 3, 5, 7)]}


async def fabric(kube: Kube, cpu: str = "4", leaf_1_pattern: str = "^node-[1357]$") -> None:
    """Two leaves (tier 1, tierName leaf) of four nodes under a spine (tier 2, tierName spine): leaf-0 takes
    its nodes by label, leaf-1 by a regex over node names, the spine takes the leaves by name."""
    for leaf, nodes in LEAF_NODES.items():
        for n in nodes:
            await kube.node(n, cpu=cpu, memory="16Gi", labels={LEAF_LABEL: leaf})
    await kube.create(hypernode("leaf-0", 1, [{"type": "Node", "selector": {
        "labelMatch": {"matchLabels": {LEAF_LABEL: "leaf-0"}}}}], "leaf"))
    await kube.create(hypernode("leaf-1", 1, [{"type": "Node", "selector": {
        "regexMatch": {"pattern": leaf_1_pattern}}}], "leaf"))
    await kube.create(hypernode("spine", 2, [child("leaf-0"), child("leaf-1")], "spine"))


def leaf_of(node: str) -> str:
    return next(leaf for leaf, nodes in LEAF_NODES.items() if node in nodes)


def nt_podgroup(name: str, min_member: int, topology: dict | None = None, **spec) -> dict:
    pg = podgroup(name, min_member)
    if topology is not None:
        pg["spec"]["networkTopology"] = topology
    pg["spec"].update(spec)
    return pg


def vcjob(name: str, replicas: int, cpu: str, topology: dict) -> dict:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulerName": "volcano", "minAvailable": replicas, "queue": "default",
                     "networkTopology": topology,
                     "tasks": [{"name": "worker", "replicas": replicas, "template": {"spec": {
                         "restartPolicy": "Never",
                         "containers": [{"name": "c", "image": "busybox",
                                         "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}}}]}}


async def pods_of(kube: Kube, names: list[str]) -> list[dict]:
    return [await kube.pod("default", n) for n in names]


async def all_bound(kube: Kube, names: list[str]) -> list[dict] | None:
    pods = await pods_of(kube, names)
    return pods if all(p and p["spec"].get("nodeName") for p in pods) else None


def leaves(pods: list[dict]) -> set[str]:
    return {leaf_of(p["spec"]["nodeName"]) for p in pods if p["spec"].get("nodeName")}


async def unschedulable(kube: Kube, name: str) -> dict | None:
    pg = await kube.podgroup("default", name)
    c = condition(pg, "Unschedulable")
    return pg if c and c.get("status") == "True" else None


async def settle(kube: Kube, marker: str, vcsched_proc) -> None:
    """A pod without a topology created now and bound: at least one full session ran after everything
    created before it (its creation comes after theirs in the watch). It asks for nothing (BestEffort,
    bound by backfill), so it takes no room from the jobs."""
    await kube.create(pod(marker, cpu="0", memory="0"))
    await kube.eventually(lambda: kube.bound("default", marker), f"{marker} bound: the loop runs on")


async def test_a_hard_job_lands_whole_under_one_leaf_and_its_podgroup_is_written_as_usual(
        kube: Kube, vcsched: VcschedRunner):
    """Eight workers of 1 CPU, hard within tier 1: all eight on one leaf (two a node), never split, though
    nodeorder alone would spread them over all eight nodes of both leaves."""
    await kube.conf_map(NT_CONF)
    await fabric(kube)
    p = vcsched.start()
    # a Job submitted to a queue not yet Open is refused (Volcano's admission; vcsched's controller fails it)
    await kube.eventually(lambda: _queue_open(kube, "default"), "the default queue Open")
    await kube.create(vcjob("train", 8, "1", {"mode": "hard", "highestTierAllowed": 1}))
    pg = await kube.eventually(lambda: _podgroup_of_job(kube, "train"), "the job's PodGroup made")
    assert pg["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 1}
    pods = await kube.eventually(lambda: _job_pods_bound(kube, "train", 8), "the eight workers bound")
    assert len(leaves(pods)) == 1, [p["spec"]["nodeName"] for p in pods]
    (leaf,) = leaves(pods)
    assert {p["spec"]["nodeName"] for p in pods} <= set(LEAF_NODES[leaf])
    # the PodGroup as vcsched always writes it: Running, the usual status fields, no annotation of ours
    name = pg["metadata"]["name"]
    pg = await kube.eventually(lambda: _phase(kube, name, "Running"), "the PodGroup Running")
    assert set(pg["status"]) <= {"phase", "running", "succeeded", "failed", "conditions"}
    assert not any(k.startswith(("volcano.sh/job-allocated", "volcano.sh/hypernode"))
                   for k in pg["metadata"].get("annotations") or {})
    assert forbidden_lines(p) == []


async def test_with_no_leaf_with_room_a_hard_job_waits_and_a_soft_one_spans_the_spine(
        kube: Kube, vcsched: VcschedRunner):
    """One node of each leaf is busy: each leaf has three free 4-CPU nodes, the cluster six. A job of four
    3-CPU pods (one a node) fits the cluster, no leaf: hard (by tier name) it waits; soft it spans both."""
    await kube.conf_map(NT_CONF)
    await fabric(kube)
    for leaf, nodes in LEAF_NODES.items():
        await kube.create(pod(f"busy-{leaf}", cpu="4", node_name=nodes[0]))
    await kube.create(nt_podgroup("hard", 4, {"mode": "hard", "highestTierName": "leaf"}))
    hard = [f"hard-{i}" for i in range(4)]
    for n in hard:
        await kube.create(pod(n, cpu="3", group="hard"))
    p = vcsched.start()
    pg = await kube.eventually(lambda: unschedulable(kube, "hard"), "the hard job's Unschedulable condition")
    assert "4" in condition(pg, "Unschedulable")["message"]
    await settle(kube, "marker-0", p)
    assert not leaves(await pods_of(kube, hard)), "no pod of the hard job bound"
    # the same job in soft mode: the lowest tier that holds it, the spine
    await kube.create(nt_podgroup("soft", 4, {"mode": "soft", "highestTierName": "leaf"}))
    soft = [f"soft-{i}" for i in range(4)]
    for n in soft:
        await kube.create(pod(n, cpu="3", group="soft"))
    pods = await kube.eventually(lambda: all_bound(kube, soft), "the soft job bound")
    assert leaves(pods) == {"leaf-0", "leaf-1"}
    await settle(kube, "marker-1", p)
    assert not leaves(await pods_of(kube, hard)), "the hard job still waits"
    assert forbidden_lines(p) == []


@pytest.mark.parametrize("restart", [False, True], ids=["same-scheduler", "restarted"])
async def test_a_running_job_that_grows_keeps_to_its_leaf(kube: Kube, vcsched: VcschedRunner, restart: bool):
    """Two pods of 2 CPU, hard within tier 1, bound under one leaf; then eight more pods come: six fit the
    leaf's 12 free CPUs and bind there; the last two wait, though the other leaf is empty. The same scheduler
    keeps the job's leaf between sessions; a restarted one recovers it from where the job's pods run."""
    await kube.conf_map(NT_CONF)
    await fabric(kube)
    await kube.create(nt_podgroup("grow", 2, {"mode": "hard", "highestTierAllowed": 1}))
    first = ["grow-0", "grow-1"]
    for n in first:
        await kube.create(pod(n, cpu="2", group="grow"))
    p = vcsched.start()
    (leaf,) = leaves(await kube.eventually(lambda: all_bound(kube, first), "the first two bound"))
    await kube.eventually(lambda: _phase(kube, "grow", "Running"), "the PodGroup Running")
    assert forbidden_lines(p) == []
    if restart:
        p.kill()
    more = [f"grow-{i}" for i in range(2, 10)]
    for n in more:
        await kube.create(pod(n, cpu="2", group="grow"))
    if restart:
        p = vcsched.start()
    await settle(kube, "marker", p)
    await kube.eventually(lambda: _bound_count(kube, more, 6), "six more bound")
    await settle(kube, "marker-2", p)
    pods = await pods_of(kube, first + more)
    assert leaves(pods) == {leaf}
    assert sum(1 for x in pods if x["spec"].get("nodeName")) == 8
    assert forbidden_lines(p) == []


async def test_each_subgroup_lands_under_one_leaf(kube: Kube, vcsched: VcschedRunner):
    """A PodGroup of eight 1-CPU pods in two subgroups of four (label ``part``), each hard within tier 1:
    each subgroup's four pods under one leaf."""
    await kube.conf_map(NT_CONF)
    await fabric(kube)
    await kube.create(nt_podgroup("parts", 8, subGroupPolicy=[{
        "name": "part", "subGroupSize": 4, "minSubGroups": 2, "matchLabelKeys": ["part"],
        "networkTopology": {"mode": "hard", "highestTierAllowed": 1}}]))
    names = {part: [f"parts-{part}-{i}" for i in range(4)] for part in ("a", "b")}
    for part, ns in names.items():
        for n in ns:
            body = pod(n, group="parts")
            body["metadata"]["labels"] = {"part": part}
            await kube.create(body)
    p = vcsched.start()
    for part, ns in names.items():
        pods = await kube.eventually(lambda ns=ns: all_bound(kube, ns), f"subgroup {part} bound")
        assert len(leaves(pods)) == 1, (part, [x["spec"]["nodeName"] for x in pods])
    created = await kube.podgroup("default", "parts")
    assert created["spec"]["subGroupPolicy"][0]["matchLabelKeys"] == ["part"]  # kept by the CRD's schema
    assert forbidden_lines(p) == []


async def test_each_partition_of_a_volcano_job_lands_under_one_leaf(kube: Kube, vcsched: VcschedRunner):
    """A Volcano Job's task with a ``partitionPolicy`` (two partitions of four, each hard within tier 1): the
    job controller writes one subgroup policy and labels the pods ``volcano.sh/partition-id``; each
    partition's pods under one leaf."""
    await kube.conf_map(NT_CONF)
    await fabric(kube)
    p = vcsched.start()
    await kube.eventually(lambda: _queue_open(kube, "default"), "the default queue Open")
    body = vcjob("parted", 8, "1", {"mode": "hard", "highestTierAllowed": 2})
    body["spec"]["tasks"][0]["partitionPolicy"] = {
        "totalPartitions": 2, "partitionSize": 4, "minPartitions": 2,
        "networkTopology": {"mode": "hard", "highestTierAllowed": 1}}
    await kube.create(body)
    pods = await kube.eventually(lambda: _job_pods_bound(kube, "parted", 8), "the eight workers bound")
    by_partition: dict[str, list[dict]] = {}
    for x in pods:
        by_partition.setdefault(x["metadata"]["labels"]["volcano.sh/partition-id"], []).append(x)
    assert sorted(by_partition) == ["0", "1"]
    for part, members in by_partition.items():
        assert len(members) == 4 and len(leaves(members)) == 1, (part, [x["spec"]["nodeName"] for x in members])
    pg = await _podgroup_of_job(kube, "parted")
    assert [sp["subGroupSize"] for sp in pg["spec"]["subGroupPolicy"]] == [4]
    assert forbidden_lines(p) == []


async def test_a_tier_name_naming_no_tier_is_one_warning_event_and_the_job_runs_without_a_limit(
        kube: Kube, vcsched: VcschedRunner):
    """Volcano's adjustNetworkTopologySpec logs "Failed to translate highestTierName" and schedules the job
    without a tier limit; vcsched also writes one InvalidNetworkTopology Warning event on the PodGroup."""
    await kube.conf_map(NT_CONF)
    await fabric(kube)
    await kube.create(nt_podgroup("typo", 2, {"mode": "hard", "highestTierName": "rack"}))
    typo = ["typo-0", "typo-1"]
    for n in typo:
        await kube.create(pod(n, group="typo"))
    p = vcsched.start()
    await kube.eventually(lambda: all_bound(kube, typo), "the job bound without a tier limit")
    (event,) = await kube.eventually(
        lambda: kube.events("default", reason="InvalidNetworkTopology", kind="PodGroup", name="typo"),
        "the PodGroup's Warning event")
    assert event["type"] == "Warning"
    assert event["message"].startswith("spec.networkTopology: failed to find hypernode tier name rack")
    assert event["involvedObject"]["uid"] == (await kube.podgroup("default", "typo"))["metadata"]["uid"]
    logged = p.logged("Failed to translate highestTierName, skip translation")
    assert logged and logged[0]["job"] == "default/typo"
    await settle(kube, "marker-0", p)
    await settle(kube, "marker-1", p)
    events = await kube.events("default", reason="InvalidNetworkTopology")
    assert len(events) == 1 and events[0]["count"] == 1, "once per problem"
    assert len(p.logged("Failed to translate highestTierName, skip translation")) == 1
    assert forbidden_lines(p) == []


async def test_a_member_regex_that_does_not_compile_is_logged_and_a_warning_event_on_its_hypernode(
        kube: Kube, vcsched: VcschedRunner):
    """leaf-1's regex ``^node-[1357`` is no RE2: Volcano logs it and the member selects nothing (the tree stays
    ready); vcsched logs it once naming the HyperNode and writes one InvalidHyperNode Warning event on it,
    in ``default`` (a HyperNode is cluster-scoped). A hard job still lands under leaf-0; leaf-1's nodes are
    in no leaf."""
    await kube.conf_map(NT_CONF)
    await fabric(kube, leaf_1_pattern="^node-[1357")
    await kube.create(nt_podgroup("job", 2, {"mode": "hard", "highestTierAllowed": 1}))
    job = ["job-0", "job-1"]
    for n in job:
        await kube.create(pod(n, group="job"))
    p = vcsched.start()
    assert leaves(await kube.eventually(lambda: all_bound(kube, job), "the job bound")) == {"leaf-0"}
    (event,) = await kube.eventually(
        lambda: kube.events("default", reason="InvalidHyperNode", kind="HyperNode", name="leaf-1"),
        "leaf-1's Warning event")
    hn = await kube.get(f"{HYPERNODES}/leaf-1")
    assert event["type"] == "Warning"
    assert event["involvedObject"]["uid"] == hn["metadata"]["uid"]
    assert event["involvedObject"]["apiVersion"] == "topology.volcano.sh/v1alpha1"
    assert "namespace" not in event["involvedObject"]
    # what `kubectl describe hypernode leaf-1` asks for (SearchEvents: every namespace, the object's reference)
    described = await kube.list("/api/v1/events", fieldSelector=(
        f"involvedObject.name=leaf-1,involvedObject.namespace=,involvedObject.kind=HyperNode,"
        f"involvedObject.uid={hn['metadata']['uid']}"))
    assert [e["metadata"]["name"] for e in described] == [event["metadata"]["name"]]
    assert event["message"].startswith("spec.members[0].selector.regexMatch.pattern: '^node-[1357' is not a valid")
    await settle(kube, "marker-0", p)
    await settle(kube, "marker-1", p)
    assert len(await kube.events("default", reason="InvalidHyperNode")) == 1
    said = p.logged("HyperNode member refused: it selects no node")
    assert len(said) == 1 and said[0]["hypernode"] == "leaf-1"
    assert forbidden_lines(p) == []


async def test_a_cycle_of_hypernodes_is_a_warning_event_jobs_with_a_topology_wait_until_it_is_broken(
        kube: Kube, vcsched: VcschedRunner):
    """spine-a holds spine-b, which holds spine-a: Volcano's tree is not ready, jobs with a network topology
    wait (logged); vcsched also writes one InvalidHyperNode Warning event on the HyperNode that closes the
    cycle. Pods without a topology bind meanwhile; once the cycle is deleted, the waiting job binds."""
    await kube.conf_map(NT_CONF)
    await fabric(kube)
    await kube.create(hypernode("spine-a", 3, [child("spine-b")]))
    await kube.create(hypernode("spine-b", 4, [child("spine-a")]))
    await kube.create(nt_podgroup("job", 2, {"mode": "hard", "highestTierAllowed": 1}))
    job = ["job-0", "job-1"]
    for n in job:
        await kube.create(pod(n, group="job"))
    p = vcsched.start()
    (event,) = await kube.eventually(lambda: kube.events("default", reason="InvalidHyperNode"),
                                     "the cycle's Warning event")
    at = event["involvedObject"]["name"]
    assert at in ("spine-a", "spine-b") and event["involvedObject"]["kind"] == "HyperNode"
    assert event["message"].startswith("cyclic dependency detected")
    assert event["message"].endswith("jobs with a network topology wait")
    (record,) = p.logged("HyperNodes are not ready to schedule: jobs with a network topology wait")
    assert record["hypernode"] == at and record["error"] == event["message"].split("; ")[0]
    await settle(kube, "marker-0", p)
    assert not leaves(await pods_of(kube, job)), "the topology job waits"
    await kube.delete(f"{HYPERNODES}/spine-b")
    assert len(leaves(await kube.eventually(lambda: all_bound(kube, job), "the job bound, the cycle gone"))) == 1
    assert len(await kube.events("default", reason="InvalidHyperNode")) == 1
    assert forbidden_lines(p) == []


# -- helpers ----------------------------------------------------------------------------------------


async def _podgroup_of_job(kube: Kube, job: str) -> dict | None:
    for pg in await kube.list("/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups"):
        if any(ref.get("name") == job for ref in pg["metadata"].get("ownerReferences") or []):
            return pg
    return None


async def _job_pods_bound(kube: Kube, job: str, n: int) -> list[dict] | None:
    pods = await kube.list("/api/v1/namespaces/default/pods", labelSelector=f"volcano.sh/job-name={job}")
    return pods if len(pods) == n and all(p["spec"].get("nodeName") for p in pods) else None


async def _phase(kube: Kube, name: str, phase: str) -> dict | None:
    pg = await kube.podgroup("default", name)
    return pg if pg and (pg.get("status") or {}).get("phase") == phase else None


async def _bound_count(kube: Kube, names: list[str], n: int) -> bool:
    return sum(1 for p in await pods_of(kube, names) if p and p["spec"].get("nodeName")) >= n


async def _queue_open(kube: Kube, name: str) -> bool:
    q = await kube.get(f"/apis/scheduling.volcano.sh/v1beta1/queues/{name}")
    return bool(q) and (q.get("status") or {}).get("state") == "Open"
