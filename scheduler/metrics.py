"""Volcano's scheduler metrics (pkg/scheduler/metrics), each registry owned by its scheduler.

Names, labels and buckets are Volcano's (spec/framework.md §11).  Sessions record
plain numbers in ``Session.stats``; ``publish`` turns one closed session into
series updates.  A job's series go when the job leaves the session's view, a
queue's when the queue does; a scalar resource a queue no longer reports is set
to 0, not deleted, as Volcano does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from .api.resource import Resource
    from .framework.session import Session
    from .framework.stats import VGPUDeviceStats

NAMESPACE = "volcano"
EVICTION_ACTIONS = frozenset({"preempt", "reclaim", "gangpreempt", "gangreclaim"})
# task_scheduling_latency stages: Watched (an unbound pod added to the cache), Assumed (allocated in
# memory, its bind dispatched), PreBound (after PreBind, which vcsched does not have: it binds no
# volumes and no DRA claims), Bound (the Binding accepted)
TASK_STAGES = ("Watched", "Assumed", "PreBound", "Bound")


def _buckets(lo: float, hi: float, count: int) -> list[float]:
    """``ExponentialBucketsRange``."""
    factor = (hi / lo) ** (1 / (count - 1))
    return [lo * factor**i for i in range(count)]


class _Children:
    """A labelled metric's children, kept by their label values.

    ``labels()`` converts each value to a string and takes the metric's lock (4 µs); a session
    publishes some fifty series, and event-driven cycles run up to dozens of sessions a second."""

    __slots__ = ("metric", "_by_values")

    def __init__(self, metric: Gauge | Counter | Histogram) -> None:
        self.metric = metric
        self._by_values: dict[tuple[str, ...], Any] = {}

    def __call__(self, *values: str) -> Any:
        child = self._by_values.get(values)
        if child is None:
            child = self._by_values[values] = self.metric.labels(*values)
        return child

    def remove(self, *values: str) -> None:
        self._by_values.pop(values, None)
        try:
            self.metric.remove(*values)
        except KeyError:
            pass


class _QueueResource:
    """The three gauges Volcano keeps for one queue quantity: milli CPU, memory bytes, scalars."""

    def __init__(self, what: str, help_: str, registry: CollectorRegistry) -> None:
        self.cpu = Gauge(f"queue_{what}_milli_cpu", f"{help_} milli cpu", ["queue_name"],
                         namespace=NAMESPACE, registry=registry)
        self.memory = Gauge(f"queue_{what}_memory_bytes", f"{help_} memory bytes", ["queue_name"],
                            namespace=NAMESPACE, registry=registry)
        self.scalars = Gauge(f"queue_{what}_scalar_resources", f"{help_} scalar resources",
                             ["queue_name", "resource"], namespace=NAMESPACE, registry=registry)
        self._cpu, self._memory, self._scalars = _Children(self.cpu), _Children(self.memory), _Children(self.scalars)
        self._seen: dict[str, set[str]] = {}

    def set(self, queue: str, r: Resource | None) -> None:
        self._cpu(queue).set(r.milli_cpu if r is not None else 0)
        self._memory(queue).set(r.memory if r is not None else 0)
        scalars = r.scalars if r is not None else {}
        seen = self._seen.setdefault(queue, set())
        for name in seen - scalars.keys():
            self._scalars(queue, name).set(0)
        for name, value in scalars.items():
            self._scalars(queue, name).set(value)
            seen.add(name)

    def remove(self, queue: str) -> None:
        self._cpu.remove(queue)
        self._memory.remove(queue)
        for name in self._seen.pop(queue, ()):
            self._scalars.remove(queue, name)


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        r = self.registry = registry or CollectorRegistry()
        ns = NAMESPACE
        self.e2e = Histogram(
            "e2e_scheduling_latency_milliseconds", "E2e scheduling latency in milliseconds (scheduling algorithm + binding)",
            namespace=ns, buckets=_buckets(1, 5000, 20), registry=r,
        )
        self.open = Histogram(
            "open_session_duration_milliseconds", "Duration of opening a session in milliseconds",
            namespace=ns, buckets=_buckets(1, 5000, 20), registry=r,
        )
        self.actions = Histogram(
            "action_scheduling_latency_milliseconds", "Action scheduling latencies in milliseconds",
            ["action"], namespace=ns, buckets=_buckets(1, 2000, 20), registry=r,
        )
        self.plugins = Histogram(
            "plugin_scheduling_latency_milliseconds", "Plugin scheduling latency in milliseconds",
            ["plugin", "OnSession"], namespace=ns, buckets=_buckets(0.1, 100, 15), registry=r,
        )
        self.job_latency = Histogram(
            "e2e_job_scheduling_latency_milliseconds", "E2e job scheduling latency in milliseconds",
            namespace=ns, buckets=_buckets(100, 120000, 30), registry=r,
        )
        # per-job series: plain records, turned into samples only when scraped
        self.jobs = _JobCollector()
        r.register(self.jobs)
        self.unschedulable_jobs = Gauge("unschedule_job_count", "Number of jobs could not be scheduled",
                                        namespace=ns, registry=r)
        self.preemption_victims = Gauge("pod_preemption_victims", "Number of selected preemption victims",
                                        namespace=ns, registry=r)
        self.preemption_attempts = Counter("total_preemption_attempts",
                                           "Total preemption attempts in the cluster till now",
                                           namespace=ns, registry=r)
        self.eviction_transactions = Counter(
            "eviction_transactions_total", "Committed scheduler transactions that contain at least one eviction",
            ["action"], namespace=ns, registry=r)
        self.queue_allocated = _QueueResource("allocated", "Allocated resources of queue:", r)
        self.queue_request = _QueueResource("request", "Request resources of queue:", r)
        self.queue_deserved = _QueueResource("deserved", "Deserved resources of queue:", r)
        self.queue_inqueue = _QueueResource("inqueue", "Inqueue resources of queue:", r)
        self.queue_share = Gauge("queue_share", "Share for one queue", ["queue_name"], namespace=ns, registry=r)
        self.queue_weight = Gauge("queue_weight", "Weight for one queue", ["queue_name"], namespace=ns, registry=r)
        self.queue_overused = Gauge("queue_overused", "If one queue is overused", ["queue_name"],
                                    namespace=ns, registry=r)
        self._queues: set[str] = set()
        self._action, self._plugin = _Children(self.actions), _Children(self.plugins)
        self._queue_gauges = (_Children(self.queue_share), _Children(self.queue_weight), _Children(self.queue_overused))
        # deviceshare's vGPU gauges: the ledger of the latest session, turned into samples when scraped
        self.vgpu_devices = _VGPUDeviceCollector()
        r.register(self.vgpu_devices)
        # the bind path (recorded by the Kubernetes source and sink, not by sessions)
        self.task_latency = Histogram(
            "task_scheduling_latency_milliseconds", "Task scheduling latency from creation to various stages in milliseconds",
            ["stage"], namespace=ns, buckets=_buckets(50, 60000, 30), registry=r,
        )
        self.stage_duration = Histogram(
            "scheduling_stage_duration_milliseconds",
            "Duration of per-task scheduling stages (Predicate, Scoring, PreBind, Bind) in milliseconds",
            ["stage"], namespace=ns, buckets=_buckets(0.1, 500, 20), registry=r,
        )
        self._task_stage, self._stage = _Children(self.task_latency), _Children(self.stage_duration)

    # -- the loop's own timings -------------------------------------------------------------

    def cycle(self, seconds: float) -> None:
        self.e2e.observe(seconds * 1000)

    def open_session(self, seconds: float) -> None:
        self.open.observe(seconds * 1000)

    def action(self, name: str, seconds: float) -> None:
        self._action(name).observe(seconds * 1000)

    # -- the bind path ----------------------------------------------------------------------------

    def task_stage(self, stage: str, created: float, now: float) -> None:
        """``UpdateTaskScheduleDuration``: pod creation → ``stage`` (one of TASK_STAGES); nothing
        when the creation time is unknown (0)."""
        if created <= 0:
            return
        self._task_stage(stage).observe(max(0.0, now - created) * 1000)

    def scheduling_stage(self, stage: str, seconds: float) -> None:
        """``UpdateSchedulingStageDuration``: how long one task's ``stage`` took."""
        self._stage(stage).observe(seconds * 1000)

    # -- what a session observed ----------------------------------------------------------------

    def publish(self, ssn: Session) -> None:
        stats = ssn.stats
        for plugin, point, seconds in stats.plugin_latency:
            self._plugin(plugin, point).observe(seconds * 1000)
        self._publish_jobs(ssn)
        if stats.unschedulable_jobs is not None:
            self.unschedulable_jobs.set(stats.unschedulable_jobs)
        for action, n in stats.eviction_transactions.items():
            if action in EVICTION_ACTIONS:
                self.eviction_transactions.labels(action).inc(n)
        if stats.preemption_attempts:
            self.preemption_attempts.inc(stats.preemption_attempts)
        if stats.preemption_victims is not None:
            self.preemption_victims.set(stats.preemption_victims)
        self._publish_queues(ssn)
        for seconds in stats.predicate_durations:
            self.scheduling_stage("Predicate", seconds)
        for seconds in stats.scoring_durations:
            self.scheduling_stage("Scoring", seconds)
        if stats.vgpu_devices is not None:
            self.vgpu_devices.devices = stats.vgpu_devices

    def _publish_jobs(self, ssn: Session) -> None:
        stats = ssn.stats
        records = self.jobs.records
        # the jobs cloned afresh, and those the session observed something of: a reused settled job
        # the session left alone has the record the session that last saw it changed left
        jobs = ssn.jobs
        uids = [job.uid for job in ssn.fresh_jobs]
        if len(records) + len(uids) < len(jobs):  # reused jobs without a record (a new Metrics): all
            uids = list(jobs)
        elif len(uids) < len(jobs):
            seen = set(uids)
            for observed in (stats.job_placements, stats.job_shares, stats.unschedulable_tasks):
                uids.extend(u for u in observed if u not in seen and u in jobs and not seen.add(u))
        for uid in uids:
            job = jobs[uid]
            rec = records.get(uid)
            if rec is None or rec.name != job.name or rec.queue != job.queue or rec.namespace != job.namespace:
                rec = records[uid] = _JobRecord(job.name, job.queue, job.namespace, job.creation_timestamp)
            placed = stats.job_placements.get(uid, 0)
            if placed:
                rec.duration_ms = max(0.0, ssn.now - job.creation_timestamp) * 1000
                rec.last_time = ssn.now
                for _ in range(placed):
                    self.job_latency.observe(rec.duration_ms)
            share = stats.job_shares.get(uid)
            if share is not None:
                rec.share = share
            unready = stats.unschedulable_tasks.get(uid)
            if unready is not None:
                rec.unschedulable_tasks = unready
        for uid in stats.job_retries:
            rec = records.get(uid)
            if rec is not None:
                rec.retries += 1
        if len(records) != len(jobs):  # a job gone (every job of the session has a record)
            for uid in [u for u in records if u not in jobs]:
                del records[uid]

    def _publish_queues(self, ssn: Session) -> None:
        stats = ssn.stats
        if stats.queues or "proportion" in ssn.plugins:
            for name in ssn.queues:
                q = stats.queues.get(name)
                # proportion reports queues without jobs as empty
                self.queue_allocated.set(name, q.allocated if q else None)
                self.queue_request.set(name, q.request if q else None)
                self.queue_inqueue.set(name, q.inqueue if q else None)
                if q is not None:
                    self.queue_deserved.set(name, q.deserved)
                    share, weight, overused = self._queue_gauges
                    weight(name).set(q.weight)
                    share(name).set(q.share)
                    overused(name).set(1 if q.overused else 0)
                self._queues.add(name)
        for name in [n for n in self._queues if n not in ssn.queues]:
            self._queues.discard(name)
            for series in (self.queue_allocated, self.queue_request, self.queue_deserved, self.queue_inqueue):
                series.remove(name)
            for gauge in self._queue_gauges:
                gauge.remove(name)


