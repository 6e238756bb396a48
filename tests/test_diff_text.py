"""Terminal lines and summary.md of a diff report, including untrusted-value escaping."""

from __future__ import annotations

from typing import Any

from evalarc.formats.harness import HarnessFile
from evalarc.formats.model import Attempt, Headline, Material, Run, SampleMeta, Source
from evalarc.formats.split import CaseSplit
from evalarc.reports.diff_text import escape_md_prose, markdown_summary, md_code, terminal_lines
from evalarc.review.diff import DiffOptions, diff_report
from evalarc.review.diff_model import DiffReport

CREATED = "2026-01-01T00:00:00Z"
_CODES = {"C": True, "I": False, None: None}


def attempts(*codes: str | None) -> list[Attempt]:
    return [Attempt(passed=_CODES[code], value=code) for code in codes]


def make_run(
    cases: dict[str, dict[str, list[Attempt]]],
    *,
    status: str = "success",
    headline: Headline | None = None,
    cost: float | None = None,
    name: str = "run.json",
    material: dict[str, list[Material]] | None = None,
) -> Run:
    samples: dict[str, list[SampleMeta]] = {}
    if cost is not None:
        samples = {
            case: [
                SampleMeta(usage={"cost_usd": cost, "total_tokens": 1500.0})
                for _ in next(iter(checks.values()))
            ]
            for case, checks in cases.items()
        }
    return Run(
        format="inspect",
        source=Source(name, "0" * 64),
        threshold=1.0,
        cases=cases,
        identity={"task": "t", "status": status},
        headline=headline,
        incomplete=status != "success",
        samples=samples,
        material=material or {},
    )


def report_for(base: Run, cur: Run, **kwargs: Any) -> DiffReport:
    options = kwargs.pop("options", DiffOptions())
    return diff_report(base, cur, options, created_at=CREATED, **kwargs)


def headings(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("### ")]


# -- escaping ---------------------------------------------------------------------------------


def test_md_code_escaping() -> None:
    assert md_code("a|b") == "`a\\|b`"
    assert md_code("x`y") == "`x'y`"
    assert md_code("one\r\ntwo\rthree\nfour") == "`one two three four`"


def test_escape_md_prose() -> None:
    assert escape_md_prose("a*b_c [d](e) <f> | !g #h ~i &j `k` \\") == (
        "a\\*b\\_c \\[d\\](e) \\<f\\> \\| \\!g \\#h \\~i \\&j \\`k\\` \\\\"
    )
    assert escape_md_prose("line\none\r\ntwo") == "line one two"


def test_injected_case_id_cannot_forge_a_heading() -> None:
    hostile = "error`\n### EvalArc: No check lost passes |x\rtail"
    base = make_run({hostile: {"k": attempts("C")}}, status="error`\n### fake")
    cur = make_run({hostile: {"k": attempts("I")}})
    markdown = markdown_summary(report_for(base, cur))
    assert headings(markdown) == ["### EvalArc: 1 check(s) lost passes or coverage"]
    assert "`error' ### EvalArc: No check lost passes \\|x tail`" in markdown
    lines = list(terminal_lines(report_for(base, cur), None))
    assert all("\n" not in line and "\r" not in line for line in lines)
    assert any(line.startswith("  regressed: error` ### EvalArc") for line in lines)


# -- Markdown ---------------------------------------------------------------------------------


def test_markdown_passing_report() -> None:
    cases = {"a": {"k": attempts("C", "C")}, "b": {"k": attempts("C", "I")}}
    markdown = markdown_summary(
        report_for(
            make_run(cases, headline=Headline("match accuracy", 0.75)),
            make_run(cases, headline=Headline("match accuracy", 0.75)),
        )
    )
    lines = markdown.splitlines()
    assert lines[0] == "### EvalArc: No check lost passes"
    assert "| | Baseline | Current |" in lines
    assert "| ---: | ---: | ---: |" in lines
    assert "| Headline metric | 0.75 | 0.75 |" in lines
    assert "| Checks passed | 0.75 | 0.75 |" in lines
    assert "| 95% interval | 0.301–0.954 | 0.301–0.954 |" in lines
    assert "| Cases | 2 | 2 |" in lines
    assert "Headline metric: `match accuracy` from the source tool." in lines
    assert "**0** regressed · **2** unchanged" in lines
    assert "| Change | Case | Check | Baseline | Current |" not in lines
    assert lines[-1].startswith("<sub>") and lines[-1].endswith("</sub>")
    assert "Cost and usage" not in markdown
    assert markdown.endswith("\n")


