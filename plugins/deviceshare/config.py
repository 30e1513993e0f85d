"""deviceshare configuration: the plugin arguments and the device ConfigMap (spec/devices.md §2).

``DeviceShareArgs`` reads the ``deviceshare.*`` arguments with Volcano's defaults and
refuses the combinations Volcano exits on (``enablePredicate``).  ``DeviceConfig`` is
the ``device-config.yaml`` of the device ConfigMap (``nvidia:`` section), with
Volcano's fallback to its built-in default when the ConfigMap is missing or broken.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog
import yaml

from vcsched.api.quantity import QuantityError, milli_value, parse_quantity, value
from vcsched.framework.arguments import ArgumentError, Arguments

from .fragmentation import FRAGMENTATION_CLASSES_DEFAULT, PCT_UNSET, TaskShape

log = structlog.get_logger("vcsched.deviceshare")

GPU_SHARING_ENABLE = "deviceshare.GPUSharingEnable"
GPU_NUMBER_ENABLE = "deviceshare.GPUNumberEnable"
NODE_LOCK_ENABLE = "deviceshare.NodeLockEnable"
VGPU_ENABLE = "deviceshare.VGPUEnable"
ASCEND_MINDCLUSTER_VNPU_ENABLE = "deviceshare.AscendMindClusterVNPUEnable"
ASCEND_HAMI_VNPU_ENABLE = "deviceshare.AscendHAMiVNPUEnable"
SCHEDULE_POLICY = "deviceshare.SchedulePolicy"
SCHEDULE_WEIGHT = "deviceshare.ScheduleWeight"
KNOWN_GEOMETRIES_CM_NAME = "deviceshare.KnownGeometriesCMName"
KNOWN_GEOMETRIES_CM_NAMESPACE = "deviceshare.KnownGeometriesCMNamespace"
GPU_EXCLUSIVE_RULES = "deviceshare.GPUExclusiveRules"

DEVICE_CONFIG_KEY = "device-config.yaml"

FRAGMENTATION_WORKLOAD = "deviceshare.FragmentationWorkload"
FRAGMENTATION_CLASSES = "deviceshare.FragmentationClasses"
FRAGMENTATION_HALF_LIFE = "deviceshare.FragmentationHalfLife"
FRAGMENTATION_SCARCITY_WEIGHT = "deviceshare.FragmentationScarcityWeight"
# the fragmentation policy's session look-ahead and hold-back (lookahead.py)
FRAGMENTATION_LOOKAHEAD = "deviceshare.FragmentationLookahead"
FRAGMENTATION_HOLD_BACK = "deviceshare.FragmentationHoldBack"
# vcsched's own (issue 24, topology.py): the device topology policy of pods that do not say; "" off
TOPOLOGY_POLICY = "deviceshare.TopologyPolicy"
TOPOLOGY_POLICIES = ("", "preferred", "required", "pairscore")

BINPACK = "binpack"
SPREAD = "spread"
# vcsched's own: fragmentation-aware placement in the spirit of FGD (fragmentation.py); off by default
FRAGMENTATION = "fragmentation"


@dataclass(slots=True, frozen=True)
class DeviceShareArgs:
    gpu_sharing: bool = False
    gpu_number: bool = False
    node_lock: bool = False
    vgpu: bool = False
    ascend_mindcluster_vnpu: bool = False
    ascend_hami_vnpu: bool = False
    # "binpack" or "spread" (Volcano's), "fragmentation" (vcsched's); anything else means no policy
    # (score 0, legacy device order)
    schedule_policy: str = ""
    schedule_weight: int = 0
    cm_name: str = "volcano-vgpu-device-config"
    cm_namespace: str = "kube-system"
    # each rule: label → value; a pod matches when its labels hold all pairs (gpuexclusive.go)
    exclusive_rules: tuple[tuple[tuple[str, str], ...], ...] = ()
    # the fragmentation policy: a given workload distribution (empty: learned from the pods seen),
    # how many shape classes a session uses, and the learned histogram's half-life in pods
    frag_workload: tuple[tuple[TaskShape, float], ...] = ()
    frag_classes: int = FRAGMENTATION_CLASSES_DEFAULT
    frag_half_life: int = 2000
    # the cost of using a GPU type that tasks bound to few types need (fragmentation.py · scarcity); 0: off
    frag_scarcity_weight: float = 2.0
    # plan the session's pending tasks largest first and steer each to its planned node (lookahead.py);
    # keep pending a task the plan found no room for, when its own queue's larger tasks took the room
    frag_lookahead: bool = True
    frag_hold_back: bool = True
    # the device topology policy for pods without a topology annotation: "", "preferred", "required"
    topology_policy: str = ""

    @classmethod
    def parse(cls, a: Arguments) -> "DeviceShareArgs":
        args = cls(
            gpu_sharing=a.get_bool(GPU_SHARING_ENABLE, False),
            gpu_number=a.get_bool(GPU_NUMBER_ENABLE, False),
            node_lock=a.get_bool(NODE_LOCK_ENABLE, False),
            vgpu=a.get_bool(VGPU_ENABLE, False),
            ascend_mindcluster_vnpu=a.get_bool(ASCEND_MINDCLUSTER_VNPU_ENABLE, False),
            ascend_hami_vnpu=a.get_bool(ASCEND_HAMI_VNPU_ENABLE, False),
            schedule_policy=a.get_str(SCHEDULE_POLICY, ""),
            schedule_weight=a.get_int(SCHEDULE_WEIGHT, 0),
            cm_name=a.get_str(KNOWN_GEOMETRIES_CM_NAME, "volcano-vgpu-device-config"),
            cm_namespace=a.get_str(KNOWN_GEOMETRIES_CM_NAMESPACE, "kube-system"),
            exclusive_rules=_rules(a),
            frag_workload=_workload(a),
            frag_classes=a.get_int(FRAGMENTATION_CLASSES, FRAGMENTATION_CLASSES_DEFAULT),
            frag_half_life=a.get_int(FRAGMENTATION_HALF_LIFE, 2000),
            frag_scarcity_weight=a.get_float(FRAGMENTATION_SCARCITY_WEIGHT, 2.0),
            frag_lookahead=a.get_bool(FRAGMENTATION_LOOKAHEAD, True),
            frag_hold_back=a.get_bool(FRAGMENTATION_HOLD_BACK, True),
            topology_policy=a.get_str(TOPOLOGY_POLICY, ""),
        )
        if args.topology_policy not in TOPOLOGY_POLICIES:
            raise ArgumentError(f"{a.where}.{TOPOLOGY_POLICY}: expected preferred, required or pairscore, "
                                f"got {args.topology_policy!r}")
        if args.frag_classes < 1:
            raise ArgumentError(f"{a.where}.{FRAGMENTATION_CLASSES}: expected >= 1, got {args.frag_classes}")
        if args.frag_half_life < 1:
            raise ArgumentError(f"{a.where}.{FRAGMENTATION_HALF_LIFE}: expected >= 1, got {args.frag_half_life}")
        if args.frag_scarcity_weight < 0:
            raise ArgumentError(f"{a.where}.{FRAGMENTATION_SCARCITY_WEIGHT}: expected >= 0, "
                                f"got {args.frag_scarcity_weight}")
        # Volcano exits the process on these (klog.Fatal); vcsched refuses the configuration
        if args.gpu_sharing and args.gpu_number:
            raise ArgumentError(f"{a.where}.{GPU_NUMBER_ENABLE}: can not define true in both gpu sharing and gpu number")
        if (args.gpu_sharing or args.gpu_number) and args.vgpu:
            raise ArgumentError(f"{a.where}.{VGPU_ENABLE}: gpu-share and vgpu can't be used together")
        return args

    @property
    def any_enabled(self) -> bool:
        return (self.gpu_sharing or self.gpu_number or self.vgpu
                or self.ascend_hami_vnpu or self.ascend_mindcluster_vnpu)


def _rules(a: Arguments) -> tuple[tuple[tuple[str, str], ...], ...]:
    """``GPUExclusiveRules``: a list of label maps; non-string values dropped, empty maps skipped."""
    raw = a.values.get(GPU_EXCLUSIVE_RULES)
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ArgumentError(f"{a.where}.{GPU_EXCLUSIVE_RULES}: expected a list of label maps, got {type(raw).__name__}")
    rules = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise ArgumentError(f"{a.where}.{GPU_EXCLUSIVE_RULES}[{i}]: expected a map of label to value")
        pairs = tuple(sorted((str(k), v) for k, v in item.items() if isinstance(v, str)))
        if pairs:
            rules.append(pairs)
    return tuple(rules)


WORKLOAD_FIELDS = ("cpu", "memory", "vgpuNumber", "vgpuCores", "vgpuMemoryPercentage", "vgpuMemory", "gpuType",
                   "weight")


def _workload(a: Arguments) -> tuple[tuple[TaskShape, float], ...]:
    """``FragmentationWorkload``: a list of task classes, each a map of WORKLOAD_FIELDS.

    ``cpu``/``memory`` are quantities; ``vgpuNumber`` vGPUs of ``vgpuCores`` % compute and
    ``vgpuMemoryPercentage`` % (or ``vgpuMemory`` MiB) memory each; ``gpuType`` as
    nvidia.com/use-gputype; ``weight`` > 0 its popularity.
    """
    raw = a.values.get(FRAGMENTATION_WORKLOAD)
    if raw is None:
        return ()
    where = f"{a.where}.{FRAGMENTATION_WORKLOAD}"
    if not isinstance(raw, list):
        raise ArgumentError(f"{where}: expected a list of task classes, got {type(raw).__name__}")
    out = []
    for i, item in enumerate(raw):
        at = f"{where}[{i}]"
        if not isinstance(item, Mapping):
            raise ArgumentError(f"{at}: expected a map")
        unknown = sorted(set(item) - set(WORKLOAD_FIELDS))
        if unknown:
            raise ArgumentError(f"{at}.{unknown[0]}: unknown field (known: {', '.join(WORKLOAD_FIELDS)})")

        def number(key: str, lo: float, hi: float | None = None, default: float = 0) -> float:
            v = item.get(key, default)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < lo or (hi is not None and v > hi):
                bound = f"a number in [{lo}, {hi}]" if hi is not None else f"a number >= {lo}"
                raise ArgumentError(f"{at}.{key}: expected {bound}, got {v!r}")
            return v

        def qty(key: str) -> float:
            v = item.get(key, 0)
            try:
                q = parse_quantity(v)
            except (QuantityError, ValueError, TypeError):
                raise ArgumentError(f"{at}.{key}: expected a quantity, got {v!r}") from None
            return milli_value(q) if key == "cpu" else value(q)

        nums = int(number("vgpuNumber", 0))
        pct = int(number("vgpuMemoryPercentage", 0, 100, PCT_UNSET)) if "vgpuMemoryPercentage" in item else PCT_UNSET
        memreq = int(number("vgpuMemory", 0))
        if nums and pct == PCT_UNSET and memreq == 0:
            pct = 100
        types = item.get("gpuType")
        if types is not None and not isinstance(types, str):
            raise ArgumentError(f"{at}.gpuType: expected a string, got {type(types).__name__}")
        if "weight" not in item:
            raise ArgumentError(f"{at}.weight: required")
        weight = number("weight", 0)
        if weight <= 0:
            raise ArgumentError(f"{at}.weight: expected > 0, got {weight!r}")
        shape = TaskShape(qty("cpu"), qty("memory"), nums, int(number("vgpuCores", 0, 100)) if nums else 0,
                          pct if nums else 0, memreq if nums else 0,
                          tuple(t.upper() for t in types.split(",")) if types is not None and nums else None, None)
        out.append((shape, float(weight)))
    return tuple(out)


@dataclass(slots=True, frozen=True)
class MigInstance:
    name: str
    memory: int
    count: int


@dataclass(slots=True, frozen=True)
class MigGeometry:
    """One ``allowedGeometries`` group: its instances in config order."""

    group: str
    instances: tuple[MigInstance, ...]


@dataclass(slots=True, frozen=True)
class MigModel:
    models: tuple[str, ...]
    geometries: tuple[MigGeometry, ...]


@dataclass(slots=True)
class NvidiaConfig:
    """The ``nvidia:`` section; Volcano's built-in default when no ConfigMap is found."""

    count_name: str = "volcano.sh/vgpu-number"
    memory_name: str = "volcano.sh/vgpu-memory"
    core_name: str = "volcano.sh/vgpu-cores"
    # empty: percentage requests are ignored (the built-in default)
    memory_percentage_name: str = ""
    gpu_memory_factor: int = 1
    known_mig_geometries: tuple[MigModel, ...] = ()

    def geometry_for(self, gpu_type: str) -> tuple[MigGeometry, ...] | None:
        """``extractGeometryFromType``: the first entry with a model that is a substring of the type."""
        for m in self.known_mig_geometries:
            if any(model in gpu_type for model in m.models):
                return m.geometries
        return None


