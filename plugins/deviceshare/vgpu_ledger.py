"""vGPU device state: the per-card ledger of one node's GPUs and the pods that hold them.

``GPUDevice`` is one card as the register annotation lists it, with its counters (vGPUs, memory, cores,
MIG instance slots); ``Entry`` is one card a pod holds, ``Holder`` all of a pod's entries.  ``VGPULedger``
keeps them per node, keyed by pod UID: ``add_pod`` counts a bound pod from its ``volcano.sh/vgpu-ids-new``
(vgpu_annotations.py), ``_apply``/``_unapply`` move the counters for one entry, and ``describe`` /
``queue_resource`` / ``gpu_key`` read the state back.  Choosing cards for a pod is vgpu.py's
``VGPUDevices``, which is this ledger plus the allocation.  Volcano files:
api/devices/nvidia/vgpu/{device_info,utils,mig}.go.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog

from vcsched.api.task_info import TaskInfo

from .base import DeviceUse, NodeDevices, annotation, group_key, pod_annotations
from .config import MigGeometry
from .topology import CardTopology
from .vgpu_annotations import MIG, VGPU_IDS, decode_pod_devices, mig_position

if TYPE_CHECKING:
    from .vgpu import VGPUFamily

log = structlog.get_logger("vcsched.deviceshare")


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


class VGPULedger(NodeDevices):
    """One node's vGPU cards and who holds what on them (the state ``VGPUDevices`` allocates from)."""

    __slots__ = ("family", "name", "mode", "devices", "holders", "_score", "node", "_ordered", "topology")

    def __init__(self, family: VGPUFamily, name: str, mode: str, devices: list[GPUDevice],
                 holders: dict[str, Holder]) -> None:
        self.family = family
        self.name = name
        self.mode = mode
        self.devices = devices
        self.holders = holders
        self._score: tuple[str, float] | None = None  # (task uid, node score) of VGPUDevices.filter
        self.node = None  # the session's NodeInfo, set at session open for the fragmentation policy
        # (policy, devices in that policy's visiting order): kept until a counter changes (_apply/_unapply)
        self._ordered: tuple[str, list[GPUDevice]] | None = None
        self.topology: CardTopology | None = None  # topology.attach sets it when the node publishes one

    def clone(self) -> "VGPULedger":
        c = type(self)(self.family, self.name, self.mode, [d.clone() for d in self.devices], dict(self.holders))
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
                    pos = mig_position(dev_id)
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

    # -- reading the state back -----------------------------------------------------------------

    def gpu_key(self) -> tuple[tuple[str, int, int, int, int, int], ...]:
        """The GPUs' usage as a sorted tuple: the node state the fragmentation policy memoises on."""
        return tuple(sorted((d.type, d.memory, d.number, d.used_num, d.used_core, d.used_mem) for d in self.devices))

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
