"""MindCluster Ascend 310P dynamic vNPU against spec/devices.md §4.4, §5.4, §6.9 and E-24…E-28."""

import pytest
import structlog

from vcsched.api.task_info import new_task_info
from vcsched.api.types import StatusCode
from vcsched.cache import node_info_from
from vcsched.plugins.deviceshare.ascend310p import MindClusterFamily, MindClusterScorer
from vcsched.plugins.deviceshare.ascend310p_model import KEY, VResource, build_model, is_whole_card_value
from vcsched.plugins.deviceshare.base import AllocateError

@pytest.fixture(autouse=True)
def _logs():
    """Invalid nodes warn; keep those warnings off a stderr another test may have closed."""
    with structlog.testing.capture_logs() as logs:
        yield logs


FOUR_CHIPS = "Ascend310P-0,Ascend310P-1,Ascend310P-2,Ascend310P-3"
NOW = 1767225600.5


def manifest(name="npu-1", cores=32, chips=FOUR_CHIPS, servertype="Ascend310P-8", unhealthy=None, labels=None,
             drop=()):
    lab = {"accelerator": "huawei-Ascend310P", "servertype": servertype, "node.kubernetes.io/npu.chip.name": "310P3"}
    lab.update(labels or {})
    ann = {"huawei.com/Ascend310P": chips}
    if unhealthy is not None:
        ann["huawei.com/Ascend310P-Unhealthy"] = unhealthy
    for k in drop:
        lab.pop(k, None)
        ann.pop(k, None)
    res = {"cpu": "32", "memory": "64Gi", "pods": "110", "huawei.com/npu-core": str(cores)}
    return {"metadata": {"name": name, "labels": lab, "annotations": ann},
            "status": {"capacity": dict(res), "allocatable": dict(res)}}


def pod(name, cores, labels=None, annotations=None, node=None, deleting=False):
    lab = {"ring-controller.atlas": "ascend-310P", **(labels or {})}
    meta = {"name": name, "namespace": "default", "uid": name, "labels": lab, "annotations": dict(annotations or {})}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    q = str(cores)
    spec = {"containers": [{"name": "c", "image": "x",
                            "resources": {"limits": {"huawei.com/npu-core": q}, "requests": {"huawei.com/npu-core": q}}}]}
    if node:
        spec["nodeName"] = node
    return new_task_info({"metadata": meta, "spec": spec, "status": {"phase": "Running" if node else "Pending"}})


def session_node(m=None, *bound):
    """A session's node: the cache ledger from the bound pods, then InitVNPUDevice."""
    m = m or manifest()
    info = node_info_from(m)
    fam = MindClusterFamily()
    info.devices = {KEY: fam.build(m, info.name)}
    for t in bound:
        info.add_task(t)
    d = info.devices[KEY]
    d.open_session(info)
    return fam, info, d


def place(fam, info, d, t):
    """Filter, then what the session does on allocate: the node takes the task, the kind its devices."""
    req = fam.request(t)
    assert d.filter(t, req, "") is None
    t.node_name = info.name
    info.add_task(t)
    ann = d.allocate(t, req, "", NOW)
    t.pod_annotations.update(ann)
    return ann


def test_node_model_worked_example():
    """§6.9.2: servertype 8 cores per chip, capacity 32 → 4 chips of {8, 7}."""
    m = build_model(manifest(), "npu-1")
    assert m.valid and m.chip_kind == "Ascend310P" and m.chip_type == "310P3"
    assert (m.core_per_chip, m.chip_num, m.total_core, m.total_cpu) == (8, 4, 32, 28)
    assert m.chip_total == VResource(8, 7, "no")
    assert m.chip_ids == (0, 1, 2, 3)
    ten = build_model(manifest(cores=20, servertype="Ascend310P-10-dual", chips="Ascend310P-0,Ascend310P-1"), "n")
    assert ten.valid and ten.chip_total == VResource(10, 7, "no")


