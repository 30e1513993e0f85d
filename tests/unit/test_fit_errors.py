"""FitErrors: Volcano's "0/N nodes are unavailable" text from node → statuses (unschedule_info.go)."""

from vcsched.api.fit_errors import FitError, FitErrors, Status
from vcsched.api.types import StatusCode

U, UU = StatusCode.Unschedulable, StatusCode.UnschedulableAndUnresolvable


def test_error_is_the_sorted_histogram_of_every_reason_over_the_nodes():
    shared = [Status(U, "Insufficient cpu")]  # the node search hands one list to many nodes
    fe = FitErrors(namespace="ns", task_name="t", statuses={
        "n1": shared, "n2": shared, "n3": [Status(UU, "node(s) had untolerated taint {a: b}"), Status(U, "x")],
        "n4": [Status(U, "Insufficient cpu")],
    })
    assert fe.error() == ("0/4 nodes are unavailable: 1 node(s) had untolerated taint {a: b}, "
                          "1 x, 3 Insufficient cpu.")
    assert fe.unresolvable_nodes() == {"n3"}
    assert str(fe.nodes["n3"]) == "task ns/t on node n3 fit failed: node(s) had untolerated taint {a: b}, x"


def test_error_follows_nodes_added_after_it_was_read():
    fe = FitErrors()
    assert fe.error() == "0/0 nodes are unavailable"
    fe.set_node_error(FitError("ns", "t", "n1", [Status(U, "r")]))
    assert fe.error() == "0/1 nodes are unavailable: 1 r."
    fe.set_node_error(FitError("ns", "t", "n2", [Status(U, "r")]))
    assert fe.error() == "0/2 nodes are unavailable: 2 r."
    assert FitErrors(err="Task t with role spec r has already predicated failed, skip").error() == \
        "Task t with role spec r has already predicated failed, skip"


def test_another_task_of_the_shape_shares_the_statuses_and_its_own_name_in_reasons():
    named = [Status(StatusCode.Error, "is using n1, and not rewrite", names_task=True)]
    fe = FitErrors(namespace="ns", task_name="a", statuses={"n1": named, "n2": [Status(U, "Insufficient cpu")]})
    assert fe.error() == "0/2 nodes are unavailable: 1 Insufficient cpu, 1 a is using n1, and not rewrite."
    b = fe.for_task("ns", "b")
    assert b.statuses is fe.statuses and fe.for_task("ns", "a") is fe
    assert b.error() == "0/2 nodes are unavailable: 1 Insufficient cpu, 1 b is using n1, and not rewrite."
    assert str(b.nodes["n1"]) == "task ns/b on node n1 fit failed: b is using n1, and not rewrite"
    plain = FitErrors(namespace="ns", task_name="a", statuses={"n1": [Status(U, "r")]})
    message = plain.error()
    assert plain.for_task("ns", "b").error() is message  # nothing names the task: built once
