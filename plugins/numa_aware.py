"""numa-aware: CPU placement by NUMA node from each node's Numatopology (plugins/numaaware/numaaware.go).

Arguments, as Volcano reads them::

    weight: 1        # the node order's weight (default 1); the score is multiplied by it

A pod chooses a topology policy with the annotation ``volcano.sh/numa-topology-policy``
(``none``, ``best-effort``, ``restricted``, ``single-numa-node``); a Volcano Job's task writes its
``topologyPolicy`` there.  The node's Numatopology (scheduler/api/numa_info.py) says what its kubelet
does: the CPU manager policy, the topology manager policy and the free CPU set.

Callbacks, as Volcano registers them:

- predicate, for Guaranteed pods only (``GetPodQOS``): a pod with a policy needs a node whose
  Numatopology exists, whose CPU manager is ``static``, whose topology manager policy is the pod's and
  whose CPU set is not empty (each refusal a fit error with Volcano's text); a pod without one is only
  looked at on static nodes with a topology policy.  Then, container by container, the node's policy
  merges the CPU hints (plugins/numa_aware_cpus.py, numa_aware_policy.py); a container it does not
  admit makes the node ``UnschedulableAndUnresolvable`` ("container <name> cannot be assigned by numa"),
  else the container's CPUs are chosen and taken from what the next container sees.
- batch node order, for pods with a policy: fewer NUMA nodes under the chosen CPUs score higher,
  ``100 - 100 * count / max count`` over the candidate nodes (100 when every count is 0), times ``weight``.
- event handlers: placing a pod takes its chosen CPUs from the node for the rest of the session;
  taking it back returns them.
- session close: the CPUs given to pods placed in the session go into the ledger
  (``AddUnassignedNumaPods``, kept in ``SchedulerState.plugins``), which holds them against the node
  in later sessions until its Numatopology lists every such pod (``RefreshNumaSchedulerInfoByCrd``),
  or the pod is gone.

How vcsched shares work between identical tasks (scheduler/framework/node_search.py) and stays exact:
a verdict depends only on the pod's policy and containers' CPUs (declared through ``Point.TASK_SHAPE``),
the node's topology and policies, and its free CPUs, which change only when a task lands on or leaves
the node; so verdicts are kept per node until its CPUs change, and shared by nodes of one topology with
the same free CPUs.  When the last container's CPUs all come from one NUMA node its count is known
without choosing them, and they are chosen when the pod is placed.  The score normalises over the
candidates, so it takes the node-by-node search, except when every node that could be a candidate
gives the same count: then every candidate scores the same and the scorer is skipped
(``BatchScorer.applies``).

Where vcsched differs: Volcano stores the choice made in the predicate and reuses it when the pod is
placed; vcsched chooses again from the same state, which gives the same CPUs.  A ledger entry on a
resource the Numatopology does not list is skipped (Volcano would crash on it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from vcsched.api.fit_errors import Status
from vcsched.api.node_info import NodeInfo
from vcsched.api.numa_info import NumaLedger, NumaTopology, PodMeta
from vcsched.api.quantity import QuantityError, parse_quantity
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import StatusCode, TaskStatus
from vcsched.framework.arguments import Arguments
from vcsched.framework.interface import BatchScorer, Plugin, Point
from vcsched.framework.session import EventHandler

from . import numa_aware_cpus as cpus
from . import numa_aware_policy as policy

if TYPE_CHECKING:
    from vcsched.framework.session import Session

PLUGIN_NAME = "numa-aware"
WEIGHT = "weight"
NUMA_POLICY_KEY = "volcano.sh/numa-topology-policy"
MAX_NODE_SCORE = 100
_NO_POLICY = ("", policy.NONE)
_QOS_RESOURCES = ("cpu", "memory")


# -- what the plugin reads of a pod --------------------------------------------------------------


def _quantity(raw: Any) -> Fraction:
    try:
        return parse_quantity(raw)
    except QuantityError:
        return Fraction(0)


@lru_cache(maxsize=1024)
def _positive(raw: Any) -> bool:
    return _quantity(raw) > 0


@lru_cache(maxsize=1024)
def _whole_cpus(raw: Any) -> int:
    """``guaranteedCPUs`` of a CPU request: the count when it is a whole number of CPUs, else 0."""
    q = _quantity(raw)
    return q.numerator if q.denominator == 1 and q > 0 else 0


def pod_qos_class(pod: Mapping[str, Any]) -> str:
    """``v1qos.GetPodQOS``: ``status.qosClass`` when set, else Guaranteed when every container and init
    container limits both CPU and memory and the summed requests equal the summed limits, BestEffort
    when nothing is requested or limited, Burstable otherwise."""
    given = (pod.get("status") or {}).get("qosClass")
    if given:
        return str(given)
    spec = pod.get("spec") or {}
    if _plainly_guaranteed(spec):
        return "Guaranteed"
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    for c in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
        res = c.get("resources") or {}
        for name, raw in (res.get("requests") or {}).items():
            q = _quantity(raw)
            if name in _QOS_RESOURCES and q > 0:
                requests[name] = requests.get(name, Fraction(0)) + q
        found = set()
        for name, raw in (res.get("limits") or {}).items():
            q = _quantity(raw)
            if name in _QOS_RESOURCES and q > 0:
                found.add(name)
                limits[name] = limits.get(name, Fraction(0)) + q
        if not found >= set(_QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and all(limits.get(n) == q for n, q in requests.items()) and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


def _plainly_guaranteed(spec: Mapping[str, Any]) -> bool:
    """The common Guaranteed pod, told without arithmetic: every container's CPU and memory limits are
    positive and its requests of them are the same text, and it asks nothing else."""
    for c in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
        res = c.get("resources") or {}
        limits, requests = res.get("limits") or {}, res.get("requests") or {}
        for name in _QOS_RESOURCES:
            raw = limits.get(name)
            if raw is None or requests.get(name, raw) != raw or not _positive(raw):
                return False
        if len(limits) != 2 or len(requests) > 2:
            return False
    return bool(spec.get("containers"))


def container_cpu(c: Mapping[str, Any]) -> cpus.ContainerCpu:
    """``guaranteedCPUs``: the CPU request when it is a whole number of CPUs, else 0."""
    requests = (c.get("resources") or {}).get("requests") or {}
    if "cpu" not in requests:
        return cpus.ContainerCpu(str(c.get("name") or ""), False, 0)
    raw = requests["cpu"]
    return cpus.ContainerCpu(str(c.get("name") or ""), True, _whole_cpus(raw if isinstance(raw, (str, int)) else str(raw)))


@dataclass(slots=True, frozen=True)
class NumaRequest:
    """A task as this plugin sees it: its policy annotation, whether it is Guaranteed, its containers'
    CPUs.  ``key`` is what its verdicts depend on besides the node."""

    policy: str
    guaranteed: bool
    containers: tuple[cpus.ContainerCpu, ...]
    key: tuple = ()
    # the batch node order looks at it (a Guaranteed pod with a policy)
    scored: bool = False


def numa_request(task: TaskInfo) -> NumaRequest:
    pod = task.pod
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    guaranteed = pod_qos_class(pod) == "Guaranteed"
    containers = tuple(container_cpu(c) for c in (pod.get("spec") or {}).get("containers") or []) if guaranteed else ()
    policy_ = str(annotations.get(NUMA_POLICY_KEY) or "")
    return NumaRequest(policy_, guaranteed, containers, (policy_, guaranteed, containers),
                       guaranteed and policy_ not in _NO_POLICY)


# -- a node in the session ---------------------------------------------------------------------


class NodeNuma:
    """A node's Numatopology and its free CPU sets in this session (``nodeResSets``); ``version``
    moves whenever the sets change."""

    __slots__ = ("topo", "free", "version", "verdicts", "shape")

    def __init__(self, topo: NumaTopology, free: dict[str, int], shape: int = 0) -> None:
        self.topo = topo
        self.free = free
        self.version = 0
        # request key → Verdict at this version (emptied when the sets change)
        self.verdicts: dict[tuple, Verdict] = {}
        # nodes of one shape (NumaTopology.shape) with equal free CPUs get equal verdicts
        self.shape = shape

    def changed(self) -> None:
        self.version += 1
        self.verdicts = {}


@dataclass(slots=True)
class Verdict:
    """The predicate's answer for one request on one node at one version of its free sets."""

    version: int
    error: str | None = None  # filterNodeByPolicy's refusal
    looked_at: bool = False  # False: the plugin lets the node pass without choosing CPUs
    failed_container: str | None = None  # the container the policy did not admit
    assignment: dict[str, int] | None = None  # resource → CPUs chosen, when admitted
    numa_count: int = 0  # NUMA nodes under the chosen CPUs
    # the last container's CPUs, chosen only when the pod is placed: (container, its hint, what the
    # earlier containers left free, what they took); its NUMA node is known without choosing them
    pending: tuple | None = None

    def cpus(self, topo: NumaTopology) -> dict[str, int] | None:
        """The CPUs chosen (``assignment``), choosing the last container's now if that was put off."""
        if self.pending is not None:
            container, best, free, chosen = self.pending
            for res, mask in cpus.allocate(container, best, topo, free).items():
                chosen[res] = chosen.get(res, 0) | mask
            self.assignment, self.pending = chosen, None
        return self.assignment


