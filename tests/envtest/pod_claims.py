"""A pod's Dynamic Resource Allocation fields over the v1.24 API server, test only.

The tier's kube-apiserver predates a pod's ``spec.resourceClaims``, its containers'
``resources.claims`` and ``status.resourceClaimStatuses`` (they arrived in 1.26) and prunes them on
write.  The four resource.k8s.io kinds are served from CRDs (dra_crds.py); for the pods, the test keeps
those fields in two annotations of the pod (``claim_fields``), and ``PodClaimsProxy``, a reverse
proxy between vcsched and the API server, gives every pod it passes on (a GET, a list, a watch event,
a write's answer) the fields back in place of the annotations: vcsched sees pods as a v1.34 server
holds them.  Everything else passes through unchanged: vcsched's own bearer token (so RBAC is the
chart's), its writes, the server's answers and errors, watch streams as they come.
"""

from __future__ import annotations

import json
import ssl
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

SPEC = "envtest.vcsched.io/resource-claims"  # {"resourceClaims": [...], "containers": {name: [claims]}}
STATUS = "envtest.vcsched.io/resource-claim-statuses"  # [...]: status.resourceClaimStatuses

_HOP = {"host", "content-length", "transfer-encoding", "connection", "accept-encoding", "keep-alive"}


def claim_fields(pod: dict[str, Any]) -> dict[str, Any]:
    """``pod`` as the test writes it to the v1.24 server: its claim fields moved into annotations."""
    out = json.loads(json.dumps(pod))
    spec = out.get("spec") or {}
    ann = out.setdefault("metadata", {}).setdefault("annotations", {})
    claims = spec.pop("resourceClaims", None)
    containers = {}
    for c in spec.get("containers") or []:
        used = (c.get("resources") or {}).pop("claims", None)
        if used:
            containers[c["name"]] = used
    if claims or containers:
        ann[SPEC] = json.dumps({"resourceClaims": claims or [], "containers": containers})
    statuses = (out.get("status") or {}).pop("resourceClaimStatuses", None)
    if statuses:
        ann[STATUS] = json.dumps(statuses)
    return out


def restore(obj: Any) -> Any:
    """A Pod, a PodList or a watch event of a Pod with the claim fields back in place (in place)."""
    if not isinstance(obj, dict):
        return obj
    kind = obj.get("kind")
    if kind == "Pod":
        _restore_pod(obj)
    elif kind == "PodList":
        for item in obj.get("items") or []:
            _restore_pod(item)
    elif "type" in obj and isinstance(obj.get("object"), dict):
        restore(obj["object"])
    return obj


def _restore_pod(pod: dict[str, Any]) -> None:
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    fields = ann.pop(SPEC, None)
    if fields:
        f = json.loads(fields)
        spec = pod.setdefault("spec", {})
        spec["resourceClaims"] = f["resourceClaims"]
        for c in spec.get("containers") or []:
            if c.get("name") in f["containers"]:
                c.setdefault("resources", {})["claims"] = f["containers"][c["name"]]
    statuses = ann.pop(STATUS, None)
    if statuses:
        pod.setdefault("status", {})["resourceClaimStatuses"] = json.loads(statuses)


class PodClaimsProxy:
    """``await start()`` → the proxy's base URL; ``await stop()``."""

    def __init__(self, upstream: str, ca_file: Path) -> None:
        self.upstream = upstream.rstrip("/")
        self._ssl = ssl.create_default_context(cafile=str(ca_file))
        self._session: aiohttp.ClientSession | None = None
        self._runner: web.AppRunner | None = None

    async def start(self) -> str:
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None), auto_decompress=True)
        app = web.Application(client_max_size=64 << 20)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        return f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        body = await request.read()
        pods = "/pods" in request.path
        async with self._session.request(request.method, self.upstream + request.path_qs, headers=headers,
                                         data=body or None, ssl=self._ssl) as up:
            out_headers = {k: v for k, v in up.headers.items() if k.lower() not in _HOP | {"content-encoding"}}
            if request.query.get("watch") in ("true", "1"):
                resp = web.StreamResponse(status=up.status, headers=out_headers)
                await resp.prepare(request)
                pending = b""
                async for chunk in up.content.iter_any():
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                    for line in lines:
                        if pods and line.strip():
                            line = json.dumps(restore(json.loads(line))).encode()
                        await resp.write(line + b"\n")
                if pending:
                    await resp.write(pending)
                await resp.write_eof()
                return resp
            raw = await up.read()
            if pods and raw and up.content_type == "application/json":
                raw = json.dumps(restore(json.loads(raw))).encode()
            return web.Response(status=up.status, body=raw, headers=out_headers)


def kubeconfig(server: str, token: str, path: Path) -> Path:
    """A kubeconfig for ``server`` (the proxy, plain HTTP on loopback) with ``token``."""
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "proxy",
        "clusters": [{"name": "proxy", "cluster": {"server": server}}],
        "users": [{"name": "vcsched", "user": {"token": token}}],
        "contexts": [{"name": "proxy", "context": {"cluster": "proxy", "user": "vcsched"}}]}))
    return path
