"""HAMi Ascend vNPU sub-allocator against the worked examples of spec/devices.md §2.3.2, §4.3, §5.3, §6.8."""

import json
import math

import structlog

from vcsched.api.task_info import new_task_info
from vcsched.api.types import StatusCode
from vcsched.cache import Cache
from vcsched.conf import parse_conf
from vcsched.plugins.deviceshare import device_builder
from vcsched.plugins.deviceshare.base import AllocateError
from vcsched.plugins.deviceshare.config import (
    DeviceConfig, DeviceShareArgs, VNPUConfig, VNPUTemplate, load_device_config,
)
from vcsched.plugins.deviceshare.hamivnpu import (
    AscendHAMiFamily, decode_pod_single_device, encode_pod_single_device, trim_memory,
)
from vcsched.plugins.deviceshare.plugin import build_families

NOW = 1767225600
P310 = DeviceConfig().vnpus.configs[0]  # the built-in default: Ascend310P
B3 = VNPUConfig("Ascend910B3", "910B3", "huawei.com/Ascend910B3", "huawei.com/Ascend910B3-memory", 65536, 65536, 20, 7,
                (VNPUTemplate("vir05_1c_16g", 16384), VNPUTemplate("vir10_3c_32g", 32768)))
WORDS = ("Ascend310P", "Ascend910B3")


def family(cfg=P310, hami_core=False):
    return AscendHAMiFamily(cfg, hami_core, WORDS)


def p310(i):
    return {"id": f"310P-dev-{i}", "index": i, "count": 7, "devmem": 21527, "devcore": 8, "type": "Ascend310P",
            "health": True}


def b3(i, net=None):
    d = {"id": f"910b3-{i}", "index": i, "count": 4, "devmem": 65536, "devcore": 20, "type": "Ascend910B3"}
    if net is not None:
        d["custominfo"] = {"NetworkID": net}
    return d


def node(fam, devices, name="npu-node-1", annotations=None, count="8"):
    ann = {fam.register: json.dumps(devices), **(annotations or {})}
    return fam.build({"metadata": {"name": name, "annotations": ann},
                      "status": {"allocatable": {fam.config.resource_name: count}}}, name)


def pod(name, *ctr_limits, annotations=None, requests=None):
    return new_task_info({
        "metadata": {"name": name, "namespace": "default", "uid": name, "annotations": dict(annotations or {})},
        "spec": {"schedulerName": "volcano", "containers": [
            {"name": f"c{i}", "image": "x", "resources": {"limits": lim, **({"requests": requests} if requests else {})}}
            for i, lim in enumerate(ctr_limits)]},
        "status": {"phase": "Pending"},
    })


def ask(cw="Ascend310P", n=None, memory=None, cores=None):
    lim = {}
    if n is not None:
        lim[f"huawei.com/{cw}"] = str(n)
    if memory is not None:
        lim[f"huawei.com/{cw}-memory"] = str(memory)
    if cores is not None:
        lim[f"huawei.com/{cw}-core"] = str(cores)
    return lim


def test_trim_memory_table_for_310p():
    """§6.8.1: templates 3072 / 6144 / 12288, allocatable 21527, capacity 24576."""
    got = {m: trim_memory(P310, m)[0] for m in (0, 1, 3072, 3073, 6145, 12289, 24576, 24577)}
    assert got == {0: 3072, 1: 3072, 3072: 3072, 3073: 6144, 6145: 12288, 12289: 21527, 24576: 21527, 24577: 0}
    assert trim_memory(P310, 4096) == (6144, "vir02")
    assert trim_memory(P310, 21527) == (21527, "")


def test_request_detection_and_extraction():
    fam = family()
    assert fam.request(pod("none", {"cpu": "1"})) is None
    # requests alone do not ask (HasDeviceRequest reads limits); memory alone means one NPU
    assert fam.request(pod("req-only", {"cpu": "1"}, requests={"huawei.com/Ascend310P-memory": "4096"})) is None
    r = fam.request(pod("p", ask(memory=4096), {"cpu": "1"}, ask(n=2, cores=3)))
    assert [(c.nums, c.memreq, c.pct, c.cores) for c in r.containers] == [(1, 4096, 101, 0), (2, 0, 100, 3)]
    assert not r.hami_core
    assert fam.request(pod("hc", ask(n=1), annotations={"huawei.com/vnpu-mode": "hami-core"})).hami_core


