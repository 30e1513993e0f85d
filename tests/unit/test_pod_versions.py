"""A pod's next version in the cache: parsed again only where what the parsers read has changed."""

from __future__ import annotations

import copy
from typing import Any

from vcsched.cache import Cache


def manifest(**meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "1",
                     "annotations": {"scheduling.k8s.io/group-name": "pg"}, "labels": {"app": "a"}, **meta},
        "spec": {"schedulerName": "volcano", "tolerations": [{"key": "k", "operator": "Exists"}],
                 "containers": [{"name": "c", "image": "busybox",
                                 "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
        "status": {"phase": "Pending"},
    }


def next_version(pod: dict[str, Any], rv: int) -> dict[str, Any]:
    """As a watch brings it: a fresh decode, nothing shared with the version before."""
    pod = copy.deepcopy(pod)
    pod["metadata"]["resourceVersion"] = str(rv)
    return pod


def test_a_bound_or_restatused_version_keeps_the_parsed_spec_and_requests() -> None:
    cache = Cache()
    first = manifest()
    cache.add_pod(first)
    before = cache.tasks["u1"]
    bound = next_version(first, 2)
    bound["spec"]["nodeName"] = "n1"
    bound["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    cache.update_pod(bound)
    after = cache.tasks["u1"]
    assert after is not before and after.node_name == "n1" and after.pod is bound
    # the very objects: a bind leaves no new ones for the cyclic collector to walk
    assert after.spec is before.spec and after.resreq is before.resreq and after.shape is before.shape


def test_podgroup_versions_without_a_budget_share_one() -> None:
    """A PodGroup without jdb annotations, version after version, adds no budget object of its own;
    one with them keeps its own."""
    cache = Cache()
    pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
          "metadata": {"name": "pg", "namespace": "ns", "uid": "g1", "resourceVersion": "1"},
          "spec": {"minMember": 1}, "status": {"phase": "Pending"}}
    cache.add_podgroup(pg)
    first = cache.jobs["ns/pg"].budget
    later = next_version(pg, 2)
    later["status"] = {"phase": "Running", "running": 1}
    cache.update_podgroup(later)
    assert cache.jobs["ns/pg"].budget is first
    assert (first.min_available, first.max_unavailable) == ("", "")
    budgeted = next_version(pg, 3)
    budgeted["metadata"]["annotations"] = {"volcano.sh/jdb-min-available": "50%"}
    cache.update_podgroup(budgeted)
    assert cache.jobs["ns/pg"].budget.min_available == "50%" and cache.jobs["ns/pg"].budget is not first


def test_a_version_that_reads_otherwise_is_parsed_again() -> None:
    changes = {
        "a request": lambda p: p["spec"]["containers"][0]["resources"]["requests"].update(cpu="2"),
        "a toleration": lambda p: p["spec"]["tolerations"].append({"key": "x", "operator": "Exists"}),
        "a new spec field": lambda p: p["spec"].update(nodeSelector={"zone": "a"}),
        "a label": lambda p: p["metadata"]["labels"].update(app="b"),
        "an annotation": lambda p: p["metadata"]["annotations"].update({"volcano.sh/vgpu-ids-new": "x"}),
        "an owner": lambda p: p["metadata"].update(ownerReferences=[{"kind": "ReplicaSet", "name": "r"}]),
    }
    for what, change in changes.items():
        cache = Cache()
        first = manifest()
        cache.add_pod(first)
        before = cache.tasks["u1"]
        changed = next_version(first, 2)
        change(changed)
        cache.update_pod(changed)
        after = cache.tasks["u1"]
        assert after.spec is not before.spec, what
        fresh = Cache()
        fresh.add_pod(changed)
        assert (after.spec, after.resreq, after.shape) == (fresh.tasks["u1"].spec, fresh.tasks["u1"].resreq,
                                                          fresh.tasks["u1"].shape), what
