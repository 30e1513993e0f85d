"""``vcsched bench --apiserver``: what it refuses before it starts a control plane."""

from __future__ import annotations

import pytest

from vcsched.cli import main


@pytest.mark.parametrize("args, env, message", [
    (["--pods", "10"], None, "set KUBEBUILDER_ASSETS to a folder with etcd, kube-apiserver and kube-scheduler"),
    (["--pods", "10"], "/nonexistent", "set KUBEBUILDER_ASSETS to a folder with etcd, kube-apiserver and kube-scheduler"),
    (["--pods", "x"], None, "--pods: expected one integer without --trace"),
    (["--pods", "0"], None, "--pods: expected at least 1, got 0"),
    (["--trace", "somewhere"], None, "--trace and --apiserver are two benches"),
])
def test_bad_input_exits_2(args, env, message, monkeypatch, capsys):
    if env is None:
        monkeypatch.delenv("KUBEBUILDER_ASSETS", raising=False)
    else:
        monkeypatch.setenv("KUBEBUILDER_ASSETS", env)
    assert main(["bench", "--apiserver", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_latency_percentiles_are_nearest_rank():
    """The latency bench's p50/p90/p99 are values that were measured (nearest rank), not interpolations."""
    from vcsched.kube.apibench import _pct

    values = [float(v) for v in range(1, 101)]
    assert (_pct(values, 50), _pct(values, 90), _pct(values, 99), _pct(values, 100)) == (50.0, 90.0, 99.0, 100.0)
    assert _pct([7.0], 99) == 7.0
    assert _pct([1.0, 2.0, 3.0], 50) == 2.0


def test_latency_without_assets_exits_2(monkeypatch, capsys):
    monkeypatch.delenv("KUBEBUILDER_ASSETS", raising=False)
    assert main(["bench", "--apiserver", "--latency", "--rate", "50", "--duration", "1"]) == 2
    assert "set KUBEBUILDER_ASSETS" in capsys.readouterr().err
