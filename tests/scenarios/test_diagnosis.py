"""Why a pod is pending, with numbers (issue 21): the diagnosis beside Volcano's unchanged reason."""

from vcsched.cli import main

from .conftest import node, pod

TAINT = "spec:\n  taints: [{key: gpu, value: 'true', effect: NoSchedule}]"


def cluster() -> str:
    # n1: room, but tainted; n2: untainted, 2 CPU and 1Gi free once `used` runs there; the pod asks 3 CPU, 2Gi
    return (node("n1", cpu="8", memory="8Gi", extra=TAINT) + node("n2", cpu="4", memory="3Gi")
            + pod("used", cpu="2", memory="2Gi", node_name="n2", phase="Running")
            + pod("big", cpu="3", memory="2Gi"))


def test_each_refusing_node_and_each_shortfall_with_its_numbers(simulate):
    code, out = simulate(cluster())
    assert code == 0
    big = out["pods"]["default/big"]
    # Volcano's reason, unchanged, names the first resource n2 is short of
    assert big["reason"] == "0/2 nodes are unavailable: 1 Insufficient cpu, 1 node(s) had untolerated taint {gpu: true}."
    d = big["diagnosis"]
    assert d["nodes"]["n1"] == [{"reason": "node(s) had untolerated taint {gpu: true}"}]
    # the numbers show every dimension n2 is short of
    assert d["nodes"]["n2"] == [{"reason": "Insufficient cpu", "short": [
        {"resource": "cpu", "asked": "3", "free": "2"}, {"resource": "memory", "asked": "2Gi", "free": "1Gi"}]}]
    assert d["causes"] == [
        {"reason": "Insufficient cpu", "nodes": 1, "resource": "cpu", "asked": "3", "mostFree": "2", "on": "n2"},
        {"reason": "node(s) had untolerated taint {gpu: true}", "nodes": 1},
    ]
    assert "diagnosis" not in out["pods"]["default/used"]  # placed pods have none


