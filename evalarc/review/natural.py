"""Natural order for case ids and check names: runs of digits compare by value (``case-2``
before ``case-10``), everything else by code point, and the text itself breaks ties (``01``
before ``1``), so the order is total and stable.

The order is the one of the key ``(parts, text)`` where ``parts`` splits the text at its digit
runs (``"a10b"`` -> ``("a", 10, "b")``). Building that tuple for every id of a large file costs
several times the ids' own memory, so :func:`natural_key` encodes it as one ``bytes`` value whose
plain byte order is the same order (``tests/test_review_natural.py`` checks the two agree):

- a text part is its UTF-8 bytes (whose byte order is code point order; a lone surrogate is
  encoded as its three-byte form, which sorts where its code point does) with the bytes 0x00 and
  0x01 escaped as 0x01 0x01 and 0x01 0x02, ended by 0x00, which sorts before any character, so
  a shorter part sorts first as it does among strings;
- a digit run is the count of its significant digits (four bytes, big-endian) then those
  digits, so a number with fewer digits sorts first and equal counts compare digit by digit;
- the tie on the text is left to a stable sort of the texts in plain order beforehand.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable

_DIGITS = re.compile(r"([0-9]+)")


def natural_key(text: str) -> bytes:
    """The sort key of ``text`` in natural order, apart from the tie on the text itself."""
    parts = _DIGITS.split(text)
    encoded = bytearray()
    for index, part in enumerate(parts):
        if index % 2:
            digits = part.lstrip("0") or "0"
            encoded += len(digits).to_bytes(4, "big")
            encoded += digits.encode("ascii")
        else:
            data = part.encode("utf-8", "surrogatepass")
            if b"\x01" in data:
                data = data.replace(b"\x01", b"\x01\x02")
            if b"\x00" in data:
                data = data.replace(b"\x00", b"\x01\x01")
            encoded += data
            encoded += b"\x00"
    return bytes(encoded)


CHUNK = 65_536
"""Longer lists are sorted in chunks of this many and merged, so at most this many keys exist
at once (half a million ids would need 25 MB of keys at once)."""


def natural_sort(items: list[str]) -> None:
    """Sort ``items`` in place in natural order."""
    if len(items) < 2:
        return
    items.sort()  # plain order first: the tie-break on the text, kept by the stable sorts below
    if not any(_DIGITS.search(item) for item in items):
        return
    if len(items) <= CHUNK:
        items.sort(key=natural_key)
        return
    chunks = [items[start : start + CHUNK] for start in range(0, len(items), CHUNK)]
    for chunk in chunks:
        chunk.sort(key=natural_key)
    # heapq.merge is stable across its inputs, and each chunk holds texts after the previous
    # chunk's in plain order, so equal keys keep their plain order.
    items[:] = heapq.merge(*chunks, key=natural_key)


def natural_sorted(items: Iterable[str]) -> list[str]:
    """A new list of ``items`` in natural order."""
    listed = list(items)
    natural_sort(listed)
    return listed
