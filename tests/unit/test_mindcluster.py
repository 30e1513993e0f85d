"""MindCluster device-info ConfigMaps (plugins/deviceshare/mindcluster.py; spec/devices.md §4.4)."""

import json

import pytest
import structlog

from vcsched.api.task_info import new_task_info
from vcsched.cache import node_info_from
from vcsched.plugins.deviceshare.ascend310p import MindClusterFamily
from vcsched.plugins.deviceshare.ascend310p_model import KEY
from vcsched.plugins.deviceshare.mindcluster import (
    NODED_STATUS_KEY, DeviceInfo, MindClusterInfo, merge_annotations, session_device_list,
)

P = "huawei.com/Ascend310P"
U = P + "-Unhealthy"


@pytest.fixture(autouse=True)
def logs():
    with structlog.testing.capture_logs() as captured:
        yield captured


def cm(ns, name, data, label="mx-consumer-volcano"):
    return {"metadata": {"namespace": ns, "name": name, "labels": {label: "true"} if label else {}},
            "data": data}


def cluster_device(name, table, **kw):
    return cm("mindx-dl", name, {name: table if isinstance(table, str) else json.dumps(table)}, **kw)


def dev(chips, unhealthy="", t=1767225600):
    return {"DeviceList": {P: chips, U: unhealthy}, "UpdateTime": t}


def test_clusterd_device_info_per_node_and_update_keeps_unlisted_nodes():
    info = MindClusterInfo()
    info.upsert(cluster_device("cluster-info-device-0", {"mindx-dl-deviceinfo-n1": dev("Ascend310P-0"),
                                                          "mindx-dl-deviceinfo-n2": dev("Ascend310P-1")}))
    assert dict(info.device_info("n1", True).device_list) == {P: "Ascend310P-0", U: ""}
    assert info.device_info("n1", False) is None  # the other source is separate
    # an update that no longer lists n2 does not forget it (Volcano's informer only sets entries)
    info.upsert(cluster_device("cluster-info-device-0", {"mindx-dl-deviceinfo-n1": dev("Ascend310P-2")}))
    assert dict(info.device_info("n1", True).device_list)[P] == "Ascend310P-2"
    assert info.device_info("n2", True) is not None
    # deleting the ConfigMap drops the nodes its (last) data lists
    info.delete(cluster_device("cluster-info-device-0", {"mindx-dl-deviceinfo-n2": dev("")}))
    assert info.device_info("n2", True) is None and info.device_info("n1", True) is not None


def test_bad_json_is_ignored_and_the_earlier_version_stays():
    info = MindClusterInfo()
    good = cluster_device("cluster-info-device-0", {"mindx-dl-deviceinfo-n1": dev("Ascend310P-0")})
    info.upsert(good)
    info.upsert(cluster_device("cluster-info-device-0", "{not json"))
    assert info.errors == 1
    assert dict(info.device_info("n1", True).device_list)[P] == "Ascend310P-0"
    # a type Go refuses fails the whole ConfigMap
    info.upsert(cluster_device("cluster-info-device-0", {"mindx-dl-deviceinfo-n1": {"DeviceList": {P: "x"},
                                                                                     "UpdateTime": "1"}}))
    info.upsert(cluster_device("cluster-info-device-0", {"mindx-dl-deviceinfo-n1": {"UpdateTime": 1.5}}))
    info.upsert(cluster_device("cluster-info-device-0", {"mindx-dl-deviceinfo-n1": {"DeviceList": {P: 1}}}))
    info.upsert(cluster_device("cluster-info-device-0", '{"mindx-dl-deviceinfo-n1": {"UpdateTime": NaN}}'))
    info.upsert(cm("mindx-dl", "cluster-info-device-0", {"other-key": "{}"}))  # no key named after the ConfigMap
    assert info.errors == 6
    assert dict(info.device_info("n1", True).device_list)[P] == "Ascend310P-0"


