"""Node load in ``simulate``: the stand-in for Volcano's metrics source (docs/simulate.md, "Node load").

A cluster's load comes from Prometheus; the embedded cluster has none, so a Node says its load in
annotations, in the figures Volcano's cache keeps (average percent over ``10m``)::

    vcsched.io/sim-cpu-usage: "85"         # percent of the node's CPU in use, 0-100
    vcsched.io/sim-memory-usage: "40.5"    # percent of its memory
    vcsched.io/sim-usage-time: "2026-01-01T00:54:00Z"   # optional: when it was measured

Either percentage alone means 0 for the other.  Without ``sim-usage-time`` the figures are fresh at
every cycle (the source answers every ``metrics.interval``); with it they keep that time and go
stale five minutes later, as when a metrics source stops answering.  A node without these
annotations is never reported (the usage plugin passes it and scores it 0; rescheduling reads 0 %).

The load follows the pods that leave: from the next cycle on, a pod that was on the node at the
start and is gone (evicted, deleted, finished) takes its requests, as a share of the node's capacity,
off the figures, floored at 0.  Pods the simulation binds are not added: the usage plugin counts them
through its shadow estimates, as it counts any pod the metrics do not show yet (a pod without
``status.startTime`` stays in that blind spot while it runs).

What a Node's annotations cannot hold (a figure that is not a number from 0 to 100, a time that is not
RFC 3339) is bad input: exit 2 naming the file, document and annotation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..api.node_usage import NodeUsage
from ..api.resource import Resource
from ..api.task_info import parse_timestamp, pod_request
from ..cache import Cache
from .fields import Checker, parse_time

CPU_USAGE = "vcsched.io/sim-cpu-usage"
MEMORY_USAGE = "vcsched.io/sim-memory-usage"
USAGE_TIME = "vcsched.io/sim-usage-time"
_FINISHED = ("Succeeded", "Failed")


def validate_node_usage(meta: Mapping[str, Any], check: Checker) -> None:
    """The annotations of a Node manifest (already a string map)."""
    annotations = meta.get("annotations") or {}
    for key in (CPU_USAGE, MEMORY_USAGE):
        if key in annotations:
            percent(annotations[key], check, f"metadata.annotations[{key}]")
    if USAGE_TIME in annotations:
        parse_time(annotations[USAGE_TIME], check, f"metadata.annotations[{USAGE_TIME}]")


def percent(raw: str, check: Checker, path: str) -> float:
    try:
        v = float(raw.strip())
    except ValueError:
        check.fail(path, f"must be a percentage from 0 to 100 such as \"85\" or \"40.5\", got {raw!r}")
    if not math.isfinite(v) or v < 0 or v > 100:
        check.fail(path, f"must be a percentage from 0 to 100, got {raw!r}")
    return v


class SimNodeUsage:
    """What the simulated metrics source reports at each cycle."""

    def __init__(self, nodes: Mapping[str, Mapping[str, Any]], pods: Mapping[str, Mapping[str, Any]]) -> None:
        # node → (cpu %, memory %, measured at or None, capacity)
        self.base: dict[str, tuple[float, float, float | None, Resource]] = {}
        for name, node in nodes.items():
            ann = (node.get("metadata") or {}).get("annotations") or {}
            if CPU_USAGE not in ann and MEMORY_USAGE not in ann and USAGE_TIME not in ann:
                continue
            status = node.get("status") or {}
            capacity = Resource.from_list(status.get("capacity") or status.get("allocatable") or {})
            at = parse_timestamp(ann[USAGE_TIME]) if USAGE_TIME in ann else None
            self.base[name] = (float(ann.get(CPU_USAGE, 0)), float(ann.get(MEMORY_USAGE, 0)), at, capacity)
        # the pods each reported node had at the start, with their requests
        self.initial: dict[str, dict[str, Resource]] = {name: {} for name in self.base}
        for key, pod in pods.items():
            node = (pod.get("spec") or {}).get("nodeName")
            if node in self.initial and (pod.get("status") or {}).get("phase") not in _FINISHED:
                self.initial[node][key] = pod_request(pod)

    def __bool__(self) -> bool:
        return bool(self.base)

    def report(self, pods: Mapping[str, Mapping[str, Any]], now: float) -> dict[str, NodeUsage]:
        """Every annotated node's figures at ``now``, the pods that left taken off."""
        still: dict[str, set[str]] = {name: set() for name in self.base}
        for key, pod in pods.items():
            node = (pod.get("spec") or {}).get("nodeName")
            if node in still and (pod.get("status") or {}).get("phase") not in _FINISHED:
                still[node].add(key)
        out: dict[str, NodeUsage] = {}
        for name, (cpu, memory, at, capacity) in self.base.items():
            for key, req in self.initial[name].items():
                if key in still[name]:
                    continue
                if capacity.milli_cpu:
                    cpu -= req.milli_cpu * 100 / capacity.milli_cpu
                if capacity.memory:
                    memory -= req.memory * 100 / capacity.memory
            out[name] = NodeUsage.measured(max(cpu, 0.0), max(memory, 0.0), now if at is None else at)
        return out

    def feed(self, pods: Mapping[str, Mapping[str, Any]], cache: Cache, now: float) -> None:
        if self.base:
            cache.set_node_usage(self.report(pods, now))
