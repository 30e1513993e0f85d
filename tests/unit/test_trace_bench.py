"""``vcsched bench --trace``: the replay's accounting on a tiny hand-made trace (tests/data/trace-tiny).

Cluster: n1 with two T4, n2 with one V100M32 (3 GPUs).  Tasks in creation order: a (1 whole GPU),
b (half a GPU), c (CPU only), d (2 whole GPUs), e (half a V100M32).  Arrived demand: a 33%, b 50%,
d 117%, e 133%: four sessions.  Binpack with ties to the first node (``--tie-break first``): a → n1 GPU 0
(tie with n2, n1 first in search order), b → n1 GPU 1, c → n1, d fails (no node has two idle GPUs), e → n2.
"""

import json
import os

import pytest

from vcsched.cli import main
from vcsched.trace import (
    MILLI, Replay, TraceError, TraceTask, arrivals, batches, offline_unallocated, read_nodes, read_tasks, replay,
    trace_conf, trace_model,
)

DATA = os.path.join(os.path.dirname(__file__), "..", "data")
TINY = os.path.join(DATA, "trace-tiny")
NODES = os.path.join(TINY, "openb_node_list_gpu_node.csv")
TASKS = os.path.join(TINY, "openb_pod_list_default.csv")


def test_reads_tasks_in_creation_order_and_resamples_to_130_percent():
    tasks = read_tasks(TASKS)
    assert [t.name for t in tasks] == ["a", "b", "c", "d", "e"]
    assert [t.gpu_demand for t in tasks] == [1000, 500, 0, 2000, 500]
    assert tasks[4].gpu_spec == ("V100M32",)
    small = read_tasks(os.path.join(TINY, "openb_pod_list_small.csv"))  # 0.5 GPU in all, no creation_time
    arrived = arrivals(small, 3 * MILLI, seed=7)
    assert [t.name for t in arrived[:3]] == ["s0", "s1", "s2"]
    demand = sum(t.gpu_demand for t in arrived)
    assert demand >= 3900 and demand - arrived[-1].gpu_demand < 3900
    assert arrived == arrivals(small, 3 * MILLI, seed=7)


def test_shuffle_submits_the_whole_list_in_a_seeded_random_order_before_resampling():
    tasks = [TraceTask(f"t{i}", 1000, 1024, 1, 100, (), i) for i in range(20)]  # 2 GPUs in all
    arrived = arrivals(tasks, 2 * MILLI, seed=3, shuffle=True)
    first = arrived[:20]
    assert sorted(first, key=lambda t: t.creation) == tasks and first != tasks
    assert arrived == arrivals(tasks, 2 * MILLI, seed=3, shuffle=True)
    assert first != arrivals(tasks, 2 * MILLI, seed=4, shuffle=True)[:20]
    assert len(arrived) == 26  # then sampled again up to 130%, as in creation order
    assert arrivals(tasks, 2 * MILLI, seed=3)[:20] == tasks


def test_batches_close_every_10_percent_step():
    tasks = read_tasks(TASKS)
    assert batches(tasks, 3 * MILLI) == [(1, (10, 20, 30)), (2, (40, 50)), (4, (60, 70, 80, 90, 100, 110)),
                                         (5, (120, 130))]
    # two sessions per step: a session ends at every 5%, rows still every 10%
    assert batches(tasks, 3 * MILLI, 2)[0] == (1, (10, 20, 30))


def test_replay_accounting_binpack():
    nodes, tasks = read_nodes(NODES), read_tasks(TASKS)
    rep = replay(nodes, tasks, "binpack", tie_break="first")
    assert rep.sessions == 4
    rows = {s.arrived_percent: s for s in rep.steps}
    assert sorted(rows) == list(range(10, 131, 10))
    got = [(rows[p].arrived_gpus, rows[p].tasks_arrived, rows[p].allocated_gpus, rows[p].unallocated_gpus,
            rows[p].failed_tasks) for p in (30, 50, 110, 130)]
    assert got == [(1.0, 1, 1.0, 2.0, 0), (1.5, 2, 1.5, 1.5, 0), (3.5, 4, 1.5, 1.5, 1), (4.0, 5, 2.0, 1.0, 1)]
    end = rows[130]
    assert end.allocated_share == pytest.approx(2 / 3, abs=1e-4)
    assert end.failed_gpu_tasks == 1
    # FGD fragmentation, classes a..e at 1/5: n1 (0.5 free on a shared T4) 0.4, n2 (0.5 free V100) 0.3
    assert end.fragmentation_gpus == pytest.approx(0.7)
    assert end.fragmentation_rate == pytest.approx(0.7)


def test_replay_breaks_ties_at_random_as_volcano_by_default():
    """a (one whole GPU) ties between n1 and n2 (binpack scores the card, 100, on both).  Drawn onto n2,
    it takes n2's only card: b goes to n1, d (two whole GPUs) and e (the V100M32) fail.  The draw is seeded."""
    nodes, tasks = read_nodes(NODES), read_tasks(TASKS)

    def end(seed: int) -> tuple[float, int]:
        last = replay(nodes, tasks, "binpack", seed=seed).steps[-1]
        return last.allocated_gpus, last.failed_tasks

    outcomes = {seed: end(seed) for seed in range(1, 9)}
    assert set(outcomes.values()) == {(2.0, 1), (1.5, 2)}
    assert end(1) == outcomes[1] and end(2) == outcomes[2]


