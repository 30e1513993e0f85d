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
    Access("", "events", ("create", "patch"), "events on pods and PodGroups, as Volcano records them, and HyperNodes"),
    Access("", "configmaps", ("get", "list", "watch"), "the scheduler conf (hot reload), the device ConfigMaps and MindCluster's device-info ConfigMaps "
           "(mindx-dl, kube-system; by label, when AscendMindClusterVNPUEnable)"),
    Access("scheduling.k8s.io", "priorityclasses", ("get", "list", "watch"), "job and task priorities"),
    Access("scheduling.volcano.sh", "queues", ("get", "list", "watch"), "queues: weight, capability, state"),
    Access("scheduling.volcano.sh", "queues", ("create",),
           "the root and default queues, created at start when absent (as Volcano's scheduler cache does)"),
    Access("scheduling.volcano.sh", "queues/status", ("patch",), "queue status.allocated"),
    Access("scheduling.volcano.sh", "podgroups", ("get", "list", "watch"), "the gangs to schedule"),
    Access("scheduling.volcano.sh", "podgroups", ("patch",),
           "PodGroup status: Volcano's CRD has no status subresource, so the object itself is patched"),
    Access("coordination.k8s.io", "leases", ("get", "create", "update"), "leader election between replicas"),
    Access("topology.volcano.sh", "hypernodes", ("get", "list", "watch"), "the network topology: HyperNodes"),
    Access("policy", "poddisruptionbudgets", ("get", "list", "watch"),
           "the pdb plugin: PodDisruptionBudgets keep their pods from preempt, reclaim and shuffle"),
    Access("", "resourcequotas", ("get", "list", "watch"),
           "the resourcequota plugin: namespace ResourceQuotas gate the enqueue of PodGroups"),
    Access("nodeinfo.volcano.sh", "numatopologies", ("get", "list", "watch"),
           "the numa-aware plugin: each node's NUMA topology and free CPUs (Volcano's resource exporter)"),
    Access("resource.k8s.io", "deviceclasses", ("get", "list", "watch"),
           "Dynamic Resource Allocation: DeviceClasses and their CEL selectors"),
    Access("resource.k8s.io", "resourceslices", ("get", "list", "watch"),
           "Dynamic Resource Allocation: the devices drivers publish"),
    Access("resource.k8s.io", "resourceclaims", ("get", "list", "watch"),
           "Dynamic Resource Allocation: the pods' claims, and the devices other claims hold"),
    Access("resource.k8s.io", "resourceclaimtemplates", ("get", "list", "watch"),
           "Dynamic Resource Allocation: the templates pods' claims are made from"),
    Access("resource.k8s.io", "resourceclaims/status", ("update",),
           "Dynamic Resource Allocation: a claim's allocation and reservedFor, written before the binding"),
)


# The controllers (scheduler/kube/controllers.py): Job, PodGroup-for-bare-pods, Queue, garbage collector,
# HyperNode discovery (scheduler/kube/hypernode_discovery.py).
# Their informers list and watch with the verbs above; nothing else.
CONTROLLER_ACCESS: tuple[Access, ...] = (
    Access("batch.volcano.sh", "jobs", ("get", "list", "watch"), "the Jobs to reconcile"),
    Access("batch.volcano.sh", "jobs", ("delete",), "TTL garbage collection of finished Jobs (ttlSecondsAfterFinished)"),
    Access("batch.volcano.sh", "jobs", ("update",), "generated PVC names written back into spec.volumes (volumeClaim)"),
    Access("batch.volcano.sh", "jobs/status", ("update",), "Job phase, counts, retries and conditions"),
    Access("bus.volcano.sh", "commands", ("get", "list", "watch"), "AbortJob/ResumeJob/... and OpenQueue/CloseQueue"),
    Access("bus.volcano.sh", "commands", ("delete",), "a Command is deleted before it runs, so it runs at most once"),
    Access("", "pods", ("get", "list", "watch"), "a Job's pods, and bare pods that need a PodGroup"),
    Access("", "pods", ("create", "delete"), "a Job's pods: created once the PodGroup is Inqueue, deleted by kills"),
    Access("", "pods", ("patch",), "the out-of-sync annotation before a kill; group-name on a bare pod"),
    Access("scheduling.volcano.sh", "podgroups", ("get", "list", "watch"), "gate pod creation on Inqueue; queue counts"),
    Access("scheduling.volcano.sh", "podgroups", ("create", "update", "delete"),
           "a Job's PodGroup (re-created after full kills); one per bare pod or workload, updated, and deleted at 0 replicas"),
    Access("scheduling.volcano.sh", "queues", ("get", "list", "watch"), "job admission (queue Open) and the queue tree"),
    Access("scheduling.volcano.sh", "queues", ("patch",), "spec.parent root and the closed-by-parent annotation"),
    Access("scheduling.volcano.sh", "queues/status", ("patch",), "queue state Open / Closing / Closed"),
    Access("scheduling.k8s.io", "priorityclasses", ("get", "list", "watch"), "task priorities for minResources"),
    Access("", "events", ("create",), "Job and Queue events, as vc-controller-manager records them"),
    Access("", "configmaps", ("get", "create", "update", "delete"), "the svc plugin's <job>-svc hosts ConfigMap"),
    Access("", "services", ("create", "delete"), "the svc plugin's headless Service"),
    Access("networking.k8s.io", "networkpolicies", ("create", "delete"), "the svc plugin's NetworkPolicy"),
    Access("", "secrets", ("create", "delete"), "the ssh plugin's <job>-ssh key pair Secret"),
    Access("", "persistentvolumeclaims", ("get", "create"), "volumes[].volumeClaim PVCs, and volumeClaimName checks"),
    Access("apps", "replicasets", ("get", "list", "watch"),
           "a bare pod's owner: annotations its PodGroup inherits; scaled to 0 its PodGroup goes (WorkLoadSupport)"),
    Access("apps", "daemonsets", ("get",), "a bare pod's owner: annotations its PodGroup inherits"),
    Access("apps", "statefulsets", ("get", "list", "watch"),
           "a bare pod's owner: annotations its PodGroup inherits; scaled to 0 its PodGroup goes (WorkLoadSupport)"),
    Access("batch", "jobs", ("get",), "a bare pod's owner (batch/v1 Job): annotations its PodGroup inherits"),
    Access("", "nodes", ("get", "list", "watch"), "HyperNode discovery: the nodes' network topology labels"),
    Access("", "configmaps", ("list", "watch"),
           "HyperNode discovery: the controllers' ConfigMap (networkTopologyDiscovery), watched by its name"),
    Access("topology.volcano.sh", "hypernodes", ("get", "list", "watch"),
           "HyperNode discovery: the HyperNodes it made, and the names in use"),
    Access("topology.volcano.sh", "hypernodes", ("create", "update", "delete"),
           "HyperNode discovery: the HyperNodes node labels describe (label volcano.sh/network-topology-source=label)"),
)


def grants(rules: tuple[Access, ...], group: str, resource: str, verb: str) -> bool:
    """Whether ``rules`` allow ``verb`` on ``group``/``resource``."""
    return any(a.group == group and a.resource == resource and verb in a.verbs for a in rules)
