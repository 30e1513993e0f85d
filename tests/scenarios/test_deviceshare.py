"""deviceshare end to end through ``vcsched simulate``: vGPU (hami-core, MIG) and gpushare."""

import json

from .conftest import node, podgroup

A100 = "NVIDIA-NVIDIA A100-PCIE-40GB"
T4 = "NVIDIA-Tesla T4"


def conf(**args) -> str:
    return deviceshare_conf({"deviceshare.VGPUEnable": True, **args})


def deviceshare_conf(arguments: dict) -> str:
    """The scenarios' conf: the default tiers with nodeorder, and deviceshare with ``arguments``."""
    return f"""
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
  - name: nodeorder
  - name: deviceshare
    arguments: {json.dumps(arguments)}
"""


def gpu_node(name: str, gpus: list[tuple[str, int, int, str]], mode: str = "hami-core", register: str | None = None) -> str:
    """A node as volcano-vgpu-device-plugin publishes it: (uuid, split, MiB, type) per GPU."""
    reg = register if register is not None else "".join(f"{u},{n},{m},{t},true,{mode}:" for u, n, m, t in gpus)
    return f"""
---
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{kubernetes.io/hostname: {name}}}
  annotations: {{volcano.sh/node-vgpu-register: "{reg}"}}
status:
  allocatable: {{cpu: "16", memory: 64Gi, pods: "110", volcano.sh/vgpu-number: "{sum(g[1] for g in gpus) or 1}",
                volcano.sh/vgpu-memory: "{sum(g[2] for g in gpus) or 1}", volcano.sh/vgpu-cores: "{100 * len(gpus) or 1}"}}
"""


