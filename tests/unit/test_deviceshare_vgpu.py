"""vGPU sub-allocator (hami-core and MIG) against the worked examples of spec/devices.md §3.2, §6.3–§6.7."""

import pytest
import structlog

from vcsched.api.task_info import new_task_info
from vcsched.api.types import StatusCode
from vcsched.plugins.deviceshare.base import AllocateError
from vcsched.plugins.deviceshare.config import (
    DeviceShareArgs, MigGeometry, MigInstance, MigModel, NvidiaConfig,
)
from vcsched.plugins.deviceshare.vgpu import VGPUFamily
from vcsched.plugins.deviceshare.vgpu_annotations import decode_pod_devices, encode_pod_devices

A = "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448"
B = "GPU-6a8b1c2d-1111-2222-3333-444455556666"
A100 = "NVIDIA-NVIDIA A100-PCIE-40GB"
ALLOC = {"volcano.sh/vgpu-number": "20", "volcano.sh/vgpu-memory": "81920", "volcano.sh/vgpu-cores": "200"}

A100_GEOMETRIES = (MigModel(("A100-SXM4-40GB", "A100-40GB-PCIe", "A100-PCIE-40GB"), (
    MigGeometry("group1", (MigInstance("1g.5gb", 5120, 7),)),
    MigGeometry("group2", (MigInstance("2g.10gb", 10240, 3), MigInstance("1g.5gb", 5120, 1))),
    MigGeometry("group3", (MigInstance("3g.20gb", 20480, 2),)),
    MigGeometry("group4", (MigInstance("7g.40gb", 40960, 1),)),
)),)


def register(*devs: tuple[str, int, int, str, str]) -> str:
    return "".join(f"{u},{n},{m},{t},true,{mode}:" for u, n, m, t, mode in devs)


def node(reg: str, name: str = "gpu-node-1", alloc=ALLOC) -> dict:
    return {"metadata": {"name": name, "annotations": {"volcano.sh/node-vgpu-register": reg}},
            "status": {"allocatable": dict(alloc)}}


def pod(name: str, *ctr_limits: dict, annotations=None, labels=None, uid=None) -> object:
    return new_task_info({
        "metadata": {"name": name, "namespace": "default", "uid": uid or name,
                     "annotations": dict(annotations or {}), "labels": dict(labels or {})},
        "spec": {"schedulerName": "volcano", "containers": [
            {"name": f"c{i}", "image": "x", "resources": {"limits": lim}} for i, lim in enumerate(ctr_limits)]},
        "status": {"phase": "Pending"},
    })


def two_cards(family=None, mode="hami-core"):
    family = family or VGPUFamily(NvidiaConfig())
    return family, family.build(node(register((A, 10, 40960, A100, mode), (B, 10, 40960, A100, mode))), "gpu-node-1")


def test_request_extraction_worked_example():
    """§3.2: container B (no GPU resource) gets no entry; memory alone means one vGPU."""
    t = pod("p", {"volcano.sh/vgpu-number": 2, "volcano.sh/vgpu-memory": 3000}, {"cpu": "1"},
            {"volcano.sh/vgpu-memory": 5000, "volcano.sh/vgpu-cores": 30})
    req = VGPUFamily(NvidiaConfig()).request(t)
    assert [(c.nums, c.memreq, c.pct, c.cores) for c in req.containers] == [(2, 3000, 101, 0), (1, 5000, 101, 30)]
    assert VGPUFamily(NvidiaConfig()).request(pod("q", {"cpu": "1"})) is None
    # no memory request: 100 % of the card
    only_count = VGPUFamily(NvidiaConfig()).request(pod("r", {"volcano.sh/vgpu-number": 1}))
    assert only_count.containers[0].pct == 100


def test_allocate_legacy_order_writes_the_spec_annotations():
    """§6.3.5: no policy visits devices by index descending."""
    family, devs = two_cards()
    t = pod("p", {"volcano.sh/vgpu-number": 2, "volcano.sh/vgpu-memory": 8000, "volcano.sh/vgpu-cores": 30})
    ann = devs.allocate(t, family.request(t), "", 1767225600.5)
    ids = f"{B},NVIDIA,8000,30:{A},NVIDIA,8000,30:"
    assert ann == {
        "volcano.sh/vgpu-node": "gpu-node-1", "volcano.sh/vgpu-time": "1767225600",
        "volcano.sh/vgpu-ids-new": ids, "volcano.sh/devices-to-allocate": ids,
        "volcano.sh/bind-phase": "allocating", "volcano.sh/bind-time": "1767225600",
    }
    assert [(d.used_num, d.used_mem, d.used_core) for d in devs.devices] == [(1, 8000, 30), (1, 8000, 30)]


