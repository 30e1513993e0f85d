"""``vcsched bench``: the scheduler's speed on a synthetic cluster, in process.

It builds nodes, PodGroups and pods as manifests, feeds them to the same Cache
and runs the same Scheduler as ``simulate``, applying each session's binds to
the cache as a cluster would, until every pod is placed or a cycle places none.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import random
import resource
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

from tqdm import tqdm

from .cache import Cache
from .cli import at_least, positive_number
from .api.quantity import parse_quantity
from .conf import DEFAULT_SCHEDULER_CONF, ConfError, parse_conf
from .framework.effects import Bind, Evict, PodGroupStatus
from .plugins.deviceshare import device_builder
from .scheduler import Scheduler, freeze_heap, session_gc_paused
from .sim.cluster import SIM_EPOCH, rfc3339


@dataclass(slots=True)
class BenchResult:
    nodes: int
    pods: int
    gang_size: int
    pods_placed: int
    cycles: int
    wall_seconds: float
    pods_per_second: float
    session_p50_ms: float
    session_p99_ms: float
    peak_rss_mib: float
    evictions: int = 0
    evictions_per_second: float = 0.0


def _percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def build_cluster(args: argparse.Namespace) -> tuple[list[dict], list[dict], list[dict]]:
    rng = random.Random(args.seed)
    cpus = [c.strip() for c in args.cpu.split(",") if c.strip()]
    mems = [m.strip() for m in args.memory.split(",") if m.strip()]
    nodes = [{
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": f"node-{i:05d}", "labels": {"kubernetes.io/hostname": f"node-{i:05d}"}},
        "status": {"allocatable": {"cpu": args.node_cpu, "memory": args.node_memory, "pods": str(args.node_pods)}},
    } for i in range(args.nodes)]
    gpu_mix = _gpu_mix(args.gpu_request_mix) if getattr(args, "gpus_per_node", 0) > 0 else []
    if gpu_mix:
        for i, n in enumerate(nodes):
            # what volcano-vgpu-device-plugin publishes (spec/devices.md §4.2)
            reg = "".join(f"GPU-{i:05d}-{g},{args.gpu_split},{args.gpu_memory},{args.gpu_model},true,hami-core:"
                          for g in range(args.gpus_per_node))
            n["metadata"]["annotations"] = {"volcano.sh/node-vgpu-register": reg}
            n["status"]["allocatable"].update({
                "volcano.sh/vgpu-number": str(args.gpus_per_node * args.gpu_split),
                "volcano.sh/vgpu-memory": str(args.gpus_per_node * args.gpu_memory),
                "volcano.sh/vgpu-cores": str(args.gpus_per_node * 100),
            })
    plugin_gpus = getattr(args, "device_plugin_gpus", 0)
    for n in nodes if plugin_gpus > 0 else ():  # what NVIDIA's device plugin publishes
        n["status"]["allocatable"]["nvidia.com/gpu"] = str(plugin_gpus)
    npu_chips = getattr(args, "ascend310p_chips", 0)
    if npu_chips > 0:
        chips = ",".join(f"Ascend310P-{c}" for c in range(npu_chips))
        for n in nodes:
            # what MindCluster's device plugin publishes (spec/devices.md §4.4)
            n["metadata"]["labels"].update({"accelerator": "huawei-Ascend310P", "servertype": "Ascend310P-8",
                                            "node.kubernetes.io/npu.chip.name": "310P3"})
            n["metadata"]["annotations"] = {"huawei.com/Ascend310P": chips}
            n["status"]["allocatable"]["huawei.com/npu-core"] = str(npu_chips * 8)
            n["status"]["capacity"] = dict(n["status"]["allocatable"])
    podgroups, pods = [], []
    gang = max(1, min(args.gang_size, args.pods))
    created = SIM_EPOCH
    for j in range((args.pods + gang - 1) // gang):
        size = min(gang, args.pods - j * gang)
        cpu, mem = rng.choice(cpus), rng.choice(mems)
        resources: dict[str, Any] = {"requests": {"cpu": cpu, "memory": mem}}
        if gpu_mix:
            gmem, gcores = rng.choice(gpu_mix)
            resources["limits"] = {"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": str(gmem),
                                   "volcano.sh/vgpu-cores": str(gcores)}
            resources["requests"].update(resources["limits"])
        if plugin_gpus > 0:
            resources["limits"] = {"nvidia.com/gpu": "1"}
            resources["requests"]["nvidia.com/gpu"] = "1"
        labels: dict[str, str] = {}
        if npu_chips > 0:
            cores, extra = rng.choice(ASCEND310P_REQUESTS)
            labels = {"ring-controller.atlas": "ascend-310P", **extra}
            resources["limits"] = {"huawei.com/npu-core": str(cores)}
            resources["requests"].update(resources["limits"])
        name = f"job-{j:05d}"
        created += 1
        podgroups.append({
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "bench", "uid": f"pg-{j}", "creationTimestamp": rfc3339(created)},
            "spec": {"minMember": size, "queue": "default"},
            "status": {"phase": "Pending"},
        })
        for t in range(size):
            pods.append({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {
                    "name": f"{name}-task-{t}", "namespace": "bench", "uid": f"pod-{j}-{t}",
                    "creationTimestamp": rfc3339(created),
                    "annotations": {"scheduling.k8s.io/group-name": name},
                },
                "spec": {
                    "schedulerName": "volcano",
                    "containers": [{"name": "main", "image": "busybox",
                                    "resources": resources}],
                },
                "status": {"phase": "Pending"},
            })
            if labels:
                pods[-1]["metadata"]["labels"] = labels
    return nodes, podgroups, pods


# --preempt: the cluster is full of low-priority pods, one low job per node
PREEMPT_CONF_ACTIONS = 'actions: "enqueue, allocate, preempt, backfill"'
LOW_PRIORITY, HIGH_PRIORITY = 10, 1000


# --queue-tree: capacity with enableHierarchy in place of proportion
QUEUE_TREE_PLUGIN = "  - name: capacity\n    enableHierarchy: true\n"


def queue_tree(leaves: int, nodes: int, node_cpu: str) -> list[dict]:
    """``leaves`` leaf queues under ten departments under root; each leaf deserves an equal part of the
    cluster's CPU, each department the sum of its leaves'."""
    total = parse_quantity(node_cpu) * nodes
    per_leaf = total / leaves
    queues: list[dict] = []
    departments = min(10, leaves)
    for d in range(departments):
        mine = range(d, leaves, departments)
        queues.append({"metadata": {"name": f"dept-{d}", "creationTimestamp": rfc3339(SIM_EPOCH)},
                       "spec": {"weight": 1, "parent": "root", "deserved": {"cpu": f"{int(per_leaf * len(mine) * 1000)}m"}},
                       "status": {"state": "Open"}})
        for leaf in mine:
            queues.append({"metadata": {"name": f"leaf-{leaf:03d}", "creationTimestamp": rfc3339(SIM_EPOCH)},
                           "spec": {"weight": 1, "parent": f"dept-{d}", "deserved": {"cpu": f"{int(per_leaf * 1000)}m"}},
                           "status": {"state": "Open"}})
    return queues


# --task-topology: ps/worker jobs with task-topology annotations, the plugin after predicates
TASK_TOPOLOGY_PLUGIN = "  - name: task-topology\n    arguments:\n      task-topology.weight: 10\n"
TASK_TOPOLOGY_ANNOTATIONS = {
    "volcano.sh/task-topology-affinity": "ps,worker",
    "volcano.sh/task-topology-anti-affinity": "ps",
    "volcano.sh/task-topology-task-order": "ps,worker",
}


def task_topology_jobs(podgroups: list[dict], pods: list[dict]) -> None:
    """Each job becomes a ps/worker job as a TensorFlow job is: its first quarter of pods (one at least)
    ``ps``, the rest ``worker`` (``volcano.sh/task-spec``, annotation and label, as the Job controller
    writes it); its PodGroup asks ps with workers, ps apart, ps first."""
    members: dict[str, list[dict]] = {}
    for p in pods:
        members.setdefault(p["metadata"]["annotations"]["scheduling.k8s.io/group-name"], []).append(p)
    for pg in podgroups:
        pg["metadata"]["annotations"] = dict(TASK_TOPOLOGY_ANNOTATIONS)
        mine = members.get(pg["metadata"]["name"], [])
        ps = max(1, len(mine) // 4)
        for i, p in enumerate(mine):
            role = "ps" if i < ps else "worker"
            p["metadata"]["annotations"]["volcano.sh/task-spec"] = role
            p["metadata"].setdefault("labels", {})["volcano.sh/task-spec"] = role


# --numa POLICY: numa-aware after nodeorder; every node a Numatopology, every pod Guaranteed with the policy
NUMA_AWARE_PLUGIN = "  - name: numa-aware\n"


def numa_cluster(nodes: list[dict], pods: list[dict], policy: str, numa_nodes: int) -> list[dict]:
    """Each node's Numatopology as Volcano's resource exporter writes it for a static CPU manager and the
    topology ``policy``: its CPUs split evenly over ``numa_nodes`` NUMA nodes (one socket each, two
    threads a core), all free.  Each pod becomes Guaranteed (limits equal to its requests, CPU rounded up
    to whole CPUs, as the static CPU manager needs) and asks for ``policy``."""
    topologies = []
    for n in nodes:
        cpus = int(math.ceil(parse_quantity(n["status"]["allocatable"]["cpu"])))
        per = max(1, cpus // numa_nodes)
        detail = {str(c): {"numa": min(c // per, numa_nodes - 1), "socket": min(c // per, numa_nodes - 1),
                           "core": c // 2} for c in range(cpus)}
        topologies.append({
            "apiVersion": "nodeinfo.volcano.sh/v1alpha1", "kind": "Numatopology",
            "metadata": {"name": n["metadata"]["name"]},
            "spec": {"policies": {"CPUManagerPolicy": "static", "TopologyManagerPolicy": policy},
                     "cpuDetail": detail, "numares": {"cpu": {"allocatable": f"0-{cpus - 1}", "capacity": cpus}}},
        })
    for p in pods:
        p["metadata"]["annotations"]["volcano.sh/numa-topology-policy"] = policy
        for c in p["spec"]["containers"]:
            res = c["resources"]
            res["requests"] = dict(res["requests"], cpu=str(max(1, math.ceil(parse_quantity(res["requests"]["cpu"])))))
            res["limits"] = {**res.get("limits", {}), "cpu": res["requests"]["cpu"], "memory": res["requests"]["memory"]}
    return topologies


# --fabric NxM: a two-tier switch tree as HyperNodes, network-topology-aware beside nodeorder;
# --gang-topology MODE: every gang's PodGroup with that networkTopology
NETWORK_TOPOLOGY_PLUGIN = "  - name: network-topology-aware\n"


def parse_fabric(text: str) -> tuple[int, int]:
    """``NxM``: N nodes per leaf switch, M leaf switches per spine (both at least 1)."""
    try:
        per_leaf, per_spine = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"--fabric: expected NODESxLEAVES such as 8x4, got {text!r}") from None
    if per_leaf < 1 or per_spine < 1:
        raise ValueError(f"--fabric: expected counts of at least 1, got {text!r}")
    return per_leaf, per_spine


def parse_gang_topology(text: str) -> dict:
    """``hard:TIER`` or ``soft``: a PodGroup's ``spec.networkTopology``."""
    mode, _, tier = text.partition(":")
    if mode == "soft" and not tier:
        return {"mode": "soft"}
    if mode == "hard" and tier.isdigit() and int(tier) >= 1:
        return {"mode": "hard", "highestTierAllowed": int(tier)}
    raise ValueError(f"--gang-topology: expected hard:TIER (TIER 1 or more) or soft, got {text!r}")


