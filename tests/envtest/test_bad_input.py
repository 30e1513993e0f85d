"""Bad input on the real API server: what users can get wrong (the scheduler ConfigMap, a PodGroup's queue, a
device plugin's node annotation) never stops the loop, loses nothing, and is named (object and field) in an
event or a log line, as DESIGN.md asks: "Errors users can cause ... give one clear message naming the object
and field and never crash the loop"."""

from __future__ import annotations

import pytest

from .conftest import Kube, VcschedRunner
from .faults_support import (GPU_MIB, REGISTER, VGPU_CONF, VGPU_IDS, alive, bare_pod, conf_map, gpu_node,
                             log_lines, more_sessions, nothing_lost, register_annotation, vgpu_pod)

pytestmark = pytest.mark.asyncio

CONF_MAP = "volcano-scheduler-configmap"
CONF_PATH = f"/api/v1/namespaces/volcano-system/configmaps/{CONF_MAP}"
PGS = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups"


async def _pod(kube: Kube, name: str, ns: str = "default") -> dict | None:
    return await kube.get(f"/api/v1/namespaces/{ns}/pods/{name}")


async def _bound(kube: Kube, name: str) -> dict | None:
    p = await _pod(kube, name)
    return p if p and p["spec"].get("nodeName") else None


async def _events(kube: Kube, ns: str, name: str, reason: str | None = None) -> list[dict]:
    evs = await kube.list(f"/api/v1/namespaces/{ns}/events")
    return [e for e in evs if e["involvedObject"].get("name") == name and (reason is None or e["reason"] == reason)]


async def _conf_refusal(kube: Kube, *needles: str) -> dict | None:
    """The Warning event on the scheduler ConfigMap whose message holds every one of ``needles``."""
    for e in await _events(kube, "volcano-system", CONF_MAP):
        if e["type"] == "Warning" and all(n in e["message"] for n in needles):
            return e
    return None


# -- 5. an invalid scheduler ConfigMap --------------------------------------------------------------------------


async def test_an_invalid_scheduler_conf_is_refused_and_the_last_good_one_kept(kube: Kube, vcsched: VcschedRunner):
    """The good conf enables deviceshare's vGPU (the built-in default does not): a vGPU pod bound with
    volcano.sh/vgpu-ids-new proves which conf is in force.  Broken YAML, then an unknown action: each is
    refused with a Warning event on the ConfigMap naming the key and the field, vGPU pods made after are
    still bound with their devices (the last good conf, not the default), and the loop goes on."""
    await gpu_node(kube, "g0", ["GPU-0", "GPU-1"])
    await kube.create(conf_map(VGPU_CONF))
    proc = vcsched.start()
    await kube.create(vgpu_pod("v0", 10240))
    v0 = await kube.eventually(lambda: _bound(kube, "v0"), "v0 bound under the good conf")
    assert VGPU_IDS in v0["metadata"]["annotations"]

    await kube.patch(CONF_PATH, {"data": {"volcano-scheduler.conf": "actions: [oops"}})
    ev = await kube.eventually(lambda: _conf_refusal(kube, "data[volcano-scheduler.conf]"), "the broken YAML refused")
    assert ev["involvedObject"]["kind"] == "ConfigMap" and ev["involvedObject"]["namespace"] == "volcano-system"
    assert ev["reason"] == "InvalidSchedulerConf" and "YAML" in ev["message"], ev["message"]
    await kube.create(vgpu_pod("v1", 10240))
    await kube.create(bare_pod("c1"))
    v1 = await kube.eventually(lambda: _bound(kube, "v1"), "v1 bound after the broken edit")
    assert VGPU_IDS in v1["metadata"]["annotations"], "the default conf took over, not the last good one"

    await kube.patch(CONF_PATH, {"data": {"volcano-scheduler.conf": VGPU_CONF.replace(
        '"enqueue, allocate, backfill"', '"enqueue, teleport, allocate"')}})
    ev = await kube.eventually(lambda: _conf_refusal(kube, "data[volcano-scheduler.conf]", "teleport"),
                               "the unknown action refused")
    assert "actions" in ev["message"], ev["message"]
    await kube.create(vgpu_pod("v2", 10240))
    v2 = await kube.eventually(lambda: _bound(kube, "v2"), "v2 bound after the unknown action")
    assert VGPU_IDS in v2["metadata"]["annotations"], "the default conf took over, not the last good one"
    assert log_lines(proc, "scheduler conf refused", CONF_MAP)
    await nothing_lost(kube, expect_bound=4)
    assert alive(proc)