@pytest.mark.parametrize("change, problem", [
    ({"cores": 0}, "capacity huawei.com/npu-core"),
    ({"drop": ("accelerator",)}, "label accelerator absent"),
    ({"drop": ("servertype",)}, "label servertype absent"),
    ({"drop": ("node.kubernetes.io/npu.chip.name",)}, "npu.chip.name absent"),
    ({"drop": ("huawei.com/Ascend310P",)}, "annotation huawei.com/Ascend310P absent"),
    ({"cores": 30}, "not a non-zero multiple of 8"),
    ({"servertype": "Ascend310P-4"}, "no chip template"),
])
def test_invalid_node_fails_with_invalid_vnode(change, problem):
    m = build_model(manifest(**change), "npu-1")
    assert not m.valid and problem in m.problem
    if change.get("cores") == 0:
        return
    fam, info, d = session_node(manifest(**change))
    t = pod("p", 2)
    res = d.filter(t, fam.request(t), "")
    assert res.code == StatusCode.Error and res.reason == "checkNodeNPUByDyTask invalid VNode"


def test_invalid_node_warns_naming_node_and_field():
    with structlog.testing.capture_logs() as logs:
        fam = MindClusterFamily()
        d = fam.build(manifest(drop=("huawei.com/Ascend310P",)), "npu-1")
        assert d is not None and not d.model.valid
        bad = fam.build(manifest(chips="Ascend310P-0,Ascend310P-x"), "npu-2")
    assert bad.model.chip_ids == (0,)
    assert any(e["node"] == "npu-1" and "huawei.com/Ascend310P" in e["problem"] for e in logs)
    assert any(e.get("node") == "npu-2" and e.get("annotation") == "huawei.com/Ascend310P" for e in logs)
    with structlog.testing.capture_logs() as quiet:
        cpu = fam.build({"metadata": {"name": "cpu"}, "status": {"capacity": {"cpu": "4"}}}, "cpu")
        fam.build(manifest(cores=0), "npu-0")
    assert not cpu.model.valid  # every node has the object
    assert [e["node"] for e in quiet] == ["npu-0"]  # only a node with huawei.com/ resources is warned about


def test_a_cpu_node_refuses_npu_core_zero():
    """Volcano's object exists on every node: npu-core 0 passes generic fit but not checkNodeNum there."""
    m = {"metadata": {"name": "cpu"}, "status": {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "4"}}}
    fam, info, d = session_node(m)
    t = pod("zero", 0)
    assert d.filter(t, fam.request(t), "").reason == "preCheckNodePredicate failure: not have huawei.com/npu-core"
    assert d.describe() == []


def test_init_params(_logs):
    fam = MindClusterFamily()
    fam.configure({"useClusterInfoManager": "false", "presetVirtualDevice": "true"})
    assert (fam.use_cluster_info_manager, fam.self_maintain_available_card, fam.preset_virtual_device) == \
        (False, True, True)
    assert any("presetVirtualDevice" in e["event"] for e in _logs)
    fam.configure({"useClusterInfoManager": False})
    assert (fam.use_cluster_info_manager, fam.preset_virtual_device) == (True, False)
    assert any("must be strings" in e["event"] for e in _logs)


def test_request_detection():
    fam = MindClusterFamily()
    assert fam.request(pod("p", 2)).cores == 2
    plain = pod("q", 2)
    plain.spec.labels.pop("ring-controller.atlas")
    assert fam.request(plain) is None
    wrong = pod("r", 2, labels={"ring-controller.atlas": "ascend-910"})
    assert fam.request(wrong) is None


@pytest.mark.parametrize("cores, labels, template", [
    (1, {}, "vir01"),
    (1, {"vnpu-level": "high", "vnpu-dvpp": "yes"}, "vir01"),
    (2, {}, "vir02_1c"),
    (2, {"vnpu-level": "high"}, "vir02"),
    (2, {"vnpu-level": "medium"}, "vir02_1c"),  # any other level means low
    (4, {"vnpu-dvpp": "yes"}, "vir04_4c_dvpp"),
    (4, {"vnpu-dvpp": "no", "vnpu-level": "high"}, "vir04_3c_ndvpp"),
    (4, {"vnpu-dvpp": "null", "vnpu-level": "high"}, "vir04"),
    (4, {}, "vir04_3c"),
])
def test_templates_from_cores_level_and_dvpp(cores, labels, template):
    """§6.9.3 table, written as the §5.4 value on the least-free chip (all equal: chip 0)."""
    fam, info, d = session_node()
    ann = place(fam, info, d, pod("p", cores, labels))
    assert ann == {"predicate-time": "1767225600500000000", "huawei.com/npu-core": f"0-{template}"}