def test_the_table_puts_the_numbers_under_the_reason(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    path.write_text(cluster(), encoding="utf-8")
    assert main(["simulate", "-f", str(path), "-o", "table", "--now", "2026-01-01T01:00:00Z"]) == 0
    text = capsys.readouterr().out
    assert "Pending pods (1):" in text
    assert "1 node: Insufficient cpu (3 asked, at most 2 free on n2)" in text
    assert "1 node: node(s) had untolerated taint {gpu: true}" in text


def test_a_group_kept_out_by_its_queue_says_which_queue_and_by_how_much(simulate):
    queue = """
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: small}
spec: {capability: {cpu: "2"}}
"""
    code, out = simulate(node("n0") + queue + pod("big", cpu="3", queue="small"))
    assert code == 0
    big = out["pods"]["default/big"]
    assert big["reason"] == "pod group is not ready, 1 Pending, 1 minAvailable; Pending: 1 Unschedulable"
    d = big["diagnosis"]
    assert d["group"]["phase"] == "Pending" and d["group"]["minMember"] == 1
    assert d["queue"]["name"] == "small"
    assert d["queue"]["deserved"]["cpu"] == "2" and d["queue"]["groupAsks"]["cpu"] == "3"
    assert d["admission"] == ["queue resource quota insufficient: insufficient cpu"]


def test_a_vgpu_pod_that_fits_no_card_shows_each_card_s_free_memory(simulate):
    from .test_deviceshare import A100, conf, gpu_node, mem, vgpu_pod

    # two cards, 30000 of 40960 MiB used on each: 21920 free in all, 10960 on any one card
    manifests = (gpu_node("n1", [("GPU-a", 10, 40960, A100), ("GPU-b", 10, 40960, A100)])
                 + vgpu_pod("used-a", mem(30000, 1), node_name="n1",
                            annotations={"volcano.sh/vgpu-ids-new": "GPU-a,NVIDIA,30000,0:"})
                 + vgpu_pod("used-b", mem(30000, 1), node_name="n1",
                            annotations={"volcano.sh/vgpu-ids-new": "GPU-b,NVIDIA,30000,0:"})
                 + vgpu_pod("big", mem(20000, 1)))
    code, out = simulate(manifests, conf=conf())
    assert code == 0, out
    big = out["pods"]["default/big"]
    assert big["reason"].startswith("0/1 nodes are unavailable: 1 hami-vgpuDeviceSharing error")
    (devices,) = [e for e in big["diagnosis"]["nodes"]["n1"] if e["reason"] == "devices"]
    assert devices["asks"]["volcano.sh/vgpu-memory"] == "20000"
    assert [(c["id"], c["memoryFree"], c["memoryTotal"]) for c in devices["cards"]] == [
        ("GPU-a", 10960, 40960), ("GPU-b", 10960, 40960)]


def test_a_gang_that_does_not_fit_as_a_whole_says_how_many_members_fit_and_where(simulate):
    from .conftest import podgroup

    # 10 CPU in all; three 3-CPU workers need minMember 3: two fit (n1, n2), the third fits nowhere
    manifests = node("n1") + node("n2") + node("n3", cpu="2") + podgroup("pg", 3) + "".join(
        pod(f"w-{i}", cpu="3", group="pg") for i in range(3))
    code, out = simulate(manifests)
    assert code == 0
    w0 = out["pods"]["default/w-0"]
    assert w0["reason"] == "Pod default/w-0 can possibly be assigned to n1, once minAvailable is satisfied"
    gang = w0["diagnosis"]["gang"]
    assert gang == {"fit": 2, "alreadyRunning": 0, "needed": 3,
                    "placements": {"default/w-0": "n1", "default/w-1": "n2"}}
    # w-2 has node reasons, with numbers
    assert out["pods"]["default/w-2"]["diagnosis"]["causes"][0]["reason"] == "Insufficient cpu"


def test_every_family_of_node_reason_is_counted_per_node(simulate):
    """Affinity and the pod count: each refusing node named with its reason."""
    selector = "  nodeSelector: {disk: ssd}"
    port = "  hostNetwork: false"
    manifests = (node("n1", pods=1) + pod("sitting", node_name="n1", phase="Running")  # n1 holds its one pod
                 + node("n2", extra="  labels: {kubernetes.io/hostname: n2, disk: hdd}".replace("  labels", "  annotations: {}\n  labels"))
                 + pod("picky", spec_extra=selector + "\n" + port))
    code, out = simulate(manifests)
    assert code == 0
    d = out["pods"]["default/picky"]["diagnosis"]
    assert d["nodes"]["n2"] == [{"reason": "node(s) didn't match Pod's node affinity/selector"}]
    # n1's one pod slot is taken: the resource check refuses it first, with the numbers
    assert d["nodes"]["n1"] == [{"reason": "Insufficient pods", "short": [{"resource": "pods", "asked": "1", "free": "0"}]}]


def test_a_gpushare_pod_shows_each_healthy_card_s_free_memory(simulate):
    from .test_deviceshare import conf, gpushare_node, vgpu_pod

    sharing = conf(**{"deviceshare.VGPUEnable": False, "deviceshare.GPUSharingEnable": True})
    cluster = (gpushare_node("n1", 30000, 3, unhealthy="0")
               + vgpu_pod("a", {"volcano.sh/gpu-memory": 6000}) + vgpu_pod("b", {"volcano.sh/gpu-memory": 6000})
               + vgpu_pod("c", {"volcano.sh/gpu-memory": 9000}))
    code, out = simulate(cluster, conf=sharing)
    assert code == 0
    (devices,) = [e for e in out["pods"]["default/c"]["diagnosis"]["nodes"]["n1"] if e["reason"] == "devices"]
    assert devices["asks"] == {"volcano.sh/gpu-memory": "9000"}
    # three 10,000 MiB cards: card 0 unhealthy (the ledger leaves it out), cards 1 and 2 each holding a 6,000 MiB pod
    assert [(c["memoryFree"], c["memoryTotal"]) for c in devices["cards"]] == [(4000, 10000), (4000, 10000)]


def test_a_host_port_taken_on_every_node_is_each_node_s_reason(simulate):
    ports = "  containers:\n  - name: main\n    image: busybox\n    ports: [{containerPort: 80, hostPort: 8080}]"
    manifests = (node("n1") + pod("web-0", node_name="n1", phase="Running").replace("  containers:\n  - name: main\n    image: busybox", ports, 1)
                 + pod("web-1").replace("  containers:\n  - name: main\n    image: busybox", ports, 1))
    code, out = simulate(manifests)
    assert code == 0
    d = out["pods"]["default/web-1"]["diagnosis"]
    assert d["nodes"]["n1"] == [{"reason": "node(s) didn't have free ports for the requested pod ports"}]


def test_an_ascend_vnpu_pod_shows_the_card_s_free_memory(simulate):
    from .test_deviceshare_ascend import DEVICE_CONFIG, ask, conf, npu_node, npu_pod, p310

    running = npu_pod("old", ask("Ascend310P", 1, memory=12288), node_name="npu-1", annotations={
        "hami.io/Ascend310P-devices-allocated": "310P-dev-0,Ascend310P,12288,0:;", "hami.io/bind-phase": "success"})
    cluster = (DEVICE_CONFIG + npu_node("npu-1", "Ascend310P", [p310(0)]) + running
               + npu_pod("too-big", ask("Ascend310P", 1, memory=12000)))
    code, out = simulate(cluster, conf=conf())
    assert code == 0
    (devices,) = [e for e in out["pods"]["default/too-big"]["diagnosis"]["nodes"]["npu-1"] if e["reason"] == "devices"]
    (card,) = devices["cards"]
    assert card["id"] == "310P-dev-0" and card["memoryFree"] == card["memoryTotal"] - 12288


def test_a_group_kept_out_by_a_namespace_quota_says_which_quota_and_by_how_much(simulate):
    from .test_resourcequota import conf as rq_conf
    from .test_resourcequota import pg, rq

    # the group asks 3 CPU; the namespace's quota allows 2
    manifests = (node("n0") + rq("team", {"cpu": "2"}) + pg("big", {"cpu": "3"}, queue_name="default", min_member=1)
                 + pod("big-0", cpu="3", group="big"))
    code, out = simulate(manifests, conf=rq_conf())
    assert code == 0
    d = out["pods"]["default/big-0"]["diagnosis"]
    assert d["group"]["phase"] == "Pending"
    (said,) = d["admission"]
    assert said.startswith("resource quota insufficient, requested: map[cpu:")
    assert "limited: map[cpu:{{2 0} {<nil>} 2 DecimalSI}]" in said


def test_a_mindcluster_310p_node_shows_its_chips(simulate):
    from .test_deviceshare_310p import REAL, conf, npu_node, npu_pod

    other = npu_pod("o", 4, annotations={"huawei.com/npu-core": "0-vir04_3c", REAL: "Ascend310P-x-0_1"}, node_name="n1")
    code, out = simulate(npu_node("n1") + other + npu_pod("late", 1), conf=conf())
    assert code == 0
    assert out["pods"]["default/late"]["reason"] == "0/1 nodes are unavailable: 1 late is using n1, and not rewrite."
    (devices,) = [e for e in out["pods"]["default/late"]["diagnosis"]["nodes"]["n1"] if e["reason"] == "devices"]
    assert devices["asks"] == {"huawei.com/npu-core": "1"}
    assert len(devices["cards"]) == 4 and all(c["kind"] == "ascend310p-vNPU" for c in devices["cards"])
