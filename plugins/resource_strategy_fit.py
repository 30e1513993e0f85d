"""resource-strategy-fit: per-resource scoring strategies, sra and the proportional reservation
(plugins/resource-strategy-fit/resource_strategy_fit.go, sra.go, proportional.go).

Arguments, as Volcano reads them::

    resourceStrategyFitWeight: 10          # default 10; a negative value means 10; 0 turns the score off
    resources:                             # default {cpu: LeastAllocated/1, memory: LeastAllocated/1}
      nvidia.com/gpu: {type: MostAllocated, weight: 2}
      cloudml.gpu/*:  {type: LeastAllocated, weight: 1}   # one trailing '*': a prefix, longest wins
    sra: {enable: true, resources: "nvidia.com/gpu", weight: 10, resourceWeight: {nvidia.com/gpu: 1}}
    proportional: {enable: true, resources: "nvidia.com/gpu",
                   resourceProportion: {nvidia.com/gpu.cpu: 4, nvidia.com/gpu.memory: 8}}

Volcano's silent repairs are kept: a weight <= 0 becomes 1, a type other than LeastAllocated and
MostAllocated becomes LeastAllocated, a bad wildcard (``*`` alone, ``*`` not at the end, two ``*``)
is dropped with a warning, a negative sra resource weight or proportion becomes 1.  Where Volcano's
``framework.Get`` fails to decode a value (a string weight, a list for ``resources``) and silently
keeps the default, vcsched refuses the configuration, naming the argument.

Callbacks: a node order (the strategy score plus the sra score) unless both weights are <= 0, and a
predicate only when ``proportional.enable`` is true.  A pod may choose its own strategy with the
annotations ``volcano.sh/resource-strategy-scoring-type`` and ``volcano.sh/resource-strategy-weight``
(a JSON map resource -> weight); the score then depends on them, which the pod's shape omits, so
they are declared through ``Point.TASK_SHAPE``.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import structlog

from vcsched.api.fit_errors import Status
from vcsched.api.node_info import NodeInfo
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import StatusCode
from vcsched.framework.arguments import ArgumentError, Arguments
from vcsched.framework.interface import Plugin, Point

if TYPE_CHECKING:
    from vcsched.framework.session import Session

log = structlog.get_logger("vcsched.resource-strategy-fit")

PLUGIN_NAME = "resource-strategy-fit"
DEFAULT_WEIGHT = 10
MAX_NODE_SCORE = 100
LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
STRATEGY_ANNOTATION = "volcano.sh/resource-strategy-scoring-type"
WEIGHT_ANNOTATION = "volcano.sh/resource-strategy-weight"


def valid_wildcard(pattern: str) -> bool:
    """``isValidWildcardPattern``: no '*', or one trailing '*' after a non-empty prefix."""
    if "*" not in pattern:
        return True
    if pattern == "*":
        return False
    return pattern.endswith("*") and pattern.count("*") == 1


def find_resource_config(resource: str, resources: dict[str, tuple[str, int]]) -> tuple[str, int] | None:
    """``findResourceConfigWithPrefix``: an exact key wins, else the wildcard with the longest prefix."""
    exact = resources.get(resource)
    if exact is not None:
        return exact
    best: tuple[str, int] | None = None
    best_len = 0
    for key, cfg in resources.items():
        if "*" in key:
            prefix = key[:-1]
            if resource.startswith(prefix) and len(prefix) > best_len:
                best, best_len = cfg, len(prefix)
    return best


def _sub(arguments: Arguments, key: str) -> Arguments | None:
    """A nested map argument as Arguments (so its keys are read with the typed getters), or None."""
    v = arguments.values.get(key)
    if v is None:
        return None
    if not isinstance(v, dict):
        raise ArgumentError(f"{arguments.where}.{key}: expected a map, got {type(v).__name__} {v!r}")
    return Arguments({str(k): x for k, x in v.items()}, f"{arguments.where}.{key}")


def _map_of(arguments: Arguments, key: str, number: str) -> dict[str, float]:
    sub = _sub(arguments, key)
    if sub is None:
        return {}
    getter = sub.get_int if number == "int" else sub.get_float
    return {k: getter(k, 0) for k in sub.keys()}


def parse_strategies(arguments: Arguments) -> dict[str, tuple[str, int]]:
    """``calculateWeight``'s resources: name -> (type, weight)."""
    sub = _sub(arguments, "resources")
    strategies: dict[str, tuple[str, int]] = {}
    if sub is not None:
        for name in sub.keys():
            cfg = _sub(sub, name) or Arguments({}, f"{sub.where}.{name}")
            strategies[name] = (cfg.get_str("type", ""), cfg.get_int("weight", 0))
    if not strategies:
        return {"cpu": (LEAST_ALLOCATED, 1), "memory": (LEAST_ALLOCATED, 1)}
    out: dict[str, tuple[str, int]] = {}
    for name, (kind, weight) in strategies.items():
        if not valid_wildcard(name):
            log.warning("resource-strategy-fit: invalid wildcard pattern ignored; only one trailing '*' "
                        "after a prefix is supported (e.g. 'cloudml.gpu/*')", pattern=name)
            continue
        out[name] = (kind if kind in (LEAST_ALLOCATED, MOST_ALLOCATED) else LEAST_ALLOCATED,
                     weight if weight > 0 else 1)
    return out


