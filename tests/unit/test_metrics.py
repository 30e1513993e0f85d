"""The scheduler publishes what each session observed under Volcano's metric names."""

from __future__ import annotations

from vcsched.cache import Cache
from vcsched.conf import parse_conf
from vcsched.metrics import Metrics
from vcsched.scheduler import Scheduler

from .test_actions import node, pod, podgroup, queue

CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
"""

EPOCH = 1767225600.0  # 2026-01-01T00:00:00Z, the pods' and podgroups' creation time


def scheduler() -> tuple[Scheduler, Cache, Metrics]:
    cache = Cache()
    cache.add_queue(queue("default"))
    cache.add_queue(queue("team", weight=3))
    cache.add_node(node("n1", cpu="4", memory="8Gi"))
    cache.add_podgroup(podgroup("ok", 2, queue="team"))
    cache.add_podgroup(podgroup("big", 2))
    for i in range(2):
        cache.add_pod(pod(f"ok-{i}", "ok", cpu="1", memory="1Gi"))
        cache.add_pod(pod(f"big-{i}", "big", cpu="3", memory="1Gi"))
    metrics = Metrics()
    return Scheduler(cache, parse_conf(CONF), metrics), cache, metrics


def value(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def test_a_session_publishes_job_queue_and_plugin_series() -> None:
    sched, _, metrics = scheduler()
    sched.run_once(now=EPOCH + 10, uid="s1")

    # "ok" placed both tasks 10 s after creation; "big" could not be placed
    job = {"job_name": "ok", "queue": "team", "job_namespace": "default"}
    assert value(metrics, "volcano_e2e_job_scheduling_duration", **job) == 10_000
    assert value(metrics, "volcano_e2e_job_scheduling_last_time", **job) == EPOCH + 10
    assert value(metrics, "volcano_e2e_job_scheduling_start_time", **job) == EPOCH
    assert value(metrics, "volcano_e2e_job_scheduling_latency_milliseconds_count") == 2
    assert value(metrics, "volcano_unschedule_task_count", job_id="big") == 2
    assert value(metrics, "volcano_unschedule_task_count", job_id="ok") == 0
    assert value(metrics, "volcano_unschedule_job_count") == 1
    assert value(metrics, "volcano_job_retry_counts_total", job_id="big") == 1
    assert value(metrics, "volcano_job_share", job_ns="default", job_id="ok") == 0.5  # 2 of 4 CPU

    assert value(metrics, "volcano_queue_allocated_milli_cpu", queue_name="team") == 2000
    assert value(metrics, "volcano_queue_allocated_memory_bytes", queue_name="team") == 2 * 1024**3
    assert value(metrics, "volcano_queue_request_milli_cpu", queue_name="default") == 6000
    assert value(metrics, "volcano_queue_allocated_scalar_resources", queue_name="team", resource="pods") == 2
    assert value(metrics, "volcano_queue_weight", queue_name="team") == 3
    assert value(metrics, "volcano_queue_overused", queue_name="team") == 1  # it got all it asked for
    assert value(metrics, "volcano_queue_overused", queue_name="default") == 0
    assert value(metrics, "volcano_queue_deserved_milli_cpu", queue_name="team") == 2000

    assert value(metrics, "volcano_plugin_scheduling_latency_milliseconds_count",
                 plugin="gang", OnSession="OnSessionOpen") == 1
    assert value(metrics, "volcano_plugin_scheduling_latency_milliseconds_count",
                 plugin="proportion", OnSession="OnSessionClose") == 1
    assert value(metrics, "volcano_action_scheduling_latency_milliseconds_count", action="allocate") == 1
    assert value(metrics, "volcano_e2e_scheduling_latency_milliseconds_count") == 1


def test_retries_count_every_failed_session_and_series_go_with_their_job_and_queue() -> None:
    sched, cache, metrics = scheduler()
    sched.run_once(now=EPOCH + 10, uid="s1")
    sched.run_once(now=EPOCH + 11, uid="s2")
    assert value(metrics, "volcano_job_retry_counts_total", job_id="big") == 2

    for i in range(2):
        cache.delete_pod(f"uid-big-{i}")
    cache.delete_podgroup("default/big")
    cache.add_queue(queue("extra"))
    sched.run_once(now=EPOCH + 12, uid="s3")
    assert value(metrics, "volcano_job_retry_counts_total", job_id="big") is None
    assert value(metrics, "volcano_unschedule_task_count", job_id="big") is None
    assert value(metrics, "volcano_unschedule_job_count") == 0
    assert value(metrics, "volcano_queue_allocated_milli_cpu", queue_name="extra") == 0

    cache.delete_queue("extra")
    sched.run_once(now=EPOCH + 13, uid="s4")
    assert value(metrics, "volcano_queue_allocated_milli_cpu", queue_name="extra") is None
    assert value(metrics, "volcano_queue_allocated_milli_cpu", queue_name="team") == 2000


def test_every_search_records_its_predicate_and_scoring_stage() -> None:
    """scheduling_stage_duration{stage=Predicate} per task searched, {stage=Scoring} when nodes were scored."""
    cache = Cache()
    cache.add_queue(queue("default"))
    cache.add_node(node("n1", cpu="4", memory="8Gi"))
    cache.add_node(node("n2", cpu="4", memory="8Gi"))
    cache.add_podgroup(podgroup("pg", 3))
    for i in range(3):
        cache.add_pod(pod(f"p-{i}", "pg", cpu="1", memory="1Gi"))
    cache.add_podgroup(podgroup("nowhere", 1))
    nowhere = pod("nowhere-0", "nowhere", cpu="1", memory="1Gi")
    nowhere["spec"]["nodeSelector"] = {"zone": "nowhere"}
    cache.add_pod(nowhere)
    metrics = Metrics()
    Scheduler(cache, parse_conf(CONF), metrics).run_once(now=EPOCH, uid="s1")

    stage = "volcano_scheduling_stage_duration_milliseconds_count"
    assert value(metrics, stage, stage="Predicate") == 4  # three tasks placed, one that fits nowhere
    assert value(metrics, stage, stage="Scoring") == 3  # the task that fits nowhere is never scored