def filter_node(req: NumaRequest, state: NodeNuma | None) -> tuple[bool, str | None]:
    """``filterNodeByPolicy``: (looked at, refusal)."""
    if req.policy not in _NO_POLICY:
        if state is None:
            return False, "numa info is empty"
        topo = state.topo
        if topo.cpu_manager_policy != "static":
            return False, "cpu manager policy isn't static"
        if req.policy != topo.topology_manager_policy:
            return False, (f"task topology policy[{req.policy}] is different with "
                           f"node[{topo.topology_manager_policy}]")
        if not state.free.get(cpus.CPU, 0):
            return False, "cpu allocatable map is empty"
        return True, None
    if state is None or state.topo.cpu_manager_policy != "static":
        return False, None
    if state.topo.topology_manager_policy in _NO_POLICY:
        return False, None
    return True, None


def evaluate(req: NumaRequest, state: NodeNuma | None) -> Verdict:
    """The predicate's work for a Guaranteed task: the filter, then each container's hints, the
    node policy's verdict and its CPUs."""
    looked_at, error = filter_node(req, state)
    version = state.version if state is not None else -1
    if not looked_at:
        return Verdict(version, error)
    topo = state.topo
    free = dict(state.free)
    node_policy = topo.topology_manager_policy
    chosen: dict[str, int] = {}
    last = len(req.containers) - 1
    for i, container in enumerate(req.containers):
        hints = [cpus.cpu_hints(container, topo, free)]
        best, admit = policy.predicate(node_policy, topo.topology.numa_nodes, hints)
        if not admit:
            return Verdict(version, None, True, container.name)
        if i == last and cpus.within_hint(container, best, topo, free):
            # every CPU of the last container comes from the hint's one NUMA node: choose them on placement
            numa = topo.topology.numa_mask(chosen.get(cpus.CPU, 0)) | best[0]
            return Verdict(version, None, True, None, None, numa.bit_count(), (container, best, free, chosen))
        for res, mask in cpus.allocate(container, best, topo, free).items():
            chosen[res] = chosen.get(res, 0) | mask
            free[res] = free.get(res, 0) & ~mask
    count = topo.topology.numa_count(chosen.get(cpus.CPU, 0))
    return Verdict(version, None, True, None, chosen, count)


