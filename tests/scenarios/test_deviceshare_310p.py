"""Ascend 310P dynamic vNPU (MindCluster) end to end through ``vcsched simulate`` (spec/devices.md §6.9)."""

import json
from pathlib import Path

from vcsched.cli import main

from .conftest import podgroup
from .test_deviceshare import A100, gpu_node, mem, vgpu_pod

FOUR = "Ascend310P-0,Ascend310P-1,Ascend310P-2,Ascend310P-3"
REAL = "huawei.com/AscendReal"


def conf(**args) -> str:
    arguments = {"deviceshare.AscendMindClusterVNPUEnable": True, **args}
    return f"""
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: deviceshare
    arguments: {json.dumps(arguments)}
"""


def npu_node(name: str, cores: int = 32, chips: str = FOUR, labels: dict | None = None,
             annotations: dict | None = None) -> str:
    lab = {"accelerator": "huawei-Ascend310P", "servertype": "Ascend310P-8", "node.kubernetes.io/npu.chip.name": "310P3",
           **(labels or {})}
    ann = {"huawei.com/Ascend310P": chips, **(annotations or {})}
    res = {"cpu": "32", "memory": "64Gi", "pods": "110", "huawei.com/npu-core": str(cores)}
    return f"""
---
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {json.dumps(lab)}
  annotations: {json.dumps(ann)}
status:
  capacity: {json.dumps(res)}
  allocatable: {json.dumps(res)}
"""


def npu_pod(name: str, cores, labels: dict | None = None, annotations: dict | None = None,
            node_name: str | None = None, deleting: bool = False) -> str:
    lab = {"ring-controller.atlas": "ascend-310P", **(labels or {})}
    return f"""
---
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
  labels: {json.dumps(lab)}
  annotations: {json.dumps(annotations or {})}
  {'deletionTimestamp: "2026-01-01T00:00:00Z"' if deleting else ''}
spec:
  schedulerName: volcano
  {f'nodeName: {node_name}' if node_name else ''}
  containers:
  - name: c
    image: busybox
    resources: {{limits: {{huawei.com/npu-core: {json.dumps(str(cores))}}}}}
{'status: {phase: Running}' if node_name else ''}
"""


def core(out, name):
    return out["pods"][f"default/{name}"]["annotations"].get("huawei.com/npu-core")


def test_templates_and_vnpu_level(simulate):
    """One template per node at a time (ConCache): each node gets pods of one template."""
    cluster = (npu_node("n1") + npu_node("n2") + npu_node("n3")
               + npu_pod("a-low", 2) + npu_pod("b-low", 2) + npu_pod("c-high", 2, {"vnpu-level": "high"})
               + npu_pod("d-one", 1))
    code, out = simulate(cluster, conf=conf())
    assert code == 0
    values = {n: core(out, n) for n in ("a-low", "b-low", "c-high", "d-one")}
    assert values["a-low"].endswith("-vir02_1c") and values["b-low"].endswith("-vir02_1c")
    assert values["c-high"].endswith("-vir02") and values["d-one"].endswith("-vir01")
    node_of = {n: out["pods"][f"default/{n}"]["node"] for n in values}
    assert node_of["a-low"] == node_of["b-low"]
    assert len({node_of["a-low"], node_of["c-high"], node_of["d-one"]}) == 3
    # predicate-time is UnixNano, as MindCluster's device plugin reads it
    assert len(out["pods"]["default/a-low"]["annotations"]["predicate-time"]) == 19
    # the per-chip view: the two vir02_1c pods sit on one chip (least free first)
    chips = {d["id"]: d for d in out["nodes"][node_of["a-low"]]["devices"]}
    assert sorted(len(d["pods"]) for d in chips.values()) == [0, 0, 0, 2]


def test_whole_chips(simulate):
    code, out = simulate(npu_node("n1") + npu_pod("w", 16), conf=conf())
    assert core(out, "w") == "0,1"


