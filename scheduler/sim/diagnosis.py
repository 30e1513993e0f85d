"""Why a pod is pending, with numbers: the last session's per-node verdicts, and for each resource a
node was short of, what the pod asks and what the node has free now.

Volcano's ``reason`` text stays as it is (tools parse it); the diagnosis sits beside it:

    "diagnosis": {
      "nodes": {"n1": [{"reason": "Insufficient cpu",
                        "short": [{"resource": "cpu", "asked": "4", "free": "1500m"},
                                  {"resource": "memory", "asked": "8Gi", "free": "2Gi"}]}]},
      "causes": [{"reason": "Insufficient cpu", "nodes": 2, "resource": "cpu", "asked": "4",
                  "mostFree": "1500m", "on": "n1"}]
    }

``nodes``: every node that refused the pod, with each reason; a resource shortfall lists every
dimension the node is short of with its numbers (Volcano's reason names the first only), and a node
refused for its devices lists its cards (free memory, cores used, free slots) beside what the pod
asks of extended resources.  ``causes``: the reasons counted over the nodes, a shortfall with the
most any node has free and where.

A pod no node was tried for (its group not admitted, or skipped for its queue's share) gets
``group`` (phase, minMember), ``queue`` (what the queue plugin saw allocated and deserved, and what
the group asks) and ``admission`` (what the plugins said when they kept the group out).  A gang
placed in part and given back says how many members fit and where (``gang``).  A node that refused the
pod's ResourceClaims lists, per request, the DeviceClass, the selectors, and how many devices the node
has, of the class, matching the selectors and free, beside how many are needed (``claims``).
"""

from __future__ import annotations

from typing import Any

from ..api.dra import pod_claim_refs
from ..api.dra_explain import allocated_state, explain_claims
from ..api.dra_explain import summary_line as claims_summary_line
from ..api.quantity import format_bytes, format_milli
from ..api.resource import MEMORY, PODS, Resource
from ..api.types import StatusCode, TaskStatus
from ..cache import Cache
from ..framework.effects import Event
from ..framework.session import Session
from ..framework.topology import CLUSTER_TOP

INSUFFICIENT = "Insufficient "
# the DynamicResources filter's refusals (plugins/dynamicresources.py)
DRA_REASONS = frozenset({"cannot allocate all claims", "resourceclaim not available on the node"})


def _amount(name: str, value: float) -> str:
    if name == MEMORY:
        return format_bytes(value)
    if name == PODS:
        return str(int(round(value)))
    return format_milli(value)  # cpu and scalars are kept in milli-units


def diagnoses(ssn: Session | None, cache: Cache) -> dict[str, dict[str, Any]]:
    """``namespace/name`` → diagnosis, for the pending pods of the last session: the node reasons it
    found, or, for a pod no node was tried for, its group's admission (phase, what the queue holds)."""
    if ssn is None:
        return {}
    out: dict[str, dict[str, Any]] = {}
    refusals = _admission_refusals(ssn)
    for job in ssn.jobs.values():
        for uid, fe in job.nodes_fit_errors.items():
            task = job.tasks.get(uid)
            if task is None or not fe.statuses:
                continue
            out[f"{task.namespace}/{task.name}"] = _diagnose(task.init_resreq, fe.statuses, fe.task_name, cache,
                                                             _extended_limits(task.pod))
            _add_claims(out[f"{task.namespace}/{task.name}"], task, fe.statuses, cache)
        pg = job.podgroup
        if pg is None:
            continue
        queue = _queue_view(ssn, job.queue, pg)
        gang = _gang_view(job)
        topology = _topology_view(ssn, job)
        for task in job.tasks.values():
            key = f"{task.namespace}/{task.name}"
            if topology is not None and not task.node_name:
                out.setdefault(key, {})["topology"] = topology
            if (key in out and set(out[key]) != {"topology"}) or task.node_name:
                continue
            d: dict[str, Any] = {"group": {"name": f"{pg.namespace}/{pg.name}", "phase": pg.phase,
                                           "minMember": pg.min_member}, "queue": queue}
            said = refusals.get((pg.namespace, pg.name))
            if said:
                d["admission"] = said
            if gang is not None:
                d["gang"] = gang
            if topology is not None:
                d["topology"] = topology
            out[key] = d
    return out


