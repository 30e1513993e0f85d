"""The HyperNode tree the scheduler derives from HyperNodes and nodes (api/hyper_node_info.go)."""

from vcsched.api.hypernode import HyperNodeTree, hypernode_from

NODES = [(f"node-{i}", {"rack": f"r{i // 2}"}) for i in range(6)]


def hn(name: str, tier: int, *members: dict, tier_name: str = "") -> dict:
    return {"metadata": {"name": name}, "spec": {"tier": tier, "tierName": tier_name, "members": list(members)}}


def node(name: str) -> dict:
    return {"type": "Node", "selector": {"exactMatch": {"name": name}}}


def regex(pattern: str) -> dict:
    return {"type": "Node", "selector": {"regexMatch": {"pattern": pattern}}}


def labels(**match: str) -> dict:
    return {"type": "Node", "selector": {"labelMatch": {"matchLabels": match}}}


def child(name: str) -> dict:
    return {"type": "HyperNode", "selector": {"exactMatch": {"name": name}}}


def build(*objs: dict, nodes=NODES) -> HyperNodeTree:
    parsed = {o["metadata"]["name"]: hypernode_from(o) for o in objs}
    return HyperNodeTree.build(parsed, nodes)


def two_tier() -> HyperNodeTree:
    return build(hn("s0", 1, node("node-0"), node("node-1")),
                 hn("s1", 1, regex("node-[23]")),
                 hn("s2", 1, labels(rack="r2")),
                 hn("spine", 2, child("s0"), child("s1"), child("s2"), tier_name="spine"))


def test_members_by_name_regex_and_labels_and_the_nodes_below_each_hypernode():
    t = two_tier()
    assert t.ready, t.error
    assert t.hypernodes["s0"].nodes == {"node-0", "node-1"}
    assert t.hypernodes["s1"].nodes == {"node-2", "node-3"}
    assert t.hypernodes["s2"].nodes == {"node-4", "node-5"}
    assert t.hypernodes["spine"].nodes == {f"node-{i}" for i in range(6)}
    assert t.hypernodes["s1"].parent == "spine" and t.hypernodes["spine"].children == {"s0", "s1", "s2"}
    assert t.by_tier == {1: {"s0", "s1", "s2"}, 2: {"spine"}}
    assert t.tier_names == {"spine": 2}


def test_a_regex_is_go_s_matched_anywhere_in_the_name():
    t = build(hn("s", 1, regex("de-1$")))
    assert t.hypernodes["s"].nodes == {"node-1"}
    # RE2 has no lookahead: Go does not compile it, and the member selects nothing
    t = build(hn("s", 1, regex("node-(?=1)")))
    assert t.hypernodes["s"].nodes == frozenset()


def test_ancestors_and_the_lowest_common_ancestor():
    t = two_tier()
    assert t.ancestors("s0") == ["s0", "spine"]
    assert t.lowest_common_ancestor("s0", "s2") == "spine"
    assert t.lowest_common_ancestor("s0", "s0") == "s0"
    assert t.lowest_common_ancestor("", "s1") == "s1"
    assert t.lowest_common_ancestor("s0", "elsewhere") == ""


def test_a_member_hypernode_that_does_not_exist_yet_is_held_as_a_placeholder():
    t = build(hn("spine", 2, child("s9")))
    assert t.ready
    assert t.hypernodes["s9"].parent == "spine" and not t.hypernodes["s9"].exists
    assert t.tier_of("s9") is None and t.tier_of("spine") == 2


def test_a_cycle_makes_the_tree_not_ready():
    t = build(hn("a", 2, child("b")), hn("b", 1, child("a")))
    assert not t.ready
    assert t.error.startswith("cyclic dependency detected: HyperNode a")


def test_a_hypernode_claimed_by_two_parents_makes_the_tree_not_ready():
    t = build(hn("a", 2, child("s")), hn("b", 2, child("s")), hn("s", 1, node("node-0")))
    assert not t.ready
    assert t.error == "HyperNode s already has a parent a, and cannot set another parent b"
    assert t.hypernodes["s"].parent == "a"


def test_nodes_no_hypernode_holds():
    t = build(hn("s0", 1, node("node-0")))
    assert t.nodes_in_no_hypernode(["node-0", "node-1"]) == ["node-1"]


def test_problems_a_regex_that_does_not_compile_and_a_label_match_that_does_not_convert_keep_the_tree_ready():
    """Volcano's nodeMatchSelector: "Failed to compile regex pattern" / "Failed to convert labelMatch", logged,
    the member selects nothing; the tree is still ready.  ``problems`` names the HyperNode and field."""
    bad_labels = {"type": "Node", "selector": {"labelMatch": {"matchExpressions": [
        {"key": "rack", "operator": "In", "values": []}]}}}
    t = build(hn("s0", 1, node("node-0"), regex("node-[")), hn("s1", 1, bad_labels), hn("s2", 1, node("node-2")))
    assert t.ready
    assert t.hypernodes["s0"].nodes == {"node-0"} and t.hypernodes["s1"].nodes == frozenset()
    assert [(name, msg.split(":")[0]) for name, msg in t.problems] == [
        ("s0", "spec.members[1].selector.regexMatch.pattern"), ("s1", "spec.members[0].selector.labelMatch")]
    assert "'node-[' is not a valid regular expression" in t.problems[0][1]
    assert build(hn("s", 1, regex("de-1$"))).problems == []


def test_problems_hold_the_error_that_makes_the_tree_not_ready():
    t = build(hn("a", 2, child("s")), hn("b", 2, child("s")), hn("s", 1, node("node-0")))
    assert t.problems == [("b", "HyperNode s already has a parent a, and cannot set another parent b")]
    t = build(hn("a", 2, child("b")), hn("b", 1, child("a")))
    assert t.problems == [(t.error_at, t.error)] and t.error_at == "b"
