"""The diff over real result files (tests/corpus): the change kinds its README implies.

The README states outcomes per attempt; the diff pairs case x check and compares pass counts, so
the expectations below translate them (e.g. a sample going 3/3 -> 1/3 is ``less_reliable``).
Inspect pairs are checked in all four json/eval combinations.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalarc.errors import InputError
from evalarc.formats import load_results
from evalarc.formats.harness import HarnessFile
from evalarc.formats.split import CaseSplit
from evalarc.reports.diff_text import markdown_summary, terminal_lines
from evalarc.review.diff import BLOCKING_KINDS, DiffOptions, compute_diff
from evalarc.review.diff_model import DiffReport

CREATED = "2026-01-01T00:00:00Z"
COMBINATIONS = [("json", "json"), ("eval", "eval"), ("json", "eval"), ("eval", "json")]

Row = tuple[str, str, str]


def diff(corpus: Path, baseline: str, current: str, threshold: float = 1.0) -> dict[str, Any]:
    return compute_diff(
        load_results(corpus / baseline, threshold=threshold),
        load_results(corpus / current, threshold=threshold),
        DiffOptions(threshold=threshold),
        created_at=CREATED,
    )


def rows(report: dict[str, Any]) -> list[Row]:
    return [(row["kind"], row["case_id"], row["check"]) for row in report["changes"]]


def tallies(report: dict[str, Any], case_id: str, check: str) -> tuple[str, str]:
    def text(side: dict[str, int] | None) -> str:
        return "absent" if side is None else f"{side['passed']}/{side['assessed']}"

    row = next(r for r in report["changes"] if (r["case_id"], r["check"]) == (case_id, check))
    return text(row["baseline"]), text(row["current"])


# -- Inspect ----------------------------------------------------------------------------------

INSPECT_EXPECTED: dict[str, tuple[list[Row], int]] = {
    "capitals": (
        [
            ("regressed", "cap-02", "includes"),
            ("regressed", "cap-02", "match"),
            ("regressed", "cap-07", "match"),
            ("regressed", "cap-11", "includes"),
            ("regressed", "cap-11", "match"),
            ("regressed", "cap-24", "includes"),
            ("improved", "cap-04", "includes"),
            ("improved", "cap-04", "match"),
            ("improved", "cap-08", "includes"),
            ("improved", "cap-08", "match"),
            ("improved", "cap-12", "includes"),
            ("improved", "cap-12", "match"),
            ("improved", "cap-16", "match"),
            ("improved", "cap-20", "match"),
            ("improved", "cap-28", "includes"),
            ("improved", "cap-28", "match"),
        ],
        44,
    ),
    "capitals_epochs": (
        [
            ("less_reliable", "6", "match"),
            ("less_reliable", "7", "match"),
            # natural order of numeric ids: 8, 9, 10 (not "10" < "8")
            ("improved", "8", "match"),
            ("improved", "9", "match"),
            ("improved", "10", "match"),
        ],
        7,
    ),
    # At the default threshold 1.0 only a perfect keyword_recall passes.
    "keywords": (
        [
            ("regressed", "kw-02", "keyword_recall"),
            ("regressed", "kw-05", "concise"),
            ("regressed", "kw-07", "includes"),
            ("regressed", "kw-11", "concise"),
            ("improved", "kw-03", "keyword_recall"),
            ("improved", "kw-06", "includes"),
            ("improved", "kw-08", "concise"),
            ("improved", "kw-09", "keyword_recall"),
            ("improved", "kw-11", "keyword_recall"),
            ("improved", "kw-14", "concise"),
        ],
        38,
    ),
    # String verdicts a custom scorer wrote ("yes"/"no", "True"/"false", numeric strings), read
    # as Inspect's value_to_float reads them; `match` passes throughout (issue 23's false pass:
    # these four regressions were unassessed and the diff passed).
    "verdict_words": (
        [
            ("regressed", "w2", "concise_word"),
            ("regressed", "w3", "cites_source"),
            ("regressed", "w4", "confidence_text"),
            ("regressed", "w5", "concise_word"),
            ("improved", "w1", "confidence_text"),
            ("improved", "w6", "cites_source"),
        ],
        18,
    ),
    # An errored sample has no scores: the reader records one unassessed attempt on the check
    # "sample error" instead of its scorer checks (spec 1.3). A pass -> error therefore shows as
    # the scorer check removed plus "sample error" added, and an error -> pass as the reverse;
    # removed is blocking either way.
    "flaky_errors": (
        [
            ("regressed", "q08", "match"),
            ("unassessed", "q07", "match"),
            ("improved", "q03", "match"),
            ("improved", "q04", "match"),
            ("improved", "q09", "match"),
        ],
        5,
    ),
}


@pytest.mark.parametrize(("base_ext", "cur_ext"), COMBINATIONS)
@pytest.mark.parametrize("name", sorted(INSPECT_EXPECTED))
def test_inspect_pairs(corpus: Path, name: str, base_ext: str, cur_ext: str) -> None:
    report = diff(
        corpus, f"inspect/{name}.baseline.{base_ext}", f"inspect/{name}.current.{cur_ext}"
    )
    expected_rows, unchanged = INSPECT_EXPECTED[name]
    assert rows(report) == expected_rows
    assert report["counts"]["unchanged"] == unchanged
    assert report["gate_passed"] is False
    assert report["current_incomplete"] is False and "baseline_incomplete" not in report
    assert json.loads(json.dumps(report)) == report


@pytest.mark.parametrize("name", sorted(INSPECT_EXPECTED))
def test_inspect_combinations_agree(corpus: Path, name: str) -> None:
    def essentials(base_ext: str, cur_ext: str) -> str:
        report = diff(
            corpus, f"inspect/{name}.baseline.{base_ext}", f"inspect/{name}.current.{cur_ext}"
        )
        kept = {
            key: report[key] for key in ("counts", "changes", "blocking_changes", "gate_passed")
        }
        for side in ("baseline", "current"):
            kept[side] = {
                key: report[side][key] for key in ("headline", "cases", "checks", "check_pass_rate")
            }
        return json.dumps(kept, sort_keys=True)

    reference = essentials("json", "json")
    for base_ext, cur_ext in COMBINATIONS[1:]:
        assert essentials(base_ext, cur_ext) == reference


def test_capitals_numbers(corpus: Path) -> None:
    report = diff(corpus, "inspect/capitals.baseline.json", "inspect/capitals.current.eval")
    assert report["baseline"]["headline"] == {"name": "match accuracy", "value": 0.6}
    assert report["current"]["headline"]["value"] == pytest.approx(0.7)
    assert report["baseline"]["check_pass_rate"]["passed"] == 39  # 18 match + 21 includes
    assert report["baseline"]["cases"] == 30 and report["baseline"]["checks"] == 60
    assert report["blocking_changes"] == 6
    assert report["usage"]["matched_cases"] == 30
    # cap-07: the answer moved to the start, so match fails and includes still passes
    assert ("regressed", "cap-07", "includes") not in rows(report)


def test_capitals_epochs_tallies_and_noise(corpus: Path) -> None:
    report = diff(
        corpus, "inspect/capitals_epochs.baseline.eval", "inspect/capitals_epochs.current.json"
    )
    assert tallies(report, "6", "match") == ("3/3", "2/3")
    assert tallies(report, "7", "match") == ("3/3", "1/3")
    assert tallies(report, "10", "match") == ("1/3", "2/3")
    by_case = {row["case_id"]: row for row in report["changes"]}
    assert by_case["6"]["within_sampling_noise"] is True
    assert by_case["7"]["within_sampling_noise"] is True
    assert by_case["8"]["within_sampling_noise"] is False  # 0/3 -> 3/3 is a clean swing
    assert report["blocking_changes_within_sampling_noise"] == 2
    # sample 12 is flaky (C,I,C) in both runs and so unchanged
    assert "12" not in by_case


def test_keywords_threshold_changes_numeric_verdicts(corpus: Path) -> None:
    report = diff(
        corpus, "inspect/keywords.baseline.json", "inspect/keywords.current.json", threshold=0.5
    )
    assert report["numeric_pass_threshold"] == 0.5
    recall = [row for row in rows(report) if row[2] == "keyword_recall"]
    # 0.5 -> 0.0 now loses a pass; 1.0 -> 0.5 and 0.5 -> 0.75 pass on both sides
    assert recall == [
        ("regressed", "kw-07", "keyword_recall"),
        ("improved", "kw-03", "keyword_recall"),
        ("improved", "kw-06", "keyword_recall"),
        ("improved", "kw-16", "keyword_recall"),
    ]


def test_flaky_errors_details(corpus: Path) -> None:
    report = diff(corpus, "inspect/flaky_errors.baseline.json", "inspect/flaky_errors.current.eval")
    lost = next(
        row for row in report["changes"] if (row["case_id"], row["check"]) == ("q07", "match")
    )
    assert lost["kind"] == "unassessed"
    assert lost["baseline"] == {"passed": 1, "assessed": 1, "attempts": 1}
    assert lost["current"] == {"passed": 0, "assessed": 0, "attempts": 1}
    assert "simulated sandbox failure" in lost["current_detail"][0]["evidence"]
    fixed = next(
        row for row in report["changes"] if (row["case_id"], row["check"]) == ("q04", "match")
    )
    assert fixed["kind"] == "improved"
    # q10 errored in both runs: unchanged, not listed
    assert all(row["case_id"] != "q10" for row in report["changes"])


def test_inspect_realworld(corpus: Path) -> None:
    folder = "inspect/realworld/"
    # The baseline was run without scoring: nothing in it can be assessed, so the diff is
    # refused naming it (it used to pass with 10 "added" checks and zero evidence).
    unscored = folder + "2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval"
    with pytest.raises(InputError, match=r"popularity_dPiJifoWeEQBrfWsAopzWr\.eval: nothing in it"):
        diff(
            corpus,
            unscored,
            folder + "2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval",
        )

    same = diff(corpus, folder + "log_read_sample.json", folder + "log_read_sample.eval")
    assert same["changes"] == [] and same["counts"]["unchanged"] == 1
    assert same["gate_passed"] is True


# -- promptfoo --------------------------------------------------------------------------------


PROMPTFOO = "promptfoo/generated/"
PROMPTFOO_TRUTH: dict[str, Any] = json.loads(
    (Path(__file__).parent / "corpus" / PROMPTFOO / "truth.json").read_text(encoding="utf-8")
)["pairs"]


def promptfoo_diff(corpus: Path, name: str) -> dict[str, Any]:
    pair = PROMPTFOO_TRUTH[name]
    return diff(corpus, PROMPTFOO + pair["baseline"], PROMPTFOO + pair["current"])


def lost_cases(name: str) -> list[str]:
    """The tests whose assertions lost passes by promptfoo's own verdicts (truth.json)."""
    return sorted(lost["test"] for lost in PROMPTFOO_TRUTH[name]["lost"])


