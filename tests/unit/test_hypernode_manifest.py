"""HyperNode admission in simulate: the CRD schema, Volcano's admission policy, and RE2 patterns."""

import pytest

from vcsched.api.hypernode import hypernode_from
from vcsched.sim.fields import Checker, ManifestError
from vcsched.sim.hypernode_manifest import hypernode_problems, validate_hypernode


def check(spec) -> None:
    validate_hypernode({"metadata": {"name": "s0"}, "spec": spec}, Checker("f.yaml", "HyperNode s0"))


def member(selector: dict, type_: str = "Node") -> dict:
    return {"type": type_, "selector": selector}


GOOD = {"tier": 1, "tierName": "leaf", "members": [member({"exactMatch": {"name": "node-0"}}),
                                                  member({"regexMatch": {"pattern": "^node-[1-3]$"}}),
                                                  member({"labelMatch": {"matchLabels": {"rack": "r1"}}})]}


def test_a_good_hypernode_passes():
    check(GOOD)


@pytest.mark.parametrize("spec, field, message", [
    ({"members": GOOD["members"]}, "spec.tier", "Required value"),
    ({"tier": -1, "members": GOOD["members"]}, "spec.tier", "must be greater than or equal to 0"),
    ({"tier": 1}, "spec.members", "member must have at least one member"),
    ({"tier": 1, "members": [member({})]}, "spec.members[0].selector",
     "member selector must have one of exactMatch, regexMatch, or labelMatch"),
    ({"tier": 1, "members": [member({"exactMatch": {"name": "a"}, "regexMatch": {"pattern": "a"}})]},
     "spec.members[0].selector", "cannot specify more than one selector type"),
    ({"tier": 1, "members": [member({"exactMatch": {"name": "a"}}, "Switch")]}, "spec.members[0].type", "Switch"),
    ({"tier": 1, "members": [member({"exactMatch": {"name": ""}})]}, "spec.members[0].selector.exactMatch.name",
     "member exactMatch name is required"),
    ({"tier": 1, "members": [member({"regexMatch": {"pattern": "node-(1"}})]},
     "spec.members[0].selector.regexMatch.pattern", "unmatched parentheses"),
    ({"tier": 1, "members": [member({"regexMatch": {"pattern": "node-(?=1)"}})]},
     "spec.members[0].selector.regexMatch.pattern", "invalid regular expression 'node-(?=1)'"),
    ({"tier": 1, "members": [member({"labelMatch": {"matchExpressions": [{"key": "rack", "operator": "Near"}]}})]},
     "spec.members[0].selector.labelMatch.matchExpressions[0].operator", "not a valid selector operator"),
])
def test_what_the_api_server_refuses(spec, field, message):
    with pytest.raises(ManifestError) as e:
        check(spec)
    assert e.value.field == field
    assert message in str(e.value)


def hn(name: str, *members: dict) -> dict:
    return {"metadata": {"name": name}, "spec": {"tier": 1, "members": list(members)}}


def test_members_naming_nothing_cycles_and_two_parents_are_problems():
    objs = [hn("a", member({"exactMatch": {"name": "b"}}, "HyperNode")),
            hn("b", member({"exactMatch": {"name": "a"}}, "HyperNode")),
            hn("c", member({"exactMatch": {"name": "node-9"}}))]
    problems = hypernode_problems({o["metadata"]["name"]: hypernode_from(o) for o in objs}, {"node-0"})
    assert problems[0] == ("c", "spec.members[0].selector.exactMatch.name", "no node named node-9")
    assert problems[1][0] in ("a", "b") and problems[1][2].startswith("cyclic dependency detected")
