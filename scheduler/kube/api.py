"""One small API client over the official client's asyncio transport (``kubernetes.aio``).

The official client brings the kubeconfig / in-cluster loading, TLS, bearer
tokens with refresh and exec plugins, and its aiohttp connection pool.  We call
it at its generic layer (``param_serialize`` + ``call_api``) with
``_preload_content=False`` and keep plain JSON dicts: the cache consumes
manifests, not generated models, and a Binding answers with a Status anyway.
Responses and watch events are decoded with orjson: decoding every pod's events
was a sixth of the event loop's time with the standard library's json.
"""

from __future__ import annotations

import os
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
import structlog
from kubernetes.aio import client as kclient
from kubernetes.aio import config as kconfig

log = structlog.get_logger("vcsched.kube.api")

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


@dataclass(frozen=True, slots=True)
class Kind:
    """A resource the scheduler reads or writes: where it lives in the API."""

    group: str
    version: str
    plural: str
    namespaced: bool

    def path(self, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
        base = f"/api/{self.version}" if not self.group else f"/apis/{self.group}/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
        if sub:
            base += f"/{sub}"
        return base


NODES = Kind("", "v1", "nodes", False)
PODS = Kind("", "v1", "pods", True)
CONFIGMAPS = Kind("", "v1", "configmaps", True)
EVENTS = Kind("", "v1", "events", True)
PRIORITY_CLASSES = Kind("scheduling.k8s.io", "v1", "priorityclasses", False)
PODGROUPS = Kind("scheduling.volcano.sh", "v1beta1", "podgroups", True)
QUEUES = Kind("scheduling.volcano.sh", "v1beta1", "queues", False)
LEASES = Kind("coordination.k8s.io", "v1", "leases", True)
HYPERNODES = Kind("topology.volcano.sh", "v1alpha1", "hypernodes", False)
PDBS = Kind("policy", "v1", "poddisruptionbudgets", True)
RESOURCE_QUOTAS = Kind("", "v1", "resourcequotas", True)
# nodeinfo.volcano.sh Numatopologies: one per node, written by Volcano's resource exporter (numa-aware)
NUMATOPOLOGIES = Kind("nodeinfo.volcano.sh", "v1alpha1", "numatopologies", False)
# Dynamic Resource Allocation (Kubernetes 1.34+)
DEVICE_CLASSES = Kind("resource.k8s.io", "v1", "deviceclasses", False)
RESOURCE_SLICES = Kind("resource.k8s.io", "v1", "resourceslices", False)
RESOURCE_CLAIMS = Kind("resource.k8s.io", "v1", "resourceclaims", True)
RESOURCE_CLAIM_TEMPLATES = Kind("resource.k8s.io", "v1", "resourceclaimtemplates", True)
# the controllers' kinds
JOBS = Kind("batch.volcano.sh", "v1alpha1", "jobs", True)
COMMANDS = Kind("bus.volcano.sh", "v1alpha1", "commands", True)
SERVICES = Kind("", "v1", "services", True)
SECRETS = Kind("", "v1", "secrets", True)
NETWORK_POLICIES = Kind("networking.k8s.io", "v1", "networkpolicies", True)
PERSISTENT_VOLUME_CLAIMS = Kind("", "v1", "persistentvolumeclaims", True)
# a bare pod's owners, whose annotations its PodGroup inherits
REPLICA_SETS = Kind("apps", "v1", "replicasets", True)
DAEMON_SETS = Kind("apps", "v1", "daemonsets", True)
STATEFUL_SETS = Kind("apps", "v1", "statefulsets", True)
BATCH_JOBS = Kind("batch", "v1", "jobs", True)


def resource_and_verb(method: str, path: str, query: Mapping[str, Any] | None) -> tuple[str, str]:
    """(``pods``, ``create``)-style names of a request, as RBAC names them (``pods/binding`` for a
    subresource; ``list`` or ``watch`` for a collection GET)."""
    parts = [p for p in path.split("/") if p]
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:]  # after /api/v1 or /apis/<group>/<version>
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) > 2:
        rest = rest[2:]
    resource = "/".join(rest[:1] + rest[2:3])
    named = len(rest) >= 2
    if method == "GET":
        verb = "get" if named else ("watch" if (query or {}).get("watch") == "true" else "list")
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method, method.lower())
    return resource, verb


