"""The queue controller's state machine and its open/close commands (spec/jobs.md §10)."""

import pytest

from vcsched.controllers.queue import (CLOSE_QUEUE, CLOSED_BY_PARENT, OPEN_QUEUE, SYNC_QUEUE, apply_queue_outcome,
                                       next_state, reconcile_queue_request)


def q(name, state=None, parent=None, annotations=None):
    return {"metadata": {"name": name, "annotations": dict(annotations or {})},
            "spec": {"parent": parent} if parent else {}, "status": {"state": state} if state else {}}


@pytest.mark.parametrize("current,action,pgs,expected", [
    ("Open", OPEN_QUEUE, 0, "Open"), ("Open", CLOSE_QUEUE, 0, "Closed"), ("Open", CLOSE_QUEUE, 2, "Closing"),
    ("Open", SYNC_QUEUE, 2, "Open"), ("Closed", OPEN_QUEUE, 0, "Open"), ("Closed", CLOSE_QUEUE, 3, "Closed"),
    ("Closed", SYNC_QUEUE, 3, "Closed"), ("Closing", OPEN_QUEUE, 1, "Open"), ("Closing", SYNC_QUEUE, 1, "Closing"),
    ("Closing", SYNC_QUEUE, 0, "Closed"), ("Closing", CLOSE_QUEUE, 0, "Closed"), ("Unknown", OPEN_QUEUE, 0, "Open"),
    ("Unknown", CLOSE_QUEUE, 1, "Closing"), ("Unknown", SYNC_QUEUE, 0, "Unknown")])
def test_state_machine(current, action, pgs, expected):
    assert next_state(current, action, pgs) == expected


def test_first_sync_opens_and_sets_parent():
    queues = {"root": q("root", "Open"), "a": q("a")}
    out = reconcile_queue_request(queues["a"], SYNC_QUEUE, 0, queues)
    assert out.state == "Open" and out.set_parent == "root"
    assert apply_queue_outcome(queues, "a", out)
    assert queues["a"]["status"]["state"] == "Open" and queues["a"]["spec"]["parent"] == "root"


def test_close_with_podgroups_is_closing_and_closes_children():
    queues = {"root": q("root", "Open"), "p": q("p", "Open", "root"), "c": q("c", "Open", "p")}
    out = reconcile_queue_request(queues["p"], CLOSE_QUEUE, 2, queues)
    assert out.state == "Closing"
    assert out.annotations["c"] == {CLOSED_BY_PARENT: "true"} and out.requests == [("c", CLOSE_QUEUE)]
    assert out.events == [("Normal", "CloseQueue", "Close queue succeed")]


def test_root_cannot_be_closed():
    queues = {"root": q("root", "Open")}
    assert reconcile_queue_request(queues["root"], CLOSE_QUEUE, 0, queues).state is None


def test_open_refused_under_a_closed_parent():
    queues = {"root": q("root", "Open"), "p": q("p", "Closed", "root"), "c": q("c", "Closed", "p")}
    out = reconcile_queue_request(queues["c"], OPEN_QUEUE, 0, queues)
    assert out.error == ("Failed to open queue c because its parent queue p is closing or closed. "
                         "Open the parent queue first.")


def test_open_reopens_children_closed_by_parent():
    queues = {"root": q("root", "Open"), "p": q("p", "Closed", "root"),
              "c": q("c", "Closed", "p", {CLOSED_BY_PARENT: "true"})}
    out = reconcile_queue_request(queues["p"], OPEN_QUEUE, 0, queues)
    assert out.state == "Open" and out.requests == [("c", OPEN_QUEUE)]
    assert out.annotations["p"] == {CLOSED_BY_PARENT: "false"}


def test_sync_follows_the_parent():
    queues = {"root": q("root", "Open"), "p": q("p", "Closing", "root"), "c": q("c", "Open", "p")}
    out = reconcile_queue_request(queues["c"], SYNC_QUEUE, 0, queues)
    assert out.requests == [("c", CLOSE_QUEUE)] and out.annotations["c"] == {CLOSED_BY_PARENT: "true"}
