"""``vcsched bench --apiserver``: ``vcsched run`` beside the upstream kube-scheduler on a real API server.

For each scheduler, a fresh control plane (``vcsched.envtest``: etcd and kube-apiserver from
``$KUBEBUILDER_ASSETS``) gets ``--nodes`` fake Ready nodes and a backlog of ``--pods`` bare pending
pods (100m CPU, 128Mi each); then the scheduler starts as a user would start it (a subprocess with
its defaults: ``vcsched run --kubeconfig K``, controllers included, or ``kube-scheduler
--kubeconfig K --kube-api-qps=1000 --kube-api-burst=1000``), and a watch of the benchmark's own
times every bind.  Reported per scheduler: wall time from the process start to the last bind, time
to the first bind, vcsched's time from its "caches synced" log line to its first bind, pods bound
per second after the first bind, and the scheduler's peak RSS.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..envtest import ControlPlane, ControlPlaneError, assets_dir
from .api import NODES, PODS, ApiError, KubeClient, load_configuration

POD_CPU, POD_MEMORY = "100m", "128Mi"
NODE_CPU, NODE_MEMORY, NODE_PODS = "32", "128Gi", "110"
CREATE_CONCURRENCY = 64
NAMESPACE = "bench"


@dataclass(slots=True)
class Run:
    scheduler: str
    nodes: int
    pods: int
    bound: int
    wall_seconds: float  # process start → last bind
    first_bind_seconds: float  # process start → first bind
    synced_to_first_bind_seconds: float | None  # vcsched: "caches synced" → first bind
    pods_per_second: float  # binds after the first / (last - first)
    peak_rss_mib: float
    writes_per_pod: float  # the API server's writes from the start until they settle after the last bind, per pod


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}}


def node_status() -> dict[str, Any]:
    res = {"cpu": NODE_CPU, "memory": NODE_MEMORY, "pods": NODE_PODS}
    return {"status": {"capacity": res, "allocatable": res,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "message": "fake node of vcsched bench"}]}}


def pod(name: str, scheduler_name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"schedulerName": scheduler_name, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": {"cpu": POD_CPU, "memory": POD_MEMORY}}}]}}


async def _bounded(n: int, make: Any) -> None:
    """``await make(i)`` for i in range(n), CREATE_CONCURRENCY at a time."""
    it = iter(range(n))

    async def worker() -> None:
        for i in it:
            await make(i)

    await asyncio.gather(*(worker() for _ in range(min(CREATE_CONCURRENCY, n))))


async def populate(client: KubeClient, nodes: int, pods: int, scheduler_name: str) -> None:
    async def make_node(i: int) -> None:
        name = f"node-{i:05d}"
        await client.request("POST", NODES.path(), body=node(name))
        await client.request("PATCH", NODES.path(None, name, "status"), body=node_status(),
                             content_type="application/merge-patch+json")

    await client.request("POST", "/api/v1/namespaces", body={"apiVersion": "v1", "kind": "Namespace",
                                                             "metadata": {"name": NAMESPACE}})
    await _bounded(nodes, make_node)
    await _bounded(pods, lambda i: client.request("POST", PODS.path(NAMESPACE), body=pod(f"pod-{i:06d}",
                                                                                         scheduler_name)))


class BindWatch:
    """Times every first appearance of ``spec.nodeName`` on a pod of the namespace, from one watch."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.bound: dict[str, float] = {}
        self.changed = asyncio.Event()

    async def run(self, resource_version: str | None) -> None:
        rv = resource_version
        while True:
            try:
                async for ev in self.client.watch(PODS.path(NAMESPACE), {"resourceVersion": rv,
                                                                        "allowWatchBookmarks": "true"}, 600):
                    obj = ev.get("object") or {}
                    rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                    if (obj.get("spec") or {}).get("nodeName"):
                        name = obj["metadata"]["name"]
                        if name not in self.bound:
                            self.bound[name] = time.monotonic()
                            self.changed.set()
            except ApiError as e:
                if e.status == 410:
                    raise
                await asyncio.sleep(0.1)


