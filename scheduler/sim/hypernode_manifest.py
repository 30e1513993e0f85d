"""``topology.volcano.sh/v1alpha1`` HyperNode as the API server admits it: the CRD's schema and CEL rules,
and Volcano's validating admission policy (installer/helm/chart/volcano/policy/hypernodes-validating.yaml).

Beyond them, ``simulate`` refuses a ``regexMatch`` pattern that Go (RE2) would not compile, which the
policy's bracket counting lets through and the scheduler would then treat as selecting nothing.
Cross-object problems (cycles, members naming nothing) are the cluster's to find: ``hypernode_problems``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import re2

from ..api.hypernode import MEMBER_HYPERNODE, MEMBER_NODE, HyperNode, HyperNodeTree, compile_pattern
from .fields import (
    Checker,
    as_int,
    as_list,
    as_mapping,
    as_string,
    check_dns_subdomain,
    is_qualified_name,
    label_selector,
    one_of,
)

MEMBER_TYPES = (MEMBER_NODE, MEMBER_HYPERNODE)
_SELECTORS = ("exactMatch", "regexMatch", "labelMatch")


def validate_hypernode(obj: dict, check: Checker) -> None:
    spec = as_mapping(obj.get("spec"), check, "spec")
    obj["spec"] = spec
    if spec.get("tier") is None:
        check.fail("spec.tier", "Required value")
    as_int(spec["tier"], check, "spec.tier", 0, 2**31 - 1)
    if spec.get("tierName") is not None:
        name = as_string(spec["tierName"], check, "spec.tierName")
        if len(name) > 253:
            check.fail("spec.tierName", "Too long: may not be longer than 253")
    members = spec.get("members")
    if not members:
        check.fail("spec.members", "member must have at least one member")
    for i, raw in enumerate(as_list(members, check, "spec.members")):
        _validate_member(raw, check, f"spec.members[{i}]")


def _validate_member(raw: Any, check: Checker, path: str) -> None:
    member = as_mapping(raw, check, path)
    if member.get("type") is None:
        check.fail(f"{path}.type", "Required value")
    one_of(member["type"], MEMBER_TYPES, check, f"{path}.type")
    selector = as_mapping(member.get("selector"), check, f"{path}.selector")
    given = [k for k in _SELECTORS if selector.get(k) is not None]
    if not given:
        check.fail(f"{path}.selector", "member selector must have one of exactMatch, regexMatch, or labelMatch")
    if len(given) > 1:
        check.fail(f"{path}.selector", "cannot specify more than one selector type (exactMatch, regexMatch, labelMatch)")
    kind = given[0]
    where = f"{path}.selector.{kind}"
    body = as_mapping(selector[kind], check, where)
    if kind == "exactMatch":
        name = as_string(body.get("name") or "", check, f"{where}.name")
        if not name:
            check.fail(f"{where}.name", "member exactMatch name is required")
        if not is_qualified_name(name):
            check.fail(f"{where}.name", "member exactMatch validate failed [name part must consist of alphanumeric "
                                        "characters, '-', '_' or '.', and must start and end with an alphanumeric "
                                        "character]")
        check_dns_subdomain(name, check, f"{where}.name")
    elif kind == "regexMatch":
        pattern = as_string(body.get("pattern") or "", check, f"{where}.pattern")
        if not pattern:
            check.fail(f"{where}.pattern", "member regexMatch pattern is required")
        for open_, close, what in (("(", ")", "parentheses"), ("[", "]", "square brackets"),
                                   ("{", "}", "curly braces")):
            if open_ in pattern and pattern.count(open_) != pattern.count(close):
                check.fail(f"{where}.pattern", f"member regexMatch pattern is invalid: unmatched {what}")
        try:
            compile_pattern(pattern)
        except re2.error as e:
            check.fail(f"{where}.pattern", f"invalid regular expression {pattern!r}: {_re2_reason(e)}")
    else:
        label_selector(body, check, where)


def _re2_reason(e: Exception) -> str:
    arg = e.args[0] if e.args else e
    return arg.decode() if isinstance(arg, bytes) else str(arg)


def hypernode_problems(hypernodes: Mapping[str, HyperNode], node_names: set[str]) -> list[tuple[str, str, str]]:
    """(HyperNode, field, problem) for what a cluster would take but no scheduler could use: a cycle, a
    HyperNode with two parents, an exact member naming no node or HyperNode of the input."""
    problems: list[tuple[str, str, str]] = []
    for name in sorted(hypernodes):
        for i, m in enumerate(hypernodes[name].members):
            if m.exact is None:
                continue
            known = node_names if m.type == MEMBER_NODE else hypernodes
            if m.exact not in known:
                what = "node" if m.type == MEMBER_NODE else "HyperNode"
                problems.append((name, f"spec.members[{i}].selector.exactMatch.name",
                                 f"no {what} named {m.exact}"))
    tree = HyperNodeTree.build(hypernodes, [(n, {}) for n in node_names])
    if not tree.ready:
        problems.append((tree.error_at, "spec.members", tree.error))
    return problems
