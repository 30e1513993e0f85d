"""deviceshare NodeLockEnable against the API emulator: the node annotation is patched before the Binding."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from vcsched.plugins.deviceshare.nodelock import parse_lock_time

from .conftest import conf_map, eventually, node, pod, podgroup, queue

pytestmark = pytest.mark.asyncio

CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: predicates
  - name: proportion
  - name: deviceshare
    arguments: {deviceshare.VGPUEnable: true, deviceshare.NodeLockEnable: true}
"""


def gpu_node(name: str, lock: str | None = None) -> dict:
    n = node(name, cpu="16", memory="64Gi")
    ann = {"volcano.sh/node-vgpu-register": f"GPU-{name},10,40960,NVIDIA-NVIDIA A100-PCIE-40GB,true,hami-core:"}
    if lock is not None:
        ann["hamivgpu"] = lock
    n["metadata"]["annotations"] = ann
    n["status"]["allocatable"].update({"volcano.sh/vgpu-number": "10", "volcano.sh/vgpu-memory": "40960",
                                       "volcano.sh/vgpu-cores": "100"})
    return n


def vgpu_pods(api, *names: str) -> None:
    """The queues, the conf and a pod asking one vGPU per name (a PodGroup each, pg-<name>)."""
    api.put(queue("default"))
    api.put(queue("root"))
    api.put(conf_map(CONF))
    for name in names:
        api.put(podgroup(f"pg-{name}"))
        p = pod(name, f"pg-{name}")
        p["spec"]["containers"][0]["resources"]["limits"] = {"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": "1000"}
        api.put(p)


async def test_the_lock_is_patched_on_the_node_before_the_binding(api, start):
    fresh = (datetime.now(timezone.utc) - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    api.put(gpu_node("locked", lock=fresh))
    api.put(gpu_node("free"))
    vgpu_pods(api, "p1")
    await start()
    await eventually(lambda: api.bindings, "pod bound")
    assert api.bindings == [("default", "p1", "free")]  # the freshly locked node was skipped
    # the lock: a merge patch of the node (verb patch on nodes, as access.py grants), then the binding
    writes = [r for r in api.requests if r.method.value in ("PATCH", "POST") and r.resource is not None
              and (r.resource.plural == "nodes" or r.subresource == "binding")]
    assert [(r.resource.plural, r.name, r.subresource) for r in writes] == [("nodes", "free", None),
                                                                             ("pods", "p1", "binding")]
    value = api.get("", "nodes", "", "free")["metadata"]["annotations"]["hamivgpu"]
    assert parse_lock_time(value) is not None
    assert api.get("", "nodes", "", "locked")["metadata"]["annotations"]["hamivgpu"] == fresh
    bound = api.get("", "pods", "default", "p1")
    assert bound["metadata"]["annotations"]["volcano.sh/vgpu-node"] == "free"


async def test_our_own_lock_holds_the_node_until_the_device_plugin_releases_it(api, start):
    """Two vGPU pods, one node: the second is not placed while the first one's lock is fresh."""
    api.put(gpu_node("only"))
    vgpu_pods(api, "p1", "p2")
    rt = await start()
    await eventually(lambda: api.bindings, "one pod bound")
    first = rt.sessions
    await eventually(lambda: rt.sessions >= first + 5, "more sessions")
    assert len(api.bindings) == 1  # the lock holds the node until the device plugin releases it
    locks = [r for r in api.requests if r.method.value == "PATCH" and r.resource is not None
             and r.resource.plural == "nodes"]
    assert len(locks) == 1
    # the device plugin releases the lock: the second pod goes to the node
    api.update("", "nodes", "", "only", {"metadata": {"annotations": {"hamivgpu": None}}})
    await eventually(lambda: len(api.bindings) == 2, "second pod bound after the release")


async def test_a_refused_lock_keeps_the_pod_pending_until_a_later_session_locks_the_node(api, start):
    """Volcano's Allocate fails when LockNode does: no Binding goes out after a failed lock PATCH."""
    api.put(gpu_node("only"))
    vgpu_pods(api, "p1")
    refused = api.fail(lambda r: r.method.value == "PATCH" and r.resource is not None
                       and r.resource.plural == "nodes", status=403)
    await start()
    await eventually(lambda: api.bindings, "pod bound in a later session")
    assert refused.hits == 1
    writes = [(r.resource.plural, r.subresource) for r in api.requests if r.method.value in ("PATCH", "POST")
              and r.resource is not None and (r.resource.plural == "nodes" or r.subresource == "binding")]
    assert writes == [("nodes", None), ("nodes", None), ("pods", "binding")]  # refused, locked, bound
    assert any(e["reason"] == "FailedScheduling" and "failed to lock node only" in e["message"]
               for e in api.all("", "events"))
