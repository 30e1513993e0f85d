"""What vcsched relies on from the API server, confirmed on a real one (kube-apiserver v1.24 with Volcano's
CRDs), through vcsched's own client (``vcsched.kube.api.KubeClient``): status subresources, optimistic
concurrency (409), watch expiry (410 Gone) and bookmarks, a Binding's annotations, field selectors,
deletecollection.

The last test restarts the shared API server (etcd kept and compacted meanwhile); it leaves the control plane
as it found it, but a test running beside it in the same session would see its connections dropped once.
"""

from __future__ import annotations

import asyncio

import pytest

from vcsched.envtest import ControlPlane
from vcsched.kube.api import MERGE_PATCH, ApiError, KubeClient, load_configuration

from .conftest import Kube, pod, podgroup, queue

pytestmark = pytest.mark.asyncio

QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"
PODGROUPS = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups"
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"
PODS = "/api/v1/namespaces/default/pods"


def job(name: str) -> dict:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
            "spec": {"minAvailable": 1, "schedulerName": "volcano", "queue": "default",
                     "tasks": [{"name": "t", "replicas": 1, "template": {"spec": {
                         "containers": [{"name": "c", "image": "busybox"}]}}}]}}


async def test_queue_status_subresource_writes_only_status(kube: Kube):
    await kube.create(queue("sq", weight=1))
    c = kube.client
    # through /status: the status changes, the spec does not
    await c.request("PATCH", f"{QUEUES}/sq/status", content_type=MERGE_PATCH,
                    body={"spec": {"weight": 7}, "status": {"state": "Closed", "allocated": {"cpu": "1"}}})
    q = await c.get(f"{QUEUES}/sq")
    assert q["spec"]["weight"] == 1
    assert q["status"]["state"] == "Closed" and q["status"]["allocated"] == {"cpu": "1"}
    # through the object: the spec changes, the status does not
    await c.request("PATCH", f"{QUEUES}/sq", content_type=MERGE_PATCH,
                    body={"spec": {"weight": 3}, "status": {"state": "Open"}})
    q = await c.get(f"{QUEUES}/sq")
    assert q["spec"]["weight"] == 3 and q["status"]["state"] == "Closed"


async def test_job_status_subresource_put_writes_only_status(kube: Kube):
    created = await kube.create(job("sj"))
    c = kube.client
    body = {**created, "spec": {**created["spec"], "minAvailable": 0},
            "status": {"state": {"phase": "Running"}, "running": 1}}
    await c.request("PUT", f"{JOBS}/sj/status", body=body)
    j = await c.get(f"{JOBS}/sj")
    assert j["spec"]["minAvailable"] == 1
    assert j["status"]["state"]["phase"] == "Running" and j["status"]["running"] == 1


async def test_podgroup_has_no_status_subresource_its_object_carries_status(kube: Kube):
    await kube.create(podgroup("spg", 1))
    c = kube.client
    with pytest.raises(ApiError) as e:
        await c.request("PATCH", f"{PODGROUPS}/spg/status", content_type=MERGE_PATCH,
                        body={"status": {"phase": "Inqueue"}})
    assert e.value.status == 404
    await c.request("PATCH", f"{PODGROUPS}/spg", content_type=MERGE_PATCH, body={"status": {"phase": "Inqueue"}})
    assert (await c.get(f"{PODGROUPS}/spg"))["status"]["phase"] == "Inqueue"


async def test_a_put_with_a_stale_resource_version_is_a_conflict(kube: Kube):
    created = await kube.create(queue("cq"))
    c = kube.client
    await c.request("PATCH", f"{QUEUES}/cq", content_type=MERGE_PATCH, body={"spec": {"weight": 2}})
    stale = {**created, "spec": {**created["spec"], "weight": 5}}  # carries the first resourceVersion
    with pytest.raises(ApiError) as e:
        await c.request("PUT", f"{QUEUES}/cq", body=stale)
    assert e.value.status == 409 and e.value.reason == "Conflict"
    assert (await c.get(f"{QUEUES}/cq"))["spec"]["weight"] == 2


async def test_a_binding_copies_its_annotations_onto_the_pod(kube: Kube):
    await kube.node("bn0")
    created = await kube.create(pod("bp", annotations={"keep": "me"}))
    await kube.client.request("POST", f"{PODS}/bp/binding", body={
        "apiVersion": "v1", "kind": "Binding",
        "metadata": {"name": "bp", "namespace": "default", "uid": created["metadata"]["uid"],
                     "annotations": {"volcano.sh/vgpu-ids-new": "GPU-a,NVIDIA,1000,0:", "volcano.sh/bind-phase": "allocating"}},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "bn0"}})
    p = await kube.pod("default", "bp")
    assert p["spec"]["nodeName"] == "bn0"
    assert p["metadata"]["annotations"] == {"keep": "me", "volcano.sh/vgpu-ids-new": "GPU-a,NVIDIA,1000,0:",
                                            "volcano.sh/bind-phase": "allocating"}
    # a second Binding of a bound pod is refused: 409, never a second placement
    with pytest.raises(ApiError) as e:
        await kube.client.request("POST", f"{PODS}/bp/binding", body={
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "bp", "namespace": "default"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "bn0"}})
    assert e.value.status == 409


