"""Dynamic Resource Allocation in Kubernetes mode against the API emulator (issue 26).

The real-apiserver tier (v1.24) prunes a pod's ``spec.resourceClaims`` and
``status.resourceClaimStatuses`` (the fields arrived in 1.26), so the pod-level flow runs here, where
objects are stored as sent: vcsched watches the four resource.k8s.io kinds, allocates a template claim
that the test made and recorded in the pod's status as kube-controller-manager's resourceclaim
controller would (vcsched makes no claims in Kubernetes mode), writes the claim's ``status.allocation``
and ``status.reservedFor`` through ``resourceclaims/status`` before the Binding, keeps a gang
all-or-nothing, and uses devices again once the controller (the test) deallocated the claims of deleted
pods.  A claim the API server would refuse is an event on its pod, and the loop runs on."""

from __future__ import annotations

import pytest

from .conftest import cluster, conf_map, eventually, node, pod, podgroup

pytestmark = pytest.mark.asyncio

DRIVER = "gpu.example.com"
CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
"""
A100 = f"device.attributes['{DRIVER}'].model == 'a100'"


def device_class() -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
            "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]}}


def gpus(node_name: str, models: list[str]) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node_name}-gpus"},
            "spec": {"driver": DRIVER, "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": m}}}
                                 for i, m in enumerate(models)]}}


def template(name: str = "two-a100", selector: str = A100) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": DRIVER, "count": 2, "allocationMode": "ExactCount",
                "selectors": [{"cel": {"expression": selector}}]}}]}}}}


def claim_pod(api, name: str, group: str, tmpl: str = "two-a100") -> dict:
    """The pod, then its claim made from the template and recorded in its status, as the resourceclaim
    controller does."""
    p = pod(name, group)
    p["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": tmpl}]
    p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpus"}]
    created = api.put(p)
    t = api.get("resource.k8s.io", "resourceclaimtemplates", "default", tmpl)
    claim_name = f"{name}-gpus-abcde"
    api.put({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": claim_name, "namespace": "default",
                          "annotations": {"resource.kubernetes.io/pod-claim-name": "gpus"},
                          "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": name,
                                               "uid": created["metadata"]["uid"], "controller": True,
                                               "blockOwnerDeletion": True}]},
             "spec": t["spec"]["spec"]})
    api.update("", "pods", "default", name, {"status": {"resourceClaimStatuses": [
        {"name": "gpus", "resourceClaimName": claim_name}]}})
    return created


def claim_of(api, pod_name: str) -> dict:
    return api.get("resource.k8s.io", "resourceclaims", "default", f"{pod_name}-gpus-abcde")


def devices(claim: dict) -> list[str]:
    return [r["device"] for r in ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", [])]


def scene(api, *, models: list[str]) -> None:
    cluster(api, nodes=0)
    api.put(node("n1", cpu="16", memory="64Gi"))
    api.put(conf_map(CONF))
    api.put(device_class())
    api.put(gpus("n1", models))
    api.put(template())


async def test_a_template_claim_is_allocated_and_reserved_before_the_pod_is_bound(api, start):
    scene(api, models=["h100", "a100", "a100", "a100"])
    api.put(podgroup("pg-a"))
    claim_pod(api, "a", "pg-a")
    await start()
    await eventually(lambda: api.bindings, "pod bound")
    assert api.bindings == [("default", "a", "n1")]
    claim = claim_of(api, "a")
    assert devices(claim) == ["gpu-1", "gpu-2"]  # the selector's devices, in the pool's order
    assert claim["status"]["reservedFor"] == [
        {"resource": "pods", "name": "a", "uid": api.get("", "pods", "default", "a")["metadata"]["uid"]}]
    assert claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["n1"]
    # the claim's status went out through resourceclaims/status, before the Binding
    writes = [(r.resource.plural, r.subresource) for r in api.requests if r.method.value in ("PUT", "POST", "PATCH")
              and r.resource is not None and r.resource.plural in ("resourceclaims", "pods")
              and r.subresource in ("status", "binding")]
    assert writes.index(("resourceclaims", "status")) < writes.index(("pods", "binding"))
    # vcsched made no claim of its own
    assert len(api.all("resource.k8s.io", "resourceclaims")) == 1


async def test_a_gang_is_all_or_nothing_and_deleted_pods_free_their_devices(api, start):
    scene(api, models=["a100"] * 4)
    api.put(podgroup("gang", min_member=3))
    for name in ("w0", "w1", "w2"):
        claim_pod(api, name, "gang")
    rt = await start()
    first = rt.sessions
    await eventually(lambda: rt.sessions >= first + 3, "sessions")
    assert api.bindings == []  # 4 GPUs for 3 × 2: none is placed, no claim allocated
    assert all(not (c.get("status") or {}).get("allocation") for c in api.all("resource.k8s.io", "resourceclaims"))
    # a smaller gang fits: two pods of 2 GPUs each
    api.put(podgroup("pair", min_member=2))
    for name in ("p0", "p1"):
        claim_pod(api, name, "pair")
    await eventually(lambda: len(api.bindings) == 2, "the pair bound")
    assert sorted(d for n in ("p0", "p1") for d in devices(claim_of(api, n))) == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    # the pair's pods are deleted; the resourceclaim controller (the test) deletes their claims
    for name in ("p0", "p1"):
        api.remove("", "pods", "default", name)
        api.remove("resource.k8s.io", "resourceclaims", "default", f"{name}-gpus-abcde")
    api.remove("scheduling.volcano.sh", "podgroups", "default", "pair")
    # the gang still needs 6 GPUs of 4: its pods wait; one more pod with a claim of its own takes two
    api.put(podgroup("solo"))
    claim_pod(api, "solo", "solo")
    await eventually(lambda: ("default", "solo", "n1") in api.bindings, "solo bound on the freed devices")
    assert len(devices(claim_of(api, "solo"))) == 2


async def test_a_claim_the_api_server_would_refuse_is_an_event_on_its_pod(api, start):
    scene(api, models=["a100", "a100"])
    api.put(template("broken", selector="device.driver =="))  # no CEL the API server would take
    api.put(podgroup("pg-bad"))
    claim_pod(api, "bad", "pg-bad", tmpl="broken")
    api.put(podgroup("pg-good"))
    claim_pod(api, "good", "pg-good")
    await start()
    await eventually(lambda: ("default", "good", "n1") in api.bindings, "the good pod bound: the loop ran on")

    def told():
        return [e for e in api.all("", "events") if e["involvedObject"].get("name") == "bad"
                and e["reason"] == "InvalidResourceClaim"]

    await eventually(told, "an event on the pod")
    message = told()[0]["message"]
    assert "bad-gpus-abcde is invalid" in message and "spec.devices.requests[0].exactly.selectors[0].cel.expression" in message
    assert ("default", "bad", "n1") not in api.bindings
