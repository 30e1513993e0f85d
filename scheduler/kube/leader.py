"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does.

- try to acquire or renew every ``retry_period``: GET the Lease; create it if
  missing; take it over when its holder has not renewed it for
  ``lease_duration`` (measured on our own clock since we last saw the record
  change, as client-go does, so clock skew between replicas does not matter);
  renew it when we hold it.  Writes are PUTs carrying the resourceVersion read,
  so two candidates never both win.
- a leader that cannot renew within ``renew_deadline`` stops leading.
- leaseTransitions counts changes of holder; acquireTime is set on each.
- on a clean stop the leader releases the Lease (ReleaseOnCancel), so a standby
  takes over at once instead of waiting out the lease.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import structlog

from .api import LEASES, ApiError, KubeClient
from .source import rfc3339

log = structlog.get_logger("vcsched.kube.leader")


class LeaderElector:
    def __init__(self, client: KubeClient, namespace: str, name: str, identity: str, *,
                 lease_duration: float = 15.0, renew_deadline: float = 10.0, retry_period: float = 2.0) -> None:
        if not lease_duration > renew_deadline > retry_period > 0:
            raise ValueError("need lease_duration > renew_deadline > retry_period > 0")
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.leading = asyncio.Event()
        self.lost = asyncio.Event()
        self._observed: dict[str, Any] | None = None  # the last spec seen
        self._observed_at = 0.0  # monotonic time it was first seen

    def _spec(self, holder: str, transitions: int, acquire: str) -> dict[str, Any]:
        return {"holderIdentity": holder, "leaseDurationSeconds": max(1, round(self.lease_duration)),
                "acquireTime": acquire, "renewTime": rfc3339(micro=True), "leaseTransitions": transitions}

    async def try_acquire_or_renew(self) -> bool:
        path = LEASES.path(self.namespace, self.name)
        now = time.monotonic()
        try:
            lease = await self.client.request("GET", path)
        except ApiError as e:
            if e.status != 404:
                raise
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": self._spec(self.identity, 0, rfc3339(micro=True))}
            await self.client.request("POST", LEASES.path(self.namespace), body=body)
            self._observe(body["spec"], now)
            return True
        spec = lease.get("spec") or {}
        if spec != self._observed:
            self._observe(spec, now)
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and self._observed_at + duration > now:
            return False  # held by someone else, not expired
        transitions = int(spec.get("leaseTransitions") or 0)
        if holder == self.identity:
            new = self._spec(self.identity, transitions, spec.get("acquireTime") or rfc3339(micro=True))
        else:
            new = self._spec(self.identity, transitions + 1, rfc3339(micro=True))
        body = {**lease, "spec": new}
        await self.client.request("PUT", path, body=body)  # carries resourceVersion: a race loses with 409
        self._observe(new, now)
        return True

    def _observe(self, spec: dict[str, Any], at: float) -> None:
        self._observed = dict(spec)
        self._observed_at = at

    async def run(self) -> None:
        """Acquire, then renew until that fails for ``renew_deadline``; sets ``lost`` and returns then."""
        while not self.leading.is_set():
            try:
                if await self.try_acquire_or_renew():
                    self.leading.set()
                    log.info("became leader", lease=f"{self.namespace}/{self.name}", identity=self.identity)
                    break
            except ApiError as e:
                log.info("lease not acquired", error=str(e))
            await asyncio.sleep(self.retry_period)
        last_renew = time.monotonic()
        while True:
            await asyncio.sleep(self.retry_period)
            try:
                if await self.try_acquire_or_renew():
                    last_renew = time.monotonic()
                    continue
                log.warning("lease taken by another candidate", holder=(self._observed or {}).get("holderIdentity"))
                break
            except ApiError as e:
                log.warning("lease renewal failed", error=str(e))
            if time.monotonic() - last_renew >= self.renew_deadline:
                log.error("lease not renewed within the deadline", renew_deadline=self.renew_deadline)
                break
        self.leading.clear()
        self.lost.set()

    async def release(self) -> None:
        """Give the lease up at once (holder emptied, 1s duration), if we hold it."""
        if not self.leading.is_set():
            return
        path = LEASES.path(self.namespace, self.name)
        try:
            lease = await self.client.request("GET", path)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            spec = {**spec, "holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": rfc3339(micro=True)}
            await self.client.request("PUT", path, body={**lease, "spec": spec})
        except ApiError as e:
            log.warning("lease not released", error=str(e))
        self.leading.clear()