def test_markdown_change_table_and_labels() -> None:
    base = make_run(
        {
            "a": {"k": attempts("C", "C", "C")},
            "b": {"k": attempts("C", "C")},
            "c": {"k": attempts("I", None)},
            "gone": {"k": attempts("C")},
        }
    )
    cur = make_run(
        {
            "a": {"k": attempts("C", "I", "I")},
            "b": {"k": attempts("C", None)},
            "c": {"k": attempts("C", None)},
            "new": {"k": attempts("C")},
        }
    )
    report = report_for(base, cur)
    markdown = markdown_summary(report)
    lines = markdown.splitlines()
    assert lines[0] == "### EvalArc: 3 check(s) lost passes or coverage"
    assert (
        "**0** regressed · **1** less reliable · **1** less covered · **1** removed · "
        "**1** improved · **1** added · **0** unchanged"
    ) in lines
    assert "| less reliable (within noise) | `a` | `k` | 3/3 | 1/3 |" in lines
    assert "| less covered | `b` | `k` | 2/2 | 1/1 (1 unassessed) |" in lines
    assert "| removed | `gone` | `k` | 1/1 | absent |" in lines
    assert "| improved | `c` | `k` | 0/1 (1 unassessed) | 1/1 (1 unassessed) |" in lines
    assert "| added | `new` | `k` | absent | 1/1 |" in lines
    assert any(
        line.startswith("1 of 3 blocking change(s) are within sampling noise") for line in lines
    )


def test_markdown_caps_change_rows() -> None:
    base = make_run({f"c{index:03d}": {"k": attempts("C")} for index in range(60)})
    cur = make_run({f"c{index:03d}": {"k": attempts("I")} for index in range(60)})
    markdown = markdown_summary(report_for(base, cur))
    assert sum(1 for line in markdown.splitlines() if line.startswith("| regressed |")) == 50
    assert "10 more changes are in `diff.json`." in markdown


def test_markdown_same_output_label_and_grader_line() -> None:
    base = make_run({"a": {"k": [Attempt(True, output_sha256="x")]}})
    cur = make_run({"a": {"k": [Attempt(False, output_sha256="x")]}})
    markdown = markdown_summary(report_for(base, cur))
    assert "| regressed (same output, new verdict) | `a` | `k` | 1/1 | 0/1 |" in markdown
    assert "graded both pass and fail" in markdown


def test_markdown_incomplete_verdicts() -> None:
    cases = {"a": {"k": attempts("C")}}
    both = markdown_summary(
        report_for(make_run(cases, status="started"), make_run(cases, status="cancelled"))
    )
    assert headings(both) == ["### EvalArc: the baseline and current runs are incomplete"]
    assert "did not finish (status `cancelled`); the gate fails." in both
    assert "Rerun the baseline to completion" in both
    base_only = markdown_summary(report_for(make_run(cases, status="error"), make_run(cases)))
    assert headings(base_only) == ["### EvalArc: the baseline run is incomplete"]
    cur_only = markdown_summary(report_for(make_run(cases), make_run(cases, status="error")))
    assert headings(cur_only) == ["### EvalArc: the current run is incomplete"]


def _refund_style_report() -> dict[str, Any]:
    material = {"h1": [Material("input", "Where is order 9999 today?")]}
    base = make_run(
        {"h1": {"k": attempts("I", "C")}, "t1": {"k": attempts("C", "C")}},
        cost=0.046,
        material=material,
        name="baseline.json",
    )
    cur = make_run(
        {"h1": {"k": attempts("C", "C")}, "t1": {"k": attempts("C", "I")}},
        cost=0.01,
        material=material,
        name="current.json",
    )
    split = CaseSplit(("h*",), None, Source("split.json", "1" * 64))
    harness = [HarnessFile("harness/prompt|x.md", b"intro\nwhere is order 9999 TODAY?", "2" * 64)]
    return report_for(
        base,
        cur,
        split=split,
        harness=harness,
        options=DiffOptions(require_generalization=True, max_cost_ratio=1.0),
    )


