"""Queues as the queue controller and the scheduler's cache leave them (queue_controller, cache.newDefaultAndRootQueue)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..api.types import QueueState


def default_queue(name: str, reclaimable: bool, creation_timestamp: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name, "uid": f"queue-{name}", "creationTimestamp": creation_timestamp},
        # the mutating webhook sets every queue but root under root
        "spec": {"weight": 1, "reclaimable": reclaimable, **({"parent": "root"} if name != "root" else {})},
        "status": {"state": "Open"},
    }


def reconcile_queue(queue: Mapping[str, Any]) -> dict[str, Any]:
    """Parent defaults to ``root``; an empty state becomes Open (the state machine's sync)."""
    q = {k: v for k, v in queue.items()}
    spec = dict(q.get("spec") or {})
    name = (q.get("metadata") or {}).get("name")
    if not spec.get("parent") and name != "root":
        spec["parent"] = "root"
    if spec.get("reclaimable") is None:
        spec["reclaimable"] = True
    if not spec.get("weight"):
        spec["weight"] = 1
    q["spec"] = spec
    status = dict(q.get("status") or {})
    if not status.get("state"):
        status["state"] = "Open"
    q["status"] = status
    return q


# -- the queue controller's state machine (queue_controller_action.go, state/*.go; spec/jobs.md §10) --------

OPEN_QUEUE, CLOSE_QUEUE, SYNC_QUEUE = "OpenQueue", "CloseQueue", "SyncQueue"
CLOSED_BY_PARENT = "volcano.sh/closed-by-parent"


@dataclass
class QueueOutcome:
    """What one queue request decides: the new state (None: unchanged), annotation writes, follow-up
    requests, Events, and an error (the request is retried, up to --max-requeue-num)."""

    state: str | None = None
    set_parent: str | None = None
    annotations: dict[str, dict[str, str]] = field(default_factory=dict)  # queue name → annotations to set
    requests: list[tuple[str, str]] = field(default_factory=list)  # (queue name, action)
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (type, reason, message)
    error: str = ""


def queue_state(queue: Mapping[str, Any]) -> str:
    return ((queue.get("status") or {}).get("state")) or QueueState.OPEN


def _children(name: str, queues: Mapping[str, Mapping[str, Any]]) -> list[str]:
    return sorted(n for n, q in queues.items() if (q.get("spec") or {}).get("parent") == name)


def _parent(queue: Mapping[str, Any]) -> str:
    return (queue.get("spec") or {}).get("parent") or ""


def next_state(current: str, action: str, podgroups: int) -> str:
    """state/{open,closed,closing,unknown}.go: the state a request leads to."""
    drained = QueueState.CLOSED if podgroups == 0 else QueueState.CLOSING
    if action == OPEN_QUEUE:
        return QueueState.OPEN
    if current == QueueState.OPEN:
        return drained if action == CLOSE_QUEUE else QueueState.OPEN
    if current == QueueState.CLOSED:
        return QueueState.CLOSED
    if current == QueueState.CLOSING:
        return drained
    return drained if action == CLOSE_QUEUE else QueueState.UNKNOWN  # Unknown


def reconcile_queue_request(queue: Mapping[str, Any], action: str, podgroups: int,
                            queues: Mapping[str, Mapping[str, Any]]) -> QueueOutcome:
    """One request for ``queue`` (``SyncQueue``, ``OpenQueue`` or ``CloseQueue``).

    ``podgroups`` is the number of PodGroups in the queue; ``queues`` every queue by name
    (for the parent and the children).
    """
    out = QueueOutcome()
    name = (queue.get("metadata") or {}).get("name") or ""
    current = queue_state(queue)
    new = next_state(current, action, podgroups)
    if action == OPEN_QUEUE:
        if current != QueueState.OPEN:
            parent = _parent(queue)
            if parent and parent != "root" and parent in queues and \
                    queue_state(queues[parent]) in (QueueState.CLOSED, QueueState.CLOSING):
                out.error = (f"Failed to open queue {name} because its parent queue {parent} is closing or closed. "
                             "Open the parent queue first.")
                return out
            for child in _children(name, queues):
                if ((queues[child].get("metadata") or {}).get("annotations") or {}).get(CLOSED_BY_PARENT) == "true":
                    out.requests.append((child, OPEN_QUEUE))
        if new != current:
            out.state = new
        out.annotations[name] = {CLOSED_BY_PARENT: "false"}
        return out
    if action == CLOSE_QUEUE:
        if current in (QueueState.CLOSED, QueueState.CLOSING):
            if new != current:
                out.state = new
            return out
        if name == "root":
            return out  # root cannot be closed: a no-op
        for child in _children(name, queues):
            if queue_state(queues[child]) not in (QueueState.CLOSED, QueueState.CLOSING):
                out.annotations[child] = {CLOSED_BY_PARENT: "true"}
                out.requests.append((child, CLOSE_QUEUE))
        if new != current:
            out.state = new
        out.events.append(("Normal", CLOSE_QUEUE, "Close queue succeed"))
        return out
    # SyncQueue
    if not _parent(queue) and name != "root":
        out.set_parent = "root"
    if new != (queue.get("status") or {}).get("state"):
        out.state = new
    parent = queues.get(_parent(queue) or "root") if name != "root" else None
    if parent is not None:
        parent_state = queue_state(parent)
        mine = new
        closed_by_parent = ((queue.get("metadata") or {}).get("annotations") or {}).get(CLOSED_BY_PARENT) == "true"
        if parent_state in (QueueState.CLOSED, QueueState.CLOSING) and \
                mine not in (QueueState.CLOSED, QueueState.CLOSING):
            out.annotations[name] = {CLOSED_BY_PARENT: "true"}
            out.requests.append((name, CLOSE_QUEUE))
        elif parent_state == QueueState.OPEN and mine in (QueueState.CLOSED, QueueState.CLOSING) and closed_by_parent:
            out.requests.append((name, OPEN_QUEUE))
    return out


def apply_queue_outcome(queues: dict[str, dict[str, Any]], name: str, out: QueueOutcome) -> bool:
    """Carry an outcome out on in-memory queues (the simulator's sink); True if anything changed."""
    changed = False
    q = queues.get(name)
    if q is not None:
        if out.state is not None and queue_state(q) != out.state or \
                (out.state is not None and not (q.get("status") or {}).get("state")):
            q.setdefault("status", {})["state"] = out.state
            changed = True
        if out.set_parent and _parent(q) != out.set_parent:
            q.setdefault("spec", {})["parent"] = out.set_parent
            changed = True
    for target, wanted in out.annotations.items():
        tq = queues.get(target)
        if tq is None:
            continue
        ann = tq.setdefault("metadata", {}).setdefault("annotations", {})
        for k, v in wanted.items():
            if ann.get(k) != v:
                ann[k] = v
                changed = True
    return changed
