"""Dynamic Resource Allocation end to end through ``vcsched simulate`` (issue 26): the four
resource.k8s.io/v1 kinds as input, template claims made as the resourceclaim controller makes them,
allocation as kube-scheduler's structured allocator does it (plugins/dynamicresources.py,
api/dra_allocator.py), and the API server's refusals as exit 2."""

import re

from .conftest import node, podgroup
from .dra_fixtures import (
    DRIVER,
    claim,
    claim_pod,
    claim_spec,
    device_class,
    devices_of,
    exact,
    gpu,
    gpu_node,
    pod_claim,
    resource_slice,
    template,
)

A100 = f"device.attributes['{DRIVER}'].model == 'a100'"


def test_template_claims_are_made_named_and_allocated_with_the_selector(simulate):
    manifests = (device_class(DRIVER, f"device.driver == '{DRIVER}'")
                 + gpu_node("n1", 3, models=["a100", "h100", "a100"])
                 + template("two-a100", claim_spec([{"name": "gpu", "exactly": exact(count=2, selectors=(A100,))}]))
                 + claim_pod("p1", {"gpus": ("template", "two-a100")})
                 + claim_pod("p2", {"gpus": ("template", "two-a100")}))
    code, out = simulate(manifests)
    assert code == 0, out
    made = pod_claim(out, "default/p1", "gpus")
    # <pod>-<claim name in the pod>-<five characters of the API server's alphabet>
    assert re.fullmatch(r"default/p1-gpus-[bcdfghjklmnpqrstvwxz2456789]{5}", made)
    assert out["pods"]["default/p1"]["node"] == "n1"
    assert devices_of(out, made) == ["gpu-0", "gpu-2"]  # the selector skips the h100
    assert out["claims"][made]["reservedFor"] == ["default/p1"]
    assert out["claims"][made]["allocated"] is True
    # devices of another claim are never reused: p2 waits
    other = pod_claim(out, "default/p2", "gpus")
    assert out["pods"]["default/p2"]["node"] is None
    assert out["pods"]["default/p2"]["reason"] == "0/1 nodes are unavailable: 1 cannot allocate all claims."
    assert out["claims"][other] == {"allocated": False, "devices": [], "reservedFor": []}


def test_a_pod_waits_for_a_missing_claim_and_a_missing_class(simulate):
    manifests = (gpu_node("n1", 2)
                 + claim("c1", claim_spec([{"name": "gpu", "exactly": exact()}]))
                 + claim_pod("p1", {"gpu": ("claim", "c1")})
                 + claim_pod("p2", {"gpu": ("claim", "nope")}))
    code, out = simulate(manifests)
    assert code == 0
    assert "device class gpu.example.com does not exist" in out["pods"]["default/p1"]["reason"]
    assert 'resourceclaim.resource.k8s.io "nope" not found' in out["pods"]["default/p2"]["reason"]


def test_first_available_takes_the_first_subrequest_that_fits(simulate):
    first = {"name": "gpu", "firstAvailable": [
        {"name": "big", **exact(count=4)},
        {"name": "small", **exact(count=1, selectors=(A100,))},
    ]}
    manifests = (device_class() + gpu_node("n1", 2, models=["h100", "a100"]) + claim("c1", claim_spec([first]))
                 + claim_pod("p1", {"gpu": ("claim", "c1")}))
    code, out = simulate(manifests)
    assert code == 0, out
    assert out["claims"]["default/c1"]["devices"] == [
        {"request": "gpu/small", "driver": DRIVER, "pool": "n1", "device": "gpu-1"}]


