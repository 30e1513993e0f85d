"""HAMi Ascend vNPU end to end through ``vcsched simulate`` (spec/devices.md §4.3, §5.3, §6.8)."""

import json
from pathlib import Path

from .conftest import podgroup
from .test_deviceshare import TWO_A100, deviceshare_conf, gpu_node, mem, vgpu_pod

CONF_DIR = Path(__file__).resolve().parents[2] / "conf" / "examples"

DEVICE_CONFIG = """
---
apiVersion: v1
kind: ConfigMap
metadata: {name: volcano-vgpu-device-config, namespace: kube-system}
data:
  device-config.yaml: |
    nvidia:
      resourceCountName: volcano.sh/vgpu-number
      resourceMemoryName: volcano.sh/vgpu-memory
      resourceCoreName: volcano.sh/vgpu-cores
    vnpus:
      hamiVnpuCore: false
      configs:
      - commonWord: Ascend310P
        chipName: 310P3
        resourceName: huawei.com/Ascend310P
        resourceMemoryName: huawei.com/Ascend310P-memory
        memoryAllocatable: 21527
        memoryCapacity: 24576
        aiCore: 8
        aiCPU: 7
        templates:
        - {name: vir04, memory: 12288, aiCore: 4, aiCPU: 4}
        - {name: vir01, memory: 3072, aiCore: 1, aiCPU: 1}
        - {name: vir02, memory: 6144, aiCore: 2, aiCPU: 2}
      - commonWord: Ascend910B3
        chipName: 910B3
        resourceName: huawei.com/Ascend910B3
        resourceMemoryName: huawei.com/Ascend910B3-memory
        memoryAllocatable: 65536
        memoryCapacity: 65536
        aiCore: 20
        aiCPU: 7
        templates:
        - {name: vir05_1c_16g, memory: 16384, aiCore: 5, aiCPU: 1}
        - {name: vir10_3c_32g, memory: 32768, aiCore: 10, aiCPU: 3}
"""


def conf(**args) -> str:
    return deviceshare_conf({"deviceshare.AscendHAMiVNPUEnable": True, **args})


def npu_node(name: str, cw: str, devices: list[dict], register: str | None = None, hami_core: str | None = None,
             count: int | None = None) -> str:
    """A node as HAMi's ascend-device-plugin publishes it: ``<resourceName>`` = the vNPU slots."""
    count = count if count is not None else sum(d.get("count", 1) for d in devices) or 1
    reg = register if register is not None else json.dumps(devices)
    ann = {f"hami.io/node-register-{cw}": reg}
    if hami_core is not None:
        ann["hami-vnpu-core"] = hami_core
    return f"""
---
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{kubernetes.io/hostname: {name}}}
  annotations: {json.dumps(ann)}
status:
  allocatable: {{cpu: "16", memory: 64Gi, pods: "110", huawei.com/{cw}: "{count}"}}
"""


def b3(i: int, net: int | None = None) -> dict:
    d = {"id": f"910b3-{i}", "index": i, "count": 4, "devmem": 65536, "devcore": 20, "type": "Ascend910B3",
         "health": True}
    if net is not None:
        d["custominfo"] = {"NetworkID": net}
    return d


def p310(i: int) -> dict:
    return {"id": f"310P-dev-{i}", "index": i, "count": 7, "devmem": 21527, "devcore": 8, "type": "Ascend310P",
            "health": True}


def npu_pod(name: str, *containers: dict, annotations: dict | None = None, node_name: str | None = None) -> str:
    ctrs = "".join(f"""
  - name: c{i}
    image: busybox
    resources: {{limits: {json.dumps({k: str(v) for k, v in lim.items()})}}}""" for i, lim in enumerate(containers))
    return f"""
---
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
  annotations: {json.dumps(annotations or {})}
spec:
  schedulerName: volcano
  {f'nodeName: {node_name}' if node_name else ''}
  containers:{ctrs}
{'status: {phase: Running}' if node_name else ''}
"""


def ask(cw: str, n: int | None = None, memory: int | None = None, cores: int | None = None) -> dict:
    lim = {}
    if n is not None:
        lim[f"huawei.com/{cw}"] = n
    if memory is not None:
        lim[f"huawei.com/{cw}-memory"] = memory
    if cores is not None:
        lim[f"huawei.com/{cw}-core"] = cores
    return lim


