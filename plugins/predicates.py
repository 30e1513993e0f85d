"""predicates: kube-scheduler's filters as Volcano runs them (plugins/predicates/predicates.go).

PrePredicateFn(task) is kube's PreFilter: it reports a pod whose terms cannot be
evaluated (an error string) and computes the cluster-wide counts that the
InterPodAffinity and PodTopologySpread filters need.  Those counts are kept per
task and reused until a node changes in the session (``Session.node_changes``).

PredicateFn(task, node) returns None when the node passes, or the list of kube
statuses in Volcano's order (spec/framework.md §8.7):

1. pod count: ``node(s) pod number exceeded`` (Unschedulable, does not abort);
2. the "stable" filters NodeUnschedulable, NodeAffinity, TaintToleration; a failure
   (UnschedulableAndUnresolvable) ends the evaluation;
3. NodePorts, InterPodAffinity, PodTopologySpread: plain Unschedulable results
   accumulate; UnschedulableAndUnresolvable (pod affinity, a missing topology
   label) ends the evaluation.

4. DynamicResources (``predicate.DynamicResourceAllocationEnable``, on by default as the
   DynamicResourceAllocation feature gate is since Kubernetes 1.34): the pod's ResourceClaims,
   allocated by the structured allocator (plugins/dynamicresources.py).

Resource fit is not here: the actions check it.  The volume filters
(NodeVolumeLimits, VolumeZone, VolumeBinding) pass every pod: vcsched has
no PersistentVolumeClaims yet; their arguments are still read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from vcsched.api.fit_errors import NODE_POD_NUMBER_EXCEEDED, Status
from vcsched.api.k8s import (
    REASON_NODE_AFFINITY,
    REASON_NODE_AFFINITY_CONFLICT,
    REASON_NODE_PORTS,
    REASON_UNSCHEDULABLE,
    UNSCHEDULABLE_TAINT,
    HostPortInfo,
    InterPodIndex,
    PodTerms,
    TermsCache,
    find_untolerated_taint,
    fits_ports,
    node_host_ports,
    node_pod_count,
    taint_reason,
    tolerates,
)
from vcsched.api.node_info import NodeInfo
from vcsched.api.pod_spec import PodSpec
from vcsched.api.pod_topology import (
    InterPodFilterState,
    SpreadFilterState,
    inter_pod_filter,
    inter_pod_filter_state,
    spread_filter,
    spread_filter_state,
)
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import UNRESOLVABLE_CODES, StatusCode
from vcsched.framework.arguments import Arguments
from vcsched.framework.cycle_state import CycleState
from vcsched.framework.interface import Plugin, Point

from .dynamicresources import DynamicResources

if TYPE_CHECKING:
    from vcsched.framework.session import Session

NODE_AFFINITY_ENABLE = "predicate.NodeAffinityEnable"
NODE_PORTS_ENABLE = "predicate.NodePortsEnable"
TAINT_TOLERATION_ENABLE = "predicate.TaintTolerationEnable"
POD_AFFINITY_ENABLE = "predicate.PodAffinityEnable"
NODE_VOLUME_LIMITS_ENABLE = "predicate.NodeVolumeLimitsEnable"
VOLUME_ZONE_ENABLE = "predicate.VolumeZoneEnable"
POD_TOPOLOGY_SPREAD_ENABLE = "predicate.PodTopologySpreadEnable"
VOLUME_BINDING_ENABLE = "predicate.VolumeBindingEnable"
DYNAMIC_RESOURCE_ALLOCATION_ENABLE = "predicate.DynamicResourceAllocationEnable"
CACHE_ENABLE = "predicate.CacheEnable"
VOLUME_BINDING_TIMEOUT = "volumebinding.bindTimeoutSeconds"
VOLUME_BINDING_WEIGHT = "volumebinding.weight"
DRA_FILTER_TIMEOUT = "dynamicresources.filterTimeoutSeconds"

# the pod annotation the equivalence cache (predicate.CacheEnable) is keyed on
POD_TEMPLATE_KEY = "volcano.sh/template-uid"
CACHE_FAILURE = "plugin equivalence cache predicates failed"


@dataclass(slots=True)
class _TaskState:
    """The PreFilter results of one task, valid while ``version`` is the session's change count."""

    version: int
    spec: PodSpec
    inter_pod: InterPodFilterState | None  # None: the InterPodAffinity filter is skipped
    spread: SpreadFilterState | None  # None: the PodTopologySpread filter is skipped