@dataclass(slots=True)
class _JobRecord:
    name: str
    queue: str
    namespace: str
    start_time: float
    duration_ms: float | None = None
    last_time: float | None = None
    share: float | None = None
    unschedulable_tasks: int | None = None
    retries: int = 0


class _JobCollector(Collector):
    """Volcano's per-job series, made from one record per job at scrape time.

    A session only updates plain records (thousands of jobs would otherwise cost a
    labelled-child lookup each); a job's series disappear with its record.
    """

    def __init__(self) -> None:
        self.records: dict[str, _JobRecord] = {}

    def collect(self) -> Iterator[Metric]:
        job_labels = ["job_name", "queue", "job_namespace"]
        duration = GaugeMetricFamily(f"{NAMESPACE}_e2e_job_scheduling_duration", "E2E job scheduling duration",
                                     labels=job_labels)
        start = GaugeMetricFamily(f"{NAMESPACE}_e2e_job_scheduling_start_time", "E2E job scheduling start time",
                                  labels=job_labels)
        last = GaugeMetricFamily(f"{NAMESPACE}_e2e_job_scheduling_last_time", "E2E job scheduling last time",
                                 labels=job_labels)
        share = GaugeMetricFamily(f"{NAMESPACE}_job_share", "Share for one job", labels=["job_ns", "job_id"])
        unready = GaugeMetricFamily(f"{NAMESPACE}_unschedule_task_count", "Number of tasks could not be scheduled",
                                    labels=["job_id"])
        retries = CounterMetricFamily(f"{NAMESPACE}_job_retry_counts", "Number of retry counts for one job",
                                      labels=["job_id"])
        for rec in self.records.values():
            labels = [rec.name, rec.queue, rec.namespace]
            start.add_metric(labels, rec.start_time)
            if rec.duration_ms is not None:
                duration.add_metric(labels, rec.duration_ms)
                last.add_metric(labels, rec.last_time)
            if rec.share is not None:
                share.add_metric([rec.namespace, rec.name], rec.share)
            if rec.unschedulable_tasks is not None:
                unready.add_metric([rec.name], rec.unschedulable_tasks)
            if rec.retries:
                retries.add_metric([rec.name], rec.retries)
        yield from (duration, start, last, share, unready, retries)


