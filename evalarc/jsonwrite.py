"""Write a large JSON document as a stream, byte for byte as the in-memory writer would.

Reports are written with ``json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)``
(:func:`evalarc.canonical.pretty_json`). A diff of hundreds of thousands of changed checks would
need the whole document as Python objects and then as one string, several times the size of its
inputs. Here a document may hold two stand-ins instead:

- :class:`LazyArray`: a JSON array whose items are produced one at a time when written;
- :class:`Streamed`: a JSON object (a ``dict``) that holds a :class:`LazyArray` somewhere inside.

:func:`iter_pretty_json` yields the document's text in pieces: every plain value is encoded by
``json.dumps`` itself (re-indented to its depth, which gives exactly the nested text), and only
the stand-ins are walked here, so the output equals ``pretty_json(plain_json(value))`` without
the trailing newline. :func:`plain_json` turns the stand-ins into lists and dicts for callers that
want the whole value.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Iterator
from json.encoder import encode_basestring
from typing import Any

INDENT = "  "
_FLUSH_CHARS = 1 << 16


class LazyArray:
    """A JSON array whose items are made when it is written (``items`` is iterated once per
    write); ``size`` tells an empty array (written ``[]``) from a full one without iterating."""

    __slots__ = ("_items", "_size")

    def __init__(self, items: Callable[[], Iterable[Any]], size: int) -> None:
        self._items = items
        self._size = size

    @classmethod
    def of(cls, items: Collection[Any], convert: Callable[[Any], Any]) -> LazyArray:
        """``[convert(item) for item in items]``, made on demand."""
        return cls(lambda: map(convert, items), len(items))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items())


class Streamed(dict[str, Any]):
    """A JSON object holding a :class:`LazyArray` at some depth: written member by member."""

    __slots__ = ()


def plain_json(value: Any) -> Any:
    """``value`` with every stand-in made into a list or a dict (the whole value in memory)."""
    if isinstance(value, LazyArray):
        return [plain_json(item) for item in value]
    if isinstance(value, Streamed):
        return {key: plain_json(item) for key, item in value.items()}
    return value


def _dumps(value: Any, level: int) -> str:
    """``json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)`` as it reads nested
    ``level`` deep."""
    text = json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)
    if level and "\n" in text:
        text = text.replace("\n", "\n" + INDENT * level)
    return text


_INFINITY = float("inf")


def _encode(value: Any, level: int) -> str:
    """:func:`_dumps` for the plain types reports hold, without the standard encoder's per-call
    set-up (half the time of a small value); anything else is left to :func:`_dumps`."""
    kind = type(value)
    if kind is str:
        return encode_basestring(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float:
        if value != value or value == _INFINITY or value == -_INFINITY:
            raise ValueError(f"Out of range float values are not JSON compliant: {value!r}")
        return float.__repr__(value)
    if kind is dict:
        if not value:
            return "{}"
        inner = "\n" + INDENT * (level + 1)
        members = []
        for key, item in value.items():
            if type(key) is not str:
                return _dumps(value, level)
            members.append(encode_basestring(key) + ": " + _encode(item, level + 1))
        return "{" + inner + ("," + inner).join(members) + "\n" + INDENT * level + "}"
    if kind is list or kind is tuple:
        if not value:
            return "[]"
        inner = "\n" + INDENT * (level + 1)
        items = [_encode(item, level + 1) for item in value]
        return "[" + inner + ("," + inner).join(items) + "\n" + INDENT * level + "]"
    return _dumps(value, level)


def _pieces(value: Any, level: int) -> Iterator[str]:
    if isinstance(value, Streamed):
        if not value:
            yield "{}"
            return
        inner = "\n" + INDENT * (level + 1)
        separator = "{" + inner
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be strings, not {type(key).__name__}")
            yield separator + json.dumps(key, ensure_ascii=False) + ": "
            yield from _pieces(item, level + 1)
            separator = "," + inner
        yield "\n" + INDENT * level + "}"
    elif isinstance(value, LazyArray):
        if not len(value):
            yield "[]"
            return
        inner = "\n" + INDENT * (level + 1)
        separator = "[" + inner
        wrote = False
        for item in value:
            yield separator
            yield from _pieces(item, level + 1)
            separator = "," + inner
            wrote = True
        if not wrote:  # a size that promised items the source no longer has
            raise ValueError("a lazy JSON array produced no items")
        yield "\n" + INDENT * level + "]"
    else:
        yield _encode(value, level)


def iter_pretty_json(value: Any) -> Iterator[str]:
    """The text of ``pretty_json(plain_json(value))`` without its trailing newline, in pieces
    of at most about 64 KiB (joined small pieces; one large plain value is one piece)."""
    buffered: list[str] = []
    size = 0
    for piece in _pieces(value, 0):
        buffered.append(piece)
        size += len(piece)
        if size >= _FLUSH_CHARS:
            yield "".join(buffered)
            buffered.clear()
            size = 0
    if buffered:
        yield "".join(buffered)


def write_pretty_json(value: Any, write: Callable[[str], object]) -> None:
    """Write ``pretty_json(plain_json(value))`` (trailing newline included) through ``write``."""
    for piece in iter_pretty_json(value):
        write(piece)
    write("\n")
