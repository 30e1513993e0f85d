"""A pod's quota usage, as Kubernetes' ``quota/v1/evaluator/core · PodUsageFunc`` counts it.

Volcano sizes PodGroup ``minResources`` with it (job_controller_util · CalcPGMinResources,
pg_controller_handler · buildPodGroupFromPod). Keys: ``pods``, ``count/pods``, ``cpu`` and
``requests.cpu``, ``memory`` and ``requests.memory``, ``limits.*`` when limits are set,
``requests.<ext>`` for extended resources, and Volcano adds the bare ``<ext>`` name too.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from ..api.quantity import parse_quantity

_NATIVE = ("cpu", "memory", "ephemeral-storage")


def _q(value: Any) -> Fraction:
    return parse_quantity(value)


def _sum_into(total: dict[str, Fraction], rl: Mapping[str, Any] | None) -> None:
    for name, value in (rl or {}).items():
        total[name] = total.get(name, Fraction(0)) + _q(value)


def _add_into(total: dict[str, Fraction], rl: Mapping[str, Fraction]) -> None:
    for name, value in rl.items():
        total[name] = total.get(name, Fraction(0)) + value


def _max_into(total: dict[str, Fraction], rl: Mapping[str, Fraction]) -> None:
    for name, value in rl.items():
        if value > total.get(name, Fraction(0)):
            total[name] = value


def _effective(spec: Mapping[str, Any], kind: str) -> dict[str, Fraction]:
    """max(sum of containers and sidecars, largest init container + sidecars before it) + overhead."""
    total: dict[str, Fraction] = {}
    for c in spec.get("containers") or []:
        _sum_into(total, (c.get("resources") or {}).get(kind))
    sidecars: dict[str, Fraction] = {}
    init_max: dict[str, Fraction] = {}
    for c in spec.get("initContainers") or []:
        own: dict[str, Fraction] = {}
        _sum_into(own, (c.get("resources") or {}).get(kind))
        if c.get("restartPolicy") == "Always":
            _add_into(sidecars, own)
            _add_into(total, own)
        else:
            with_sidecars = dict(sidecars)
            _add_into(with_sidecars, own)
            _max_into(init_max, with_sidecars)
    _max_into(total, init_max)
    if kind == "requests":
        _sum_into(total, spec.get("overhead"))
    return total


def _is_extended(name: str) -> bool:
    return "/" in name and not name.startswith("kubernetes.io/") and not name.startswith("requests.")


def pod_usage(spec: Mapping[str, Any]) -> dict[str, Fraction]:
    """The quota usage of one pod built from ``spec``, as exact numbers."""
    usage: dict[str, Fraction] = {"pods": Fraction(1), "count/pods": Fraction(1)}
    requests = _effective(spec, "requests")
    limits = _effective(spec, "limits")
    for name, value in requests.items():
        if name in _NATIVE:
            usage[name] = value
            usage[f"requests.{name}"] = value
        elif name.startswith("hugepages-"):
            usage[f"requests.{name}"] = value
        elif _is_extended(name):
            usage[f"requests.{name}"] = value
            usage[name] = value  # Volcano adds the bare name for extended resources
    for name, value in limits.items():
        if name in _NATIVE:
            usage[f"limits.{name}"] = value
    return usage


def format_usage(usage: Mapping[str, Fraction]) -> dict[str, str]:
    """Quantities as strings: cpu in cores or millicores, the rest in plain integers."""
    out = {}
    for name, value in sorted(usage.items()):
        if name.endswith("cpu"):
            milli = value * 1000
            out[name] = str(int(value)) if value.denominator == 1 else f"{int(milli)}m"
        else:
            out[name] = str(int(value)) if value.denominator == 1 else str(float(value))
    return out


def scale(usage: Mapping[str, Fraction], n: int) -> dict[str, Fraction]:
    return {k: v * n for k, v in usage.items()}


def add(total: dict[str, Fraction], usage: Mapping[str, Fraction]) -> None:
    for k, v in usage.items():
        total[k] = total.get(k, Fraction(0)) + v