def test_the_error_names_configmap_and_key(logs):
    info = MindClusterInfo()
    info.upsert(cm("kube-system", "mindx-dl-deviceinfo-n1", {"DeviceInfoCfg": "[1,"}, label="mx-consumer-cim"))
    assert [(e["log_level"], e["configmap"], e["key"]) for e in logs] == [
        ("error", "kube-system/mindx-dl-deviceinfo-n1", "DeviceInfoCfg")]
    assert info.device_info("n1", False) is None


def test_device_plugin_configmaps_go_field_matching_and_empty_values():
    info = MindClusterInfo()
    value = {"deviceinfo": {"devicelist": {P: "Ascend310P-0,Ascend310P-1"}, "updatetime": 5, "Extra": [1]},
             "CheckCode": "abc"}  # Go matches field names case-insensitively and ignores unknown ones
    info.upsert(cm("kube-system", "mindx-dl-deviceinfo-n1", {"DeviceInfoCfg": json.dumps(value)},
                   label="mx-consumer-cim"))
    d = info.device_info("n1", False)
    assert d.update_time == 5 and dict(d.device_list) == {P: "Ascend310P-0,Ascend310P-1"}
    # empty DeviceInfoCfg: Volcano's handler dereferences nil; vcsched ignores it and keeps the old one
    info.upsert(cm("kube-system", "mindx-dl-deviceinfo-n1", {"DeviceInfoCfg": ""}, label="mx-consumer-cim"))
    assert info.device_info("n1", False) is d and info.errors == 1
    nodeinfo = {"NodeInfo": {"FaultDevList": [{"DeviceType": "npu", "DeviceId": 0, "FaultCode": ["8C1F8609"],
                                               "FaultLevel": "PreSeparateNPU"}], "NodeStatus": "PreSeparate"},
                "CheckCode": "x"}
    info.upsert(cm("mindx-dl", "mindx-dl-nodeinfo-n1", {"NodeInfo": json.dumps(nodeinfo)}, label="mx-consumer-cim"))
    assert info.noded_status("n1", False) == "PreSeparate" and info.noded_status("n1", True) == ""
    info.upsert(cm("mindx-dl", "mindx-dl-nodeinfo-n1", {"NodeInfo": ""}, label="mx-consumer-cim"))
    assert info.noded_status("n1", False) == ""  # no fault: an empty value
    info.delete(cm("kube-system", "mindx-dl-deviceinfo-n1", {}, label="mx-consumer-cim"))
    assert info.device_info("n1", False) is None


def test_labels_and_namespaces_select_what_is_read():
    info = MindClusterInfo.from_config_maps({
        "a": cluster_device("cluster-info-device-0", {"mindx-dl-deviceinfo-n1": dev("Ascend310P-0")}, label=None),
        "b": cm("default", "cluster-info-device-1", {"cluster-info-device-1": json.dumps(
            {"mindx-dl-deviceinfo-n2": dev("Ascend310P-0")})}),
        "c": cm("mindx-dl", "mindx-dl-deviceinfo-n3", {"DeviceInfoCfg": json.dumps({"DeviceInfo": dev("x")})},
                label="mx-consumer-cim"),  # device-plugin ConfigMaps live in kube-system
        "d": cm("mindx-dl", "unrelated", {"x": "{"}),
    })
    assert info.device_info("n1", True) is None and info.device_info("n2", True) is None
    assert info.device_info("n3", False) is None and info.errors == 0
    # a ConfigMap that loses its label leaves the watch as a DELETED event carrying the new labels
    info.upsert(cm("kube-system", "mindx-dl-deviceinfo-n4", {"DeviceInfoCfg": json.dumps({"DeviceInfo": dev("x")})},
                   label="mx-consumer-cim"))
    assert info.device_info("n4", False) is not None
    info.delete(cm("kube-system", "mindx-dl-deviceinfo-n4", {}, label=None))
    assert info.device_info("n4", False) is None


