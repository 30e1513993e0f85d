"""OrderedQueue (framework/util.py) pops what PriorityQueue pops for a strict total order, with far fewer
comparisons: allocate's and enqueue's job queues."""

import random

import pytest

from vcsched.framework.util import OrderedQueue, PriorityQueue


class Counted:
    """A ``less`` over (priority, uid) pairs that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, l: tuple[int, str], r: tuple[int, str]) -> bool:
        self.calls += 1
        return l < r


def drive(queue_type, seed: int, n: int) -> tuple[list, int]:
    """Push n items, then pop them one by one; every third pop pushes a new item back (allocate pushes a
    job again while it has tasks left), some smaller than everything left.  The popped sequence."""
    rng = random.Random(seed)
    less = Counted()
    q = queue_type(less)
    for i in range(n):
        q.push((rng.randrange(5), f"job-{i:05d}"))
    out = []
    pushed = 0
    while not q.empty():
        assert len(q) > 0
        out.append(q.pop())
        if len(out) % 3 == 0 and pushed < n // 2:
            q.push((rng.randrange(-1, 5), f"again-{pushed:05d}"))
            pushed += 1
    assert len(q) == 0
    return out, less.calls


@pytest.mark.parametrize("seed, n", [(1, 1), (2, 7), (3, 200), (4, 2000)])
def test_pops_what_a_heap_pops(seed, n):
    expected, heap_calls = drive(PriorityQueue, seed, n)
    got, calls = drive(OrderedQueue, seed, n)
    assert got == expected
    if n >= 200:
        assert calls < heap_calls


def test_items_in_order_cost_about_one_comparison_each():
    """Jobs come in creation order: the sort is one pass, a pop one comparison at most."""
    less = Counted()
    q = OrderedQueue(less)
    for i in range(10_000):
        q.push((0, f"job-{i:05d}"))
    assert [q.pop() for _ in range(10_000)] == [(0, f"job-{i:05d}") for i in range(10_000)]
    assert less.calls < 10_000


def test_clone_pops_independently():
    q = OrderedQueue(lambda l, r: l < r, [5, 3, 9])
    assert q.pop() == 3
    q.push(1)
    c = q.clone()
    assert [q.pop() for _ in range(3)] == [1, 5, 9]
    assert [c.pop() for _ in range(3)] == [1, 5, 9]
    assert q.empty() and c.empty()


class FakeSession:
    def __init__(self, fns) -> None:
        self._fns = fns

    def fns(self, point):
        return self._fns


class Named:
    def __init__(self, name: str) -> None:
        self.name = name


def test_allocate_sorts_a_jobs_tasks_only_under_a_transitive_task_order():
    """allocate's worksheet sorts when every TaskOrderFn is ``stable`` and CompareTask compares every
    pair of names by index or none: with some names indexed and others not it can be intransitive."""
    from vcsched.actions.allocate import _sortable
    from vcsched.plugins.priority import task_order

    indexed = [Named(f"job-1-task-{i}") for i in range(20)]
    plain = [Named(f"worker{i}") for i in range(20)]
    assert _sortable(FakeSession([task_order]), indexed)
    assert _sortable(FakeSession([task_order]), plain)
    assert _sortable(FakeSession([]), indexed)
    assert not _sortable(FakeSession([task_order]), indexed + [Named("job-1-task-x")])
    assert not _sortable(FakeSession([task_order]), plain + indexed)
    assert not _sortable(FakeSession([lambda l, r: 0]), indexed)  # a TaskOrderFn that does not say
