"""``vcsched bench --apiserver``: ``vcsched run`` beside the upstream kube-scheduler on a real API server.

For each scheduler, a fresh control plane (``vcsched.envtest``: etcd and kube-apiserver from
``$KUBEBUILDER_ASSETS``) gets ``--nodes`` fake Ready nodes and a backlog of ``--pods`` bare pending
pods (100m CPU, 128Mi each); then the scheduler starts as a user would start it (a subprocess with
its defaults: ``vcsched run --kubeconfig K``, controllers included, or ``kube-scheduler
--kubeconfig K --kube-api-qps=1000 --kube-api-burst=1000``), and a watch of the benchmark's own
times every bind.  Reported per scheduler: wall time from the process start to the last bind, time
to the first bind, vcsched's time from its "caches synced" log line to its first bind, pods bound
per second after the first bind, and the scheduler's peak RSS.

``--latency``: how long one pod waits.  Fresh control plane, ``--nodes`` Ready nodes, the scheduler
started and warmed up (one pod bound), then pods created at a steady ``--rate`` for ``--duration``
seconds, each create sent on its own schedule; a pod's latency runs from just before its create call
to the moment the bench's watch sees it bound (one clock, the bench's).  p50/p90/p99/max (nearest
rank) for each scheduler and their ratio.  ``--gang-backlog N`` adds the mixed run: a PodGroup of N
members (minMember N; plain pods for kube-scheduler, which has no gangs) created as the arrivals start.
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

from ..envtest import ControlPlane, ControlPlaneError, assets_dir, start_child
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
                proc = start_child(scheduler_argv(which, cp.admin.kubeconfig, assets), stdout=out,
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
    if getattr(args, "latency", False):
        try:
            return run_latency_bench(args, assets, which, log_dir)
        except ControlPlaneError as e:
            print(f"vcsched bench --apiserver --latency: {e}", file=sys.stderr)
            return 1
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


# -- latency: create → bound, at a steady arrival rate -------------------------------------------------

GANG = "gang"
WARMUP_TIMEOUT = 120.0


@dataclass(slots=True)
class Latency:
    """One scheduler's create → bound latencies (milliseconds) in one shape."""

    scheduler: str
    shape: str
    created: int
    bound: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    cpu_ms_per_pod: float = 0.0  # the scheduler process's CPU (user + system) from the first create to the last bind
    gang_bound: int | None = None  # the mixed run: gang pods bound by the end
    gang_first_bind_s: float | None = None  # from the gang's first create
    gang_last_bind_s: float | None = None


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` and its threads so far (0 when gone)."""
    import os

    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _pct(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (nan when empty)."""
    if not sorted_values:
        return float("nan")
    rank = max(1, min(len(sorted_values), -(-len(sorted_values) * q // 100)))
    return sorted_values[int(rank) - 1]


def gang_podgroup(size: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": GANG, "namespace": NAMESPACE},
            "spec": {"minMember": size, "queue": "default"}}


def gang_pod(name: str, scheduler_name: str) -> dict[str, Any]:
    """A member of the gang: for vcsched, in PodGroup ``gang``; for kube-scheduler, a plain pod (it has no gangs)."""
    p = pod(name, scheduler_name)
    if scheduler_name == "volcano":
        p["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": GANG}
    return p


async def _arrive(client: KubeClient, rate: float, duration: float, scheduler_name: str,
                  created: dict[str, float]) -> None:
    """``rate`` pods per second for ``duration`` seconds, each create sent at its own time on the
    schedule (not after the previous one answered); ``created[name]`` is the monotonic time just
    before its create is sent."""
    count = int(rate * duration)
    start = time.monotonic() + 0.05
    inflight: set[asyncio.Task[Any]] = set()

    async def create(name: str) -> None:
        created[name] = time.monotonic()
        await client.request("POST", PODS.path(NAMESPACE), body=pod(name, scheduler_name))

    for i in range(count):
        delay = start + i / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        t = asyncio.create_task(create(f"single-{i:06d}"))
        inflight.add(t)
        t.add_done_callback(inflight.discard)
    await asyncio.gather(*inflight)


async def _gang_backlog(client: KubeClient, size: int, scheduler_name: str, created: dict[str, float]) -> None:
    if scheduler_name == "volcano":
        await client.request("POST", f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{NAMESPACE}/podgroups",
                             body=gang_podgroup(size))

    async def make(i: int) -> None:
        name = f"gang-{i:06d}"
        created[name] = time.monotonic()
        await client.request("POST", PODS.path(NAMESPACE), body=gang_pod(name, scheduler_name))

    await _bounded(size, make)


async def measure_latency(which: str, nodes: int, rate: float, duration: float, gang: int, assets: Path,
                          timeout: float, log_dir: Path, extra: list[str]) -> Latency:
    """A fresh control plane, ``nodes`` Ready nodes, the scheduler started and warmed up (one pod bound),
    then pods at ``rate`` per second for ``duration`` seconds (and, with ``gang``, a backlog of that many
    gang members created at the same time); every pod's create → bound as the bench's watch sees it."""
    name = "volcano" if which == "vcsched" else "default-scheduler"
    shape = f"{rate:g}/s x {duration:g}s, {nodes} nodes" + (f", gang {gang}" if gang else "")
    with ControlPlane(assets, workdir=Path(tempfile.mkdtemp(prefix=f"vcsched-lat-{which}-"))) as cp:
        assert cp.admin.kubeconfig is not None
        client = KubeClient(await load_configuration(str(cp.admin.kubeconfig)), user_agent="vcsched-bench")
        proc = None
        try:
            await populate(client, nodes, 0, name)
            _, rv = await client.list(PODS.path(NAMESPACE), {"limit": 1}, first_page_only=True)
            watch = BindWatch(client)
            watcher = asyncio.create_task(watch.run(rv))
            log_path = log_dir / f"{which}-latency.log"
            argv = scheduler_argv(which, cp.admin.kubeconfig, assets) + (extra if which == "vcsched" else [])
            with open(log_path, "wb") as out:
                proc = start_child(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            # warm up: the scheduler has listed, opened its queue and bound one pod
            await client.request("POST", PODS.path(NAMESPACE), body=pod("warmup", name))
            deadline = time.monotonic() + WARMUP_TIMEOUT
            while "warmup" not in watch.bound and time.monotonic() < deadline and proc.poll() is None:
                await asyncio.sleep(0.05)
            if "warmup" not in watch.bound:
                raise ControlPlaneError(f"{which} bound no warm-up pod in {WARMUP_TIMEOUT:g} s (log: {log_path})")
            await asyncio.sleep(1.0)
            created: dict[str, float] = {}
            gang_created: dict[str, float] = {}
            cpu_before = _cpu_seconds(proc.pid)
            work = [_arrive(client, rate, duration, name, created)]
            if gang:
                work.append(_gang_backlog(client, gang, name, gang_created))
            await asyncio.gather(*work)
            deadline = time.monotonic() + timeout
            want = set(created) | set(gang_created)
            while not want <= watch.bound.keys() and time.monotonic() < deadline and proc.poll() is None:
                await asyncio.sleep(0.1)
            cpu = _cpu_seconds(proc.pid) - cpu_before
            watcher.cancel()
            lat = sorted((watch.bound[n] - t) * 1000 for n, t in created.items() if n in watch.bound)
            out = Latency(scheduler=which, shape=shape, created=len(created), bound=len(lat),
                          p50_ms=round(_pct(lat, 50), 1), p90_ms=round(_pct(lat, 90), 1),
                          p99_ms=round(_pct(lat, 99), 1), max_ms=round(lat[-1], 1) if lat else float("nan"),
                          cpu_ms_per_pod=round(1000 * cpu / max(1, len(created) + len(gang_created)), 2))
            if gang:
                times = sorted(watch.bound[n] for n in gang_created if n in watch.bound)
                first_create = min(gang_created.values())
                out.gang_bound = len(times)
                out.gang_first_bind_s = round(times[0] - first_create, 2) if times else None
                out.gang_last_bind_s = round(times[-1] - first_create, 2) if times else None
            return out
        finally:
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            await client.close()


def run_latency_bench(args: Any, assets: Path, which: list[str], log_dir: Path) -> int:
    extra = args.vcsched_arg or []
    runs = [asyncio.run(measure_latency(w, args.nodes, args.rate, args.duration, args.gang_backlog, assets,
                                        args.timeout, log_dir, extra)) for w in which]
    if args.output == "json":
        print(json.dumps([asdict(r) for r in runs], sort_keys=True))
    else:
        cols = [c for c in asdict(runs[0]) if not c.startswith("gang") or args.gang_backlog]
        width = {c: max(len(c), *(len(str(getattr(r, c))) for r in runs)) for c in cols}
        print("  ".join(f"{c:>{width[c]}}" if i else f"{c:<{width[c]}}" for i, c in enumerate(cols)))
        for r in runs:
            row = asdict(r)
            print("  ".join(f"{str(row[c]):>{width[c]}}" if i else f"{str(row[c]):<{width[c]}}"
                            for i, c in enumerate(cols)))
        if len(runs) == 2:
            a, b = runs
            ratios = "  ".join(f"{q} {getattr(a, q) / getattr(b, q):.2f}" for q in ("p50_ms", "p90_ms", "p99_ms", "max_ms")
                               if getattr(b, q))
            print(f"ratio {a.scheduler}/{b.scheduler}: {ratios}")
    complete = all(r.bound == r.created and (r.gang_bound is None or r.gang_bound == args.gang_backlog)
                   for r in runs)
    if args.log_dir or not complete:
        print(f"logs in {log_dir}")
    if complete and not args.log_dir:
        shutil.rmtree(log_dir, ignore_errors=True)
    return 0 if complete else 1