def ann(out, pod: str) -> dict:
    return out["pods"][f"default/{pod}"]["annotations"]


def test_a_910b_pod_on_a_node(simulate):
    cluster = DEVICE_CONFIG + npu_node("npu-1", "Ascend910B3", [b3(0), b3(1)]) + npu_pod("p", ask("Ascend910B3", 1))
    code, out = simulate(cluster, conf=conf())
    assert code == 0
    placed = out["pods"]["default/p"]
    assert placed["node"] == "npu-1"
    a = ann(out, "p")
    # no memory: the whole card (devmem 65536 rounds to memoryAllocatable), no template
    assert a["hami.io/Ascend910B3-devices-to-allocate"] == "910b3-0,Ascend910B3,65536,0:;"
    assert a["hami.io/Ascend910B3-devices-allocated"] == "910b3-0,Ascend910B3,65536,0:;"
    assert a["huawei.com/Ascend910B3"] == '[{"UUID":"910b3-0"}]'
    assert a["hami.io/vgpu-node"] == "npu-1" and a["hami.io/bind-phase"] == "allocating"
    assert a["predicate-time"] == a["hami.io/vgpu-time"] == a["hami.io/bind-time"]
    dev = {d["id"]: d for d in out["nodes"]["npu-1"]["devices"]}
    assert dev["910b3-0"]["kind"] == "Ascend910B3"
    assert (dev["910b3-0"]["memory_used"], dev["910b3-0"]["slots_used"], dev["910b3-0"]["pods"]) == (65536, 1, ["default/p"])
    assert dev["910b3-1"]["slots_used"] == 0


def test_memory_rounds_up_to_a_template(simulate):
    cluster = DEVICE_CONFIG + npu_node("npu-1", "Ascend310P", [p310(0)]) + npu_pod("p", ask("Ascend310P", 1, memory=4096))
    code, out = simulate(cluster, conf=conf())
    assert code == 0
    a = ann(out, "p")
    assert a["hami.io/Ascend310P-devices-to-allocate"] == "310P-dev-0,Ascend310P,6144,0:;"
    assert a["huawei.com/Ascend310P"] == '[{"UUID":"310P-dev-0","temp":"vir02"}]'
    # the memory resource is not a generic resource (GetIgnoredDevices): the node need not advertise it
    assert out["nodes"]["npu-1"]["devices"][0]["memory_used"] == 6144


def test_two_pods_share_a_card_with_binpack(simulate):
    cluster = (DEVICE_CONFIG + npu_node("npu-1", "Ascend310P", [p310(0), p310(1)])
               + npu_pod("a", ask("Ascend310P", 1, memory=3000)) + npu_pod("b", ask("Ascend310P", 1, memory=6000)))
    args = {"deviceshare.SchedulePolicy": "binpack", "deviceshare.ScheduleWeight": 10}
    code, out = simulate(cluster, conf=conf(**args))
    assert code == 0
    first = {p: ann(out, p)["hami.io/Ascend310P-devices-allocated"].split(",")[0] for p in ("a", "b")}
    assert first["a"] == first["b"]
    dev = {d["id"]: d for d in out["nodes"]["npu-1"]["devices"]}
    assert dev[first["a"]]["memory_used"] == 3072 + 6144 and dev[first["a"]]["slots_used"] == 2


SPREAD = {"deviceshare.SchedulePolicy": "spread", "deviceshare.ScheduleWeight": 10}


