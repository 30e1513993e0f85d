"""capacity's functions and the Go cases ``vcsched simulate`` cannot hold (plugins/capacity/capacity_test.go).

- Test_updateQueueAttrShare: ``update_share`` on ``QueueAttr`` objects, case for case.
- Test_buildHierarchicalQueueAttrs_nilSafety: a session without a ``root`` queue, and a job whose queue
  is gone.  ``simulate`` always has a root queue (it makes one, as Volcano's queue controller does) and
  refuses a PodGroup naming a queue that does not exist, so both open the plugin on a fake session.
- Test_capacityPlugin_OnSessionOpenWithHierarchy case7: children's guarantees above their parent's
  capability.  Volcano's queue webhook refuses such a tree, and so does ``simulate``'s input, so the
  plugin is opened on a fake session with that tree.

The end-to-end cases are in tests/scenarios/test_capacity.py.
"""

from __future__ import annotations

import pytest
import structlog

from vcsched.api.job_info import JobInfo, PodGroup
from vcsched.api.node_info import NodeInfo, NodeSpec
from vcsched.api.queue_info import QueueInfo
from vcsched.api.resource import Resource
from vcsched.api.task_info import new_task_info
from vcsched.api.types import PodGroupPhase, Vote
from vcsched.framework.arguments import Arguments
from vcsched.framework.interface import Point
from vcsched.plugins.capacity import CapacityPlugin, QueueAttr, common_level, compare_share, update_share

from .fakes import FakeSession


def res(cpu: str | None = None, memory: str | None = None) -> Resource:
    """``api.NewResource(api.BuildResourceList(cpu, memory))``; ``None`` is ``api.EmptyResource()``."""
    if cpu is None and memory is None:
        return Resource()
    return Resource.from_list({"cpu": cpu, "memory": memory})


# -- Test_updateQueueAttrShare -------------------------------------------------------------------

SHARE_CASES = [
    # queues without deserved (best-effort queues)
    ("best-effort queue with allocated resources", None, res("1", "1Gi"), None, 1.0),
    ("best-effort queue with pending requests only (no allocated)", None, None, res("1", "1Gi"), 1.0),
    ("best-effort queue with both allocated and request", None, res("1", "1Gi"), res("0.5", "0.5Gi"), 1.0),
    ("best-effort queue completely idle", None, None, None, 1.0),
    # queues with deserved
    ("queue with deserved but no allocated", res("2", "2Gi"), None, None, 0.0),
    ("queue with deserved, allocated < deserved (CPU dimension)", res("2", "2Gi"), res("1", "1Gi"), None, 0.5),
    ("queue with deserved, allocated = deserved", res("2", "2Gi"), res("2", "2Gi"), None, 1.0),
    ("queue with deserved, allocated > deserved (CPU dimension)", res("2", "2Gi"), res("3", "2Gi"), None, 1.5),
    ("queue with deserved, memory is dominant resource", res("2", "4Gi"), res("1", "3Gi"), None, 0.75),
    ("queue with deserved, CPU is dominant resource", res("2", "4Gi"), res("1.5", "2Gi"), None, 0.75),
    ("queue with deserved, allocated exceeds on both dimensions", res("2", "2Gi"), res("3", "3Gi"), None, 1.5),
    ("queue with deserved, request should not affect share calculation", res("2", "2Gi"), res("1", "1Gi"),
     res("1", "1Gi"), 0.5),
    # edge cases
    ("queue with deserved but zero values", res("0", "0Gi"), res("1", "1Gi"), None, 1.0),
    ("queue with deserved, allocated is zero", res("2", "2Gi"), res("0", "0Gi"), None, 0.0),
    ("best-effort queue with only CPU allocated", None, res("1", "0Gi"), None, 1.0),
    ("best-effort queue with only memory allocated", None, res("0", "1Gi"), None, 1.0),
    ("best-effort queue with only CPU request (no allocated)", None, None, res("1", "0Gi"), 1.0),
]


@pytest.mark.parametrize("name, deserved, allocated, requested, want", SHARE_CASES, ids=[c[0] for c in SHARE_CASES])
def test_update_queue_attr_share(name, deserved, allocated, requested, want):
    """Test_updateQueueAttrShare: max over deserved's dimensions of allocated/deserved; 1 without deserved."""
    attr = QueueAttr("test-queue", deserved or Resource(), Resource(), Resource(),
                     allocated=allocated or Resource(), request=requested or Resource(), share=0.0)
    update_share(attr)
    assert attr.share == want


# -- the queue order's pieces (compareShareWithDeserved, getQueueLevel) ----------------------------
# Volcano's test file has no table for these; these pin capacity.go's two functions.


def attr(share: float, deserved: Resource | None = None, ancestors: tuple[str, ...] = ()) -> QueueAttr:
    return QueueAttr("q", deserved or Resource(), Resource(), Resource(), share=share, ancestors=ancestors)


@pytest.mark.parametrize("l, r, want", [
    (attr(0.5), attr(0.7), -1),
    (attr(0.7), attr(0.5), 1),
    (attr(1.0, res("2", "2Gi")), attr(1.0), -1),   # equal shares: the queue with deserved first
    (attr(1.0), attr(1.0, res("2", "2Gi")), 1),
    (attr(1.0), attr(1.0), 0),
    (attr(0.5, res("1", "1Gi")), attr(0.5, res("2", "2Gi")), 0),
])
def test_compare_share_with_deserved(l, r, want):
    assert compare_share(l, r) == want


