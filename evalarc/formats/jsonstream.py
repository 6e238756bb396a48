"""Walk a large JSON file value by value with the C decoder, keeping one value at a time.

A :class:`TextWindow` slides over the decoded text of a file: the caller walks the containers it
cares about (:func:`object_members`, :func:`array_items`) and parses the values inside them whole
with ``json``'s C decoder, so memory follows the largest single value (one Inspect sample, one
promptfoo row) rather than the file. Text already consumed is dropped.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from itertools import accumulate
from typing import Any, BinaryIO

from evalarc.canonical import _parse_float, _reject_constant, _reject_duplicates
from evalarc.formats.archive import show_name

_SPACE = re.compile(r"[ \t\n\r]*")
_TO_BRACKETS = re.compile(
    r'(?:[^"\[\]{}]++|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+(?:(?P<run>[\[\]{}]++)|(?P<open>"))'
)
"""Text and whole strings (possessive: no backtracking), then a run of brackets or the quote
of a string the window cuts."""
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
TEXT_CHUNK = 4 * 1024 * 1024
"""Bytes read at a time; a value larger than this makes the window grow."""
_NUMBER_TAIL = 2
"""Characters a cut number can leave unparsed: the ``.``, ``e`` or ``e+`` of ``1.``/``1e+5``."""
_KINDS: dict[str, type] = {"{": dict, "[": list, '"': str, "t": bool, "f": bool, "n": type(None)}

MAX_VALUE_CONTAINERS = 2_000_000
"""One value (an Inspect sample, a promptfoo row) may hold at most this many objects and arrays:
parsed, each costs 60+ bytes, so 63 MiB of ``{}`` would take gigabytes."""

LENIENT_DECODER = json.JSONDecoder()
"""Accepts NaN/Infinity (Inspect writes them in metrics); duplicate keys inside values pass."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's pairs as a dict, refusing a duplicate key as
    :func:`evalarc.canonical.strict_loads` does (the first one named), the dict built in C: a
    duplicate shows as fewer keys than pairs. (Kept here, not in ``canonical.py``, whose bytes
    are part of every pack's grader fingerprint.)"""
    result = dict(pairs)
    if len(result) != len(pairs):
        return _reject_duplicates(pairs)
    return result


STRICT_DECODER = json.JSONDecoder(
    parse_constant=_reject_constant,
    parse_float=_parse_float,
    object_pairs_hook=_unique_keys,
)
""":func:`evalarc.canonical.strict_loads`'s rules (no NaN/Infinity, no overflowing float, no
duplicate key) for a value parsed from the window."""


class JsonSyntaxError(ValueError):
    """The file is malformed at ``offset`` (characters from the start of the file)."""

    def __init__(self, what: str, offset: int) -> None:
        super().__init__(f"{what} at character {offset}")


class CapExceeded(Exception):
    """A value passes one of the caps above (the message names the cap, not the file)."""


class TextWindow:
    """A sliding window of decoded text over a JSON file (see the module docstring)."""

    def __init__(self, handle: BinaryIO, decoder: json.JSONDecoder = LENIENT_DECODER) -> None:
        self._handle = handle
        self._decoder = decoder
        self._text_decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self.text = ""
        self.position = 0
        self._dropped = 0
        self.at_end = False

    def offset(self) -> int:
        return self._dropped + self.position

    def _grow(self, at_least: int = 0) -> None:
        data = self._handle.read(max(TEXT_CHUNK, at_least))
        decoded = self._text_decoder.decode(data, final=not data)
        if not data:
            self.at_end = True
        if self.position > len(self.text) // 2:
            self._dropped += self.position
            self.text = self.text[self.position :]
            self.position = 0
        self.text += decoded

    def peek(self) -> str:
        """The next non-space character ('' at the end of the file), leaving it unconsumed."""
        while True:
            match = _SPACE.match(self.text, self.position)
            self.position = match.end() if match else self.position
            if self.position < len(self.text) or self.at_end:
                return self.text[self.position : self.position + 1]
            self._grow()

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise JsonSyntaxError(f"expected {char!r}", self.offset())
        self.position += 1

    def value(self) -> Any:
        """Parse the next JSON value, reading more of the file while it is incomplete."""
        self.peek()
        while True:
            try:
                value, end = self._decoder.raw_decode(self.text, self.position)
            except json.JSONDecodeError as error:
                if self.at_end:
                    raise JsonSyntaxError(error.msg, self._dropped + error.pos) from None
                self._grow(len(self.text) - self.position)
                self._check_containers()
                continue
            # "1.5e" | "10": a number cut by the window parses as a shorter number followed by
            # up to two stray characters, so a value ending that close to the edge is re-read.
            if end + _NUMBER_TAIL < len(self.text) or self.at_end:
                self.position = end
                return value
            self._grow()

    def _check_containers(self) -> None:
        """Refuse an unfinished value that may hold more containers than the cap, before the
        decoder builds them: the count covers the window from the value on (braces inside
        strings and in the values after it included), an upper bound."""
        start = self.position
        if self.text.count("{", start) + self.text.count("[", start) > MAX_VALUE_CONTAINERS:
            raise CapExceeded(
                f"a value at character {self.offset()} holds more than "
                f"{MAX_VALUE_CONTAINERS:,} JSON objects and arrays (the cap on one value)"
            )

    def kind(self) -> type | None:
        """The type of the next value judged from its first character (None for a number or
        anything else), without consuming it."""
        return _KINDS.get(self.peek())

    def skip(self, depth: int = 0, walk_depth: int = 2) -> None:
        """Consume the next value keeping nothing: containers down to ``walk_depth`` are walked,
        deeper values are parsed one at a time and dropped."""
        kind = self.kind()
        if depth >= walk_depth or kind not in (dict, list):
            self.value()
            return
        members = object_members(self) if kind is dict else array_items(self)
        for _ in members:
            self.skip(depth + 1, walk_depth)

    def jump(self) -> None:
        """Consume the next value without building or checking it: a C regex passes over text
        and whole strings to the next run of brackets, and a run changes the depth by its
        counts unless it could close the value, so a value of hundreds of megabytes costs
        seconds and the window alone. Only for callers that check those bytes another way
        (``verify`` compares the whole file with the recomputed report)."""
        if self.peek() not in ("[", "{"):
            self.value()
            return
        depth = 0
        while True:
            match = _TO_BRACKETS.match(self.text, self.position)
            if match is None:  # the rest of the window is text and whole strings
                self.position = len(self.text)
            elif match.group("open") is not None:  # a string the window cuts: read on
                self.position = match.start("open")
            else:
                run = match.group("run")
                opens = run.count("[") + run.count("{")
                closes = len(run) - opens
                # The value ends inside this run only if the depth falls to zero in it: the
                # lowest point is found in C, the exact bracket only then.
                if closes >= depth and depth + min(accumulate(map(_STEP.__getitem__, run))) <= 0:
                    levels = accumulate(map(_STEP.__getitem__, run), initial=depth)
                    ends = next(index for index, level in enumerate(levels) if index and not level)
                    self.position = match.start("run") + ends
                    return
                depth += opens - closes
                self.position = match.end()
                continue
            if self.at_end:
                raise JsonSyntaxError("unterminated array or object", self.offset())
            self._grow()

    def finish(self) -> None:
        """Refuse anything but white space after the top-level value."""
        if self.peek():
            raise JsonSyntaxError("extra data after the top-level value", self.offset())


def object_members(window: TextWindow) -> Iterator[str]:
    """Yield each key of the object at the window, leaving the window at the key's value; the
    caller consumes the value before asking for the next key. Duplicate keys are refused."""
    window.expect("{")
    if window.peek() == "}":
        window.position += 1
        return
    seen: set[str] = set()
    while True:
        if window.peek() != '"':
            raise JsonSyntaxError("expected a property name", window.offset())
        key = window.value()
        if key in seen:
            raise JsonSyntaxError(f"duplicate key {show_name(key)}", window.offset())
        seen.add(key)
        window.expect(":")
        yield key
        if window.peek() == ",":
            window.position += 1
            continue
        window.expect("}")
        return


def array_items(window: TextWindow) -> Iterator[int]:
    """Yield the index of each element of the array at the window, leaving the window at the
    element; the caller consumes it before asking for the next one."""
    window.expect("[")
    if window.peek() == "]":
        window.position += 1
        return
    index = 0
    while True:
        yield index
        index += 1
        if window.peek() == ",":
            window.position += 1
            continue
        window.expect("]")
        return
