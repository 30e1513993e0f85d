"""The cyclic collector resumes after a cycle only once its session is gone (scheduler.session_gc_paused).

Resumed while the session was alive, the first collection walked all of it, some 790,000 objects at
50,000 pending pods, before ``vcsched run`` had sent a single Bind.  These tests watch every resume of
the collector and count the sessions alive at that moment.
"""

from __future__ import annotations

import argparse
import gc
import weakref

import pytest

from vcsched import bench
from vcsched import scheduler as scheduler_module
from vcsched.framework.session import Session
from vcsched.kube import runtime

from .conftest import cluster, eventually, pod, podgroup


class CollectorWatch:
    """Stands in for the ``gc`` module that scheduler.py pauses and resumes: at each resume, how many of
    the sessions opened so far are still alive."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sessions: list[weakref.ref[Session]] = []
        self.alive_at_resume: list[int] = []
        session_open = Session.open

        def noting_open(ssn: Session) -> None:
            self.sessions.append(weakref.ref(ssn))
            session_open(ssn)

        monkeypatch.setattr(Session, "open", noting_open)
        monkeypatch.setattr(scheduler_module, "gc", self)

    def enable(self) -> None:
        if self.sessions:
            self.alive_at_resume.append(sum(ref() is not None for ref in self.sessions))
        gc.enable()

    def isenabled(self) -> bool:
        return gc.isenabled()

    def disable(self) -> None:
        gc.disable()

    def __getattr__(self, name: str):  # the rest of the module as it is
        return getattr(gc, name)


def test_bench_resumes_the_collector_with_no_session_alive(monkeypatch):
    watch = CollectorWatch(monkeypatch)
    parser = argparse.ArgumentParser()
    bench.add_parser(parser.add_subparsers())
    args = parser.parse_args(["bench", "--nodes", "10"])
    args.pods = 40  # a count (``vcsched bench`` converts the option's list)
    result = bench.run(args)
    assert result.pods_placed == 40
    assert watch.alive_at_resume and watch.alive_at_resume == [0] * len(watch.alive_at_resume)


@pytest.mark.asyncio
@pytest.mark.parametrize("where", ["on the loop", "on a worker thread"])
async def test_vcsched_run_resumes_the_collector_with_no_session_alive(api, start, monkeypatch, where):
    watch = CollectorWatch(monkeypatch)
    if where == "on a worker thread":  # as a session that took a while does
        monkeypatch.setattr(runtime, "INLINE_SESSION", 0.0)
    cluster(api, nodes=2)
    for i in range(3):
        api.put(podgroup(f"pg{i}"))
        api.put(pod(f"p{i}", f"pg{i}"))
    rt = await start()
    await eventually(lambda: len(api.bindings) == 3, "three binds")
    await eventually(lambda: rt.sessions >= 3, "sessions after the binds")
    assert watch.alive_at_resume and watch.alive_at_resume == [0] * len(watch.alive_at_resume)
