"""Dynamic Resource Allocation on the real-apiserver tier (issue 26), the four resource.k8s.io/v1 kinds
served from CRDs that stand in for a v1.34+ server (tests/envtest/dra_crds.py).

What v1.24 cannot carry: a pod's ``spec.resourceClaims``, its containers' ``resources.claims`` and
``status.resourceClaimStatuses`` (pruned on write, the fields arrived in 1.26).  The pod-level flow runs
here through pod_claims.py: the test keeps those fields in annotations and a reverse proxy between
vcsched and the server gives pods back to vcsched with the fields in place, as a v1.34 server holds
them; everything else is the real server's (RBAC as the chart's ClusterRole, watches, the claim's status
subresource, Bindings).  Here: vcsched lists and watches the four kinds; its PreBind writes a claim's
allocation and reservedFor through ``resourceclaims/status``, one consumer at a time for a shared claim,
and refuses to write over an allocation made meanwhile; a pod with a template claim (made by the test,
as kube-controller-manager's resourceclaim controller would: vcsched makes no claims) has it allocated
and reserved, then is bound; a gang is all-or-nothing; deleted pods free their devices; a claim the API
server would refuse is an event on its pod while the loop runs on.  The same flows against the API
emulator, with the order of the writes checked: tests/kube/test_dra.py."""

from __future__ import annotations

import asyncio
import json

import pytest
import pytest_asyncio

from vcsched.cache import Cache
from vcsched.framework.effects import Bind, ClaimStatus
from vcsched.kube.api import KubeClient, load_configuration
from vcsched.kube.sink import ClaimChanged, KubeSink
from vcsched.kube.source import CacheFeeder

from . import dra_crds
from .conftest import USER, forbidden_lines, pod, podgroup
from .pod_claims import STATUS, PodClaimsProxy, claim_fields, kubeconfig

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


# -- the pod-level flow, through the proxy that gives pods their claim fields (pod_claims.py), under the
# -- default conf -----------------------------------------------------------------------------------------

A100 = f"device.attributes['{DRIVER}'].model == 'a100'"


@pytest_asyncio.fixture(autouse=True)
async def no_dra_objects_left(kube):
    """The DRA objects a test made are gone after it (the tier's reset knows only the kinds v1.24
    serves): a later test reading the live cluster (simulate --kubeconfig) must not find them."""
    yield
    await dra_crds.empty(kube)


@pytest_asyncio.fixture
async def via_proxy(control_plane, tmp_path):
    """A kubeconfig of the vcsched user that reaches the API server through the pod-claims proxy."""
    proxy = PodClaimsProxy(control_plane.url, control_plane.workdir / "ca.crt")
    base = await proxy.start()
    yield kubeconfig(base, control_plane.accounts[USER].token, tmp_path / "proxy.kubeconfig")
    await proxy.stop()


async def dra_create(kube, obj: dict) -> dict:
    plural = {kind: plural for kind, plural, _, _ in dra_crds.KINDS}[obj["kind"]]
    return await kube.client.request("POST", dra_crds.path(plural, obj["metadata"].get("namespace")), body=obj)


async def dra_scene(kube, models: list[str]) -> None:
    await dra_crds.install(kube)
    await dra_crds.empty(kube)
    await kube.node("n1", cpu="16", memory="64Gi")
    await dra_create(kube, {"apiVersion": f"{dra_crds.GROUP}/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
                       "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]}})
    await dra_create(kube, {"apiVersion": f"{dra_crds.GROUP}/v1", "kind": "ResourceSlice", "metadata": {"name": "n1-gpus"},
                       "spec": {"driver": DRIVER, "nodeName": "n1",
                                "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                                "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": m}}}
                                            for i, m in enumerate(models)]}})
    await template(kube, "two-a100", A100)


async def template(kube, name: str, selector: str) -> None:
    await dra_create(kube, {"apiVersion": f"{dra_crds.GROUP}/v1", "kind": "ResourceClaimTemplate",
                       "metadata": {"name": name, "namespace": "default"},
                       "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                           "deviceClassName": DRIVER, "count": 2, "allocationMode": "ExactCount",
                           "selectors": [{"cel": {"expression": selector}}]}}]}}}})


async def claim_pod(kube, name: str, group: str, tmpl: str = "two-a100") -> dict:
    """The pod asking its template's claim, then the claim made from the template and recorded in the
    pod's status, as the resourceclaim controller does."""
    p = pod(name, group=group)
    p["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": tmpl}]
    p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpus"}]
    created = await kube.create(claim_fields(p))
    t = await kube.get(dra_crds.path("resourceclaimtemplates", "default", tmpl))
    claim_name = f"{name}-gpus-abcde"
    await dra_create(kube, {"apiVersion": f"{dra_crds.GROUP}/v1", "kind": "ResourceClaim",
                       "metadata": {"name": claim_name, "namespace": "default",
                                    "annotations": {"resource.kubernetes.io/pod-claim-name": "gpus"},
                                    "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": name,
                                                         "uid": created["metadata"]["uid"], "controller": True,
                                                         "blockOwnerDeletion": True}]},
                       "spec": t["spec"]["spec"]})
    await kube.patch(f"/api/v1/namespaces/default/pods/{name}", {"metadata": {"annotations": {
        STATUS: json.dumps([{"name": "gpus", "resourceClaimName": claim_name}])}}})
    return created


