"""MindCluster device-info ConfigMaps for the Ascend 310P vNPU kind (spec/devices.md §2.2, §4.4).

Volcano files: third_party/mindcluster/common/k8s/{cmmgr,configmap,type}.go (the informer and its
cache, ``cmManager``), common/util/util.go (self-maintained card list) and
plugins/deviceshare/devices/ascend/310p/vnpu/init_policy.go (``syncAnnotation``,
``updateNPUNodeDeviceInfos``: how that data merges with the node's annotations).

Two sources, chosen by ``init-params.useClusterInfoManager``:

- ClusterD (true, the default): ConfigMaps in ``mindx-dl`` labelled ``mx-consumer-volcano=true``.
  ``cluster-info-device-*`` has one key, the ConfigMap's own name, whose JSON maps
  ``mindx-dl-deviceinfo-<node>`` → ``{DeviceList, UpdateTime, SuperPodID}``;
  ``cluster-info-node-cm`` (key: its name) maps ``mindx-dl-nodeinfo-<node>`` → NodeD info.
- Device plugin and NodeD (false): ConfigMaps labelled ``mx-consumer-cim=true``:
  ``kube-system/mindx-dl-deviceinfo-<node>`` key ``DeviceInfoCfg`` = ``{DeviceInfo:{DeviceList,
  UpdateTime}, CheckCode}`` and ``mindx-dl/mindx-dl-nodeinfo-<node>`` key ``NodeInfo`` =
  ``{NodeInfo:{FaultDevList, NodeStatus}, CheckCode}``.

:class:`MindClusterInfo` is ``cmManager``: it is fed ConfigMap events (add/update, delete) and keeps
what Volcano's informer handlers keep, with their quirks: a ConfigMap whose JSON does not decode
is ignored with a log and the node keeps what an earlier version said; an update of
``cluster-info-device-*`` that no longer lists a node does not forget that node (only deleting the
ConfigMap does); ``cluster-info-node-cm`` replaces the whole NodeD table.  ``CheckCode`` is decoded
and never verified, as in Volcano.  JSON is decoded as Go's ``encoding/json`` decodes into these
structs: field names match case-insensitively, unknown fields are ignored, and a value of the wrong
type (a string ``UpdateTime``, a fractional number) fails the whole ConfigMap.

:func:`merge_annotations` is the per-session step (``initNodeFromSsn``) that turns one node's
annotations plus its device info and NodeD status into the map the 310P node model reads.
Nothing here raises: bad data becomes a log line naming the ConfigMap and key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

log = structlog.get_logger("vcsched.deviceshare")

HW_PREFIX = "huawei.com/"
CLUSTERD_NAMESPACE = "mindx-dl"  # util.MindXDlNameSpace
DEVICE_INFO_NAMESPACE = "kube-system"  # util.DevInfoNameSpace
CLUSTERD_LABEL = "mx-consumer-volcano"  # util.CmConsumer
CIM_LABEL = "mx-consumer-cim"  # util.NormalCmConsumer
LABEL_VALUE = "true"
CLUSTER_DEVICE_PREFIX = "cluster-info-device-"
CLUSTER_NODE_CM = "cluster-info-node-cm"
DEVICE_INFO_PREFIX = "mindx-dl-deviceinfo-"
NODE_INFO_PREFIX = "mindx-dl-nodeinfo-"
DEVICE_INFO_KEY = "DeviceInfoCfg"
NODE_INFO_KEY = "NodeInfo"
BASE_DEVICE_INFOS = "baseDeviceInfos"
NODED_STATUS_KEY = "nodedNodeHealtyStatus"  # sic, Volcano's spelling
NODE_HEALTHY = "Healthy"
PRE_SEPARATE = "PreSeparate"
FORCE_UPDATE_INTERVAL = 10  # vnpu.DeviceInfoForceUpdateInterval (seconds)
_INT32 = (-(2 ** 31), 2 ** 31 - 1)
_INT64 = (-(2 ** 63), 2 ** 63 - 1)
_NAMESPACE_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_POD_NAME_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")


def use_cluster_info_manager(params: Mapping[str, Any]) -> bool:
    """``init-params.useClusterInfoManager``: absent means true, else only exactly "true"; a non-string
    value anywhere makes Volcano's YAML round trip fail and every parameter take its default."""
    if any(not isinstance(v, str) for v in params.values()):
        return True
    return params.get("useClusterInfoManager", "true") == "true"


