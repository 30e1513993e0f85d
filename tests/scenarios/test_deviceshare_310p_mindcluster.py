"""Ascend 310P vNPU with MindCluster's device-info ConfigMaps, through ``vcsched simulate`` (spec §4.4)."""

import json
from pathlib import Path

from vcsched.cli import main

from .test_deviceshare_310p import conf, core, npu_node, npu_pod

P = "huawei.com/Ascend310P"
U = P + "-Unhealthy"
T = 1767225600


def mc_conf(**init) -> str:
    text = conf()
    if init:
        text += "configurations:\n- name: init-params\n  arguments: " + json.dumps(init) + "\n"
    return text


def configmap(ns: str, name: str, data: dict, label: str | None) -> str:
    labels = {label: "true"} if label else {}
    return f"""
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
  namespace: {ns}
  labels: {json.dumps(labels)}
data: {json.dumps(data)}
"""


def cluster_devices(table: dict | str, name: str = "cluster-info-device-0", label="mx-consumer-volcano") -> str:
    value = table if isinstance(table, str) else json.dumps(
        {f"mindx-dl-deviceinfo-{node}": {"DeviceList": dl, "UpdateTime": T} for node, dl in table.items()})
    return configmap("mindx-dl", name, {name: value}, label)


def cluster_nodes(statuses: dict) -> str:
    value = json.dumps({f"mindx-dl-nodeinfo-{n}": {"FaultDevList": [], "NodeStatus": s} for n, s in statuses.items()})
    return configmap("mindx-dl", "cluster-info-node-cm", {"cluster-info-node-cm": value}, "mx-consumer-volcano")


NO_SELF_MAINTAIN = {"self-maintain-available-card": "false"}
INVALID = "0/1 nodes are unavailable: 1 checkNodeNPUByDyTask invalid VNode."


def bare_node(name: str, cores: int = 16) -> str:
    """A 310P node whose annotations name no chips at all."""
    return npu_node(name, cores=cores).replace(f'"{P}": "Ascend310P-0,Ascend310P-1,Ascend310P-2,Ascend310P-3"', "")


def test_chips_from_the_clusterd_configmap_make_a_bare_node_usable(simulate):
    code, out = simulate(bare_node("n1") + npu_pod("v", 2), conf=mc_conf(**NO_SELF_MAINTAIN))
    assert code == 0 and out["pods"]["default/v"]["reason"] == INVALID
    cms = cluster_devices({"n1": {P: "Ascend310P-0,Ascend310P-1", U: ""}})
    code, out = simulate(bare_node("n1") + cms + npu_pod("v", 2), conf=mc_conf(**NO_SELF_MAINTAIN))
    assert code == 0 and out["pods"]["default/v"]["node"] == "n1" and core(out, "v") == "0-vir02_1c"
    code, out = simulate(bare_node("n1") + cms + npu_pod("w", 16), conf=mc_conf(**NO_SELF_MAINTAIN))
    assert core(out, "w") == "0,1"


def test_an_unhealthy_chip_in_the_configmap_is_not_used(simulate):
    cluster = npu_node("n1", cores=16, chips="Ascend310P-0,Ascend310P-1") + npu_pod("v", 1)
    code, out = simulate(cluster, conf=mc_conf(**NO_SELF_MAINTAIN))
    assert core(out, "v") == "0-vir01"
    cms = cluster_devices({"n1": {P: "Ascend310P-1", U: "Ascend310P-0"}})
    code, out = simulate(cluster + cms, conf=mc_conf(**NO_SELF_MAINTAIN))
    assert code == 0 and core(out, "v") == "1-vir01"
    # the output's device table shows the chips as the session sees them: chip 0 is not there
    devices = out["nodes"]["n1"]["devices"]
    assert [(d["id"], d["health"], d["pods"]) for d in devices] == [("Ascend310P-1", True, ["default/v"])]


def test_a_presseparate_node_is_not_used(simulate):
    pods = npu_pod("v", 1)
    code, out = simulate(npu_node("n1") + npu_node("n2") + cluster_nodes({"n1": "PreSeparate", "n2": "Healthy"}) + pods,
                         conf=mc_conf())
    assert code == 0 and out["pods"]["default/v"]["node"] == "n2"
    code, out = simulate(npu_node("n1") + cluster_nodes({"n1": "PreSeparate"}) + pods, conf=mc_conf())
    assert out["pods"]["default/v"]["node"] is None
    assert out["pods"]["default/v"]["reason"] == ("0/1 nodes are unavailable: 1 preCheckNodePredicate failure: "
                                                 "node is PreSeparate, due to nodeD reported node status.")
    # other statuses do not reject (Volcano checks PreSeparate only)
    code, out = simulate(npu_node("n1") + cluster_nodes({"n1": "UnHealthy"}) + pods, conf=mc_conf())
    assert out["pods"]["default/v"]["node"] == "n1"


