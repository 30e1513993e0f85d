"""Shared node search stays exact for device pods: same nodes and same GPUs as the node-by-node search."""

import argparse

import pytest

from vcsched.bench import GPU_SCHEDULER_CONF, build_cluster
from vcsched.cache import Cache
from vcsched.conf import parse_conf
from vcsched.framework.effects import Bind
from vcsched.framework.node_search import NodeSearch
from vcsched.plugins.deviceshare import device_builder
from vcsched.scheduler import Scheduler


def placements(monkeypatch, shared: bool, nodes: int, pods: int, gang: int) -> list[tuple[str, str, str]]:
    if not shared:
        monkeypatch.setattr(NodeSearch, "shareable", lambda self, task: False)
    args = argparse.Namespace(nodes=nodes, node_cpu="8", node_memory="16Gi", node_pods=30, pods=pods,
                              gang_size=gang, cpu="250m,1", memory="512Mi,2Gi", seed=3, gpus_per_node=2,
                              gpu_model="NVIDIA-Tesla T4", gpu_memory=16384, gpu_split=4,
                              gpu_request_mix="2048:10,4096:30,8192:0,12000:50,16384:100")
    node_objs, pgs, pod_objs = build_cluster(args)
    conf = parse_conf(GPU_SCHEDULER_CONF)
    cache = Cache(devices=device_builder(conf, {}))
    cache.add_queue({"metadata": {"name": "default"}, "spec": {"weight": 1}, "status": {"state": "Open"}})
    for obj in node_objs:
        cache.add_node(obj)
    for obj in pgs:
        cache.add_podgroup(obj)
    by_key = {}
    for obj in pod_objs:
        cache.add_pod(obj)
        by_key[obj["metadata"]["name"]] = obj
    scheduler = Scheduler(cache, conf)
    out = []
    for c in range(2):
        for e in scheduler.run_once(now=float(c), uid=f"s{c}"):
            if isinstance(e, Bind):
                ids = e.annotations["volcano.sh/vgpu-ids-new"]
                out.append((e.name, e.node, ids))
                pod = by_key[e.name]
                pod["spec"]["nodeName"] = e.node
                pod["status"]["phase"] = "Running"
                pod["metadata"]["annotations"].update(e.annotations)
                cache.update_pod(pod)
    return out


@pytest.mark.parametrize("nodes, pods, gang", [(60, 500, 1), (30, 300, 3)])
def test_shared_search_equals_node_by_node_search_with_gpus(monkeypatch, nodes, pods, gang):
    direct = placements(monkeypatch, False, nodes, pods, gang)
    monkeypatch.undo()
    shared = placements(monkeypatch, True, nodes, pods, gang)
    assert shared == direct
    assert pods // 4 < len(direct) < pods  # GPUs fill up: device failures are exercised too