class _VGPUDeviceCollector(Collector):
    """Volcano's ``volcano_vgpu_device_*`` gauges (api/devices/nvidia/vgpu/metrics.go, spec/devices.md §8).

    Volcano resets a GPU's gauges whenever it rebuilds the node's vGPU object from the pods'
    annotations; here each session's rebuilt ledger replaces the previous one, so a pod's series go
    when it leaves the GPU, and a GPU's when its node does (Volcano keeps those of a deleted node).
    """

    def __init__(self) -> None:
        self.devices: list[VGPUDeviceStats] = []

    def collect(self) -> Iterator[Metric]:
        labels = ["devID", "NodeName"]
        limit = GaugeMetricFamily(f"{NAMESPACE}_vgpu_device_memory_limit",
                                  "The number of total device memory in this card", labels=labels)
        shared = GaugeMetricFamily(f"{NAMESPACE}_vgpu_device_shared_number",
                                   "The number of vgpu tasks sharing this card", labels=labels)
        memory = GaugeMetricFamily(f"{NAMESPACE}_vgpu_device_allocated_memory",
                                   "The number of vgpu memory allocated in this card", labels=labels)
        cores = GaugeMetricFamily(f"{NAMESPACE}_vgpu_device_allocated_cores",
                                  "The percentage of gpu compute cores allocated in this card", labels=labels)
        pod_memory = GaugeMetricFamily(f"{NAMESPACE}_vgpu_device_memory_allocation_for_a_certain_pod",
                                       "The vgpu device memory allocated for a certain pod",
                                       labels=labels + ["podName"])
        pod_cores = GaugeMetricFamily(f"{NAMESPACE}_vgpu_device_core_allocation_for_a_certain_pod",
                                      "The vgpu device core allocated for a certain pod", labels=labels + ["podName"])
        for d in self.devices:
            key = [d.device, d.node]
            limit.add_metric(key, d.memory_limit)
            shared.add_metric(key, d.shared_number)
            memory.add_metric(key, d.allocated_memory)
            cores.add_metric(key, d.allocated_cores)
            for pod, (mem, core) in d.pods.items():
                pod_memory.add_metric(key + [pod], mem)
                pod_cores.add_metric(key + [pod], core)
        yield from (limit, shared, memory, cores, pod_memory, pod_cores)


