"""The Ascend 310P node as MindCluster's vNPU code models it: chips, their free cores and templates
(api/devices/ascend/mindcluster/ascend310p/vnpu/{device_info,type,utils}.go), built from the node's
labels and annotations; ascend310p.py schedules on it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import structlog

from vcsched.api.node_info import NodeInfo
from vcsched.api.task_info import TaskInfo

from .base import containers, limits, quantity
from .mindcluster import PRE_SEPARATE, DeviceInfo, MindClusterInfo, merge_annotations

log = structlog.get_logger("vcsched.deviceshare")

KEY = "ascend310p-vNPU"
HW_PREFIX = "huawei.com/"
NPU_CORE = "huawei.com/npu-core"
ASCEND_REAL = "huawei.com/AscendReal"
PREDICATE_TIME = "predicate-time"
JOB_KIND = "ring-controller.atlas"
JOB_KIND_310P = "ascend-310P"
VNPU_LEVEL = "vnpu-level"
VNPU_DVPP = "vnpu-dvpp"
ACCELERATOR = "accelerator"
SERVER_TYPE = "servertype"
CHIP_TYPE = "node.kubernetes.io/npu.chip.name"
UNHEALTHY_SUFFIX = "-Unhealthy"
ASCEND310P = "Ascend310P"
LEVEL_LOW, LEVEL_HIGH = "low", "high"
DVPP_ON, DVPP_OFF, DVPP_NULL = "yes", "no", "null"
RELEASE_KEYS = (PREDICATE_TIME, NPU_CORE)
SCORE = 8  # util.NPUIndex8


@dataclass(slots=True, frozen=True)
class VResource:
    aicore: int
    aicpu: int
    dvpp: str

    def go(self) -> str:
        """Go's ``%#v`` of a ``vnpu.VResource``, as Volcano's error text prints it."""
        return f'vnpu.VResource{{Aicore:{self.aicore}, Aicpu:{self.aicpu}, DVPP:"{self.dvpp}"}}'


NONE = VResource(0, 0, "")

# NewNPUDevices · VT: the templates a pod's request resolves to (310P only)
TEMPLATES_310P: dict[str, VResource] = {
    "vir01": VResource(1, 1, DVPP_NULL),
    "vir02": VResource(2, 2, DVPP_NULL),
    "vir02_1c": VResource(2, 1, DVPP_NULL),
    "vir04": VResource(4, 4, DVPP_NULL),
    "vir04_3c": VResource(4, 3, DVPP_NULL),
    "vir04_3c_ndvpp": VResource(4, 3, DVPP_OFF),
    "vir04_4c_dvpp": VResource(4, 4, DVPP_ON),
}
_B_TEMPLATES = {"vir06_1c_16g": VResource(6, 1, DVPP_NULL), "vir03_1c_8g": VResource(3, 1, DVPP_NULL),
                "vir12_3c_32g": VResource(12, 3, DVPP_NULL)}
# initVolcanoFrameFromSsn · VJobTemplate: what a bound pod's template costs, per ChipKind (310P) or ChipType
JOB_TEMPLATES: dict[str, dict[str, VResource]] = {
    ASCEND310P: TEMPLATES_310P,
    "Ascend910": {"vir02": VResource(2, 1, DVPP_NULL), "vir04": VResource(4, 1, DVPP_NULL),
                  "vir08": VResource(8, 3, DVPP_NULL), "vir16": VResource(16, 7, DVPP_NULL)},
    "910B1": _B_TEMPLATES, "910B2C": _B_TEMPLATES, "910B2": _B_TEMPLATES,
    "910B3": {"vir05_1c_16g": VResource(5, 1, DVPP_NULL), "vir10_3c_32g": VResource(10, 3, DVPP_NULL)},
    "910B4": {"vir05_1c_8g": VResource(5, 1, DVPP_NULL), "vir10_3c_16g_nm": VResource(10, 3, DVPP_OFF),
              "vir10_4c_16g_m": VResource(10, 4, DVPP_ON), "vir10_3c_16g": VResource(10, 3, DVPP_NULL)},
}
# initTemplate: (chip kind or type, AI cores per chip, AI CPUs per chip); the last match wins
CHIP_TABLE = (
    (ASCEND310P, 8, 7), ("910B1", 25, 6), ("910B2C", 24, 6), ("910B3", 20, 6), ("910B4", 20, 6),
    ("910B2", 24, 6), (ASCEND310P, 10, 7),
)

_INT = re.compile(r"[+-]?[0-9]+\Z")


def atoi(text: str) -> int | None:
    """Go's ``strconv.Atoi``: an optional sign and decimal digits, nothing else."""
    return int(text) if _INT.match(text) else None


_TEMPLATE_BY_RESOURCE = {r: name for name, r in TEMPLATES_310P.items()}  # the resources are distinct


def template_for(res: VResource) -> str | None:
    """``GetTemplateByResReq``: the 310P template whose resource equals ``res`` exactly."""
    return _TEMPLATE_BY_RESOURCE.get(res)


