"""The shared per-shape search must choose exactly the node Volcano's node-by-node search chooses."""

import argparse

import pytest

from vcsched.cache import Cache
from vcsched.conf import DEFAULT_SCHEDULER_CONF, parse_conf
from vcsched.framework.effects import Bind
from vcsched.framework.node_search import NodeSearch
from vcsched.framework.session import NodesToFind
from vcsched.scheduler import Scheduler

from .bench_cluster import run_cycles


@pytest.mark.parametrize("n, expected", [(50, 50), (100, 100), (1000, 420), (5000, 500), (10000, 500), (200, 100)])
def test_num_feasible_nodes_to_find(n, expected):
    assert NodesToFind().count(n) == expected


@pytest.mark.parametrize("options, n, expected", [
    (NodesToFind(percentage=100), 5000, 5000),  # every node
    (NodesToFind(percentage=30), 1000, 300),
    (NodesToFind(percentage=1), 1000, 100),  # never below --minimum-feasible-nodes
    (NodesToFind(minimum=10), 50, 25),  # adaptive: 50 - 50//125 = 50%
    (NodesToFind(minimum=10, minimum_percentage=20), 10000, 2000),  # adaptive 0% raised to the minimum
])
def test_nodes_to_find_follows_volcanos_flags(options, n, expected):
    assert options.count(n) == expected


def placements(monkeypatch, shared: bool, nodes: int, pods: int, gang: int, cycles: int = 2) -> list[tuple[str, str]]:
    if not shared:
        monkeypatch.setattr(NodeSearch, "shareable", lambda self, task: False)
    args = argparse.Namespace(nodes=nodes, node_cpu="8", node_memory="16Gi", node_pods=20, pods=pods,
                              gang_size=gang, cpu="250m,1,3", memory="512Mi,2Gi,5Gi", seed=7)
    effects = run_cycles(args, parse_conf(DEFAULT_SCHEDULER_CONF), cycles)
    return [(e.name, e.node) for e in effects if isinstance(e, Bind)]


@pytest.mark.parametrize("nodes, pods, gang", [(150, 900, 1), (260, 1200, 4), (40, 400, 10)])
def test_shared_search_equals_node_by_node_search(monkeypatch, nodes, pods, gang):
    direct = placements(monkeypatch, False, nodes, pods, gang)
    monkeypatch.undo()
    shared = placements(monkeypatch, True, nodes, pods, gang)
    assert shared == direct
    assert len(direct) > pods // 3  # the cluster fills up: failures and full nodes are exercised too


def test_percentage_nodes_to_find_widens_the_search_window():
    """300 nodes: by default a task looks at the first 144 feasible ones and binpack's favourite,
    node 250 (half used), is out of sight; with --percentage-nodes-to-find=100 it is chosen."""
    from vcsched.conf import parse_conf

    from .test_actions import node, pod, podgroup, queue

    conf = parse_conf('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n'
                      '  - name: binpack\n')

    def placed(options: NodesToFind) -> str:
        cache = Cache()
        cache.add_queue(queue("default"))
        for i in range(300):
            cache.add_node(node(f"n{i:03}"))
        cache.add_podgroup(podgroup("busy"))
        cache.add_pod(pod("busy-0", "busy", cpu="2", node_name="n250", phase="Running"))
        cache.add_podgroup(podgroup("pg"))
        cache.add_pod(pod("p-0", "pg"))
        binds = [e for e in Scheduler(cache, conf, nodes_to_find=options).run_once() if isinstance(e, Bind)]
        return binds[0].node

    assert NodesToFind().count(300) == 144
    assert placed(NodesToFind()) != "n250"
    assert placed(NodesToFind(percentage=100)) == "n250"
