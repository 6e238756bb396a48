"""Compare recorded usage (cost, tokens, time) of two runs and apply the optional cost gate.

Only what the source tools recorded is used: a missing value is unknown, never zero, and no token
pricing is ever applied. Means are taken over cases present in both runs so that added or removed
cases cannot make a run look cheaper.
"""

from __future__ import annotations

import math
from typing import Any

from evalarc.errors import UsageError
from evalarc.formats.model import USAGE_METRICS, Run

COST_METRIC_CHOICES = ("auto", "cost", "tokens", "duration")
"""Values of ``--cost-metric``."""

_EXPLICIT_METRICS = {"cost": "cost_usd", "tokens": "total_tokens", "duration": "duration_seconds"}
_AUTO_METRICS = ("cost_usd", "total_tokens")

USAGE_SCOPE = (
    "Usage is what the source tools recorded per attempt, averaged over the cases present in "
    "both runs. A value a tool did not record is unknown, not zero, and EvalArc applies no token "
    "pricing of its own."
)


def _side_usage(run: Run, case_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Per metric: attempts, reported attempts and total over ``case_ids`` of one run."""
    attempts = 0
    reported = dict.fromkeys(USAGE_METRICS, 0)
    totals: dict[str, float] = dict.fromkeys(USAGE_METRICS, 0)
    for case_id in case_ids:
        metas = run.samples.get(case_id, ())
        attempts += len(metas)
        for meta in metas:
            for metric, value in meta.usage.items():
                if metric in reported:
                    reported[metric] += 1
                    totals[metric] += value
    result: dict[str, dict[str, Any]] = {}
    for metric in USAGE_METRICS:
        count = reported[metric]
        total = totals[metric] if count else None
        mean = total / count if total is not None else None
        result[metric] = {"attempts": attempts, "reported": count, "total": total, "mean": mean}
    return result


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator == 0:
        return None
    value = numerator / denominator
    return value if math.isfinite(value) else None


def compare_usage(baseline: Run, current: Run) -> dict[str, Any]:
    """The ``usage`` block of diff.json: per recorded metric, both sides' mean per attempt over
    matched cases, the current/baseline ratio and whether every attempt reported it."""
    matched = sorted(baseline.cases.keys() & current.cases.keys())
    base_side = _side_usage(baseline, matched)
    cur_side = _side_usage(current, matched)
    metrics: dict[str, Any] = {}
    for metric in USAGE_METRICS:
        base = base_side[metric]
        cur = cur_side[metric]
        if base["reported"] == 0 and cur["reported"] == 0:
            continue
        metrics[metric] = {
            "baseline": base,
            "current": cur,
            "ratio": _ratio(cur["mean"], base["mean"]),
            "complete": base["reported"] == base["attempts"] and cur["reported"] == cur["attempts"],
        }
    usage: dict[str, Any] = {"matched_cases": len(matched), "metrics": metrics}
    if "cached_input_tokens" in metrics and "input_tokens" in metrics:
        cached = metrics["cached_input_tokens"]
        inputs = metrics["input_tokens"]
        usage["cache_read_share"] = {
            side: _ratio(cached[side]["total"], inputs[side]["total"])
            for side in ("baseline", "current")
        }
    usage["scope"] = USAGE_SCOPE
    return usage


def _gate_problem(usage: dict[str, Any], metric: str) -> str | None:
    """Why ``metric`` cannot be gated, or None when it can."""
    entry = usage.get("metrics", {}).get(metric)
    if entry is None:
        return f"neither run records {metric}"
    if not entry["complete"]:
        return f"{metric} is not recorded for every attempt of the matched cases"
    if entry["baseline"]["attempts"] == 0 or entry["current"]["attempts"] == 0:
        return "the runs share no attempts"
    if not entry["baseline"]["mean"]:
        return f"the baseline mean of {metric} is zero"
    if entry["ratio"] is None:
        return f"the {metric} ratio is undefined"
    return None


def cost_gate(usage: dict[str, Any], metric: str, max_ratio: float) -> dict[str, Any]:
    """Pass when current/baseline mean usage of the chosen metric is at most ``max_ratio``.

    ``auto`` takes the first gateable of cost and total tokens; an explicit metric that cannot be
    assessed is a UsageError, because a gate that silently passes would be worse than none.
    """
    if isinstance(max_ratio, bool) or not math.isfinite(max_ratio) or max_ratio <= 0:
        raise UsageError("--max-cost-ratio must be a positive number")
    if metric == "auto":
        chosen = next((name for name in _AUTO_METRICS if _gate_problem(usage, name) is None), None)
        if chosen is None:
            raise UsageError(
                "neither run records cost or total tokens for every attempt of the matched "
                "cases; pass --cost-metric duration to gate on recorded time"
            )
    elif metric in _EXPLICIT_METRICS:
        chosen = _EXPLICIT_METRICS[metric]
        problem = _gate_problem(usage, chosen)
        if problem is not None:
            raise UsageError(f"--cost-metric {metric} cannot be assessed: {problem}")
    else:
        raise UsageError(f"unknown --cost-metric {metric!r}; use auto, cost, tokens or duration")
    entry = usage["metrics"][chosen]
    ratio: float = entry["ratio"]
    return {
        "metric": chosen,
        "max_ratio": max_ratio,
        "baseline_mean": entry["baseline"]["mean"],
        "current_mean": entry["current"]["mean"],
        "ratio": ratio,
        "passed": ratio <= max_ratio,
    }