def test_binpack_scores_and_device_order():
    """§6.3.4 worked example: 75, 25 and 23.65 for a 4096 MiB vGPU."""
    family = VGPUFamily(NvidiaConfig())
    t = pod("p", {"volcano.sh/vgpu-memory": 4096})
    req = family.request(t)

    def one(mem, used):
        d = family.build(node(register((A, 10, mem, A100, "hami-core"))), "n")
        d.devices[0].used_mem = used
        d.devices[0].used_num = 1 if used else 0
        assert d.filter(t, req, "binpack") is None
        return d.score(t, req, "binpack")

    assert one(16384, 8192) == 75.0
    assert one(16384, 0) == 25.0
    assert one(30000, 3000) == pytest.approx(23.6533, abs=1e-3)
    # binpack visits the fuller card first, spread the emptier one
    _, devs = two_cards(family)
    devs.devices[1].used_mem, devs.devices[1].used_num = 1000, 1
    assert devs.allocate(t, req, "binpack", 0)["volcano.sh/vgpu-ids-new"].startswith(B)
    _, devs = two_cards(family)
    devs.devices[0].used_mem, devs.devices[0].used_num = 1000, 1
    assert devs.allocate(t, req, "spread", 0)["volcano.sh/vgpu-ids-new"].startswith(B)
    # spread scores 0 in practice: the score is taken after the tentative add (§6.3.4 note)
    _, devs = two_cards(family)
    assert devs.filter(t, req, "spread") is None and devs.score(t, req, "spread") == 0.0


def test_type_and_uuid_selection():
    family, devs = two_cards()
    base = {"volcano.sh/vgpu-memory": 1000}
    use = pod("a", base, annotations={"nvidia.com/use-gputype": "a100"})
    assert devs.filter(use, family.request(use), "") is None
    nouse = pod("b", base, annotations={"nvidia.com/nouse-gputype": "T4,A100"})
    res = devs.filter(nouse, family.request(nouse), "")
    assert res.code == StatusCode.Unschedulable
    assert res.reason == "hami-vgpuDeviceSharing error: not enough gpu fitted on this node"
    # use-gputype wins over nouse-gputype
    both = pod("c", base, annotations={"nvidia.com/use-gputype": "A100", "nvidia.com/nouse-gputype": "A100"})
    assert devs.filter(both, family.request(both), "") is None
    allow = pod("d", base, annotations={"volcano.sh/vgpu-use-gpuuuid": f" {A} ,"})
    assert devs.allocate(allow, family.request(allow), "", 0)["volcano.sh/vgpu-ids-new"].startswith(A)
    deny = pod("e", base, annotations={"volcano.sh/vgpu-use-gpuuuid": A, "volcano.sh/vgpu-nouse-gpuuuid": A})
    res = devs.filter(deny, family.request(deny), "")
    assert res.reason == ('hami-vgpuDeviceSharing error: no GPU matches UUID constraints '
                          f'volcano.sh/vgpu-use-gpuuuid="{A}", volcano.sh/vgpu-nouse-gpuuuid="{A}" on node gpu-node-1')


def test_card_count_cores_and_mode_rules():
    family, devs = two_cards()
    three = pod("a", {"volcano.sh/vgpu-number": 3})
    assert devs.filter(three, family.request(three), "").reason == \
        "hami-vgpuDeviceSharing error: no enough gpu cards on node gpu-node-1"
    mode = pod("b", {"volcano.sh/vgpu-number": 1}, annotations={"volcano.sh/vgpu-mode": "mps"})
    assert devs.filter(mode, family.request(mode), "").reason == \
        "hami-vgpuDeviceSharing error: pod required sharing mode mps is not the same as the node mode hami-core"
    # cores 100 needs an untouched card; a full-compute card takes no core-less pod
    devs.devices[0].used_num, devs.devices[0].used_core = 1, 100
    excl = pod("c", {"volcano.sh/vgpu-memory": 100, "volcano.sh/vgpu-cores": 100})
    assert devs.allocate(excl, family.request(excl), "", 0)["volcano.sh/vgpu-ids-new"].startswith(B)
    zero = pod("d", {"volcano.sh/vgpu-memory": 100})
    assert devs.filter(zero, family.request(zero), "") is not None


