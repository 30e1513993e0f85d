"""Network topology specs and SubJobs: the groups of one job's pods that are placed together
(api/sub_job_info.go, scheduling.volcano.sh ``NetworkTopologySpec`` and ``SubGroupPolicySpec``).

A PodGroup may say how far apart its pods may land (``spec.networkTopology``: ``mode`` hard or soft,
``highestTierAllowed`` or ``highestTierName``) and split its pods into subgroups
(``spec.subGroupPolicy``): the pods a policy's ``labelSelector`` selects are grouped by their values
of ``matchLabelKeys``, each group of ``subGroupSize`` pods a gang of its own, with its own network
topology, and at least ``minSubGroups`` of them needed for the job to run.  Pods no policy takes
belong to the job's default SubJob, whose gang size is the job's ``minMember`` when the job has no
policy (and 1 when it has).

A SubJob holds the same TaskInfo objects as its job and counts their statuses when asked: only
jobs with a network topology or subgroups ever build their SubJobs.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from .k8s import LabelSelector, SelectorError, parse_label_selector
from .resource import Resource
from .task_info import TaskInfo
from .types import ALLOCATED_STATUS, READY_STATUS, TaskStatus

HARD = "hard"
SOFT = "soft"


@dataclass(slots=True)
class NetworkTopology:
    """``NetworkTopologySpec``; the session's copy is changed at open (tier name → tier, soft → hard)."""

    mode: str = HARD
    highest_tier_allowed: int | None = None
    highest_tier_name: str = ""

    @classmethod
    def of(cls, raw: Mapping[str, Any] | None) -> "NetworkTopology | None":
        if raw is None:
            return None
        tier = raw.get("highestTierAllowed")
        return cls(str(raw.get("mode") or HARD), None if tier is None else int(tier),
                   str(raw.get("highestTierName") or ""))

    def copy(self) -> "NetworkTopology":
        return replace(self)

    def hard_tier(self) -> int | None:
        """``IsHardTopologyMode``: the highest tier allowed when the mode is hard and the tier known."""
        if self.highest_tier_allowed is None or self.mode != HARD:
            return None
        return self.highest_tier_allowed


@dataclass(frozen=True, slots=True)
class SubGroupPolicy:
    """One ``spec.subGroupPolicy`` entry."""

    name: str
    sub_group_size: int | None = None  # None: the API server's default 1 was not applied
    min_sub_groups: int | None = None
    selector: LabelSelector | None = None  # None: no labelSelector, every pod
    match_label_keys: tuple[str, ...] = ()
    network_topology: NetworkTopology | None = None

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> "SubGroupPolicy":
        selector = None
        if raw.get("labelSelector") is not None:
            try:
                selector = parse_label_selector(raw["labelSelector"])
            except SelectorError:
                selector = LabelSelector(nothing=True)  # Volcano: a selector that does not convert matches no pod
        size, minimum = raw.get("subGroupSize"), raw.get("minSubGroups")
        return cls(str(raw.get("name") or ""), None if size is None else int(size),
                   None if minimum is None else int(minimum), selector,
                   tuple(str(k) for k in raw.get("matchLabelKeys") or ()),
                   NetworkTopology.of(raw.get("networkTopology")))

    def match_values(self, labels: Mapping[str, str]) -> list[str] | None:
        """``getSubJobMatchValues``: the pod's values of ``matchLabelKeys``; [] when the policy has no
        keys; None when the pod is not this policy's (the selector refuses it or a key is missing)."""
        if self.selector is not None and not self.selector.matches(labels):
            return None
        values = []
        for key in self.match_label_keys:
            value = labels.get(key)
            if not value:
                return None
            values.append(value)
        return values


def sub_job_gid(job: str, policy: str) -> str:
    return f"{job}/{policy}"


def sub_job_uid(job: str, policy: str, values: list[str]) -> str:
    """``getSubJobID``: long value lists are hashed (FNV-1a there, CRC32 here: only uniqueness matters)."""
    key = "-".join(values)
    if len(key) > 128:
        key = format(zlib.crc32(key.encode()), "x")
    return f"{job}/{policy}-{key}"


class SubJobInfo:
    """A group of a job's tasks placed as one gang, with its own network topology."""

    __slots__ = ("gid", "uid", "job", "min_available", "priority", "match_index", "tasks",
                 "allocated_hypernode", "network_topology")

    def __init__(self, gid: str, uid: str, job: str, min_available: int = 1,
                 network_topology: NetworkTopology | None = None, match_values: list[str] | None = None) -> None:
        self.gid = gid
        self.uid = uid
        self.job = job
        self.min_available = min_available
        self.priority = 0
        self.match_index = 0
        if match_values:
            try:
                self.match_index = int(match_values[0])
            except ValueError:
                pass
        self.tasks: dict[str, TaskInfo] = {}
        self.allocated_hypernode = ""
        self.network_topology = network_topology.copy() if network_topology is not None else None

    def add(self, task: TaskInfo) -> None:
        self.tasks[task.uid] = task
        if task.priority > self.priority:
            self.priority = task.priority

    # -- counters (sub_job_info.go) ------------------------------------------------------------

    def count(self, statuses: TaskStatus) -> int:
        return sum(1 for t in self.tasks.values() if t.status & statuses)

    def pending(self) -> list[TaskInfo]:
        return [t for t in self.tasks.values() if t.status == TaskStatus.Pending]

    def pending_best_effort(self) -> int:
        return sum(1 for t in self.tasks.values() if t.status == TaskStatus.Pending and t.best_effort)

    def ready_task_num(self) -> int:
        return self.count(READY_STATUS)

    def is_ready(self) -> bool:
        return self.ready_task_num() + self.pending_best_effort() >= self.min_available

    def is_pipelined(self) -> bool:
        return (self.count(READY_STATUS | TaskStatus.Pipelined) + self.pending_best_effort()
                >= self.min_available)

    def allocated_task_num(self) -> int:
        return self.count(ALLOCATED_STATUS)

    def min_resources(self) -> Resource:
        """``GetMinResources``: what the pending tasks ask, all of them (a SubJob is one gang)."""
        total = Resource()
        for t in self.pending():
            total.add(t.resreq)
        return total

    # -- topology ---------------------------------------------------------------------------------

    @property
    def with_network_topology(self) -> bool:
        return self.network_topology is not None

    def hard_tier(self) -> int | None:
        return self.network_topology.hard_tier() if self.network_topology is not None else None

    @property
    def is_soft(self) -> bool:
        return self.network_topology is not None and self.network_topology.mode == SOFT

    def __repr__(self) -> str:
        return f"SubJobInfo({self.uid}, {len(self.tasks)} tasks, min={self.min_available})"