def fabric_hypernodes(nodes: list[dict], per_leaf: int, per_spine: int) -> list[dict]:
    """The nodes in order, ``per_leaf`` to a leaf switch (tier 1, ``leaf-<i>``, members by exact name) and
    ``per_spine`` leaves to a spine (tier 2, ``spine-<j>``); a last leaf or spine may be smaller."""
    def hypernode(name: str, tier: int, kind: str, members: list[str]) -> dict:
        return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
                "spec": {"tier": tier, "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}}
                                                   for m in members]}}
    names = [n["metadata"]["name"] for n in nodes]
    leaves = [hypernode(f"leaf-{i // per_leaf:04d}", 1, "Node", names[i:i + per_leaf])
              for i in range(0, len(names), per_leaf)]
    leaf_names = [h["metadata"]["name"] for h in leaves]
    spines = [hypernode(f"spine-{j // per_spine:04d}", 2, "HyperNode", leaf_names[j:j + per_spine])
              for j in range(0, len(leaf_names), per_spine)]
    return leaves + spines


def load_cache(cache: Cache, nodes: list[dict], podgroups: list[dict], pods: list[dict],
               queues: list[dict] = ()) -> Cache:
    """``cache`` with the bench's priority classes, root and default queues (Open), ``queues``, then the cluster."""
    for name, value in (("low", LOW_PRIORITY), ("high", HIGH_PRIORITY)):
        cache.add_priority_class({"metadata": {"name": name}, "value": value})
    for q in ("root", "default"):
        cache.add_queue({"metadata": {"name": q, "creationTimestamp": rfc3339(SIM_EPOCH)},
                         "spec": {"weight": 1, "reclaimable": q != "root"}, "status": {"state": "Open"}})
    for q in queues:
        cache.add_queue(q)
    for n in nodes:
        cache.add_node(n)
    for pg in podgroups:
        cache.add_podgroup(pg)
    for p in pods:
        cache.add_pod(p)
    return cache


