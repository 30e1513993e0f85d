"""``vcsched bench --apiserver``: what it refuses before it starts a control plane."""

from __future__ import annotations

import pytest

from vcsched.cli import main


@pytest.mark.parametrize("args, env, message", [
    (["--pods", "10"], None, "set KUBEBUILDER_ASSETS to a folder with etcd, kube-apiserver and kube-scheduler"),
    (["--pods", "10"], "/nonexistent", "set KUBEBUILDER_ASSETS to a folder with etcd, kube-apiserver and kube-scheduler"),
    (["--pods", "x"], None, "--pods: expected one integer without --trace"),
    (["--pods", "10", "--nodes", "0"], None, "--nodes and --pods: expected at least 1"),
    (["--pods", "0"], None, "--nodes and --pods: expected at least 1"),
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