def test_release_rolls_back_inside_the_session():
    """Volcano's vGPU release leaves session counters incremented (E-19); here it really rolls back."""
    family, devs = two_cards()
    t = pod("p", {"volcano.sh/vgpu-number": 2, "volcano.sh/vgpu-memory": 8000, "volcano.sh/vgpu-cores": 30})
    devs.allocate(t, family.request(t), "binpack", 0)
    assert devs.holds(t.uid)
    assert set(devs.release(t)) == {"volcano.sh/vgpu-node", "volcano.sh/vgpu-ids-new", "volcano.sh/devices-to-allocate",
                                    "volcano.sh/vgpu-time", "volcano.sh/bind-time", "volcano.sh/bind-phase"}
    assert [(d.used_num, d.used_mem, d.used_core, d.pods) for d in devs.devices] == [(0, 0, 0, {}), (0, 0, 0, {})]
    bound = pod("q", {"volcano.sh/vgpu-memory": 10}, annotations={"volcano.sh/bind-phase": "success"})
    assert devs.release(bound) == ()


def test_ledger_from_annotations_counts_every_entry_and_clone_is_independent():
    family, devs = two_cards()
    t = pod("p", {"volcano.sh/vgpu-memory": 2000}, {"volcano.sh/vgpu-memory": 3000},
            annotations={"volcano.sh/vgpu-ids-new": f"{A},NVIDIA,2000,0:;{A},NVIDIA,3000,10:;GPU-unknown,NVIDIA,1,1:"})
    c = devs.clone()
    devs.add_pod(t)
    assert (devs.devices[0].used_num, devs.devices[0].used_mem, devs.devices[0].used_core) == (2, 5000, 10)
    assert c.devices[0].used_num == 0
    devs.remove_pod(t)
    assert devs.devices[0].used_num == 0 and not devs.holders


def test_pod_device_list_codec():
    assert encode_pod_devices([[("GPU-a", 2000, 0), ("GPU-b", 2000, 0)], [("GPU-a", 3000, 0)]]) == \
        "GPU-a,NVIDIA,2000,0:GPU-b,NVIDIA,2000,0:;GPU-a,NVIDIA,3000,0:"
    assert decode_pod_devices("GPU-a,NVIDIA,x,0:GPU-b,NVIDIA,5,1:GPU-c,NVIDIA:") == [[("GPU-b", 5, 1)]]


def test_malformed_register_annotation_ignores_the_node_with_a_warning():
    family = VGPUFamily(NvidiaConfig())
    with structlog.testing.capture_logs() as logs:
        assert family.build(node(f"{A},10,40960,{A100}:"), "bad-node") is None
    assert any(e.get("node") == "bad-node" and e.get("annotation") == "volcano.sh/node-vgpu-register" for e in logs)
    assert family.build(node("no-colon"), "n") is None
    assert family.build(node(register((A, 10, 40960, A100, "hami-core")), alloc={}), "n") is None
    # non-numeric memory becomes 0: the card never fits
    d = family.build(node(f"{A},10,lots,{A100},true,hami-core:"), "n")
    t = pod("p", {"volcano.sh/vgpu-memory": 1})
    assert d.filter(t, family.request(t), "") is not None


