"""``vcsched bench --trace DIR``: replay the Alibaba GPU trace ("openb", cluster-trace-gpu-v2023) through
the real scheduler and measure placement quality (spec/devices.md §4.2, §6.3; issue 7).

The replay follows the FGD paper (Weng et al., USENIX ATC'23, "Beware of Fragmentation"):

- Nodes come from ``openb_node_list_gpu_node.csv``.  Each GPU is published as a vGPU device of its
  model, in the register annotation volcano-vgpu-device-plugin writes (hami-core, spec §4.2), with the
  allocatable ``volcano.sh/vgpu-*`` resources it advertises.
- Tasks come in creation order, without departures; when the list runs out it is sampled again
  (uniformly, with replacement, seeded) until the arrived GPU demand reaches 130% of capacity.
  ``--shuffle`` submits the list in a seeded random order instead, as the paper's experiments do (its
  simulator's run scripts pass ``--shuffle-pod=true``), so that results compare with its published ones.
  ``num_gpu > 1``: whole GPUs (``vgpu-number: n``, ``vgpu-cores: 100``, which needs untouched cards);
  ``num_gpu == 1``: ``vgpu-cores = gpu_milli / 10`` and the same share of the card's memory as
  ``vgpu-memory-percentage`` (the cards' sizes differ, so a percentage is the one request that means
  "the same share" on any model); ``gpu_spec`` → ``nvidia.com/use-gputype``; CPU and memory as given.
  Every task is its own job (a PodGroup of one).
- Nodes of equal best score are told apart as Volcano tells them apart: one is drawn at random (seeded),
  ``util.SelectBestNodeAndScore``.  Volcano's binpack scores a node by the cards a task would take, not by
  the node, so every node with an empty card ties for a task that needs one; the draw then scatters
  tasks over the nodes.  ``--tie-break first`` replays with vcsched's own rule (the first node in search
  order, which over the whole node list packs nodes in list order) instead.
- Submissions are batched: one scheduling session per 10% step of arrived demand (``--sessions-per-step``
  splits a step further).  A task the session cannot place is failed for good, as in the paper.
- After each step: allocated GPU share, unallocated GPUs, failed tasks, and the FGD fragmentation of
  the free GPU capacity under the trace's task distribution (plugins/deviceshare/fragmentation.py).

GPU memory per model (MiB in the register annotation).  The trace names the models; G1, G2 and G3 are
undisclosed internal models, assumed here to be 32 GiB cards.  Every trace task asks for memory as a
percentage of the card, so these sizes change no placement; they only make the annotation real.
"""

from __future__ import annotations

import csv
import json
import os
import random
import sys
import time
from bisect import bisect_left, insort
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from tqdm import tqdm

from .cache import Cache
from .conf import ConfError, SchedulerConfiguration, parse_conf
from .framework.effects import Bind
from .framework.registry import action_classes, plugin_classes
from .framework.session import NodesToFind, SchedulerState, Session
from .plugins.deviceshare import device_builder
from .plugins.deviceshare.config import FRAGMENTATION, SCHEDULE_POLICY, TOPOLOGY_POLICY, VGPU_ENABLE
from .plugins.deviceshare.config import DeviceShareArgs
from .plugins.deviceshare.fragmentation import FragmentationModel, TaskShape
from .sim.cluster import SIM_EPOCH, rfc3339

GIB = 1024
# MiB per GPU model; G1/G2/G3 are undisclosed (assumed 32 GiB, see the module docstring)
GPU_MEMORY_MIB = {
    "T4": 16 * GIB, "P100": 16 * GIB, "V100M16": 16 * GIB, "V100M32": 32 * GIB, "A10": 24 * GIB,
    "G1": 32 * GIB, "G2": 32 * GIB, "G3": 32 * GIB,
}
# deviceSplitCount: tasks one GPU may hold.  The smallest trace share is 5% (gpu_milli 50), so 100
# slots never bind before compute does; the paper's simulator has no slot limit either.
SPLIT_COUNT = 100
# pods per node: the paper's simulator has no pod limit
NODE_PODS = 1000
NODE_FILE = "openb_node_list_gpu_node.csv"
POD_FILE = "openb_pod_list_{}.csv"
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
MILLI = 1000
TARGET_PERCENT = 130
STEP_PERCENT = 10
NAMESPACE = "trace"
POLICIES = ("binpack", "spread", FRAGMENTATION)
# ``--interconnect`` (issue 24): the policies compared, "SCHEDULE+TOPOLOGY" being deviceshare.SchedulePolicy
# and deviceshare.TopologyPolicy: Volcano's binpack (no topology), a HAMi-style pair score (HAMi's rule on
# top of binpack), today's fragmentation policy, and vcsched's (fragmentation with topology preferred)
INTERCONNECT_POLICIES = ("binpack", "binpack+pairscore", FRAGMENTATION, "fragmentation+preferred")
# --interconnect: NVLink groups by GPUs per node (8-GPU servers as 2 x 4, 4 as 2 x 2, 2 as one pair);
# HAMi's pair scores: 4 NVLinks in a group (400), cross-socket PCIe between groups (10)
NVLINK_GROUP = {8: 4, 4: 2, 2: 2}
NVLINK_SCORE = 400
PCIE_SCORE = 10
DEVICE_CONFIG_MAP = "kube-system/volcano-vgpu-device-config"
# the device ConfigMap the replay runs with: Volcano's resource names plus the percentage resource
DEVICE_CONFIG = """\
nvidia:
  resourceCountName: volcano.sh/vgpu-number
  resourceMemoryName: volcano.sh/vgpu-memory
  resourceCoreName: volcano.sh/vgpu-cores
  resourceMemoryPercentageName: volcano.sh/vgpu-memory-percentage
"""

