"""What ``vcsched simulate`` prints: the contract's JSON/YAML document, or tables for a person.

Beyond the contract's keys: ``jobs``, ``nodeLocks``, ``events`` (the sessions' Pod and PodGroup
events, a repeat counted), ``podDisruptionBudgets`` (each PDB's status, as given or as the
disruption controller computes it) and ``resourceQuotas`` (each quota's ``hard`` and ``used``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml

from ..api.numa_info import NumaLedger, numa_view
from ..api.resource import Resource
from ..cache import Cache
from ..framework.topology import HyperNodeDecision
from ..framework.stats import QueueStats
from ..plugins.deviceshare import topology as device_topology
from .cluster import SimCluster
from .diagnosis import session_view, summary


def result(cluster: SimCluster, cache: Cache, cycles: int,
           queue_stats: Mapping[str, QueueStats] | None = None,
           diagnosis: Mapping[str, dict[str, Any]] | None = None,
           numa: NumaLedger | None = None,
           placements: Mapping[str, HyperNodeDecision] | None = None) -> dict[str, Any]:
    """The contract's document; ``queue_stats``: the queue plugin's view at the end of the last session;
    ``diagnosis``: why pending pods wait, with numbers (sim/diagnosis.py), by ``namespace/name``;
    ``numa``: the CPUs the numa-aware plugin gave pods (a node with a Numatopology shows ``numa``);
    ``placements``: each job's allocated HyperNode (a PodGroup shows its ``hypernode`` and ``tier``)."""
    pods = {}
    for key, pod in cluster.pods.items():
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        node = spec.get("nodeName") or None
        reason = None
        if node is None:
            cond = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
            if cond is not None:
                reason = cond.get("message") or cond.get("reason")
            elif spec.get("schedulerName") not in cluster.scheduler_names:
                reason = f"not scheduled by {'/'.join(cluster.scheduler_names)} (schedulerName {spec.get('schedulerName')})"
        pods[key] = {
            "node": node,
            "phase": status.get("phase") or "Pending",
            "annotations": dict((pod.get("metadata") or {}).get("annotations") or {}),
            "reason": reason,
        }
        if node is None and diagnosis and key in diagnosis:
            pods[key]["diagnosis"] = diagnosis[key]
        claim_names = {c.get("name"): f"{key.split('/')[0]}/{c['resourceClaimName']}"
                       for c in status.get("resourceClaimStatuses") or [] if c.get("resourceClaimName")}
        if claim_names:
            pods[key]["claims"] = claim_names
    tree = cache.hypernode_tree()
    top_tier = max((h.tier + 1 for h in tree.hypernodes.values() if h.exists), default=1)
    podgroups = {}
    for key, pg in cluster.podgroups.items():
        status = pg.get("status") or {}
        podgroups[key] = {
            "phase": status.get("phase") or "Pending",
            "running": status.get("running") or 0,
            "conditions": status.get("conditions") or [],
        }
        placed = (placements or {}).get(key)
        if placed is not None and placed.job:
            podgroups[key]["hypernode"] = placed.job
            podgroups[key]["tier"] = tree.tier_of(placed.job) or top_tier
    hypernodes = _hypernodes(cache)
    queues = {name: _queue(q, (queue_stats or {}).get(name)) for name, q in cluster.queues.items()}
    nodes = {}
    for name, info in cache.nodes.items():
        if not info.ready:
            continue
        nodes[name] = {
            "idle": info.idle.to_list(),
            "used": info.used.to_list(),
            "allocatable": info.allocatable.to_list(),
            "devices": [
                {"kind": kind, "id": u.id, "type": u.type, "health": u.health,
                 "memory_used": u.memory_used, "memory_total": u.memory_total, "cores_used": u.cores_used,
                 "slots_used": u.slots_used, "slots_total": u.slots_total, "pods": u.pods}
                for kind, d in info.devices.items() for u in session_view(info, d).describe()
            ],
        }
        _device_topology(info, pods, nodes[name])
        topo = cache.numatopologies.get(name)
        if topo is not None:
            ledger = numa or NumaLedger()
            nodes[name]["numa"] = numa_view(topo, ledger.free_sets(name, topo, refresh=False),
                                            ledger.nodes.get(name, {}))
    jobs = {}
    for key, job in cluster.jobs.items():
        status = job.get("status") or {}
        # pods: the Job's pods that exist, by phase (Volcano's status counts drop to 0 after every kill)
        counts = dict.fromkeys(("pending", "running", "succeeded", "failed", "unknown"), 0)
        uid = job["metadata"].get("uid")
        for pod in cluster.pods.values():
            if any(r.get("uid") == uid for r in pod["metadata"].get("ownerReferences") or []):
                phase = str((pod.get("status") or {}).get("phase") or "Pending").lower()
                counts[phase if phase in counts else "unknown"] += 1
        jobs[key] = {
            "phase": (status.get("state") or {}).get("phase") or "Pending",
            "retryCount": int(status.get("retryCount") or 0),
            "version": int(status.get("version") or 0),
            "minAvailable": int(status.get("minAvailable") or 0),
            "pods": counts,
        }
    pdbs = {key: dict(pdb.get("status") or {}) for key, pdb in sorted(cluster.pdbs.items())}
    quotas = {key: {"hard": dict((q.get("status") or {}).get("hard") or {}),
                    "used": dict((q.get("status") or {}).get("used") or {})}
              for key, q in sorted(cluster.resource_quotas.items())}
    return {
        "cycles": cycles,
        "events": [dict(e) for e in cluster.events],
        "jobs": jobs,
        "podDisruptionBudgets": pdbs,
        "resourceQuotas": quotas,
        "pods": pods,
        "evicted": list(cluster.evicted),
        "nodeLocks": [{"node": n, "key": k, "value": v} for n, k, v in cluster.node_locks],
        "podgroups": podgroups,
        "queues": queues,
        "nodes": nodes,
        "claims": cluster.dra.output(),
        **({"hypernodes": hypernodes} if hypernodes else {}),
    }


