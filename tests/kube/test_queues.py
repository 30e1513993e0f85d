"""The root and default queues, created at start as Volcano's scheduler cache does (newDefaultAndRootQueue)."""

from __future__ import annotations

import pytest

from .conftest import eventually, node, pod, podgroup

pytestmark = pytest.mark.asyncio

GROUP = "scheduling.volcano.sh"


def queue_posts(api):
    return [r for r in api.requests if r.resource is not None and r.resource.plural == "queues"
            and r.method.value == "POST"]


async def test_root_and_default_queues_are_created_when_absent(api, start):
    api.put(node("n0"))
    api.put(podgroup("pg1"))  # no spec.queue needed: the default queue
    api.put(pod("p1", "pg1"))
    rt = await start()
    await eventually(lambda: api.get(GROUP, "queues", "", "default"), "default queue created")
    root, default = api.get(GROUP, "queues", "", "root"), api.get(GROUP, "queues", "", "default")
    # created without a status, as Volcano does: the queue controller opens it, and until then
    # proportion schedules nothing in it
    assert "status" not in default and "status" not in root
    n = rt.sessions
    await eventually(lambda: rt.sessions >= n + 3, "sessions")
    assert not api.bindings
    api.update(GROUP, "queues", "", "default", {"status": {"state": "Open"}})
    await eventually(lambda: api.bindings, "p1 bound in the default queue once it is Open")
    assert root["spec"] == {"weight": 1, "reclaimable": False}
    assert default["spec"] == {"weight": 1, "reclaimable": True}
    assert [r.data["metadata"]["name"] for r in queue_posts(api)] == ["root", "default"]
    assert set(rt.cache.queues) >= {"root", "default"}


async def test_existing_queues_are_left_alone_and_409_is_fine(api, start):
    api.put({"apiVersion": f"{GROUP}/v1beta1", "kind": "Queue", "metadata": {"name": "root"},
             "spec": {"weight": 7}})
    api.put({"apiVersion": f"{GROUP}/v1beta1", "kind": "Queue", "metadata": {"name": "batch"},
             "spec": {"weight": 3, "reclaimable": False}})
    # the GET misses batch (as if another replica created it meanwhile): the POST gets 409 AlreadyExists
    api.fail(lambda r: r.resource is not None and r.resource.plural == "queues" and r.name == "batch"
             and r.method.value == "GET", status=404)
    rt = await start(default_queue="batch")
    await eventually(lambda: rt.synced.is_set(), "synced")
    assert api.get(GROUP, "queues", "", "root")["spec"] == {"weight": 7}
    assert api.get(GROUP, "queues", "", "batch")["spec"] == {"weight": 3, "reclaimable": False}
    assert [r.data["metadata"]["name"] for r in queue_posts(api)] == ["batch"]
    assert api.get(GROUP, "queues", "", "default") is None


def is_queue_post(r) -> bool:
    return r.resource is not None and r.resource.plural == "queues" and r.method.value == "POST"


async def test_a_failed_create_is_retried(api, start):
    api.fail(is_queue_post, status=500, times=2)
    rt = await start(queue_init_interval=0.01)
    await eventually(lambda: rt.synced.is_set(), "synced")
    assert api.get(GROUP, "queues", "", "root") and api.get(GROUP, "queues", "", "default")
    assert len(queue_posts(api)) == 4


async def test_the_scheduler_exits_when_the_queues_cannot_be_created(api, start):
    api.fail(is_queue_post, status=403, times=10**6)  # say, a ClusterRole without queues create
    rt = await start(queue_init_attempts=3, queue_init_interval=0.01)
    assert await rt.task == 1
    assert len(queue_posts(api)) == 3 and not rt.synced.is_set() and rt.sessions == 0
