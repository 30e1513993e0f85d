"""HyperNode discovery from node labels (scheduler/controllers/hypernode_discovery.py), case by case
as Volcano's pkg/controllers/hypernode tests: discovery/label/label_test.go, config/loader_test.go,
hypernode_controller_test.go and discovery/manager_test.go.

Volcano's label tests count the HyperNodes only (their names are random); these check every one:
tier, tierName, members and labels.  manager_test.go's acknowledgement cases
(TestResultSyncedTargetsProducingDiscoverer, TestStopDiscovererWaitsForDeliveredResultAndDropsBufferedResults)
are about Go channels between goroutines and have no counterpart here: one asyncio task discovers and
writes (scheduler/kube/hypernode_discovery.py; the real-apiserver test covers it)."""

from __future__ import annotations

import itertools

import pytest

from vcsched.controllers.hypernode_discovery import (
    CONFIG_KEY, DEFAULT_INTERVAL, SOURCE_LABEL, DiscoveredHyperNode, DiscoveryConfigError, DiscoveryError,
    DiscoverySource, NetworkTopologyConfig, clean_type_name, configmap_name, discover_from_labels, load_config,
    parse_go_duration, parse_label_config, plan_reconcile, random_suffix)

# label_test.go getCfg(): three two-tier types, the last entry of each the node's own hostname label
CFG = {"networkTopologyTypes": {
    "topologyA2": [{"nodeLabel": "volcano.sh/torA2-2"}, {"nodeLabel": "volcano.sh_torA2-1"},
                   {"nodeLabel": "kubernetes.io/hostname"}],
    "topologyA3": [{"nodeLabel": "volcano.sh/torA3-2"}, {"nodeLabel": "volcano.sh/torA3-1"},
                   {"nodeLabel": "kubernetes.io/hostname"}],
    "topologyA5": [{"nodeLabel": "volcano.sh/torA5-2"}, {"nodeLabel": "volcano.sh/torA5-1"},
                   {"nodeLabel": "kubernetes.io/hostname"}],
}}
T1, T2 = "volcano.sh_torA2-1", "volcano.sh/torA2-2"


def suffixes(*names: str):
    it = iter(names) if names else (f"x{i:04d}" for i in itertools.count())
    return lambda: next(it)


def discover(nodes: dict[str, dict[str, str]], existing: dict[str, dict] | None = None, cfg=CFG, **kw):
    found = discover_from_labels(nodes.items(), parse_label_config(cfg), existing or {}, **kw)
    return {d.name: d.manifest() for d in found}


def shape(hypernodes: dict[str, dict]) -> dict[tuple[int, str], tuple[str, ...]]:
    """(tier, the topology label's value) → the members, named by node or by the child's label value
    (sorted: the children's names, by which they are sorted in the HyperNode, are random)."""
    value = {}
    for name, hn in hypernodes.items():
        labels = dict(hn["metadata"]["labels"])
        assert labels.pop(SOURCE_LABEL) == "label"
        ((key, v),) = labels.items()
        assert hn["spec"]["tierName"] == key
        value[name] = v
    out = {}
    for name, hn in hypernodes.items():
        kind = "Node" if hn["spec"]["tier"] == 1 else "HyperNode"
        members = hn["spec"]["members"]
        assert all(m["type"] == kind for m in members)
        names = [m["selector"]["exactMatch"]["name"] for m in members]
        assert names == sorted(names)
        out[(hn["spec"]["tier"], value[name])] = tuple(sorted(value.get(n, n) for n in names))
    return out


def test1_two_tiers_of_four_tors_and_two_spines():
    """label_test.go TestNewLabelDiscoverer_start, test1: eight nodes under four tors under two spines."""
    tors = ["s0", "s0", "s1", "s1", "s2", "s2", "s3", "s3"]
    nodes = {f"node{i}": {T1: tor, T2: "s4" if i < 4 else "s5"} for i, tor in enumerate(tors)}
    got = discover(nodes)
    assert len(got) == 6
    assert shape(got) == {
        (1, "s0"): ("node0", "node1"), (1, "s1"): ("node2", "node3"),
        (1, "s2"): ("node4", "node5"), (1, "s3"): ("node6", "node7"),
        (2, "s4"): ("s0", "s1"), (2, "s5"): ("s2", "s3")}
    for name, hn in got.items():
        assert name.startswith(f"hypernode-topologya2-tier{hn['spec']['tier']}-")
        assert hn["apiVersion"] == "topology.volcano.sh/v1alpha1" and hn["kind"] == "HyperNode"


