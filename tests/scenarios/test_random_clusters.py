"""Random clusters through ``vcsched simulate``: the ``simulate`` fixture checks that each run places alike
with every task searched node by node, and that no node ends holding more than it has (nor any card).

The hand-written scenarios exercise one feature at a time; these mix them (taints and tolerations, node
selectors, host ports, preferred node affinity, unschedulable nodes, gangs, queues with and without a
capability, a priority class, pods already running) under four confs, so that the shared search's
incremental paths (a changed node's score rising or falling, a leaf leaving or entering the window) meet
each other.  Contended clusters make preempt and reclaim walk their own index of the nodes (24 pods
evicted in 4 of the 20 seeds); vGPU clusters have deviceshare change nodes beside their tasks.  Seeded:
a failure names its seed, and ``random_cluster(random.Random(seed))`` (or ``random_vgpu_cluster``)
gives the input.
"""

from __future__ import annotations

import copy
import random

import pytest
import yaml

from vcsched.conf import DEFAULT_SCHEDULER_CONF

from .conftest import node, podgroup
from .test_deviceshare import A100, T4, deviceshare_conf, gpu_node, vgpu_pod

ACTIONS = 'actions: "enqueue, allocate, backfill"'
PREEMPTING = DEFAULT_SCHEDULER_CONF.replace(ACTIONS, 'actions: "enqueue, allocate, preempt, reclaim, backfill"')
WEIGHTED = DEFAULT_SCHEDULER_CONF.replace("  - name: nodeorder\n  - name: binpack\n", """\
  - name: nodeorder
    arguments:
      leastrequested.weight: 0
      mostrequested.weight: 2
      balancedresource.weight: 3
      nodeaffinity.weight: 2
      tainttoleration.weight: 3
  - name: binpack
    arguments:
      binpack.weight: 5
      binpack.cpu: 3
      binpack.memory: 1
""")
CAPACITY = DEFAULT_SCHEDULER_CONF.replace(ACTIONS, 'actions: "enqueue, allocate, backfill, reclaim"').replace(
    "  - name: proportion\n", "  - name: capacity\n")
assert len({DEFAULT_SCHEDULER_CONF, PREEMPTING, WEIGHTED, CAPACITY}) == 4
CONFS = (None, PREEMPTING, WEIGHTED, CAPACITY)

CPUS = {"100m": 100, "250m": 250, "500m": 500, "1": 1000, "2": 2000, "3": 3000}
MEMORIES = {"128Mi": 128, "1Gi": 1024, "2Gi": 2048, "4Gi": 4096}


def random_cluster(rng: random.Random, contended: bool = False) -> str:
    """``contended``: more pods already running and more pending ones of a higher priority, so that
    preempt and reclaim find victims."""
    docs: list[dict] = []
    zones = ["a", "b", "c"][: rng.randint(1, 3)]
    free: dict[str, list[int]] = {}  # what is left for pods already running: milli-CPU, MiB, pods
    for i in range(rng.randint(3, 40)):
        cpu, mem, pods = rng.choice([2, 4, 8, 16]), rng.choice([4, 8, 16, 32]), rng.choice([3, 10, 110])
        spec: dict = {}
        if rng.random() < 0.15:
            spec["taints"] = [{"key": "dedicated", "value": "x",
                               "effect": rng.choice(["NoSchedule", "PreferNoSchedule"])}]
        if rng.random() < 0.05:
            spec["unschedulable"] = True
        docs.append({"apiVersion": "v1", "kind": "Node",
                     "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}",
                                                             "zone": rng.choice(zones)}},
                     "spec": spec,
                     "status": {"allocatable": {"cpu": str(cpu), "memory": f"{mem}Gi", "pods": str(pods)}}})
        if not spec:
            free[f"n{i}"] = [cpu * 1000, mem * 1024, pods]
    queues = [f"q{i}" for i in range(rng.randint(1, 3))]
    for q in queues:
        spec = {"weight": rng.randint(1, 4), "reclaimable": True}
        if rng.random() < 0.3:
            spec["capability"] = {"cpu": str(rng.randint(4, 64))}
        docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": q},
                     "spec": spec})
    docs.append({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
                 "value": 1000})
    for g in range(rng.randint(1, 25)):
        size = rng.choice([1, 1, 2, 3, 4, 8])
        cpu, mem = rng.choice(list(CPUS)), rng.choice(list(MEMORIES))
        high = rng.random() < (0.4 if contended else 0.2)
        group = {"minMember": rng.randint(1, size), "queue": rng.choice(queues)}
        pod_spec: dict = {"schedulerName": "volcano", "tolerations": [],
                          "containers": [{"name": "main", "image": "busybox",
                                          "resources": {"requests": {"cpu": cpu, "memory": mem}}}]}
        if high:
            group["priorityClassName"] = pod_spec["priorityClassName"] = "high"
        if rng.random() < 0.3:
            pod_spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
        if rng.random() < 0.2:
            pod_spec["nodeSelector"] = {"zone": rng.choice(zones)}
        if rng.random() < 0.1:
            pod_spec["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
        if rng.random() < 0.15:
            pod_spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "preference": {"matchExpressions": [
                    {"key": "zone", "operator": "In", "values": [rng.choice(zones)]}]}}]}}
        running = (rng.random() < (0.7 if contended else 0.2) and not high
                   and "nodeSelector" not in pod_spec and "ports" not in pod_spec["containers"][0])
        docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                     "metadata": {"name": f"g{g}", "namespace": "default"}, "spec": group})
        for t in range(size):
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": f"g{g}-{t}", "namespace": "default",
                                "annotations": {"scheduling.k8s.io/group-name": f"g{g}"}},
                   "spec": copy.deepcopy(pod_spec)}
            fits = [n for n, (c, m, p) in free.items() if c >= CPUS[cpu] and m >= MEMORIES[mem] and p >= 1]
            if running and fits:
                name = rng.choice(fits)
                free[name][0] -= CPUS[cpu]
                free[name][1] -= MEMORIES[mem]
                free[name][2] -= 1
                pod["spec"]["nodeName"] = name
                pod["status"] = {"phase": "Running"}
            docs.append(pod)
    return yaml.safe_dump_all(docs)


