"""Current version of the pytest corpus project: the calculator after the change."""

import pytest

CALLS = {"flaky": 0}


@pytest.fixture
def ledger():
    raise RuntimeError("ledger database is unreachable")


def test_add():
    assert 1 + 1 == 2


def test_sub():
    assert 5 - 3 == 3, "subtraction regressed"


def test_mul():
    assert 3 * 3 == 9


def test_uses_ledger(ledger):
    assert ledger["balance"] == 10


def test_flaky_io():
    CALLS["flaky"] += 1
    assert CALLS["flaky"] > 1, "the first call times out"


@pytest.mark.xfail(strict=True, reason="division by zero should give inf (not implemented)")
def test_div_zero_inf():
    assert True  # now passes: a strict xfail that passes is a failure


@pytest.mark.skip(reason="needs network access")
def test_remote_rates():
    pass


@pytest.mark.parametrize("value, expected", [(1, 1), (2, 4), (3, 9)])
def test_square(value, expected):
    assert (value * value if value != 3 else 8) == expected


def test_new_round():
    assert round(3.5) == 4


class TestParse:
    def test_int(self):
        assert int("42") == 42

    def test_blank(self):
        assert "".strip() == ""
