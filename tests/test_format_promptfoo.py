"""The promptfoo reader against real promptfoo output files, label rules, and hostile JSON."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from evalarc.canonical import sha256_file, sha256_text
from evalarc.errors import InputError
from evalarc.formats.load import load_results
from evalarc.formats.model import Material, Run, Source
from evalarc.formats.promptfoo import SUCCESS_CHECK, read_promptfoo


def _read(path: Path) -> Run:
    digest, _ = sha256_file(path)
    return read_promptfoo(path, Source(name=path.name, sha256=digest), 1.0)


def _verdicts(run: Run, case: str) -> dict[str, list[bool | None]]:
    return {check: [a.passed for a in attempts] for check, attempts in run.cases[case].items()}


def _passing_rows(run: Run) -> int:
    """Rows whose own verdict, the (test) check, passed (promptfoo's own success)."""
    return sum(
        meta.verdicts[SUCCESS_CHECK] is True for metas in run.samples.values() for meta in metas
    )


def _promptfoo_files(corpus: Path) -> list[Path]:
    return sorted(p for p in (corpus / "promptfoo").rglob("*.json") if p.name != "truth.json")


# --- every corpus file -------------------------------------------------------------------


def test_every_corpus_file_reads_one_attempt_per_row(corpus: Path) -> None:
    files = _promptfoo_files(corpus)
    assert {p.relative_to(corpus / "promptfoo").as_posix() for p in files} >= {
        "generated/qa.baseline.json",
        "generated/qa.current.json",
        "generated/repeat.baseline.json",
        "generated/repeat.current.json",
        "generated/echo.baseline.json",
        "generated/echo.current.json",
        "realworld/sample-export.json",
    }
    for path in files:
        run = load_results(path)
        raw = json.loads(path.read_bytes())
        rows = raw["results"]["results"]
        assert run.format == "promptfoo", path.name
        assert run.incomplete is False
        assert sum(len(metas) for metas in run.samples.values()) == len(rows), path.name
        stats = raw["results"]["stats"]
        assert run.headline is not None and run.headline.name == "promptfoo pass rate"
        assert run.headline.value == pytest.approx(
            stats["successes"] / (stats["successes"] + stats["failures"] + stats["errors"])
        )
        assert _passing_rows(run) == stats["successes"], path.name
        assert run.identity["version"] == 3
        assert run.identity["description"] == raw["config"]["description"]
        for case, checks in run.cases.items():
            rows_of_case = len(run.samples[case])
            for attempts in checks.values():
                assert 1 <= len(attempts) <= rows_of_case, (path.name, case)
        # Every attempt carries the digest of the output its row graded (a provider error
        # graded no output: its attempts carry none).
        digests = {
            sha256_text(row["response"]["output"])
            if "output" in (row.get("response") or {})
            else None
            for row in rows
        }
        seen = {a.output_sha256 for c in run.cases.values() for x in c.values() for a in x}
        assert seen == digests, path.name


# --- qa ------------------------------------------------------------------------------------
# The generated pairs (tests/corpus/promptfoo/generated/, made by the real promptfoo CLI);
# their truth.json holds promptfoo's own stats and lost assertions.

GENERATED = "generated"


def test_qa_checks_and_changes(corpus: Path) -> None:
    baseline = _read(corpus / "promptfoo" / GENERATED / "qa.baseline.json")
    current = _read(corpus / "promptfoo" / GENERATED / "qa.current.json")
    assert list(baseline.cases) == list(current.cases)
    assert [case[:3] for case in baseline.cases] == [f"T{n:02d}" for n in range(1, 11)]
    # promptfoo's stats: 7 successes, 3 failures in both runs
    assert baseline.headline is not None and baseline.headline.value == pytest.approx(7 / 10)
    assert current.headline is not None and current.headline.value == pytest.approx(7 / 10)
    assert (_passing_rows(baseline), _passing_rows(current)) == (7, 7)

    def assertions(run: Run) -> Counter[bool | None]:
        return Counter(a.passed for c in run.cases.values() for x in c.values() for a in x)

    # 30 assertions and 10 rows' own verdicts (the (test) check) on each side
    assert assertions(baseline) == Counter({True: 24 + 7, False: 6 + 3})
    assert assertions(current) == Counter({True: 24 + 7, False: 6 + 3})
    assert _verdicts(baseline, "T02 capital of Japan") == {
        "(test)": [True],
        "icontains: Tokyo": [True],
        "not-icontains: not sure": [True],
        "brevity · javascript: output.length < 80": [True],
    }
    assert _verdicts(current, "T02 capital of Japan")["icontains: Tokyo"] == [False]
    # A named metric prefixes its check's name: it passes in every test of both runs.
    brevity = "brevity · javascript: output.length < 80"
    for run in (baseline, current):
        assert all(checks[brevity][0].passed is True for checks in run.cases.values())
    improved = {"T04 speed of light": "icontains: 299792458", "T07 boiling point": "icontains: 100"}
    for case, check in improved.items():
        assert baseline.cases[case][check][0].passed is False, case
        assert current.cases[case][check][0].passed is True, case
    # Scores and reasons are kept.
    failed = current.cases["T09 gold symbol"]["icontains: Au"][0]
    assert failed.value == 0 and failed.evidence


def test_qa_material_excludes_negative_assertions(corpus: Path) -> None:
    run = _read(corpus / "promptfoo" / GENERATED / "qa.baseline.json")
    japan = run.material["T02 capital of Japan"]
    assert Material("expected", "Tokyo") in japan
    # a not-icontains value is not an answer
    assert Material("expected", "not sure") not in japan
    assert any(item.role == "input" and "Japan" in item.text for item in japan)


# --- repeat ----------------------------------------------------------------------------------


def test_repeats_collapse_into_attempts_of_one_case(corpus: Path) -> None:
    baseline = _read(corpus / "promptfoo" / GENERATED / "repeat.baseline.json")
    current = _read(corpus / "promptfoo" / GENERATED / "repeat.current.json")
    expected = {
        "R1 stable pass": ([True, True, True], [True, True, True]),
        "R2 loses one": ([True, True, True], [True, False, True]),
        "R3 fixed": ([False, False, False], [True, True, True]),
        "R4 flaky improves": ([False, True, False], [True, True, False]),
        "R5 loses all": ([True, False, False], [False, False, False]),
    }
    for run, side in ((baseline, 0), (current, 1)):
        assert list(run.cases) == list(expected)
        for case, outcomes in expected.items():
            assert list(run.cases[case]) == ["(test)", "equals: yes"]
            for attempts in run.cases[case].values():
                assert [a.passed for a in attempts] == outcomes[side], (side, case)
            assert len(run.samples[case]) == 3
    assert list(current.cases["R2 loses one"]) == ["(test)", "equals: yes"]


# --- echo ------------------------------------------------------------------------------------


def test_echo_provider_runs(corpus: Path) -> None:
    baseline = _read(corpus / "promptfoo" / GENERATED / "echo.baseline.json")
    current = _read(corpus / "promptfoo" / GENERATED / "echo.current.json")
    # promptfoo's stats: 2 successes, 3 failures in both runs
    assert baseline.headline is not None and baseline.headline.value == pytest.approx(2 / 5)
    assert current.headline is not None and current.headline.value == pytest.approx(2 / 5)
    assert baseline.identity["providers"] == ["echo"]
    assert len(current.cases) == 5
    # A failed assertion is an assertion failure, not a provider error.
    assert all("provider error" not in checks for checks in current.cases.values())
    assert _verdicts(baseline, "E4 Alan") == {
        "(test)": [False],
        "contains: London": [False],
        "not-contains: ,": [False],
    }
    assert _verdicts(current, "E4 Alan") == {
        "(test)": [False],
        "contains: London": [True],
        "not-contains: ,": [False],
    }
    assert _verdicts(current, "E1 Ada")["starts-with: Hello"] == [False]
    assert _verdicts(current, "E2 Linus")["javascript: output.length <= 30"] == [False]
    meta = current.samples["E1 Ada"][0]
    assert meta.output_text == "Hi Ada! Welcome to Paris, enjoy your stay."
    assert meta.usage["duration_seconds"] == pytest.approx(0.027)


# --- real-world export ------------------------------------------------------------------------


def test_sample_export_two_providers(corpus: Path) -> None:
    path = corpus / "promptfoo" / "realworld" / "sample-export.json"
    run = _read(path)
    assert run.identity["providers"] == ["openai:gpt-5", "openai:gpt-5-mini"]
    assert run.headline is not None and run.headline.value == 0.0
    assert len(run.cases) == 4
    for case in run.cases:
        # No description: the vars JSON names the test; two providers add a suffix. The two
        # promptIdx values are one prompt (the same label) in two provider columns: no suffix.
        assert re.fullmatch(r'\{"riddle": ".+"\} · openai:gpt-5(-mini)?', case), case
    assert _passing_rows(run) == 0
    echo_mini = (
        '{"riddle": "I speak without a mouth and hear without ears. I have no body, but I come '
        'alive with wind. What am I?"} · openai:gpt-5-mini'
    )
    assert _verdicts(run, echo_mini) == {
        "(test)": [False],
        "cost": [True],
        "latency": [False],
        "contains: echo": [True],
        "llm-rubric: Do not apologize": [True],
    }
    assert "llm-rubric: Do not apologize" in run.graders.model_graded_checks
    assert run.graders.subject_models == ["openai:gpt-5", "openai:gpt-5-mini"]
    assert run.graders.self_graded == []
    meta = run.samples[echo_mini][0]
    assert meta.stop_reason == "stop" and meta.truncated is False
    assert meta.usage == {"cost_usd": 0.00049925, "duration_seconds": 5.794}
    assert meta.output_text is not None and "echo" in meta.output_text
    assert Material("expected", "echo") in run.material[echo_mini]
    rubric_names = [
        n for n in run.graders.model_graded_checks if n != "llm-rubric: Do not apologize"
    ]
    # a value cut short is followed by the start of its sha256, so cut values never collide
    assert len(rubric_names) == 1 and re.fullmatch(
        r"llm-rubric: .{60}… \[[0-9a-f]{8}\]", rubric_names[0]
    )


# --- rules shown on small files written here ---------------------------------------------------


def _row(**fields: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "provider": {"id": "echo", "label": ""},
        "promptIdx": 0,
        "testIdx": 0,
        "success": True,
        "testCase": {"vars": {}, "assert": []},
        "gradingResult": {"pass": True, "reason": "ok", "componentResults": []},
    }
    row.update(fields)
    return row


def _stats(rows: list[dict[str, Any]]) -> dict[str, int]:
    """What promptfoo's ``stats`` says of these rows (its own counting rule)."""
    successes = sum(row.get("success") is True for row in rows)
    errors = sum(row.get("success") is not True and row.get("failureReason") == 2 for row in rows)
    return {"successes": successes, "failures": len(rows) - successes - errors, "errors": errors}


def _write(
    tmp_path: Path,
    rows: list[dict[str, Any]],
    name: str = "out.json",
    stats: dict[str, Any] | None = None,
) -> Path:
    document = {
        "config": {"description": "made here"},
        "results": {
            "version": 3,
            "results": rows,
            "stats": _stats(rows) if stats is None else stats,
        },
    }
    path = tmp_path / name
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    return path


def test_labels_add_vars_only_when_a_description_is_ambiguous(tmp_path: Path) -> None:
    rows = [
        _row(testIdx=0, testCase={"description": "greet", "vars": {"name": "Ada"}}),
        _row(testIdx=1, testCase={"description": "greet", "vars": {"name": "Zoë"}}),
        _row(testIdx=2, testCase={"description": "alone", "vars": {"b": 1, "a": 2}}),
        _row(testIdx=3, testCase={"vars": {"b": 1, "a": 2}}),
        _row(testIdx=4, testCase={"vars": {"b": 1, "a": 2}}),
        _row(testIdx=7, testCase={}),
    ]
    run = _read(_write(tmp_path, rows))
    assert list(run.cases) == [
        'greet {"name": "Ada"}',
        'greet {"name": "Zoë"}',
        "alone",
        '{"a": 2, "b": 1}',
        "test 7",
    ]
    assert len(run.samples['{"a": 2, "b": 1}']) == 2
    assert run.headline is not None and run.headline.value == pytest.approx(1.0)


def test_labels_add_provider_and_prompt_only_when_there_are_several(tmp_path: Path) -> None:
    rows = [
        _row(provider="openai:gpt-4o", promptIdx=0, testCase={"description": "t"}),
        _row(provider={"id": "x:y", "label": "mine"}, promptIdx=1, testCase={"description": "t"}),
        _row(provider={}, promptIdx=1, testCase={"description": "t"}),
    ]
    run = _read(_write(tmp_path, rows))
    assert list(run.cases) == [
        "t · openai:gpt-4o · prompt 0",
        "t · mine · prompt 1",
        "t · provider · prompt 1",
    ]
    assert run.identity["providers"] == ["mine", "openai:gpt-4o", "provider"]


def _failed(**fields: Any) -> dict[str, Any]:
    grading = {"pass": False, "reason": "no", "componentResults": []}
    return _row(success=False, failureReason=1, gradingResult=grading, **fields)


def test_attempts_follow_file_order_not_test_index(tmp_path: Path) -> None:
    rows = [
        _failed(testIdx=5, testCase={"description": "d"}),
        _row(testIdx=1, success=True, testCase={"description": "d"}),
        _row(
            testIdx=3, failureReason=2, success=False, error="boom", testCase={"description": "d"}
        ),
    ]
    run = _read(_write(tmp_path, rows))
    assert _verdicts(run, "d") == {"(test)": [False, True, None]}
    assert run.cases["d"]["(test)"][0].evidence == "no"


def test_provider_errors_are_unassessed_on_the_declared_checks(tmp_path: Path) -> None:
    declared = [{"type": "contains", "value": "x"}, {"type": "equals", "value": 1, "metric": "m"}]
    components = [
        {"pass": True, "assertion": declared[0]},
        {"pass": False, "assertion": declared[1]},
    ]
    errored: dict[str, Any] = {"failureReason": 2, "success": False, "gradingResult": None}
    rows = [
        # A provider error whose test declares two assertions: unassessed on both and on the
        # test's own verdict, evidence the error text; no "provider error" check appears.
        _row(error="rate limited", testCase={"description": "a", "assert": declared}, **errored),
        # promptfoo's "No output": success false without failureReason 2 is a failure
        _row(error="No output", success=False, gradingResult=None, testCase={"description": "b"}),
        _failed(error="assertion failed", testCase={"description": "c"}),
        # The same test once graded, once errored: the error is unassessed on the graded names.
        _row(
            success=False,
            failureReason=1,
            testCase={"description": "d", "assert": declared},
            gradingResult={"pass": False, "componentResults": components},
        ),
        _row(error="timeout", testCase={"description": "d", "assert": declared}, **errored),
    ]
    run = _read(_write(tmp_path, rows))
    assert set(run.cases["a"]) == {"(test)", "contains: x", "m · equals: 1"}
    for attempts in run.cases["a"].values():
        assert [(a.passed, a.evidence) for a in attempts] == [(None, "rate limited")]
    assert _verdicts(run, "b") == {"(test)": [False]}
    assert run.cases["b"]["(test)"][0].evidence == "No output"
    assert _verdicts(run, "c") == {"(test)": [False]}
    assert _verdicts(run, "d") == {
        "(test)": [False, None],
        "contains: x": [True, None],
        "m · equals: 1": [False, None],
    }
    assert run.cases["d"]["m · equals: 1"][1].evidence == "timeout"
    assert all("provider error" not in checks for checks in run.cases.values())
    assert run.samples["a"][0].verdicts == {
        "(test)": None,
        "contains: x": None,
        "m · equals: 1": None,
    }


def test_component_names_metric_type_value_and_duplicates(tmp_path: Path) -> None:
    long_value = "line one\nline two " + "x" * 80
    components = [
        {"pass": True, "score": 1, "reason": "r1", "assertion": {"type": "equals", "value": 42}},
        {"pass": False, "score": 0, "reason": "r2", "assertion": {"type": "equals", "value": 42}},
        {"pass": True, "assertion": {"type": "equals", "value": 42}},
        {"pass": True, "assertion": {"type": "contains", "value": long_value}},
        {
            "pass": True,
            "assertion": {
                "type": "llm-rubric",
                "value": "polite",
                "metric": "tone",
                "provider": {"id": "openai:gpt-4o"},
            },
        },
        {"pass": True, "assertion": {"type": "is-json"}},
        {"pass": True, "assertion": None},
        {"pass": True, "assertion": {"type": "contains", "value": True}},
    ]
    rows = [
        _row(
            provider="openai:gpt-4o",
            testCase={"description": "d", "options": {"provider": "anthropic:claude"}},
            gradingResult={"componentResults": components},
            response={"output": "o" * 25_000, "finishReason": "length"},
            cost=0.5,
            latencyMs=1500,
            tokenUsage={
                "total": 10,
                "prompt": 7,
                "completion": -3,
                "cached": True,
                "completionDetails": {"reasoning": 2},
            },
        )
    ]
    run = _read(_write(tmp_path, rows))
    cut = sha256_text(long_value)[:8]
    assert list(run.cases["d"]) == [
        "(test)",
        "equals: 42",
        "equals: 42 #2",
        "equals: 42 #3",
        "contains: line one line two " + "x" * 42 + f"… [{cut}]",
        "tone · llm-rubric: polite",
        "is-json",
        "assertion",
        "contains: true",
    ]
    assert _verdicts(run, "d")["equals: 42 #2"] == [False]
    assert run.cases["d"]["equals: 42 #2"][0].evidence == "r2"
    assert run.cases["d"]["equals: 42 #2"][0].value == 0
    assert run.graders.model_graded_checks == ["tone · llm-rubric: polite"]
    assert run.graders.grader_models == ["anthropic:claude", "openai:gpt-4o"]
    assert run.graders.self_graded == ["openai:gpt-4o"]
    meta = run.samples["d"][0]
    assert meta.truncated is True and meta.stop_reason == "length"
    assert meta.output_text is not None and len(meta.output_text) == 20_000
    assert meta.output_sha256 == sha256_text("o" * 25_000)
    # Negative, bool and non-numeric usage values are dropped, not guessed.
    assert meta.usage == {
        "cost_usd": 0.5,
        "total_tokens": 10,
        "input_tokens": 7,
        "reasoning_tokens": 2,
        "duration_seconds": 1.5,
    }


def test_material_comes_from_declared_assertions(tmp_path: Path) -> None:
    rows = [
        _row(
            testCase={
                "description": "d",
                "vars": {"question": "Capital of France?", "n": 3, "blank": "  "},
                "assert": [
                    {"type": "contains-any", "value": ["Paris", "paris", 7]},
                    {"type": "not-contains", "value": "Lyon"},
                    {"type": "python", "value": "output == 'Paris'"},
                    {"type": "equals", "value": "Paris"},
                ],
            }
        )
    ]
    run = _read(_write(tmp_path, rows))
    assert run.material["d"] == [
        Material("input", "Capital of France?"),
        Material("expected", "Paris"),
        Material("expected", "paris"),
    ]


# --- hostile input ------------------------------------------------------------------------------


HOSTILE: list[tuple[str, bytes, str]] = [
    ("noresults.json", b'{"results": {"stats": {}}}', "expected results.results[]"),
    ("notlist.json", b'{"results": {"results": {"0": {}}}}', "expected results.results[]"),
    ("array.json", b"[1, 2]", "expected results.results[]"),
    (
        "row.json",
        b'{"results": {"results": [{"success": true}, 3]}}',
        "results.results[1] is not an object",
    ),
    ("shape.json", b'{"results": {"results": [{}]}}', "results.results[0] is a row of an unknown"),
    (
        "verdictless.json",
        b'{"results": {"results": [{"success": null}, {"gradingResult": {}}]}}',
        "results.results[0].success is null, not true or false",
    ),
    ("nan.json", b'{"results": {"results": [], "stats": {"successes": NaN}}}', "is not JSON"),
    ("inf.json", b'{"results": {"results": [{"cost": 1e999}]}}', "is not JSON"),
    ("dup.json", b'{"results": {"results": []}, "results": {"results": []}}', "duplicate key"),
    ("truncated.json", b'{"results": {"results": [{"success": tru', "is not JSON"),
    ("utf8.json", b'{"results": {"results": [{"vars": {"a": "\xff"}}]}}', "is not JSON"),
    ("deep.json", b"[" * 200_000 + b"]" * 200_000, "nested too deeply"),
    (
        "deeprow.json",
        b'{"results": {"results": [' + b"[" * 200_000 + b"]" * 200_000 + b"]}}",
        "nested too deeply",
    ),
]


@pytest.mark.parametrize(("name", "data", "fragment"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_json_is_refused_with_one_line_naming_the_file(
    tmp_path: Path, name: str, data: bytes, fragment: str
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(InputError) as caught:
        _read(path)
    message = str(caught.value)
    # The whole path as given, not the base name: two files of one name stay apart.
    assert message.startswith(str(path))
    assert fragment in message
    assert "\n" not in message and len(message) < 400


def test_empty_results_list_has_no_scored_cases(tmp_path: Path) -> None:
    path = _write(tmp_path, [], name="empty.json")
    with pytest.raises(InputError, match=r"empty\.json: nothing in it could be assessed"):
        _read(path)
    with pytest.raises(InputError, match=r"empty\.json: nothing in it could be assessed"):
        load_results(path)
