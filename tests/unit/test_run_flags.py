"""``vcsched run``'s flags: what it refuses before it talks to a cluster (exit 2, a line naming the flag),
and the durations it reads as Go's ParseDuration does (Volcano's flags are Go durations)."""

from __future__ import annotations

import pytest

from vcsched.cli import main
from vcsched.kube.command import _duration
from vcsched.kube.runtime import parse_listen


@pytest.mark.parametrize("args, message", [
    (["--schedule-period=-5s"], "--schedule-period: expected a duration of at least 0, got '-5s'"),
    (["--schedule-period", "nan"], '--schedule-period: time: invalid duration "nan"'),
    (["--schedule-period", "3"], '--schedule-period: time: missing unit in duration "3"'),
    (["--cycle-coalesce", "inf"], '--cycle-coalesce: time: invalid duration "inf"'),
    (["--cycle-coalesce", "nope"], '--cycle-coalesce: time: invalid duration "nope"'),
    (["--listen", ":abc"], "--listen: invalid address ':abc': expected [HOST]:PORT, PORT 0-65535"),
    (["--listen", ":99999"], "--listen: invalid address ':99999'"),
    (["--listen", "8080"], "--listen: invalid address '8080'"),
])
def test_run_refuses_bad_flags_before_the_cluster(args, message, capsys):
    assert main(["run", "--kubeconfig", "/nonexistent", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "no usable cluster configuration" not in err and "Traceback" not in err


@pytest.mark.parametrize("text, seconds", [("1s", 1.0), ("500ms", 0.5), ("0", 0.0), ("1m30s", 90.0), (".5s", 0.5)])
def test_run_reads_durations_as_go_does(text, seconds):
    assert _duration("--schedule-period", text) == pytest.approx(seconds)


@pytest.mark.parametrize("text, address", [(":8080", ("0.0.0.0", 8080)), ("127.0.0.1:0", ("127.0.0.1", 0)),
                                           ("[::1]:9090", ("::1", 9090))])
def test_listen_addresses(text, address):
    assert parse_listen(text) == address


def test_good_flags_reach_the_cluster_configuration(capsys):
    assert main(["run", "--kubeconfig", "/nonexistent", "--schedule-period", "0.5s", "--cycle-coalesce", "0",
                 "--listen", "127.0.0.1:0"]) == 2
    assert "no usable cluster configuration" in capsys.readouterr().err
