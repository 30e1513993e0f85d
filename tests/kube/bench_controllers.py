"""The controllers' API reads for one Job of N pods, against the kmock API emulator.

    .venv/bin/python -m tests.kube.bench_controllers 10 50 200

Runs ``run_controllers`` (informers: indexes → handlers), creates a Job of N replicas, sets its
PodGroup Inqueue, waits for its N pods, sets them Running and waits for the Job to be Running with
N running. Prints the controllers' GET and LIST requests (watches left out; the informers' initial
lists are one per kind) and the Job status writes.
"""

from __future__ import annotations

import asyncio
import sys

import kmock

from vcsched.kube.components import run_controllers
from vcsched.kube.controllers import ControllerOptions

from .apiserver import ApiServer
from .conftest import CONTROLLER_AGENT, client_for, eventually, queue
from .test_controllers import SCHED, job, pods, set_phase, status


async def measure(n: int) -> str:
    async with ApiServer() as api, kmock.Server(api) as srv:
        api.base = str(srv.url).rstrip("/")
        api.put(queue("default"))
        api.put(queue("root"))
        client = client_for(api, agent=CONTROLLER_AGENT)
        stop = asyncio.Event()
        task = asyncio.create_task(run_controllers(client, stop, ControllerOptions()))
        created = api.put(job(replicas=n))
        pg = f"j1-{created['metadata']['uid']}"
        await eventually(lambda: api.get(SCHED, "podgroups", "ns", pg) is not None, "the PodGroup")
        api.update(SCHED, "podgroups", "ns", pg, {"status": {"phase": "Inqueue"}})
        await eventually(lambda: len(pods(api)) == n, "the pods")
        for p in pods(api):
            set_phase(api, p, "Running")
        await eventually(lambda: (status(api).get("state") or {}).get("phase") == "Running"
                         and status(api).get("running") == n, "the job Running")
        stop.set()
        await asyncio.wait_for(task, 20)
        await client.close()
        reads = [r for r in api.requests if r.method.value == "GET" and r.resource and r.params.get("watch") != "true"
                 and r.headers.get("User-Agent", "").startswith(CONTROLLER_AGENT)]
        lists = sum(1 for r in reads if r.name is None)
        puts = sum(1 for r in api.requests if r.method.value == "PUT" and r.subresource == "status")
        return f"N={n}: GET {len(reads) - lists}, LIST {lists}, Job status PUTs {puts}"


def main() -> None:
    for n in map(int, sys.argv[1:] or ["10", "50"]):
        print(asyncio.run(measure(n)))


if __name__ == "__main__":
    main()
