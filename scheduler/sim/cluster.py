"""The embedded cluster of ``vcsched simulate``: the sim source and sink around the real scheduler.

It holds the input objects, does what the controllers and the API server would
(PodGroups for bare pods, default Queues, Open queue state, PodDisruptionBudget
and ResourceQuota status and quota admission: sim/policies.py), feeds them to the
cache, and applies each session's effects: a bind makes the pod Running on its
node, an eviction deletes it, statuses are written back, events are recorded.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..api.hypernode import hypernode_from
from ..api.types import GROUP_NAME_ANNOTATION, QUEUE_NAME_ANNOTATION
from ..cache import Cache
from ..controllers.job import validate_job_queue, volcano_message
from ..controllers.podgroup import needs_podgroup, podgroup_for_pod
from ..controllers.queue import default_queue, reconcile_queue
from ..controllers.queue_admission import validate_queue_tree
from ..framework.effects import Bind, Effect, Event, Evict, NodeLock, PodCondition, PodGroupStatus, QueueStatus
from .dra_claims import KINDS as DRA_KINDS
from .dra_claims import SimDra
from .hypernode_manifest import hypernode_problems
from .manifests import Manifest, ManifestError
from .policies import SimPolicies

SIM_EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc).timestamp()

# the PriorityClasses every API server creates at start (pkg/apis/scheduling · SystemPriorityClasses)
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}


# the pods the input's Jobs may expand to, in all: a Job's replicas are an int32 the API server takes up
# to 2^31 - 1, and each pod simulated holds some kilobytes; a larger input is refused, not run out of memory
MAX_JOB_PODS = 1_000_000


def rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class SimCluster:
    scheduler_names: tuple[str, ...] = ("volcano",)
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    podgroups: dict[str, dict[str, Any]] = field(default_factory=dict)
    queues: dict[str, dict[str, Any]] = field(default_factory=dict)
    priority_classes: dict[str, dict[str, Any]] = field(default_factory=dict)
    config_maps: dict[str, dict[str, Any]] = field(default_factory=dict)
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)  # batch.volcano.sh Jobs, run by sim/jobs.py
    hypernodes: dict[str, dict[str, Any]] = field(default_factory=dict)  # topology.volcano.sh HyperNodes
    evicted: list[str] = field(default_factory=list)
    node_locks: list[tuple[str, str, str]] = field(default_factory=list)  # NodeLock effects: (node, key, value)
    pdbs: dict[str, dict[str, Any]] = field(default_factory=dict)  # policy/v1 PodDisruptionBudgets
    resource_quotas: dict[str, dict[str, Any]] = field(default_factory=dict)  # v1 ResourceQuotas
    numatopologies: dict[str, dict[str, Any]] = field(default_factory=dict)  # nodeinfo.volcano.sh Numatopologies
    # the sessions' Events (Pods, PodGroups), aggregated as the API server's recorder counts repeats
    events: list[dict[str, Any]] = field(default_factory=list)
    # the disruption and quota controllers and the quota admission plugin (sim/policies.py)
    policies: SimPolicies = field(default_factory=SimPolicies)
    # resource.k8s.io objects and the resourceclaim controller (sim/dra_claims.py)
    dra: SimDra = field(default_factory=SimDra)

    @classmethod
    def from_manifests(cls, manifests: list[Manifest], scheduler_names: tuple[str, ...] = ("volcano",),
                       created: float = SIM_EPOCH) -> "SimCluster":
        """``created``: when the input's objects without a creation time were made (the queues made
        here: a second before)."""
        c = cls(scheduler_names)
        sources: dict[str, Manifest] = {}
        for m in manifests:
            obj = copy.deepcopy(m.obj)
            if m.kind == "Pod":
                c.pods[m.key] = obj
                sources[m.key] = m
            elif m.kind == "Node":
                c.nodes[m.name] = obj
            elif m.kind == "PodGroup":
                c.podgroups[m.key] = obj
                sources["pg:" + m.key] = m
            elif m.kind == "Queue":
                c.queues[m.name] = reconcile_queue(obj)
                sources["queue:" + m.name] = m
            elif m.kind == "PriorityClass":
                c.priority_classes[m.name] = obj
            elif m.kind == "ConfigMap":
                c.config_maps[m.key] = obj
            elif m.kind == "Job":
                c.jobs[m.key] = obj
                sources["job:" + m.key] = m
            elif m.kind == "HyperNode":
                c.hypernodes[m.name] = obj
                sources["hypernode:" + m.name] = m
            elif m.kind == "PodDisruptionBudget":
                c.pdbs[m.key] = obj
            elif m.kind == "ResourceQuota":
                c.resource_quotas[m.key] = obj
            elif m.kind in DRA_KINDS:
                c.dra.add(m)
            elif m.kind == "Numatopology":
                c.numatopologies[m.name] = obj
        for name, reclaimable in (("root", False), ("default", True)):
            if name not in c.queues:
                c.queues[name] = default_queue(name, reclaimable, rfc3339(created - 1))
        c._admit_priorities(sources)
        c._make_podgroups()
        c._check_references(sources)
        c.dra.sync(c.pods, None)  # the resourceclaim controller makes the template claims
        return c

    def _admit_priorities(self, sources: dict[str, Manifest]) -> None:
        """Every input pod through the Priority admission plugin (``admit_priority``); a refusal names it."""
        for key, pod in self.pods.items():
            refusal = self.admit_priority(pod)
            if refusal is not None:
                raise ManifestError(f"{sources[key].source} (Pod {key}): {refusal}")

    def admit_pod(self, pod: dict[str, Any]) -> str | None:
        """The API server's admission of a pod being created: the Priority plugin (``admit_priority``),
        then the ResourceQuota plugin (sim/policies.py), which charges the pod to its namespace's
        quotas or refuses it.  Returns the refusal, None when admitted."""
        return self.admit_priority(pod) or self.policies.admit(self, pod)

    def admit_priority(self, pod: dict[str, Any]) -> str | None:
        """The Priority admission plugin on a pod being created: its ``spec.priority`` (and
        ``preemptionPolicy``) from its PriorityClass.  The class named by ``spec.priorityClassName``
        must exist, else the globalDefault class (or 0) applies; a ``spec.priority`` that differs from
        it is refused.  Returns the API server's refusal (field and message), None when admitted."""
        values = dict(SYSTEM_PRIORITY_CLASSES)
        policies: dict[str, str] = {}
        default = None
        for name, pc in self.priority_classes.items():
            values[name] = int(pc.get("value") or 0)
            if pc.get("preemptionPolicy"):
                policies[name] = pc["preemptionPolicy"]
            if pc.get("globalDefault") and (default is None or values[name] > values[default]):
                default = name
        spec = pod["spec"]
        name = spec.get("priorityClassName") or ""
        if name:
            if name not in values:
                return f"spec.priorityClassName: no PriorityClass with name {name} was found"
            value = values[name]
        elif default is not None:
            name, value = default, values[default]
        else:
            value = 0
        if spec.get("priority") is not None and spec["priority"] != value:
            return (f"spec.priority: the integer value of priority ({spec['priority']}) must not be provided in "
                    f"pod spec; priority admission controller computed {value} from the given PriorityClass name")
        if name:
            spec["priorityClassName"] = name
        spec["priority"] = value
        if not spec.get("preemptionPolicy"):
            spec["preemptionPolicy"] = policies.get(name, "PreemptLowerPriority")
        return None

    def _make_podgroups(self) -> None:
        """The podgroup controller: one PodGroup per bare pod, and the pod annotated with it."""
        for pod in self.pods.values():
            if not needs_podgroup(pod, self.scheduler_names):
                continue
            pg = podgroup_for_pod(pod)
            key = f"{pg['metadata']['namespace']}/{pg['metadata']['name']}"
            self.podgroups.setdefault(key, pg)
            pod["metadata"].setdefault("annotations", {})[GROUP_NAME_ANNOTATION] = pg["metadata"]["name"]

    def _check_topology_tiers(self, hypernodes: dict[str, Any], sources: dict[str, Manifest]) -> None:
        """A hard network topology must name a tier that exists: ``highestTierName`` one of the
        HyperNodes' ``tierName``s, ``highestTierAllowed`` no lower than the lowest tier (else no HyperNode
        could hold the job, and it would wait forever).  Soft mode ignores the tier."""
        names = {h.tier_name for h in hypernodes.values() if h.tier_name}
        lowest = min((h.tier for h in hypernodes.values()), default=None)
        for kind, objects in (("PodGroup", self.podgroups), ("Job", self.jobs)):
            for key, obj in objects.items():
                spec = obj.get("spec") or {}
                specs = [("spec.networkTopology", spec.get("networkTopology"))]
                specs += [(f"spec.subGroupPolicy[{i}].networkTopology", p.get("networkTopology"))
                          for i, p in enumerate(spec.get("subGroupPolicy") or ()) if isinstance(p, dict)]
                specs += [(f"spec.tasks[{i}].partitionPolicy.networkTopology",
                           (t.get("partitionPolicy") or {}).get("networkTopology"))
                          for i, t in enumerate(spec.get("tasks") or ()) if isinstance(t, dict) and kind == "Job"]
                for path, nt in specs:
                    if not isinstance(nt, dict):
                        continue
                    problem, where = None, ""
                    if nt.get("mode", "hard") != "hard":
                        continue  # soft mode takes no tier: the lowest that holds the job, else anywhere
                    name, tier = nt.get("highestTierName"), nt.get("highestTierAllowed")
                    if name and name not in names:
                        known = ", ".join(sorted(names)) or "none"
                        problem, where = f"no HyperNode tier is named {name!r} (tier names: {known})", "highestTierName"
                    elif isinstance(tier, int) and lowest is not None and tier < lowest:
                        problem, where = (f"no HyperNode tier {tier} exists: the lowest tier is {lowest}",
                                          "highestTierAllowed")
                    if problem:
                        m = sources.get(("pg:" if kind == "PodGroup" else "job:") + key)
                        raise ManifestError(m.source if m else "", problem, ref=f"{kind} {key}",
                                            field=f"{path}.{where}")

    def _check_references(self, sources: dict[str, Manifest]) -> None:
        for key, pod in self.pods.items():
            if (pod.get("spec") or {}).get("schedulerName") not in self.scheduler_names:
                continue
            ann = pod["metadata"].get("annotations") or {}
            group = ann.get(GROUP_NAME_ANNOTATION)
            src = sources[key].source
            if f"{pod['metadata']['namespace']}/{group}" not in self.podgroups:
                raise ManifestError(f"{src} (Pod {key}): metadata.annotations[{GROUP_NAME_ANNOTATION}]: "
                                    f"PodGroup {pod['metadata']['namespace']}/{group} not found")
            queue = ann.get(QUEUE_NAME_ANNOTATION)
            if queue and queue not in self.queues:
                raise ManifestError(f"{src} (Pod {key}): metadata.annotations[{QUEUE_NAME_ANNOTATION}]: "
                                    f"Queue {queue} not found")
        for key, pg in self.podgroups.items():
            queue = (pg.get("spec") or {}).get("queue") or "default"
            if queue not in self.queues:
                m = sources.get("pg:" + key)
                where = f"{m.source} (PodGroup {key})" if m else f"PodGroup {key}"
                raise ManifestError(f"{where}: spec.queue: Queue {queue} not found")
        parsed = {name: hypernode_from(obj) for name, obj in self.hypernodes.items()}
        for name, field_, problem in hypernode_problems(parsed, set(self.nodes))[:1]:
            m = sources["hypernode:" + name]
            raise ManifestError(m.source, problem, ref=f"HyperNode {name}", field=field_)
        self._check_topology_tiers(parsed, sources)
        for problem in validate_queue_tree(self.queues)[:1]:
            m = sources.get("queue:" + problem.queue)
            raise ManifestError(m.source if m else "", problem.message, ref=f"Queue {problem.queue}",
                                field=problem.field)
        pods = 0
        for key, job in self.jobs.items():
            for i, task in enumerate(job["spec"].get("tasks") or ()):
                pods += int(task.get("replicas") or 0)
                if pods > MAX_JOB_PODS:
                    raise ManifestError(sources["job:" + key].source,
                                        f"the Jobs ask for more than {MAX_JOB_PODS:,} pods in all, the most simulate "
                                        f"holds in memory ({pods:,} with this task's)",
                                        ref=f"Job {key}", field=f"spec.tasks[{i}].replicas")
            # the job webhook's queue checks (exists, Open, not root, a leaf), with Volcano's message
            problems = validate_job_queue(job, self.queues)
            if problems:
                raise ManifestError(sources["job:" + key].source, volcano_message(problems), ref=f"Job {key}",
                                    field=problems[0].field)

    # -- the source side ------------------------------------------------------------------

    def feed(self, cache: Cache) -> None:
        for obj in self.priority_classes.values():
            cache.add_priority_class(obj)
        for obj in self.queues.values():
            cache.add_queue(obj)
        for obj in self.nodes.values():
            cache.add_node(obj)
        for obj in self.hypernodes.values():
            cache.add_hypernode(obj)
        self.dra.feed(cache)
        for obj in self.podgroups.values():
            cache.add_podgroup(obj)
        for obj in self.pods.values():
            cache.add_pod(obj)
        for obj in self.pdbs.values():
            cache.add_pdb(obj)
        for obj in self.resource_quotas.values():
            cache.add_resource_quota(obj)
        for obj in self.numatopologies.values():
            cache.add_numatopology(obj)

    def sync_policies(self, cache: Cache, now: float) -> bool:
        """The disruption and quota controllers at ``now``: PodDisruptionBudget and ResourceQuota
        status brought up to date with the pods (sim/policies.py), and fed to ``cache``.  True if a
        status changed.  Called before the first cycle and after each one."""
        changed = self.policies.sync(self, cache, now)
        if not self.dra.empty:
            changed |= self.dra.sync(self.pods, cache)
        return changed

    # -- the sink side ----------------------------------------------------------------------

    def apply(self, effects: list[Effect], cache: Cache, now: float | None = None) -> bool:
        """Carry out a session's effects; True if anything in the cluster changed.  ``now``: the
        session's clock, stamped on a bound pod's ``PodScheduled`` condition as the API server would."""
        changed = False
        for e in effects:
            if isinstance(e, Bind):
                key = f"{e.namespace}/{e.name}"
                pod = self.pods.get(key)
                if pod is None or pod["spec"].get("nodeName"):
                    continue
                if e.claims:
                    self.dra.bind(e, cache)
                pod["spec"]["nodeName"] = e.node
                if e.annotations:
                    pod["metadata"].setdefault("annotations", {}).update(e.annotations)
                status = pod.setdefault("status", {})
                status["phase"] = "Running"
                status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
                scheduled = {"type": "PodScheduled", "status": "True"}
                if now is not None:
                    scheduled["lastTransitionTime"] = rfc3339(now)
                status["conditions"].append(scheduled)
                cache.update_pod(pod)
                changed = True
            elif isinstance(e, NodeLock):
                # the lock goes on the node, and comes off at once: the device plugin releases it
                # after its Allocate, which in a real cluster follows the bind within seconds
                node = self.nodes.get(e.node)
                if node is not None:
                    annotations = node["metadata"].setdefault("annotations", {})
                    annotations[e.key] = e.value
                    annotations.pop(e.key)
                    self.node_locks.append((e.node, e.key, e.value))
            elif isinstance(e, Evict):
                key = f"{e.namespace}/{e.name}"
                if self.pods.pop(key, None) is not None:
                    self.evicted.append(key)
                    cache.delete_pod(e.uid)
                    changed = True
            elif isinstance(e, PodGroupStatus):
                key = f"{e.namespace}/{e.name}"
                pg = self.podgroups.get(key)
                if pg is None:
                    continue
                status = {"phase": e.phase, "running": e.running, "succeeded": e.succeeded, "failed": e.failed,
                          "conditions": [_condition_out(c) for c in e.conditions]}
                if pg.get("status") != status:
                    pg["status"] = status
                    cache.update_podgroup(pg)
                    changed = True
            elif isinstance(e, QueueStatus):
                q = self.queues.get(e.name)
                if q is not None and (q.get("status") or {}).get("allocated") != e.allocated:
                    q.setdefault("status", {})["allocated"] = e.allocated
                    cache.update_queue(q)
                    changed = True
            elif isinstance(e, Event):
                self._record_event(e)
            elif isinstance(e, PodCondition):
                key = f"{e.namespace}/{e.name}"
                pod = self.pods.get(key)
                if pod is None or pod["spec"].get("nodeName"):
                    continue
                status = pod.setdefault("status", {})
                cond = {"type": "PodScheduled", "status": "False", "reason": e.reason, "message": e.message}
                others = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
                old = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
                nominated_changed = bool(e.nominated_node) and status.get("nominatedNodeName") != e.nominated_node
                if old != cond or nominated_changed:
                    status["conditions"] = others + [cond]
                    if e.nominated_node:
                        status["nominatedNodeName"] = e.nominated_node
                    changed = True
        # the kubelet finishes terminating pods: they are gone before the next cycle
        for key in [k for k, p in self.pods.items() if p["metadata"].get("deletionTimestamp")]:
            pod = self.pods.pop(key)
            cache.delete_pod(pod["metadata"].get("uid"))
            changed = True
        return changed


    def _record_event(self, e: Event) -> None:
        """An Event, or one more of the same (the recorder's aggregation: same object, type, reason
        and message)."""
        obj = f"{e.kind} {e.namespace}/{e.name}" if e.namespace else f"{e.kind} {e.name}"  # "": cluster-scoped
        for seen in self.events:
            if (seen["object"], seen["type"], seen["reason"], seen["message"]) == (obj, e.type, e.reason, e.message):
                seen["count"] += 1
                return
        self.events.append({"object": obj, "type": e.type, "reason": e.reason, "message": e.message, "count": 1})


def _condition_out(c: dict[str, Any]) -> dict[str, Any]:
    out = dict(c)
    if isinstance(out.get("lastTransitionTime"), (int, float)):
        out["lastTransitionTime"] = rfc3339(out["lastTransitionTime"])
    return out
