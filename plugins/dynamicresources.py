"""DynamicResources: kube-scheduler's DRA plugin as Volcano's predicates plugin runs it.

Volcano wraps k8s.io/kubernetes pkg/scheduler/framework/plugins/dynamicresources in its predicates
plugin (plugins/predicates/predicates.go, switched on by the DynamicResourceAllocation feature gate, on
since Kubernetes 1.34, or ``predicate.DynamicResourceAllocationEnable``): PreFilter, Filter, Reserve and
Unreserve run on the session's events, PreBind when the pod is bound.  Here, per session:

- PreFilter (``pre_predicate``): the pod's claims exist (a template's claim is the one the resourceclaim
  controller recorded in the pod's ``status.resourceClaimStatuses`` and owned by the pod), are not being
  deleted, can still be reserved for one more consumer (256), and name DeviceClasses that exist;
- Filter (``predicate``): an allocated claim must be available on the node (its node selector), the
  others are allocated together by the structured allocator (api/dra_allocator.py) over the node's
  pools, against the devices every other claim holds, those allocated in this session included;
- Reserve / Unreserve (the session's allocate and deallocate events): a placed pod's claims are
  allocated and reserved for it in the session's state, so that the next pod sees its devices taken;
  a statement that is discarded gives them back, so a gang's claims stay allocated only when the whole
  gang fits; evicting a pod (preempt, reclaim) takes it out of its claims' consumers and, when it was
  the last, frees the claim's devices for the preemptor (the resourceclaim controller deallocates such
  a claim once the pod is gone);
- PreBind (``on_session_close``): each Bind carries the claims' status to write first, the allocation
  for a claim allocated here and ``reservedFor`` with the pod added, as kube-scheduler writes them.

Tasks whose claims are all unallocated, each used by one pod, served by node-local slices, share their
verdicts by the claims' content (``task_shape``); others are checked node by node.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from vcsched.api.dra import (
    RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE,
    AllocationResult,
    Consumer,
    ResourceClaim,
    pod_claim_refs,
)
from vcsched.api.dra_allocator import AllocatedState, AllocationError, Allocator, Pool, gather_pools
from vcsched.api.dra_cache import DraSnapshot
from vcsched.api.fit_errors import Status
from vcsched.api.node_info import NodeInfo
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import StatusCode
from vcsched.framework.effects import Bind, ClaimStatus, Event
from vcsched.framework.session import EventError, EventHandler

if TYPE_CHECKING:
    from vcsched.framework.session import Session

CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"
IN_USE = "resourceclaim in use"


@dataclass(slots=True)
class ClaimState:
    """One claim in the session: its allocation and consumers as the session changes them."""

    claim: ResourceClaim
    allocation: AllocationResult | None
    reserved: list[Consumer]
    allocated_here: bool = False  # allocated by this session (written at PreBind)

    @property
    def key(self) -> str:
        return self.claim.key


@dataclass(slots=True)
class TaskClaims:
    """A pod's claims, resolved once per session (PreFilter)."""

    claims: list[ClaimState]
    error: str = ""  # PreFilter's refusal
    code: StatusCode = StatusCode.UnschedulableAndUnresolvable


@dataclass(slots=True)
class _Placement:
    """What Reserve did for a task, to undo it."""

    allocated: list[ClaimState] = field(default_factory=list)
    reserved: list[ClaimState] = field(default_factory=list)