def can_downgrade(res: VResource) -> bool:
    """``taskAICPUCanBeDowngrade``: {2,2,*} and {4,4,not yes} may give up one/two AI CPUs."""
    return (res.aicore == 2 and res.aicpu == 2) or (res.aicore == 4 and res.aicpu == 4 and res.dvpp != DVPP_ON)


def downgraded(res: VResource) -> VResource:
    """``downgradeTaskAICPU``."""
    if res.aicore == 2:
        return VResource(2, 1, res.dvpp)
    if res.aicore == 4:
        return VResource(4, 3, res.dvpp)
    return res


def is_whole_card_value(value: str) -> bool:
    """``isPodWholeCardFromAscendCore`` (session open): some comma item has no ``-``."""
    return any("-" not in item for item in value.split(","))


class NPURequest(NamedTuple):
    """A pod's 310P request; a tuple, so that the filter's per-request verdict cache hashes it cheaply."""

    cores: int  # the first non-zero requests[npu-core] over the containers, 0 if none
    dvpp: str | None  # label vnpu-dvpp, as written
    level: str | None  # label vnpu-level, as written


def requests_device(task: TaskInfo) -> bool:
    """``checkVNPUResourcesInPod``: label ``ring-controller.atlas: ascend-310P`` and npu-core in some limits."""
    if task.spec.labels.get(JOB_KIND) != JOB_KIND_310P:
        return False
    return any(NPU_CORE in limits(c) for c in containers(task))


class VChip:
    """One physical chip in the session (``VChip``)."""

    __slots__ = ("id", "name", "kind", "unstable", "segment", "real_ids", "used_core", "used_cpu", "used_dvpp",
                 "free_core", "free_cpu", "free_dvpp", "pods")

    def __init__(self, chip_id: int, kind: str, total: VResource) -> None:
        self.id = chip_id
        self.name = f"{kind}-{chip_id}"
        self.kind = kind
        self.unstable = False
        self.segment = False  # SegmentFlag: holds vNPUs
        self.real_ids: list[str] = []  # chip.ID: AscendReal values (vNPU) or chip ids (whole card)
        self.used_core, self.used_cpu, self.used_dvpp = 0, 0, DVPP_OFF
        self.free_core, self.free_cpu, self.free_dvpp = total.aicore, total.aicpu, DVPP_ON
        self.pods: list[str] = []

    def add(self, r: VResource) -> None:
        self.used_core += r.aicore
        self.used_cpu += r.aicpu
        self.free_core -= r.aicore
        self.free_cpu -= r.aicpu

    def sub(self, r: VResource) -> None:
        self.used_core -= r.aicore
        self.used_cpu -= r.aicpu
        self.free_core += r.aicore
        self.free_cpu += r.aicpu

    def update_dvpp(self, dvpp: str) -> None:
        """``UpdateDVPP``."""
        if dvpp == DVPP_ON:
            self.used_dvpp, self.free_dvpp = DVPP_ON, DVPP_OFF
        if dvpp == DVPP_OFF and self.used_dvpp == DVPP_OFF:
            self.used_dvpp, self.free_dvpp = DVPP_OFF, DVPP_ON
        if dvpp == DVPP_NULL and self.used_dvpp != DVPP_ON:
            self.used_dvpp, self.free_dvpp = DVPP_NULL, DVPP_NULL

    def reset_dvpp(self, dvpp: str) -> None:
        """``ResetDVPP``: only a ``yes`` pod gives DVPP back."""
        if dvpp == DVPP_ON:
            self.used_dvpp, self.free_dvpp = DVPP_OFF, DVPP_ON

    def v_groups(self) -> int:
        """``getVGroups``: distinct integers after the last ``_`` of the AscendReal names."""
        seen = set()
        for real in self.real_ids:
            parts = real.split("_")
            if len(parts) < 2:
                continue
            g = atoi(parts[-1])
            if g is not None:
                seen.add(g)
        return len(seen)

    def meets(self, r: VResource) -> bool:
        """``isChipMeetResReq``: free cores and CPUs, the vGroup rule, the DVPP rule."""
        if not (self.free_core >= r.aicore and self.free_cpu >= r.aicpu):
            return False
        if self.kind == ASCEND310P and self.segment:
            groups = self.v_groups()
            if (groups == 3 and r.aicore >= 4) or (groups == 4 and r.aicore >= 2):
                return False
        if r.dvpp == DVPP_ON and self.free_dvpp != DVPP_ON:
            return False
        if r.dvpp == DVPP_NULL and self.free_dvpp == DVPP_OFF:
            return False
        return True


