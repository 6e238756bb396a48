"""pytest suite behind recordings/examples/results-diff/junit/: checks a small scripted refund desk.

make.sh runs it twice, with REFUND_DESK_REVISION=baseline and =current, writing JUnit XML. The
current revision escalates large refunds (fixing refund-large) but forgets that an order was
already refunded (breaking refund-duplicate), and its order lookup service is down, so the reply
to the status ticket cannot be checked and the test skips.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

REVISION = os.environ.get("REFUND_DESK_REVISION", "baseline")


@dataclass(frozen=True)
class Ticket:
    order: str
    intent: str
    amount: int = 0
    refunded_before: bool = False


TICKETS = {
    "refund-small": Ticket("A-1001", "refund", amount=12),
    "refund-large": Ticket("A-1002", "refund", amount=2400),
    "refund-duplicate": Ticket("A-1003", "refund", amount=80, refunded_before=True),
    "status-open": Ticket("A-1004", "status"),
}

EXPECTED_OUTCOME = {
    "refund-small": "approved",
    "refund-large": "escalated",
    "refund-duplicate": "rejected",
    "status-open": "answered",
}


class LookupUnavailable(RuntimeError):
    """The (simulated) order lookup service did not answer."""


def lookup_order(order: str) -> str:
    if REVISION == "current":
        raise LookupUnavailable("order lookup service unavailable")
    return f"Order {order} is packed and leaves the warehouse tomorrow."


def decide(ticket: Ticket) -> str:
    if ticket.intent == "status":
        return "answered"
    if REVISION == "baseline":
        return "rejected" if ticket.refunded_before else "approved"
    # current: large refunds now go to a supervisor, but the duplicate guard was lost
    return "escalated" if ticket.amount > 500 else "approved"


def reply(ticket: Ticket) -> str:
    if ticket.intent == "status":
        return lookup_order(ticket.order)
    return f"Your refund for order {ticket.order} is {decide(ticket)}."


@pytest.mark.parametrize("name", sorted(TICKETS))
def test_policy_outcome(name: str) -> None:
    assert decide(TICKETS[name]) == EXPECTED_OUTCOME[name]


@pytest.mark.parametrize("name", sorted(TICKETS))
def test_names_the_order(name: str) -> None:
    ticket = TICKETS[name]
    try:
        text = reply(ticket)
    except LookupUnavailable as error:
        pytest.skip(str(error))
    assert ticket.order in text
