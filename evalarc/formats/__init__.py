"""Readers of other tools' result files into one model: run -> case -> check -> attempts.

The names below are loaded on first use, so that importing :mod:`evalarc.formats.registry`
(which ``--format``'s choices come from) does not load every reader for ``evalarc --help``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalarc.formats.load import load_results
    from evalarc.formats.model import Attempt, Headline, Run, SampleMeta, Source

__all__ = ["Attempt", "Headline", "Run", "SampleMeta", "Source", "load_results"]


def __getattr__(name: str) -> Any:
    if name == "load_results":
        from evalarc.formats.load import load_results

        return load_results
    if name in __all__:
        from evalarc.formats import model

        return getattr(model, name)
    raise AttributeError(f"module 'evalarc.formats' has no attribute {name!r}")
