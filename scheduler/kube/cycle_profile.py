"""Where one ``vcsched run`` cycle's time goes, without an API server (issue 25).

    python -m vcsched.kube.cycle_profile [--nodes 100] [--bound 1000] [--cycles 20]

The cache is fed as the watches feed it: ``--nodes`` Ready nodes, ``--bound`` bare pods bound
round robin, each in its own Running PodGroup, the statuses the first session writes fed back as
the PodGroup watch brings them.  Then each cycle adds one pending pod and its PodGroup, takes the
snapshot, runs the session, keeps the settled jobs' clones (as ``Runtime`` does) and feeds the Bind
and the written statuses back.  Prints the mean snapshot and session milliseconds, then the
cProfile of ``--cycles`` cycles by cumulative time.  The heap is frozen once the cluster is built, as
``Runtime`` freezes it after its first list (else collections land in the cycles timed).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from typing import Any

from ..cache import Cache
from ..conf import DEFAULT_SCHEDULER_CONF, parse_conf
from ..framework.effects import Bind, PodGroupStatus
from ..scheduler import Scheduler, freeze_heap
from .cycles import touched_jobs

CREATED = "2026-01-01T00:00:00Z"


def _node(i: int) -> dict[str, Any]:
    return {"metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
            "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def _pod(j: int, node: str = "") -> dict[str, Any]:
    return {"metadata": {"name": f"p{j}", "namespace": "bench", "uid": f"u{j}", "creationTimestamp": CREATED,
                         "annotations": {"scheduling.k8s.io/group-name": f"pg{j}"}},
            "spec": {"schedulerName": "volcano", "nodeName": node, "containers": [
                {"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]},
            "status": {"phase": "Pending"}}


def _podgroup(j: int, phase: str, running: int = 0, conditions: list | None = None) -> dict[str, Any]:
    return {"metadata": {"name": f"pg{j}", "namespace": "bench", "uid": f"g{j}", "creationTimestamp": CREATED},
            "spec": {"minMember": 1, "queue": "default"},
            "status": {"phase": phase, "running": running, "conditions": conditions or []}}


class Cluster:
    def __init__(self, nodes: int, bound: int) -> None:
        self.cache = Cache(("volcano",))
        for q in ("root", "default"):
            self.cache.update_queue({"metadata": {"name": q}, "spec": {"weight": 1}, "status": {"state": "Open"}})
        for i in range(nodes):
            self.cache.update_node(_node(i))
        for j in range(bound):
            self.cache.update_podgroup(_podgroup(j, "Running"))
            self.cache.update_pod(_pod(j, f"n{j % nodes}"))
        self.scheduler = Scheduler(self.cache, parse_conf(DEFAULT_SCHEDULER_CONF))
        self._feed_back(self.scheduler.run_once())
        self.next = bound

    def _feed_back(self, effects: list) -> None:
        for e in effects:
            if isinstance(e, Bind):
                self.cache.update_pod(_pod(int(e.name[1:]), e.node))
            elif isinstance(e, PodGroupStatus):
                self.cache.update_podgroup(_podgroup(int(e.name[2:]), e.phase, e.running, e.conditions))

    def cycle(self) -> tuple[float, float]:
        """One new pod's cycle: (snapshot ms, session ms)."""
        j, self.next = self.next, self.next + 1
        self.cache.update_podgroup(_podgroup(j, "Pending"))
        self.cache.update_pod(_pod(j))
        t0 = time.perf_counter()
        snapshot = self.cache.snapshot()
        t1 = time.perf_counter()
        ssn, effects = self.scheduler.run_session(snapshot)
        t2 = time.perf_counter()
        self.cache.keep_clones(ssn, *touched_jobs(effects))
        self.scheduler.publish(ssn)
        self._feed_back(effects)
        return (t1 - t0) * 1000, (t2 - t1) * 1000


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m vcsched.kube.cycle_profile", description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--bound", type=int, default=1000)
    p.add_argument("--cycles", type=int, default=20)
    args = p.parse_args(argv)
    cluster = Cluster(args.nodes, args.bound)
    freeze_heap()  # as Runtime does once the cache has listed: no full collection inside the cycles timed
    for _ in range(5):  # warm: the first cycles clone every job once
        cluster.cycle()
    times = [cluster.cycle() for _ in range(args.cycles)]
    print(f"{args.nodes} nodes, {args.bound} bound pods, one new pod per cycle: snapshot "
          f"{sum(t[0] for t in times) / len(times):.1f} ms, session {sum(t[1] for t in times) / len(times):.1f} ms")
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(args.cycles):
        cluster.cycle()
    profile.disable()
    pstats.Stats(profile).sort_stats("cumulative").print_stats(40)


if __name__ == "__main__":
    main()
