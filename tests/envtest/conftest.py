"""The real-apiserver tier: etcd and kube-apiserver v1.24 from ``$KUBEBUILDER_ASSETS`` (../shared/envtest).

- ``control_plane`` (session): one control plane for the whole tier, Volcano's CRDs installed, and a
  user ``vcsched`` that may do exactly what the chart's ClusterRole grants (rendered by Helm's engine
  with the controllers enabled, bound by a ClusterRoleBinding): every scheduler here runs as that user.
- ``kube`` (function): the cluster emptied of what an earlier test left (nodes, pods, PodGroups, Jobs,
  Commands, queues but root and default, the scheduler ConfigMap, Leases), and an administrator's
  ``Kube`` to set the scene and look at the outcome.
- ``vcsched`` (function): ``vcsched.start(*args)`` runs ``vcsched run --kubeconfig <the vcsched user's>``
  as a subprocess, as shipped; each is killed at teardown and its log is printed when the test fails.

Without the assets every test here is skipped, saying why (a fresh clone has no ../shared).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from vcsched.envtest import ControlPlane, assets_dir, start_child
from vcsched.kube.api import ApiError, KubeClient, load_configuration

ROOT = Path(__file__).resolve().parents[2]
CHART_DIR = ROOT / "charts" / "vcsched"
USER = "vcsched"
WAIT = 60.0  # a guard against hangs only: nothing asserts on time
CONF_MAP = "volcano-scheduler-configmap"
CONF_KEY = "volcano-scheduler.conf"

# what a test may leave behind, emptied before the next: (list path, delete-collection path or None)
NAMESPACES = ("default", "volcano-system", "team-a", "team-b")
CLUSTER_KINDS = ("/api/v1/nodes", "/apis/topology.volcano.sh/v1alpha1/hypernodes")
NAMESPACED_KINDS = ("/api/v1/namespaces/{ns}/pods", "/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups",
                    "/apis/batch.volcano.sh/v1alpha1/namespaces/{ns}/jobs",
                    "/apis/bus.volcano.sh/v1alpha1/namespaces/{ns}/commands",
                    "/api/v1/namespaces/{ns}/configmaps", "/api/v1/namespaces/{ns}/services",
                    "/api/v1/namespaces/{ns}/secrets", "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies",
                    "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases", "/api/v1/namespaces/{ns}/events",
                    "/api/v1/namespaces/{ns}/resourcequotas", "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets")
# what the control plane keeps for itself in those kinds (a field selector of what else may go): deleted,
# the API server's bootstrap controller makes default/kubernetes again on its own clock (every 10 s), a
# write no test made, in the middle of whatever test runs then
KEPT = {"/api/v1/namespaces/default/services": "metadata.name!=kubernetes"}
API_SERVICE = "/api/v1/namespaces/default/services/kubernetes"


def chart_cluster_role() -> dict[str, Any]:
    """The chart's ClusterRole as Helm renders it with the controllers enabled (the default install)."""
    import helm_python as helm
    import yaml

    with helm.Chart.load(CHART_DIR) as chart:
        manifests = chart.render(None, name="vcsched", namespace="volcano-system")
    for text in manifests.values():
        for doc in yaml.safe_load_all(text):
            if doc and doc.get("kind") == "ClusterRole":
                return doc
    raise AssertionError("the chart renders no ClusterRole")


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    assets = assets_dir()
    if assets is None:
        pytest.skip("no real control plane: set KUBEBUILDER_ASSETS=$(../shared/envtest/setup) "
                    "(etcd and kube-apiserver v1.24)")
    with ControlPlane(assets, users=(USER,)) as cp:
        for ns in NAMESPACES:
            with contextlib.suppress(Exception):  # default exists already
                cp.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                          "metadata": {"name": ns}})
        role = chart_cluster_role()
        role["metadata"] = {"name": "vcsched"}
        cp.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", role)
        cp.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "vcsched"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "vcsched"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}]})
        yield cp


