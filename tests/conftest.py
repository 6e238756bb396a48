"""Shared pytest fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

# The real-tool corpus committed with the project (tests/corpus/README.md says what is in it).
CORPUS = Path(__file__).resolve().parent / "corpus"


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The reference corpus of real result files made by real tools, inside the clone."""
    assert (CORPUS / "README.md").is_file(), f"the corpus is missing: {CORPUS}"
    return CORPUS
