"""The cycle profile harness (vcsched.kube.cycle_profile): it runs, and in its steady state each cycle
reuses the settled jobs' clones (the snapshot costs what changed) and writes only the statuses of the
groups it changed (the new pod's Inqueue, the previous one's Running, as Volcano's sessions do)."""

import pytest

from vcsched.framework.effects import PodGroupStatus
from vcsched.kube import cycle_profile
from vcsched.kube.cycle_profile import Cluster


def test_steady_state_reuses_the_settled_jobs():
    cluster = Cluster(nodes=4, bound=20)
    for _ in range(3):
        cluster.cycle()
    assert len(cluster.cache._reusable) >= 20  # every settled job kept for the next snapshot
    ssn, effects = cluster.scheduler.run_session(cluster.cache.snapshot())
    # the last cycle's group, bound since, becomes Running; no other status is written
    assert [(e.name, e.phase) for e in effects if isinstance(e, PodGroupStatus)] == [("pg22", "Running")]


def test_main_prints_the_means_and_the_profile(capsys):
    cycle_profile.main(["--nodes", "3", "--bound", "6", "--cycles", "2"])
    out = capsys.readouterr().out
    assert out.startswith("3 nodes, 6 bound pods, one new pod per cycle: snapshot ")
    assert "run_session" in out


def test_a_session_over_reused_settled_jobs_writes_what_a_full_one_writes():
    """Session.close skips the settled jobs the snapshot reused and the session left alone: the same
    statuses and events come out as from a session over fresh clones of every job."""
    from vcsched.framework.effects import Event

    cluster = Cluster(nodes=4, bound=20)
    for _ in range(3):
        cluster.cycle()
    cache = cluster.cache
    cache.update_podgroup(cycle_profile._podgroup(99, "Pending"))
    cache.update_pod(cycle_profile._pod(99))

    def written(snapshot):
        _, effects = cluster.scheduler.run_session(snapshot)
        return sorted((type(e).__name__, e.name, getattr(e, "phase", getattr(e, "reason", "")))
                      for e in effects if isinstance(e, (PodGroupStatus, Event)))

    reusing = cache.snapshot()
    assert len(reusing.reused) >= 20
    fresh = cache.snapshot()  # a snapshot takes the kept clones: this one clones every job
    assert not fresh.reused
    assert written(reusing) == written(fresh)


def test_a_reused_settled_job_whose_tasks_the_session_changed_is_updated():
    """The skip holds only while the job's tasks are as the session opened them: one that finished during
    the session (any status change) has its status recomputed and written."""
    from vcsched.api.types import TaskStatus
    from vcsched.framework.session import Session

    cluster = Cluster(nodes=4, bound=20)
    for _ in range(3):
        cluster.cycle()
    snapshot = cluster.cache.snapshot()
    sched = cluster.scheduler
    ssn = Session(snapshot, sched.conf, sched._plugins, sched.state)
    ssn.open()
    job = ssn.jobs["bench/pg5"]
    assert job.uid in snapshot.reused
    ssn.update_task_status(next(iter(job.tasks.values())), TaskStatus.Succeeded)
    effects = ssn.close()
    assert [(e.name, e.phase) for e in effects if isinstance(e, PodGroupStatus) and e.name == "pg5"] == [
        ("pg5", "Completed")]


def test_a_gang_short_of_members_grows_each_cycle_and_is_placed_whole_once_complete():
    """``--gang N``: a PodGroup of minMember 2N, N members at the start and ``gang_step`` more a cycle; while
    short, none of its members is bound and each cycle's own pod is; once complete, all of it is bound."""
    from vcsched.framework.effects import Bind

    cluster = Cluster(nodes=4, bound=8, gang=6, gang_step=2)
    members = lambda: [t for t in cluster.cache.tasks.values() if t.name.startswith("gang-")]  # noqa: E731
    assert len(members()) == 6
    for expected in (8, 10):
        cluster.cycle()
        assert len(members()) == expected and not any(t.node_name for t in members())
    cluster.cycle()  # the 11th and 12th members: the gang is whole, placed and fed back bound
    assert len(members()) == 12 and all(t.node_name for t in members())
    _, effects = cluster.scheduler.run_session(cluster.cache.snapshot())
    assert not [e for e in effects if isinstance(e, Bind)]  # nothing left to place


def test_main_with_a_gang(capsys):
    cycle_profile.main(["--nodes", "3", "--bound", "6", "--cycles", "2", "--gang", "200", "--gang-step", "5"])
    assert "a gang of 200+ members short of 400" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["--nodes", "0"], ["--cycles", "0"], ["--gang", "-3"], ["--bound", "x"]])
def test_bad_counts_are_refused_before_anything_runs(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        cycle_profile.main(argv)
    assert exit_.value.code == 2
    assert f"argument {argv[0]}: expected" in capsys.readouterr().err
