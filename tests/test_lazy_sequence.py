"""LazySequence: the indexing, iteration and equality every lazy row view of a diff shares."""

from __future__ import annotations

import pytest

from evalarc.review.lazy import LazySequence


class Squares(LazySequence[int]):
    __slots__ = ("count", "made")

    def __init__(self, count: int) -> None:
        self.count = count
        self.made: list[int] = []

    def __len__(self) -> int:
        return self.count

    def _at(self, index: int) -> int:
        assert 0 <= index < self.count
        self.made.append(index)
        return index * index


def test_indexes_like_a_tuple_and_makes_only_what_is_read() -> None:
    squares = Squares(6)
    expected = tuple(i * i for i in range(6))
    assert squares[2] == 4 and squares[-1] == 25 and squares[-6] == 0
    assert squares.made == [2, 5, 0]
    for bounds in (slice(None), slice(1, 4), slice(None, None, -2), slice(-3, 100), slice(9, 2)):
        assert squares[bounds] == expected[bounds]
    for outside in (6, -7, 10**9):
        with pytest.raises(IndexError, match="Squares index out of range"):
            squares[outside]
    assert list(squares) == list(expected)
    assert 16 in squares and 3 not in squares
    assert squares.index(9) == 3


def test_equal_to_sequences_with_the_same_items_and_unhashable() -> None:
    assert Squares(3) == [0, 1, 4] and Squares(3) == (0, 1, 4) and Squares(3) == Squares(3)
    assert Squares(3) != [0, 1] and Squares(3) != [0, 1, 5] and Squares(0) == []
    assert Squares(2) != "ab" and Squares(2) != {0: 0, 1: 1}
    with pytest.raises(TypeError):
        hash(Squares(1))