def _split(resources: str) -> list[str]:
    return [r.strip() for r in resources.split(",") if r.strip()]


@lru_cache(maxsize=256)
def _pod_weights(raw: str) -> dict[str, int] | None:
    """The weight annotation as Go's json.Unmarshal into map[ResourceName]int reads it; None: refused."""
    try:
        v = json.loads(raw)
    except ValueError:
        return None
    if v is None:
        return {}
    if not isinstance(v, dict):
        return None
    out: dict[str, int] = {}
    for k, w in v.items():
        if w is None:
            w = 0
        if isinstance(w, bool) or not isinstance(w, int):
            return None
        out[k] = w
    return out


def strategy_score(task: TaskInfo, node: NodeInfo, weight: int, resources: dict[str, tuple[str, int]]) -> float:
    """``Score``: the weighted mean over the task's requested resources of each one's strategy score
    ((used + request) / allocatable for MostAllocated, its complement for LeastAllocated), times
    MaxNodeScore and the plugin weight; 0 when any scored resource would not fit."""
    annotations = (task.pod.get("metadata") or {}).get("annotations") or {}
    pod_type = annotations.get(STRATEGY_ANNOTATION) or ""
    pod_weights: dict[str, int] = {}
    if pod_type:
        raw = annotations.get(WEIGHT_ANNOTATION) or ""
        if not raw:
            return 0.0
        parsed = _pod_weights(raw)
        if parsed is None:
            return 0.0
        pod_weights = parsed
    req, allocatable, used = task.resreq, node.allocatable, node.used
    score = 0.0
    weight_sum = 0
    for resource in req.resource_names():
        if pod_type:
            if resource not in pod_weights:
                continue
            kind, w = pod_type, pod_weights[resource]
        else:
            cfg = find_resource_config(resource, resources)
            if cfg is None:
                continue
            kind, w = cfg
        capacity = allocatable.get(resource)
        if kind in (MOST_ALLOCATED, LEAST_ALLOCATED) and w != 0 and capacity != 0:
            final = req.get(resource) + used.get(resource)
            if final > capacity:
                return 0.0
            if kind == MOST_ALLOCATED:
                score += final * w / capacity
            else:
                score += (capacity - final) * w / capacity
        weight_sum += w
    if weight_sum > 0:
        score /= weight_sum
    return score * MAX_NODE_SCORE * weight


def sra_score(task: TaskInfo, node: NodeInfo, sra_weight: int, sra_resources: dict[str, int],
              weight_sum: int) -> float:
    """``sraScore``: 0 on a node lacking any resource the task requests; else 1 minus the weighted
    share of the sra resources the node has, times MaxNodeScore and the sra weight (nodes without the
    scarce resources are preferred for tasks that do not need them)."""
    allocatable = node.allocatable
    for resource in task.resreq.resource_names():
        if allocatable.get(resource) == 0:
            return 0.0
    score = float(sum(w for r, w in sra_resources.items() if allocatable.get(r) > 0))
    if weight_sum > 0:
        score = 1.0 - score / weight_sum
    return score * MAX_NODE_SCORE * sra_weight


