"""Fixtures for the Kubernetes-mode tests: a kmock API server over real HTTP and vcsched runtimes against it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import kmock
import pytest_asyncio
from kubernetes.aio import client as kclient

from vcsched.kube.access import CONTROLLER_ACCESS, SCHEDULER_ACCESS, grants
from vcsched.kube.api import KubeClient
from vcsched.kube.runtime import RunOptions, Runtime
from vcsched.kube.writers import Retry

from .apiserver import ApiServer

WAIT = 20.0  # a guard against hangs only: nothing asserts on time


async def eventually(cond: Callable[[], object], what: str = "condition") -> None:
    """Poll until ``cond()`` is true."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while not cond():
        if loop.time() > deadline:
            raise AssertionError(f"never happened: {what}")
        await asyncio.sleep(0.01)


CONTROLLER_AGENT = "vcsched-controllers"
CONTROLLER_AGENTS = (CONTROLLER_AGENT,)


def verb_of(r: kmock.Request) -> str:
    method = r.method.value
    if method == "GET":
        if r.name is None:
            return "watch" if r.params.get("watch") in ("true", "1") else "list"
        return "get"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]


@pytest_asyncio.fixture
async def api() -> AsyncIterator[ApiServer]:
    async with ApiServer() as server, kmock.Server(server) as srv:
        server.base = str(srv.url).rstrip("/")
        yield server
        # every request vcsched sent is granted by the ClusterRole built from SCHEDULER_ACCESS; the
        # controllers' (their client's agent) by SCHEDULER_ACCESS ∪ CONTROLLER_ACCESS
        for r in server.requests:
            if r.resource is None or r.resource.plural is None:
                continue  # discovery: readable by every authenticated user
            resource = r.resource.plural + (f"/{r.subresource}" if r.subresource else "")
            controller = r.headers.get("User-Agent", "").startswith(CONTROLLER_AGENTS)
            rules, table = ((SCHEDULER_ACCESS + CONTROLLER_ACCESS, "SCHEDULER_ACCESS ∪ CONTROLLER_ACCESS")
                            if controller else (SCHEDULER_ACCESS, "SCHEDULER_ACCESS"))
            assert grants(rules, r.resource.group, resource, verb_of(r)), (
                f"{r.method.value} {r.url.path}: {verb_of(r)} {r.resource.group}/{resource} not in {table}")


def client_for(api: ApiServer, timeout: float = 5.0, agent: str = "vcsched") -> KubeClient:
    cfg = kclient.Configuration(host=api.base)
    return KubeClient(cfg, user_agent=agent, request_timeout=timeout)


FAST = dict(schedule_period=0.02, listen="127.0.0.1:0", retry=Retry(attempts=4, base=0.01, cap=0.05),
            watch_backoff=(0.01, 0.05), lease_duration=1.0, renew_deadline=0.6, retry_period=0.1)


@pytest_asyncio.fixture
async def start(api: ApiServer):
    """``await start(**options)`` → a running Runtime against ``api``; all stopped at teardown."""
    running: list[tuple[Runtime, asyncio.Event, asyncio.Task[int], KubeClient]] = []

    async def _start(timeout: float = 5.0, agent: str = "vcsched", **options) -> Runtime:
        client = client_for(api, timeout, agent)
        rt = Runtime(client, RunOptions(**{**FAST, **options}))
        stop = asyncio.Event()
        task = asyncio.create_task(rt.run(stop))
        rt.stop_event, rt.task = stop, task
        running.append((rt, stop, task, client))
        return rt

    yield _start
    for rt, stop, task, client in running:
        stop.set()
        with contextlib.suppress(Exception):
            await task
        await client.close()


# -- manifests -------------------------------------------------------------------------------------

def node(name: str, cpu: str = "4", memory: str = "8Gi", pods: int = 110) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": str(pods)},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def queue(name: str = "default") -> dict:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"weight": 1, "reclaimable": True}, "status": {"state": "Open"}}


def podgroup(name: str, min_member: int = 1, ns: str = "default", queue: str = "default") -> dict:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns}, "spec": {"minMember": min_member, "queue": queue}}


def pod(name: str, group: str, cpu: str = "1", ns: str = "default", annotations: dict | None = None,
        node_name: str | None = None) -> dict:
    spec: dict = {"schedulerName": "volcano",
                  "containers": [{"name": "main", "image": "busybox",
                                  "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns,
                         "annotations": {"scheduling.k8s.io/group-name": group, **(annotations or {})}},
            "spec": spec, "status": {"phase": "Running" if node_name else "Pending"}}


def conf_map(text: str, name: str = "volcano-scheduler-configmap", ns: str = "volcano-system") -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns},
            "data": {"volcano-scheduler.conf": text}}


def cluster(api: ApiServer, nodes: int = 2) -> None:
    for i in range(nodes):
        api.put(node(f"n{i}"))
    api.put(queue("default"))
    api.put(queue("root"))
