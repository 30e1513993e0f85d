"""``deviceshare.NodeLockEnable``: the node-annotation lock (plugins/util/nodelock/nodelock.go; spec §4.5, E-15).

Volcano's ``LockNode`` runs inside a device kind's Allocate: it reads the node from the
API, and
- no annotation ``<lock name>``: writes it with the RFC 3339 time;
- an annotation older than 5 minutes: replaces it;
- a younger one: fails with "node <n> has been locked within 5 minutes";
- one that is not RFC 3339: fails with the parse error (the node stays locked until
  someone removes the annotation).
The device plugin removes the lock after its own Allocate; Volcano never does.

vcsched's session does no I/O, so the lock is split in two:
- a predicate-time check (``lock_failure``): a node whose lock is fresh or unparsable,
  or that a pod of this session has locked already, is not allocatable for the kinds
  that take that lock, with Volcano's Allocate error as the reason;
- a ``NodeLock`` effect placed right before the pod's ``Bind``, which the sinks carry
  out (the Kubernetes sink patches the node annotation before it posts the Binding).
A lock taken by an allocation the session discards (a gang that did not fit) is never
written, where Volcano's stays for 5 minutes.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

LOCK_EXPIRY = 300.0  # seconds: time.Since(lockTime) > 5 minutes
GPUSHARE_LOCK = "gpu"
VGPU_LOCK = "hamivgpu"
HAMI_ASCEND_LOCK = "hami.io/mutex.lock"
GO_RFC3339 = "2006-01-02T15:04:05Z07:00"

_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})\Z")


def lock_name(family: Any, req: Any) -> str | None:
    """The lock this kind takes for this request, or None.

    gpushare locks ``gpu`` for memory requests only (number mode takes none), vGPU locks
    ``hamivgpu``, MindCluster 310P takes none; every other registry key is a HAMi Ascend
    ``commonWord`` (Volcano's registry has nothing else), which locks ``hami.io/mutex.lock``.
    A kind may also name its lock in a ``node_lock`` class attribute.
    """
    named = getattr(family, "node_lock", None)
    if named:
        return named
    key = family.key
    if key == "GpuShare":
        return GPUSHARE_LOCK if getattr(family, "sharing", False) and getattr(req, "memory", 0) > 0 else None
    if key == "hamivgpu":
        return VGPU_LOCK
    if key == "ascend310p-vNPU":
        return None
    return HAMI_ASCEND_LOCK


def locks_before_selection(lock: str) -> bool:
    """gpushare and HAMi Ascend lock before choosing devices, vGPU after (its device errors come first)."""
    return lock != VGPU_LOCK


def parse_lock_time(value: str) -> float | None:
    """``time.Parse(time.RFC3339, value)`` as a Unix time, or None when it does not parse."""
    if not _RFC3339.match(value):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def lock_error(node: str, value: str | None, now: float) -> str | None:
    """``LockNode``'s error for the node's current lock value, or None when the lock can be taken."""
    if value is None:
        return None
    t = parse_lock_time(value)
    if t is None:
        # Go's message continues with the element it could not parse; vcsched names the layout only
        return f'parsing time "{value}" as "{GO_RFC3339}": cannot parse "{value}" as RFC 3339'
    if now - t > LOCK_EXPIRY:
        return None  # expired: Volcano deletes and re-takes it
    return f"node {node} has been locked within 5 minutes"


def allocate_error(lock: str, node: str, pod: str, err: str) -> str:
    """How each kind's Allocate wraps the lock error (vgpu/gpushare/hami device_info.go)."""
    if lock == VGPU_LOCK:
        return f"node {node} locked for {pod} hamivgpu lockname {err}"
    if lock == GPUSHARE_LOCK:
        return f"node {node} locked for lockname gpushare {err}"
    return f"node {node} locked for {pod} hami vnpu. lockname {err}"


def lock_value(now: float) -> str:
    """``time.Now().Format(time.RFC3339)`` (vcsched writes UTC)."""
    return datetime.fromtimestamp(int(now), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
