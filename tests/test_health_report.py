"""`evalarc eval-health`: the command's exit codes and outputs, the report folder it writes, and
`evalarc verify` recomputing that folder (untampered, tampered, moved).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import Cli

EXAMPLES = Path(__file__).resolve().parents[1] / "recordings" / "examples" / "results-diff"
INSPECT = EXAMPLES / "inspect"


def verify_json(cli: Cli, path: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    result = cli("verify", path, "--json", *extra)
    return result.exit_code, json.loads(result.stdout)


def read_json(path: Path) -> dict[str, Any]:
    value = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(value, dict)
    return value


def write_json(path: Path, value: object) -> None:
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")


@pytest.fixture()
def health_folder(cli: Cli, tmp_path: Path) -> Path:
    """The spec's tamper-test folder: the Inspect example with cases, min effect, ordered, plan."""
    out = tmp_path / "out" / "health"
    out.parent.mkdir()
    result = cli(
        "eval-health",
        INSPECT / "baseline.json",
        INSPECT / "current.json",
        "--cases",
        INSPECT / "cases.json",
        "--min-effect",
        "0.05",
        "--ordered",
        "--plan-attempts",
        "4",
        "--output",
        out,
    )
    assert result.exit_code == 0, result.output
    return out


# -- the folder -------------------------------------------------------------------------------


