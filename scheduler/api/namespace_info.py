"""A namespace's ResourceQuotas as the scheduler reads them (api/namespace_info.go).

Volcano keeps, per namespace, the ``status`` of each of its ResourceQuotas (``NamespaceCollection``,
updated by the quota informer) and gives each session a copy (``NamespaceInfo.QuotaStatus``): the
``hard`` limits the quota controller copied from the spec and the ``used`` it counted.  The
resourcequota plugin reads nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .quota import ResourceList, resource_list


@dataclass(slots=True, frozen=True)
class QuotaStatus:
    """One ResourceQuota's ``status``: ``hard`` and ``used``, as exact quantities and as the API's text."""

    hard: ResourceList
    used: ResourceList
    hard_text: Mapping[str, str]
    used_text: Mapping[str, str]


def quota_status_from(obj: Mapping[str, Any]) -> QuotaStatus:
    """``status`` of a ResourceQuota manifest; a quantity that does not parse is left out."""
    status = obj.get("status") or {}
    lists = []
    for key in ("hard", "used"):
        raw = {}
        for name, value in (status.get(key) or {}).items():
            try:
                resource_list({name: value})
            except (ValueError, TypeError):
                continue
            raw[str(name)] = value if isinstance(value, str) else str(value)
        lists.append(raw)
    hard, used = lists
    return QuotaStatus(resource_list(hard), resource_list(used), hard, used)


@dataclass(slots=True)
class NamespaceInfo:
    """``NamespaceInfo``: a namespace and the status of each of its ResourceQuotas, by quota name."""

    name: str
    quota_status: dict[str, QuotaStatus] = field(default_factory=dict)

    def snapshot(self) -> "NamespaceInfo":
        return NamespaceInfo(self.name, dict(self.quota_status))