def test_spread_takes_the_idle_card_where_nodes_are_scored_not_on_a_lone_node(simulate):
    """Allocate uses the policy ScoreNode stored (spec/devices.md §6.8.6), and allocate scores nodes only
    when more than one fits (a lone candidate is taken unscored): on one node spread is never stored and
    the pods take the cards in their order, both the first; beside a second node that fits, the nodes
    are scored, and spread puts the second pod on the first node's idle card."""
    pods = npu_pod("a", ask("Ascend310P", 1, memory=3000)) + npu_pod("b", ask("Ascend310P", 1, memory=6000))
    lone = DEVICE_CONFIG + npu_node("npu-1", "Ascend310P", [p310(0), p310(1)]) + pods
    code, out = simulate(lone, conf=conf(**SPREAD))
    assert code == 0
    first = {p: ann(out, p)["hami.io/Ascend310P-devices-allocated"].split(",")[0] for p in ("a", "b")}
    assert first == {"a": "310P-dev-0", "b": "310P-dev-0"}
    # npu-2's one card is half used, so every spread score prefers npu-1's idle cards
    busy = {**p310(0), "id": "310P-busy-0"}
    running = npu_pod("old", ask("Ascend310P", 1, memory=12288), node_name="npu-2", annotations={
        "hami.io/Ascend310P-devices-allocated": "310P-busy-0,Ascend310P,12288,0:;", "hami.io/bind-phase": "success"})
    two = lone + npu_node("npu-2", "Ascend310P", [busy]) + running
    code, out = simulate(two, conf=conf(**SPREAD))
    assert code == 0
    assert out["pods"]["default/a"]["node"] == out["pods"]["default/b"]["node"] == "npu-1"
    first = {p: ann(out, p)["hami.io/Ascend310P-devices-allocated"].split(",")[0] for p in ("a", "b")}
    assert first == {"a": "310P-dev-0", "b": "310P-dev-1"}


def test_pods_of_one_shape_on_a_lone_node_take_it_unscored_every_time(simulate):
    """The second and later pods of one shape in a session search as the first does: Volcano takes the
    lone feasible node unscored each time, so spread is never stored and every pod takes the first card
    with room (a search that scored the node for the shape would spread them over both cards)."""
    pods = [npu_pod(name, ask("Ascend310P", 1, memory=3000)) for name in ("a", "b", "c")]
    cluster = DEVICE_CONFIG + npu_node("npu-1", "Ascend310P", [p310(0), p310(1)]) + pods[0] + pods[1] + pods[2]
    code, out = simulate(cluster, conf=conf(**SPREAD))
    assert code == 0
    first = {p: ann(out, p)["hami.io/Ascend310P-devices-allocated"].split(",")[0] for p in ("a", "b", "c")}
    assert first == {"a": "310P-dev-0", "b": "310P-dev-0", "c": "310P-dev-0"}


def test_a_running_pod_counts_from_its_annotation(simulate):
    running = npu_pod("old", ask("Ascend310P", 1, memory=12288), node_name="npu-1", annotations={
        "hami.io/Ascend310P-devices-allocated": "310P-dev-0,Ascend310P,12288,0:;", "hami.io/bind-phase": "success"})
    cluster = (DEVICE_CONFIG + npu_node("npu-1", "Ascend310P", [p310(0)]) + running
               + npu_pod("fits", ask("Ascend310P", 1, memory=6000)) + npu_pod("too-big", ask("Ascend310P", 1, memory=12000)))
    code, out = simulate(cluster, conf=conf())
    assert code == 0
    assert out["pods"]["default/fits"]["node"] == "npu-1"
    assert out["pods"]["default/too-big"]["node"] is None
    assert out["pods"]["default/too-big"]["reason"] == (
        "0/1 nodes are unavailable: 1 no ascend device available: 0 of 1 Ascend310P fit 12288MiB "
        "(template mode: 310P-dev-0 3095MiB free < 12288MiB).")