def test_cluster_node_cm_replaces_the_whole_table():
    info = MindClusterInfo()
    info.upsert(cm("mindx-dl", "cluster-info-node-cm", {"cluster-info-node-cm": json.dumps(
        {"mindx-dl-nodeinfo-n1": {"NodeStatus": "PreSeparate"}, "mindx-dl-nodeinfo-n2": {"NodeStatus": "Healthy"}})}))
    assert info.noded_status("n1", True) == "PreSeparate"
    info.upsert(cm("mindx-dl", "cluster-info-node-cm", {"cluster-info-node-cm": json.dumps(
        {"mindx-dl-nodeinfo-n2": {"NodeStatus": "UnHealthy"}})}))
    assert info.noded_status("n1", True) == "" and info.noded_status("n2", True) == "UnHealthy"
    info.upsert(cm("mindx-dl", "cluster-info-node-cm", {"cluster-info-node-cm": '{"x": {"NodeStatus": 3}}'}))
    assert info.noded_status("n2", True) == "UnHealthy" and info.errors == 1
    info.delete(cm("mindx-dl", "cluster-info-node-cm", {"cluster-info-node-cm": "{}"}))
    assert info.noded_status("n2", True) == ""


ANN = {P: "Ascend310P-0,Ascend310P-1", U: "", "other": "x"}


def di(pairs, t):
    return DeviceInfo(tuple(pairs.items()), t, "test")


def test_merge_device_info_overrides_annotations_when_updated():
    m = merge_annotations(ANN, {}, [], None, "", True)
    assert m == {**ANN, NODED_STATUS_KEY: "Healthy"}
    info = di({P: "Ascend310P-2", U: "Ascend310P-0"}, 1767225600)
    m = merge_annotations(ANN, {}, [], info, "PreSeparate", False)
    assert m[P] == "Ascend310P-2" and m[U] == "Ascend310P-0" and m["other"] == "x"
    assert m[NODED_STATUS_KEY] == "PreSeparate"
    # UpdateTime 0: the device info is not newer than the session's (0), ignored
    assert merge_annotations(ANN, {}, [], di({P: "Ascend310P-2"}, 0), "", False)[P] == ANN[P]
    # UpdateTime ≤ 10: keys with "-" still override; the available list keeps chips both lists name
    # when the node's idle count of that resource equals the annotation's list length
    m = merge_annotations(ANN, {P: 2000.0}, [], di({P: "Ascend310P-1,Ascend310P-5,Ascend310P-6", U: "Ascend310P-9"}, 3),
                          "", False)
    assert m[P] == "Ascend310P-1" and m[U] == "Ascend310P-9"
    m = merge_annotations(ANN, {}, [], di({P: "Ascend310P-1,Ascend310P-5"}, 3), "", False)
    assert m[P] == "Ascend310P-1,Ascend310P-5"


def test_self_maintained_available_list():
    base = json.dumps({"Ascend310P-0": {"IP": ""}, "Ascend310P-1": {}, "Ascend310P-2": {}, "Ascend310P-3": {},
                       "Ascend310P-2c-100-0": {}})  # vNPU names (three "-") are not cards
    ann = {**ANN, "baseDeviceInfos": base}
    pods = [{"metadata": {"name": "p", "namespace": "default", "annotations": {P: "Ascend310P-3"}},
             "status": {"phase": "Running"}},
            {"metadata": {"name": "done", "namespace": "default", "annotations": {P: "Ascend310P-2"}},
             "status": {"phase": "Succeeded"}}]
    info = di({P: "", U: "Ascend310P-1", P + "-Recovering": "Ascend310P-0"}, 0)
    dl, fresh = session_device_list(ann, pods, info, True)
    assert dict(dl)[P] == "Ascend310P-2" and fresh
    # counts as just updated although the ConfigMap's UpdateTime is 0
    assert merge_annotations(ann, {}, pods, info, "", True)[P] == "Ascend310P-2"
    # without baseDeviceInfos the device info is not used, and the session says why
    notes = []
    assert merge_annotations(ANN, {}, pods, info, "", True, notes)[P] == ANN[P]
    assert notes == ["self-maintain-available-card: node annotation baseDeviceInfos absent; "
                     "the device info's available list is not used"]
    assert merge_annotations({**ANN, "baseDeviceInfos": "{"}, {}, pods, info, "", True)[P] == ANN[P]