class Kube:
    """An administrator's view of the control plane, for setting up and checking (plain JSON)."""

    def __init__(self, cp: ControlPlane, client: KubeClient) -> None:
        self.cp = cp
        self.client = client

    async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        return await self.client.request("POST", collection_path(obj), body=obj)

    async def get(self, path: str) -> dict[str, Any] | None:
        return await self.client.get(path)

    async def list(self, path: str, **query: Any) -> list[dict[str, Any]]:
        items, _ = await self.client.list(path, query)
        return items

    async def patch(self, path: str, body: dict[str, Any], content_type: str = "application/merge-patch+json"
                    ) -> dict[str, Any]:
        return await self.client.request("PATCH", path, body=body, content_type=content_type)

    async def delete(self, path: str, grace: int = 0) -> None:
        with contextlib.suppress(ApiError):
            await self.client.request("DELETE", path, query={"gracePeriodSeconds": grace})

    async def node(self, name: str, cpu: str = "4", memory: str = "8Gi", pods: int = 110,
                   annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None,
                   extra: dict[str, str] | None = None) -> dict[str, Any]:
        """A Node and what a kubelet would report: capacity = allocatable, Ready."""
        await self.create({"apiVersion": "v1", "kind": "Node",
                           "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})},
                                        "annotations": annotations or {}}})
        res = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extra or {})}
        return await self.patch(f"/api/v1/nodes/{name}/status", {"status": {
            "capacity": res, "allocatable": res,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "test"}]}})

    async def pod_status(self, ns: str, name: str, phase: str, **extra: Any) -> dict[str, Any]:
        """Write what a kubelet would: the pod's phase (and conditions, container statuses, ...)."""
        return await self.patch(f"/api/v1/namespaces/{ns}/pods/{name}/status", {"status": {"phase": phase, **extra}})

    async def ensure(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """Create ``obj`` unless it exists already (cluster-scoped kinds the reset keeps: PriorityClasses)."""
        try:
            return await self.create(obj)
        except ApiError as e:
            if e.status != 409:
                raise
            return None

    async def conf_map(self, text: str) -> dict[str, Any]:
        """The scheduler ConfigMap ``volcano-system/volcano-scheduler-configmap`` holding ``text``: created,
        or replaced (merge patch) when it exists."""
        path = f"/api/v1/namespaces/volcano-system/configmaps/{CONF_MAP}"
        if await self.get(path) is None:
            return await self.create({"apiVersion": "v1", "kind": "ConfigMap",
                                      "metadata": {"name": CONF_MAP, "namespace": "volcano-system"},
                                      "data": {CONF_KEY: text}})
        return await self.patch(path, {"data": {CONF_KEY: text}})

    async def pod(self, ns: str, name: str) -> dict[str, Any] | None:
        return await self.get(f"/api/v1/namespaces/{ns}/pods/{name}")

    async def bound(self, ns: str, name: str) -> dict[str, Any] | None:
        """The pod once it has a node, else None (for ``eventually``)."""
        pod = await self.pod(ns, name)
        return pod if pod and pod["spec"].get("nodeName") else None

    async def podgroup(self, ns: str, name: str) -> dict[str, Any] | None:
        return await self.get(f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups/{name}")

    async def events(self, ns: str, **match: str) -> list[dict[str, Any]]:
        """The Events of ``ns`` whose fields match: ``reason=``, ``type=``, ``kind=``/``name=`` (of the
        involved object)."""
        out = []
        for e in await self.list(f"/api/v1/namespaces/{ns}/events"):
            obj = e.get("involvedObject") or {}
            fields = {"reason": e.get("reason"), "type": e.get("type"), "kind": obj.get("kind"), "name": obj.get("name")}
            if all(fields[k] == v for k, v in match.items()):
                out.append(e)
        return out

    async def eventually(self, probe: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
        """Await ``probe()`` (a coroutine function or a plain one) until it returns something truthy."""
        deadline = time.monotonic() + timeout
        while True:
            value = probe()
            if asyncio.iscoroutine(value):
                value = await value
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"never happened within {timeout:.0f} s: {what}")
            await asyncio.sleep(0.05)

    async def reset(self) -> None:
        """Delete what an earlier test left: the cluster as the control plane started it, plus the
        namespaces, the chart's RBAC and the root and default queues."""
        for path in CLUSTER_KINDS:
            await self._delete_collection(path)
        for ns in NAMESPACES:
            for template in NAMESPACED_KINDS:
                await self._delete_collection(template.format(ns=ns))
        for q in await self.list("/apis/scheduling.volcano.sh/v1beta1/queues"):
            if q["metadata"]["name"] not in ("root", "default"):
                await self.delete(f"/apis/scheduling.volcano.sh/v1beta1/queues/{q['metadata']['name']}")
        # the API server's own Service is there (made at start): no write of the control plane's lands in a test
        await self.eventually(lambda: self.get(API_SERVICE), "the API server's default/kubernetes Service")

    async def _delete_collection(self, path: str) -> None:
        kept = {"fieldSelector": KEPT[path]} if path in KEPT else {}
        with contextlib.suppress(ApiError):
            await self.client.request("DELETE", path, query={"gracePeriodSeconds": 0, **kept})
        # custom resources with finalizers do not exist here; pods with grace 0 go at once (no kubelet)
        await self.eventually(lambda: self._empty(path, kept), f"{path} emptied")

    async def _empty(self, path: str, kept: dict[str, str]) -> bool:
        try:
            items, _ = await self.client.list(path, {"limit": 1, **kept}, first_page_only=True)
        except ApiError:
            return True
        return not items


def pod(name: str, ns: str = "default", cpu: str = "1", memory: str = "1Gi", *, group: str | None = None,
        queue: str | None = None, priority_class: str | None = None, limits: dict[str, Any] | None = None,
        annotations: dict[str, str] | None = None, grace: int | None = 0, scheduler: str = "volcano",
        node_name: str | None = None) -> dict[str, Any]:
    """A pod for ``vcsched``: requests ``cpu``/``memory``; ``limits`` adds extended resources (their requests
    default to them); ``group`` names its PodGroup (none: the controller makes ``podgroup-<uid>``); ``grace``
    its terminationGracePeriodSeconds (0: a DELETE removes it at once; None: the default 30 s)."""
    ann = dict(annotations or {})
    if group:
        ann["scheduling.k8s.io/group-name"] = group
    if queue:
        ann["scheduling.volcano.sh/queue-name"] = queue
    resources: dict[str, Any] = {"requests": {"cpu": cpu, "memory": memory}}
    if limits:
        resources["limits"] = {k: str(v) for k, v in limits.items()}
    spec: dict[str, Any] = {"schedulerName": scheduler,
                            "containers": [{"name": "main", "image": "busybox", "resources": resources}]}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    if priority_class:
        spec["priorityClassName"] = priority_class
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "annotations": ann},
            "spec": spec}


