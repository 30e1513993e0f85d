"""resource.k8s.io/v1 served from CRDs, test only: the v1.24 control plane of this tier predates Dynamic
Resource Allocation (GA in 1.34), and no newer one can be had here.

The four kinds in their upstream group and version, with the upstream field layout (the schema keeps
every field: ``x-kubernetes-preserve-unknown-fields``) and, for ResourceClaim, the ``status``
subresource, so that list, watch, status writes, 409 conflicts and RBAC behave as on a v1.34+ server.
The server's own validation of these kinds does not run: vcsched refuses what it would refuse
(sim/dra_manifest.py).  A ``*.k8s.io`` group needs ``api-approved.kubernetes.io``.
"""

from __future__ import annotations

from typing import Any

GROUP = "resource.k8s.io"
KINDS = (  # kind, plural, namespaced, status subresource
    ("DeviceClass", "deviceclasses", False, False),
    ("ResourceSlice", "resourceslices", False, False),
    ("ResourceClaim", "resourceclaims", True, True),
    ("ResourceClaimTemplate", "resourceclaimtemplates", True, False),
)


def crd(kind: str, plural: str, namespaced: bool, status: bool) -> dict[str, Any]:
    open_object = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    props: dict[str, Any] = {"spec": open_object}
    if status:
        props["status"] = open_object
    version: dict[str, Any] = {"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": props}}}
    if status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}", "annotations": {"api-approved.kubernetes.io": "unapproved, test only"}},
        "spec": {"group": GROUP, "scope": "Namespaced" if namespaced else "Cluster",
                 "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
                 "versions": [version]},
    }


def path(plural: str, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
    out = f"/apis/{GROUP}/v1"
    if namespace:
        out += f"/namespaces/{namespace}"
    out += f"/{plural}"
    if name:
        out += f"/{name}"
    if sub:
        out += f"/{sub}"
    return out


async def install(kube) -> None:
    """Create the four CRDs (once per control plane) and wait until they are served."""
    from vcsched.kube.api import ApiError

    for kind, plural, namespaced, status in KINDS:
        try:
            await kube.client.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                      body=crd(kind, plural, namespaced, status))
        except ApiError as e:
            if e.status != 409:
                raise
    for kind, plural, namespaced, _ in KINDS:
        probe = path(plural, "default" if namespaced else None)

        async def served(p: str = probe) -> bool:
            try:
                await kube.client.list(p, {"limit": 1}, first_page_only=True)
                return True
            except ApiError:
                return False

        await kube.eventually(served, f"{plural}.{GROUP} served")


async def empty(kube) -> None:
    """Delete the DRA objects an earlier test left."""
    for kind, plural, namespaced, _ in KINDS:
        for ns in (("default", "team-a") if namespaced else (None,)):
            await kube.delete(path(plural, ns))
