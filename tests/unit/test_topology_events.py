"""The network topology's bad input as Kubernetes mode meets it (simulate refuses it at input): Warning
events from the session, once per problem while it lasts, and the cache's log lines, once each.

- a PodGroup whose ``highestTierName`` names no tier: ``InvalidNetworkTopology`` on the PodGroup (Volcano's
  adjustNetworkTopologySpec only logs "Failed to translate highestTierName" and schedules without a limit);
- a HyperNode tree with a cycle or a second parent, or a member that selects nothing by mistake (a regex Go
  does not compile): ``InvalidHyperNode`` on the HyperNode (Volcano only logs them).
"""

from __future__ import annotations

from pathlib import Path

import structlog

from vcsched.cache import Cache
from vcsched.conf import parse_conf
from vcsched.framework.effects import Bind, Event
from vcsched.scheduler import Scheduler

ROOT = Path(__file__).resolve().parents[2]
RES = {"cpu": "4", "memory": "8Gi", "pods": "110"}


def cluster() -> Cache:
    c = Cache()
    c.add_queue({"metadata": {"name": "default"}, "spec": {"weight": 1}, "status": {"state": "Open"}})
    for i in range(2):
        c.add_node({"metadata": {"name": f"n{i}"}, "status": {
            "allocatable": RES, "capacity": RES, "conditions": [{"type": "Ready", "status": "True"}]}})
    c.add_hypernode(hypernode("leaf-0", 1, [{"type": "Node", "selector": {"exactMatch": {"name": "n0"}}}]))
    c.add_hypernode(hypernode("leaf-1", 1, [{"type": "Node", "selector": {"regexMatch": {"pattern": "n1"}}}]))
    return c


def hypernode(name: str, tier: int, members: list[dict]) -> dict:
    return {"metadata": {"name": name, "uid": f"uid-{name}"}, "spec": {"tier": tier, "members": members}}


def job(c: Cache, name: str, topology: dict | None) -> None:
    spec = {"minMember": 1, **({"networkTopology": topology} if topology else {})}
    c.add_podgroup({"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": spec})
    c.add_pod({"metadata": {"name": f"{name}-0", "namespace": "default", "uid": f"uid-{name}-0",
                            "annotations": {"scheduling.k8s.io/group-name": name}},
               "spec": {"schedulerName": "volcano", "containers": [
                   {"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
               "status": {"phase": "Pending"}})


def scheduler(c: Cache) -> Scheduler:
    return Scheduler(c, parse_conf((ROOT / "conf" / "volcano-scheduler.conf").read_text()))


def events(effects, reason: str) -> list[Event]:
    return [e for e in effects if isinstance(e, Event) and e.reason == reason]


def test_a_tier_name_naming_no_tier_is_one_warning_and_the_job_is_scheduled_without_a_limit():
    c = cluster()
    job(c, "pg", {"mode": "hard", "highestTierName": "nope"})
    s = scheduler(c)
    with structlog.testing.capture_logs() as logs:
        first = s.run_once()
        job(c, "other", None)
        second = s.run_once()
    (warning,) = events(first, "InvalidNetworkTopology")
    assert (warning.kind, warning.namespace, warning.name, warning.type) == ("PodGroup", "default", "pg", "Warning")
    assert warning.message.startswith("spec.networkTopology: failed to find hypernode tier name nope")
    assert [e.name for e in first if isinstance(e, Bind)] == ["pg-0"]
    assert not events(second, "InvalidNetworkTopology")  # once per problem, and one log line
    said = [r for r in logs if r["event"] == "Failed to translate highestTierName, skip translation"]
    assert len(said) == 1 and said[0]["job"] == "default/pg"


def test_a_regex_that_does_not_compile_is_one_warning_on_its_hypernode_and_one_log_line():
    c = cluster()
    c.add_hypernode(hypernode("leaf-1", 1, [{"type": "Node", "selector": {"regexMatch": {"pattern": "n[1"}}}]))
    job(c, "pg", None)
    s = scheduler(c)
    with structlog.testing.capture_logs() as logs:
        first = s.run_once()
        c.add_node({"metadata": {"name": "n2"}, "status": {  # the tree derived again: the problem stays
            "allocatable": RES, "capacity": RES, "conditions": [{"type": "Ready", "status": "True"}]}})
        second = s.run_once()
    (warning,) = events(first, "InvalidHyperNode")
    assert (warning.kind, warning.namespace, warning.name) == ("HyperNode", "", "leaf-1")
    assert warning.message.startswith("spec.members[0].selector.regexMatch.pattern: 'n[1' is not a valid")
    assert not events(second, "InvalidHyperNode")
    said = [r for r in logs if r["event"].startswith("HyperNode member refused")]
    assert len(said) == 1 and said[0]["hypernode"] == "leaf-1"
    assert [e.name for e in first if isinstance(e, Bind)] == ["pg-0"]  # the loop runs on
    # fixed, then broken again: said again
    c.add_hypernode(hypernode("leaf-1", 1, [{"type": "Node", "selector": {"regexMatch": {"pattern": "n1"}}}]))
    assert not events(s.run_once(), "InvalidHyperNode")
    c.add_hypernode(hypernode("leaf-1", 1, [{"type": "Node", "selector": {"regexMatch": {"pattern": "n[1"}}}]))
    assert len(events(s.run_once(), "InvalidHyperNode")) == 1


def test_a_cycle_is_one_warning_on_the_hypernode_that_closes_it_and_topology_jobs_wait():
    c = cluster()
    c.add_hypernode(hypernode("spine", 2, [{"type": "HyperNode", "selector": {"exactMatch": {"name": "leaf-0"}}}]))
    c.add_hypernode(hypernode("leaf-0", 1, [{"type": "HyperNode", "selector": {"exactMatch": {"name": "spine"}}}]))
    job(c, "plain", None)
    job(c, "topo", {"mode": "hard", "highestTierAllowed": 1})
    s = scheduler(c)
    first = s.run_once()
    (warning,) = events(first, "InvalidHyperNode")
    assert warning.name == "spine"
    assert warning.message.startswith("cyclic dependency detected: HyperNode leaf-0 is already in the ancestor chain")
    assert warning.message.endswith("the HyperNodes are not ready: jobs with a network topology wait")
    assert [e.name for e in first if isinstance(e, Bind)] == ["plain-0"]
    assert not events(s.run_once(), "InvalidHyperNode")