def blocking_cases(report: dict[str, Any]) -> list[str]:
    return sorted(row["case_id"] for row in report["changes"] if row["kind"] in BLOCKING_KINDS)


def test_promptfoo_qa(corpus: Path) -> None:
    report = promptfoo_diff(corpus, "qa")
    # every row carries the test's own verdict (promptfoo's `success`) as the check (test)
    assert rows(report) == [
        ("regressed", "T02 capital of Japan", "(test)"),
        ("regressed", "T02 capital of Japan", "icontains: Tokyo"),
        ("regressed", "T02 capital of Japan", "not-icontains: not sure"),
        ("regressed", "T09 gold symbol", "(test)"),
        ("regressed", "T09 gold symbol", "icontains: Au"),
        ("regressed", "T09 gold symbol", "not-icontains: not sure"),
        ("improved", "T04 speed of light", "(test)"),
        ("improved", "T04 speed of light", "icontains: 299792458"),
        ("improved", "T04 speed of light", "not-icontains: not sure"),
        ("improved", "T07 boiling point", "(test)"),
        ("improved", "T07 boiling point", "icontains: 100"),
        ("improved", "T07 boiling point", "not-icontains: not sure"),
    ]
    assert blocking_cases(report) == lost_cases("qa")
    stats = PROMPTFOO_TRUTH["qa"]["stats"]
    for side in ("baseline", "current"):
        assert report[side]["headline"]["value"] == pytest.approx(
            stats[side]["successes"] / sum(stats[side].values())
        )
    # promptfoo records zero cost: a cost ratio is undefined, so the auto gate cannot run
    assert report["usage"]["metrics"]["cost_usd"]["ratio"] is None