def proportional_status(task: TaskInfo, node: NodeInfo, proportional: dict[str, tuple[float, float]]) -> Status | None:
    """``checkNodeResourceIsProportional``: a task that requests none of the proportional resources
    must leave, on each node holding one, rate.cpu cpu and rate.memory GB (10^9 bytes) idle per unit of
    that resource's idle amount; None when it does."""
    req = task.resreq
    for resource in proportional:
        if req.scalars.get(resource, 0.0) > 0:
            return None
    idle = node.idle
    for resource, (cpu_rate, memory_rate) in proportional.items():
        value = idle.scalars.get(resource)
        if value is None:
            continue
        # scalars are in milli-units, so value * rate is milli-CPU and value * rate * 1e6 bytes
        if (idle.milli_cpu - req.milli_cpu < value * cpu_rate
                or idle.memory - req.memory < value * memory_rate * 1000 * 1000):
            return Status(StatusCode.UnschedulableAndUnresolvable,
                          f"proportional of resource {resource} check failed")
    return None


class ResourceStrategyFitPlugin(Plugin):
    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        weight = arguments.get_int("resourceStrategyFitWeight", DEFAULT_WEIGHT)
        self.weight = DEFAULT_WEIGHT if weight < 0 else weight
        self.resources = parse_strategies(arguments)

        # sra (applySraPolicy / calculateSraWeight): off unless enabled; its weight defaults to 0
        self.sra_weight = 0
        self.sra_resources: dict[str, int] = {}
        self.sra_weight_sum = 0
        sra = _sub(arguments, "sra")
        if sra is not None:
            enable = sra.get_bool("enable", False)
            names = _split(sra.get_str("resources", ""))
            sra_w = sra.get_int("weight", 0)
            resource_weight = _map_of(sra, "resourceWeight", "int")
            if enable:
                self.sra_weight = sra_w
                for name in names:
                    w = int(resource_weight.get(name, 1))
                    self.sra_resources[name] = w if w >= 0 else 1
                self.sra_weight_sum = sum(self.sra_resources.values())

        # proportional (applyProportionalPolicy / calculateProportionalResources); None: off
        self.proportional: dict[str, tuple[float, float]] | None = None
        prop = _sub(arguments, "proportional")
        if prop is not None:
            enable = prop.get_bool("enable", False)
            names = _split(prop.get_str("resources", ""))
            rates = _map_of(prop, "resourceProportion", "float")
            if enable:
                self.proportional = {}
                for name in names:
                    cpu = rates.get(name + ".cpu", 1.0)
                    memory = rates.get(name + ".memory", 1.0)
                    self.proportional[name] = (cpu if cpu >= 0 else 1.0, memory if memory >= 0 else 1.0)

    def score(self, task: TaskInfo, node: NodeInfo) -> float:
        score = 0.0
        if self.weight > 0:
            score += strategy_score(task, node, self.weight, self.resources)
        if self.sra_weight > 0:
            score += sra_score(task, node, self.sra_weight, self.sra_resources, self.sra_weight_sum)
        return score

    def predicate(self, task: TaskInfo, node: NodeInfo) -> list[Status] | None:
        status = proportional_status(task, node, self.proportional or {})
        return None if status is None else [status]

    def on_session_open(self, ssn: "Session") -> None:
        if self.proportional is not None:
            ssn.add(Point.PREDICATE, self.name, self.predicate)
        if self.weight > 0 or self.sra_weight > 0:
            ssn.add(Point.NODE_ORDER, self.name, self.score)
            # the score reads the pod's strategy annotations, which its shape omits
            ssn.add(Point.TASK_SHAPE, self.name, task_shape)


def task_shape(task: TaskInfo) -> Any:
    annotations = (task.pod.get("metadata") or {}).get("annotations") or {}
    return (annotations.get(STRATEGY_ANNOTATION), annotations.get(WEIGHT_ANNOTATION))