@pytest.mark.parametrize("seed", range(40))
def test_a_random_cluster_places_alike_with_either_search(simulate, seed):
    rng = random.Random(seed)
    manifests = random_cluster(rng)
    code, out = simulate(manifests, conf=rng.choice(CONFS))
    assert code == 0, out
    pods = out["pods"].values()
    assert any(p["phase"] == "Running" for p in pods)


@pytest.mark.parametrize("seed", range(20))
def test_a_random_contended_cluster_preempts_alike_with_either_search(simulate, seed):
    rng = random.Random(seed)
    manifests = random_cluster(rng, contended=True)
    code, out = simulate(manifests, conf=rng.choice((PREEMPTING, CAPACITY)))
    assert code == 0, out


def random_vgpu_cluster(rng: random.Random) -> tuple[str, str]:
    """Nodes with one to four HAMi-core cards (or none), pods asking for vGPU memory, cores and cards or
    for CPU only, in gangs; and a deviceshare conf with a random device and node policy."""
    text = ""
    for i in range(rng.randint(2, 20)):
        if rng.random() < 0.25:
            text += node(f"n{i}", cpu=str(rng.choice([4, 8, 16])))
            continue
        cards = [(f"GPU-{i}-{c}", 10, *rng.choice([(15360, T4), (40960, A100)])) for c in range(rng.randint(1, 4))]
        text += gpu_node(f"n{i}", cards)
    for g in range(rng.randint(5, 30)):  # enough CPU asked to fill nodes: a full node must be seen full
        size = rng.choice([1, 1, 2, 4])
        text += podgroup(f"g{g}", rng.randint(1, size))
        limits: dict = {"cpu": rng.choice([1, 2, 4, 8])}
        annotations = {}
        if rng.random() < 0.7:
            limits["volcano.sh/vgpu-memory"] = rng.choice([1000, 4000, 8000, 16000, 30000])
            if rng.random() < 0.3:
                limits["volcano.sh/vgpu-number"] = rng.choice([1, 2])
            if rng.random() < 0.3:
                limits["volcano.sh/vgpu-cores"] = rng.choice([10, 30, 50])
            if rng.random() < 0.15:
                annotations["nvidia.com/use-gputype"] = rng.choice(["t4", "a100"])
        for t in range(size):
            text += vgpu_pod(f"g{g}-{t}", limits, annotations=annotations, group=f"g{g}")
    arguments: dict = {"deviceshare.VGPUEnable": True}
    policy = rng.choice([None, "binpack", "spread"])
    if policy:
        arguments["deviceshare.SchedulePolicy"] = policy
        arguments["deviceshare.ScheduleWeight"] = rng.choice([1, 10])
    conf = deviceshare_conf(arguments)
    if rng.random() < 0.5:  # binpack: the next pod goes where the last went, most often
        conf = conf.replace("  - name: nodeorder\n", "  - name: nodeorder\n  - name: binpack\n")
    return text, conf


@pytest.mark.parametrize("seed", range(30))
def test_a_random_vgpu_cluster_places_alike_with_either_search(simulate, seed):
    manifests, conf = random_vgpu_cluster(random.Random(seed))
    code, out = simulate(manifests, conf=conf)
    assert code == 0, out
    pods = out["pods"].values()
    assert any(p["phase"] == "Running" and p["annotations"].get("volcano.sh/vgpu-ids-new") for p in pods)