@pytest.mark.parametrize("l, r, want", [
    (("root", "a"), ("root", "a"), 1),             # siblings under a: a, at index 1
    (("root", "a"), ("root", "b"), 0),             # only root in common
    (("root", "a", "a1"), ("root", "a"), 1),       # the shorter path bounds the walk
    ((), ("root",), 0),                            # root itself
])
def test_common_level(l, r, want):
    assert common_level(attr(0, ancestors=l), attr(0, ancestors=r)) == want


# -- sessions simulate cannot hold ------------------------------------------------------------------


class TreeSession(FakeSession):
    """The fake session with ``enableHierarchy`` set for capacity."""

    def hierarchy_enabled(self, plugin: str) -> bool:
        return plugin == "capacity"


def node(name: str, cpu: str, memory: str, pods: str) -> NodeInfo:
    allocatable = Resource.from_list({"cpu": cpu, "memory": memory, "pods": pods})
    return NodeInfo(name, {"metadata": {"name": name}}, NodeSpec(), allocatable, allocatable.clone())


def tree_queue(name: str, parent: str = "", capability: Resource | None = None,
               guarantee: Resource | None = None) -> QueueInfo:
    return QueueInfo(name, name, 0.0, capability=capability, guarantee=guarantee or Resource(), parent=parent)


def pending_job(name: str, queue: str) -> JobInfo:
    pod = {"metadata": {"name": "orphan", "namespace": "ns1", "uid": "ns1-orphan",
                        "annotations": {"scheduling.k8s.io/group-name": name}},
           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
           "status": {"phase": "Pending"}}
    job = JobInfo(f"ns1/{name}", PodGroup(name, "ns1", f"uid-{name}", 0.0, min_member=1, queue=queue,
                                          phase=PodGroupPhase.INQUEUE))
    job.add_task(new_task_info(pod))
    return job


def open_capacity(ssn: FakeSession) -> CapacityPlugin:
    plugin = CapacityPlugin(Arguments({}))
    plugin.on_session_open(ssn)
    return plugin


def test_nil_safety_without_a_root_queue():
    """Test_buildHierarchicalQueueAttrs_nilSafety "no-panic when root queue is absent (empty ssn.Queues)":
    the session opens, and the plugin refuses everything for it (readyToSchedule false), registering no
    queue order (Volcano returns before AddQueueOrderFn)."""
    ssn = TreeSession([node("n1", "4", "4Gi", "10")])
    with structlog.testing.capture_logs() as logs:
        plugin = open_capacity(ssn)
    assert not plugin.ready
    assert any('Root queue "root" not found' in e["event"] for e in logs)
    job = pending_job("pg", "q")
    assert ssn.fn(Point.JOB_ENQUEUEABLE, "capacity")(job) == Vote.Reject
    assert ssn.fn(Point.RECLAIMABLE, "capacity")(job.tasks[next(iter(job.tasks))], []) == ([], Vote.Reject)
    assert Point.QUEUE_ORDER not in ssn.registered
    assert Point.VICTIM_QUEUE_ORDER not in ssn.registered


def test_nil_safety_with_a_job_in_a_deleted_queue():
    """Test_buildHierarchicalQueueAttrs_nilSafety "no-panic when job references a deleted queue": the job
    is skipped, the tree (root alone) is fine, and the plugin schedules for the others."""
    orphan = pending_job("pg-orphan", "deleted-queue")
    ssn = TreeSession([node("n1", "4", "4Gi", "10")], jobs=[orphan], queues=[tree_queue("root")])
    plugin = open_capacity(ssn)
    assert plugin.ready
    assert set(plugin.attrs) == {"root"}
    assert plugin.attrs["root"].allocated.is_empty() and plugin.attrs["root"].request.is_empty()


def test_with_hierarchy_case7_children_guarantees_above_the_parent_capability():
    """Test_capacityPlugin_OnSessionOpenWithHierarchy case7: the sum of sub queue 71 and 72's guarantee
    exceeds the capacity of queue7, but should not panic.  The plugin logs it and goes on: each child's
    real capability is what q7's leaves beyond both guarantees (nothing) plus its own guarantee."""
    cap = Resource.from_list({"cpu": "6", "memory": "4Gi"})
    guarantee = Resource.from_list({"cpu": "4", "memory": "3Gi"})
    ssn = TreeSession([node("n1", "8", "8Gi", "11")], queues=[
        tree_queue("root"), tree_queue("q7", "root", cap),
        tree_queue("q71", "q7", cap, guarantee), tree_queue("q72", "q7", cap, guarantee),
    ])
    with structlog.testing.capture_logs() as logs:
        plugin = open_capacity(ssn)
    assert plugin.ready
    assert any(e["event"].startswith("Sum of child queue guarantees") and "parent queue q7" in e["event"]
               for e in logs)
    for child in ("q71", "q72"):
        real = plugin.attrs[child].real_capability
        assert (real.milli_cpu, real.memory) == (4000, 3 * 1024**3)
