"""The deviceshare plugin (plugins/deviceshare/deviceshare.go) and the per-node device builder.

Device kinds are visited in Volcano's registry order (spec §1.1): GpuShare, then
hamivgpu, then one HAMi Ascend kind per ``vnpus`` commonWord in config order.  The
predicate runs each requested kind's filter and fails the node on the first failure;
the node order adds the kinds' scores, rounds half up and multiplies by
``ScheduleWeight`` (only when it is > 0).

Allocation rides on the session's event handlers: on allocate (and pipeline) each
requested kind takes its devices on the task's node and the annotations go into
``task.pod_annotations``, which the Bind carries; on deallocate (statement discard,
eviction) the kind gives them back and the keys leave the Binding.  In Volcano this
is the ``predicates`` plugin's event handler, so without ``predicates`` in the
configuration no device is allocated and pods bind without device annotations
(spec E-39); vcsched keeps that, and warns.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

import structlog

from vcsched.api.fit_errors import Status
from vcsched.api.node_info import NodeInfo
from vcsched.api.types import StatusCode, TaskStatus
from vcsched.api.task_info import TaskInfo
from vcsched.framework.arguments import Arguments
from vcsched.framework.effects import Bind, NodeLock
from vcsched.framework.interface import Plugin, Point
from vcsched.framework.session import EventError, EventHandler, Session
from vcsched.framework.stats import VGPUDeviceStats

from .ascend310p import MindClusterFamily, MindClusterScorer
from .base import AllocateError, DeviceFamily, NodeDevices
from .config import FRAGMENTATION, DeviceConfig, DeviceShareArgs, load_device_config
from .fragmentation import FragmentationScorer, open_session
from .lookahead import HELD_REASON, SessionPlan, plan_session
from . import topology
from .gpushare import GpuShareFamily, GpuShareRequest
from .hamivnpu import AscendHAMiFamily
from .mindcluster import MindClusterInfo
from .nodelock import allocate_error, lock_error, lock_name, lock_value, locks_before_selection
from .vgpu import KEY as VGPU_KEY, VGPUDevices, VGPUFamily, type_allowed
from .vgpu_annotations import HAMI_CORE


log = structlog.get_logger("vcsched.deviceshare")

PLUGIN_NAME = "deviceshare"


def build_families(args: DeviceShareArgs, config: DeviceConfig,
                   mindcluster: MindClusterInfo | None = None) -> list[DeviceFamily]:
    """The enabled device kinds, in Volcano's registry order (``registerDevices``)."""
    families: list[DeviceFamily] = []
    if args.gpu_sharing or args.gpu_number:
        families.append(GpuShareFamily(args.gpu_sharing, args.gpu_number))
    if args.vgpu:
        families.append(VGPUFamily(config.nvidia, args.exclusive_rules))
    if args.ascend_mindcluster_vnpu:
        families.append(MindClusterFamily(mindcluster))
    if args.ascend_hami_vnpu:
        vnpus = config.vnpus
        words = tuple(c.common_word for c in vnpus.configs)
        families.extend(AscendHAMiFamily(c, vnpus.hami_vnpu_core, words) for c in vnpus.configs)
    for i, f in enumerate(families):
        f.rank = i  # the place in RegisteredDevices (the HAMi Ascend kinds come from the device config)
        if hasattr(f, "topology_default"):
            f.topology_default = args.topology_policy
    return families


class NodeDeviceBuilder:
    """Parses a node's device registry once per node update (the cache calls it)."""

    __slots__ = ("families", "ignored")

    def __init__(self, families: list[DeviceFamily]) -> None:
        self.families = families
        # GetIgnoredDevices: resource names left out of pods' generic requests (HAMi Ascend memory and
        # cores, spec §6.8.10).  Volcano adds them to a process-wide list when it first sees a node with
        # such devices; here they follow the configuration, whatever order nodes and pods arrive in.
        self.ignored = frozenset(n for f in families for n in getattr(f, "ignored", ()) if n)

    def __call__(self, node: Mapping[str, Any]) -> dict[str, NodeDevices]:
        name = (node.get("metadata") or {}).get("name") or ""
        out: dict[str, NodeDevices] = {}
        for f in self.families:
            d = f.build(node, name)
            if d is not None:
                out[f.key] = d
        if out:
            topology.attach(node, name, out)
        return out


def deviceshare_args(conf) -> DeviceShareArgs | None:
    """The arguments of the conf's first deviceshare entry, or None when no tier has one."""
    for tier in conf.tiers:
        for option in tier:
            if option.name == PLUGIN_NAME:
                return DeviceShareArgs.parse(option.arguments)
    return None


