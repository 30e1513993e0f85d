"""Binding, status writes and events against the API emulator."""

from __future__ import annotations

import pytest

from .conftest import cluster, eventually, pod, podgroup

pytestmark = pytest.mark.asyncio

GROUP, PODS = "scheduling.volcano.sh", ""


async def test_pods_get_bound_with_their_annotations_and_status_is_written(api, start):
    cluster(api)
    api.put(podgroup("pg1", min_member=2))
    api.put(pod("p1", "pg1"))
    api.put(pod("p2", "pg1"))
    rt = await start()
    await eventually(lambda: len(api.bindings) == 2, "both pods bound")
    for name in ("p1", "p2"):
        p = api.get("", "pods", "default", name)
        assert p["spec"]["nodeName"] in ("n0", "n1")
    # the PodGroup reaches Running with a plain patch of the object, never /status
    await eventually(lambda: (api.get(GROUP, "podgroups", "default", "pg1").get("status") or {}).get("phase") == "Running",
                     "podgroup Running")
    pg_writes = [r for r in api.requests if r.resource is not None and r.resource.plural == "podgroups"
                 and r.method.value == "PATCH"]
    assert pg_writes and all(r.subresource is None for r in pg_writes)
    # the queue's allocated goes through /status
    await eventually(lambda: (api.get(GROUP, "queues", "", "default").get("status") or {}).get("allocated"),
                     "queue allocated")
    q_writes = [r for r in api.requests if r.resource is not None and r.resource.plural == "queues"
                and r.method.value == "PATCH"]
    assert q_writes and all(r.subresource == "status" for r in q_writes)
    assert api.get(GROUP, "queues", "", "default")["status"]["allocated"]["cpu"] == "2"
    # Scheduled events from component volcano
    await eventually(lambda: len([e for e in api.all("", "events") if e["reason"] == "Scheduled"
                                  and e["involvedObject"]["kind"] == "Pod"]) == 2, "Scheduled events")
    ev = next(e for e in api.all("", "events") if e["involvedObject"].get("name") == "p1")
    assert ev["source"]["component"] == "volcano" and ev["type"] == "Normal"
    assert ev["message"] == f"Successfully assigned default/p1 to {api.get('', 'pods', 'default', 'p1')['spec']['nodeName']}"
    assert rt.sink.bind_failures == 0