def test2_a_node_with_a_tier1_label_only_stops_there():
    """label_test.go test2: node0 and node2/3 have tier 1 labels only; node1 also a tier 2 one."""
    nodes = {"node0": {T1: "s0"}, "node1": {T1: "s0", T2: "s2"}, "node2": {T1: "s1"}, "node3": {T1: "s1"}}
    got = discover(nodes)
    assert len(got) == 3
    assert shape(got) == {(1, "s0"): ("node0", "node1"), (1, "s1"): ("node2", "node3"), (2, "s2"): ("s0",)}


def test3_a_node_without_its_tier1_label_is_in_no_hypernode():
    """label_test.go test3: nodes with only a tier 2 label are left out (the chain ends at tier 1)."""
    nodes = {"node0": {T2: "s2"}, "node1": {T1: "s0"}, "node2": {T2: "s2"}, "node3": {T2: "s2"}}
    got = discover(nodes)
    assert shape(got) == {(1, "s0"): ("node1",)}


@pytest.mark.parametrize("tier_name", ["", "volcano.sh/torA3-1"])
def test4_test5_a_stored_hypernode_of_another_type_name_is_not_reused(tier_name):
    """label_test.go test4 (no tierName) and test5 (with one): the stored HyperNode has the label
    volcano.sh/torA3-1=s0 but a topologyA2 name, so topologyA3's tier 1 HyperNode gets a new name."""
    stored = {"hypernode-topologya2-tier1-mnsx6": {
        "metadata": {"name": "hypernode-topologya2-tier1-mnsx6",
                     "labels": {SOURCE_LABEL: "label", "volcano.sh/torA3-1": "s0"}},
        "spec": {"tier": 1, "tierName": tier_name,
                 "members": [{"type": "Node", "selector": {"exactMatch": {"name": "node0"}}}]}}}
    got = discover({"node0": {"volcano.sh/torA3-1": "s0"}}, stored, suffix=suffixes("abcde"))
    assert list(got) == ["hypernode-topologya3-tier1-abcde"]
    assert shape(got) == {(1, "s0"): ("node0",)}
    plan = plan_reconcile("label", discover_from_labels([("node0", {"volcano.sh/torA3-1": "s0"})],
                                                        parse_label_config(CFG), stored, suffixes("abcde")), stored)
    assert [c["metadata"]["name"] for c in plan.create] == ["hypernode-topologya3-tier1-abcde"]
    assert plan.delete == ["hypernode-topologya2-tier1-mnsx6"]


def test_a_stored_hypernode_of_this_label_value_and_type_keeps_its_name():
    """label.go buildHyperNodeName: the first stored HyperNode (by name) of the label source labelled with
    the same key and value and named hypernode-<type>-tier<N> is reused; one made by hand is not."""
    def stored(name: str, source: str | None) -> dict:
        labels = {T1: "s0", **({SOURCE_LABEL: source} if source else {})}
        return {"metadata": {"name": name, "labels": labels}, "spec": {"tier": 1}}
    existing = {n: stored(n, s) for n, s in [("hypernode-topologya2-tier1-aaaaa", None),
                                            ("hypernode-topologya2-tier1-bbbbb", "label"),
                                            ("hypernode-topologya2-tier1-ccccc", "label")]}
    got = discover({"node0": {T1: "s0"}}, existing, suffix=suffixes())
    assert list(got) == ["hypernode-topologya2-tier1-bbbbb"]


