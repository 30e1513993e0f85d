"""PodDisruptionBudgets as the scheduler reads them (``policy/v1``): what Volcano's pdb plugin looks at.

The cache builds one per PodDisruptionBudget it is told of: its namespace, its selector
(``metav1.LabelSelectorAsSelector``: a nil selector selects nothing, ``{}`` everything; None when it
does not convert, which the plugin skips as Volcano does on the error), ``status.disruptionsAllowed``
and the names in ``status.disruptedPods``.  The disruption controller writes that status; the
scheduler only reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .k8s import LabelSelector, SelectorError, parse_label_selector


@dataclass(slots=True, frozen=True)
class PodDisruptionBudget:
    namespace: str
    name: str
    selector: LabelSelector | None
    disruptions_allowed: int = 0
    disrupted_pods: frozenset[str] = frozenset()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def pdb_from(obj: Mapping[str, Any]) -> PodDisruptionBudget:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    try:
        selector: LabelSelector | None = parse_label_selector(spec.get("selector"))
    except SelectorError:
        selector = None
    try:
        allowed = int(status.get("disruptionsAllowed") or 0)
    except (TypeError, ValueError):
        allowed = 0
    return PodDisruptionBudget(
        namespace=meta.get("namespace") or "default",
        name=meta.get("name") or "",
        selector=selector,
        disruptions_allowed=allowed,
        disrupted_pods=frozenset(str(k) for k in (status.get("disruptedPods") or {})),
    )
