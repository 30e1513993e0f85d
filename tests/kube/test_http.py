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


def samples(text: str, name: str) -> dict[str, float]:
    """``name{labels} value`` lines of a scrape, by their label text."""
    out = {}
    for line in text.splitlines():
        if line.startswith(name):
            key, _, value = line.rpartition(" ")
            out[key[len(name):]] = float(value)
    return out


async def test_bind_path_metrics_with_volcanos_names(api, start):
    cluster(api)
    api.put(podgroup("pg1", min_member=2))
    api.put(pod("p1", "pg1"))
    api.put(pod("p2", "pg1"))
    rt = await start()
    await eventually(lambda: len(api.bindings) == 2 and rt.sink.bound == 2 and rt.http_port, "bound and serving")
    async with aiohttp.ClientSession() as s:
        async with s.get(f"http://127.0.0.1:{rt.http_port}/metrics") as r:
            text = await r.text()
    latency = samples(text, "volcano_task_scheduling_latency_milliseconds_count")
    # each pod watched (added unbound), assumed (bind dispatched) and bound once
    assert latency == {'{stage="Watched"}': 2.0, '{stage="Assumed"}': 2.0, '{stage="Bound"}': 2.0}
    stages = samples(text, "volcano_scheduling_stage_duration_milliseconds_count")
    assert stages['{stage="Bind"}'] == 2.0
    assert stages['{stage="Predicate"}'] >= 2.0  # every search of a session, the sessions before the binds too
    # Volcano's buckets: ExponentialBucketsRange(50, 60000, 30) and (0.1, 500, 20)
    buckets = samples(text, "volcano_task_scheduling_latency_milliseconds_bucket")
    assert len([k for k in buckets if 'stage="Bound"' in k]) == 31  # 30 and +Inf
    assert '{le="0.1",stage="Bind"}' in samples(text, "volcano_scheduling_stage_duration_milliseconds_bucket")
    assert "volcano_e2e_scheduling_latency_milliseconds_count" in text
