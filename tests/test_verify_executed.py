"""``evalarc verify`` on evaluation and audit folders: recomputed by replaying their recordings.

The folders are made here by real runs (the local backend, real candidate processes); each
tamper a receiver must be protected against is applied to a copy and must exit 2.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from evalarc.packs import materialize_workspace
from evalarc.reports.audit import AuditOptions, audit_summary, run_audit
from evalarc.reports.evaluation import EvaluateOptions, evaluation_summary, run_evaluate
from evalarc.reports.replayed import SCOPE
from evalarc.runtime.recording import load_index

if TYPE_CHECKING:
    from conftest import Cli

TASK = "support-routing"


def verify_json(cli: Cli, path: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    result = cli("verify", path, "--json", *extra)
    return result.exit_code, json.loads(result.stdout)


def _evaluation(root: Path, fault: str | None) -> Path:
    workspace = root / f"ws-{fault}"
    materialize_workspace(TASK, "python", reference=True, fault=fault, dest=workspace)
    options = EvaluateOptions(task=TASK, backend="local", trust_local=True, seeds=(17, 41))
    output = root / f"evaluation-{fault}"
    run_evaluate(workspace, output, options)
    return output


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Live local runs: the reference and one faulty variant evaluated, and the pack audited
    (full suite and without one case)."""
    root = tmp_path_factory.mktemp("executed")
    made = {
        "reference": _evaluation(root, None),
        "fault": _evaluation(root, "close-unresolved"),
    }
    for name, without in (("audit", ()), ("reduced", ("retry-after-commit",))):
        options = AuditOptions(task=TASK, backend="local", trust_local=True, seeds=(17,),
                               without_cases=without, jobs=2)
        made[name] = run_audit(root / name, options).output
    return made


def _copy(folder: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(folder, tmp_path / folder.name))


def _edit_json(path: Path, edit: Any) -> None:
    value = json.loads(path.read_text(encoding="utf-8"))
    edit(value)
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")


def _failure(cli: Cli, path: Path) -> str:
    result = cli("verify", path)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    return result.stderr


# -- consistent folders ----------------------------------------------------------------------


def test_a_resolved_evaluation_verifies(cli: Cli, folders: dict[str, Path]) -> None:
    code, result = verify_json(cli, folders["reference"])
    assert code == 0
    assert (result["kind"], result["verified"], result["records_valid"],
            result["fully_resolved"], result["passed"], result["score"]) == (
        "evaluation", True, True, True, True, 1.0)
    files = result["files"]
    assert {"evaluation.json", "params.json", "recordings/index.json", "candidate/main.py",
            "candidate/TASK.md"} <= set(files)
    recordings = [
        name for name in files if name.startswith("recordings/") and name.endswith(".jsonl")
    ]
    assert len(recordings) == 8  # 2 seeds x 4 episodes
    assert files["events.jsonl"]["role"] == "regenerated"
    assert cli("verify", folders["reference"], "--require-accepted").exit_code == 0


def test_an_unresolved_evaluation_is_consistent_but_not_accepted(
    cli: Cli, folders: dict[str, Path]
) -> None:
    code, result = verify_json(cli, folders["fault"])
    assert code == 0
    assert (result["records_valid"], result["fully_resolved"], result["passed"]) == (
        True, False, False)
    assert result["score"] == 0.9
    assert cli("verify", folders["fault"], "--require-accepted").exit_code == 1
    assert cli("verify", folders["fault"] / "evaluation.json").exit_code == 0


