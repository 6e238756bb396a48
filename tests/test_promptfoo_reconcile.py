"""promptfoo files read against what they say about themselves, on real files made by promptfoo
(tests/corpus/promptfoo/generated/): a reading that disagrees with the file's own verdicts is
refused with both figures, never passed; and metamorphic transformations of every corpus pair
that keep each test's identity and outcome (reorder rows, reorder a test's assertions, prepend a
``defaultTest`` assertion, add a provider or a prompt) change neither the blocking verdict nor
the blocking rows."""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evalarc.cli import main
from evalarc.errors import InputError
from evalarc.formats import load_results, promptfoo_rows
from evalarc.formats.promptfoo import provider_name
from evalarc.review.diff import BLOCKING_KINDS, DiffOptions, compute_diff

CORPUS = Path(__file__).resolve().parent / "corpus" / "promptfoo" / "generated"
TRUTH: dict[str, Any] = json.loads((CORPUS / "truth.json").read_text(encoding="utf-8"))
PAIRS = sorted(TRUTH["pairs"])
ERROR = 2

Document = dict[str, Any]


def _load(name: str) -> Document:
    document: Document = json.loads((CORPUS / name).read_text(encoding="utf-8"))
    return document


def _save(document: Document, path: Path) -> Path:
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    return path


def _restat(document: Document) -> Document:
    """``results.stats`` recounted by promptfoo's rule, after rows were added."""
    rows = document["results"]["results"]
    passed = sum(1 for row in rows if row["success"])
    errors = sum(1 for row in rows if not row["success"] and row.get("failureReason") == ERROR)
    document["results"]["stats"].update(
        successes=passed, failures=len(rows) - passed - errors, errors=errors
    )
    return document


# --- reconciliation ------------------------------------------------------------------------


def test_a_broken_reading_is_refused_with_both_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    # The reading before issue 23: a row whose assertions all pass is a pass. promptfoo failed
    # SF1 by its assertScoringFunction, and its stats say so: the reader's count disagrees.
    path = CORPUS / TRUTH["pairs"]["scoring_function"]["current"]

    def from_components(row: dict[str, Any]) -> bool | None:
        components = row["gradingResult"]["componentResults"]
        return all(component["pass"] for component in components)

    monkeypatch.setattr(promptfoo_rows, "row_outcome", from_components)
    with pytest.raises(InputError) as caught:
        load_results(path)
    assert str(caught.value) == (
        f"{path}: results.stats says 1 successes, 1 failures, 0 errors, but its rows hold "
        "2 successes, 0 failures, 0 errors (by each row's success and failureReason)"
    )
    baseline = CORPUS / TRUTH["pairs"]["scoring_function"]["baseline"]
    result = CliRunner().invoke(main, ["diff", str(baseline), str(path)])
    assert result.exit_code == 2, result.output
    assert "results.stats says 1 successes, 1 failures, 0 errors" in result.output


def _tampered(tmp_path: Path, change: Callable[[Document], None]) -> Path:
    document = _load(TRUTH["pairs"]["threshold"]["current"])
    change(document)
    return _save(document, tmp_path / "tampered.json")


def _row(document: Document, description: str) -> dict[str, Any]:
    rows = document["results"]["results"]
    return next(row for row in rows if row["testCase"]["description"].startswith(description))


TAMPERED: list[tuple[str, Callable[[Document], None], str]] = [
    (
        "success contradicts gradingResult.pass",
        lambda d: _row(d, "TH1").update(success=True, failureReason=0),
        "results.results[0]: its own verdicts disagree: success is true, gradingResult.pass is "
        "false",
    ),
    (
        "success not a bool",
        lambda d: _row(d, "TH1").update(success="false"),
        'results.results[0].success is "false", not true or false',
    ),
    (
        "component without pass",
        lambda d: _row(d, "TH2")["gradingResult"]["componentResults"][1].pop("pass"),
        "results.results[1].gradingResult.componentResults[1].pass is null, not true or false",
    ),
    (
        "unknown failureReason",
        lambda d: _row(d, "TH1").update(failureReason=7),
        "results.results[0].failureReason is 7, not 0, 1 or 2",
    ),
    (
        "stats off by one",
        lambda d: d["results"]["stats"].update(successes=3),
        "results.stats says 3 successes, 1 failures, 0 errors, but its rows hold 2 successes, "
        "1 failures, 0 errors",
    ),
    (
        "stats not a count",
        lambda d: d["results"]["stats"].update(errors=None),
        "results.stats.errors is None, not a count of rows",
    ),
]