def _topology_view(ssn: Session, job: Any) -> dict[str, Any] | None:
    """For a job with a hard network topology: the highest tier it may span, what it asks
    (minResources), and what the HyperNodes within that tier have free, the roomiest first."""
    tier = job.hard_tier()
    if tier is None or not job.tasks_in(TaskStatus.Pending):
        return None
    topo = ssn.topology
    rooms = []
    for name, h in topo.hypernodes.items():
        if h.tier > tier or name == CLUSTER_TOP:
            continue
        free = Resource()
        for n in h.nodes:
            free.add(n.future_idle())
        rooms.append((-free.milli_cpu, name, h.tier, free))
    rooms.sort()
    view: dict[str, Any] = {"highestTierAllowed": tier, "asks": job.min_resources().to_list(),
                            "hypernodes": [{"name": name, "tier": t, "free": free.to_list()}
                                           for _, name, t, free in rooms[:5]]}
    if job.allocated_hypernode:
        view["allocatedHyperNode"] = job.allocated_hypernode
    return view


def _admission_refusals(ssn: Session) -> dict[tuple[str, str], list[str]]:
    """What the plugins said when they kept a PodGroup out this session (their Unschedulable events
    other than the gang's own summary), by PodGroup."""
    out: dict[tuple[str, str], list[str]] = {}
    for e in ssn.effects:
        if isinstance(e, Event) and e.kind == "PodGroup" and e.reason == "Unschedulable" \
                and "tasks in gang unschedulable" not in e.message:
            said = out.setdefault((e.namespace, e.name), [])
            if e.message not in said:
                said.append(e.message)
    return out


def _gang_view(job: Any) -> dict[str, Any] | None:
    """For a gang the session placed in part and gave back: how many members fit, and where (the
    placements of its discarded statement), beside the minMember it needs."""
    placed: dict[str, str] = {}
    for t in job.tasks.values():
        ctx = t.last_transaction
        if ctx is not None and ctx.status in (TaskStatus.Allocated, TaskStatus.Pipelined) and ctx.node_name:
            placed[f"{t.namespace}/{t.name}"] = ctx.node_name
    if not placed:
        return None
    ready = job.ready_task_num()
    return {"fit": len(placed), "alreadyRunning": ready, "needed": job.min_available,
            "placements": dict(sorted(placed.items()))}


def _queue_view(ssn: Session, name: str, pg: Any) -> dict[str, Any]:
    """The queue's numbers as its plugin saw them at the end of the session, and what the group asks."""
    view: dict[str, Any] = {"name": name}
    stats = ssn.stats.queues.get(name)
    if stats is not None:
        view.update(allocated=stats.allocated.to_list(), deserved=stats.deserved.to_list())
    if pg.min_resources is not None:
        view["groupAsks"] = pg.min_resources.to_list()
    return view


def _diagnose(asked: Resource, statuses: dict, task_name: str, cache: Cache,
              pod_asks: dict[str, str]) -> dict[str, Any]:
    nodes: dict[str, list[dict[str, Any]]] = {}
    causes: dict[str, dict[str, Any]] = {}
    for node_name in sorted(statuses):
        node = cache.nodes.get(node_name)
        free = node.future_idle() if node is not None else None
        entries = []
        for status in statuses[node_name]:
            reason = status.text(task_name)
            entry: dict[str, str] = {"reason": reason}
            cause = causes.setdefault(reason, {"reason": reason, "nodes": 0})
            cause["nodes"] += 1
            if reason.startswith(INSUFFICIENT) and free is not None:
                # Volcano names the first short dimension; the numbers show every one
                entry["short"] = [{"resource": r, "asked": _amount(r, asked.get(r)), "free": _amount(r, max(free.get(r), 0.0))}
                                  for r in asked.resource_names() if asked.get(r) > free.get(r)]
                name = reason[len(INSUFFICIENT):]
                have = max(free.get(name), 0.0)
                if "best" not in cause or have > cause["best"]:
                    cause.update(resource=name, asked=_amount(name, asked.get(name)), mostFree=_amount(name, have),
                                 on=node_name, best=have)
            entries.append(entry)
        cards = _cards(node, pod_asks) if node is not None and node.devices and pod_asks else None
        if cards and any(not e["reason"].startswith(INSUFFICIENT) for e in entries):
            entries.append({"reason": "devices", "asks": pod_asks, "cards": cards})
        nodes[node_name] = entries
    for cause in causes.values():
        cause.pop("best", None)
    ordered = sorted(causes.values(), key=lambda c: (-c["nodes"], c["reason"]))
    return {"nodes": nodes, "causes": ordered}


