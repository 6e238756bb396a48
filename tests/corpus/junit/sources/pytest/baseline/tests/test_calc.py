"""Baseline of the pytest corpus project: the calculator before the change."""

import pytest


@pytest.fixture
def ledger():
    return {"balance": 10}


def test_add():
    assert 1 + 1 == 2


def test_sub():
    assert 5 - 3 == 2


def test_mul():
    assert 3 * 3 == 6, "multiplication is broken"


def test_uses_ledger(ledger):
    assert ledger["balance"] == 10


def test_flaky_io():
    assert True


@pytest.mark.xfail(strict=True, reason="division by zero should give inf (not implemented)")
def test_div_zero_inf():
    assert float("inf") == 1 / 0


@pytest.mark.skip(reason="needs network access")
def test_remote_rates():
    pass


@pytest.mark.parametrize("value, expected", [(1, 1), (2, 4), (3, 9)])
def test_square(value, expected):
    assert value * value == expected


def test_legacy_round():
    assert round(2.5) == 2


class TestParse:
    def test_int(self):
        assert int("42") == 42

    def test_blank(self):
        assert "".strip() == "x", "blank input is rejected"