# The replay's scheduler configuration: Volcano's default actions and ordering plugins, predicates (it
# runs device allocation), and deviceshare as the only node scorer, so that the policies differ in
# nothing else.  ``{policy}`` is filled per run.
TRACE_CONF = """\
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: predicates
  - name: deviceshare
    arguments:
      deviceshare.VGPUEnable: true
      deviceshare.SchedulePolicy: {policy}
      deviceshare.ScheduleWeight: 10
"""


class TraceError(ValueError):
    """Bad trace input: the message names the file, the line and the field."""


@dataclass(slots=True, frozen=True)
class TraceNode:
    name: str
    milli_cpu: int
    memory_mib: int
    gpus: int
    model: str


@dataclass(slots=True, frozen=True)
class TraceTask:
    name: str
    milli_cpu: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int  # share of one GPU for num_gpu == 1
    gpu_spec: tuple[str, ...]  # allowed models, empty: any
    creation: int

    @property
    def gpu_demand(self) -> int:
        """GPU demand in thousandths of a GPU."""
        if self.num_gpu > 1:
            return self.num_gpu * MILLI
        return self.gpu_milli if self.num_gpu == 1 else 0

    def shape(self) -> TaskShape:
        if self.num_gpu == 0:
            return TaskShape(self.milli_cpu, self.memory_mib * 2**20, 0, 0, 0, 0, None, None)
        share = 100 if self.num_gpu > 1 else self.gpu_milli // 10
        types = tuple(s.upper() for s in self.gpu_spec) or None
        return TaskShape(self.milli_cpu, self.memory_mib * 2**20, self.num_gpu, share, share, 0, types, None)


# -- reading the trace ----------------------------------------------------------------------------


def _int(path: str, line: int, row: dict[str, str], col: str, lo: int = 0, hi: int | None = None) -> int:
    raw = (row.get(col) or "").strip()
    try:
        v = int(raw)
    except ValueError:
        raise TraceError(f"{path}:{line}: {col}: expected an integer, got {raw!r}") from None
    if v < lo or (hi is not None and v > hi):
        bound = f"between {lo} and {hi}" if hi is not None else f">= {lo}"
        raise TraceError(f"{path}:{line}: {col}: expected {bound}, got {v}")
    return v


def _rows(path: str, required: tuple[str, ...]):
    try:
        f = open(path, encoding="utf-8", newline="")
    except OSError as e:
        raise TraceError(f"{path}: {e.strerror}") from None
    with f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        missing = [c for c in required if c not in header]
        if missing:
            raise TraceError(f"{path}:1: missing column(s) {', '.join(missing)} (header: {','.join(header)})")
        for row in reader:
            if None in row or any(v is None for v in row.values()):
                raise TraceError(f"{path}:{reader.line_num}: expected {len(header)} fields")
            yield reader.line_num, row


def read_nodes(path: str) -> list[TraceNode]:
    nodes = []
    for line, row in _rows(path, NODE_COLUMNS):
        name = row["sn"].strip()
        if not name:
            raise TraceError(f"{path}:{line}: sn: empty node name")
        gpus = _int(path, line, row, "gpu")
        model = row["model"].strip()
        if gpus and model not in GPU_MEMORY_MIB:
            raise TraceError(f"{path}:{line}: model: unknown GPU model {model!r} "
                             f"(known: {', '.join(sorted(GPU_MEMORY_MIB))})")
        nodes.append(TraceNode(name, _int(path, line, row, "cpu_milli", 1), _int(path, line, row, "memory_mib", 1),
                               gpus, model))
    if not nodes:
        raise TraceError(f"{path}: no nodes")
    return nodes


