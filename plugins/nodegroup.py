"""nodegroup: queues bound to groups of nodes (plugins/nodegroup/nodegroup.go, errors.go).

A node belongs to the group its label ``volcano.sh/nodegroup-name`` names.  A Queue's
``spec.affinity`` names groups: ``nodeGroupAffinity`` and ``nodeGroupAntiAffinity``, each with
``requiredDuringSchedulingIgnoredDuringExecution`` and ``preferredDuringSchedulingIgnoredDuringExecution``.

- PredicateFn (every failure UnschedulableAndUnresolvable, reasons as Volcano words them): a queue whose
  ``volcano.sh/nodegroup-resource-limits`` annotation does not parse fits no node (``node group
  resource limit annotation invalid``).  A node without the label fits only a queue without affinity
  names, and only with ``strict: false`` (``node group label not found``); a labelled node never fits a
  queue without names (``node group affinity not specified``).  Otherwise the group must be required or
  preferred and not anti-required, or anti-preferred, which wins over everything
  (``node does not satisfy the node group affinity``); then the queue's resource limit for the group,
  if any, must hold what the queue already has there plus the task (``node group resource limit
  exceeded``).
- NodeOrderFn: a required group +100; a preferred one +50, or with ``enablePreferredOrder``
  ``50 × (n − i)/n`` for the i-th of n preferred names; an anti-preferred group scores −1.
- Event handlers: what each queue has allocated in each group, for the limits.

Arguments: ``strict`` (true), ``enablePreferredOrder`` (false).  With ``enableHierarchy`` a queue
without ``spec.affinity`` takes its nearest ancestor's (by ``spec.parent``, ``root`` when empty);
the resource-limit annotation is never inherited.

The verdicts and scores depend on the task's queue, not only its pod: the plugin tells the node
search so (``Point.TASK_SHAPE``), and a queue with resource limits makes its tasks search node by node,
as a placement on one node of a group changes the verdict on every other node of the group.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog

from vcsched.api.fit_errors import Status
from vcsched.api.node_info import NodeInfo
from vcsched.api.quantity import QuantityError
from vcsched.api.queue_info import QueueAffinity, QueueInfo, queue_ancestors
from vcsched.api.resource import CPU, MEMORY, MIN_RESOURCE, Resource
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import ALLOCATED_STATUS, StatusCode
from vcsched.framework.arguments import Arguments
from vcsched.framework.interface import Plugin, Point
from vcsched.framework.session import EventHandler

if TYPE_CHECKING:
    from vcsched.framework.session import Session

log = structlog.get_logger("vcsched.nodegroup")

NODE_GROUP_NAME_KEY = "volcano.sh/nodegroup-name"  # the node label (NodeGroupNameKey)
RESOURCE_LIMITS_KEY = "volcano.sh/nodegroup-resource-limits"  # the queue annotation
STRICT = "strict"
ENABLE_PREFERRED_ORDER = "enablePreferredOrder"
BASE_SCORE = 100

# errors.go
ERR_AFFINITY_NOT_FOUND = "node group affinity not specified"
ERR_LABEL_NOT_FOUND = "node group label not found"
ERR_UNSATISFIED = "node does not satisfy the node group affinity"
ERR_LIMIT_INVALID = "node group resource limit annotation invalid"
ERR_LIMIT_EXCEEDED = "node group resource limit exceeded"


def _fit_error(reason: str) -> list[Status]:
    """``newFitErr``: one UnschedulableAndUnresolvable status (shared: read it, do not change it)."""
    return [Status(StatusCode.UnschedulableAndUnresolvable, reason)]


_AFFINITY_NOT_FOUND = _fit_error(ERR_AFFINITY_NOT_FOUND)
_LABEL_NOT_FOUND = _fit_error(ERR_LABEL_NOT_FOUND)
_UNSATISFIED = _fit_error(ERR_UNSATISFIED)
_LIMIT_INVALID = _fit_error(ERR_LIMIT_INVALID)
_LIMIT_EXCEEDED = _fit_error(ERR_LIMIT_EXCEEDED)


@dataclass(frozen=True, slots=True)
class GroupAffinity:
    """``queueGroupAffinity``: a queue's affinity names as sets, and the preferred names' positions."""

    required: frozenset[str]
    preferred: frozenset[str]
    anti_required: frozenset[str]
    anti_preferred: frozenset[str]
    preferred_list: tuple[str, ...]
    # ``queueGroupAffinityPreferredIndexes``: name → its position in the preferred list (the last
    # one when a name repeats); derived from preferred_list, so left out of equality and hashing
    preferred_index: dict[str, int] = field(compare=False, hash=False, repr=False)

    @classmethod
    def of(cls, a: QueueAffinity) -> "GroupAffinity":
        index = {name: i for i, name in enumerate(a.preferred)}
        return cls(frozenset(a.required), frozenset(a.preferred), frozenset(a.anti_required),
                   frozenset(a.anti_preferred), a.preferred, index)

    @property
    def unset(self) -> bool:
        """No name at all (``affinity: {}``, or empty lists)."""
        return not (self.required or self.preferred or self.anti_required or self.anti_preferred)

    def satisfied(self, group: str) -> bool:
        """``predicate``: required or preferred, unless anti-required; anti-preferred always passes."""
        ok = group in self.required or group in self.preferred
        if group in self.anti_required:
            ok = False
        if group in self.anti_preferred:
            ok = True
        return ok

    def score(self, group: str, preferred_order: bool) -> float:
        score = 0.0
        if group in self.required:
            score += BASE_SCORE
        if preferred_order:
            i = self.preferred_index.get(group)
            if i is not None:
                n = len(self.preferred_index)
                score += 0.5 * BASE_SCORE * (n - i) / n
        elif group in self.preferred:
            score += 0.5 * BASE_SCORE
        if group in self.anti_preferred:
            score = -1
        return score


@dataclass(frozen=True, slots=True)
class GroupLimit:
    """``nodeGroupResourceLimit``: the limit and the resource names the annotation lists for a group
    (only those are limited)."""

    resource: Resource
    names: frozenset[str]

    def exceeded(self, used: Resource) -> list[str]:
        """``limitedResourceExceededNames``: the listed names ``used`` goes over (by at least 0.1)."""
        out = [name for name in (CPU, MEMORY) if name in self.names and _over(used.get(name), self.resource.get(name))]
        out += [name for name in sorted(self.names - {CPU, MEMORY}) if _over(used.get(name), self.resource.get(name))]
        return out


def _over(used: float, limit: float) -> bool:
    """``greaterThanResourceLimit``."""
    return used > limit and used - limit >= MIN_RESOURCE


def _no_constant(name: str) -> Any:
    raise ValueError(f"invalid character {name[0]!r} looking for beginning of value")


def parse_resource_limits(raw: str) -> dict[str, GroupLimit]:
    """``parseNodeGroupResourceLimits``: the annotation's JSON, ``{"<group>": {"<resource>": <quantity>}}``,
    decoded as Go decodes it into ``map[string]v1.ResourceList`` (a quantity may be a string or a
    number; null is an empty map or a zero quantity).  Raises ValueError naming the problem."""
    try:
        doc = json.loads(raw, parse_int=str, parse_float=str, parse_constant=_no_constant)
    except ValueError as e:
        raise ValueError(f"parse annotation {RESOURCE_LIMITS_KEY}: {e}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ValueError(f"parse annotation {RESOURCE_LIMITS_KEY}: cannot unmarshal {_json_type(doc)} "
                         "into a map of node groups to resource lists")
    limits: dict[str, GroupLimit] = {}
    for group, resources in doc.items():
        if resources is None:
            resources = {}
        if not isinstance(resources, dict):
            raise ValueError(f"parse annotation {RESOURCE_LIMITS_KEY}: group {group}: cannot unmarshal "
                             f"{_json_type(resources)} into a resource list")
        quantities: dict[str, Any] = {}
        for name, quantity in resources.items():
            if quantity is None:
                quantity = "0"
            if not isinstance(quantity, str):
                raise ValueError(f"parse annotation {RESOURCE_LIMITS_KEY}: {group}.{name}: quantities must match "
                                 f"the regular expression, got {_json_type(quantity)}")
            quantities[name] = quantity
        try:
            resource = Resource.from_list(quantities)
        except QuantityError as e:
            raise ValueError(f"parse annotation {RESOURCE_LIMITS_KEY}: group {group}: {e}") from None
        limits[group] = GroupLimit(resource, frozenset(quantities))
    return limits


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "string" if isinstance(value, str) else "number"


@dataclass(slots=True)
class QueueAttr:
    """``queueAttr``: what the plugin knows of one queue in this session."""

    name: str
    affinity: GroupAffinity | None
    limits: dict[str, GroupLimit] = field(default_factory=dict)
    limit_error: str | None = None
    allocated: dict[str, Resource] = field(default_factory=dict)  # group → what the queue holds there


class NodeGroupPlugin(Plugin):
    name = "nodegroup"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.strict = arguments.get_bool(STRICT, True)
        self.preferred_order = arguments.get_bool(ENABLE_PREFERRED_ORDER, False)
        self.attrs: dict[str, QueueAttr] = {}

    # -- session open ------------------------------------------------------------------------------

    def on_session_open(self, ssn: "Session") -> None:
        self.attrs = {name: self._attr(queue) for name, queue in ssn.queues.items()}
        if ssn.hierarchy_enabled(self.name):
            self._inherit(ssn)
        for attr in self.attrs.values():
            if attr.limit_error is not None:
                log.error(f"queue <{attr.name}> has invalid {RESOURCE_LIMITS_KEY} annotation: {attr.limit_error}",
                          queue=attr.name, field=f"metadata.annotations[{RESOURCE_LIMITS_KEY}]")
        self._count_allocated(ssn)
        jobs, attrs, strict = ssn.jobs, self.attrs, self.strict

        def predicate(task: TaskInfo, node: NodeInfo) -> list[Status] | None:
            job = jobs.get(task.job)
            if job is None:
                return [Status(StatusCode.Error, f"job {task.job} not found in session")]
            attr = attrs.get(job.queue)
            if attr is not None and attr.limit_error is not None:
                return _LIMIT_INVALID
            affinity = attr.affinity if attr is not None else None
            unset = affinity is None or affinity.unset
            group = node.spec.labels.get(NODE_GROUP_NAME_KEY)
            if group is None:
                if not strict and unset:
                    return None
                return _LABEL_NOT_FOUND
            if unset:
                return _AFFINITY_NOT_FOUND
            if not affinity.satisfied(group):
                return _UNSATISFIED
            if attr.limits and self._limit_exceeded(task, group, attr):
                return _LIMIT_EXCEEDED
            return None

        def node_order(task: TaskInfo, node: NodeInfo) -> float:
            group = node.spec.labels.get(NODE_GROUP_NAME_KEY)
            if group is None:
                return 0.0
            job = jobs.get(task.job)
            if job is None:
                return 0.0
            attr = attrs.get(job.queue)
            if attr is None or attr.affinity is None:
                return 0.0
            return attr.affinity.score(group, self.preferred_order)

        ssn.add(Point.NODE_ORDER, self.name, node_order)
        ssn.add(Point.PREDICATE, self.name, predicate)
        ssn.add(Point.TASK_SHAPE, self.name, self._task_shape(ssn))
        ssn.add_event_handler(EventHandler(allocate=self._on_allocate(ssn, 1), deallocate=self._on_allocate(ssn, -1)))

    def on_session_close(self, ssn: "Session") -> None:
        self.attrs = {}

    @staticmethod
    def _attr(queue: QueueInfo) -> QueueAttr:
        """``newQueueAttr``."""
        attr = QueueAttr(queue.name, GroupAffinity.of(queue.affinity) if queue.affinity is not None else None)
        raw = queue.annotations.get(RESOURCE_LIMITS_KEY)
        if raw:
            try:
                attr.limits = parse_resource_limits(raw)
            except ValueError as e:
                attr.limit_error = str(e)
        return attr

    def _inherit(self, ssn: "Session") -> None:
        """``buildAncestors`` and ``updateAffinityFromAncestor``: a queue without ``spec.affinity`` takes
        its nearest ancestor's.  Volcano's walk stops where ours does (a missing parent, a cycle), and
        as an ancestor's inherited affinity is the affinity of one further up the same walk, taking the
        first ancestor that sets one is what Volcano's map-order passes come to."""
        for attr in self.attrs.values():
            if attr.affinity is not None:
                continue
            chain, problem = queue_ancestors(ssn.queues, attr.name)
            if problem is not None:
                log.warning(f"queue {attr.name}: {problem}; its ancestors above are not looked at",
                            queue=attr.name, field="spec.parent")
            for ancestor in chain:
                own = ssn.queues[ancestor].affinity
                if own is not None:
                    attr.affinity = GroupAffinity.of(own)
                    break

    # -- resource limits ---------------------------------------------------------------------------

    @staticmethod
    def _group_of(ssn: "Session", task: TaskInfo) -> str | None:
        """``taskNodeGroup``: the group of the node the task is on, if any."""
        node = ssn.nodes.get(task.node_name) if task.node_name else None
        return node.spec.labels.get(NODE_GROUP_NAME_KEY) if node is not None else None

    def _count_allocated(self, ssn: "Session") -> None:
        """``initNodeGroupAllocated``: what each queue with limits holds in each group (only limits read it)."""
        for job in ssn.jobs.values():
            attr = self.attrs.get(job.queue)
            if attr is None or not attr.limits:
                continue
            for task in job.tasks.values():
                if task.status & ALLOCATED_STATUS:
                    self._add(ssn, attr, task, 1)

    def _add(self, ssn: "Session", attr: QueueAttr, task: TaskInfo, sign: int) -> None:
        group = self._group_of(ssn, task)
        if group is None:
            return
        allocated = attr.allocated.get(group)
        if allocated is None:
            if sign < 0:
                return
            allocated = attr.allocated[group] = Resource()
        if sign > 0:
            allocated.add(task.resreq)
        else:
            allocated.sub(task.resreq)

    def _on_allocate(self, ssn: "Session", sign: int):
        """The AllocateFunc (``sign`` 1) or DeallocateFunc (−1) event handler."""
        jobs, attrs = ssn.jobs, self.attrs

        def handler(task: TaskInfo) -> None:
            job = jobs.get(task.job)
            attr = attrs.get(job.queue) if job is not None else None
            if attr is not None and attr.limits:
                self._add(ssn, attr, task, sign)

        return handler

    @staticmethod
    def _limit_exceeded(task: TaskInfo, group: str, attr: QueueAttr) -> bool:
        """``checkNodeGroupResourceLimit``: the queue's holdings in the group plus the task, against the
        group's limit (a group the annotation does not list has none)."""
        limit = attr.limits.get(group)
        if limit is None:
            return False
        used = attr.allocated.get(group)
        future = used.clone().add(task.resreq) if used is not None else task.resreq.clone()
        names = limit.exceeded(future)
        if names:
            log.debug(f"task <{task.namespace}>/<{task.name}> queue {attr.name} on nodegroup {group} rejected by "
                      f"nodegroup resource limit: nodegroup {group} resource limit exceeded, insufficient "
                      f"resources: {names}")
        return bool(names)

    # -- sharing the node search -------------------------------------------------------------------

    def _task_shape(self, ssn: "Session"):
        """What the verdicts and scores depend on besides the pod: the queue's affinity (queues alike
        share), or nothing to share for a queue with limits (they follow allocations group-wide)."""
        jobs, attrs = ssn.jobs, self.attrs

        def shape(task: TaskInfo) -> Hashable | None:
            job = jobs.get(task.job)
            if job is None:
                return None
            attr = attrs.get(job.queue)
            if attr is None:
                return ("no queue",)
            if attr.limits:
                return None
            return (attr.affinity, attr.limit_error is not None)

        return shape

