"""EvalArc: review agent evaluations check by check."""

from __future__ import annotations

__all__ = ["__version__"]

__version__: str
"""The installed distribution's version ("0.0.0+checkout" from a checkout without an install);
looked up on first use, so ``evalarc --help`` does not pay for reading package metadata."""


def __getattr__(name: str) -> str:
    if name != "__version__":
        raise AttributeError(f"module 'evalarc' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("evalarc")
    except PackageNotFoundError:  # running from a checkout without an install
        found = "0.0.0+checkout"
    globals()["__version__"] = found
    return found