# -- the 310P node model at session open ---------------------------------------------------------------

def _opened(manifest, info, *bound):
    fam = MindClusterFamily(info)
    fam.configure({"self-maintain-available-card": "false"})
    node = node_info_from(manifest)
    node.devices = {KEY: fam.build(manifest, node.name)}
    for t in bound:
        node.add_task(t)
    d = node.devices[KEY]
    d.open_session(node)
    return fam, d


def _npu_manifest(name="n1", ann=None, capacity=None):
    res = capacity if capacity is not None else {"cpu": "32", "memory": "64Gi", "pods": "110", "huawei.com/npu-core": "16"}
    return {"metadata": {"name": name, "annotations": ann or {},
                         "labels": {"accelerator": "huawei-Ascend310P", "servertype": "Ascend310P-8",
                                    "node.kubernetes.io/npu.chip.name": "310P3"}},
            "status": {"capacity": dict(res), "allocatable": dict(res)}}


def _npu_pod(name, cores, node=None, annotations=None):
    q = str(cores)
    spec = {"containers": [{"name": "c", "image": "x",
                            "resources": {"limits": {"huawei.com/npu-core": q}, "requests": {"huawei.com/npu-core": q}}}]}
    if node:
        spec["nodeName"] = node
    meta = {"name": name, "namespace": "default", "uid": name, "labels": {"ring-controller.atlas": "ascend-310P"},
            "annotations": annotations or {}}
    return new_task_info({"metadata": meta, "spec": spec, "status": {"phase": "Running" if node else "Pending"}})


def test_session_model_uses_configmap_chips_and_counts_bound_pods():
    info = MindClusterInfo()
    info.upsert(cluster_device("cluster-info-device-0", {"mindx-dl-deviceinfo-n1": dev("Ascend310P-0,Ascend310P-1")}))
    bound = _npu_pod("b", 1, node="n1", annotations={"huawei.com/npu-core": "1-vir01", "huawei.com/AscendReal": "r_1"})
    fam, d = _opened(_npu_manifest(), info, bound)
    assert d.model.valid and d.model.chip_ids == (0, 1)
    assert d.chips[1].used_core == 1 and d.chips[0].used_core == 0
    # the cache object keeps the annotation-only model: the merge is per session
    fresh = fam.build(_npu_manifest(), "n1")
    assert not fresh.model.valid


def test_pre_separate_only_on_nodes_with_huawei_capacity():
    info = MindClusterInfo()
    info.upsert(cm("mindx-dl", "cluster-info-node-cm", {"cluster-info-node-cm": json.dumps(
        {"mindx-dl-nodeinfo-n1": {"NodeStatus": "PreSeparate"}, "mindx-dl-nodeinfo-cpu": {"NodeStatus": "PreSeparate"}})}))
    fam, d = _opened(_npu_manifest(ann={"huawei.com/Ascend310P": "Ascend310P-0,Ascend310P-1"}), info)
    t = _npu_pod("p", 1)
    assert d.filter(t, fam.request(t), "").reason == (
        "preCheckNodePredicate failure: node is PreSeparate, due to nodeD reported node status")
    fam, d = _opened(_npu_manifest("cpu", capacity={"cpu": "32", "memory": "64Gi", "pods": "110"}), info)
    assert d.filter(t, fam.request(t), "").reason == "preCheckNodePredicate failure: not have huawei.com/npu-core"


def test_simulate_says_when_the_other_source_is_given(logs):
    info = MindClusterInfo()
    info.upsert(cm("kube-system", "mindx-dl-deviceinfo-n1", {"DeviceInfoCfg": json.dumps({"DeviceInfo": dev("x")})},
                   label="mx-consumer-cim"))
    info.warn_other_source(False)
    assert logs == []
    info.warn_other_source(True)
    assert [e["event"] for e in logs] == ["MindCluster ConfigMaps of the other source are not read"]
