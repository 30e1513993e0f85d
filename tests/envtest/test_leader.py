"""Two replicas with ``--leader-elect`` on the real API server: the Lease volcano-system/vcsched decides which
one schedules; when the leader dies (SIGKILL: no release), the other takes over once the lease has expired
and binds what came meanwhile; when the leader is stopped (SIGTERM), it gives the Lease up and the other
takes over at once."""

from __future__ import annotations

import asyncio
import signal
import time

import pytest

from vcsched.kube.runtime import RunOptions

from .conftest import Kube, Process, VcschedRunner, pod
from .faults_support import bare_pod, bindings, bound_count, create_all, nothing_lost

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

    killed = time.monotonic()
    leader.kill()  # SIGKILL: the Lease is not released, it has to expire
    await kube.create(pod("p2"))
    await kube.eventually(lambda: _held_by_other(kube, first), "the standby holds the Lease", timeout=90)
    took_over = time.monotonic() - killed
    await kube.eventually(lambda: kube.bound("default", "p2"), "p2 bound by the new leader", timeout=90)
    print(f"\nSIGKILL to the leader: Lease held by the standby {took_over:.2f} s after the kill, "
          f"p2 bound {time.monotonic() - killed:.2f} s after it")
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


async def test_sigterm_to_the_leader_mid_backlog_hands_the_lease_over_at_once(kube: Kube, vcsched: VcschedRunner):
    """The leader is SIGTERMed while binding 2,000 pods: the standby holds the Lease within 5 s of the signal
    and binds the rest, every pod bound once, no node over capacity; the leader exits 0 once its binds,
    status writes and events in flight are done or its 10 s of grace are up, and its teardown (2 s allowed:
    a backlog of events can take the whole grace, 10.66 s from signal to exit in one CI run)."""
    nodes, per_node = 20, 100
    for i in range(nodes):
        await kube.node(f"n{i:02}", cpu=str(per_node), memory=f"{per_node}Gi", pods=per_node)
    total = nodes * per_node
    before = bindings(kube.cp)
    await create_all(kube, [bare_pod(f"p{i:04}") for i in range(total)])
    a = vcsched.start("--leader-elect")
    b = vcsched.start("--leader-elect")
    first = await kube.eventually(lambda: holder(kube), "a holder of the Lease")
    leader, standby = await kube.eventually(lambda: _which(a, b, first), "the leader's log says so")
    await kube.eventually(lambda: _bound_at_least(kube, total // 10), "the leader binding", timeout=120)
    bound_at_signal = await bound_count(kube)
    signalled = time.monotonic()
    leader.proc.send_signal(signal.SIGTERM)
    await kube.eventually(lambda: _held_by_other(kube, first), "the standby holds the Lease", timeout=30)
    took_over = time.monotonic() - signalled
    code = await asyncio.to_thread(leader.proc.wait, 30)
    exited = time.monotonic() - signalled  # at most: the Lease was polled first
    await nothing_lost(kube, expect_bound=total, timeout=600)
    after = bindings(kube.cp)
    print(f"\nSIGTERM to the leader mid-backlog ({bound_at_signal} of {total} pods bound): Lease held by the standby "
          f"{took_over:.2f} s after "
          f"the signal, the leader gone by {exited:.2f} s (exit {code}); Bindings accepted "
          f"{after['201'] - before['201']}, refused as bound already {after['409'] - before['409']}")
    assert code == 0 and exited <= RunOptions().shutdown_grace + 2.0
    assert took_over <= 5.0
    assert bound_at_signal < total, "everything was bound before the signal: not mid-backlog"
    assert after["201"] - before["201"] == total  # each pod bound once: a second Binding of a pod answers 409
    assert (await kube.get(LEASE))["spec"]["holderIdentity"] == identity(standby)


async def _bound_at_least(kube: Kube, n: int) -> bool:
    return await bound_count(kube) >= n