def test_an_audit_verifies_and_a_reduced_audit_is_not_accepted(
    cli: Cli, folders: dict[str, Path]
) -> None:
    code, result = verify_json(cli, folders["audit"])
    assert code == 0
    assert (result["kind"], result["passed"], result["fully_resolved"],
            result["mutation_score"], result["weakest_margin"]) == ("audit", True, True, 1.0, 1)
    assert cli("verify", folders["audit"], "--require-accepted").exit_code == 0
    assert "evaluations/new-key-on-retry.json" in result["files"]
    code, reduced = verify_json(cli, folders["reduced"])
    assert code == 0
    # Without retry-after-commit nothing catches new-key-on-retry: 6 of 7 detected.
    assert (reduced["passed"], reduced["fully_resolved"], reduced["mutation_score"],
            reduced["weakest_margin"]) == (False, True, 6 / 7, 0)
    assert cli("verify", folders["reduced"], "--require-accepted").exit_code == 1


def test_summaries_say_resolved_and_accepted_apart() -> None:
    assert evaluation_summary({"valid": True, "resolved": False, "score": 0.5}) == {
        "records_valid": True, "fully_resolved": False, "passed": False, "score": 0.5,
        "scope": SCOPE}
    invalid = audit_summary({"valid": False, "reference_passed": True, "passed": False,
                             "mutation_score": None, "detection": {"weakest_margin": 1}})
    assert invalid == {"records_valid": False, "fully_resolved": True, "passed": False,
                       "mutation_score": None, "weakest_margin": 1, "scope": SCOPE}
    assert "no candidate was run" in SCOPE


def test_a_moved_folder_still_verifies(cli: Cli, folders: dict[str, Path], tmp_path: Path) -> None:
    moved = shutil.move(str(_copy(folders["audit"], tmp_path)), tmp_path / "elsewhere")
    assert cli("verify", Path(moved)).exit_code == 0


# -- tampering -------------------------------------------------------------------------------


def test_an_edited_score_is_caught(cli: Cli, folders: dict[str, Path], tmp_path: Path) -> None:
    folder = _copy(folders["fault"], tmp_path)

    def raise_score(report: dict[str, Any]) -> None:
        report["score"] = 1.0

    _edit_json(folder / "evaluation.json", raise_score)
    assert "evaluation.json differs from the recomputed evaluation report" in _failure(cli, folder)


def test_an_edited_check_is_caught(cli: Cli, folders: dict[str, Path], tmp_path: Path) -> None:
    folder = _copy(folders["fault"], tmp_path)

    def pass_a_case(report: dict[str, Any]) -> None:
        case = next(c for c in report["cases"] if c["status"] == "failed")
        case["checks"] = dict.fromkeys(case["checks"], True)
        case["status"], case["passed"] = "passed", True

    _edit_json(folder / "evaluation.json", pass_a_case)
    assert "differs from the recomputed evaluation report" in _failure(cli, folder)


def test_an_edited_recording_is_caught(cli: Cli, folders: dict[str, Path], tmp_path: Path) -> None:
    folder = _copy(folders["reference"], tmp_path)
    victim = sorted((folder / "recordings").glob("*.jsonl"))[0]
    victim.write_bytes(victim.read_bytes().replace(b'"session":0', b'"session":1', 1))
    assert "content hashes to" in _failure(cli, folder)


def test_a_missing_recording_is_caught(cli: Cli, folders: dict[str, Path], tmp_path: Path) -> None:
    folder = _copy(folders["reference"], tmp_path)
    index = load_index(folder / "recordings" / "index.json")
    (key,) = [k for k in index.entries if (k.seed, k.case_id) == (41, "retry-after-commit")]
    (folder / "recordings" / f"{index.entries[key]}.jsonl").unlink()
    assert "1 recording(s) missing from recordings: 41/retry-after-commit" in _failure(cli, folder)


