"""Helpers for the fault and bad-input tests on the real API server (test_faults.py, test_bad_input.py).

- manifests: bare pods (plain or vGPU), vGPU nodes as volcano-vgpu-device-plugin registers them, the
  scheduler ConfigMap;
- ``nothing_lost``: the invariant every fault test ends with, read from the API server alone: every
  pod bound (or none of the nodes has room for it), no node over its allocatable cpu, memory or pod
  count, no GPU over its memory, cores or split count, no pod on a node that is gone (unless the test
  says so), every PodGroup whose pods are all bound Running;
- the API server's own counters (``apiserver_request_total``): how many bindings it accepted and how
  many writes it refused with 409, to prove a pod was bound once and a conflict really happened;
- the scheduler's log (JSON lines) and its /metrics (sessions run), to wait for sessions without
  asserting on time.
"""

from __future__ import annotations

import asyncio
import json
import re
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from vcsched.api.quantity import parse_quantity
from vcsched.envtest import ControlPlane

from .conftest import A100, Kube, Process, deviceshare_conf

PODGROUPS = "/apis/scheduling.volcano.sh/v1beta1/podgroups"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
REGISTER = "volcano.sh/node-vgpu-register"
VGPU_IDS = "volcano.sh/vgpu-ids-new"
VGPU_MEMORY = "volcano.sh/vgpu-memory"
VGPU_CORES = "volcano.sh/vgpu-cores"
VGPU_NUMBER = "volcano.sh/vgpu-number"
GPU_MIB, SPLIT = 40960, 10

VGPU_CONF = deviceshare_conf({"deviceshare.VGPUEnable": True})


# -- manifests -------------------------------------------------------------------------------------


def bare_pod(name: str, cpu: str = "1", memory: str = "1Gi", ns: str = "default",
             annotations: dict[str, str] | None = None, limits: dict[str, str] | None = None,
             node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "busybox",
                                 "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    if limits:
        container["resources"]["limits"] = dict(limits)
    spec: dict[str, Any] = {"schedulerName": "volcano", "terminationGracePeriodSeconds": 0,
                            "containers": [container]}
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "annotations": dict(annotations or {})},
            "spec": spec}


def vgpu_pod(name: str, mib: int, cores: int = 25, ns: str = "default", **kw: Any) -> dict[str, Any]:
    """A pod asking for one vGPU of ``mib`` MiB and ``cores`` % (HAMi's resource names)."""
    return bare_pod(name, ns=ns, limits={VGPU_MEMORY: str(mib), VGPU_CORES: str(cores)}, **kw)


def register_annotation(uuids: Iterable[str], mib: int = GPU_MIB, split: int = SPLIT) -> str:
    """volcano.sh/node-vgpu-register as volcano-vgpu-device-plugin writes it (spec/devices.md §4.2)."""
    return "".join(f"{u},{split},{mib},{A100},true,hami-core:" for u in uuids)


async def gpu_node(kube: Kube, name: str, uuids: list[str], cpu: str = "64", memory: str = "256Gi",
                   pods: int = 110, register: str | None = None) -> dict[str, Any]:
    """A node with ``uuids`` GPUs registered (or ``register`` verbatim) and the vGPU resources allocatable."""
    return await kube.node(name, cpu=cpu, memory=memory, pods=pods,
                           annotations={REGISTER: register if register is not None else register_annotation(uuids)},
                           extra={VGPU_NUMBER: str(SPLIT * len(uuids)), VGPU_MEMORY: str(GPU_MIB * len(uuids)),
                                  VGPU_CORES: str(100 * len(uuids))})


def conf_map(text: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
            "data": {"volcano-scheduler.conf": text}}


async def create_all(kube: Kube, objs: list[dict[str, Any]], concurrency: int = 16) -> None:
    """Create ``objs``, ``concurrency`` at a time."""
    slots = asyncio.Semaphore(concurrency)

    async def one(obj: dict[str, Any]) -> None:
        async with slots:
            await kube.create(obj)

    await asyncio.gather(*(one(o) for o in objs))


# -- what the API server holds -----------------------------------------------------------------------


async def pods(kube: Kube, ns: str | None = None) -> list[dict[str, Any]]:
    return await kube.list(f"/api/v1/namespaces/{ns}/pods" if ns else "/api/v1/pods")


