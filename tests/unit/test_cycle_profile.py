"""The cycle profile harness (vcsched.kube.cycle_profile): it runs, and in its steady state each cycle
reuses the settled jobs' clones (the snapshot costs what changed) and writes only the statuses of the
groups it changed (the new pod's Inqueue, the previous one's Running, as Volcano's sessions do)."""

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