def read_tasks(path: str) -> list[TraceTask]:
    """The task list in creation order (file order where there is no creation_time)."""
    tasks = []
    for line, row in _rows(path, POD_COLUMNS):
        name = row["name"].strip()
        if not name:
            raise TraceError(f"{path}:{line}: name: empty task name")
        num_gpu = _int(path, line, row, "num_gpu")
        gpu_milli = _int(path, line, row, "gpu_milli", 0, MILLI)
        if num_gpu == 1 and gpu_milli == 0:
            raise TraceError(f"{path}:{line}: gpu_milli: a task with num_gpu 1 needs gpu_milli > 0")
        if num_gpu == 0 and gpu_milli:
            raise TraceError(f"{path}:{line}: gpu_milli: {gpu_milli} for a task with num_gpu 0")
        spec = tuple(s.strip() for s in (row.get("gpu_spec") or "").split("|") if s.strip())
        creation = _int(path, line, row, "creation_time") if (row.get("creation_time") or "").strip() else 0
        tasks.append(TraceTask(name, _int(path, line, row, "cpu_milli"), _int(path, line, row, "memory_mib"),
                               num_gpu, gpu_milli, spec, creation))
    if not tasks:
        raise TraceError(f"{path}: no tasks")
    tasks.sort(key=lambda t: t.creation)  # stable: file order among equal times
    return tasks


def pod_file(trace_dir: str, pods: str | None) -> str:
    """``--pods``: a file, or a variant name of the trace (default, multigpu50, gpushare100, gpuspec33)."""
    if pods is None:
        return os.path.join(trace_dir, POD_FILE.format("default"))
    if os.path.exists(pods) or os.sep in pods or pods.endswith(".csv"):
        return pods
    return os.path.join(trace_dir, POD_FILE.format(pods))


# -- manifests ------------------------------------------------------------------------------------


def gpu_type(model: str) -> str:
    """The register TYPE: "NVIDIA-" + the product name; the trace's model names stand for the product."""
    return f"NVIDIA-{model}"


def nvlink_scores(n: TraceNode) -> str | None:
    """``hami.io/node-nvidia-score`` for the node's GPUs as HAMi's device plugin writes it (``--interconnect``)."""
    group = NVLINK_GROUP.get(n.gpus)
    if group is None:
        return None
    uuids = [f"GPU-{n.name}-{g}" for g in range(n.gpus)]
    return json.dumps([{"uuid": a, "score": {b: NVLINK_SCORE if i // group == j // group else PCIE_SCORE
                                              for j, b in enumerate(uuids) if j != i}}
                       for i, a in enumerate(uuids)], separators=(",", ":"))


def node_manifest(n: TraceNode, interconnect: bool = False) -> dict[str, Any]:
    alloc = {"cpu": f"{n.milli_cpu}m", "memory": f"{n.memory_mib}Mi", "pods": str(NODE_PODS)}
    meta: dict[str, Any] = {"name": n.name, "labels": {"kubernetes.io/hostname": n.name}}
    if n.gpus:
        mem = GPU_MEMORY_MIB[n.model]
        # what volcano-vgpu-device-plugin publishes (spec §4.2): one device per GPU
        meta["annotations"] = {"volcano.sh/node-vgpu-register": "".join(
            f"GPU-{n.name}-{g},{SPLIT_COUNT},{mem},{gpu_type(n.model)},true,hami-core:" for g in range(n.gpus))}
        scores = nvlink_scores(n) if interconnect else None
        if scores is not None:
            meta["annotations"]["hami.io/node-nvidia-score"] = scores
        alloc.update({
            "volcano.sh/vgpu-number": str(n.gpus * SPLIT_COUNT),
            "volcano.sh/vgpu-memory": str(n.gpus * mem),
            "volcano.sh/vgpu-cores": str(n.gpus * 100),
            # not advertised by the real plugin (spec E-12): the generic fit would keep percentage pods
            # Pending; the replay advertises 100 per GPU so that only deviceshare decides
            "volcano.sh/vgpu-memory-percentage": str(n.gpus * 100),
        })
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "status": {"allocatable": alloc, "capacity": alloc}}