@dataclass(slots=True, frozen=True)
class VNPUTemplate:
    name: str
    memory: int  # MiB


@dataclass(slots=True, frozen=True)
class VNPUConfig:
    """One ``vnpus.configs`` entry (config/vnpu.go): a HAMi Ascend chip type, its device kind ``common_word``."""

    common_word: str
    chip_name: str
    resource_name: str  # the count; the core resource is always "<resource_name>-core"
    resource_memory_name: str
    memory_allocatable: int  # MiB given to a whole-card request
    memory_capacity: int  # the largest memory request still honoured
    ai_core: int = 0
    ai_cpu: int = 0
    templates: tuple[VNPUTemplate, ...] = ()  # sorted by memory, ascending (InitDevices)


@dataclass(slots=True, frozen=True)
class VNPUsConfig:
    """The ``vnpus:`` section: ``{hamiVnpuCore, configs}`` or (legacy) a bare list of configs."""

    hami_vnpu_core: bool = False
    configs: tuple[VNPUConfig, ...] = ()


# the built-in default (GetDefaultDevicesConfig): Ascend310P only
DEFAULT_VNPUS = VNPUsConfig(False, (VNPUConfig(
    "Ascend310P", "310P3", "huawei.com/Ascend310P", "huawei.com/Ascend310P-memory", 21527, 24576, 8, 7,
    (VNPUTemplate("vir01", 3072), VNPUTemplate("vir02", 6144), VNPUTemplate("vir04", 12288))),))


