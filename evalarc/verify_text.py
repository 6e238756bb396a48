"""What ``evalarc verify`` prints: the lines of a successful verification, and the one-line
message of a failed one (whatever stopped it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalarc.errors import EvalArcError


def verified_lines(result: Mapping[str, Any]) -> list[str]:
    """That the records are consistent, what was checked, and, on a line of its own, the
    report's (or the site's) decision, which is separate."""
    files = result["files"]
    prose = sum(1 for row in files.values() if isinstance(row, dict) and row.get("role") == "prose")
    docs = f" and {prose} files of docs (prose, not recomputed)" if prose else ""
    lines = [
        f"Verified {result['kind']}: {len(files) - prose} evidence files{docs}; "
        "the records are consistent.",
        str(result["scope"]),
    ]
    reports = result.get("reports")
    if result["kind"] == "site" and isinstance(reports, list):
        failing = [str(entry["path"]) for entry in reports if not entry.get("passed")]
        if failing:
            names = ", ".join(path.rsplit("/", 1)[-1] for path in failing)
            lines.append(
                f"Verdicts: {len(failing)} of the site's {len(reports)} reports are failing "
                f"gates (their decision is no): {names}."
            )
        else:
            lines.append(f"Verdicts: all {len(reports)} of the site's reports pass their gates.")
    elif result["passed"]:
        lines.append("Verdict: the report's gate passes.")
    else:
        lines.append("Verdict: the report's gate is failing (its decision is no).")
    return lines


def failure_message(error: Exception) -> str:
    """The one line naming why verification failed; an internal limit (the stack, memory, the
    filesystem) or a bug is named too, so a script parsing ``--json`` always gets a verdict."""
    message = (
        error.message
        if isinstance(error, EvalArcError)
        else f"verification could not finish: {type(error).__name__}: {error}"
    )
    return EvalArcError(message).message
