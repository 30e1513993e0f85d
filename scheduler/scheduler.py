"""The scheduling loop's body: one session over the cache (scheduler.go · runOnce)."""

from __future__ import annotations

import gc
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from .cache import Cache
from .conf import SchedulerConfiguration
from .framework.effects import Effect
from .framework.registry import action_classes, plugin_classes
from .framework.session import NodesToFind, SchedulerState, Session, Snapshot
from .metrics import Metrics


class Scheduler:
    def __init__(self, cache: Cache, conf: SchedulerConfiguration, metrics: Metrics | None = None,
                 nodes_to_find: NodesToFind = NodesToFind(), condition_spacing: float = 0.0) -> None:
        self.cache = cache
        self.conf = conf
        self.state = SchedulerState(nodes_to_find=nodes_to_find, condition_spacing=condition_spacing)
        self.metrics = metrics or Metrics()
        self._plugins = plugin_classes()
        self._actions = action_classes()
        self.last_session: Session | None = None  # run_once's, until the next

    def run_once(self, now: float | None = None, uid: str | None = None) -> list[Effect]:
        """Open a session on a snapshot, run the configured actions, close it; return its effects.
        The session stays readable as ``last_session`` (what ``simulate`` reports) until the next one
        starts: two sessions over a large backlog are never alive at once."""
        self.last_session = None
        with session_gc_paused():  # the snapshot's copies too
            ssn, effects = self.run_session(self.cache.snapshot(), now, uid)
            self.publish(ssn)
        self.last_session = ssn
        return effects

    def run_session(self, snapshot: Snapshot, now: float | None = None,
                    uid: str | None = None) -> tuple[Session, list[Effect]]:
        """One session on ``snapshot``.  It touches neither the cache nor the per-job metric records
        (only thread-safe histograms), so it may run on another thread than the one owning those."""
        conf = self.conf  # a reload takes effect from the next cycle
        started = time.perf_counter()
        # No cyclic collection inside a session (see session_gc_paused)
        with session_gc_paused():
            ssn = Session(snapshot, conf, self._plugins, self.state, now=now, uid=uid or str(uuid.uuid4()))
            ssn.open()
            self.metrics.open_session(time.perf_counter() - started)
            for name in conf.actions:
                t0 = time.perf_counter()
                self._actions[name]().execute(ssn)
                self.metrics.action(name, time.perf_counter() - t0)
            effects = ssn.close()
        self.metrics.cycle(time.perf_counter() - started)
        return ssn, effects

    def publish(self, ssn: Session) -> None:
        """The closed session's observations into the metrics (on the thread that owns the cache).
        Its plugins are dropped, and it is kept by no one here: ``vcsched run`` frees it as soon as its
        effects are applied (it once lived on until the next session had run, beside it: 653 against
        527 MiB peak for ``vcsched bench --nodes 1000 --pods 40000``, whose second session retries
        the 5,719 pods that did not fit)."""
        self.metrics.publish(ssn)
        ssn.release()


# gen0 every 100,000 net allocations of container objects (Python's default: 700), gen1 every 50
# of those, gen2 after 100 of gen1's
GC_THRESHOLDS = (100_000, 50, 100)


@contextmanager
def session_gc_paused() -> Iterator[None]:
    """The cyclic collector off for one session (when it was on), back on after.

    A snapshot and its session allocate about a million container objects at 5,000 nodes / 50,000
    pods (copies, queues, statements, events, effects), most of which go by reference counting when
    the session ends.  A collection inside the session walks those alive and every object they refer
    to, scattered over the whole heap (cache misses: 0.1-0.2 s a collection there, 2.5x one at
    1,000 nodes): ``vcsched bench --nodes 5000 --pods 50000`` spent 4.3-5.0 CPU seconds in 25
    collections, 1.6-1.8 in 10 with this pause (1,000 / 10,000: 0.19-0.22 s in 4, 0.15-0.18 in 2).
    After the session only what it leaves alive is looked at, once.  Sessions leave no cycles behind
    (Session.release); a cycle made during one is found by the first collection after it.  The pause is
    process-wide: in ``vcsched run`` the event loop's thread allocates uncollected for a session's
    length too, which reference counting frees as before.

    Pauses nest: only the outermost resumes the collector.  A caller that applies the effects holds
    its pause until the session and its effects are gone (``vcsched run``, ``vcsched bench``), so that
    reference counting frees them and the first collection after does not walk them: it did, some
    790,000 objects and 0.39 s at 5,000 nodes / 50,000 pods, before the effects were applied."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def freeze_heap() -> None:
    """Move everything alive now (the cache as first listed) out of the garbage collector's sight,
    and collect far less often from now on.

    The cache holds hundreds of thousands of objects for a large cluster, and every full
    collection walks them all: a pause of a few hundred milliseconds that lands inside some
    session.  They live until deleted, and reference counting still frees them then; the
    collector keeps looking at what is allocated afterwards.  Once per process, after the initial
    load: what was frozen is never looked at again, so a second freeze could keep cycles alive.

    What comes later (every watched update of a pod is a new manifest) made Python's default
    thresholds run a full collection every second or so: 45 % of ``vcsched run``'s CPU at 5,000
    pending pods on a real API server (docs/real-apiserver-bench.md).  A session leaves no cycles
    behind (Session.release), manifests are trees, so almost all garbage goes by reference
    counting and the collector has little to find: it runs at GC_THRESHOLDS.
    """
    if gc.get_freeze_count():
        return
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)

