"""The real-apiserver tier's children (etcd, kube-apiserver, ``vcsched run``) die with the process that
started them: a test run killed outright leaves nothing running (envtest.start_child)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vcsched.envtest import _dies_with_parent

pytestmark = pytest.mark.skipif(_dies_with_parent() is None, reason="PR_SET_PDEATHSIG is Linux's")

# the child is started from a thread that ends at once, as an event loop's worker thread does when a
# test's loop closes (a control plane restarted from one must not die with it)
PARENT = """
import subprocess, sys, threading, time
from pathlib import Path
from vcsched.envtest import _spawn
started = []
t = threading.Thread(target=lambda: started.append(
    _spawn(Path(sys.argv[1]), [sys.executable, "-c", "import time; time.sleep(120)"])))
t.start()
t.join()
print(started[0].pid, flush=True)
time.sleep(120)
"""


def _running(pid: int) -> bool:
    """Alive and not a zombie (in a container nothing may reap an orphan)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_a_child_outlives_the_thread_that_started_it_and_dies_with_its_process(tmp_path):
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path / "child.log")], stdout=subprocess.PIPE)
    try:
        child = int(parent.stdout.readline())
        time.sleep(0.5)
        assert _running(child)  # the thread that asked for it has ended, the child has not
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
