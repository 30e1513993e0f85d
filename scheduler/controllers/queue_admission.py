"""The hierarchy checks of Volcano's queue validating webhook (webhooks/admission/queues/validate).

On create, a queue under a parent other than ``root`` is refused when the parent is itself or does
not exist, when the tree gets deeper than ``--max-queue-depth`` (5), or when the parent has pods
allocated and no child yet; and every queue but ``root`` when its capability exceeds the nearest
ancestor's that sets it, when its siblings' guarantees or deserved shares, itself included, add up
to more than the parent's, or when its children's do or its capability is below theirs.

The webhook sees queues one at a time, each against those created before it.  ``simulate`` gets
them all at once: it admits them parents first (so that the order of the input does not matter),
and a queue whose parent never comes, or that is its own ancestor, is refused for that.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..api.quantity import format_bytes
from ..api.resource import CPU, MEMORY, Default, Resource

ROOT = "root"
MAX_QUEUE_DEPTH = 5  # webhook-manager --max-queue-depth


@dataclass(frozen=True, slots=True)
class QueueProblem:
    queue: str
    field: str
    message: str


def _spec(q: Mapping[str, Any]) -> Mapping[str, Any]:
    return q.get("spec") or {}


def _parent(q: Mapping[str, Any]) -> str:
    return _spec(q).get("parent") or ""


def _res(raw: Any) -> Resource:
    return Resource.from_list(raw or {})


def _capability(q: Mapping[str, Any]) -> Resource | None:
    cap = _spec(q).get("capability")
    return _res(cap) if cap is not None else None


def _guarantee(q: Mapping[str, Any]) -> Resource:
    return _res((_spec(q).get("guarantee") or {}).get("resource"))


def _format(name: str, value: float) -> str:
    """``formatResourceWithType``: cpu as a milli quantity, memory in bytes, others as a number."""
    if name == CPU:
        return f"{int(value) // 1000}" if int(value) % 1000 == 0 else f"{int(value)}m"
    if name == MEMORY:
        return format_bytes(value)
    return f"{value:.2f}"


def admission_order(queues: Mapping[str, Mapping[str, Any]]) -> tuple[list[str], list[QueueProblem]]:
    """The queues parents first (root's children by name first), and the refusals of queues whose
    parent is missing, is themselves, or lies on a cycle."""
    problems: list[QueueProblem] = []
    children: dict[str, list[str]] = {}
    for name, q in queues.items():
        if name == ROOT:
            continue
        parent = _parent(q) or ROOT
        if parent == name:
            problems.append(QueueProblem(name, "spec.parent", f"queue {name} cannot use itself as parent"))
        elif parent not in queues:
            problems.append(QueueProblem(name, "spec.parent", f"failed to get parent queue of queue {name}: "
                                         f'queues.scheduling.volcano.sh "{parent}" not found'))
        else:
            children.setdefault(parent, []).append(name)
    order: list[str] = []
    todo = [ROOT] if ROOT in queues else []
    while todo:
        name = todo.pop(0)
        order.append(name)
        todo.extend(sorted(children.get(name, ())))
    refused = {p.queue for p in problems}
    for name in sorted(queues):
        if name not in order and name not in refused:
            problems.append(QueueProblem(name, "spec.parent", f"cycle detected in queue hierarchy for queue {name}"))
    return order, problems


def validate_queue_tree(queues: Mapping[str, Mapping[str, Any]]) -> list[QueueProblem]:
    """Every refusal, in admission order (the first is the one to report)."""
    order, problems = admission_order(queues)
    if problems:
        return problems
    created: dict[str, Mapping[str, Any]] = {}
    for name in order:
        q = queues[name]
        if name != ROOT:
            problem = _hierarchy_problem(name, q, created) or _resource_problem(name, q, created)
            if problem is not None:
                return [problem]
        created[name] = q
    return []


def _children_of(parent: str, created: Mapping[str, Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [q for n, q in created.items() if n != ROOT and (_parent(q) or ROOT) == parent]


def _hierarchy_problem(name: str, q: Mapping[str, Any], created: Mapping[str, Mapping[str, Any]]
                       ) -> QueueProblem | None:
    """``validateHierarchicalQueue``: the depth and a parent that already runs pods."""
    parent = _parent(q)
    if not parent or parent == ROOT:
        return None
    depth, p = 1, parent
    while p and p != ROOT:
        depth += 1
        if depth > MAX_QUEUE_DEPTH:
            return QueueProblem(name, "spec.parent",
                                f"queue {name} exceeds the maximum allowed depth of {MAX_QUEUE_DEPTH}")
        p = _parent(created[p])
    parent_q = created[parent]
    if not _children_of(parent, created):
        pods = ((parent_q.get("status") or {}).get("allocated") or {}).get("pods")
        if pods is not None:
            n = Resource.from_list({"pods": pods}).max_task_num
            if n:
                return QueueProblem(name, "spec.parent", f"queue {parent} cannot be the parent queue of queue {name} "
                                                         f"because it has allocated Pods: {n}")
    return None


def _resource_problem(name: str, q: Mapping[str, Any], created: Mapping[str, Mapping[str, Any]]
                      ) -> QueueProblem | None:
    """``validateHierarchicalQueueResources`` for a queue being created (it has no children yet)."""
    parent = _parent(q)
    if not parent or parent == ROOT:
        return None
    cap = _capability(q)
    if cap is not None:
        for r in cap.resource_names():
            mine, limit = cap.get(r), _ancestor_capability(q, r, created)
            if limit is not None and mine > limit:
                return QueueProblem(name, "spec.capability",
                                    f"queue {name} capability[{r}]={_format(r, mine)} exceeds its ancestor's "
                                    f"capability={_format(r, limit)}")
    parent_q = created[parent]
    parent_guarantee, parent_deserved = _guarantee(parent_q), _res(_spec(parent_q).get("deserved"))
    total_guarantee, total_deserved = Resource(), Resource()
    for sibling in [*_children_of(parent, created), q]:
        total_guarantee.add(_guarantee(sibling))
        if parent_guarantee.less_partly(total_guarantee, Default.ZERO):
            return QueueProblem(name, "spec.guarantee",
                                f"parent queue {parent} validation failed: sum of children's guarantee "
                                f"({total_guarantee}) exceeds parent's guarantee limit ({parent_guarantee})")
        total_deserved.add(_res(_spec(sibling).get("deserved")))
        if parent_deserved.less_partly(total_deserved, Default.ZERO):
            return QueueProblem(name, "spec.deserved",
                                f"parent queue {parent} validation failed: sum of children's deserved "
                                f"({total_deserved}) exceeds parent's deserved limit ({parent_deserved})")
    return None


def _ancestor_capability(q: Mapping[str, Any], r: str, created: Mapping[str, Mapping[str, Any]]) -> float | None:
    """``findNearestAncestorCapability``: the nearest ancestor below root whose capability sets ``r``."""
    p = _parent(q)
    while p and p != ROOT:
        pq = created.get(p)
        if pq is None:
            return None
        cap = _capability(pq)
        if cap is not None and cap.get(r) > 0:
            return cap.get(r)
        p = _parent(pq)
    return None
