"""gpushare sub-allocator and deviceshare arguments against spec/devices.md §2.1, §4.1, §6.1, §6.2."""

import pytest
import structlog

from vcsched.api.task_info import new_task_info
from vcsched.api.types import StatusCode
from vcsched.conf import ConfError, parse_conf
from vcsched.framework.arguments import ArgumentError, Arguments
from vcsched.plugins.deviceshare.config import DeviceShareArgs, load_device_config
from vcsched.plugins.deviceshare.gpushare import GpuShareFamily


def gpu_node(memory="89424", number="8", unhealthy=None) -> dict:
    ann = {"volcano.sh/gpu-unhealthy-ids": unhealthy} if unhealthy is not None else {}
    return {"metadata": {"name": "n1", "annotations": ann},
            "status": {"capacity": {"volcano.sh/gpu-memory": memory, "volcano.sh/gpu-number": number}}}


def pod(name, mem=0, num=0, annotations=None, init_mem=0):
    lim = {}
    if mem:
        lim["volcano.sh/gpu-memory"] = str(mem)
    if num:
        lim["volcano.sh/gpu-number"] = str(num)
    spec = {"containers": [{"name": "c", "image": "x", "resources": {"limits": lim}}]}
    if init_mem:
        spec["initContainers"] = [{"name": "i", "image": "x",
                                   "resources": {"limits": {"volcano.sh/gpu-memory": str(init_mem)}}}]
    return new_task_info({"metadata": {"name": name, "namespace": "default", "uid": name,
                                       "annotations": dict(annotations or {})},
                          "spec": spec, "status": {"phase": "Running"}})


def test_memory_worked_example():
    """§6.1: 89424 / 8 = 11178 per card; card 0 holds 10000 + 1024, so a 1024 pod gets card 1."""
    family = GpuShareFamily(sharing=True, number=False)
    devs = family.build(gpu_node(), "n1")
    assert devs.memory == 11178 and devs.ids == list(range(8))
    devs.add_pod(pod("a", 10000, annotations={"volcano.sh/gpu-index": "0"}))
    devs.add_pod(pod("b", 1024, annotations={"volcano.sh/gpu-index": "0"}))
    t = pod("c", 1024)
    req = family.request(t)
    assert devs.filter(t, req, "") is None
    ann = devs.allocate(t, req, "", 1767225600.123456789)
    assert ann["volcano.sh/gpu-index"] == "1"
    assert ann["volcano.sh/predicate-time"].startswith("176722560012345")
    assert devs.release(t) == ("volcano.sh/predicate-time", "volcano.sh/gpu-index")
    assert not devs.holds("c") and not devs.pods[1]


def test_memory_shortfall_reason_and_init_containers():
    family = GpuShareFamily(sharing=True, number=False)
    devs = family.build(gpu_node("2048", "1"), "n1")
    t = pod("big", 1000, init_mem=3000)  # pod total = max(sum containers, max init) = 3000
    res = devs.filter(t, family.request(t), "")
    assert res.code == StatusCode.Unschedulable
    assert res.reason == "GpuShare no enough gpu memory on node n1"
    assert family.request(t).memory == 3000


def test_unhealthy_ids_and_number_mode():
    family = GpuShareFamily(sharing=False, number=True)
    with structlog.testing.capture_logs() as logs:
        devs = family.build(gpu_node(unhealthy="1,x,3"), "n1")
    assert devs.ids == [0, 2, 4, 5, 6, 7]
    assert logs[0]["node"] == "n1" and logs[0]["value"] == "x"
    devs.add_pod(pod("a", num=1, annotations={"volcano.sh/gpu-index": "0"}))
    t = pod("b", num=2)
    assert devs.allocate(t, family.request(t), "", 0)["volcano.sh/gpu-index"] == "2,4"
    six = pod("c", num=6)
    assert devs.filter(six, family.request(six), "").reason.startswith("GpuNumber no enough gpu number on node n1")
    with structlog.testing.capture_logs():
        assert family.build(gpu_node(number="0"), "n1") is None
    assert family.build({"metadata": {"name": "n"}, "status": {"capacity": {"volcano.sh/gpu-memory": "1"}}}, "n") is None
    # a malformed gpu-index: the pod is not counted anywhere (E-30)
    devs.add_pod(pod("d", num=1, annotations={"volcano.sh/gpu-index": "0,x"}))
    assert not devs.holds("d")


def test_arguments_defaults_and_refused_combinations():
    a = DeviceShareArgs.parse(Arguments({}))
    assert (a.vgpu, a.schedule_policy, a.schedule_weight, a.cm_name, a.cm_namespace) == \
        (False, "", 0, "volcano-vgpu-device-config", "kube-system")
    with pytest.raises(ArgumentError, match="can not define true in both gpu sharing and gpu number"):
        DeviceShareArgs.parse(Arguments({"deviceshare.GPUSharingEnable": True, "deviceshare.GPUNumberEnable": "true"}))
    with pytest.raises(ArgumentError, match="gpu-share and vgpu can't be used together"):
        DeviceShareArgs.parse(Arguments({"deviceshare.GPUNumberEnable": True, "deviceshare.VGPUEnable": True}))
    conf = """
actions: "allocate"
tiers:
- plugins:
  - name: deviceshare
    arguments: {deviceshare.GPUSharingEnable: true, deviceshare.VGPUEnable: true}
"""
    with pytest.raises(ConfError, match=r"tiers\[0\]\.plugins\[0\]\.arguments\.deviceshare\.VGPUEnable"):
        parse_conf(conf)
    rules = DeviceShareArgs.parse(Arguments({"deviceshare.GPUExclusiveRules": [
        {"workloadType": "training"}, {}, {"a": 1}, {"workloadType": "batch", "priority": "high"}]})).exclusive_rules
    assert rules == ((("workloadType", "training"),), (("priority", "high"), ("workloadType", "batch")))


def test_device_configmap_loading_and_fallbacks():
    args = DeviceShareArgs(vgpu=True)
    assert load_device_config({}, args).nvidia.count_name == "volcano.sh/vgpu-number"
    cm = {"data": {"device-config.yaml": """
nvidia:
  resourceCountName: volcano.sh/vgpu-number
  resourceMemoryName: volcano.sh/vgpu-memory
  resourceMemoryPercentageName: volcano.sh/vgpu-memory-percentage
  resourceCoreName: volcano.sh/vgpu-cores
  gpuMemoryFactor: 1
  knownMigGeometries:
  - models: ["A100-PCIE-40GB"]
    allowedGeometries:
    - group: group1
      geometries: [{name: 1g.5gb, memory: 5120, count: 7}]
"""}}
    cfg = load_device_config({"kube-system/volcano-vgpu-device-config": cm}, args).nvidia
    assert cfg.memory_percentage_name == "volcano.sh/vgpu-memory-percentage"
    assert cfg.geometry_for("NVIDIA-NVIDIA A100-PCIE-40GB")[0].instances[0].count == 7
    # broken YAML: the built-in default; no nvidia section: vGPU requests go unnoticed (§2.3)
    bad = {"kube-system/volcano-vgpu-device-config": {"data": {"device-config.yaml": "nvidia: [unclosed"}}}
    with structlog.testing.capture_logs() as logs:
        assert load_device_config(bad, args).nvidia.count_name == "volcano.sh/vgpu-number"
    assert logs[0]["configmap"] == "kube-system/volcano-vgpu-device-config"
    empty = {"kube-system/volcano-vgpu-device-config": {"data": {"device-config.yaml": "vnpus: []"}}}
    assert load_device_config(empty, args).nvidia.count_name == ""