def podgroup(name: str, min_member: int, ns: str = "default", queue: str | None = None,
             priority_class: str | None = None, min_resources: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member}
    if queue:
        spec["queue"] = queue
    if priority_class:
        spec["priorityClassName"] = priority_class
    if min_resources:
        spec["minResources"] = min_resources
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def queue(name: str, weight: int = 1, reclaimable: bool = True, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"weight": weight, "reclaimable": reclaimable, **spec}}


async def queue_allocated(kube: "Kube", name: str, cpu: str) -> dict[str, Any] | None:
    """Queue ``name`` once its status.allocated counts ``cpu`` (queue statuses go out at most once per
    schedule period, so an earlier session's count may be what is there first)."""
    q = await kube.get(f"/apis/scheduling.volcano.sh/v1beta1/queues/{name}")
    return q if q and ((q.get("status") or {}).get("allocated") or {}).get("cpu") == cpu else None


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def condition(obj: dict[str, Any] | None, type_: str) -> dict[str, Any] | None:
    """``obj``'s status condition of ``type_`` (or None)."""
    return next((c for c in ((obj or {}).get("status") or {}).get("conditions") or [] if c.get("type") == type_), None)


A100 = "NVIDIA-NVIDIA A100-PCIE-40GB"


def deviceshare_conf(arguments: dict[str, Any]) -> str:
    """The default tiers with nodeorder, and deviceshare with ``arguments`` (as tests/scenarios)."""
    return f"""
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: deviceshare
    arguments: {json.dumps(arguments)}
"""


# an ApiError's text is "403 Forbidden: ..."; ApiErrors logs "permission denied" once per resource and verb.
# Not "403" alone: it turns up in ports and timestamps.
FORBIDDEN_MARKS = ("Forbidden", "forbidden", "permission denied")