def test_a_new_name_is_clear_of_stored_and_found_ones_and_gives_up_after_20_attempts():
    """label.go buildHyperNodeName: a random name already stored (whoever made it) or already given in
    this discovery is drawn again, 20 times at most; then the discovery fails."""
    existing = {"hypernode-topologya2-tier1-aaaaa": {"metadata": {"name": "hypernode-topologya2-tier1-aaaaa"}}}
    nodes = {"node0": {T1: "s0"}, "node1": {T1: "s1"}}
    got = discover(nodes, existing, suffix=suffixes("aaaaa", "bbbbb", "bbbbb", "ccccc"))
    assert sorted(got) == ["hypernode-topologya2-tier1-bbbbb", "hypernode-topologya2-tier1-ccccc"]
    with pytest.raises(DiscoveryError, match="unable to get unique hyperNodeName after 20 attempts"):
        discover(nodes, existing, suffix=lambda: "aaaaa")


def test_random_suffixes_and_cleaned_type_names_make_valid_names():
    """rand.String(5) and label.go cleanString."""
    s = random_suffix()
    assert len(s) == 5 and set(s) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert clean_type_name("Topology_A3/x.1-B") == "topology-a3-x.1-b"


def test_two_types_sharing_a_label_share_its_hypernode():
    """label.go generateHyperNodeInfo: the (label, value) → HyperNode record is shared by all types."""
    cfg = {"networkTopologyTypes": {
        "a": [{"nodeLabel": "spine"}, {"nodeLabel": "tor"}, {"nodeLabel": "kubernetes.io/hostname"}],
        "b": [{"nodeLabel": "tor"}, {"nodeLabel": "kubernetes.io/hostname"}]}}
    got = discover({"n0": {"tor": "t0", "spine": "sp"}, "n1": {"tor": "t0"}}, cfg=cfg)
    assert len(got) == 2
    tor = next(hn for hn in got.values() if hn["spec"]["tier"] == 1)
    assert [m["selector"]["exactMatch"]["name"] for m in tor["spec"]["members"]] == ["n0", "n1"]  # once each


def test_parse_cfg_leaves_out_long_type_names_and_repeated_labels():
    """label.go parseCfg: a type name over 20 characters, or a type naming one label twice, is left out
    (with its reason), the others kept; the last entry (the node's hostname label) is dropped, tier 1 first."""
    topo = parse_label_config({"networkTopologyTypes": {
        "a" * 21: [{"nodeLabel": "x"}, {"nodeLabel": "kubernetes.io/hostname"}],
        "dup": [{"nodeLabel": "x"}, {"nodeLabel": "x"}, {"nodeLabel": "kubernetes.io/hostname"}],
        "ok": [{"nodeLabel": "top"}, {"nodeLabel": "mid"}, {"nodeLabel": "kubernetes.io/hostname"}]}})
    assert dict(topo.types) == {"ok": ("mid", "top")}
    assert topo.problems == (f"networkTopologyTypes.{'a' * 21}: the type name is longer than 20 characters; "
                             "the type is left out",
                             "networkTopologyTypes.dup: the label x is named twice; the type is left out")
    assert topo.node_values({"top": "1", "mid": "2", "other": "3"}) == {"mid": "2", "top": "1"}
    bad = parse_label_config({"networkTopologyTypes": ["x"]})
    assert dict(bad.types) == {} and "expected a mapping" in bad.problems[0]


def test_load_config_successfully():
    """loader_test.go TestLoadConfig "successfully load config": enabled defaults to false."""
    text = 'networkTopologyDiscovery:\n  - source: ufm\n    config:\n      url: "http://ufm-host:8080"\n' \
           '      token: "test-token"\n'
    assert load_config({CONFIG_KEY: text}) == NetworkTopologyConfig((
        DiscoverySource("ufm", False, 0.0, {"url": "http://ufm-host:8080", "token": "test-token"}),))


def test_load_config_configmap_not_found_is_the_empty_configuration():
    """loader_test.go "configmap not found" (an error there), taken as manager.go parseConfig takes it:
    the empty configuration, every source stopped."""
    assert load_config(None) == NetworkTopologyConfig()


def test_load_config_key_not_found():
    """loader_test.go "config key not found"."""
    with pytest.raises(DiscoveryConfigError, match="^config key not found in ConfigMap: volcano-controller.conf$"):
        load_config({"not-exists-key": "content"})


