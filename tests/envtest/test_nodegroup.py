"""nodegroup on the real API server: a Queue's ``spec.affinity`` goes through the chart's Queue CRD (its
schema keeps the field, the API server refuses it mistyped) into ``vcsched run``'s sessions, which bind a
queue's pods in its node group only; a queue whose ``volcano.sh/nodegroup-resource-limits`` annotation
does not parse gets its pods' FailedScheduling reason, and the loop runs on."""

from __future__ import annotations

import pytest

from vcsched.kube.api import ApiError

from .conftest import Kube, VcschedRunner, condition, pod, queue

pytestmark = pytest.mark.asyncio

QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"
GROUP = "volcano.sh/nodegroup-name"

NODEGROUP_CONF = """
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
  - name: nodegroup
    arguments: {strict: false}
  - name: nodeorder
"""


def required(*groups: str) -> dict:
    return {"nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(groups)}}


async def _unschedulable(kube: Kube, name: str, reason: str) -> dict | None:
    p = await kube.pod("default", name)
    c = condition(p, "PodScheduled")
    return p if c and c.get("status") == "False" and reason in (c.get("message") or "") else None


async def test_a_queue_runs_in_its_node_group(kube: Kube, vcsched: VcschedRunner):
    await kube.conf_map(NODEGROUP_CONF)
    await kube.node("n0", labels={GROUP: "cpu-pool"})
    await kube.node("n1", labels={GROUP: "gpu-pool"})
    await kube.node("n2")  # no group: only queues without affinity (strict: false), the default queue's marker
    created = await kube.create(queue("gpu", affinity=required("gpu-pool")))
    assert created["spec"]["affinity"] == required("gpu-pool")  # kept by the CRD's schema
    with pytest.raises(ApiError) as refused:
        await kube.create(queue("bad", affinity={"nodeGroupAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": "gpu-pool"}}))
    assert refused.value.status == 422
    await kube.create(queue("broken", affinity=required("gpu-pool")) | {
        "metadata": {"name": "broken", "annotations": {"volcano.sh/nodegroup-resource-limits": '{"gpu-pool": {"cpu":'}}})
    for i in range(2):
        await kube.create(pod(f"g{i}", queue="gpu"))
    await kube.create(pod("b0", queue="broken"))
    vcsched.start()
    for i in range(2):
        await kube.eventually(lambda i=i: kube.bound("default", f"g{i}"), f"g{i} bound")
        assert (await kube.pod("default", f"g{i}"))["spec"]["nodeName"] == "n1"
    await kube.eventually(lambda: _unschedulable(kube, "b0", "node group resource limit annotation invalid"),
                          "b0's PodScheduled condition says why")
    # the loop runs on: a pod of the default queue (no affinity) created after binds on the unlabelled node
    await kube.create(pod("marker"))
    await kube.eventually(lambda: kube.bound("default", "marker"), "the marker bound")
    assert (await kube.pod("default", "marker"))["spec"]["nodeName"] == "n2"
    assert not (await kube.pod("default", "b0"))["spec"].get("nodeName")
