"""The one place EvalArc reads the wall clock, so builds can be reproducible."""

from __future__ import annotations

import os
from datetime import UTC, datetime

from evalarc.errors import UsageError


def now_utc() -> datetime:
    """The current time, or SOURCE_DATE_EPOCH when set (reproducible builds)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        try:
            return datetime.fromtimestamp(int(epoch), tz=UTC)
        except (ValueError, OverflowError, OSError):
            raise UsageError(f"SOURCE_DATE_EPOCH={epoch!r} is not a Unix timestamp") from None
    return datetime.now(tz=UTC)


def timestamp() -> str:
    """ISO 8601 UTC timestamp with a trailing Z, e.g. ``2026-11-30T13:22:10Z``."""
    return now_utc().replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
