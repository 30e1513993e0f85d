"""HAMi Ascend vNPU (``deviceshare.AscendHAMiVNPUEnable``, spec §2.3.2, §4.3, §5.3, §6.8, §10.3).

Volcano file: api/devices/ascend/hami/device_info.go.  Every ``vnpus.configs`` entry
is its own device kind, named by its ``commonWord`` CW (``Ascend310P``,
``Ascend910B3``…).  HAMi's ascend-device-plugin publishes a node's NPUs as JSON in
``hami.io/node-register-<CW>``; the scheduler writes
``hami.io/<CW>-devices-to-allocate`` (what the plugin consumes),
``hami.io/<CW>-devices-allocated`` (its own ledger), the runtime info
``huawei.com/<CW>`` and the ``hami.io/`` bind keys.

Volcano's behaviour, kept: request extraction and ``trimMemory`` rounding up to a
template, ``verifyReq``, the ``fit`` checks in order, the score sort, the NetworkID
topology for Ascend910*, the score formula, and the policy quirk (Allocate uses the
policy the last ``ScoreNode`` stored, "" when node order never ran, spec §6.8.6).
Go iterates a hash map where Volcano visits devices; vcsched visits them in
register order, a stable sort by score then keeps ties in that order.

Where vcsched does better, on purpose (spec §9):
- E-20: the ledger reads every container of ``…-devices-allocated``; Volcano decodes
  the whole value as one container, so devices after the first container get a
  ``;``-prefixed ID, match nothing, and the node looks emptier than it is.
- the in-session ledger is keyed by pod UID, so a discarded allocation leaves nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from vcsched.api.quantity import QuantityError, parse_quantity
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import StatusCode

from .base import (
    AllocateError, DeviceFamily, DeviceUse, FilterResult, NodeDevices, annotation, containers, limits,
    pod_annotations, quantity, release_keys, requests,
)
from . import topology
from .config import BINPACK, SPREAD, VNPUConfig
from .topology import CardTopology

log = structlog.get_logger("vcsched.deviceshare")

VNPU_MODE = "huawei.com/vnpu-mode"
HAMI_CORE = "hami-core"
NODE_HAMI_CORE = "hami-vnpu-core"  # node annotation: "true" when the node runs hami-core
ASSIGNED_NODE = "hami.io/vgpu-node"
ASSIGNED_TIME = "hami.io/vgpu-time"
BIND_PHASE = "hami.io/bind-phase"
BIND_TIME = "hami.io/bind-time"
PREDICATE_TIME = "predicate-time"
ASCEND910_PREFIX = "Ascend910"
NETWORK_WEIGHT = 10
NO_DEVICE = "no ascend device available"
PCT_UNSET = 101


@dataclass(slots=True, frozen=True)
class ContainerRequest:
    """``ContainerDeviceRequest`` before the node's device memory is known."""

    nums: int
    memreq: int
    pct: int  # 101: unset; 100 when no memory is asked (a whole card)
    cores: int


@dataclass(slots=True, frozen=True)
class AscendRequest:
    containers: tuple[ContainerRequest, ...]
    hami_core: bool  # huawei.com/vnpu-mode: hami-core
    topology: str = ""  # "required", "preferred" or "" for Volcano's placement (topology.py)


class NPUDevice:
    """One NPU from the register JSON (``DeviceInfo``) with its ``DeviceUsage``."""

    __slots__ = ("id", "index", "count", "devmem", "devcore", "type", "health", "has_network", "network",
                 "used", "usedmem", "usedcores")

    def __init__(self, id_: str, index: int, count: int, devmem: int, devcore: int, type_: str, health: bool,
                 has_network: bool, network: float | None) -> None:
        self.id = id_
        self.index = index
        self.count = count
        self.devmem = devmem
        self.devcore = devcore
        self.type = type_
        self.health = health
        self.has_network = has_network  # custominfo holds a NetworkID key
        self.network = network  # its value when it is a JSON number (only those are grouped)
        self.used = 0
        self.usedmem = 0
        self.usedcores = 0

    def clone(self) -> "NPUDevice":
        d = NPUDevice.__new__(NPUDevice)
        d.id, d.index, d.count, d.devmem, d.devcore, d.type, d.health = (
            self.id, self.index, self.count, self.devmem, self.devcore, self.type, self.health)
        d.has_network, d.network = self.has_network, self.network
        d.used, d.usedmem, d.usedcores = self.used, self.usedmem, self.usedcores
        return d


