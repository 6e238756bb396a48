"""Case evidence goes through the readers' public API: the same walkers, caps and case ids."""

from __future__ import annotations

import ast
import io
import json
from pathlib import Path

import pytest

from evalarc.evidence import promptfoo as evidence_promptfoo
from evalarc.evidence import read_case_evidence
from evalarc.evidence.junit import read_junit_evidence
from evalarc.formats import load_results, promptfoo
from evalarc.formats.junit import scan_records
from evalarc.formats.junit_producers import read_cases, record_case_ids

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "recordings" / "examples" / "results-diff"


def test_evidence_imports_no_private_name_of_the_readers() -> None:
    private: list[str] = []
    for module in sorted((ROOT / "evalarc" / "evidence").glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "evalarc.formats"
            ):
                private += [
                    f"{module.name}: {a.name}" for a in node.names if a.name.startswith("_")
                ]
    assert private == []


def _row(description: str, output: str, passed: bool) -> dict[str, object]:
    return {
        "success": passed,
        "provider": {"id": "echo"},
        "prompt": {"raw": "p", "label": "p"},
        "response": {"output": output},
        "testCase": {"description": description, "vars": {"q": description}},
    }


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text(json.dumps({"results": {"version": 3, "results": rows}}), encoding="utf-8")
    return path


def test_promptfoo_evidence_streams_rows_under_the_readers_ids_and_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [_row("a", "one", True), _row("b", "two", False), _row("a", "three", False)]
    path = _write(tmp_path / "pf.json", rows)
    evidence = read_case_evidence(path, "promptfoo")
    run = load_results(path, "promptfoo", 1.0)
    assert list(evidence) == list(run.cases) == ["a", "b"]
    titles = [
        section.title for section in evidence["a"].sections if "assertion" not in section.title
    ]
    assert titles == ["Repeat 1 · echo", "Repeat 2 · echo"]
    outputs = [
        item.text for s in evidence["a"].sections for item in s.items if item.label == "output"
    ]
    assert outputs == ["one", "three"]
    # The reader's row cap applies to the evidence walk too: no evidence rather than a whole parse.
    monkeypatch.setattr(promptfoo, "MAX_ROWS", 2)
    assert read_case_evidence(path, "promptfoo") == {}


def test_promptfoo_evidence_of_listed_cases_builds_only_their_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two providers, one description over two vars sets, repeats: labels with suffixes.
    rows = []
    for provider in ("echo", "other"):
        for index, (description, question) in enumerate(
            [("a", "1"), ("a", "2"), ("b", "1"), ("a", "1")]
        ):
            row = _row(description, f"{provider} {index}", index % 2 == 0)
            row["provider"] = {"id": provider}
            row["testCase"] = {"description": description, "vars": {"q": question}}
            rows.append(row)
    path = _write(tmp_path / "pf.json", rows)
    run = load_results(path, "promptfoo", 1.0)
    labels = list(run.cases)
    assert len(labels) == 6
    only = {labels[0], labels[4]}
    whole = read_case_evidence(path, "promptfoo", only)
    assert set(whole) == only
    built: list[int] = []
    real = evidence_promptfoo._row_sections

    def counted(row: dict[str, object], repeat: int) -> object:
        built.append(repeat)
        return real(row, repeat)

    monkeypatch.setattr(evidence_promptfoo, "_row_sections", counted)
    # The diff's model of the same file (also once its ids are aligned with another file's)
    # names the rows to keep: the same evidence, built from the rows of the listed cases alone.
    other = _write(tmp_path / "other.json", rows[:2])
    aligned, _ = promptfoo.align_matrix(run, load_results(other, "promptfoo", 1.0))
    for model in (run, aligned):
        built.clear()
        assert read_case_evidence(path, "promptfoo", only, model) == whole
        assert len(built) == 3  # labels[0] was run twice (repeats), labels[4] once
    # A model of another file names other rows: the file is read again without it.
    built.clear()
    assert read_case_evidence(path, "promptfoo", only, load_results(other, "promptfoo", 1.0)) == (
        whole
    )
    assert len(built) == len(rows)