def test_allocation_mode_all_needs_every_matching_device_free(simulate):
    manifests = (device_class() + gpu_node("n1", 3)
                 + claim("all", claim_spec([{"name": "gpu", "exactly": exact(allocationMode="All")}]))
                 + claim_pod("p1", {"gpu": ("claim", "all")}))
    code, out = simulate(manifests)
    assert code == 0
    assert devices_of(out, "default/all") == ["gpu-0", "gpu-1", "gpu-2"]
    # one of them held by another claim: All cannot be satisfied
    held = claim("held", claim_spec([{"name": "gpu", "exactly": exact()}]), status={
        "allocation": {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-1"}]}}})
    code, out = simulate(manifests + held)
    assert code == 0
    assert out["pods"]["default/p1"]["node"] is None
    assert "cannot allocate all claims" in out["pods"]["default/p1"]["reason"]


def test_match_attribute_keeps_a_claims_devices_on_one_numa_node(simulate):
    numa = [{"numa": {"int": 0}}, {"numa": {"int": 1}}, {"numa": {"int": 1}}]
    constraint = [{"matchAttribute": f"{DRIVER}/numa"}]
    manifests = (device_class() + gpu_node("n1", 3, attrs=numa)
                 + claim("c1", claim_spec([{"name": "a", "exactly": exact()}, {"name": "b", "exactly": exact()}],
                                          constraint))
                 + claim_pod("p1", {"gpu": ("claim", "c1")}))
    code, out = simulate(manifests)
    assert code == 0, out
    # gpu-0 (numa 0) alone cannot pair: the search backtracks to gpu-1 and gpu-2
    assert devices_of(out, "default/c1") == ["gpu-1", "gpu-2"]


def test_consumable_capacity_shares_one_device_within_its_memory(simulate):
    shared = gpu("gpu-0", memory="40Gi", extra='{"allowMultipleAllocations": true}')
    ask = {"name": "gpu", "exactly": exact(capacity={"requests": {"memory": "16Gi"}})}
    manifests = (device_class() + node("n1", cpu="8") + resource_slice("n1-gpus", "n1", [shared])
                 + "".join(claim(f"c{i}", claim_spec([ask])) + claim_pod(f"p{i}", {"gpu": ("claim", f"c{i}")})
                           for i in range(3)))
    code, out = simulate(manifests)
    assert code == 0, out
    placed = sorted(k for k, p in out["pods"].items() if p["node"])
    assert placed == ["default/p0", "default/p1"]  # 2 × 16Gi fit in 40Gi, a third does not
    d0 = out["claims"]["default/c0"]["devices"][0]
    assert d0["consumedCapacity"] == {"memory": "16Gi"} and d0["shareID"]
    assert d0["shareID"] != out["claims"]["default/c1"]["devices"][0]["shareID"]


def test_device_taints_keep_out_requests_that_do_not_tolerate_them(simulate):
    tainted = gpu("gpu-0", extra='{"taints": [{"key": "broken", "value": "yes", "effect": "NoSchedule"}]}')
    manifests = (device_class() + node("n1") + resource_slice("n1-gpus", "n1", [tainted])
                 + claim("plain", claim_spec([{"name": "gpu", "exactly": exact()}]))
                 + claim_pod("p1", {"gpu": ("claim", "plain")}))
    code, out = simulate(manifests)
    assert code == 0
    assert out["pods"]["default/p1"]["node"] is None
    tolerant = claim("tolerant", claim_spec([{"name": "gpu", "exactly": exact(
        tolerations=[{"key": "broken", "operator": "Exists", "effect": "NoSchedule"}])}]))
    code, out = simulate(manifests.replace('"plain"', '"tolerant"').split("\n---\n{\"apiVersion\": \"resource.k8s.io/v1\", \"kind\": \"ResourceClaim\"")[0]
                         + tolerant + claim_pod("p1", {"gpu": ("claim", "tolerant")}))
    assert code == 0, out
    assert devices_of(out, "default/tolerant") == ["gpu-0"]
    assert out["claims"]["default/tolerant"]["allocated"]


def test_admin_access_may_use_a_device_another_claim_holds(simulate):
    held = claim("held", claim_spec([{"name": "gpu", "exactly": exact()}]), status={
        "allocation": {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]}}})
    admin = claim("admin", claim_spec([{"name": "gpu", "exactly": exact(adminAccess=True)}]))
    user = claim("user", claim_spec([{"name": "gpu", "exactly": exact()}]))
    manifests = (device_class() + gpu_node("n1", 1) + held + admin + user
                 + claim_pod("monitor", {"gpu": ("claim", "admin")}) + claim_pod("worker", {"gpu": ("claim", "user")}))
    code, out = simulate(manifests)
    assert code == 0, out
    assert out["claims"]["default/admin"]["devices"] == [
        {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0", "adminAccess": True}]
    assert out["pods"]["default/worker"]["node"] is None


def test_partitionable_devices_share_the_counters_of_their_card(simulate):
    counters = {"sharedCounters": [{"name": "card0", "counters": {"memory": {"value": "40Gi"}}}]}

    def part(name: str, memory: str) -> dict:
        return {"name": name, "attributes": {"profile": {"string": name}}, "capacity": {"memory": {"value": memory}},
                "consumesCounters": [{"counterSet": "card0", "counters": {"memory": {"value": memory}}}]}

    devices = [part("whole", "40Gi"), part("half-0", "20Gi"), part("half-1", "20Gi")]
    half = f"device.attributes['{DRIVER}'].profile.startsWith('half')"
    manifests = (device_class() + node("n1") + resource_slice("n1-gpus", "n1", devices, spec_extra=counters)
                 + claim("half", claim_spec([{"name": "gpu", "exactly": exact(selectors=(half,))}]))
                 + claim("whole", claim_spec([{"name": "gpu", "exactly": exact(
                     selectors=(f"device.attributes['{DRIVER}'].profile == 'whole'",))}]))
                 + claim_pod("a", {"gpu": ("claim", "half")}) + claim_pod("b", {"gpu": ("claim", "whole")}))
    code, out = simulate(manifests)
    assert code == 0, out
    assert devices_of(out, "default/half") == ["half-0"]
    # half of the card's memory is taken: the whole card no longer fits its counters
    assert out["pods"]["default/b"]["node"] is None


def test_a_shared_claim_is_allocated_once_and_reserved_for_each_pod(simulate):
    manifests = (device_class() + gpu_node("n1", 1, cpu="2") + gpu_node("n2", 1, cpu="2")
                 + claim("shared", claim_spec([{"name": "gpu", "exactly": exact()}]))
                 + claim_pod("p1", {"gpu": ("claim", "shared")}, cpu="1")
                 + claim_pod("p2", {"gpu": ("claim", "shared")}, cpu="1"))
    code, out = simulate(manifests)
    assert code == 0, out
    nodes = {out["pods"][k]["node"] for k in ("default/p1", "default/p2")}
    assert len(nodes) == 1  # the claim's node selector brings the second pod where the first went
    assert out["claims"]["default/shared"]["reservedFor"] == ["default/p1", "default/p2"]
    assert len(out["claims"]["default/shared"]["devices"]) == 1


def test_an_allocated_claim_is_honoured_and_its_device_never_reused(simulate):
    pinned = claim("pinned", claim_spec([{"name": "gpu", "exactly": exact()}]), status={
        "allocation": {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n2", "device": "gpu-0"}]},
                       "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                           {"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}}})
    manifests = (device_class() + gpu_node("n1", 1) + gpu_node("n2", 1) + pinned
                 + claim("free", claim_spec([{"name": "gpu", "exactly": exact()}]))
                 + claim_pod("p1", {"gpu": ("claim", "pinned")})
                 + claim_pod("p2", {"gpu": ("claim", "free")}))
    code, out = simulate(manifests)
    assert code == 0, out
    assert out["pods"]["default/p1"]["node"] == "n2"
    assert out["claims"]["default/pinned"]["reservedFor"] == ["default/p1"]
    assert out["pods"]["default/p2"]["node"] == "n1"
    assert devices_of(out, "default/free") == ["gpu-0"] and out["claims"]["default/free"]["devices"][0]["pool"] == "n1"


def test_a_gang_gets_its_claims_only_when_every_member_fits(simulate):
    one = template("one-gpu", claim_spec([{"name": "gpu", "exactly": exact()}]))
    manifests = (device_class() + gpu_node("n1", 2) + one + podgroup("gang", 3)
                 + "".join(claim_pod(f"w{i}", {"gpu": ("template", "one-gpu")}, group="gang") for i in range(3)))
    code, out = simulate(manifests)
    assert code == 0, out
    assert all(p["node"] is None for p in out["pods"].values())
    assert all(not c["allocated"] and not c["reservedFor"] for c in out["claims"].values())
    # with a third GPU the whole gang goes, each member with its own device
    code, out = simulate(manifests.replace('"n1-gpus"', '"n1-gpus-old"') + resource_slice(
        "n1-gpus", "n1", [gpu("gpu-0"), gpu("gpu-1"), gpu("gpu-2")], generation=2))
    assert code == 0, out
    assert all(p["node"] == "n1" for p in out["pods"].values())
    assert sorted(d for c in out["claims"].values() for d in (x["device"] for x in c["devices"])) == [
        "gpu-0", "gpu-1", "gpu-2"]


def test_a_finished_consumer_frees_its_devices_for_the_next_pod(simulate):
    held = claim("held", claim_spec([{"name": "gpu", "exactly": exact()}]), status={
        "allocation": {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]}},
        "reservedFor": [{"resource": "pods", "name": "done", "uid": "done-uid"}]})
    manifests = (device_class() + gpu_node("n1", 1) + held
                 + claim_pod("done", {"gpu": ("claim", "held")}, node_name="n1", phase="Succeeded",
                             meta={"uid": "done-uid"})
                 + claim("next", claim_spec([{"name": "gpu", "exactly": exact()}]))
                 + claim_pod("next", {"gpu": ("claim", "next")}))
    code, out = simulate(manifests)
    assert code == 0, out
    # the resourceclaim controller took the finished pod out and deallocated the claim
    assert out["claims"]["default/held"] == {"allocated": False, "devices": [], "reservedFor": []}
    assert out["pods"]["default/next"]["node"] == "n1"
    assert devices_of(out, "default/next") == ["gpu-0"]


