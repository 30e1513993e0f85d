"""Queues as the queue controller and the scheduler's cache leave them (queue_controller, cache.newDefaultAndRootQueue)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def default_queue(name: str, reclaimable: bool, creation_timestamp: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name, "uid": f"queue-{name}", "creationTimestamp": creation_timestamp},
        "spec": {"weight": 1, "reclaimable": reclaimable},
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