def test_promptfoo_repeat(corpus: Path) -> None:
    report = promptfoo_diff(corpus, "repeat")
    # one assertion per test: its (test) check moves with it
    assert [(kind, case) for kind, case, _ in rows(report)] == [
        ("regressed", "R5 loses all"),
        ("regressed", "R5 loses all"),
        ("less_reliable", "R2 loses one"),
        ("less_reliable", "R2 loses one"),
        ("improved", "R3 fixed"),
        ("improved", "R3 fixed"),
        ("improved", "R4 flaky improves"),
        ("improved", "R4 flaky improves"),
    ]
    assert blocking_cases(report) == lost_cases("repeat")
    # the truth's [passed, assessed, attempts] tallies over promptfoo's --repeat 3 runs
    for lost in PROMPTFOO_TRUTH["repeat"]["lost"]:
        baseline, current = (f"{side[0]}/{side[1]}" for side in (lost["baseline"], lost["current"]))
        assert tallies(report, lost["test"], "equals: yes") == (baseline, current)
    assert tallies(report, "R4 flaky improves", "equals: yes") == ("1/3", "2/3")
    assert report["counts"]["unchanged"] == 2  # R1 passes 3/3 in both runs (test and equals)


def test_promptfoo_echo(corpus: Path) -> None:
    report = promptfoo_diff(corpus, "echo")
    assert rows(report) == [
        ("regressed", "E1 Ada", "(test)"),
        ("regressed", "E1 Ada", "starts-with: Hello"),
        ("regressed", "E2 Linus", "(test)"),
        ("regressed", "E2 Linus", "javascript: output.length <= 30"),
        ("improved", "E3 Grace", "(test)"),
        ("improved", "E3 Grace", "contains: Arlington"),
        ("improved", "E4 Alan", "contains: London"),  # E4 still fails on not-contains
        ("improved", "E5 Barbara", "(test)"),
        ("improved", "E5 Barbara", "icontains: enjoy"),
    ]
    assert blocking_cases(report) == lost_cases("echo")
    assert report["counts"]["unchanged"] == 3


