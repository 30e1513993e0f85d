"""``volcano-scheduler.conf``: grammar, defaults and validation (scheduler_conf.go, util.go, defaults.go).

Where Volcano only logs (an unknown plugin name, an argument of the wrong type)
vcsched refuses the configuration with an error naming the field: a typo that
silently disables a plugin is worse than a refused edit, and in Kubernetes mode a
refused edit leaves the last good configuration in force, as Volcano does for
YAML errors.  Plugin names Volcano registers but vcsched does not implement are
accepted and skipped with a warning, as Volcano skips plugins it cannot load.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from .framework.arguments import ArgumentError, Arguments

# Volcano's built-in fallback (pkg/scheduler/util.go · DefaultSchedulerConf).
VOLCANO_FALLBACK_CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""

# The configuration Volcano ships in its Helm chart; vcsched's default, kept equal
# to conf/volcano-scheduler.conf (a test holds them together).
DEFAULT_SCHEDULER_CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""

# pkg/scheduler/actions/factory.go · init
VOLCANO_ACTIONS = ("enqueue", "allocate", "backfill", "preempt", "reclaim", "gangpreempt", "gangreclaim", "shuffle")
# pkg/scheduler/plugins/factory.go · init
VOLCANO_PLUGINS = (
    "drf", "gang", "deviceshare", "predicates", "priority", "nodeorder", "conformance", "binpack",
    "resource-strategy-fit", "tdm", "overcommit", "sla", "task-topology", "numa-aware", "cdp",
    "rescheduling", "usage", "pdb", "nodegroup", "network-topology-aware", "proportion", "capacity",
    "extender", "resourcequota",
)

# Per-plugin switches and whether ApplyPluginConfDefaults sets them to true when absent.
ENABLE_FLAGS: dict[str, bool] = {
    "enableJobOrder": True,
    "enableJobReady": True,
    "enableJobPipelined": True,
    "enableJobEnqueued": True,
    "enableTaskOrder": True,
    "enablePreemptable": True,
    "enableReclaimable": True,
    "enablePreemptive": True,
    "enableQueueOrder": True,
    "enabledClusterOrder": False,
    "enablePredicate": True,
    "enableBestNode": True,
    "enableNodeOrder": True,
    "enableTargetJob": True,
    "enableReservedNodes": True,
    "enabledVictim": True,
    "enableJobStarving": True,
    "enabledOverused": True,
    "enabledAllocatable": True,
    "enabledHyperNodeOrder": True,
    "enabledSubJobReady": True,
    "enabledSubJobPipelined": True,
    "enabledSubJobOrder": True,
    "enabledHyperNodeGradient": True,
    "enableHierarchy": False,
}


class ConfError(ValueError):
    """An invalid scheduler configuration; the message names the field."""


@dataclass(slots=True)
class PluginOption:
    name: str
    flags: dict[str, bool]
    arguments: Arguments

    def enabled(self, flag: str) -> bool:
        return self.flags.get(flag, False)


@dataclass(slots=True)
class SchedulerConfiguration:
    actions: list[str]
    tiers: list[list[PluginOption]]
    configurations: dict[str, Arguments] = field(default_factory=dict)
    metrics: dict[str, str] = field(default_factory=dict)
    text: str = ""

    def action_arguments(self, action: str) -> Arguments:
        return self.configurations.get(action) or Arguments({}, f"configurations[{action}]")


def _expect(value: Any, kind: type, where: str, what: str) -> Any:
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ConfError(f"{where}: expected {what}, got {type(value).__name__} {value!r}")
    return value


def parse_conf(text: str, *, known_plugins: dict[str, type] | None = None,
               known_actions: tuple[str, ...] | None = None) -> SchedulerConfiguration:
    """Parse and validate a configuration; ``known_*`` default to vcsched's registries."""
    if known_plugins is None or known_actions is None:
        from .framework.registry import action_names, plugin_classes

        known_plugins = plugin_classes() if known_plugins is None else known_plugins
        known_actions = action_names() if known_actions is None else known_actions
    try:
        doc = yaml.safe_load(text.strip())
    except yaml.YAMLError as e:
        raise ConfError(f"invalid YAML: {str(e).splitlines()[0]}") from None
    except (ValueError, OverflowError) as e:  # PyYAML's timestamp constructor
        raise ConfError(f"invalid YAML: invalid value: {e}") from None
    if doc is None:
        doc = {}
    _expect(doc, dict, "configuration", "a mapping")

    raw_actions = doc.get("actions", "")
    _expect(raw_actions, str, "actions", "a comma-separated string")
    actions = []
    for piece in raw_actions.split(","):
        name = piece.strip()
        if name not in VOLCANO_ACTIONS:
            raise ConfError(f"actions: failed to find Action {piece}")
        if name not in known_actions:
            raise ConfError(f"actions: action {name!r} is not implemented by vcsched")
        actions.append(name)

    tiers: list[list[PluginOption]] = []
    for ti, tier in enumerate(_expect(doc.get("tiers") or [], list, "tiers", "a list")):
        _expect(tier, dict, f"tiers[{ti}]", "a mapping")
        options: list[PluginOption] = []
        for pi, raw in enumerate(_expect(tier.get("plugins") or [], list, f"tiers[{ti}].plugins", "a list")):
            where = f"tiers[{ti}].plugins[{pi}]"
            _expect(raw, dict, where, "a mapping")
            name = _expect(raw.get("name"), str, f"{where}.name", "a plugin name")
            if name not in VOLCANO_PLUGINS:
                raise ConfError(f"{where}.name: unknown plugin {name!r}")
            flags: dict[str, bool] = {}
            for flag, default in ENABLE_FLAGS.items():
                value = raw.get(flag)
                if value is None:
                    flags[flag] = default
                else:
                    flags[flag] = _expect(value, bool, f"{where}.{flag}", "a bool")
            args = raw.get("arguments") or {}
            _expect(args, dict, f"{where}.arguments", "a mapping")
            arguments = Arguments({str(k): v for k, v in args.items()}, f"{where}.arguments")
            plugin_cls = known_plugins.get(name)
            if plugin_cls is not None:
                try:
                    plugin_cls(arguments)  # validates argument types
                except ArgumentError as e:
                    raise ConfError(str(e)) from None
            options.append(PluginOption(name, flags, arguments))
        tiers.append(options)
        if any(o.name == "drf" and o.flags["enableHierarchy"] for o in options) and any(
            o.name == "proportion" for o in options
        ):
            raise ConfError(f"tiers[{ti}]: proportion and drf with hierarchy enabled conflicts")

    configurations: dict[str, Arguments] = {}
    for ci, raw in enumerate(_expect(doc.get("configurations") or [], list, "configurations", "a list")):
        where = f"configurations[{ci}]"
        _expect(raw, dict, where, "a mapping")
        name = _expect(raw.get("name"), str, f"{where}.name", "an action name")
        args = _expect(raw.get("arguments") or {}, dict, f"{where}.arguments", "a mapping")
        if name not in configurations:
            configurations[name] = Arguments({str(k): v for k, v in args.items()}, f"{where}.arguments")
    from .framework.registry import action_classes

    actions_by_name = action_classes()
    for name, args in configurations.items():
        action_cls = actions_by_name.get(name)
        if action_cls is not None:
            try:
                action_cls.validate_arguments(args)
            except ArgumentError as e:
                raise ConfError(str(e)) from None

    metrics = doc.get("metrics") or {}
    _expect(metrics, dict, "metrics", "a mapping")
    return SchedulerConfiguration(actions, tiers, configurations, {str(k): str(v) for k, v in metrics.items()}, text)