async def bound_count(kube: Kube, ns: str = "default") -> int:
    return sum(1 for p in await pods(kube, ns) if p["spec"].get("nodeName"))


def _requests(pod: dict[str, Any]) -> dict[str, Fraction]:
    total: dict[str, Fraction] = defaultdict(Fraction)
    for c in pod["spec"].get("containers") or []:
        res = c.get("resources") or {}
        req = dict(res.get("limits") or {})  # an extended resource's request defaults to its limit
        req.update(res.get("requests") or {})
        for k, v in req.items():
            total[k] += parse_quantity(v)
    return total


def decode_pod_devices(value: str) -> list[tuple[str, int, int]]:
    """volcano.sh/vgpu-ids-new (spec/devices.md §5.2) → (uuid, MiB, cores) per vGPU."""
    out = []
    for container in value.split(";"):
        for item in container.split(":"):
            if "," in item:
                uuid, _type, mem, cores = item.split(",")
                out.append((uuid, int(mem), int(cores)))
    return out


def _gpus(nodes: list[dict[str, Any]]) -> dict[str, tuple[str, int, int]]:
    """uuid → (node, split count, MiB) of every well-formed registered GPU."""
    gpus = {}
    for n in nodes:
        raw = ((n["metadata"].get("annotations") or {}).get(REGISTER)) or ""
        for dev in raw.split(":"):
            f = dev.split(",")
            if len(f) >= 6 and f[1].isdigit() and f[2].isdigit():
                gpus[f[0]] = (n["metadata"]["name"], int(f[1]), int(f[2]))
    return gpus


class Ledger:
    """What the API server says is used on each node and GPU; checks capacity and whether a pod fits."""

    def __init__(self, nodes: list[dict[str, Any]], all_pods: list[dict[str, Any]]) -> None:
        self.nodes = {n["metadata"]["name"]: n for n in nodes}
        self.alloc = {name: {k: parse_quantity(v) for k, v in ((n.get("status") or {}).get("allocatable") or {}).items()}
                      for name, n in self.nodes.items()}
        self.used: dict[str, dict[str, Fraction]] = {name: defaultdict(Fraction) for name in self.nodes}
        self.gpus = _gpus(nodes)
        self.gpu_used: dict[str, list[tuple[str, int, int]]] = {u: [] for u in self.gpus}
        self.orphans: list[str] = []  # pods bound to a node that does not exist
        self.problems: list[str] = []
        for p in all_pods:
            node = p["spec"].get("nodeName")
            key = f"{p['metadata']['namespace']}/{p['metadata']['name']}"
            if not node:
                continue
            if node not in self.nodes:
                self.orphans.append(key)
                continue
            used = self.used[node]
            for k, v in _requests(p).items():
                used[k] += v
            used["pods"] += 1
            ids = (p["metadata"].get("annotations") or {}).get(VGPU_IDS)
            if ids:
                for uuid, mib, cores in decode_pod_devices(ids):
                    if uuid not in self.gpus:
                        self.problems.append(f"{key} on {node} names GPU {uuid}, registered nowhere")
                    elif self.gpus[uuid][0] != node:
                        self.problems.append(f"{key} on {node} names GPU {uuid} of {self.gpus[uuid][0]}")
                    else:
                        self.gpu_used[uuid].append((key, mib, cores))
            elif _requests(p).get(VGPU_MEMORY):
                self.problems.append(f"{key} asks for a vGPU and is bound to {node} without device annotations")

    def over_capacity(self) -> list[str]:
        out = list(self.problems)
        for name, used in self.used.items():
            for res in ("cpu", "memory", "pods"):
                if used[res] > self.alloc[name].get(res, Fraction(0)):
                    out.append(f"node {name}: {res} used {float(used[res])} > allocatable "
                               f"{float(self.alloc[name].get(res, 0))}")
        for uuid, takers in self.gpu_used.items():
            node, count, mib = self.gpus[uuid]
            if len(takers) > count or sum(t[1] for t in takers) > mib or sum(t[2] for t in takers) > 100:
                out.append(f"GPU {uuid} on {node} over-committed: {takers}")
        return out

    def room_for(self, pod: dict[str, Any], nodes: Iterable[str] | None = None) -> list[str]:
        """The nodes (of ``nodes``, all by default) with room left for ``pod`` (cpu, memory, pods, and a GPU
        with room for its vGPU); node selectors are honoured."""
        req = _requests(pod)
        selector = pod["spec"].get("nodeSelector") or {}
        out = []
        for name in nodes if nodes is not None else self.nodes:
            labels = self.nodes[name]["metadata"].get("labels") or {}
            if any(labels.get(k) != v for k, v in selector.items()):
                continue
            alloc, used = self.alloc[name], self.used[name]
            if used["pods"] + 1 > alloc.get("pods", 0):
                continue
            if any(used[r] + req.get(r, 0) > alloc.get(r, 0) for r in ("cpu", "memory")):
                continue
            mib = req.get(VGPU_MEMORY)
            if mib:
                cores = req.get(VGPU_CORES, 0)
                if not any(g[0] == name and len(self.gpu_used[u]) < g[1]
                           and sum(t[1] for t in self.gpu_used[u]) + mib <= g[2]
                           and sum(t[2] for t in self.gpu_used[u]) + cores <= 100
                           for u, g in self.gpus.items()):
                    continue
            out.append(name)
        return out


