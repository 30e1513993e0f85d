"""The scheduler ConfigMap on the real API server: ``vcsched run`` reloads it while it runs; an edit that
does not parse is refused (a Warning event on the ConfigMap naming the field, the last good conf kept) and
scheduling goes on with the last good conf."""

from __future__ import annotations

import pytest

from .conftest import CONF_MAP, Kube, VcschedRunner, pod

pytestmark = pytest.mark.asyncio

ALLOCATE = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: predicates
  - name: proportion
"""
ENQUEUE_ONLY = ALLOCATE.replace('"enqueue, allocate"', '"enqueue"')


async def test_a_good_edit_takes_effect_and_a_bad_one_is_refused(kube: Kube, vcsched: VcschedRunner):
    await kube.node("n0")
    await kube.conf_map(ENQUEUE_ONLY)
    await kube.create(pod("p1"))
    proc = vcsched.start()
    # enqueue alone: p1's PodGroup is admitted (Inqueue), nothing is bound
    await kube.eventually(lambda: _pg_phase(kube, "p1", "Inqueue"), "p1's PodGroup Inqueue")

    # a broken edit: refused with a Warning event on the ConfigMap naming the key and the field
    await kube.conf_map('actions: "enqueue, allocate, teleport"')
    ev = await kube.eventually(lambda: kube.events("volcano-system", reason="InvalidSchedulerConf", name=CONF_MAP),
                               "the refusal's event")
    assert ev[0]["type"] == "Warning" and ev[0]["involvedObject"]["kind"] == "ConfigMap"
    assert "data[volcano-scheduler.conf]" in ev[0]["message"] and "teleport" in ev[0]["message"]
    assert "actions" in ev[0]["message"]
    # invalid YAML: refused too
    await kube.conf_map("actions: [oops")
    await kube.eventually(lambda: _events_count(kube, 2), "the second refusal's event")
    # the last good conf (enqueue only) stays in force and sessions go on: a later pod is admitted...
    await kube.create(pod("p2"))
    await kube.eventually(lambda: _pg_phase(kube, "p2", "Inqueue"), "p2's PodGroup Inqueue")
    # ...and, one more session later (p3 admitted after p2), still nothing bound: allocate never ran
    await kube.create(pod("p3"))
    await kube.eventually(lambda: _pg_phase(kube, "p3", "Inqueue"), "p3's PodGroup Inqueue")
    assert [p["metadata"]["name"] for p in await kube.list("/api/v1/namespaces/default/pods")
            if p["spec"].get("nodeName")] == []
    assert proc.alive()

    # a good edit: takes effect without a restart
    await kube.conf_map(ALLOCATE)
    for name in ("p1", "p2", "p3"):
        await kube.eventually(lambda: kube.bound("default", name), f"{name} bound after the reload")
    loaded = proc.logged("scheduler conf loaded")
    assert [r["actions"] for r in loaded][-1] == ["enqueue", "allocate"]


async def _pg_phase(kube: Kube, name: str, phase: str) -> bool:
    p = await kube.pod("default", name)
    if p is None:
        return False
    pg = await kube.podgroup("default", f"podgroup-{p['metadata']['uid']}")
    return bool(pg) and (pg.get("status") or {}).get("phase") == phase


async def _events_count(kube: Kube, n: int) -> bool:
    evs = await kube.events("volcano-system", reason="InvalidSchedulerConf", name=CONF_MAP)
    return sum(int(e.get("count") or 1) for e in evs) >= n
