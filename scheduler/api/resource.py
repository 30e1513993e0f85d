"""The scheduler's resource vector, with Volcano's comparison semantics.

``Resource`` mirrors Volcano's ``api.Resource`` (pkg/scheduler/api/resource_info.go):
cpu in millicores, memory in bytes, scalar resources in milli-units (``pods`` in
whole units) and ``max_task_num`` for the pod-count predicate.  Comparisons treat
any difference below ``MIN_RESOURCE`` (0.1) as equal.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache

from .quantity import format_bytes, format_milli, milli_value, parse_quantity, value

MIN_RESOURCE = 0.1

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"


class Default(Enum):
    """What a scalar missing from one side of a comparison stands for."""

    ZERO = 0
    INFINITY = 1


def is_scalar_resource_name(name: str) -> bool:
    """Extended, hugepages, prefixed-native and attachable-volume names (k8s v1helper)."""
    if name.startswith("count/") or name.startswith("requests."):
        return False
    return "/" in name or name.startswith("hugepages-") or name.startswith("attachable-volumes-")


@dataclass(slots=True)
class Resource:
    milli_cpu: float = 0.0
    memory: float = 0.0
    scalars: dict[str, float] = field(default_factory=dict)
    max_task_num: int = 0

    # -- construction ---------------------------------------------------------

    @classmethod
    def from_list(cls, rl: Mapping[str, object] | None, ignored: Iterable[str] = ()) -> "Resource":
        """``NewResource`` from a ResourceList of quantity strings.

        Raises ``QuantityError`` for a malformed quantity; callers that read user
        input validate first and name the field.
        """
        r = cls()
        if not rl:
            return r
        ignored = set(ignored)
        for name, raw in rl.items():
            if name in ignored:
                continue
            if name == CPU:
                r.milli_cpu += _milli(raw)
            elif name == MEMORY:
                r.memory += _whole(raw)
            elif name == PODS:
                n = _whole(raw)
                r.max_task_num += n
                r.scalars[PODS] = r.scalars.get(PODS, 0.0) + n
            elif name == EPHEMERAL_STORAGE or is_scalar_resource_name(name):
                r.scalars[name] = r.scalars.get(name, 0.0) + _milli(raw)
            else:
                _milli(raw)  # not counted, but a malformed quantity is still an error
        return r

    def clone(self) -> "Resource":
        return Resource(self.milli_cpu, self.memory, dict(self.scalars), self.max_task_num)

    # -- queries --------------------------------------------------------------

    def get(self, name: str) -> float:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        return self.scalars.get(name, 0.0)

    def is_empty(self) -> bool:
        """True iff nothing but possibly ``pods`` is requested (the BestEffort test)."""
        if self.milli_cpu >= MIN_RESOURCE or self.memory >= MIN_RESOURCE:
            return False
        for name, v in self.scalars.items():
            if name != PODS and v >= MIN_RESOURCE:
                return False
        return True

    def is_zero(self, name: str) -> bool:
        return self.get(name) < MIN_RESOURCE

    def resource_names(self) -> list[str]:
        """Dimensions with a value of at least ``MIN_RESOURCE``, ``pods`` included."""
        names = []
        if self.milli_cpu >= MIN_RESOURCE:
            names.append(CPU)
        if self.memory >= MIN_RESOURCE:
            names.append(MEMORY)
        names.extend(n for n, v in self.scalars.items() if v >= MIN_RESOURCE)
        return names

    # -- arithmetic (in place, returning self as Volcano does) ---------------

    def add(self, r: "Resource") -> "Resource":
        self.milli_cpu += r.milli_cpu
        self.memory += r.memory
        if r.scalars:
            s = self.scalars
            for name, v in r.scalars.items():
                s[name] = s.get(name, 0.0) + v
        self.max_task_num += r.max_task_num
        return self

    def sub(self, r: "Resource") -> "Resource":
        """``SubWithoutAssert``: may go negative; callers that need the assertion check first."""
        self.milli_cpu -= r.milli_cpu
        self.memory -= r.memory
        if r.scalars:
            s = self.scalars
            for name, v in r.scalars.items():
                s[name] = s.get(name, 0.0) - v
        self.max_task_num -= r.max_task_num
        return self

    def multi(self, ratio: float) -> "Resource":
        self.milli_cpu *= ratio
        self.memory *= ratio
        for name in self.scalars:
            self.scalars[name] *= ratio
        return self

    def set_max(self, r: "Resource") -> "Resource":
        """``helpers.Max`` in place: per-dimension max; scalars the union of non-negative values."""
        self.milli_cpu = max(self.milli_cpu, r.milli_cpu)
        self.memory = max(self.memory, r.memory)
        for name, v in r.scalars.items():
            if v >= 0:
                self.scalars[name] = max(self.scalars.get(name, 0.0), v)
        return self

    def min_dimension(self, r: "Resource", default: Default) -> "Resource":
        """``MinDimensionResource`` in place."""
        self.milli_cpu = min(self.milli_cpu, r.milli_cpu)
        self.memory = min(self.memory, r.memory)
        for name, v in self.scalars.items():
            if name in r.scalars:
                self.scalars[name] = min(v, r.scalars[name])
            elif default is Default.ZERO:
                self.scalars[name] = 0.0
        return self

    def diff(self, r: "Resource") -> tuple["Resource", "Resource"]:
        """``Diff(r, Zero)`` → (increased, decreased): per dimension max(l−r, 0) and max(r−l, 0).

        As in Volcano, a scalar lands in exactly one of the two (an equal one in
        ``decreased``, as 0); names keep self's order, then r's.
        """
        inc, dec = Resource(), Resource()
        d = self.milli_cpu - r.milli_cpu
        inc.milli_cpu, dec.milli_cpu = max(d, 0.0), max(-d, 0.0)
        d = self.memory - r.memory
        inc.memory, dec.memory = max(d, 0.0), max(-d, 0.0)
        ls, rs = self.scalars, r.scalars
        for name in (*ls, *(n for n in rs if n not in ls)):
            d = ls.get(name, 0.0) - rs.get(name, 0.0)
            if d > 0:
                inc.scalars[name] = d
            else:
                dec.scalars[name] = max(-d, 0.0)
        return inc, dec

    def exceeded_part(self, r: "Resource") -> "Resource":
        """``ExceededPart(self, r)``: max(self − r, 0) per dimension."""
        return self.diff(r)[0]

    # -- comparisons ------------------------------------------------------------

    def less_equal(self, r: "Resource", default: Default = Default.ZERO) -> bool:
        """``LessEqual``: every dimension of self fits r within ``MIN_RESOURCE``."""
        if not (self.milli_cpu < r.milli_cpu or abs(self.milli_cpu - r.milli_cpu) < MIN_RESOURCE):
            return False
        if not (self.memory < r.memory or abs(self.memory - r.memory) < MIN_RESOURCE):
            return False
        rs = r.scalars
        if default is Default.INFINITY:
            for name in rs:
                if name not in self.scalars:
                    return False
            for name, lv in self.scalars.items():
                rv = rs.get(name)
                if rv is None:
                    continue
                if not (lv < rv or abs(lv - rv) < MIN_RESOURCE):
                    return False
            return True
        for name, lv in self.scalars.items():
            rv = rs.get(name, 0.0)
            if not (lv < rv or abs(lv - rv) < MIN_RESOURCE):
                return False
        return True

    def less_equal_with_names(self, r: "Resource", default: Default = Default.ZERO) -> list[str]:
        """``LessEqualWithResourcesName``: the names of the failing dimensions, cpu, memory, then scalars."""
        failed: list[str] = []
        if not (self.milli_cpu < r.milli_cpu or abs(self.milli_cpu - r.milli_cpu) < MIN_RESOURCE):
            failed.append(CPU)
        if not (self.memory < r.memory or abs(self.memory - r.memory) < MIN_RESOURCE):
            failed.append(MEMORY)
        rs = r.scalars
        for name, lv in self.scalars.items():
            rv = rs.get(name)
            if rv is None:
                if default is Default.INFINITY:
                    continue
                rv = 0.0
            if not (lv < rv or abs(lv - rv) < MIN_RESOURCE):
                failed.append(name)
        return failed

    def first_shortfall(self, r: "Resource") -> str | None:
        """The first name ``less_equal_with_names(r, ZERO)`` would return, without building the list."""
        if not (self.milli_cpu < r.milli_cpu or abs(self.milli_cpu - r.milli_cpu) < MIN_RESOURCE):
            return CPU
        if not (self.memory < r.memory or abs(self.memory - r.memory) < MIN_RESOURCE):
            return MEMORY
        rs = r.scalars
        for name, lv in self.scalars.items():
            rv = rs.get(name, 0.0)
            if not (lv < rv or abs(lv - rv) < MIN_RESOURCE):
                return name
        return None

    def less_equal_strict_in(self, r: "Resource", req: "Resource") -> list[str]:
        """``LessEqualWithDimensionAndResourcesName``: strict, only the dimensions req asks for, ``pods`` skipped."""
        failed: list[str] = []
        if req.milli_cpu > 0 and self.milli_cpu > r.milli_cpu:
            failed.append(CPU)
        if req.memory > 0 and self.memory > r.memory:
            failed.append(MEMORY)
        if not self.scalars:
            return failed
        for name, rv in req.scalars.items():
            if name == PODS or rv <= 0:
                continue
            if self.scalars.get(name, 0.0) > r.scalars.get(name, 0.0):
                failed.append(name)
        return failed

    def less_equal_partly_zero_filtered(self, r: "Resource", req: "Resource") -> list[str]:
        """``LessEqualPartlyWithDimensionZeroFiltered``: the dimensions req asks for where self fits r,
        leaving out those where both self and r are zero (``pods`` never counts); empty: none fits."""
        fits: list[str] = []
        if req.milli_cpu > 0 and not (self.milli_cpu < MIN_RESOURCE and r.milli_cpu < MIN_RESOURCE):
            if self.milli_cpu < r.milli_cpu or abs(self.milli_cpu - r.milli_cpu) < MIN_RESOURCE:
                fits.append(CPU)
        if req.memory > 0 and not (self.memory < MIN_RESOURCE and r.memory < MIN_RESOURCE):
            if self.memory < r.memory or abs(self.memory - r.memory) < MIN_RESOURCE:
                fits.append(MEMORY)
        for name, quant in req.scalars.items():
            if name == PODS or quant <= 0:
                continue
            lv, rv = self.get(name), r.get(name)
            if lv < MIN_RESOURCE and rv < MIN_RESOURCE:
                continue
            if lv < rv or abs(lv - rv) < MIN_RESOURCE:
                fits.append(name)
        return fits

    def greater_partly_relevant(self, r: "Resource", req: "Resource") -> list[str]:
        """``GreaterPartlyWithRelevantDimensions``: the dimensions req asks for, and r has, where self
        exceeds r (``pods`` never counts); empty: none."""
        over: list[str] = []
        if req.milli_cpu > 0 and r.milli_cpu >= MIN_RESOURCE and self.milli_cpu > r.milli_cpu:
            over.append(CPU)
        if req.memory > 0 and r.memory >= MIN_RESOURCE and self.memory > r.memory:
            over.append(MEMORY)
        for name, quant in req.scalars.items():
            if name == PODS or quant <= 0 or name not in r.scalars:
                continue
            if self.get(name) > r.get(name):
                over.append(name)
        return over

    def less_partly(self, r: "Resource", default: Default) -> bool:
        """``LessPartly``: some dimension of self is below r's (a scalar missing on one side per ``default``)."""
        if self.milli_cpu < r.milli_cpu or self.memory < r.memory:
            return True
        if default is Default.ZERO:
            for name in r.scalars:
                if name not in self.scalars:
                    return True
        for name, lv in self.scalars.items():
            rv = r.scalars.get(name)
            if rv is None:
                if default is Default.INFINITY:
                    return True
                continue
            if lv < rv:
                return True
        return False

    # -- output -------------------------------------------------------------------

    def to_list(self) -> dict[str, str]:
        """``ConvertRes2ResList``: cpu and memory always; pods whole; other scalars milli."""
        out = {CPU: format_milli(self.milli_cpu), MEMORY: format_bytes(self.memory)}
        for name, v in sorted(self.scalars.items()):
            out[name] = str(int(round(v))) if name == PODS else format_milli(v)
        return out

    def __str__(self) -> str:
        parts = [f"cpu {self.milli_cpu:.2f}", f"memory {self.memory:.2f}"]
        parts.extend(f"{n} {v:.2f}" for n, v in sorted(self.scalars.items()))
        return ", ".join(parts)


def intersection(a: Resource, b: Resource) -> list[str]:
    """``Intersection``: the names both have at least ``MIN_RESOURCE`` of, ``pods`` included."""
    names = set(a.resource_names())
    return [n for n in b.resource_names() if n in names]


def infinite_resource() -> Resource:
    """``InfiniteResource``: cpu and memory without bound, no scalars."""
    return Resource(sys.float_info.max, sys.float_info.max, {}, sys.maxsize)


def share(allocated: float, total: float) -> float:
    """``helpers.Share``: a/t, with 0/0 = 0 and a/0 = 1."""
    if total == 0:
        return 0.0 if allocated == 0 else 1.0
    return allocated / total


# Quantity strings repeat across pods (every pod of a bench or a Job template): convert each once.
@lru_cache(maxsize=4096)
def _milli_text(raw: str) -> int:
    return milli_value(parse_quantity(raw))


@lru_cache(maxsize=4096)
def _whole_text(raw: str) -> int:
    return value(parse_quantity(raw))


def _milli(raw: object) -> int:
    return _milli_text(raw) if type(raw) is str else milli_value(parse_quantity(raw))


def _whole(raw: object) -> int:
    return _whole_text(raw) if type(raw) is str else value(parse_quantity(raw))
