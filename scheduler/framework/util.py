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