# a node without a Numatopology: passed over for a pod without a policy, refused for one with
_NO_TOPOLOGY = (Verdict(-1), Verdict(-1, "numa info is empty"))


# -- the plugin -------------------------------------------------------------------------------------


class NumaAwarePlugin(Plugin):
    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.weight = arguments.get_int(WEIGHT, 1)
        self.nodes: dict[str, NodeNuma] = {}
        self._requests: dict[str, NumaRequest] = {}
        # (request key, node shape, free CPUs) → Verdict: what nodes alike share (a verdict depends on nothing else)
        self._alike: dict[tuple, Verdict] = {}
        # task uid → (node, CPUs taken, pod): placed in this session (taskBindNodeMap, assignRes)
        self.placed: dict[str, tuple[str, dict[str, int], PodMeta]] = {}
        self.ledger: NumaLedger | None = None

    def request(self, task: TaskInfo) -> NumaRequest:
        req = self._requests.get(task.uid)
        if req is None:
            req = self._requests[task.uid] = numa_request(task)
        return req

    def verdict(self, req: NumaRequest, node: str) -> Verdict:
        state = self.nodes.get(node)
        if state is None:
            return _NO_TOPOLOGY[req.policy not in _NO_POLICY]
        v = state.verdicts.get(req.key)
        if v is None:
            key = (req.key, state.shape, state.free.get(cpus.CPU))
            v = self._alike.get(key)
            if v is None:
                v = self._alike[key] = evaluate(req, state)
            state.verdicts[req.key] = v
        return v

    # -- open -----------------------------------------------------------------------------------

    def on_session_open(self, ssn: "Session") -> None:
        topologies: Mapping[str, NumaTopology] = getattr(ssn, "numatopologies", None) or {}
        ledger = self.ledger = ssn.state.plugins.setdefault(self.name, NumaLedger())
        if ledger.nodes:
            known = {uid for job in ssn.jobs.values() for uid in job.tasks}
            for n in ssn.node_list:
                known.update(n.tasks)
            ledger.forget_missing(known)
        shapes: dict[tuple, int] = {}
        for n in ssn.node_list:
            topo = topologies.get(n.name)
            if topo is not None:
                shape = shapes.setdefault(topo.shape(), len(shapes))
                self.nodes[n.name] = NodeNuma(topo, ledger.free_sets(n.name, topo), shape)
        ssn.add(Point.PREDICATE, self.name, self.predicate)
        ssn.add(Point.BATCH_NODE_ORDER, self.name, NumaScorer(self, ssn))
        ssn.add(Point.TASK_SHAPE, self.name, self.task_shape)
        ssn.add_event_handler(EventHandler(allocate=self.on_allocate, deallocate=self.on_deallocate))

    def task_shape(self, task: TaskInfo) -> tuple:
        return self.request(task).key

    def predicate(self, task: TaskInfo, node: NodeInfo) -> list[Status] | None:
        req = self.request(task)
        if not req.guaranteed:
            return None
        v = self.verdict(req, node.name)
        if v.error is not None:
            return [Status(StatusCode.Error, v.error)]
        if v.failed_container is not None:
            return [Status(StatusCode.UnschedulableAndUnresolvable,
                           f"container {v.failed_container} cannot be assigned by numa")]
        return None

    # -- events ---------------------------------------------------------------------------------

    def on_allocate(self, task: TaskInfo) -> None:
        if not task.status & (TaskStatus.Allocated | TaskStatus.Pipelined):
            return  # an eviction undone: Volcano holds no choice for a pod placed before the session
        state = self.nodes.get(task.node_name)
        if state is None:
            return
        req = self.request(task)
        if not req.guaranteed:
            return
        v = self.verdict(req, task.node_name)
        chosen = v.cpus(state.topo) if v.looked_at and v.failed_container is None else None
        if chosen is None:
            return
        for res, mask in chosen.items():
            if res in state.free:
                state.free[res] &= ~mask
        state.changed()
        meta = task.pod.get("metadata") or {}
        pod = PodMeta(str(meta.get("uid") or task.uid), task.name, task.namespace)
        self.placed[task.uid] = (task.node_name, chosen, pod)

    def on_deallocate(self, task: TaskInfo) -> None:
        placed = self.placed.get(task.uid)
        if placed is None or placed[0] != task.node_name:
            return
        del self.placed[task.uid]
        state = self.nodes.get(task.node_name)
        if state is None:
            return
        for res, mask in placed[1].items():
            if res in state.free:
                state.free[res] |= mask
        state.changed()

    # -- close ----------------------------------------------------------------------------------

    def on_session_close(self, ssn: "Session") -> None:
        if self.ledger is None:
            return
        for node, sets, pod in self.placed.values():
            self.ledger.add(node, pod, sets)


