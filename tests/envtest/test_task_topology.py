"""task-topology on the real API server: ``vcsched run`` reads the PodGroup's task-topology annotations and
the pods' ``volcano.sh/task-spec`` from the watches, and its Warning event reaches the API server.

- The design document's example (docs/design/task-topology-plugin.md): ps-0, ps-1, worker-0..3, 1 cpu each,
  affinity ``ps,worker``, anti-affinity ``ps``, nodes of 2, 1 and 4 cpu: ps-0 with worker-0 and worker-2 on
  the 4-cpu node, ps-1 with worker-1 on the 2-cpu node.
- A topology naming a task the job does not have: one Warning event ``InvalidTaskTopology`` on the PodGroup
  with Volcano's message, not one per session; the job is scheduled without topology, the loop runs on.
"""

from __future__ import annotations

import asyncio

import pytest

from .conftest import Kube, VcschedRunner, pod, podgroup

pytestmark = pytest.mark.asyncio

SOON = 20.0
AFFINITY = "volcano.sh/task-topology-affinity"
ANTI_AFFINITY = "volcano.sh/task-topology-anti-affinity"

CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: task-topology
    arguments:
      task-topology.weight: 10
  - name: proportion
"""


async def tf_job(kube: Kube, annotations: dict[str, str]) -> list[str]:
    """PodGroup ``tf`` with ``annotations`` and its six pods, created worker-3 first."""
    group = podgroup("tf", 6)
    group["metadata"]["annotations"] = annotations
    await kube.create(group)
    names = [f"tf-ps-{i}" for i in range(2)] + [f"tf-worker-{i}" for i in range(4)]
    for name in reversed(names):
        task = name.split("-")[1]
        await kube.create(pod(name, cpu="1", memory="128Mi", group="tf", annotations={"volcano.sh/task-spec": task}))
    return names


async def test_the_design_document_example(kube: Kube, vcsched: VcschedRunner):
    await kube.conf_map(CONF)
    for name, cpu in (("node1", "2"), ("node2", "1"), ("node3", "4")):
        await kube.node(name, cpu=cpu)
    names = await tf_job(kube, {AFFINITY: "ps,worker", ANTI_AFFINITY: "ps"})
    vcsched.start()
    placed = {}
    for name in names:
        placed[name] = (await kube.eventually(lambda name=name: kube.bound("default", name), f"{name} bound",
                                              SOON))["spec"]["nodeName"]
    assert [placed[n] for n in ("tf-ps-0", "tf-worker-0", "tf-worker-2")] == ["node3"] * 3
    assert [placed[n] for n in ("tf-ps-1", "tf-worker-1")] == ["node1"] * 2


async def test_a_bad_topology_is_one_warning_event_and_the_job_runs(kube: Kube, vcsched: VcschedRunner):
    await kube.conf_map(CONF)
    await kube.node("n0", cpu="8")
    names = await tf_job(kube, {AFFINITY: "ps,chief"})
    p = vcsched.start()

    async def warned() -> list[dict]:
        return await kube.events("default", reason="InvalidTaskTopology", kind="PodGroup", name="tf")

    events = await kube.eventually(warned, "the warning event", SOON)
    assert [e["type"] for e in events] == ["Warning"]
    assert events[0]["message"].startswith(
        f"metadata.annotations[{AFFINITY}]: task chief do not exist in job <default/tf> (value 'ps,chief')")
    for name in names:
        await kube.eventually(lambda name=name: kube.bound("default", name), f"{name} bound", SOON)
    await kube.create(pod("after"))
    await kube.eventually(lambda: kube.bound("default", "after"), "a pod created afterwards bound", SOON)
    await asyncio.sleep(1.0)  # some ten sessions more: not reported again
    assert [e.get("count") for e in await warned()] == [1]
    assert p.alive()
