"""TextWindow.jump passes over a value whatever the window cuts, in time and memory bounded by
the window, and lands exactly after it."""

from __future__ import annotations

import io
import json
import resource
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalarc.formats import jsonstream
from evalarc.formats.jsonstream import (
    STRICT_DECODER,
    JsonSyntaxError,
    TextWindow,
    object_members,
)

_TEXT = st.text(alphabet='ab[]{}"\\/ \n\u00e9\u2028', max_size=12)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=25,
)


def _walk(data: bytes, jumped: set[str]) -> dict[str, object]:
    window = TextWindow(io.BytesIO(data), STRICT_DECODER)
    got: dict[str, object] = {}
    for key in object_members(window):
        if key in jumped:
            window.jump()
            got[key] = "jumped"
        else:
            got[key] = window.value()
    window.finish()
    return got


@settings(max_examples=300, deadline=None)
@given(_VALUES, _VALUES, st.integers(min_value=1, max_value=9))
def test_jump_lands_after_the_value_whatever_the_window_cuts(
    bulk: object, after: object, chunk: int
) -> None:
    data = json.dumps({"bulk": bulk, "after": after}, ensure_ascii=False, indent=1).encode()
    original = jsonstream.TEXT_CHUNK
    jsonstream.TEXT_CHUNK = chunk
    try:
        got = _walk(data, {"bulk"})
    finally:
        jsonstream.TEXT_CHUNK = original
    assert got == {"bulk": "jumped", "after": after}


@pytest.mark.parametrize("value", ['{"a": [1, 2}', '["]"', '[{"x": "}"}', '["\\\\"]]]'])
def test_an_unterminated_value_is_a_syntax_error(value: str) -> None:
    with pytest.raises(JsonSyntaxError):
        _walk(('{"bulk": ' + value).encode(), {"bulk"})


def test_a_long_run_of_brackets_is_passed_over_in_c(tmp_path: Path) -> None:
    # 40 MB of "[]" inside one array: never more than a window in memory, seconds of CPU.
    path = tmp_path / "brackets.json"
    with path.open("w") as handle:
        handle.write('{"bulk": [')
        for _ in range(20):
            handle.write("[]" * 1_000_000)
        handle.write('], "after": 7}')
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.process_time()
    with path.open("rb") as handle:
        window = TextWindow(handle, STRICT_DECODER)
        keys = []
        for key in object_members(window):
            keys.append(key)
            window.jump() if key == "bulk" else window.value()
    assert keys == ["bulk", "after"]
    assert time.process_time() - start < 20
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 64 * 1024  # KiB
