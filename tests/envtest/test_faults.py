"""Faults on the real API server: the scheduler killed mid-backlog, the API server restarted under it, its
watches expired by an etcd compaction, and conflicting writes to the objects whose status it keeps.

Each test ends with the invariant "nothing lost" (faults_support.nothing_lost): every pod bound once or
without room anywhere, no node over its allocatable cpu, memory or pods, no GPU over its memory, cores
or split, no pod on a node that is gone, every PodGroup whose pods are all bound Running.  A pod's
spec.nodeName cannot change once set on a real server (a second Binding answers 409), so "bound once"
is checked as: the API server refused no Binding of the restarted scheduler for being bound already
where the test can tell (its own counters, apiserver_request_total).
"""

from __future__ import annotations

import signal

import pytest

from .conftest import Kube, VcschedRunner
from .faults_support import (GPU_MIB, SPLIT, VGPU_CONF, alive, bare_pod, bindings, bound_count, conf_map,
                             create_all, delete_bare_pod, gpu_node, log_lines, more_sessions, nothing_lost, pods, request_counts,
                             restart_apiserver, vgpu_pod)

pytestmark = pytest.mark.asyncio


async def _kill_mid_backlog(kube: Kube, proc, total: int, at_least: int) -> int:
    """SIGKILL ``proc`` once at least ``at_least`` pods are bound; how many were bound when it died."""
    await kube.eventually(lambda: _at_least(kube, at_least), f"{at_least} pods bound before the kill",
                          timeout=300)
    proc.kill(signal.SIGKILL)
    bound = await bound_count(kube)
    assert 0 < bound < total, f"the kill was not mid-backlog: {bound} of {total} bound"
    return bound


async def _at_least(kube: Kube, n: int) -> bool:
    return await bound_count(kube) >= n


# -- 1. the scheduler killed mid-backlog -----------------------------------------------------------------


