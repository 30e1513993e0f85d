"""Command-line input refused before anything runs, with exit 2 and a line naming the flag: counts and
rates below what they can mean (``cli.at_least``, ``cli.positive_number``), and a pod key that names no
pod; nothing of it reaches a session."""

from __future__ import annotations

import json

import pytest

from vcsched.cli import main

QUICKSTART = "conf/examples/quickstart.yaml"


def _exit(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as e:  # argparse's own refusal
        return int(e.code or 0)


@pytest.mark.parametrize("args, message", [
    (["--nodes", "0"], "argument --nodes: expected at least 1, got 0"),
    (["--nodes", "-5"], "argument --nodes: expected at least 1, got -5"),
    (["--nodes", "many"], "argument --nodes: expected a whole number, got 'many'"),
    (["--pods", "0"], "--pods: expected at least 1, got 0"),
    (["--gang-size", "0"], "argument --gang-size: expected at least 1, got 0"),
    (["--node-pods", "-1"], "argument --node-pods: expected at least 1, got -1"),
    (["--queue-tree", "-2"], "argument --queue-tree: expected at least 0, got -2"),  # was a ZeroDivisionError
    (["--gpus-per-node", "-1"], "argument --gpus-per-node: expected at least 0, got -1"),
    (["--gpus-per-node", "2", "--gpu-split", "0"], "argument --gpu-split: expected at least 1, got 0"),
    (["--gpus-per-node", "2", "--gpu-memory", "0"], "argument --gpu-memory: expected at least 1, got 0"),
    (["--ascend310p-chips", "-1"], "argument --ascend310p-chips: expected at least 0, got -1"),
    (["--ascend310p-chips", "1", "--gpus-per-node", "2"], "--ascend310p-chips: not with --gpus-per-node"),
    (["--max-cycles", "-1"], "argument --max-cycles: expected at least 0, got -1"),
    (["--preempt", "-3"], "argument --preempt: expected at least 0, got -3"),
    (["--dra-gpus-per-node", "-1"], "argument --dra-gpus-per-node: expected at least 0, got -1"),
    (["--device-plugin-gpus", "-2"], "argument --device-plugin-gpus: expected at least 0, got -2"),
    (["--numa", "none", "--numa-nodes", "0"], "argument --numa-nodes: expected at least 1, got 0"),
    (["--trace", "x", "--sessions-per-step", "0"], "argument --sessions-per-step: expected at least 1, got 0"),
    (["--apiserver", "--latency", "--gang-backlog", "-1"], "argument --gang-backlog: expected at least 0, got -1"),
    (["--apiserver", "--latency", "--rate", "0"], "argument --rate: expected a number above 0, got 0"),
    (["--apiserver", "--latency", "--duration", "-3"], "argument --duration: expected a number above 0, got -3"),
    (["--apiserver", "--latency", "--duration", "nan"], "argument --duration: expected a number above 0, got nan"),
    (["--apiserver", "--timeout", "soon"], "argument --timeout: expected a number, got 'soon'"),
])
def test_bench_refuses_counts_below_their_meaning(args, message, capsys):
    assert _exit(["bench", "--pods", "10", *args] if "--pods" not in args else ["bench", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "internal error" not in err


def test_bench_takes_the_smallest_counts_that_mean_something(capsys):
    assert main(["bench", "--nodes", "1", "--pods", "1", "--gang-size", "1", "--max-cycles", "1", "-o", "json"]) == 0
    assert '"pods_placed": 1' in capsys.readouterr().out


def test_bench_with_no_cycle_builds_the_cluster_and_places_nothing(capsys):
    """``--max-cycles 0``: the process without its timed window, for a profiler's counts to subtract."""
    assert main(["bench", "--nodes", "2", "--pods", "3", "--max-cycles", "0", "-o", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["cycles"], result["pods"], result["pods_placed"], result["pods_per_second"]) == (0, 3, 0, 0.0)


@pytest.mark.parametrize("value, message", [
    ("-1", "argument --cycles: expected at least 0, got -1"),
    ("two", "argument --cycles: expected a whole number, got 'two'"),
])
def test_simulate_refuses_a_negative_cycle_count(value, message, capsys):
    assert _exit(["simulate", "-f", QUICKSTART, "--cycles", value]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_simulate_runs_no_cycle_when_asked_for_none(capsys):
    assert main(["simulate", "-f", QUICKSTART, "--cycles", "0", "-o", "json"]) == 0
    assert '"cycles": 0' in capsys.readouterr().out


@pytest.mark.parametrize("pod", ["a/b/c", "ns/", "/pod"])
def test_explain_refuses_a_pod_key_that_names_no_pod_before_it_reads_the_cluster(pod, capsys):
    assert main(["explain", "--kubeconfig", "/nonexistent", pod]) == 2
    err = capsys.readouterr().err
    assert f"NAMESPACE/POD: expected a namespace and a pod name, got {pod!r}" in err
    assert "kubeconfig" not in err  # refused before the cluster is read