def test_whole_chips_and_concurrency_cache():
    """§6.9.6: 16 cores take two whole chips; §6.9.4.3: a node holds one template at a time."""
    fam, info, d = session_node()
    assert place(fam, info, d, pod("whole", 16))["huawei.com/npu-core"] == "0,1"
    t = pod("v", 2)
    res = d.filter(t, fam.request(t), "")
    assert res.code == StatusCode.Error
    assert res.text("v") == "v is using npu-1, and not rewrite"

    fam, info, d = session_node()
    place(fam, info, d, pod("a", 2))
    assert place(fam, info, d, pod("b", 2))["huawei.com/npu-core"] == "0-vir02_1c"  # least free first
    t = pod("c", 4)
    assert d.filter(t, fam.request(t), "").text("c") == "c is using npu-1, and not rewrite"
    t = pod("w", 8)
    assert d.filter(t, fam.request(t), "").reason == 'vnpu.VResource{Aicore:8, Aicpu:7, DVPP:"null"} not get template'


def test_idle_cores_and_bad_dvpp():
    fam, info, d = session_node()
    t = pod("big", 40)
    assert d.filter(t, fam.request(t), "").reason == \
        "preCheckNodePredicate failure: node not meet task request huawei.com/npu-core:40"
    t = pod("bad", 2, {"vnpu-dvpp": "maybe"})
    res = d.filter(t, fam.request(t), "")
    assert res.code == StatusCode.Error and res.reason == "err dvpp value:maybe"


def test_three_cores_pass_the_filter_then_fail_allocate():
    """E-25: no template for 3 cores → {0,0,""}, which is a 'whole card' of 0 chips."""
    fam, info, d = session_node()
    t = pod("three", 3)
    req = fam.request(t)
    assert d.filter(t, req, "") is None
    with pytest.raises(AllocateError, match="task require card number 0"):
        d.allocate(t, req, "", NOW)


def test_unhealthy_unstable_and_vgroups_from_bound_pods():
    """§6.9.2 existing pods: unhealthy chips skip their pods; a pod without AscendReal makes its chip
    unstable (no vNPU there); 4 vGroups on a chip leave it for 1-core vNPUs only."""
    real = "huawei.com/AscendReal"
    bound = [
        pod("u", 2, annotations={"huawei.com/npu-core": "1-vir02_1c"}, node="npu-1"),  # chip 1 unhealthy
        pod("s", 2, annotations={"huawei.com/npu-core": "0-vir02_1c"}, node="npu-1"),  # no AscendReal: chip 0 unstable
    ] + [pod(f"g{i}", 1, annotations={"huawei.com/npu-core": "2-vir01", real: f"Ascend310P-1c-10{i}-2_{i}"},
             node="npu-1") for i in range(4)]
    m = manifest(chips="Ascend310P-0,Ascend310P-2,Ascend310P-3", unhealthy="Ascend310P-1")
    fam, info, d = session_node(m, *bound)
    assert sorted(d.chips) == [0, 2, 3]  # chip 1 is neither listed nor counted
    assert d.chips[0].unstable and d.chips[0].free_core == 6
    assert d.chips[2].v_groups() == 4 and d.chips[2].free_core == 4
    assert not d.chips[2].meets(VResource(2, 1, "null")) and d.chips[2].meets(VResource(1, 1, "null"))
    # ConCache holds vir02_1c and vir01: every new vNPU request is refused on this node
    t = pod("n", 1)
    assert d.filter(t, fam.request(t), "").text("n") == "n is using npu-1, and not rewrite"