def test_full_allocate_example_template_mode():
    """§6.8.5: 310P, 1 NPU, 4096 MiB → vir02 (6144) on 310P-dev-0."""
    devs = node(family(), [p310(0)])
    t = pod("p", ask(n=1, memory=4096))
    req = devs.family.request(t)
    assert devs.filter(t, req, "") is None
    assert devs.allocate(t, req, "", NOW) == {
        "hami.io/Ascend310P-devices-to-allocate": "310P-dev-0,Ascend310P,6144,0:;",
        "hami.io/Ascend310P-devices-allocated": "310P-dev-0,Ascend310P,6144,0:;",
        "huawei.com/Ascend310P": '[{"UUID":"310P-dev-0","temp":"vir02"}]',
        "predicate-time": "1767225600",
        "hami.io/vgpu-node": "npu-node-1",
        "hami.io/vgpu-time": "1767225600",
        "hami.io/bind-phase": "allocating",
        "hami.io/bind-time": "1767225600",
    }
    d = devs.devices[0]
    assert (d.used, d.usedmem, d.usedcores) == (1, 6144, 0)


def test_hami_core_mode_example():
    devs = node(family(), [p310(0)], annotations={"hami-vnpu-core": "true"})
    t = pod("p", ask(n=1, memory=4096, cores=90), annotations={"huawei.com/vnpu-mode": "hami-core"})
    a = devs.allocate(t, devs.family.request(t), "", NOW)
    assert a["hami.io/Ascend310P-devices-to-allocate"] == "310P-dev-0,Ascend310P,4096,90:;"
    assert a["huawei.com/Ascend310P"] == '[{"UUID":"310P-dev-0","memory":4096,"core":90}]'


def test_node_hami_core_support_annotation_and_config():
    fam = family(hami_core=True)
    assert node(fam, [p310(0)]).hami_core  # vnpus.hamiVnpuCore when the node does not say
    assert not node(fam, [p310(0)], annotations={"hami-vnpu-core": "yes"}).hami_core
    devs = node(family(), [p310(0)])  # E-23: hami-core asked of a node without it
    t = pod("p", ask(n=1, memory=4096), annotations={"huawei.com/vnpu-mode": "hami-core"})
    failed = devs.filter(t, devs.family.request(t), "")
    assert failed.code == StatusCode.Unschedulable and failed.reason.startswith("no ascend device available")


def test_fit_checks():
    devs = node(family(), [dict(p310(0), count=1)])
    fam = devs.family
    first = pod("a", ask(n=1, memory=3000))
    devs.allocate(first, fam.request(first), "", NOW)
    second = pod("b", ask(n=1, memory=3000))
    assert devs.filter(second, fam.request(second), "").code == StatusCode.Unschedulable  # count 1 used
    devs = node(family(), [p310(0)])
    too_many_cores = pod("c", ask(n=1, memory=3000, cores=9))  # template mode: devcore 8
    assert devs.filter(too_many_cores, fam.request(too_many_cores), "") is not None
    all_cores = pod("d", ask(n=1, memory=3000, cores=8))
    assert devs.filter(all_cores, fam.request(all_cores), "") is None
    devs.allocate(all_cores, fam.request(all_cores), "", NOW)
    no_cores = pod("e", ask(n=1, memory=3000))  # every core taken and the pod asks none
    assert devs.filter(no_cores, fam.request(no_cores), "") is not None


def test_partial_memory_on_several_devices_is_refused():
    """E-22: template mode, Nums > 1 must ask whole cards."""
    devs = node(family(), [p310(0), p310(1)])
    t = pod("p", ask(n=2, memory=4096))
    failed = devs.filter(t, devs.family.request(t), "")
    assert (failed.code, failed.reason) == (
        StatusCode.Error,
        "no ascend device available: vNPU does not support partial memory allocation when requesting multiple devices")
    whole = pod("w", ask(n=2))
    assert devs.filter(whole, devs.family.request(whole), "") is None


