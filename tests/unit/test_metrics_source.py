"""The node metrics collector (scheduler/kube/metrics_source.py) against Prometheus-shaped HTTP servers
on loopback: what reaches the cache, the timeouts, the GET fallback, and the confs that collect nothing.
The end-to-end run on a real API server is tests/envtest/test_usage_metrics.py."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import aiohttp
import pytest
from aiohttp import web

from vcsched.api.node_usage import NODE_METRICS_PERIOD
from vcsched.cache import Cache
from vcsched.conf import parse_conf
from vcsched.kube.metrics_source import NodeMetricsCollector, collect_interval, first_sample

pytestmark = pytest.mark.asyncio

AT = 1_767_229_200.0


def cache_with(*names: str) -> Cache:
    c = Cache()
    for n in names:
        c.add_node({"metadata": {"name": n}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}})
    return c


def conf(metrics: str):
    return parse_conf(f"actions: allocate\ntiers: []\nmetrics: {metrics}\n", known_plugins={},
                      known_actions=("allocate",))


async def serve(handler: Callable[[web.Request], Awaitable[web.StreamResponse]], method: str = "*") -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_route(method, "/api/v1/query", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


def vector(value: str | None) -> dict:
    result = [] if value is None else [{"metric": {}, "value": [AT, value]}]
    return {"status": "success", "data": {"resultType": "vector", "result": result}}


async def collect(cache: Cache, text: str, **kw) -> NodeMetricsCollector:
    collector = NodeMetricsCollector(cache, lambda: conf(text), clock=lambda: AT, **kw)
    async with aiohttp.ClientSession() as http:
        await collector.collect(http)
    return collector


async def test_figures_reach_the_cache_under_10m_with_the_time_asked():
    async def handler(request: web.Request) -> web.Response:
        form = await request.post()
        assert form["time"] == repr(AT)
        cpu = "node_cpu_seconds_total" in form["query"]
        return web.json_response(vector("72.5" if cpu else "33"))

    runner, address = await serve(handler, "POST")
    try:
        cache = cache_with("n1", "n2")
        await collect(cache, f"{{type: prometheus, address: '{address}'}}")
        for n in ("n1", "n2"):
            u = cache.node_usage[n]
            assert (u.cpu(NODE_METRICS_PERIOD), u.memory(NODE_METRICS_PERIOD), u.metrics_time) == (72.5, 33.0, AT)
            assert u.cpu("5m") == 0.0
    finally:
        await runner.cleanup()


async def test_a_405_falls_back_to_get():
    asked: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        asked.append(request.method)
        if request.method == "POST":
            return web.Response(status=405)
        return web.json_response(vector("12"))

    runner, address = await serve(handler)
    try:
        cache = cache_with("n1")
        await collect(cache, f"{{type: prometheus, address: '{address}'}}")
        assert cache.node_usage["n1"].cpu(NODE_METRICS_PERIOD) == 12.0
        assert asked.count("GET") == 2 and asked.count("POST") == 2
    finally:
        await runner.cleanup()


async def test_a_slow_source_times_out_and_reads_zero_with_a_fresh_time():
    """Volcano's client files a node whose queries failed with 0 % and a fresh time; each query here gives
    up after request_timeout, so a hanging source costs a round at most that long, not the 60 s round."""
    async def handler(request: web.Request) -> web.Response:
        await asyncio.sleep(5)
        return web.json_response(vector("99"))

    runner, address = await serve(handler)
    try:
        cache = cache_with("n1", "n2")
        started = time.monotonic()
        await collect(cache, f"{{type: prometheus, address: '{address}'}}", request_timeout=0.2)
        assert time.monotonic() - started < 3
        u = cache.node_usage["n1"]
        assert (u.cpu(NODE_METRICS_PERIOD), u.memory(NODE_METRICS_PERIOD), u.metrics_time) == (0.0, 0.0, AT)
    finally:
        await runner.cleanup()


async def test_no_data_and_errors_read_zero():
    async def handler(request: web.Request) -> web.Response:
        form = await request.post()
        if "node_cpu_seconds_total" in form["query"]:
            return web.json_response(vector(None))  # no data for this node
        return web.json_response({"status": "error", "errorType": "bad_data", "error": "parse error"}, status=400)

    runner, address = await serve(handler)
    try:
        cache = cache_with("n1")
        await collect(cache, f"{{type: prometheus, address: '{address}'}}")
        u = cache.node_usage["n1"]
        assert (u.cpu(NODE_METRICS_PERIOD), u.memory(NODE_METRICS_PERIOD)) == (0.0, 0.0)
    finally:
        await runner.cleanup()


@pytest.mark.parametrize("metrics", ["{}", "{type: elasticsearch, address: 'http://127.0.0.1:1'}",
                                     "{type: prometheus}", "{type: prometheus, address: ''}"])
async def test_confs_that_collect_nothing(metrics):
    cache = cache_with("n1")
    await collect(cache, metrics)
    assert cache.node_usage == {}


async def test_first_sample_and_interval():
    assert first_sample(vector("1.5")) == 1.5
    assert first_sample(vector(None)) is None
    assert first_sample({"status": "success", "data": {"resultType": "matrix", "result": []}}) is None
    with pytest.raises(Exception, match="answered"):
        first_sample({"status": "error"})
    assert collect_interval({}) == 30.0
    assert collect_interval({"interval": "5s"}) == 5.0
    assert collect_interval({"interval": "soon"}) == 30.0
    assert collect_interval({"interval": "-1s"}) == 30.0
