"""/healthz and /readyz tell the truth (health.py), and a component that dies stops the process."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from vcsched.kube import components
from vcsched.kube.api import NODES

from .conftest import cluster, client_for, eventually, node, verb_of

pytestmark = pytest.mark.asyncio


async def probe(rt, path: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as s:
        async with s.get(f"http://127.0.0.1:{rt.http_port}{path}") as r:
            return r.status, await r.text()


async def probe_until(rt, path: str, status: int) -> tuple[int, str]:
    """``probe`` until it answers ``status`` (5 s at most); the last answer."""
    answer = await probe(rt, path)
    for _ in range(100):
        if answer[0] == status:
            break
        await asyncio.sleep(0.05)
        answer = await probe(rt, path)
    return answer


def lists_nodes(r) -> bool:
    return r.resource is not None and r.resource.plural == "nodes" and verb_of(r) == "list"


async def test_readyz_fails_until_the_caches_have_synced(api, start):
    cluster(api)
    gate = asyncio.Event()
    api.fail(lists_nodes, gate=gate)  # the node list is held until the test lets it go
    rt = await start()
    await eventually(lambda: rt.http_port, "serving")
    assert await probe(rt, "/readyz") == (503, "scheduler: caches not synced\n")
    assert await probe(rt, "/healthz") == (200, "ok")  # alive: it is waiting, not broken
    gate.set()
    await eventually(lambda: rt.synced.is_set(), "synced")
    assert await probe(rt, "/readyz") == (200, "ok")


async def test_healthz_fails_while_a_watch_stays_broken_for_twice_its_timeout(api, start):
    cluster(api)
    rt = await start(watch_timeout=0.3)
    await eventually(lambda: rt.synced.is_set() and rt.http_port, "synced")
    broken = api.fail(lambda r: r.resource is not None and r.resource.plural == "nodes", status=500, times=10**6)
    api.drop_watches()
    assert await probe_until(rt, "/healthz", 503) == (503, "scheduler: watch of nodes broken\n")
    assert (await probe(rt, "/readyz"))[0] == 503  # not alive is not ready either
    broken.times = 0  # the API server answers again: the watch comes back, and so does health
    assert await probe_until(rt, "/healthz", 200) == (200, "ok")


async def test_healthz_fails_when_no_session_completes(api, start, monkeypatch):
    cluster(api)
    rt = await start(session_stall=0.3)
    await eventually(lambda: rt.sessions >= 1 and rt.http_port, "a session")
    hang = asyncio.Event()

    async def stuck() -> None:
        await hang.wait()

    monkeypatch.setattr(rt, "run_session", stuck)
    await asyncio.sleep(0.5)
    status, text = await probe(rt, "/healthz")
    assert status == 503 and text.startswith("scheduler: no session completed for ")
    hang.set()


async def test_controllers_that_stop_unexpectedly_stop_the_process_non_zero(api, monkeypatch):
    cluster(api)

    async def dies(*args, **kwargs) -> None:
        raise RuntimeError("a controller bug")

    monkeypatch.setattr(components, "run_controllers", dies)
    client = client_for(api, agent="vcsched-controllers")
    try:
        code = await asyncio.wait_for(components.run_components(client, client, None, asyncio.Event()), 10)
    finally:
        await client.close()
    assert code == 1


async def test_healthz_fails_when_a_watch_task_ends(api, start, monkeypatch):
    """A bug in what a watch feeds ends its task: the process is no longer whole, and says so."""
    cluster(api)
    rt = await start()
    await eventually(lambda: rt.synced.is_set() and rt.http_port, "synced")

    def broken(obj):
        raise RuntimeError("a cache bug")

    monkeypatch.setattr(rt._watched[NODES].handler, "upsert", broken)
    api.put(node("n9"))  # the node reflector's handler raises on this one
    assert await probe_until(rt, "/healthz", 503) == (503, "scheduler: watch of nodes stopped\n")
