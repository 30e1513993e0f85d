"""Leader election on a Lease: one leader schedules, a standby takes over when the lease expires."""

from __future__ import annotations

import pytest

from .conftest import cluster, eventually

pytestmark = pytest.mark.asyncio


def lease(api):
    return api.get("coordination.k8s.io", "leases", "volcano-system", "vcsched")


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
