"""The usage block (means over matched cases, ratio, completeness) and the cost gate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalarc.errors import InputError, UsageError
from evalarc.formats.model import Attempt, Run, SampleMeta, Source
from evalarc.review.usage import compare_usage, cost_gate


def make_run(samples: dict[str, list[dict[str, float]]]) -> Run:
    """One check per case, one attempt per usage entry."""
    return Run(
        format="inspect",
        source=Source("r.json", "0" * 64),
        threshold=1.0,
        cases={case: {"k": [Attempt(True) for _ in entries]} for case, entries in samples.items()},
        samples={
            case: [SampleMeta(usage=dict(entry)) for entry in entries]
            for case, entries in samples.items()
        },
    )


def test_means_over_matched_cases_only() -> None:
    base = make_run(
        {
            "a": [{"cost_usd": 0.04, "total_tokens": 100}, {"cost_usd": 0.06, "total_tokens": 300}],
            "only-base": [{"cost_usd": 100.0, "total_tokens": 99_999}],
        }
    )
    cur = make_run(
        {
            "a": [{"cost_usd": 0.01, "total_tokens": 50}, {"cost_usd": 0.01, "total_tokens": 50}],
            "only-cur": [{"cost_usd": 100.0}],
        }
    )
    usage = compare_usage(base, cur)
    assert list(usage) == ["matched_cases", "metrics", "scope"]
    assert usage["matched_cases"] == 1
    assert list(usage["metrics"]) == ["cost_usd", "total_tokens"]
    cost = usage["metrics"]["cost_usd"]
    assert list(cost) == ["baseline", "current", "ratio", "complete", "paired"]
    assert cost["baseline"] == {"attempts": 2, "reported": 2, "total": 0.1, "mean": 0.05}
    assert cost["current"] == {"attempts": 2, "reported": 2, "total": 0.02, "mean": 0.01}
    assert cost["ratio"] == pytest.approx(0.2)
    assert cost["complete"] is True
    tokens = usage["metrics"]["total_tokens"]
    assert tokens["baseline"]["total"] == 400 and tokens["current"]["mean"] == 50
    assert tokens["ratio"] == 0.25


def test_missing_values_are_unknown_not_zero() -> None:
    base = make_run({"a": [{"duration_seconds": 2.0}, {}]})
    cur = make_run({"a": [{}, {}]})
    usage = compare_usage(base, cur)
    duration = usage["metrics"]["duration_seconds"]
    assert duration["baseline"] == {"attempts": 2, "reported": 1, "total": 2.0, "mean": 2.0}
    assert duration["current"] == {"attempts": 2, "reported": 0, "total": None, "mean": None}
    assert duration["ratio"] is None
    assert duration["complete"] is False
    assert "cost_usd" not in usage["metrics"]


def test_ratio_null_on_zero_baseline_and_cache_share() -> None:
    base = make_run({"a": [{"cost_usd": 0.0, "input_tokens": 100, "cached_input_tokens": 25}]})
    cur = make_run({"a": [{"cost_usd": 0.5, "input_tokens": 200, "cached_input_tokens": 100}]})
    usage = compare_usage(base, cur)
    assert usage["metrics"]["cost_usd"]["ratio"] is None
    assert usage["cache_read_share"] == {"baseline": 0.25, "current": 0.5}
    assert list(usage) == ["matched_cases", "metrics", "cache_read_share", "scope"]


def _usage(base: list[dict[str, float]], cur: list[dict[str, float]]) -> dict[str, Any]:
    return compare_usage(make_run({"a": base}), make_run({"a": cur}))


def test_cost_gate_auto_prefers_cost_then_tokens() -> None:
    usage = _usage(
        [{"cost_usd": 0.046, "total_tokens": 2000}], [{"cost_usd": 0.010, "total_tokens": 2600}]
    )
    gate = cost_gate(usage, "auto", 1.0)
    assert list(gate) == [
        "metric",
        "max_ratio",
        "baseline_mean",
        "current_mean",
        "ratio",
        "compared_attempts",
        "attempts_without_usage",
        "passed",
    ]
    assert gate["metric"] == "cost_usd"
    assert gate["ratio"] == pytest.approx(0.010 / 0.046)
    assert gate["passed"] is True
    # cost recorded for one attempt pair only: still cost, over that pair, the gap counted
    usage = _usage(
        [{"cost_usd": 0.046, "total_tokens": 2000}, {"total_tokens": 2000}],
        [{"cost_usd": 0.010, "total_tokens": 2600}, {"total_tokens": 2600}],
    )
    gate = cost_gate(usage, "auto", 1.2)
    assert gate["metric"] == "cost_usd" and gate["compared_attempts"] == 1
    assert gate["attempts_without_usage"] == {"baseline": 1, "current": 1}
    # no cost in any pair -> tokens
    usage = _usage([{"total_tokens": 2000}] * 2, [{"cost_usd": 0.01, "total_tokens": 2600}] * 2)
    gate = cost_gate(usage, "auto", 1.2)
    assert gate["metric"] == "total_tokens"
    assert gate["ratio"] == 1.3 and gate["passed"] is False


def test_cost_gate_ratio_equal_to_limit_passes() -> None:
    usage = _usage([{"duration_seconds": 2.0}], [{"duration_seconds": 3.0}])
    gate = cost_gate(usage, "duration", 1.5)
    assert gate["metric"] == "duration_seconds" and gate["passed"] is True
    assert cost_gate(usage, "duration", 1.49)["passed"] is False


def test_cost_gate_errors() -> None:
    durations = _usage([{"duration_seconds": 2.0}], [{"duration_seconds": 3.0}])
    with pytest.raises(UsageError, match="no attempt records cost or total tokens in both"):
        cost_gate(durations, "auto", 1.0)
    with pytest.raises(UsageError, match="pass --cost-metric duration"):
        cost_gate(durations, "auto", 1.0)
    with pytest.raises(UsageError, match="cannot be assessed"):
        cost_gate(durations, "cost", 1.0)
    with pytest.raises(UsageError, match="cannot be assessed"):
        cost_gate(durations, "tokens", 1.0)
    zero = _usage([{"cost_usd": 0.0}], [{"cost_usd": 0.0}])
    with pytest.raises(UsageError, match="cannot be assessed"):
        cost_gate(zero, "cost", 1.0)
    one_sided = _usage([{}, {}], [{"cost_usd": 1.0}, {"cost_usd": 1.0}])
    with pytest.raises(UsageError, match="no attempt records cost_usd in both runs"):
        cost_gate(one_sided, "cost", 1.0)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(UsageError, match="positive number"):
            cost_gate(durations, "duration", bad)
    with pytest.raises(UsageError, match="cost-metric"):
        cost_gate(durations, "euros", 1.0)


def test_cost_gate_compares_attempts_with_usage_on_both_sides_and_counts_the_gap() -> None:
    # Before: one baseline attempt without usage (an errored sample) refused the whole diff.
    partial = _usage(
        [{"cost_usd": 1.0}, {}, {"cost_usd": 2.0}],
        [{"cost_usd": 1.5}, {"cost_usd": 9.0}, {}],
    )
    gate = cost_gate(partial, "cost", 1.6)
    # Only the first position recorded cost on both sides: 1.5 / 1.0.
    assert gate["compared_attempts"] == 1
    assert gate["ratio"] == pytest.approx(1.5)
    assert gate["attempts_without_usage"] == {"baseline": 1, "current": 1}
    assert gate["passed"] is True
    assert cost_gate(partial, "auto", 1.4)["passed"] is False


def test_no_matched_attempts_cannot_be_gated() -> None:
    usage = compare_usage(
        make_run({"a": [{"cost_usd": 1.0}]}), make_run({"b": [{"cost_usd": 1.0}]})
    )
    assert usage["matched_cases"] == 0 and usage["metrics"] == {}
    with pytest.raises(UsageError, match="cannot be assessed"):
        cost_gate(usage, "cost", 1.0)


# -- sums that overflow ---------------------------------------------------------------------------

CORPUS = Path(__file__).resolve().parent / "corpus" / "inspect"


def _huge_usage_log(dest: Path, side: str) -> Path:
    """The real capitals Inspect log of ``side`` with every recorded token count (the run's
    model_usage and each sample's) and every sample's time set to 1e308: each value finite, any
    two of them summed infinite."""
    log = json.loads((CORPUS / f"capitals.{side}.json").read_text(encoding="utf-8"))
    for usage in log["stats"]["model_usage"].values():
        for key in usage:
            usage[key] = 1e308
    for sample in log["samples"]:
        for usage in sample["model_usage"].values():
            for key in usage:
                usage[key] = 1e308
        sample["total_time"] = 1e308
        sample["working_time"] = 1e308
    path = dest / f"huge.{side}.json"
    path.write_text(json.dumps(log), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "command",
    [
        ["diff", "BASE", "CUR", "--json"],
        ["diff", "BASE", "CUR", "--output", "out"],
        ["eval-health", "BASE", "CUR", "--output", "out"],
    ],
)
def test_usage_that_sums_to_infinity_is_refused_naming_the_file(
    command: list[str], tmp_path: Path
) -> None:
    # Issue 24 item 8: the sum overflowed to infinity and the JSON writer crashed with a
    # traceback and exit 1, which reads as "the gate failed".
    base = _huge_usage_log(tmp_path, "baseline")
    cur = _huge_usage_log(tmp_path, "current")
    argv = [{"BASE": str(base), "CUR": str(cur)}.get(arg, arg) for arg in command]
    done = subprocess.run(
        [sys.executable, "-m", "evalarc.cli", *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr[-2000:]
    assert lines[0].startswith("evalarc: huge.baseline.json: the recorded "), lines
    assert "overflows" in lines[0]
    assert not (tmp_path / "out").exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == [base.name, cur.name]


def test_a_finite_sum_of_huge_values_is_kept() -> None:
    # The refusal is for an overflow only: 1e307 twice is 2e307, a number a report can hold.
    base = make_run({"a": [{"total_tokens": 1e307}, {"total_tokens": 1e307}]})
    usage = compare_usage(base, base)
    assert usage["metrics"]["total_tokens"]["baseline"]["total"] == 2e307
    huge = make_run({"a": [{"total_tokens": 1e308}, {"total_tokens": 1e308}]})
    with pytest.raises(InputError, match=r"^r\.json: the recorded total_tokens values add up"):
        compare_usage(huge, base)
