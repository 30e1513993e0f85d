"""rescheduling: name the pods the ``shuffle`` action evicts from over-utilised nodes
(plugins/rescheduling/rescheduling.go, low_node_utilization.go, node_utilization_util.go,
rescheduling_util.go).

Arguments, as Volcano reads them::

    interval: 5m                # a Go duration; how often the strategies run (default 5m)
    metricsPeriod: 10m          # which period of the measured load to read (default 5m, see below)
    strategies:                 # default: lowNodeUtilization with its default params
    - name: lowNodeUtilization
      params:
        thresholds: {cpu: 20, memory: 20}          # percent; default 100 each
        targetThresholds: {cpu: 80, memory: 80}    # percent; default 100 each

Every session, the plugin asks whether ``interval`` has passed since it last ran (the first time is
counted from the scheduler's first session, as Volcano counts from its process start; strictly
more than ``interval`` must have passed).  Only then does it register its VictimTasksFn, so
``shuffle`` evicts at most once per interval.

``lowNodeUtilization`` (the only strategy Volcano has): each node's utilisation is its measured CPU
and memory load (``ssn.node_usage``, percent, whatever its age) for ``metricsPeriod``.  A *low* node
is schedulable and below ``thresholds`` in every dimension; a *high* node, of the others, is above
``targetThresholds`` in some dimension.  Nothing is evicted when there are no low nodes, when every
node is low, or when there are no high nodes.  Otherwise the room the low nodes have up to their
target (``target% * allocatable - load% * allocatable``, summed) is shared out: high nodes in
descending order of CPU + memory load, each node's pods from the lowest priority (no
``spec.priority`` first) and, at equal priority, BestEffort before Burstable before Guaranteed.
Before each pod the walk stops at this node if no dimension of it is at or above its target any
more, or if the room left is exactly zero in some dimension; a pod that is among shuffle's
candidates (Running) becomes a victim, its requests come off the room and off the node's load
(as a share of its capacity).

``metricsPeriod``: Volcano's cache files the measured load under ``10m`` only (the period its
Prometheus queries average over), and the plugin's default, ``5m``, finds nothing there and reads
0 % for every node: every node is then low and nothing is evicted.  Set ``metricsPeriod: 10m`` to
act on the load.  vcsched keeps Volcano's default, so a conf means the same in both.

Where vcsched differs: a victim is matched to its pod by UID, where Volcano matches by pod name
alone (a pod of the same name in another namespace could be taken instead).  Equal keys keep the
nodes' and pods' order where Volcano's sort is unstable.  An ``interval`` or ``metricsPeriod`` that
is not a string, an ``interval`` Go cannot parse, a strategy that is not a map or has an unknown
name, threshold maps that are not maps of integers: the configuration is refused, naming the
field, where Volcano logs (or panics) and goes on with defaults.  Time is the session's clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog

from vcsched.api.duration import DurationError, parse_go_duration
from vcsched.api.node_info import NodeInfo
from vcsched.api.node_usage import NO_USAGE
from vcsched.api.quantity import QuantityError, parse_quantity
from vcsched.api.task_info import TaskInfo
from vcsched.framework.arguments import ArgumentError, Arguments
from vcsched.framework.interface import Plugin, Point

if TYPE_CHECKING:
    from vcsched.framework.session import Session

log = structlog.get_logger("vcsched.rescheduling")

PLUGIN_NAME = "rescheduling"
DEFAULT_INTERVAL = 300.0
DEFAULT_METRICS_PERIOD = "5m"
LOW_NODE_UTILIZATION = "lowNodeUtilization"
STRATEGIES = (LOW_NODE_UTILIZATION,)
CPU, MEMORY = "cpu", "memory"


@dataclass(slots=True)
class LowNodeUtilizationConf:
    """``LowNodeUtilizationConf``: the percent thresholds (keys ``cpu``, ``memory`` and ``pod``; the
    utilisation has only the first two, so ``pod``/``pods`` never decide anything)."""

    thresholds: dict[str, float] = field(default_factory=lambda: {CPU: 100.0, MEMORY: 100.0, "pods": 100.0})
    target_thresholds: dict[str, float] = field(default_factory=lambda: {CPU: 100.0, MEMORY: 100.0, "pods": 100.0})

    @classmethod
    def parse(cls, params: Mapping[str, Any], where: str) -> "LowNodeUtilizationConf":
        conf = cls()
        for key, target in (("thresholds", conf.thresholds), ("targetThresholds", conf.target_thresholds)):
            raw = params.get(key)
            if raw is None:
                continue
            if not isinstance(raw, dict):
                raise ArgumentError(f"{where}.{key}: expected a map of resource to percent, "
                                    f"got {type(raw).__name__} {raw!r}")
            for name, v in raw.items():
                if isinstance(v, bool) or not isinstance(v, int):
                    raise ArgumentError(f"{where}.{key}.{name}: expected an integer percent, "
                                        f"got {type(v).__name__} {v!r}")
                if name in (CPU, MEMORY, "pod"):  # parseThreshold reads these three
                    target[str(name)] = float(v)
        return conf


@dataclass(slots=True)
class NodeUtilization:
    node: NodeInfo
    utilization: dict[str, float]


@dataclass(slots=True)
class ReschedulingMemory:
    """What the plugin keeps across sessions: when the strategies last ran (``lastRescheduleTime``)."""

    last_run: float


def qos_class(pod: Mapping[str, Any]) -> str:
    """``GetPodQOS``: ``status.qosClass`` when set, else computed from the containers' CPU and memory
    requests and limits (init containers included)."""
    given = (pod.get("status") or {}).get("qosClass")
    if given:
        return str(given)
    spec = pod.get("spec") or {}
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    guaranteed = True
    for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        res = c.get("resources") or {}
        for kind, into in (("requests", requests), ("limits", limits)):
            for name, raw in (res.get(kind) or {}).items():
                if name not in (CPU, MEMORY):
                    continue
                try:
                    q = parse_quantity(raw)
                except QuantityError:
                    continue
                if q > 0:
                    into[name] = into.get(name, 0) + q
        found = {n for n, raw in ((res.get("limits") or {}).items()) if n in (CPU, MEMORY)}
        if found != {CPU, MEMORY}:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and all(limits.get(n) == q for n, q in requests.items()) and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


_QOS_RANK = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}


def eviction_order(task: TaskInfo) -> tuple[int, int, int]:
    """``sortPods``: no ``spec.priority`` first, then lower priority, then BestEffort, Burstable, Guaranteed."""
    priority = ((task.pod or {}).get("spec") or {}).get("priority")
    if priority is None:
        return (0, 0, _QOS_RANK.get(qos_class(task.pod or {}), 1))
    return (1, int(priority), _QOS_RANK.get(qos_class(task.pod), 1))


def _of_percent(percent: float, amount: float) -> int:
    """``convertPercentToQuan``: ``percent`` of ``amount`` (milli-CPU or bytes), truncated as int64() does."""
    return int(percent * amount * 0.01)


class ReschedulingPlugin(Plugin):
    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        a = arguments
        self.interval = DEFAULT_INTERVAL
        if a.values.get("interval") is not None:
            raw = a.get_str("interval", "")
            try:
                self.interval = parse_go_duration(raw)
            except DurationError as e:
                raise ArgumentError(f"{a.where}.interval: expected a duration such as 5m, got {raw!r} ({e})") from None
        self.metrics_period = a.get_str("metricsPeriod", DEFAULT_METRICS_PERIOD) or DEFAULT_METRICS_PERIOD
        self.strategies: list[tuple[str, LowNodeUtilizationConf]] = [(LOW_NODE_UTILIZATION, LowNodeUtilizationConf())]
        raw_strategies = a.values.get("strategies")
        if raw_strategies is not None:
            if not isinstance(raw_strategies, list):
                raise ArgumentError(f"{a.where}.strategies: expected a list of {{name, params}}, "
                                    f"got {type(raw_strategies).__name__} {raw_strategies!r}")
            if raw_strategies:
                self.strategies = []
            for i, raw in enumerate(raw_strategies):
                where = f"{a.where}.strategies[{i}]"
                if not isinstance(raw, dict):
                    raise ArgumentError(f"{where}: expected a map with name and params, got {type(raw).__name__} {raw!r}")
                name = raw.get("name")
                if name not in STRATEGIES:
                    raise ArgumentError(f"{where}.name: unknown strategy {name!r} (known: {', '.join(STRATEGIES)})")
                params = raw.get("params") or {}
                if not isinstance(params, dict):
                    raise ArgumentError(f"{where}.params: expected a map, got {type(params).__name__} {params!r}")
                self.strategies.append((name, LowNodeUtilizationConf.parse(params, f"{where}.params")))

    def time_to_run(self, ssn: "Session") -> bool:
        """``timeToRun``: strictly more than ``interval`` since the last run (or the first session)."""
        memory = ssn.state.plugins.get(self.name)
        if not isinstance(memory, ReschedulingMemory):
            memory = ssn.state.plugins[self.name] = ReschedulingMemory(ssn.now)
        if memory.last_run + self.interval < ssn.now:
            memory.last_run = ssn.now
            return True
        return False

    def on_session_open(self, ssn: "Session") -> None:
        if not self.time_to_run(ssn):
            log.debug("it is not the time to execute rescheduling strategies")
            return

        def victim_tasks(tasks: list[TaskInfo]) -> list[TaskInfo]:
            victims: list[TaskInfo] = []
            for _, conf in self.strategies:
                victims.extend(self.low_node_utilization(ssn, conf, tasks))
            return victims

        ssn.add(Point.VICTIM_TASKS, self.name, victim_tasks)

    # -- lowNodeUtilization -------------------------------------------------------------------------

    def utilization(self, ssn: "Session") -> list[NodeUtilization]:
        """``getNodeUtilization``: every session node's measured load for ``metricsPeriod``."""
        period, usage = self.metrics_period, ssn.node_usage
        out = []
        for node in ssn.node_list:
            u = usage.get(node.name, NO_USAGE)
            out.append(NodeUtilization(node, {CPU: u.cpu(period), MEMORY: u.memory(period)}))
        return out

    def low_node_utilization(self, ssn: "Session", conf: LowNodeUtilizationConf,
                             tasks: list[TaskInfo]) -> list[TaskInfo]:
        """``victimsFnForLnu``."""
        low: list[NodeUtilization] = []
        high: list[NodeUtilization] = []
        for nu in self.utilization(ssn):
            if is_low(nu, conf):
                low.append(nu)
            elif is_high(nu, conf):
                high.append(nu)
        if not low:
            log.debug("the resource utilization of all nodes is above the threshold")
            return []
        if len(low) == len(ssn.node_list):
            log.debug("the resource utilization of all nodes is below the threshold")
            return []
        if not high:
            log.debug("the resource utilization of all nodes is below the target threshold")
            return []
        return evict_from_source_nodes(high, low, tasks, conf)


