"""resourcequota: namespace ResourceQuotas gate admission (plugins/resourcequota/resourcequota.go).

A PodGroup with ``minResources`` is enqueued only if, for every ResourceQuota of its namespace (the
``status`` the quota controller wrote: ``ssn.namespace_info[ns].quota_status``), what it asks of
the resources the quota limits fits under ``hard`` on top of ``used`` and of what this session has
already enqueued in the namespace: the same check as the API server's quota admission
(``vcsched.api.quota.exceeds``), on the PodGroup's ``spec.minResources`` as written (its ResourceList
names, such as ``requests.cpu`` and ``pods``, are matched with the quota's names as they are).
A PodGroup without ``minResources``, or in a namespace with no ResourceQuota, is let through.

Registers (``enableJobEnqueued`` gates both):

- JobEnqueueableFn: Permit, or Reject with the PodGroup event ``Normal Unschedulable`` ``resource
  quota insufficient, requested: <r>, used: <u>, limited: <h>``, where ``r``, ``u`` and ``h`` are the
  request, the quota's ``used`` and its ``hard``, each masked to the exceeded resources and printed
  as Go prints a ``v1.ResourceList`` (``map[cpu:{{20 0} {<nil>} 20 DecimalSI}]``);
- JobEnqueuedFn: once the job is enqueued (every plugin agreed), its whole ``minResources`` is added
  to the namespace's pending use for the rest of the session.

No arguments.  A namespace's quotas are checked in name order (Volcano walks a map): with several
exceeded, the event names the first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vcsched.api.job_info import JobInfo
from vcsched.api.quota import ResourceList, add, exceeds, go_map, mask, resource_list
from vcsched.api.types import Vote
from vcsched.framework.effects import Event
from vcsched.framework.interface import Plugin, Point

if TYPE_CHECKING:
    from vcsched.framework.session import Session


class ResourceQuotaPlugin(Plugin):
    name = "resourcequota"

    def on_session_open(self, ssn: "Session") -> None:
        pending: dict[str, ResourceList] = {}

        def job_enqueueable(job: JobInfo) -> Vote:
            pg = job.podgroup
            raw = pg.min_resources_list if pg is not None else None
            if raw is None:
                return Vote.Permit
            info = ssn.namespace_info.get(pg.namespace)
            if info is None:
                return Vote.Permit
            requests = resource_list(raw)
            for name in sorted(info.quota_status):
                quota = info.quota_status[name]
                used = quota.used
                if pg.namespace in pending:
                    used = add(pending[pg.namespace], used)
                requested, exceeded = exceeds(requests, used, quota.hard)
                if not exceeded:
                    continue
                message = (f"resource quota insufficient, requested: {go_map(mask(raw, exceeded))}, "
                           f"used: {go_map(mask(quota.used_text, exceeded))}, "
                           f"limited: {go_map(mask(quota.hard_text, exceeded))}")
                ssn.effects.append(Event("PodGroup", pg.namespace, pg.name, "Normal", "Unschedulable", message))
                return Vote.Reject
            return Vote.Permit

        def job_enqueued(job: JobInfo) -> None:
            pg = job.podgroup
            if pg is None or pg.min_resources_list is None or pg.namespace not in ssn.namespace_info:
                return
            pending[pg.namespace] = add(pending.get(pg.namespace, {}), resource_list(pg.min_resources_list))

        ssn.add(Point.JOB_ENQUEUEABLE, self.name, job_enqueueable)
        ssn.add(Point.JOB_ENQUEUED, self.name, job_enqueued)
