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
                             create_all, gpu_node, log_lines, more_sessions, nothing_lost, pods, request_counts,
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