def build_preempt_cluster(args: argparse.Namespace) -> tuple[list[dict], list[dict], list[dict], list[dict]]:
    """Nodes filled with low-priority pods of the preemptors' size, then ``--preempt`` high-priority pods.

    Each node holds one low job (minMember 1) in the ``default`` queue; every high pod is
    its own job, so each must evict one low pod and is bound in the next cycle.

    Returns (nodes, podgroups, pending high-priority pods, running low-priority pods).
    """
    args.pods = args.preempt
    # one size for every pod, the largest asked for, so that CPU or memory (not the pod count) fills nodes
    args.cpu = max((c.strip() for c in args.cpu.split(",") if c.strip()), key=parse_quantity)
    args.memory = max((m.strip() for m in args.memory.split(",") if m.strip()), key=parse_quantity)
    nodes, podgroups, pods = build_cluster(args)
    for pg in podgroups:
        pg["spec"]["priorityClassName"] = "high"
    for p in pods:
        p["spec"]["priorityClassName"] = "high"
        p["spec"]["priority"] = HIGH_PRIORITY
    per_node = int(min(parse_quantity(args.node_cpu) / parse_quantity(args.cpu),
                       parse_quantity(args.node_memory) / parse_quantity(args.memory), args.node_pods))
    low_pods = []
    for i, n in enumerate(nodes):
        name = f"low-{i:05d}"
        podgroups.append({
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "bench", "uid": f"pg-low-{i}", "creationTimestamp": rfc3339(SIM_EPOCH)},
            "spec": {"minMember": 1, "queue": "default", "priorityClassName": "low"},
            "status": {"phase": "Running"},
        })
        for t in range(per_node):
            low_pods.append({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {
                    "name": f"{name}-task-{t}", "namespace": "bench", "uid": f"pod-low-{i}-{t}",
                    "creationTimestamp": rfc3339(SIM_EPOCH),
                    "annotations": {"scheduling.k8s.io/group-name": name},
                },
                "spec": {
                    "schedulerName": "volcano", "nodeName": n["metadata"]["name"],
                    "priorityClassName": "low", "priority": LOW_PRIORITY,
                    "containers": [{"name": "main", "image": "busybox",
                                    "resources": {"requests": {"cpu": args.cpu, "memory": args.memory}}}],
                },
                "status": {"phase": "Running"},
            })
    return nodes, podgroups, pods, low_pods


