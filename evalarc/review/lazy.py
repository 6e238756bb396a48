"""Read-only sequences whose items are made when read.

A diff of hundreds of thousands of changed checks keeps a few bytes per row (positions, ids,
a kind byte) and builds a row, a cluster member or a presence line only when a page, a report
writer or a test reads it. :class:`LazySequence` holds what those views share: indexing with
negative positions and slices, iteration without exceptions, and list-like equality.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Sequence
from typing import TypeVar, overload

Item = TypeVar("Item")


class LazySequence(Sequence[Item]):
    """A sequence of ``len(self)`` items, item ``i`` made by :meth:`_at` each time it is read.

    Subclasses give ``__len__`` and ``_at`` (called with ``0 <= index < len(self)`` only).
    Equal to any sequence (not a string) with equal items in the same order; unhashable, as a
    list is."""

    __slots__ = ()

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def _at(self, index: int) -> Item:
        """Item ``index``, made from what the view keeps."""

    @overload
    def __getitem__(self, index: int) -> Item: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Item]: ...

    def __getitem__(self, index: int | slice) -> Item | Sequence[Item]:
        if isinstance(index, slice):
            return tuple(map(self._at, range(*index.indices(len(self)))))
        count = len(self)
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError(f"{type(self).__name__} index out of range")
        return self._at(index)

    def __iter__(self) -> Iterator[Item]:
        return map(self._at, range(len(self)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(
            mine == theirs for mine, theirs in zip(self, other, strict=True)
        )

    __hash__ = None  # type: ignore[assignment]
