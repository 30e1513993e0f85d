"""Volcano's scheduler metrics (pkg/scheduler/metrics), each registry owned by its scheduler."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Histogram


def _buckets(lo: float, hi: float, count: int) -> list[float]:
    """``ExponentialBucketsRange``."""
    factor = (hi / lo) ** (1 / (count - 1))
    return [lo * factor**i for i in range(count)]


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.e2e = Histogram(
            "e2e_scheduling_latency_milliseconds", "E2e scheduling latency in milliseconds (scheduling algorithm + binding)",
            namespace="volcano", buckets=_buckets(1, 5000, 20), registry=self.registry,
        )
        self.open = Histogram(
            "open_session_duration_milliseconds", "Duration of opening a session in milliseconds",
            namespace="volcano", buckets=_buckets(1, 5000, 20), registry=self.registry,
        )
        self.actions = Histogram(
            "action_scheduling_latency_milliseconds", "Action scheduling latencies in milliseconds",
            ["action"], namespace="volcano", buckets=_buckets(1, 2000, 20), registry=self.registry,
        )

    def cycle(self, seconds: float) -> None:
        self.e2e.observe(seconds * 1000)

    def open_session(self, seconds: float) -> None:
        self.open.observe(seconds * 1000)

    def action(self, name: str, seconds: float) -> None:
        self.actions.labels(action=name).observe(seconds * 1000)
