"""The embedded cluster's disruption and quota controllers, and its quota admission.

``simulate`` holds PodDisruptionBudgets and ResourceQuotas (scheduler/sim/cluster.py) and keeps
their status as a cluster's kube-controller-manager and API server would
(scheduler/controllers/disruption.py and resourcequota.py compute it):

- at the start, an object given without ``status`` gets the status the controller would write
  (``status.hard`` is ``spec.hard``); one given with ``status`` keeps it, as observed;
- between cycles, the disruption controller syncs a PDB when a pod it selects was created, changed
  (bound, finished, labels) or deleted (evicted): for each such pod the first PDB of its namespace
  that selects it, by name (Kubernetes picks one when several do);
- the quota admission plugin charges a pod the job controller creates to every ResourceQuota of its
  namespace that counts it, or refuses the pod (``exceeded quota: ...``) as the API server does;
  pods given as input exist already and are not admitted again;
- the quota controller recounts a namespace's quotas when one of its pods was deleted or reached a
  terminal phase (its replenishment), which releases what the pod used.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..api.k8s import SelectorError, parse_label_selector
from ..cache import Cache
from ..controllers.disruption import pdb_status, pod_ready
from ..controllers.resourcequota import admit, charged, quota_status

if TYPE_CHECKING:
    from .cluster import SimCluster


def _ns(obj: Mapping[str, Any]) -> str:
    return (obj.get("metadata") or {}).get("namespace") or "default"


def _labels(pod: Mapping[str, Any]) -> dict[str, str]:
    return dict((pod.get("metadata") or {}).get("labels") or {})


class SimPolicies:
    """What the controllers remember between syncs: the pods as last seen, and the quotas that
    admission charged since."""

    def __init__(self) -> None:
        self.seen: dict[str, tuple[str, tuple, bool, dict[str, str]]] | None = None
        self.charged_quotas: set[str] = set()
        self.now: float | None = None

    # -- admission ----------------------------------------------------------------------------

    def admit(self, cluster: "SimCluster", pod: dict[str, Any]) -> str | None:
        """The quota admission plugin on a pod being created; the API server's refusal, or None."""
        ns = _ns(pod)
        keys = sorted(k for k, q in cluster.resource_quotas.items() if _ns(q) == ns)
        if not keys:
            return None
        quotas = [cluster.resource_quotas[k] for k in keys]
        refusal, used = admit(quotas, pod, self.now if self.now is not None else 0.0)
        if refusal is not None:
            return f'pods "{(pod.get("metadata") or {}).get("name")}" is forbidden: {refusal}'
        for i, text in used.items():
            quotas[i].setdefault("status", {})["used"] = text
            self.charged_quotas.add(keys[i])
        return None

    # -- the controllers -------------------------------------------------------------------------

    def sync(self, cluster: "SimCluster", cache: Cache, now: float) -> bool:
        """Bring the statuses up to date with the pods; feed what changed to ``cache``.  True if a
        status changed."""
        self.now = now
        if not cluster.pdbs and not cluster.resource_quotas:
            return False  # nothing to keep current (the input brings every one there will be)
        current = {key: self._state(pod, now) for key, pod in cluster.pods.items()}
        first = self.seen is None
        touched: list[tuple[str, dict[str, str]]] = []  # (namespace, labels) of pods created, changed, gone
        released: set[str] = set()  # namespaces where a pod was deleted or became terminal
        if not first:
            for key, state in current.items():
                old = self.seen.get(key)
                if old != state:
                    touched.append((state[0], state[3]))
                    if old is not None and old[2] and not state[2]:
                        released.add(state[0])
            for key, old in self.seen.items():
                if key not in current:
                    touched.append((old[0], old[3]))
                    released.add(old[0])
        self.seen = current
        changed = False
        pdbs = cluster.pdbs
        due = {key for key, pdb in pdbs.items() if first and not pdb.get("status")}
        for ns, labels in touched:
            key = _first_pdb(pdbs, ns, labels)
            if key is not None:
                due.add(key)
        for key in sorted(due):
            pdb = pdbs[key]
            status = pdb_status(pdb, cluster.pods.values(), now)
            if status != pdb.get("status"):
                pdb["status"] = status
                cache.update_pdb(pdb)
                changed = True
        for key, quota in sorted(cluster.resource_quotas.items()):
            ns = _ns(quota)
            if (first and not quota.get("status")) or ns in released:
                status = quota_status(quota, _namespace_objects(cluster, ns), now)
                if status != quota.get("status"):
                    quota["status"] = status
                    self.charged_quotas.add(key)
            if key in self.charged_quotas:
                cache.update_resource_quota(quota)
                changed = True
        self.charged_quotas.clear()
        return changed

    @staticmethod
    def _state(pod: Mapping[str, Any], now: float) -> tuple[str, tuple, bool, dict[str, str]]:
        """(namespace, what the disruption controller reads, charged to quota, labels)."""
        meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
        read = (meta.get("uid"), meta.get("deletionTimestamp"), spec.get("nodeName"), status.get("phase"),
                pod_ready(pod), tuple(sorted(_labels(pod).items())),
                tuple(str(r) for r in meta.get("ownerReferences") or []))
        return _ns(pod), read, charged(pod, now), _labels(pod)


def _first_pdb(pdbs: Mapping[str, Mapping[str, Any]], ns: str, labels: Mapping[str, str]) -> str | None:
    """``getPdbForPod``: the first PDB of the pod's namespace whose selector selects it."""
    for key in sorted(pdbs):
        pdb = pdbs[key]
        if _ns(pdb) != ns:
            continue
        try:
            selector = parse_label_selector((pdb.get("spec") or {}).get("selector"))
        except SelectorError:
            continue
        if selector.matches(labels):
            return key
    return None


def _namespace_objects(cluster: "SimCluster", ns: str) -> dict[str, Iterable[Mapping[str, Any]]]:
    return {
        "Pod": [p for p in cluster.pods.values() if _ns(p) == ns],
        "ConfigMap": [c for c in cluster.config_maps.values() if _ns(c) == ns],
        "ResourceQuota": [q for q in cluster.resource_quotas.values() if _ns(q) == ns],
    }
