"""``nodeinfo.volcano.sh/v1alpha1`` Numatopology as the API server admits it: the CRD's schema
(config/crd/volcano/bases/nodeinfo.volcano.sh_numatopologies.yaml): ``spec.policies`` and
``spec.resReserved`` maps of strings, ``spec.numares`` a map of ``{allocatable: string, capacity:
integer}``, ``spec.cpuDetail`` a map of ``{numa, socket, core}`` integers of at least 0,
``spec.podAllocations`` a list of ``{uid, name, namespace, containerAllocations}``.

Beyond the schema, ``simulate`` refuses what Volcano would silently misread (scheduler/api/numa_info.py):
a ``cpuDetail`` key that is not a CPU id (Volcano takes it as CPU 0), a NUMA id above 63 (Kubernetes'
topology bit mask), an ``allocatable`` that is not a cpuset list such as ``0-3,8`` (Volcano takes it as
empty), a ``resReserved`` that ``ParseResourceList`` refuses (Volcano then reserves nothing), and a CPU
manager or topology manager policy the kubelet does not have (the resource exporter only reports the
kubelet's own).
"""

from __future__ import annotations

from ..api.numa_info import (
    CPU_MANAGER_POLICY,
    MAX_CPU_ID,
    MAX_NUMA_ID,
    RESERVABLE,
    TOPOLOGY_MANAGER_POLICY,
    parse_cpuset,
)
from ..api.quantity import QuantityError, parse_quantity
from .fields import INT64_MAX, Checker, as_int, as_item, as_list, as_mapping, as_string, describe, string_map

# the kubelet's --cpu-manager-policy and --topology-manager-policy values
POLICY_VALUES = {
    CPU_MANAGER_POLICY: ("none", "static"),
    TOPOLOGY_MANAGER_POLICY: ("none", "best-effort", "restricted", "single-numa-node"),
}


def validate_numatopology(obj: dict, check: Checker) -> None:
    spec = as_mapping(obj.get("spec"), check, "spec")
    obj["spec"] = spec
    if spec.get("policies") is not None:
        policies = string_map(spec["policies"], check, "spec.policies")
        for key, value in policies.items():
            allowed = POLICY_VALUES.get(key)
            if allowed is not None and value not in allowed:
                supported = ", ".join(repr(a) for a in allowed)
                check.fail(f"spec.policies[{key}]", f"Unsupported value: {describe(value)}: the kubelet's "
                                                    f"values are {supported}")
    if spec.get("resReserved") is not None:
        for key, value in string_map(spec["resReserved"], check, "spec.resReserved").items():
            path = f"spec.resReserved[{key}]"
            if key not in RESERVABLE:
                check.fail(path, f"cannot reserve {key!r} resource (only {', '.join(RESERVABLE)})")
            try:
                q = parse_quantity(value)
            except QuantityError as e:
                check.fail(path, str(e))
            if q < 0:
                check.fail(path, f"resource quantity for {key!r} cannot be negative: {value}")
    if spec.get("numares") is not None:
        for res, info in as_mapping(spec["numares"], check, "spec.numares").items():
            path = f"spec.numares[{res}]"
            as_string(res, check, "spec.numares")
            info = as_mapping(info, check, path)
            if info.get("allocatable") is not None:
                text = as_string(info["allocatable"], check, f"{path}.allocatable")
                try:
                    parse_cpuset(text)
                except ValueError as e:
                    check.fail(f"{path}.allocatable", f"not a cpuset list such as 0-3,8: {e}")
            if info.get("capacity") is not None:
                as_int(info["capacity"], check, f"{path}.capacity", -INT64_MAX - 1, INT64_MAX)
    if spec.get("cpuDetail") is not None:
        # kubectl's YAML to JSON turns a key written 0: into "0"
        detail = {str(k) if isinstance(k, int) and not isinstance(k, bool) else k: v
                  for k, v in as_mapping(spec["cpuDetail"], check, "spec.cpuDetail").items()}
        spec["cpuDetail"] = detail
        for key, info in detail.items():
            path = f"spec.cpuDetail[{key}]"
            if not isinstance(key, str) or not key.isdigit() or int(key) > MAX_CPU_ID:
                check.fail(path, f"keys must be CPU ids, integers within 0-{MAX_CPU_ID}, got {describe(key)}")
            info = as_mapping(info, check, path)
            for field in ("numa", "socket", "core"):
                if info.get(field) is not None:
                    high = MAX_NUMA_ID if field == "numa" else INT64_MAX
                    if field == "numa":
                        as_int(info[field], check, f"{path}.{field}", 0, INT64_MAX)
                        if info[field] > high:
                            check.fail(f"{path}.{field}", f"NUMA node ids must be within 0-{MAX_NUMA_ID} "
                                                          f"(a topology bit mask), got {info[field]}")
                    else:
                        as_int(info[field], check, f"{path}.{field}", 0, high)
    if spec.get("podAllocations") is not None:
        for i, alloc in enumerate(as_list(spec["podAllocations"], check, "spec.podAllocations")):
            path = f"spec.podAllocations[{i}]"
            alloc = as_item(alloc, check, path)
            for field in ("uid", "name", "namespace"):
                if alloc.get(field) is not None:
                    as_string(alloc[field], check, f"{path}.{field}")
            containers = alloc.get("containerAllocations")
            if containers is not None:
                for j, c in enumerate(as_list(containers, check, f"{path}.containerAllocations")):
                    cpath = f"{path}.containerAllocations[{j}]"
                    c = as_item(c, check, cpath)
                    if c.get("name") is not None:
                        as_string(c["name"], check, f"{cpath}.name")
                    if c.get("allocations") is not None:
                        string_map(c["allocations"], check, f"{cpath}.allocations")
