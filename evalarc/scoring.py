"""The one aggregation rule every task pack uses (seed 000: dimensions pooled over seeds).

Per dimension: ``total`` cases carrying the check, ``assessed`` non-null, ``passed`` exactly true,
``score`` = passed / assessed. The weighted score is sum(weight x dimension score). Any case with
an environment error makes the evaluation invalid and its score null (an invalid run never
counts); full resolution needs a valid run whose every case passed. Partial scores are reported
but never resolve anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def summarize(
    cases: Sequence[Mapping[str, Any]], dimensions: Sequence[tuple[str, float]]
) -> dict[str, Any]:
    """Dimension scores, weighted score, validity, status and resolution of case records.

    ``cases`` are case records (their ``checks`` map and ``status``); ``dimensions`` the declared
    (id, weight) pairs in order.
    """
    groups: dict[str, dict[str, Any]] = {}
    for dimension, weight in dimensions:
        values = [record["checks"][dimension] for record in cases if dimension in record["checks"]]
        assessed = sum(value is not None for value in values)
        passed = sum(value is True for value in values)
        groups[dimension] = {
            "passed": passed,
            "total": len(values),
            "assessed": assessed,
            "weight": weight,
            "score": passed / assessed if assessed else None,
        }
    valid = bool(cases) and all(record["status"] != "environment_error" for record in cases)
    score: float | None = None
    if valid:
        score = round(
            sum(weight * (groups[dimension]["score"] or 0.0) for dimension, weight in dimensions),
            8,
        )
    resolved = valid and all(record["status"] == "passed" for record in cases)
    status = "environment_error" if not valid else ("passed" if resolved else "failed")
    return {
        "valid": valid,
        "status": status,
        "score": score,
        "resolved": resolved,
        "dimensions": groups,
    }
