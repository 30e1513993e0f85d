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
milli-units or bytes, which floating point adds and takes away exactly, and a scalar resource leaves
a sum with the last part that names it (so that its resource names are those a walk would find).
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

    __slots__ = ("parts", "sums", "names", "counts", "unkept", "serial", "width")

    def __init__(self, width: int) -> None:
        self.parts: dict[str, Part] = {}
        self.sums: dict[str, tuple[Resource, ...]] = {}
        # per key and quantity, how many parts name each scalar resource: a name no part has any more
        # leaves the sum, as it would be absent from a walk's
        self.names: dict[str, tuple[dict[str, int], ...]] = {}
        self.counts: dict[str, int] = {}  # parts per key: a key without parts leaves the sums
        self.unkept: set[str] = set()
        self.serial = -1
        self.width = width

    def _add(self, key: str, vector: tuple[Resource, ...]) -> None:
        acc = self.sums.get(key)
        if acc is None:
            self.sums[key] = tuple(r.clone() for r in vector)
            self.names[key] = tuple({name: 1 for name in r.scalars} for r in vector)
            self.counts[key] = 1
            return
        self.counts[key] += 1
        for a, r, names in zip(acc, vector, self.names[key]):
            a.add(r)
            for name in r.scalars:
                names[name] = names.get(name, 0) + 1

    def _sub(self, key: str, vector: tuple[Resource, ...]) -> None:
        left = self.counts[key] - 1
        if not left:
            del self.sums[key], self.names[key], self.counts[key]
            return
        self.counts[key] = left
        acc = self.sums[key]
        for a, r, names in zip(acc, vector, self.names[key]):
            a.sub(r)
            for name in r.scalars:
                left = names[name] - 1
                if left:
                    names[name] = left
                else:
                    del names[name]
                    del a.scalars[name]

    def sync(self, ssn: "Session", contribute: Callable[[JobInfo], Part | None]) -> list[JobInfo]:
        """Bring the book to ``ssn``'s reused jobs; return the jobs the owner walks itself: those the
        snapshot cloned afresh and the reused ones whose part is not kept."""
        jobs, reused = ssn.jobs, ssn.reused
        if self.serial != ssn.serial - 1:
            self.parts, self.sums, self.names, self.counts, self.unkept = {}, {}, {}, {}, set()
        self.serial = ssn.serial
        parts = self.parts
        for uid in parts.keys() - reused:
            self._sub(*parts.pop(uid))
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
