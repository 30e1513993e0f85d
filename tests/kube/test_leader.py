"""Leader election on a Lease: one leader schedules, a standby takes over when the lease expires."""

from __future__ import annotations

import pytest

from .conftest import cluster, eventually, pod, podgroup

pytestmark = pytest.mark.asyncio


def lease(api):
    return api.get("coordination.k8s.io", "leases", "volcano-system", "vcsched")


async def test_leadership_hands_over_when_the_leader_stops_renewing(api, start):
    cluster(api)
    a = await start(leader_elect=True, identity="a", agent="vcsched-a")
    await eventually(lambda: a.elector.leading.is_set(), "a leads")
    b = await start(leader_elect=True, identity="b", agent="vcsched-b")
    await eventually(lambda: b.synced.is_set(), "b synced")
    spec = lease(api)["spec"]
    assert spec["holderIdentity"] == "a" and spec["leaseTransitions"] == 0
    assert spec["leaseDurationSeconds"] == 1 and spec["acquireTime"] and spec["renewTime"]
    api.put(podgroup("pg1"))
    api.put(pod("p1", "pg1"))
    await eventually(lambda: api.bindings, "the leader binds")
    assert b.sessions == 0  # the standby never ran a session
    # the leader's renewals now fail: it steps down at its renew deadline, b takes over after the lease
    api.fail(lambda r: r.resource is not None and r.resource.plural == "leases"
             and r.headers.get("User-Agent") == "vcsched-a", status=500, times=10**6)
    code = await a.task
    assert code == 1 and a.elector.lost.is_set()
    await eventually(lambda: b.elector.leading.is_set(), "b leads")
    spec = lease(api)["spec"]
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
    api.put(pod("p2", "pg1"))
    await eventually(lambda: len(api.bindings) == 2, "the new leader binds")
    binds = [r for r in api.requests if r.subresource == "binding"]
    assert [r.headers.get("User-Agent") for r in binds] == ["vcsched-a", "vcsched-b"]


async def test_a_stopped_leader_releases_the_lease(api, start):
    cluster(api)
    a = await start(leader_elect=True, identity="a")
    await eventually(lambda: a.elector.leading.is_set(), "a leads")
    b = await start(leader_elect=True, identity="b", lease_duration=30.0, renew_deadline=20.0)
    await eventually(lambda: b.synced.is_set(), "b synced")
    a.stop_event.set()
    assert await a.task == 0
    assert lease(api)["spec"]["holderIdentity"] in ("", "b")
    # without the release b would wait out a's lease; a released one is taken at b's next try
    await eventually(lambda: b.elector.leading.is_set(), "b leads")
    assert lease(api)["spec"]["holderIdentity"] == "b"


async def test_two_candidates_racing_for_a_lease_do_not_both_win(api):
    from .conftest import client_for
    from vcsched.kube.leader import LeaderElector
    from vcsched.kube.api import ApiError

    ca, cb = client_for(api), client_for(api)
    try:
        a = LeaderElector(ca, "volcano-system", "vcsched", "a", lease_duration=1.0, renew_deadline=0.5, retry_period=0.1)
        b = LeaderElector(cb, "volcano-system", "vcsched", "b", lease_duration=1.0, renew_deadline=0.5, retry_period=0.1)
        assert await a.try_acquire_or_renew()
        # the lease is released: both see it free, both try to take it with the same resourceVersion
        api.update("coordination.k8s.io", "leases", "volcano-system", "vcsched", {"spec": {"holderIdentity": ""}})
        stale = lease(api)
        assert await b.try_acquire_or_renew()
        # a's PUT carries the resourceVersion b already replaced: refused with 409
        body = {**stale, "spec": {**stale["spec"], "holderIdentity": "a"}}
        with pytest.raises(ApiError) as err:
            await ca.request("PUT", "/apis/coordination.k8s.io/v1/namespaces/volcano-system/leases/vcsched", body=body)
        assert err.value.status == 409 and lease(api)["spec"]["holderIdentity"] == "b"
    finally:
        await ca.close()
        await cb.close()
