"""No API round trip before the first decision (issue 25): a bare pod's PodGroup predicted in process.

The order defined in scheduler/kube/provisional.py: the pod is decided in its first cycle on the
PodGroup the controller will make, and its Binding goes out only once the controller's create has
answered with that PodGroup; a create that fails, or a PodGroup made otherwise (a conflict), binds
nothing.  kmock holds and fails the creates, which a real server cannot be made to do on cue.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from vcsched.controllers.podgroup import podgroup_for_pod
from vcsched.kube.components import run_components
from vcsched.kube.controllers import ControllerOptions
from vcsched.kube.runtime import RunOptions, Runtime

from .conftest import CONTROLLER_AGENT, FAST, client_for, cluster, eventually
from .conftest import node as kube_node
from .conftest import queue

SCHED = "scheduling.volcano.sh"


def bare_pod(name: str, cpu: str = "1") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulerName": "volcano",
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]},
            "status": {"phase": "Pending"}}


def is_pg_create(r) -> bool:
    return r.method.value == "POST" and r.resource is not None and r.resource.plural == "podgroups"


def is_bind(r) -> bool:
    return r.subresource == "binding"


@contextlib.asynccontextmanager
async def running(api, predict: bool = True, scheduler_agent: str = "vcsched", **ctl):
    """``vcsched run`` with both components, the scheduler predicting bare pods' PodGroups; an hourly
    schedule period, so that every cycle after the first is one a change started."""
    client, ctl_client = client_for(api, agent=scheduler_agent), client_for(api, agent=CONTROLLER_AGENT)
    rt = Runtime(client, RunOptions(**{**FAST, "schedule_period": 3600, "predict_groups": predict}))
    stop = asyncio.Event()
    options = ControllerOptions(**{"requeue_base": 0.01, "requeue_cap": 0.02, **ctl})
    task = asyncio.create_task(run_components(client, ctl_client, rt, stop, options, None, listen=None))
    try:
        await eventually(lambda: rt.sessions >= 1, "the first session")
        yield rt
    finally:
        stop.set()
        code = await asyncio.wait_for(task, 20)
        await client.close()
        await ctl_client.close()
    assert code == 0


@pytest.mark.asyncio
async def test_a_bare_pod_is_decided_before_its_podgroup_exists_and_bound_after_it(api):
    cluster(api, nodes=1)
    gate = asyncio.Event()
    api.fail(is_pg_create, gate=gate)  # the controller's create is held until the test lets it through
    async with running(api) as rt:
        p = api.put(bare_pod("p1"))
        uid = p["metadata"]["uid"]
        await eventually(lambda: uid in rt.feeder.assumed, "p1 decided and assumed on its node")
        assert not api.all(SCHED, "podgroups") and not api.bindings  # decided; nothing written yet
        prediction = rt.feeder.provisional.by_uid[uid]
        gate.set()
        await eventually(lambda: api.bindings, "p1 bound")
        # settled: its timeout's timer is let go, and with it the prediction (else the loop holds it)
        assert prediction.expiry is not None and prediction.expiry.cancelled()
        order = [("create" if is_pg_create(r) else "bind") for r in api.requests if is_pg_create(r) or is_bind(r)]
        assert order == ["create", "bind"]
        binding = next(r for r in api.requests if is_bind(r))
        pg = api.all(SCHED, "podgroups")[0]
        assert binding.data["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == pg["metadata"]["name"]
        assert rt.feeder.provisional.confirmed == 1 and rt.feeder.provisional.refused == 0
        # the status the session decided follows the create; no annotation PATCH (the Binding carried it).
        # Running comes from the next cycle that sees the pod bound: the period's (here started by hand;
        # the create's answer, a prediction that held, starts none)
        await eventually(lambda: uid not in rt.feeder.assumed, "the binding's echo")
        assert rt.trigger.reasons["podgroup given"] == 0
        rt.trigger.poke("the period")
        await eventually(lambda: (api.get(SCHED, "podgroups", "default", pg["metadata"]["name"]) or {})
                         .get("status", {}).get("phase") == "Running", "the PodGroup Running")
        assert not [r for r in api.requests if r.method.value == "PATCH" and r.resource.plural == "pods"
                    and r.subresource is None]


@pytest.mark.asyncio
async def test_the_create_starts_when_the_scheduler_sees_the_pod_not_the_controllers_watch(api):
    """The Binding waits for the PodGroup create, so the create must not wait for the controllers' own
    pod watch to bring the pod (a second stream, decoded after or before the scheduler's): with that
    watch held after its initial list, the bare pod still gets its one PodGroup and its Binding."""
    cluster(api, nodes=1)
    held = asyncio.Event()
    api.fail(lambda r: (r.method.value == "GET" and r.resource is not None and r.resource.plural == "pods"
                        and r.params.get("watch") in ("true", "1")
                        and r.headers.get("User-Agent", "").startswith(CONTROLLER_AGENT)), gate=held, times=100)
    try:
        async with running(api) as rt:
            api.put(bare_pod("p1"))
            await eventually(lambda: api.bindings, "p1 bound")
            assert len([r for r in api.requests if is_pg_create(r)]) == 1
            assert rt.feeder.provisional.confirmed == 1
            held.set()  # the controllers' watch brings the pod now: no second create
            await eventually(lambda: not rt.feeder.provisional.by_uid, "nothing waiting")
            await asyncio.sleep(0.2)
            assert len([r for r in api.requests if is_pg_create(r)]) == 1
    finally:
        held.set()


@pytest.mark.asyncio
async def test_a_podgroup_that_cannot_be_made_binds_nothing(api):
    cluster(api, nodes=1)
    api.fail(is_pg_create, status=500, times=100)
    async with running(api, max_requeue=2) as rt:
        p = api.put(bare_pod("p1"))
        uid = p["metadata"]["uid"]
        await eventually(lambda: uid in rt.feeder.assumed, "p1 decided on its predicted PodGroup")
        await eventually(lambda: rt.feeder.provisional.refused == 1, "the controller gave up")
        await eventually(lambda: uid not in rt.feeder.assumed, "p1 pending again")
        n = rt.sessions
        api.put(bare_pod("other", cpu="100m"))  # more cycles: p1 is not bound by any of them
        await eventually(lambda: rt.sessions > n, "another cycle")
        assert not [b for b in api.bindings if b[1] == "p1"]
        assert "default/podgroup-" + uid not in rt.cache.jobs  # the prediction has left the cache


@pytest.mark.asyncio
async def test_a_podgroup_made_otherwise_first_binds_nothing_on_the_prediction(api):
    """Someone made ``podgroup-<uid>`` with minMember 2 between the pod's creation and the controller's
    create (409): the pod, alone in a gang of two, must not be bound."""
    cluster(api, nodes=1)
    gate = asyncio.Event()
    api.fail(is_pg_create, gate=gate)
    # p1, not bound, gets its group annotation by the PATCH the controller hands to the scheduler in
    # the same process (CacheFeeder.due_groups): a controller's write, granted by CONTROLLER_ACCESS,
    # which the chart binds with the scheduler's whenever both run
    async with running(api, scheduler_agent=CONTROLLER_AGENT) as rt:
        p = api.put(bare_pod("p1"))
        uid = p["metadata"]["uid"]
        await eventually(lambda: uid in rt.feeder.assumed, "p1 decided on its predicted PodGroup")
        other = podgroup_for_pod(p)
        other["metadata"].pop("uid")
        other["spec"]["minMember"] = 2
        api.put(other)
        key = f"default/{other['metadata']['name']}"
        await eventually(lambda: rt.cache.jobs[key].podgroup.min_member == 2, "the other PodGroup watched")
        gate.set()
        await eventually(lambda: rt.feeder.provisional.refused == 1, "the prediction refused")
        await eventually(lambda: uid not in rt.feeder.assumed, "p1 pending again")
        n = rt.sessions
        api.put(bare_pod("other", cpu="100m"))
        await eventually(lambda: rt.sessions > n and api.bindings, "another cycle, which binds `other`")
        assert [b[1] for b in api.bindings] == ["other"]


def test_the_prediction_is_the_controllers_podgroup_for_a_pod_without_owners():
    """Inheriting owners' annotations or not, an owner-less pod's PodGroup is the same: minMember 1."""
    pod = bare_pod("p1")
    pod["metadata"]["uid"] = "u1"
    assert podgroup_for_pod(pod, {}) == podgroup_for_pod(pod, None)
    assert podgroup_for_pod(pod, {})["spec"]["minMember"] == 1


@pytest.mark.asyncio
async def test_no_prediction_while_the_controllers_do_not_run(api):
    """A standby (its controllers wait for the Lease) predicts nothing: its controller would never confirm
    a prediction, and the PodGroup the leader's controller makes meanwhile is the one to decide on."""
    api.put(kube_node("n0"))
    api.put(queue("default"))
    api.put(queue("root"))
    client = client_for(api)
    rt = Runtime(client, RunOptions(**{**FAST, "predict_groups": True}))
    stop = asyncio.Event()
    task = asyncio.create_task(rt.run(stop))
    try:
        p1 = api.put(bare_pod("p1"))
        await eventually(lambda: p1["metadata"]["uid"] in rt.feeder.pods, "p1 watched")
        n = rt.sessions
        await eventually(lambda: rt.sessions >= n + 2, "sessions with p1 in the cache")
        assert rt.feeder.provisional.predicted == 0
        assert f"default/podgroup-{p1['metadata']['uid']}" not in rt.cache.jobs
        assert not api.bindings
    finally:
        stop.set()
        assert await asyncio.wait_for(task, 20) == 0
        await client.close()
