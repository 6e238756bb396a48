"""Report folders written by `evalarc diff --output` and recomputed by `evalarc verify`.

The tamper cases are the ones a receiver of a folder must be protected against: an edited report,
an edited input copy, an edited harness copy, a changed option, unsafe paths; moving the folder
must keep it valid.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Cli


@pytest.fixture()
def diff_folder(cli: Cli, corpus: Path, tmp_path: Path) -> Path:
    """A diff folder over the capitals pair with a split, a harness and a duration cost gate."""
    split = tmp_path / "split.json"
    split.write_text(
        json.dumps({"schema_version": "evalarc.case-split.v1", "held_out": ["cap-1*"]}),
        encoding="utf-8",
    )
    harness = tmp_path / "harness"
    harness.mkdir()
    (harness / "prompt.md").write_text(
        "Answer briefly.\nWhat is the capital of France?\n", encoding="utf-8"
    )
    out = tmp_path / "out" / "diff"
    out.parent.mkdir()
    result = cli(
        "diff",
        corpus / "inspect/capitals.baseline.json",
        corpus / "inspect/capitals.current.eval",
        "--held-out",
        split,
        "--harness",
        harness,
        "--max-cost-ratio",
        "2",
        "--cost-metric",
        "duration",
        "--output",
        out,
    )
    assert result.exit_code == 1, result.output
    return out


def verify_json(cli: Cli, path: Path, *extra: str) -> tuple[int, dict[str, object]]:
    result = cli("verify", path, "--json", *extra)
    return result.exit_code, json.loads(result.stdout)


def test_folder_layout_and_untampered_verification(cli: Cli, diff_folder: Path) -> None:
    names = sorted(p.relative_to(diff_folder).as_posix() for p in diff_folder.rglob("*"))
    # The page's case views ride in content-addressed chunk files beside it, as on a site.
    chunks = [name for name in names if name.split("/")[0] == "case-views"]
    assert chunks[0] == "case-views" and len(chunks) >= 2
    assert all(re.fullmatch(r"case-views/[0-9a-f]{64}\.js", name) for name in chunks[1:])
    names = [name for name in names if name not in chunks]
    assert names == [
        "baseline.json",
        "current.eval",
        "diff.json",
        "harness",
        "harness/0000",
        "index.html",
        "params.json",
        "split.json",
        "summary.md",
    ]
    params = json.loads((diff_folder / "params.json").read_text(encoding="utf-8"))
    assert params["schema_version"] == "evalarc.report-params.v1"
    assert params["kind"] == "diff"
    assert params["harness"][0]["label"].endswith("harness/prompt.md")
    code, result = verify_json(cli, diff_folder)
    assert code == 0
    assert result["verified"] is True
    assert result["kind"] == "diff"
    assert result["passed"] is False
    assert "params.json" in result["files"]  # type: ignore[operator]
    assert cli("verify", diff_folder, "--require-accepted").exit_code == 1
    # A report file inside the folder names the folder too.
    assert cli("verify", diff_folder / "diff.json").exit_code == 0


def test_moved_folder_still_verifies(cli: Cli, diff_folder: Path, tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere" / "renamed"
    moved.parent.mkdir()
    shutil.move(diff_folder, moved)
    assert cli("verify", moved).exit_code == 0


def test_edited_report_is_caught(cli: Cli, diff_folder: Path) -> None:
    report_path = diff_folder / "diff.json"
    report = json.loads(report_path.read_text(encoding="utf-8"))
    report["changes"][0]["kind"] = "improved"
    report_path.write_text(json.dumps(report, indent=2), encoding="utf-8")
    code, result = verify_json(cli, diff_folder)
    assert code == 2
    assert result["verified"] is False
    assert "differs from the recomputed" in str(result["error"])


def test_edited_input_copy_is_caught(cli: Cli, diff_folder: Path) -> None:
    copy = diff_folder / "baseline.json"
    text = copy.read_text(encoding="utf-8")
    copy.write_text(text.replace('"C"', '"I"', 1), encoding="utf-8")
    code, result = verify_json(cli, diff_folder)
    assert code == 2
    assert "differs from the input the report recorded" in str(result["error"])


def test_edited_harness_copy_is_caught(cli: Cli, diff_folder: Path) -> None:
    (diff_folder / "harness/0000").write_text("clean prompt", encoding="utf-8")
    code, result = verify_json(cli, diff_folder)
    assert code == 2
    assert "harness file that was scanned" in str(result["error"])


@pytest.mark.parametrize(
    ("key", "value"),
    [("threshold", 0.5), ("leak_min_chars", 40), ("max_cost_ratio", 1.01)],
)
def test_changed_option_is_caught(cli: Cli, diff_folder: Path, key: str, value: object) -> None:
    params_path = diff_folder / "params.json"
    params = json.loads(params_path.read_text(encoding="utf-8"))
    params[key] = value
    params_path.write_text(json.dumps(params, indent=2), encoding="utf-8")
    code, result = verify_json(cli, diff_folder)
    assert code == 2, result


@pytest.mark.parametrize("bad", ["../baseline.json", "/etc/passwd", "a/../../x"])
def test_paths_leaving_the_folder_are_refused(cli: Cli, diff_folder: Path, bad: str) -> None:
    params_path = diff_folder / "params.json"
    params = json.loads(params_path.read_text(encoding="utf-8"))
    params["inputs"][0]["file"] = bad
    params_path.write_text(json.dumps(params), encoding="utf-8")
    code, result = verify_json(cli, diff_folder)
    assert code == 2
    assert "leaves the folder" in str(result["error"])


def test_symlinked_input_copy_is_refused(cli: Cli, diff_folder: Path, corpus: Path) -> None:
    copy = diff_folder / "baseline.json"
    copy.unlink()
    os.symlink(corpus / "inspect/capitals.baseline.json", copy)
    code, result = verify_json(cli, diff_folder)
    assert code == 2
    assert "symlink" in str(result["error"])


def test_folder_without_params_is_not_a_report(cli: Cli, tmp_path: Path) -> None:
    code, result = verify_json(cli, tmp_path)
    assert code == 2
    assert "params.json" in str(result["error"])


def test_existing_output_is_refused_and_untouched(cli: Cli, corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "exists"
    out.mkdir()
    (out / "keep.txt").write_text("mine", encoding="utf-8")
    result = cli(
        "diff",
        corpus / "junit/pytest/baseline.xml",
        corpus / "junit/pytest/current.xml",
        "--output",
        out,
    )
    assert result.exit_code == 2
    assert "already exists" in result.stderr
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_failed_diff_leaves_no_partial_folder(cli: Cli, corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "never"
    result = cli(
        "diff",
        corpus / "junit/pytest/baseline.xml",
        corpus / "inspect/capitals.current.json",
        "--output",
        out,
    )
    assert result.exit_code == 2
    assert "different formats" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_junit_pair_gate_and_markdown_append(cli: Cli, corpus: Path, tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n", encoding="utf-8")
    result = cli(
        "diff",
        corpus / "junit/pytest/baseline.xml",
        corpus / "junit/pytest/current.xml",
        "--markdown",
        summary,
    )
    assert result.exit_code == 1
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("# earlier step\n")
    assert "### EvalArc:" in text
    lines = result.stdout.splitlines()
    assert "  regressed: tests.test_calc::test_sub / passed: passed 1/1 -> 0/1" in lines


def test_same_file_twice_passes(cli: Cli, corpus: Path) -> None:
    path = corpus / "promptfoo/generated/qa.current.json"
    result = cli("diff", path, path)
    assert result.exit_code == 0, result.output


def test_unreadable_input_is_exit_2_naming_the_file(cli: Cli, tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text('{"results": {', encoding="utf-8")
    result = cli("diff", bad, bad)
    assert result.exit_code == 2
    assert result.stderr.startswith("evalarc: ")
    assert "broken.json" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_lone_surrogate_case_id_is_printed_written_and_verified(
    cli: Cli, corpus: Path, tmp_path: Path
) -> None:
    document = json.loads((corpus / "inspect/capitals.current.json").read_text(encoding="utf-8"))
    document["samples"][0]["id"] = "bad\ud800id"
    current = tmp_path / "current.json"
    current.write_text(json.dumps(document), encoding="utf-8")  # ASCII: "\ud800" escape
    out = tmp_path / "out"
    result = cli(
        "diff", corpus / "inspect/capitals.baseline.json", current, "--output", out, "--json"
    )
    assert result.exit_code == 1, result.output
    assert json.loads(result.stdout)["counts"]["added"] == 2
    assert cli("verify", out).exit_code == 0


def test_junit_copies_are_kept_as_text_and_an_xml_file_is_refused(
    cli: Cli, corpus: Path, tmp_path: Path
) -> None:
    # A static host serves .xml as an XML document, whose XHTML-namespace <script> runs: a
    # published JUnit copy must be served as text, and a folder holding an .xml is refused.
    out = tmp_path / "junit-diff"
    junit = corpus / "junit" / "pytest"
    result = cli("diff", junit / "baseline.xml", junit / "current.xml", "--output", out)
    assert result.exit_code in (0, 1), result.output
    names = sorted(p.name for p in out.iterdir() if p.is_file())
    assert "baseline.xml.txt" in names and "current.xml.txt" in names
    assert not any(name.endswith(".xml") for name in names)
    assert verify_json(cli, out)[0] == 0
    (out / "current.xml.txt").rename(out / "current.xml")
    params = json.loads((out / "params.json").read_text(encoding="utf-8"))
    params["inputs"][1]["file"] = "current.xml"
    (out / "params.json").write_text(json.dumps(params), encoding="utf-8")
    code, verdict = verify_json(cli, out)
    assert code == 2
    assert "current.xml is not a file type a report folder or site may hold" in str(
        verdict["error"]
    )


def test_a_candidate_with_an_active_document_is_refused_before_any_case_runs(
    cli: Cli, tmp_path: Path
) -> None:
    from evalarc.resources import bundled_dir

    candidate = tmp_path / "candidate"
    shutil.copytree(bundled_dir("packs") / "durable-kv" / "reference" / "python", candidate)
    (candidate / "notes.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    out = tmp_path / "evaluation"
    result = cli(
        "evaluate", candidate, "--backend", "local", "--trust-local", "--output", out,
        "--seeds", "1",
    )
    assert result.exit_code == 2
    assert "notes.svg is a document a browser would run script in" in result.output
    assert not out.exists()
