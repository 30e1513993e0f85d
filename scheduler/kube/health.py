"""What ``/healthz`` (liveness) and ``/readyz`` (readiness) answer.

Each component ``vcsched run`` runs registers its checks: the scheduler (its caches synced; a
session completed recently while it leads; its watches up and their tasks running), the controllers
(their informers synced while they run; their watches).  A watch counts as broken once its list or watch has failed
without a success for longer than twice its server-side timeout; the session loop as stalled once
no session has completed for ``RunOptions.session_stall`` seconds while leading.  A component
whose task ends while the process is not stopping makes the process exit non-zero instead
(components.py): never half alive.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from time import monotonic
from typing import Any

Check = Callable[[], str | None]  # None: fine; else what is wrong, in a few words


class Health:
    def __init__(self) -> None:
        self._live: list[Check] = []
        self._ready: list[Check] = []

    def liveness(self, check: Check) -> None:
        self._live.append(check)

    def readiness(self, check: Check) -> None:
        self._ready.append(check)

    def problems(self) -> list[str]:
        return [p for c in self._live if (p := c()) is not None]

    def unready(self) -> list[str]:
        return [p for c in self._ready if (p := c()) is not None]


def watches_check(reflectors: Callable[[], Iterable[Any]], what: str) -> Check:
    """Broken: a reflector whose list/watch has failed for longer than twice its watch timeout."""

    def check() -> str | None:
        now = monotonic()
        broken = sorted(r.kind.plural for r in reflectors() if r.broken_for(now) > 2 * r.watch_timeout)
        return f"{what}: watch of {', '.join(broken)} broken" if broken else None

    return check