def vgpu_pod(name: str, *containers: dict, annotations: dict | None = None, labels: dict | None = None,
             group: str | None = None, node_name: str | None = None, extra_meta: str = "") -> str:
    ann = dict(annotations or {})
    if group:
        ann["scheduling.k8s.io/group-name"] = group
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
  annotations: {json.dumps(ann)}
  labels: {json.dumps(labels or {})}
{extra_meta}
spec:
  schedulerName: volcano
  {f'nodeName: {node_name}' if node_name else ''}
  containers:{ctrs}
{'status: {phase: Running}' if node_name else ''}
"""


def mem(mib: int, n: int | None = None, cores: int | None = None) -> dict:
    lim = {"volcano.sh/vgpu-memory": mib}
    if n is not None:
        lim["volcano.sh/vgpu-number"] = n
    if cores is not None:
        lim["volcano.sh/vgpu-cores"] = cores
    return lim


def ids(out, pod: str) -> str:
    return out["pods"][f"default/{pod}"]["annotations"].get("volcano.sh/vgpu-ids-new", "")


def first_gpu(out, pod: str) -> str:
    return ids(out, pod).split(",")[0]


TWO_A100 = [("GPU-a", 10, 40960, A100), ("GPU-b", 10, 40960, A100)]


def test_binpack_and_spread_at_device_level(simulate):
    pods = vgpu_pod("p1", mem(1000)) + vgpu_pod("p2", mem(1000))
    code, out = simulate(gpu_node("n1", TWO_A100) + pods, conf=conf(**{"deviceshare.SchedulePolicy": "binpack"}))
    assert code == 0
    assert first_gpu(out, "p1") == first_gpu(out, "p2") == "GPU-a"
    annotations = out["pods"]["default/p1"]["annotations"]
    assert annotations["volcano.sh/devices-to-allocate"] == "GPU-a,NVIDIA,1000,0:"
    assert annotations["volcano.sh/vgpu-node"] == "n1" and annotations["volcano.sh/bind-phase"] == "allocating"
    code, out = simulate(gpu_node("n1", TWO_A100) + pods, conf=conf(**{"deviceshare.SchedulePolicy": "spread"}))
    assert {first_gpu(out, "p1"), first_gpu(out, "p2")} == {"GPU-a", "GPU-b"}
    # no policy: the legacy order, highest index first
    code, out = simulate(gpu_node("n1", TWO_A100) + vgpu_pod("p1", mem(1000)), conf=conf())
    assert first_gpu(out, "p1") == "GPU-b"


def test_binpack_at_node_level_prefers_the_fuller_node(simulate):
    running = vgpu_pod("old", mem(20000), node_name="n2",
                       annotations={"volcano.sh/vgpu-ids-new": "GPU-c,NVIDIA,20000,0:", "volcano.sh/bind-phase": "success"})
    cluster = (gpu_node("n1", TWO_A100) + gpu_node("n2", [("GPU-c", 10, 40960, A100), ("GPU-d", 10, 40960, A100)])
               + running + vgpu_pod("new", mem(4096)))
    code, out = simulate(cluster, conf=conf(**{"deviceshare.SchedulePolicy": "binpack", "deviceshare.ScheduleWeight": 10}))
    assert out["pods"]["default/new"]["node"] == "n2" and first_gpu(out, "new") == "GPU-c"
    gpu_c = next(d for d in out["nodes"]["n2"]["devices"] if d["id"] == "GPU-c")
    assert gpu_c == {"kind": "hamivgpu", "id": "GPU-c", "type": A100, "health": True, "memory_used": 24096,
                     "memory_total": 40960, "cores_used": 0, "slots_used": 2, "slots_total": 10,
                     "pods": ["default/new", "default/old"]}


def test_type_and_uuid_selection(simulate):
    cluster = gpu_node("n1", [("GPU-t4", 10, 15360, T4), ("GPU-a", 10, 40960, A100)])
    cluster += vgpu_pod("want-t4", mem(1000), annotations={"nvidia.com/use-gputype": "t4"})
    cluster += vgpu_pod("no-a100", mem(1000), annotations={"nvidia.com/nouse-gputype": "A100"})
    cluster += vgpu_pod("by-uuid", mem(1000), annotations={"volcano.sh/vgpu-use-gpuuuid": "GPU-a"})
    cluster += vgpu_pod("no-h100", mem(1000), annotations={"nvidia.com/use-gputype": "H100"})
    code, out = simulate(cluster, conf=conf())
    assert first_gpu(out, "want-t4") == "GPU-t4"
    assert first_gpu(out, "no-a100") == "GPU-t4"
    assert first_gpu(out, "by-uuid") == "GPU-a"
    reason = out["pods"]["default/no-h100"]["reason"]
    assert out["pods"]["default/no-h100"]["node"] is None
    assert reason == "0/1 nodes are unavailable: 1 hami-vgpuDeviceSharing error: not enough gpu fitted on this node."


def test_exclusivity_rules(simulate):
    rules = {"deviceshare.SchedulePolicy": "binpack", "deviceshare.GPUExclusiveRules": [{"workloadType": "training"}]}
    cluster = gpu_node("n1", TWO_A100)
    for name, kind in (("t1", "training"), ("t2", "training"), ("i1", "inference"), ("t3", "training")):
        cluster += vgpu_pod(name, mem(1000), labels={"workloadType": kind})
    code, out = simulate(cluster, conf=conf(**rules))
    assert {first_gpu(out, "t1"), first_gpu(out, "t2")} == {"GPU-a", "GPU-b"}
    assert out["pods"]["default/i1"]["node"] == "n1"
    assert out["pods"]["default/t3"]["node"] is None
    assert out["pods"]["default/t3"]["reason"] == (
        "0/1 nodes are unavailable: 1 hami-vgpuDeviceSharing error: not enough gpu fitted on this node.")


def test_a_gang_that_fails_leaves_no_device_use(simulate):
    one_slot = [("GPU-a", 1, 40960, A100), ("GPU-b", 1, 40960, A100)]
    gang = podgroup("gang", 3) + "".join(vgpu_pod(f"g-{i}", mem(1000), group="gang") for i in range(3))
    code, out = simulate(gpu_node("n1", one_slot) + gang, conf=conf(**{"deviceshare.SchedulePolicy": "binpack"}))
    assert all(out["pods"][f"default/g-{i}"]["node"] is None for i in range(3))
    assert all("volcano.sh/vgpu-ids-new" not in out["pods"][f"default/g-{i}"]["annotations"] for i in range(3))
    assert all(d["slots_used"] == 0 and d["memory_used"] == 0 for d in out["nodes"]["n1"]["devices"])
    # the devices the gang tried stay free for a later pod in the same session
    code, out = simulate(gpu_node("n1", one_slot) + gang + vgpu_pod("solo", mem(1000)),
                         conf=conf(**{"deviceshare.SchedulePolicy": "binpack"}))
    assert out["pods"]["default/solo"]["node"] == "n1"
    assert sum(d["slots_used"] for d in out["nodes"]["n1"]["devices"]) == 1


def test_a_deleted_pod_frees_its_devices(simulate):
    going = vgpu_pod("going", mem(40960), node_name="n1", annotations={"volcano.sh/vgpu-ids-new": "GPU-a,NVIDIA,40960,0:"},
                     extra_meta="  deletionTimestamp: '2026-01-01T00:00:00Z'")
    cluster = gpu_node("n1", [("GPU-a", 10, 40960, A100)]) + going + vgpu_pod("next", mem(40960))
    code, out = simulate(cluster, conf=conf())
    assert out["pods"]["default/next"]["node"] == "n1"
    assert out["nodes"]["n1"]["devices"][0]["pods"] == ["default/next"]


def test_multi_container_pods(simulate):
    pod = vgpu_pod("multi", mem(2000, n=2), {"cpu": "100m"}, mem(3000))
    code, out = simulate(gpu_node("n1", TWO_A100) + pod, conf=conf(**{"deviceshare.SchedulePolicy": "binpack"}))
    assert ids(out, "multi") == "GPU-a,NVIDIA,2000,0:GPU-b,NVIDIA,2000,0:;GPU-a,NVIDIA,3000,0:"
    used = {d["id"]: d["memory_used"] for d in out["nodes"]["n1"]["devices"]}
    assert used == {"GPU-a": 5000, "GPU-b": 2000}


MIG_CM = """
---
apiVersion: v1
kind: ConfigMap
metadata: {name: volcano-vgpu-device-config, namespace: kube-system}
data:
  device-config.yaml: |
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
        - group: group2
          geometries: [{name: 2g.10gb, memory: 10240, count: 3}, {name: 1g.5gb, memory: 5120, count: 1}]
        - group: group4
          geometries: [{name: 7g.40gb, memory: 40960, count: 1}]