async def claim_of(kube, pod_name: str) -> dict:
    return await kube.get(dra_crds.path("resourceclaims", "default", f"{pod_name}-gpus-abcde"))


def devices(claim: dict) -> list[str]:
    return [r["device"] for r in ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", [])]


async def test_a_template_claim_is_allocated_and_reserved_then_the_pod_bound(kube, vcsched, via_proxy):
    await dra_scene(kube, ["h100", "a100", "a100", "a100"])
    await kube.create(podgroup("pg-a", 1))
    created = await claim_pod(kube, "a", "pg-a")
    p = vcsched.start(kubeconfig=via_proxy)
    bound = await kube.eventually(lambda: kube.bound("default", "a"), "pod a bound")
    assert bound["spec"]["nodeName"] == "n1"
    claim = await claim_of(kube, "a")
    assert devices(claim) == ["gpu-1", "gpu-2"]  # the selector's devices, in the pool's order
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "a", "uid": created["metadata"]["uid"]}]
    assert claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["n1"]
    assert len(await kube.list(dra_crds.path("resourceclaims", "default"))) == 1  # vcsched made no claim
    assert forbidden_lines(p) == []


async def test_a_gang_is_all_or_nothing_and_deleted_pods_free_their_devices(kube, vcsched, via_proxy):
    await dra_scene(kube, ["a100"] * 4)
    await kube.create(podgroup("gang", 3))
    for name in ("w0", "w1", "w2"):
        await claim_pod(kube, name, "gang")
    vcsched.start(kubeconfig=via_proxy)
    # a pair that fits (two pods of 2 GPUs) is placed: sessions ran while the gang of 3 x 2 waited
    await kube.create(podgroup("pair", 2))
    for name in ("p0", "p1"):
        await claim_pod(kube, name, "pair")
    await kube.eventually(lambda: kube.bound("default", "p1"), "the pair bound")
    await kube.eventually(lambda: kube.bound("default", "p0"), "the pair bound")
    assert sorted([d for n in ("p0", "p1") for d in devices(await claim_of(kube, n))]) == [
        "gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    for name in ("w0", "w1", "w2"):  # 4 GPUs for 3 x 2: no member placed, no claim of theirs allocated
        assert not (await kube.pod("default", name))["spec"].get("nodeName")
        assert not devices(await claim_of(kube, name))
    # the pair's pods are deleted; the resourceclaim controller (the test) deletes their claims
    for name in ("p0", "p1"):
        await kube.delete(f"/api/v1/namespaces/default/pods/{name}")
        await kube.delete(dra_crds.path("resourceclaims", "default", f"{name}-gpus-abcde"))
    await kube.delete("/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups/pair")
    # the gang still needs 6 GPUs of 4: it waits; one more pod with a claim of its own takes two
    await kube.create(podgroup("solo", 1))
    await claim_pod(kube, "solo", "solo")
    await kube.eventually(lambda: kube.bound("default", "solo"), "solo bound on the freed devices")
    assert len(devices(await claim_of(kube, "solo"))) == 2
    assert not any([(await kube.pod("default", n))["spec"].get("nodeName") for n in ("w0", "w1", "w2")])


async def test_a_claim_the_api_server_would_refuse_is_an_event_on_its_pod(kube, vcsched, via_proxy):
    await dra_scene(kube, ["a100", "a100"])
    await template(kube, "broken", "device.driver ==")  # no CEL the API server would take
    await kube.create(podgroup("pg-bad", 1))
    await claim_pod(kube, "bad", "pg-bad", tmpl="broken")
    await kube.create(podgroup("pg-good", 1))
    await claim_pod(kube, "good", "pg-good")
    p = vcsched.start(kubeconfig=via_proxy)
    await kube.eventually(lambda: kube.bound("default", "good"), "the good pod bound: the loop ran on")
    told = await kube.eventually(lambda: kube.events("default", reason="InvalidResourceClaim", name="bad"),
                                 "an event on the pod")
    message = told[0]["message"]
    assert "bad-gpus-abcde is invalid" in message
    assert "spec.devices.requests[0].exactly.selectors[0].cel.expression" in message
    assert not (await kube.pod("default", "bad"))["spec"].get("nodeName")
    assert p.alive()
