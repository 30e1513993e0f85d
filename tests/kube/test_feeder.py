"""CacheFeeder's assumptions and evictions, without a server."""

from __future__ import annotations

from vcsched.api.types import TaskStatus
from vcsched.cache import Cache
from vcsched.kube.source import CacheFeeder

from .conftest import node, pod, podgroup, queue


def feeder_with_pod() -> tuple[CacheFeeder, dict]:
    f = CacheFeeder(Cache(("volcano",)))
    f.cache.update_node({**node("n0"), "metadata": {"name": "n0", "resourceVersion": "1"}})
    f.cache.update_queue(queue())
    f.cache.update_podgroup(podgroup("pg1"))
    p = pod("p1", "pg1")
    p["metadata"].update(uid="u1", resourceVersion="2")
    f.pod(p)
    return f, p


def test_a_failed_bind_does_not_drop_a_later_binds_assumption():
    f, p = feeder_with_pod()
    first = f.assume("u1", "n0", {"a": "1"})
    f.forget("u1", first)  # the first bind failed: pending again
    assert f.cache.tasks["u1"].status == TaskStatus.Pending
    second = f.assume("u1", "n0", {"a": "2"})  # a later session binds it again
    # the first bind's resync answers late with the pod as it was, unbound
    f.settle("u1", first)
    f.pod(p)
    assert f.assumed["u1"] is second
    task = f.cache.tasks["u1"]
    assert task.node_name == "n0" and task.pod["metadata"]["annotations"]["a"] == "2"
    f.forget("u1", first)  # a stale forget is a no-op too
    assert f.assumed["u1"] is second
    # the API confirms the second bind
    bound = {**p, "metadata": {**p["metadata"], "resourceVersion": "3"}, "spec": {**p["spec"], "nodeName": "n0"}}
    f.pod(bound)
    assert "u1" not in f.assumed and f.cache.tasks["u1"].node_name == "n0"


def test_an_evicted_pod_is_releasing_until_deleted_and_restored_if_the_eviction_fails():
    f, p = feeder_with_pod()
    running = {**p, "metadata": {**p["metadata"], "resourceVersion": "3"}, "spec": {**p["spec"], "nodeName": "n0"},
               "status": {"phase": "Running"}}
    f.pod(running)
    f.evict("u1")
    assert f.cache.tasks["u1"].status == TaskStatus.Releasing
    # a status update of the pod (the evictor's own conditions) keeps it Releasing
    f.pod({**running, "metadata": {**running["metadata"], "resourceVersion": "4"}})
    assert f.cache.tasks["u1"].status == TaskStatus.Releasing
    f.evict_failed("u1")
    assert f.cache.tasks["u1"].status == TaskStatus.Running
    f.evict("u1")
    f.pod_deleted(running)
    assert "u1" not in f.cache.tasks and not f.evicting
