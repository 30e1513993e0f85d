"""NUMA topologies: ``nodeinfo.volcano.sh/v1alpha1`` Numatopology as the scheduler reads it
(pkg/scheduler/api/numa_info.go, cache/event_handlers.go · getNumaInfo).

Volcano's resource exporter writes one Numatopology per node, named after the node: the kubelet's
CPU manager and topology manager policies (``spec.policies``), each NUMA-managed resource's
allocatable CPU set (``spec.numares``, a Linux cpuset list such as ``0-3,8``), every CPU's NUMA
node, socket and core (``spec.cpuDetail``, keyed by CPU id), what the kubelet reserves
(``spec.resReserved``) and the pods it has given CPUs to (``spec.podAllocations``).

CPU sets are Python ints used as bit masks (bit ``i`` is CPU ``i``): union, difference and size are
one operation each.  ``numatopology_from`` reads an object as Volcano's cache does: an allocatable
set that does not parse is empty, a ``resReserved`` that does not parse reserves nothing, both
logged.  What Volcano cannot hold at all (a NUMA id outside 0-63, Kubernetes' topology bit mask)
or vcsched will not (a CPU id above ``MAX_CPU_ID``) is a ``NumaTopologyError`` naming the field;
the cache then leaves the node without a topology.  ``simulate`` refuses all of these
(sim/numatopology_manifest.py).

``NumaLedger`` is Volcano's ``NodeInfo.UnassignedNumaPods``: the CPUs the numa-aware plugin gave
pods it placed, held against the node until its Numatopology lists the pods
(``RefreshNumaSchedulerInfoByCrd``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from .quantity import QuantityError, milli_value, parse_quantity

log = structlog.get_logger("vcsched.numa")

CPU_MANAGER_POLICY = "CPUManagerPolicy"
TOPOLOGY_MANAGER_POLICY = "TopologyManagerPolicy"
# Kubernetes' topologymanager bitmask is a uint64: NUMA node ids 0-63
MAX_NUMA_ID = 63
# the largest CPU id vcsched holds (a cpuset of "0-4000000000" would be a 500 MB mask)
MAX_CPU_ID = 65535
# ParseResourceList: the resources a Numatopology may reserve
RESERVABLE = ("cpu", "memory", "ephemeral-storage")
_INT = re.compile(r"^[+-]?\d+$")


class NumaTopologyError(ValueError):
    """A Numatopology field the scheduler cannot read; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


# -- CPU sets ---------------------------------------------------------------------------


def _atoi(text: str) -> int:
    """Go's ``strconv.Atoi`` on a cpuset element: an optional sign and decimal digits."""
    if not _INT.match(text):
        raise ValueError(f"strconv.Atoi: parsing {text!r}: invalid syntax")
    return int(text)


def parse_cpuset(text: str) -> int:
    """``cpuset.Parse``: ``"0-3,8"`` → a mask; ``""`` is empty.  Raises ValueError as Go's does, and for
    a CPU id outside 0..MAX_CPU_ID."""
    if text == "":
        return 0
    mask = 0
    for part in text.split(","):
        bounds = part.split("-", 1)
        if len(bounds) == 1:
            start = end = _atoi(bounds[0])
        else:
            start, end = _atoi(bounds[0]), _atoi(bounds[1])
            if start > end:
                raise ValueError(f"invalid range {part!r} ({start} > {end})")
        if start < 0 or end > MAX_CPU_ID:
            raise ValueError(f"CPU ids must be within 0-{MAX_CPU_ID}, got {part!r}")
        mask |= ((1 << (end - start + 1)) - 1) << start
    return mask


def cpu_ids(mask: int) -> list[int]:
    """The CPUs of ``mask``, ascending (``CPUSet.List``)."""
    out = []
    i = 0
    while mask:
        low = mask & -mask
        i = low.bit_length() - 1
        out.append(i)
        mask ^= low
    return out


def format_cpuset(mask: int) -> str:
    """``CPUSet.String``: ranges of consecutive CPUs, ``"0-3,8"``; ``""`` when empty."""
    parts = []
    ids = cpu_ids(mask)
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(parts)


