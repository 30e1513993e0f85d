"""A pod as the API server stores it on create: the defaults of ``pkg/apis/core/v1/defaults.go`` and
of the admission plugins a kube-apiserver enables by default, for what a scheduler reads.

Every pod the simulator holds goes through ``default_pod``: the input pods (after their manifest is
checked, sim/manifests.py) and every pod its controllers create (a Job's task pods, restarts
included, sim/jobs.py), as every pod a cluster's controllers create goes through the API server.
In Kubernetes mode the API server itself does this.

- ``SetDefaults_Pod``: each container's and init container's missing ``resources.requests`` come
  from its ``limits``; with ``hostNetwork`` a container port's missing ``hostPort`` is its
  ``containerPort``.
- ``SetDefaults_PodSpec``: ``schedulerName`` ``default-scheduler``, ``restartPolicy`` ``Always``,
  ``dnsPolicy`` ``ClusterFirst``, ``terminationGracePeriodSeconds`` 30, ``enableServiceLinks``.
- ``SetDefaults_ContainerPort``: ``protocol`` ``TCP``.
- The DefaultTolerationSeconds admission plugin: ``node.kubernetes.io/not-ready`` and
  ``node.kubernetes.io/unreachable`` tolerated for 300 s (``NoExecute``) unless the pod already
  tolerates them.
- The pod strategy's PrepareForCreate: ``status.phase`` ``Pending``.

Cross-object admission (Priority: ``spec.priority`` from the PriorityClass) needs the cluster's
classes and is the simulator's (sim/cluster.py · SimCluster.admit_pod).
"""

from __future__ import annotations

import copy
from typing import Any

DEFAULT_SCHEDULER_NAME = "default-scheduler"
DEFAULT_TERMINATION_GRACE_PERIOD = 30
DEFAULT_TOLERATION_SECONDS = 300
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"


def default_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """Apply the defaults to ``pod`` (a manifest whose types are valid) in place; return it."""
    spec = pod.setdefault("spec", {})
    host_network = bool(spec.get("hostNetwork"))
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or []:
            _default_container(container, host_network)
    if not spec.get("schedulerName"):
        spec["schedulerName"] = DEFAULT_SCHEDULER_NAME
    if not spec.get("restartPolicy"):
        spec["restartPolicy"] = "Always"
    if not spec.get("dnsPolicy"):
        spec["dnsPolicy"] = "ClusterFirst"
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = DEFAULT_TERMINATION_GRACE_PERIOD
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    _default_tolerations(spec)
    _apply_match_label_keys(spec, (pod.get("metadata") or {}).get("labels") or {})
    status = pod.get("status")
    if not isinstance(status, dict):
        status = pod["status"] = {}
    if not status.get("phase"):
        status["phase"] = "Pending"
    return pod


def _apply_match_label_keys(spec: dict[str, Any], labels: dict[str, Any]) -> None:
    """Pod (anti-)affinity terms' ``matchLabelKeys`` / ``mismatchLabelKeys`` join the label selector as
    ``In`` / ``NotIn`` the pod's own value of each key it has (pod strategy's PrepareForCreate,
    ``applyMatchLabelKeysAndMismatchLabelKeys``; MatchLabelKeysInPodAffinity, on since 1.31)."""
    affinity = spec.get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        rules = affinity.get(kind) or {}
        terms = list(rules.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
        terms += [w.get("podAffinityTerm") or {} for w in rules.get("preferredDuringSchedulingIgnoredDuringExecution") or []]
        for term in terms:
            selector = term.get("labelSelector")
            if selector is None or not (term.get("matchLabelKeys") or term.get("mismatchLabelKeys")):
                continue
            expressions = selector.setdefault("matchExpressions", [])
            for field, operator in (("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn")):
                for key in term.get(field) or []:
                    if key in labels:
                        expressions.append({"key": key, "operator": operator, "values": [labels[key]]})


def _default_container(container: dict[str, Any], host_network: bool) -> None:
    resources = container.get("resources")
    limits = (resources or {}).get("limits")
    if limits:
        requests = resources.get("requests")
        if not isinstance(requests, dict):
            requests = resources["requests"] = {}
        for name, value in limits.items():
            if name not in requests:
                requests[name] = copy.deepcopy(value)
    for port in container.get("ports") or []:
        if not port.get("protocol"):
            port["protocol"] = "TCP"
        if host_network and not port.get("hostPort") and port.get("containerPort"):
            port["hostPort"] = port["containerPort"]


def _default_tolerations(spec: dict[str, Any]) -> None:
    """DefaultTolerationSeconds: a NoExecute toleration of each taint, unless one already covers it."""
    tolerations = spec.get("tolerations") or []
    missing = []
    for key in (NOT_READY_TAINT, UNREACHABLE_TAINT):
        if not any(_tolerates_no_execute(t, key) for t in tolerations):
            missing.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                            "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})
    if missing:
        spec["tolerations"] = [*tolerations, *missing]


def _tolerates_no_execute(t: dict[str, Any], key: str) -> bool:
    """The plugin's own test (it looks at key and effect only): ``key`` or no key, NoExecute or no effect."""
    return t.get("key") in (None, "", key) and t.get("effect") in (None, "", "NoExecute")