def test_type_mismatch_stays_pending_with_reason(simulate):
    """A 910B3 request: the 310P node has no such kind (generic fit refuses the count), the 910B3 node's
    only card is taken whole (the device filter refuses it, naming kind and shortfall)."""
    whole = npu_pod("whole", ask("Ascend910B3", 1), node_name="npu-910", annotations={
        "hami.io/Ascend910B3-devices-allocated": "910b3-0,Ascend910B3,65536,0:;"})
    cluster = (DEVICE_CONFIG + npu_node("npu-310", "Ascend310P", [p310(0)]) + npu_node("npu-910", "Ascend910B3", [b3(0)])
               + whole + npu_pod("p", ask("Ascend910B3", 1)))
    code, out = simulate(cluster, conf=conf())
    assert code == 0
    assert out["pods"]["default/p"]["node"] is None
    assert out["pods"]["default/p"]["reason"] == (
        "0/2 nodes are unavailable: 1 Insufficient huawei.com/Ascend910B3, "
        "1 no ascend device available: 0 of 1 Ascend910B3 fit 65536MiB (template mode: 910b3-0 0MiB free < 65536MiB).")
    # hami-core asked of a node that does not run it: every device fails fit (spec E-23)
    cluster = (DEVICE_CONFIG + npu_node("npu-1", "Ascend310P", [p310(0)], hami_core="false")
               + npu_pod("hc", ask("Ascend310P", 1, memory=4096, cores=50), annotations={"huawei.com/vnpu-mode": "hami-core"}))
    code, out = simulate(cluster, conf=conf())
    assert out["pods"]["default/hc"]["reason"] == (
        "0/1 nodes are unavailable: 1 no ascend device available: 0 of 1 Ascend310P fit 4096MiB 50 cores "
        "(hami-core mode, the node does not run hami-core).")


def test_hami_core_mode_writes_memory_and_core(simulate):
    cluster = (DEVICE_CONFIG + npu_node("npu-1", "Ascend310P", [p310(0)], hami_core="true")
               + npu_pod("hc", ask("Ascend310P", 1, memory=4096, cores=90), annotations={"huawei.com/vnpu-mode": "hami-core"}))
    code, out = simulate(cluster, conf=conf())
    a = ann(out, "hc")
    assert a["hami.io/Ascend310P-devices-to-allocate"] == "310P-dev-0,Ascend310P,4096,90:;"
    assert a["huawei.com/Ascend310P"] == '[{"UUID":"310P-dev-0","memory":4096,"core":90}]'


def test_910b_topology_takes_the_larger_network(simulate):
    devices = [b3(i, net=0 if i < 4 else 1) for i in range(8)]
    full = npu_pod("full", ask("Ascend910B3", 2), node_name="npu-1", annotations={
        "hami.io/Ascend910B3-devices-allocated": "910b3-0,Ascend910B3,65536,0:910b3-1,Ascend910B3,65536,0:;"})
    cluster = DEVICE_CONFIG + npu_node("npu-1", "Ascend910B3", devices) + full + npu_pod("p", ask("Ascend910B3", 2))
    code, out = simulate(cluster, conf=conf())
    assert code == 0
    ids = [x.split(",")[0] for x in ann(out, "p")["hami.io/Ascend910B3-devices-allocated"].split(":") if "," in x]
    assert ids == ["910b3-4", "910b3-5"]


def test_a_cluster_mixing_vgpu_and_ascend_nodes(simulate):
    cluster = (DEVICE_CONFIG + gpu_node("gpu-1", TWO_A100) + npu_node("npu-1", "Ascend310P", [p310(0)])
               + vgpu_pod("g", mem(1000)) + npu_pod("n", ask("Ascend310P", 1, memory=3000)))
    code, out = simulate(cluster, conf=conf(**{"deviceshare.VGPUEnable": True}))
    assert code == 0
    assert out["pods"]["default/g"]["node"] == "gpu-1"
    assert out["pods"]["default/g"]["annotations"]["volcano.sh/vgpu-ids-new"] == "GPU-b,NVIDIA,1000,0:"
    assert out["pods"]["default/n"]["node"] == "npu-1"
    assert ann(out, "n")["hami.io/Ascend310P-devices-allocated"] == "310P-dev-0,Ascend310P,3072,0:;"
    assert not any(k.startswith("hami.io/") for k in ann(out, "g"))


