"""Queues on the real API server: bus.volcano.sh Commands close and open a queue (Volcano's queue controller,
run by ``vcsched run`` as shipped), and a closed queue holds its new work back until it is opened again."""

from __future__ import annotations

import pytest

from .conftest import Kube, VcschedRunner, pod, podgroup, queue, queue_allocated

pytestmark = pytest.mark.asyncio

QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"


def command(name: str, action: str, target: dict) -> dict:
    """A Command as ``vcctl queue operate`` makes it: its target an owner reference to the queue."""
    return {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command", "metadata": {"name": name, "namespace": "default"},
            "action": action, "target": {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                         "name": target["metadata"]["name"], "uid": target["metadata"]["uid"]}}


async def state(kube: Kube, name: str, want: str) -> dict | None:
    q = await kube.get(f"{QUEUES}/{name}")
    return q if q and (q.get("status") or {}).get("state") == want else None


async def test_close_and_open_a_queue_through_commands(kube: Kube, vcsched: VcschedRunner):
    await kube.node("n0")
    q1 = await kube.create(queue("q1"))
    await kube.create(podgroup("held", 1, queue="q1"))  # a PodGroup of q1 keeps it Closing
    vcsched.start()
    await kube.eventually(lambda: state(kube, "q1", "Open"), "q1 Open (a queue without state is Open)")
    await kube.create(command("close-q1", "CloseQueue", q1))
    await kube.eventually(lambda: state(kube, "q1", "Closing"), "q1 Closing while a PodGroup is in it")
    # the command is consumed (deleted, so it runs once) and the close recorded
    await kube.eventually(lambda: _no_commands(kube), "the command deleted")
    assert await kube.eventually(lambda: kube.events("default", reason="CloseQueue", name="q1"), "CloseQueue event")
    await kube.delete("/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups/held")
    await kube.eventually(lambda: state(kube, "q1", "Closed"), "q1 Closed once empty")
    # a pod for the closed queue: its PodGroup is made but not admitted
    await kube.create(pod("late", queue="q1"))
    await kube.eventually(lambda: _podgroup_of(kube, "late"), "late's PodGroup")
    # a marker pod for the default queue, created after: once it is bound, sessions have seen both
    await kube.create(pod("marker"))
    await kube.eventually(lambda: kube.bound("default", "marker"), "the marker bound")
    late = await kube.pod("default", "late")
    assert not late["spec"].get("nodeName")
    pg = await _podgroup_of(kube, "late")
    assert (pg.get("status") or {}).get("phase") in (None, "Pending")
    # opened again: the pod is admitted and bound
    await kube.create(command("open-q1", "OpenQueue", q1))
    await kube.eventually(lambda: state(kube, "q1", "Open"), "q1 Open again")
    await kube.eventually(lambda: kube.bound("default", "late"), "late bound once q1 is Open")


async def _no_commands(kube: Kube) -> bool:
    return not await kube.list("/apis/bus.volcano.sh/v1alpha1/namespaces/default/commands")


async def _podgroup_of(kube: Kube, name: str) -> dict | None:
    p = await kube.pod("default", name)
    if p is None:
        return None
    return await kube.podgroup("default", f"podgroup-{p['metadata']['uid']}")


TREE_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: capacity
    enableHierarchy: true
  - name: nodeorder
"""


async def test_a_queue_tree_caps_a_team_and_counts_it_up_the_tree(kube: Kube, vcsched: VcschedRunner):
    """capacity with enableHierarchy on the real API server: eng's capability of 2 CPU holds its leaf
    team-a to two of its three one-CPU pods, and the queue status written through queues/status counts
    them in team-a and in eng, the parent."""
    await kube.conf_map(TREE_CONF)
    await kube.node("n0")
    await kube.create(queue("eng", capability={"cpu": "2"}))
    await kube.create(queue("team-a", parent="eng"))
    for i in range(3):
        await kube.create(pod(f"a{i}", queue="team-a"))
    vcsched.start()
    await kube.eventually(lambda: queue_allocated(kube, "team-a", "2"), "team-a's status.allocated cpu 2")
    await kube.eventually(lambda: queue_allocated(kube, "eng", "2"), "eng's status.allocated cpu 2 (its leaf's)")
    bound = [name for name in ("a0", "a1", "a2") if await kube.bound("default", name)]
    assert len(bound) == 2
    # a marker in the default queue, created after: once it is bound, later sessions have passed the third by
    await kube.create(pod("marker"))
    await kube.eventually(lambda: kube.bound("default", "marker"), "the marker bound")
    assert len([name for name in ("a0", "a1", "a2") if await kube.bound("default", name)]) == 2
