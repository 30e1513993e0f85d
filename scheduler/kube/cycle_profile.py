"""Where one ``vcsched run`` cycle's time goes, without an API server (issue 25).

    python -m vcsched.kube.cycle_profile [--nodes 100] [--bound 1000] [--cycles 20] [--gang N]

The cache is fed as the watches feed it: ``--nodes`` Ready nodes, ``--bound`` bare pods bound
round robin, each in its own Running PodGroup, the statuses the first session writes fed back as
the PodGroup watch brings them.  Then each cycle adds one pending pod and its PodGroup, takes the
snapshot, runs the session, keeps the settled jobs' clones (as ``Runtime`` does) and feeds the Bind
and the written statuses back.  Prints the mean snapshot and session milliseconds, then the
cProfile of ``--cycles`` cycles by cumulative time.  The heap is frozen once the cluster is built, as
``Runtime`` freezes it after its first list (else collections land in the cycles timed); the sessions
give waiting pods their conditions once a second, as ``vcsched run``'s do.

``--gang N`` adds a gang whose members are still being created, as the mixed latency run has one: a
PodGroup of minMember 2N with N pending members at the start, and ``--gang-step`` more with each
cycle's pod (keep N above the step times the 25 + ``--cycles`` cycles, so that it stays short).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from typing import Any

from ..cache import Cache
from ..cli import at_least
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


GANG = "gang"


def _gang_member(i: int, node: str = "") -> dict[str, Any]:
    pod = _pod(i, node)
    meta = pod["metadata"]
    meta["name"], meta["uid"], meta["annotations"] = f"{GANG}-{i}", f"{GANG}-u{i}", {
        "scheduling.k8s.io/group-name": GANG}
    return pod


def _gang_podgroup(min_member: int, phase: str = "Pending", running: int = 0,
                   conditions: list | None = None) -> dict[str, Any]:
    return {"metadata": {"name": GANG, "namespace": "bench", "uid": f"g-{GANG}", "creationTimestamp": CREATED},
            "spec": {"minMember": min_member, "queue": "default"},
            "status": {"phase": phase, "running": running, "conditions": conditions or []}}


class Cluster:
    def __init__(self, nodes: int, bound: int, gang: int = 0, gang_step: int = 40) -> None:
        self.cache = Cache(("volcano",))
        for q in ("root", "default"):
            self.cache.update_queue({"metadata": {"name": q}, "spec": {"weight": 1}, "status": {"state": "Open"}})
        for i in range(nodes):
            self.cache.update_node(_node(i))
        for j in range(bound):
            self.cache.update_podgroup(_podgroup(j, "Running"))
            self.cache.update_pod(_pod(j, f"n{j % nodes}"))
        self.scheduler = Scheduler(self.cache, parse_conf(DEFAULT_SCHEDULER_CONF), condition_spacing=1.0)
        self._feed_back(self.scheduler.run_once())
        self.next = bound
        self.gang_min, self.gang_step, self.gang_next = 2 * gang, gang_step, 0
        if gang:
            self.cache.update_podgroup(_gang_podgroup(self.gang_min))
            self._add_gang_members(gang)

    def _add_gang_members(self, count: int) -> None:
        for i in range(self.gang_next, self.gang_next + count):
            self.cache.update_pod(_gang_member(i))
        self.gang_next += count

    def _feed_back(self, effects: list) -> None:
        for e in effects:
            if isinstance(e, Bind):
                member = e.name.startswith(f"{GANG}-")
                i = int(e.name.rpartition("-")[2] if member else e.name[1:])
                self.cache.update_pod(_gang_member(i, e.node) if member else _pod(i, e.node))
            elif isinstance(e, PodGroupStatus):
                self.cache.update_podgroup(
                    _gang_podgroup(self.gang_min, e.phase, e.running, e.conditions) if e.name == GANG
                    else _podgroup(int(e.name[2:]), e.phase, e.running, e.conditions))

    def cycle(self) -> tuple[float, float]:
        """One new pod's cycle: (snapshot ms, session ms)."""
        j, self.next = self.next, self.next + 1
        self.cache.update_podgroup(_podgroup(j, "Pending"))
        self.cache.update_pod(_pod(j))
        if self.gang_min:
            self._add_gang_members(self.gang_step)
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
    p.add_argument("--nodes", type=at_least(1), default=100)
    p.add_argument("--bound", type=at_least(0), default=1000)
    p.add_argument("--cycles", type=at_least(1), default=20)
    p.add_argument("--gang", type=at_least(0), default=0, metavar="N",
                   help="a gang of minMember 2N, N members pending at the start")
    p.add_argument("--gang-step", type=at_least(0), default=40, metavar="K",
                   help="gang members added each cycle (default 40)")
    args = p.parse_args(argv)
    cluster = Cluster(args.nodes, args.bound, args.gang, args.gang_step)
    freeze_heap()  # as Runtime does once the cache has listed: no full collection inside the cycles timed
    for _ in range(5):  # warm: the first cycles clone every job once
        cluster.cycle()
    times = [cluster.cycle() for _ in range(args.cycles)]
    gang = f", a gang of {args.gang}+ members short of {2 * args.gang}" if args.gang else ""
    print(f"{args.nodes} nodes, {args.bound} bound pods{gang}, one new pod per cycle: snapshot "
          f"{sum(t[0] for t in times) / len(times):.1f} ms, session {sum(t[1] for t in times) / len(times):.1f} ms")
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(args.cycles):
        cluster.cycle()
    profile.disable()
    pstats.Stats(profile).sort_stats("cumulative").print_stats(40)


if __name__ == "__main__":
    main()