async def test_a_scheduler_conf_invalid_at_start_leaves_the_default_in_force(kube: Kube, vcsched: VcschedRunner):
    """The ConfigMap is broken before vcsched starts: a Warning event names it and the field, the built-in
    default conf is in force, and pods are bound; a good edit later takes effect."""
    await gpu_node(kube, "g0", ["GPU-0"])
    await kube.create(conf_map(VGPU_CONF.replace("- name: deviceshare", "- name: nosuchplugin")))
    proc = vcsched.start()
    ev = await kube.eventually(lambda: _conf_refusal(kube, "data[volcano-scheduler.conf]", "nosuchplugin"),
                               "the unknown plugin refused")
    assert ev["reason"] == "InvalidSchedulerConf"
    await kube.create(bare_pod("c0"))
    await kube.eventually(lambda: _bound(kube, "c0"), "c0 bound under the default conf")
    await kube.patch(CONF_PATH, {"data": {"volcano-scheduler.conf": VGPU_CONF}})
    await kube.eventually(lambda: log_lines(proc, "scheduler conf loaded", CONF_MAP),
                          "the good edit loaded")
    await kube.create(vgpu_pod("v0", 10240))
    v0 = await kube.eventually(lambda: _bound(kube, "v0"), "v0 bound under the good conf")
    assert VGPU_IDS in v0["metadata"]["annotations"]
    await nothing_lost(kube, expect_bound=2)
    assert alive(proc)


# -- 6. a PodGroup naming a missing queue ------------------------------------------------------------------------


def _podgroup(name: str, queue: str, min_member: int) -> dict:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": min_member, "queue": queue}}


async def _missing_queue_setup(kube: Kube, vcsched: VcschedRunner):
    await kube.node("n0", cpu="8", memory="16Gi")
    proc = vcsched.start()
    await kube.create(_podgroup("pg-lost", "nosuch", 2))
    for i in range(2):
        await kube.create(bare_pod(f"lost{i}", annotations={"scheduling.k8s.io/group-name": "pg-lost"}))
    for i in range(2):
        await kube.create(bare_pod(f"ok{i}"))
    for i in range(2):
        await kube.eventually(lambda: _bound(kube, f"ok{i}"), f"ok{i} bound beside the lost PodGroup")
    await more_sessions(kube, proc, 5)
    return proc


async def test_a_podgroup_naming_a_missing_queue_waits_and_runs_once_the_queue_exists(kube: Kube,
                                                                                      vcsched: VcschedRunner):
    """Its pods are not bound while the queue is missing (other pods are), and once the queue is made they are."""
    proc = await _missing_queue_setup(kube, vcsched)
    for i in range(2):
        assert not (await _pod(kube, f"lost{i}"))["spec"].get("nodeName")
    await kube.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "nosuch"},
                       "spec": {"weight": 1, "reclaimable": True}})
    for i in range(2):
        await kube.eventually(lambda: _bound(kube, f"lost{i}"), f"lost{i} bound once the queue exists")
    await nothing_lost(kube, expect_bound=4)
    assert alive(proc)