def test_folder_layout_params_and_copies(health_folder: Path) -> None:
    names = sorted(p.relative_to(health_folder).as_posix() for p in health_folder.rglob("*"))
    assert names == [
        "cases.json",
        "cases.jsonl",
        "health.json",
        "index.html",
        "inputs",
        "inputs/01.json",
        "inputs/02.json",
        "params.json",
        "summary.md",
    ]
    params = read_json(health_folder / "params.json")
    assert params == {
        "schema_version": "evalarc.report-params.v1",
        "kind": "eval-health",
        "format": "inspect",
        "threshold": 1.0,
        "saturation": 0.95,
        "min_effect": 0.05,
        "ordered": True,
        "plan_attempts": 4,
        "plan_configs": None,
        "inputs": [{"file": "inputs/01.json"}, {"file": "inputs/02.json"}],
        "cases": "cases.json",
    }
    for copy, original in (
        ("inputs/01.json", INSPECT / "baseline.json"),
        ("inputs/02.json", INSPECT / "current.json"),
        ("cases.json", INSPECT / "cases.json"),
    ):
        assert (health_folder / copy).read_bytes() == original.read_bytes()
    report = read_json(health_folder / "health.json")
    assert report["schema_version"] == "evalarc.eval-health.v1"
    # The report keeps the original names, not the copy paths.
    assert [r["source"]["name"] for r in report["runs"]] == ["baseline.json", "current.json"]
    assert (
        report["runs"][0]["source"]["sha256"]
        == hashlib.sha256((INSPECT / "baseline.json").read_bytes()).hexdigest()
    )
    assert report["warnings"] == 2 and report["plan"]["case_attempts"] == 64
    summary = (health_folder / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("### EvalArc eval health: 2 warning(s) before tuning")
    page = (health_folder / "index.html").read_text(encoding="utf-8")
    assert "Fix 2 warning(s) before tuning" in page


def test_case_lines(health_folder: Path) -> None:
    lines = (health_folder / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == 2 * 16  # two files x 8 cases x 2 epochs
    queued = [
        r for r in records if r["file"] == "current.json" and r["case_id"] == "cancel-pending"
    ]
    assert [r["attempt"] for r in queued] == [0, 1]
    assert queued[1]["output"] == "cancel:1006:queued"
    assert queued[1]["verdicts"] == {"match": False, "includes": True}
    assert queued[1]["stop_reason"] == "stop" and queued[1]["truncated"] is False
    assert queued[1]["usage"]["total_tokens"] == 15


def test_junit_case_lines_and_eval_suffix(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "junit"
    result = cli(
        "eval-health",
        EXAMPLES / "junit/baseline.xml",
        EXAMPLES / "junit/current.xml",
        "--output",
        out,
    )
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (out / "inputs").iterdir()) == ["01.xml.txt", "02.xml.txt"]
    assert not (out / "cases.json").exists()
    records = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    assert len(records) == 16  # one line per case per file
    skipped = next(
        r
        for r in records
        if r["file"] == "current.xml"
        and r["case_id"] == "refund_checks::test_names_the_order[status-open]"
    )
    assert skipped["checks"] == {"passed": [None]}
    eval_out = tmp_path / "eval"
    assert cli("eval-health", INSPECT / "current.eval", "--output", eval_out).exit_code == 0
    assert (eval_out / "inputs/01.eval").read_bytes() == (INSPECT / "current.eval").read_bytes()
    assert cli("verify", eval_out).exit_code == 0


# -- verify -----------------------------------------------------------------------------------


def test_untampered_folder_verifies_and_is_not_accepted(cli: Cli, health_folder: Path) -> None:
    code, result = verify_json(cli, health_folder)
    assert code == 0
    assert result["verified"] is True
    assert result["kind"] == "eval-health"
    assert result["passed"] is False
    assert result["healthy"] is False and result["warnings"] == 2
    assert {"params.json", "health.json", "inputs/01.json", "inputs/02.json", "cases.json"} <= set(
        result["files"]
    )
    assert cli("verify", health_folder, "--require-accepted").exit_code == 1
    assert cli("verify", health_folder / "health.json").exit_code == 0


def test_healthy_folder_is_accepted(cli: Cli, corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "healthy"
    result = cli("eval-health", corpus / "inspect/capitals.current.json", "--output", out)
    assert result.exit_code == 0
    code, verified = verify_json(cli, out, "--require-accepted")
    assert code == 0 and verified["passed"] is True and verified["warnings"] == 0


def test_changed_saturation_is_caught(cli: Cli, health_folder: Path) -> None:
    params = read_json(health_folder / "params.json")
    params["saturation"] = 0.5
    write_json(health_folder / "params.json", params)
    code, result = verify_json(cli, health_folder)
    assert code == 2
    assert result["verified"] is False
    assert "health.json differs from the recomputed eval-health report" in result["error"]


@pytest.mark.parametrize(
    ("key", "value"),
    [("min_effect", 0.3), ("ordered", False), ("plan_attempts", None), ("threshold", 0.5)],
)
def test_other_changed_options_are_caught(
    cli: Cli, health_folder: Path, key: str, value: object
) -> None:
    params = read_json(health_folder / "params.json")
    params[key] = value
    write_json(health_folder / "params.json", params)
    assert verify_json(cli, health_folder)[0] == 2


def test_edited_input_copy_is_caught(cli: Cli, health_folder: Path) -> None:
    copy = health_folder / "inputs/01.json"
    copy.write_text(copy.read_text(encoding="utf-8").replace('"C"', '"I"', 1), encoding="utf-8")
    code, result = verify_json(cli, health_folder)
    assert code == 2
    assert "inputs/01.json differs from the input the report recorded" in result["error"]


def test_edited_manifest_copy_is_caught(cli: Cli, health_folder: Path) -> None:
    manifest = read_json(health_folder / "cases.json")
    manifest["cases"][3]["difficulty"] = "pending orders look cancellable"
    write_json(health_folder / "cases.json", manifest)
    code, result = verify_json(cli, health_folder)
    assert code == 2
    assert "differs from the recomputed" in result["error"]


def test_edited_report_is_caught(cli: Cli, health_folder: Path) -> None:
    report = read_json(health_folder / "health.json")
    report["warnings"] = 0
    report["healthy"] = True
    write_json(health_folder / "health.json", report)
    code, result = verify_json(cli, health_folder)
    assert code == 2
    assert "differs from the recomputed" in result["error"]


def test_input_list_must_match_the_report(cli: Cli, health_folder: Path) -> None:
    params = read_json(health_folder / "params.json")
    params["inputs"] = params["inputs"][:1]
    write_json(health_folder / "params.json", params)
    code, result = verify_json(cli, health_folder)
    assert code == 2 and "list different inputs" in result["error"]


def test_wrong_report_schema_for_the_kind(cli: Cli, health_folder: Path) -> None:
    report = read_json(health_folder / "health.json")
    report["schema_version"] = "evalarc.results-diff.v1"
    write_json(health_folder / "health.json", report)
    code, result = verify_json(cli, health_folder)
    assert code == 2
    assert result["error"] == f"{health_folder}/" + (
        "health.json is not an evalarc.eval-health.v1 document "
        "(its schema_version is 'evalarc.results-diff.v1')"
    )


def test_a_newer_report_schema_is_refused_naming_both_versions(
    cli: Cli, health_folder: Path
) -> None:
    report = read_json(health_folder / "health.json")
    report["schema_version"] = "evalarc.eval-health.v2"
    write_json(health_folder / "health.json", report)
    code, result = verify_json(cli, health_folder)
    assert code == 2
    assert result["error"] == f"{health_folder}/" + (
        "health.json is evalarc.eval-health.v2, newer than the evalarc.eval-health.v1 this "
        "EvalArc reads; read it with a newer EvalArc"
    )


@pytest.mark.parametrize("bad", ["../inputs/01.json", "/etc/passwd"])
def test_input_paths_leaving_the_folder_are_refused(
    cli: Cli, health_folder: Path, bad: str
) -> None:
    params = read_json(health_folder / "params.json")
    params["inputs"][0]["file"] = bad
    write_json(health_folder / "params.json", params)
    code, result = verify_json(cli, health_folder)
    assert code == 2 and "leaves the folder" in result["error"]


def test_moved_folder_still_verifies(cli: Cli, health_folder: Path, tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere" / "renamed-health"
    moved.parent.mkdir()
    shutil.move(health_folder, moved)
    code, result = verify_json(cli, moved)
    assert code == 0 and result["kind"] == "eval-health"


# -- the command ------------------------------------------------------------------------------


def test_recorded_example_terminal_output(cli: Cli) -> None:
    result = cli(
        "eval-health",
        INSPECT / "baseline.json",
        INSPECT / "current.json",
        "--ordered",
        "--min-effect",
        "0.05",
    )
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert (
        lines[0] == "Eval health: 1 warning(s) | Pass rate: baseline.json 62.5%, current.json 84.4%"
    )
    assert lines[1].startswith("  info: flaky_checks — 1 of 32 repeated checks")
    assert lines[2].startswith(
        "  warning: noise_exceeds_min_effect — 32 assessed attempts at 84.4%"
    )
    assert "25.2%" in lines[2] and "811" in lines[2]
    assert len(lines) == 3


def test_require_healthy_exit_codes(cli: Cli, corpus: Path) -> None:
    unhealthy = cli("eval-health", EXAMPLES / "junit/current.xml", "--require-healthy")
    assert unhealthy.exit_code == 1
    assert "warning: unassessed_attempts" in unhealthy.stdout
    assert "info: single_attempt" in unhealthy.stdout
    assert cli("eval-health", EXAMPLES / "junit/current.xml").exit_code == 0
    healthy = cli("eval-health", corpus / "inspect/capitals.current.json", "--require-healthy")
    assert healthy.exit_code == 0
    assert healthy.stdout.startswith("Eval health: 0 warning(s)")


def test_json_and_markdown_outputs(cli: Cli, tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n", encoding="utf-8")
    result = cli("eval-health", INSPECT / "current.json", "--json", "--markdown", summary)
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert report["schema_version"] == "evalarc.eval-health.v1"
    assert report["runs"][0]["pass_rate"] == 0.84375
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("# earlier step\n### EvalArc eval health: 1 warning(s) before tuning")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--saturation", "0"], "--saturation"),
        (["--saturation", "1.5"], "--saturation"),
        (["--min-effect", "1"], "--min-effect"),
        (["--min-effect", "0"], "--min-effect"),
        (["--ordered"], "--ordered needs at least two"),
        (["--plan-attempts", "0"], "--plan-attempts"),
        (["--plan-configs", "0"], "--plan-configs"),
    ],
)
def test_invalid_options_exit_2(cli: Cli, tmp_path: Path, extra: list[str], message: str) -> None:
    out = tmp_path / "never"
    result = cli("eval-health", INSPECT / "current.json", *extra, "--output", out)
    assert result.exit_code == 2
    assert result.stderr.startswith("evalarc: ") and message in result.stderr
    assert not out.exists()


def test_too_many_inputs_exit_2(cli: Cli) -> None:
    result = cli("eval-health", *([INSPECT / "current.json"] * 21))
    assert result.exit_code == 2 and "1 to 20" in result.stderr


def test_incomparable_inputs_exit_2_and_write_nothing(
    cli: Cli, corpus: Path, tmp_path: Path
) -> None:
    out = tmp_path / "never"
    mixed = cli(
        "eval-health", INSPECT / "current.json", EXAMPLES / "junit/current.xml", "--output", out
    )
    assert mixed.exit_code == 2 and "different formats" in mixed.stderr
    tasks = cli(
        "eval-health",
        corpus / "inspect/capitals.current.json",
        corpus / "inspect/keywords.current.json",
        "--output",
        out,
    )
    assert tasks.exit_code == 2 and "not comparable" in tasks.stderr
    assert list(tmp_path.iterdir()) == []


def test_bad_manifest_exit_2_naming_the_file(cli: Cli, tmp_path: Path) -> None:
    manifest = tmp_path / "typo-cases.json"
    write_json(
        manifest,
        {
            "schema_version": "evalarc.case-manifest.v1",
            "cases": [{"match": "refund-smal", "source": "support_ticket"}],
        },
    )
    out = tmp_path / "never"
    result = cli("eval-health", INSPECT / "current.json", "--cases", manifest, "--output", out)
    assert result.exit_code == 2
    assert "typo-cases.json: rule 1 ('refund-smal') matches no recorded case" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["typo-cases.json"]


def test_existing_output_is_refused_and_untouched(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "exists"
    out.mkdir()
    (out / "keep.txt").write_text("mine", encoding="utf-8")
    result = cli("eval-health", INSPECT / "current.json", "--output", out)
    assert result.exit_code == 2
    assert "already exists" in result.stderr
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_unreadable_result_exit_2_naming_the_file(cli: Cli, tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text('{"eval": {', encoding="utf-8")
    result = cli("eval-health", bad)
    assert result.exit_code == 2
    assert "broken.json" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
