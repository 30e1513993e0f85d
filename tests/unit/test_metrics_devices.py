"""deviceshare's vGPU gauges (spec/devices.md §8): the ledger rebuilt from pod annotations, scraped as text."""

from __future__ import annotations

from prometheus_client import generate_latest

from vcsched.cache import Cache
from vcsched.conf import parse_conf
from vcsched.metrics import Metrics
from vcsched.plugins.deviceshare import device_builder
from vcsched.scheduler import Scheduler

from .test_actions import podgroup, queue

CONF = parse_conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
  - name: deviceshare
    arguments: {deviceshare.VGPUEnable: true}
""")
A100 = "NVIDIA-NVIDIA A100-PCIE-40GB"
EPOCH = 1767225600.0


def gpu_node(name: str) -> dict:
    reg = f"GPU-a,10,40960,{A100},true,hami-core:GPU-b,10,40960,{A100},true,hami-core:"
    return {"metadata": {"name": name, "annotations": {"volcano.sh/node-vgpu-register": reg}},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110", "volcano.sh/vgpu-number": "20",
                                       "volcano.sh/vgpu-memory": "81920", "volcano.sh/vgpu-cores": "200"}}}


def vgpu_pod(name: str, memory: int, *, node_name: str = "", ids: str | None = None) -> dict:
    ann = {"scheduling.k8s.io/group-name": name}
    if ids is not None:
        ann["volcano.sh/vgpu-ids-new"] = ids
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "annotations": ann,
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"schedulerName": "volcano", "nodeName": node_name, "containers": [{"name": "c", "resources": {
                "limits": {"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": str(memory)},
                "requests": {"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": str(memory)}}}]},
            "status": {"phase": "Running" if node_name else "Pending"}}


def scrape(metrics: Metrics) -> list[str]:
    return [line for line in generate_latest(metrics.registry).decode().splitlines()
            if line.startswith("volcano_vgpu_device_")]


def test_vgpu_gauges_follow_the_rebuilt_ledger_not_the_session() -> None:
    cache = Cache(devices=device_builder(CONF, {}))
    cache.add_queue(queue("default"))
    cache.add_node(gpu_node("n1"))
    for name, node, ids in (("old", "n1", "GPU-a,NVIDIA,3000,30:"), ("new", "", None)):
        cache.add_podgroup(podgroup(name))
        cache.add_pod(vgpu_pod(name, 3000 if ids else 1000, node_name=node, ids=ids))
    metrics = Metrics()
    sched = Scheduler(cache, CONF, metrics)
    effects = sched.run_once(now=EPOCH + 10, uid="s1")
    assert any(getattr(e, "name", "") == "new" and getattr(e, "node", "") == "n1" for e in effects)  # bound now

    # what the snapshot held at session open: "old" on GPU-a; the pod bound in this session is not counted
    assert sorted(scrape(metrics)) == sorted([
        'volcano_vgpu_device_memory_limit{NodeName="n1",devID="GPU-a"} 40960.0',
        'volcano_vgpu_device_memory_limit{NodeName="n1",devID="GPU-b"} 40960.0',
        'volcano_vgpu_device_shared_number{NodeName="n1",devID="GPU-a"} 1.0',
        'volcano_vgpu_device_shared_number{NodeName="n1",devID="GPU-b"} 0.0',
        'volcano_vgpu_device_allocated_memory{NodeName="n1",devID="GPU-a"} 3000.0',
        'volcano_vgpu_device_allocated_memory{NodeName="n1",devID="GPU-b"} 0.0',
        'volcano_vgpu_device_allocated_cores{NodeName="n1",devID="GPU-a"} 30.0',
        'volcano_vgpu_device_allocated_cores{NodeName="n1",devID="GPU-b"} 0.0',
        'volcano_vgpu_device_memory_allocation_for_a_certain_pod{NodeName="n1",devID="GPU-a",podName="old"} 3000.0',
        'volcano_vgpu_device_core_allocation_for_a_certain_pod{NodeName="n1",devID="GPU-a",podName="old"} 30.0',
    ])

    # the old pod leaves; the new one comes back from the API with its annotation: the next session shows it
    cache.delete_pod("uid-old")
    cache.add_pod(vgpu_pod("new", 1000, node_name="n1", ids="GPU-b,NVIDIA,1000,0:"))
    sched.run_once(now=EPOCH + 20, uid="s2")
    lines = scrape(metrics)
    assert 'volcano_vgpu_device_shared_number{NodeName="n1",devID="GPU-a"} 0.0' in lines
    assert 'volcano_vgpu_device_allocated_memory{NodeName="n1",devID="GPU-b"} 1000.0' in lines
    assert 'volcano_vgpu_device_memory_allocation_for_a_certain_pod{NodeName="n1",devID="GPU-b",podName="new"} 1000.0' \
        in lines
    assert not any('podName="old"' in line for line in lines)  # a pod's series go when it leaves the GPU

    # the node goes: its GPUs' series go with it
    cache.delete_node("n1")
    sched.run_once(now=EPOCH + 30, uid="s3")
    assert scrape(metrics) == []


def test_no_vgpu_no_device_series() -> None:
    metrics = Metrics()
    cache = Cache()
    cache.add_queue(queue("default"))
    Scheduler(cache, parse_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n'), metrics).run_once(now=EPOCH)
    assert scrape(metrics) == []