async def test_a_podgroup_naming_a_missing_queue_is_named_with_its_queue(kube: Kube, vcsched: VcschedRunner):
    """An event on the PodGroup, a condition in its status, or a log line: naming default/pg-lost and "nosuch"
    (Volcano's cache snapshot logs "The Queue <nosuch> of Job <default/pg-lost> does not exist, ignore it")."""
    proc = await _missing_queue_setup(kube, vcsched)
    pg = await kube.get(f"{PGS}/pg-lost")
    said = [c.get("message", "") for c in (pg.get("status") or {}).get("conditions") or [] if "nosuch" in
            c.get("message", "")]
    said += [e["message"] for e in await _events(kube, "default", "pg-lost") if "nosuch" in e["message"]]
    said += log_lines(proc, "pg-lost", "nosuch")
    assert said, "nothing names the PodGroup default/pg-lost and its missing queue nosuch"


# -- 7. a garbled device annotation on a node ---------------------------------------------------------------------

GARBLED = {
    "no-separator": "junk",  # not one device segment at all
    "short-segment": "GPU-bad,10,40960:",  # a device segment with 3 of its 6 fields
    "bad-numbers": "GPU-bad,ten,lots,NVIDIA-X,true,hami-core:",  # count and memory not numbers
}


async def _garbled_cluster(kube: Kube, vcsched: VcschedRunner, garble: str):
    await kube.create(conf_map(VGPU_CONF))
    await gpu_node(kube, "g-ok", ["GPU-ok"])
    await gpu_node(kube, "g-bad", ["GPU-bad"], register=GARBLED[garble])
    return vcsched.start()


@pytest.mark.parametrize("garble", sorted(GARBLED))
async def test_a_garbled_vgpu_register_leaves_the_node_and_the_other_gpus_usable(
        kube: Kube, vcsched: VcschedRunner, garble: str):
    """A node whose volcano.sh/node-vgpu-register is junk: the loop goes on, its cpu and memory are still used,
    the other node's GPU is still used, and once the device plugin writes a good annotation its GPU is used
    too (the devices are read again on the node's update).  The vGPU pods are pinned to their node here:
    where an unpinned one may go is the next test's question."""
    proc = await _garbled_cluster(kube, vcsched, garble)
    for i in range(2):
        await kube.create(vgpu_pod(f"v{i}", GPU_MIB // 2, node_selector={"kubernetes.io/hostname": "g-ok"}))
    await kube.create(bare_pod("plain", node_selector={"kubernetes.io/hostname": "g-bad"}))
    await nothing_lost(kube, expect_bound=3, gpu_nodes=["g-ok"])
    await kube.patch("/api/v1/nodes/g-bad", {"metadata": {"annotations": {REGISTER: register_annotation(["GPU-bad"])}}})
    await kube.create(vgpu_pod("fixed", GPU_MIB // 2, node_selector={"kubernetes.io/hostname": "g-bad"}))
    fixed = await kube.eventually(lambda: _bound(kube, "fixed"), "a vGPU pod on g-bad once its annotation is good")
    assert "GPU-bad" in fixed["metadata"]["annotations"][VGPU_IDS]
    await nothing_lost(kube, expect_bound=4)
    assert alive(proc)


@pytest.mark.parametrize("garble", ["no-separator", "short-segment", "bad-numbers"])
async def test_a_garbled_vgpu_register_is_named_and_gets_no_vgpu_pod(kube: Kube, vcsched: VcschedRunner, garble: str):
    """The same node, vGPU pods free to go anywhere: a log line names the node and the annotation, and no vGPU
    pod goes there (Volcano's deviceshare filterNode: "node not initialized with device"): two fill g-ok's
    card, the third stays pending."""
    proc = await _garbled_cluster(kube, vcsched, garble)
    for i in range(3):
        await kube.create(vgpu_pod(f"v{i}", GPU_MIB // 2))
    await kube.create(bare_pod("plain", node_selector={"kubernetes.io/hostname": "g-bad"}))
    await kube.eventually(lambda: _bound(kube, "plain"), "the plain pod bound to g-bad")
    await more_sessions(kube, proc, 5)
    await nothing_lost(kube, expect_bound=3, gpu_nodes=["g-ok"])
    assert alive(proc)
    assert log_lines(proc, "g-bad", REGISTER), f"no log line names the node g-bad and {REGISTER}"