@dataclass(slots=True, frozen=True)
class Holder:
    """A pod on this node's devices: (device position, memory, cores) per device it holds."""

    name: str  # ns/name
    entries: tuple[tuple[int, int, int], ...]


def cal_score(policy: str, d: NPUDevice) -> float:
    """``CalScore``: binpack by used memory, spread rewards an unused device, else 0."""
    if d.devmem == 0:
        return 0.0
    if policy == BINPACK:
        return 100.0 * d.usedmem / d.devmem
    if policy == SPREAD:
        return 100.0 if d.used == 0 else 0.0
    return 0.0


def trim_memory(cfg: VNPUConfig, m: int) -> tuple[int, str]:
    """``trimMemory``: the first template with enough memory, else the whole card up to the capacity, else 0."""
    for t in cfg.templates:
        if m <= t.memory:
            return t.memory, t.name
    if m <= cfg.memory_capacity:
        return cfg.memory_allocatable, ""
    return 0, ""


def encode_pod_single_device(per_container: list[list[tuple[str, str, int, int]]]) -> str:
    """``EncodePodSingleDevice``: ``ID,CW,MEM,CORES:`` per device, every container ended by ``;``."""
    return "".join("".join(f"{i},{t},{m},{c}:" for i, t, m, c in ctr) + ";" for ctr in per_container)


def decode_pod_single_device(value: str) -> list[list[tuple[str, int, int]]] | None:
    """The devices of each container; None when an item lacks fields (``DecodeContainerDevices`` errors).

    Non-numeric memory or cores read as 0 (Go ignores the ``ParseInt`` error).
    """
    out = []
    for ctr in value.split(";"):
        devs = []
        for item in ctr.split(":"):
            if "," not in item:
                continue
            f = item.split(",")
            if len(f) < 4:
                return None
            devs.append((f[0], _int32(f[2]), _int32(f[3])))
        out.append(devs)
    return out