class ApiErrors:
    """What the API server refused, for ``vcsched_api_errors_total{code,resource,verb}``, and 403s: one
    log line per resource and verb when the permission goes, one when it comes back."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str, str], int] = {}
        self.denied: set[tuple[str, str]] = set()
        self.on_error: Callable[[str, str, str], None] | None = None  # (code, resource, verb), e.g. a metric

    def failed(self, status: int, method: str, path: str, query: Mapping[str, Any] | None, user_agent: str) -> None:
        resource, verb = resource_and_verb(method, path, query)
        key = (str(status), resource, verb)
        self.counts[key] = self.counts.get(key, 0) + 1
        if self.on_error is not None:
            self.on_error(*key)
        if status == 403 and (resource, verb) not in self.denied:
            self.denied.add((resource, verb))
            log.error("permission denied", verb=verb, resource=resource, client=user_agent,
                      hint="work that needs it waits until it is back: check the ClusterRole and its binding")

    def succeeded(self, method: str, path: str, query: Mapping[str, Any] | None, user_agent: str) -> None:
        resource, verb = resource_and_verb(method, path, query)
        if (resource, verb) in self.denied:
            self.denied.discard((resource, verb))
            log.info("permission restored", verb=verb, resource=resource, client=user_agent)


def warn_unless_denied(logger: Any, event: str, error: Exception, **kw: Any) -> None:
    """A failed request's warning; a 403 only at debug level (ApiErrors logs a denial once per resource
    and verb, not once per pod and session)."""
    status = getattr(error, "status", None)
    (logger.debug if status == 403 else logger.warning)(event, error=str(error), **kw)


class ApiError(Exception):
    """An answer other than 2xx (``status``), or a transport failure (``status`` 0)."""

    def __init__(self, status: int, reason: str, body: Mapping[str, Any] | None = None) -> None:
        super().__init__(f"{status} {reason}".strip())
        self.status = status
        self.reason = reason
        self.body = dict(body or {})

    @property
    def retriable(self) -> bool:
        """429, 5xx and transport failures (timeouts, resets) are worth another try."""
        return self.status == 0 or self.status == 429 or self.status >= 500


async def load_configuration(kubeconfig: str | None) -> kclient.Configuration:
    """``--kubeconfig`` if given; else in-cluster; else ``$KUBECONFIG`` or ~/.kube/config."""
    cfg = kclient.Configuration()
    if kubeconfig:
        await kconfig.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
        return cfg
    try:
        kconfig.load_incluster_config(client_configuration=cfg)
        return cfg
    except kconfig.ConfigException:
        pass
    path = os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
    await kconfig.load_kube_config(config_file=path, client_configuration=cfg)
    return cfg


def env_proxy(url: str) -> str | None:
    """The proxy that ``$HTTPS_PROXY`` / ``$HTTP_PROXY`` name for ``url``, unless ``$NO_PROXY`` exempts its host."""
    parts = urllib.parse.urlsplit(url)
    if not parts.hostname or urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme) or None


LIST_PAGE = 500  # objects per page of a LIST


def _query_value(v: Any) -> Any:
    """A query parameter as the API reads it: booleans in lower case."""
    return ("true" if v else "false") if isinstance(v, bool) else v


class KubeClient:
    """JSON in, JSON out.  ``request`` raises ApiError; ``watch`` yields the stream's events."""

    def __init__(self, configuration: kclient.Configuration, user_agent: str = "vcsched",
                 request_timeout: float = 30.0) -> None:
        # one HTTP/1.1 connection per request in flight (aiohttp speaks no HTTP/2): room for the watches,
        # the binds and the status writes at once
        configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0, 256)
        # The official client turns aiohttp's trust_env on, which reads the proxy variables and ~/.netrc
        # again for every request (a tenth of the CPU of a bind).  Resolve the API server's proxy once,
        # at start, as client-go does, and turn the per-request lookup off.
        configuration.proxy = configuration.proxy or env_proxy(configuration.host)
        configuration.client_session_kwargs = {**(configuration.client_session_kwargs or {}), "trust_env": False}
        self.api = kclient.ApiClient(configuration)
        self.api.user_agent = user_agent
        self.configuration = configuration
        self.user_agent = user_agent
        self.request_timeout = request_timeout
        self.errors = ApiErrors()
        # Requests go to aiohttp directly, with the official client's TLS context, proxy and token: its
        # request path (each body walked by sanitize_for_serialization, then the standard json module)
        # took a sixth of the event loop's time at 50 binds a second (issue 25).
        self._rest = self.api.rest_client
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
        await self.api.close()

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=self._rest.maxsize, ssl=self._rest.ssl_context)
            self._session = aiohttp.ClientSession(connector=connector, trust_env=False)
        return self._session

    async def _send(self, method: str, path: str, query: Mapping[str, Any] | None, body: Any,
                    content_type: str, timeout: aiohttp.ClientTimeout) -> aiohttp.ClientResponse:
        headers = {"Accept": "application/json", "Content-Type": content_type, "User-Agent": self.user_agent}
        auth = (await self.configuration.auth_settings()).get("BearerToken")  # refreshed as the client does
        if auth and auth.get("value"):
            headers["authorization"] = auth["value"]
        url = self.configuration.host + path
        params = [(k, _query_value(v)) for k, v in (query or {}).items() if v is not None]
        if params:
            url += "?" + urllib.parse.urlencode(params)
        data = body if body is None or isinstance(body, (bytes, str)) else orjson.dumps(body)
        proxy = {"proxy": self._rest.proxy, "proxy_headers": self._rest.proxy_headers} if self._rest.proxy else {}
        try:
            return await self._http().request(method, url, headers=headers, data=data, timeout=timeout, **proxy)
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            raise ApiError(0, f"{type(e).__name__}: {e}") from None

    async def request(self, method: str, path: str, *, query: Mapping[str, Any] | None = None, body: Any = None,
                      content_type: str = "application/json", timeout: float | None = None) -> dict[str, Any]:
        t = aiohttp.ClientTimeout(total=timeout or self.request_timeout)
        resp = await self._send(method, path, query, body, content_type, t)
        try:
            raw = await resp.read()
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            raise ApiError(0, f"{type(e).__name__}: {e}") from None
        finally:
            resp.release()
        try:
            doc = orjson.loads(raw) if raw else {}
        except ValueError:
            doc = {}
        if resp.status >= 300:
            self.errors.failed(resp.status, method, path, query, self.user_agent)
            raise ApiError(resp.status, str(doc.get("reason") or resp.reason or ""), doc)
        if self.errors.denied:
            self.errors.succeeded(method, path, query, self.user_agent)
        return doc if isinstance(doc, dict) else {}

    async def get(self, path: str) -> dict[str, Any] | None:
        """GET one object; None when it does not exist (404)."""
        try:
            return await self.request("GET", path)
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    async def list(self, path: str, query: Mapping[str, Any] | None = None, *, page: int = LIST_PAGE,
                   first_page_only: bool = False) -> tuple[list[dict[str, Any]], str | None]:
        """Every object at ``path`` (pages of ``page``; ``first_page_only``: the first page alone) and the
        list's resourceVersion."""
        items: list[dict[str, Any]] = []
        cont: str | None = None
        while True:
            doc = await self.request("GET", path, query={**(query or {}), "limit": page, "continue": cont})
            items.extend(doc.get("items") or [])
            meta = doc.get("metadata") or {}
            cont = meta.get("continue") or None
            if cont is None or first_page_only:
                return items, meta.get("resourceVersion") or None

    async def watch(self, path: str, query: Mapping[str, Any], timeout: float,
                    on_open: Callable[[], None] | None = None) -> AsyncIterator[dict[str, Any]]:
        """A watch stream: one event dict per line, until the server ends it or ``timeout`` of silence;
        ``on_open`` is called once the server has accepted it."""
        t = aiohttp.ClientTimeout(total=None, sock_connect=self.request_timeout, sock_read=timeout)
        resp = await self._send("GET", path, {**query, "watch": "true"}, None, "application/json", t)
        try:
            if resp.status >= 300:
                raw = await resp.read()
                try:
                    doc = orjson.loads(raw)
                except ValueError:
                    doc = {}
                self.errors.failed(resp.status, "GET", path, {**query, "watch": "true"}, self.user_agent)
                raise ApiError(resp.status, str(doc.get("reason") or resp.reason or ""), doc)
            if self.errors.denied:
                self.errors.succeeded("GET", path, {**query, "watch": "true"}, self.user_agent)
            if on_open is not None:
                on_open()
            while True:
                try:
                    line = await resp.content.readline()
                except (aiohttp.ClientError, TimeoutError, OSError) as e:
                    raise ApiError(0, f"{type(e).__name__}: {e}") from None
                if not line:
                    return
                line = line.strip()
                if line:
                    yield orjson.loads(line)
        finally:
            resp.release()
