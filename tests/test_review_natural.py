"""The bytes key of natural order sorts exactly as the (parts, text) tuple it replaces."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from evalarc.review.natural import natural_key, natural_sorted

_DIGITS = re.compile(r"([0-9]+)")


def tuple_key(text: str) -> tuple[tuple[Any, ...], str]:
    """The reference: digit runs compare by value, the text breaks ties."""
    parts = _DIGITS.split(text)
    return tuple(int(part) if index % 2 else part for index, part in enumerate(parts)), text


_ALPHABET = st.sampled_from(
    [
        "0",
        "1",
        "2",
        "9",
        "00",
        "007",
        "a",
        "b",
        "A",
        "-",
        "_",
        ".",
        " ",
        "\x00",
        "\x01",
        "\x02",
        "é",
        "\ud800",
        "\udfff",
        "\ue000",
        "\U0001f600",
        "\uffff",
        "·",
    ]
)
_IDS = st.lists(_ALPHABET, max_size=8).map("".join)


@settings(max_examples=500, deadline=None)
@given(st.lists(_IDS, max_size=30))
@example(["a1", "a", "a01", "a1b", "a10", "a2", "a\x00", "a\x01", "a\x02", "", "1", "01", "0"])
def test_natural_order_is_the_tuple_order(ids: list[str]) -> None:
    assert natural_sorted(ids) == sorted(ids, key=tuple_key)


@given(_IDS, _IDS)
def test_the_key_orders_any_two_texts_as_the_tuple_does_apart_from_the_tie(
    left: str, right: str
) -> None:
    parts_left, parts_right = tuple_key(left)[0], tuple_key(right)[0]
    if parts_left == parts_right:
        assert natural_key(left) == natural_key(right)
    else:
        assert (natural_key(left) < natural_key(right)) == (parts_left < parts_right)


def test_examples_read_as_a_person_counts() -> None:
    ids = ["case-10", "case-9", "case-1", "case-01", "case-100", "case-2b", "case-2a"]
    assert natural_sorted(ids) == [
        "case-01",
        "case-1",
        "case-2a",
        "case-2b",
        "case-9",
        "case-10",
        "case-100",
    ]


def test_long_lists_are_sorted_in_merged_chunks_with_the_same_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import random

    from evalarc.review import natural

    rng = random.Random(7)
    pieces = ["a", "b", "0", "1", "01", "10", "-", "x9", ""]
    ids = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 5))) for _ in range(3000)]
    expected = sorted(ids, key=tuple_key)
    monkeypatch.setattr(natural, "CHUNK", 97)  # many chunks, equal keys across their borders
    assert natural_sorted(ids) == expected
