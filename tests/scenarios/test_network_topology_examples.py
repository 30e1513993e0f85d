"""The network-topology worked example (conf/examples/network-topology*.yaml, the README tour), the tier
checks of simulate's input, and normal pods packed by HyperNode: what vcsched adds around Volcano's
network-topology cases (those are in test_network_topology.py)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

from vcsched.cli import main

from .conftest import SIM_NOW

EXAMPLES = Path(__file__).resolve().parents[2] / "conf" / "examples"


def run(capsys, *files: Path) -> tuple[int, dict | str]:
    argv = ["simulate", "-o", "json", "--now", SIM_NOW]
    for f in files:
        argv += ["-f", str(f)]
    code = main(argv)
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else err)


def leaves(doc: dict, job: str) -> Counter:
    """How many of the job's pods run under each leaf switch (node-L-I is under leaf-L)."""
    return Counter(f"leaf-{p['node'].split('-')[1]}" for key, p in doc["pods"].items()
                   if key.startswith(f"default/{job}-") and p["node"])


def test_the_hard_job_lands_whole_under_one_leaf(capsys):
    code, doc = run(capsys, EXAMPLES / "network-topology.yaml")
    assert code == 0
    assert leaves(doc, "train-worker") == {"leaf-0": 16}
    (pg,) = [g for k, g in doc["podgroups"].items() if k.startswith("default/train-")]
    assert (pg["hypernode"], pg["tier"]) == ("leaf-0", 1)
    assert doc["hypernodes"]["leaf-0"]["used"]["cpu"] == "64"


def test_on_a_fragmented_fabric_the_hard_job_waits_and_the_soft_one_spans_the_spine(capsys):
    code, doc = run(capsys, EXAMPLES / "network-topology.yaml", EXAMPLES / "network-topology-busy.yaml")
    assert code == 0
    assert not leaves(doc, "train-worker")  # no leaf has the 8 free nodes the hard job needs
    assert leaves(doc, "train-soft-worker") == {"leaf-0": 12, "leaf-1": 4}
    pgs = {k.split("/")[1].rsplit("-", 5)[0]: g for k, g in doc["podgroups"].items()}
    assert (pgs["train-soft"]["hypernode"], pgs["train-soft"]["tier"]) == ("spine", 2)
    assert "hypernode" not in pgs["train"]
    waiting = doc["pods"]["default/train-worker-0"]["diagnosis"]["topology"]
    assert waiting["highestTierAllowed"] == 1 and waiting["asks"]["cpu"] == "64"
    assert max(int(h["free"]["cpu"]) for h in waiting["hypernodes"]) == 48


def fabric_with(job_topology: dict) -> str:
    docs = list(yaml.safe_load_all((EXAMPLES / "network-topology.yaml").read_text()))
    for d in docs:
        if d["kind"] == "Job":
            d["spec"]["networkTopology"] = job_topology
    return yaml.safe_dump_all(docs)


@pytest.mark.parametrize("topology, field, message", [
    ({"mode": "hard", "highestTierName": "rack"}, "spec.networkTopology.highestTierName",
     "no HyperNode tier is named 'rack' (tier names: leaf, spine)"),
    ({"mode": "hard", "highestTierAllowed": 0}, "spec.networkTopology.highestTierAllowed",
     "no HyperNode tier 0 exists: the lowest tier is 1"),
])
def test_a_hard_topology_naming_no_tier_is_refused(capsys, tmp_path, topology, field, message):
    path = tmp_path / "fabric.yaml"
    path.write_text(fabric_with(topology))
    code, err = run(capsys, path)
    assert code == 2
    assert f"(Job default/train): {field}: {message}" in err


def test_soft_mode_ignores_the_tier(capsys, tmp_path):
    path = tmp_path / "fabric.yaml"
    path.write_text(fabric_with({"mode": "soft", "highestTierAllowed": 0}))
    code, doc = run(capsys, path)
    assert code == 0
    assert sum(leaves(doc, "train-worker").values()) == 16


