"""HyperNode discovery from node labels: Volcano's hypernode controller, its ``label`` source.

Volcano's files: pkg/controllers/hypernode/config/loader.go (where the configuration lives),
api/types.go (its shape), discovery/label/label.go (HyperNodes from node labels),
hypernode_controller.go (``reconcileTopology``: create, update, delete) and discovery/manager.go
(which sources run).  This module is the pure part: configuration text → configuration, nodes and
the stored HyperNodes → the HyperNodes the labels describe → the writes that make the stored ones
so.  scheduler/kube/hypernode_discovery.py runs it in ``vcsched run``'s controllers.

The configuration is the controllers' ConfigMap, ``<release>-controller-configmap`` (Volcano's
chart: ``volcano-controller-configmap`` in ``volcano-system``), key ``volcano-controller.conf``::

    networkTopologyDiscovery:
      - source: label
        enabled: true
        config:
          networkTopologyTypes:
            topologyA3:                              # a type name of at most 20 characters
              - nodeLabel: volcano.sh/hypercluster   # tier 2
              - nodeLabel: volcano.sh/hypernode      # tier 1
              - nodeLabel: kubernetes.io/hostname    # the node itself: the last entry is dropped

A node is walked from the lowest tier up; the first label it lacks ends its chain.  Nodes sharing a
label value share one HyperNode, named ``hypernode-<type>-tier<N>-<5 random characters>`` (the type
name lowered, anything but letters, digits, ``.`` and ``-`` turned into ``-``); a HyperNode this
source made earlier for the same label and value keeps its name.  Tier 1 HyperNodes hold the nodes,
higher tiers the HyperNodes below, all by exact name, sorted.  Each made HyperNode carries the label
``volcano.sh/network-topology-source: label`` and the topology label with its value; HyperNodes
without that source label (made by hand, or by another source) are never written.

Where this differs from Volcano (each said again where it happens):
- Nodes are walked in name order and topology types in name order (Volcano: informer and map
  order, which decides only the random names and, when two types share a label key, the tier).
- An update that changes nothing is not written (Volcano writes it anyway).
- A configuration that cannot be used keeps the last one in force, as Volcano's failed reload does,
  and is reported as a Warning Event as well as a log line (Volcano: a log line).
- ``ufm`` and ``roce`` need the fabric's manager: named in a warning and skipped.  A source nobody
  knows is skipped the same way (Volcano retries the whole reload, starting none of the sources
  after it in the list).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..api import duration

API_VERSION = "topology.volcano.sh/v1alpha1"
SOURCE_LABEL = "volcano.sh/network-topology-source"  # api.NetworkTopologySourceLabelKey
LABEL_SOURCE = "label"
HARDWARE_SOURCES = ("ufm", "roce")  # Volcano's other sources: they talk to the fabric's manager
CONFIG_KEY = "volcano-controller.conf"  # config.DefaultConfigKey
DEFAULT_NAMESPACE = "volcano-system"  # config.DefaultNamespace
DEFAULT_RELEASE = "volcano"  # config.DefaultReleaseName
NAMESPACE_ENV = "KUBE_POD_NAMESPACE"  # config.NamespaceEnvKey
RELEASE_ENV = "HELM_RELEASE_NAME"  # config.ReleaseNameEnvKey
DEFAULT_INTERVAL = 3600.0  # api.DefaultDiscoveryInterval, seconds
TYPE_NAME_MAX = 20  # networkTopologyTypeLength
NAME_ATTEMPTS = 20  # loopCount
SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand


def configmap_name(release: str = "") -> str:
    """``setConfigMapNamespaceAndName``: ``<release>-controller-configmap``."""
    return f"{release or DEFAULT_RELEASE}-controller-configmap"


class DiscoveryConfigError(ValueError):
    """The controllers' ConfigMap holds no usable configuration (the message says where)."""


@dataclass(frozen=True, slots=True)
class DiscoverySource:
    """One ``networkTopologyDiscovery`` entry (``DiscoveryConfig``); ``interval`` in seconds (0: unset)."""

    source: str
    enabled: bool = False
    interval: float = 0.0
    config: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NetworkTopologyConfig:
    sources: tuple[DiscoverySource, ...] = ()

    def source(self, name: str) -> DiscoverySource | None:
        """``GetDiscoveryConfig``: the first enabled entry of ``name``, its interval defaulted."""
        for s in self.sources:
            if s.source == name and s.enabled:
                return s if s.interval > 0 else DiscoverySource(s.source, True, DEFAULT_INTERVAL, s.config)
        return None

    def enabled_sources(self) -> list[str]:
        """``GetEnabledDiscoverySources``."""
        return [s.source for s in self.sources if s.enabled]


