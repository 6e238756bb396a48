"""SWE-bench, lm-evaluation-harness and OpenAI Evals results read into the one model.

Each corpus pair (tests/corpus/<harness>/, made by the harness's own code; truth.json read from
its own output) hides one lost pass under a flat headline: the diff must report exactly that
row and exit 1. A file whose reading disagrees with its own totals is refused (exit 2, both
figures named), and every file is detected from its own markers.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from evalarc.errors import InputError
from evalarc.formats import load_results
from evalarc.formats.load import detect_format
from evalarc.review.diff_model import BLOCKING_KINDS

if TYPE_CHECKING:
    from conftest import Cli


def truth(corpus: Path, harness: str) -> dict[str, Any]:
    pairs = json.loads((corpus / harness / "truth.json").read_text(encoding="utf-8"))["pairs"]
    (pair,) = pairs.values()
    return pair  # type: ignore[no-any-return]


def blocking_rows(output: Path) -> list[tuple[str, str, str]]:
    report = json.loads((output / "diff.json").read_text(encoding="utf-8"))
    rows = [row for row in report["changes"] if row["kind"] in BLOCKING_KINDS]
    return sorted((row["case_id"], row["check"], row["kind"]) for row in rows)


# -- SWE-bench ----------------------------------------------------------------------------------


def swebench_inputs(corpus: Path, form: str) -> tuple[Path, Path]:
    pair = truth(corpus, "swebench")
    root = corpus / "swebench"
    key = "run_folder" if form == "folder" else "summary"
    return root / pair["baseline"][key], root / pair["current"][key]


@pytest.mark.parametrize("form", ["folder", "summary"])
def test_swebench_lost_resolution_blocks_under_a_flat_resolved_count(
    cli: Cli, corpus: Path, tmp_path: Path, form: str
) -> None:
    pair = truth(corpus, "swebench")
    assert pair["baseline"]["resolved_instances"] == pair["current"]["resolved_instances"]
    baseline, current = swebench_inputs(corpus, form)
    result = cli("diff", baseline, current, "--output", tmp_path / "out")
    assert result.exit_code == 1, result.output
    (regressed,) = pair["regressed"]
    expected = [(regressed, "resolved", "regressed")]
    if form == "folder":
        # the folder also names the test that broke, from SWE-bench's own tests_status
        (failing,) = pair["current"]["failing_tests"][regressed]
        expected.append((regressed, failing, "regressed"))
    assert blocking_rows(tmp_path / "out") == sorted(expected)
    assert cli("verify", tmp_path / "out").exit_code == 0


def test_swebench_verdicts_match_swebenchs_own_reports(corpus: Path) -> None:
    pair = truth(corpus, "swebench")
    for side in ("baseline", "current"):
        for form in ("folder", "summary"):
            path = swebench_inputs(corpus, form)[0 if side == "baseline" else 1]
            run = load_results(path)
            assert run.format == "swebench"
            verdicts = {case: checks["resolved"][0].passed for case, checks in run.cases.items()}
            assert sorted(c for c, v in verdicts.items() if v is True) == pair[side]["resolved_ids"]
            assert (
                sorted(c for c, v in verdicts.items() if v is False) == pair[side]["unresolved_ids"]
            )
            # errors (and, in the summary, empty patches) are unassessed with their reason
            unassessed = sorted(c for c, v in verdicts.items() if v is None)
            expected = pair[side]["error_ids"] + (
                pair[side]["empty_patch_ids"] if form == "summary" else []
            )
            assert unassessed == sorted(expected)
            for case in unassessed:
                evidence = run.cases[case]["resolved"][0].evidence or ""
                assert "error" in evidence or "empty patch" in evidence


def copy_folder(corpus: Path, tmp_path: Path) -> Path:
    source = swebench_inputs(corpus, "folder")[0]
    target = tmp_path / "run" / source.name
    shutil.copytree(source, target)
    return target


def test_swebench_report_whose_resolved_contradicts_its_tests_is_refused(
    cli: Cli, corpus: Path, tmp_path: Path
) -> None:
    folder = copy_folder(corpus, tmp_path)
    pair = truth(corpus, "swebench")
    (unresolved,) = pair["baseline"]["unresolved_ids"]
    report = folder / unresolved / "report.json"
    document = json.loads(report.read_text(encoding="utf-8"))
    document[unresolved]["resolved"] = True
    report.write_text(json.dumps(document, indent=4), encoding="utf-8")
    current = swebench_inputs(corpus, "folder")[1]
    result = cli("diff", folder, current, "--output", tmp_path / "out")
    assert result.exit_code == 2
    assert str(folder) in result.output
    assert "resolved=True" in result.output and "resolved=False" in result.output
    assert "1 failing" in result.output


def test_swebench_summary_whose_counts_disagree_with_its_ids_is_refused(
    cli: Cli, corpus: Path, tmp_path: Path
) -> None:
    baseline, current = swebench_inputs(corpus, "summary")
    document = json.loads(baseline.read_text(encoding="utf-8"))
    document["resolved_instances"] = 3
    tampered = tmp_path / baseline.name
    tampered.write_text(json.dumps(document, indent=4), encoding="utf-8")
    result = cli("diff", tampered, current, "--output", tmp_path / "out")
    assert result.exit_code == 2
    assert f"{tampered}: resolved_instances is 3 but resolved_ids lists 2" in result.output


def test_swebench_infrastructure_failure_is_unassessed_not_a_failure(
    corpus: Path, tmp_path: Path
) -> None:
    folder = copy_folder(corpus, tmp_path)
    pair = truth(corpus, "swebench")
    (resolved, *_) = pair["baseline"]["resolved_ids"]
    report = folder / resolved / "report.json"
    document = json.loads(report.read_text(encoding="utf-8"))
    # what get_eval_report writes when the log shows an environment fault (swebench 5.0)
    document[resolved].update(
        patch_successfully_applied=False,
        resolved=False,
        infra_failure=True,
        infra_failure_reason="docker_daemon_error",
    )
    del document[resolved]["tests_status"]
    report.write_text(json.dumps(document), encoding="utf-8")
    attempt = load_results(folder).cases[resolved]["resolved"][0]
    assert attempt.passed is None
    assert "infrastructure" in (attempt.evidence or "") and "docker_daemon_error" in (
        attempt.evidence or ""
    )


def test_swebench_run_folder_with_a_symbolic_link_is_refused(corpus: Path, tmp_path: Path) -> None:
    folder = copy_folder(corpus, tmp_path)
    (folder / "linked").symlink_to(folder)
    with pytest.raises(InputError, match="symbolic link"):
        load_results(folder)


def test_a_folder_of_no_harness_is_still_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="is a directory, not a result file"):
        load_results(tmp_path / "empty")


# -- lm-evaluation-harness ---------------------------------------------------------------------


def lmeval_inputs(corpus: Path) -> tuple[Path, Path]:
    pair = truth(corpus, "lmeval")
    root = corpus / "lmeval"
    return root / pair["baseline"]["samples"], root / pair["current"]["samples"]


def test_lmeval_document_that_lost_acc_blocks_under_a_flat_headline(
    cli: Cli, corpus: Path, tmp_path: Path
) -> None:
    pair = truth(corpus, "lmeval")
    assert pair["baseline"]["acc"] == pair["current"]["acc"]
    baseline, current = lmeval_inputs(corpus)
    result = cli("diff", baseline, current, "--output", tmp_path / "out")
    assert result.exit_code == 1, result.output
    (regressed,) = pair["regressed_docs"]
    ((case, check, kind),) = blocking_rows(tmp_path / "out")
    assert (case.split(" [")[0], check, kind) == (f"doc {regressed}", "acc", "regressed")
    assert cli("verify", tmp_path / "out").exit_code == 0
    for side, path in zip(("baseline", "current"), (baseline, current), strict=True):
        run = load_results(path)
        assert run.format == "lmeval"
        assert run.headline is not None and run.headline.value == pair[side]["acc"]
        per_doc = {
            c.split(" [")[0].removeprefix("doc "): a["acc"][0].value for c, a in run.cases.items()
        }
        assert per_doc == pair[side]["per_doc_acc"]


def test_lmeval_samples_whose_mean_disagrees_with_results_beside_are_refused(
    cli: Cli, corpus: Path, tmp_path: Path
) -> None:
    baseline, current = lmeval_inputs(corpus)
    folder = tmp_path / "side"
    folder.mkdir()
    for item in baseline.parent.iterdir():
        shutil.copyfile(item, folder / item.name)
    tampered = folder / baseline.name
    lines = tampered.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["acc"] = 1.0 - first["acc"]
    lines[0] = json.dumps(first)
    tampered.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = cli("diff", tampered, current, "--output", tmp_path / "out")
    assert result.exit_code == 2
    assert str(tampered) in result.output
    assert "reports acc,none = 0.5" in result.output
    assert "is 0.6666666666666666" in result.output or "is 0.3333333333333333" in result.output


def test_lmeval_results_file_alone_points_at_the_samples_file(
    cli: Cli, corpus: Path, tmp_path: Path
) -> None:
    (results,) = (corpus / "lmeval/baseline").glob("results_*.json")
    result = cli("diff", results, results, "--output", tmp_path / "out")
    assert result.exit_code == 2
    assert "lm-evaluation-harness results file" in result.output
    assert "samples_<task>_<timestamp>.jsonl" in result.output


def test_lmeval_doc_hash_is_part_of_the_case_and_two_in_one_file_are_refused(
    cli: Cli, tmp_path: Path
) -> None:
    line = {"doc_id": 0, "doc": {}, "target": "0", "arguments": {}, "resps": [],
            "filtered_resps": [], "filter": "none", "metrics": ["acc"], "doc_hash": "a",
            "prompt_hash": "p", "target_hash": "t", "acc": 1.0}  # fmt: skip
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    assert list(load_results(path).cases) == ["doc 0 [a]"]
    # the same doc_id with other content in another run is another case: removed, so it blocks
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps(dict(line, doc_hash="b")) + "\n", encoding="utf-8")
    result = cli("diff", path, other, "--output", tmp_path / "out")
    assert result.exit_code == 1
    assert ("doc 0 [a]", "acc", "removed") in blocking_rows(tmp_path / "out")
    again = dict(line, filter="strict", doc_hash="b")
    path.write_text(json.dumps(line) + "\n" + json.dumps(again) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="two doc_hash values"):
        load_results(path)


# -- OpenAI Evals ------------------------------------------------------------------------------


def oaieval_inputs(corpus: Path) -> tuple[Path, Path]:
    root = corpus / "openai_evals"
    return root / "capitals.baseline.jsonl", root / "capitals.current.jsonl"


def test_openai_evals_sample_that_lost_its_match_blocks(
    cli: Cli, corpus: Path, tmp_path: Path
) -> None:
    pair = truth(corpus, "openai_evals")
    assert pair["baseline"]["accuracy"] == pair["current"]["accuracy"]
    baseline, current = oaieval_inputs(corpus)
    result = cli("diff", baseline, current, "--output", tmp_path / "out")
    assert result.exit_code == 1, result.output
    assert blocking_rows(tmp_path / "out") == [
        (sample, "match", "regressed") for sample in pair["regressed"]
    ]
    assert cli("verify", tmp_path / "out").exit_code == 0
    for side, path in zip(("baseline", "current"), (baseline, current), strict=True):
        run = load_results(path)
        assert run.format == "openai_evals" and not run.incomplete
        verdicts = {case: checks["match"][0].passed for case, checks in run.cases.items()}
        assert verdicts == pair[side]["correct"]


def test_openai_evals_final_report_that_disagrees_with_the_matches_is_refused(
    cli: Cli, corpus: Path, tmp_path: Path
) -> None:
    baseline, current = oaieval_inputs(corpus)
    lines = baseline.read_text(encoding="utf-8").splitlines()
    for index, text in enumerate(lines):
        line = json.loads(text)
        if line.get("type") == "match" and line["data"]["correct"]:
            line["data"]["correct"] = False
            lines[index] = json.dumps(line)
            break
    tampered = tmp_path / baseline.name
    tampered.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = cli("diff", tampered, current, "--output", tmp_path / "out")
    assert result.exit_code == 2
    assert (
        f"{tampered}: final_report accuracy 0.75 disagrees with its 4 match events, "
        "whose mean is 0.5" in result.output
    )


def test_openai_evals_model_graded_events_are_refused_not_guessed(
    tmp_path: Path, corpus: Path
) -> None:
    baseline, _ = oaieval_inputs(corpus)
    lines = baseline.read_text(encoding="utf-8").splitlines()
    event = json.loads(next(t for t in lines if '"type": "match"' in t))
    event.update(type="metrics", data={"score": 1.0, "choice": "Y"}, event_id=99)
    tampered = tmp_path / "graded.jsonl"
    tampered.write_text("\n".join([*lines, json.dumps(event)]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="'metrics' event"):
        load_results(tampered)


def test_openai_evals_log_without_final_report_is_an_unfinished_run(
    tmp_path: Path, corpus: Path
) -> None:
    baseline, _ = oaieval_inputs(corpus)
    lines = [
        t for t in baseline.read_text(encoding="utf-8").splitlines() if "final_report" not in t
    ]
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert load_results(cut).incomplete


# -- detection -----------------------------------------------------------------------------------


def test_every_harness_file_is_detected_from_its_own_markers(corpus: Path, tmp_path: Path) -> None:
    files = {
        "swebench": [
            *swebench_inputs(corpus, "summary"),
            *(corpus / "swebench").rglob("report.json"),
        ],
        "lmeval": list(lmeval_inputs(corpus)),
        "openai_evals": list(oaieval_inputs(corpus)),
    }
    assert len(files["swebench"]) == 8
    for expected, paths in files.items():
        for path in paths:
            # a neutral name: detection never reads the file name
            renamed = tmp_path / "renamed.data"
            shutil.copyfile(path, renamed)
            assert detect_format(renamed, renamed.read_bytes()[:64]) == expected, path


# -- case evidence -------------------------------------------------------------------------------


def test_case_views_show_each_harness_evidence(cli: Cli, corpus: Path, tmp_path: Path) -> None:
    """The case view of the regressed case names what changed, in the harness's own terms."""
    from evalarc.evidence import read_case_evidence

    swebench = truth(corpus, "swebench")
    (instance,) = swebench["regressed"]
    folder = swebench_inputs(corpus, "folder")[1]
    cli("diff", swebench_inputs(corpus, "folder")[0], folder, "--output", tmp_path / "swe")
    side = read_case_evidence(tmp_path / "swe/current.json", "swebench")[instance]
    texts = {(s.title, i.label): i.text for s in side.sections for i in s.items}
    (failing,) = swebench["current"]["failing_tests"][instance]
    assert texts[("PASS_TO_PASS", "failing")] == failing.removeprefix("PASS_TO_PASS: ")
    assert texts[("SWE-bench report", "resolved")] == "false"
    (error,) = swebench["current"]["error_ids"]
    error_side = read_case_evidence(tmp_path / "swe/current.json", "swebench")[error]
    assert "BuildImageError" in error_side.sections[0].items[0].text

    lmeval = read_case_evidence(lmeval_inputs(corpus)[1], "lmeval")
    (doc,) = truth(corpus, "lmeval")["regressed_docs"]
    (case,) = [c for c in lmeval if c.startswith(f"doc {doc} [")]
    labels = {i.label: i.text for i in lmeval[case].sections[0].items}
    assert labels["acc"] == "0.0" and "Question:" in labels["arguments"]

    oai = read_case_evidence(oaieval_inputs(corpus)[1], "openai_evals")
    (sample,) = truth(corpus, "openai_evals")["regressed"]
    match = next(s for s in oai[sample].sections if s.title.endswith("· match"))
    assert {i.label: i.text for i in match.items}["correct"] == "false"