def summary(diagnosis: dict[str, Any]) -> list[str]:
    """One line per cause for a person: ``2 nodes: Insufficient cpu (4 asked, at most 1500m free on n1)``;
    for a group not admitted, its phase and its queue's numbers, and what the plugins said."""
    lines = []
    group, queue = diagnosis.get("group"), diagnosis.get("queue")
    if group is not None:
        lines.append(f"group {group['name']}: {group['phase']}, minMember {group['minMember']}")
    if queue is not None and "deserved" in queue:
        line = (f"queue {queue['name']}: allocated {_resources(queue['allocated'])}, "
                f"deserved {_resources(queue['deserved'])}")
        if "groupAsks" in queue:
            line += f"; the group asks {_resources(queue['groupAsks'])}"
        lines.append(line)
    lines += diagnosis.get("admission") or []
    topology = diagnosis.get("topology")
    if topology is not None:
        rooms = ", ".join(f"{h['name']} {_resources(h['free'])}" for h in topology["hypernodes"]) or "none"
        line = (f"network topology: hard, within tier {topology['highestTierAllowed']}; the group asks "
                f"{_resources(topology['asks'])}; free in the HyperNodes it may use: {rooms}")
        if "allocatedHyperNode" in topology:
            line += f" (already running in {topology['allocatedHyperNode']})"
        lines.append(line)
    gang = diagnosis.get("gang")
    if gang is not None:
        where = ", ".join(f"{pod.split('/', 1)[1]} on {node}" for pod, node in gang["placements"].items())
        lines.append(f"gang: {gang['fit']} more fit ({where}), {gang['alreadyRunning']} already placed, "
                     f"{gang['needed']} needed together")
    shown = claims_shown = 0
    for node, entries in (diagnosis.get("nodes") or {}).items():
        for e in entries:
            if e.get("reason") == "claims" and claims_shown < 3:
                claims_shown += 1
                lines += [claims_summary_line(node, r) for r in e["requests"]]
            if e.get("reason") == "devices" and shown < 3:
                shown += 1
                cards = "; ".join(f"{c['id']} ({c['type']}): {c['memoryFree']} MiB free of {c['memoryTotal']}, "
                                  f"cores {c['coresUsed']}% used, {c['slotsFree']} slots free" for c in e["cards"])
                asks = ", ".join(f"{k} {v}" for k, v in e["asks"].items())
                lines.append(f"{node}: {cards}; the pod asks {asks}")
    for c in diagnosis.get("causes") or ():
        what = f"{c['nodes']} node{'s' if c['nodes'] != 1 else ''}: {c['reason']}"
        if "asked" in c:
            what += f" ({c['asked']} asked, at most {c['mostFree']} free on {c['on']})"
        lines.append(what)
    return lines


def _add_claims(d: dict[str, Any], task: Any, statuses: dict, cache: Cache) -> None:
    """DRA: on each node that refused the pod's claims, each request's numbers (api/dra_explain.py)."""
    refs = pod_claim_refs(task.pod)
    if not refs:
        return
    claims = [c for c in (cache.dra.claims.get(f"{task.namespace}/{r.claim}") for r in refs if r.claim) if c]
    if not claims:
        return
    snap = cache.dra.snapshot()
    state = allocated_state(snap)
    for node_name, node_statuses in statuses.items():
        if not any(s.reason in DRA_REASONS or s.code == StatusCode.Error for s in node_statuses):
            continue
        node = cache.nodes.get(node_name)
        labels = node.spec.labels if node is not None else {}
        requests = explain_claims(claims, node_name, labels, snap, state)
        if requests:
            d["nodes"].setdefault(node_name, []).append({"reason": "claims", "requests": requests})


def _resources(r: dict[str, str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in r.items()) or "nothing"


def _extended_limits(pod: dict) -> dict[str, str]:
    """What the pod's containers ask of extended resources (the device plugins' names), summed as written."""
    out: dict[str, str] = {}
    for c in (pod.get("spec") or {}).get("containers") or []:
        for name, value in (((c.get("resources") or {}).get("limits")) or {}).items():
            if "/" in name:
                out[name] = str(value) if name not in out else f"{out[name]}+{value}"
    return out


def _cards(node: Any, asks: dict[str, str]) -> list[dict[str, Any]]:
    """Each device of the node's kinds, with what is free on it, as the device ledger holds them."""
    cards = []
    for kind, d in node.devices.items():
        for u in session_view(node, d).describe():
            cards.append({"kind": kind, "id": u.id, "type": u.type, "health": u.health,
                          "memoryFree": u.memory_total - u.memory_used, "memoryTotal": u.memory_total,
                          "coresUsed": u.cores_used, "slotsFree": u.slots_total - u.slots_used})
    return cards


def session_view(info: Any, d: Any) -> Any:
    """The devices as a session sees them: kinds that build their model at session open (the 310P kind
    merges MindCluster's device-info ConfigMaps there) are shown from an opened copy."""
    if not d.family.session_init:
        return d
    view = d.clone()
    view.open_session(info)
    return view

