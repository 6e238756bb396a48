"""Write the hillclimb-review example: six scripted Inspect AI logs of one ticket-routing eval.

No model is called. The outcomes, usage and costs are written out explicitly below, so the files
are byte-for-byte reproducible (no clocks, no random ids): running this script again must leave
`git status` clean. Usage: ``python recordings/examples/hillclimb-review/build.py [OUTPUT_DIR]``.

Story: a support team tries five configurations one after another, each compared with the last
configuration it kept. 12 tuning tickets (route-01..12) are the ones the team looks at; 8
held-out tickets (holdout-01..08) are never shown to it. Every ticket is routed 4 times (epochs)
and scored by one scorer, ``route`` (C when the routed queue is the expected one, else I).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

TASK = "ticket_routing"
EPOCHS = 4
TOKENS = (1_800, 200)
"""Input and output tokens of every sample (2,000 in total)."""
SECONDS = 1.5
"""Working time of every sample."""

TUNING = [
    (
        "route-01",
        "I was charged twice for the March invoice; please reverse one charge.",
        "billing",
    ),
    ("route-02", "Can you send me a copy of last year's receipts for our accountant?", "billing"),
    ("route-03", "The export button spins forever and the CSV never downloads.", "technical"),
    (
        "route-04",
        "Our single sign-on stopped working after we renamed the company domain.",
        "account",
    ),
    ("route-05", "The parcel shows delivered but nothing arrived at the loading dock.", "shipping"),
    (
        "route-06",
        "Please add two more seats to our team plan before Monday's onboarding.",
        "billing",
    ),
    (
        "route-07",
        "The mobile app crashes whenever I attach a photo to a ticket reply.",
        "technical",
    ),
    ("route-08", "I need to change the owner of the workspace to my colleague Priya.", "account"),
    (
        "route-09",
        "Someone logged in to my account from a country I have never visited.",
        "security",
    ),
    (
        "route-10",
        "The replacement charger was sent to my old address; can it be rerouted?",
        "shipping",
    ),
    ("route-11", "Our API key leaked in a public repository, please revoke it now.", "security"),
    (
        "route-12",
        "Webhooks to our endpoint have returned 500 errors since the upgrade.",
        "technical",
    ),
]
HELD_OUT = [
    ("holdout-01", "The annual renewal charged the old card even though I updated it.", "billing"),
    ("holdout-02", "Password reset emails never arrive in my inbox or spam folder.", "account"),
    (
        "holdout-03",
        "The dashboard shows yesterday's numbers even after a hard refresh.",
        "technical",
    ),
    (
        "holdout-04",
        "Two packages from one order came with the wrong customs paperwork.",
        "shipping",
    ),
    ("holdout-05", "A former employee still has admin rights to our billing portal.", "security"),
    ("holdout-06", "I would like an invoice in euros instead of dollars from now on.", "billing"),
    ("holdout-07", "Search results stopped including archived tickets this morning.", "technical"),
    ("holdout-08", "Please merge my two accounts under the work email address.", "account"),
]

# Passing epochs out of 4 for each ticket, in the order of TUNING and HELD_OUT above.
BASELINE_TUNING = [0, 1, 1, 2, 2, 3, 3, 3, 4, 4, 4, 4]  # 31/48
KEPT_TUNING = [2, 2, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4]  # 41/48
ALL_TUNING = [4] * 12  # 48/48
WORSE_TUNING = [2, 2, 2, 3, 2, 3, 2, 4, 4, 4, 4, 4]  # 36/48
BASELINE_HELD_OUT = [1, 2, 2, 3, 3, 4, 4, 4]  # 23/32
KEPT_HELD_OUT = [3, 3, 3, 4, 4, 4, 4, 4]  # 29/32
WORSE_HELD_OUT = [2, 2, 2, 3, 4, 4, 4, 4]  # 25/32

# (file name, model, cost per sample in USD, tuning passes, held-out passes)
VERSIONS = [
    ("00-opus-5-high.json", "example/opus-5-high", 0.046, BASELINE_TUNING, BASELINE_HELD_OUT),
    ("01-opus-5-medium.json", "example/opus-5-medium", 0.041, KEPT_TUNING, KEPT_HELD_OUT),
    ("02-opus-5-medium-examples.json", "example/opus-5-medium", 0.043, ALL_TUNING, KEPT_HELD_OUT),
    ("03-sonnet-5-high.json", "example/sonnet-5-high", 0.019, KEPT_TUNING, KEPT_HELD_OUT),
    ("04-haiku-5-low.json", "example/haiku-5-low", 0.004, WORSE_TUNING, WORSE_HELD_OUT),
    ("05-sonnet-5-low.json", "example/sonnet-5-low", 0.010, KEPT_TUNING, KEPT_HELD_OUT),
]
WRONG_QUEUE = "general"
CREATED = "2026-10-02T09:00:00+00:00"

SPLIT = {
    "schema_version": "evalarc.case-split.v1",
    "held_out": ["holdout-*"],
    "description": (
        "The holdout-* tickets are never shown to whoever tunes the routing configuration; they "
        "show whether a kept change carries over to tickets it was not tuned on."
    ),
}


def _id(*parts: str) -> str:
    """A stable stand-in for Inspect's random ids."""
    return hashlib.sha256("/".join(parts).encode("utf-8")).hexdigest()[:22]