async def test_sigkill_mid_backlog_restarted_binds_everything_once(kube: Kube, vcsched: VcschedRunner):
    """20 nodes with room for exactly 30 pods each, 600 bare pods and 10 more that fit nowhere; the scheduler
    is SIGKILLed once some are bound and started again: the new process rebuilds what is used from the
    bound pods it lists, binds the rest, over-fills no node and binds none of the 10."""
    nodes, per_node, extra = 20, 30, 10
    for i in range(nodes):
        await kube.node(f"n{i:02}", cpu=str(per_node), memory=f"{per_node}Gi", pods=per_node)
    total = nodes * per_node
    before = bindings(kube.cp)
    await create_all(kube, [bare_pod(f"p{i:03}") for i in range(total + extra)])
    first = vcsched.start()
    at_kill = await _kill_mid_backlog(kube, first, total, at_least=total // 6)
    second = vcsched.start()
    await nothing_lost(kube, expect_bound=total, timeout=600)
    # and it stays so: more sessions place none of the 10 and move nothing
    await more_sessions(kube, second, 5)
    await nothing_lost(kube, expect_bound=total)
    after = bindings(kube.cp)
    print(f"\nSIGKILL mid-backlog: {at_kill}/{total} bound at the kill; Bindings accepted "
          f"{after['201'] - before['201']}, refused as bound already {after['409'] - before['409']}")
    assert after["201"] - before["201"] == total
    # the restarted scheduler knew what was bound: it sent no Binding for a pod bound already
    assert after["409"] - before["409"] == 0, log_lines(second, "pod already bound")
    assert alive(second)


async def test_sigkill_mid_backlog_rebuilds_the_gpu_ledger_from_bound_pods(kube: Kube, vcsched: VcschedRunner):
    """The vGPU variant: 10 nodes with 2 GPUs each (40960 MiB, split 10); pods of 10240 MiB, so exactly four
    per GPU; 80 that fit and 8 more.  Killed mid-backlog and restarted, the scheduler must take each
    GPU's use from the bound pods' volcano.sh/vgpu-ids-new annotations: no GPU over its memory."""
    await kube.create(conf_map(VGPU_CONF))
    nodes, gpus_per_node = 10, 2
    for i in range(nodes):
        await gpu_node(kube, f"g{i}", [f"GPU-{i}-{j}" for j in range(gpus_per_node)])
    per_gpu = GPU_MIB // 10240
    assert per_gpu * 25 <= 100 and per_gpu <= SPLIT
    total, extra = nodes * gpus_per_node * per_gpu, 8
    await create_all(kube, [vgpu_pod(f"v{i:03}", 10240, cores=25) for i in range(total + extra)])
    first = vcsched.start()
    at_kill = await _kill_mid_backlog(kube, first, total, at_least=total // 6)
    second = vcsched.start()
    led = await nothing_lost(kube, expect_bound=total, timeout=600)
    await more_sessions(kube, second, 5)
    led = await nothing_lost(kube, expect_bound=total)
    per = sorted(len(t) for t in led.gpu_used.values())
    print(f"\nvGPU SIGKILL mid-backlog: {at_kill}/{total} bound at the kill; pods per GPU {per}")
    assert per == [per_gpu] * (nodes * gpus_per_node)
    assert alive(second)


# -- 2. the API server restarted under a running scheduler -------------------------------------------------


async def test_apiserver_restart_under_a_running_scheduler(kube: Kube, vcsched: VcschedRunner):
    """The API server stopped for a while (etcd kept) and started again, the scheduler left running: it
    resumes its watches by itself and sees what changed after: a pod deleted (its room is used again),
    new bare pods (the controllers give them PodGroups), a new node (pods that fit only there)."""
    for i in range(4):
        await kube.node(f"n{i}", cpu="4", memory="16Gi")
    await create_all(kube, [bare_pod(f"p{i:02}") for i in range(16)])  # the four nodes' cpu, exactly
    proc = vcsched.start()
    await nothing_lost(kube, expect_bound=16)

    def outage() -> None:  # the scheduler's calls are refused a while: its watches and lists fail
        import time
        time.sleep(3)

    await restart_apiserver(kube.cp, between=outage)
    # at once, while its watches are still backing off: four bound pods go, four new pods need their room
    for i in range(4):
        await delete_bare_pod(kube, f"p{i:02}")
    await create_all(kube, [bare_pod(f"q{i}") for i in range(4)])
    await nothing_lost(kube, expect_bound=16)
    # a node added after the restart: two pods of 4 cpu fit there only
    await kube.node("big", cpu="8", memory="16Gi")
    await create_all(kube, [bare_pod(f"w{i}", cpu="4") for i in range(2)])
    await nothing_lost(kube, expect_bound=18)
    for i in range(2):
        assert (await kube.get(f"/api/v1/namespaces/default/pods/w{i}"))["spec"]["nodeName"] == "big"
    assert alive(proc), "the scheduler exited"
    assert log_lines(proc, "list/watch failed"), "the outage was never seen"


# -- 3. watches expired by an etcd compaction -----------------------------------------------------------------


async def test_watches_expired_by_compaction_relist_and_forget_what_was_deleted(kube: Kube, vcsched: VcschedRunner):
    """Changes the scheduler never got as watch events, then etcd compacted past its resourceVersions: every
    watch it resumes answers 410 Gone, it relists, and its view is the API server's: a node deleted
    meanwhile gets no pod, a pod deleted meanwhile frees its room, a node added meanwhile is used.

    So that no event of those changes reaches it on a connection opened before (the kernel would buffer
    them while it is stopped), it is frozen (SIGSTOP), the API server restarted (its connections die),
    the changes made, the API server restarted again with etcd compacted, and then it resumes (SIGCONT)."""
    await kube.node("n0", cpu="4", memory="16Gi")
    await kube.node("n1", cpu="8", memory="16Gi")
    await create_all(kube, [bare_pod(f"p{i}", node_selector={"kubernetes.io/hostname": "n0"}) for i in range(4)])
    proc = vcsched.start()
    await nothing_lost(kube, expect_bound=4)
    proc.proc.send_signal(signal.SIGSTOP)
    try:
        await restart_apiserver(kube.cp)
        # what it misses: n1 deleted, a pod of the full n0 deleted, a node n2 added, six new pods:
        # one fits n0's freed room, four fill n2, the sixth fits only on n1, which is gone
        await kube.delete("/api/v1/nodes/n1")
        await delete_bare_pod(kube, "p0")
        await kube.node("n2", cpu="4", memory="16Gi")
        await create_all(kube, [bare_pod(f"q{i}") for i in range(6)])
        revision = {}
        await restart_apiserver(kube.cp, between=lambda: revision.setdefault("compacted", kube.cp.compact()))
    finally:
        proc.proc.send_signal(signal.SIGCONT)
    led = await nothing_lost(kube, expect_bound=3 + 5)
    await more_sessions(kube, proc, 5)
    led = await nothing_lost(kube, expect_bound=3 + 5)
    assert not led.orphans, f"pods bound to the deleted node n1: {led.orphans}"
    pending = [p["metadata"]["name"] for p in await pods(kube, "default") if not p["spec"].get("nodeName")]
    assert len(pending) == 1 and pending[0].startswith("q"), pending
    assert log_lines(proc, "watch expired, relisting"), "no watch answered 410 Gone"
    assert alive(proc)
