"""Baseline: the ledger fixture works."""

import pytest


@pytest.fixture
def ledger():
    return {"balance": 10}


def test_uses_ledger(ledger):
    assert ledger["balance"] == 10


def test_stays_green():
    assert True
