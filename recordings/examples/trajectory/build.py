"""Write the trajectory example: four real durable-kv evaluations at scripted elapsed times.

The evaluations are real: this script writes each candidate workspace from the pack (the starter,
two declared faults applied to the reference, and the reference itself) and runs ``evalarc
evaluate --backend local --trust-local`` on it with the pack's default seeds 17 41 97, keeping the
complete ``evaluation.json``. The elapsed times are scripted: the script stands in for an agent
harness's monotonic clock, so the times are caller-reported exactly as the seed defines them and
are not a measurement of any agent.

Scores are deterministic for these seeds, so re-running the script gives the same scores and the
same area; timings, ``created_at`` and the host runtime (Python version, platform string) change.

Usage: ``python recordings/examples/trajectory/build.py [OUTPUT]`` (default: ``checkpoints.json`` beside this
script). It runs candidate code on this host, which is why ``--trust-local`` is passed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from evalarc.packs import materialize_workspace

TASK = "durable-kv"
BUDGET_SECONDS = 3600
"""The budget the README's command integrates over."""
TIMELINE: list[tuple[int, str, str | None]] = [
    (300, "starter", None),
    (900, "reference", "delete-noop"),
    (1800, "reference", None),
    (2700, "reference", "cas-always-wins"),
]
"""(elapsed seconds, workspace, declared fault): the starter, a faulty version, the reference
(resolved), then a regression to another faulty version that the curve must keep."""


def evaluate(workspace: Path, output: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "evalarc.cli", "evaluate", str(workspace), "--task", TASK,
         "--backend", "local", "--trust-local", "--quiet", "--output", str(output)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode not in (0, 1):
        raise SystemExit(f"evaluate {workspace.name} failed ({done.returncode}): {done.stderr}")
    evaluation: dict[str, Any] = json.loads((output / "evaluation.json").read_text("utf-8"))
    if evaluation["valid"] is not True:
        raise SystemExit(f"evaluation of {workspace.name} is invalid; not usable as a checkpoint")
    return evaluation


def build(target: Path) -> list[dict[str, Any]]:
    checkpoints: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="evalarc-trajectory-") as temp:
        root = Path(temp)
        for elapsed, kind, fault in TIMELINE:
            label = fault or kind
            workspace = root / f"ws-{label}"
            materialize_workspace(
                TASK, "python", reference=kind == "reference", fault=fault, dest=workspace
            )
            evaluation = evaluate(workspace, root / f"run-{label}")
            print(f"{elapsed:>5} s  {label:<16} score {evaluation['score']:.4f}", file=sys.stderr)
            checkpoints.append({"elapsed_seconds": elapsed, "evaluation": evaluation})
    target.write_text(json.dumps(checkpoints, indent=1, ensure_ascii=False) + "\n", "utf-8")
    return checkpoints


def main(argv: list[str]) -> None:
    target = Path(argv[1]) if len(argv) > 1 else Path(__file__).with_name("checkpoints.json")
    build(target)
    print(target)


if __name__ == "__main__":
    main(sys.argv)