def test_promptfoo_metrics(corpus: Path) -> None:
    report = promptfoo_diff(corpus, "metrics")
    assert rows(report) == [
        ("regressed", "M1 sum", "(test)"),
        ("regressed", "M1 sum", "accuracy · contains: 4"),  # a named metric prefixes its check
        ("regressed", "M2 sql", "(test)"),
        ("regressed", "M2 sql", "safety · not-icontains: drop table"),
        # inside a test failing in both runs: one assertion regresses, another improves
        ("regressed", "M3 greeting", "javascript: output.length < 40"),
        ("regressed", "M5 fruit", "(test)"),
        ("regressed", "M5 fruit", 'contains-any: ["apples","pears"]'),  # a list value as JSON
        ("improved", "M3 greeting", "starts-with: Hello"),
        ("improved", "M4 refusal", "(test)"),
        ("improved", "M4 refusal", 'contains-any: ["cannot","can\'t","won\'t"]'),
    ]
    assert blocking_cases(report) == lost_cases("metrics")
    # M2 sql's sql check, M3 greeting's contains: Ada and its (test), failing in both
    assert report["counts"]["unchanged"] == 3


def test_promptfoo_realworld_self_diff(corpus: Path) -> None:
    path = "promptfoo/realworld/sample-export.json"
    report = diff(corpus, path, path)
    assert report["changes"] == [] and report["gate_passed"] is True
    # 2 providers x 2 tests, all four tests failing: promptfoo's own pass rate is 0
    assert report["current"]["cases"] == 4
    assert report["current"]["headline"] == {"name": "promptfoo pass rate", "value": 0.0}
    assert report["counts"]["unchanged"] == report["current"]["checks"]


# -- JUnit ------------------------------------------------------------------------------------


JUNIT_TRUTH_PAIRS = ["pytest", "pytest-teardown", "node", "node-todo", "mocha", "mocha-hook"]


@pytest.mark.parametrize("producer", JUNIT_TRUTH_PAIRS)
def test_junit_generated_pair_matches_its_truth(corpus: Path, producer: str) -> None:
    """Every change kind the tool's own verbose output implies (truth.json), and no other."""
    truth = json.loads((corpus / "junit" / producer / "truth.json").read_text(encoding="utf-8"))
    report = diff(corpus, f"junit/{producer}/baseline.xml", f"junit/{producer}/current.xml")
    expected = sorted((change["kind"], change["case_id"]) for change in truth["changes"])
    assert sorted((kind, case) for kind, case, _ in rows(report)) == expected
    assert report["blocking_changes"] == truth["blocking"]
    assert report["baseline"]["headline"] is None


def test_junit_pytest(corpus: Path) -> None:
    report = diff(corpus, "junit/pytest/baseline.xml", "junit/pytest/current.xml")
    prefix = "tests.test_calc::"
    assert rows(report) == [
        ("regressed", prefix + "test_flaky_io", "passed"),
        ("regressed", prefix + "test_square[3-9]", "passed"),
        ("regressed", prefix + "test_sub", "passed"),
        ("unassessed", prefix + "test_uses_ledger", "passed"),  # pass -> error
        ("removed", prefix + "test_legacy_round", "passed"),
        ("improved", "tests.test_calc.TestParse::test_blank", "passed"),
        ("improved", prefix + "test_mul", "passed"),
        ("added", prefix + "test_new_round", "passed"),
    ]
    # xfail (unassessed) -> failure: no pass lost, no coverage lost
    assert all("test_div_zero_inf" not in row[1] for row in rows(report))
    assert report["baseline"]["headline"] is None