@dataclass(slots=True, frozen=True)
class NodeModel:
    """What the node's labels, capacity and annotations say, parsed once per node update.

    Fields are filled in Volcano's order (``setNodeVNPUInfo``); the first missing input
    stops there and leaves the node invalid, with the later fields at their zero value.
    """

    name: str
    valid: bool = False
    problem: str = ""
    chip_kind: str = ""
    chip_type: str = ""
    server_type_cores: int = 0  # getVChipCoreNum: the second servertype field, 0 when it does not parse
    core_per_chip: int = 0  # AiCorePerChip
    chip_num: int = 0  # TotalChipNum
    total_core: int = 0  # TotalRes.Aicore
    total_cpu: int = 0  # TotalRes.Aicpu
    chip_ids: tuple[int, ...] = ()  # huawei.com/<ChipKind>
    unhealthy: frozenset[int] = frozenset()
    pre_separate: bool = False  # NodeD status PreSeparate (device-info ConfigMaps, set at session open)

    @property
    def chip_total(self) -> VResource:
        """``getVChipTotalRes``."""
        return VResource(self.total_core // self.chip_num, self.total_cpu // self.chip_num, DVPP_OFF)

    def whole_card(self, cores: int) -> bool:
        """``IsResourceWholeCard``: a multiple of the servertype's cores per chip (0 included)."""
        return self.server_type_cores != 0 and cores % self.server_type_cores == 0


def _chip_ids(model_name: str, kind: str, raw: str, key: str, warn: bool) -> list[int]:
    """``getCardIDsFromNodeAndDeviceInfo``: ``<kind>-<id>`` items; items that do not parse are skipped."""
    out = []
    for item in raw.split(","):
        if item == "":
            continue
        n = atoi(item[len(kind) + 1:] if item.startswith(kind + "-") else item)
        if n is None:
            if warn:
                log.warning("ignoring a malformed chip name", node=model_name, annotation=key, value=item)
            continue
        out.append(n)
    return out


def build_model(node: Mapping[str, Any], name: str, annotations: Mapping[str, str] | None = None,
                warn: bool = True) -> NodeModel:
    """``annotations``: the merged map of a session (node annotations + device info), else the node's."""
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    ann = (meta.get("annotations") or {}) if annotations is None else annotations
    capacity = (node.get("status") or {}).get("capacity") or {}
    cores_milli = quantity(capacity.get(NPU_CORE, 0)) * 1000
    if cores_milli <= 0:
        return NodeModel(name, problem=f"capacity {NPU_CORE} is not > 0")
    accel = labels.get(ACCELERATOR)
    if accel is None:
        return NodeModel(name, problem=f"label {ACCELERATOR} absent")
    parts = accel.split("-")
    if len(parts) < 2:
        return NodeModel(name, problem=f"label {ACCELERATOR}={accel!r}: format incorrect")
    kind = parts[1]
    st = labels.get(SERVER_TYPE)
    if st is None:
        return NodeModel(name, problem=f"label {SERVER_TYPE} absent", chip_kind=kind)
    st_parts = st.split("-")
    st_cores = (atoi(st_parts[1]) or 0) if len(st_parts) >= 2 else 0
    chip_type = labels.get(CHIP_TYPE)
    base = dict(name=name, chip_kind=kind, server_type_cores=st_cores)
    if chip_type is None:
        return NodeModel(problem=f"label {CHIP_TYPE} absent", **base)
    base["chip_type"] = chip_type
    key = HW_PREFIX + kind
    if key not in ann:
        return NodeModel(problem=f"annotation {key} absent", **base)
    total_core = cores_milli // 1000
    base["total_core"] = total_core
    if st_cores == 0:
        return NodeModel(problem=f"label {SERVER_TYPE}={st!r}: no cores per chip", **base)
    if total_core % st_cores != 0 or total_core // st_cores == 0:
        return NodeModel(problem=f"capacity {NPU_CORE}={total_core} is not a non-zero multiple of {st_cores}",
                         core_per_chip=st_cores, **base)
    chip_num = total_core // st_cores
    cpu = -1
    for k, aicore, aicpu in CHIP_TABLE:
        if (k == kind or k == chip_type) and aicore * chip_num == total_core:
            cpu = aicpu
    if cpu < 0:
        return NodeModel(problem=f"no chip template for {kind}/{chip_type} with {st_cores} cores",
                         core_per_chip=st_cores, chip_num=chip_num, **base)
    ids = _chip_ids(name, kind, ann[key], key, warn)
    unhealthy = _chip_ids(name, kind, ann.get(key + UNHEALTHY_SUFFIX, ""), key + UNHEALTHY_SUFFIX, warn)
    return NodeModel(valid=True, core_per_chip=st_cores, chip_num=chip_num, total_cpu=cpu * chip_num,
                     chip_ids=tuple(ids), unhealthy=frozenset(unhealthy), **base)


def session_model(node: NodeInfo, name: str, info: DeviceInfo | None, noded_status: str,
                  self_maintain: bool, cluster_info: MindClusterInfo) -> NodeModel:
    """``initNodeFromSsn``: the model from the node's annotations merged with its device info and
    NodeD status (mindcluster.merge_annotations), rebuilt in every session as Volcano does."""
    raw = node.node or {}
    ann = (raw.get("metadata") or {}).get("annotations") or {}
    pods = [t.pod for t in node.tasks.values() if t.pod]
    notes: list[str] = []
    merged = merge_annotations(ann, node.idle.scalars, pods, info, noded_status, self_maintain, notes)
    for note in notes:
        cluster_info.warn_once(name, note)
    model = build_model(raw, name, merged, warn=False)
    return replace(model, pre_separate=True) if noded_status == PRE_SEPARATE else model
