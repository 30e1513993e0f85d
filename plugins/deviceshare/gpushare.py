"""gpushare: ``volcano.sh/gpu-memory`` sharing and ``volcano.sh/gpu-number`` whole cards (spec §4.1, §6.1, §6.2).

Files in Volcano: api/devices/nvidia/gpushare/{device_info,share}.go.  The node
publishes ``capacity[volcano.sh/gpu-memory]`` (total MiB) and
``capacity[volcano.sh/gpu-number]`` (cards); cards get IDs 0..n-1, memory
``floor(total / n)`` each, minus the IDs in ``volcano.sh/gpu-unhealthy-ids``.
The scheduler writes ``volcano.sh/gpu-index`` and ``volcano.sh/predicate-time``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from vcsched.api.task_info import TaskInfo
from vcsched.api.types import StatusCode

from . import topology
from .base import (
    AllocateError, DeviceFamily, DeviceUse, FilterResult, NodeDevices, annotation, containers, init_containers, limits,
    pod_annotations, quantity,
)
from .topology import CardTopology

log = structlog.get_logger("vcsched.deviceshare")

KEY = "GpuShare"
GPU_MEMORY = "volcano.sh/gpu-memory"
GPU_NUMBER = "volcano.sh/gpu-number"
GPU_INDEX = "volcano.sh/gpu-index"
PREDICATE_TIME = "volcano.sh/predicate-time"
UNHEALTHY_IDS = "volcano.sh/gpu-unhealthy-ids"


def _pod_total(task: TaskInfo, name: str) -> int:
    """``getGPUMemoryOfPod`` / ``getGPUNumberOfPod``: max(sum of containers, max of init containers), limits only."""
    total = sum(quantity(limits(c).get(name, 0)) for c in containers(task))
    init = max((quantity(limits(c).get(name, 0)) for c in init_containers(task)), default=0)
    return max(total, init)


def gpu_index(raw: str | None) -> list[int] | None:
    """``GetGPUIndex``: comma-separated ids; any item that is not an integer drops the whole list."""
    if not raw:
        return None
    try:
        return [int(x) for x in raw.split(",")]
    except ValueError:
        return None


@dataclass(slots=True, frozen=True)
class GpuShareRequest:
    memory: int  # MiB, the whole pod on one card
    number: int  # whole idle cards
    topology: str = ""  # "required", "preferred" or "" (topology.py; number mode only)


class GpuShareFamily(DeviceFamily):
    on_every_node = True
    key = KEY

    def __init__(self, sharing: bool, number: bool) -> None:
        self.sharing = sharing
        self.number = number
        self.topology_default = ""  # deviceshare.TopologyPolicy
        self.pending_cards = 0  # the most cards a pending topology pod asks (session open)

    def request(self, task: TaskInfo) -> GpuShareRequest | None:
        mem = _pod_total(task, GPU_MEMORY) if self.sharing else 0
        num = _pod_total(task, GPU_NUMBER) if self.number else 0
        if mem > 0 or num > 0:
            topo = topology.pod_policy(pod_annotations(task), self.topology_default) if num > 0 else ""
            return GpuShareRequest(mem, num, topo)
        return None

    def build(self, node: Mapping[str, Any], name: str) -> "GpuShareDevices | None":
        capacity = (node.get("status") or {}).get("capacity") or {}
        if GPU_MEMORY not in capacity or GPU_NUMBER not in capacity:
            return None
        total, number = quantity(capacity[GPU_MEMORY]), quantity(capacity[GPU_NUMBER])
        if number <= 0:
            log.warning("node has gpu-memory but gpu-number 0: no gpushare devices", node=name)
            return None
        per_card = total // number
        unhealthy: set[int] = set()
        raw = ((node.get("metadata") or {}).get("annotations") or {}).get(UNHEALTHY_IDS)
        if raw:
            for item in raw.split(","):
                try:
                    unhealthy.add(int(item))
                except ValueError:
                    log.warning("ignoring a malformed unhealthy GPU id", node=name, annotation=UNHEALTHY_IDS,
                                value=item)
        ids = [i for i in range(number) if i not in unhealthy]
        return GpuShareDevices(self, name, ids, per_card, [{} for _ in ids])


class GpuShareDevices(NodeDevices):
    key = KEY
    __slots__ = ("family", "name", "ids", "memory", "pods", "owners", "topology")

    def __init__(self, family: GpuShareFamily, name: str, ids: list[int], memory: int,
                 pods: list[dict[str, int]], owners: dict[str, tuple[tuple[int, ...], str]] | None = None) -> None:
        self.family = family
        self.name = name
        self.ids = ids  # healthy card ids, ascending
        self.memory = memory  # MiB per card
        self.pods = pods  # per card: pod uid → MiB it holds
        self.owners: dict[str, tuple[tuple[int, ...], str]] = owners or {}  # pod uid → (card positions, ns/name)
        self.topology: CardTopology | None = None  # topology.attach: vcsched's annotation, ids "0", "1", …

    def clone(self) -> "GpuShareDevices":
        c = GpuShareDevices(self.family, self.name, self.ids, self.memory, [dict(p) for p in self.pods],
                            dict(self.owners))
        c.topology = self.topology
        return c

    def topology_inputs(self):
        return tuple(str(i) for i in self.ids), False, None

    def _by_topology(self, req: GpuShareRequest):
        """Whole cards by the device topology: (positions, topology score) or the reason they do not fit."""
        idle = self._idle_cards()
        topo = self.topology
        if req.number == 1 and idle and req.topology != topology.PAIRSCORE:
            # one card: Volcano's (the first idle); the score keeps domains a pending bigger request needs
            return [idle[0]], topology.single_score(topo, idle[0], idle, self.family.pending_cards, req.topology)
        if topo is None:
            return (idle[:req.number], topology.no_topology_score(req.topology)) if len(idle) >= req.number else None
        required = req.topology == topology.REQUIRED
        choice = topology.choose(topo, idle, req.number, req.topology)
        if choice is None:
            if required and len(idle) >= req.number:
                return f"GpuNumber {topology.domains_line(topo, idle, req.number)} on node {self.name}"
            return None
        return list(choice.cards), topology.placement_score(topo, choice, idle, req.number,
                                                            self.family.pending_cards, req.topology)

    def _idle(self, pos: int) -> int:
        used = 0
        for m in self.pods[pos].values():
            used += m
        return max(self.memory - used, 0)  # clamped: an over-subscribed card shows 0

    # -- ledger ------------------------------------------------------------------------------

    def _take(self, task: TaskInfo, positions: list[int], mem: int) -> None:
        for pos in positions:
            self.pods[pos][task.uid] = mem
        self.owners[task.uid] = (tuple(positions), task.key)

    def add_pod(self, task: TaskInfo) -> None:
        if task.uid in self.owners:
            return
        mem = _pod_total(task, GPU_MEMORY)
        if mem <= 0 and _pod_total(task, GPU_NUMBER) <= 0:
            return
        ids = gpu_index(annotation(task, GPU_INDEX))
        if ids is None:
            return
        positions = [self.ids.index(i) for i in ids if i in self.ids]
        if positions:
            self._take(task, positions, mem)

    def remove_pod(self, task: TaskInfo) -> None:
        held = self.owners.pop(task.uid, None)
        if held is None:
            return
        for pos in held[0]:
            self.pods[pos].pop(task.uid, None)

    def holds(self, uid: str) -> bool:
        return uid in self.owners

    # -- scheduling ------------------------------------------------------------------------

    def _memory_candidates(self, mem: int) -> list[int]:
        return [pos for pos in range(len(self.ids)) if self._idle(pos) >= mem]

    def _idle_cards(self) -> list[int]:
        return [pos for pos in range(len(self.ids)) if not self.pods[pos]]

    def filter(self, task: TaskInfo, req: GpuShareRequest, policy: str) -> FilterResult | None:
        if self.family.sharing:
            if not any(self._idle(pos) >= req.memory for pos in range(len(self.ids))):
                return FilterResult(StatusCode.Unschedulable, f"GpuShare no enough gpu memory on node {self.name}")
        if self.family.number:
            idle = sum(1 for p in self.pods if not p)
            if idle < req.number:
                return FilterResult(StatusCode.Unschedulable,
                                    f"GpuNumber no enough gpu number on node {self.name}"
                                    f" ({idle} idle GPU < {req.number} requested)")
            if req.topology and req.number > 0:
                placed = self._by_topology(req)
                if isinstance(placed, str):
                    return FilterResult(StatusCode.Unschedulable, placed)
        return None

    def score(self, task: TaskInfo, req: GpuShareRequest, policy: str) -> float:
        """Volcano's gpushare scores 0; a topology pod gets its card set's score (topology.py)."""
        if not (req.topology and req.number > 0 and self.family.number):
            return 0.0
        placed = self._by_topology(req)
        return placed[1] if isinstance(placed, tuple) else 0.0

    def allocate(self, task: TaskInfo, req: GpuShareRequest, policy: str, now: float) -> dict[str, str]:
        if self.family.sharing and req.memory > 0:
            cands = self._memory_candidates(req.memory)
            if not cands:
                raise AllocateError(f"no enough gpu memory on node {self.name}")
            positions = cands[:1]  # the lowest card id
        else:
            idle = self._idle_cards()
            if len(idle) < req.number:
                raise AllocateError(f"no enough gpu number on node {self.name}")
            positions = idle[:req.number]
            if req.topology and req.number > 0:
                placed = self._by_topology(req)
                if not isinstance(placed, tuple):
                    raise AllocateError(placed or f"no enough gpu number on node {self.name}")
                positions = placed[0]
        self._take(task, positions, req.memory)
        return {
            GPU_INDEX: ",".join(str(self.ids[p]) for p in positions),
            PREDICATE_TIME: str(int(now * 1_000_000_000)),
        }

    def release(self, task: TaskInfo) -> tuple[str, ...]:
        self.remove_pod(task)
        return (PREDICATE_TIME, GPU_INDEX)

    def describe(self) -> list[DeviceUse]:
        out = []
        for pos, card in enumerate(self.ids):
            used = sum(self.pods[pos].values())
            out.append(DeviceUse(id=str(card), type="NVIDIA", memory_used=used, memory_total=self.memory,
                                 cores_used=0, slots_used=len(self.pods[pos]), slots_total=0,
                                 pods=sorted(self.owners[u][1] for u in self.pods[pos] if u in self.owners)))
        return out