def _rss_mib(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def scheduler_argv(which: str, kubeconfig: Path, assets: Path) -> list[str]:
    if which == "vcsched":
        return [sys.executable, "-m", "vcsched.cli", "run", "--kubeconfig", str(kubeconfig), "--listen", "127.0.0.1:0"]
    return [str(assets / "kube-scheduler"), f"--kubeconfig={kubeconfig}", "--kube-api-qps=1000",
            "--kube-api-burst=1000", "--leader-elect=false", "--secure-port=0", "-v=0"]


async def measure(which: str, nodes: int, pods: int, assets: Path, timeout: float, log_dir: Path) -> Run:
    name = "volcano" if which == "vcsched" else "default-scheduler"
    with ControlPlane(assets, workdir=Path(tempfile.mkdtemp(prefix=f"vcsched-bench-{which}-"))) as cp:
        assert cp.admin.kubeconfig is not None
        client = KubeClient(await load_configuration(str(cp.admin.kubeconfig)), user_agent="vcsched-bench")
        proc = None
        try:
            await populate(client, nodes, pods, name)
            _, rv = await client.list(PODS.path(NAMESPACE), {"limit": 1}, first_page_only=True)
            watch = BindWatch(client)
            watcher = asyncio.create_task(watch.run(rv))
            writes_before = api_writes(cp)
            log_path = log_dir / f"{which}.log"
            with open(log_path, "wb") as out:
                started = time.monotonic()
                proc = subprocess.Popen(scheduler_argv(which, cp.admin.kubeconfig, assets), stdout=out,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            peak = 0.0
            deadline = started + timeout
            while len(watch.bound) < pods and time.monotonic() < deadline and proc.poll() is None:
                watch.changed.clear()
                try:
                    await asyncio.wait_for(watch.changed.wait(), 0.2)
                except TimeoutError:
                    pass
                peak = max(peak, _rss_mib(proc.pid) or 0.0)
            peak = max(peak, _rss_mib(proc.pid) or 0.0)
            watcher.cancel()
            writes = await settled_writes(cp) - writes_before
            times = sorted(watch.bound.values())
            synced = _synced_at(log_path, started) if which == "vcsched" else None
            first, last = (times[0], times[-1]) if times else (float("nan"), float("nan"))
            return Run(scheduler=which, nodes=nodes, pods=pods, bound=len(times),
                       wall_seconds=round(last - started, 2), first_bind_seconds=round(first - started, 2),
                       synced_to_first_bind_seconds=None if synced is None else round(first - synced, 2),
                       pods_per_second=round((len(times) - 1) / (last - first), 1) if len(times) > 1 else 0.0,
                       peak_rss_mib=round(peak, 1), writes_per_pod=round(writes / pods, 2))
        finally:
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            await client.close()


WRITE_VERBS = ("POST", "PUT", "PATCH", "DELETE")


def api_writes(cp: ControlPlane) -> int:
    """Every write the API server has answered, Events included, Leases not (a renewal every 2 s)."""
    return sum(n for (verb, resource, _, _), n in cp.request_counts().items()
               if verb in WRITE_VERBS and resource != "leases")


async def settled_writes(cp: ControlPlane, quiet: float = 2.0, limit: float = 60.0) -> int:
    """The API server's write count once no write came for ``quiet`` seconds (status writes and events
    trail the last bind), or after ``limit`` seconds; the scheduler's Lease renewals aside."""
    deadline = time.monotonic() + limit
    last = api_writes(cp)
    while time.monotonic() < deadline:
        await asyncio.sleep(quiet)
        now = api_writes(cp)
        if now == last:
            break
        last = now
    return last


def _synced_at(log_path: Path, started: float) -> float | None:
    """The monotonic time of vcsched's "caches synced" line, from its ISO timestamp."""
    from datetime import datetime

    wall_offset = time.time() - time.monotonic()
    for line in log_path.read_text(encoding="utf-8", errors="replace").splitlines():
        if "caches synced" not in line:
            continue
        try:
            stamp = json.loads(line)["timestamp"]
        except (ValueError, KeyError):
            return None
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() - wall_offset
    return None


def run_apiserver_bench(args: Any) -> int:
    assets = assets_dir()
    if assets is None:
        print("vcsched bench --apiserver: set KUBEBUILDER_ASSETS to a folder with etcd, kube-apiserver and "
              "kube-scheduler (e.g. $(../shared/envtest/setup))", file=sys.stderr)
        return 2
    which = args.scheduler or ["vcsched", "kube-scheduler"]
    if "kube-scheduler" in which and not (assets / "kube-scheduler").is_file():
        print(f"vcsched bench --apiserver: no kube-scheduler in {assets}", file=sys.stderr)
        return 2
    nodes, pods = args.nodes, args.pods
    log_dir = Path(args.log_dir or tempfile.mkdtemp(prefix="vcsched-apibench-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    try:
        runs = [asyncio.run(measure(w, nodes, pods, assets, args.timeout, log_dir)) for w in which]
    except ControlPlaneError as e:
        print(f"vcsched bench --apiserver: {e}", file=sys.stderr)
        return 1
    if args.output == "json":
        print(json.dumps([asdict(r) for r in runs], sort_keys=True))
    else:
        cols = list(asdict(runs[0]))
        print("  ".join(f"{c:>14}" if i else f"{c:<14}" for i, c in enumerate(cols)))
        for r in runs:
            print("  ".join(f"{str(v):>14}" if i else f"{str(v):<14}" for i, v in enumerate(asdict(r).values())))
        if len(runs) == 2 and runs[1].wall_seconds:
            print(f"wall ratio {runs[0].scheduler}/{runs[1].scheduler}: {runs[0].wall_seconds / runs[1].wall_seconds:.2f}")
        if args.log_dir or not all(r.bound == r.pods for r in runs):
            print(f"logs in {log_dir}")
    complete = all(r.bound == r.pods for r in runs)
    if complete and not args.log_dir:
        shutil.rmtree(log_dir, ignore_errors=True)
    return 0 if complete else 1