def forbidden_lines(p: "Process") -> list[str]:
    """The lines of ``p``'s log that tell of a request RBAC refused."""
    return [line for line in p.output().splitlines() if any(m in line for m in FORBIDDEN_MARKS)]


def collection_path(obj: dict[str, Any]) -> str:
    """Where ``obj`` is created: its kind's collection, from apiVersion and kind (the kinds tests use)."""
    plural = {"Node": "nodes", "Pod": "pods", "PodGroup": "podgroups", "Queue": "queues", "Job": "jobs",
              "Command": "commands", "ConfigMap": "configmaps", "PriorityClass": "priorityclasses",
              "Namespace": "namespaces", "Lease": "leases", "Secret": "secrets", "HyperNode": "hypernodes",
              "PersistentVolumeClaim": "persistentvolumeclaims"}[obj["kind"]]
    api = obj["apiVersion"]
    base = f"/api/{api}" if "/" not in api else f"/apis/{api}"
    cluster_scoped = obj["kind"] in ("Node", "Queue", "PriorityClass", "Namespace", "HyperNode")
    if cluster_scoped:
        return f"{base}/{plural}"
    return f"{base}/namespaces/{(obj.get('metadata') or {}).get('namespace') or 'default'}/{plural}"


@pytest_asyncio.fixture
async def kube(control_plane: ControlPlane) -> AsyncIterator[Kube]:
    assert control_plane.admin.kubeconfig is not None
    client = KubeClient(await load_configuration(str(control_plane.admin.kubeconfig)), user_agent="envtest-admin")
    k = Kube(control_plane, client)
    await k.reset()
    try:
        yield k
    finally:
        await client.close()


class Process:
    """One ``vcsched run`` subprocess; its output goes to ``log``."""

    def __init__(self, argv: list[str], log: Path) -> None:
        self.argv = argv
        self.log = log
        with open(log, "ab") as out:
            self.proc = start_child(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def records(self) -> list[dict[str, Any]]:
        """The JSON log records printed so far (lines that are not JSON are skipped)."""
        out = []
        for line in self.output().splitlines():
            with contextlib.suppress(ValueError):
                doc = json.loads(line)
                if isinstance(doc, dict):
                    out.append(doc)
        return out

    def logged(self, event: str) -> list[dict[str, Any]]:
        """The log records whose message is ``event``."""
        return [r for r in self.records() if r.get("event") == event]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(30)


class VcschedRunner:
    def __init__(self, cp: ControlPlane, tmp: Path) -> None:
        self.cp = cp
        self.tmp = tmp
        self.processes: list[Process] = []

    def start(self, *args: str, user: str = USER, period: str = "0.1s", verbose: bool = False,
              kubeconfig: Path | None = None) -> Process:
        """``vcsched run`` as ``user`` (the chart's ClusterRole) with ``args``; a short --schedule-period;
        ``verbose``: debug logs (``vcsched -v``); ``kubeconfig`` in place of the user's (a proxy's)."""
        account = self.cp.accounts[user] if user != "admin" else self.cp.admin
        config = kubeconfig or account.kubeconfig
        argv = [sys.executable, "-m", "vcsched.cli", *(["-v"] if verbose else []), "run", "--kubeconfig", str(config),
                "--listen", "127.0.0.1:0", "--schedule-period", period, *args]
        p = Process(argv, self.tmp / f"vcsched-{len(self.processes)}.log")
        self.processes.append(p)
        return p


@pytest.fixture
def vcsched(control_plane: ControlPlane, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[VcschedRunner]:
    runner = VcschedRunner(control_plane, tmp_path)
    yield runner
    for p in runner.processes:
        p.kill()
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        for i, p in enumerate(runner.processes):
            sys.stderr.write(f"\n--- vcsched run #{i} ({' '.join(p.argv[3:])}) ---\n{p.output()[-20000:]}\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)


__all__ = ["Kube", "Process", "VcschedRunner", "USER", "WAIT", "CONF_MAP", "CONF_KEY", "pod", "podgroup", "queue",
           "priority_class", "condition", "forbidden_lines"]
