"""A priority queue ordered by a session's "less" function (util.PriorityQueue)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class _Item(Generic[T]):
    __slots__ = ("value", "less")

    def __init__(self, value: T, less: Callable[[T, T], bool]) -> None:
        self.value = value
        self.less = less

    def __lt__(self, other: "_Item[T]") -> bool:
        return self.less(self.value, other.value)


class PriorityQueue(Generic[T]):
    __slots__ = ("_heap", "_less")

    def __init__(self, less: Callable[[T, T], bool], items: Iterable[T] = ()) -> None:
        self._less = less
        self._heap = [_Item(v, less) for v in items]
        heapq.heapify(self._heap)

    def push(self, value: T) -> None:
        heapq.heappush(self._heap, _Item(value, self._less))

    def pop(self) -> T:
        return heapq.heappop(self._heap).value

    def __len__(self) -> int:
        return len(self._heap)

    def empty(self) -> bool:
        return not self._heap

    def clone(self) -> "PriorityQueue[T]":
        """A queue of the same items, popped independently of this one."""
        other = PriorityQueue.__new__(PriorityQueue)
        other._less = self._less
        other._heap = list(self._heap)
        return other

    @staticmethod
    def sorted(less: Callable[[T, T], bool], items: Iterable[T]) -> list[T]:
        """Items in the order repeated pops would give them."""
        pq = PriorityQueue(less, items)
        return [pq.pop() for _ in range(len(pq))]


class OrderedQueue(PriorityQueue[T]):
    """A PriorityQueue for a strict total order under which queued items do not move: the items pushed
    before the first pop are sorted once then (about one comparison per item when they come nearly in
    order, as jobs do in creation order), the ones pushed later go to the heap, and a pop takes the
    smaller of the two heads.

    For such an order every priority queue pops the same sequence, the smallest item each time, so this
    one pops what ``PriorityQueue`` pops, with a comparison or two per pop in place of about 2·log2 n.
    (allocate's and enqueue's job queues: Session.job_order ends on creation time and uid, and a job's
    place under the JobOrderFns moves only with its own tasks, which change only after it is popped.)
    """

    __slots__ = ("_run", "_next", "_started")

    def __init__(self, less: Callable[[T, T], bool], items: Iterable[T] = ()) -> None:
        self._less = less
        self._heap = [_Item(v, less) for v in items]  # until the first pop: the items, unsorted
        self._run: list[_Item[T]] = []
        self._next = 0
        self._started = False

    def push(self, value: T) -> None:
        if self._started:
            heapq.heappush(self._heap, _Item(value, self._less))
        else:
            self._heap.append(_Item(value, self._less))

    def _start(self) -> None:
        self._started = True
        self._run = self._heap
        self._run.sort()  # list.sort compares with _Item.__lt__ only: the order's ``less``
        self._heap = []

    def pop(self) -> T:
        if not self._started:
            self._start()
        run, heap = self._run, self._heap
        if self._next < len(run) and not (heap and heap[0] < run[self._next]):
            item = run[self._next]
            self._next += 1
            return item.value
        return heapq.heappop(heap).value

    def __len__(self) -> int:
        return len(self._run) - self._next + len(self._heap)

    def empty(self) -> bool:
        return self._next >= len(self._run) and not self._heap

    def clone(self) -> "OrderedQueue[T]":
        other = OrderedQueue.__new__(OrderedQueue)
        other._less = self._less
        other._heap = list(self._heap)
        other._run = self._run  # never changed after the sort: shared
        other._next = self._next
        other._started = self._started
        return other