def _gpu_mix(text: str) -> list[tuple[int, int]]:
    """``MEM[:CORES],...``: per-vGPU memory (MiB) and cores (%) to draw pod requests from."""
    out = []
    for item in text.split(","):
        if item.strip():
            mem, _, cores = item.strip().partition(":")
            out.append((int(mem), int(cores or 0)))
    return out


# the default conf plus deviceshare (vGPU, binpack) for --gpus-per-node
GPU_SCHEDULER_CONF = DEFAULT_SCHEDULER_CONF + """\
  - name: deviceshare
    arguments:
      deviceshare.VGPUEnable: true
      deviceshare.SchedulePolicy: binpack
      deviceshare.ScheduleWeight: 10
"""


# --ascend310p-chips: every 310P vNPU template (spec/devices.md §6.9.3) and whole chips, as
# (npu-core, pod labels); about five cores a pod on average, so 10000 pods ask three times what
# 500 nodes of 4 chips hold, and a node takes one template at a time: most pods stay pending
ASCEND310P_REQUESTS: tuple[tuple[int, dict[str, str]], ...] = (
    (1, {}), (2, {}), (2, {"vnpu-level": "high"}), (4, {}), (4, {"vnpu-level": "high"}),
    (4, {"vnpu-dvpp": "yes"}), (4, {"vnpu-dvpp": "no"}), (8, {}), (16, {}),
)

# the default conf plus deviceshare (MindCluster 310P dynamic vNPU, batch score) for --ascend310p-chips
ASCEND310P_SCHEDULER_CONF = DEFAULT_SCHEDULER_CONF + """\
  - name: deviceshare
    arguments:
      deviceshare.AscendMindClusterVNPUEnable: true
      deviceshare.ScheduleWeight: 10
"""


# --dra-gpus-per-node: Dynamic Resource Allocation's shape of the same cluster: a ResourceSlice of N GPUs
# per node (NVIDIA's DRA driver's attributes), a DeviceClass with a CEL selector, one claim of one GPU per pod
DRA_DRIVER = "gpu.nvidia.com"


