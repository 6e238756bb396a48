"""Compare recorded usage (cost, tokens, time) of two runs and apply the optional cost gate.

Only what the source tools recorded is used: a missing value is unknown, never zero, and no token
pricing is ever applied. Means are taken over cases present in both runs so that added or removed
cases cannot make a run look cheaper.

Every value is finite (the readers refuse anything else), but a sum of them need not be: two
attempts that each record 1e308 tokens add up to infinity, which no JSON report can hold. Such a
total is the file's problem, refused with one line naming it (:func:`finite_total`), never a
traceback.
"""

from __future__ import annotations

import math
from typing import Any

from evalarc.errors import InputError, UsageError
from evalarc.formats.model import USAGE_METRICS, Run

COST_METRIC_CHOICES = ("auto", "cost", "tokens", "duration")
"""Values of ``--cost-metric``."""

_EXPLICIT_METRICS = {"cost": "cost_usd", "tokens": "total_tokens", "duration": "duration_seconds"}
_AUTO_METRICS = ("cost_usd", "total_tokens")

USAGE_SCOPE = (
    "Usage is what the source tools recorded per attempt, averaged over the cases present in "
    "both runs; the cost gate compares only attempts that recorded the metric in both runs "
    "(paired by case and position) and counts the others. A value a tool did not record is "
    "unknown, not zero, and EvalArc applies no token pricing of its own."
)


def finite_total(total: float, run: Run, metric: str) -> float:
    """``total``, a sum of ``run``'s recorded ``metric`` values, when it is finite; else an
    InputError naming the file (each value was finite, their sum overflowed)."""
    if math.isfinite(total):
        return total
    raise InputError(
        f"{run.source.name}: the recorded {metric} values add up to more than the largest "
        "number a report can hold (the sum overflows); usage this large cannot be right"
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
        total = finite_total(totals[metric], run, metric) if count else None
        mean = total / count if total is not None else None
        result[metric] = {"attempts": attempts, "reported": count, "total": total, "mean": mean}
    return result


def _paired_usage(baseline: Run, current: Run, case_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Per metric, over attempts paired by case and position: how many pairs recorded it on
    both sides, their totals, and how many attempts of each side lacked it."""
    result: dict[str, dict[str, Any]] = {
        metric: {
            "pairs": 0,
            "baseline_total": 0,
            "current_total": 0,
            "baseline_missing": 0,
            "current_missing": 0,
        }
        for metric in USAGE_METRICS
    }
    attempts = [0, 0]
    present: list[dict[str, int]] = [
        dict.fromkeys(USAGE_METRICS, 0),
        dict.fromkeys(USAGE_METRICS, 0),
    ]
    # One pass over each attempt's recorded metrics (most files record none or one), not one
    # pass per metric: a missing count is the attempts less those that recorded it.
    for case_id in case_ids:
        base_metas = baseline.samples.get(case_id, ())
        cur_metas = current.samples.get(case_id, ())
        for side, metas in ((0, base_metas), (1, cur_metas)):
            attempts[side] += len(metas)
            counts = present[side]
            for meta in metas:
                for metric in meta.usage:
                    if metric in counts:
                        counts[metric] += 1
        for base_meta, cur_meta in zip(base_metas, cur_metas, strict=False):
            base_usage = base_meta.usage
            if not base_usage:
                continue
            cur_usage = cur_meta.usage
            for metric in USAGE_METRICS:
                if metric in base_usage and metric in cur_usage:
                    entry = result[metric]
                    entry["pairs"] += 1
                    entry["baseline_total"] += base_usage[metric]
                    entry["current_total"] += cur_usage[metric]
    for metric, entry in result.items():
        finite_total(entry["baseline_total"], baseline, metric)
        finite_total(entry["current_total"], current, metric)
        entry["baseline_missing"] = attempts[0] - present[0][metric]
        entry["current_missing"] = attempts[1] - present[1][metric]
    return result


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator == 0:
        return None
    value = numerator / denominator
    return value if math.isfinite(value) else None


def compare_usage(baseline: Run, current: Run) -> dict[str, Any]:
    """The ``usage`` block of diff.json: per recorded metric, both sides' mean per attempt over
    matched cases, the current/baseline ratio and whether every attempt reported it."""
    # A list, not a set: two runs of half a million cases would need 30 MB for the set alone.
    matched = [case_id for case_id in baseline.cases if case_id in current.cases]
    matched.sort()
    base_side = _side_usage(baseline, matched)
    cur_side = _side_usage(current, matched)
    paired = _paired_usage(baseline, current, matched)
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
            "paired": paired[metric],
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
    """Why ``metric`` cannot be gated, or None when it can: it needs at least one attempt that
    recorded it on both sides and a non-zero baseline total over those attempts."""
    entry = usage.get("metrics", {}).get(metric)
    if entry is None:
        return f"neither run records {metric}"
    paired = entry["paired"]
    if paired["pairs"] == 0:
        return f"no attempt records {metric} in both runs"
    if not paired["baseline_total"]:
        return f"the baseline total of {metric} over the compared attempts is zero"
    if _ratio(paired["current_total"], paired["baseline_total"]) is None:
        return f"the {metric} ratio is undefined"
    return None


def cost_gate(usage: dict[str, Any], metric: str, max_ratio: float) -> dict[str, Any]:
    """Pass when current/baseline usage of the chosen metric, over the attempts that recorded it
    on both sides (paired by case and position), is at most ``max_ratio``.

    Attempts without the metric are left out and counted (``attempts_without_usage``): one
    errored sample without usage never refuses the whole diff. ``auto`` takes the first
    gateable of cost and total tokens; a metric no attempt pair records is a UsageError, because
    a gate that silently passes would be worse than none.
    """
    if isinstance(max_ratio, bool) or not math.isfinite(max_ratio) or max_ratio <= 0:
        raise UsageError("--max-cost-ratio must be a positive number")
    if metric == "auto":
        chosen = next((name for name in _AUTO_METRICS if _gate_problem(usage, name) is None), None)
        if chosen is None:
            raise UsageError(
                "no attempt records cost or total tokens in both runs; pass --cost-metric "
                "duration to gate on recorded time"
            )
    elif metric in _EXPLICIT_METRICS:
        chosen = _EXPLICIT_METRICS[metric]
        problem = _gate_problem(usage, chosen)
        if problem is not None:
            raise UsageError(f"--cost-metric {metric} cannot be assessed: {problem}")
    else:
        raise UsageError(f"unknown --cost-metric {metric!r}; use auto, cost, tokens or duration")
    paired = usage["metrics"][chosen]["paired"]
    pairs: int = paired["pairs"]
    ratio = _ratio(paired["current_total"], paired["baseline_total"])
    assert ratio is not None  # _gate_problem said so
    return {
        "metric": chosen,
        "max_ratio": max_ratio,
        "baseline_mean": paired["baseline_total"] / pairs,
        "current_mean": paired["current_total"] / pairs,
        "ratio": ratio,
        "compared_attempts": pairs,
        "attempts_without_usage": {
            "baseline": paired["baseline_missing"],
            "current": paired["current_missing"],
        },
        "passed": ratio <= max_ratio,
    }