async def ledger(kube: Kube) -> tuple[Ledger, list[dict[str, Any]]]:
    nodes = await kube.list("/api/v1/nodes")
    all_pods = await pods(kube)
    return Ledger(nodes, all_pods), all_pods


async def nothing_lost(kube: Kube, *, expect_bound: int | None = None, orphans: Iterable[str] = (),
                       gpu_nodes: Iterable[str] | None = None, timeout: float = 240.0) -> Ledger:
    """The invariant a fault test ends with (see the module docstring); waits until every pod that fits is
    bound, then checks capacity at that moment and waits for the PodGroups' phases.

    ``expect_bound``: how many pods must end bound (a guard that the test placed what it meant to);
    ``orphans``: the pods allowed on nodes that are gone (bound before the node was deleted);
    ``gpu_nodes``: the nodes a vGPU pod may use (default: any with registered GPUs)."""
    allowed_orphans = set(orphans)
    state: dict[str, Any] = {}

    async def settled() -> bool:
        led, all_pods = await ledger(kube)
        waiting = []
        for p in all_pods:
            if p["spec"].get("schedulerName") != "volcano" or p["spec"].get("nodeName"):
                continue
            eligible = None
            if _requests(p).get(VGPU_MEMORY) and gpu_nodes is not None:
                eligible = [n for n in gpu_nodes if n in led.nodes]
            if led.room_for(p, eligible):
                waiting.append(f"{p['metadata']['namespace']}/{p['metadata']['name']}")
        state.update(ledger=led, pods=all_pods, waiting=waiting)
        bound = sum(1 for p in all_pods if p["spec"].get("nodeName"))
        return not waiting and (expect_bound is None or bound >= expect_bound)

    try:
        await kube.eventually(settled, "every pod that fits bound", timeout=timeout)
    except AssertionError:
        led = state.get("ledger")
        bound = sum(1 for p in state.get("pods", []) if p["spec"].get("nodeName"))
        raise AssertionError(f"not settled: {bound} bound (expected {expect_bound}); pending that fit: "
                             f"{state.get('waiting', [])[:20]}; over capacity: "
                             f"{led.over_capacity() if led else '?'}") from None
    led = state["ledger"]
    assert not led.over_capacity(), led.over_capacity()
    assert set(led.orphans) <= allowed_orphans, f"pods bound to nodes that are gone: {set(led.orphans) - allowed_orphans}"
    if expect_bound is not None:
        bound = sum(1 for p in state["pods"] if p["spec"].get("nodeName"))
        assert bound == expect_bound, f"{bound} pods bound, expected {expect_bound}"
    await podgroups_running(kube, state["pods"])
    return led


async def podgroups_running(kube: Kube, all_pods: list[dict[str, Any]], timeout: float = 120.0) -> None:
    """Every PodGroup with at least minMember pods, all bound, ends Running (nobody writes pod phases here,
    so Running is what the scheduler writes for a group whose pods are all placed)."""
    members: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for p in all_pods:
        group = (p["metadata"].get("annotations") or {}).get(GROUP_ANNOTATION)
        if group:
            members[(p["metadata"]["namespace"], group)].append(p)
    state: dict[str, Any] = {}

    async def probe() -> bool:
        wrong = []
        for pg in await kube.list(PODGROUPS):
            key = (pg["metadata"]["namespace"], pg["metadata"]["name"])
            ms = members.get(key, [])
            if len(ms) >= int(pg["spec"].get("minMember") or 0) and ms and all(p["spec"].get("nodeName") for p in ms):
                phase = (pg.get("status") or {}).get("phase")
                if phase != "Running":
                    wrong.append((pg, ms))
        state["wrong"] = wrong
        return not wrong

    try:
        await kube.eventually(probe, "every PodGroup whose pods are all bound Running", timeout=timeout)
    except AssertionError:
        wrong = state["wrong"]
        raise AssertionError(f"{len(wrong)} PodGroups not Running though all their pods are bound; the first: "
                             + "; ".join(_podgroup_story(pg, ms) for pg, ms in wrong[:10])) from None