def dra_cluster(nodes: list[dict], pods: list[dict], gpus: int) -> tuple[list[dict], list[dict], dict[str, dict]]:
    """(DeviceClasses, ResourceSlices, claims by namespace/name); each pod names its claim."""
    classes = [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRA_DRIVER},
                "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRA_DRIVER}'"}}]}}]
    slices = []
    for n in nodes:
        name = n["metadata"]["name"]
        slices.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{name}-gpus"},
                       "spec": {"driver": DRA_DRIVER, "nodeName": name,
                                "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                                "devices": [{"name": f"gpu-{g}", "attributes": {
                                    "type": {"string": "gpu"}, "productName": {"string": "NVIDIA A100-SXM4-40GB"},
                                    "index": {"int": g}, "driverVersion": {"version": "550.54.15"}},
                                    "capacity": {"memory": {"value": "40Gi"}}} for g in range(gpus)]}})
    claims = {}
    selector = f"device.attributes['{DRA_DRIVER}'].productName.startsWith('NVIDIA A100')"
    for p in pods:
        meta = p["metadata"]
        claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"name": f"{meta['name']}-gpu", "namespace": meta["namespace"], "uid": f"claim-{meta['uid']}"},
                 "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                     "deviceClassName": DRA_DRIVER, "allocationMode": "ExactCount", "count": 1,
                     "selectors": [{"cel": {"expression": selector}}]}}]}}}
        claims[f"{meta['namespace']}/{meta['name']}-gpu"] = claim
        p["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": f"{meta['name']}-gpu"}]
        p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return classes, slices, claims