class DynamicResources:
    """The DRA state of one session and the predicates plugin's DRA callbacks."""

    def __init__(self, ssn: "Session") -> None:
        self.ssn = ssn
        snap = ssn.dra if isinstance(ssn.dra, DraSnapshot) else DraSnapshot()
        self.snap = snap
        self.state = AllocatedState()
        self.claims: dict[str, ClaimState] = {}
        for key, claim in snap.claims.items():
            self.claims[key] = ClaimState(claim, claim.allocation, list(claim.reserved_for))
            if claim.allocation is not None:
                self.state.add(claim.allocation)
        self.allocator = Allocator(snap.classes, self.state)
        self._pools: dict[str, list[Pool]] = {}
        self._tasks: dict[str, TaskClaims] = {}
        self._claimless: set[str] = set()  # uids of the session's pods without claims (most of them)
        self._users: dict[str, int] = {}  # claim key -> how many of the session's pods name it
        self._placed: dict[str, _Placement] = {}
        self._freed: dict[str, list[tuple[ClaimState, Consumer, AllocationResult | None]]] = {}
        self._node_local = not snap.slices.shared
        # (pod uid, problem) already told by an event, kept across sessions for the pods still there
        told = ssn.state.plugins.get("dynamicresources")
        if told:
            live = {uid for job in ssn.jobs.values() for uid in job.tasks}
            told = {t for t in told if t[0] in live}
        self._told: set[tuple[str, str]] = told or set()
        ssn.state.plugins["dynamicresources"] = self._told
        if snap.claims:  # how many pods name each claim (read only for claims there are)
            for job in ssn.jobs.values():
                for task in job.tasks.values():
                    for ref in pod_claim_refs(task.pod):
                        if ref.claim:
                            key = f"{task.namespace}/{ref.claim}"
                            self._users[key] = self._users.get(key, 0) + 1

    def register(self, ssn: "Session") -> None:
        ssn.add_event_handler(EventHandler(allocate=self.on_allocate, deallocate=self.on_deallocate))

    # -- the pod's claims ------------------------------------------------------------------------

    def task_claims(self, task: TaskInfo) -> TaskClaims | None:
        """None for a pod without claims."""
        known = self._tasks.get(task.uid)
        if known is not None:
            return known
        if task.uid in self._claimless:
            return None
        refs = pod_claim_refs(task.pod)
        if not refs:
            self._claimless.add(task.uid)
            return None
        found = self._resolve(task, refs)
        self._tasks[task.uid] = found
        return found

    def _resolve(self, task: TaskInfo, refs) -> TaskClaims:
        claims: list[ClaimState] = []
        seen: set[str] = set()
        problems = self.snap.problems
        for ref in refs:
            if ref.claim is None:
                continue  # the resourceclaim controller says none is needed
            if ref.claim == "":
                return TaskClaims([], f"waiting for the resourceclaim controller to create the ResourceClaim for "
                                      f"pod claim {ref.name} (template {ref.template})")
            key = f"{task.namespace}/{ref.claim}"
            if key in seen:
                continue
            seen.add(key)
            problem = problems.get(("ResourceClaim", key))
            if problem is not None:
                return self._refused(task, "InvalidResourceClaim", f"resourceclaim {ref.claim} is invalid: {problem}")
            state = self.claims.get(key)
            if state is None:
                return TaskClaims([], f'resourceclaim.resource.k8s.io "{ref.claim}" not found')
            claim = state.claim
            if claim.deleting:
                return TaskClaims([], f'resourceclaim "{claim.name}" is being deleted')
            if ref.template and claim.owner_pod_uid != task.uid:
                return TaskClaims([], f"ResourceClaim {key} was not created for pod {task.key} (pod is not owner)")
            if state.allocation is not None:
                if not claim.reserved_for_pod(task.uid) and len(state.reserved) >= RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE:
                    return TaskClaims([], IN_USE, StatusCode.Unschedulable)
            else:
                for request in claim.requests:
                    for alt in request.alternatives():
                        if alt.device_class in self.snap.classes:
                            continue
                        problem = problems.get(("DeviceClass", alt.device_class))
                        if problem is not None:
                            return self._refused(task, "InvalidDeviceClass", f"request {request.name}: device class "
                                                 f"{alt.device_class} is invalid: {problem}")
                        return TaskClaims([], f"request {request.name}: device class {alt.device_class} does not "
                                              "exist")
            claims.append(state)
        return TaskClaims(claims)

    def _refused(self, task: TaskInfo, reason: str, message: str) -> TaskClaims:
        """A claim or class the API server would have refused (Kubernetes mode: the CRDs standing in for
        resource.k8s.io do not validate): the pod waits, and a Warning event on it says why, once per
        problem while the pod lives."""
        told = self._told
        if (task.uid, message) not in told:
            told.add((task.uid, message))
            self.ssn.effects.append(Event("Pod", task.namespace, task.name, "Warning", reason, message))
        return TaskClaims([], message)

    # -- PreFilter, Filter ---------------------------------------------------------------------------

    def pre_predicate(self, task: TaskInfo) -> str | None:
        tc = self.task_claims(task)
        if tc is None or not tc.error:
            return None
        return tc.error

    def pools(self, node: NodeInfo) -> list[Pool]:
        pools = self._pools.get(node.name)
        if pools is None:
            slices = self.snap.slices
            pools = self._pools[node.name] = gather_pools(slices.for_node(node.name), node.name, node.spec.labels,
                                                          slices.by_pool)
        return pools

    def predicate(self, task: TaskInfo, node: NodeInfo) -> Status | None:
        tc = self.task_claims(task)
        if tc is None or not tc.claims:
            return None
        if tc.error:
            return Status(tc.code, tc.error)
        pending = []
        for state in tc.claims:
            if state.allocation is not None:
                if not state.allocation.available_on(node.name, node.spec.labels):
                    return Status(StatusCode.UnschedulableAndUnresolvable, NOT_AVAILABLE)
            else:
                pending.append(state.claim)
        if not pending:
            return None
        try:
            fits = self.allocator.fits(node.name, node.spec.labels, self.pools(node), pending)
        except AllocationError as e:
            return Status(StatusCode.Error, str(e))
        return None if fits else Status(StatusCode.Unschedulable, CANNOT_ALLOCATE)

    def task_shape(self, task: TaskInfo) -> Any:
        """What the DRA verdicts of a task depend on besides its pod: the content of its claims, when
        each is unallocated, named by this pod only and served by node-local slices; else None."""
        tc = self.task_claims(task)
        if tc is None:
            return ""
        if tc.error:
            return ("error", tc.error)
        if not self._node_local:
            return None
        parts = []
        for state in tc.claims:
            if state.allocation is not None or state.reserved or self._users.get(state.key, 0) > 1:
                return None
            parts.append(state.claim.signature)
        return tuple(parts)

    # -- Reserve, Unreserve -----------------------------------------------------------------------

    def on_allocate(self, task: TaskInfo) -> None:
        freed = self._freed.pop(task.uid, None)
        if freed is not None:  # an eviction undone: the pod keeps its claims
            for state, consumer, allocation in freed:
                if allocation is not None and state.allocation is None:
                    state.allocation = allocation
                    self.state.add(allocation)
                state.reserved.append(consumer)
            return
        tc = self.task_claims(task)
        if tc is None or not tc.claims:
            return
        node = self.ssn.nodes.get(task.node_name)
        if node is None:
            return
        pending = [s for s in tc.claims if s.allocation is None]
        placement = _Placement()
        if pending:
            try:
                results = self.allocator.allocate(node.name, node.spec.labels, self.pools(node),
                                                  [s.claim for s in pending])
            except AllocationError as e:
                raise EventError(str(e)) from e
            if results is None:
                raise EventError(f"{CANNOT_ALLOCATE} on node {node.name}")
            for state, result in zip(pending, results):
                state.allocation = result
                state.allocated_here = True
                self.state.add(result)
                placement.allocated.append(state)
        for state in tc.claims:
            if not any(c.uid == task.uid for c in state.reserved):
                state.reserved.append(Consumer("pods", task.name, task.uid))
                placement.reserved.append(state)
        self._placed[task.uid] = placement

    def on_deallocate(self, task: TaskInfo) -> None:
        placement = self._placed.pop(task.uid, None)
        if placement is not None:
            for state in placement.reserved:
                state.reserved = [c for c in state.reserved if c.uid != task.uid]
            for state in placement.allocated:
                if state.allocation is not None:
                    self.state.remove(state.allocation)
                state.allocation = None
                state.allocated_here = False
            return
        tc = self.task_claims(task)
        if tc is None or not tc.claims:
            return
        freed = []
        for state in tc.claims:
            consumer = next((c for c in state.reserved if c.uid == task.uid), None)
            if consumer is None:
                continue
            state.reserved.remove(consumer)
            allocation = None
            if not state.reserved and state.allocation is not None:
                allocation = state.allocation
                self.state.remove(allocation)
                state.allocation = None
            freed.append((state, consumer, allocation))
        self._freed[task.uid] = freed

    # -- PreBind ---------------------------------------------------------------------------------

    def attach_claims(self, effects: list) -> None:
        """Each Bind of a pod with claims carries the claims' status to write before it."""
        written: dict[str, list[Consumer]] = {}
        for i, effect in enumerate(effects):
            if not isinstance(effect, Bind) or effect.uid not in self._placed:
                continue
            tc = self._tasks.get(effect.uid)
            if tc is None or not tc.claims:
                continue
            statuses = []
            for state in tc.claims:
                reserved = written.get(state.key)
                if reserved is None:
                    reserved = list(state.claim.reserved_for)
                if not any(c.uid == effect.uid for c in reserved):
                    reserved = reserved + [Consumer("pods", effect.name, effect.uid)]
                written[state.key] = reserved
                claim = state.claim
                allocation = state.allocation.to_api() if state.allocated_here and state.allocation else None
                statuses.append(ClaimStatus(claim.namespace, claim.name, claim.uid, claim.resource_version,
                                            allocation, tuple(c.to_api() for c in reserved)))
            effects[i] = replace(effect, claims=tuple(statuses))
