"""Whatever the bench's cluster and conf, no session places more on a node than the node has.

The shared node search keeps one verdict per (shape, node) and trusts it until the node changes; a
change it misses shows as a node holding more than its allocatable.  Each case runs ``vcsched bench``
on a small cluster that fills up, with a third of the pods of a device cluster asking for no device
(a placement between two device placements on one node is where a missed change once hid), and
sums what the bound pods request per node.
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from vcsched import bench
from vcsched.api.quantity import parse_quantity
from vcsched.cli import main

from .bench_cluster import drop_devices

SMALL = ["--nodes", "24", "--node-cpu", "8", "--node-memory", "16Gi", "--node-pods", "30",
         "--cpu", "1,2,3", "--memory", "512Mi,2Gi,4Gi"]

CASES = {
    "plain": ["--pods", "400"],
    "gangs": ["--pods", "400", "--gang-size", "8"],
    "vgpu": ["--pods", "400", "--gpus-per-node", "2", "--gpu-memory", "16384", "--gpu-split", "4"],
    "vgpu-gangs": ["--pods", "400", "--gang-size", "4", "--gpus-per-node", "2", "--gpu-split", "4"],
    "device-plugin": ["--pods", "400", "--device-plugin-gpus", "4"],
    "dra": ["--pods", "400", "--dra-gpus-per-node", "2"],
    "ascend310p": ["--pods", "400", "--ascend310p-chips", "2"],
    "numa": ["--pods", "400", "--numa", "best-effort"],
    "task-topology": ["--pods", "400", "--gang-size", "8", "--task-topology"],
    "queue-tree": ["--pods", "400", "--queue-tree", "4"],
    "fabric": ["--pods", "384", "--gang-size", "8", "--fabric", "4x2", "--gang-topology", "hard:1"],
}


def requests(pod: dict) -> dict[str, Fraction]:
    """The pod's effective requests (its containers', or an init container's where that is more)."""
    total: dict[str, Fraction] = {}
    for c in pod["spec"]["containers"]:
        for name, q in ((c.get("resources") or {}).get("requests") or {}).items():
            total[name] = total.get(name, 0) + parse_quantity(q)
    for c in pod["spec"].get("initContainers") or ():
        for name, q in ((c.get("resources") or {}).get("requests") or {}).items():
            total[name] = max(total.get(name, 0), parse_quantity(q))
    return total


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_node_holds_more_than_it_has(monkeypatch, capsys, case):
    built: dict[str, list[dict]] = {}
    build = bench.build_cluster

    def capture(args):
        nodes, podgroups, pods = build(args)
        drop_devices(pods)
        built["nodes"], built["pods"] = nodes, pods
        return nodes, podgroups, pods

    monkeypatch.setattr(bench, "build_cluster", capture)
    assert main(["bench", *SMALL, *CASES[case], "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert 0 < out["pods_placed"] < out["pods"]  # the nodes fill up

    allocatable = {n["metadata"]["name"]: n["status"]["allocatable"] for n in built["nodes"]}
    held: dict[str, dict[str, Fraction]] = {}
    for pod in built["pods"]:
        node = pod["spec"].get("nodeName")
        if not node:
            continue
        on = held.setdefault(node, {"pods": Fraction(0)})
        on["pods"] += 1
        for name, q in requests(pod).items():
            on[name] = on.get(name, 0) + q
    over = {node: {name: (float(q), allocatable[node].get(name, "0")) for name, q in on.items()
                   if q > parse_quantity(allocatable[node].get(name, "0"))}
            for node, on in held.items()}
    assert not {node: o for node, o in over.items() if o}
