"""The streamed report writer gives exactly the text of the in-memory one."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalarc.canonical import pretty_json
from evalarc.jsonwrite import LazyArray, Streamed, iter_pretty_json, plain_json, write_pretty_json

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4)
    | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)


def _lazify(value: object, draw_lazy: list[bool]) -> object:
    """``value`` with some of its lists made LazyArrays (and the objects holding them Streamed)."""
    if isinstance(value, dict):
        members = {key: _lazify(item, draw_lazy) for key, item in value.items()}
        lazy_inside = any(isinstance(item, LazyArray | Streamed) for item in members.values())
        return Streamed(members) if lazy_inside else dict(value)
    if isinstance(value, list | tuple):
        items = [_lazify(item, draw_lazy) for item in value]
        if (draw_lazy.pop() if draw_lazy else False) or any(
            isinstance(item, LazyArray | Streamed) for item in items
        ):
            return LazyArray.of(items, lambda item: item)
        return value
    return value


@settings(max_examples=400, deadline=None)
@given(_JSON, st.lists(st.booleans(), max_size=20))
def test_streamed_text_equals_pretty_json(value: object, lazy: list[bool]) -> None:
    document = _lazify(value, list(lazy))
    pieces: list[str] = []
    write_pretty_json(document, pieces.append)
    assert "".join(pieces) == pretty_json(value)
    assert json.dumps(plain_json(document)) == json.dumps(value)


def test_a_lazy_array_is_made_anew_on_every_write() -> None:
    made: list[int] = []

    def items() -> list[dict[str, int]]:
        made.append(1)
        return [{"n": 1}, {"n": 2}]

    document = Streamed(rows=LazyArray(items, 2), empty=LazyArray(list, 0))
    first = "".join(iter_pretty_json(document))
    second = "".join(iter_pretty_json(document))
    assert first == second == pretty_json({"rows": [{"n": 1}, {"n": 2}], "empty": []}).rstrip()
    assert len(made) == 2


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_refused_as_by_pretty_json(bad: float) -> None:
    with pytest.raises(ValueError):
        pretty_json({"x": bad})
    with pytest.raises(ValueError, match="Out of range float"):
        write_pretty_json(Streamed(rows=LazyArray.of([{"x": bad}], dict)), lambda piece: None)


def test_keys_that_are_not_strings_are_written_as_json_writes_them() -> None:
    value = {"rows": [{1: "one", None: "none"}], "lone surrogate": "\ud800"}
    pieces: list[str] = []
    write_pretty_json(Streamed(value, rows=LazyArray.of(value["rows"], dict)), pieces.append)
    assert "".join(pieces) == pretty_json(value)


def test_a_lazy_array_that_promised_items_and_made_none_is_an_error() -> None:
    with pytest.raises(ValueError, match="produced no items"):
        write_pretty_json(Streamed(rows=LazyArray(list, 3)), lambda piece: None)
