"""MindCluster device-info ConfigMaps in Kubernetes mode: watched by label when the Ascend 310P kind is on,
and an update changes the next decision (spec/devices.md §4.4)."""

from __future__ import annotations

import json

import pytest

from .conftest import conf_map, eventually, node, pod, podgroup, queue

pytestmark = pytest.mark.asyncio


P = "huawei.com/Ascend310P"
CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: predicates
  - name: proportion
  - name: deviceshare
    arguments: {deviceshare.AscendMindClusterVNPUEnable: true}
configurations:
- name: init-params
  arguments: {self-maintain-available-card: "false"}
"""


def npu_node(name: str) -> dict:
    """A 310P node whose annotations name no chips: only the device-info ConfigMap does."""
    n = node(name, cpu="16", memory="64Gi")
    n["metadata"]["labels"].update({"accelerator": "huawei-Ascend310P", "servertype": "Ascend310P-8",
                                    "node.kubernetes.io/npu.chip.name": "310P3"})
    n["status"]["allocatable"]["huawei.com/npu-core"] = "16"
    n["status"]["capacity"] = dict(n["status"]["allocatable"])
    return n


def cluster_cm(name: str, table: dict) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "mindx-dl", "labels": {"mx-consumer-volcano": "true"}},
            "data": {name: json.dumps(table)}}


async def test_a_configmap_update_changes_the_decision(api, start):
    api.put(npu_node("n1"))
    api.put(queue("default"))
    api.put(queue("root"))
    api.put(conf_map(CONF))
    api.put(cluster_cm("cluster-info-device-0", {"mindx-dl-deviceinfo-n1": {
        "DeviceList": {P: "Ascend310P-0,Ascend310P-1", P + "-Unhealthy": ""}, "UpdateTime": 1767225600}}))
    api.put(cluster_cm("cluster-info-node-cm", {"mindx-dl-nodeinfo-n1": {"NodeStatus": "PreSeparate"}}))
    # an unlabelled look-alike in the namespace is not ours (the watch selects by label)
    api.put({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cluster-info-device-1", "namespace": "mindx-dl"},
             "data": {"cluster-info-device-1": "{"}})
    api.put(podgroup("pg1"))
    p = pod("p1", "pg1")
    p["metadata"]["labels"] = {"ring-controller.atlas": "ascend-310P"}
    p["spec"]["containers"][0]["resources"]["limits"] = {"huawei.com/npu-core": "1"}
    p["spec"]["containers"][0]["resources"]["requests"]["huawei.com/npu-core"] = "1"
    api.put(p)
    rt = await start()
    await eventually(lambda: rt.sessions >= 3, "a few sessions")
    assert not api.bindings  # NodeD says PreSeparate
    assert rt.mindcluster.errors == 0 and rt.mindcluster.noded_status("n1", True) == "PreSeparate"
    lists = [r for r in api.requests if r.method.value == "GET" and r.resource is not None
             and r.resource.plural == "configmaps" and r.namespace == "mindx-dl"]
    assert lists and all(dict(r.params).get("labelSelector") == "mx-consumer-volcano=true" for r in lists)
    # a bad edit is ignored: the earlier version stays in force
    api.update("", "configmaps", "mindx-dl", "cluster-info-node-cm", {"data": {"cluster-info-node-cm": "[oops"}})
    await eventually(lambda: rt.mindcluster.errors == 1, "bad JSON ignored")
    n = rt.sessions
    await eventually(lambda: rt.sessions >= n + 2, "two more sessions")
    assert not api.bindings
    # NodeD reports the node healthy again: the next session places the pod on a chip the ConfigMap names
    api.update("", "configmaps", "mindx-dl", "cluster-info-node-cm",
               {"data": {"cluster-info-node-cm": json.dumps({"mindx-dl-nodeinfo-n1": {"NodeStatus": "Healthy"}})}})
    await eventually(lambda: api.bindings, "pod bound")
    assert api.bindings == [("default", "p1", "n1")]
    assert api.get("", "pods", "default", "p1")["metadata"]["annotations"]["huawei.com/npu-core"] == "0-vir01"


async def test_no_watch_without_the_310p_kind(api, start):
    api.put(node("n1"))
    api.put(queue("default"))
    api.put(queue("root"))
    api.put(conf_map(CONF.replace("AscendMindClusterVNPUEnable", "VGPUEnable")))
    rt = await start()
    await eventually(lambda: rt.sessions >= 2, "sessions")
    assert not [r for r in api.requests if r.resource is not None and r.resource.plural == "configmaps"
                and (r.namespace == "mindx-dl" or dict(r.params).get("labelSelector"))]
    # switching the kind on (with the device-plugin source) starts the watches
    api.update("", "configmaps", "volcano-system", "volcano-scheduler-configmap", {"data": {
        "volcano-scheduler.conf": CONF.replace('self-maintain-available-card: "false"', 'useClusterInfoManager: "false"')}})
    await eventually(lambda: len(rt._mindcluster_watches) == 2, "watches started")
    await eventually(lambda: {r.namespace for r in api.requests if r.resource is not None
                              and r.resource.plural == "configmaps" and dict(r.params).get("labelSelector")
                              == "mx-consumer-cim=true"} == {"mindx-dl", "kube-system"}, "listed by label")
