"""usage with node load from Prometheus, on the real API server: ``vcsched run`` reads the conf's
``metrics`` section (type prometheus, address, interval) and asks a Prometheus-compatible server on
loopback, with Volcano's PromQL, through the query API Volcano's client uses (POST /api/v1/query,
form ``query`` and ``time``).  The fake answers as Prometheus does (a vector, one sample per node).

- The load reaches the sessions: a node Prometheus reports at 95 % CPU is refused by the usage
  predicate (threshold 80) and every pod goes to the other node.
- An unreachable source: one warning per round naming the address, node load reads 0 % (Volcano's
  Prometheus client does the same), and scheduling goes on: the pods bind.
"""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from aiohttp import web

from vcsched.kube.metrics_source import cpu_query, memory_query

from .conftest import Kube, VcschedRunner, pod

pytestmark = pytest.mark.asyncio

SOON = 30.0
INSTANCE = re.compile(r'instance="([^"]+)"')


class FakePrometheus:
    """/api/v1/query answering each node's figure from ``load``; every query is recorded."""

    def __init__(self, load: dict[str, tuple[float, float]]) -> None:
        self.load = load
        self.queries: list[tuple[str, str, str]] = []  # (method, query, time)
        self.runner: web.AppRunner | None = None
        self.address = ""

    async def handle(self, request: web.Request) -> web.Response:
        form = await request.post() if request.method == "POST" else request.query
        query, at = str(form.get("query", "")), str(form.get("time", ""))
        self.queries.append((request.method, query, at))
        m = INSTANCE.search(query)
        figures = self.load.get(m.group(1)) if m else None
        result = []
        if figures is not None:
            value = figures[0] if "node_cpu_seconds_total" in query else figures[1]
            result = [{"metric": {"instance": m.group(1)}, "value": [float(at or 0), str(value)]}]
        return web.json_response({"status": "success", "data": {"resultType": "vector", "result": result}})

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/api/v1/query", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.address = f"http://127.0.0.1:{self.runner.addresses[0][1]}"

    def asked(self, node: str) -> int:
        return sum(1 for _, q, _ in self.queries if f'instance="{node}"' in q)


@pytest_asyncio.fixture
async def prometheus() -> AsyncIterator[FakePrometheus]:
    fake = FakePrometheus({"hot": (95.0, 40.0), "cool": (20.0, 30.0)})
    await fake.start()
    try:
        yield fake
    finally:
        assert fake.runner is not None
        await fake.runner.cleanup()


def usage_conf(address: str) -> str:
    return f"""
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: usage
    arguments:
      thresholds: {{cpu: 80, mem: 80}}
metrics:
  type: prometheus
  address: {address}
  interval: 1s
"""


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_usage_refuses_the_node_prometheus_reports_loaded(kube: Kube, vcsched: VcschedRunner,
                                                                 prometheus: FakePrometheus):
    await kube.conf_map(usage_conf(prometheus.address))
    await kube.node("hot", cpu="8")  # the emptier node by requests: without usage nodeorder would prefer it
    await kube.node("cool", cpu="4")
    await kube.create(pod("filler", cpu="1", scheduler="nobody", node_name="cool"))
    vcsched.start()
    # two rounds asked for both nodes: the first round's figures are in the cache
    await kube.eventually(lambda: prometheus.asked("hot") >= 4 and prometheus.asked("cool") >= 4,
                          "two rounds of queries for both nodes", SOON)
    for i in range(3):
        await kube.create(pod(f"p{i}"))
    for i in range(3):
        bound = await kube.eventually(lambda i=i: kube.bound("default", f"p{i}"), f"p{i} bound", SOON)
        assert bound["spec"]["nodeName"] == "cool"
    # Volcano's queries, as its Prometheus client sends them: POST, form query and time
    methods = {m for m, _, _ in prometheus.queries}
    asked = {q for _, q, _ in prometheus.queries}
    assert methods == {"POST"}
    assert {cpu_query("hot"), memory_query("hot"), cpu_query("cool"), memory_query("cool")} <= asked
    assert all(float(at) > 0 for _, _, at in prometheus.queries)


async def test_an_unreachable_source_is_a_warning_and_scheduling_goes_on(kube: Kube, vcsched: VcschedRunner):
    address = f"http://127.0.0.1:{closed_port()}"
    await kube.conf_map(usage_conf(address))
    await kube.node("n0", cpu="4")
    p = vcsched.start()
    await kube.create(pod("p0"))
    bound = await kube.eventually(lambda: kube.bound("default", "p0"), "p0 bound", SOON)
    assert bound["spec"]["nodeName"] == "n0"

    def warned() -> list[dict]:
        return [r for r in p.records() if str(r.get("event", "")).startswith("metrics source unreachable")
                and r.get("level") == "warning"]

    records = await kube.eventually(warned, "the unreachable-source warning", SOON)
    assert records[0]["address"] == address
    assert p.alive()


def rescheduling_conf(address: str) -> str:
    return f"""
actions: "enqueue, allocate, backfill, shuffle"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: proportion
  - name: rescheduling
    arguments:
      interval: 3s
      metricsPeriod: 10m
      strategies:
      - name: lowNodeUtilization
        params:
          thresholds: {{cpu: 40, memory: 40}}
          targetThresholds: {{cpu: 70, memory: 70}}
metrics:
  type: prometheus
  address: {address}
  interval: 200ms
"""


async def _gone(kube: Kube, name: str) -> bool:
    p = await kube.pod("default", name)
    return p is None or p["metadata"].get("deletionTimestamp") is not None


async def test_rescheduling_relieves_the_node_prometheus_reports_hot(kube: Kube, vcsched: VcschedRunner,
                                                                     prometheus: FakePrometheus):
    """Prometheus reports hot at 90 % CPU and cool at 20 % (30 % memory, below the thresholds of 40): once
    the interval (3 s) has passed, rescheduling names hot's lowest-priority pod and shuffle evicts it
    through the API (Volcano's Evict event); with its 1 CPU off, hot counts 65 %, below its target 70 %,
    so the higher-priority pod stays.  Then Prometheus reports hot at 50 %: nothing more is evicted."""
    prometheus.load["hot"] = (90.0, 40.0)
    await kube.ensure({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                       "metadata": {"name": "usage-low"}, "value": 10})
    await kube.ensure({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                       "metadata": {"name": "usage-high"}, "value": 1000})
    await kube.conf_map(rescheduling_conf(prometheus.address))
    await kube.node("hot", cpu="4")
    await kube.node("cool", cpu="4")
    for name, cls in (("keep", "usage-high"), ("move", "usage-low")):
        await kube.create(pod(name, priority_class=cls, node_name="hot"))
        await kube.pod_status("default", name, "Running", conditions=[{"type": "Ready", "status": "True"}])
    p = vcsched.start()
    await kube.eventually(lambda: _gone(kube, "move"), "move evicted", SOON)
    # what Prometheus would see once move has gone, well within the 3 s to the next run
    prometheus.load["hot"] = (50.0, 40.0)
    events = await kube.eventually(lambda: kube.events("default", reason="Evict", kind="Pod", name="move"),
                                   "move's Evict event", SOON)
    assert [e["message"] for e in events] == ["Pod is evicted, because of shuffle"]
    # two more runs of the strategies (3 s apart) on the new figures
    await asyncio.sleep(7)
    assert not await _gone(kube, "keep")
    assert p.alive()