def run(args: argparse.Namespace) -> BenchResult:
    conf_text = GPU_SCHEDULER_CONF if getattr(args, "gpus_per_node", 0) > 0 else DEFAULT_SCHEDULER_CONF
    if getattr(args, "ascend310p_chips", 0) > 0:
        conf_text = ASCEND310P_SCHEDULER_CONF
    if args.conf:
        with open(args.conf, encoding="utf-8") as f:
            conf_text = f.read()
    elif args.preempt:
        conf_text = PREEMPT_CONF_ACTIONS + conf_text[conf_text.index("\n"):]
    queues: list[dict] = []
    if args.queue_tree and not args.conf:
        conf_text = conf_text.replace("  - name: proportion\n", QUEUE_TREE_PLUGIN)
    if getattr(args, "task_topology", False) and not args.conf:
        conf_text = conf_text.replace("  - name: predicates\n", "  - name: predicates\n" + TASK_TOPOLOGY_PLUGIN, 1)
    if getattr(args, "numa", None) and not args.conf:
        conf_text = conf_text.replace("  - name: nodeorder\n", "  - name: nodeorder\n" + NUMA_AWARE_PLUGIN, 1)
    if getattr(args, "fabric", None) and not args.conf:
        conf_text = conf_text.replace("  - name: nodeorder\n", "  - name: nodeorder\n" + NETWORK_TOPOLOGY_PLUGIN, 1)
    conf = parse_conf(conf_text)
    running: list[dict] = []
    if args.preempt:
        nodes, podgroups, pods, running = build_preempt_cluster(args)
    else:
        nodes, podgroups, pods = build_cluster(args)
    if getattr(args, "task_topology", False):
        task_topology_jobs(podgroups, pods)
    if args.queue_tree:
        queues = queue_tree(args.queue_tree, args.nodes, args.node_cpu)
        leaves = [q["metadata"]["name"] for q in queues if q["metadata"]["name"].startswith("leaf-")]
        for i, pg in enumerate(podgroups):  # jobs round robin over the leaves
            pg["spec"]["queue"] = leaves[i % len(leaves)]
    dra = dra_cluster(nodes, pods, args.dra_gpus_per_node) if getattr(args, "dra_gpus_per_node", 0) > 0 else None
    numatopologies = numa_cluster(nodes, pods, args.numa, args.numa_nodes) if getattr(args, "numa", None) else []
    hypernodes = fabric_hypernodes(nodes, *parse_fabric(args.fabric)) if getattr(args, "fabric", None) else []
    if getattr(args, "gang_topology", None):
        topology = parse_gang_topology(args.gang_topology)
        for pg in podgroups:
            pg["spec"]["networkTopology"] = dict(topology)
    by_key = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in pods}
    pg_by_name = {pg["metadata"]["name"]: pg for pg in podgroups}
    cache = load_cache(Cache(devices=device_builder(conf, {})), nodes, podgroups, running + pods, queues)
    if dra is not None:
        for obj in dra[0]:
            cache.dra.add_device_class(obj)
        for obj in dra[1]:
            cache.dra.add_resource_slice(obj)
        for obj in dra[2].values():
            cache.dra.add_resource_claim(obj)
    for t in numatopologies:
        cache.add_numatopology(t)
    for h in hypernodes:
        cache.add_hypernode(h)
    scheduler = Scheduler(cache, conf)
    freeze_heap()

    def run_cycle(n: int) -> tuple[float, int, int]:
        """Cycle ``n``, its effects applied to the cache as the watches would report them: (milliseconds
        of snapshot and session, pods bound, pods evicted).  Its session and effects are gone when it
        returns."""
        t0 = time.perf_counter()
        ssn, effects = scheduler.run_session(cache.snapshot(), now=SIM_EPOCH + n, uid=f"bench-{n}")
        scheduler.publish(ssn)
        ms = (time.perf_counter() - t0) * 1000
        binds = [e for e in effects if isinstance(e, Bind)]
        evicts = [e for e in effects if isinstance(e, Evict)]
        for e in evicts:  # the evicted pods terminate before the next cycle
            cache.delete_pod(e.uid)
        for b in binds:
            pod = by_key[f"{b.namespace}/{b.name}"]
            for st in b.claims:  # the claims' PreBind status, as the API would hold it
                claim = dra[2][f"{st.namespace}/{st.name}"]
                status = dict(claim.get("status") or {})
                if st.allocation is not None:
                    status["allocation"] = st.allocation
                status["reservedFor"] = list(st.reserved_for)
                claim["status"] = status
                cache.dra.update_resource_claim(claim)
            pod["spec"]["nodeName"] = b.node
            pod["status"]["phase"] = "Running"
            cache.update_pod(pod)
        # PodGroup phases move on as the scheduler wrote them
        for e in effects:
            if isinstance(e, PodGroupStatus):
                pg = pg_by_name[e.name]
                pg["status"] = {"phase": e.phase}
                cache.update_podgroup(pg)
        return ms, len(binds), len(evicts)

    placed, cycles, latencies, evictions = 0, 0, [], 0
    # on a terminal, the pods placed so far (tqdm stays silent when stderr is piped)
    progress = tqdm(total=len(pods), unit="pod", disable=None, leave=False)
    started = time.perf_counter()
    while placed < len(pods) and cycles < args.max_cycles:
        # the collector resumes once the session and its effects are gone, as in ``vcsched run``
        # (runtime.Runtime.run_session): it never walks them
        with session_gc_paused():
            ms, bound, evicted = run_cycle(cycles)
        # The collector's first walk over what the cycle left alive (the bound pods' new tasks, the
        # PodGroups' new versions, the metrics' job records), inside the window at every size.  Left to
        # GC_THRESHOLDS it came as soon as the collector resumed after a cycle of 5,000 nodes / 50,000
        # pods, and after the clock had stopped for one of 1,000 / 10,000: the larger run paid for its
        # survivors and the smaller not (issue 22).
        gc.collect(0)
        latencies.append(ms)
        cycles += 1
        evictions += evicted
        placed += bound
        progress.update(bound)
        if not bound and not evicted and cycles > 1:
            break
    wall = time.perf_counter() - started
    progress.close()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return BenchResult(
        nodes=args.nodes, pods=len(pods), gang_size=args.gang_size, pods_placed=placed, cycles=cycles,
        wall_seconds=round(wall, 3), pods_per_second=round(placed / wall, 1) if wall else 0.0,
        session_p50_ms=round(_percentile(latencies, 50), 1), session_p99_ms=round(_percentile(latencies, 99), 1),
        peak_rss_mib=round(rss, 1),
        evictions=evictions, evictions_per_second=round(evictions / wall, 1) if wall else 0.0,
    )