def parse_go_duration(value: Any) -> float:
    """A ``time.Duration`` as yaml.v2 decodes one: a string in Go's ``ParseDuration`` form (``10m``,
    ``1h30m``, ``-1.5h``, ``0``), or an integer count of nanoseconds; seconds out, ValueError if neither."""
    if isinstance(value, bool):
        raise ValueError(f"invalid duration {value!r}")
    if isinstance(value, int):
        return value * 1e-9
    if not isinstance(value, str):
        raise ValueError(f"invalid duration {value!r}")
    return duration.parse_go_duration(value)


def load_config(data: Mapping[str, Any] | None) -> NetworkTopologyConfig:
    """``LoadConfig``: the ConfigMap's ``data`` → the configuration.  ``None`` (no ConfigMap) is the empty
    configuration, as ``parseConfig`` takes NotFound; a missing key, YAML that does not parse or a field
    of the wrong type is a DiscoveryConfigError naming it (yaml.v2 refuses the whole text then too)."""
    if data is None:
        return NetworkTopologyConfig()
    text = data.get(CONFIG_KEY)
    if text is None:
        raise DiscoveryConfigError(f"config key not found in ConfigMap: {CONFIG_KEY}")
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise DiscoveryConfigError(f"failed to parse config: {_one_line(e)}") from None
    if doc is None:
        return NetworkTopologyConfig()
    if not isinstance(doc, dict):
        raise DiscoveryConfigError(f"failed to parse config: {CONFIG_KEY}: expected a mapping, got {_kind(doc)}")
    entries = doc.get("networkTopologyDiscovery")
    if entries is None:
        return NetworkTopologyConfig()
    if not isinstance(entries, list):
        raise DiscoveryConfigError("failed to parse config: networkTopologyDiscovery: expected a list, "
                                   f"got {_kind(entries)}")
    sources = []
    for i, entry in enumerate(entries):
        where = f"networkTopologyDiscovery[{i}]"
        if entry is None:
            entry = {}
        if not isinstance(entry, dict):
            raise DiscoveryConfigError(f"failed to parse config: {where}: expected a mapping, got {_kind(entry)}")
        source = entry.get("source")
        if isinstance(source, (list, dict)):
            raise DiscoveryConfigError(f"failed to parse config: {where}.source: expected a string, "
                                       f"got {_kind(source)}")
        enabled = entry.get("enabled", False)
        if enabled is None:
            enabled = False
        if not isinstance(enabled, bool):
            raise DiscoveryConfigError(f"failed to parse config: {where}.enabled: expected true or false, "
                                       f"got {enabled!r}")
        interval = 0.0
        if entry.get("interval") is not None:
            try:
                interval = parse_go_duration(entry["interval"])
            except ValueError:
                raise DiscoveryConfigError(f"failed to parse config: {where}.interval: {entry['interval']!r} "
                                           "is not a duration (e.g. 10m, 1h)") from None
        config = entry.get("config")
        if config is None:
            config = {}
        if not isinstance(config, dict):
            raise DiscoveryConfigError(f"failed to parse config: {where}.config: expected a mapping, "
                                       f"got {_kind(config)}")
        sources.append(DiscoverySource("" if source is None else _scalar_text(source), enabled, interval, config))
    return NetworkTopologyConfig(tuple(sources))