def test_memory_above_capacity_takes_the_smallest_template():
    """E-21: trimMemory gives 0, the request fits anything, the runtime info names the smallest template."""
    devs = node(family(), [p310(0)])
    t = pod("p", ask(n=1, memory=30000))
    a = devs.allocate(t, devs.family.request(t), "", NOW)
    assert a["hami.io/Ascend310P-devices-allocated"] == "310P-dev-0,Ascend310P,0,0:;"
    assert a["huawei.com/Ascend310P"] == '[{"UUID":"310P-dev-0","temp":"vir01"}]'


def test_score_binpack_example():
    """§6.8.4: the chosen device holds 3072 of 21527 MiB: s = 14.27, node score 140 with weight 10."""
    devs = node(family(), [p310(0)])
    old = pod("old", ask(n=1), annotations={"hami.io/Ascend310P-devices-allocated": "310P-dev-0,Ascend310P,3072,0:;"})
    devs.add_pod(old)
    t = pod("p", ask(n=1, memory=3000))
    s = devs.score(t, devs.family.request(t), "binpack")
    assert round(s, 2) == 14.27
    assert math.floor(s + 0.5) * 10 == 140


def test_910b_topology_and_network_score():
    """§6.8.4: devices 0, 1 full, 2 whole cards: net 1 ({4..7}) is larger than net 0 ({2, 3})."""
    fam = family(B3)
    devs = node(fam, [b3(i, net=0 if i < 4 else 1) for i in range(8)])
    full = pod("full", ask("Ascend910B3", n=2), annotations={
        "hami.io/Ascend910B3-devices-allocated": "910b3-0,Ascend910B3,65536,0:910b3-1,Ascend910B3,65536,0:;"})
    devs.add_pod(full)
    t = pod("p", ask("Ascend910B3", n=2))
    req = fam.request(t)
    res = devs.select(req, "")
    assert [d.id for d, _, _ in res[0]] == ["910b3-4", "910b3-5"]
    # one container: its first device, plus the network term 10 × 1/1
    assert devs.score(t, req, "binpack") == 10.0
    # without NetworkID on every device there is no topology: the first fitting devices
    plain = node(fam, [b3(i, net=0) for i in range(3)] + [b3(3)])
    assert [d.id for d, _, _ in plain.select(req, "")[0]] == ["910b3-0", "910b3-1"]


def test_policy_stored_by_score_is_what_allocate_uses():
    """§6.8.6: filter uses the configured policy, Allocate the one the last ScoreNode stored ("" without)."""
    devs = node(family(), [p310(0), p310(1)])
    old = pod("old", ask(n=1), annotations={"hami.io/Ascend310P-devices-allocated": "310P-dev-1,Ascend310P,3072,0:;"})
    devs.add_pod(old)
    clone = devs.clone()
    t = pod("p", ask(n=1, memory=3000))
    req = devs.family.request(t)
    # never scored (ScheduleWeight 0): register order, although binpack would pick the used card
    assert devs.allocate(t, req, "binpack", NOW)["hami.io/Ascend310P-devices-allocated"].startswith("310P-dev-0,")
    clone.score(t, req, "binpack")
    assert clone.allocate(t, req, "binpack", NOW)["hami.io/Ascend310P-devices-allocated"].startswith("310P-dev-1,")


def test_ledger_add_remove_and_release():
    devs = node(family(), [p310(0), p310(1)])
    two = pod("two", ask(n=1, memory=3000), ask(n=1, memory=3000), annotations={
        "hami.io/Ascend310P-devices-allocated": "310P-dev-0,Ascend310P,3072,0:;310P-dev-1,Ascend310P,3072,0:;",
        "hami.io/bind-phase": "success"})
    devs.add_pod(two)
    devs.add_pod(two)  # a pod already counted is a no-op
    # both containers count (Volcano counts only the first one, spec E-20)
    assert [(d.used, d.usedmem) for d in devs.devices] == [(1, 3072), (1, 3072)]
    assert devs.release(two) == ()  # bind-phase success: the device plugin owns the annotations
    assert [(d.used, d.usedmem) for d in devs.devices] == [(0, 0), (0, 0)]
    t = pod("p", ask(n=1, memory=3000))
    devs.allocate(t, devs.family.request(t), "", NOW)
    keys = devs.release(t)  # rollback inside the session, by pod UID
    assert [(d.used, d.usedmem) for d in devs.devices] == [(0, 0), (0, 0)]
    assert set(keys) == {
        "hami.io/vgpu-node", "hami.io/vgpu-time", "hami.io/bind-phase", "hami.io/bind-time", "predicate-time",
        "hami.io/Ascend310P-devices-to-allocate", "hami.io/Ascend310P-devices-allocated", "huawei.com/Ascend310P",
        "hami.io/Ascend910B3-devices-to-allocate", "hami.io/Ascend910B3-devices-allocated", "huawei.com/Ascend910B3"}


