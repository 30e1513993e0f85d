"""Bare pods on the real API server: ``vcsched run`` as shipped gives each its PodGroup and binds it."""

from __future__ import annotations

import pytest

from .conftest import Kube, VcschedRunner

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
    q = await kube.eventually(lambda: _allocated(kube, "research"), "research's status.allocated")
    assert q["status"]["allocated"]["cpu"] == "1"
    # a Scheduled event per pod, from component volcano
    for p in pods:
        ns, name = p["metadata"]["namespace"], p["metadata"]["name"]
        ev = await kube.eventually(lambda: kube.events(ns, reason="Scheduled", name=name), f"{name} Scheduled")
        assert ev[0]["source"]["component"] == "volcano" and ev[0]["type"] == "Normal"
        assert ev[0]["message"].startswith(f"Successfully assigned {ns}/{name} to ")


async def _allocated(kube: Kube, name: str) -> dict | None:
    q = await kube.get(f"/apis/scheduling.volcano.sh/v1beta1/queues/{name}")
    return q if q and ((q.get("status") or {}).get("allocated") or {}).get("cpu") else None
