"""The deviceshare plugin (plugins/deviceshare/deviceshare.go) and the per-node device builder.

Device kinds are visited in Volcano's registry order (spec §1.1): GpuShare, then
hamivgpu.  The predicate runs each requested kind's filter and fails the node on
the first failure; the node order adds the kinds' scores, rounds half up and
multiplies by ``ScheduleWeight`` (only when it is > 0).

Allocation rides on the session's event handlers: on allocate (and pipeline) each
requested kind takes its devices on the task's node and the annotations go into
``task.pod_annotations``, which the Bind carries; on deallocate (statement discard,
eviction) the kind gives them back and the keys leave the Binding.  In Volcano this
is the ``predicates`` plugin's event handler, so without ``predicates`` in the
configuration no device is allocated and pods bind without device annotations
(spec E-39); vcsched keeps that, and warns.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import structlog

from vcsched.api.fit_errors import Status
from vcsched.api.node_info import NodeInfo
from vcsched.api.task_info import TaskInfo
from vcsched.framework.arguments import Arguments
from vcsched.framework.interface import Plugin, Point
from vcsched.framework.session import EventError, EventHandler, Session

from .base import AllocateError, DeviceFamily, NodeDevices
from .config import FRAGMENTATION, DeviceConfig, DeviceShareArgs, load_device_config
from .fragmentation import FragmentationScorer, open_session
from .gpushare import GpuShareFamily
from .vgpu import VGPUFamily


log = structlog.get_logger("vcsched.deviceshare")

PLUGIN_NAME = "deviceshare"


def build_families(args: DeviceShareArgs, config: DeviceConfig) -> list[DeviceFamily]:
    """The enabled device kinds, in Volcano's registry order (``registerDevices``)."""
    families: list[DeviceFamily] = []
    if args.gpu_sharing or args.gpu_number:
        families.append(GpuShareFamily(args.gpu_sharing, args.gpu_number))
    if args.vgpu:
        families.append(VGPUFamily(config.nvidia, args.exclusive_rules))
    return families


class NodeDeviceBuilder:
    """Parses a node's device registry once per node update (the cache calls it)."""

    __slots__ = ("families",)

    def __init__(self, families: list[DeviceFamily]) -> None:
        self.families = families

    def __call__(self, node: Mapping[str, Any]) -> dict[str, NodeDevices]:
        name = (node.get("metadata") or {}).get("name") or ""
        out: dict[str, NodeDevices] = {}
        for f in self.families:
            d = f.build(node, name)
            if d is not None:
                out[f.key] = d
        return out


def device_builder(conf, config_maps: Mapping[str, Mapping[str, Any]]) -> NodeDeviceBuilder | None:
    """The builder for a scheduler configuration: None when no tier enables a device kind."""
    for tier in conf.tiers:
        for option in tier:
            if option.name != PLUGIN_NAME:
                continue
            args = DeviceShareArgs.parse(option.arguments)
            if not args.any_enabled:
                return None
            return NodeDeviceBuilder(build_families(args, load_device_config(config_maps, args)))
    return None


class DeviceSharePlugin(Plugin):
    name = PLUGIN_NAME

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.args = DeviceShareArgs.parse(arguments)
        self.families: list[DeviceFamily] = []
        self._requests: dict[tuple[str, str], Any] = {}
        self._ssn: Session | None = None
        self._frag: FragmentationScorer | None = None

    def on_session_open(self, ssn: Session) -> None:
        self._ssn = ssn
        found: dict[str, DeviceFamily] = {}
        for node in ssn.node_list:
            for key, d in node.devices.items():
                if key not in found:
                    found[key] = d.family
        order = [f.key for f in build_families(self.args, DeviceConfig())]
        self.families = [found[k] for k in order if k in found]
        self._requests = {}
        self._frag = None
        vgpu = found.get(VGPUFamily.key)
        if self.args.schedule_policy == FRAGMENTATION and vgpu is not None:
            a = self.args
            self._frag = open_session(vgpu, ssn, a.frag_workload, a.frag_classes, a.frag_half_life)
        ssn.add(Point.PREDICATE, self.name, self.predicate)
        ssn.add(Point.NODE_ORDER, self.name, self.node_order)
        ssn.add_event_handler(EventHandler(allocate=self.on_allocate, deallocate=self.on_deallocate))

    def request(self, family: DeviceFamily, task: TaskInfo) -> Any:
        key = (family.key, task.uid)
        try:
            return self._requests[key]
        except KeyError:
            req = self._requests[key] = family.request(task)
            return req

    # -- predicate and node order --------------------------------------------------------------

    def predicate(self, task: TaskInfo, node: NodeInfo) -> list[Status] | None:
        devices = node.devices
        if not devices:
            return None
        policy = self.args.schedule_policy
        for f in self.families:
            d = devices.get(f.key)
            if d is None:
                continue
            req = self.request(f, task)
            if req is None:
                continue
            failed = d.filter(task, req, policy)
            if failed is not None:
                return [Status(failed.code, failed.reason)]
        return None

    def node_order(self, task: TaskInfo, node: NodeInfo) -> float:
        weight = self.args.schedule_weight
        if weight <= 0:
            return 0.0
        if self._frag is not None:
            return self._fragmentation_score(task, node) * weight
        if not node.devices:
            return 0.0
        policy = self.args.schedule_policy
        s = 0.0
        for f in self.families:
            d = node.devices.get(f.key)
            if d is None:
                continue
            req = self.request(f, task)
            if req is not None:
                s += d.score(task, req, policy)
        return float(math.floor(s + 0.5) * weight)

    def _fragmentation_score(self, task: TaskInfo, node: NodeInfo) -> float:
        """The fragmentation policy scores every task, with or without a vGPU request (fragmentation.py).

        Not rounded: whole points would merge placements that differ by less than 1% of a node's GPUs.
        """
        d = node.devices.get(VGPUFamily.key)
        req = self.request(d.family, task) if d is not None else None
        if req is None:
            return self._frag.no_device_score(task, node, d)
        return d.score(task, req, FRAGMENTATION)

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
        node.generation += 1
        self._ssn.node_changes.append(node.index)

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
                for prev in done:
                    for k in prev.release(task):
                        task.pod_annotations.pop(k, None)
                self._changed(node)
                raise EventError(f"deviceshare: {f.key} on node {node.name}: {e}") from None
            task.pod_annotations.update(annotations)
            done.append(d)
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
            for k in d.release(task):
                task.pod_annotations.pop(k, None)
            changed = changed or held
        if changed:
            self._changed(node)
