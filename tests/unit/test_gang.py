"""gang: job validity, readiness, pipelining, order and the conditions written at close."""

from __future__ import annotations

from collections.abc import Iterable

from vcsched.api.job_info import JobInfo, PodGroup
from vcsched.api.task_info import TaskInfo, TransactionContext, new_task_info
from vcsched.api.types import TaskStatus, Vote
from vcsched.framework.arguments import Arguments
from vcsched.framework.interface import Point
from vcsched.plugins.gang import GangPlugin

from .fakes import FakeSession


def task(name: str, phase: str = "Pending", *, role: str = "", cpu: str | None = "1",
         node_name: str = "", terminating: bool = False) -> TaskInfo:
    meta = {"name": name, "namespace": "ns", "uid": name,
            "annotations": {"scheduling.k8s.io/group-name": "pg", **({"volcano.sh/task-spec": role} if role else {})}}
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    requests = {"cpu": cpu} if cpu else {}
    return new_task_info({"metadata": meta,
                          "spec": {"nodeName": node_name,
                                   "containers": [{"name": "c", "resources": {"requests": requests}}]},
                          "status": {"phase": phase}})


def job(tasks: Iterable[TaskInfo], min_member: int, min_task_member: dict[str, int] | None = None,
        name: str = "pg") -> JobInfo:
    j = JobInfo(f"ns/{name}", PodGroup(name, "ns", f"uid-{name}", 0.0, min_member=min_member,
                                        min_task_member=min_task_member or {}, queue="default"))
    for t in tasks:
        j.add_task(t)
    return j


def opened(*jobs: JobInfo) -> tuple[GangPlugin, FakeSession]:
    ssn = FakeSession(jobs=jobs)
    ssn.uid, ssn.now = "session-1", 50.0
    plugin = GangPlugin(Arguments({}))
    plugin.on_session_open(ssn)
    return plugin, ssn


def test_registers_volcanos_points() -> None:
    _, ssn = opened()
    for point in (Point.JOB_VALID, Point.JOB_ORDER, Point.JOB_READY, Point.JOB_PIPELINED, Point.JOB_STARVING,
                  Point.PREEMPTABLE, Point.RECLAIMABLE):
        assert "gang" in ssn.registered[point], point


def test_job_valid_counts_valid_tasks_against_min_member() -> None:
    j = job([task("a-0"), task("a-1", "Failed")], min_member=2)
    res = GangPlugin.job_valid(j)
    assert (res.passed, res.reason, res.message) == (
        False, "NotEnoughTasks", "Not enough valid tasks for gang-scheduling, valid: 1, min: 2")
    assert GangPlugin.job_valid(job([task("a-0"), task("a-1")], min_member=2)) is None


def test_job_valid_checks_each_roles_minimum() -> None:
    j = job([task("m-0", role="master"), task("w-0", role="worker", phase="Failed")], min_member=2,
            min_task_member={"master": 1, "worker": 1})
    res = GangPlugin.job_valid(j)
    assert (res.reason, res.message) == ("NotEnoughPodsOfTask", "Not enough valid pods of each task for gang-scheduling")


def test_job_ready_and_pipelined() -> None:
    running, pipelined, pending = task("t-0", "Running", node_name="n"), task("t-1"), task("t-2")
    j = job([running, pipelined, pending], min_member=2)
    j.update_task_status(pipelined, TaskStatus.Pipelined)
    assert not GangPlugin.job_ready(j)
    assert GangPlugin.job_pipelined(j) == Vote.Permit
    j.update_task_status(pipelined, TaskStatus.Allocated)
    assert GangPlugin.job_ready(j)
    j.update_task_status(pipelined, TaskStatus.Pending)
    assert GangPlugin.job_pipelined(j) == Vote.Reject


def test_best_effort_pending_tasks_count_towards_readiness() -> None:
    j = job([task("t-0", "Running", node_name="n"), task("t-1", cpu=None)], min_member=2)
    assert GangPlugin.job_ready(j)


def test_role_minimum_gates_readiness() -> None:
    m, w0, w1 = task("m-0", role="master"), task("w-0", role="worker"), task("w-1", role="worker")
    j = job([m, w0, w1], min_member=2, min_task_member={"master": 1, "worker": 1})
    j.update_task_status(w0, TaskStatus.Allocated)
    j.update_task_status(w1, TaskStatus.Allocated)
    assert not GangPlugin.job_ready(j)  # two ready tasks, but no master
    j.update_task_status(m, TaskStatus.Allocated)
    assert GangPlugin.job_ready(j)


def test_job_order_puts_unready_jobs_first() -> None:
    ready = job([task("r-0", "Running", node_name="n")], min_member=1, name="ready")
    unready = job([task("u-0")], min_member=1, name="unready")
    assert GangPlugin.job_order(unready, ready) == -1
    assert GangPlugin.job_order(ready, unready) == 1
    assert GangPlugin.job_order(ready, ready) == 0


def test_job_starving_until_min_member_is_met() -> None:
    j = job([task("t-0", "Running", node_name="n"), task("t-1")], min_member=2)
    _, ssn = opened(j)
    assert ssn.fn(Point.JOB_STARVING, "gang")(j)
    j.update_task_status(j.tasks["t-1"], TaskStatus.Pipelined)
    assert not ssn.fn(Point.JOB_STARVING, "gang")(j)


def test_close_writes_unschedulable_with_volcanos_message() -> None:
    tried = task("t-1")
    j = job([task("t-0", "Running", node_name="n"), tried, task("t-2")], min_member=3)
    tried.last_transaction = TransactionContext(TaskStatus.Allocated, "n", False)
    plugin, ssn = opened(j)
    plugin.on_session_close(ssn)
    (cond,) = j.podgroup.conditions
    # one task was placed before the gang was discarded: it counts as schedulable
    assert cond == {
        "type": "Unschedulable", "status": "True", "transitionID": "session-1", "lastTransitionTime": 50.0,
        "reason": "NotEnoughResources",
        "message": "1/3 tasks in gang unschedulable: " + j.fit_error(),
    }


def test_close_replaces_the_condition_of_the_same_type() -> None:
    j = job([task("t-0", "Running", node_name="n")], min_member=1)
    j.podgroup.conditions = [{"type": "Scheduled", "status": "True", "transitionID": "old"},
                             {"type": "Other", "status": "True"}]
    plugin, ssn = opened(j)
    plugin.on_session_close(ssn)
    assert [c["type"] for c in j.podgroup.conditions] == ["Scheduled", "Other"]
    assert j.podgroup.conditions[0]["transitionID"] == "session-1"
    assert j.podgroup.conditions[0]["reason"] == "tasks in gang are ready to be scheduled"


def test_close_says_nothing_while_the_gang_waits_for_its_releasing_pods() -> None:
    # a restarted job: the old pods terminate on their nodes and the new ones are not created yet
    j = job([task("t-0", "Running", node_name="n", terminating=True)], min_member=1)
    assert j.count(TaskStatus.Releasing) == 1
    plugin, ssn = opened(j)
    plugin.on_session_close(ssn)
    assert j.podgroup.conditions == []
