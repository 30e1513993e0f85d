"""extender on the real API server: ``vcsched run`` (a separate process, with the chart's ClusterRole)
asks a real HTTP extender on loopback (tests/loopback_extender.py) from inside its sessions, which run in
a worker thread while the event loop keeps the watches.  The extender needs no API access of its own:
what it reads comes in the request bodies (the pod as the API server gave it, the node object)."""

from __future__ import annotations

import pytest

from tests.loopback_extender import LoopbackExtender

from .conftest import Kube, VcschedRunner, condition, pod

pytestmark = pytest.mark.asyncio


def extender_conf(url: str) -> str:
    return f"""
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: extender
    arguments:
      extender.urlPrefix: {url}
      extender.predicateVerb: filter
      extender.httpTimeout: 2s
"""


def keep_off_n0(body: dict) -> dict:
    """n0 is refused to every pod; "licensed" pods only may go anywhere else."""
    node, task = body["node"]["Name"], body["task"]
    if node == "n0":
        return {"status": "n0 is drained by the extender", "code": 2}
    if task["Pod"]["metadata"].get("labels", {}).get("licence") != "yes":
        return {"status": "no licence", "code": 3}
    return {}


async def _unschedulable(kube: Kube, name: str, reason: str) -> dict | None:
    p = await kube.pod("default", name)
    c = condition(p, "PodScheduled")
    return p if c and c.get("status") == "False" and reason in (c.get("message") or "") else None


async def test_vcsched_run_asks_a_loopback_extender_which_filters_a_node_away(kube: Kube, vcsched: VcschedRunner):
    await kube.node("n0", cpu="16")  # the emptiest node: nodeorder's first choice without the extender
    await kube.node("n1")
    with LoopbackExtender({"filter": keep_off_n0}) as ext:
        await kube.conf_map(extender_conf(ext.url))
        licensed = pod("licensed") | {"metadata": {"name": "licensed", "namespace": "default",
                                                   "labels": {"licence": "yes"}}}
        await kube.create(licensed)
        await kube.create(pod("unlicensed"))
        vcsched.start()
        await kube.eventually(lambda: kube.bound("default", "licensed"), "licensed bound")
        assert (await kube.pod("default", "licensed"))["spec"]["nodeName"] == "n1"
        await kube.eventually(lambda: _unschedulable(kube, "unlicensed", "no licence"),
                              "unlicensed's PodScheduled condition carries the extender's reason")
        message = condition(await kube.pod("default", "unlicensed"), "PodScheduled")["message"]
        assert "n0 is drained by the extender" in message
        assert not (await kube.pod("default", "unlicensed"))["spec"].get("nodeName")
        asked = ext.bodies("filter")
    # what the extender read: the pod as the API server stored it (its uid), the node object
    bodies = [b for b in asked if b["task"]["Name"] == "licensed"]
    assert {b["node"]["Name"] for b in bodies} == {"n0", "n1"}
    stored = bodies[0]["task"]["Pod"]
    assert stored["metadata"]["uid"] and stored["metadata"]["resourceVersion"]
    assert bodies[0]["task"]["UID"] == stored["metadata"]["uid"]
    assert {b["node"]["Node"]["metadata"]["name"] for b in bodies} == {"n0", "n1"}
