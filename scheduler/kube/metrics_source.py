"""Node load from the metrics source the conf's ``metrics`` section names (cache.go · GetMetricsData,
metrics/source/metrics_client_prometheus.go).

    metrics:
      type: prometheus                 # the one type vcsched collects from
      address: http://prometheus.monitoring:9090
      interval: 30s                    # how often (a Go duration; default 30s)
      tls.insecureSkipVerify: "false"

Every ``interval`` (re-read from the current conf each round) the collector asks Prometheus' query API
(``POST /api/v1/query``, form ``query`` and ``time``; a 405 falls back to GET, as Prometheus' Go client
does) for each node's average CPU and memory load over ten minutes, with Volcano's PromQL, and hands
the numbers to the cache (``Cache.set_node_usage``) under ``10m`` with the time it asked; sessions read
them from their snapshot, so no session waits on the network.  The first sample of a vector answer
counts; an empty answer, another result type or an error reads 0 for that figure.

Unreachable: Volcano's Prometheus client logs each failed query and still files the node with 0 %
and a fresh time, so the usage plugin passes and scores every node alike and rescheduling finds them
all idle: scheduling goes on.  vcsched does the same and says so in one warning per round, naming the
address and the error.  Each query has ``request_timeout`` (10 s) and a round ``round_timeout`` (60 s,
Volcano's context); queries run a few at a time, not one after the other.

Other settings: no ``type`` collects nothing (nodes stay unreported, the plugins' stale-metrics path);
an empty ``address`` or a type other than ``prometheus`` (Volcano also has ``prometheus_adaptor`` and
``elasticsearch``) is logged as an error each round and collects nothing, where Volcano would collect
from the two others.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable
from typing import Any

import aiohttp
import structlog

from ..api.duration import DurationError, parse_go_duration
from ..api.node_usage import NODE_METRICS_PERIOD, NodeUsage
from ..cache import Cache
from ..conf import SchedulerConfiguration

log = structlog.get_logger("vcsched.metrics-source")

PROMETHEUS = "prometheus"
DEFAULT_INTERVAL = 30.0  # defaultMetricsInternal
REQUEST_TIMEOUT = 10.0
ROUND_TIMEOUT = 60.0
CONCURRENT_QUERIES = 16


def cpu_query(node: str) -> str:
    return (f'avg_over_time(clamp_min(100 - (avg by (instance) (rate(node_cpu_seconds_total{{mode="idle",'
            f'instance="{node}"}}[5m])) * 100), 0)[{NODE_METRICS_PERIOD}:30s])')


def memory_query(node: str) -> str:
    return (f'100*avg_over_time(((1-node_memory_MemAvailable_bytes{{instance="{node}"}}/'
            f'node_memory_MemTotal_bytes{{instance="{node}"}}))[{NODE_METRICS_PERIOD}:30s])')


def collect_interval(metrics: dict[str, str]) -> float:
    """``metrics.interval``: a Go duration above zero, else 30 s (as Volcano falls back)."""
    try:
        interval = parse_go_duration(metrics.get("interval", ""))
    except DurationError:
        return DEFAULT_INTERVAL
    return interval if interval > 0 else DEFAULT_INTERVAL


class QueryError(Exception):
    pass


def first_sample(body: Any) -> float | None:
    """The value of the first sample of a vector answer; None for no data or another result type."""
    if not isinstance(body, dict) or body.get("status") != "success":
        raise QueryError(f"Prometheus answered {str(body)[:200]}")
    data = body.get("data") or {}
    if data.get("resultType") != "vector":
        return None
    result = data.get("result") or []
    if not result:
        return None
    try:
        return float(result[0]["value"][1])
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise QueryError(f"a sample that is not a number: {str(result[0])[:200]}") from e


class PrometheusSource:
    """Prometheus' instant-query API over one HTTP session."""

    def __init__(self, address: str, insecure: bool, request_timeout: float = REQUEST_TIMEOUT) -> None:
        self.url = address.rstrip("/") + "/api/v1/query"
        self.ssl: ssl.SSLContext | bool | None = False if insecure else None
        self.timeout = aiohttp.ClientTimeout(total=request_timeout)

    async def query(self, http: aiohttp.ClientSession, promql: str, at: float) -> float | None:
        form = {"query": promql, "time": repr(at)}
        async with http.post(self.url, data=form, ssl=self.ssl, timeout=self.timeout) as resp:
            if resp.status == 405:
                async with http.get(self.url, params=form, ssl=self.ssl, timeout=self.timeout) as get:
                    return first_sample(await _json(get))
            return first_sample(await _json(resp))


