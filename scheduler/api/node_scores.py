"""kube's node scorers in its integer arithmetic: the resource scorers (LeastAllocated,
MostAllocated, BalancedAllocation) and ImageLocality."""

from __future__ import annotations

import math
from collections.abc import Sequence

from .k8s import MAX_NODE_SCORE

# -- resource scorers (noderesources) -------------------------------------------------------------


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    if requested > capacity:
        requested = capacity
    return requested * MAX_NODE_SCORE // capacity


def weighted_resource_score(per_resource, requested: Sequence[int], allocatable: Sequence[int],
                            weights: Sequence[int]) -> int:
    """``leastResourceScorer``/``mostResourceScorer``: ``Σ score×w / Σw`` over resources with allocatable."""
    total = wsum = 0
    for req, alloc, w in zip(requested, allocatable, weights):
        if alloc == 0:
            continue
        total += per_resource(req, alloc) * w
        wsum += w
    return total // wsum if wsum else 0


def weighted_resource_score2(per_resource, req0: int, alloc0: int, req1: int, alloc1: int, w0: int, w1: int) -> int:
    """``weighted_resource_score`` for two resources (cpu, memory), without building sequences."""
    total = wsum = 0
    if alloc0 != 0:
        total += per_resource(req0, alloc0) * w0
        wsum += w0
    if alloc1 != 0:
        total += per_resource(req1, alloc1) * w1
        wsum += w1
    return total // wsum if wsum else 0


def balanced_resource_score2(req0: int, alloc0: int, req1: int, alloc1: int) -> int:
    """``balanced_resource_score`` for two resources (cpu, memory): the same arithmetic, no lists."""
    if alloc0 == 0 or alloc1 == 0:
        return MAX_NODE_SCORE  # at most one fraction: std 0, int((1 - 0.0) × 100.0)
    f0 = float(req0) / float(alloc0)
    f1 = float(req1) / float(alloc1)
    if f0 > 1:
        f0 = 1.0
    if f1 > 1:
        f1 = 1.0
    return int((1 - abs((f0 - f1) / 2)) * float(MAX_NODE_SCORE))


def balanced_resource_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """``balancedResourceScorer``: ``(1 − std of the used fractions) × 100``, truncated."""
    fractions = []
    for req, alloc in zip(requested, allocatable):
        if alloc == 0:
            continue
        f = float(req) / float(alloc)
        fractions.append(1.0 if f > 1 else f)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
    return int((1 - std) * float(MAX_NODE_SCORE))


# -- image locality ---------------------------------------------------------------------------------

MB = 1024 * 1024
IMAGE_MIN_THRESHOLD = 23 * MB
IMAGE_MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    """Add ``:latest`` when the image has no tag."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def scaled_image_score(size: int, num_nodes: int, total_nodes: int) -> int:
    """An image's size scaled by the share of nodes that have it."""
    spread = float(num_nodes) / float(total_nodes)
    return int(float(size) * spread)


def image_locality_score(sum_scores: int, num_containers: int) -> int:
    """``calculatePriority``: the summed score clamped to [23MB, 1000MB × containers], mapped to 0–100."""
    max_threshold = IMAGE_MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < IMAGE_MIN_THRESHOLD:
        sum_scores = IMAGE_MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    return _go_div(MAX_NODE_SCORE * (sum_scores - IMAGE_MIN_THRESHOLD), max_threshold - IMAGE_MIN_THRESHOLD)


def _go_div(a: int, b: int) -> int:
    """Go's integer division, truncating toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q