def pod_manifests(t: TraceTask, seq: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(PodGroup, Pod) of task number ``seq``: a job of its own."""
    name = f"{t.name}-{seq:06d}"
    created = rfc3339(SIM_EPOCH + seq)
    res: dict[str, Any] = {"cpu": f"{t.milli_cpu}m", "memory": f"{t.memory_mib}Mi"}
    gpu: dict[str, str] = {}
    annotations = {"scheduling.k8s.io/group-name": name}
    if t.num_gpu:
        share = 100 if t.num_gpu > 1 else t.gpu_milli // 10
        gpu = {"volcano.sh/vgpu-number": str(t.num_gpu), "volcano.sh/vgpu-cores": str(share),
               "volcano.sh/vgpu-memory-percentage": str(share)}
        if t.gpu_spec:
            annotations["nvidia.com/use-gputype"] = ",".join(t.gpu_spec)
    pg = {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": f"pg-{seq}", "creationTimestamp": created},
        "spec": {"minMember": 1, "queue": "default"},
        "status": {"phase": "Pending"},
    }
    pod = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": f"pod-{seq}", "creationTimestamp": created,
                     "annotations": annotations},
        "spec": {"schedulerName": "volcano", "containers": [{
            "name": "main", "image": "trace",
            # the API server defaults requests of extended resources to their limits
            "resources": {"requests": {**res, **gpu}, "limits": dict(gpu)},
        }]},
        "status": {"phase": "Pending"},
    }
    return pg, pod


# -- the replay -----------------------------------------------------------------------------------


@dataclass(slots=True)
class StepReport:
    arrived_percent: int  # the step: arrived GPU demand reached this share of capacity
    arrived_gpus: float
    tasks_arrived: int
    allocated_gpus: float
    allocated_share: float  # allocated / capacity
    unallocated_gpus: float  # capacity - allocated
    failed_tasks: int
    failed_gpu_tasks: int
    fragmentation_gpus: float  # FGD: expected free GPU capacity the trace's tasks cannot use
    fragmentation_rate: float  # fragmentation / free GPU capacity


@dataclass(slots=True)
class PolicyReport:
    policy: str
    steps: list[StepReport] = field(default_factory=list)
    sessions: int = 0
    wall_seconds: float = 0.0
    interconnect: "InterconnectReport | None" = None


@dataclass(slots=True)
class InterconnectReport:
    """``--interconnect``: where the multi-GPU tasks' cards landed, over the whole replay."""

    placed: int = 0  # multi-GPU tasks placed
    failed: int = 0  # multi-GPU tasks that failed
    inside: int = 0  # placed with every card in one NVLink group
    eligible: int = 0  # placed while a group of an allowed model had that many untouched cards
    inside_eligible: int = 0  # of those, placed inside one group

    @property
    def share(self) -> float:
        """Inside one group, of the tasks placed while one had room: the acceptance figure."""
        return self.inside_eligible / self.eligible if self.eligible else 1.0


@dataclass(slots=True)
class TraceReport:
    trace: str
    pods: str
    nodes: int
    gpus: int
    seed: int
    order: str  # "creation" (the trace's), or "shuffled" (seeded, the FGD paper's experiments)
    node_search: str
    tie_break: str  # "random" (seeded, Volcano's), or "first" in search order (vcsched's scheduler)
    policies: list[PolicyReport]
    # GPUs left unallocated at 100% arrived demand by a clairvoyant offline packing (``offline_unallocated``)
    offline_unallocated: float = 0.0

    def at(self, policy: str, percent: int) -> StepReport | None:
        for p in self.policies:
            if p.policy == policy:
                return next((s for s in p.steps if s.arrived_percent == percent), None)
        return None


def arrivals(tasks: list[TraceTask], capacity_milli: int, seed: int, target: int = TARGET_PERCENT,
             shuffle: bool = False) -> list[TraceTask]:
    """The trace in order (``shuffle``: in a seeded random order, as the FGD paper's experiments submit
    it), then sampled again (seeded) until GPU demand reaches ``target``% of capacity."""
    rng = random.Random(seed)
    if shuffle:
        tasks = rng.sample(tasks, len(tasks))
    out: list[TraceTask] = []
    demand = 0
    goal = capacity_milli * target / 100
    i = 0
    if not any(t.gpu_demand for t in tasks):
        raise TraceError("the task list asks for no GPU: the arrived demand can never grow")
    while demand < goal:
        t = tasks[i] if i < len(tasks) else rng.choice(tasks)
        i += 1
        out.append(t)
        demand += t.gpu_demand
    return out


def batches(arrived: list[TraceTask], capacity_milli: int,
            sessions_per_step: int = 1) -> list[tuple[int, tuple[int, ...]]]:
    """[(end index, 10% steps reached)]: where each session's batch ends, and the report rows it closes.

    Sub-step k (of ``sessions_per_step`` per 10%) is reached by the task that brings the arrived demand
    to k × 10% / sessions_per_step of capacity.
    """
    out: list[tuple[int, tuple[int, ...]]] = []
    demand = 0
    k = 1
    last = TARGET_PERCENT // STEP_PERCENT * sessions_per_step
    for i, t in enumerate(arrived):
        demand += t.gpu_demand
        crossed = False
        reached: list[int] = []
        while k <= last and demand * 100 * sessions_per_step >= capacity_milli * k * STEP_PERCENT:
            crossed = True
            if k % sessions_per_step == 0:
                reached.append(k // sessions_per_step * STEP_PERCENT)
            k += 1
        if crossed:
            out.append((i + 1, tuple(reached)))
    if not out or out[-1][0] < len(arrived):
        out.append((len(arrived), ()))
    return out


def offline_unallocated(arrived: list[TraceTask], gpus: int) -> float:
    """GPUs a clairvoyant offline packing leaves unallocated: best-fit decreasing of the GPU shares of the
    tasks arrived by 100% of capacity into ``gpus`` cards.  It knows every task in advance and ignores
    CPU, memory, node boundaries and GPU models, so no scheduler bound by them and by arrival order should
    expect to do better by much; it is the yardstick for the policies' unallocated GPUs."""
    capacity_milli = gpus * MILLI
    done = next((end for end, steps in batches(arrived, capacity_milli) if 100 in steps), len(arrived))
    items: list[int] = []
    for t in arrived[:done]:
        if t.num_gpu > 1:
            items.extend([MILLI] * t.num_gpu)  # whole cards, wherever they are
        elif t.num_gpu:
            items.append(t.gpu_milli)
    room = {MILLI: gpus}  # cards by free thousandths
    free = [MILLI]  # sorted keys of room
    allocated = 0
    for size in sorted(items, reverse=True):
        i = bisect_left(free, size)
        if i == len(free):
            continue  # fails
        left = free[i]
        room[left] -= 1
        if not room[left]:
            del room[left], free[i]
        rest = left - size
        if rest not in room:
            room[rest] = 0
            insort(free, rest)
        room[rest] += 1
        allocated += size
    return round(gpus - allocated / MILLI, 2)


def trace_conf(policy: str, base: str | None = None) -> SchedulerConfiguration:
    """The replay's configuration for one policy: ``base`` (or TRACE_CONF) with deviceshare set to it;
    ``SCHEDULE+TOPOLOGY`` sets deviceshare.TopologyPolicy too."""
    policy, _, topology_policy = policy.partition("+")
    conf = parse_conf(base if base is not None else TRACE_CONF.format(policy=policy))
    for tier in conf.tiers:
        for option in tier:
            if option.name == "deviceshare":
                option.arguments.values[SCHEDULE_POLICY] = policy
                option.arguments.values[VGPU_ENABLE] = True
                if topology_policy:
                    option.arguments.values[TOPOLOGY_POLICY] = topology_policy
                if topology_policy or base is not None:
                    parse_conf_check(conf)
                return conf
    raise ConfError("the trace replay needs the deviceshare plugin in the configuration")


def parse_conf_check(conf: SchedulerConfiguration) -> None:
    """The deviceshare arguments as the plugin reads them: a bad value is a ConfError naming it."""
    for tier in conf.tiers:
        for option in tier:
            if option.name == "deviceshare":
                try:
                    DeviceShareArgs.parse(option.arguments)
                except ValueError as e:
                    raise ConfError(str(e)) from None


class Replay:
    """One policy's replay over a cache, session by session."""

    def __init__(self, nodes: list[TraceNode], conf: SchedulerConfiguration, model: FragmentationModel,
                 interconnect: bool = False) -> None:
        self.conf = conf
        self.model = model
        config_maps = {DEVICE_CONFIG_MAP: {"data": {"device-config.yaml": DEVICE_CONFIG}}}
        self.cache = Cache(devices=device_builder(conf, config_maps))
        self.cache.add_queue({"metadata": {"name": "default", "creationTimestamp": rfc3339(SIM_EPOCH)},
                              "spec": {"weight": 1, "reclaimable": True}, "status": {"state": "Open"}})
        for n in nodes:
            self.cache.add_node(node_manifest(n, interconnect))
        self.interconnect = InterconnectReport() if interconnect else None
        self.capacity = sum(n.gpus for n in nodes)
        # Volcano's --percentage-nodes-to-find=100: every node is examined for every task, so that the
        # policies, not the search window, decide (the default would stop at ~41% of 1,213 nodes)
        self.state = SchedulerState(nodes_to_find=NodesToFind(percentage=100))
        self.plugins = plugin_classes()
        self.actions = action_classes()
        self.sessions = 0
        self.pending: dict[str, tuple[dict, dict, TraceTask]] = {}  # pod uid → (pg, pod, task)
        self.allocated_milli = 0
        self.failed = 0
        self.failed_gpu = 0

    def submit(self, task: TraceTask, seq: int) -> None:
        pg, pod = pod_manifests(task, seq)
        self.cache.add_podgroup(pg)
        self.cache.add_pod(pod)
        self.pending[pod["metadata"]["uid"]] = (pg, pod, task)

    def run_session(self) -> None:
        """One session over the cache; binds applied, the tasks it could not place failed for good."""
        self.sessions += 1
        ssn = Session(self.cache.snapshot(), self.conf, self.plugins, self.state,
                      now=SIM_EPOCH + self.sessions, uid=f"trace-{self.sessions}")
        ssn.open()
        for name in self.conf.actions:
            self.actions[name]().execute(ssn)
        effects = ssn.close()
        for e in effects:
            if isinstance(e, Bind):
                pg, pod, task = self.pending.pop(e.uid)
                if self.interconnect is not None and task.num_gpu > 1:
                    self.count_cards(task, e)  # before the bind: the cluster as the task found it
                pod["spec"]["nodeName"] = e.node
                pod["status"]["phase"] = "Running"
                pod["metadata"]["annotations"].update(e.annotations)
                self.cache.update_pod(pod)
                pg["status"] = {"phase": "Running"}
                self.cache.update_podgroup(pg)
                self.allocated_milli += task.gpu_demand
        for uid, (pg, pod, task) in self.pending.items():  # failed for good: no retry later
            if self.interconnect is not None and task.num_gpu > 1:
                self.interconnect.failed += 1
            self.cache.delete_pod(uid)
            self.cache.delete_podgroup(f"{NAMESPACE}/{pg['metadata']['name']}")
            self.failed += 1
            self.failed_gpu += 1 if task.num_gpu else 0
        self.pending.clear()

    def count_cards(self, task: TraceTask, bind: Bind) -> None:
        """``--interconnect``: did the task's cards land in one NVLink group, and could they have?"""
        rep = self.interconnect
        rep.placed += 1
        d = self.cache.nodes[bind.node].devices.get("hamivgpu")
        topo = d.topology if d is not None else None
        ids = [item.split(",")[0] for item in bind.annotations.get("volcano.sh/vgpu-ids-new", "").split(":") if item]
        pos = {g.uuid: g.index for g in d.devices} if d is not None else {}
        inside = topo is not None and len({topo.domain_of[pos[i]] for i in ids if i in pos}) == 1 and (
            topo.domain_of[pos[ids[0]]] >= 0)
        rep.inside += inside
        if self.room_for(task):
            rep.eligible += 1
            rep.inside_eligible += inside

    def room_for(self, task: TraceTask) -> bool:
        """Has some node of a model the task allows a group with ``num_gpu`` untouched cards?"""
        for node in self.cache.nodes.values():
            d = node.devices.get("hamivgpu")
            if d is None or d.topology is None or len(d.devices) < task.num_gpu:
                continue
            if task.gpu_spec and not any(m in d.devices[0].type for m in task.gpu_spec):
                continue
            for cards in d.topology.domains:
                if len(cards) >= task.num_gpu and sum(
                        1 for c in cards if d.devices[c].used_num == 0) >= task.num_gpu:
                    return True
        return False

    def ledger_milli(self) -> int:
        """GPU thousandths in use by the devices' ledger (the cache's truth)."""
        total = 0
        for node in self.cache.nodes.values():
            d = node.devices.get("hamivgpu")
            if d is not None:
                total += sum(g.used_core for g in d.devices) * 10
        return total

    def fragmentation(self) -> tuple[float, float]:
        """(fragmentation, free) in GPUs over the cluster, under the trace's task distribution."""
        frag = free = 0.0
        for node in self.cache.nodes.values():
            d = node.devices.get("hamivgpu")
            if d is None:
                continue
            f, t = self.model.node_frag(node.idle.milli_cpu, node.idle.memory, d.gpu_key())
            frag += f
            free += t
        return frag, free


def trace_model(tasks: list[TraceTask]) -> FragmentationModel:
    """The trace's task distribution: every distinct shape, weighted by how often it occurs."""
    counts = Counter(t.shape() for t in tasks)
    return FragmentationModel(list(counts.items()))


def replay(nodes: list[TraceNode], tasks: list[TraceTask], policy: str, seed: int = 1,
           sessions_per_step: int = 1, conf_text: str | None = None, shuffle: bool = False,
           tie_break: str = "random", interconnect: bool = False) -> PolicyReport:
    conf = trace_conf(policy, conf_text)
    rep = Replay(nodes, conf, trace_model(tasks), interconnect)
    if tie_break == "random":
        # a stream of its own: the arrivals draw from ``seed`` itself
        rep.state.tie_break = random.Random(f"tie-break {seed}")
    capacity_milli = rep.capacity * MILLI
    arrived = arrivals(tasks, capacity_milli, seed, shuffle=shuffle)
    report = PolicyReport(policy)
    started = time.perf_counter()
    start = 0
    demand = 0
    # on a terminal, the arrived demand as it grows to its goal (tqdm stays silent when stderr is piped)
    progress = tqdm(total=TARGET_PERCENT, desc=policy, unit="% demand", disable=None, leave=False)
    for end, steps in batches(arrived, capacity_milli, sessions_per_step):
        for seq in range(start, end):
            rep.submit(arrived[seq], seq)
            demand += arrived[seq].gpu_demand
        start = end
        rep.run_session()
        if steps:
            frag, free = rep.fragmentation()
            alloc = rep.allocated_milli / MILLI
            for step in steps:
                report.steps.append(StepReport(
                    arrived_percent=step, arrived_gpus=round(demand / MILLI, 2), tasks_arrived=end,
                    allocated_gpus=round(alloc, 2), allocated_share=round(alloc / rep.capacity, 4),
                    unallocated_gpus=round(rep.capacity - alloc, 2), failed_tasks=rep.failed,
                    failed_gpu_tasks=rep.failed_gpu, fragmentation_gpus=round(frag, 2),
                    fragmentation_rate=round(frag / free, 4) if free > 0 else 0.0,
                ))
            progress.update(steps[-1] - progress.n)
    progress.close()
    report.sessions = rep.sessions
    report.wall_seconds = round(time.perf_counter() - started, 1)
    report.interconnect = rep.interconnect
    return report


# -- output ---------------------------------------------------------------------------------------


def render_table(reports: list[TraceReport]) -> str:
    lines = []
    for r in reports:
        lines.append(f"trace {r.trace}  pods {r.pods}  nodes {r.nodes}  GPUs {r.gpus}  seed {r.seed}  "
                     f"order {r.order}")
        ties = ("at random (seeded), as Volcano" if r.tie_break == "random"
                else "to the first in search order, as vcsched's scheduler")
        lines.append(f"node search: {r.node_search}; ties {ties}")
        cols = f"{'alloc%':>7} {'unalloc':>8} {'failed':>6} {'frag':>7} {'frag%':>6}"
        width = len(cols)
        lines.append(f"{'':>8} " + "".join(f" | {p.policy:<{width}}" for p in r.policies))
        lines.append(f"{'arrived':>8} " + "".join(f" | {cols}" for _ in r.policies))
        steps = sorted({s.arrived_percent for p in r.policies for s in p.steps})
        for pct in steps:
            row = f"{pct:>7}% "
            for p in r.policies:
                s = next((x for x in p.steps if x.arrived_percent == pct), None)
                if s is None:
                    row += " | " + " " * width
                    continue
                row += (f" | {100 * s.allocated_share:>6.1f}% {s.unallocated_gpus:>8.1f} {s.failed_tasks:>6} "
                        f"{s.fragmentation_gpus:>7.1f} {100 * s.fragmentation_rate:>5.1f}%")
            lines.append(row)
        lines.append("wall: " + ", ".join(f"{p.policy} {p.wall_seconds}s ({p.sessions} sessions)" for p in r.policies))
        lines += interconnect_lines(r)
        lines.append(f"offline yardstick at 100% arrived: best-fit decreasing of the GPU shares, every task known, "
                     f"CPU/memory/nodes/models ignored, leaves {r.offline_unallocated:.1f} GPUs unallocated")
        base = r.at("binpack", 100)
        if base is not None:
            for p in r.policies:
                s = r.at(p.policy, 100)
                if p.policy != "binpack" and s is not None and base.unallocated_gpus > 0:
                    red = reduction(base.unallocated_gpus, s.unallocated_gpus)
                    lines.append(f"at 100% arrived: {p.policy} leaves {s.unallocated_gpus:.1f} GPUs unallocated, "
                                 f"binpack {base.unallocated_gpus:.1f}: {abs(red):.1f}% "
                                 f"{'fewer' if red >= 0 else 'more'}")
        lines.append("")
    return "\n".join(lines)


def interconnect_lines(r: TraceReport) -> list[str]:
    """``--interconnect``: per policy, where the multi-GPU tasks' cards landed and the GPUs left idle."""
    rows = [(p, p.interconnect) for p in r.policies if p.interconnect is not None]
    if not rows:
        return []
    out = ["multi-GPU tasks on NVLink groups (8-GPU nodes 2 x 4, 4-GPU 2 x 2, 2-GPU one pair; HAMi pair scores):",
           f"{'policy':<26} {'placed':>6} {'failed':>6} {'in 1 group':>10} {'room':>6} {'in 1 group|room':>15} "
           f"{'unalloc@100%':>12}"]
    for p, ic in rows:
        s = next((x for x in p.steps if x.arrived_percent == 100), None)
        out.append(f"{p.policy:<26} {ic.placed:>6} {ic.failed:>6} {ic.inside:>10} {ic.eligible:>6} "
                   f"{100 * ic.share:>14.1f}% {s.unallocated_gpus if s else float('nan'):>12.1f}")
    return out


def plot(reports: list[TraceReport], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(reports), figsize=(5.5 * len(reports), 4.2), squeeze=False)
    for ax, r in zip(axes[0], reports):
        for p in r.policies:
            xs = [s.arrived_percent for s in p.steps]
            ax.plot(xs, [100 * s.allocated_share for s in p.steps], marker="o", label=p.policy)
        ax.plot([0, TARGET_PERCENT], [0, TARGET_PERCENT], color="grey", linestyle=":", linewidth=0.8)
        ax.set_xlim(0, TARGET_PERCENT)
        ax.set_ylim(0, 100)
        ax.set_xlabel("arrived GPU demand (% of capacity)")
        ax.set_ylabel("allocated GPUs (% of capacity)")
        ax.set_title(os.path.basename(r.pods) + (", shuffled" if r.order == "shuffled" else "")
                     + (", ties to the first node" if r.tie_break == "first" else ""))
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_trace(args) -> int:
    """The ``bench --trace`` command: exit 2 on bad input."""
    trace_dir = args.trace
    interconnect = bool(getattr(args, "interconnect", False))
    policies = args.policy or list(INTERCONNECT_POLICIES if interconnect else POLICIES)
    tie_break = args.tie_break or "random"
    try:
        if not os.path.isdir(trace_dir):
            raise TraceError(f"{trace_dir}: no such trace directory")
        nodes = read_nodes(os.path.join(trace_dir, NODE_FILE))
        files = [pod_file(trace_dir, p) for p in (args.pods or [None])]
        lists = [(f, read_tasks(f)) for f in files]
        conf_text = None
        if args.conf:
            try:
                with open(args.conf, encoding="utf-8") as fh:
                    conf_text = fh.read()
            except OSError as e:
                raise TraceError(f"{args.conf}: {e.strerror}") from None
            trace_conf(policies[0], conf_text)
        for policy in policies:
            trace_conf(policy, conf_text)
        if args.sessions_per_step < 1:
            raise TraceError("--sessions-per-step: expected >= 1")
    except (TraceError, ConfError) as e:
        print(f"vcsched bench: {e}", file=sys.stderr)
        return 2
    reports = []
    gpus = sum(n.gpus for n in nodes)
    for f, tasks in lists:
        reps = []
        for policy in policies:
            reps.append(replay(nodes, tasks, policy, args.seed, args.sessions_per_step, conf_text, args.shuffle,
                               tie_break, interconnect))
            print(f"vcsched bench: {os.path.basename(f)} {policy}: {reps[-1].wall_seconds}s", file=sys.stderr)
        reports.append(TraceReport(
            trace=trace_dir, pods=f, nodes=len(nodes), gpus=gpus, seed=args.seed,
            order="shuffled" if args.shuffle else "creation",
            node_search=f"all {len(nodes)} nodes examined per task (Volcano --percentage-nodes-to-find=100)",
            tie_break=tie_break,
            policies=reps,
            offline_unallocated=offline_unallocated(arrivals(tasks, gpus * MILLI, args.seed, shuffle=args.shuffle),
                                                    gpus)))
    if args.output == "json":
        print(json.dumps([asdict(r) for r in reports], sort_keys=True))
    else:
        print(render_table(reports))
    if args.plot:
        plot(reports, args.plot)
    return 0


def reduction(base: float, other: float) -> float:
    """Percent fewer unallocated GPUs than ``base``."""
    return 0.0 if base <= 0 else 100 * (base - other) / base