def _podgroup_story(pg: dict[str, Any], pods: list[dict[str, Any]]) -> str:
    """A PodGroup's status with when and by whom its fields were last written, and where its pods are."""
    meta = pg["metadata"]
    writes = [f"{m.get('manager')} {m.get('operation')} {m.get('time')}" for m in meta.get("managedFields") or []]
    where = [f"{p['metadata']['name']}@{p['spec'].get('nodeName')}" for p in pods]
    return (f"{meta['namespace']}/{meta['name']} {(pg.get('status') or {}).get('phase')} "
            f"(created {meta.get('creationTimestamp')}, resourceVersion {meta.get('resourceVersion')}, "
            f"written {writes}, pods {where})")


# -- the API server's counters ----------------------------------------------------------------------------


def request_counts(cp: ControlPlane, **match: str) -> Counter[str]:
    """apiserver_request_total by response code, over the series whose labels include ``match``
    (e.g. verb="POST", resource="pods", subresource="binding")."""
    out: Counter[str] = Counter()
    for (_, _, _, code), n in cp.request_counts(**match).items():
        out[code] += n
    return out


def bindings(cp: ControlPlane) -> Counter[str]:
    return request_counts(cp, verb="POST", resource="pods", subresource="binding")


# -- the scheduler process ----------------------------------------------------------------------------------


def log_records(proc: Process) -> list[dict[str, Any]]:
    """The scheduler's JSON log lines (others kept as {"event": line})."""
    out = []
    for line in proc.output().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            rec = {"event": line}
        out.append(rec if isinstance(rec, dict) else {"event": line})
    return out


def log_lines(proc: Process, *needles: str) -> list[str]:
    """The log lines containing every one of ``needles``."""
    return [line for line in proc.output().splitlines() if all(n in line for n in needles)]


def metrics_port(proc: Process) -> int | None:
    for rec in log_records(proc):
        if rec.get("event") == "serving /metrics, /healthz and /readyz":
            return int(str(rec["listen"]).rsplit(":", 1)[1])
    return None


def sessions(proc: Process) -> int:
    """Sessions the scheduler has run (its e2e latency histogram's count); 0 before it serves /metrics."""
    port = metrics_port(proc)
    if port is None:
        return 0
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            text = resp.read().decode()
    except OSError:
        return 0
    m = re.search(r"^volcano_e2e_scheduling_latency_milliseconds_count (\S+)$", text, re.M)
    return int(float(m.group(1))) if m else 0


async def more_sessions(kube: Kube, proc: Process, n: int = 5) -> None:
    """Wait until ``proc`` has run ``n`` more sessions (so that what it would do, it has done)."""
    start = sessions(proc)
    await kube.eventually(lambda: sessions(proc) >= start + n, f"{n} more sessions")


def alive(proc: Process) -> bool:
    return proc.proc.poll() is None


async def restart_apiserver(cp: ControlPlane, between: Any = None) -> None:
    """``cp.restart_apiserver`` on a thread (the test's loop keeps running); it returns once /readyz answers."""
    await asyncio.to_thread(cp.restart_apiserver, between=between)


async def delete_bare_pod(kube: Kube, name: str, ns: str = "default") -> None:
    """Delete a bare pod and, as the garbage collector of a real cluster would (it owns it), its PodGroup."""
    pod = await kube.get(f"/api/v1/namespaces/{ns}/pods/{name}")
    assert pod is not None, f"{ns}/{name} not found"
    await kube.delete(f"/api/v1/namespaces/{ns}/pods/{name}")
    group = (pod["metadata"].get("annotations") or {}).get(GROUP_ANNOTATION)
    if group == f"podgroup-{pod['metadata']['uid']}":
        await kube.delete(f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups/{group}")