def watched_configmaps(cluster_d: bool) -> tuple[tuple[str, str], ...]:
    """(namespace, label selector) of the ConfigMaps to watch.  Volcano's device-plugin informer lists
    every namespace by label and keeps kube-system and mindx-dl ConfigMaps; the two namespaced watches
    see the same ones with less access."""
    if cluster_d:
        return ((CLUSTERD_NAMESPACE, f"{CLUSTERD_LABEL}={LABEL_VALUE}"),)
    return ((DEVICE_INFO_NAMESPACE, f"{CIM_LABEL}={LABEL_VALUE}"), (CLUSTERD_NAMESPACE, f"{CIM_LABEL}={LABEL_VALUE}"))


@dataclass(slots=True, frozen=True)
class DeviceInfo:
    """``NodeDeviceInfoWithID`` as the cache keeps it: the device list in the JSON's order."""

    device_list: tuple[tuple[str, str], ...]
    update_time: int
    source: str  # the ConfigMap it came from, for logs


class MindClusterInfo:
    """``cmManager``: device info and NodeD status per node, per source, fed by ConfigMap events.

    The tables are replaced, never changed in place, so a session reading them on another thread
    sees one version or the next (Volcano locks per node read; the effect is the same).
    """

    __slots__ = ("devices", "noded", "errors", "_warned")

    def __init__(self) -> None:
        # index 0: ClusterD (useClusterInfoManager true), 1: device plugin / NodeD ConfigMaps
        self.devices: tuple[dict[str, DeviceInfo], dict[str, DeviceInfo]] = ({}, {})
        self.noded: tuple[dict[str, str], dict[str, str]] = ({}, {})
        self.errors = 0  # ConfigMap versions ignored for bad data (tests and logs)
        self._warned: set[tuple[str, str]] = set()

    @classmethod
    def from_config_maps(cls, config_maps: Mapping[str, Mapping[str, Any]]) -> "MindClusterInfo":
        """The store as an informer would fill it from these ConfigMaps (simulate: all added at once)."""
        info = cls()
        for cm in config_maps.values():
            info.upsert(cm, warn_unlabelled=True)
        return info

    def warn_other_source(self, cluster_d: bool) -> None:
        """simulate: ConfigMaps of the source ``useClusterInfoManager`` does not select are not read; say so."""
        other = 1 if cluster_d else 0
        if (self.devices[other] or self.noded[other]) and not (self.devices[1 - other] or self.noded[1 - other]):
            log.warning("MindCluster ConfigMaps of the other source are not read",
                        useClusterInfoManager=str(cluster_d).lower(),
                        read="mindx-dl cluster-info-* (mx-consumer-volcano)" if cluster_d else
                        "kube-system/mindx-dl-deviceinfo-*, mindx-dl/mindx-dl-nodeinfo-* (mx-consumer-cim)")

    # -- queries (session open) -------------------------------------------------------------------

    def device_info(self, node: str, cluster_d: bool) -> DeviceInfo | None:
        return self.devices[0 if cluster_d else 1].get(node)

    def noded_status(self, node: str, cluster_d: bool) -> str:
        """``NodeStatus`` as NodeD reported it, "" when there is none."""
        return self.noded[0 if cluster_d else 1].get(node, "")

    def warn_once(self, node: str, note: str) -> None:
        """A problem found at session open, logged the first time only (sessions run every second)."""
        if (node, note) not in self._warned:
            self._warned.add((node, note))
            log.warning(note, node=node)

    # -- events -----------------------------------------------------------------------------------

    def upsert(self, cm: Mapping[str, Any], warn_unlabelled: bool = False) -> None:
        self._event(cm, delete=False, warn_unlabelled=warn_unlabelled)

    def delete(self, cm: Mapping[str, Any]) -> None:
        self._event(cm, delete=True, warn_unlabelled=False)

    def _event(self, cm: Mapping[str, Any], delete: bool, warn_unlabelled: bool) -> None:
        meta = cm.get("metadata") or {}
        ns, name = meta.get("namespace") or "", meta.get("name") or ""
        labels = meta.get("labels") or {}
        data = cm.get("data") or {}
        where = f"{ns}/{name}"
        # the label decides what an informer sees; a delete counts whatever the labels (a ConfigMap that
        # loses its label leaves a label-selected watch as a DELETED event carrying the new labels)
        if ns == CLUSTERD_NAMESPACE and (name.startswith(CLUSTER_DEVICE_PREFIX) or name == CLUSTER_NODE_CM):
            if not delete and labels.get(CLUSTERD_LABEL) != LABEL_VALUE:
                if warn_unlabelled:
                    log.warning("MindCluster ConfigMap without its label is not read (Volcano's informer "
                                "selects by label)", configmap=where, label=f"{CLUSTERD_LABEL}={LABEL_VALUE}")
                return
            if name == CLUSTER_NODE_CM:
                self._cluster_nodes(where, name, data, delete)
            else:
                self._cluster_devices(where, name, data, delete)
            return
        device_cm = ns == DEVICE_INFO_NAMESPACE and name.startswith(DEVICE_INFO_PREFIX)
        node_cm = ns == CLUSTERD_NAMESPACE and name.startswith(NODE_INFO_PREFIX)
        if not (device_cm or node_cm):
            return
        if not delete and labels.get(CIM_LABEL) != LABEL_VALUE:
            if warn_unlabelled:
                log.warning("MindCluster ConfigMap without its label is not read (Volcano's informer "
                            "selects by label)", configmap=where, label=f"{CIM_LABEL}={LABEL_VALUE}")
            return
        if device_cm:
            self._node_device(where, name[len(DEVICE_INFO_PREFIX):], data, delete)
        else:
            self._node_noded(where, name[len(NODE_INFO_PREFIX):], data, delete)

    def _bad(self, where: str, key: str, error: str) -> None:
        self.errors += 1
        log.error("MindCluster ConfigMap ignored: its data does not decode; what an earlier version said "
                  "stays in force", configmap=where, key=key, error=error)

    def _decode(self, where: str, data: Mapping[str, Any], key: str, decode) -> tuple[bool, Any]:  # type: ignore[no-untyped-def]
        """``getDataFromCM``: (ok, value); an empty value decodes to nothing (None)."""
        raw = data.get(key)
        if raw is None:
            self._bad(where, key, f"configmap<{where.split('/', 1)[1]}> has no {key}")
            return False, None
        if raw == "":
            return True, None
        try:
            return True, decode(json.loads(raw, parse_constant=_no_constant), key)
        except (ValueError, RecursionError, _TypeError) as e:
            self._bad(where, key, str(e))
            return False, None

    def _cluster_devices(self, where: str, name: str, data: Mapping[str, Any], delete: bool) -> None:
        """``dealClusterDeviceInfo``: key = the ConfigMap's name; delete drops the nodes it lists."""
        ok, table = self._decode(where, data, name, lambda v, p: _map_of(v, p, _device_info_with_id))
        if not ok:
            return
        devices = dict(self.devices[0])
        for cm_name, (device_list, update_time) in (table or {}).items():
            node = cm_name[len(DEVICE_INFO_PREFIX):] if cm_name.startswith(DEVICE_INFO_PREFIX) else cm_name
            if delete:
                devices.pop(node, None)
            else:
                devices[node] = DeviceInfo(device_list, update_time, f"{where}[{name}][{cm_name}]")
        self.devices = (devices, self.devices[1])

    def _cluster_nodes(self, where: str, name: str, data: Mapping[str, Any], delete: bool) -> None:
        """``dealClusterNodeInfo``: the whole table is replaced (emptied on delete)."""
        ok, table = self._decode(where, data, name, lambda v, p: _map_of(v, p, _noded_info))
        if not ok:
            return
        nodes: dict[str, str] = {}
        if not delete:
            for cm_name, status in (table or {}).items():
                node = cm_name[len(NODE_INFO_PREFIX):] if cm_name.startswith(NODE_INFO_PREFIX) else cm_name
                nodes[node] = status
        self.noded = (nodes, self.noded[1])

    def _node_device(self, where: str, node: str, data: Mapping[str, Any], delete: bool) -> None:
        """``createOrUpdateDeviceInfo``; a delete forgets the node whatever the data says."""
        devices = dict(self.devices[1])
        if delete:
            devices.pop(node, None)
        else:
            ok, value = self._decode(where, data, DEVICE_INFO_KEY, _device_info_with_dev_plugin)
            if not ok:
                return
            if value is None:
                # Volcano dereferences a nil pointer here (empty or null DeviceInfoCfg) and its informer
                # handler panics; vcsched ignores the version instead
                self._bad(where, DEVICE_INFO_KEY, "empty or null")
                return
            devices[node] = DeviceInfo(value[0], value[1], f"{where}[{DEVICE_INFO_KEY}]")
        self.devices = (self.devices[0], devices)

    def _node_noded(self, where: str, node: str, data: Mapping[str, Any], delete: bool) -> None:
        """``createOrUpdateNodeInfo``: an empty ``NodeInfo`` means no fault (status "")."""
        nodes = dict(self.noded[1])
        if delete:
            nodes.pop(node, None)
        else:
            ok, value = self._decode(where, data, NODE_INFO_KEY, _noded_info_with_check_code)
            if not ok:
                return
            nodes[node] = value or ""
        self.noded = (self.noded[0], nodes)


