"""Binds per second of ``vcsched run`` against the kmock API emulator.

    .venv/bin/python -m tests.kube.bench_binds [--pods 1000] [--nodes 100] [--bind-workers 32]

Starts the emulator over real HTTP on localhost, creates the nodes, a queue, and
``--pods`` pending pods (one PodGroup of minMember 1 each), starts the runtime and
measures from the end of the initial sync to the last accepted Binding.  The
figure includes the sessions, the binds, the Scheduled events and the status
writes that share the connection pool with them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import kmock
from kubernetes.aio import client as kclient

from vcsched.kube.api import KubeClient
from vcsched.kube.runtime import RunOptions, Runtime

from .apiserver import ApiServer
from .conftest import node, pod, podgroup, queue


async def bench(pods: int, nodes: int, workers: int) -> dict:
    async with ApiServer() as api, kmock.Server(api) as srv:
        for i in range(nodes):
            api.put(node(f"n{i}", cpu="64", memory="256Gi"))
        api.put(queue("default"))
        api.put(queue("root"))
        for i in range(pods):
            api.put(podgroup(f"pg{i}"))
            api.put(pod(f"p{i}", f"pg{i}", cpu="500m"))
        client = KubeClient(kclient.Configuration(host=str(srv.url).rstrip("/")))
        rt = Runtime(client, RunOptions(listen=None, schedule_period=0.05, bind_workers=workers))
        stop = asyncio.Event()
        task = asyncio.create_task(rt.run(stop))
        await rt.synced.wait()
        t0 = time.perf_counter()
        while len(api.bindings) < pods:
            await asyncio.sleep(0.005)
        seconds = time.perf_counter() - t0
        stop.set()
        await task
        await client.close()
        return {"pods": pods, "nodes": nodes, "bind_workers": workers, "seconds": round(seconds, 3),
                "binds_per_second": round(pods / seconds, 1), "sessions": rt.sessions}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--pods", type=int, default=1000)
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--bind-workers", type=int, default=32)
    a = p.parse_args()
    print(json.dumps(asyncio.run(bench(a.pods, a.nodes, a.bind_workers))))


if __name__ == "__main__":
    main()
