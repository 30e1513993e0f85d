"""/metrics with Volcano's names and /healthz on --listen."""

from __future__ import annotations

import aiohttp
import pytest

from .conftest import cluster, eventually, pod, podgroup

pytestmark = pytest.mark.asyncio


async def test_metrics_and_healthz(api, start):
    cluster(api)
    api.put(podgroup("pg1"))
    api.put(pod("p1", "pg1"))
    rt = await start()
    await eventually(lambda: api.bindings and rt.http_port, "bound and serving")
    async with aiohttp.ClientSession() as s:
        async with s.get(f"http://127.0.0.1:{rt.http_port}/healthz") as r:
            assert r.status == 200 and await r.text() == "ok"
        async with s.get(f"http://127.0.0.1:{rt.http_port}/metrics") as r:
            text = await r.text()
    assert r.status == 200
    assert "volcano_e2e_scheduling_latency_milliseconds_count" in text
    assert 'volcano_action_scheduling_latency_milliseconds_count{action="allocate"}' in text