# -- bad input: what the API server refuses -------------------------------------------------------


def _refused(simulate, manifests: str, *fragments: str) -> None:
    code, err = simulate(manifests)
    assert code == 2, err
    assert "cluster.yaml: document" in err
    for fragment in fragments:
        assert fragment in err, err


def test_an_invalid_cel_expression_is_refused(simulate):
    _refused(simulate, device_class(DRIVER, "device.driver ==") + node("n1"),
             "(DeviceClass gpu.example.com)", "spec.selectors[0].cel.expression", "compilation failed")
    _refused(simulate, device_class(DRIVER, "device.attributes['x'].count + 1") + node("n1"),
             "spec.selectors[0].cel.expression", "must evaluate to bool")
    _refused(simulate, claim("c1", claim_spec([{"name": "gpu", "exactly": exact(selectors=("1 +",))}])),
             "(ResourceClaim default/c1)", "spec.devices.requests[0].exactly.selectors[0].cel.expression")


def test_a_request_with_both_exactly_and_first_available_is_refused(simulate):
    both = {"name": "gpu", "exactly": exact(), "firstAvailable": [{"name": "a", **exact()}]}
    _refused(simulate, claim("c1", claim_spec([both])), "(ResourceClaim default/c1)", "spec.devices.requests[0]",
             "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set")
    _refused(simulate, template("t1", claim_spec([{"name": "gpu"}])), "(ResourceClaimTemplate default/t1)",
             "spec.spec.devices.requests[0]", "exactly one of `exactly` or `firstAvailable` is required")


