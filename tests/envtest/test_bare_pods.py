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
