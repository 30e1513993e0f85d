"""Sums over the settled jobs a session reused, kept from one session to the next (issue 25).

Several of Volcano's per-session walks add something up over every job: proportion's queue
attributes (allocated, request, inqueue, elastic), the queues' ``status.allocated`` the session
writes.  In ``vcsched run`` most jobs are settled and the snapshot reuses their clones unchanged
(``Snapshot.reused``, ``Cache.keep_clones``), so their part of each sum is the one the previous
session added.  A ``SettledBook`` keeps those parts by job, and their sums by key (a queue's name),
from one session to the next: a session adds the parts of the jobs reused for the first time, takes
away those of the jobs no longer reused (a job the cache changed, or one deleted), and walks only
the others itself.  A session's cost then follows what changed, not what the cluster holds.

The sums equal what a walk over every job would add up: every quantity is a whole number of
milli-units or bytes, which floating point adds and takes away exactly, and a key whose jobs left is
summed afresh from its remaining parts (so that its resource names are those a walk would find).
A book is only trusted by the session right after the one that last brought it up to date (the
snapshots' ``serial``): "reused" means "the same object as in the previous snapshot".  ``simulate``
reuses nothing, so its sessions walk every job as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..api.job_info import JobInfo
from ..api.resource import Resource

if TYPE_CHECKING:
    from .session import Session

# a job's part: the key it adds to and one resource per quantity summed; None: walk it every session
Part = tuple[str, tuple[Resource, ...]]


class SettledBook:
    """One owner's parts of the reused settled jobs (uid → part), their sums by key, and the reused
    jobs whose part cannot be kept (the owner walks those each session)."""

    __slots__ = ("parts", "sums", "unkept", "serial", "width")

    def __init__(self, width: int) -> None:
        self.parts: dict[str, Part] = {}
        self.sums: dict[str, tuple[Resource, ...]] = {}
        self.unkept: set[str] = set()
        self.serial = -1
        self.width = width

    def _add(self, key: str, vector: tuple[Resource, ...]) -> None:
        acc = self.sums.get(key)
        if acc is None:
            self.sums[key] = tuple(r.clone() for r in vector)
            return
        for a, r in zip(acc, vector):
            a.add(r)

    def sync(self, ssn: "Session", contribute: Callable[[JobInfo], Part | None]) -> list[JobInfo]:
        """Bring the book to ``ssn``'s reused jobs; return the jobs the owner walks itself: those the
        snapshot cloned afresh and the reused ones whose part is not kept."""
        jobs, reused = ssn.jobs, ssn.reused
        if self.serial != ssn.serial - 1:
            self.parts, self.sums, self.unkept = {}, {}, set()
        self.serial = ssn.serial
        parts = self.parts
        gone = parts.keys() - reused
        if gone:
            stale = set()
            for uid in gone:
                stale.add(parts.pop(uid)[0])
            for key in stale:
                del self.sums[key]
            for key, vector in parts.values():
                if key in stale:
                    self._add(key, vector)
        self.unkept &= reused
        for uid in reused - parts.keys() - self.unkept:
            part = contribute(jobs[uid])
            if part is None:
                self.unkept.add(uid)
            else:
                parts[uid] = part
                self._add(*part)
        walk = ssn.fresh_jobs
        if self.unkept:
            walk = walk + [jobs[uid] for uid in self.unkept]
        return walk


def settled_book(ssn: "Session", owner: str, width: int) -> SettledBook:
    """``owner``'s book, kept in the scheduler's state across sessions."""
    key = f"settled:{owner}"
    book = ssn.state.plugins.get(key)
    if book is None or book.width != width:
        book = ssn.state.plugins[key] = SettledBook(width)
    return book