@dataclass(slots=True)
class DeviceConfig:
    nvidia: NvidiaConfig = field(default_factory=NvidiaConfig)
    vnpus: VNPUsConfig = DEFAULT_VNPUS
    source: str = "built-in default"


def load_device_config(config_maps: Mapping[str, Mapping[str, Any]], args: DeviceShareArgs) -> DeviceConfig:
    """``loadConfigFromCM``: the device ConfigMap ``<namespace>/<name>``, key ``device-config.yaml``.

    Missing ConfigMap, missing key or a YAML error: the built-in default, as Volcano
    falls back (it logs at V(3); vcsched warns for the last two, which are mistakes).
    A ConfigMap without ``nvidia:`` gives empty resource names: vGPU requests then go
    unnoticed, as in Volcano (spec §2.3).
    """
    key = f"{args.cm_namespace}/{args.cm_name}"
    cm = config_maps.get(key)
    if cm is None:
        return DeviceConfig()
    data = cm.get("data") or {}
    text = data.get(DEVICE_CONFIG_KEY)
    if text is None:
        log.warning("device ConfigMap has no device-config.yaml; using the built-in default", configmap=key)
        return DeviceConfig()
    try:
        doc = yaml.safe_load(text) or {}
        if not isinstance(doc, Mapping):
            raise ValueError("not a mapping")
        return DeviceConfig(nvidia=_nvidia(doc.get("nvidia")), vnpus=_vnpus(doc.get("vnpus")), source=f"ConfigMap {key}")
    except (yaml.YAMLError, ValueError, TypeError) as e:
        log.warning("device ConfigMap unreadable; using the built-in default", configmap=key,
                    error=str(e).splitlines()[0] if str(e) else type(e).__name__)
        return DeviceConfig()