def test_promptfoo_evidence_refuses_what_the_reader_refuses(tmp_path: Path) -> None:
    path = tmp_path / "dup.json"
    path.write_text(
        '{"results": {"results": [{"success": true, "success": false}]}}', encoding="utf-8"
    )
    assert read_case_evidence(path, "promptfoo") == {}


def test_junit_record_ids_are_the_case_ids_the_reader_builds() -> None:
    xml = (
        b'<testsuites><testsuite name="one"><testcase classname="m" name="t"/>'
        b'<testcase classname="m" name="t"><failure message="x"/></testcase></testsuite>'
        b'<testsuite name="two"><testcase classname="m" name="t"/>'
        b'<testcase classname="m" name="t #2"/></testsuite></testsuites>'
    )
    facts, records = scan_records(io.BytesIO(xml), "r.xml")
    ids = record_case_ids(facts, records)
    _, cases = read_cases(facts, records)
    # A repeat inside one suite is another test too (issue 23: an attempt only where the
    # producer's rerun marker says so); numbers already taken by a written name are skipped.
    assert ids == ["m::t", "m::t #3", "m::t #4", "m::t #2"]
    assert list(dict.fromkeys(ids)) == list(cases)
    evidence = read_case_evidence(EXAMPLES / "junit" / "current.xml", "junit")
    assert list(evidence) == list(
        load_results(EXAMPLES / "junit" / "current.xml", "junit", 1.0).cases
    )


def test_junit_tests_share_one_value_but_keep_each_duration() -> None:
    from evalarc.formats.junit import read_junit_bytes
    from evalarc.formats.model import Source

    xml = (
        b'<testsuites><testsuite name="s"><testcase name="a" time="0.5"/>'
        b'<testcase name="b" time="0.5"/><testcase name="c" time="-0"/>'
        b'<testcase name="d" time="0"/><testcase name="e"/><testcase name="f"/>'
        b"</testsuite></testsuites>"
    )
    run = read_junit_bytes(xml, Source("r.xml", "0" * 64), 1.0)
    usage = {case: metas[0].usage for case, metas in run.samples.items()}
    assert usage["s::a"] == usage["s::b"] == {"duration_seconds": 0.5}
    assert str(usage["s::c"]["duration_seconds"]) == "-0.0"
    assert str(usage["s::d"]["duration_seconds"]) == "0.0"
    assert usage["s::e"] == usage["s::f"] == {}
    assert all(len(attempts["passed"]) == 1 for attempts in run.cases.values())
    # Bare passing testcases without a duration are one shared, read-only value.
    assert run.cases["s::e"] is run.cases["s::f"]
    assert [len(metas) for metas in run.samples.values()] == [1] * 6


@pytest.mark.parametrize("side", ["baseline", "current"])
def test_junit_case_views_show_each_attempt_as_pytest_reported_it(corpus: Path, side: str) -> None:
    # pytest-rerunfailures writes a failed attempt it reran as a bare <testcase/>, which reads
    # as a pass; the case view must show what pytest itself reported (its -rA words, truth.json),
    # the verdict the gate counts.
    folder = corpus / "junit" / "pytest-rerunfailures"
    truth = json.loads((folder / "truth.json").read_text(encoding="utf-8"))[side]
    evidence = read_junit_evidence(folder / f"{side}.xml")
    shown = {"pass": "passed", "fail": "failed", "error": "unassessed", "skip": "unassessed"}
    reruns = 0
    for case_id, attempts in truth.items():
        heads = [
            section
            for section in evidence[case_id].sections
            if section.title.startswith("Attempt ") and " · " not in section.title
        ]
        outcomes = [
            next(entry.text for entry in head.items if entry.label == "outcome") for head in heads
        ]
        rerun = " (a rerun of a failed attempt)"
        expected = [
            shown[attempt["outcome"]] + (rerun if attempt["rerun"] else "") for attempt in attempts
        ]
        assert outcomes == expected, case_id
        reruns += sum(1 for attempt in attempts if attempt["rerun"])
    if side == "current":
        assert reruns > 0  # the pair exercises the rerun shape