# -- the topology -------------------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class CpuInfo:
    """One CPU's place (``topology.CPUInfo``): its NUMA node, socket and core id."""

    numa: int = 0
    socket: int = 0
    core: int = 0


class CpuTopology:
    """``topology.CPUTopology`` with the ``CPUDetails`` views the CPU manager asks for, computed once.

    Core ids are taken as the exporter writes them: unique per socket only, so ``cpus_in_core``
    joins the cores of different sockets that share an id, as Volcano's ``CPUsInCores`` does,
    while ``num_cores`` counts (socket, core) pairs (``getPhysicalCoresNum``).
    """

    __slots__ = ("details", "all", "num_cpus", "num_cores", "num_sockets", "numa_nodes", "cpus_in_numa",
                 "cpus_in_socket", "cpus_in_core", "core_socket", "cpus_per_core", "cpus_per_socket",
                 "_numa_masks", "numa_subsets")

    def __init__(self, details: Mapping[int, CpuInfo]) -> None:
        self.details = dict(details)
        self.all = 0
        self.cpus_in_numa: dict[int, int] = {}
        self.cpus_in_socket: dict[int, int] = {}
        self.cpus_in_core: dict[int, int] = {}
        pairs = set()
        for cpu, info in self.details.items():
            bit = 1 << cpu
            self.all |= bit
            self.cpus_in_numa[info.numa] = self.cpus_in_numa.get(info.numa, 0) | bit
            self.cpus_in_socket[info.socket] = self.cpus_in_socket.get(info.socket, 0) | bit
            self.cpus_in_core[info.core] = self.cpus_in_core.get(info.core, 0) | bit
            pairs.add((info.socket, info.core))
        self.num_cpus = len(self.details)
        self.num_cores = len(pairs)
        self.num_sockets = len(self.cpus_in_socket)
        self.numa_nodes = sorted(self.cpus_in_numa)
        # the socket of a core id: that of its lowest CPU (the CPU manager's freeCPUs looks there)
        self.core_socket = {core: self.details[(m & -m).bit_length() - 1].socket for core, m in self.cpus_in_core.items()}
        self.cpus_per_core = self.num_cpus // self.num_cores if self.num_cores else 0
        self.cpus_per_socket = self.num_cpus // self.num_sockets if self.num_sockets else 0
        self._numa_masks: dict[int, int] = {}
        # every non-empty set of NUMA nodes, in the order the kubelet generates hints
        self.numa_subsets = iter_numa_masks(self.numa_nodes) if len(self.numa_nodes) <= 16 else []

    def numa_of(self, cpu: int) -> int:
        """The CPU's NUMA node; 0 for a CPU the details do not list (Go's zero CPUInfo)."""
        info = self.details.get(cpu)
        return info.numa if info is not None else 0

    def cpus_in_numas(self, numa_mask: int) -> int:
        """``CPUsInNUMANodes`` of the NUMA ids set in ``numa_mask`` (a NUMA bit mask), cached."""
        cpus = self._numa_masks.get(numa_mask)
        if cpus is None:
            cpus = 0
            for numa in cpu_ids(numa_mask):
                cpus |= self.cpus_in_numa.get(numa, 0)
            self._numa_masks[numa_mask] = cpus
        return cpus

    def numa_mask(self, cpus: int) -> int:
        """The NUMA nodes the CPUs of ``cpus`` are on, as a bit mask."""
        seen = 0
        for cpu in cpu_ids(cpus):
            seen |= 1 << self.numa_of(cpu)
        return seen

    def numa_count(self, cpus: int) -> int:
        """How many NUMA nodes the CPUs of ``cpus`` are on (``getNumaNodeCntForCPUID``)."""
        return self.numa_mask(cpus).bit_count()


@dataclass(slots=True, frozen=True)
class PodMeta:
    """A pod as the ledger and ``podAllocations`` name it (``api.PodMeta``)."""

    uid: str
    name: str
    namespace: str