# -- Go encoding/json, for these structs ---------------------------------------------------------------


class _TypeError(Exception):
    pass


def _no_constant(name: str) -> Any:
    raise ValueError(f"invalid character {name[0]!r} looking for beginning of value")  # Go has no NaN/Infinity


def _field(obj: Mapping[str, Any], name: str) -> Any:
    """Go's field match: every key equal to the field name up to case sets the field, in order, so the
    last one wins (Python's decoder already kept the last of exact duplicates)."""
    low = name.lower()
    found = None
    for k, v in obj.items():
        if k.lower() == low:
            found = v
    return found


def _object(v: Any, path: str) -> Mapping[str, Any] | None:
    if v is None:
        return None
    if not isinstance(v, dict):
        raise _TypeError(f"json: cannot unmarshal {_go_type(v)} into {path} (an object)")
    return v


def _int(v: Any, path: str, bounds: tuple[int, int]) -> int:
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, int) or not bounds[0] <= v <= bounds[1]:
        raise _TypeError(f"json: cannot unmarshal {_go_type(v)} {json.dumps(v)} into {path} (an integer)")
    return v


def _str(v: Any, path: str) -> str:
    if v is None:
        return ""
    if not isinstance(v, str):
        raise _TypeError(f"json: cannot unmarshal {_go_type(v)} into {path} (a string)")
    return v


