"""The real-apiserver tier's children (etcd, kube-apiserver, ``vcsched run``) die with the process that
started them: a test run killed outright leaves nothing running (envtest.dies_with_parent)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vcsched.envtest import dies_with_parent

pytestmark = pytest.mark.skipif(dies_with_parent() is None, reason="PR_SET_PDEATHSIG is Linux's")

PARENT = """
import subprocess, sys, time
from pathlib import Path
from vcsched.envtest import _spawn
child = _spawn(Path(sys.argv[1]), [sys.executable, "-c", "import time; time.sleep(120)"])
print(child.pid, flush=True)
time.sleep(120)
"""


def _running(pid: int) -> bool:
    """Alive and not a zombie (in a container nothing may reap an orphan)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_a_child_started_by_spawn_dies_when_its_parent_is_killed(tmp_path):
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path / "child.log")], stdout=subprocess.PIPE)
    try:
        child = int(parent.stdout.readline())
        assert _running(child)
        parent.kill()  # no finalizer runs: SIGKILL
        parent.wait()
        deadline = time.monotonic() + 10
        while _running(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _running(child)
    finally:
        if parent.poll() is None:
            parent.kill()
        parent.stdout.close()
        if "child" in locals() and _running(child):
            os.kill(child, signal.SIGKILL)
