"""A job's waiting pods get their PodScheduled condition at most once a period when cycles start on every
change (``SchedulerState.condition_spacing``, set by ``vcsched run``), as Volcano's one session a period
gives it; with no spacing (the simulator, Volcano's cadence already) every session gives it (issue 25)."""

from __future__ import annotations

from vcsched.cache import Cache
from vcsched.conf import DEFAULT_SCHEDULER_CONF, parse_conf
from vcsched.framework.effects import PodCondition
from vcsched.scheduler import Scheduler


def _cluster(spacing: float) -> tuple[Cache, Scheduler]:
    cache = Cache(("volcano",))
    for q in ("root", "default"):
        cache.update_queue({"metadata": {"name": q}, "spec": {"weight": 1}, "status": {"state": "Open"}})
    cache.update_node({"metadata": {"name": "n0", "labels": {"kubernetes.io/hostname": "n0"}},
                       "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"},
                                  "conditions": [{"type": "Ready", "status": "True"}]}})
    return cache, Scheduler(cache, parse_conf(DEFAULT_SCHEDULER_CONF), condition_spacing=spacing)


def _gang(cache: Cache, name: str, min_member: int) -> None:
    cache.update_podgroup({"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                                        "creationTimestamp": "2026-01-01T00:00:00Z"},
                           "spec": {"minMember": min_member, "queue": "default"}, "status": {"phase": "Pending"}})


def _member(cache: Cache, gang: str, name: str) -> None:
    cache.update_pod({"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                                   "creationTimestamp": "2026-01-01T00:00:00Z",
                                   "annotations": {"scheduling.k8s.io/group-name": gang}},
                      "spec": {"schedulerName": "volcano", "containers": [
                          {"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
                      "status": {"phase": "Pending"}})


def _conditions(effects) -> dict[str, str]:
    return {e.name: e.message for e in effects if isinstance(e, PodCondition)}


def test_a_jobs_conditions_wait_out_the_period_then_carry_what_changed_meanwhile():
    cache, scheduler = _cluster(spacing=1.0)
    _gang(cache, "gang", 9)
    _member(cache, "gang", "g0")
    _member(cache, "gang", "g1")
    first = _conditions(scheduler.run_once(now=100.0))
    assert set(first) == {"g0", "g1"} and all("2 Pending" in m for m in first.values())

    _member(cache, "gang", "g2")
    _gang(cache, "other", 2)
    _member(cache, "other", "o0")
    # the gang's were given 0.5 s ago; the other job's never: each job has its own period
    assert set(_conditions(scheduler.run_once(now=100.5))) == {"o0"}

    later = _conditions(scheduler.run_once(now=101.0))
    assert set(later) == {"g0", "g1", "g2"} and all("3 Pending" in m for m in later.values())


def test_without_spacing_every_session_gives_them():
    cache, scheduler = _cluster(spacing=0.0)
    _gang(cache, "gang", 9)
    _member(cache, "gang", "g0")
    assert set(_conditions(scheduler.run_once(now=100.0))) == {"g0"}
    _member(cache, "gang", "g1")
    assert set(_conditions(scheduler.run_once(now=100.001))) == {"g0", "g1"}
    assert not scheduler.state.conditions_given


def test_what_is_older_than_a_period_is_forgotten():
    cache, scheduler = _cluster(spacing=1.0)
    _gang(cache, "gang", 9)
    _member(cache, "gang", "g0")
    scheduler.run_once(now=100.0)
    assert set(scheduler.state.conditions_given) == {"ns/gang"}
    cache.delete_pod("uid-g0")
    _gang(cache, "other", 2)
    _member(cache, "other", "o0")
    scheduler.run_once(now=102.0)
    assert set(scheduler.state.conditions_given) == {"ns/other"}