def _go_type(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _map_of(v: Any, path: str, decode) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    obj = _object(v, path)
    return {} if obj is None else {k: decode(x, f"{path}[{k}]") for k, x in obj.items()}


def _device_list(v: Any, path: str) -> tuple[tuple[str, str], ...]:
    obj = _object(v, path)
    return () if obj is None else tuple((k, _str(x, f"{path}[{k}]")) for k, x in obj.items())


def _device_info(v: Any, path: str) -> tuple[tuple[tuple[str, str], ...], int]:
    """``NodeDeviceInfo``: (DeviceList, UpdateTime)."""
    obj = _object(v, path) or {}
    return (_device_list(_field(obj, "DeviceList"), f"{path}.DeviceList"),
            _int(_field(obj, "UpdateTime"), f"{path}.UpdateTime", _INT64))


def _device_info_with_id(v: Any, path: str) -> tuple[tuple[tuple[str, str], ...], int]:
    """``NodeDeviceInfoWithID``: NodeDeviceInfo embedded, plus CacheUpdateTime and SuperPodID."""
    obj = _object(v, path) or {}
    _int(_field(obj, "CacheUpdateTime"), f"{path}.CacheUpdateTime", _INT64)
    _int(_field(obj, "SuperPodID"), f"{path}.SuperPodID", _INT32)
    return _device_info(obj, path)


def _device_info_with_dev_plugin(v: Any, path: str) -> tuple[tuple[tuple[str, str], ...], int] | None:
    """``*NodeDeviceInfoWithDevPlugin``: None for JSON null."""
    obj = _object(v, path)
    if obj is None:
        return None
    _str(_field(obj, "CheckCode"), f"{path}.CheckCode")
    _int(_field(obj, "SuperPodID"), f"{path}.SuperPodID", _INT32)
    _int(_field(obj, "ServerIndex"), f"{path}.ServerIndex", _INT32)
    return _device_info(_field(obj, "DeviceInfo"), f"{path}.DeviceInfo")


def _noded_info(v: Any, path: str) -> str:
    """``NodeDNodeInfo``: the NodeStatus (FaultDevList is decoded for its types, then unused)."""
    obj = _object(v, path) or {}
    faults = _field(obj, "FaultDevList")
    if faults is not None:
        if not isinstance(faults, list):
            raise _TypeError(f"json: cannot unmarshal {_go_type(faults)} into {path}.FaultDevList (an array)")
        for i, f in enumerate(faults):
            fp = f"{path}.FaultDevList[{i}]"
            fo = _object(f, fp) or {}
            _str(_field(fo, "DeviceType"), f"{fp}.DeviceType")
            _int(_field(fo, "DeviceId"), f"{fp}.DeviceId", _INT64)
            _str(_field(fo, "FaultLevel"), f"{fp}.FaultLevel")
            codes = _field(fo, "FaultCode")
            if codes is not None:
                if not isinstance(codes, list):
                    raise _TypeError(f"json: cannot unmarshal {_go_type(codes)} into {fp}.FaultCode (an array)")
                for j, c in enumerate(codes):
                    _str(c, f"{fp}.FaultCode[{j}]")
    return _str(_field(obj, "NodeStatus"), f"{path}.NodeStatus")


def _noded_info_with_check_code(v: Any, path: str) -> str:
    obj = _object(v, path) or {}
    _str(_field(obj, "CheckCode"), f"{path}.CheckCode")
    return _noded_info(_field(obj, "NodeInfo"), f"{path}.NodeInfo")


# -- session open: the node's merged annotation map --------------------------------------------------------


def device_type(device_list: Iterable[tuple[str, str]]) -> str:
    """``GetDeviceType``: the first key naming a kind.  Go visits its map in random order; with one
    kind per node (the normal case) the order does not matter, vcsched takes the JSON order."""
    for key, _ in device_list:
        if "Ascend910" in key:
            return "Ascend910"
        if "Ascend310P" in key:
            return "Ascend310P"
        if "Ascend310" in key:
            return "Ascend310"
    return "Ascend910"


def _split(value: str) -> list[str]:
    return value.split(",") if value else []


def _pod_used_devices(pods: Iterable[Mapping[str, Any]], dev_type: str) -> list[str]:
    """``GetActivePodUsedDevFromNode``: ``huawei.com/<type>`` of the node's pods not yet finished."""
    key = HW_PREFIX + dev_type
    used: list[str] = []
    for pod in pods:
        if ((pod.get("status") or {}).get("phase")) in ("Failed", "Succeeded"):
            continue
        meta = pod.get("metadata") or {}
        name, ns = meta.get("name") or "", meta.get("namespace") or ""
        if len(name) > 253 or not _POD_NAME_RE.match(name) or len(ns) > 63 or not _NAMESPACE_RE.match(ns):
            continue
        value = (meta.get("annotations") or {}).get(key)
        if not value or len(value) > 1024 * 1024:
            continue
        items = value.split(",")
        if len(items) > 100:  # MaxDevicesNum
            continue
        used.extend(items)
    return used


def _base_devices(annotations: Mapping[str, str], notes: list[str] | None) -> list[str] | None:
    """``GetNodeDevListFromAnno``: the device names in ``baseDeviceInfos`` that are not vNPUs."""
    raw = annotations.get(BASE_DEVICE_INFOS)
    if raw is None:
        if notes is not None:
            notes.append(f"self-maintain-available-card: node annotation {BASE_DEVICE_INFOS} absent; "
                         "the device info's available list is not used")
        return None
    try:
        table = json.loads(raw)
        if not isinstance(table, dict) and table is not None:
            raise ValueError("not a JSON object")
    except (ValueError, RecursionError) as e:
        if notes is not None:
            notes.append(f"self-maintain-available-card: node annotation {BASE_DEVICE_INFOS} does not decode "
                         f"({e}); the device info's available list is not used")
        return None
    return [name for name in (table or {}) if len(name.split("-")) <= 2]


def session_device_list(annotations: Mapping[str, str], pods: Iterable[Mapping[str, Any]], info: DeviceInfo | None,
                        self_maintain: bool, notes: list[str] | None = None) -> tuple[list[tuple[str, str]], bool]:
    """``initNodeDeviceInfoByCmMgr``: (device list, fresh).  With ``self-maintain-available-card`` the
    available list becomes ``baseDeviceInfos`` devices minus those the node's active pods hold, minus
    the ``-Unhealthy`` and ``-Recovering`` lists, sorted; it then counts as just updated (Volcano sets
    UpdateTime to now).  When ``baseDeviceInfos`` is missing or bad Volcano returns what it copied so
    far (in Go's random map order); vcsched returns the entries before the available key."""
    if info is None:
        return [], False
    dl = info.device_list
    dev_type = device_type(dl)
    avail_key = HW_PREFIX + dev_type
    values = dict(dl)
    out: list[tuple[str, str]] = []
    fresh = False
    for key, value in dl:
        if key == avail_key and self_maintain:
            base = _base_devices(annotations, notes)
            if base is None:
                return out, False
            drop = set(_pod_used_devices(pods, dev_type))
            drop.update(_split(values.get(avail_key + "-Unhealthy", "")))
            drop.update(_split(values.get(avail_key + "-Recovering", "")))
            out.append((key, ",".join(sorted(set(base) - drop))))
            fresh = True
        else:
            out.append((key, value))
    return out, fresh


def merge_annotations(annotations: Mapping[str, str], idle: Mapping[str, float],
                      pods: Iterable[Mapping[str, Any]], info: DeviceInfo | None, noded_status: str,
                      self_maintain: bool, notes: list[str] | None = None) -> dict[str, str]:
    """The annotation map the 310P node model reads (``syncAnnotation`` then ``updateNPUNodeDeviceInfos``).

    Volcano's device object is new in every session (the snapshot rebuilds it), so "the last
    session's device info" is empty and ``DevInfoUpdateTime`` is 0: device info with an UpdateTime
    > 0 overrides the node's annotations key by key; with UpdateTime ≤ 0 it is ignored.  A key with
    a ``-`` (``huawei.com/Ascend310P-Unhealthy``) always takes the device info's value; the available
    list does too unless UpdateTime ≤ 10 (then ``getRealHealthyDeviceList`` keeps the chips both
    lists name when the node's idle count of that resource matches the annotation's list).
    ``idle`` is in Volcano's milli-units per resource name; problems are appended to ``notes``.
    """
    merged = dict(annotations)
    merged[NODED_STATUS_KEY] = noded_status or NODE_HEALTHY
    device_list, fresh = session_device_list(annotations, pods, info, self_maintain, notes)
    update_time = FORCE_UPDATE_INTERVAL + 1 if fresh else (info.update_time if info is not None else 0)
    if update_time <= 0:
        return merged
    for key, value in device_list:
        if len(key.split("-")) > 1 or update_time > FORCE_UPDATE_INTERVAL:
            merged[key] = value
        else:
            merged[key] = _real_healthy(idle, key, merged.get(key, ""), value)
    return merged


def _real_healthy(idle: Mapping[str, float], key: str, old: str, new: str) -> str:
    """``getRealHealthyDeviceList``."""
    if not old or not new:
        return new
    new_list, old_list = new.split(","), old.split(",")
    n = int(idle.get(key, 0.0) / 1000)
    if n != len(old_list) or n == len(new_list):
        return new
    olds = set(old_list)
    return ",".join(d for d in new_list if d in olds)
