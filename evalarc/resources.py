"""Find the bundled folders (packs, templates, assets, recordings, docs) from a checkout or wheel.

A wheel force-includes them under ``evalarc/_bundled/``; a checkout has them beside the package.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
BUNDLED_NAMES = ("packs", "site_templates", "assets", "recordings", "docs")


def bundled_dir(name: str) -> Path:
    """Return the folder ``name`` (one of BUNDLED_NAMES) wherever this EvalArc was installed."""
    if name not in BUNDLED_NAMES:
        raise ValueError(f"unknown bundled folder {name!r}")
    installed = _PACKAGE_DIR / "_bundled" / name
    if installed.is_dir():
        return installed
    return _PACKAGE_DIR.parent / name