def test_dvpp(simulate):
    """A vnpu-dvpp: yes pod takes the chip's DVPP: the next one goes to another chip."""
    cluster = npu_node("n1") + npu_pod("v1", 4, {"vnpu-dvpp": "yes"}) + npu_pod("v2", 4, {"vnpu-dvpp": "yes"})
    code, out = simulate(cluster, conf=conf())
    assert core(out, "v1") == "0-vir04_4c_dvpp"
    assert core(out, "v2") == "1-vir04_4c_dvpp"
    code, out = simulate(npu_node("n1") + npu_pod("bad", 4, {"vnpu-dvpp": "maybe"}), conf=conf())
    assert out["pods"]["default/bad"]["node"] is None
    assert out["pods"]["default/bad"]["reason"] == "0/1 nodes are unavailable: 1 err dvpp value:maybe."


def test_downgrade(simulate):
    """Three terminating vir02 pods leave chip 0 {2 cores, 1 AI CPU}: a vnpu-level high pod is
    downgraded from vir02 to vir02_1c (terminating pods are counted on chips, not in ConCache)."""
    gone = "".join(npu_pod(f"old{i}", 2, {"vnpu-level": "high"}, {"huawei.com/npu-core": "0-vir02", REAL: "Ascend310P-x-0_1"},
                           node_name="n1", deleting=True) for i in range(3))
    code, out = simulate(npu_node("n1", cores=8, chips="Ascend310P-0") + gone + npu_pod("hi", 2, {"vnpu-level": "high"}),
                         conf=conf())
    assert core(out, "hi") == "0-vir02_1c"


def test_downgraded_node_loses_to_the_next_in_batch_score(simulate):
    """§6.9.7 with weight 10: the least-idle node would get +8, but the pod was downgraded there,
    so the next node (not downgraded) gets +16 and wins."""
    gone = "".join(npu_pod(f"old{i}", 2, {"vnpu-level": "high"}, {"huawei.com/npu-core": "0-vir02", REAL: "Ascend310P-x-0_1"},
                           node_name="tight", deleting=True) for i in range(3))
    cluster = (npu_node("tight", cores=8, chips="Ascend310P-0") + npu_node("roomy", cores=16,
                                                                          chips="Ascend310P-0,Ascend310P-1")
               + gone + npu_pod("hi", 2, {"vnpu-level": "high"}))
    code, out = simulate(cluster, conf=conf(**{"deviceshare.ScheduleWeight": 10}))
    assert out["pods"]["default/hi"]["node"] == "roomy" and core(out, "hi") == "0-vir02"
    # without the downgrade the least idle node is preferred (+8)
    plain = (npu_node("tight", cores=8, chips="Ascend310P-0") + npu_node("roomy", cores=16,
                                                                        chips="Ascend310P-0,Ascend310P-1")
             + npu_pod("lo", 2))
    code, out = simulate(plain, conf=conf(**{"deviceshare.ScheduleWeight": 10}))
    assert out["pods"]["default/lo"]["node"] == "tight"


def test_a_full_chip_leaves_the_pod_pending_with_its_reason(simulate):
    """A full node: the pod group is not enqueued.  E-24: a full chip with idle cores elsewhere (chip 1
    unhealthy): the filter passes (a vir02_1c request cannot be downgraded) and allocation fails;
    as in Volcano no fit error is recorded, so the pod group's condition is the reason."""
    full = "".join(npu_pod(f"w{i}", 8, annotations={"huawei.com/npu-core": str(i), REAL: f"Ascend310P-{i}"},
                           node_name="n1") for i in range(4))
    code, out = simulate(npu_node("n1") + full + npu_pod("late", 1), conf=conf())
    # no npu-core left in the cluster: proportion does not even enqueue the pod group
    assert out["pods"]["default/late"]["node"] is None
    assert [pg["phase"] for pg in out["podgroups"].values() if pg["running"] == 0] == ["Pending"]
    # a chip held by vNPUs of another template: the node refuses (ConCache)
    other = npu_pod("o", 4, annotations={"huawei.com/npu-core": "0-vir04_3c", REAL: "Ascend310P-x-0_1"}, node_name="n1")
    code, out = simulate(npu_node("n1") + other + npu_pod("late", 1) + npu_pod("later", 1), conf=conf())
    assert out["pods"]["default/late"]["reason"] == "0/1 nodes are unavailable: 1 late is using n1, and not rewrite."
    # a pod of the same shape shares the node's verdict, and its reason still names itself
    assert out["pods"]["default/later"]["reason"] == "0/1 nodes are unavailable: 1 later is using n1, and not rewrite."

    bound = "".join(npu_pod(f"b{i}", 2, annotations={"huawei.com/npu-core": "0-vir02_1c", REAL: f"Ascend310P-x-0_{i}"},
                            node_name="n1") for i in range(4))
    cluster = (npu_node("n1", cores=16, chips="Ascend310P-0", annotations={"huawei.com/Ascend310P-Unhealthy": "Ascend310P-1"})
               + bound + npu_pod("late", 2))
    code, out = simulate(cluster, conf=conf())
    late = out["pods"]["default/late"]
    assert late["node"] is None
    assert late["reason"] == "pod group is not ready, 1 Pending, 1 minAvailable; Pending: 1 Unschedulable"
    chips = out["nodes"]["n1"]["devices"]
    assert [(d["id"], d["cores_used"], len(d["pods"])) for d in chips] == [("Ascend310P-0", 8, 4)]


