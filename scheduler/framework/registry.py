"""Plugins and actions by the names the configuration uses."""

from __future__ import annotations

from .interface import Action, Plugin


def plugin_classes() -> dict[str, type[Plugin]]:
    from ..plugins import (
        binpack,
        capacity,
        cdp,
        conformance,
        drf,
        extender,
        gang,
        network_topology_aware,
        nodegroup,
        nodeorder,
        numa_aware,
        overcommit,
        pdb,
        predicates,
        priority,
        proportion,
        rescheduling,
        resource_strategy_fit,
        resourcequota,
        sla,
        task_topology,
        tdm,
        usage,
    )
    from ..plugins.deviceshare import DeviceSharePlugin

    classes: list[type[Plugin]] = [
        binpack.BinpackPlugin,
        capacity.CapacityPlugin,
        cdp.CdpPlugin,
        conformance.ConformancePlugin,
        DeviceSharePlugin,
        drf.DrfPlugin,
        extender.ExtenderPlugin,
        gang.GangPlugin,
        network_topology_aware.NetworkTopologyAwarePlugin,
        nodegroup.NodeGroupPlugin,
        nodeorder.NodeOrderPlugin,
        numa_aware.NumaAwarePlugin,
        overcommit.OvercommitPlugin,
        pdb.PdbPlugin,
        predicates.PredicatesPlugin,
        priority.PriorityPlugin,
        proportion.ProportionPlugin,
        rescheduling.ReschedulingPlugin,
        resource_strategy_fit.ResourceStrategyFitPlugin,
        resourcequota.ResourceQuotaPlugin,
        sla.SlaPlugin,
        task_topology.TaskTopologyPlugin,
        tdm.TdmPlugin,
        usage.UsagePlugin,
    ]
    return {c.name: c for c in classes}


def action_classes() -> dict[str, type[Action]]:
    from ..actions import allocate, backfill, enqueue, gangpreempt, gangreclaim, preempt, reclaim, shuffle

    classes: list[type[Action]] = [
        enqueue.EnqueueAction, allocate.AllocateAction, backfill.BackfillAction,
        preempt.PreemptAction, reclaim.ReclaimAction, shuffle.ShuffleAction,
        gangpreempt.GangPreemptAction, gangreclaim.GangReclaimAction,
    ]
    return {c.name: c for c in classes}


def action_names() -> tuple[str, ...]:
    return tuple(action_classes())