def test_load_config_yaml_parsing_error():
    """loader_test.go "yaml parsing error"."""
    with pytest.raises(DiscoveryConfigError, match="^failed to parse config: mapping values are not allowed"):
        load_config({CONFIG_KEY: "invalid yaml: :"})


@pytest.mark.parametrize("text, field", [
    ("networkTopologyDiscovery: label", "networkTopologyDiscovery: expected a list, got a string"),
    ("networkTopologyDiscovery:\n  - source: label\n    enabled: maybe", "networkTopologyDiscovery[0].enabled"),
    ("networkTopologyDiscovery:\n  - source: label\n    interval: soon", "networkTopologyDiscovery[0].interval"),
    ("networkTopologyDiscovery:\n  - source: label\n    config: [1]", "networkTopologyDiscovery[0].config"),
    ("networkTopologyDiscovery:\n  - [label]", "networkTopologyDiscovery[0]: expected a mapping"),
])
def test_load_config_names_the_field_of_the_wrong_type(text, field):
    """yaml.v2 refuses a value of the wrong type for a field of DiscoveryConfig: the whole text."""
    with pytest.raises(DiscoveryConfigError, match="^failed to parse config: ") as e:
        load_config({CONFIG_KEY: text})
    assert field in str(e.value)


def test_get_discovery_config_defaults_the_interval_and_skips_disabled_entries():
    """api/types.go GetDiscoveryConfig / GetEnabledDiscoverySources; manager_test.go
    TestManager_StartMultipleDiscoverers (both enabled sources start) and TestManager_syncHandler (a
    source disabled by a new configuration is stopped)."""
    text = """networkTopologyDiscovery:
  - source: sourceA
    enabled: true
  - source: sourceB
    enabled: true
    interval: 1h30m
  - source: sourceC
    enabled: false
"""
    cfg = load_config({CONFIG_KEY: text})
    assert cfg.enabled_sources() == ["sourceA", "sourceB"]
    assert cfg.source("sourceA").interval == DEFAULT_INTERVAL
    assert cfg.source("sourceB").interval == 5400.0
    assert cfg.source("sourceC") is None
    v2 = load_config({CONFIG_KEY: text.replace("enabled: true", "enabled: false")})
    assert v2.enabled_sources() == [] and v2.source("sourceA") is None


def test_volcanos_example_configuration_loads():
    """api/example.yaml, as Volcano ships it."""
    text = """networkTopologyDiscovery:
  - source: ufm
    enabled: true
    interval: 10m
    credentials:
      secretRef:
        name: ufm-credentials
        namespace: volcano-system
    config:
      endpoint: https://ufm-server:8080
      insecureSkipVerify: true
  - source: roce
    enabled: false
    interval: 15m
    config:
      endpoint: https://roce-server:9090
      token: token
  - source: label
    enabled: true
    config:
      networkTopologyTypes:
        topologyA2:
          - nodeLabel: "volcano.sh/tor"
          - nodeLabel: "kubernetes.io/hostname"
        topologyA3:
          - nodeLabel: "volcano.sh/hypercluster"
          - nodeLabel: "volcano.sh/hypernode"
          - nodeLabel: "kubernetes.io/hostname"
"""
    cfg = load_config({CONFIG_KEY: text})
    assert cfg.enabled_sources() == ["ufm", "label"]
    assert cfg.source("ufm").interval == 600.0
    topo = parse_label_config(cfg.source("label").config)
    assert dict(topo.types) == {"topologyA2": ("volcano.sh/tor",),
                                "topologyA3": ("volcano.sh/hypernode", "volcano.sh/hypercluster")}
    assert topo.problems == ()


@pytest.mark.parametrize("value, seconds", [("10m", 600.0), ("1h30m", 5400.0), ("1.5h", 5400.0), ("300ms", 0.3),
                                            ("0", 0.0), ("-2s", -2.0), (5_000_000_000, 5.0), (".5s", 0.5)])
def test_durations_as_go_parses_them(value, seconds):
    assert parse_go_duration(value) == pytest.approx(seconds)


@pytest.mark.parametrize("value", ["", "10", "1d", "1h 30m", "h", True, 1.5])
def test_durations_go_refuses(value):
    with pytest.raises(ValueError):
        parse_go_duration(value)


