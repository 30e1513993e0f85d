"""Shared node search stays exact for device pods: same nodes and same GPUs as the node-by-node search."""

import argparse

import pytest

from vcsched.api.quantity import parse_quantity
from vcsched.bench import GPU_SCHEDULER_CONF
from vcsched.conf import parse_conf
from vcsched.framework.effects import Bind
from vcsched.framework.node_search import NodeSearch

from . import bench_cluster


def every_third_pod_without_devices(monkeypatch) -> None:
    """The bench cluster's every third pod asks for no vGPU (bench_cluster.drop_devices)."""
    build = bench_cluster.build_cluster

    def mixed(args):
        nodes, pgs, pods = build(args)
        bench_cluster.drop_devices(pods)
        return nodes, pgs, pods

    monkeypatch.setattr(bench_cluster, "build_cluster", mixed)


def placements(monkeypatch, shared: bool, nodes: int, pods: int, gang: int,
               mixed: bool = False) -> list[tuple[str, str, str]]:
    if not shared:
        monkeypatch.setattr(NodeSearch, "shareable", lambda self, task: False)
    if mixed:
        every_third_pod_without_devices(monkeypatch)
    args = argparse.Namespace(nodes=nodes, node_cpu="8", node_memory="16Gi", node_pods=30, pods=pods,
                              gang_size=gang, cpu="250m,1", memory="512Mi,2Gi", seed=3, gpus_per_node=2,
                              gpu_model="NVIDIA-Tesla T4", gpu_memory=16384, gpu_split=4,
                              gpu_request_mix="2048:10,4096:30,8192:0,12000:50,16384:100")
    effects = bench_cluster.run_cycles(args, parse_conf(GPU_SCHEDULER_CONF))
    return [(e.name, e.node, e.annotations.get("volcano.sh/vgpu-ids-new", ""))
            for e in effects if isinstance(e, Bind)]


@pytest.mark.parametrize("mixed", [False, True], ids=["all-vgpu", "a-third-without-devices"])
@pytest.mark.parametrize("nodes, pods, gang", [(60, 500, 1), (30, 300, 3)])
def test_shared_search_equals_node_by_node_search_with_gpus(monkeypatch, nodes, pods, gang, mixed):
    direct = placements(monkeypatch, False, nodes, pods, gang, mixed)
    monkeypatch.undo()
    shared = placements(monkeypatch, True, nodes, pods, gang, mixed)
    assert shared == direct
    assert pods // 4 < len(direct) < pods  # GPUs fill up: device failures are exercised too


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pods_without_devices_between_vgpu_pods_never_overcommit_a_node(monkeypatch, seed):
    """Every third job asks for no vGPU: such a pod placed on a GPU node right after a vGPU pod is a
    change the next search there must see (deviceshare's own mark of the node came first), so no
    node ever holds more CPU, memory or pods than it has, and no card more memory."""
    every_third_pod_without_devices(monkeypatch)
    args = argparse.Namespace(nodes=20, node_cpu="8", node_memory="16Gi", node_pods=30, pods=400, gang_size=1,
                              cpu="1,2,3", memory="512Mi,2Gi", seed=seed, gpus_per_node=2,
                              gpu_model="NVIDIA-Tesla T4", gpu_memory=16384, gpu_split=4,
                              gpu_request_mix="2048:10,4096:30,8192:0")
    _, _, pod_objs = bench_cluster.build_cluster(args)
    requests = {p["metadata"]["name"]: p["spec"]["containers"][0]["resources"]["requests"] for p in pod_objs}
    binds = [e for e in bench_cluster.run_cycles(args, parse_conf(GPU_SCHEDULER_CONF)) if isinstance(e, Bind)]
    assert 50 < len(binds) < 400  # the nodes fill up
    cpu: dict[str, float] = {}
    memory: dict[str, float] = {}
    pods: dict[str, int] = {}
    card_memory: dict[str, int] = {}
    for b in binds:
        req = requests[b.name]
        cpu[b.node] = cpu.get(b.node, 0) + parse_quantity(req["cpu"])
        memory[b.node] = memory.get(b.node, 0) + parse_quantity(req["memory"])
        pods[b.node] = pods.get(b.node, 0) + 1
        for entry in filter(None, b.annotations.get("volcano.sh/vgpu-ids-new", "").split(":")):
            card, _, mib, _ = entry.split(",")
            card_memory[card] = card_memory.get(card, 0) + int(mib)
    assert max(cpu.values()) <= 8 and max(memory.values()) <= 16 * 2**30 and max(pods.values()) <= 30
    assert max(card_memory.values()) <= 16384
