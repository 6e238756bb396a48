"""`evalarc hillclimb-review` through the CLI: exit codes, terminal lines, the report folder, and
`evalarc verify` on it (untampered, moved, tampered)."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import Result

from evalarc.pages.hillclimb import build_hillclimb_page
from evalarc.review.hillclimb_model import HillclimbReport

if TYPE_CHECKING:
    from conftest import Cli

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "recordings" / "examples" / "hillclimb-review"
RESULTS = sorted((EXAMPLE / "results").glob("0*.json"))
SPLIT = EXAMPLE / "split.json"
HARNESS = ROOT / "recordings" / "examples" / "results-diff" / "inspect" / "harness"


def review(cli: Cli, *extra: str | Path) -> Result:
    return cli("hillclimb-review", *RESULTS, "--held-out", SPLIT, *extra)


def verify_json(cli: Cli, path: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    result = cli("verify", path, "--json", *extra)
    return result.exit_code, json.loads(result.stdout)


@pytest.fixture()
def climb(cli: Cli, tmp_path: Path) -> Path:
    """The cost-objective review of the six example results with the Inspect harness."""
    out = tmp_path / "out" / "climb"
    out.parent.mkdir()
    result = review(
        cli, "--objective", "cost", "--min-effect", "0.05", "--harness", HARNESS, "--output", out
    )
    assert result.exit_code == 0, result.output
    return out


def edit_json(path: Path, change: Any) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    change(document)
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")


def test_terminal_lines_and_exit_codes(cli: Cli) -> None:
    result = review(cli, "--objective", "cost", "--min-effect", "0.05")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "about 27.1%" in lines[0] and "about 31.2%" in lines[1]
    assert lines[2:7] == [
        "  1. 01-opus-5-medium.json: keep (tuning +20.8 pp, held out +18.8 pp, cost 0.891x)",
        "  2. 02-opus-5-medium-examples.json: rollback_overfit (tuning +14.6 pp, held out "
        "+0.0 pp, cost 1.049x)",
        "  3. 03-sonnet-5-high.json: keep (tuning +0.0 pp, held out +0.0 pp, cost 0.463x)",
        "  4. 04-haiku-5-low.json: rollback_regression (tuning -10.4 pp, held out -12.5 pp, "
        "cost 0.211x)",
        "  5. 05-sonnet-5-low.json: keep (tuning +0.0 pp, held out +0.0 pp, cost 0.526x)",
    ]
    assert lines[7] == (
        "Final kept: 05-sonnet-5-low.json | held out 71.9% -> 90.6% (within noise) | "
        "cost ratio 0.217"
    )
    assert lines[8].startswith("Recommendation: merge_cost — ")

    quality = review(cli, "--objective", "quality")
    assert quality.exit_code == 1, quality.output
    assert "  3. 03-sonnet-5-high.json: rollback_no_gain" in quality.stdout
    assert "— stalled" in quality.stdout.splitlines()[2]
    assert "Stall after step 3 (kept 01-opus-5-medium.json)" in quality.stdout
    assert "Recommendation: do_not_merge_within_noise" in quality.stdout


def test_json_and_markdown_outputs(cli: Cli, tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier\n", encoding="utf-8")
    result = review(cli, "--objective", "cost", "--json", "--markdown", summary)
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert report["schema_version"] == "evalarc.hillclimb-review.v1"
    assert [step["decision"] for step in report["steps"]][1] == "rollback_overfit"
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("# earlier\n### EvalArc hillclimb review: `merge_cost`\n")
    assert "| 2. `02-opus-5-medium-examples.json` | `01-opus-5-medium.json` | +14.6 pp | " in text


def test_folder_layout_params_and_verification(cli: Cli, climb: Path) -> None:
    names = sorted(p.relative_to(climb).as_posix() for p in climb.rglob("*") if p.is_file())
    assert names == sorted(
        [
            "harness/0000",
            "hillclimb.json",
            "index.html",
            *(f"inputs/{index:02d}-{path.name}" for index, path in enumerate(RESULTS)),
            "params.json",
            "split.json",
            "summary.md",
            "tuning-failures.json",
        ]
    )
    for index, path in enumerate(RESULTS):
        assert (climb / f"inputs/{index:02d}-{path.name}").read_bytes() == path.read_bytes()
    params = json.loads((climb / "params.json").read_text(encoding="utf-8"))
    assert params["schema_version"] == "evalarc.report-params.v1"
    assert params["kind"] == "hillclimb-review"
    assert params["objective"] == "cost"
    assert params["min_effect"] == 0.05
    assert params["min_steps"] == 1
    assert params["labels"] == [path.name for path in RESULTS]
    assert params["split"] == "split.json"
    assert params["harness"][0]["label"].endswith("harness/system-prompt.md")

    code, result = verify_json(cli, climb)
    assert code == 0, result
    assert result["verified"] is True
    assert result["kind"] == "hillclimb-review"
    assert result["passed"] is True
    assert result["recommendation"] == "merge_cost"
    assert result["decisions"] == [
        "keep",
        "rollback_overfit",
        "keep",
        "rollback_regression",
        "keep",
    ]
    assert "params.json" in result["files"]
    assert cli("verify", climb, "--require-accepted").exit_code == 0
    assert cli("verify", climb / "hillclimb.json").exit_code == 0


def test_rejected_review_verifies_but_is_not_accepted(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "quality"
    assert review(cli, "--output", out).exit_code == 1
    code, result = verify_json(cli, out)
    assert code == 0
    assert result["passed"] is False
    assert result["recommendation"] == "do_not_merge_within_noise"
    assert cli("verify", out, "--require-accepted").exit_code == 1


def test_tuning_failures_file_excludes_held_out_cases(climb: Path) -> None:
    document = json.loads((climb / "tuning-failures.json").read_text(encoding="utf-8"))
    assert document["schema_version"] == "evalarc.tuning-failures.v1"
    assert document["kept"] == "05-sonnet-5-low.json"
    assert document["held_out_excluded"] is True
    assert [row["case_id"] for row in document["failures"]] == [
        "route-01",
        "route-02",
        "route-03",
        "route-04",
    ]
    assert "holdout" not in (climb / "tuning-failures.json").read_text(encoding="utf-8")


def test_moved_folder_still_verifies(cli: Cli, climb: Path, tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere" / "renamed"
    moved.parent.mkdir()
    shutil.move(climb, moved)
    assert cli("verify", moved).exit_code == 0


def test_edited_step_decision_is_caught(cli: Cli, climb: Path) -> None:
    def flip(report: dict[str, Any]) -> None:
        assert report["steps"][1]["decision"] == "rollback_overfit"
        report["steps"][1]["decision"] = "keep"

    edit_json(climb / "hillclimb.json", flip)
    code, result = verify_json(cli, climb)
    assert code == 2
    assert result["verified"] is False
    assert "differs from the recomputed" in result["error"]


def test_edited_input_copy_is_caught(cli: Cli, climb: Path) -> None:
    copy = climb / f"inputs/01-{RESULTS[1].name}"
    copy.write_text(copy.read_text(encoding="utf-8").replace('"C"', '"I"', 1), encoding="utf-8")
    code, result = verify_json(cli, climb)
    assert code == 2
    assert "differs from the input the report recorded" in result["error"]


def test_edited_harness_copy_is_caught(cli: Cli, climb: Path) -> None:
    (climb / "harness/0000").write_text("clean prompt", encoding="utf-8")
    code, result = verify_json(cli, climb)
    assert code == 2
    assert "harness file that was scanned" in result["error"]


@pytest.mark.parametrize(
    ("key", "value"),
    [("objective", "quality"), ("max_cost_ratio", 0.2), ("stall_after", 1), ("min_effect", 0.3)],
)
def test_changed_option_is_caught(cli: Cli, climb: Path, key: str, value: object) -> None:
    edit_json(climb / "params.json", lambda params: params.__setitem__(key, value))
    code, result = verify_json(cli, climb)
    assert code == 2, result
    assert "differs from the recomputed" in result["error"]


def test_changed_split_is_caught(cli: Cli, climb: Path) -> None:
    edit_json(climb / "split.json", lambda split: split.__setitem__("held_out", ["holdout-0*"]))
    code, result = verify_json(cli, climb)
    assert code == 2
    assert "differs from the recomputed" in result["error"]


def test_malformed_params_are_refused(cli: Cli, climb: Path) -> None:
    edit_json(climb / "params.json", lambda params: params["inputs"].pop())
    code, result = verify_json(cli, climb)
    assert code == 2
    assert "list different inputs" in result["error"]


def test_the_same_file_twice_is_refused(cli: Cli, tmp_path: Path) -> None:
    result = cli("hillclimb-review", RESULTS[0], RESULTS[1], RESULTS[1], "--held-out", SPLIT)
    assert result.exit_code == 2
    assert "each result must appear once" in result.stderr


def test_existing_output_is_refused_and_untouched(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "exists"
    out.mkdir()
    (out / "keep.txt").write_text("mine", encoding="utf-8")
    result = review(cli, "--output", out)
    assert result.exit_code == 2
    assert "already exists" in result.stderr
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_failed_review_leaves_nothing_behind(cli: Cli, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"eval": {', encoding="utf-8")
    out = tmp_path / "never"
    result = cli("hillclimb-review", RESULTS[0], broken, "--held-out", SPLIT, "--output", out)
    assert result.exit_code == 2
    assert result.stderr.startswith("evalarc: ") and "broken.json" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.json"]


def test_invalid_options_exit_2(cli: Cli) -> None:
    assert review(cli, "--stall-after", "0").exit_code == 2
    assert review(cli, "--min-effect", "1.5").exit_code == 2
    missing_split = cli("hillclimb-review", *RESULTS)
    assert missing_split.exit_code == 2


class _PageScan(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.sources: list[str] = []
        self.ids: set[str] = set()
        self.csp = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(str(values["id"]))
        if tag == "a" and values.get("href"):
            self.links.append(str(values["href"]))
        if values.get("src"):
            self.sources.append(str(values["src"]))
        if tag == "meta" and values.get("http-equiv") == "Content-Security-Policy":
            self.csp = True


def test_page_is_self_contained_and_links_resolve(climb: Path) -> None:
    scan = _PageScan()
    scan.feed((climb / "index.html").read_text(encoding="utf-8"))
    assert scan.csp and not scan.sources
    for link in scan.links:
        assert not re.match(r"^[a-z]+:", link), link
        if link.startswith("#"):
            assert link[1:] in scan.ids, link
        else:
            assert (climb / link).is_file(), link
    assert "tuning-failures.json" in scan.links


def test_page_model(climb: Path) -> None:
    report = json.loads((climb / "hillclimb.json").read_text(encoding="utf-8"))
    page = build_hillclimb_page(HillclimbReport.from_json(report, "hillclimb.json"))
    assert page.passed is True
    assert page.verdict_title == "Merge recommended"
    assert [(card.value, card.label) for card in page.cards] == [
        ("71.9%", "baseline held-out pass rate"),
        ("90.6%", "final kept held-out pass rate"),
        ("+18.8 pp", "held-out change (within noise)"),
        ("0.217", "cost_usd ratio"),
    ]
    assert [(row.decision, row.tone) for row in page.steps][:2] == [
        ("keep", "ok"),
        ("rollback overfit", "bad"),
    ]
    assert page.final_rows[0].baseline == "23/32 (71.9%) · 95% 0.546–0.844"
    assert page.leakage_summary == "0 hit(s) in 1 scanned file(s), 0 from held-out cases."


def test_hostile_labels_are_escaped(cli: Cli, tmp_path: Path) -> None:
    hostile = tmp_path / "x`|<img src=x onerror=alert(1)>.json"
    shutil.copyfile(RESULTS[1], hostile)
    out = tmp_path / "out"
    result = cli("hillclimb-review", RESULTS[0], hostile, "--held-out", SPLIT, "--output", out)
    assert result.exit_code == 1, result.output
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "`x'\\|<img src=x onerror=alert(1)>.json`" in summary
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "<img src=x" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert cli("verify", out).exit_code == 0