def _remove(metric: Gauge | Counter, *labels: str) -> None:
    try:
        metric.remove(*labels)
    except KeyError:
        pass


QUEUE_POD_GROUP_PHASES = ("Inqueue", "Pending", "Running", "Unknown", "Completed")


class ControllerMetrics:
    """The queue controller's series (pkg/controllers/metrics/queue.go): its queues' PodGroups by phase,
    ``volcano_queue_pod_group_<phase>_count{queue_name}``. Metrics only: Volcano writes none of it to the
    Queue's status. Served from the scheduler's registry when both run in one process."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.pod_groups = {phase: Gauge(f"queue_pod_group_{phase.lower()}_count",
                                        f"The number of {phase} PodGroup in this queue", ["queue_name"],
                                        namespace=NAMESPACE, registry=self.registry)
                           for phase in QUEUE_POD_GROUP_PHASES}

    def queue_pod_groups(self, queue: str, phases: Iterable[str]) -> None:
        """UpdateQueueMetrics: the counts of ``phases`` (one per PodGroup of the queue; other phases uncounted)."""
        counts = dict.fromkeys(QUEUE_POD_GROUP_PHASES, 0)
        for phase in phases:
            if phase in counts:
                counts[phase] += 1
        for phase, n in counts.items():
            self.pod_groups[phase].labels(queue).set(n)

    def remove_queue(self, queue: str) -> None:
        """DeleteQueueMetrics: the queue is gone."""
        for gauge in self.pod_groups.values():
            _remove(gauge, queue)


def api_errors(registry: CollectorRegistry) -> Counter:
    """``vcsched_api_errors_total{code,resource,verb}``: requests the API server refused (Volcano has no
    such metric; client-go's rest_client_requests_total counts by code and method only)."""
    return Counter("api_errors", "Requests the Kubernetes API server answered with an error, by status code, "
                   "resource and verb", ["code", "resource", "verb"], namespace="vcsched", registry=registry)
