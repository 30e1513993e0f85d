"""framework/settled.py: sums over reused settled jobs kept across sessions equal a walk over every job."""

from __future__ import annotations

from types import SimpleNamespace

from vcsched.api.job_info import JobInfo
from vcsched.api.resource import Resource
from vcsched.framework.session import SchedulerState
from vcsched.framework.settled import settled_book


def job(uid: str, queue: str, cpu: float, gpu: float = 0.0) -> JobInfo:
    j = JobInfo(uid)
    j.queue = queue
    j.allocated = Resource(cpu, 0.0, {"nvidia.com/gpu": gpu} if gpu else {})
    return j


def part(j: JobInfo):
    return j.queue, (j.allocated,)


class Sessions:
    """Sessions over one scheduler state: each names its jobs and which of them are reused."""

    def __init__(self) -> None:
        self.state = SchedulerState()
        self.serial = 0

    def session(self, jobs: list[JobInfo], reused: set[str], skip: int = 0):
        self.serial += 1 + skip
        by_uid = {j.uid: j for j in jobs}
        ssn = SimpleNamespace(jobs=by_uid, reused=frozenset(reused), serial=self.serial, state=self.state,
                              fresh_jobs=[j for j in jobs if j.uid not in reused])
        book = settled_book(ssn, "test", 1)
        walked = book.sync(ssn, part)
        return book, walked


def walk_sums(jobs: list[JobInfo]) -> dict[str, dict]:
    sums: dict[str, Resource] = {}
    for j in jobs:
        sums.setdefault(j.queue, Resource()).add(j.allocated)
    return {k: r.to_list() for k, r in sums.items()}


def book_sums(book, walked: list[JobInfo]) -> dict[str, dict]:
    sums = {k: v[0].clone() for k, v in book.sums.items()}
    for j in walked:
        sums.setdefault(j.queue, Resource()).add(j.allocated)
    return {k: r.to_list() for k, r in sums.items()}


def test_sums_follow_jobs_coming_and_going():
    s = Sessions()
    a, b, c = job("ns/a", "q1", 1000), job("ns/b", "q2", 2000, gpu=1000), job("ns/c", "q2", 500)
    book, walked = s.session([a, b, c], set())  # nothing reused yet: every job walked
    assert walked == [a, b, c] and not book.sums
    book, walked = s.session([a, b, c], {"ns/a", "ns/b", "ns/c"})
    assert walked == [] and book_sums(book, walked) == walk_sums([a, b, c])
    # b changed (cloned afresh): its part leaves, and with it q2's GPU, which only b had
    b2 = job("ns/b", "q2", 2000)
    book, walked = s.session([a, b2, c], {"ns/a", "ns/c"})
    assert walked == [b2]
    assert "nvidia.com/gpu" not in book.sums["q2"][0].scalars
    assert book_sums(book, walked) == walk_sums([a, b2, c])
    # a deleted: q1 has no job left, so no sum (a walk would not name the queue)
    book, walked = s.session([b2, c], {"ns/b", "ns/c"})
    assert "q1" not in book.sums and book_sums(book, walked) == walk_sums([b2, c])


def test_a_session_missed_starts_the_book_again():
    s = Sessions()
    a = job("ns/a", "q1", 1000)
    s.session([a], set())
    s.session([a], {"ns/a"})
    # a session in between did not bring the book up to date: what it holds may be of other clones
    a2 = job("ns/a", "q1", 3000)
    book, walked = s.session([a2], {"ns/a"}, skip=1)
    assert book_sums(book, walked) == walk_sums([a2])


def test_a_part_not_kept_is_walked_every_session():
    s = Sessions()
    a, b = job("ns/a", "q1", 1000), job("ns/b", "q1", 2000)

    def only_a(j: JobInfo):
        return part(j) if j.uid == "ns/a" else None

    s.session([a, b], set())
    ssn = SimpleNamespace(jobs={"ns/a": a, "ns/b": b}, reused=frozenset({"ns/a", "ns/b"}), serial=2,
                          state=s.state, fresh_jobs=[])
    book = settled_book(ssn, "test", 1)
    walked = book.sync(ssn, only_a)
    assert walked == [b] and book_sums(book, walked) == walk_sums([a, b])