@dataclass(slots=True)
class NumaTopology:
    """A node's Numatopology (``NumatopoInfo``), read-only once built."""

    name: str
    policies: dict[str, str]
    # resource name → allocatable CPU mask, and the capacity the exporter reports
    allocatable: dict[str, int]
    capacity: dict[str, int]
    topology: CpuTopology
    # ceil(resReserved.cpu): how many CPUs the CPU manager keeps back; None without a cpu reservation
    reserved_cpus: int | None
    pod_allocations: tuple[PodMeta, ...] = ()
    raw_reserved: dict[str, str] = field(default_factory=dict)
    _shape: tuple | None = field(default=None, repr=False, compare=False)

    @property
    def cpu_manager_policy(self) -> str:
        return self.policies.get(CPU_MANAGER_POLICY, "")

    @property
    def topology_manager_policy(self) -> str:
        return self.policies.get(TOPOLOGY_MANAGER_POLICY, "")

    def shape(self) -> tuple:
        """What CPU choices depend on besides the free sets: the CPUs' places, the reservation and the
        policies (two nodes of one shape with equal free sets get equal verdicts)."""
        if self._shape is None:
            self._shape = (tuple(sorted((c, i.numa, i.socket, i.core) for c, i in self.topology.details.items())),
                           self.reserved_cpus, self.cpu_manager_policy, self.topology_manager_policy)
        return self._shape

    def assigned(self, pod: PodMeta) -> bool:
        """``CheckNumaPodAssigned``: the exporter lists the pod, by uid or by namespace and name."""
        for p in self.pod_allocations:
            if p.uid == pod.uid or (p.name == pod.name and p.namespace == pod.namespace):
                return True
        return False


def _reserved_cpus(raw: Mapping[str, Any], where: str) -> int | None:
    """``ParseResourceList`` then the CPU manager's ceiling of the cpu reservation; Volcano reserves
    nothing (and logs) when any entry is refused."""
    parsed = {}
    for key, value in raw.items():
        if key not in RESERVABLE:
            log.error("Numatopology resReserved refused: the whole reservation is ignored", numatopology=where,
                      field=f"spec.resReserved[{key}]", error=f"cannot reserve {key!r} resource")
            return None
        try:
            q = parse_quantity(value)
        except QuantityError as e:
            log.error("Numatopology resReserved refused: the whole reservation is ignored", numatopology=where,
                      field=f"spec.resReserved[{key}]", error=str(e))
            return None
        if q < 0:
            log.error("Numatopology resReserved refused: the whole reservation is ignored", numatopology=where,
                      field=f"spec.resReserved[{key}]", error="cannot be negative")
            return None
        parsed[key] = q
    if "cpu" not in parsed:
        return None
    return math.ceil(milli_value(parsed["cpu"]) / 1000)