def test_malformed_ledger_annotation_is_skipped():
    devs = node(family(), [p310(0)])
    with structlog.testing.capture_logs() as logs:
        devs.add_pod(pod("bad", ask(n=1), annotations={"hami.io/Ascend310P-devices-allocated": "310P-dev-0,x:;"}))
        devs.add_pod(pod("gone", ask(n=1), annotations={"hami.io/Ascend310P-devices-allocated": "nope,Ascend310P,1,0:;"}))
    assert devs.devices[0].used == 0
    assert len(logs) == 2


def test_encode_decode_pod_single_device():
    v = encode_pod_single_device([[("a", "Ascend910B3", 16384, 0)], [("b", "Ascend910B3", 16384, 0)]])
    assert v == "a,Ascend910B3,16384,0:;b,Ascend910B3,16384,0:;"
    assert decode_pod_single_device(v) == [[("a", 16384, 0)], [("b", 16384, 0)], []]


def test_node_register_rules():
    fam = family()
    assert node(fam, [p310(0)], count="0") is None  # allocatable count 0: no devices
    with structlog.testing.capture_logs() as logs:
        assert node(fam, []) is None  # empty array
        bad = fam.build({"metadata": {"name": "bad", "annotations": {fam.register: '[{"id": 3}]'}},
                         "status": {"allocatable": {"huawei.com/Ascend310P": "1"}}}, "bad")
    assert bad is None
    assert logs[1]["node"] == "bad" and logs[1]["annotation"] == "hami.io/node-register-Ascend310P"
    # a NetworkID marks topology; health is stored and not checked
    devs = node(family(B3), [b3(0, net=2), dict(b3(1, net=2), health=False)])
    assert [(d.network, d.health) for d in devs.devices] == [(2.0, False), (2.0, False)]


def test_vnpus_config_forms_and_registry_order():
    cm = {"kube-system/volcano-vgpu-device-config": {"data": {"device-config.yaml": """
vnpus:
  hamiVnpuCore: true
  configs:
  - {commonWord: Ascend910B3, resourceName: huawei.com/Ascend910B3, resourceMemoryName: huawei.com/Ascend910B3-memory,
     memoryAllocatable: 65536, memoryCapacity: 65536,
     templates: [{name: big, memory: 32768}, {name: small, memory: 16384}]}
  - {commonWord: Ascend310P, resourceName: huawei.com/Ascend310P, resourceMemoryName: huawei.com/Ascend310P-memory}
"""}}}
    args = DeviceShareArgs(vgpu=True, ascend_hami_vnpu=True)
    cfg = load_device_config(cm, args)
    assert cfg.vnpus.hami_vnpu_core
    assert [t.name for t in cfg.vnpus.configs[0].templates] == ["small", "big"]
    assert [f.key for f in build_families(args, cfg)] == ["hamivgpu", "Ascend910B3", "Ascend310P"]
    legacy = {"kube-system/volcano-vgpu-device-config": {"data": {"device-config.yaml": """
vnpus:
- {commonWord: Ascend910A, resourceName: huawei.com/Ascend910A}
"""}}}
    cfg = load_device_config(legacy, args)
    assert not cfg.vnpus.hami_vnpu_core and [c.common_word for c in cfg.vnpus.configs] == ["Ascend910A"]
    # a ConfigMap without vnpus: no HAMi Ascend kind; no ConfigMap: the built-in Ascend310P
    no_vnpus = {"kube-system/volcano-vgpu-device-config": {"data": {"device-config.yaml": "nvidia: {}\n"}}}
    assert load_device_config(no_vnpus, args).vnpus.configs == ()
    assert [c.common_word for c in load_device_config({}, args).vnpus.configs] == ["Ascend310P"]