def test_mig_worked_example():
    """§6.5.5: group2 is picked for 8000 MiB, then only its used profile; 12000 fits nothing."""
    family = VGPUFamily(NvidiaConfig(memory_percentage_name="volcano.sh/vgpu-memory-percentage",
                                     known_mig_geometries=A100_GEOMETRIES))
    devs = family.build(node(register((A, 10, 40960, A100, "mig"))), "gpu-node-1")
    assert devs.mode == "mig"
    p1 = pod("p1", {"volcano.sh/vgpu-memory": 8000})
    assert devs.allocate(p1, family.request(p1), "", 0)["volcano.sh/vgpu-ids-new"] == f"{A}[group2-0],NVIDIA,8000,0:"
    assert devs.devices[0].used_mem == 10240
    # the next session rebuilds the ledger from the annotation
    fresh = family.build(node(register((A, 10, 40960, A100, "mig"))), "gpu-node-1")
    bound = pod("p1", {"volcano.sh/vgpu-memory": 8000},
                annotations={"volcano.sh/vgpu-ids-new": f"{A}[group2-0],NVIDIA,8000,0:"})
    fresh.add_pod(bound)
    assert fresh.devices[0].mig_index == 1 and fresh.devices[0].used_mem == 10240
    p2 = pod("p2", {"volcano.sh/vgpu-memory": 3000})
    assert fresh.allocate(p2, family.request(p2), "", 0)["volcano.sh/vgpu-ids-new"] == f"{A}[group2-1],NVIDIA,3000,0:"
    p3 = pod("p3", {"volcano.sh/vgpu-memory": 12000})
    res = fresh.filter(p3, family.request(p3), "")
    assert res is not None and res.reason == "hami-vgpuDeviceSharing error: not enough gpu fitted on this node"
    # in one session a third pod gets the next slot, not a duplicate (vcsched fixes E-8)
    p2b = pod("p2b", {"volcano.sh/vgpu-memory": 3000})
    assert fresh.allocate(p2b, family.request(p2b), "", 0)["volcano.sh/vgpu-ids-new"] == f"{A}[group2-2],NVIDIA,3000,0:"
    # a whole-card request fits 7g.40gb only on an untouched card
    whole = pod("w", {"volcano.sh/vgpu-number": 1})
    assert devs.clone().filter(whole, family.request(whole), "") is not None  # devs holds p1 in group2
    empty = family.build(node(register((A, 10, 40960, A100, "mig"))), "n")
    assert empty.allocate(whole, family.request(whole), "", 0)["volcano.sh/vgpu-ids-new"] == \
        f"{A}[group4-0],NVIDIA,40960,0:"
    # rollback frees the slot and the group claim
    empty.release(whole)
    assert empty.devices[0].mig_index == -1 and not empty.devices[0].mig_used


def test_mig_without_geometry_falls_back_to_hami_core():
    devs = VGPUFamily(NvidiaConfig()).build(node(register((A, 10, 40960, A100, "mig"))), "n")
    assert devs.mode == "hami-core"


def test_podgroup_spread_and_exclusivity_rules():
    family, devs = two_cards()
    ann = {"volcano.sh/vgpu-podgroup-policy": "spread", "scheduling.k8s.io/group-name": "job-1"}
    w0 = pod("worker-0", {"volcano.sh/vgpu-memory": 1000}, annotations=ann)
    w1 = pod("worker-1", {"volcano.sh/vgpu-memory": 1000}, annotations=ann)
    first = devs.allocate(w0, family.request(w0), "binpack", 0)["volcano.sh/vgpu-ids-new"]
    second = devs.allocate(w1, family.request(w1), "binpack", 0)["volcano.sh/vgpu-ids-new"]
    assert first.split(",")[0] != second.split(",")[0]

    rules = DeviceShareArgs.parse(__import__("vcsched.framework.arguments", fromlist=["Arguments"]).Arguments(
        {"deviceshare.VGPUEnable": True, "deviceshare.GPUExclusiveRules": [{"workloadType": "training"}]})
    ).exclusive_rules
    family = VGPUFamily(NvidiaConfig(), rules)
    _, devs = two_cards(family)
    t1 = pod("t1", {"volcano.sh/vgpu-memory": 1000}, labels={"workloadType": "training"})
    t2 = pod("t2", {"volcano.sh/vgpu-memory": 1000}, labels={"workloadType": "training"})
    t3 = pod("t3", {"volcano.sh/vgpu-memory": 1000}, labels={"workloadType": "training"})
    inf = pod("i1", {"volcano.sh/vgpu-memory": 1000}, labels={"workloadType": "inference"})
    g1 = devs.allocate(t1, family.request(t1), "binpack", 0)["volcano.sh/vgpu-ids-new"].split(",")[0]
    g2 = devs.allocate(t2, family.request(t2), "binpack", 0)["volcano.sh/vgpu-ids-new"].split(",")[0]
    assert g1 != g2
    assert devs.filter(t3, family.request(t3), "binpack").reason == "hami-vgpuDeviceSharing error: not enough gpu fitted on this node"
    assert devs.filter(inf, family.request(inf), "binpack") is None
    with pytest.raises(AllocateError):
        devs.allocate(t3, family.request(t3), "binpack", 0)
    assert sum(d.used_num for d in devs.devices) == 2