def test_device_plugin_configmaps_when_cluster_info_manager_is_off(simulate):
    dev = {"DeviceInfo": {"DeviceList": {P: "Ascend310P-1", U: "Ascend310P-0"}, "UpdateTime": T}, "CheckCode": "c"}
    node_info = {"NodeInfo": {"FaultDevList": [], "NodeStatus": "PreSeparate"}, "CheckCode": "c"}
    cluster = (npu_node("n1", cores=16, chips="Ascend310P-0,Ascend310P-1") + npu_pod("v", 1)
               + configmap("kube-system", "mindx-dl-deviceinfo-n1", {"DeviceInfoCfg": json.dumps(dev)}, "mx-consumer-cim"))
    code, out = simulate(cluster, conf=mc_conf(useClusterInfoManager="false", **NO_SELF_MAINTAIN))
    assert code == 0 and core(out, "v") == "1-vir01"
    # the same ConfigMaps are not read with the ClusterD source (the default)
    code, out = simulate(cluster, conf=mc_conf(**NO_SELF_MAINTAIN))
    assert core(out, "v") == "0-vir01"
    nodeinfo = configmap("mindx-dl", "mindx-dl-nodeinfo-n1", {"NodeInfo": json.dumps(node_info)}, "mx-consumer-cim")
    code, out = simulate(cluster + nodeinfo, conf=mc_conf(useClusterInfoManager="false", **NO_SELF_MAINTAIN))
    assert out["pods"]["default/v"]["node"] is None and "PreSeparate" in out["pods"]["default/v"]["reason"]


def test_self_maintained_available_list_from_base_device_infos(simulate):
    """With self-maintain-available-card (the default) the available list is baseDeviceInfos minus the
    ConfigMap's unhealthy and recovering chips (and chips running pods name)."""
    base = json.dumps({f"Ascend310P-{i}": {"IP": ""} for i in range(2)})
    node = bare_node("n1").replace("annotations: {}", "annotations: " + json.dumps({"baseDeviceInfos": base}))
    cms = cluster_devices({"n1": {P: "", U: "Ascend310P-0"}})
    code, out = simulate(node + cms + npu_pod("v", 1), conf=mc_conf())
    assert code == 0 and core(out, "v") == "1-vir01"
    # without baseDeviceInfos the device info is not used: the bare node stays invalid
    code, out = simulate(bare_node("n1") + cms + npu_pod("v", 1), conf=mc_conf())
    assert out["pods"]["default/v"]["reason"] == INVALID


def test_malformed_configmaps_are_ignored(simulate):
    bad = cluster_devices('{"mindx-dl-deviceinfo-n1": {"DeviceList": ')
    code, out = simulate(bare_node("n1") + bad + npu_pod("v", 1), conf=mc_conf(**NO_SELF_MAINTAIN))
    assert code == 0 and out["pods"]["default/v"]["reason"] == INVALID
    wrong_type = cluster_devices('{"mindx-dl-deviceinfo-n1": {"DeviceList": {}, "UpdateTime": "soon"}}')
    bad_nodes = configmap("mindx-dl", "cluster-info-node-cm", {"cluster-info-node-cm": "[["}, "mx-consumer-volcano")
    cluster = npu_node("n1") + wrong_type + bad_nodes + npu_pod("v", 1)
    code, out = simulate(cluster, conf=mc_conf(**NO_SELF_MAINTAIN))
    assert code == 0 and core(out, "v") == "0-vir01"
    # a ConfigMap without its consumer label is invisible, as to Volcano's informer
    unlabelled = cluster_devices({"n1": {P: "Ascend310P-0"}}, label=None)
    code, out = simulate(bare_node("n1") + unlabelled + npu_pod("v", 1), conf=mc_conf(**NO_SELF_MAINTAIN))
    assert out["pods"]["default/v"]["reason"] == INVALID


def test_the_mindcluster_example_runs(capsys):
    examples = Path(__file__).resolve().parents[2] / "conf" / "examples"
    assert main(["simulate", "-f", str(examples / "ascend310p.yaml"), "-f", str(examples / "ascend310p-mindcluster.yaml"),
                 "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    got = {k: (p["node"], p["annotations"].get("huawei.com/npu-core")) for k, p in out["pods"].items()}
    assert got == {  # npu-node-1 is PreSeparate (without the overlay the vir02 pods share it)
        "default/infer-small": ("npu-node-2", "0-vir02_1c"),
        "default/infer-small-2": ("npu-node-2", "0-vir02_1c"),
        "default/infer-dvpp": ("npu-node-3", "0-vir04_4c_dvpp"),
        "default/whole-two": (None, None),
    }
    assert "node is PreSeparate, due to nodeD reported node status" in out["pods"]["default/whole-two"]["reason"]