def test_downgrade_when_aicpu_is_short_and_release_rolls_back():
    """§6.9.4.2: {2,2} does not fit (1 AI CPU free) but {2,1} does: the pod is downgraded to vir02_1c.

    The chip's other use is three terminating vir02 pods: initVChips counts every task on the node,
    while ConCache (AddResource) leaves terminating pods out, so the template rule does not refuse.
    """
    real = "huawei.com/AscendReal"
    gone = [pod(f"old{i}", 2, {"vnpu-level": "high"}, {"huawei.com/npu-core": "0-vir02", real: "Ascend310P-x-0_1"},
                node="npu-1", deleting=True) for i in range(3)]
    fam, info, d = session_node(manifest(cores=8, chips="Ascend310P-0"), *gone)
    assert (d.chips[0].free_core, d.chips[0].free_cpu) == (2, 1) and not d.con_cache
    t = pod("hi", 2, {"vnpu-level": "high"})
    ann = place(fam, info, d, t)
    assert "hi" in d.downgrade
    assert ann["huawei.com/npu-core"] == "0-vir02_1c"
    assert (d.chips[0].free_core, d.chips[0].free_cpu) == (0, 0) and d.con_cache == {"vir02_1c": {"hi"}}
    assert d.release(t) == ("predicate-time", "huawei.com/npu-core")
    assert (d.chips[0].free_core, d.chips[0].free_cpu) == (2, 1) and not d.con_cache and not d.holds("hi")


def test_non_downgradable_shortfall_passes_filter_and_fails_allocate():
    """E-24: a whole-card request the chips cannot meet is not refused by the filter."""
    real = "huawei.com/AscendReal"
    gone = [pod("old", 8, annotations={"huawei.com/npu-core": "0", real: "Ascend310P-0"}, node="npu-1", deleting=True)]
    fam, info, d = session_node(manifest(cores=16, chips="Ascend310P-0,Ascend310P-1"), *gone)
    t = pod("two", 16)
    req = fam.request(t)
    info.idle.scalars["huawei.com/npu-core"] = 16000.0  # idle as if the terminating pod were gone
    assert d.filter(t, req, "") is None
    with pytest.raises(AllocateError, match=r"selectChipFromNodeWhole free whole chip <1> not enough for req <2>"):
        d.allocate(t, req, "", NOW)


def test_ledger_from_annotations_and_clone_independence():
    bound = pod("b", 2, annotations={"huawei.com/npu-core": "3-vir02_1c"}, node="npu-1")
    m = manifest()
    fam = MindClusterFamily()
    cache_obj = fam.build(m, "npu-1")
    cache_obj.add_pod(bound)
    assert cache_obj.allocation == {"b": "3-vir02_1c"} and cache_obj.con_cache == {"vir02_1c": {"b"}}
    assert cache_obj.chips is None  # the cache object has no chips, as in Volcano
    uses = {u.id: u for u in cache_obj.describe()}
    assert uses["Ascend310P-3"].cores_used == 2 and uses["Ascend310P-3"].pods == ["default/b"]
    copy = cache_obj.clone()
    copy.remove_pod(bound)
    assert not copy.allocation and cache_obj.allocation == {"b": "3-vir02_1c"}
    assert is_whole_card_value("0,1") and is_whole_card_value("0") and not is_whole_card_value("0-vir01")


def test_batch_score_worked_example():
    """§6.9.7, weight 10: idle N1 = 4, N3 = 8, N2 = 16 → N1 80; downgraded on N1 → N1 80, N3 160."""
    nodes = []
    for name, idle in (("N2", 16), ("N1", 4), ("N3", 8)):
        _, info, _ = session_node(manifest(name=name, cores=16, chips="Ascend310P-0,Ascend310P-1"))
        info.idle.scalars["huawei.com/npu-core"] = idle * 1000.0
        nodes.append(info)
    scorer = MindClusterScorer(MindClusterFamily(), 10)
    t = pod("p", 2)
    assert scorer.applies(t)
    assert scorer.score(t, nodes) == {"N2": 0.0, "N1": 80.0, "N3": 0.0}
    nodes[1].devices[KEY].downgrade.add("p")
    assert scorer.score(t, nodes) == {"N2": 0.0, "N1": 80.0, "N3": 160.0}
    nodes[2].devices[KEY].downgrade.add("p")
    assert scorer.score(t, nodes) == {"N2": 160.0, "N1": 80.0, "N3": 80.0}
    nodes[0].devices = {}
    assert scorer.score(t, nodes) == {}  # a candidate without the device: no device score at all
