"""vGPU (volcano-vgpu-device-plugin / HAMi): hami-core sharing and dynamic MIG (spec §4.2, §5.2, §6.3–§6.7).

This module is the kind and its allocation: ``VGPUFamily`` reads a pod's request and builds a node's
cards from its register annotation; ``VGPUDevices`` chooses the cards for a pod (filter, score,
allocate; ``checkNodeGPUSharingPredicateAndScore``).  The per-card ledger it allocates from is
vgpu_ledger.py; the annotation keys and codecs are vgpu_annotations.py.

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
    AllocateError, DeviceFamily, FilterResult, containers, group_key, limits, pod_annotations, quantity,
    release_keys, requests,
)
from .config import BINPACK, FRAGMENTATION, SPREAD, NvidiaConfig
from . import topology
from .fragmentation import FragContext, FragmentationScorer, WorkloadHistogram
from .topology import CardTopology
from .vgpu_annotations import (
    BIND_PHASE, BIND_TIME, DEVICE_TYPE, DEVICES_TO_ALLOCATE, HAMI_CORE, MIG, NODE_RESOURCES, NOUSE_TYPE,
    NOUSE_UUID, PODGROUP_POLICY, REGISTER, RELEASE_KEYS, USE_TYPE, USE_UUID, VGPU_IDS, VGPU_MODE, VGPU_NODE,
    VGPU_TIME, encode_pod_devices,
)
from .vgpu_ledger import Entry, GPUDevice, Holder, VGPULedger

log = structlog.get_logger("vcsched.deviceshare")

KEY = "hamivgpu"
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


class VGPUDevices(VGPULedger):
    """A node's vGPU cards (the ledger, vgpu_ledger.py) and the choice of cards for a pod."""

    key = KEY
    __slots__ = ()

    # -- the core routine (checkNodeGPUSharingPredicateAndScore) ---------------------------------------
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
