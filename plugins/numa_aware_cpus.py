"""The numa-aware plugin's CPU hint provider (plugins/numaaware/provider/cpumanager: cpu_mng.go,
cpu_assignment.go): the kubelet's static CPU manager as Volcano re-implements it.

``cpu_hints`` lists the NUMA node sets that hold enough free CPUs for a container (the narrowest are
preferred); ``allocate`` picks the CPUs for the merged hint, topology-aware (whole sockets, then
whole cores, then single threads) with ``take_by_topology``.  CPU sets are bit masks
(scheduler/api/numa_info.py).

Volcano's own quirks are kept where they decide which CPUs are taken: a free socket is one whose id
is also the id of a free CPU, and a socket's free cores are its core ids that are also free CPU ids
(``freeSockets`` and ``freeCores`` intersect id sets of different kinds).  Two orders differ, because
Volcano's are not well defined: ``freeCores`` sorts sockets that Go hands over in random map order
with a comparator that is not an order, so vcsched takes them by (free cores, socket id); ``freeCPUs``
sorts cores with a comparator that is not an order either, which vcsched applies as Go's sort does
for up to 12 cores (an insertion sort) and as the lexicographic order it spells beyond that (Go's
pattern-defeating quicksort is not reproduced).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from vcsched.api.numa_info import CpuTopology, NumaTopology, cpu_ids, iter_numa_masks

from .numa_aware_policy import Hint, ProviderHints

CPU = "cpu"


@dataclass(slots=True, frozen=True)
class ContainerCpu:
    """What the CPU manager reads of a container: its name, whether it requests CPU at all, and the
    whole CPUs it asks (``guaranteedCPUs``: 0 unless the request is an integer)."""

    name: str
    requests_cpu: bool
    cpus: int


class NotEnoughCpus(Exception):
    pass


def _reserved(numa: NumaTopology) -> int:
    """The CPUs the kubelet reserves: ``takeByTopology`` over all CPUs (empty when that fails)."""
    if numa.reserved_cpus is None:
        return 0
    topo = numa.topology
    try:
        return take_by_topology(topo, topo.all, numa.reserved_cpus)
    except NotEnoughCpus:
        return 0


def cpu_hints(container: ContainerCpu, numa: NumaTopology, free: Mapping[str, int]) -> ProviderHints:
    """``GetTopologyHints``: None when the container has no preference (no or a fractional CPU request,
    no CPU set on the node), else the NUMA node sets with enough free CPUs, the narrowest possible for
    the request preferred."""
    if not container.requests_cpu or container.cpus == 0:
        return None
    available = free.get(CPU)
    if available is None:
        return None
    available &= ~_reserved(numa)
    topo = numa.topology
    request = container.cpus
    min_size = len(topo.numa_nodes)
    hints: list[list] = []
    for mask in topo.numa_subsets or iter_numa_masks(topo.numa_nodes):
        in_mask = topo.cpus_in_numas(mask)
        size = mask.bit_count()
        if in_mask.bit_count() >= request and size < min_size:
            min_size = size
        if (available & in_mask).bit_count() < request:
            continue
        hints.append([mask, False])
    out: list[Hint] = [(m, m.bit_count() == min_size) for m, _ in hints]
    return {CPU: out}


def within_hint(container: ContainerCpu, best: Hint, numa: NumaTopology, free: Mapping[str, int]) -> bool:
    """Whether ``allocate`` takes every CPU of the container from the hint's single NUMA node: it asks
    at least one CPU and that NUMA node has as many free."""
    mask = best[0]
    if container.cpus < 1 or mask is None or mask.bit_count() != 1:
        return False
    available = free.get(CPU, 0) & ~_reserved(numa)
    return (available & numa.topology.cpus_in_numas(mask)).bit_count() >= container.cpus


def allocate(container: ContainerCpu, best: Hint, numa: NumaTopology, free: Mapping[str, int]) -> dict[str, int]:
    """``Allocate``: CPUs on the hint's NUMA nodes first, the rest from anywhere free; an empty set
    when the request cannot be met."""
    topo = numa.topology
    available = free.get(CPU, 0) & ~_reserved(numa)
    request = container.cpus
    result = 0
    try:
        if best[0] is not None:
            aligned = available & topo.cpus_in_numas(best[0])
            result |= take_by_topology(topo, aligned, min(aligned.bit_count(), request))
        result |= take_by_topology(topo, available & ~result, request - result.bit_count())
    except NotEnoughCpus:
        return {CPU: 0}
    return {CPU: result}


class _Accumulator:
    """``cpuAccumulator``: what is left to choose from (``details``) and what was taken."""

    __slots__ = ("topo", "details", "needed", "result")

    def __init__(self, topo: CpuTopology, available: int, needed: int) -> None:
        self.topo = topo
        self.details = available & topo.all  # KeepOnly: CPUs the topology does not list are not offered
        self.needed = needed
        self.result = 0

    def take(self, cpus: int) -> None:
        self.result |= cpus
        self.details &= ~self.result
        self.needed -= cpus.bit_count()

    def _sockets(self) -> list[int]:
        topo, details = self.topo, self.details
        return [s for s, m in topo.cpus_in_socket.items() if m & details]

    def free_sockets(self) -> list[int]:
        """Sockets with a CPU left whose id is also a CPU id left, ascending (Volcano's intersection)."""
        details = self.details
        return sorted(s for s in self._sockets() if 0 <= s and (details >> s) & 1)

    def _cores_in_socket(self, socket: int) -> list[int]:
        """``CoresInSockets(s) ∩ CPUs()``: core ids of the socket's CPUs left that are also CPU ids left."""
        topo, details = self.topo, self.details
        cores = {topo.details[c].core for c in cpu_ids(topo.cpus_in_socket[socket] & details)}
        return sorted(c for c in cores if 0 <= c and (details >> c) & 1)

    def free_cores(self) -> list[int]:
        cores = {s: self._cores_in_socket(s) for s in self._sockets()}
        return [c for s in sorted(cores, key=lambda s: (len(cores[s]), s)) for c in cores[s]]

    def free_cpus(self) -> list[int]:
        """Single CPUs: by core, the cores ordered by ``freeCPUs``' comparator, each core's CPUs ascending."""
        topo, details, result = self.topo, self.details, self.result
        cores = sorted({topo.details[c].core for c in cpu_ids(details)})
        keys = {}
        for core in cores:
            socket = topo.core_socket[core]
            in_socket = topo.cpus_in_socket[socket]
            keys[core] = ((in_socket & result).bit_count(), (in_socket & details).bit_count(),
                          (topo.cpus_in_core[core] & details).bit_count(), socket, core)

        def less(i: int, j: int) -> bool:
            a, b = keys[i], keys[j]
            return a[0] > b[0] or a[1] < b[1] or a[2] < b[2] or a[3] < b[3] or a[4] < b[4]

        if len(cores) <= 12:  # Go's sort.Slice: an insertion sort at this length
            for i in range(1, len(cores)):
                j = i
                while j > 0 and less(cores[j], cores[j - 1]):
                    cores[j], cores[j - 1] = cores[j - 1], cores[j]
                    j -= 1
        else:
            cores.sort(key=lambda c: (-keys[c][0], keys[c][1], keys[c][2], keys[c][3], keys[c][4]))
        out: list[int] = []
        for core in cores:
            out.extend(cpu_ids(topo.cpus_in_core[core] & details))
        return out


def take_by_topology(topo: CpuTopology, available: int, count: int) -> int:
    """``takeByTopology``: ``count`` CPUs of ``available``, whole sockets first when the request is at
    least a socket, then whole cores, then single threads next to those already taken."""
    acc = _Accumulator(topo, available, count)
    if acc.needed < 1:
        return acc.result
    if acc.needed > acc.details.bit_count():
        raise NotEnoughCpus("not enough cpus available to satisfy request")
    per_socket = topo.cpus_per_socket
    if acc.needed >= per_socket:
        for s in acc.free_sockets():
            acc.take(acc.details & topo.cpus_in_socket[s])
            if acc.needed < 1:
                return acc.result
            if acc.needed < per_socket:
                break
    per_core = topo.cpus_per_core
    if acc.needed >= per_core:
        for c in acc.free_cores():
            acc.take(acc.details & topo.cpus_in_core[c])
            if acc.needed < 1:
                return acc.result
            if acc.needed < per_core:
                break
    for cpu in acc.free_cpus():
        if acc.needed >= 1:
            acc.take(1 << cpu)
        if acc.needed < 1:
            return acc.result
    raise NotEnoughCpus("failed to allocate cpus")
