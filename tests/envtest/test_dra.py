"""Dynamic Resource Allocation on the real-apiserver tier (issue 26), the four resource.k8s.io/v1 kinds
served from CRDs that stand in for a v1.34+ server (tests/envtest/dra_crds.py).

What v1.24 cannot carry: a pod's ``spec.resourceClaims`` and ``status.resourceClaimStatuses`` (pruned on
write, the fields arrived in 1.26), so the pod-level flow (a template claim allocated, reserved and the
pod bound; a gang all-or-nothing; deleted pods freeing devices; an event for a claim the server would
refuse) runs against the API emulator (tests/kube/test_dra.py).  Here, on the real server, as the chart's
ClusterRole allows: vcsched lists and watches the four kinds, and its PreBind writes a claim's
allocation and reservedFor through ``resourceclaims/status``, one consumer at a time for a shared claim,
and refuses to write over an allocation made meanwhile."""

from __future__ import annotations

import asyncio

import pytest

from vcsched.cache import Cache
from vcsched.framework.effects import Bind, ClaimStatus
from vcsched.kube.api import KubeClient, load_configuration
from vcsched.kube.sink import ClaimChanged, KubeSink
from vcsched.kube.source import CacheFeeder

from . import dra_crds
from .conftest import USER, forbidden_lines

pytestmark = pytest.mark.asyncio

DRIVER = "gpu.example.com"
ALLOCATION = {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]},
              "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                  {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}


def claim(name: str) -> dict:
    return {"apiVersion": f"{dra_crds.GROUP}/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER, "count": 1,
                                                                           "allocationMode": "ExactCount"}}]}}}


async def test_the_four_kinds_are_watched_under_the_charts_role(kube, vcsched):
    await dra_crds.install(kube)
    await dra_crds.empty(kube)
    p = vcsched.start(verbose=True)
    await kube.client.request("POST", dra_crds.path("deviceclasses"), body={
        "apiVersion": f"{dra_crds.GROUP}/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]}})
    await kube.client.request("POST", dra_crds.path("resourceclaims", "default"), body=claim("c1"))

    def listed() -> set[str]:
        return {r.get("resource") for r in p.logged("listed")}

    await kube.eventually(lambda: {"deviceclasses", "resourceslices", "resourceclaims",
                                   "resourceclaimtemplates"} <= listed(), "the four kinds listed")
    await asyncio.sleep(0.5)
    assert p.alive()
    assert forbidden_lines(p) == []
    await dra_crds.empty(kube)


async def test_prebind_writes_allocation_and_reservations_through_the_status_subresource(kube, control_plane):
    await dra_crds.install(kube)
    await dra_crds.empty(kube)
    made = await kube.client.request("POST", dra_crds.path("resourceclaims", "default"), body=claim("shared"))
    uid = made["metadata"]["uid"]
    # vcsched's own client, as the chart's ClusterRole allows it
    client = KubeClient(await load_configuration(str(control_plane.accounts[USER].kubeconfig)), user_agent="vcsched")
    try:
        feeder = CacheFeeder(Cache())
        sink = KubeSink(client, feeder, scheduler_name="volcano")
        first = Bind("default", "p1", "uid-p1", "n1", claims=(ClaimStatus(
            "default", "shared", uid, made["metadata"]["resourceVersion"], ALLOCATION,
            ({"resource": "pods", "name": "p1", "uid": "uid-p1"},)),))
        second = Bind("default", "p2", "uid-p2", "n1", claims=(ClaimStatus(
            "default", "shared", uid, made["metadata"]["resourceVersion"], ALLOCATION,
            ({"resource": "pods", "name": "p1", "uid": "uid-p1"}, {"resource": "pods", "name": "p2", "uid": "uid-p2"})),))
        # two binds of a shared claim at once: each reads the claim as the server holds it, one at a time
        await asyncio.gather(sink._write_claims(first), sink._write_claims(second))
        stored = await kube.get(dra_crds.path("resourceclaims", "default", "shared"))
        assert stored["status"]["allocation"] == ALLOCATION
        assert sorted(r["name"] for r in stored["status"]["reservedFor"]) == ["p1", "p2"]
        # the cache holds what the server answered
        assert feeder.cache.dra.claims["default/shared"].allocation.node == "n1"
        # an allocation the session did not see is not written over
        other = dict(ALLOCATION, devices={"results": [dict(ALLOCATION["devices"]["results"][0], device="gpu-1")]})
        third = Bind("default", "p3", "uid-p3", "n1", claims=(ClaimStatus(
            "default", "shared", uid, "0", other, ({"resource": "pods", "name": "p3", "uid": "uid-p3"},)),))
        with pytest.raises(ClaimChanged):
            await sink._write_claims(third)
        # a claim deleted and made again under its name is not the claim the session saw
        await kube.delete(dra_crds.path("resourceclaims", "default", "shared"))
        await kube.client.request("POST", dra_crds.path("resourceclaims", "default"), body=claim("shared"))
        with pytest.raises(ClaimChanged):
            await sink._write_claims(first)
    finally:
        await client.close()
        await dra_crds.empty(kube)
