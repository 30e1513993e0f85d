"""A finished session leaves no reference cycles: reference counting frees it and its snapshot.

``vcsched run`` collects garbage rarely (scheduler.freeze_heap); that is only sound while a session,
which refers to every job and node of its snapshot, is freed without the cycle collector.
"""

from __future__ import annotations

import argparse
import gc
import weakref

import pytest

from vcsched.bench import build_cluster, build_preempt_cluster, load_cache
from vcsched.cache import Cache
from vcsched.conf import DEFAULT_SCHEDULER_CONF, parse_conf
from vcsched.scheduler import Scheduler


def _cache(preempt: bool) -> Cache:
    args = argparse.Namespace(nodes=20, node_cpu="8", node_memory="16Gi", node_pods=20, pods=60, gang_size=3,
                              cpu="250m,1,3", memory="512Mi,2Gi,5Gi", seed=7, preempt=30 if preempt else 0)
    if preempt:
        nodes, podgroups, pods, running = build_preempt_cluster(args)
    else:
        (nodes, podgroups, pods), running = build_cluster(args), []
    return load_cache(Cache(), nodes, podgroups, running + pods)


@pytest.mark.parametrize("actions", ["enqueue, allocate, backfill", "enqueue, allocate, preempt, reclaim, backfill"])
def test_a_published_session_is_freed_by_reference_counting(actions: str) -> None:
    conf = parse_conf(f'actions: "{actions}"\n' + DEFAULT_SCHEDULER_CONF[DEFAULT_SCHEDULER_CONF.index("\n"):])
    scheduler = Scheduler(_cache("preempt" in actions), conf)
    gc.collect()
    gc.disable()
    try:
        effects = scheduler.run_once(now=0.0, uid="s1")
        assert effects  # it did place or evict something
        scheduler.last_session = None
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_a_published_session_is_kept_by_no_one() -> None:
    """``vcsched run`` publishes and drops its session: nothing here holds it until the next one
    (which would keep two sessions over a large backlog alive at once)."""
    scheduler = Scheduler(_cache(False), parse_conf(DEFAULT_SCHEDULER_CONF))
    ssn, effects = scheduler.run_session(scheduler.cache.snapshot(), now=0.0, uid="s1")
    assert effects
    scheduler.publish(ssn)
    gone = weakref.ref(ssn)
    del ssn
    assert gone() is None


def test_run_once_keeps_its_session_until_the_next_starts() -> None:
    """``simulate`` reads ``last_session`` after the last cycle; the one before is let go as the next
    cycle begins, not after it."""
    scheduler = Scheduler(_cache(False), parse_conf(DEFAULT_SCHEDULER_CONF))
    scheduler.run_once(now=0.0, uid="s1")
    first = weakref.ref(scheduler.last_session)
    alive_during_next = []
    snapshot = scheduler.cache.snapshot

    def snapshot_noting_the_first():
        alive_during_next.append(first() is not None)
        return snapshot()

    scheduler.cache.snapshot = snapshot_noting_the_first
    scheduler.run_once(now=1.0, uid="s2")
    assert alive_during_next == [False]
    assert scheduler.last_session is not None and scheduler.last_session.uid == "s2"