def bench(args: argparse.Namespace) -> int:
    if args.trace is not None and args.apiserver:
        print("vcsched bench: --trace and --apiserver are two benches; choose one", file=sys.stderr)
        return 2
    if args.trace is not None:
        from .trace import run_trace

        return run_trace(args)
    if args.policy or args.plot or args.shuffle or args.tie_break:
        print("vcsched bench: --policy, --plot, --shuffle and --tie-break need --trace", file=sys.stderr)
        return 2
    # --pods is a count here (a task list with --trace)
    raw = args.pods or ["10000"]
    try:
        if len(raw) != 1:
            raise ValueError
        args.pods = int(raw[0])
    except ValueError:
        print(f"vcsched bench: --pods: expected one integer without --trace, got {' '.join(raw)}", file=sys.stderr)
        return 2
    if args.pods < 1:
        print(f"vcsched bench: --pods: expected at least 1, got {args.pods}", file=sys.stderr)
        return 2
    if args.apiserver:
        from .kube.apibench import run_apiserver_bench

        return run_apiserver_bench(args)
    if args.task_topology and args.gang_size < 2:
        print("vcsched bench: --task-topology: expected --gang-size of at least 2 (a ps and a worker per job)",
              file=sys.stderr)
        return 2
    if args.ascend310p_chips and args.gpus_per_node > 0:
        print("vcsched bench: --ascend310p-chips: not with --gpus-per-node", file=sys.stderr)
        return 2
    try:
        if getattr(args, "fabric", None):
            parse_fabric(args.fabric)
        if getattr(args, "gang_topology", None):
            if not getattr(args, "fabric", None):
                raise ValueError("--gang-topology: needs --fabric (the HyperNodes the jobs keep to)")
            parse_gang_topology(args.gang_topology)
    except ValueError as e:
        print(f"vcsched bench: {e}", file=sys.stderr)
        return 2
    try:
        res = run(args)
    except (ConfError, OSError) as e:
        print(f"vcsched bench: {e}", file=sys.stderr)
        return 2
    if args.output == "json":
        print(json.dumps(asdict(res), sort_keys=True))
    else:
        for k, v in asdict(res).items():
            print(f"{k:<16} {v}")
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser("bench", help="measure scheduling speed on a synthetic in-memory cluster, or placement "
                                     "quality on the Alibaba GPU trace (--trace)")
    p.add_argument("--trace", metavar="DIR",
                   help="replay the Alibaba GPU trace (cluster-trace-gpu-v2023) in DIR; see scheduler/trace.py")
    p.add_argument("--policy", action="append", choices=("binpack", "spread", "fragmentation", "binpack+pairscore",
                                                          "binpack+preferred", "fragmentation+preferred"),
                   help="with --trace: a deviceshare.SchedulePolicy to replay, +TopologyPolicy (repeatable; default "
                        "all three, with --interconnect binpack, binpack+pairscore, fragmentation, "
                        "fragmentation+preferred)")
    p.add_argument("--interconnect", action="store_true",
                   help="with --trace: GPUs in NVLink groups (HAMi pair scores; 8-GPU nodes 2 x 4) and a report of "
                        "the multi-GPU tasks placed inside one group (issue 24)")
    p.add_argument("--plot", metavar="FILE.png", help="with --trace: plot allocated share against arrived demand")
    p.add_argument("--shuffle", action="store_true",
                   help="with --trace: submit the task list in a seeded random order (the FGD paper's "
                        "experiments), not in creation order")
    p.add_argument("--tie-break", choices=("random", "first"),
                   help="with --trace: among nodes of equal best score, take one at random (seeded), as "
                        "Volcano does (the default), or the first in search order, as vcsched's scheduler does")
    p.add_argument("--sessions-per-step", type=at_least(1), default=1,
                   help="with --trace: scheduling sessions per 10%% step of arrived demand")
    p.add_argument("--apiserver", action="store_true",
                   help="on a real kube-apiserver from $KUBEBUILDER_ASSETS: bare pending pods bound by `vcsched run` "
                        "and by the upstream kube-scheduler, each on a fresh control plane (see scheduler/kube/apibench.py)")
    p.add_argument("--scheduler", action="append", choices=("vcsched", "kube-scheduler"),
                   help="with --apiserver: which schedulers to run (repeatable; default both)")
    p.add_argument("--timeout", type=positive_number, default=1800.0,
                   help="with --apiserver: give up on a run after SECONDS")
    p.add_argument("--log-dir", help="with --apiserver: keep the schedulers' logs here")
    p.add_argument("--latency", action="store_true",
                   help="with --apiserver: create → bound latency at a steady arrival rate (--rate, --duration), "
                        "p50/p90/p99/max beside kube-scheduler's; --gang-backlog N adds a gang placed meanwhile")
    p.add_argument("--rate", type=positive_number, default=50.0,
                   help="with --latency: pods created per second (default 50)")
    p.add_argument("--duration", type=positive_number, default=20.0,
                   help="with --latency: seconds of arrivals (default 20)")
    p.add_argument("--gang-backlog", type=at_least(0), default=0, metavar="N",
                   help="with --latency: a PodGroup of N members (minMember N) created as the arrivals start")
    p.add_argument("--vcsched-arg", action="append", metavar="ARG",
                   help="with --apiserver --latency: an extra `vcsched run` argument (repeatable)")
    p.add_argument("--nodes", type=at_least(1), default=1000)
    p.add_argument("--node-cpu", default="32")
    p.add_argument("--node-memory", default="128Gi")
    p.add_argument("--node-pods", type=at_least(1), default=110)
    p.add_argument("--pods", action="append",
                   help="number of pods (default 10000); with --trace: a task list FILE or a variant name "
                        "(default, multigpu50, gpushare100, gpuspec33), repeatable")
    p.add_argument("--gang-size", type=at_least(1), default=1, help="pods per job (minMember = job size)")
    p.add_argument("--cpu", default="250m,500m,1,2", help="comma-separated CPU requests to draw from")
    p.add_argument("--memory", default="512Mi,1Gi,2Gi,4Gi", help="comma-separated memory requests to draw from")
    p.add_argument("--gpus-per-node", type=at_least(0), default=0,
                   help="vGPUs: GPUs per node (hami-core); each pod then asks one fractional vGPU")
    p.add_argument("--gpu-model", default="NVIDIA-NVIDIA A100-PCIE-40GB", help="GPU type in the register annotation")
    p.add_argument("--gpu-memory", type=at_least(1), default=40960, help="MiB per GPU")
    p.add_argument("--gpu-split", type=at_least(1), default=10, help="deviceSplitCount: pods per GPU")
    p.add_argument("--gpu-request-mix", default="2048:10,4096:20,8192:25,10240:0",
                   help="comma-separated MEM[:CORES] per-pod vGPU requests to draw from")
    p.add_argument("--ascend310p-chips", type=at_least(0), default=0, metavar="N",
                   help="Ascend 310P: N chips of 8 cores per node (MindCluster annotations); each pod then asks a "
                        "310P vNPU template or whole chips, with dynamic vNPU and ScheduleWeight 10")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-cycles", type=at_least(0), default=20,
                   help="stop after N cycles; 0 builds the cluster and the scheduler and runs none (what a "
                        "profiler counts outside the timed window, to subtract)")
    p.add_argument("--preempt", type=at_least(0), default=0, metavar="N",
                   help="preemption shape: fill every node with low-priority pods (of the largest --cpu and --memory), "
                        "then N high-priority pods of that size arrive and must preempt (--pods is ignored)")
    p.add_argument("--queue-tree", type=at_least(0), default=0, metavar="N",
                   help="jobs round robin over N leaf queues under ten departments, scheduled by capacity with "
                        "enableHierarchy in place of proportion (each leaf deserves an equal part of the CPU)")
    p.add_argument("--task-topology", action="store_true",
                   help="ps/worker jobs (a quarter ps) whose PodGroups carry task-topology annotations (ps with "
                        "workers, ps apart, ps first), with the task-topology plugin (weight 10) beside predicates; "
                        "needs --gang-size 2 or more")
    p.add_argument("--dra-gpus-per-node", type=at_least(0), default=0, metavar="N",
                   help="Dynamic Resource Allocation: a ResourceSlice of N GPUs per node, a DeviceClass with a CEL "
                        "selector, and each pod a ResourceClaim of one GPU with a selector of its own")
    p.add_argument("--device-plugin-gpus", type=at_least(0), default=0, metavar="N",
                   help="the same shape with a device plugin: nvidia.com/gpu N per node, each pod asking 1")
    p.add_argument("--numa", choices=("none", "best-effort", "restricted", "single-numa-node"), metavar="POLICY",
                   help="numa-aware on: every node a Numatopology (static CPU manager, topology policy POLICY, "
                        "--numa-nodes NUMA nodes), every pod Guaranteed (CPU rounded up to whole CPUs) asking POLICY")
    p.add_argument("--numa-nodes", type=at_least(1), default=2, metavar="N",
                   help="with --numa: NUMA nodes per node (default 2)")
    p.add_argument("--fabric", metavar="NxM",
                   help="a two-tier switch tree as HyperNodes: N nodes per leaf switch (tier 1), M leaves per spine "
                        "(tier 2), with network-topology-aware beside nodeorder")
    p.add_argument("--gang-topology", metavar="MODE",
                   help="with --fabric: every job's PodGroup with networkTopology MODE, hard:TIER (highestTierAllowed "
                        "TIER) or soft")
    p.add_argument("--conf", help="a volcano-scheduler.conf file (default: the built-in one)")
    p.add_argument("-o", "--output", choices=("table", "json"), default="table")
    p.set_defaults(run=bench)