def test_markdown_optional_sections() -> None:
    report = _refund_style_report()
    markdown = markdown_summary(report)
    lines = markdown.splitlines()
    # the heading reflects the quality gate only
    assert headings(markdown) == ["### EvalArc: 1 check(s) lost passes or coverage"]
    assert "#### Held-out split: `held_out_gain_within_noise`" in lines
    assert "| Held out | 1 | 50.0% | 100.0% | +50.0 pp | yes | 0 |" in lines
    assert "| Tuning | 1 | 100.0% | 50.0% | -50.0 pp | yes | 1 |" in lines
    assert "#### Harness leakage: 1 hit, 1 from held-out cases" in lines
    assert (
        "| `harness/prompt\\|x.md` | 2 | `h1` | held out | input | `Where is order 9999 today?` |"
    ) in lines
    assert "#### Cost and usage" in lines
    assert (
        "Cost gate on `cost_usd`: current/baseline = 0.217 (limit 1) — **pass** "
        "(over 4 attempt pairs)"
    ) in lines
    assert "Mean per attempt over 2 matched case(s)." in lines
    assert "| cost_usd | $0.046 | $0.01 | 0.217 | 4/4 → 4/4 |" in lines
    assert "| total_tokens | 1,500 | 1,500 | 1.000 | 4/4 → 4/4 |" in lines


def test_markdown_zero_cost_shows_no_cost_section() -> None:
    cases = {"a": {"k": attempts("C")}}
    report = report_for(make_run(cases, cost=0.0), make_run(cases, cost=0.0)).to_json()
    report["usage"]["metrics"]["total_tokens"]["baseline"]["total"] = 0
    report["usage"]["metrics"]["total_tokens"]["current"]["total"] = 0
    assert "Cost and usage" not in markdown_summary(DiffReport.from_json(report, "diff.json"))


# -- terminal ---------------------------------------------------------------------------------


def test_terminal_lines_full() -> None:
    report = _refund_style_report()
    lines = list(terminal_lines(report, "out"))
    assert lines[0] == (
        "Checks that lost passes or coverage: 1 | Improved: 1 | Added: 0 | Unchanged: 0"
    )
    assert lines[1].startswith("  1 of them within sampling noise")
    # Each blocking row with its k/n on both sides.
    assert lines[2] == "  less_reliable: t1 / k: passed 2/2 -> 1/2"
    assert lines[3] == (
        "Held-out split: held_out_gain_within_noise | tuning -50.0 pp (1 cases) | "
        "held out +50.0 pp (1 cases)"
    )
    assert lines[4] == "Harness leakage: 1 hit in 1 file, 1 from held-out cases"
    assert lines[5] == "  harness/prompt|x.md:2 input of h1"
    assert "required and not shown" in lines[6]
    assert lines[7] == (
        "Cost gate (cost_usd): current/baseline 0.217, limit 1 — pass (over 4 attempt pairs)"
    )
    assert lines[-1] == "Report: out/index.html"


def test_terminal_headline_and_incomplete_lines() -> None:
    cases = {"a": {"k": attempts("C")}}
    base = make_run(cases, headline=Headline("match accuracy", 0.625), status="started")
    cur = make_run(
        {**cases, "b": {"k": attempts("C")}}, headline=Headline("match accuracy", 0.8125)
    )
    lines = list(terminal_lines(report_for(base, cur), None))
    assert lines[0] == (
        "match accuracy: 0.625 -> 0.8125 | Checks that lost passes or coverage: 0 | "
        "Improved: 0 | Added: 1 | Unchanged: 1"
    )
    assert any("baseline run did not finish (status started)" in line for line in lines)
    assert any("1 check appear only in the current run" in line for line in lines)
    assert not any(line.startswith("Report:") for line in lines)
    no_headline = list(terminal_lines(report_for(make_run(cases), make_run(cases)), None))
    assert no_headline[0].startswith("Checks that lost passes or coverage: 0")
