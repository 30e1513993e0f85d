"""``vcsched bench --numa POLICY``: the Numatopologies it gives nodes are ones simulate admits, its pods
are Guaranteed with the policy, and the run places them with numa-aware on."""

from __future__ import annotations

import json

import pytest

from vcsched.bench import numa_cluster
from vcsched.cli import main
from vcsched.plugins.numa_aware import pod_qos_class
from vcsched.sim.fields import Checker
from vcsched.sim.numatopology_manifest import validate_numatopology


def test_numa_cluster_gives_valid_topologies_and_guaranteed_pods():
    nodes = [{"metadata": {"name": "n0"}, "status": {"allocatable": {"cpu": "8"}}}]
    pods = [{"metadata": {"annotations": {}}, "spec": {"containers": [
        {"name": "main", "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}}]}}]
    (topo,) = numa_cluster(nodes, pods, "single-numa-node", 2)
    validate_numatopology(topo, Checker("bench"))
    assert topo["spec"]["numares"]["cpu"] == {"allocatable": "0-7", "capacity": 8}
    assert {d["numa"] for d in topo["spec"]["cpuDetail"].values()} == {0, 1}
    assert pods[0]["metadata"]["annotations"]["volcano.sh/numa-topology-policy"] == "single-numa-node"
    assert pods[0]["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "1"
    assert pod_qos_class(pods[0]) == "Guaranteed"


def test_bench_with_numa_places_every_pod(capsys):
    assert main(["bench", "--nodes", "4", "--pods", "24", "--cpu", "1,2", "--numa", "single-numa-node",
                 "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["pods_placed"] == 24


def test_bench_refuses_no_numa_nodes(capsys):
    with pytest.raises(SystemExit) as refused:  # argparse's refusal of a count below 1
        main(["bench", "--nodes", "1", "--pods", "1", "--numa", "best-effort", "--numa-nodes", "0"])
    assert refused.value.code == 2 and "--numa-nodes" in capsys.readouterr().err


