"""enqueue, allocate and backfill, each run alone on a real session over a small cache.

Each test opens a session with only the plugins the behaviour needs, executes one
action and looks at what it left: PodGroup phases, task statuses, effects.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from vcsched.actions.allocate import AllocateAction
from vcsched.actions.backfill import BackfillAction
from vcsched.actions.enqueue import EnqueueAction
from vcsched.api.types import PodGroupPhase, TaskStatus
from vcsched.cache import Cache
from vcsched.conf import parse_conf
from vcsched.framework.effects import Bind
from vcsched.framework.registry import plugin_classes
from vcsched.framework.session import Session

# -- a small cluster -------------------------------------------------------------------------


def node(name: str, cpu: str = "4", memory: str = "8Gi", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}}


def pod(name: str, group: str, cpu: str | None = "1", memory: str = "1Gi", *, node_name: str = "",
        phase: str = "Pending", terminating: bool = False, selector: dict[str, str] | None = None,
        created: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    requests = {"cpu": cpu, "memory": memory} if cpu else {}
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}", "creationTimestamp": created,
                            "annotations": {"scheduling.k8s.io/group-name": group}}
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:00:10Z"
    return {
        "metadata": meta,
        "spec": {"schedulerName": "volcano", "nodeName": node_name, "nodeSelector": selector or {},
                 "containers": [{"name": "c", "resources": {"requests": requests}}]},
        "status": {"phase": phase},
    }


def podgroup(name: str, min_member: int = 1, *, queue: str = "default", phase: str = PodGroupPhase.INQUEUE,
             min_resources: dict[str, str] | None = None, priority_class: str = "",
             created: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member, "queue": queue}
    if min_resources is not None:
        spec["minResources"] = min_resources
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"metadata": {"name": name, "namespace": "default", "uid": f"pg-{name}", "creationTimestamp": created},
            "spec": spec, "status": {"phase": phase}}


def queue(name: str, weight: int = 1, capability: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": weight}
    if capability:
        spec["capability"] = capability
    return {"metadata": {"name": name, "creationTimestamp": "2025-12-31T00:00:00Z"},
            "spec": spec, "status": {"state": "Open"}}


def session(plugins: str, *, actions: str = "enqueue, allocate, backfill", nodes: Iterable[dict] = (),
            podgroups: Iterable[dict] = (), pods: Iterable[dict] = (), queues: Iterable[dict] = (),
            priority_classes: Iterable[dict] = ()) -> Session:
    """An opened session; ``plugins`` is one tier, comma-separated names."""
    conf = parse_conf(f'actions: "{actions}"\ntiers:\n- plugins:\n'
                      + "".join(f"  - name: {p.strip()}\n" for p in plugins.split(",")))
    cache = Cache()
    for q in [*queues] or [queue("default")]:
        cache.add_queue(q)
    for pc in priority_classes:
        cache.add_priority_class(pc)
    for n in nodes:
        cache.add_node(n)
    for pg in podgroups:
        cache.add_podgroup(pg)
    for p in pods:
        cache.add_pod(p)
    ssn = Session(cache.snapshot(), conf, plugin_classes(), now=100.0, uid="s1")
    ssn.open()
    return ssn


def job(ssn: Session, name: str):
    return ssn.jobs[f"default/{name}"]


def statuses(ssn: Session, name: str) -> dict[str, TaskStatus]:
    return {t.name: t.status for t in job(ssn, name).tasks.values()}


def binds(ssn: Session) -> dict[str, str]:
    return {e.name: e.node for e in ssn.effects if isinstance(e, Bind)}


# -- enqueue ---------------------------------------------------------------------------------


def test_enqueue_admits_a_job_without_min_resources() -> None:
    ssn = session("gang, proportion", nodes=[node("n1", cpu="1")],
                  podgroups=[podgroup("big", 3, phase=PodGroupPhase.PENDING)],
                  pods=[pod(f"big-{i}", "big", cpu="4") for i in range(3)])
    EnqueueAction().execute(ssn)
    assert job(ssn, "big").podgroup.phase == PodGroupPhase.INQUEUE


def test_enqueue_holds_a_job_above_its_queue_capability() -> None:
    ssn = session("proportion", nodes=[node("n1", cpu="8")],
                  queues=[queue("small", capability={"cpu": "2"})],
                  podgroups=[podgroup("fits", queue="small", phase=PodGroupPhase.PENDING, min_resources={"cpu": "2"}),
                             podgroup("nofit", queue="small", phase=PodGroupPhase.PENDING, min_resources={"cpu": "3"})])
    EnqueueAction().execute(ssn)
    assert job(ssn, "fits").podgroup.phase == PodGroupPhase.INQUEUE
    assert job(ssn, "nofit").podgroup.phase == PodGroupPhase.PENDING


def test_enqueue_admits_in_job_order_until_the_cluster_is_full() -> None:
    # overcommit admits while inqueue minResources fit 1.0 × the cluster; priority orders the jobs
    ssn = session("priority, overcommit", nodes=[node("n1", cpu="4")],
                  priority_classes=[{"metadata": {"name": "high"}, "value": 100}],
                  podgroups=[podgroup("low", phase=PodGroupPhase.PENDING, min_resources={"cpu": "3"},
                                      created="2026-01-01T00:00:00Z"),
                             podgroup("high", phase=PodGroupPhase.PENDING, min_resources={"cpu": "3"},
                                      priority_class="high", created="2026-01-01T00:00:05Z")])
    ssn.plugins["overcommit"].overcommit_factor = 1.0
    EnqueueAction().execute(ssn)
    assert job(ssn, "high").podgroup.phase == PodGroupPhase.INQUEUE
    assert job(ssn, "low").podgroup.phase == PodGroupPhase.PENDING


def test_enqueue_leaves_admitted_jobs_alone() -> None:
    ssn = session("gang", nodes=[node("n1")],
                  podgroups=[podgroup("run", phase=PodGroupPhase.RUNNING)],
                  pods=[pod("run-0", "run", node_name="n1", phase="Running")])
    EnqueueAction().execute(ssn)
    assert job(ssn, "run").podgroup.phase == PodGroupPhase.RUNNING


# -- allocate ----------------------------------------------------------------------------------


def test_allocate_binds_a_gang_only_when_it_is_ready() -> None:
    ssn = session("gang, predicates", nodes=[node("n1", cpu="2"), node("n2", cpu="2")],
                  podgroups=[podgroup("g", 3)], pods=[pod(f"g-{i}", "g") for i in range(3)])
    AllocateAction().execute(ssn)
    assert sorted(binds(ssn)) == ["g-0", "g-1", "g-2"]
    assert set(statuses(ssn, "g").values()) == {TaskStatus.Binding}


def test_allocate_discards_a_gang_that_cannot_be_ready() -> None:
    ssn = session("gang, predicates", nodes=[node("n1", cpu="2")],
                  podgroups=[podgroup("g", 3)], pods=[pod(f"g-{i}", "g") for i in range(3)])
    AllocateAction().execute(ssn)
    assert binds(ssn) == {}
    assert set(statuses(ssn, "g").values()) == {TaskStatus.Pending}
    assert ssn.nodes["n1"].idle.milli_cpu == 2000  # nothing left behind on the node
    placed = [t for t in job(ssn, "g").tasks.values() if t.last_transaction is not None]
    assert len(placed) == 2 and {t.last_transaction.status for t in placed} == {TaskStatus.Allocated}


def test_allocate_waits_for_enqueue_when_enqueue_is_configured() -> None:
    ssn = session("gang", nodes=[node("n1")], podgroups=[podgroup("g", phase=PodGroupPhase.PENDING)],
                  pods=[pod("g-0", "g")])
    AllocateAction().execute(ssn)
    assert binds(ssn) == {}


def test_allocate_admits_pending_jobs_itself_without_enqueue() -> None:
    ssn = session("gang", actions="allocate", nodes=[node("n1")],
                  podgroups=[podgroup("g", phase=PodGroupPhase.PENDING)], pods=[pod("g-0", "g")])
    AllocateAction().execute(ssn)
    assert binds(ssn) == {"g-0": "n1"}
    assert job(ssn, "g").podgroup.phase == PodGroupPhase.INQUEUE


def test_allocate_skips_jobs_that_fail_validation() -> None:
    # minMember 2 with one pod: gang's JobValid refuses the job
    ssn = session("gang", nodes=[node("n1")], podgroups=[podgroup("g", 2)], pods=[pod("g-0", "g")])
    AllocateAction().execute(ssn)
    assert binds(ssn) == {}
    assert statuses(ssn, "g") == {"g-0": TaskStatus.Pending}


def test_allocate_leaves_best_effort_tasks_to_backfill() -> None:
    ssn = session("gang", nodes=[node("n1")], podgroups=[podgroup("g")], pods=[pod("g-0", "g", cpu=None)])
    AllocateAction().execute(ssn)
    assert binds(ssn) == {}


def test_allocate_pipelines_onto_releasing_resources() -> None:
    ssn = session("gang, predicates", nodes=[node("n1", cpu="2")],
                  podgroups=[podgroup("old"), podgroup("new")],
                  pods=[pod("old-0", "old", cpu="2", node_name="n1", phase="Running", terminating=True),
                        pod("new-0", "new", cpu="2")])
    AllocateAction().execute(ssn)
    assert binds(ssn) == {}
    assert statuses(ssn, "new") == {"new-0": TaskStatus.Pipelined}
    assert ssn.nodes["n1"].pipelined.milli_cpu == 2000


def test_allocate_records_why_a_task_did_not_fit() -> None:
    # resources are checked first (allocate's own predicate), then the plugins' predicates
    ssn = session("gang, predicates", nodes=[node("n1", cpu="2"), node("n2", cpu="1", labels={"zone": "a"})],
                  podgroups=[podgroup("g")], pods=[pod("g-0", "g", cpu="2", selector={"zone": "a"})])
    AllocateAction().execute(ssn)
    assert binds(ssn) == {}
    g = job(ssn, "g")
    assert g.fit_error().startswith("pod group is not ready, 1 Pending, 1 minAvailable; Pending: 1 Unschedulable")
    reason, message, _ = g.task_scheduling_reason(g.tasks["uid-g-0"])
    assert reason == "Unschedulable"
    assert message == ("0/2 nodes are unavailable: 1 Insufficient cpu, "
                       "1 node(s) didn't match Pod's node affinity/selector.")


def test_allocate_serves_queues_in_order_and_skips_overused_ones() -> None:
    # queue "a" holds all its capability already (pods count too: every task asks for one pod),
    # so it is overused and its new job waits though the node has room
    ssn = session("gang, proportion, predicates", nodes=[node("n1", cpu="8", memory="16Gi")],
                  queues=[queue("a", capability={"cpu": "4", "pods": "1"}), queue("b")],
                  podgroups=[podgroup("a-run", queue="a"), podgroup("a-new", queue="a"),
                             podgroup("b-new", queue="b")],
                  pods=[pod("a-run-0", "a-run", cpu="4", memory="4Gi", node_name="n1", phase="Running"),
                        pod("a-new-0", "a-new", memory="0"), pod("b-new-0", "b-new", memory="0")])
    assert ssn.overused(ssn.queues["a"])
    AllocateAction().execute(ssn)
    assert binds(ssn) == {"b-new-0": "n1"}


def test_allocate_orders_tasks_within_a_job() -> None:
    # one CPU for two tasks: the task order (index in the name) decides which one gets it
    ssn = session("gang, predicates", nodes=[node("n1", cpu="1")], podgroups=[podgroup("g")],
                  pods=[pod("g-job-1", "g"), pod("g-job-0", "g")])
    AllocateAction().execute(ssn)
    assert binds(ssn) == {"g-job-0": "n1"}


# -- backfill ----------------------------------------------------------------------------------


def test_backfill_binds_best_effort_tasks() -> None:
    ssn = session("gang, predicates", nodes=[node("n1", cpu="1")], podgroups=[podgroup("g")],
                  pods=[pod("g-0", "g", cpu=None)])
    BackfillAction().execute(ssn)
    assert binds(ssn) == {"g-0": "n1"}


def test_backfill_skips_pending_podgroups_and_invalid_jobs() -> None:
    ssn = session("gang, predicates", nodes=[node("n1")],
                  podgroups=[podgroup("p", phase=PodGroupPhase.PENDING), podgroup("bad", 2)],
                  pods=[pod("p-0", "p", cpu=None), pod("bad-0", "bad", cpu=None)])
    BackfillAction().execute(ssn)
    assert binds(ssn) == {}


def test_backfill_records_predicate_failures() -> None:
    ssn = session("gang, predicates", nodes=[node("n1")], podgroups=[podgroup("g")],
                  pods=[pod("g-0", "g", cpu=None, selector={"zone": "b"})])
    BackfillAction().execute(ssn)
    assert binds(ssn) == {}
    _, message, _ = job(ssn, "g").task_scheduling_reason(job(ssn, "g").tasks["uid-g-0"])
    assert message == "0/1 nodes are unavailable: 1 node(s) didn't match Pod's node affinity/selector."


def test_backfill_places_best_effort_tasks_that_allocate_pipelined() -> None:
    # allocate pipelines a best-effort task only as part of a gang; backfill takes it back and binds it
    ssn = session("gang, predicates", nodes=[node("n1", cpu="1")], podgroups=[podgroup("g")],
                  pods=[pod("g-0", "g", cpu=None)])
    from vcsched.framework.statement import Statement
    task = job(ssn, "g").tasks["uid-g-0"]
    Statement(ssn).pipeline(task, ssn.nodes["n1"])
    assert task.status == TaskStatus.Pipelined
    BackfillAction().execute(ssn)
    assert binds(ssn) == {"g-0": "n1"}
    assert task.status == TaskStatus.Binding