def test_ignored_resources_leave_generic_requests():
    """§6.8.10: memory and core names are not generic resources; the count still is."""
    conf = parse_conf("""
actions: "allocate"
tiers:
- plugins:
  - name: predicates
  - name: deviceshare
    arguments: {deviceshare.AscendHAMiVNPUEnable: true}
""")
    builder = device_builder(conf, {})
    assert builder.ignored == {"huawei.com/Ascend310P-memory", "huawei.com/Ascend310P-core"}
    manifest = {"metadata": {"name": "p", "namespace": "default", "uid": "p"},
                "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {
                    "requests": {"huawei.com/Ascend310P": "1", "huawei.com/Ascend310P-memory": "4096",
                                 "huawei.com/Ascend310P-core": "2"}}}]},
                "status": {"phase": "Pending"}}
    cache = Cache(devices=builder)
    cache.add_pod(manifest)
    assert set(cache.tasks["p"].resreq.scalars) == {"huawei.com/Ascend310P", "pods"}
    plain = Cache()
    plain.add_pod(manifest)
    assert "huawei.com/Ascend310P-memory" in plain.tasks["p"].resreq.scalars
    bound = {**manifest, "metadata": {"name": "b", "namespace": "default", "uid": "b"},
             "spec": {**manifest["spec"], "nodeName": "n1"}, "status": {"phase": "Running"}}
    plain.add_node({"metadata": {"name": "n1"}, "status": {"allocatable": {
        "cpu": "8", "pods": "110", "huawei.com/Ascend310P": "7", "huawei.com/Ascend310P-memory": "21527"}}})
    plain.add_pod(bound)
    assert plain.nodes["n1"].used.scalars["huawei.com/Ascend310P-memory"] == 4096 * 1000
    plain.set_device_builder(builder)  # a new configuration re-counts the requests, and the nodes
    assert set(plain.tasks["p"].resreq.scalars) == {"huawei.com/Ascend310P", "pods"}
    n1 = plain.nodes["n1"]
    assert "huawei.com/Ascend310P-memory" not in n1.used.scalars | n1.allocatable.scalars
    assert n1.used.scalars["huawei.com/Ascend310P"] == 1000 and "b" in n1.tasks


def test_allocate_error_when_nothing_fits_any_more():
    devs = node(family(), [dict(p310(0), count=1)])
    fam = devs.family
    a, b = pod("a", ask(n=1)), pod("b", ask(n=1))
    devs.allocate(a, fam.request(a), "", NOW)
    try:
        devs.allocate(b, fam.request(b), "", NOW)
    except AllocateError as e:
        assert str(e).startswith("failed to select ascend devices for pod b: no ascend device available")
    else:
        raise AssertionError("expected AllocateError")


def test_two_containers_take_different_devices():
    """§5.3: every container string ends with ';'; containers never share a device within a pod."""
    devs = node(family(B3), [b3(0), b3(1)])
    t = pod("p", ask("Ascend910B3", n=1, memory=16384), ask("Ascend910B3", n=1, memory=16384))
    a = devs.allocate(t, devs.family.request(t), "", NOW)
    assert a["hami.io/Ascend910B3-devices-to-allocate"] == "910b3-0,Ascend910B3,16384,0:;910b3-1,Ascend910B3,16384,0:;"
    assert a["huawei.com/Ascend910B3"] == '[{"UUID":"910b3-0","temp":"vir05_1c_16g"},{"UUID":"910b3-1","temp":"vir05_1c_16g"}]'
    # the rebuilt ledger counts both containers (spec E-20: Volcano only the first)
    rebuilt = node(family(B3), [b3(0), b3(1)])
    bound = pod("p", annotations={"hami.io/Ascend910B3-devices-allocated": a["hami.io/Ascend910B3-devices-allocated"]})
    rebuilt.add_pod(bound)
    assert [(d.used, d.usedmem) for d in rebuilt.devices] == [(1, 16384), (1, 16384)]
    one_card = node(family(B3), [b3(0)])
    assert one_card.filter(t, one_card.family.request(t), "").code == StatusCode.Unschedulable


