"""The pieces of preempt's topology-aware mode that a scenario cannot isolate (spec/framework.md §7.4.4)."""

from types import SimpleNamespace

import pytest

from vcsched.actions.preempt_dry_run import Candidate, DryRunArgs, select_candidate
from vcsched.api.task_info import new_task_info
from vcsched.framework.arguments import Arguments


def victim(name: str, priority: int, start: str | None = "2026-01-01T00:00:00Z"):
    status = {"phase": "Running"}
    if start:
        status["startTime"] = start
    return new_task_info({"metadata": {"name": name, "namespace": "default", "uid": name},
                          "spec": {"priority": priority, "containers": []}, "status": status})


def candidate(node: str, *victims) -> Candidate:
    return Candidate(SimpleNamespace(name=node), list(victims))


SSN = SimpleNamespace(now=1_900_000_000.0)  # after every start time below


@pytest.mark.parametrize("candidates, chosen", [
    # the lowest highest-victim priority
    ([candidate("a", victim("x", 50)), candidate("b", victim("y", 10), victim("z", 10))], "b"),
    # then the lowest sum of (priority + 2^31): fewer victims of the same priority
    ([candidate("a", victim("x", 10), victim("y", 10)), candidate("b", victim("z", 10))], "b"),
    # negative priorities: still fewer victims, thanks to the offset
    ([candidate("a", victim("x", -5), victim("y", -5)), candidate("b", victim("z", -5))], "b"),
    # then the latest start among the highest-priority victims
    ([candidate("a", victim("x", 10, "2026-01-01T00:00:00Z")),
      candidate("b", victim("y", 10, "2026-01-02T00:00:00Z"))], "b"),
    # a victim that has not started counts as starting now, the latest of all
    ([candidate("a", victim("x", 10, "2026-01-02T00:00:00Z")), candidate("b", victim("y", 10, None))], "b"),
    # a full tie: the first in dry-run order
    ([candidate("a", victim("x", 10)), candidate("b", victim("y", 10))], "a"),
])
def test_select_candidate_rules_in_order(candidates, chosen):
    assert select_candidate(SSN, candidates).node.name == chosen


def test_select_candidate_of_none_is_none():
    assert select_candidate(SSN, []) is None


@pytest.mark.parametrize("arguments, nodes, expected", [
    ({}, 5, 1),  # 10% of 5 is 0: the absolute minimum, 1
    ({}, 50, 5),
    ({}, 5000, 100),  # capped by maxCandidateNodesAbsolute
    ({"minCandidateNodesAbsolute": 10}, 5, 5),  # never more than there are nodes
    ({"minCandidateNodesPercentage": 50, "maxCandidateNodesAbsolute": 7}, 40, 7),
])
def test_number_of_candidates(arguments, nodes, expected):
    assert DryRunArgs.parse(Arguments(arguments, "configurations[preempt]")).num_candidates(nodes) == expected
