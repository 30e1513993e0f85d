"""Two replicas with ``--leader-elect`` on the real API server: the Lease volcano-system/vcsched decides which
one schedules; when the leader dies (SIGKILL: no release), the other takes over once the lease has expired
and binds what came meanwhile."""

from __future__ import annotations

import pytest

from .conftest import Kube, Process, VcschedRunner, pod

pytestmark = pytest.mark.asyncio

LEASE = "/apis/coordination.k8s.io/v1/namespaces/volcano-system/leases/vcsched"


def identity(p: Process) -> str | None:
    """The identity ``p`` leads as, once it says it became leader."""
    led = p.logged("became leader")
    return led[-1]["identity"] if led else None


def bound_by(p: Process) -> list[str]:
    """The pods ``p`` bound (its debug log)."""
    return [r["pod"] for r in p.logged("bound")]


async def holder(kube: Kube) -> str | None:
    lease = await kube.get(LEASE)
    return ((lease or {}).get("spec") or {}).get("holderIdentity") or None


async def test_only_the_leader_schedules_and_the_standby_takes_over(kube: Kube, vcsched: VcschedRunner):
    await kube.node("n0")
    # verbose: each replica logs every pod it binds ("bound", debug)
    a = vcsched.start("--leader-elect", verbose=True)
    b = vcsched.start("--leader-elect", verbose=True)
    first = await kube.eventually(lambda: holder(kube), "a holder of the Lease")
    leader, standby = await kube.eventually(lambda: _which(a, b, first), "the leader's log says so")
    await kube.eventually(lambda: standby.logged("waiting for leadership"), "the standby synced and waiting")
    await kube.create(pod("p1"))
    await kube.eventually(lambda: kube.bound("default", "p1"), "p1 bound")
    await kube.eventually(lambda: bound_by(leader), "the leader logged its bind")
    # only the leader schedules: the standby never led and bound nothing
    assert bound_by(leader) == ["default/p1"]
    assert identity(standby) is None and bound_by(standby) == []
    lease = await kube.get(LEASE)
    assert lease["spec"]["holderIdentity"] == identity(leader)
    transitions = lease["spec"].get("leaseTransitions") or 0

    leader.kill()  # SIGKILL: the Lease is not released, it has to expire
    await kube.create(pod("p2"))
    await kube.eventually(lambda: _held_by_other(kube, first), "the standby holds the Lease", timeout=90)
    await kube.eventually(lambda: kube.bound("default", "p2"), "p2 bound by the new leader", timeout=90)
    lease = await kube.get(LEASE)
    assert lease["spec"]["holderIdentity"] == identity(standby)
    assert lease["spec"]["leaseTransitions"] == transitions + 1
    assert standby.alive()
    await kube.eventually(lambda: bound_by(standby), "the new leader logged its bind")
    assert bound_by(standby) == ["default/p2"]  # p1, bound already, was not bound again


async def _which(a: Process, b: Process, holder_id: str) -> tuple[Process, Process] | None:
    if identity(a) == holder_id:
        return a, b
    if identity(b) == holder_id:
        return b, a
    return None


async def _held_by_other(kube: Kube, old: str) -> bool:
    h = await holder(kube)
    return h is not None and h != old