class NumaScorer(BatchScorer):
    """The batch node order: fewer NUMA nodes under the chosen CPUs is better (``batchNodeOrderFn``)."""

    __slots__ = ("plugin", "ssn", "_spread")

    def __init__(self, plugin: NumaAwarePlugin, ssn: "Session") -> None:
        self.plugin = plugin
        self.ssn = ssn
        # request key → the NUMA counts the nodes would give it (_Spread)
        self._spread: dict[tuple, _Spread] = {}

    def applies(self, task: TaskInfo) -> bool:
        req = self.plugin.request(task)
        if not req.scored:
            return False
        spread = self._spread.get(req.key)
        if spread is None:
            spread = self._spread[req.key] = _Spread(self.plugin, self.ssn, req)
        return not spread.uniform()

    def score(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        req = self.plugin.request(task)
        if not req.scored:
            return {}
        counts = []
        for n in nodes:
            v = self.plugin.verdict(req, n.name)
            counts.append(v.numa_count if v.looked_at and v.failed_container is None else 0)
        top = max(counts, default=0)
        w = self.plugin.weight
        if top == 0:
            return {n.name: float(MAX_NODE_SCORE * w) for n in nodes}
        return {n.name: float((MAX_NODE_SCORE - MAX_NODE_SCORE * c // top) * w) for n, c in zip(nodes, counts)}


class _Spread:
    """For one request: the NUMA count each node would give it (nodes whose policy admits it), with how
    many nodes give each count, kept up to date from the session's log of changed nodes.  One count
    among them: every candidate scores the same.  A node that would give 0 (no CPUs could be chosen)
    counts only while it has a whole CPU free, for then the task might fit it; otherwise the resource
    check keeps it out of the candidates, since the request is at least one CPU."""

    __slots__ = ("plugin", "ssn", "req", "counts", "histogram", "log_pos")

    def __init__(self, plugin: NumaAwarePlugin, ssn: "Session", req: NumaRequest) -> None:
        self.plugin = plugin
        self.ssn = ssn
        self.req = req
        self.counts: dict[int, int] = {}
        self.histogram: dict[int, int] = {}
        for i, n in enumerate(ssn.node_list):
            self._set(i, n)
        self.log_pos = len(ssn.node_changes)

    def _set(self, i: int, node: NodeInfo) -> None:
        old = self.counts.pop(i, None)
        if old is not None:
            left = self.histogram[old] - 1
            if left:
                self.histogram[old] = left
            else:
                del self.histogram[old]
        if node.name not in self.plugin.nodes:
            return
        v = self.plugin.verdict(self.req, node.name)
        if not v.looked_at or v.failed_container is not None:
            return
        c = v.numa_count
        if c == 0 and node.future_idle().milli_cpu < 1000:
            return
        self.counts[i] = c
        self.histogram[c] = self.histogram.get(c, 0) + 1

    def uniform(self) -> bool:
        changes = self.ssn.node_changes
        if self.log_pos != len(changes):
            nodes = self.ssn.node_list
            for i in set(changes[self.log_pos:]):
                self._set(i, nodes[i])
            self.log_pos = len(changes)
        return len(self.histogram) <= 1
