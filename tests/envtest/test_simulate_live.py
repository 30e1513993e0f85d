"""``vcsched simulate --kubeconfig`` on the real API server: the live cluster's state plus the ``-f``
manifests, scheduled in memory, and nothing written to the cluster (issue 21)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import Kube, pod, queue

pytestmark = pytest.mark.asyncio

EXTRA = """
apiVersion: v1
kind: Pod
metadata: {name: what-if, namespace: default}
spec:
  schedulerName: volcano
  containers: [{name: main, image: busybox, resources: {requests: {cpu: "3", memory: 1Gi}}}]
"""


async def _revision(kube: Kube) -> str:
    """The store's revision: any write anywhere moves it."""
    _, rv = await kube.client.list("/api/v1/namespaces", {"limit": 1}, first_page_only=True)
    return rv or ""


async def test_simulate_reads_the_live_cluster_and_writes_nothing(kube: Kube, tmp_path: Path):
    await kube.node("n0", cpu="4")
    await kube.node("n1", cpu="4")
    await kube.create(queue("research"))
    # n0 already runs a 2-CPU pod: the what-if pod (3 CPU) fits only n1
    await kube.create(pod("running", cpu="2", node_name="n0"))
    extra = tmp_path / "extra.yaml"
    extra.write_text(EXTRA, encoding="utf-8")
    before = await _revision(kube)
    admin = str(kube.cp.admin.kubeconfig)
    done = subprocess.run([sys.executable, "-m", "vcsched.cli", "simulate", "--kubeconfig", admin,
                           "-f", str(extra), "-o", "json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["pods"]["default/what-if"]["node"] == "n1"
    assert out["pods"]["default/running"]["node"] == "n0"
    assert "research" in out["queues"]
    assert await _revision(kube) == before  # read only
    assert await kube.pod("default", "what-if") is None


async def test_an_unreadable_kubeconfig_exits_2(tmp_path: Path):
    bad = tmp_path / "kubeconfig"
    bad.write_text("this: is not a kubeconfig\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "vcsched.cli", "simulate", "--kubeconfig", str(bad), "-f", "-"],
                          input="", capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith(f"vcsched simulate: --kubeconfig {bad}:") and "Traceback" not in done.stderr


def _explain(kube: Kube, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vcsched.cli", "explain", *args,
                           "--kubeconfig", str(kube.cp.admin.kubeconfig)], capture_output=True, text=True, timeout=120)


async def test_explain_says_why_a_pod_waits_with_numbers_and_writes_nothing(kube: Kube):
    await kube.node("n0", cpu="4", memory="8Gi")
    await kube.node("n1", cpu="1", memory="8Gi")
    # a pod of another scheduler holds 3 of n0's 4 CPUs (outside volcano's queues): 2 CPUs are free in the
    # cluster, enough for the waiting pod's group to be admitted, but on no one node
    await kube.create(pod("running", cpu="3", node_name="n0", scheduler="default-scheduler"))
    await kube.create(pod("waiting", cpu="2"))  # no scheduler runs here: it waits
    before = await _revision(kube)
    done = _explain(kube, "default/waiting")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "default/waiting: pending",
        "  0/2 nodes are unavailable: 2 Insufficient cpu.",
        "    2 nodes: Insufficient cpu (2 asked, at most 1 free on n0)",
    ]
    done = _explain(kube, "default/waiting", "-o", "json")
    d = json.loads(done.stdout)["default/waiting"]["diagnosis"]
    assert d["nodes"]["n0"] == [{"reason": "Insufficient cpu", "short": [{"resource": "cpu", "asked": "2", "free": "1"}]}]
    assert await _revision(kube) == before  # one dry session: nothing bound, nothing written
    assert not (await kube.pod("default", "waiting"))["spec"].get("nodeName")


async def test_explain_a_pod_that_would_fit_and_one_that_is_not_there(kube: Kube):
    await kube.node("n0", cpu="4")
    await kube.create(pod("fits", cpu="1"))
    done = _explain(kube, "fits")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "default/fits: would be placed on n0\n"
    done = _explain(kube, "default/nobody")
    assert done.returncode == 2
    assert done.stderr == "vcsched explain: no pod default/nobody in the cluster or the manifests\n"
