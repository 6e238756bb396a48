"""The "everything else this report records" block shared by report pages.

Each page module names, in its ``REPORT_SECTIONS``, the top-level keys of its report JSON that a
dedicated section shows (key -> that section's HTML id). Every other top-level key is laid out
here, as text or bounded JSON, so no part of a report is left off its page; a test walks each
report kind's JSON and checks that every key has its place.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalarc.evidence.model import cut_text

RECORD_BYTES = 8192
"""Bytes of one recorded value shown; the rest is in the report JSON beside the page."""


@dataclass(frozen=True)
class RecordField:
    key: str
    text: str
    pre: bool
    full_bytes: int | None
    """The full value's size when ``text`` was cut."""
    source: str
    """The report file that holds the full value."""


def record_fields(
    report: Mapping[str, Any], shown: Mapping[str, str], source: str
) -> list[RecordField]:
    """The top-level keys of ``report`` that no dedicated section shows, in report order."""
    fields = []
    for key, value in report.items():
        if key in shown:
            continue
        if isinstance(value, str):
            text, pre = value, False
        else:
            text = json.dumps(value, sort_keys=True, ensure_ascii=False, indent=1, default=str)
            pre = isinstance(value, dict | list)
        kept, full = cut_text(text, RECORD_BYTES)
        fields.append(RecordField(str(key), kept, pre, full, source))
    return fields