def _nvidia(raw: Any) -> NvidiaConfig:
    if raw is None:
        return NvidiaConfig(count_name="", memory_name="", core_name="", memory_percentage_name="")
    if not isinstance(raw, Mapping):
        raise ValueError("nvidia: not a mapping")
    models = []
    for entry in raw.get("knownMigGeometries") or []:
        groups = []
        for g in entry.get("allowedGeometries") or []:
            instances = tuple(
                MigInstance(str(i.get("name") or ""), int(i.get("memory") or 0), int(i.get("count") or 0))
                for i in g.get("geometries") or []
            )
            groups.append(MigGeometry(str(g.get("group") or ""), instances))
        models.append(MigModel(tuple(str(m) for m in entry.get("models") or []), tuple(groups)))
    factor = int(raw.get("gpuMemoryFactor") or 0)
    return NvidiaConfig(
        count_name=str(raw.get("resourceCountName") or ""),
        memory_name=str(raw.get("resourceMemoryName") or ""),
        core_name=str(raw.get("resourceCoreName") or ""),
        memory_percentage_name=str(raw.get("resourceMemoryPercentageName") or ""),
        gpu_memory_factor=factor if factor > 0 else 1,
        known_mig_geometries=tuple(models),
    )


def _int(raw: Any, where: str) -> int:
    """A YAML integer (Go's yaml into int64/int32): anything else is an error, the whole config falls back."""
    if raw is None:
        return 0
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise ValueError(f"{where}: expected an integer, got {raw!r}")
    return raw


