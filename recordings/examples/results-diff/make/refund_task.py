"""Inspect AI task `refund_policy` behind recordings/examples/results-diff/inspect/.

A support agent answers eight order tickets with one line `<action>:<order>[:<outcome>]`. The
agent is scripted: Inspect's `mockllm/model` returns the reply that the chosen revision gives for
the ticket, so the logs are real Inspect logs without any model or network access. make.sh runs

    inspect eval refund_task.py@refund_policy -T revision=baseline --log-format json ...

The current revision fixes refund-large, status-missing and cancel-shipped, breaks
refund-duplicate, and adds a stray `:queued` suffix to cancel-pending on the second epoch.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessage, GenerateConfig, ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes, match
from inspect_ai.solver import Generate, Solver, TaskState, solver

# (sample id, ticket text, expected reply)
TICKETS: list[tuple[str, str, str]] = [
    (
        "refund-small",
        "Order 1001: I was charged twice for a $12 phone case, please refund the extra charge.",
        "refund:1001:approved",
    ),
    (
        "refund-large",
        "Order 1002: please refund the $2,400 laptop, it arrived with a cracked screen.",
        "refund:1002:escalated",
    ),
    (
        "refund-duplicate",
        "Order 1003: I returned the headphones last month and still want my money back.",
        "refund:1003:rejected",
    ),
    ("status-open", "Order 1004: has my desk lamp shipped yet?", "status:1004:open"),
    (
        "status-missing",
        "Where is order 9999? I never got a confirmation email.",
        "status:9999:unknown",
    ),
    ("cancel-shipped", "Order 1005: cancel my blender order, please.", "cancel:1005:refused"),
    (
        "cancel-pending",
        "Order 1006: please cancel the garden hose I ordered an hour ago.",
        "cancel:1006",
    ),
    (
        "address-change",
        "Order 1007: please ship it to 12 Elm Street instead of my old flat.",
        "address:1007:updated",
    ),
]

# What each revision of the agent replies, per sample id; a list gives one reply per epoch.
REPLIES: dict[str, dict[str, str | list[str]]] = {
    "baseline": {
        "refund-small": "refund:1001:approved",
        "refund-large": "refund:1002:approved",
        "refund-duplicate": "refund:1003:rejected",
        "status-open": "status:1004:open",
        "status-missing": "status:9999:open",
        "cancel-shipped": "cancel:1005",
        "cancel-pending": "cancel:1006",
        "address-change": "address:1007:updated",
    },
    "current": {
        "refund-small": "refund:1001:approved",
        "refund-large": "refund:1002:escalated",
        "refund-duplicate": "refund:1003:approved",
        "status-open": "status:1004:open",
        "status-missing": "status:9999:unknown",
        "cancel-shipped": "cancel:1005:refused",
        "cancel-pending": ["cancel:1006", "cancel:1006:queued"],
        "address-change": "address:1007:updated",
    },
}

EPOCHS = 2

# mockllm's callable sees only the messages, so the solver tells it which epoch is running.
_current_epoch: ContextVar[int] = ContextVar("current_epoch", default=1)
_ticket_ids = {text: sample_id for sample_id, text, _ in TICKETS}


@solver
def answer_ticket() -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        _current_epoch.set(state.epoch)
        return await generate(state)

    return solve


@task
def refund_policy(revision: str = "baseline") -> Task:
    if revision not in REPLIES:
        raise ValueError(f"revision must be one of {sorted(REPLIES)}, not {revision!r}")
    return Task(
        dataset=MemoryDataset(
            [Sample(id=case_id, input=text, target=target) for case_id, text, target in TICKETS],
            name="refund_tickets",
        ),
        solver=answer_ticket(),
        scorer=[match(location="exact"), includes()],
        epochs=EPOCHS,
        model=get_model("mockllm/model", custom_outputs=scripted_agent(revision)),
    )


def scripted_agent(revision: str) -> Any:
    replies = REPLIES[revision]

    def reply(
        messages: list[ChatMessage], tools: Any, tool_choice: Any, config: GenerateConfig
    ) -> ModelOutput:
        ticket = messages[-1].text
        chosen = replies[_ticket_ids[ticket]]
        if isinstance(chosen, list):
            chosen = chosen[_current_epoch.get() - 1]
        output = ModelOutput.from_content(model="mockllm/model", content=chosen)
        # Explicit usage: otherwise Inspect counts tokens with a tokenizer it would download.
        input_tokens = len(ticket.split())
        output_tokens = len(chosen.split(":"))
        output.usage = ModelUsage(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            total_tokens=input_tokens + output_tokens,
        )
        return output

    return reply