def test_configmap_name_is_the_release_name_and_controller_configmap():
    """configmap_handler_test.go TestSetConfigMapNamespaceAndName: <release>-controller-configmap,
    volcano-controller-configmap without a release name."""
    assert configmap_name("test-release") == "test-release-controller-configmap"
    assert configmap_name("") == "volcano-controller-configmap"


def _stored(name: str, source: str | None, members: list[str] | None = None) -> dict:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
            "metadata": {"name": name, "resourceVersion": "7", **({"labels": {SOURCE_LABEL: source}} if source else {})},
            "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": m}}}
                                            for m in members or []]}}


def test_reconcile_creates_updates_and_deletes_only_its_own_sources_hypernodes():
    """hypernode_controller_test.go TestHyperNodeController_Run: phase 1, a result of source ufm updates
    existing-node-1 and creates new-hypernode (existing-node-2, not in it, goes); phase 2, an empty result
    deletes every ufm HyperNode and leaves the roce one.  A HyperNode without the label is never touched."""
    stored = {"existing-node-1": _stored("existing-node-1", "ufm", ["existing-node-1"]),
              "existing-node-2": _stored("existing-node-2", "ufm"),
              "existing-node-3": _stored("existing-node-3", "roce"),
              "by-hand": _stored("by-hand", None, ["n0"])}
    result = [DiscoveredHyperNode("existing-node-1", 1, "", {}, ["updated-node-1"]),
              DiscoveredHyperNode("new-hypernode", 1, "", {}, [])]
    plan = plan_reconcile("ufm", result, stored)
    assert [c["metadata"]["name"] for c in plan.create] == ["new-hypernode"]
    assert plan.create[0]["metadata"]["labels"] == {SOURCE_LABEL: "ufm"}
    (update,) = plan.update
    assert update["metadata"]["name"] == "existing-node-1" and update["metadata"]["resourceVersion"] == "7"
    assert update["spec"]["members"][0]["selector"]["exactMatch"]["name"] == "updated-node-1"
    assert plan.delete == ["existing-node-2"]
    plan2 = plan_reconcile("ufm", [], stored)
    assert not plan2.create and not plan2.update
    assert plan2.delete == ["existing-node-1", "existing-node-2"]


def test_an_update_merges_labels_and_annotations_and_an_unchanged_hypernode_is_not_written():
    """utils.go UpdateHyperNode: the spec replaced, labels and annotations merged over the stored ones.
    (Volcano writes an unchanged HyperNode too; vcsched skips the write.)"""
    d = DiscoveredHyperNode("hn", 1, "tor", {"tor": "s0"}, ["n1", "n0", "n1"])
    current = d.manifest()
    current["metadata"].update(resourceVersion="3", labels={**current["metadata"]["labels"], "team": "a"},
                               annotations={"note": "kept"})
    current["status"] = {"nodeCount": 2}
    assert plan_reconcile("label", [d], {"hn": current}).update == []
    d.members.append("n2")
    (update,) = plan_reconcile("label", [d], {"hn": current}).update
    assert update["metadata"]["labels"] == {SOURCE_LABEL: "label", "tor": "s0", "team": "a"}
    assert update["metadata"]["annotations"] == {"note": "kept"}
    assert [m["selector"]["exactMatch"]["name"] for m in update["spec"]["members"]] == ["n0", "n1", "n2"]
    assert "status" not in update


def test_creates_go_lowest_tier_first_and_deletes_highest_first():
    d = [DiscoveredHyperNode("b-spine", 2, "spine", {"spine": "x"}, ["a-tor"]),
         DiscoveredHyperNode("a-tor", 1, "tor", {"tor": "y"}, ["n0"])]
    stored = {"old-tor": {**_stored("old-tor", "label")}, "old-spine": {**_stored("old-spine", "label")}}
    stored["old-spine"]["spec"]["tier"] = 2
    plan = plan_reconcile("label", d, stored)
    assert [c["metadata"]["name"] for c in plan.create] == ["a-tor", "b-spine"]
    assert plan.delete == ["old-spine", "old-tor"]
