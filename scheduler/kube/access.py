"""Every API access the scheduler makes, with the reason for it.

This table is the single statement of vcsched's API footprint.  The Helm chart's
ClusterRole grants exactly these rules (a chart test compares them), and the
Kubernetes-mode tests check that every request the code sends is covered here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Access:
    group: str  # "" is the core API group
    resource: str  # plural, with "/subresource" where one is used
    verbs: tuple[str, ...]
    why: str


SCHEDULER_ACCESS: tuple[Access, ...] = (
    Access("", "nodes", ("get", "list", "watch"), "nodes, their resources, labels, taints and device registers"),
    Access("", "nodes", ("patch",), "deviceshare node locks (NodeLockEnable) are annotations on the node"),
    Access("", "pods", ("get", "list", "watch"), "pods to schedule, and bound pods that use resources and devices"),
    Access("", "pods", ("delete",), "evictions by preempt and reclaim"),
    Access("", "pods/binding", ("create",), "binding a pod, with its device annotations inside the Binding"),
    Access("", "pods/status", ("patch",), "the PodScheduled condition and nominatedNodeName of waiting pods"),
    Access("", "events", ("create", "patch"), "events on pods and PodGroups, as Volcano records them"),
    Access("", "configmaps", ("get", "list", "watch"), "the scheduler conf (hot reload) and the device ConfigMaps"),
    Access("scheduling.k8s.io", "priorityclasses", ("get", "list", "watch"), "job and task priorities"),
    Access("scheduling.volcano.sh", "queues", ("get", "list", "watch"), "queues: weight, capability, state"),
    Access("scheduling.volcano.sh", "queues", ("create",),
           "the root and default queues, created at start when absent (as Volcano's scheduler cache does)"),
    Access("scheduling.volcano.sh", "queues/status", ("patch",), "queue status.allocated"),
    Access("scheduling.volcano.sh", "podgroups", ("get", "list", "watch"), "the gangs to schedule"),
    Access("scheduling.volcano.sh", "podgroups", ("patch",),
           "PodGroup status: Volcano's CRD has no status subresource, so the object itself is patched"),
    Access("coordination.k8s.io", "leases", ("get", "create", "update"), "leader election between replicas"),
)


def grants(rules: tuple[Access, ...], group: str, resource: str, verb: str) -> bool:
    """Whether ``rules`` allow ``verb`` on ``group``/``resource``."""
    return any(a.group == group and a.resource == resource and verb in a.verbs for a in rules)