def _device_topology(info: Any, pods: dict[str, Any], node: dict[str, Any]) -> None:
    """Multi-card pods: each pod's cards and the domain they lie in (``pods.KEY.cards``); a node whose
    devices publish a topology shows it (``nodes.NAME.deviceTopology``).  plugins/deviceshare/topology.py."""
    for kind, d in info.devices.items():
        topo = getattr(d, "topology", None)
        if topo is not None:
            node.setdefault("deviceTopology", {})[kind] = device_topology.layout(topo)
        for key, held in device_topology.pod_cards(kind, d, session_view(info, d).describe()).items():
            if key in pods:
                pods[key].setdefault("cards", []).append(held)


def _hypernodes(cache: Cache) -> dict[str, Any]:
    """Each HyperNode's place in the tree and what its ready nodes hold and use."""
    tree = cache.hypernode_tree()
    out = {}
    for name, h in sorted(tree.hypernodes.items()):
        if not h.exists:
            continue
        allocatable, used = Resource(), Resource()
        nodes = sorted(n for n in h.nodes if n in cache.nodes and cache.nodes[n].ready)
        for n in nodes:
            allocatable.add(cache.nodes[n].allocatable)
            used.add(cache.nodes[n].used)
        out[name] = {"tier": h.tier, "parent": h.parent or None, "nodes": nodes,
                     "allocatable": allocatable.to_list(), "used": used.to_list()}
    return out


def _queue(q: Mapping[str, Any], stats: QueueStats | None) -> dict[str, Any]:
    """A queue's state, its place in the tree, its quota as written and its use: ``deserved`` is the
    queue plugin's (proportion's fair share, capacity's) when one ran, else ``spec.deserved``."""
    spec, status = q.get("spec") or {}, q.get("status") or {}
    return {
        "state": status.get("state") or "Open",
        "allocated": status.get("allocated") or {"cpu": "0", "memory": "0"},
        "parent": spec.get("parent") or None,
        "deserved": stats.deserved.to_list() if stats is not None else dict(spec.get("deserved") or {}),
        "capability": dict(spec.get("capability") or {}),
        "guarantee": dict((spec.get("guarantee") or {}).get("resource") or {}),
    }


def render(doc: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(doc, sort_keys=True, indent=2)
    if fmt == "yaml":
        return yaml.safe_dump(doc, sort_keys=True)
    return table(doc)


def _rows(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*header).rstrip()] + [fmt.format(*map(str, r)).rstrip() for r in rows]


