"""usage: filter and score nodes by their measured load (plugins/usage/usage.go, estimator.go,
shadow_cache.go).

The load is what the metrics source reported for the node (``ssn.node_usage``, Volcano's
``NodeInfo.ResourceUsage``): average CPU and memory percent over ``10m`` (the only period Volcano's
cache files, ``source.NODE_METRICS_PERIOD``) and when it was measured.  Figures older than five
minutes, or never reported, are *stale*: the plugin then passes the node and scores it 0, so that a
missing or silent metrics source leaves scheduling as it would be without the plugin.

Arguments, as Volcano reads them (defaults in brackets)::

    usage.weight: 5          # [5]  the score's multiplier; a negative value keeps 5
    cpu.weight: 1            # [1]  negative keeps 1
    memory.weight: 1         # [1]  negative keeps 1
    thresholds: {cpu: 80, mem: 80}     # [80, 80] percent; outside 0..100 keeps the default
    estimator:
      request_ratio: 0.7     # [0.7] 0..1, else the default
      burst_ratio: 0         # [0]   0..1
      risk_threshold: 0.6    # [0.6] 0..1
      risk_factor: 1.2       # [1.2] >= 1
      be_cpu: 250m           # [250m] an int is milli-CPU, a string a quantity; negative keeps it
      be_mem: 200Mi          # [200Mi] an int is Mi, a string a quantity

The conf's ``metrics.interval`` (a Go duration above zero, default 30s) is the *monitoring delay*:
how long a started pod stays invisible to the metrics.

Callbacks:

- PredicateFn (``enablePredicate``): with fresh figures, a node whose CPU load is above
  ``thresholds.cpu`` is UnschedulableAndUnresolvable with ``the CPU load of the node exceeds the
  upper limit.``, else one above ``thresholds.mem`` with ``the memory load of the node exceeds the
  upper limit.``.  Only the measured load counts here, not the estimates below.
- NodeOrderFn (``enableNodeOrder``): with fresh figures,
  ``((1-cpu)*cpu.weight + (1-mem)*memory.weight) / (cpu.weight+memory.weight) * 100 * usage.weight``
  where ``cpu`` and ``mem`` are each dimension's *composite* utilisation, 0..1: the measured load
  plus the shadow estimate of the node's pods the metrics cannot show yet, over the node's capacity.
- Allocate and Deallocate event handlers keep the shadow estimates as the session places and
  un-places pods.

The shadow estimates (``ShadowLoadCache``): at session open every pod on a node that is Allocated,
Binding or Bound, or Running without ``status.startTime`` or started less than the monitoring delay
ago, is estimated and added to its node; each pod the session allocates is added, and subtracted
again, by the very amount added, when it is un-allocated.  A pod's estimate per dimension is
``(request*request_ratio + (limit-request)*burst_ratio) * risk``, clamped to 0..limit (a missing
limit, or one below the request, is the request); a BestEffort pod's is ``be_cpu``/``be_mem`` times
``risk``.  ``risk`` is ``risk_factor`` once the node's weighted composite load reaches
``risk_threshold``, else 1.

Where vcsched differs: an argument of the wrong type (a string weight, a section that is not a map,
a ``be_cpu`` that is no quantity) refuses the configuration, naming it, where Volcano silently keeps
the default; values of the right type outside their range are repaired as Volcano repairs them.
Time is the session's clock, not the wall clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from vcsched.api.duration import DurationError, parse_go_duration
from vcsched.api.fit_errors import Status
from vcsched.api.node_info import NodeInfo
from vcsched.api.node_usage import NO_USAGE, NODE_METRICS_PERIOD, NodeUsage
from vcsched.api.quantity import QuantityError, milli_value, parse_quantity, value
from vcsched.api.resource import Resource
from vcsched.api.task_info import TaskInfo, parse_timestamp
from vcsched.api.types import StatusCode, TaskStatus
from vcsched.framework.arguments import ArgumentError, Arguments
from vcsched.framework.interface import Plugin, Point
from vcsched.framework.session import EventHandler

if TYPE_CHECKING:
    from vcsched.framework.session import Session

log = structlog.get_logger("vcsched.usage")

PLUGIN_NAME = "usage"
METRICS_ACTIVE_TIME = 300.0  # MetricsActiveTime: figures older than this are stale
DEFAULT_METRICS_INTERVAL = 30.0  # defaultMetricsInterval, the monitoring delay
MAX_NODE_SCORE = 100.0
NODE_USAGE_CPU_EXTEND = "the CPU load of the node exceeds the upper limit."
NODE_USAGE_MEMORY_EXTEND = "the memory load of the node exceeds the upper limit."
_MI = 1024 * 1024

CPU_STATUS = [Status(StatusCode.UnschedulableAndUnresolvable, NODE_USAGE_CPU_EXTEND)]
MEMORY_STATUS = [Status(StatusCode.UnschedulableAndUnresolvable, NODE_USAGE_MEMORY_EXTEND)]


# -- the estimator (estimator.go) -------------------------------------------------------------


def load_composite_percentage(cpu_composite: float, mem_composite: float, cpu_weight: int, mem_weight: int) -> float:
    """``CalcLoadCompositePercentage``: the weighted mean of both composites (0..1); 0 with no weight."""
    total = cpu_weight + mem_weight
    if total == 0:
        return 0.0
    return (cpu_composite * cpu_weight + mem_composite * mem_weight) / total


def applied_risk_factor(load: float, risk_threshold: float, risk_factor: float) -> float:
    """``CalcAppliedRiskFactor``: ``risk_factor`` once ``load`` reaches the threshold; never below 1."""
    if risk_factor < 1.0:
        return 1.0
    return risk_factor if load >= risk_threshold else 1.0


def estimate_pod_resource(request: float, limit: float, request_weight: float, burst_weight: float,
                          risk: float) -> float:
    """``EstimatePodResource``: one dimension of a Guaranteed or Burstable pod, clamped to 0..limit."""
    request = max(request, 0.0)
    effective_limit = limit if limit > 0 and limit >= request else request
    burst = max(effective_limit - request, 0.0)
    estimate = (request * request_weight + burst * burst_weight) * risk
    return min(max(estimate, 0.0), effective_limit)


def estimate_best_effort_resource(configured: float, risk: float) -> float:
    """``EstimateBestEffortResource``."""
    return max(configured, 0.0) * risk


def composite_utilization(real_percent: float, shadow_abs: float, capacity: float) -> float:
    """``CalcCompositeUtilization``: (measured share of capacity + shadow estimate) / capacity, 0..1."""
    if capacity <= 0:
        return 0.0
    composite = (real_percent / 100.0 * capacity + shadow_abs) / capacity
    return min(max(composite, 0.0), 1.0)


def node_score(cpu_comp: float, mem_comp: float, cpu_weight: int, mem_weight: int, usage_weight: int) -> float:
    """``CalcNodeScore``."""
    total = cpu_weight + mem_weight
    if total == 0:
        return 0.0
    score = ((1.0 - cpu_comp) * cpu_weight + (1.0 - mem_comp) * mem_weight) / total
    return score * MAX_NODE_SCORE * usage_weight


def _container_limits(c: Mapping[str, Any]) -> Resource:
    return Resource.from_list(((c.get("resources") or {}).get("limits")) or {})


def pod_limit(pod: Mapping[str, Any]) -> tuple[float, float]:
    """``GetPodResourceLimit``'s CPU (milli) and memory (bytes): the containers' limits summed, restartable
    init containers (sidecars) added, the largest init container (with the sidecars before it) as a floor,
    a pod-level limit in place of the sum, the overhead on a dimension that has a limit."""
    spec = pod.get("spec") or {}
    total = Resource()
    for c in spec.get("containers") or []:
        total.add(_container_limits(c))
    sidecars = Resource()
    init_max = Resource()
    for c in spec.get("initContainers") or []:
        lim = _container_limits(c)
        if c.get("restartPolicy") == "Always":
            total.add(lim)
            sidecars.add(lim)
            init_max.set_max(sidecars)
        else:
            init_max.set_max(lim.clone().add(sidecars))
    total.set_max(init_max)
    cpu, memory = total.milli_cpu, total.memory
    pod_level = ((spec.get("resources") or {}).get("limits")) or {}
    if pod_level:
        level = Resource.from_list(pod_level)
        if "cpu" in pod_level:
            cpu = level.milli_cpu
        if "memory" in pod_level:
            memory = level.memory
    overhead = spec.get("overhead")
    if overhead:
        extra = Resource.from_list(overhead)
        if cpu != 0:
            cpu += extra.milli_cpu
        if memory != 0:
            memory += extra.memory
    return cpu, memory


# -- the shadow load cache (shadow_cache.go) -------------------------------------------------


@dataclass(slots=True)
class PodEstimate:
    """What was added for one pod, so that the same is taken off (``PodEstSnapshot``)."""

    node: str
    cpu: float
    memory: float


class ShadowLoadCache:
    """Per node, the estimated CPU (milli) and memory (bytes) of the pods the metrics do not show yet."""

    __slots__ = ("node_cpu", "node_mem", "pods")

    def __init__(self) -> None:
        self.node_cpu: dict[str, float] = {}
        self.node_mem: dict[str, float] = {}
        self.pods: dict[str, PodEstimate] = {}

    def add(self, node: str, uid: str, cpu: float, memory: float) -> None:
        """``AddEstimate``: a pod added twice replaces its first estimate."""
        old = self.pods.get(uid)
        if old is not None:
            self._subtract(old)
        self.node_cpu[node] = self.node_cpu.get(node, 0.0) + cpu
        self.node_mem[node] = self.node_mem.get(node, 0.0) + memory
        self.pods[uid] = PodEstimate(node, cpu, memory)

    def remove(self, uid: str) -> None:
        """``SubEstimateBySnapshot``: take off exactly what was added; nothing for an unknown pod."""
        old = self.pods.pop(uid, None)
        if old is not None:
            self._subtract(old)

    def _subtract(self, est: PodEstimate) -> None:
        self.node_cpu[est.node] = max(self.node_cpu.get(est.node, 0.0) - est.cpu, 0.0)
        self.node_mem[est.node] = max(self.node_mem.get(est.node, 0.0) - est.memory, 0.0)

    def node(self, name: str) -> tuple[float, float]:
        return self.node_cpu.get(name, 0.0), self.node_mem.get(name, 0.0)


def in_monitoring_blind_spot(task: TaskInfo, now: float, delay: float) -> bool:
    """``shouldAddToShadowCache``: placed but not yet visible in the metrics."""
    if not task.node_name:
        return False
    status = task.status
    if status in (TaskStatus.Allocated, TaskStatus.Binding, TaskStatus.Bound):
        return True
    if status == TaskStatus.Running:
        started = (task.pod.get("status") or {}).get("startTime") if task.pod else None
        if not started:
            return True
        try:
            return now - parse_timestamp(started) < delay
        except ValueError:
            return True
    return False


# -- arguments ----------------------------------------------------------------------------------


def _section(arguments: Arguments, key: str) -> Arguments | None:
    v = arguments.values.get(key)
    if v is None:
        return None
    if not isinstance(v, dict):
        raise ArgumentError(f"{arguments.where}.{key}: expected a map, got {type(v).__name__} {v!r}")
    return Arguments({str(k): x for k, x in v.items()}, f"{arguments.where}.{key}")


def _best_effort(arguments: Arguments, key: str, default: float, int_unit: float, milli: bool) -> float:
    """``parseBestEffortCPU``/``parseBestEffortMemory``: an int in ``int_unit``s, or a quantity string;
    negative keeps the default."""
    if key not in arguments.values or arguments.values[key] is None:
        return default
    v = arguments.values[key]
    if isinstance(v, int) and not isinstance(v, bool):
        return default if v < 0 else float(v) * int_unit
    if isinstance(v, str):
        try:
            q = parse_quantity(v)
        except QuantityError as e:
            raise ArgumentError(f"{arguments.where}.{key}: expected a quantity such as "
                                f"{'250m' if milli else '200Mi'}, got {v!r} ({e})") from None
        if q < 0:
            return default
        return float(milli_value(q) if milli else value(q))
    raise ArgumentError(f"{arguments.where}.{key}: expected an integer or a quantity string, "
                        f"got {type(v).__name__} {v!r}")


def _in_range(v: float, lo: float, hi: float | None, default: float) -> float:
    return v if lo <= v and (hi is None or v <= hi) else default


class UsagePlugin(Plugin):
    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        a = arguments
        weight = a.get_int("usage.weight", 5)
        self.usage_weight = weight if weight >= 0 else 5
        weight = a.get_int("cpu.weight", 1)
        self.cpu_weight = weight if weight >= 0 else 1
        weight = a.get_int("memory.weight", 1)
        self.memory_weight = weight if weight >= 0 else 1
        self.cpu_threshold = 80.0
        self.mem_threshold = 80.0
        self.period = NODE_METRICS_PERIOD
        thresholds = _section(a, "thresholds")
        if thresholds is not None:
            self.cpu_threshold = float(_in_range(thresholds.get_int("cpu", 80), 0, 100, 80))
            self.mem_threshold = float(_in_range(thresholds.get_int("mem", 80), 0, 100, 80))
        self.request_ratio, self.burst_ratio = 0.7, 0.0
        self.risk_threshold, self.risk_factor = 0.6, 1.2
        self.be_cpu, self.be_memory = 250.0, float(200 * _MI)
        est = _section(a, "estimator")
        if est is not None:
            self.request_ratio = _in_range(est.get_float("request_ratio", 0.7), 0, 1, 0.7)
            self.burst_ratio = _in_range(est.get_float("burst_ratio", 0.0), 0, 1, 0.0)
            self.risk_threshold = _in_range(est.get_float("risk_threshold", 0.6), 0, 1, 0.6)
            self.risk_factor = _in_range(est.get_float("risk_factor", 1.2), 1, None, 1.2)
            self.be_cpu = _best_effort(est, "be_cpu", 250.0, 1.0, milli=True)
            self.be_memory = _best_effort(est, "be_mem", float(200 * _MI), float(_MI), milli=False)

    # -- per node ------------------------------------------------------------------------------

    def _fresh(self, usage: NodeUsage, now: float) -> bool:
        """``isMetricsAvailable``: reported, and not more than five minutes ago."""
        return bool(self.period) and now - usage.metrics_time <= METRICS_ACTIVE_TIME

    def _composites(self, node: NodeInfo, usage: NodeUsage, shadow: ShadowLoadCache) -> tuple[float, float]:
        cpu_est, mem_est = shadow.node(node.name)
        return (composite_utilization(usage.cpu(self.period), cpu_est, node.capacity.milli_cpu),
                composite_utilization(usage.memory(self.period), mem_est, node.capacity.memory))

    def estimate(self, task: TaskInfo, risk: float) -> tuple[float, float]:
        """``estimateTaskResource``: the pod's estimated CPU (milli) and memory (bytes)."""
        if task.best_effort:
            return (estimate_best_effort_resource(self.be_cpu, risk),
                    estimate_best_effort_resource(self.be_memory, risk))
        cpu_lim, mem_lim = pod_limit(task.pod) if task.pod else (0.0, 0.0)
        return (estimate_pod_resource(task.resreq.milli_cpu, cpu_lim, self.request_ratio, self.burst_ratio, risk),
                estimate_pod_resource(task.resreq.memory, mem_lim, self.request_ratio, self.burst_ratio, risk))

    def on_session_open(self, ssn: "Session") -> None:
        now = ssn.now
        delay = DEFAULT_METRICS_INTERVAL
        raw = (getattr(ssn.conf, "metrics", None) or {}).get("interval")
        if raw:
            try:
                parsed = parse_go_duration(raw)
                if parsed > 0:
                    delay = parsed
            except DurationError:
                pass  # Volcano keeps the default
        node_usage = ssn.node_usage
        shadow = ShadowLoadCache()

        def usage_of(node: NodeInfo) -> NodeUsage:
            return node_usage.get(node.name, NO_USAGE)

        def risk_on(node: NodeInfo) -> float:
            cpu, mem = self._composites(node, usage_of(node), shadow)
            load = load_composite_percentage(cpu, mem, self.cpu_weight, self.memory_weight)
            return applied_risk_factor(load, self.risk_threshold, self.risk_factor)

        def add(task: TaskInfo, node: NodeInfo) -> None:
            cpu, mem = self.estimate(task, risk_on(node))
            shadow.add(node.name, task.uid, cpu, mem)

        # warm up: the pods already placed that the metrics cannot show yet
        for node in ssn.node_list:
            for task in node.tasks.values():
                if in_monitoring_blind_spot(task, now, delay):
                    add(task, node)

        def allocated(task: TaskInfo) -> None:
            node = ssn.nodes.get(task.node_name)
            if node is not None:
                add(task, node)

        def deallocated(task: TaskInfo) -> None:
            shadow.remove(task.uid)

        ssn.add_event_handler(EventHandler(allocate=allocated, deallocate=deallocated))

        cpu_threshold, mem_threshold, period = self.cpu_threshold, self.mem_threshold, self.period

        def predicate(task: TaskInfo, node: NodeInfo) -> list[Status] | None:
            usage = usage_of(node)
            if not self._fresh(usage, now):
                return None
            if usage.cpu(period) > cpu_threshold:
                return CPU_STATUS
            if usage.memory(period) > mem_threshold:
                return MEMORY_STATUS
            return None

        def node_order(task: TaskInfo, node: NodeInfo) -> float:
            usage = usage_of(node)
            if not self._fresh(usage, now):
                return 0.0
            cpu, mem = self._composites(node, usage, shadow)
            return node_score(cpu, mem, self.cpu_weight, self.memory_weight, self.usage_weight)

        ssn.add(Point.PREDICATE, self.name, predicate)
        ssn.add(Point.NODE_ORDER, self.name, node_order)