def test_spread_prefers_an_unused_device():
    devs = node(family(), [p310(0), p310(1)])
    devs.add_pod(pod("old", ask(n=1), annotations={
        "hami.io/Ascend310P-devices-allocated": "310P-dev-0,Ascend310P,3072,0:;"}))
    t = pod("p", ask(n=1, memory=3000))
    req = devs.family.request(t)
    assert devs.score(t, req, "spread") == 100.0
    assert devs.allocate(t, req, "spread", NOW)["hami.io/Ascend310P-devices-allocated"].startswith("310P-dev-1,")


# HAMi's chart (charts/hami/templates/scheduler/device-configmap.yaml, spec §2.3.2): allocatable, capacity, templates
HAMI_CHIPS = {
    "Ascend910A": (32768, 32768, [("vir02", 2184), ("vir04", 4369), ("vir08", 8738), ("vir16", 17476)]),
    "Ascend910B2": (65536, 65536, [("vir03_1c_8g", 8192), ("vir06_1c_16g", 16384), ("vir12_3c_32g", 32768)]),
    "Ascend910B3": (65536, 65536, [("vir05_1c_16g", 16384), ("vir10_3c_32g", 32768)]),
    "Ascend910B4-1": (65536, 65536, [("vir05_1c_16g", 16384), ("vir10_3c_32g", 32768)]),
    "Ascend910B4": (32768, 32768, [("vir05_1c_8g", 8192), ("vir10_3c_16g", 16384)]),
    "Ascend310P": (21527, 24576, [("vir01", 3072), ("vir02", 6144), ("vir04", 12288)]),
}


def test_every_hami_chip_type_allocates_templates_and_whole_cards():
    words = tuple(HAMI_CHIPS)
    for cw, (allocatable, capacity, templates) in HAMI_CHIPS.items():
        cfg = VNPUConfig(cw, "", f"huawei.com/{cw}", f"huawei.com/{cw}-memory", allocatable, capacity, 0, 0,
                         tuple(VNPUTemplate(n, m) for n, m in templates))
        fam = AscendHAMiFamily(cfg, False, words)
        dev = {"id": f"{cw}-0", "count": 4, "devmem": allocatable, "devcore": 20, "type": cw}
        devs = node(fam, [dev, dict(dev, id=f"{cw}-1")])
        name, memory = templates[1]
        t = pod(f"{cw}-t", ask(cw, n=1, memory=memory - 1))
        a = devs.allocate(t, fam.request(t), "", NOW)
        assert a[f"hami.io/{cw}-devices-to-allocate"] == f"{cw}-0,{cw},{memory},0:;", cw
        assert a[f"huawei.com/{cw}"] == f'[{{"UUID":"{cw}-0","temp":"{name}"}}]', cw
        whole = pod(f"{cw}-w", ask(cw, n=2))
        assert devs.filter(whole, fam.request(whole), "").code == StatusCode.Unschedulable  # card 0 is shared now
        devs = node(fam, [dev, dict(dev, id=f"{cw}-1")])
        a = devs.allocate(whole, fam.request(whole), "", NOW)
        assert a[f"hami.io/{cw}-devices-allocated"] == f"{cw}-0,{cw},{allocatable},0:{cw}-1,{cw},{allocatable},0:;", cw
        assert a[f"huawei.com/{cw}"] == f'[{{"UUID":"{cw}-0"}},{{"UUID":"{cw}-1"}}]', cw
        assert set(fam.ignored) == {f"huawei.com/{cw}-memory", f"huawei.com/{cw}-core"}


def test_pending_reason_names_each_device_and_its_shortfall():
    devs = node(family(), [dict(p310(0), count=1), p310(1)])
    fam = devs.family
    devs.add_pod(pod("old", ask(n=1), annotations={
        "hami.io/Ascend310P-devices-allocated": "310P-dev-0,Ascend310P,3072,0:;310P-dev-1,Ascend310P,12288,8:;"}))
    t = pod("p", ask(n=2, cores=1))
    assert devs.filter(t, fam.request(t), "").reason == (
        "no ascend device available: 0 of 2 Ascend310P fit 21527MiB 1 cores "
        "(template mode: 310P-dev-0 1/1 vNPUs used; 310P-dev-1 9239MiB free < 21527MiB)")
    small = pod("s", ask(n=1, memory=1000, cores=1))
    assert devs.filter(small, fam.request(small), "").reason.endswith(
        "(template mode: 310P-dev-0 1/1 vNPUs used; 310P-dev-1 0 cores free < 1)")
