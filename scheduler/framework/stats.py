"""What a session observed, for the scheduler's metrics.

Volcano's plugins and actions update Prometheus series as they go.  Here they
write plain numbers into the session's ``SessionStats``; after the session
closes, the scheduler publishes them (``vcsched.metrics``).  The core stays free
of the metrics library, and a test can read what a session observed directly.
"""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass, field

from ..api.resource import Resource


@dataclass(slots=True)
class QueueStats:
    """proportion's view of one queue at the end of the session."""

    weight: int
    allocated: Resource
    request: Resource
    inqueue: Resource
    deserved: Resource
    share: float
    overused: bool


@dataclass(slots=True)
class VGPUDeviceStats:
    """One GPU of the vGPU ledger as rebuilt from pod annotations (the session's snapshot, before any
    allocation), for Volcano's ``volcano_vgpu_device_*`` gauges (spec/devices.md §8)."""

    node: str
    device: str  # devID: the GPU UUID
    memory_limit: int
    shared_number: int
    allocated_memory: int
    allocated_cores: int
    pods: dict[str, tuple[int, int]]  # pod name → (memory, cores) it holds on this GPU


@dataclass(slots=True)
class SessionStats:
    # (plugin, "OnSessionOpen" | "OnSessionClose", seconds)
    plugin_latency: list[tuple[str, str, float]] = field(default_factory=list)
    # job uid → tasks allocate or backfill placed (allocated or pipelined) in this session
    job_placements: Counter[str] = field(default_factory=Counter)
    # gang: job uid → tasks short of minAvailable; None until gang closes the session
    unschedulable_tasks: dict[str, int] = field(default_factory=dict)
    unschedulable_jobs: int | None = None
    # gang: job uids whose scheduling failed this session (job_retry_counts)
    job_retries: list[str] = field(default_factory=list)
    # drf: job uid → dominant share at close
    job_shares: dict[str, float] = field(default_factory=dict)
    # proportion: queue name → its state at close
    queues: dict[str, QueueStats] = field(default_factory=dict)
    # preempt / reclaim: committed statements with at least one eviction, by action
    eviction_transactions: Counter[str] = field(default_factory=Counter)
    preemption_attempts: int = 0
    preemption_victims: int | None = None
    # node search: per task, seconds in predicates and (when nodes were scored) in scoring; flat arrays
    # of doubles, not lists of float objects: two objects a task fewer, for a session of 50,000 tasks
    predicate_durations: array[float] = field(default_factory=lambda: array("d"))
    scoring_durations: array[float] = field(default_factory=lambda: array("d"))
    # deviceshare: every vGPU at session open; None when no vGPU kind is in the session
    vgpu_devices: list[VGPUDeviceStats] | None = None
