"""The shared per-shape search must choose exactly the node Volcano's node-by-node search chooses."""

import argparse

import pytest

from vcsched.bench import build_cluster
from vcsched.cache import Cache
from vcsched.conf import DEFAULT_SCHEDULER_CONF, parse_conf
from vcsched.framework.effects import Bind
from vcsched.framework.node_search import NodeSearch, num_feasible_nodes_to_find
from vcsched.scheduler import Scheduler


@pytest.mark.parametrize("n, expected", [(50, 50), (100, 100), (1000, 420), (5000, 500), (10000, 500), (200, 100)])
def test_num_feasible_nodes_to_find(n, expected):
    assert num_feasible_nodes_to_find(n) == expected


def placements(monkeypatch, shared: bool, nodes: int, pods: int, gang: int, cycles: int = 2) -> list[tuple[str, str]]:
    if not shared:
        monkeypatch.setattr(NodeSearch, "shareable", lambda self, task: False)
    args = argparse.Namespace(nodes=nodes, node_cpu="8", node_memory="16Gi", node_pods=20, pods=pods,
                              gang_size=gang, cpu="250m,1,3", memory="512Mi,2Gi,5Gi", seed=7)
    node_objs, pgs, pod_objs = build_cluster(args)
    cache = Cache()
    cache.add_queue({"metadata": {"name": "default"}, "spec": {"weight": 1}, "status": {"state": "Open"}})
    for obj in node_objs:
        cache.add_node(obj)
    for obj in pgs:
        cache.add_podgroup(obj)
    by_key = {}
    for obj in pod_objs:
        cache.add_pod(obj)
        by_key[obj["metadata"]["name"]] = obj
    scheduler = Scheduler(cache, parse_conf(DEFAULT_SCHEDULER_CONF))
    out = []
    for c in range(cycles):
        for e in scheduler.run_once(now=float(c), uid=f"s{c}"):
            if isinstance(e, Bind):
                out.append((e.name, e.node))
                pod = by_key[e.name]
                pod["spec"]["nodeName"] = e.node
                pod["status"]["phase"] = "Running"
                cache.update_pod(pod)
    return out


@pytest.mark.parametrize("nodes, pods, gang", [(150, 900, 1), (260, 1200, 4), (40, 400, 10)])
def test_shared_search_equals_node_by_node_search(monkeypatch, nodes, pods, gang):
    direct = placements(monkeypatch, False, nodes, pods, gang)
    monkeypatch.undo()
    shared = placements(monkeypatch, True, nodes, pods, gang)
    assert shared == direct
    assert len(direct) > pods // 3  # the cluster fills up: failures and full nodes are exercised too
