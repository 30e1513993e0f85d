"""NodeUsage: a node's measured load, as the metrics source last reported it (api/node_info.go · NodeUsage).

Volcano's cache asks the metrics source named in the conf's ``metrics`` section for every node's
average CPU and memory load (percent, 0-100) every ``metrics.interval`` and keeps it on the node,
keyed by the period the figures average over.  Its Prometheus queries average over ten minutes and
the cache files the figures under ``"10m"`` (``source.NODE_METRICS_PERIOD``); a reader asking for
another period finds nothing and reads 0, as a Go map does.  ``metrics_time`` is when the source
answered (Unix seconds; 0 for never, Go's zero time), which the usage plugin compares with the
session's clock to tell fresh figures from stale ones.

The cache builds these (``Cache.set_node_usage``) from whatever feeds it: the Prometheus client in
Kubernetes mode (scheduler/kube/metrics_source.py), the nodes' ``vcsched.io/sim-*-usage``
annotations in ``simulate`` (scheduler/sim/node_usage.py).  A session only reads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

NODE_METRICS_PERIOD = "10m"


@dataclass(frozen=True, slots=True)
class NodeUsage:
    metrics_time: float = 0.0
    cpu_usage_avg: dict[str, float] = field(default_factory=dict)
    mem_usage_avg: dict[str, float] = field(default_factory=dict)

    @classmethod
    def measured(cls, cpu: float, memory: float, at: float, period: str = NODE_METRICS_PERIOD) -> "NodeUsage":
        """What ``setMetricsData`` files for one node: both figures under ``period``."""
        return cls(at, {period: cpu}, {period: memory})

    def cpu(self, period: str) -> float:
        return self.cpu_usage_avg.get(period, 0.0)

    def memory(self, period: str) -> float:
        return self.mem_usage_avg.get(period, 0.0)


NO_USAGE = NodeUsage()  # a node the source never reported: zero time, no figures
