"""``vcsched bench --trace DIR --interconnect`` (issue 24): GPUs in NVLink groups published as HAMi's pair
scores, and the report of where multi-GPU tasks' cards landed, on a hand-made trace of two 8-GPU nodes."""

import json

from vcsched.cli import main
from vcsched.plugins.deviceshare.topology import parse_hami_scores
from vcsched.trace import TraceNode, nvlink_scores, read_nodes, read_tasks, replay

NODES = "sn,cpu_milli,memory_mib,gpu,model\nn1,96000,786432,8,G2\nn2,96000,786432,8,G2\nn3,32000,131072,2,T4\n"
# a GPU share first, then 2- and 4-GPU tasks that binpack's card order would lay across groups
TASKS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
         "scheduled_time\n"
         "a,4000,8192,1,300,,LS,Running,10,100,10\n"
         "b,8000,16384,2,1000,,LS,Running,20,100,20\n"
         "c,8000,16384,4,1000,,LS,Running,30,100,30\n"
         "d,8000,16384,2,1000,G2,LS,Running,40,100,40\n"
         "e,4000,8192,1,500,,LS,Running,50,100,50\n"
         "f,8000,16384,4,1000,,LS,Running,60,100,60\n")


def trace(tmp_path):
    (tmp_path / "openb_node_list_gpu_node.csv").write_text(NODES)
    (tmp_path / "openb_pod_list_default.csv").write_text(TASKS)
    return read_nodes(str(tmp_path / "openb_node_list_gpu_node.csv")), read_tasks(
        str(tmp_path / "openb_pod_list_default.csv"))


def test_nodes_publish_nvlink_groups_as_hami_writes_them():
    node = TraceNode("n1", 96000, 786432, 8, "G2")
    raw = nvlink_scores(node)
    doc = json.loads(raw)
    assert doc[0] == {"uuid": "GPU-n1-0", "score": {f"GPU-n1-{j}": 400 if j < 4 else 10 for j in range(1, 8)}}
    topo = parse_hami_scores(raw, [f"GPU-n1-{g}" for g in range(8)])
    assert topo.domains == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert nvlink_scores(TraceNode("n", 1, 1, 1, "T4")) is None


def test_vcsched_policy_keeps_multi_gpu_tasks_inside_one_group(tmp_path):
    nodes, tasks = trace(tmp_path)
    ours = replay(nodes, tasks, "fragmentation+preferred", interconnect=True).interconnect
    assert ours.placed > 0 and ours.eligible > 0
    assert ours.inside_eligible == ours.eligible and ours.share == 1.0
    volcano = replay(nodes, tasks, "binpack", interconnect=True).interconnect
    assert volcano.placed + volcano.failed == ours.placed + ours.failed
    assert volcano.share < 1.0  # Volcano's card order (fullest first) lays some across the groups
    # without --interconnect: no topology, no report
    assert replay(nodes, tasks, "binpack").interconnect is None


def test_cli_reports_the_interconnect_table(tmp_path, capsys):
    trace(tmp_path)
    assert main(["bench", "--trace", str(tmp_path), "--interconnect", "--policy", "binpack", "--policy",
                 "binpack+pairscore", "--policy", "fragmentation+preferred"]) == 0
    out = capsys.readouterr().out
    assert "multi-GPU tasks on NVLink groups" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line.split() and line.split()[0] in ("binpack", "binpack+pairscore", "fragmentation+preferred")}
    assert rows["fragmentation+preferred"][5] == "100.0%"
    assert main(["bench", "--trace", str(tmp_path), "--interconnect", "--policy", "binpack", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc[0]["policies"][0]["interconnect"]) == {"placed", "failed", "inside", "eligible", "inside_eligible"}
