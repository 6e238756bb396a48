"""Shared pytest fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

_DEFAULT_CORPUS = Path("/work/shared/corpus")


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The reference corpus of real result files (shared/corpus beside the clone in CI)."""
    if _DEFAULT_CORPUS.is_dir():
        return _DEFAULT_CORPUS
    return Path(__file__).resolve().parents[2] / "shared" / "corpus"
