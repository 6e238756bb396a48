"""Current: the ledger fixture errors on every try (reruns included)."""

import pytest


@pytest.fixture
def ledger():
    raise RuntimeError("ledger database is unreachable")


def test_uses_ledger(ledger):
    assert ledger["balance"] == 10


def test_stays_green():
    assert True