def _vnpus(raw: Any) -> VNPUsConfig:
    """``VNPUsConfig.UnmarshalYAML``: absent means no HAMi Ascend kind at all (spec §2.3)."""
    if raw is None:
        return VNPUsConfig()
    if isinstance(raw, Mapping):
        core = raw.get("hamiVnpuCore", False)
        if not isinstance(core, bool):
            raise ValueError(f"vnpus.hamiVnpuCore: expected a bool, got {core!r}")
        entries, where = raw.get("configs") or [], "vnpus.configs"
    elif isinstance(raw, list):
        core, entries, where = False, raw, "vnpus"  # the legacy bare list
    else:
        raise ValueError("vnpus: neither a mapping nor a list")
    if not isinstance(entries, list):
        raise ValueError(f"{where}: not a list")
    configs = []
    for i, e in enumerate(entries):
        w = f"{where}[{i}]"
        if not isinstance(e, Mapping):
            raise ValueError(f"{w}: not a mapping")
        templates = []
        for j, t in enumerate(e.get("templates") or []):
            if not isinstance(t, Mapping):
                raise ValueError(f"{w}.templates[{j}]: not a mapping")
            templates.append(VNPUTemplate(str(t.get("name") or ""), _int(t.get("memory"), f"{w}.templates[{j}].memory")))
        templates.sort(key=lambda t: t.memory)
        configs.append(VNPUConfig(
            common_word=str(e.get("commonWord") or ""),
            chip_name=str(e.get("chipName") or ""),
            resource_name=str(e.get("resourceName") or ""),
            resource_memory_name=str(e.get("resourceMemoryName") or ""),
            memory_allocatable=_int(e.get("memoryAllocatable"), f"{w}.memoryAllocatable"),
            memory_capacity=_int(e.get("memoryCapacity"), f"{w}.memoryCapacity"),
            ai_core=_int(e.get("aiCore"), f"{w}.aiCore"),
            ai_cpu=_int(e.get("aiCPU"), f"{w}.aiCPU"),
            templates=tuple(templates),
        ))
    return VNPUsConfig(core, tuple(configs))