def test_mixed_with_vgpu_nodes(simulate):
    cluster = (gpu_node("gpu", [("GPU-a", 10, 40960, A100)]) + npu_node("npu")
               + vgpu_pod("g", mem(1000)) + npu_pod("v", 2))
    code, out = simulate(cluster, conf=conf(**{"deviceshare.VGPUEnable": True}))
    assert out["pods"]["default/g"]["node"] == "gpu" and "volcano.sh/vgpu-ids-new" in out["pods"]["default/g"]["annotations"]
    assert out["pods"]["default/v"]["node"] == "npu" and core(out, "v") == "0-vir02_1c"
    assert "huawei.com/npu-core" not in out["pods"]["default/g"]["annotations"]
    kinds = {n: {d["kind"] for d in out["nodes"][n]["devices"]} for n in ("gpu", "npu")}
    assert kinds == {"gpu": {"hamivgpu"}, "npu": {"ascend310p-vNPU"}}


def test_bad_input(simulate, tmp_path, capsys):
    code, err = simulate(npu_node("n1") + npu_pod("neg", -2), conf=conf())
    assert code == 2 and "huawei.com/npu-core" in err
    code, err = simulate(npu_node("n1") + npu_pod("nan", "lots"), conf=conf())
    assert code == 2 and "huawei.com/npu-core" in err
    # a node missing its chip list: warned about by name and annotation, its pods stay pending;
    # a malformed chip name is skipped with a warning; the other node is unaffected
    cluster = (npu_node("broken", annotations={}, chips="").replace('"huawei.com/Ascend310P": ""', '"x": "y"')
               + npu_node("odd", chips="Ascend310P-0,Ascend310P-zz") + npu_pod("v", 2))
    (tmp_path / "c.yaml").write_text(cluster)
    (tmp_path / "s.conf").write_text(conf())
    code = main(["simulate", "-f", str(tmp_path / "c.yaml"), "--conf", str(tmp_path / "s.conf"), "-o", "json"])
    captured = capsys.readouterr()
    assert code == 0
    out = json.loads(captured.out)
    logs = [json.loads(line) for line in captured.err.splitlines() if line.startswith("{")]
    assert out["pods"]["default/v"]["node"] == "odd" and core(out, "v") == "0-vir02_1c"
    assert [d["id"] for d in out["nodes"]["odd"]["devices"]] == ["Ascend310P-0"]
    assert out["nodes"]["broken"]["devices"] == []
    assert any(e.get("node") == "broken" and "annotation huawei.com/Ascend310P absent" in e.get("problem", "")
               for e in logs)
    assert any(e.get("node") == "odd" and e.get("annotation") == "huawei.com/Ascend310P" for e in logs)
    code, out = simulate(npu_node("broken").replace('"servertype": "Ascend310P-8", ', "") + npu_pod("v", 2), conf=conf())
    assert out["pods"]["default/v"]["reason"] == "0/1 nodes are unavailable: 1 checkNodeNPUByDyTask invalid VNode."


