"""`evalarc diff` output a reviewer can act on: whole paths in refusals, --harness taking several
paths after one flag, natural order of numeric ids, promptfoo matrices paired whatever else they
hold, and every requested output written or none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evalarc.cli import main
from evalarc.errors import OutputError
from evalarc.reports.diff import DiffRequest, run_diff
from evalarc.review.diff import DiffOptions


def _invoke(*args: object) -> Any:
    return CliRunner().invoke(main, [str(arg) for arg in args])


def _row(description: str, provider: str, prompt: str, passed: bool) -> dict[str, Any]:
    return {
        "provider": {"id": provider, "label": ""},
        "prompt": {"raw": prompt, "label": prompt},
        "success": passed,
        "testCase": {"description": description, "vars": {}},
        "gradingResult": {
            "pass": passed,
            "componentResults": [{"pass": passed, "assertion": {"type": "equals", "value": "x"}}],
        },
    }


def _promptfoo(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    passed = sum(1 for row in rows if row.get("success") is True)
    errors = sum(1 for row in rows if not row.get("success") and row.get("failureReason") == 2)
    # promptfoo's stats count the rows; the reader refuses a file whose counts disagree
    stats = {"successes": passed, "failures": len(rows) - passed - errors, "errors": errors}
    document = {"results": {"version": 3, "results": rows, "stats": stats}}
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_refusals_name_the_whole_path_given(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "results.json").write_text('{"results": {"results": [', "utf-8")
    result = _invoke("diff", "a/results.json", "b/results.json")
    assert result.exit_code == 2
    # Before: "results.json is not JSON" whichever of the two it was.
    assert result.output.startswith("evalarc: a/results.json is not JSON")
    result = _invoke("diff", "b/results.json", "a/results.json")
    assert result.output.startswith("evalarc: b/results.json is not JSON")
    # JUnit goes through the same loader.
    (tmp_path / "a" / "report.xml").write_text("<testsuite><testcase", encoding="utf-8")
    result = _invoke("diff", "a/report.xml", "a/report.xml")
    assert result.exit_code == 2 and result.output.startswith("evalarc: a/report.xml")


def test_harness_takes_several_paths_after_one_flag(tmp_path: Path) -> None:
    base = _promptfoo(tmp_path / "base.json", [_row("case one text", "p", "q", True)])
    harness = []
    for index in range(3):
        path = tmp_path / f"h{index}.md"
        path.write_text("nothing of interest here\n", encoding="utf-8")
        harness.append(path)
    many = _invoke("diff", base, base, "--json", "--harness", *harness)
    repeated = _invoke(
        "diff", base, base, "--json", *[item for path in harness for item in ("--harness", path)]
    )
    assert many.exit_code == 0, many.output
    assert repeated.exit_code == 0, repeated.output
    scanned = json.loads(many.output)["leakage"]["files_scanned"]
    assert [Path(entry["path"]).name for entry in scanned] == ["h0.md", "h1.md", "h2.md"]
    assert scanned == json.loads(repeated.output)["leakage"]["files_scanned"]
    # An option after the paths ends the list.
    mixed = _invoke("diff", base, base, "--harness", harness[0], harness[1], "--json")
    assert mixed.exit_code == 0 and len(json.loads(mixed.output)["leakage"]["files_scanned"]) == 2


def test_numeric_ids_sort_naturally_and_rows_show_k_of_n(tmp_path: Path) -> None:
    names = ["case-10", "case-2", "case-1"]
    base = _promptfoo(tmp_path / "b.json", [_row(name, "p", "q", True) for name in names])
    cur = _promptfoo(tmp_path / "c.json", [_row(name, "p", "q", False) for name in names])
    result = _invoke("diff", base, cur)
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0].endswith("| Added: 0 | Unchanged: 0")
    # each case's own verdict, the check (test), then its assertion
    assert lines[1:7] == [
        "  regressed: case-1 / (test): passed 1/1 -> 0/1",
        "  regressed: case-1 / equals: x: passed 1/1 -> 0/1",
        "  regressed: case-2 / (test): passed 1/1 -> 0/1",
        "  regressed: case-2 / equals: x: passed 1/1 -> 0/1",
        "  regressed: case-10 / (test): passed 1/1 -> 0/1",
        "  regressed: case-10 / equals: x: passed 1/1 -> 0/1",
    ]


def test_a_provider_added_to_the_matrix_keeps_the_others_paired(tmp_path: Path) -> None:
    base = _promptfoo(tmp_path / "b.json", [_row("t", "gpt", "q", True)])
    cur = _promptfoo(
        tmp_path / "c.json", [_row("t", "gpt", "q", True), _row("t", "claude", "q", True)]
    )
    result = _invoke("diff", base, cur, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    # Before: the baseline's case was "t", the current's "t · gpt": 1 removed, 2 added.
    # (each case holds two checks: (test), the test's own verdict, and equals: x)
    assert report["counts"]["removed"] == 0 and report["counts"]["added"] == 2
    assert report["counts"]["unchanged"] == 2
    assert [row["case_id"] for row in report["changes"]] == ["t · claude", "t · claude"]
    assert report["matrix"]["providers"]["current_only"] == ["claude"]
    text = _invoke("diff", base, cur)
    assert "  Provider only in the current run: claude (their cases are added)" in (
        text.output.splitlines()
    )


def test_an_output_that_cannot_be_written_leaves_nothing_published(tmp_path: Path) -> None:
    base = _promptfoo(tmp_path / "b.json", [_row("t", "p", "q", True)])
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder\n", encoding="utf-8")
    summary = tmp_path / "summary.md"
    request = DiffRequest(baseline=base, current=base, options=DiffOptions())
    with pytest.raises(OutputError, match="cannot write JUnit XML to"):
        run_diff(request, tmp_path / "report", blocker / "junit.xml", summary)
    assert not (tmp_path / "report").exists()
    assert not summary.exists()
    with pytest.raises(OutputError, match="cannot append to"):
        run_diff(request, tmp_path / "report", tmp_path / "junit.xml", blocker / "summary.md")
    assert not (tmp_path / "report").exists() and not (tmp_path / "junit.xml").exists()
    assert {path.name for path in tmp_path.iterdir()} == {"b.json", "blocker"}
    run_diff(request, tmp_path / "report", tmp_path / "junit.xml", summary)
    assert (tmp_path / "report" / "diff.json").is_file()
    assert (tmp_path / "junit.xml").is_file() and "### EvalArc" in summary.read_text("utf-8")