def _int32(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        return 0
    return max(min(v, 2**31 - 1), -(2**31))


def _as_int64(raw: Any) -> int:
    """``Quantity.AsInt64``: the value when it is a whole number, else 0 (Go drops the failure)."""
    try:
        q = parse_quantity(raw)
    except (QuantityError, ValueError, TypeError):
        return 0
    return int(q) if q.denominator == 1 else 0


def _go_json(v: Any) -> str:
    """``json.Marshal``: compact, with Go's HTML escaping."""
    s = json.dumps(v, separators=(",", ":"), ensure_ascii=False)
    return s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


class AscendHAMiFamily(DeviceFamily):
    """One ``vnpus.configs`` entry: a device kind keyed by its commonWord."""

    score_stores_state = True

    def __init__(self, config: VNPUConfig, hami_vnpu_core: bool, common_words: tuple[str, ...]) -> None:
        cw = config.common_word
        self.key = cw
        self.config = config
        self.hami_vnpu_core = hami_vnpu_core  # vnpus.hamiVnpuCore: node support when it does not say
        self.register = f"hami.io/node-register-{cw}"
        self.to_allocate = f"hami.io/{cw}-devices-to-allocate"
        self.allocated = f"hami.io/{cw}-devices-allocated"
        self.runtime_info = f"huawei.com/{cw}"
        self.core_name = f"{config.resource_name}-core"
        # GetIgnoredDevices: left out of the pods' generic resource requests (spec §6.8.10)
        self.ignored = (config.resource_memory_name, self.core_name)
        # Release drops the keys of every registered kind, not only its own (spec §6.8.8)
        keys = [ASSIGNED_NODE, ASSIGNED_TIME, BIND_PHASE, BIND_TIME, PREDICATE_TIME]
        for w in common_words:
            keys += [f"hami.io/{w}-devices-to-allocate", f"hami.io/{w}-devices-allocated", f"huawei.com/{w}"]
        self.release_keys = tuple(keys)
        self.topology_default = ""  # deviceshare.TopologyPolicy
        self.pending_cards = 0  # the most NPUs one container of a pending topology pod asks (session open)

    def request(self, task: TaskInfo) -> AscendRequest | None:
        """``HasDeviceRequest`` + ``ExtractResourceRequest`` (no percentage name: no memory means 100 %)."""
        cfg = self.config
        count, memory, core = cfg.resource_name, cfg.resource_memory_name, self.core_name
        ctrs = []
        for c in containers(task):
            lim, req = limits(c), requests(c)
            if count and count in lim:
                nums = _as_int64(lim[count])
            elif memory and memory in lim:
                nums = 1
            else:
                continue
            mem_raw = lim.get(memory, req.get(memory)) if memory else None
            memreq = _int32(str(_as_int64(mem_raw))) if mem_raw is not None else 0
            core_raw = lim.get(core, req.get(core))
            cores = _int32(str(_as_int64(core_raw))) if core_raw is not None else 0
            ctrs.append(ContainerRequest(nums, memreq, 100 if memreq == 0 else PCT_UNSET, cores))
        if not ctrs:
            return None
        ann = pod_annotations(task)
        return AscendRequest(tuple(ctrs), ann.get(VNPU_MODE) == HAMI_CORE,
                             topology.pod_policy(ann, self.topology_default))

    def build(self, node: Mapping[str, Any], name: str) -> "AscendHAMiDevices | None":
        """``NewAscendDevices`` for this kind: allocatable ``<resourceName>`` > 0 and a register JSON with devices."""
        alloc = (node.get("status") or {}).get("allocatable") or {}
        raw_count = alloc.get(self.config.resource_name)
        if raw_count is None or quantity(raw_count) == 0:
            return None
        ann = (node.get("metadata") or {}).get("annotations") or {}
        hami_core = self.hami_vnpu_core
        if NODE_HAMI_CORE in ann:
            hami_core = ann[NODE_HAMI_CORE] == "true"
        raw = ann.get(self.register)
        if raw is None:
            return None
        try:
            devices = _parse_register(raw)
        except ValueError as e:
            log.warning("malformed Ascend register annotation: this node's devices of this kind are ignored",
                        node=name, annotation=self.register, error=str(e))
            return None
        if not devices:
            log.warning("Ascend register annotation lists no device", node=name, annotation=self.register)
            return None
        return AscendHAMiDevices(self, name, hami_core, devices, {}, "")


def _parse_register(raw: str) -> list[NPUDevice]:
    """``UnMarshalNodeDevices`` into ``[]*DeviceInfo``: a JSON array; a field of the wrong type is an error."""
    try:
        doc = json.loads(raw)
    except ValueError as e:
        raise ValueError(f"not JSON: {e}") from None
    if doc is None:
        return []
    if not isinstance(doc, list):
        raise ValueError("not a JSON array")
    by_id: dict[str, NPUDevice] = {}
    for i, e in enumerate(doc):
        if e is None:
            continue
        if not isinstance(e, dict):
            raise ValueError(f"[{i}]: not an object")

        def num(k: str) -> int:
            v = e.get(k)
            if v is None:
                return 0
            if isinstance(v, bool) or not isinstance(v, int):
                raise ValueError(f"[{i}].{k}: not an integer: {v!r}")
            return v

        def text(k: str) -> str:
            v = e.get(k)
            if v is None:
                return ""
            if not isinstance(v, str):
                raise ValueError(f"[{i}].{k}: not a string: {v!r}")
            return v

        health = e.get("health")
        if health is not None and not isinstance(health, bool):
            raise ValueError(f"[{i}].health: not a bool: {health!r}")
        custom = e.get("custominfo")
        if custom is not None and not isinstance(custom, dict):
            raise ValueError(f"[{i}].custominfo: not an object")
        has_net = custom is not None and "NetworkID" in custom
        net = custom.get("NetworkID") if has_net else None
        network = float(net) if isinstance(net, (int, float)) and not isinstance(net, bool) else None
        if num("index") < 0:
            raise ValueError(f"[{i}].index: negative")  # a uint in Go
        d = NPUDevice(text("id"), num("index"), num("count"), num("devmem"), num("devcore"), text("type"),
                      bool(health), has_net, network)
        by_id[d.id] = d  # Volcano keys devices by id: a repeated id replaces the earlier one
    return list(by_id.values())


class AscendHAMiDevices(NodeDevices):
    """``AscendDevices``: one kind's NPUs on one node, with the ledger of the pods on them."""

    __slots__ = ("family", "name", "hami_core", "devices", "holders", "policy", "_pos", "topology", "tscore")

    def __init__(self, family: AscendHAMiFamily, name: str, hami_core: bool, devices: list[NPUDevice],
                 holders: dict[str, Holder], policy: str) -> None:
        self.family = family
        self.name = name
        self.hami_core = hami_core
        self.devices = devices
        self.holders = holders
        # the policy the last ScoreNode stored; Allocate uses it (spec §6.8.6)
        self.policy = policy
        self._pos = {d.id: i for i, d in enumerate(devices)}
        self.topology: CardTopology | None = None  # topology.attach: HCCS domains, or vcsched's annotation
        self.tscore = 0.0  # the topology score of the last select

    @property
    def key(self) -> str:  # type: ignore[override]
        return self.family.key

    def clone(self) -> "AscendHAMiDevices":
        c = AscendHAMiDevices(self.family, self.name, self.hami_core, [d.clone() for d in self.devices],
                              dict(self.holders), self.policy)
        c.topology = self.topology
        return c

    def topology_inputs(self):
        """Card ids by position, and the HCCS layout: NetworkID, else the chip model's server layout."""
        devs = self.devices
        nets = [d.network for d in devs] if all(d.has_network for d in devs) else None
        hccs = topology.ascend_layout(self.family.key, [d.index for d in devs], nets)
        return tuple(d.id for d in devs), False, hccs

    # -- ledger ---------------------------------------------------------------------------------

    def _hold(self, task: TaskInfo, entries: tuple[tuple[int, int, int], ...]) -> None:
        for pos, mem, cores in entries:
            d = self.devices[pos]
            d.used += 1
            d.usedmem += mem
            d.usedcores += cores
        self.holders[task.uid] = Holder(task.key, entries)

    def add_pod(self, task: TaskInfo) -> None:
        """``AddResource`` from ``hami.io/<CW>-devices-allocated`` (bind-phase is not checked, spec E-36)."""
        if task.uid in self.holders:
            return
        value = annotation(task, self.family.allocated)
        if value is None:
            return
        decoded = decode_pod_single_device(value)
        if decoded is None:
            log.warning("cannot decode Ascend devices annotation; the pod is not counted", node=self.name,
                        pod=task.key, annotation=self.family.allocated)
            return
        entries = []
        seen = set()
        for ctr in decoded:
            for dev_id, mem, cores in ctr:
                pos = self._pos.get(dev_id)
                if pos is None:
                    log.warning("ascend device not found", node=self.name, pod=task.key, device=dev_id)
                    continue
                if pos in seen:
                    continue  # one usage per pod and device (PodMap)
                seen.add(pos)
                entries.append((pos, mem, cores))
        if entries:
            self._hold(task, tuple(entries))

    def remove_pod(self, task: TaskInfo) -> None:
        h = self.holders.pop(task.uid, None)
        if h is None:
            return
        for pos, mem, cores in h.entries:
            d = self.devices[pos]
            d.used -= 1
            d.usedmem -= mem
            d.usedcores -= cores

    def holds(self, uid: str) -> bool:
        return uid in self.holders

    # -- selectDevices --------------------------------------------------------------------------

    def _fit(self, memreq: int, cores: int, hami_core: bool, d: NPUDevice) -> bool:
        """``fit``, in Volcano's order (the request type always equals this kind here)."""
        return self._misfit(memreq, cores, hami_core, d) is None

    def _misfit(self, memreq: int, cores: int, hami_core: bool, d: NPUDevice) -> str | None:
        """Why ``fit`` refuses the device (its first failed check), None when it fits."""
        if hami_core and not self.hami_core:
            return f"{d.id} not hami-core"
        if d.count <= d.used:
            return f"{d.id} {d.used}/{d.count} vNPUs used"
        if d.devmem - d.usedmem < memreq:
            return f"{d.id} {d.devmem - d.usedmem}MiB free < {memreq}MiB"
        total = 100 if hami_core else d.devcore
        if total - d.usedcores < cores:
            return f"{d.id} {total - d.usedcores} cores free < {cores}"
        if total == 100 and cores == 100 and d.used > 0:
            return f"{d.id} shared, 100 cores asked"
        if total != 0 and d.usedcores == total and cores == 0:
            return f"{d.id} all cores used"
        return None

    def select(self, req: AscendRequest, policy: str):
        """``selectDevices``: per container [(device, memreq, cores)], or (code, reason) when it fails."""
        cfg = self.family.config
        if not self.devices:
            return StatusCode.Error, NO_DEVICE
        ordered = sorted(self.devices, key=lambda d: -cal_score(policy, d)) if policy else self.devices
        need_topology = self.family.key.startswith(ASCEND910_PREFIX) and all(d.has_network for d in ordered)
        first = ordered[0]
        template_mode = not req.hami_core
        out: list[list[tuple[NPUDevice, int, int]]] = []
        taken: set[str] = set()
        topo = self.topology if req.topology else None
        self.tscore = 0.0
        for c in req.containers:
            memreq = c.memreq
            if memreq == 0 and c.pct != 0:
                memreq = first.devmem * c.pct // 100
            if memreq > 0 and template_mode:
                memreq = trim_memory(cfg, memreq)[0]
            if template_mode and c.nums > 1 and trim_memory(cfg, memreq)[0] != cfg.memory_allocatable:
                # FilterNode's reason is "no ascend device available" for every failure; the error follows
                return StatusCode.Error, (f"{NO_DEVICE}: vNPU does not support partial memory allocation when "
                                          "requesting multiple devices")
            remaining = c.nums
            chosen: list[NPUDevice] = []
            for d in ordered:
                if d.id in taken or not self._fit(memreq, c.cores, req.hami_core, d):
                    continue
                chosen.append(d)
                remaining -= 1
                if remaining <= 0 and not need_topology and topo is None:
                    break  # Volcano appends before it checks: a count of 0 still takes one device
            if remaining > 0:
                return StatusCode.Unschedulable, self._shortfall(c, memreq, req.hami_core, len(chosen), taken, ordered)
            if req.topology and c.nums == 1 and req.topology != topology.PAIRSCORE:
                # one NPU: the kind's own order; the score keeps domains a pending bigger request needs
                chosen = _by_network(c.nums, chosen) if need_topology else chosen[:1]
                untouched = [i for i, d in enumerate(self.devices) if d.used == 0]
                self.tscore += topology.single_score(topo, self._pos[chosen[0].id], untouched,
                                                     self.family.pending_cards, req.topology)
            elif req.topology and c.nums > 0:
                if topo is None:
                    self.tscore += topology.no_topology_score(req.topology)
                    chosen = _by_network(c.nums, chosen) if need_topology else chosen[:c.nums]
                else:
                    positions = [self._pos[d.id] for d in chosen]
                    choice = topology.choose(topo, positions, c.nums, req.topology)
                    if choice is None:
                        return StatusCode.Unschedulable, f"{NO_DEVICE}: {topology.domains_line(topo, positions, c.nums)}"
                    self.tscore += topology.placement_score(topo, choice, positions, c.nums,
                                                            self.family.pending_cards, req.topology)
                    picked = set(choice.cards)
                    chosen = [d for d in chosen if self._pos[d.id] in picked]
            elif need_topology:
                chosen = _by_network(c.nums, chosen)
            taken.update(d.id for d in chosen)
            out.append([(d, memreq, c.cores) for d in chosen])
        return out

    def _shortfall(self, c: ContainerRequest, memreq: int, hami_core: bool, found: int, taken: set[str],
                   ordered: list[NPUDevice]) -> str:
        """Volcano's reason, then the kind, the count short and why each device was passed over."""
        if hami_core and not self.hami_core:
            return (f"{NO_DEVICE}: {found} of {c.nums} {self.family.key} fit {memreq}MiB {c.cores} cores "
                    "(hami-core mode, the node does not run hami-core)")
        misfits = [m for d in ordered if d.id not in taken
                   for m in (self._misfit(memreq, c.cores, hami_core, d),) if m is not None]
        shown = "; ".join(misfits[:4]) + ("; …" if len(misfits) > 4 else "")
        mode = "hami-core" if hami_core else "template"
        return (f"{NO_DEVICE}: {found} of {c.nums} {self.family.key} fit {memreq}MiB"
                f"{f' {c.cores} cores' if c.cores else ''} ({mode} mode: {shown})")

    # -- NodeDevices ----------------------------------------------------------------------------

    def filter(self, task: TaskInfo, req: AscendRequest, policy: str) -> FilterResult | None:
        res = self.select(req, policy)
        if isinstance(res, tuple):
            return FilterResult(res[0], res[1])
        return None

    def score(self, task: TaskInfo, req: AscendRequest, policy: str) -> float:
        """``ScoreNode``: stores the policy for Allocate, then the first device of each container."""
        self.policy = policy
        res = self.select(req, policy)
        if isinstance(res, tuple):
            return 0.0
        firsts = [ctr[0][0] for ctr in res if ctr]
        s = sum(cal_score(policy, d) for d in firsts) + self.tscore
        if self.family.key.startswith(ASCEND910_PREFIX) and all(d.has_network for d in firsts):
            counts: dict[float, int] = {}
            for d in firsts:
                if d.network is not None:
                    counts[d.network] = counts.get(d.network, 0) + 1
            total = sum(counts.values())
            if total == 0:
                return 0.0  # Volcano returns 0 for the whole node here
            s += max(counts.values()) / total * NETWORK_WEIGHT
        return s

    def allocate(self, task: TaskInfo, req: AscendRequest, policy: str, now: float) -> dict[str, str]:
        # Volcano uses the policy ScoreNode stored, not the configured one (spec §6.8.6)
        res = self.select(req, self.policy)
        if isinstance(res, tuple):
            raise AllocateError(f"failed to select ascend devices for pod {task.name}: {res[1]}")
        fam = self.family
        cw = fam.key
        per_container = [[(d.id, cw, mem, cores) for d, mem, cores in ctr] for ctr in res]
        encoded = encode_pod_single_device(per_container)
        info: list[dict[str, Any]] | None = []
        for ctr in res:
            for d, mem, cores in ctr:
                item: dict[str, Any] = {"UUID": d.id} if d.id else {}
                if req.hami_core:
                    if mem:
                        item["memory"] = mem
                    if cores:
                        item["core"] = cores
                else:
                    temp = trim_memory(fam.config, mem)[1]
                    if temp:
                        item["temp"] = temp
                info.append(item)
        t = str(int(now))
        self._hold(task, tuple((self._pos[d.id], mem, cores) for ctr in res for d, mem, cores in ctr))
        return {
            fam.to_allocate: encoded,
            fam.allocated: encoded,
            PREDICATE_TIME: t,
            fam.runtime_info: _go_json(info or None),  # Go marshals an empty (nil) list as null
            ASSIGNED_NODE: self.name,
            ASSIGNED_TIME: t,
            BIND_PHASE: "allocating",
            BIND_TIME: t,
        }

    def release(self, task: TaskInfo) -> tuple[str, ...]:
        self.remove_pod(task)
        return release_keys(task, BIND_PHASE, self.family.release_keys)

    def describe(self) -> list[DeviceUse]:
        out = []
        for pos, d in enumerate(self.devices):
            pods = sorted(h.name for h in self.holders.values() if any(e[0] == pos for e in h.entries))
            out.append(DeviceUse(id=d.id, type=d.type or self.family.key, memory_used=d.usedmem,
                                 memory_total=d.devmem, cores_used=d.usedcores, slots_used=d.used,
                                 slots_total=d.count, pods=pods, health=d.health))
        return out


def _by_network(nums: int, chosen: list[NPUDevice]) -> list[NPUDevice]:
    """``selectDevicesWithTopology``: the largest NetworkID groups first (ties: first seen)."""
    groups: dict[float, list[NPUDevice]] = {}
    for d in chosen:
        if d.network is not None:
            groups.setdefault(d.network, []).append(d)
    out: list[NPUDevice] = []
    for devs in sorted(groups.values(), key=len, reverse=True):
        for d in devs:
            out.append(d)
            if len(out) == nums:
                return out
    return out
