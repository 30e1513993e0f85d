"""``vcsched bench --fabric NxM --gang-topology MODE``: the HyperNode tree and the jobs the flags build
(not timed): the tree simulate would admit, every PodGroup in the mode, network-topology-aware in the
conf, and in hard mode each gang on one leaf switch."""

from __future__ import annotations

import json

import pytest

import vcsched.bench as bench
from vcsched.bench import fabric_hypernodes, parse_fabric, parse_gang_topology
from vcsched.cli import main
from vcsched.sim.fields import Checker
from vcsched.sim.hypernode_manifest import validate_hypernode


def nodes(n: int) -> list[dict]:
    return [{"metadata": {"name": f"node-{i:05d}"}} for i in range(n)]


def members(h: dict) -> list[str]:
    return [m["selector"]["exactMatch"]["name"] for m in h["spec"]["members"]]


def test_the_fabric_is_leaves_of_n_nodes_under_spines_of_m_leaves():
    tree = fabric_hypernodes(nodes(20), 8, 2)
    for h in tree:
        validate_hypernode(h, Checker("bench"))
    by_name = {h["metadata"]["name"]: h for h in tree}
    assert sorted(by_name) == ["leaf-0000", "leaf-0001", "leaf-0002", "spine-0000", "spine-0001"]
    assert [by_name[f"leaf-000{i}"]["spec"]["tier"] for i in range(3)] == [1, 1, 1]
    assert members(by_name["leaf-0000"]) == [f"node-{i:05d}" for i in range(8)]
    assert members(by_name["leaf-0002"]) == [f"node-{i:05d}" for i in range(16, 20)]  # the rest
    assert by_name["spine-0000"]["spec"]["tier"] == 2
    assert members(by_name["spine-0000"]) == ["leaf-0000", "leaf-0001"]
    assert members(by_name["spine-0001"]) == ["leaf-0002"]
    assert {m["type"] for h in tree for m in h["spec"]["members"]} == {"Node", "HyperNode"}


@pytest.mark.parametrize("text, shape", [("8x4", (8, 4)), ("16X2", (16, 2)), ("1x1", (1, 1))])
def test_parse_fabric(text, shape):
    assert parse_fabric(text) == shape


@pytest.mark.parametrize("text, topology", [("hard:1", {"mode": "hard", "highestTierAllowed": 1}),
                                            ("hard:2", {"mode": "hard", "highestTierAllowed": 2}),
                                            ("soft", {"mode": "soft"})])
def test_parse_gang_topology(text, topology):
    assert parse_gang_topology(text) == topology


@pytest.mark.parametrize("argv, flag", [
    (["--fabric", "8"], "--fabric"), (["--fabric", "0x4"], "--fabric"), (["--fabric", "axb"], "--fabric"),
    (["--fabric", "8x4", "--gang-topology", "hard"], "--gang-topology"),
    (["--fabric", "8x4", "--gang-topology", "hard:0"], "--gang-topology"),
    (["--fabric", "8x4", "--gang-topology", "soft:1"], "--gang-topology"),
    (["--gang-topology", "hard:1"], "needs --fabric"),
])
def test_bad_flags_are_refused(capsys, argv, flag):
    assert main(["bench", "--nodes", "8", "--pods", "8", *argv]) == 2
    assert flag in capsys.readouterr().err


@pytest.mark.parametrize("mode", ["hard:1", "soft", None])
def test_the_run_places_every_gang_and_hard_mode_keeps_each_on_one_leaf(monkeypatch, capsys, mode):
    """32 nodes as 4 leaves of 8 under 2 spines; 8 gangs of 8 pods.  The conf gains network-topology-aware,
    the cache the 6 HyperNodes, every PodGroup the mode; all pods are placed, in hard:1 each gang on one
    leaf."""
    seen: dict = {}
    load_cache = bench.load_cache

    def spy(cache, *args, **kwargs):
        seen["cache"] = load_cache(cache, *args, **kwargs)
        return seen["cache"]

    scheduler = bench.Scheduler

    def spy_scheduler(cache, conf):
        seen["conf"] = conf
        return scheduler(cache, conf)

    monkeypatch.setattr(bench, "load_cache", spy)
    monkeypatch.setattr(bench, "Scheduler", spy_scheduler)
    argv = ["bench", "--nodes", "32", "--pods", "64", "--gang-size", "8", "--fabric", "8x2", "-o", "json"]
    assert main(argv + (["--gang-topology", mode] if mode else [])) == 0
    assert json.loads(capsys.readouterr().out)["pods_placed"] == 64
    assert "network-topology-aware" in {o.name for tier in seen["conf"].tiers for o in tier}
    cache = seen["cache"]
    tree = cache.hypernode_tree()
    assert sorted(n for n, h in tree.hypernodes.items() if h.exists) == \
        ["leaf-0000", "leaf-0001", "leaf-0002", "leaf-0003", "spine-0000", "spine-0001"]
    expected = {None: None, "soft": {"mode": "soft"}, "hard:1": {"mode": "hard", "highestTierAllowed": 1}}[mode]
    groups = [j.podgroup for j in cache.jobs.values()]
    assert len(groups) == 8
    for pg in groups:
        got = pg.network_topology
        assert (None if got is None else {"mode": got.mode, **({"highestTierAllowed": got.highest_tier_allowed}
                                                                 if got.highest_tier_allowed else {})}) == expected
    leaves: dict[str, set[int]] = {}
    for job in cache.jobs.values():
        for t in job.tasks.values():
            assert t.node_name
            leaves.setdefault(job.uid, set()).add(int(t.node_name.split("-")[1]) // 8)
    if mode == "hard:1":
        assert all(len(v) == 1 for v in leaves.values())
