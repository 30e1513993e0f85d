"""vGPU (volcano-vgpu-device-plugin / HAMi): hami-core sharing and dynamic MIG (spec §4.2, §5.2, §6.3–§6.7).

Volcano files: api/devices/nvidia/vgpu/{device_info,utils,hamicore,mig}.go and
plugins/deviceshare/gpuexclusive.go.  The node publishes
``volcano.sh/node-vgpu-register``; the scheduler writes ``volcano.sh/vgpu-ids-new``
(its ledger) and ``volcano.sh/devices-to-allocate`` (what the plugin consumes)
with the other keys of §6.3.5.

Where vcsched does better than Volcano (spec §9), on purpose:
- E-19: a discarded allocation (gang failure, statement discard) leaves no device
  use behind: the ledger is keyed by pod UID, not by the annotations.
- E-8: an instance taken in this session is marked used at once, so two pods (or
  two containers) in one session never get the same ``UUID[group-pos]``.
- E-10: two containers of one pod on one GPU both count in the rebuilt ledger.
Everything else (check order, device order, scores, quirks such as spread
scoring 0 and ``vgpu-number: 0``) is Volcano's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from vcsched.api.task_info import TaskInfo
from vcsched.api.types import StatusCode

from .base import (
    AllocateError, DeviceFamily, DeviceUse, FilterResult, NodeDevices, annotation, containers, group_key, limits,
    pod_annotations, quantity, release_keys, requests,
)
from .config import BINPACK, FRAGMENTATION, SPREAD, MigGeometry, NvidiaConfig
from . import topology
from .fragmentation import FragContext, FragmentationScorer, WorkloadHistogram
from .topology import CardTopology

log = structlog.get_logger("vcsched.deviceshare")

KEY = "hamivgpu"
REGISTER = "volcano.sh/node-vgpu-register"
VGPU_NODE = "volcano.sh/vgpu-node"
VGPU_TIME = "volcano.sh/vgpu-time"
VGPU_IDS = "volcano.sh/vgpu-ids-new"
DEVICES_TO_ALLOCATE = "volcano.sh/devices-to-allocate"
BIND_PHASE = "volcano.sh/bind-phase"
BIND_TIME = "volcano.sh/bind-time"
VGPU_MODE = "volcano.sh/vgpu-mode"
PODGROUP_POLICY = "volcano.sh/vgpu-podgroup-policy"
USE_UUID = "volcano.sh/vgpu-use-gpuuuid"
NOUSE_UUID = "volcano.sh/vgpu-nouse-gpuuuid"
USE_TYPE = "nvidia.com/use-gputype"
NOUSE_TYPE = "nvidia.com/nouse-gputype"
RELEASE_KEYS = (VGPU_NODE, VGPU_IDS, DEVICES_TO_ALLOCATE, VGPU_TIME, BIND_TIME, BIND_PHASE)
# the node check uses these names whatever the ConfigMap says (NewGPUDevices, spec E-18)
NODE_RESOURCES = ("volcano.sh/vgpu-number", "volcano.sh/vgpu-cores", "volcano.sh/vgpu-memory")
HAMI_CORE = "hami-core"
MIG = "mig"
DEVICE_TYPE = "NVIDIA"
PCT_UNSET = 101
NODE_NAME = "\x00node\x00"  # stands for the node's name in a memoised reason


@dataclass(slots=True, frozen=True)
class ContainerRequest:
    nums: int
    memreq: int
    pct: int  # 101: unset
    cores: int


@dataclass(slots=True, frozen=True)
class VGPURequest:
    containers: tuple[ContainerRequest, ...]
    mode: str | None  # volcano.sh/vgpu-mode
    group: str  # "<ns>/<pg>" when the pod asks podgroup spread
    allow: tuple[str, ...]
    deny: tuple[str, ...]
    use_types: tuple[str, ...] | None  # upper-cased
    nouse_types: tuple[str, ...] | None
    rules: tuple[int, ...]  # GPUExclusiveRules the pod matches
    uuid_annotations: tuple[str, str]  # raw values, for the error message
    # the one container, when the filter may probe without applying (VGPUDevices._probe): no UUID
    # filter, no podgroup spread, no exclusivity rule
    single: ContainerRequest | None = None
    # device topology (topology.py): "required", "preferred", or "" for Volcano's placement
    topology: str = ""


@dataclass(slots=True, frozen=True)
class Entry:
    """One device a pod holds: what it took, for an exact release."""

    device: int
    mem: int
    cores: int
    mig: tuple[int, int] | None  # (instance index in the group, slot)
    claimed_group: bool  # this entry tied the GPU to its MIG group (it was free)


@dataclass(slots=True, frozen=True)
class Holder:
    key: str  # ns/name
    labels: Mapping[str, str]
    group: str
    entries: tuple[Entry, ...]


class GPUDevice:
    __slots__ = ("index", "uuid", "number", "memory", "type", "health", "used_num", "used_mem", "used_core",
                 "pods", "mig_template", "mig_index", "mig_used")

    def __init__(self, index: int, uuid: str, number: int, memory: int, type_: str, health: bool,
                 mig_template: tuple[MigGeometry, ...] | None) -> None:
        self.index = index
        self.uuid = uuid
        self.number = number
        self.memory = memory
        self.type = type_
        self.health = health
        self.used_num = 0
        self.used_mem = 0
        self.used_core = 0
        self.pods: dict[str, int] = {}  # pod uid → entries it holds here
        self.mig_template = mig_template
        self.mig_index = -1
        self.mig_used: dict[int, list[int]] = {}  # instance index → used slots, sorted

    def clone(self) -> "GPUDevice":
        d = GPUDevice.__new__(GPUDevice)
        d.index, d.uuid, d.number, d.memory, d.type, d.health = (
            self.index, self.uuid, self.number, self.memory, self.type, self.health)
        d.used_num, d.used_mem, d.used_core = self.used_num, self.used_mem, self.used_core
        d.pods = dict(self.pods)
        d.mig_template = self.mig_template
        d.mig_index = self.mig_index
        d.mig_used = {k: list(v) for k, v in self.mig_used.items()} if self.mig_used else {}
        return d


def type_allowed(req: VGPURequest, gpu_type: str) -> bool:
    """``checkType``: "NVIDIA" in the type, then use-gputype / nouse-gputype (case-insensitive substrings)."""
    if DEVICE_TYPE not in gpu_type:
        return False
    if req.use_types is None and req.nouse_types is None:
        return True
    upper = gpu_type.upper()
    if req.use_types is not None:
        return any(t in upper for t in req.use_types)
    return not any(t in upper for t in req.nouse_types)  # an empty item matches everything (spec E-11)


def encode_pod_devices(per_container: list[list[tuple[str, int, int]]]) -> str:
    """``encodePodDevices``: ``ID,NVIDIA,MEM,CORES:`` per device, containers joined by ``;``."""
    return ";".join("".join(f"{i},{DEVICE_TYPE},{m},{c}:" for i, m, c in devs) for devs in per_container)


def decode_pod_devices(value: str) -> list[list[tuple[str, int, int]]]:
    """``DecodePodDevices``: malformed items are skipped, the others kept."""
    out = []
    for ctr in value.split(";"):
        devs = []
        for item in ctr.split(":"):
            if "," not in item:
                continue
            f = item.split(",")
            if len(f) < 4:
                continue
            try:
                mem, cores = int(f[2]), int(f[3])
            except ValueError:
                continue
            if not (0 <= mem < 2**32 and 0 <= cores < 2**32):
                continue
            devs.append((f[0], mem, cores))
        out.append(devs)
    return out


def _mig_position(value: str) -> tuple[str, int] | None:
    """``decodeMIGID``: ``UUID[group-pos]`` → (group, pos); None when malformed (spec E-40)."""
    a, b = value.find("["), value.find("]")
    if a < 0 or b < a:
        return None
    parts = value[a + 1:b].split("-")
    if len(parts) != 2:
        return None
    try:
        return parts[0], int(parts[1])
    except ValueError:
        return None


class VGPUFamily(DeviceFamily):
    on_every_node = True
    key = KEY

    def __init__(self, config: NvidiaConfig, rules: tuple[tuple[tuple[str, str], ...], ...] = ()) -> None:
        self.config = config
        self.rules = rules
        # the fragmentation policy's state, kept across sessions (fragmentation.py · open_session)
        self.workload = WorkloadHistogram()
        self.scorer: FragmentationScorer | None = None
        self.plan = None  # the session's look-ahead plan (lookahead.SessionPlan), set at session open
        self.topology_default = ""  # deviceshare.TopologyPolicy
        self.pending_cards = 0  # the most cards one container of a pending topology pod asks (session open)

    def request(self, task: TaskInfo) -> VGPURequest | None:
        cfg = self.config
        ctrs = []
        for c in containers(task):
            lim, req = limits(c), requests(c)
            if cfg.count_name and cfg.count_name in lim:
                nums = quantity(lim[cfg.count_name])
            elif cfg.memory_name and cfg.memory_name in lim:
                nums = 1
            else:
                continue  # no entry, no slot in the annotation
            mem_raw = lim.get(cfg.memory_name, req.get(cfg.memory_name)) if cfg.memory_name else None
            memreq = quantity(mem_raw) if mem_raw is not None else 0
            pct = PCT_UNSET
            pname = cfg.memory_percentage_name
            if pname and (pname in lim or pname in req):
                pct = quantity(lim.get(pname, req.get(pname)))
            if pct == PCT_UNSET and memreq == 0:
                pct = 100
            core_raw = lim.get(cfg.core_name, req.get(cfg.core_name)) if cfg.core_name else None
            cores = quantity(core_raw) if core_raw is not None else 0
            ctrs.append(ContainerRequest(nums, memreq, pct, cores))
        if not ctrs:
            return None
        ann = pod_annotations(task)
        use = ann.get(USE_TYPE)
        nouse = ann.get(NOUSE_TYPE)
        labels = task.spec.labels
        group = group_key(task) if ann.get(PODGROUP_POLICY) == SPREAD else ""
        allow = tuple(x.strip() for x in (ann.get(USE_UUID) or "").split(",") if x.strip())
        deny = tuple(x.strip() for x in (ann.get(NOUSE_UUID) or "").split(",") if x.strip())
        rules = tuple(i for i, rule in enumerate(self.rules) if all(labels.get(k) == v for k, v in rule))
        topo = topology.pod_policy(ann, self.topology_default)
        return VGPURequest(
            containers=tuple(ctrs),
            mode=ann.get(VGPU_MODE),
            group=group,
            allow=allow,
            deny=deny,
            use_types=tuple(t.upper() for t in use.split(",")) if use is not None else None,
            nouse_types=tuple(t.upper() for t in nouse.split(",")) if nouse is not None and use is None else None,
            rules=rules,
            uuid_annotations=(ann.get(USE_UUID, ""), ann.get(NOUSE_UUID, "")),
            single=ctrs[0] if len(ctrs) == 1 and not (group or allow or deny or rules or topo) else None,
            topology=topo,
        )

    def build(self, node: Mapping[str, Any], name: str) -> "VGPUDevices | None":
        meta = node.get("metadata") or {}
        raw = (meta.get("annotations") or {}).get(REGISTER)
        if raw is None:
            return None
        alloc = (node.get("status") or {}).get("allocatable") or {}
        if any(quantity(alloc.get(r, 0)) <= 0 for r in NODE_RESOURCES):
            return None
        if ":" not in raw:
            log.warning("malformed vGPU register annotation (no device segment): this node's vGPU devices "
                        "are ignored", node=name, annotation=REGISTER, value=raw[:200])
            return None
        devices: list[GPUDevice] = []
        mode = HAMI_CORE
        for i, seg in enumerate(raw.split(":")):
            if "," not in seg:
                continue
            f = seg.split(",")
            if len(f) < 6:
                # Volcano: "wrong Node GPU info", the whole node has no vGPU devices
                log.warning("malformed vGPU register annotation: this node's vGPU devices are ignored",
                            node=name, annotation=REGISTER, segment=seg)
                return None
            number, memory = _uint(f[1]), _uint(f[2])
            if not (f[1].strip().isdigit() and f[2].strip().isdigit()):
                # Volcano ignores strconv's error and takes 0; say so, naming node and annotation
                log.warning("vGPU register annotation: a count or memory that is not a whole number counts as 0",
                            node=name, annotation=REGISTER, segment=seg)
            health = f[4].strip() in ("1", "t", "T", "TRUE", "true", "True")
            dev_mode = MIG if f[5] == MIG else HAMI_CORE
            template = None
            if dev_mode == MIG:
                template = self.config.geometry_for(f[3])
                if template is None:
                    log.info("extract mig geometry error and fall back to hamicore mode", node=name, type=f[3])
                    dev_mode = HAMI_CORE
            devices.append(GPUDevice(i, f[0], number, memory, f[3], health, template))
            mode = dev_mode  # the node's mode is the last device's (decodeNodeDevices)
        if not devices:
            return None
        return VGPUDevices(self, name, mode, devices, {})


def _uint(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        return 0
    return v if v >= 0 else 0


class VGPUDevices(NodeDevices):
    key = KEY
    __slots__ = ("family", "name", "mode", "devices", "holders", "_score", "node", "_ordered", "topology")

    def __init__(self, family: VGPUFamily, name: str, mode: str, devices: list[GPUDevice],
                 holders: dict[str, Holder]) -> None:
        self.family = family
        self.name = name
        self.mode = mode
        self.devices = devices
        self.holders = holders
        self._score: tuple[str, float] | None = None
        self.node = None  # the session's NodeInfo, set at session open for the fragmentation policy
        # (policy, devices in that policy's visiting order): kept until a counter changes (_apply/_unapply)
        self._ordered: tuple[str, list[GPUDevice]] | None = None
        self.topology: CardTopology | None = None  # topology.attach sets it when the node publishes one

    def clone(self) -> "VGPUDevices":
        c = VGPUDevices(self.family, self.name, self.mode, [d.clone() for d in self.devices], dict(self.holders))
        c.topology = self.topology
        return c

    def topology_inputs(self):
        """Card ids by position; HAMi's pair scores apply (they are keyed by these UUIDs); no HCCS."""
        return tuple(d.uuid for d in self.devices), True, None

    # -- counters ------------------------------------------------------------------------------

    def _apply(self, uid: str, e: Entry) -> None:
        d = self.devices[e.device]
        self._ordered = None
        d.used_num += 1
        d.used_mem += e.mem
        d.used_core += e.cores
        d.pods[uid] = d.pods.get(uid, 0) + 1
        if e.mig is not None:
            inst, slot = e.mig
            used = d.mig_used.setdefault(inst, [])
            if slot in used:
                log.warning("MIG instance slot already in use", node=self.name, gpu=d.uuid, slot=slot)
            else:
                used.append(slot)
                used.sort()

    def _unapply(self, uid: str, e: Entry) -> None:
        d = self.devices[e.device]
        self._ordered = None
        d.used_num = max(d.used_num - 1, 0)
        d.used_mem = max(d.used_mem - e.mem, 0)
        d.used_core = max(d.used_core - e.cores, 0)
        n = d.pods.get(uid, 0) - 1
        if n > 0:
            d.pods[uid] = n
        else:
            d.pods.pop(uid, None)
        if e.mig is not None:
            inst, slot = e.mig
            used = d.mig_used.get(inst)
            if used is not None and slot in used:
                used.remove(slot)
                if not used:
                    del d.mig_used[inst]
            if e.claimed_group and not d.mig_used:
                d.mig_index = -1  # undo of this session's claim; Volcano keeps the group otherwise (§6.5.4)

    # -- ledger ---------------------------------------------------------------------------------

    def add_pod(self, task: TaskInfo) -> None:
        """``AddResource`` from ``volcano.sh/vgpu-ids-new`` (bind-phase is not checked, spec E-36)."""
        if task.uid in self.holders:
            return
        ids = annotation(task, VGPU_IDS)
        if ids is None:
            return
        entries = []
        for ctr in decode_pod_devices(ids):
            for dev_id, mem, cores in ctr:
                d = next((d for d in self.devices if d.uuid in dev_id), None)
                if d is None:
                    continue
                mig = None
                if d.mig_template is not None and self.mode == MIG:
                    pos = _mig_position(dev_id)
                    if pos is None:
                        log.warning("cannot decode MIG id; the pod is not counted", node=self.name, id=dev_id)
                        continue
                    placed = self._mig_slot(d, pos)
                    if placed is None:
                        continue
                    group_idx, inst, slot = placed
                    d.mig_index = group_idx
                    realmem = d.mig_template[group_idx].instances[inst].memory
                    factor = self.family.config.gpu_memory_factor
                    mem = realmem // factor if factor > 1 else realmem
                    mig = (inst, slot)
                entries.append(Entry(d.index, mem, cores, mig, False))
        self._hold(task, tuple(entries))

    def _mig_slot(self, d: GPUDevice, pos: tuple[str, int]) -> tuple[int, int, int] | None:
        """``addMigUsed``: group by name, position → (instance, slot) by accumulated counts."""
        group, position = pos
        for gi, g in enumerate(d.mig_template or ()):
            if g.group != group:
                continue
            acc = 0
            for ii, inst in enumerate(g.instances):
                if position < acc + inst.count:
                    return gi, ii, position - acc
                acc += inst.count
            return None
        return None

    def _hold(self, task: TaskInfo, entries: tuple[Entry, ...]) -> None:
        for e in entries:
            self._apply(task.uid, e)
        self.holders[task.uid] = Holder(task.key, task.spec.labels, group_key(task), entries)

    def remove_pod(self, task: TaskInfo) -> None:
        h = self.holders.pop(task.uid, None)
        if h is None:
            return
        for e in reversed(h.entries):
            self._unapply(task.uid, e)

    def holds(self, uid: str) -> bool:
        return uid in self.holders

    # -- the core routine (checkNodeGPUSharingPredicateAndScore) ---------------------------------------

    def gpu_key(self) -> tuple[tuple[str, int, int, int, int, int], ...]:
        """The GPUs' usage as a sorted tuple: the node state the fragmentation policy memoises on."""
        return tuple(sorted((d.type, d.memory, d.number, d.used_num, d.used_core, d.used_mem) for d in self.devices))

    def _frag_order(self, c: ContainerRequest, ctx: FragContext, uid: str = "") -> list[GPUDevice]:
        """The fragmentation policy's order: GPUs by the node's F after one vGPU of ``c`` lands there.

        GPUs that cannot take it come last (the fit skips them); equal F keeps index order.  The cards the
        session's look-ahead planned for task ``uid`` here come first (lookahead.py).
        """
        model = self.family.scorer.model
        states = [(d.type, d.memory, d.number, d.used_num, d.used_core, d.used_mem) for d in self.devices]
        seen: dict[tuple, float] = {}
        ranked = []
        for i, d in enumerate(self.devices):
            memreq = d.memory * c.pct // 100 if c.pct != PCT_UNSET else c.memreq
            if d.number <= d.used_num or d.memory - d.used_mem < memreq or d.used_core + c.cores > 100:
                ranked.append((float("inf"), d.index, d))
                continue
            f = seen.get(states[i])
            if f is None:
                after = list(states)
                after[i] = (d.type, d.memory, d.number, d.used_num + 1, d.used_core + c.cores, d.used_mem + memreq)
                f = seen[states[i]] = model.node_frag(ctx.milli_cpu, ctx.memory, tuple(sorted(after)))[0]
            ranked.append((f, d.index, d))
        plan = self.family.plan
        planned = plan.cards(uid, self.name) if plan is not None and uid else None
        if planned:
            ranked.sort(key=lambda x: (x[2].index not in planned, x[0], x[1]))
        else:
            ranked.sort(key=lambda x: (x[0], x[1]))
        return [d for _, _, d in ranked]

    def _order(self, policy: str) -> list[GPUDevice]:
        """``sortedDeviceIndicesByPolicy``; the list is shared until a counter changes: do not mutate it."""
        cached = self._ordered
        if cached is not None and cached[0] == policy:
            return cached[1]
        devs = self.devices
        if policy == BINPACK:
            order = sorted(devs, key=_binpack_key)
        elif policy == SPREAD:
            order = sorted(devs, key=_spread_key)
        else:
            order = devs[::-1]  # legacy order: index descending
        self._ordered = (policy, order)
        return order

    def _reserved(self, req: VGPURequest, uid: str) -> set[int] | None:
        """GPUs used by pods matching the same exclusivity rule (hami-core nodes only, gpuexclusive.go)."""
        if not req.rules or self.mode != HAMI_CORE:
            return None
        rules = self.family.rules
        out = set()
        for other, h in self.holders.items():
            if other == uid:
                continue
            if any(all(h.labels.get(k) == v for k, v in rules[r]) for r in req.rules):
                out.update(e.device for e in h.entries)
        return out

    def _try_mig(self, d: GPUDevice, memreq: int) -> tuple[int, int, int] | None:
        """``findMatch`` / ``pickFromGroup``: (group index, instance index, slot), or None."""
        factor = self.family.config.gpu_memory_factor
        req = memreq * factor if factor > 1 else memreq
        template = d.mig_template or ()
        groups = [d.mig_index] if d.mig_index >= 0 else range(len(template))
        for gi in groups:
            g = template[gi]
            usage = d.mig_used if d.mig_index >= 0 else {}
            for ii in sorted(range(len(g.instances)), key=lambda i: g.instances[i].memory):
                inst = g.instances[ii]
                if inst.memory < req:
                    continue
                if not usage:
                    return gi, ii, 0
                used = usage.get(ii)
                if used is None or inst.count - len(used) <= 0:
                    continue  # a profile with no usage entry is never picked once the group has usage
                slot = next(s for s in range(inst.count) if s not in used)
                return gi, ii, slot
        return None

    def _probe(self, req: VGPURequest, policy: str) -> str | float:
        """``_fit`` without commit for the common request, without touching a counter: the error or score.

        For ``req.single`` (one container, no UUID filter, no podgroup spread, no exclusivity rule) on a
        hami-core node (the caller checks).  Within one container every GPU is visited once, so the tentative add on a
        GPU changes nothing the later GPUs see: the counters after the add are computed, not applied.
        """
        if req.mode is not None and req.mode != self.mode:
            return f"pod required sharing mode {req.mode} is not the same as the node mode {self.mode}"
        c = req.single
        nums = c.nums
        if nums > len(self.devices):
            return f"no enough gpu cards on node {self.name}"
        cores, pct = c.cores, c.pct
        memreq = c.memreq
        typed = req.use_types is not None or req.nouse_types is not None
        binpack = policy == BINPACK
        score = 0.0
        for d in self._order(policy):
            if d.number <= d.used_num:
                continue
            memory = d.memory
            if pct != PCT_UNSET:
                memreq = memory * pct // 100
            used_core = d.used_core
            if memory - d.used_mem < memreq or used_core + cores > 100:
                continue
            if (cores == 100 and d.used_num > 0) or (used_core == 100 and cores == 0):
                continue
            if (DEVICE_TYPE not in d.type) if not typed else not type_allowed(req, d.type):
                continue
            if nums > 0:
                nums -= 1
                # _gpu_score after the add: binpack's used memory share; spread and legacy score 0
                if binpack and memory:
                    score += 100.0 * (d.used_mem + memreq) / memory
            if nums == 0:
                return score
        if nums > 0:
            return "not enough gpu fitted on this node"
        return score  # vgpu-number 0: fits even when no GPU could take the memory (spec E-9)

    def _fit(self, task: TaskInfo, req: VGPURequest, policy: str, commit: bool, frag: FragContext | None = None):
        """(entries, per-container [(id, mem, cores)], score) or an error string.

        ``frag``: the fragmentation policy's context; the devices are then visited in its order and the
        score is its node score (fragmentation.py).
        """
        if req.mode is not None and req.mode != self.mode:
            return f"pod required sharing mode {req.mode} is not the same as the node mode {self.mode}"
        reserved = self._reserved(req, task.uid)
        taken: list[Entry] = []
        per_container: list[list[tuple[str, int, int]]] = []
        score = 0.0
        uid = task.uid
        err = None
        topo = self.topology if req.topology and self.mode == HAMI_CORE else None
        tscore = 0.0  # the topology's part of the node score (topology.placement_score)
        for c in req.containers:
            if c.nums > len(self.devices):
                err = f"no enough gpu cards on node {self.name}"
                break
            single = c.nums == 1 and req.topology != topology.PAIRSCORE  # HAMi's rule picks one card too
            if req.topology and single:
                untouched = [d.index for d in self.devices if d.used_num == 0]
                mark = len(taken)
            if req.topology and c.nums > 0 and not single:
                if topo is None:
                    tscore += topology.no_topology_score(req.topology)
                else:
                    plan = self.family.plan if commit else None  # the look-ahead's cards (lookahead.py)
                    placed = self._fit_topology(uid, req, c, policy, frag, reserved, topo, taken,
                                                plan.cards(uid, self.name) if plan is not None else None)
                    if isinstance(placed, str):
                        err = placed
                        self._undo(uid, taken)
                        taken = []
                        break
                    per_container.append(placed[0])
                    score += placed[1]
                    tscore += placed[2]
                    continue
            nums = c.nums
            devs: list[tuple[str, int, int]] = []
            uuid_matched = False
            for d in (self._frag_order(c, frag, uid) if frag is not None else self._order(policy)):
                if (req.allow or req.deny) and (
                        not d.uuid or (req.allow and d.uuid not in req.allow) or d.uuid in req.deny):
                    continue
                uuid_matched = True
                if d.number <= d.used_num or (reserved and d.index in reserved):
                    continue
                if req.group and self._same_group(d, req.group, uid):
                    continue
                memreq = d.memory * c.pct // 100 if c.pct != PCT_UNSET else c.memreq
                if d.memory - d.used_mem < memreq:
                    continue
                if d.used_core + c.cores > 100:
                    continue
                if c.cores == 100 and d.used_num > 0:
                    continue
                if d.used_core == 100 and c.cores == 0:
                    continue
                if not type_allowed(req, d.type):
                    continue
                if self.mode == MIG and d.mig_template is not None:
                    picked = self._try_mig(d, memreq)
                    if picked is None:
                        continue
                    gi, ii, slot = picked
                    g = d.mig_template[gi]
                    position = sum(inst.count for inst in g.instances[:ii]) + slot
                    dev_id = f"{d.uuid}[{g.group}-{position}]"
                    realmem = g.instances[ii].memory
                    factor = self.family.config.gpu_memory_factor
                    claimed = d.mig_index < 0
                    d.mig_index = gi
                    e = Entry(d.index, realmem // factor if factor > 1 else realmem, c.cores, (ii, slot), claimed)
                else:
                    dev_id = d.uuid
                    e = Entry(d.index, memreq, c.cores, None, False)
                self._apply(uid, e)
                taken.append(e)
                if nums > 0:
                    nums -= 1
                    devs.append((dev_id, memreq, c.cores))  # the annotation records the request, not the instance
                    score += _gpu_score(policy, d)
                if nums == 0:
                    break
            if nums > 0:
                if (req.allow or req.deny) and not uuid_matched:
                    err = (f'no GPU matches UUID constraints {USE_UUID}={json.dumps(req.uuid_annotations[0])}, '
                           f'{NOUSE_UUID}={json.dumps(req.uuid_annotations[1])} on node {self.name}')
                else:
                    err = "not enough gpu fitted on this node"
                    self._undo(uid, taken)
                    taken = []
                break
            per_container.append(devs)
            if req.topology and single and len(taken) > mark:
                tscore += topology.single_score(topo, taken[mark].device, untouched, self.family.pending_cards,
                                                req.topology)
        if err is None and frag is not None and not commit:
            score = self.family.scorer.score(frag, self.gpu_key())  # on the tentative state, before the undo
        if err is not None or not commit:
            self._undo(uid, taken)
        if err is not None:
            return err
        return taken, per_container, score + tscore

    def _fit_topology(self, uid: str, req: VGPURequest, c: ContainerRequest, policy: str,
                      frag: FragContext | None, reserved: set[int] | None, topo: CardTopology,
                      taken: list[Entry], planned: frozenset[int] | None = None):
        """One container by the device topology (topology.choose): every GPU that can take a vGPU of
        it, in the policy's order, then the set in one domain, else (preferred) the best weakest link.
        ``planned``: the cards the fragmentation policy's look-ahead planned for the pod here, taken when
        they still fit (topology.planned_choice).  Applies the chosen entries (into ``taken``);
        ([(id, mem, cores)], Volcano's score, the topology score) or the error."""
        cands: list[tuple[GPUDevice, int]] = []
        for d in (self._frag_order(c, frag) if frag is not None else self._order(policy)):
            if (req.allow or req.deny) and (
                    not d.uuid or (req.allow and d.uuid not in req.allow) or d.uuid in req.deny):
                continue
            if d.number <= d.used_num or (reserved and d.index in reserved):
                continue
            if req.group and self._same_group(d, req.group, uid):
                continue
            memreq = d.memory * c.pct // 100 if c.pct != PCT_UNSET else c.memreq
            if (d.memory - d.used_mem < memreq or d.used_core + c.cores > 100 or (c.cores == 100 and d.used_num > 0)
                    or (d.used_core == 100 and c.cores == 0) or not type_allowed(req, d.type)):
                continue
            cands.append((d, memreq))
        positions = [d.index for d, _ in cands]
        required = req.topology == topology.REQUIRED
        choice = topology.planned_choice(topo, positions, planned, c.nums, req.topology) if planned else None
        if choice is None:
            choice = topology.choose(topo, positions, c.nums, req.topology)
        if choice is None:
            if required and len(cands) >= c.nums:
                return topology.domains_line(topo, positions, c.nums)
            return "not enough gpu fitted on this node"
        tscore = topology.placement_score(topo, choice, positions, c.nums, self.family.pending_cards,
                                          req.topology)
        score = 0.0
        chosen = set(choice.cards)
        devs = []
        for d, memreq in cands:
            if d.index not in chosen:
                continue
            e = Entry(d.index, memreq, c.cores, None, False)
            self._apply(uid, e)
            taken.append(e)
            devs.append((d.uuid, memreq, c.cores))
            score += _gpu_score(policy, d)
        return devs, score, tscore

    def _undo(self, uid: str, taken: list[Entry]) -> None:
        for e in reversed(taken):
            self._unapply(uid, e)
        taken.clear()

    def _same_group(self, d: GPUDevice, group: str, uid: str) -> bool:
        for other in d.pods:
            if other == uid:
                continue
            h = self.holders.get(other)
            if h is not None and h.group == group and any(
                    e.device == d.index and (e.mem > 0 or e.cores > 0) for e in h.entries):
                return True
        return False

    # -- NodeDevices -----------------------------------------------------------------------------

    def _frag_context(self, task: TaskInfo) -> FragContext | None:
        scorer = self.family.scorer
        if scorer is None or self.node is None:
            return None  # outside a session opened with the policy: feasibility only, index order
        return scorer.context(task, self.node, self)

    def _fragmentation(self, task: TaskInfo, req: VGPURequest) -> str | float:
        """The fragmentation policy's verdict (an error) or node score, memoised by node state."""
        ctx = self._frag_context(task)
        if ctx is None:
            res = self._fit(task, req, FRAGMENTATION, False)
            return res if isinstance(res, str) else 0.0
        key = None
        # the memo holds for requests whose fit depends on GPU usage alone
        if not (req.allow or req.deny or req.group or req.rules) and self.mode == HAMI_CORE:
            key = self.family.scorer.key(ctx, req)
            if req.topology and self.topology is not None and (
                    self.family.pending_cards > 1 or req.topology == topology.PAIRSCORE
                    or any(c.nums > 1 for c in req.containers)):
                # the topology score depends on which cards are free, not only on how many
                key = (key, self.topology.domains, self.topology.links, self.family.pending_cards,
                       tuple((d.used_num, d.used_core, d.used_mem) for d in self.devices),
                       self.topology.ids if req.topology == topology.REQUIRED else None)  # its reason names cards
            hit = self.family.scorer.memo.get(key)
            if hit is not None:
                return hit.replace(NODE_NAME, self.name) if isinstance(hit, str) else hit
        res = self._fit(task, req, FRAGMENTATION, False, ctx)
        out = res if isinstance(res, str) else res[2]
        if key is not None:
            # nodes in the same state share the verdict; a reason that names the node names each its own
            self.family.scorer.remember(key, out.replace(self.name, NODE_NAME) if isinstance(out, str) else out)
        return out

    def filter(self, task: TaskInfo, req: VGPURequest, policy: str) -> FilterResult | None:
        if policy == FRAGMENTATION:
            out = self._fragmentation(task, req)
            if isinstance(out, str):
                return FilterResult(StatusCode.Unschedulable, f"hami-vgpuDeviceSharing error: {out}")
            self._score = (task.uid, out)
            return None
        if req.single is not None and self.mode == HAMI_CORE:
            out = self._probe(req, policy)
            if isinstance(out, str):
                return FilterResult(StatusCode.Unschedulable, f"hami-vgpuDeviceSharing error: {out}")
            self._score = (task.uid, out)
            return None
        res = self._fit(task, req, policy, False)
        if isinstance(res, str):
            return FilterResult(StatusCode.Unschedulable, f"hami-vgpuDeviceSharing error: {res}")
        self._score = (task.uid, res[2])
        return None

    def score(self, task: TaskInfo, req: VGPURequest, policy: str) -> float:
        cached = self._score
        if cached is not None and cached[0] == task.uid:
            return cached[1]
        if policy == FRAGMENTATION:
            out = self._fragmentation(task, req)
            return 0.0 if isinstance(out, str) else out
        res = self._fit(task, req, policy, False)
        return 0.0 if isinstance(res, str) else res[2]

    def allocate(self, task: TaskInfo, req: VGPURequest, policy: str, now: float) -> dict[str, str]:
        frag = self._frag_context(task) if policy == FRAGMENTATION else None
        res = self._fit(task, req, policy, True, frag)
        if isinstance(res, str):
            raise AllocateError(res)
        entries, per_container, _ = res
        # _fit applied the counters; record the holder for release
        self.holders[task.uid] = Holder(task.key, task.spec.labels, group_key(task), tuple(entries))
        self._score = None
        ids = encode_pod_devices(per_container)
        t = str(int(now))
        return {
            VGPU_NODE: self.name,
            VGPU_TIME: t,
            VGPU_IDS: ids,
            DEVICES_TO_ALLOCATE: ids,
            BIND_PHASE: "allocating",
            BIND_TIME: t,
        }

    def release(self, task: TaskInfo) -> tuple[str, ...]:
        self.remove_pod(task)
        return release_keys(task, BIND_PHASE, RELEASE_KEYS)

    def queue_resource(self, task: TaskInfo) -> dict[str, float] | None:
        """``AddQueueResource`` (spec §6.3.9): the queue counts the granted memory and cores, summed over
        the pod's own ``vgpu-ids-new`` entries that match this node's GPUs, in milli-units.  As in Volcano
        only the annotation on the pod counts: a pod bound in this session reports its requests until the
        next session sees the annotation."""
        ids = pod_annotations(task).get(VGPU_IDS)
        if ids is None or self.family.request(task) is None:
            return None
        cfg = self.family.config
        res: dict[str, float] = {}
        for ctr in decode_pod_devices(ids):
            for dev_id, mem, cores in ctr:
                for d in self.devices:
                    if d.uuid in dev_id:
                        res[cfg.memory_name] = res.get(cfg.memory_name, 0.0) + mem * 1000
                        res[cfg.core_name] = res.get(cfg.core_name, 0.0) + cores * 1000
        return res

    def describe(self) -> list[DeviceUse]:
        out = []
        for d in self.devices:
            pods = sorted(self.holders[u].key for u in d.pods if u in self.holders)
            out.append(DeviceUse(id=d.uuid, type=d.type, memory_used=d.used_mem, memory_total=d.memory,
                                 cores_used=d.used_core, slots_used=d.used_num, slots_total=d.number, pods=pods,
                                 health=d.health))
        return out


def _binpack_key(d: GPUDevice) -> tuple[int, int]:
    return -d.used_mem, d.index


def _spread_key(d: GPUDevice) -> tuple[int, int]:
    return d.used_num, d.index


def _gpu_score(policy: str, d: GPUDevice) -> float:
    """``GPUScore`` after the tentative add: spread is therefore always 0 (spec §6.3.4)."""
    if policy == BINPACK:
        return 100.0 * d.used_mem / d.memory if d.memory else 0.0
    if policy == SPREAD:
        return 100.0 if d.used_num == 0 else 0.0
    return 0.0