async def _json(resp: aiohttp.ClientResponse) -> Any:
    try:
        return await resp.json(content_type=None)
    except (ValueError, aiohttp.ContentTypeError) as e:
        raise QueryError(f"HTTP {resp.status}: the answer is not JSON") from e


class NodeMetricsCollector:
    """Runs beside the sessions in ``vcsched run``; ``conf`` gives the scheduler's current configuration."""

    def __init__(self, cache: Cache, conf: Callable[[], SchedulerConfiguration], *,
                 request_timeout: float = REQUEST_TIMEOUT, round_timeout: float = ROUND_TIMEOUT,
                 clock: Callable[[], float] = time.time) -> None:
        self.cache = cache
        self.conf = conf
        self.request_timeout = request_timeout
        self.round_timeout = round_timeout
        self.clock = clock
        self.rounds = 0

    async def run(self) -> None:
        async with aiohttp.ClientSession() as http:
            while True:
                try:
                    await self.collect(http)
                except asyncio.CancelledError:
                    raise
                except Exception:  # a bug here must not stop the scheduler
                    log.exception("node metrics collection failed")
                await asyncio.sleep(collect_interval(self.conf().metrics))

    async def collect(self, http: aiohttp.ClientSession) -> None:
        """One round: every node's figures into the cache (or nothing, for a conf that names no source)."""
        self.rounds += 1
        metrics = self.conf().metrics
        kind = metrics.get("type", "")
        if not kind:
            log.debug("no metrics type in the scheduler configuration: node load is not collected")
            return
        if kind != PROMETHEUS:
            log.error("node load cannot be collected from this monitoring system; vcsched supports prometheus",
                      type=kind, field="metrics.type")
            return
        address = metrics.get("address", "")
        if not address:
            log.error("metrics address is empty", field="metrics.address")
            return
        insecure = metrics.get("tls.insecureSkipVerify") == "true"
        if insecure:
            log.warning("TLS certificate verification is disabled for the metrics source (insecure)")
        source = PrometheusSource(address, insecure, self.request_timeout)
        nodes = [name for name, n in self.cache.nodes.items() if n.ready]
        at = self.clock()
        deadline = asyncio.get_running_loop().time() + self.round_timeout
        limit = asyncio.Semaphore(CONCURRENT_QUERIES)
        failures: list[str] = []

        async def ask(promql: str) -> float:
            async with limit:
                left = deadline - asyncio.get_running_loop().time()
                try:
                    if left <= 0:
                        raise asyncio.TimeoutError()
                    value = await asyncio.wait_for(source.query(http, promql, at), left)
                except asyncio.TimeoutError:
                    failures.append("timed out")
                    return 0.0
                except (aiohttp.ClientError, OSError, QueryError) as e:
                    failures.append(str(e) or type(e).__name__)
                    return 0.0
                if value is None:
                    log.debug("no data found", query=promql)
                    return 0.0
                return value

        async def node_figures(name: str) -> tuple[str, float, float]:
            cpu, memory = await asyncio.gather(ask(cpu_query(name)), ask(memory_query(name)))
            return name, cpu, memory

        figures = await asyncio.gather(*(node_figures(n) for n in nodes))
        if failures:
            log.warning("metrics source unreachable or failing: node load reads 0 % for what failed, as Volcano's "
                        "Prometheus client; scheduling goes on", address=address, failed=len(failures),
                        queries=2 * len(nodes), error=failures[0])
        # the cache is the loop's: this runs on the loop, between sessions' snapshots
        self.cache.set_node_usage({name: NodeUsage.measured(cpu, memory, at) for name, cpu, memory in figures
                                   if name in self.cache.nodes})
