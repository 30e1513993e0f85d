"""Ascend 310P dynamic vNPU, MindCluster flavour (``AscendMindClusterVNPUEnable``; spec §4.4, §5.4, §6.9).

The node model (chips, templates, what the node publishes) is in ascend310p_model.py; this file
reads pods' requests and schedules on the model.

Volcano files: api/devices/ascend/mindcluster/ascend310p/vnpu/{device_info,device_manage,utils,type}.go
and plugins/deviceshare/devices/ascend/310p/vnpu/{init_policy,node,score_policy}.go.

The node says what it has with labels (``accelerator``, ``servertype``,
``node.kubernetes.io/npu.chip.name``), ``capacity[huawei.com/npu-core]`` and the
annotation ``huawei.com/<ChipKind>`` (available chips) plus ``…-Unhealthy``.  A pod
labelled ``ring-controller.atlas: ascend-310P`` asks ``huawei.com/npu-core`` cores:
a chip multiple takes whole chips, 1/2/4 cores take one vNPU template
(``vir01``, ``vir02[_1c]``, ``vir04[_3c][_ndvpp|_4c_dvpp]`` by ``vnpu-level`` and
``vnpu-dvpp``).  The scheduler writes ``huawei.com/npu-core`` (``"0,1"`` or
``"0-vir02_1c"``) and ``predicate-time`` (UnixNano) in the Binding.

Lifecycle, as in Volcano:
- the cache-level object keeps only what ``AddResource`` keeps there: the pod →
  ``npu-core`` record (``PodAllocation``) and the per-template pod sets (``ConCache``);
- ``open_session`` (``InitVNPUDevice``) builds the chips from the node's tasks, all of
  them, Releasing ones included (``initVChips`` walks ``NodeInfo.Tasks``);
- filter may set the pod's downgrade flag (``DowngradeCache``, keyed by pod *name*),
  which allocate and the batch scorer read.

Where vcsched differs on purpose (noted at each place): allocate charges the chip the
resource of the template it writes (Volcano charges the un-downgraded request inside
the session and the template from the next session on).

Device-info ConfigMaps (ClusterD ``cluster-info-*`` or ``mindx-dl-deviceinfo-<node>``) and
NodeD status are read as Volcano reads them (mindcluster.py): at session open they are merged
into the node's annotations (``syncAnnotation``, ``updateNPUNodeDeviceInfos``) and the model is
rebuilt from the merged map; NodeD ``PreSeparate`` rejects the node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from vcsched.api.node_info import NodeInfo
from vcsched.api.task_info import TaskInfo
from vcsched.api.types import StatusCode
from vcsched.framework.interface import BatchScorer

from .ascend310p_model import (
    ASCEND310P, ASCEND_REAL, DVPP_NULL, DVPP_OFF, DVPP_ON, HW_PREFIX, JOB_TEMPLATES, KEY, LEVEL_HIGH, LEVEL_LOW,
    NONE, NPURequest, NPU_CORE, NodeModel, PREDICATE_TIME, RELEASE_KEYS, SCORE, TEMPLATES_310P, VChip,
    VNPU_DVPP, VNPU_LEVEL, VResource, atoi, build_model, can_downgrade, downgraded, is_whole_card_value,
    requests_device, session_model, template_for,
)
from .base import (
    AllocateError, DeviceFamily, DeviceUse, FilterResult, NodeDevices, annotation, containers, pod_annotations, quantity,
    requests,
)
from .mindcluster import PRE_SEPARATE, MindClusterInfo

log = structlog.get_logger("vcsched.deviceshare")


class MindClusterFamily(DeviceFamily):
    key = KEY
    session_init = True

    def __init__(self, cluster_info: MindClusterInfo | None = None) -> None:
        # the device-info ConfigMaps as the informer keeps them (fed by simulate or the kube runtime)
        self.cluster_info = cluster_info if cluster_info is not None else MindClusterInfo()
        # init-params; stored as Volcano stores them.  useClusterInfoManager chooses which device-info
        # ConfigMaps are read, self-maintain-available-card how their available list is computed
        self.use_cluster_info_manager = True
        self.self_maintain_available_card = True
        self.preset_virtual_device = False

    def request(self, task: TaskInfo) -> NPURequest | None:
        if not requests_device(task):
            return None
        cores = 0
        for c in containers(task):
            raw = requests(c).get(NPU_CORE)
            if raw is None:
                continue
            n = quantity(raw)
            if n != 0:
                cores = n
                break
        labels = task.spec.labels
        return NPURequest(cores, labels.get(VNPU_DVPP), labels.get(VNPU_LEVEL))

    def build(self, node: Mapping[str, Any], name: str) -> "NPUDevices":
        """Volcano builds the object for every node, NPU or not (a pod asking ``npu-core: 0`` is then
        refused on a CPU node with "not have huawei.com/npu-core"); a node that has ``huawei.com/``
        resources but cannot be modelled is warned about."""
        capacity = (node.get("status") or {}).get("capacity") or {}
        model = build_model(node, name)
        if not model.valid and any(k.startswith(HW_PREFIX) for k in capacity):
            log.warning("Ascend 310P vNPU node is not usable: its vNPU requests fail with 'invalid VNode'",
                        node=name, problem=model.problem)
        return NPUDevices(self, model, {}, {}, {})

    def configure(self, params: Mapping[str, Any]) -> None:
        """``init-params`` (spec §2.2): Volcano reads them as strings; a non-string value makes its
        YAML round trip fail, and every parameter falls back to its default."""
        if any(not isinstance(v, str) for v in params.values()):
            log.warning("init-params: values must be strings; all init-params fall back to their defaults",
                        field="configurations[init-params].arguments")
            params = {}
        self.use_cluster_info_manager = params.get("useClusterInfoManager", "true") == "true"
        self.self_maintain_available_card = params.get("self-maintain-available-card", "true") == "true"
        preset = params.get("presetVirtualDevice") == "true"
        if preset and not self.preset_virtual_device:
            log.warning("init-params presetVirtualDevice is true: dynamic vNPU needs the MindCluster device "
                        "plugin run with -presetVirtualDevice=false", field="configurations[init-params].arguments")
        self.preset_virtual_device = preset


@dataclass(slots=True, frozen=True)
class Verdict:
    """The filter's answer for one request on one node: the failure (None: fits; its reason may
    follow the pod's name) and whether the request was downgraded (the pod's name goes into
    DowngradeCache)."""

    failed: FilterResult | None
    downgrade: bool

    @staticmethod
    def fail(reason: str, names_pod: bool = False, downgrade: bool = False) -> "Verdict":
        return Verdict(FilterResult(StatusCode.Error, reason, names_pod), downgrade)


class NPUDevices(NodeDevices):
    key = KEY
    __slots__ = ("family", "model", "allocation", "con_cache", "holders", "chips", "downgrade", "node", "_not_meet",
                 "_verdicts", "_verdicts_idle")

    def __init__(self, family: MindClusterFamily, model: NodeModel, allocation: dict[str, str],
                 con_cache: dict[str, set[str]], holders: dict[str, str]) -> None:
        self.family = family
        self.model = model
        self.allocation = allocation  # PodAllocation: pod uid → huawei.com/npu-core
        self.con_cache = con_cache  # ConCache: template ("" for whole cards) → pod uids
        self.holders = holders  # pod uid → ns/name
        self.chips: dict[int, VChip] | None = None  # built at session open
        self.downgrade: set[str] = set()  # DowngradeCache: pod names
        self.node: NodeInfo | None = None
        # IsNodeNotMeetRes per request, valid until the chips change (a failing pod asks every node)
        self._not_meet: dict[VResource, bool] = {}
        # the filter's verdict per request, for the node's idle npu-core in _verdicts_idle; valid until
        # the chips or ConCache change: a pod that fits nowhere asks every node, and so do its likes
        self._verdicts: dict[NPURequest, Verdict] = {}
        self._verdicts_idle: float | None = None

    def clone(self) -> "NPUDevices":
        return NPUDevices(self.family, self.model, dict(self.allocation),
                          {k: set(v) for k, v in self.con_cache.items()}, dict(self.holders))

    # -- session open (InitVNPUDevice) ------------------------------------------------------------

    def open_session(self, node: NodeInfo) -> None:
        """Chips from the node's annotation, then every NPU task on the node (``initVChips``)."""
        self.node = node
        self.downgrade = set()
        self._not_meet = {}
        self._verdicts = {}
        self._verdicts_idle = None
        m = self.model
        fam = self.family
        info = fam.cluster_info.device_info(m.name, fam.use_cluster_info_manager)
        status = fam.cluster_info.noded_status(m.name, fam.use_cluster_info_manager)
        # initNPUNodeByNodeInf stops before the merge on a node without huawei.com/ capacity
        if (info is not None or status == PRE_SEPARATE) and any(HW_PREFIX in k for k in node.capacity.scalars):
            self.model = m = session_model(node, m.name, info, status, fam.self_maintain_available_card,
                                           fam.cluster_info)
        chips: dict[int, VChip] = {}
        self.chips = chips
        if not m.valid:
            return
        total = m.chip_total
        for i in m.chip_ids:
            chips[i] = VChip(i, m.chip_kind, total)
        for task in node.tasks.values():
            if any(k.startswith(HW_PREFIX) for k in task.resreq.scalars):  # isNPUTask
                self._init_pod(task, total)

    def _init_pod(self, task: TaskInfo, total: VResource) -> None:
        """``addNPUResource``: what a bound pod holds, from its own annotations."""
        ann = pod_annotations(task)
        value = ann.get(NPU_CORE)
        if value is None:
            return
        m, chips = self.model, self.chips
        unstable = not ann.get(ASCEND_REAL)  # the device plugin has not reported the real device yet
        if is_whole_card_value(value):
            ids = [atoi(x) for x in value.split(",")]
            if not ids or any(i is None for i in ids):
                return
            for i in ids:
                if i in m.unhealthy:
                    continue
                chip = chips.get(i)
                if chip is None:
                    chip = chips[i] = VChip(i, m.chip_kind, total)
                chip.unstable = chip.unstable or unstable
                chip.real_ids.append(str(i))
                chip.pods.append(task.key)
                chip.add(total)
            return
        parts = value.split("-")
        i = atoi(parts[0]) if len(parts) == 2 else None
        if i is None or i in m.unhealthy:
            return
        chip = chips.get(i)
        if chip is None:
            chip = chips[i] = VChip(i, m.chip_kind, total)
        chip.unstable = chip.unstable or unstable
        real = ann.get(ASCEND_REAL)
        if real:
            chip.real_ids.append(real)
        chip.pods.append(task.key)
        chip.segment = True
        res = self._template_resource(parts[1])
        if res is None:
            return
        chip.add(res)
        chip.update_dvpp(res.dvpp)

    def _template_resource(self, template: str) -> VResource | None:
        """``getPodUsedRes``: the template table of ChipKind (310P) or of ChipType."""
        m = self.model
        table = JOB_TEMPLATES.get(m.chip_kind if m.chip_kind == ASCEND310P else m.chip_type)
        return None if table is None else table.get(template)

    # -- the ledger (AddResource / SubResource) ------------------------------------------------------

    def add_pod(self, task: TaskInfo) -> None:
        if task.uid in self.allocation or not requests_device(task):
            return
        value = annotation(task, NPU_CORE)
        if value is not None:
            self._add(task, value)

    def _add(self, task: TaskInfo, value: str) -> None:
        self.allocation[task.uid] = value
        self.holders[task.uid] = task.key
        parts = value.split("-")
        template = parts[1] if len(parts) == 2 else ""
        self.con_cache.setdefault(template, set()).add(task.uid)
        self._not_meet.clear()
        self._verdicts.clear()
        if self.chips is None:
            return  # cache level: no chips (Volcano's cache object has none either)
        vnpu = len(parts) == 2
        for chip, res in self._charges(parts, value):
            chip.add(res)
            if vnpu and not self.model.whole_card(res.aicore):
                chip.segment = True
            chip.update_dvpp(res.dvpp)
            chip.pods.append(task.key)

    def _charges(self, parts: list[str], value: str) -> list[tuple[VChip, VResource]]:
        """The chips an ``npu-core`` value names and what each is charged: ``CHIP-TEMPLATE`` one vNPU
        of the template's resource, ``0,1`` whole chips."""
        m = self.model
        if len(parts) == 2:
            # vcsched charges the template's resource: Volcano charges the pod's un-downgraded
            # request here and the template from the next session on, so its ledger drifts
            res = self._template_resource(parts[1])
            chip = self._chip(parts[0])
            return [(chip, res)] if chip is not None and res is not None else []
        if m.chip_num == 0:
            return []
        per = VResource(m.core_per_chip, m.total_cpu // m.chip_num, DVPP_NULL)
        return [(chip, per) for chip in map(self._chip, value.split(",")) if chip is not None]

    def _chip(self, text: str) -> VChip | None:
        """The chip a decimal id names (Go's Atoi round trip: ``01`` or ``1x`` name none)."""
        return self.chips.get(atoi(text)) if str(atoi(text)) == text else None

    def remove_pod(self, task: TaskInfo) -> None:
        if not requests_device(task):
            return
        value = pod_annotations(task).get(NPU_CORE) or self.allocation.get(task.uid)
        if value is None:
            return
        self.allocation.pop(task.uid, None)
        self.holders.pop(task.uid, None)
        parts = value.split("-")
        template = parts[1] if len(parts) == 2 else ""
        uids = self.con_cache.get(template)
        if uids is not None:
            uids.discard(task.uid)
            if not uids:
                del self.con_cache[template]
        self._not_meet.clear()
        self._verdicts.clear()
        if self.chips is None:
            return
        vnpu = len(parts) == 2
        for chip, res in self._charges(parts, value):
            chip.sub(res)
            if vnpu:
                chip.reset_dvpp(res.dvpp)
            if task.key in chip.pods:
                chip.pods.remove(task.key)

    def holds(self, uid: str) -> bool:
        return uid in self.allocation

    # -- the pod's resource on this node (GetPodResource) -------------------------------------------

    def pod_resource(self, req: NPURequest) -> VResource | str:
        m = self.model
        if m.total_core == 0:
            return NONE  # the node is not initialised
        cores = req.cores
        if m.whole_card(cores):
            return VResource(cores, cores * m.total_cpu // m.total_core, DVPP_NULL)
        dvpp = DVPP_NULL if req.dvpp is None else req.dvpp
        if dvpp not in (DVPP_ON, DVPP_OFF, DVPP_NULL):
            return f"err dvpp value:{dvpp}"
        level = LEVEL_HIGH if req.level == LEVEL_HIGH else LEVEL_LOW
        if cores == 1:
            name = "vir01"
        elif cores == 2:
            name = "vir02" if level == LEVEL_HIGH else "vir02_1c"
        elif cores == 4:
            if dvpp == DVPP_ON:
                name = "vir04_4c_dvpp"
            elif dvpp == DVPP_OFF:
                name = "vir04_3c_ndvpp"
            else:
                name = "vir04" if level == LEVEL_HIGH else "vir04_3c"
        else:
            return NONE  # no template for 3, 5, 6, 7 … cores (spec E-25)
        return TEMPLATES_310P[name]

    # -- checks ----------------------------------------------------------------------------------------

    def _chips(self) -> dict[int, VChip]:
        if self.chips is None:
            raise RuntimeError(f"{KEY} on node {self.model.name}: open_session was not called")
        return self.chips

    def not_meet(self, res: VResource) -> bool:
        """``IsNodeNotMeetRes``: total free across chips, then a chip-level check."""
        cached = self._not_meet.get(res)
        if cached is None:
            cached = self._not_meet[res] = self._compute_not_meet(res)
        return cached

    def _compute_not_meet(self, res: VResource) -> bool:
        chips = self._chips()
        core = cpu = 0
        for c in chips.values():
            core += c.free_core
            cpu += c.free_cpu
        if not (core >= res.aicore and cpu >= res.aicpu):
            return True
        m = self.model
        if m.whole_card(res.aicore):
            if m.core_per_chip == 0:
                return True
            free = sum(1 for c in chips.values() if not c.segment and c.free_core != 0)
            return not (res.aicore // m.core_per_chip <= free)
        return not any(c.meets(res) and not c.unstable for c in chips.values())

    def filter(self, task: TaskInfo, req: NPURequest, policy: str) -> FilterResult | None:
        """``FilterNode``: code 1 (Error) on every failure.

        Volcano's fit error carries "preCheckNodePredicate failure" for the first check and an
        empty reason for the others (the error text only reaches its V(4) log); vcsched shows
        the error text, prefixed by Volcano's reason when it has one.
        """
        node = self.node
        if node is None:
            raise RuntimeError(f"{KEY} on node {self.model.name}: open_session was not called")
        # Volcano's device holds the session node's Idle scalar map itself, so this is live
        idle = node.idle.scalars.get(NPU_CORE)
        verdicts = self._verdicts
        if idle != self._verdicts_idle:
            verdicts.clear()
            self._verdicts_idle = idle
        verdict = verdicts.get(req)
        if verdict is None:
            verdict = verdicts[req] = self._verdict(req, None if idle is None else int(idle / 1000))
        if verdict.downgrade:
            self.downgrade.add(task.name)
        return verdict.failed

    def _verdict(self, req: NPURequest, idle: int | None) -> "Verdict":
        """What the filter decides for a request on this node as it is; kept until the chips change."""
        if self.model.pre_separate:
            return Verdict.fail("preCheckNodePredicate failure: node is PreSeparate, due to nodeD reported node status")
        if idle is None:
            return Verdict.fail(f"preCheckNodePredicate failure: not have {NPU_CORE}")
        if idle < req.cores:
            return Verdict.fail(f"preCheckNodePredicate failure: node not meet task request {NPU_CORE}:{req.cores}")
        res = self.pod_resource(req)
        if isinstance(res, str):
            return Verdict.fail(res)
        if not self.model.valid:
            return Verdict.fail("checkNodeNPUByDyTask invalid VNode")
        downgrade = False
        if self.not_meet(res) and can_downgrade(res):
            downgrade = True
            res = downgraded(res)
        # a request the node cannot meet and that cannot be downgraded passes here (spec E-24)
        if self.con_cache:
            template = template_for(res)
            if template is None:
                return Verdict.fail(f"{res.go()} not get template", downgrade=downgrade)
            if not (len(self.con_cache) == 1 and template in self.con_cache):
                return Verdict.fail(f"is using {self.model.name}, and not rewrite", names_pod=True,
                                    downgrade=downgrade)
        return Verdict(None, downgrade)

    # -- allocate / release ------------------------------------------------------------------------------

    def select_chips(self, res: VResource) -> str:
        """``SelectChipFromNode``: least free chip first; whole cards or one chip for a vNPU."""
        chips = self._chips()
        # Go's sort.Sort with "i before j unless i's free ≥ j's in cores and CPUs" is not stable;
        # vcsched orders by (free cores, free CPUs, chip id), one of the orders Go may produce
        order = sorted(chips.values(), key=lambda c: (c.free_core, c.free_cpu, c.id))
        if not order:
            raise AllocateError("selectChipFromNode sorted chips len 0")
        m = self.model
        if m.whole_card(res.aicore):
            if m.core_per_chip == 0:
                raise AllocateError("AiCorePerChip is zero, division by zero avoided")
            k = res.aicore // m.core_per_chip
            if k == 0:
                raise AllocateError("task require card number 0")
            per = VResource(res.aicore // k, res.aicpu // k, DVPP_NULL)
            names = []
            for c in order:
                if not c.meets(per) or c.segment:
                    continue  # unstable chips are not excluded here, as in Volcano
                names.append(str(c.id))
                if len(names) == k:
                    return ",".join(names)
            raise AllocateError(f"selectChipFromNodeWhole free whole chip <{len(names)}> not enough for req <{k}>")
        for c in order:
            if c.meets(res) and not c.unstable:
                return str(c.id)
        raise AllocateError(f"selectChipFromNodeSegment available chip not found for req <{res.aicore}>")

    def allocate(self, task: TaskInfo, req: NPURequest, policy: str, now: float) -> dict[str, str]:
        res = self.pod_resource(req)
        if isinstance(res, str):
            raise AllocateError(res)
        # Volcano reads only the flag its filter set; vcsched also re-derives it, because tasks of
        # one shape share the filter's verdict and the filter then ran for another pod's name
        if task.name in self.downgrade or (can_downgrade(res) and self.not_meet(res)):
            self.downgrade.add(task.name)
            res = downgraded(res)
        chip = self.select_chips(res)
        if self.model.whole_card(res.aicore):
            value = chip
        else:
            template = template_for(res)
            if template is None:
                return {}  # BuildNPUTopologyAnnotations finds no template: no annotations at all
            value = f"{chip}-{template}"
        self._add(task, value)
        return {PREDICATE_TIME: str(int(now * 1_000_000_000)), NPU_CORE: value}

    def release(self, task: TaskInfo) -> tuple[str, ...]:
        self.remove_pod(task)
        return RELEASE_KEYS

    def describe(self) -> list[DeviceUse]:
        m = self.model
        if not m.valid:
            return []
        chips = self.chips
        if chips is None:  # the cache object: chips from the pods it holds
            probe = NPUDevices(self.family, m, {}, {}, {})
            probe.chips = {i: VChip(i, m.chip_kind, m.chip_total) for i in m.chip_ids}
            for uid, value in self.allocation.items():
                probe._charge(uid, value, self.holders.get(uid, uid))
            chips = probe.chips
        return [DeviceUse(id=c.name, type=m.chip_type, memory_used=0, memory_total=0, cores_used=c.used_core,
                          slots_used=len(c.pods), slots_total=0, pods=sorted(c.pods),
                          health=c.id not in m.unhealthy)
                for c in sorted(chips.values(), key=lambda c: c.id)]

    def _charge(self, uid: str, value: str, key: str) -> None:
        parts = value.split("-")
        m = self.model
        if len(parts) == 2:
            res = self._template_resource(parts[1])
            chip = self.chips.get(atoi(parts[0]) if atoi(parts[0]) is not None else -1)
            if chip is not None and res is not None:
                chip.add(res)
                chip.pods.append(key)
            return
        for item in value.split(","):
            i = atoi(item)
            chip = self.chips.get(i) if i is not None else None
            if chip is not None:
                chip.add(m.chip_total)
                chip.pods.append(key)


class MindClusterScorer(BatchScorer):
    """``ScoreBatchNodes`` (score_policy.go): +8 to the node with the least idle npu-core, or with
    downgrades, +8 per downgraded node in that order and +16 to the first one that is not.

    Registered only when ``ScheduleWeight > 0``; ``SchedulePolicy`` is not read.
    """

    def __init__(self, family: MindClusterFamily, weight: int) -> None:
        self.family = family
        self.weight = weight

    def applies(self, task: TaskInfo) -> bool:
        return requests_device(task)

    def score(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, float]:
        devices = [n.devices.get(KEY) for n in nodes]
        if any(d is None for d in devices):
            log.warning("score array length doesn't match nodes length: no device score", device=KEY,
                        task=task.key)
            return {}

        def idle_key(n: NodeInfo) -> tuple[int, float]:
            v = n.idle.scalars.get(NPU_CORE)
            return (1, 0.0) if v is None else (0, v)

        ranked = sorted(nodes, key=idle_key)  # ascending idle cores; nodes without the key last
        scores = {n.name: 0.0 for n in nodes}
        down = {n.name for n, d in zip(nodes, devices) if task.name in d.downgrade}
        if ranked and not down:
            scores[ranked[0].name] += SCORE
        else:
            for n in ranked:
                if n.name not in down:
                    scores[n.name] += 2 * SCORE
                    break
                scores[n.name] += SCORE
        return {k: v * self.weight for k, v in scores.items()}