def singles(tmp_path, normal_pods: bool) -> Path:
    """The example fabric, a pod already running on leaf-1, and eight single pods (each its own job)."""
    docs = [d for d in yaml.safe_load_all((EXAMPLES / "network-topology.yaml").read_text()) if d["kind"] != "Job"]
    conf = docs[0]["data"]["volcano-scheduler.conf"]
    docs[0]["data"]["volcano-scheduler.conf"] = conf.replace(
        "- name: network-topology-aware",
        "- name: network-topology-aware\n    arguments: {hypernode.binpack.normal-pod.enable: %s}" % str(normal_pods).lower())
    docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "early", "namespace": "default"},
                 "spec": {"nodeName": "node-1-0", "schedulerName": "default-scheduler",
                          "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}}}]},
                 "status": {"phase": "Running"}})
    for i in range(8):
        docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"single-{i}", "namespace": "default"},
                     "spec": {"schedulerName": "volcano", "containers": [
                         {"name": "c", "image": "x", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}]}})
    path = tmp_path / f"singles-{normal_pods}.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


def test_normal_pods_are_packed_into_fuller_leaves(capsys, tmp_path):
    """``hypernode.binpack.normal-pod.enable`` (on by default): a pod without a network topology scores a
    node by how full its HyperNodes would be, against the node scorers that spread pods over empty
    nodes.  With it, the single pods gather in leaf-1, which already runs a pod; without it they go
    where the node scores alone send them.  (The score is worked out node by node and shared between
    pods of one shape; the 1,000-node fabric bench places exactly as scoring them as a batch did.)"""
    placed = {}
    for normal_pods in (True, False):
        code, doc = run(capsys, singles(tmp_path, normal_pods))
        assert code == 0
        placed[normal_pods] = Counter(f"leaf-{p['node'].split('-')[1]}" for k, p in doc["pods"].items()
                                      if k.startswith("default/single-"))
    assert placed[True]["leaf-1"] >= 7
    assert placed[False]["leaf-1"] <= 2


def test_the_per_node_score_orders_nodes_as_the_batch_score_and_follows_placements(tmp_path):
    """The normal-pod score, worked out node by node, differs from Volcano's batch score only by the
    terms every node shares (the HyperNodes holding all nodes): the differences between nodes are the
    same.  A placement moves the score of every node of its leaf, and the plugin says so to the node
    search (the nodes are touched and logged as changed)."""
    from datetime import datetime, timezone

    from vcsched.api.types import TaskStatus
    from vcsched.cache import Cache
    from vcsched.conf import parse_conf
    from vcsched.framework.registry import plugin_classes
    from vcsched.framework.session import SchedulerState, Session
    from vcsched.framework.statement import Statement
    from vcsched.sim.cluster import SimCluster
    from vcsched.sim.manifests import load_manifests

    path = singles(tmp_path, True)
    created = datetime(2026, 1, 1, tzinfo=timezone.utc)
    cluster = SimCluster.from_manifests(load_manifests([str(path)], created=created), ("volcano",), created.timestamp())
    cache = Cache(("volcano",))
    cluster.feed(cache)
    conf = parse_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: network-topology-aware\n')
    ssn = Session(cache.snapshot(), conf, plugin_classes(), SchedulerState(), now=created.timestamp(), uid="t")
    ssn.open()
    plugin = ssn.plugins["network-topology-aware"]
    task = next(t for j in ssn.jobs.values() for t in j.tasks.values()
                if t.status == TaskStatus.Pending and t.name == "single-0")

    def check_against_batch() -> dict[str, float]:
        per_node = {n.name: plugin.normal_node_score(task, n) for n in ssn.node_list}
        batch = {name: plugin._scaled(s) for name, s in plugin.normal_scores(task, ssn.node_list).items()}
        ref = ssn.node_list[0].name
        for name in per_node:
            assert per_node[name] - per_node[ref] == pytest.approx(batch[name] - batch[ref], abs=1e-9)
        return per_node

    before = check_against_batch()
    assert before["node-1-1"] > before["node-0-1"]  # leaf-1 runs a pod already: fuller
    other = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == "single-1")
    logged = len(ssn.node_changes)
    generation = ssn.nodes["node-0-5"].generation
    Statement(ssn).allocate(other, ssn.nodes["node-0-0"])
    changed = {ssn.node_list[i].name for i in ssn.node_changes[logged:]}
    assert {f"node-0-{i}" for i in range(8)} <= changed
    assert not any(name.startswith("node-1-") for name in changed)
    assert ssn.nodes["node-0-5"].generation > generation
    after = check_against_batch()
    assert after["node-0-5"] > before["node-0-5"]
    assert after["node-1-5"] == before["node-1-5"]