@pytest.mark.parametrize(
    ("change", "message"), [t[1:] for t in TAMPERED], ids=[t[0] for t in TAMPERED]
)
def test_a_file_that_contradicts_itself_exits_2_naming_both(
    tmp_path: Path, change: Callable[[Document], None], message: str
) -> None:
    path = _tampered(tmp_path, change)
    with pytest.raises(InputError) as caught:
        load_results(path)
    assert str(caught.value).startswith(f"{path}: {message}")
    assert "\n" not in str(caught.value)
    baseline = CORPUS / TRUTH["pairs"]["threshold"]["baseline"]
    result = CliRunner().invoke(main, ["diff", str(baseline), str(path)])
    assert result.exit_code == 2, result.output


def test_every_corpus_file_agrees_with_its_own_stats() -> None:
    for name in PAIRS:
        for side in ("baseline", "current"):
            path = CORPUS / TRUTH["pairs"][name][side]
            run = load_results(path)
            verdicts = Counter(
                meta.verdicts["(test)"] for metas in run.samples.values() for meta in metas
            )
            stats = TRUTH["pairs"][name]["stats"][side]
            assert (verdicts[True], verdicts[False], verdicts[None]) == (
                stats["successes"],
                stats["failures"],
                stats["errors"],
            ), path.name


# --- metamorphic -----------------------------------------------------------------------------


def _reverse_rows(document: Document) -> Document:
    document["results"]["results"].reverse()
    return document


def _reverse_assertions(document: Document) -> Document:
    """The test's assertions in the opposite order: promptfoo writes its component results in
    the order of ``testCase.assert``, so both turn."""
    for row in document["results"]["results"]:
        declared = row["testCase"].get("assert")
        if isinstance(declared, list):
            declared.reverse()
        components = (row.get("gradingResult") or {}).get("componentResults")
        if isinstance(components, list):
            components.reverse()
    return document


DEFAULT_VALUE = "output !== undefined"


def _prepend_default(document: Document) -> Document:
    """A ``defaultTest`` assertion prepended to every test, passing, sharing the metric of the
    test's first assertion that names one (else ``quality``)."""
    for row in document["results"]["results"]:
        declared = row["testCase"].setdefault("assert", [])
        metric = next((a["metric"] for a in declared if a.get("metric")), "quality")
        assertion = {"type": "javascript", "value": DEFAULT_VALUE, "metric": metric}
        declared.insert(0, assertion)
        grading = row.get("gradingResult")
        if isinstance(grading, dict) and isinstance(grading.get("componentResults"), list):
            passed = {"pass": True, "score": 1, "reason": "Assertion passed"}
            grading["componentResults"].insert(0, {**passed, "assertion": assertion})
    return document


def _prepend_identical(document: Document) -> Document:
    """Each test's first assertion written twice (identical content, the same verdict)."""
    for row in document["results"]["results"]:
        declared = row["testCase"].get("assert")
        if isinstance(declared, list) and declared:
            declared.insert(0, copy.deepcopy(declared[0]))
        components = (row.get("gradingResult") or {}).get("componentResults")
        if isinstance(components, list) and components:
            components.insert(0, copy.deepcopy(components[0]))
    return document


def _passing_copy(row: dict[str, Any], **fields: Any) -> dict[str, Any]:
    declared = row["testCase"].get("assert") or []
    return {
        "success": True,
        "failureReason": 0,
        "provider": row["provider"],
        "prompt": row["prompt"],
        "testCase": row["testCase"],
        "vars": row.get("vars"),
        "response": {"output": "extra"},
        "gradingResult": {
            "pass": True,
            "score": 1,
            "reason": "All assertions passed",
            "componentResults": [
                {"pass": True, "score": 1, "reason": "ok", "assertion": a} for a in declared
            ],
        },
        **fields,
    }


