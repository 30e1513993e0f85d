"""binpack: prefer the nodes a task fills most (plugins/binpack/binpack.go).

spec/framework.md §8.9.  The weight table is fixed when the plugin is built; the
score itself allocates nothing, since it runs once per (task, node) pair.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vcsched.api.node_info import NodeInfo
from vcsched.api.resource import CPU, MEMORY, MIN_RESOURCE
from vcsched.api.task_info import TaskInfo
from vcsched.framework.arguments import Arguments
from vcsched.framework.interface import Plugin, Point

if TYPE_CHECKING:
    from vcsched.framework.session import Session

BINPACK_WEIGHT = "binpack.weight"
BINPACK_CPU = "binpack.cpu"
BINPACK_MEMORY = "binpack.memory"
BINPACK_RESOURCES = "binpack.resources"
BINPACK_RESOURCES_PREFIX = BINPACK_RESOURCES + "."

MAX_NODE_SCORE = 100


class BinpackPlugin(Plugin):
    name = "binpack"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.weight = arguments.get_int(BINPACK_WEIGHT, 1)
        cpu = arguments.get_int(BINPACK_CPU, 1)
        if cpu < 0:
            cpu = 1
        memory = arguments.get_int(BINPACK_MEMORY, 1)
        if memory < 0:
            memory = 1
        weights: dict[str, int] = {}
        for raw in arguments.get_str(BINPACK_RESOURCES, "").split(","):
            resource = raw.strip()
            if not resource:
                continue
            w = arguments.get_int(BINPACK_RESOURCES_PREFIX + resource, 1)
            weights[resource] = w if w >= 0 else 1
        # binpack.cpu and binpack.memory win over cpu or memory listed in binpack.resources
        weights[CPU] = cpu
        weights[MEMORY] = memory
        self.resource_weights = weights
        self.cpu_weight = cpu
        self.memory_weight = memory
        self.scalar_weights: dict[str, int] = {n: w for n, w in weights.items() if n not in (CPU, MEMORY)}
        self.max_score = float(MAX_NODE_SCORE * self.weight)

    def on_session_open(self, ssn: "Session") -> None:
        if self.weight != 0:
            ssn.add(Point.NODE_ORDER, self.name, self.score)

    def score(self, task: TaskInfo, node: NodeInfo) -> float:
        """The weighted mean, over the task's weighted dimensions, of (request + used) / allocatable."""
        req = task.resreq
        allocatable = node.allocatable
        used = node.used
        score = 0.0
        weight_sum = 0

        request = req.milli_cpu
        if request >= MIN_RESOURCE:
            w = self.cpu_weight
            capacity = allocatable.milli_cpu
            if capacity != 0 and w != 0:
                final = request + used.milli_cpu
                if final > capacity:
                    return 0.0
                score += final * w / capacity
            weight_sum += w

        request = req.memory
        if request >= MIN_RESOURCE:
            w = self.memory_weight
            capacity = allocatable.memory
            if capacity != 0 and w != 0:
                final = request + used.memory
                if final > capacity:
                    return 0.0
                score += final * w / capacity
            weight_sum += w

        scalar_weights = self.scalar_weights
        if scalar_weights and req.scalars:
            alloc_scalars = allocatable.scalars
            used_scalars = used.scalars
            for name, request in req.scalars.items():
                if request < MIN_RESOURCE:
                    continue
                w = scalar_weights.get(name)
                if w is None:
                    continue
                capacity = alloc_scalars.get(name, 0.0)
                if capacity != 0 and w != 0:
                    final = request + used_scalars.get(name, 0.0)
                    if final > capacity:
                        return 0.0
                    score += final * w / capacity
                weight_sum += w

        if weight_sum > 0:
            score /= weight_sum
        return score * self.max_score