class PredicatesPlugin(Plugin):
    name = "predicates"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        a = arguments
        self.node_affinity_enable = a.get_bool(NODE_AFFINITY_ENABLE, True)
        self.node_ports_enable = a.get_bool(NODE_PORTS_ENABLE, True)
        self.taint_toleration_enable = a.get_bool(TAINT_TOLERATION_ENABLE, True)
        self.pod_affinity_enable = a.get_bool(POD_AFFINITY_ENABLE, True)
        self.node_volume_limits_enable = a.get_bool(NODE_VOLUME_LIMITS_ENABLE, True)
        self.volume_zone_enable = a.get_bool(VOLUME_ZONE_ENABLE, True)
        self.pod_topology_spread_enable = a.get_bool(POD_TOPOLOGY_SPREAD_ENABLE, True)
        self.volume_binding_enable = a.get_bool(VOLUME_BINDING_ENABLE, True)
        self.dynamic_resource_allocation_enable = a.get_bool(DYNAMIC_RESOURCE_ALLOCATION_ENABLE, True)
        self.cache_enable = a.get_bool(CACHE_ENABLE, False)
        self.volume_binding_timeout_seconds = a.get_int(VOLUME_BINDING_TIMEOUT, 600)
        self.volume_binding_weight = a.get_int(VOLUME_BINDING_WEIGHT, 1)
        self.dra_filter_timeout_seconds = a.get_int(DRA_FILTER_TIMEOUT, 10)
        # per session, set in on_session_open
        self._nodes: list[NodeInfo] = []
        self._changes: list[int] = []
        self._inter_pod = False
        self._terms = TermsCache()
        self._index: InterPodIndex | None = None
        self._states: dict[str, _TaskState] = {}
        self._ports: dict[str, tuple[NodeInfo, int, HostPortInfo]] = {}
        self._stable_cache: dict[tuple[str, str], bool] = {}
        self.dra: DynamicResources | None = None

    def on_session_open(self, ssn: "Session") -> None:
        self._nodes = ssn.node_list
        self._changes = ssn.node_changes
        # no pod anywhere in the session has inter-pod terms: InterPodAffinity has nothing to check
        self._inter_pod = self.pod_affinity_enable and bool(ssn.has_inter_pod_terms)
        self._terms = TermsCache()
        self._index = None
        self._states = {}
        self._ports = {}
        self._stable_cache = {}
        ssn.add(Point.PRE_PREDICATE, self.name, self.pre_predicate)
        ssn.add(Point.PREDICATE, self.name, self.predicate)
        ssn.add(Point.CYCLE_STATE, self.name, self.cycle_state)
        ssn.add(Point.SIMULATE_ADD_TASK, self.name, self.simulate_add_task)
        ssn.add(Point.SIMULATE_REMOVE_TASK, self.name, self.simulate_remove_task)
        ssn.add(Point.SIMULATE_PREDICATE, self.name, self.simulate_predicate)
        self.dra = None
        if self.dynamic_resource_allocation_enable:
            self.dra = DynamicResources(ssn)
            self.dra.register(ssn)
            ssn.add(Point.TASK_SHAPE, self.name, self.dra.task_shape)

    def on_session_close(self, ssn: "Session") -> None:
        if self.dra is not None:
            self.dra.attach_claims(ssn.effects)
            self.dra = None

    # -- PreFilter -------------------------------------------------------------------------------

    def pre_predicate(self, task: TaskInfo) -> str | None:
        """kube PreFilter, in Volcano's order: NodeAffinity, NodePorts, InterPodAffinity, PodTopologySpread."""
        terms = self._terms.get(task)
        if self.node_affinity_enable and terms.node_name_conflict:
            return f"plugin NodeAffinity pre-predicates failed {REASON_NODE_AFFINITY_CONFLICT}"
        if self.pod_affinity_enable and terms.affinity_error:
            return f"plugin InterPodAffinity pre-predicates failed parsing pod: {terms.affinity_error}"
        if self.pod_topology_spread_enable and terms.spread_error:
            return f"plugin PodTopologySpread pre-predicates failed get constraints from pod: {terms.spread_error}"
        if self._needs_state(task):
            self._state(task, terms)
        if self.dra is not None:
            err = self.dra.pre_predicate(task)
            if err:
                return f"plugin DynamicResources pre-predicates failed {err}"
        return None

    def _needs_state(self, task: TaskInfo) -> bool:
        return self._inter_pod or (self.pod_topology_spread_enable and bool(task.spec.topology_spread_constraints))

    def _state(self, task: TaskInfo, terms: PodTerms | None = None) -> _TaskState:
        version = len(self._changes)
        st = self._states.get(task.uid)
        if st is not None and st.version == version and st.spec is task.spec:
            return st
        if terms is None:
            terms = self._terms.get(task)
        inter_pod = None
        if self._inter_pod:
            if self._index is None:
                self._index = InterPodIndex(self._nodes, self._changes, self._terms)
            s = inter_pod_filter_state(task, terms, self._nodes, self._index.entries())
            if not s.skip:
                inter_pod = s
        spread = None
        if self.pod_topology_spread_enable and terms.hard_spread:
            spread = spread_filter_state(task, terms, self._nodes)
        st = _TaskState(version, task.spec, inter_pod, spread)
        self._states[task.uid] = st
        return st

    # -- Filter ------------------------------------------------------------------------------------

    def predicate(self, task: TaskInfo, node: NodeInfo) -> list[Status] | None:
        statuses: list[Status] | None = None
        max_pods = node.allocatable.max_task_num
        if max_pods <= len(node.tasks) and max_pods <= node_pod_count(node):
            statuses = [Status(StatusCode.Unschedulable, NODE_POD_NUMBER_EXCEEDED)]

        failed = self._stable_with_cache(task, node) if self.cache_enable else self._stable(task, node)
        if failed is not None:
            return _append(statuses, failed)

        spec = task.spec
        if self.node_ports_enable and spec.host_ports and not fits_ports(spec.host_ports, self._used_ports(node)):
            statuses = _append(statuses, Status(StatusCode.Unschedulable, REASON_NODE_PORTS))

        if self._needs_state(task):
            st = self._state(task)
            labels = node.spec.labels
            if st.inter_pod is not None:
                failed = inter_pod_filter(st.inter_pod, labels)
                if failed is not None:
                    statuses = _append(statuses, failed)
                    if failed.code in UNRESOLVABLE_CODES:
                        return statuses
            if st.spread is not None:
                failed = spread_filter(st.spread, labels)
                if failed is not None:
                    statuses = _append(statuses, failed)
        if self.dra is not None:
            failed = self.dra.predicate(task, node)
            if failed is not None:
                statuses = _append(statuses, failed)
        return statuses

    def _stable(self, task: TaskInfo, node: NodeInfo) -> Status | None:
        """NodeUnschedulable, NodeAffinity and TaintToleration: the first failure, or None."""
        nspec = node.spec
        spec = task.spec
        if nspec.unschedulable and not tolerates(spec.tolerations, UNSCHEDULABLE_TAINT):
            return Status(StatusCode.UnschedulableAndUnresolvable, REASON_UNSCHEDULABLE)
        if self.node_affinity_enable and (spec.node_selector or spec.node_affinity):
            required = self._terms.get(task).required_node
            if required is not None and not required.matches(node.name, nspec.labels):
                return Status(StatusCode.UnschedulableAndUnresolvable, REASON_NODE_AFFINITY)
        if self.taint_toleration_enable and nspec.taints:
            taint = find_untolerated_taint(nspec.taints, spec.tolerations)
            if taint is not None:
                return Status(StatusCode.UnschedulableAndUnresolvable, taint_reason(taint))
        return None

    def _stable_with_cache(self, task: TaskInfo, node: NodeInfo) -> Status | None:
        """``predicate.CacheEnable``: the stable filters' verdict per (node, pod template) for the session.

        A cached failure is reported as Volcano does, without the original reason.
        """
        template = ((task.pod.get("metadata") or {}).get("annotations") or {}).get(POD_TEMPLATE_KEY)
        if not template:
            return self._stable(task, node)
        key = (node.name, str(template))
        fit = self._stable_cache.get(key)
        if fit is None:
            failed = self._stable(task, node)
            self._stable_cache[key] = failed is None
            return failed
        return None if fit else Status(StatusCode.Error, CACHE_FAILURE)

    # -- preempt's dry run (enableTopologyAwarePreemption) -------------------------------------------

    def cycle_state(self, task: TaskInfo, state: CycleState) -> None:
        """The InterPodAffinity PreFilter counts, which the dry run updates as victims come and go."""
        inter_pod = self._state(task).inter_pod if self._inter_pod else None
        state.write(self.name, _DryRunState(inter_pod.clone() if inter_pod is not None else None))

    def _simulate_update(self, state: CycleState, preemptor: TaskInfo, task: TaskInfo, node: NodeInfo,
                         multiplier: int) -> None:
        st: _DryRunState | None = state.read(self.name)
        if self.pod_affinity_enable and st is not None and st.inter_pod is not None:
            st.inter_pod.update_with_pod(preemptor, task, self._terms.get(task), node.spec.labels, multiplier)

    def simulate_add_task(self, state: CycleState, preemptor: TaskInfo, task: TaskInfo, node: NodeInfo) -> None:
        self._simulate_update(state, preemptor, task, node, 1)

    def simulate_remove_task(self, state: CycleState, preemptor: TaskInfo, task: TaskInfo, node: NodeInfo) -> None:
        self._simulate_update(state, preemptor, task, node, -1)

    def simulate_predicate(self, state: CycleState, task: TaskInfo, node: NodeInfo) -> str | None:
        """InterPodAffinity on the dry run's counts, then every device kind the task asks for on the
        dry-run node's devices (Volcano's ``FilterNode`` with no policy)."""
        st: _DryRunState | None = state.read(self.name)
        if self.pod_affinity_enable and st is not None and st.inter_pod is not None:
            failed = inter_pod_filter(st.inter_pod, node.spec.labels)
            if failed is not None:
                return f"failed to filter pod on node {node.name}: {failed.reason}"
        for d in node.devices.values():
            req = d.family.request(task)
            if req is None:
                continue
            failed = d.filter(task, req, "")
            if failed is not None:
                return f"device {d.key} cannot fit task {task.key} on node {node.name}: {failed.reason}"
        return None

    def _used_ports(self, node: NodeInfo) -> HostPortInfo:
        entry = self._ports.get(node.name)
        if entry is not None and entry[0] is node and entry[1] == node.generation:
            return entry[2]
        info = node_host_ports(node)
        self._ports[node.name] = (node, node.generation, info)
        return info


@dataclass(slots=True)
class _DryRunState:
    """What this plugin keeps in a preemptor's cycle state: its InterPodAffinity counts, or None
    when the filter is skipped (no required terms either way)."""

    inter_pod: InterPodFilterState | None

    def clone(self) -> "_DryRunState":
        return _DryRunState(self.inter_pod.clone() if self.inter_pod is not None else None)


def _append(statuses: list[Status] | None, status: Status) -> list[Status]:
    if statuses is None:
        return [status]
    statuses.append(status)
    return statuses