def _add_provider(document: Document) -> Document:
    """Another provider's column: the rows of the first provider again (repeats included),
    under another provider, passing."""
    extra = {"id": "extra:model", "label": "extra-provider"}
    rows = document["results"]["results"]
    first = rows[0]["provider"]
    rows.extend([_passing_copy(row, provider=extra) for row in rows if row["provider"] == first])
    return _restat(document)


def _add_prompt(document: Document) -> Document:
    """Another prompt's column: the rows of the first prompt again, under another, passing."""
    extra = {"raw": "another prompt", "label": "extra-prompt"}
    rows = document["results"]["results"]
    first = rows[0]["prompt"]["label"]
    rows.extend(
        [_passing_copy(row, prompt=extra) for row in rows if row["prompt"]["label"] == first]
    )
    return _restat(document)


Transform = Callable[[Document], Document]
BOTH = "both"
CURRENT = "current"
TRANSFORMS: dict[str, tuple[Transform, str]] = {
    "reorder rows": (_reverse_rows, BOTH),
    "reorder assertions": (_reverse_assertions, BOTH),
    "prepend a defaultTest assertion (current)": (_prepend_default, CURRENT),
    "prepend a defaultTest assertion (both)": (_prepend_default, BOTH),
    "prepend an identical assertion (current)": (_prepend_identical, CURRENT),
    "add a provider (current)": (_add_provider, CURRENT),
    "add a provider (both)": (_add_provider, BOTH),
    "add a prompt (current)": (_add_prompt, CURRENT),
    "add a prompt (both)": (_add_prompt, BOTH),
}


def _blocking(baseline: Path, current: Path, names: set[str]) -> tuple[bool, Counter[Any]]:
    """The gate's verdict and the blocking rows, with the suffixes that adding a provider or a
    prompt appends to case ids removed (`` · name``, `` · prompt label``). The rows of what a
    transformation added are left out: the added provider's or prompt's cells (in both files,
    a provider that the current run dropped drops those cells too), and the prepended default
    assertion (in both files, one more check that a removed or errored test loses)."""
    report = compute_diff(
        load_results(baseline), load_results(current), DiffOptions(), created_at="x"
    )
    rows: Counter[Any] = Counter()
    for row in report["changes"]:
        case = row["case_id"]
        if row["kind"] not in BLOCKING_KINDS or row["check"].endswith(DEFAULT_VALUE):
            continue
        if " · extra-provider" in case or " · prompt extra-prompt" in case:
            continue
        for name in sorted(names, key=len, reverse=True):
            case = case.replace(f" · prompt {name}", "").replace(f" · {name}", "")
        rows[(row["kind"], case, row["check"])] += 1
    return report["gate_passed"], rows


def _matrix_names(*documents: Document) -> set[str]:
    names = {"extra-provider", "extra-prompt"}
    for document in documents:
        for row in document["results"]["results"]:
            names.add(provider_name(row["provider"]))
            names.add(row["prompt"]["label"])
    return names - {""}


@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@pytest.mark.parametrize("pair", PAIRS)
def test_transformations_keep_the_verdict_and_the_blocking_rows(
    tmp_path: Path, pair: str, transform: str
) -> None:
    files = TRUTH["pairs"][pair]
    documents = {side: _load(files[side]) for side in ("baseline", "current")}
    names = _matrix_names(*documents.values())
    gate, rows = _blocking(CORPUS / files["baseline"], CORPUS / files["current"], names)
    assert gate is False and rows, "every corpus pair blocks"
    change, sides = TRANSFORMS[transform]
    paths = {}
    for side, document in documents.items():
        if sides == BOTH or side == CURRENT:
            document = change(copy.deepcopy(document))
        paths[side] = _save(document, tmp_path / f"{side}.json")
    assert _blocking(paths["baseline"], paths["current"], names) == (gate, rows)