def test_a_recording_swapped_for_another_case_is_divergent(cli: Cli, folders: dict[str, Path],
                                                           tmp_path: Path) -> None:
    folder = _copy(folders["reference"], tmp_path)
    index_path = folder / "recordings" / "index.json"
    index = json.loads(index_path.read_text())
    first, second = index["entries"][0], index["entries"][1]
    first["recording"], second["recording"] = second["recording"], first["recording"]
    index_path.write_text(json.dumps(index, indent=2))
    assert "divergent recording" in _failure(cli, folder)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("timeout", 5.0, "response_timeout_seconds 10.0, the options ask for 5.0"),
    ("case_timeout", 30.0, "case_timeout_seconds 60.0, the options ask for 30.0"),
    ("seeds", [17], "differs from the recomputed evaluation report"),
    ("seeds", [17, 41, 97], "missing from recordings"),
    ("task", "robot-evidence-review", "no recording of candidate"),
    ("backend", "docker", "the recordings have backend \"local\""),
])
def test_a_changed_option_is_caught(cli: Cli, folders: dict[str, Path], tmp_path: Path, key: str,
                                    value: Any, message: str) -> None:
    folder = _copy(folders["reference"], tmp_path)

    def change(params: dict[str, Any]) -> None:
        params[key] = value

    _edit_json(folder / "params.json", change)
    assert message in _failure(cli, folder)


def test_an_edited_candidate_copy_is_caught(
    cli: Cli, folders: dict[str, Path], tmp_path: Path
) -> None:
    folder = _copy(folders["reference"], tmp_path)
    with (folder / "candidate" / "main.py").open("a", encoding="utf-8") as handle:
        handle.write("# edited\n")
    assert "candidate/ differs from the candidate the report recorded" in _failure(cli, folder)


def test_an_understated_duration_is_caught(
    cli: Cli, folders: dict[str, Path], tmp_path: Path
) -> None:
    folder = _copy(folders["reference"], tmp_path)

    def shorten(report: dict[str, Any]) -> None:
        report["cases"][0]["duration_seconds"] = 0.0

    _edit_json(folder / "evaluation.json", shorten)
    assert "claims 0.0 s but its recording lasts" in _failure(cli, folder)


def test_an_edited_mutation_score_is_caught(
    cli: Cli, folders: dict[str, Path], tmp_path: Path
) -> None:
    folder = _copy(folders["reduced"], tmp_path)

    def claim_all(audit: dict[str, Any]) -> None:
        audit["mutation_score"], audit["passed"] = 1.0, True

    _edit_json(folder / "audit.json", claim_all)
    assert "audit.json differs from the recomputed audit report" in _failure(cli, folder)


def test_an_edited_evaluation_copy_in_an_audit_is_caught(cli: Cli, folders: dict[str, Path],
                                                        tmp_path: Path) -> None:
    folder = _copy(folders["audit"], tmp_path)

    def lower(report: dict[str, Any]) -> None:
        report["score"] = 0.5

    _edit_json(folder / "evaluations" / "skip-retry.json", lower)
    assert "evaluations/skip-retry.json differs from the evaluation in audit.json" in \
        _failure(cli, folder)


def test_a_changed_audit_option_is_caught(
    cli: Cli, folders: dict[str, Path], tmp_path: Path
) -> None:
    folder = _copy(folders["reduced"], tmp_path)

    def full_suite(params: dict[str, Any]) -> None:
        params["without_cases"] = []

    _edit_json(folder / "params.json", full_suite)
    assert "missing from recordings" in _failure(cli, folder)  # the removed case never ran
    folder = _copy(folders["audit"], tmp_path / "b")

    def javascript(params: dict[str, Any]) -> None:
        params["language"] = "javascript"

    _edit_json(folder / "params.json", javascript)
    assert "the pack's reference control (javascript) is not the candidate this audit ran" in \
        _failure(cli, folder)


def test_a_missing_audit_recording_is_caught(
    cli: Cli, folders: dict[str, Path], tmp_path: Path
) -> None:
    folder = _copy(folders["audit"], tmp_path)
    index = load_index(folder / "recordings" / "index.json")
    gone = {name for key, name in index.entries.items() if key.case_id == "retry-after-commit"}
    for name in gone:
        (folder / "recordings" / f"{name}.jsonl").unlink()
    message = _failure(cli, folder)
    assert "recording(s) missing from recordings" in message
    assert "reference 17/retry-after-commit" in message