async def test_a_field_selector_on_the_name_filters_list_and_watch(kube: Kube):
    await kube.conf_map("actions: enqueue")
    await kube.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other", "namespace": "volcano-system"}})
    path = "/api/v1/namespaces/volcano-system/configmaps"
    sel = {"fieldSelector": "metadata.name=volcano-scheduler-configmap"}
    items, rv = await kube.client.list(path, sel)
    assert [i["metadata"]["name"] for i in items] == ["volcano-scheduler-configmap"]
    seen: list[tuple[str, str]] = []

    async def watch() -> None:
        async for ev in kube.client.watch(path, {**sel, "resourceVersion": rv, "timeoutSeconds": 30}, timeout=30):
            seen.append((ev["type"], ev["object"]["metadata"]["name"]))
            if ev["object"]["metadata"]["name"] == "volcano-scheduler-configmap":
                return

    task = asyncio.ensure_future(watch())
    await kube.patch(f"{path}/other", {"data": {"x": "1"}})  # not selected: never delivered
    await kube.conf_map("actions: allocate")
    await asyncio.wait_for(task, 30)
    assert seen == [("MODIFIED", "volcano-scheduler-configmap")]


async def test_deletecollection_removes_what_the_selector_names(kube: Kube):
    for name, team in (("d0", "x"), ("d1", "x"), ("d2", "y")):
        p = pod(name)
        p["metadata"]["labels"] = {"team": team}
        await kube.create(p)
    await kube.client.request("DELETE", PODS, query={"labelSelector": "team=x", "gracePeriodSeconds": 0})
    names = await kube.eventually(lambda: _names_if(kube, 1), "the selected pods gone")
    assert names == ["d2"]


async def test_a_watch_with_bookmarks_gets_a_bookmark(kube: Kube):
    """The server sends a BOOKMARK to a watcher that allows them about 2 s before its timeout (or every
    minute): a short timeout makes one come soon. A bookmark carries only the kind and a resourceVersion.
    (v1.24's watch cache sends one only when it has dispatched an event newer than what the watcher started
    from: pods are made while the watch is open.)"""
    _, rv = await kube.client.list(PODS, {})

    async def churn() -> None:
        for i in range(40):
            await kube.create(pod(f"bm-{i}"))
            await asyncio.sleep(0.5)

    task = asyncio.ensure_future(churn())
    events = []
    try:
        async for ev in kube.client.watch(PODS, {"resourceVersion": rv, "allowWatchBookmarks": "true",
                                                 "timeoutSeconds": 5}, timeout=30):
            events.append(ev)
            if ev["type"] == "BOOKMARK":
                break
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    types = [e["type"] for e in events]
    assert types[-1] == "BOOKMARK" and set(types[:-1]) <= {"ADDED"}, types
    bookmark = events[-1]["object"]
    assert bookmark["kind"] == "Pod" and "name" not in bookmark["metadata"]
    assert int(bookmark["metadata"]["resourceVersion"]) >= int(events[0]["object"]["metadata"]["resourceVersion"])


async def test_a_watch_from_a_compacted_resource_version_is_gone(kube: Kube, control_plane: ControlPlane):
    """etcd compacted while the API server is down (its watch cache lost): a watch resumed from an older
    resourceVersion gets 410 Gone (HTTP 410, or an ERROR event with code 410), and must relist."""
    _, old_rv = await kube.client.list(PODS, {})
    for i in range(3):
        await kube.create(pod(f"gone-{i}"))
    await asyncio.to_thread(control_plane.restart_apiserver, between=control_plane.compact)
    assert control_plane.admin.kubeconfig is not None
    client = KubeClient(await load_configuration(str(control_plane.admin.kubeconfig)), user_agent="envtest-admin")
    try:
        status = None
        try:
            async for ev in client.watch(PODS, {"resourceVersion": old_rv, "timeoutSeconds": 10}, timeout=30):
                if ev["type"] == "ERROR":
                    status = ev["object"].get("code")
                    break
        except ApiError as e:
            status = e.status
        assert status == 410
        # a relist gives a fresh resourceVersion from which the watch is accepted
        items, rv = await client.list(PODS, {})
        assert sorted(i["metadata"]["name"] for i in items) == ["gone-0", "gone-1", "gone-2"]
        async for ev in client.watch(PODS, {"resourceVersion": rv, "timeoutSeconds": 1}, timeout=30):
            assert ev["type"] != "ERROR", ev
    finally:
        await client.close()


async def _names_if(kube: Kube, n: int) -> list[str] | None:
    names = sorted(p["metadata"]["name"] for p in await kube.list(PODS))
    return names if len(names) == n else None