"""


def test_mixed_modes_mig_and_hami_core(simulate):
    cluster = (MIG_CM + gpu_node("core", [("GPU-c", 10, 40960, A100)])
               + gpu_node("mig", [("GPU-m", 10, 40960, A100)], mode="mig")
               + vgpu_pod("wants-mig", mem(8000), annotations={"volcano.sh/vgpu-mode": "mig"})
               + vgpu_pod("wants-mig-2", mem(3000), annotations={"volcano.sh/vgpu-mode": "mig"})
               + vgpu_pod("wants-core", mem(8000), annotations={"volcano.sh/vgpu-mode": "hami-core"})
               + vgpu_pod("wants-mps", mem(8000), annotations={"volcano.sh/vgpu-mode": "mps"}))
    code, out = simulate(cluster, conf=conf())
    assert ids(out, "wants-mig") == "GPU-m[group2-0],NVIDIA,8000,0:"
    assert ids(out, "wants-mig-2") == "GPU-m[group2-1],NVIDIA,3000,0:"
    assert out["pods"]["default/wants-core"]["node"] == "core"
    assert out["pods"]["default/wants-mps"]["node"] is None
    reason = out["pods"]["default/wants-mps"]["reason"]
    assert "pod required sharing mode mps is not the same as the node mode hami-core" in reason
    assert "pod required sharing mode mps is not the same as the node mode mig" in reason
    mig = out["nodes"]["mig"]["devices"][0]
    assert (mig["memory_used"], mig["slots_used"]) == (20480, 2)
    # without the ConfigMap there are no geometries: the MIG node runs as hami-core
    code, out = simulate(cluster.replace(MIG_CM, ""), conf=conf())
    assert out["pods"]["default/wants-mig"]["node"] is None
    assert "node mode hami-core" in out["pods"]["default/wants-mig"]["reason"]


def test_more_vgpus_than_gpus(simulate):
    cluster = gpu_node("good", TWO_A100) + vgpu_pod("two", mem(1000, n=2)) + vgpu_pod("three", mem(1000, n=3))
    code, out = simulate(cluster, conf=conf())
    assert out["pods"]["default/two"]["node"] == "good"
    assert out["pods"]["default/three"]["reason"] == \
        "0/1 nodes are unavailable: 1 hami-vgpuDeviceSharing error: no enough gpu cards on node good."


def test_malformed_register_annotation_leaves_other_nodes_alone(simulate):
    """The bad node's vGPUs are ignored (decodeNodeDevices rejects the node and NewGPUDevices returns a
    nil *GPUDevices, which setNodeOthersResource stores in NodeInfo.Others all the same).  Volcano's
    deviceshare predicate finds that nil device and, the pod asking for a vGPU, fails the node:
    "node not initialized with device" + the kind, whatever the node's allocatable says.  So the pod
    goes to the good node, and alone with the bad node it stays pending, never bound without devices."""
    bad = gpu_node("bad", TWO_A100, register="GPU-x,10,40960:")
    pod = vgpu_pod("p1", mem(1000), annotations={"volcano.sh/vgpu-use-gpuuuid": "GPU-b"})
    args = {"deviceshare.SchedulePolicy": "binpack", "deviceshare.ScheduleWeight": 1}
    code, out = simulate(bad + gpu_node("good", TWO_A100) + pod, conf=conf(**args))
    assert code == 0
    assert out["nodes"]["bad"]["devices"] == []
    assert [d["id"] for d in out["nodes"]["good"]["devices"]] == ["GPU-a", "GPU-b"]
    assert out["pods"]["default/p1"]["node"] == "good"
    assert first_gpu(out, "p1") == "GPU-b"
    code, out = simulate(bad + pod, conf=conf(**args))
    assert code == 0
    pending = out["pods"]["default/p1"]
    assert pending["node"] is None
    assert pending["reason"] == "0/1 nodes are unavailable: 1 node not initialized with devicehamivgpu."


def test_bad_device_inputs_exit_2(simulate):
    code, err = simulate(gpu_node("n1", TWO_A100) + vgpu_pod("neg", {"volcano.sh/vgpu-memory": -5}), conf=conf())
    assert code == 2 and "volcano.sh/vgpu-memory" in err
    code, err = simulate(gpu_node("n1", TWO_A100) + vgpu_pod("nan", {"volcano.sh/vgpu-number": "lots"}), conf=conf())
    assert code == 2 and "volcano.sh/vgpu-number" in err
    code, err = simulate(gpu_node("n1", TWO_A100), conf=conf(**{"deviceshare.GPUNumberEnable": True}))
    assert code == 2 and "gpu-share and vgpu can't be used together" in err


def gpushare_node(name: str, memory: int, number: int, unhealthy: str | None = None) -> str:
    ann = f"annotations: {{volcano.sh/gpu-unhealthy-ids: '{unhealthy}'}}" if unhealthy else ""
    return f"""
