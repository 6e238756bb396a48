"""EvalArc: review agent evaluations check by check."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("evalarc")
except PackageNotFoundError:  # running from a checkout without an install
    __version__ = "0.0.0+checkout"

__all__ = ["__version__"]
