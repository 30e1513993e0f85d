"""Bare pods on the real API server: ``vcsched run`` as shipped gives each its PodGroup and binds it."""

from __future__ import annotations

import pytest

from .conftest import Kube, VcschedRunner, queue_allocated

pytestmark = pytest.mark.asyncio


def bare_pod(name: str, cpu: str = "1", ns: str = "default") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"schedulerName": "volcano", "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}}


async def test_bare_pod_gets_its_podgroup_and_is_bound(kube: Kube, vcsched: VcschedRunner):
    await kube.node("n0")
    pod = await kube.create(bare_pod("p0"))
    vcsched.start()
    bound = await kube.eventually(lambda: _bound(kube, "default", "p0"), "p0 bound")
    assert bound["spec"]["nodeName"] == "n0"
    pg_name = f"podgroup-{pod['metadata']['uid']}"
    assert bound["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == pg_name
    pg = await kube.get(f"/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups/{pg_name}")
    assert pg is not None and pg["spec"]["minMember"] == 1 and pg["spec"]["queue"] == "default"
    assert pg["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
    await kube.eventually(lambda: _phase(kube, "default", pg_name, "Running"), "PodGroup Running")


async def _bound(kube: Kube, ns: str, name: str) -> dict | None:
    pod = await kube.get(f"/api/v1/namespaces/{ns}/pods/{name}")
    return pod if pod and pod["spec"].get("nodeName") else None


async def _phase(kube: Kube, ns: str, name: str, phase: str) -> bool:
    pg = await kube.get(f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups/{name}")
    return bool(pg) and (pg.get("status") or {}).get("phase") == phase


async def test_several_bare_pods_across_namespaces_and_queues(kube: Kube, vcsched: VcschedRunner):
    """Each pod its own PodGroup in its own namespace; the queue annotation names the PodGroup's queue."""
    from .conftest import queue

    await kube.node("n0")
    await kube.node("n1")
    await kube.create(queue("research"))
    pods = [await kube.create(bare_pod("a0")), await kube.create(bare_pod("a1")),
            await kube.create(bare_pod("b0", ns="team-a"))]
    research = bare_pod("r0", ns="team-b")
    research["metadata"]["annotations"] = {"scheduling.volcano.sh/queue-name": "research"}
    pods.append(await kube.create(research))
    vcsched.start()
    for p in pods:
        ns, name, uid = p["metadata"]["namespace"], p["metadata"]["name"], p["metadata"]["uid"]
        bound = await kube.eventually(lambda: _bound(kube, ns, name), f"{ns}/{name} bound")
        assert bound["spec"]["nodeName"] in ("n0", "n1")
        pg = await kube.get(f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups/podgroup-{uid}")
        assert pg is not None and pg["spec"]["minMember"] == 1
        assert pg["spec"]["queue"] == ("research" if name == "r0" else "default")
        assert pg["spec"]["minResources"]["cpu"] == "1"
    # the queue's status counts what runs in it (written through queues/status)
    await kube.eventually(lambda: queue_allocated(kube, "research", "1"), "research's status.allocated cpu 1")
    # a Scheduled event per pod, from component volcano
    for p in pods:
        ns, name = p["metadata"]["namespace"], p["metadata"]["name"]
        ev = await kube.eventually(lambda: kube.events(ns, reason="Scheduled", name=name), f"{name} Scheduled")
        assert ev[0]["source"]["component"] == "volcano" and ev[0]["type"] == "Normal"
        assert ev[0]["message"].startswith(f"Successfully assigned {ns}/{name} to ")


def _pod_patches(kube: Kube) -> int:
    """PATCHes of pods (not their status) the API server has answered."""
    return sum(n for (_, _, sub, _), n in kube.cp.request_counts(verb="PATCH", resource="pods").items() if not sub)


async def test_a_bound_bare_pod_gets_its_group_annotation_with_its_binding(kube: Kube, vcsched: VcschedRunner):
    """The podgroup controller hands the pod's group to the scheduler in the same process: the
    annotation Volcano's controller PATCHes goes out inside the Binding instead (one write less)."""
    # room for the four pods however their cycles fall: each pod starts a cycle of its own (4432cac), often
    # while the previous one's Binding is in flight, and overcommit (as Volcano's) counts such a pod twice,
    # on its node and in its still-Inqueue group's minResources; on a 4-CPU node the fourth pod was then
    # refused for that cycle ("resource in cluster is overused") and PATCHed. 8 CPUs: 3 used + 3 + 1 Inqueue
    # fit under 8 x 1.2
    await kube.node("n0", cpu="8")
    vcsched.start()
    # pods that come before the scheduler runs sessions (its caches not synced, or the default queue
    # not open yet) are passed by, and PATCHed: a marker pod bound first shows sessions are running
    await kube.eventually(lambda: _open(kube, "default"), "the default queue open")
    await kube.create(bare_pod("marker"))
    await kube.eventually(lambda: _bound(kube, "default", "marker"), "the marker bound")
    before = _pod_patches(kube)
    pods = [await kube.create(bare_pod(f"p{i}")) for i in range(3)]
    for p in pods:
        name, uid = p["metadata"]["name"], p["metadata"]["uid"]
        bound = await kube.eventually(lambda: _bound(kube, "default", name), f"{name} bound")
        assert bound["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == f"podgroup-{uid}"
    assert _pod_patches(kube) == before


async def test_a_bare_pod_that_fits_nowhere_still_gets_its_group_annotation(kube: Kube, vcsched: VcschedRunner):
    """Passed by a session, the pod gets the controller's PATCH: what Volcano's controller writes at once."""
    await kube.node("n0")
    pod = await kube.create(bare_pod("huge", cpu="64"))
    vcsched.start()
    pg_name = f"podgroup-{pod['metadata']['uid']}"

    async def annotated() -> dict | None:
        p = await kube.get("/api/v1/namespaces/default/pods/huge")
        return p if p and (p["metadata"].get("annotations") or {}).get("scheduling.k8s.io/group-name") else None

    p = await kube.eventually(annotated, "huge annotated")
    assert p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == pg_name
    assert not p["spec"].get("nodeName")
    cond = await kube.eventually(lambda: _unschedulable(kube, "huge"), "huge PodScheduled=False")
    assert cond["reason"] == "Unschedulable"


async def _open(kube: Kube, name: str) -> bool:
    q = await kube.get(f"/apis/scheduling.volcano.sh/v1beta1/queues/{name}")
    return bool(q) and (q.get("status") or {}).get("state") == "Open"


async def _unschedulable(kube: Kube, name: str) -> dict | None:
    p = await kube.get(f"/api/v1/namespaces/default/pods/{name}")
    cond = next((c for c in ((p or {}).get("status") or {}).get("conditions") or [] if c["type"] == "PodScheduled"), None)
    return cond if cond and cond["status"] == "False" else None