def test_other_refusals_name_the_field(simulate):
    _refused(simulate, claim("c1", claim_spec([{"name": "gpu", "exactly": exact(count=0)}])),
             "spec.devices.requests[0].exactly.count", "must be greater than zero")
    _refused(simulate, claim("c1", claim_spec([{"name": "gpu", "exactly": exact(allocationMode="All", count=2)}])),
             "spec.devices.requests[0].exactly.count", "must not be specified when allocationMode is 'All'")
    _refused(simulate, claim("c1", claim_spec([{"name": "gpu", "exactly": exact()}],
                                              [{"requests": ["nic"], "matchAttribute": f"{DRIVER}/numa"}])),
             "spec.devices.constraints[0].requests[0]", "must be the name of a request")
    _refused(simulate, resource_slice("s1", None, [gpu("gpu-0")]), "(ResourceSlice s1)",
             "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required")
    _refused(simulate, resource_slice("s1", "n1", [gpu("gpu-0"), gpu("gpu-0")]), "spec.devices[1].name",
             "Duplicate value")
    _refused(simulate, resource_slice("s1", "n1", [{"name": "d", "attributes": {"v": {"version": "1.2"}}}]),
             "spec.devices[0].attributes[v].version", "semver")
    pod = claim_pod("p1", {"gpu": ("claim", "c1")}).replace('"claims": [{"name": "gpu"}]', '"claims": [{"name": "x"}]')
    _refused(simulate, pod, "(Pod default/p1)", "spec.containers[0].resources.claims[0]",
             "must be one of the names in pod.spec.resourceClaims")
    both = claim_pod("p1", {"gpu": ("claim", "c1")}).replace('"resourceClaimName": "c1"',
                                                             '"resourceClaimName": "c1", "resourceClaimTemplateName": "t"')
    _refused(simulate, both, "spec.resourceClaims[0]", "at most one of")


