"""vcsched.sim.fields: the typed field reads and apimachinery's name and selector rules."""

from __future__ import annotations

import pytest

from vcsched.sim.fields import (
    Checker,
    ManifestError,
    PrefixedChecker,
    check_label_key,
    check_label_value,
    check_string_keys,
    conditions,
    label_selector,
    qualified_name_problem,
    selector_keys,
    string_list,
)

CHECK = Checker("f.yaml: document 0", "Pod default/p")


def fails(fn, *args, **kwargs) -> str:
    with pytest.raises(ManifestError) as info:
        fn(*args, **kwargs)
    return str(info.value)


@pytest.mark.parametrize("name", ["a", "app", "kubernetes.io/hostname", "A_b.c-9", "x" * 63, "a.b/" + "x" * 63])
def test_qualified_names(name):
    assert qualified_name_problem(name) is None


@pytest.mark.parametrize("name, problem", [
    ("", "name part must be non-empty"),
    ("/a", "prefix part must be non-empty"),
    ("a/", "name part must be non-empty"),
    ("x" * 64, "name part must be no more than 63 characters"),
    ("-a", "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end"),
    ("Example.com/a", "prefix part a lowercase RFC 1123 subdomain must consist of"),
    ("a/b/c", "a qualified name must consist of alphanumeric characters"),
])
def test_qualified_name_problems(name, problem):
    assert qualified_name_problem(name).startswith(problem)


def test_label_keys_and_values():
    assert check_label_key("zone", CHECK, "k") == "zone"
    assert fails(check_label_key, 5, CHECK, "k") == "f.yaml: document 0 (Pod default/p): k: must be a string, got integer 5"
    assert check_label_value("", CHECK, "v") == ""
    assert "must be no more than 63 characters" in fails(check_label_value, "v" * 64, CHECK, "v")
    assert "Invalid value: 'a b': a valid label must be an empty string" in fails(check_label_value, "a b", CHECK, "v")


def test_label_selector():
    assert label_selector(None, CHECK, "s") is None
    selector = {"matchLabels": {"app": "x"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]}
    assert label_selector(selector, CHECK, "s") is selector
    assert selector_keys(selector) == {"app", "tier"}
    assert selector_keys(None) == set()
    assert "s.matchExpressions[0].operator: Invalid value: 'Gt'" in fails(
        label_selector, {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}, CHECK, "s")
    # label values are checked unless the caller lets them through
    bad_value = {"matchExpressions": [{"key": "a", "operator": "In", "values": ["a/b"]}]}
    assert "s.matchExpressions[0].values[0]: Invalid value: 'a/b'" in fails(label_selector, bad_value, CHECK, "s")
    assert label_selector(bad_value, CHECK, "s", label_values=False) is bad_value


def test_string_list_and_keys():
    assert string_list(None, CHECK, "l") == []
    assert "l[1]: must be a string, got integer 2" in fails(string_list, ["a", 2], CHECK, "l")
    check_string_keys({"a": [{"b": 1}]}, CHECK, "x")
    assert "x.a[0]: keys must be strings, got integer 1" in fails(check_string_keys, {"a": [{1: "b"}]}, CHECK, "x")


def test_conditions_are_typed_and_their_times_normalised():
    from datetime import datetime, timezone

    conds = [{"type": "Ready", "status": "True", "lastTransitionTime": datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)},
             {"type": "PodScheduled", "lastProbeTime": "2026-01-02T03:04:05.5+01:00"}]
    assert conditions(conds, CHECK, "status.conditions") is conds
    assert conds[0]["lastTransitionTime"] == "2026-01-02T03:04:05Z"
    assert conds[1]["lastProbeTime"] == "2026-01-02T02:04:05Z"
    assert "status.conditions[0]: must be a mapping, got null" in fails(conditions, [None], CHECK, "status.conditions")
    assert "status.conditions[0].reason: must be a string" in fails(
        conditions, [{"type": "A", "reason": 3}], CHECK, "status.conditions")
    assert conditions([{"status": "Running"}], CHECK, "c", required=()) == [{"status": "Running"}]


def test_prefixed_checker_names_the_template():
    check = PrefixedChecker(CHECK, "spec.tasks[0].template.")
    assert fails(check.fail, "spec.affinity", "bad") == (
        "f.yaml: document 0 (Pod default/p): spec.tasks[0].template.spec.affinity: bad")