# -- hostile shapes ------------------------------------------------------------------------------

_JUNK: list[object] = [None, 1, -1.5, "x", "", [], {}, True, [1, "a"], {"a": None}]


def _paths(value: object, prefix: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


def _replaced(value: Any, path: tuple[object, ...], junk: object) -> Any:
    if not path:
        return junk
    head, *rest = path
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[head] = _replaced(value[head], tuple(rest), junk)  # type: ignore[index]
    return copy


@pytest.mark.parametrize("harness", ["swebench", "lmeval", "openai_evals"])
def test_any_value_replaced_is_read_or_refused_in_one_line(
    corpus: Path, tmp_path: Path, harness: str
) -> None:
    """Every value of a real file replaced by junk of every JSON type: each result is a run or
    an InputError, never another exception (seeded, so a failure is reproducible)."""
    import random

    rng = random.Random(26)
    if harness == "swebench":
        sources = [swebench_inputs(corpus, "summary")[0]]
        sources += sorted((corpus / "swebench/baseline").rglob("report.json"))[:1]
    elif harness == "lmeval":
        sources = [lmeval_inputs(corpus)[0]]
    else:
        sources = [oaieval_inputs(corpus)[0]]
    tried = 0
    for source in sources:
        lines = source.read_text(encoding="utf-8").splitlines()
        documents = [json.loads("\n".join(lines))] if source.suffix == ".json" else None
        parsed = documents or [json.loads(line) for line in lines]
        for number, document in enumerate(parsed):
            paths = _paths(document)
            for path in rng.sample(paths, min(len(paths), 40)):
                junk = rng.choice(_JUNK)
                changed = list(parsed)
                changed[number] = _replaced(document, path, junk)
                target = tmp_path / f"mutated{source.suffix}"
                text = "\n".join(json.dumps(d) for d in changed)
                target.write_text(text + "\n", encoding="utf-8")
                for fmt in ("auto", harness):
                    try:
                        load_results(target, fmt)
                    except InputError as error:
                        assert "\n" not in error.message
                    tried += 1
    assert tried >= 80


def test_lmeval_format_forced_on_a_results_file_points_at_the_samples(corpus: Path) -> None:
    (results,) = (corpus / "lmeval/baseline").glob("results_*.json")
    with pytest.raises(InputError, match=r"samples_<task>_<timestamp>\.jsonl"):
        load_results(results, "lmeval")


def test_swebench_folder_of_two_models_is_refused_not_pooled(corpus: Path, tmp_path: Path) -> None:
    folder = copy_folder(corpus, tmp_path)
    other = folder.parent / "another-model"
    other.mkdir()
    moved = sorted(p for p in folder.iterdir())[-1]
    moved.rename(other / moved.name)
    with pytest.raises(InputError, match="several model folders"):
        load_results(folder.parent)
    assert len(load_results(folder).cases) == 3
