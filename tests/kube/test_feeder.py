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


def bare_pod(name: str, uid: str, rv: str = "2") -> dict:
    p = pod(name, "")
    p["metadata"].update(uid=uid, resourceVersion=rv, annotations={})
    return p


def test_a_group_given_in_process_puts_the_pod_in_its_job_until_the_api_holds_the_annotation():
    f = CacheFeeder(Cache(("volcano",)))
    f.cache.update_queue(queue())
    f.cache.update_podgroup(podgroup("podgroup-u1"))
    p = bare_pod("p1", "u1")
    f.pod(p)
    assert f.cache.tasks["u1"].job == ""  # no annotation: in no job
    assert f.give_group(p, "podgroup-u1")
    assert f.cache.tasks["u1"].job == "default/podgroup-u1"
    assert f.group_annotation("u1") == {"scheduling.k8s.io/group-name": "podgroup-u1"}
    # a newer version of the pod from the watch, still without the annotation: still in its job
    f.pod({**p, "metadata": {**p["metadata"], "resourceVersion": "3", "labels": {"a": "b"}}})
    assert f.cache.tasks["u1"].job == "default/podgroup-u1" and f.owes_group("u1")
    # the API shows the annotation (the Binding carried it, or the PATCH went out): nothing owed
    annotated = {**p, "metadata": {**p["metadata"], "resourceVersion": "4",
                                   "annotations": {"scheduling.k8s.io/group-name": "podgroup-u1"}}}
    f.pod(annotated)
    assert not f.owes_group("u1") and f.group_annotation("u1") == {}
    assert f.cache.tasks["u1"].job == "default/podgroup-u1"


def test_owed_annotations_fall_due_after_a_session_that_passed_the_pod_by():
    f = CacheFeeder(Cache(("volcano",)))
    f.cache.update_queue(queue())
    for name, uid in (("p1", "u1"), ("p2", "u2"), ("p3", "u3")):
        f.cache.update_podgroup(podgroup(f"podgroup-{uid}"))
        f.pod(bare_pod(name, uid))
    f.give_group(f.pods["u1"], "podgroup-u1")
    f.give_group(f.pods["u2"], "podgroup-u2")
    generation = f.next_generation()  # a snapshot is taken
    f.give_group(f.pods["u3"], "podgroup-u3")  # told after it: the next session's
    f.assume("u2", "n0", f.group_annotation("u2"))  # the session binds p2: its Binding carries it
    assert [uid for uid, _ in f.due_groups(generation)] == ["u1"]
    owed = f.owed["u1"]
    owed.sent = True  # its PATCH is out: not due again
    assert f.due_groups(generation) == [] and f.owes_group("u1")
    assert [uid for uid, _ in f.due_groups(f.next_generation())] == ["u3"]
    f.pod_deleted(f.pods["u3"])  # a deleted pod owes nothing
    assert not f.owes_group("u3")


def test_a_pod_of_another_scheduler_is_not_given_a_group():
    f = CacheFeeder(Cache(("volcano",)))
    p = bare_pod("p1", "u1")
    p["spec"]["schedulerName"] = "default-scheduler"
    assert not f.give_group(p, "podgroup-u1") and not f.owes_group("u1")


def test_a_group_given_before_the_pod_is_watched_falls_due_after_a_session_that_saw_it():
    f = CacheFeeder(Cache(("volcano",)))
    f.cache.update_queue(queue())
    f.cache.update_podgroup(podgroup("podgroup-u1"))
    p = bare_pod("p1", "u1")
    f.give_group(p, "podgroup-u1")  # the controllers' watch was first
    generation = f.next_generation()  # a session without the pod
    f.pod(p)
    assert f.cache.tasks["u1"].job == "default/podgroup-u1"
    assert f.due_groups(generation) == []
    assert [uid for uid, _ in f.due_groups(f.next_generation())] == ["u1"]


def test_a_group_given_for_a_pod_not_watched_yet_is_not_due_after_a_session_that_never_saw_it():
    """The controllers' watch brought the pod, this process's not yet, and a session ran meanwhile: it
    did not pass the pod by, so no PATCH is due (the pod's Binding may still carry the annotation)."""
    f = CacheFeeder(Cache(("volcano",)))
    f.cache.update_queue(queue())
    f.cache.update_podgroup(podgroup("podgroup-u1"))
    p = bare_pod("p1", "u1")
    f.give_group(p, "podgroup-u1")
    f.next_generation()
    assert f.due_groups(f.next_generation()) == []  # sessions without the pod
    f.pod(p)
    generation = f.next_generation()  # a session that saw it
    assert [uid for uid, _ in f.due_groups(generation)] == ["u1"]