def test_malformed_register_ignores_that_node_only(simulate):
    """The bad node has no Ascend310P kind; as in Volcano the device filter then skips it (a kind missing
    on a node is not checked), so only generic fit applies there: the binpack score of the good node's
    used card decides, and a pod alone with the bad node binds there without device annotations."""
    bad = npu_node("bad", "Ascend310P", [p310(0)], register='[{"id": "x", "count": "seven"}]')
    old = npu_pod("old", ask("Ascend310P", 1, memory=3000), node_name="good", annotations={
        "hami.io/Ascend310P-devices-allocated": "310P-dev-0,Ascend310P,3072,0:;"})
    cluster = (DEVICE_CONFIG + bad + npu_node("good", "Ascend310P", [p310(0)]) + old
               + npu_pod("p", ask("Ascend310P", 1, memory=3000)))
    args = {"deviceshare.SchedulePolicy": "binpack", "deviceshare.ScheduleWeight": 1}
    code, out = simulate(cluster, conf=conf(**args))
    assert code == 0
    assert out["nodes"]["bad"]["devices"] == []
    assert [d["id"] for d in out["nodes"]["good"]["devices"]] == ["310P-dev-0"]
    assert out["pods"]["default/p"]["node"] == "good"
    assert ann(out, "p")["hami.io/Ascend310P-devices-allocated"] == "310P-dev-0,Ascend310P,3072,0:;"
    code, out = simulate(DEVICE_CONFIG + bad + npu_pod("p", ask("Ascend310P", 1, memory=3000)), conf=conf(**args))
    assert out["pods"]["default/p"]["node"] == "bad"
    assert not any(k.startswith(("hami.io/", "huawei.com/")) for k in ann(out, "p"))


def test_bad_ascend_requests_exit_2(simulate):
    node = DEVICE_CONFIG + npu_node("npu-1", "Ascend310P", [p310(0)])
    code, err = simulate(node + npu_pod("neg", {"huawei.com/Ascend310P-memory": -5}), conf=conf())
    assert code == 2 and "huawei.com/Ascend310P-memory" in err
    code, err = simulate(node + npu_pod("nan", {"huawei.com/Ascend310P": "lots"}), conf=conf())
    assert code == 2 and "huawei.com/Ascend310P" in err


def test_conf_example_ascend(simulate):
    code, out = simulate((CONF_DIR / "ascend.yaml").read_text())  # its conf is the ConfigMap inside
    assert code == 0
    placed = {k: v["node"] for k, v in out["pods"].items()}
    assert placed == {"default/train-910b": "npu-910b", "default/infer-310p": "npu-310p",
                      "default/infer-310p-2": "npu-310p"}
    assert ann(out, "infer-310p")["huawei.com/Ascend310P"] == '[{"UUID":"310P-dev-0","temp":"vir02"}]'
    assert ann(out, "infer-310p-2")["hami.io/Ascend310P-devices-allocated"] == "310P-dev-0,Ascend310P,3072,0:;"
    assert ann(out, "train-910b")["hami.io/Ascend910B3-devices-allocated"] == (
        "910b3-0,Ascend910B3,65536,0:910b3-1,Ascend910B3,65536,0:;")
    # queue accounting (§6.8.9, §6.8.10): the counts as requested; memory and cores are not generic resources
    allocated = out["queues"]["default"]["allocated"]
    assert (allocated["huawei.com/Ascend310P"], allocated["huawei.com/Ascend910B3"]) == ("2", "2")
    assert not any(k.endswith(("-memory", "-core")) for k in allocated)


def test_a_gang_that_fails_leaves_no_npu_use(simulate):
    """Two whole cards for a gang of three on a two-card node: the discarded allocation gives them back
    inside the session (Volcano's HAMi Ascend rollback works too, spec §1.4), so a later pod fits."""
    g = {"scheduling.k8s.io/group-name": "gang"}
    high = "\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n"
    gang = high + podgroup("gang", 3, extra="  priorityClassName: high") + "".join(
        npu_pod(f"g-{i}", ask("Ascend310P", 1), annotations=g) for i in range(3))  # tried first, then discarded
    cluster = DEVICE_CONFIG + npu_node("npu-1", "Ascend310P", [p310(0), p310(1)]) + gang
    code, out = simulate(cluster + npu_pod("solo", ask("Ascend310P", 2)), "--cycles", "1", conf=conf())
    assert code == 0
    assert all(out["pods"][f"default/g-{i}"]["node"] is None for i in range(3))
    assert all("hami.io/bind-phase" not in ann(out, f"g-{i}") for i in range(3))
    assert out["pods"]["default/solo"]["node"] == "npu-1"
    assert [d["pods"] for d in out["nodes"]["npu-1"]["devices"]] == [["default/solo"], ["default/solo"]]