def numatopology_from(obj: Mapping[str, Any]) -> NumaTopology:
    """Read a Numatopology as Volcano's cache does (see the module docstring)."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    spec = obj.get("spec") or {}
    policies = {str(k): str(v) for k, v in (spec.get("policies") or {}).items()}
    details: dict[int, CpuInfo] = {}
    for key, info in (spec.get("cpuDetail") or {}).items():
        try:
            cpu = _atoi(str(key))
        except ValueError:
            cpu = 0  # Volcano: strconv.Atoi's error dropped, the CPU taken as 0
        if not 0 <= cpu <= MAX_CPU_ID:
            raise NumaTopologyError(f"spec.cpuDetail[{key}]", f"CPU ids must be within 0-{MAX_CPU_ID}")
        info = info or {}
        numa = int(info.get("numa") or 0)
        if not 0 <= numa <= MAX_NUMA_ID:
            raise NumaTopologyError(f"spec.cpuDetail[{key}].numa",
                                    f"NUMA node ids must be within 0-{MAX_NUMA_ID} (a topology bit mask)")
        details[cpu] = CpuInfo(numa, int(info.get("socket") or 0), int(info.get("core") or 0))
    allocatable: dict[str, int] = {}
    capacity: dict[str, int] = {}
    for res, info in (spec.get("numares") or {}).items():
        info = info or {}
        try:
            allocatable[str(res)] = parse_cpuset(str(info.get("allocatable") or ""))
        except ValueError as e:
            log.error("Failed to parse input as CPUSet", numatopology=name,
                      field=f"spec.numares[{res}].allocatable", error=str(e))
            allocatable[str(res)] = 0
        capacity[str(res)] = int(info.get("capacity") or 0)
    raw_reserved = {str(k): str(v) for k, v in (spec.get("resReserved") or {}).items()}
    pods = tuple(PodMeta(str(p.get("uid") or ""), str(p.get("name") or ""), str(p.get("namespace") or ""))
                 for p in spec.get("podAllocations") or [] if isinstance(p, Mapping))
    return NumaTopology(name, policies, allocatable, capacity, CpuTopology(details),
                        _reserved_cpus(raw_reserved, name), pods, raw_reserved)


# -- what the numa-aware plugin gave pods, until the exporter reports them ------------------------


@dataclass(slots=True)
class NumaLedger:
    """``UnassignedNumaPods`` of every node: node → pod → resource → CPU mask.  It outlives sessions
    (``SchedulerState.plugins``); the numa-aware plugin adds to it at session close and reads it at
    session open."""

    nodes: dict[str, dict[PodMeta, dict[str, int]]] = field(default_factory=dict)

    def add(self, node: str, pod: PodMeta, sets: Mapping[str, int]) -> None:
        self.nodes.setdefault(node, {})[pod] = dict(sets)

    def forget_missing(self, known_uids: set[str]) -> None:
        """``clearUnassignedNumaTask``: a pod that no longer exists holds nothing."""
        for node in list(self.nodes):
            pods = self.nodes[node]
            for pod in [p for p in pods if p.uid not in known_uids]:
                del pods[pod]
            if not pods:
                del self.nodes[node]

    def free_sets(self, node: str, topo: NumaTopology, refresh: bool = True) -> dict[str, int]:
        """``RefreshNumaSchedulerInfoByCrd``: the Numatopology's allocatable sets, less what the ledger
        holds on the node while any of its pods is not yet listed by the exporter; once all are, the
        node's entries are dropped (``refresh``; without it, only looked at)."""
        sets = dict(topo.allocatable)
        pods = self.nodes.get(node)
        if not pods:
            return sets
        if all(topo.assigned(p) for p in pods):
            if refresh:
                del self.nodes[node]
            return sets
        for held in pods.values():
            for res, mask in held.items():
                if res in sets:  # Volcano would dereference a missing resource here
                    sets[res] &= ~mask
        return sets


def numa_view(topo: NumaTopology, free: Mapping[str, int], held: Mapping[PodMeta, Mapping[str, int]]) -> dict[str, Any]:
    """A node's NUMA state for ``simulate``'s output: policies, the free sets the next session sees
    and the CPUs the scheduler gave pods the exporter does not list yet."""
    return {
        "policies": dict(topo.policies),
        "allocatable": {res: format_cpuset(mask) for res, mask in sorted(free.items())},
        "assigned": {f"{p.namespace}/{p.name}": {res: format_cpuset(m) for res, m in sorted(sets.items())}
                     for p, sets in sorted(held.items(), key=lambda kv: (kv[0].namespace, kv[0].name))},
    }


def iter_numa_masks(numa_nodes: Iterable[int]) -> list[int]:
    """``bitmask.IterateBitMasks``: every non-empty subset of the NUMA ids as a bit mask, by size, each
    size in lexicographic order of the ids (the order hints are generated in)."""
    ids = list(numa_nodes)
    out: list[int] = []

    def walk(start: int, accum: int, left: int) -> None:
        if left == 0:
            out.append(accum)
            return
        for i in range(start, len(ids)):
            walk(i + 1, accum | (1 << ids[i]), left - 1)

    for size in range(1, len(ids) + 1):
        walk(0, 0, size)
    return out