def test_replay_ledger_matches_the_task_accounting_for_every_policy():
    nodes, tasks = read_nodes(NODES), read_tasks(TASKS)
    for policy in ("binpack", "spread", "fragmentation"):
        r = Replay(nodes, trace_conf(policy), trace_model(tasks))
        for seq, t in enumerate(tasks):
            r.submit(t, seq)
        r.run_session()
        assert r.allocated_milli == r.ledger_milli() > 0, policy
        assert r.failed >= 1  # d cannot fit beside a: both ask idle T4s


def test_offline_yardstick_is_best_fit_decreasing_up_to_100_percent():
    """Two cards; shares 0.3, 0.6, 0.2, 0.6, 0.4 arrive (2.1 GPUs: 100% is reached by the fifth).  Largest
    first, each into the fullest card it fits: 0.6 | 0.6, then 0.4 fills the first, 0.3 the second, and 0.2
    fails: 0.1 GPU unallocated.  A task arriving after 100% is not counted; whole GPUs count as cards."""
    def task(name: str, milli: int, num: int = 1) -> TraceTask:
        return TraceTask(name, 1000, 1024, num, milli if num == 1 else 0, (), 0)
    arrived = [task("a", 300), task("b", 600), task("c", 200), task("d", 600), task("e", 400), task("late", 100)]
    assert offline_unallocated(arrived, 2) == pytest.approx(0.1)
    # tiny trace: a (1), b (0.5), c (CPU), d (2 whole) by 100%: 1 + 1 + 1 fill the 3 cards, b fails
    assert offline_unallocated(read_tasks(TASKS), 3) == 0.0
    assert offline_unallocated([task("w", 0, 2), task("h", 500)], 3) == pytest.approx(0.5)


def test_cli_table_json_and_plot(tmp_path, capsys):
    png = tmp_path / "trace.png"
    assert main(["bench", "--trace", TINY, "--policy", "binpack", "--policy", "fragmentation", "-o", "json",
                 "--plot", str(png)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [p["policy"] for p in out[0]["policies"]] == ["binpack", "fragmentation"]
    assert out[0]["gpus"] == 3 and "all 2 nodes" in out[0]["node_search"]
    assert out[0]["offline_unallocated"] == 0.0
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert main(["bench", "--trace", TINY, "--pods", "small", "--policy", "spread"]) == 0
    table = capsys.readouterr().out
    assert "openb_pod_list_small.csv" in table and "130%" in table
    assert "offline yardstick at 100% arrived" in table and "order creation" in table
    assert main(["bench", "--trace", TINY, "--policy", "binpack", "--shuffle", "-o", "json"]) == 0
    shuffled = json.loads(capsys.readouterr().out)[0]
    assert shuffled["order"] == "shuffled" and out[0]["order"] == "creation"
    assert shuffled["policies"][0]["steps"][-1]["arrived_percent"] == 130
    assert out[0]["tie_break"] == "random" and "ties at random" in table
    assert main(["bench", "--trace", TINY, "--policy", "binpack", "--tie-break", "first"]) == 0
    assert "ties to the first in search order" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["--trace", os.path.join(DATA, "missing")], "missing: no such trace directory"),
    (["--trace", os.path.join(DATA, "trace-bad")],
     "openb_pod_list_default.csv:3: cpu_milli: expected an integer, got 'lots'"),
    (["--trace", os.path.join(DATA, "trace-bad"), "--pods", "short"], "openb_pod_list_short.csv:3: expected 5 fields"),
    (["--trace", os.path.join(DATA, "trace-bad"), "--pods", "share"],
     "openb_pod_list_share.csv:2: gpu_milli: expected between 0 and 1000, got 1500"),
    (["--trace", os.path.join(DATA, "trace-bad"), "--pods", "nocol"], "missing column(s) num_gpu"),
    (["--trace", os.path.join(DATA, "trace-badnode")],
     "openb_node_list_gpu_node.csv:3: model: unknown GPU model 'H100'"),
    (["--trace", TINY, "--pods", os.path.join(DATA, "nope.csv")], "nope.csv: No such file or directory"),
    (["--pods", "many"], "--pods: expected one integer without --trace"),
    (["--shuffle"], "--policy, --plot, --shuffle and --tie-break need --trace"),
    (["--tie-break", "first"], "--policy, --plot, --shuffle and --tie-break need --trace"),
    (["--trace", TINY, "--conf", os.path.join(DATA, "no-deviceshare.conf")],
     "the trace replay needs the deviceshare plugin in the configuration"),
])
def test_bad_input_exits_2_naming_file_and_line(args, message, capsys):
    assert main(["bench", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_empty_lists_are_errors(tmp_path):
    f = tmp_path / "openb_pod_list_x.csv"
    f.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\n")
    with pytest.raises(TraceError, match="no tasks"):
        read_tasks(str(f))
    f.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\nx,1000,1024,0,0\n")
    with pytest.raises(TraceError, match="asks for no GPU"):
        arrivals(read_tasks(str(f)), 1000, seed=1)


def test_conf_file_gets_each_policy():
    from vcsched.trace import TRACE_CONF

    c = trace_conf("spread", TRACE_CONF.format(policy="binpack"))
    ds = next(o for tier in c.tiers for o in tier if o.name == "deviceshare")
    assert ds.arguments.values["deviceshare.SchedulePolicy"] == "spread"