def is_low(nu: NodeUtilization, conf: LowNodeUtilizationConf) -> bool:
    """``lowThresholdFilter``: schedulable, and below ``thresholds`` in every dimension."""
    if nu.node.spec.unschedulable:
        return False
    for name, percent in nu.utilization.items():
        threshold = conf.thresholds.get(name)
        if threshold is not None and percent >= threshold:
            return False
    return True


def is_high(nu: NodeUtilization, conf: LowNodeUtilizationConf) -> bool:
    """``highThresholdFilter``: above ``targetThresholds`` in some dimension."""
    for name, percent in nu.utilization.items():
        threshold = conf.target_thresholds.get(name)
        if threshold is not None and percent > threshold:
            return True
    return False


def keep_evicting(nu: NodeUtilization, room: dict[str, int], conf: LowNodeUtilizationConf) -> bool:
    """``isContinueEvictPods``: the node is still at or above a target, and no room is exactly zero
    (room that went negative does not stop it, as in Volcano)."""
    overused = False
    for name, percent in nu.utilization.items():
        threshold = conf.target_thresholds.get(name)
        if threshold is not None and percent >= threshold:
            overused = True
            break
    if not overused:
        return False
    return all(amount != 0 for amount in room.values())


def evict_from_source_nodes(sources: list[NodeUtilization], targets: list[NodeUtilization],
                            tasks: list[TaskInfo], conf: LowNodeUtilizationConf) -> list[TaskInfo]:
    """``evictPodsFromSourceNodes``."""
    room = {CPU: 0, MEMORY: 0}  # milli-CPU and bytes the low nodes can take up to their target
    for t in targets:
        alloc = t.node.allocatable
        for name, capacity in ((CPU, alloc.milli_cpu), (MEMORY, alloc.memory)):
            room[name] += _of_percent(conf.target_thresholds.get(name, 0.0), capacity)
            room[name] -= _of_percent(t.utilization[name], capacity)
    candidates = {t.uid: t for t in tasks}
    victims: list[TaskInfo] = []
    for nu in sorted(sources, key=lambda s: -(s.utilization[CPU] + s.utilization[MEMORY])):
        pods = sorted(nu.node.tasks.values(), key=eviction_order)
        if not pods:
            continue
        capacity = nu.node.capacity
        for pod in pods:
            if not keep_evicting(nu, room, conf):
                log.debug("stop evicting pods", node=nu.node.name)
                break
            task = candidates.get(pod.uid)
            if task is None:
                continue
            cpu, memory = int(task.resreq.milli_cpu), int(task.resreq.memory)
            room[CPU] -= cpu
            room[MEMORY] -= memory
            if capacity.milli_cpu:
                nu.utilization[CPU] -= cpu * 100 / capacity.milli_cpu
            if capacity.memory:
                nu.utilization[MEMORY] -= memory * 100 / capacity.memory
            victims.append(task)
    return victims