def _scalar_text(value: Any) -> str:
    """A YAML scalar read into a Go string field (yaml.v2 keeps its text: ``true``, not ``True``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _kind(value: Any) -> str:
    return {str: "a string", bool: "a boolean", int: "a number", float: "a number", list: "a list",
            dict: "a mapping"}.get(type(value), type(value).__name__)


def _one_line(e: Exception) -> str:
    """A YAML error as its problem and where (PyYAML's text quotes the whole context)."""
    problem, mark = getattr(e, "problem", None), getattr(e, "problem_mark", None)
    if problem and mark is not None:
        return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
    return " ".join(str(e).split())


# -- the label source's configuration ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LabelTopology:
    """``parseCfg``: each topology type's node label keys, tier 1 first (the last configured key, the
    node's own, dropped); ``problems``: the types left out and why."""

    types: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    problems: tuple[str, ...] = ()

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(k for keys in self.types.values() for k in keys)

    def node_values(self, labels: Mapping[str, str] | None) -> dict[str, str]:
        """``getNodeNetworkTopologyLabels``: the node's labels this topology reads (a change of them,
        or a node with any of them coming or going, asks for a discovery)."""
        if not labels:
            return {}
        return {k: labels[k] for keys in self.types.values() for k in keys if k in labels}


def parse_label_config(config: Mapping[str, Any]) -> LabelTopology:
    """The ``label`` source's ``config``.  As Volcano: a ``networkTopologyTypes`` that does not decode
    leaves no type at all; a type name longer than 20 characters, or a type naming one label twice, is
    left out alone."""
    raw = config.get("networkTopologyTypes")
    if raw is None:
        return LabelTopology()
    if not isinstance(raw, dict):
        return LabelTopology({}, (f"networkTopologyTypes: expected a mapping of type names to lists of "
                                  f"nodeLabel entries, got {_kind(raw)}",))
    decoded: dict[str, list[str]] = {}
    for name, entries in raw.items():
        where = f"networkTopologyTypes.{name}"
        if entries is None:
            entries = []
        if isinstance(entries, dict):
            entries = [entries]  # mapstructure's weak decoding: one element for a slice
        if not isinstance(entries, list):
            return LabelTopology({}, (f"{where}: expected a list of nodeLabel entries, got {_kind(entries)}",))
        keys = []
        for j, entry in enumerate(entries):
            if entry is None:
                entry = {}
            if not isinstance(entry, dict):
                return LabelTopology({}, (f"{where}[{j}]: expected a mapping with nodeLabel, got {_kind(entry)}",))
            key = entry.get("nodeLabel")
            if isinstance(key, (dict, list)):
                return LabelTopology({}, (f"{where}[{j}].nodeLabel: expected a string, got {_kind(key)}",))
            keys.append("" if key is None else _weak_string(key))
        decoded[str(name)] = keys
    types: dict[str, tuple[str, ...]] = {}
    problems = []
    for name, keys in decoded.items():
        if len(name) > TYPE_NAME_MAX:
            problems.append(f"networkTopologyTypes.{name}: the type name is longer than {TYPE_NAME_MAX} "
                            "characters; the type is left out")
            continue
        dup = sorted({k for k in keys if keys.count(k) > 1})
        if dup:
            problems.append(f"networkTopologyTypes.{name}: the label {dup[0]} is named twice; the type is left out")
            continue
        types[name] = tuple(reversed(keys[:-1]))  # the last entry is the node (kubernetes.io/hostname)
    return LabelTopology(types, tuple(problems))


def _weak_string(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"  # mapstructure's weak bool → string
    return str(value)


# -- discovery -------------------------------------------------------------------------------------


@dataclass(slots=True)
class DiscoveredHyperNode:
    """One HyperNode the labels describe (``HyperNodeInfo`` built by ``buildHyperNodes``)."""

    name: str
    tier: int
    tier_name: str  # the label key of its tier
    labels: dict[str, str]  # {label key: value}, with the source label added by ``manifest``
    members: list[str] = field(default_factory=list)

    @property
    def member_type(self) -> str:
        return "Node" if self.tier == 1 else "HyperNode"  # getMemberType

    def manifest(self, source: str = LABEL_SOURCE) -> dict[str, Any]:
        """The HyperNode object (``BuildHyperNodeWithTierName``): exact members, sorted, once each."""
        members = [{"type": self.member_type, "selector": {"exactMatch": {"name": m}}}
                   for m in sorted(set(self.members))]
        return {"apiVersion": API_VERSION, "kind": "HyperNode",
                "metadata": {"name": self.name, "labels": {SOURCE_LABEL: source, **self.labels}},
                "spec": {"tier": self.tier, "tierName": self.tier_name, "members": members}}


class DiscoveryError(Exception):
    """No HyperNode name could be found (``unable to get unique hyperNodeName after 20 attempts``)."""


def random_suffix() -> str:
    """``rand.String(5)``: five characters of Kubernetes' name alphabet (no vowels)."""
    return "".join(secrets.choice(SUFFIX_ALPHABET) for _ in range(5))


def clean_type_name(name: str) -> str:
    """``cleanString``: letters lowered, digits, ``.`` and ``-`` kept, anything else ``-``."""
    out = []
    for c in name:
        if c.isascii() and c.isalpha():
            out.append(c.lower())
        elif c.isascii() and c.isdigit() or c in ".-":
            out.append(c)
        else:
            out.append("-")  # Volcano lowers any letter; a non-ASCII one would make no valid name anyway
    return "".join(out)


def discover_from_labels(nodes: Iterable[tuple[str, Mapping[str, str] | None]], topology: LabelTopology,
                         hypernodes: Mapping[str, Mapping[str, Any]],
                         suffix: Callable[[], str] = random_suffix) -> list[DiscoveredHyperNode]:
    """``generateHyperNodeInfo`` + ``buildHyperNodes``: the HyperNodes the nodes' labels describe.

    ``nodes``: (name, labels); ``hypernodes``: every stored HyperNode by name (names are reused from
    and kept clear of them); ``suffix``: the random part of a new name.  Nodes and types are walked
    in name order (Volcano: informer and map order).  DiscoveryError when no free name is found."""
    found: dict[str, DiscoveredHyperNode] = {}
    by_label: dict[tuple[str, str], str] = {}  # (key, value) → HyperNode name, across types as in Volcano
    types = sorted(topology.types.items())
    for node_name, labels in sorted(nodes, key=lambda n: n[0]):
        labels = labels or {}
        for type_name, keys in types:
            member = node_name
            for i, key in enumerate(keys):
                value = labels.get(key)
                if value is None:
                    break  # a chain ends at the first label the node lacks
                tier = i + 1
                name = by_label.get((key, value))
                if name is None:
                    name = _hypernode_name(type_name, key, value, tier, hypernodes, found, suffix)
                    by_label[(key, value)] = name
                info = found.get(name)
                if info is None:
                    info = found[name] = DiscoveredHyperNode(name, tier, key, {key: value})
                info.members.append(member)
                member = name
    return list(found.values())


def _hypernode_name(type_name: str, key: str, value: str, tier: int, hypernodes: Mapping[str, Mapping[str, Any]],
                    found: Mapping[str, DiscoveredHyperNode], suffix: Callable[[], str]) -> str:
    """``buildHyperNodeName``: the first (by name) HyperNode of this source labelled ``key=value`` whose
    name starts ``hypernode-<type>-tier<N>``, else a new name free among stored and found ones."""
    prefix = f"hypernode-{clean_type_name(type_name)}-tier{tier}"
    for name in sorted(hypernodes):
        labels = (hypernodes[name].get("metadata") or {}).get("labels") or {}
        if labels.get(SOURCE_LABEL) == LABEL_SOURCE and labels.get(key) == value and name.startswith(prefix):
            return name
    for _ in range(NAME_ATTEMPTS):
        name = f"{prefix}-{suffix()}"
        if name not in hypernodes and name not in found:
            return name
    raise DiscoveryError(f"unable to get unique hyperNodeName after {NAME_ATTEMPTS} attempts")


# -- the writes ------------------------------------------------------------------------------------


@dataclass(slots=True)
class Plan:
    """``reconcileTopology``'s writes: HyperNodes to create, stored ones to update (the object to PUT)
    and names to delete.  Creates go lowest tier first and deletes highest first, so a HyperNode is
    there before a parent names it and its parent lets go of it before it goes."""

    create: list[dict[str, Any]] = field(default_factory=list)
    update: list[dict[str, Any]] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.create or self.update or self.delete)


def managed_by(obj: Mapping[str, Any], source: str) -> bool:
    return ((obj.get("metadata") or {}).get("labels") or {}).get(SOURCE_LABEL) == source


def updated(current: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | None:
    """``UpdateHyperNode``: the stored object with the desired spec and the desired labels and annotations
    merged over its own; None when that changes nothing (Volcano writes it anyway)."""
    meta = dict(current.get("metadata") or {})
    want = desired.get("metadata") or {}
    labels = {**(meta.get("labels") or {}), **(want.get("labels") or {})}
    annotations = {**(meta.get("annotations") or {}), **(want.get("annotations") or {})}
    if (current.get("spec") == desired.get("spec") and labels == (meta.get("labels") or {})
            and annotations == (meta.get("annotations") or {})):
        return None
    meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    out = {k: v for k, v in current.items() if k != "status"}
    out["metadata"] = meta
    out["spec"] = desired.get("spec")
    return out


def plan_reconcile(source: str, discovered: Iterable[DiscoveredHyperNode],
                   hypernodes: Mapping[str, Mapping[str, Any]]) -> Plan:
    """``reconcileTopology``: stored HyperNodes labelled with ``source`` are brought to ``discovered``:
    the new created, the known updated, the rest deleted.  Others are not touched."""
    existing = {name: obj for name, obj in hypernodes.items() if managed_by(obj, source)}
    plan = Plan()
    wanted = sorted(discovered, key=lambda d: (d.tier, d.name))
    for d in wanted:
        desired = d.manifest(source)
        current = existing.pop(d.name, None)
        if current is None:
            plan.create.append(desired)
        else:
            change = updated(current, desired)
            if change is not None:
                plan.update.append(change)
    plan.delete = sorted(existing, key=lambda n: (-int((existing[n].get("spec") or {}).get("tier") or 0), n))
    return plan


__all__ = ["API_VERSION", "SOURCE_LABEL", "LABEL_SOURCE", "HARDWARE_SOURCES", "CONFIG_KEY", "DEFAULT_NAMESPACE",
           "DEFAULT_RELEASE", "NAMESPACE_ENV", "RELEASE_ENV", "DEFAULT_INTERVAL", "configmap_name",
           "DiscoveryConfigError", "DiscoverySource", "NetworkTopologyConfig", "parse_go_duration", "load_config",
           "LabelTopology", "parse_label_config", "DiscoveredHyperNode", "DiscoveryError", "random_suffix",
           "clean_type_name", "discover_from_labels", "Plan", "managed_by", "updated", "plan_reconcile"]
