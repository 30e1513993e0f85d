"""Shared node search stays exact for device pods: same nodes and same GPUs as the node-by-node search."""

import argparse

import pytest

from vcsched.bench import GPU_SCHEDULER_CONF
from vcsched.conf import parse_conf
from vcsched.framework.effects import Bind
from vcsched.framework.node_search import NodeSearch

from .bench_cluster import run_cycles


def placements(monkeypatch, shared: bool, nodes: int, pods: int, gang: int) -> list[tuple[str, str, str]]:
    if not shared:
        monkeypatch.setattr(NodeSearch, "shareable", lambda self, task: False)
    args = argparse.Namespace(nodes=nodes, node_cpu="8", node_memory="16Gi", node_pods=30, pods=pods,
                              gang_size=gang, cpu="250m,1", memory="512Mi,2Gi", seed=3, gpus_per_node=2,
                              gpu_model="NVIDIA-Tesla T4", gpu_memory=16384, gpu_split=4,
                              gpu_request_mix="2048:10,4096:30,8192:0,12000:50,16384:100")
    effects = run_cycles(args, parse_conf(GPU_SCHEDULER_CONF))
    return [(e.name, e.node, e.annotations["volcano.sh/vgpu-ids-new"]) for e in effects if isinstance(e, Bind)]


@pytest.mark.parametrize("nodes, pods, gang", [(60, 500, 1), (30, 300, 3)])
def test_shared_search_equals_node_by_node_search_with_gpus(monkeypatch, nodes, pods, gang):
    direct = placements(monkeypatch, False, nodes, pods, gang)
    monkeypatch.undo()
    shared = placements(monkeypatch, True, nodes, pods, gang)
    assert shared == direct
    assert pods // 4 < len(direct) < pods  # GPUs fill up: device failures are exercised too