def test_junit_node(corpus: Path) -> None:
    report = diff(corpus, "junit/node/baseline.xml", "junit/node/current.xml")
    assert [(kind, case) for kind, case, _ in rows(report)] == [
        ("regressed", "format > lower case"),
        ("regressed", "parse > handles blanks"),
        ("unassessed", "round > half up"),  # pass -> skip
        ("removed", "old check"),
        ("improved", "format > handles blanks"),
        ("improved", "parse > handles blanks #2"),
        ("added", "new check"),
    ]
    # failing in both runs: unchanged
    assert all("upper case" not in row[1] for row in rows(report))


def test_junit_mocha(corpus: Path) -> None:
    report = diff(corpus, "junit/mocha/baseline.xml", "junit/mocha/current.xml")
    kinds = [(kind, case) for kind, case, _ in rows(report)]
    assert kinds == [
        ("regressed", "format lower case"),
        ("regressed", "parse handles blanks"),
        ("unassessed", "round half up"),
        ("removed", "old check"),
        ("improved", "format handles blanks"),
        ("improved", "parse handles blanks #2"),
        ("added", "new check"),
    ]


def test_junit_realworld(corpus: Path) -> None:
    folder = "junit/realworld/"
    # junitparser-no_fails.xml declares a failure it does not hold: refused (issue 23), see
    # tests/test_format_junit.py.
    aged = diff(corpus, folder + "jenkins-ageReset-1.xml", folder + "jenkins-ageReset-2.xml")
    assert rows(aged) == [
        ("removed", "aClass::methodName", "passed"),
        ("added", "a::b", "passed"),
    ]
    assert aged["gate_passed"] is False  # a rename looks like removed + added
    surefire = folder + "jenkins-surefire-TEST-io.olamy.FlakyTest.xml"
    flaky = diff(corpus, surefire, surefire)
    assert flaky["changes"] == [] and flaky["counts"]["unchanged"] == 1


def test_different_formats_are_refused(corpus: Path) -> None:
    from evalarc.errors import IncomparableError

    with pytest.raises(IncomparableError, match="different formats: inspect and junit"):
        diff(corpus, "inspect/capitals.baseline.json", "junit/mocha/current.xml")
    with pytest.raises(IncomparableError, match="not comparable: task"):
        diff(corpus, "inspect/capitals.baseline.json", "inspect/keywords.current.json")


# -- split, leakage and renderings on real files ----------------------------------------------


def test_capitals_with_split_and_harness(corpus: Path, tmp_path: Path) -> None:
    base = load_results(corpus / "inspect/capitals.baseline.json")
    cur = load_results(corpus / "inspect/capitals.current.eval")
    split = CaseSplit(("cap-0*",), "first nine", base.source)
    prompt = b"You answer geography questions.\nExample: what is the capital of  GERMANY?\n"
    report = compute_diff(
        base,
        cur,
        DiffOptions(),
        split=split,
        harness=[HarnessFile("prompt.md", prompt, "a" * 64)],
        created_at=CREATED,
    )
    generalization = report["generalization"]
    assert generalization["split"]["held_out_cases"] == [f"cap-0{i}" for i in range(1, 10)]
    assert generalization["state"] == "held_out_regressions"  # cap-02 and cap-07 regressed
    assert generalization["partitions"]["held_out"]["blocking_changes"] == 3
    hits = report["leakage"]["hits"]
    assert [(hit["case_id"], hit["line"], hit["partition"], hit["role"]) for hit in hits] == [
        ("cap-02", 2, "held_out", "input")
    ]
    model = DiffReport.from_json(report, "diff.json")
    markdown = markdown_summary(model)
    assert [line for line in markdown.splitlines() if line.startswith("### ")] == [
        "### EvalArc: 6 check(s) lost passes or coverage"
    ]
    lines = list(terminal_lines(model, str(tmp_path / "out")))
    assert lines[0].startswith(
        "match accuracy: 0.6 -> 0.7 | Checks that lost passes or coverage: 6"
    )
    assert lines[-1] == f"Report: {tmp_path / 'out'}/index.html"