---
apiVersion: v1
kind: Node
metadata:
  name: {name}
  {ann}
status:
  capacity: {{cpu: "16", memory: 64Gi, pods: "110", volcano.sh/gpu-memory: "{memory}", volcano.sh/gpu-number: "{number}"}}
"""


def test_gpushare_memory_skips_unhealthy_cards(simulate):
    sharing = conf(**{"deviceshare.VGPUEnable": False, "deviceshare.GPUSharingEnable": True})
    cluster = (gpushare_node("n1", 30000, 3, unhealthy="0")
               + vgpu_pod("a", {"volcano.sh/gpu-memory": 6000}) + vgpu_pod("b", {"volcano.sh/gpu-memory": 6000})
               + vgpu_pod("c", {"volcano.sh/gpu-memory": 9000}))
    code, out = simulate(cluster, conf=sharing)
    index = {p: out["pods"][f"default/{p}"]["annotations"].get("volcano.sh/gpu-index") for p in "abc"}
    assert index == {"a": "1", "b": "2", "c": None}  # lowest fitting card; card 0 is unhealthy
    assert out["pods"]["default/a"]["annotations"]["volcano.sh/predicate-time"].isdigit()
    assert "GpuShare no enough gpu memory on node n1" in out["pods"]["default/c"]["reason"]


def test_gpushare_number_takes_idle_cards(simulate):
    number = conf(**{"deviceshare.VGPUEnable": False, "deviceshare.GPUNumberEnable": True})
    cluster = (gpushare_node("n1", 40000, 4) + vgpu_pod("a", {"volcano.sh/gpu-number": 2})
               + vgpu_pod("b", {"volcano.sh/gpu-number": 2}) + vgpu_pod("c", {"volcano.sh/gpu-number": 1}))
    code, out = simulate(cluster, conf=number)
    got = {p: out["pods"][f"default/{p}"]["annotations"].get("volcano.sh/gpu-index") for p in "abc"}
    assert got == {"a": "0,1", "b": "2,3", "c": None}
    assert out["pods"]["default/c"]["node"] is None


def test_without_predicates_no_device_is_allocated_as_in_volcano(simulate):
    """Spec E-39: in Volcano the predicates plugin's event handler allocates devices."""
    no_predicates = conf().replace("  - name: predicates\n", "")
    code, out = simulate(gpu_node("n1", TWO_A100) + vgpu_pod("p1", mem(1000)), conf=no_predicates)
    assert out["pods"]["default/p1"]["node"] == "n1"
    assert "volcano.sh/vgpu-ids-new" not in out["pods"]["default/p1"]["annotations"]
    assert all(d["slots_used"] == 0 for d in out["nodes"]["n1"]["devices"])