def device_builder(conf, config_maps: Mapping[str, Mapping[str, Any]],
                   mindcluster: MindClusterInfo | None = None) -> NodeDeviceBuilder | None:
    """The builder for a scheduler configuration: None when no tier enables a device kind.

    ``mindcluster``: the MindCluster device-info store a source keeps up to date (kube mode);
    without it the store is filled once from ``config_maps`` (simulate)."""
    args = deviceshare_args(conf)
    if args is None or not args.any_enabled:
        return None
    static = args.ascend_mindcluster_vnpu and mindcluster is None
    if static:
        mindcluster = MindClusterInfo.from_config_maps(config_maps)
    families = build_families(args, load_device_config(config_maps, args), mindcluster)
    for f in families:
        if isinstance(f, MindClusterFamily):  # which device-info ConfigMaps count, from the first session
            f.configure(conf.action_arguments("init-params").values)
            if static:
                f.cluster_info.warn_other_source(f.use_cluster_info_manager)
    return NodeDeviceBuilder(families)


class DeviceSharePlugin(Plugin):
    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.args = DeviceShareArgs.parse(arguments)
        self.families: list[DeviceFamily] = []
        self._requests: dict[tuple[str, str], Any] = {}
        # task uid → (family, request) for the kinds it asks for, in registry order (the hot path's view)
        self._wants: dict[str, tuple[tuple[DeviceFamily, Any], ...]] = {}
        self._ssn: Session | None = None
        # NodeLockEnable: (node, lock name) → uids of this session's allocations holding it
        self._locked: dict[tuple[str, str], set[str]] = {}
        self._frag: FragmentationScorer | None = None
        self._plan: SessionPlan | None = None  # the fragmentation policy's look-ahead (lookahead.py)

    def on_session_open(self, ssn: Session) -> None:
        self._ssn = ssn
        found: dict[str, DeviceFamily] = {}
        for node in ssn.node_list:
            for key, d in node.devices.items():
                if key not in found:
                    found[key] = d.family
        # the families come from the cache's builder (its device config), ranked in registry order;
        # only the kinds this session's arguments enable (the HAMi Ascend kinds are named by the config).
        # An enabled kind that Volcano holds on every node (``on_every_node``) is asked about even when
        # no node has it: a pod asking for it fits no node ("node not initialized with device").
        enabled = {f.key: f for f in build_families(self.args, DeviceConfig())}
        hami = self.args.ascend_hami_vnpu
        kinds = {k: f for k, f in found.items() if k in enabled or (hami and isinstance(f, AscendHAMiFamily))}
        for k, f in enabled.items():
            if f.on_every_node:
                kinds.setdefault(k, f)
        self.families = sorted(kinds.values(), key=lambda f: f.rank)
        self._requests = {}
        self._wants = {}
        self._pending_cards(ssn)
        if VGPU_KEY in enabled:
            ssn.stats.vgpu_devices = vgpu_device_stats(ssn.node_list)
        self._locked = {}
        init = [f.key for f in self.families if f.session_init]
        if init:
            for node in ssn.node_list:  # initializeDevicesWithSession
                for key in init:
                    d = node.devices.get(key)
                    if d is not None:
                        d.open_session(node)
        self._frag = None
        self._plan = None
        vgpu = found.get(VGPUFamily.key)
        if vgpu is not None:
            vgpu.plan = None
        placed: frozenset[str] | set[str] = frozenset()
        if self.args.schedule_policy == FRAGMENTATION and vgpu is not None:
            a = self.args
            self._frag = open_session(vgpu, ssn, a.frag_workload, a.frag_classes, a.frag_half_life,
                                      a.frag_scarcity_weight)
            if a.frag_lookahead:
                plan = vgpu.plan = self._plan = plan_session(
                    ssn, vgpu, self._frag, lambda t: self.request(vgpu, t), type_allowed, HAMI_CORE,
                    a.frag_hold_back)
                placed = plan.placed
        stateful = self.args.schedule_weight > 0 and any(f.score_stores_state for f in self.families)
        if placed or stateful:
            ssn.add(Point.TASK_SHAPE, self.name, functools.partial(self._task_shape, placed, stateful))
        ssn.add(Point.PREDICATE, self.name, self.predicate)
        ssn.add(Point.NODE_ORDER, self.name, self.node_order)
        mc = found.get(MindClusterFamily.key)
        if mc is not None:
            mc.configure(ssn.conf.action_arguments("init-params").values)
        if mc is not None and self.args.schedule_weight > 0:
            ssn.add(Point.BATCH_NODE_ORDER, self.name, MindClusterScorer(mc, self.args.schedule_weight))
        ssn.add_event_handler(EventHandler(allocate=self.on_allocate, deallocate=self.on_deallocate))

    def _pending_cards(self, ssn: Session) -> None:
        """Each kind's biggest request (cards in one container) among pending pods that ask for device
        topology: the node score keeps a domain that could hold it whole (topology.placement_score)."""
        kinds = [f for f in self.families if hasattr(f, "pending_cards")]
        for f in kinds:
            f.pending_cards = 0
        if not kinds:
            return
        for job in ssn.jobs.values():
            for task in job.tasks.values():
                if task.node_name or task.status != TaskStatus.Pending:
                    continue
                for f in kinds:
                    req = self.request(f, task)
                    if req is None or not getattr(req, "topology", ""):
                        continue
                    n = req.number if isinstance(req, GpuShareRequest) else max(c.nums for c in req.containers)
                    if n > f.pending_cards:
                        f.pending_cards = n

    def _task_shape(self, placed: frozenset[str] | set[str], stateful: bool, task: TaskInfo) -> tuple | None:
        """None (node by node, no scores shared by shape) for a task the look-ahead planned (its planned
        node wins: its scores are its own) or one asking for a kind whose scoring leaves state."""
        if task.uid in placed or (stateful and any(f.score_stores_state for f, _ in self.wanted(task))):
            return None
        return ()

    def request(self, family: DeviceFamily, task: TaskInfo) -> Any:
        key = (family.key, task.uid)
        try:
            return self._requests[key]
        except KeyError:
            req = self._requests[key] = family.request(task)
            return req

    def wanted(self, task: TaskInfo) -> tuple[tuple[DeviceFamily, Any], ...]:
        """The kinds the task asks for, with its parsed requests, in registry order."""
        try:
            return self._wants[task.uid]
        except KeyError:
            pass
        out = []
        for f in self.families:
            req = self.request(f, task)
            if req is not None:
                out.append((f, req))
        w = self._wants[task.uid] = tuple(out)
        return w

    # -- predicate and node order --------------------------------------------------------------

    def predicate(self, task: TaskInfo, node: NodeInfo) -> list[Status] | None:
        if self._plan is not None and task.uid in self._plan.held:
            return [Status(StatusCode.Unschedulable, HELD_REASON)]
        wanted = self.wanted(task)
        if not wanted:
            return None
        devices = node.devices
        policy = self.args.schedule_policy
        for f, req in wanted:
            d = devices.get(f.key) if devices else None
            if d is None:
                if not f.on_every_node:
                    continue
                # Volcano's filterNode: the pod asks for a kind this node has no (readable) devices of,
                # whatever its allocatable says; the reason as Volcano writes it, without a space
                return [Status(StatusCode.Unschedulable, "node not initialized with device" + f.key)]
            lock = lock_name(f, req) if self.args.node_lock else None
            if lock is not None and locks_before_selection(lock):
                err = self._lock_failure(task, node, lock)
                if err is not None:
                    return [Status(StatusCode.Unschedulable, err)]
            failed = d.filter(task, req, policy)
            if failed is not None:
                return [failed]
            if lock is not None and not locks_before_selection(lock):
                err = self._lock_failure(task, node, lock)
                if err is not None:
                    return [Status(StatusCode.Unschedulable, err)]
        return None

    def _lock_failure(self, task: TaskInfo, node: NodeInfo, lock: str) -> str | None:
        """Would Volcano's ``LockNode`` fail here: the node's lock annotation, or this session's own lock."""
        holders = self._locked.get((node.name, lock))
        if holders and task.uid not in holders:
            err = f"node {node.name} has been locked within 5 minutes"
        else:
            err = lock_error(node.name, node.spec.annotations.get(lock), self._ssn.now)
        return None if err is None else allocate_error(lock, node.name, task.name, err)

    def node_order(self, task: TaskInfo, node: NodeInfo) -> float:
        weight = self.args.schedule_weight
        if weight <= 0:
            return 0.0
        if self._frag is not None:
            return self._fragmentation_score(task, node) * weight
        devices = node.devices
        if not devices:
            return 0.0
        policy = self.args.schedule_policy
        s = 0.0
        for f, req in self.wanted(task):
            d = devices.get(f.key)
            if d is not None:
                s += d.score(task, req, policy)
        return float(math.floor(s + 0.5) * weight)

    def _fragmentation_score(self, task: TaskInfo, node: NodeInfo) -> float:
        """The fragmentation policy scores every task, with or without a vGPU request (fragmentation.py).

        Not rounded: whole points would merge placements that differ by less than 1% of a node's GPUs.
        """
        d = node.devices.get(VGPUFamily.key)
        req = self.request(d.family, task) if d is not None else None
        if req is None:
            score = self._frag.no_device_score(task, node, d)
        else:
            score = d.score(task, req, FRAGMENTATION)
        return score if self._plan is None else self._plan.adjust(task.uid, node.name, score)

    # -- allocation (Volcano: the predicates plugin's event handlers) -----------------------------------

    def _node(self, task: TaskInfo) -> NodeInfo | None:
        ssn = self._ssn
        if ssn is None or "predicates" not in ssn.plugins:
            if ssn is not None and not ssn.scratch.get("deviceshare.warned"):
                ssn.scratch["deviceshare.warned"] = True
                log.warning("deviceshare without the predicates plugin: devices are not allocated and pods "
                            "bind without device annotations, as in Volcano")
            return None
        node = ssn.nodes.get(task.node_name)
        return node if node is not None and node.devices else None

    def _changed(self, node: NodeInfo) -> None:
        self._ssn.touch_node(node)

    def on_allocate(self, task: TaskInfo) -> None:
        node = self._node(task)
        if node is None:
            return
        now = self._ssn.now
        done: list[NodeDevices] = []
        for f in self.families:
            d = node.devices.get(f.key)
            if d is None or d.holds(task.uid):
                continue
            req = self.request(f, task)
            if req is None:
                continue
            try:
                annotations = d.allocate(task, req, self.args.schedule_policy, now)
            except AllocateError as e:
                self._unlock(node.name, task.uid)
                for prev in done:
                    for k in prev.release(task):
                        task.pod_annotations.pop(k, None)
                self._changed(node)
                raise EventError(f"deviceshare: {f.key} on node {node.name}: {e}") from None
            task.pod_annotations.update(annotations)
            done.append(d)
            lock = lock_name(f, req) if self.args.node_lock else None
            if lock is not None:
                self._locked.setdefault((node.name, lock), set()).add(task.uid)
        if done:
            self._changed(node)

    def on_deallocate(self, task: TaskInfo) -> None:
        ssn = self._ssn
        node = ssn.nodes.get(task.node_name) if ssn is not None else None
        if node is None or not node.devices:
            return
        changed = False
        for f in self.families:
            d = node.devices.get(f.key)
            if d is None or self.request(f, task) is None:
                continue
            held = d.holds(task.uid)
            if self._locked:
                self._unlock(node.name, task.uid)
            for k in d.release(task):
                task.pod_annotations.pop(k, None)
            changed = changed or held
        if changed:
            self._changed(node)

    def _unlock(self, node: str, uid: str) -> None:
        for key in [k for k, uids in self._locked.items() if k[0] == node and uid in uids]:
            self._locked[key].discard(uid)
            if not self._locked[key]:
                del self._locked[key]

    def on_session_close(self, ssn: Session) -> None:
        """Each lock this session took goes out as a NodeLock effect right before its pod's Bind."""
        if not self._locked:
            return
        by_uid: dict[str, list[tuple[str, str]]] = {}
        for (node, lock), uids in sorted(self._locked.items()):
            for uid in uids:
                by_uid.setdefault(uid, []).append((node, lock))
        value = lock_value(ssn.now)
        out = []
        for e in ssn.effects:
            if isinstance(e, Bind) and e.uid in by_uid:
                out.extend(NodeLock(node, lock, value) for node, lock in by_uid[e.uid] if node == e.node)
            out.append(e)
        ssn.effects[:] = out


def vgpu_device_stats(nodes: list[NodeInfo]) -> list[VGPUDeviceStats]:
    """The vGPU ledgers as the snapshot rebuilt them from pod annotations, for the device gauges.

    Volcano sets these gauges when it builds a node's vGPU object, which it does on every node update
    and snapshot clone; session allocations never touch them (spec §8).
    """
    out = []
    for node in nodes:
        d = node.devices.get(VGPU_KEY)
        if not isinstance(d, VGPUDevices):
            continue
        for gpu in d.devices:
            pods: dict[str, tuple[int, int]] = {}
            for uid in gpu.pods:
                h = d.holders.get(uid)
                if h is None:
                    continue
                mem = sum(e.mem for e in h.entries if e.device == gpu.index)
                cores = sum(e.cores for e in h.entries if e.device == gpu.index)
                pods[h.key.split("/", 1)[-1]] = (mem, cores)  # labelled by pod name, as Volcano does
            out.append(VGPUDeviceStats(node.name, gpu.uuid, gpu.memory, gpu.used_num, gpu.used_mem, gpu.used_core,
                                       pods))
    return out