def test_preempt_frees_the_victims_claim_for_the_preemptor(simulate):
    """The victim held the node's only GPU through its claim: evicting it (for its CPU) frees the claim's
    device in the session, so the preemptor is pipelined there, and bound once the victim is gone."""
    from .test_preempt_reclaim import CLASSES, CONF

    held = claim("low-gpu", claim_spec([{"name": "gpu", "exactly": exact()}]), status={
        "allocation": {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]}},
        "reservedFor": [{"resource": "pods", "name": "low", "uid": "low-uid"}]})
    manifests = (CLASSES + device_class() + gpu_node("n1", 1, cpu="2") + held
                 + podgroup("low", 1, extra="  priorityClassName: low")
                 + claim_pod("low", {"gpu": ("claim", "low-gpu")}, cpu="2", group="low", node_name="n1",
                             phase="Running", priority_class="low", meta={"uid": "low-uid"})
                 + podgroup("high", 1, extra="  priorityClassName: high")
                 + claim("high-gpu", claim_spec([{"name": "gpu", "exactly": exact()}]))
                 + claim_pod("high", {"gpu": ("claim", "high-gpu")}, cpu="2", group="high", priority_class="high"))
    code, out = simulate(manifests, "--cycles", "1", conf=CONF)
    assert code == 0, out
    assert out["evicted"] == ["default/low"]
    code, out = simulate(manifests, conf=CONF)
    assert code == 0, out
    assert out["pods"]["default/high"]["node"] == "n1"
    assert devices_of(out, "default/high-gpu") == ["gpu-0"]
    assert out["claims"]["default/low-gpu"] == {"allocated": False, "devices": [], "reservedFor": []}


def test_a_pod_pending_on_its_claims_says_which_request_selector_and_how_many_devices(simulate):
    manifests = (device_class(DRIVER, f"device.driver == '{DRIVER}'")
                 + gpu_node("n1", 3, models=["a100", "h100", "a100"])
                 + template("two-a100", claim_spec([{"name": "gpu", "exactly": exact(count=2, selectors=(A100,))}]))
                 + claim_pod("p1", {"gpus": ("template", "two-a100")})
                 + claim_pod("p2", {"gpus": ("template", "two-a100")}))
    code, out = simulate(manifests)
    assert code == 0
    entry = out["pods"]["default/p2"]["diagnosis"]["nodes"]["n1"][-1]
    assert entry["reason"] == "claims"
    assert entry["requests"] == [{
        "claim": pod_claim(out, "default/p2", "gpus"), "request": "gpu", "deviceClass": DRIVER,
        "selectors": [f"device.driver == '{DRIVER}'", A100],
        "devices": 3, "ofClass": 3, "matched": 2, "free": 0, "needed": 2}]


def test_the_table_lists_the_claims(tmp_path, capsys):
    """``-o table``: a ResourceClaims section with the devices and the consumers."""
    from vcsched.cli import main

    from .conftest import SIM_NOW

    path = tmp_path / "c.yaml"
    path.write_text(device_class() + gpu_node("n1", 1) + claim("c1", claim_spec([{"name": "gpu", "exactly": exact()}]))
                    + claim_pod("p1", {"gpu": ("claim", "c1")}))
    assert main(["simulate", "-f", str(path), "-o", "table", "--now", SIM_NOW]) == 0
    out = capsys.readouterr().out
    assert "ResourceClaims:" in out
    assert "default/c1  gpu: gpu.example.com/n1/gpu-0  default/p1" in out