def table(doc: dict[str, Any]) -> str:
    out = [f"vcsched simulate: {doc['cycles']} cycle(s)", ""]
    placed = [[k, p["node"], p["phase"]] for k, p in sorted(doc["pods"].items()) if p["node"]]
    pending = []
    for k, p in sorted(doc["pods"].items()):
        if p["node"]:
            continue
        pending.append([k, p["reason"] or ""])
        # the numbers behind the reason, one cause a line, under it
        pending += [["", "  " + line] for line in summary(p.get("diagnosis") or {})]
    out += [f"Placed pods ({len(placed)}):"] + (_rows(["POD", "NODE", "PHASE"], placed) if placed else ["  none"])
    n_pending = sum(1 for row in pending if row[0])
    out += ["", f"Pending pods ({n_pending}):"] + (_rows(["POD", "REASON"], pending) if pending else ["  none"])
    if doc["evicted"]:
        out += ["", "Evicted: " + ", ".join(doc["evicted"])]
    if doc.get("events"):
        out += ["", "Events:"] + [f"  {e['object']}: {e['type']} {e['reason']}"
                                  + (f" (x{e['count']})" if e["count"] > 1 else "") + f": {e['message']}"
                                  for e in doc["events"]]
    if doc.get("jobs"):
        js = [[k, j["phase"], j["retryCount"], "/".join(str(j["pods"][c]) for c in ("pending", "running",
                                                                                   "succeeded", "failed"))]
              for k, j in sorted(doc["jobs"].items())]
        out += ["", "Jobs:"] + _rows(["JOB", "PHASE", "RETRIES", "PENDING/RUNNING/SUCCEEDED/FAILED"], js)
    if any("hypernode" in g for g in doc["podgroups"].values()):
        pgs = [[k, g["phase"], g["running"], f"{g['hypernode']} (tier {g['tier']})" if "hypernode" in g else "-"]
               for k, g in sorted(doc["podgroups"].items())]
        out += ["", "PodGroups:"] + _rows(["PODGROUP", "PHASE", "RUNNING", "HYPERNODE"], pgs)
    else:
        pgs = [[k, g["phase"], g["running"]] for k, g in sorted(doc["podgroups"].items())]
        out += ["", "PodGroups:"] + _rows(["PODGROUP", "PHASE", "RUNNING"], pgs)
    if doc.get("hypernodes"):
        hs = [["  " * depth + k, h["tier"], len(h["nodes"]), f"{h['used'].get('cpu', '0')}/{h['allocatable'].get('cpu', '0')}",
               f"{h['used'].get('pods', '0')}/{h['allocatable'].get('pods', '0')}"]
              for depth, k, h in _queue_tree(doc["hypernodes"])]
        out += ["", "HyperNodes (used/allocatable):"] + _rows(["HYPERNODE", "TIER", "NODES", "CPU", "PODS"], hs)
    qs = [["  " * depth + k, q["state"], _res(q["allocated"]), _res(q["deserved"]), _res(q["capability"]),
           _res(q["guarantee"])] for depth, k, q in _queue_tree(doc["queues"])]
    out += ["", "Queues:"] + _rows(["QUEUE", "STATE", "ALLOCATED", "DESERVED", "CAPABILITY", "GUARANTEE"], qs)
    ns = []
    for name, n in doc["nodes"].items():
        alloc, used = n["allocatable"], n["used"]
        ns.append([name, f"{used.get('cpu', '0')}/{alloc.get('cpu', '0')}",
                   f"{used.get('memory', '0')}/{alloc.get('memory', '0')}",
                   f"{used.get('pods', '0')}/{alloc.get('pods', '0')}"])
    out += ["", "Nodes (used/allocatable):"] + _rows(["NODE", "CPU", "MEMORY", "PODS"], ns)
    multi = [[k, p["node"], c["kind"], ",".join(c["cards"]), c["domain"] or "-"]
             for k, p in sorted(doc["pods"].items()) for c in p.get("cards") or ()]
    if multi:
        out += ["", "Multi-card pods:"] + _rows(["POD", "NODE", "KIND", "CARDS", "DOMAIN"], multi)
    gpus = [[name, d["kind"], d["id"], d["type"], f"{d['memory_used']}/{d['memory_total']}", d["cores_used"],
             f"{d['slots_used']}/{d['slots_total']}", ", ".join(d["pods"])]
            for name, n in doc["nodes"].items() for d in n["devices"]]
    if gpus:
        out += ["", "Devices (used/total):"] + _rows(
            ["NODE", "KIND", "DEVICE", "TYPE", "MEMORY MiB", "CORES %", "SLOTS", "PODS"], gpus)
    if doc.get("claims"):
        cs = [[k, ", ".join(f"{d['request']}: {d['driver']}/{d['pool']}/{d['device']}" for d in c["devices"])
               if c["allocated"] else "-", ", ".join(c["reservedFor"]) or "-"] for k, c in doc["claims"].items()]
        out += ["", "ResourceClaims:"] + _rows(["CLAIM", "DEVICES", "RESERVED FOR"], cs)
    return "\n".join(out) + "\n"


def _res(r: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(r.items())) or "-"


def _queue_tree(queues: Mapping[str, Mapping[str, Any]]) -> list[tuple[int, str, Mapping[str, Any]]]:
    """The queues (or HyperNodes) depth first from the top, children by name; one whose parent is
    missing, or on a cycle, is listed at the top level after the tree."""
    children: dict[str | None, list[str]] = {}
    for name, q in queues.items():
        parent = q.get("parent")
        children.setdefault(parent if parent in queues and parent != name else None, []).append(name)
    out: list[tuple[int, str, Mapping[str, Any]]] = []
    seen: set[str] = set()

    def walk(name: str, depth: int) -> None:
        seen.add(name)
        out.append((depth, name, queues[name]))
        for child in sorted(children.get(name, ())):
            if child not in seen:
                walk(child, depth + 1)

    for name in sorted(children.get(None, ())):
        walk(name, 0)
    for name in sorted(queues):
        if name not in seen:
            walk(name, 0)
    return out
