"""``vcsched simulate --kubeconfig``: a live cluster's state as simulate's input, read only.

What ``vcsched run`` lists for its cache (nodes, pods, PodGroups, queues, PriorityClasses, HyperNodes,
PodDisruptionBudgets, ResourceQuotas and the scheduler's own ConfigMap) is listed once, with GET requests only, and handed to simulate as
one more input file would be: the same checks and defaults, then the ``-f`` manifests on top.
Nothing is written to the cluster.  The server's own bookkeeping (``managedFields``) is dropped.
"""

from __future__ import annotations

import asyncio
from typing import Any

import yaml

from ..kube.api import (
    CONFIGMAPS,
    DEVICE_CLASSES,
    HYPERNODES,
    NODES,
    NUMATOPOLOGIES,
    PDBS,
    PODGROUPS,
    PODS,
    PRIORITY_CLASSES,
    QUEUES,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    RESOURCE_QUOTAS,
    RESOURCE_SLICES,
    ApiError,
    KubeClient,
    Kind,
    load_configuration,
)

CONF_MAP = "volcano-scheduler-configmap"

# (kind, its apiVersion and Kind in a manifest, field selector, optional: a cluster may not serve it)
LIVE_KINDS: tuple[tuple[Kind, str, str, str | None, bool], ...] = (
    (PRIORITY_CLASSES, "scheduling.k8s.io/v1", "PriorityClass", None, False),
    (QUEUES, "scheduling.volcano.sh/v1beta1", "Queue", None, False),
    (NODES, "v1", "Node", None, False),
    (HYPERNODES, "topology.volcano.sh/v1alpha1", "HyperNode", None, True),
    (PODGROUPS, "scheduling.volcano.sh/v1beta1", "PodGroup", None, False),
    (PODS, "v1", "Pod", None, False),
    (PDBS, "policy/v1", "PodDisruptionBudget", None, False),
    (RESOURCE_QUOTAS, "v1", "ResourceQuota", None, False),
    (NUMATOPOLOGIES, "nodeinfo.volcano.sh/v1alpha1", "Numatopology", None, True),
    (DEVICE_CLASSES, "resource.k8s.io/v1", "DeviceClass", None, True),
    (RESOURCE_SLICES, "resource.k8s.io/v1", "ResourceSlice", None, True),
    (RESOURCE_CLAIM_TEMPLATES, "resource.k8s.io/v1", "ResourceClaimTemplate", None, True),
    (RESOURCE_CLAIMS, "resource.k8s.io/v1", "ResourceClaim", None, True),
    (CONFIGMAPS, "v1", "ConfigMap", f"metadata.name={CONF_MAP}", False),
)


class LiveClusterError(Exception):
    """The cluster could not be read: one line saying what failed."""


def read_cluster(kubeconfig: str | None) -> str:
    """The cluster's objects as one multi-document YAML text, in the order simulate reads kinds."""
    return asyncio.run(_read(kubeconfig))


async def _read(kubeconfig: str | None) -> str:
    where = f"--kubeconfig {kubeconfig}" if kubeconfig else "the default kubeconfig"
    try:
        client = KubeClient(await load_configuration(kubeconfig), user_agent="vcsched-simulate")
    except Exception as e:  # the kubernetes client raises many types for a bad kubeconfig
        raise LiveClusterError(f"{where}: {e}") from None
    docs: list[dict[str, Any]] = []
    try:
        for kind, api_version, name, field_selector, optional in LIVE_KINDS:
            try:
                items, _ = await client.list(kind.path(None), {"fieldSelector": field_selector})
            except ApiError as e:
                if optional and e.status == 404:
                    continue
                raise LiveClusterError(f"{where}: listing {kind.plural} failed: {e}") from None
            for obj in items:
                obj = {"apiVersion": api_version, "kind": name, **obj}
                (obj.get("metadata") or {}).pop("managedFields", None)
                docs.append(obj)
    finally:
        await client.close()
    return yaml.safe_dump_all(docs, sort_keys=False)