def test_queue_allocated_counts_granted_vgpu_memory(simulate):
    """§6.3.9: a pod granted 2 × 8000 MiB reports 16000 of volcano.sh/vgpu-memory in its queue (its request
    says 8000); a pod bound in this session counts its request until its annotation is seen."""
    bound = vgpu_pod("bound", mem(8000, n=2, cores=30), node_name="n1", annotations={
        "volcano.sh/vgpu-ids-new": "GPU-a,NVIDIA,8000,30:GPU-b,NVIDIA,8000,30:", "volcano.sh/bind-phase": "success"})
    code, out = simulate(gpu_node("n1", TWO_A100) + bound, conf=conf())
    assert code == 0
    allocated = out["queues"]["default"]["allocated"]
    assert (allocated["volcano.sh/vgpu-memory"], allocated["volcano.sh/vgpu-cores"]) == ("16000", "60")
    assert allocated["volcano.sh/vgpu-number"] == "2"
    # no annotation on the pod (or none matching this node's GPUs): the requests stay
    stale = vgpu_pod("stale", mem(8000, n=2), node_name="n1", annotations={"volcano.sh/vgpu-ids-new": "GPU-z,NVIDIA,1,0:"})
    code, out = simulate(gpu_node("n1", TWO_A100) + stale, conf=conf())
    assert out["queues"]["default"]["allocated"]["volcano.sh/vgpu-memory"] == "8000"


def test_a_cpu_pod_after_a_gpu_pod_on_the_same_node_is_seen_by_the_next_search(simulate):
    """deviceshare marks a node changed when a pod takes devices on it; the next placement there, of a
    pod that asks for no device, is a change of its own, and the next search must see both: the third
    pod fits nowhere (n1 keeps 16 - 2 - 8 = 6 CPUs, n2 has 7) unless n1's second change is missed."""
    pods = (vgpu_pod("a-gpu", {**mem(1000), "cpu": 2}) + vgpu_pod("b-cpu", {"cpu": 8})
            + vgpu_pod("c-cpu", {"cpu": 8}))
    code, out = simulate(gpu_node("n1", TWO_A100) + node("n2", cpu="7") + pods, conf=conf())
    assert code == 0
    assert out["pods"]["default/a-gpu"]["node"] == out["pods"]["default/b-cpu"]["node"] == "n1"
    assert not out["pods"]["default/c-cpu"]["node"]