def test_the_ascend310p_example_runs(capsys):
    example = Path(__file__).resolve().parents[2] / "conf" / "examples" / "ascend310p.yaml"
    assert main(["simulate", "-f", str(example), "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    got = {k: (p["node"], p["annotations"].get("huawei.com/npu-core")) for k, p in out["pods"].items()}
    assert got == {
        "default/infer-small": ("npu-node-1", "0-vir02_1c"),
        "default/infer-small-2": ("npu-node-1", "0-vir02_1c"),
        "default/infer-dvpp": ("npu-node-2", "0-vir04_4c_dvpp"),
        "default/whole-two": ("npu-node-3", "0,1"),
    }


# -- NodeLockEnable (spec §4.5): the vGPU lock, end to end ------------------------------------------------
# simulate's clock starts at 2026-01-01T01:00:00Z; the simulated device plugin releases each lock at once.

def gpu_lock_node(name: str, lock: str | None) -> str:
    text = gpu_node(name, [(f"GPU-{name}", 10, 40960, A100)])
    return text if lock is None else text.replace("annotations: {", f'annotations: {{hamivgpu: "{lock}", ')


def lock_conf(**args) -> str:
    return conf(**{"deviceshare.AscendMindClusterVNPUEnable": False, "deviceshare.VGPUEnable": True,
                   "deviceshare.NodeLockEnable": True, **args})


def test_a_freshly_locked_node_is_skipped_with_its_reason(simulate):
    cluster = gpu_lock_node("fresh", "2026-01-01T00:58:00Z") + gpu_lock_node("garbled", "soon") + vgpu_pod("p", mem(1000))
    code, out = simulate(cluster, conf=lock_conf())
    assert out["pods"]["default/p"]["node"] is None
    assert out["pods"]["default/p"]["reason"] == (
        "0/2 nodes are unavailable: "
        "1 node fresh locked for p hamivgpu lockname node fresh has been locked within 5 minutes, "
        '1 node garbled locked for p hamivgpu lockname parsing time "soon" as "2006-01-02T15:04:05Z07:00": '
        'cannot parse "soon" as RFC 3339.')
    assert out["nodeLocks"] == []


def test_a_stale_lock_is_taken_over_and_one_session_locks_a_node_once(simulate):
    """Two vGPU pods, one node with a lock older than 5 minutes: the first pod takes the lock; the
    second finds the node locked in that session and gets it in the next, after the release."""
    cluster = gpu_lock_node("stale", "2026-01-01T00:54:00Z") + vgpu_pod("p1", mem(1000)) + vgpu_pod("p2", mem(1000))
    code, out = simulate(cluster, "--cycles", "1", conf=lock_conf())
    assert out["pods"]["default/p1"]["node"] == "stale"
    assert out["pods"]["default/p2"]["reason"] == (
        "0/1 nodes are unavailable: 1 node stale locked for p2 hamivgpu lockname node stale has been locked within "
        "5 minutes.")
    assert out["nodeLocks"] == [{"node": "stale", "key": "hamivgpu", "value": "2026-01-01T01:00:00Z"}]
    code, out = simulate(cluster, conf=lock_conf())
    assert [out["pods"][f"default/{p}"]["node"] for p in ("p1", "p2")] == ["stale", "stale"]
    assert [lock["value"] for lock in out["nodeLocks"]] == ["2026-01-01T01:00:00Z", "2026-01-01T01:00:01Z"]


def test_a_discarded_gang_leaves_no_lock(simulate):
    """A gang of two vGPU pods on one node cannot fit under the lock: the session discards it and,
    unlike Volcano (whose lock is already written), no lock is written."""
    cluster = (gpu_lock_node("only", None) + podgroup("pg", 2)
               + vgpu_pod("g1", mem(1000), group="pg") + vgpu_pod("g2", mem(1000), group="pg"))
    code, out = simulate(cluster, conf=lock_conf())
    assert out["pods"]["default/g1"]["node"] is None and out["pods"]["default/g2"]["node"] is None
    assert out["nodeLocks"] == []
    code, out = simulate(cluster, conf=lock_conf(**{"deviceshare.NodeLockEnable": False}))
    assert out["pods"]["default/g1"]["node"] == "only" and out["pods"]["default/g2"]["node"] == "only"