def _sample(
    name: str, model: str, cost: float, ticket: tuple[str, str, str], epoch: int, passes: bool
) -> dict[str, Any]:
    case_id, text, queue = ticket
    routed = queue if passes else WRONG_QUEUE
    usage = {
        "input_tokens": TOKENS[0],
        "output_tokens": TOKENS[1],
        "total_tokens": TOKENS[0] + TOKENS[1],
        "total_cost": cost,
    }
    return {
        "id": case_id,
        "epoch": epoch,
        "input": text,
        "target": queue,
        "messages": [
            {"id": _id(name, case_id, str(epoch), "user"), "content": text, "role": "user"},
            {
                "id": _id(name, case_id, str(epoch), "assistant"),
                "content": routed,
                "role": "assistant",
                "model": model,
            },
        ],
        "output": {
            "model": model,
            "choices": [
                {
                    "message": {"content": routed, "role": "assistant", "model": model},
                    "stop_reason": "stop",
                }
            ],
            "completion": routed,
            "usage": dict(usage),
        },
        "scores": {
            "route": {
                "value": "C" if passes else "I",
                "answer": routed,
                "explanation": f"routed to {routed}; expected {queue}",
            }
        },
        "metadata": {},
        "model_usage": {model: usage},
        "total_time": SECONDS,
        "working_time": SECONDS,
    }


def log_document(
    name: str, model: str, cost: float, tuning: list[int], held_out: list[int]
) -> dict[str, Any]:
    """One Inspect AI JSON log (``--log-format json`` shape) for one configuration."""
    tickets = TUNING + HELD_OUT
    passes = tuning + held_out
    samples = [
        _sample(name, model, cost, ticket, epoch, epoch <= passing)
        for epoch in range(1, EPOCHS + 1)
        for ticket, passing in zip(tickets, passes, strict=True)
    ]
    accuracy = sum(passes) / (len(tickets) * EPOCHS)
    return {
        "version": 2,
        "status": "success",
        "eval": {
            "eval_id": _id(name, "eval"),
            "run_id": _id(name, "run"),
            "created": CREATED,
            "task": TASK,
            "task_version": 0,
            "task_file": "ticket_routing.py",
            "dataset": {
                "name": "support_tickets",
                "samples": len(tickets),
                "sample_ids": [ticket[0] for ticket in tickets],
                "shuffled": False,
            },
            "model": model,
            "model_generate_config": {},
            "config": {"epochs": EPOCHS},
            "scorers": [
                {
                    "name": "route",
                    "options": {},
                    "metrics": [{"name": "inspect_ai/accuracy", "options": {}}],
                    "metadata": {},
                }
            ],
        },
        "results": {
            "total_samples": len(samples),
            "completed_samples": len(samples),
            "scores": [
                {
                    "name": "route",
                    "scorer": "route",
                    "scored_samples": len(samples),
                    "unscored_samples": 0,
                    "params": {},
                    "metrics": {"accuracy": {"name": "accuracy", "value": accuracy, "params": {}}},
                }
            ],
        },
        "stats": {"started_at": CREATED, "completed_at": CREATED},
        "samples": samples,
    }


def _write(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def build(folder: Path) -> list[Path]:
    """Write results/*.json and split.json under ``folder``; return the paths written."""
    written = []
    for name, model, cost, tuning, held_out in VERSIONS:
        path = folder / "results" / name
        _write(path, log_document(name, model, cost, tuning, held_out))
        written.append(path)
    split = folder / "split.json"
    _write(split, SPLIT)
    written.append(split)
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    for written_path in build(target):
        print(written_path)
