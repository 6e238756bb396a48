"""`evalarc trajectory` through the CLI: exit codes, terminal lines, the report folder, `evalarc
verify` on it (untampered, moved, tampered), and the page with its inline SVG curve."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import Result

from evalarc.pages.trajectory import build_chart, build_trajectory_page, step_vertices
from evalarc.review.trajectory_model import TrajectoryReport

if TYPE_CHECKING:
    from conftest import Cli

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "recordings" / "examples" / "trajectory" / "checkpoints.json"
FOLDER_FILES = ["checkpoints.json", "index.html", "params.json", "trajectory.json"]


def trajectory(cli: Cli, *extra: str | Path, checkpoints: Path = EXAMPLE) -> Result:
    return cli("trajectory", checkpoints, "--budget-seconds", "3600", *extra)


def verify_json(cli: Cli, path: Path) -> tuple[int, dict[str, Any]]:
    result = cli("verify", path, "--json")
    return result.exit_code, json.loads(result.stdout)


def edit_json(path: Path, change: Any) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    change(document)
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")


def example() -> list[dict[str, Any]]:
    value: list[dict[str, Any]] = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    return value


@pytest.fixture()
def folder(cli: Cli, tmp_path: Path) -> Path:
    out = tmp_path / "out" / "traj"
    out.parent.mkdir()
    result = trajectory(cli, "--output", out)
    assert result.exit_code == 0, result.output
    return out


def read_report(folder: Path) -> TrajectoryReport:
    value = json.loads((folder / "trajectory.json").read_text(encoding="utf-8"))
    return TrajectoryReport.from_json(value, "trajectory.json")


def leftovers(parent: Path) -> list[str]:
    return sorted(path.name for path in parent.iterdir())


# -- the command -------------------------------------------------------------------------------


def test_terminal_lines_and_exit_code(cli: Cli) -> None:
    result = trajectory(cli)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "Trajectory: 4 checkpoint(s) over a 3600 s budget (times caller-reported)",
        "Normalized score area: 0.6250 | Final score: 0.8500 | First resolved: 1800 s | "
        "Regressions: 1",
        "  regression at 2700 s: 1.0000 -> 0.8500",
        "Not a METR time horizon: an observed score-area statistic over caller times.",
    ]


def test_json_output(cli: Cli) -> None:
    result = trajectory(cli, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["schema_version"] == "evalarc.trajectory.v1"
    assert report["source"]["name"] == "checkpoints.json"
    assert report["budget_seconds"] == 3600.0
    assert report["normalized_score_area"] == 0.625
    assert report["final_score"] == 0.85
    assert report["first_resolved_seconds"] == 1800
    assert report["regressions"] == [{"elapsed_seconds": 2700, "from": 1.0, "to": 0.85}]
    assert report["checkpoint_count"] == 4
    assert report["clock_source"] == "caller-reported"
    assert "not a METR time horizon" in report["interpretation"]


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        ("0", "evalarc: budget_seconds must be finite and positive, not 0.0\n"),
        ("-5", "evalarc: budget_seconds must be finite and positive, not -5.0\n"),
        ("nan", "evalarc: budget_seconds must be finite and positive, not nan\n"),
        ("inf", "evalarc: budget_seconds must be finite and positive, not inf\n"),
    ],
)
def test_bad_budget_exits_2_and_writes_nothing(
    cli: Cli, tmp_path: Path, budget: str, message: str
) -> None:
    result = cli("trajectory", EXAMPLE, "--budget-seconds", budget, "--output", tmp_path / "o")
    assert result.exit_code == 2
    assert result.stderr == message
    assert leftovers(tmp_path) == []


def test_budget_is_required(cli: Cli) -> None:
    result = cli("trajectory", EXAMPLE)
    assert result.exit_code == 2
    assert "Missing option '--budget-seconds'" in result.stderr


def test_budget_shorter_than_the_checkpoints_is_refused(cli: Cli, tmp_path: Path) -> None:
    result = cli("trajectory", EXAMPLE, "--budget-seconds", "2000", "--output", tmp_path / "o")
    assert result.exit_code == 2
    assert result.stderr == (
        "evalarc: checkpoints.json: checkpoint 4: checkpoint times must increase and stay within "
        "the budget (2700 s exceeds the budget 2000 s)\n"
    )
    assert leftovers(tmp_path) == []


def _write(tmp_path: Path, name: str, document: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda doc: doc[2]["evaluation"].update(valid=False, score=None),
            "evalarc: run.json: checkpoint 3: checkpoint must have a valid evaluated score "
            "(valid is False)",
        ),
        (
            lambda doc: doc[1].update(elapsed_seconds=300),
            "evalarc: run.json: checkpoint 2: checkpoint times must increase and stay within the "
            "budget (300 s is not after the previous 300 s)",
        ),
        (
            lambda doc: doc[3]["evaluation"].update(seeds=[17]),
            "evalarc: run.json: checkpoint 4: checkpoints must use the same task, grader, cases, "
            "runtime, seeds, and scoring weights (it differs from checkpoint 1 in seeds)",
        ),
        (lambda doc: doc.clear(), "evalarc: run.json: checkpoints must not be empty"),
    ],
    ids=["invalid", "time", "seeds", "empty"],
)
def test_refused_checkpoints_exit_2_and_write_nothing(
    cli: Cli, tmp_path: Path, change: Any, message: str
) -> None:
    document = example()
    change(document)
    path = _write(tmp_path, "run.json", document)
    result = trajectory(cli, "--output", tmp_path / "o", checkpoints=path)
    assert result.exit_code == 2
    assert result.stderr.startswith(message), result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert leftovers(tmp_path) == ["run.json"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"[1, 2", "evalarc: bad.json is not valid JSON: "),
        (b'[{"evaluation": {}, "evaluation": {}}]', "duplicate key 'evaluation'"),
        (b'[{"elapsed_seconds": NaN}]', "non-finite number NaN is not allowed"),
        (b"\xff\xfe", "evalarc: bad.json is not valid JSON: "),
    ],
)
def test_unreadable_json_exits_2(cli: Cli, tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    result = trajectory(cli, checkpoints=path)
    assert result.exit_code == 2
    assert message in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_missing_and_special_inputs_exit_2(cli: Cli, tmp_path: Path) -> None:
    missing = trajectory(cli, checkpoints=tmp_path / "none.json")
    assert missing.exit_code == 2
    assert "checkpoints file" in missing.stderr and "does not exist" in missing.stderr
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    special = trajectory(cli, checkpoints=fifo)
    assert special.exit_code == 2
    assert "is not a regular file" in special.stderr


def test_existing_output_is_refused_untouched(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "o"
    out.mkdir()
    (out / "keep.txt").write_text("mine", encoding="utf-8")
    result = trajectory(cli, "--output", out)
    assert result.exit_code == 2
    assert "already exists" in result.stderr
    assert leftovers(out) == ["keep.txt"]
    assert leftovers(tmp_path) == ["o"]


# -- the report folder and verify ---------------------------------------------------------------


def test_folder_layout_copy_params_and_report(cli: Cli, folder: Path) -> None:
    assert leftovers(folder) == FOLDER_FILES
    assert leftovers(folder.parent) == ["traj"]
    assert (folder / "checkpoints.json").read_bytes() == EXAMPLE.read_bytes()
    params = json.loads((folder / "params.json").read_text(encoding="utf-8"))
    assert params == {
        "schema_version": "evalarc.report-params.v1",
        "kind": "trajectory",
        "budget_seconds": 3600.0,
        "inputs": [{"file": "checkpoints.json"}],
    }
    saved = json.loads((folder / "trajectory.json").read_text(encoding="utf-8"))
    assert saved == json.loads(trajectory(cli, "--json").stdout)


def test_verify_passes_and_lists_the_evidence(cli: Cli, folder: Path) -> None:
    code, result = verify_json(cli, folder)
    assert code == 0, result
    assert result["verified"] is True
    assert result["kind"] == "trajectory"
    assert result["passed"] is True
    assert result["normalized_score_area"] == 0.625
    assert sorted(result["files"]) == [
        "checkpoints.json",
        "index.html",
        "params.json",
        "trajectory.json",
    ]
    assert result["files"]["index.html"]["role"] == "regenerated"
    assert result["files"]["checkpoints.json"]["role"] == "preserved"
    assert cli("verify", folder / "trajectory.json", "--require-accepted").exit_code == 0


def test_moved_folder_still_verifies(cli: Cli, folder: Path, tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere" / "renamed"
    moved.parent.mkdir()
    shutil.move(str(folder), moved)
    assert cli("verify", moved).exit_code == 0


def _tamper_expect(cli: Cli, folder: Path, message: str) -> None:
    code, result = verify_json(cli, folder)
    assert code == 2
    assert result["verified"] is False
    assert message in result["error"], result["error"]


def test_edited_area_fails_verification(cli: Cli, folder: Path) -> None:
    edit_json(folder / "trajectory.json", lambda r: r.update(normalized_score_area=0.7))
    _tamper_expect(cli, folder, "trajectory.json differs from the recomputed trajectory report")


def test_edited_regressions_fail_verification(cli: Cli, folder: Path) -> None:
    edit_json(folder / "trajectory.json", lambda r: r.update(regressions=[]))
    _tamper_expect(cli, folder, "trajectory.json differs from the recomputed trajectory report")


def test_edited_checkpoint_copy_fails_verification(cli: Cli, folder: Path) -> None:
    edit_json(folder / "checkpoints.json", lambda d: d[3]["evaluation"].update(score=1.0))
    _tamper_expect(cli, folder, "checkpoints.json differs from the input the report recorded")


def test_edited_copy_with_matching_hash_still_fails(cli: Cli, folder: Path) -> None:
    """Rewriting the copy and its recorded hash together still leaves the area inconsistent."""
    copy_path = folder / "checkpoints.json"
    edit_json(copy_path, lambda d: d[3]["evaluation"].update(score=1.0))
    digest = hashlib.sha256(copy_path.read_bytes()).hexdigest()
    edit_json(folder / "trajectory.json", lambda r: r["source"].update(sha256=digest))
    _tamper_expect(cli, folder, "trajectory.json differs from the recomputed trajectory report")


def test_changed_budget_fails_verification(cli: Cli, folder: Path) -> None:
    edit_json(folder / "params.json", lambda p: p.update(budget_seconds=7200.0))
    _tamper_expect(cli, folder, "trajectory.json differs from the recomputed trajectory report")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda p: p.update(budget_seconds=-1),
            "params.json: budget_seconds must be finite and positive, not -1",
        ),
        (lambda p: p.pop("budget_seconds"), "params.json: budget_seconds must be finite"),
        (
            lambda p: p.update(inputs=[{"file": "../checkpoints.json"}]),
            "params.json must list checkpoints.json as the one input",
        ),
    ],
)
def test_malformed_params_fail_verification(
    cli: Cli, folder: Path, change: Any, message: str
) -> None:
    edit_json(folder / "params.json", change)
    _tamper_expect(cli, folder, message)


def test_missing_copy_fails_verification(cli: Cli, folder: Path) -> None:
    (folder / "checkpoints.json").unlink()
    _tamper_expect(cli, folder, "checkpoints.json is missing from traj")


# -- the page ----------------------------------------------------------------------------------


class _PageScan(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.sources: list[str] = []
        self.ids: set[str] = set()
        self.tags: list[str] = []
        self.styled: list[str] = []
        self.csp = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        self.tags.append(tag)
        if values.get("id"):
            self.ids.add(str(values["id"]))
        if tag == "a" and values.get("href"):
            self.links.append(str(values["href"]))
        if values.get("src"):
            self.sources.append(str(values["src"]))
        if "style" in values or any(name.startswith("on") for name in values):
            self.styled.append(tag)
        if tag == "meta" and values.get("http-equiv") == "Content-Security-Policy":
            self.csp = True


def test_page_is_self_contained_with_an_svg_curve(folder: Path) -> None:
    html = (folder / "index.html").read_text(encoding="utf-8")
    scan = _PageScan()
    scan.feed(html)
    assert scan.csp and not scan.sources and not scan.styled
    # The chart is static SVG; the only script is the shared table enhancer every page carries.
    assert scan.tags.count("script") == 1
    assert scan.tags.count("svg") == 1
    assert {"path", "line", "circle", "text", "title", "desc"} <= set(scan.tags)
    for link in scan.links:
        assert not re.match(r"^[a-z]+:", link), link
        if link.startswith("#"):
            assert link[1:] in scan.ids, link
        else:
            assert (folder / link).is_file(), link
    assert {"checkpoints.json", "params.json", "trajectory.json"} <= set(scan.links)
    assert "elapsed seconds (caller-reported)" in html
    assert ">score</text>" in html
    assert ">budget 3600 s</text>" in html
    assert 'stroke-dasharray="6 4"' in html
    assert "not a METR time horizon" in html
    assert html.count("<tr>") == 1 + 4 + 8  # header, four checkpoints, eight identity rows


def test_chart_model_of_the_example(folder: Path) -> None:
    report = read_report(folder)
    assert step_vertices(report.checkpoints, 3600.0) == [
        (0.0, 0.0),
        (300.0, 0.0),
        (300.0, 0.0),
        (900.0, 0.0),
        (900.0, 0.65),
        (1800.0, 0.65),
        (1800.0, 1.0),
        (2700.0, 1.0),
        (2700.0, 0.85),
        (3600.0, 0.85),
    ]
    chart = build_chart(report)
    # Plot box x 64..696 over 0..3780 s (the budget plus 5%), y 264 (score 0) .. 28 (score 1).
    assert chart.budget_x == f"{64 + 632 * 3600 / 3780:.2f}" == "665.90"
    x300, x900 = (f"{64 + 632 * t / 3780:.2f}" for t in (300, 900))
    assert (x300, x900) == ("114.16", "214.48")
    assert chart.step_path.startswith(
        f"M64.00 264.00 L{x300} 264.00 L{x300} 264.00 L{x900} 264.00 L{x900} 110.60 "
    )  # y of 0.65: 264 - 236 * 0.65
    assert chart.step_path.endswith("L665.90 63.40")
    assert chart.area_path.endswith("L665.90 63.40 L665.90 264.00 Z")
    assert [tick.label for tick in chart.x_ticks] == ["0", "1000", "2000", "3000"]
    assert [tick.label for tick in chart.y_ticks] == ["0", "0.25", "0.5", "0.75", "1"]
    assert [marker.regression for marker in chart.markers] == [False, False, False, True]
    assert chart.markers[3].label == "2700 s: score 0.8500, regression"
    assert chart.markers[2].label == "1800 s: score 1.0000, resolved"


def test_page_model_cards_and_rows(folder: Path) -> None:
    report = read_report(folder)
    page = build_trajectory_page(report)
    assert [(card.value, card.label, card.alert) for card in page.cards] == [
        ("0.6250", "normalized score area", False),
        ("0.8500", "final score", False),
        ("1800 s", "first resolved", False),
        ("1", "regressions (score fell)", True),
        ("4", "checkpoints", False),
    ]
    assert [(row.elapsed, row.score, row.held_until, row.area, row.note) for row in page.rows] == [
        ("300", "0.0000", "900", "0", ""),
        ("900", "0.6500", "1800", "585", ""),
        ("1800", "1.0000", "2700", "900", ""),
        ("2700", "0.8500", "3600", "765", "regression"),
    ]
    assert page.verdict == (
        "Normalized score area 0.6250 over 3600 s; final score 0.8500, first resolved at "
        "1800 s, 1 regression"
    )
    assert page.identity[0].value == "durable-kv 0.1.0 (public-development)"
    assert page.identity[4].value == "17, 41, 97"
    assert page.identity[5].value == (
        "basic 0.25, validation 0.15, transactions 0.2, compare_swap 0.15, persistence 0.15, "
        "crash_recovery 0.1"
    )


def test_hostile_names_are_escaped_in_the_svg_and_table(cli: Cli, tmp_path: Path) -> None:
    document = example()
    for entry in document:
        entry["evaluation"]["task"] = {
            **entry["evaluation"]["task"],
            "id": "</desc><script>alert(1)</script>",
        }
    hostile = _write(tmp_path, 'x"<img src=x onerror=alert(1)>.json', document)
    out = tmp_path / "out"
    result = trajectory(cli, "--output", out, checkpoints=hostile)
    assert result.exit_code == 0, result.output
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "<img src=x" not in html and "<script>alert" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    desc = html[html.index('<desc id="chart-desc">') : html.index("</desc>")]
    assert "&lt;img src=x onerror=alert(1)&gt;.json" in desc
    assert "&lt;/desc&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html
    scan = _PageScan()
    scan.feed(html)
    assert not scan.sources and not scan.styled and scan.tags.count("script") == 1
    assert cli("verify", out).exit_code == 0


def test_many_checkpoints_cap_rows_but_not_the_curve(cli: Cli, tmp_path: Path) -> None:
    base = example()[0]
    document = []
    for index in range(1005):
        entry = copy.deepcopy(base)
        entry["evaluation"]["cases"] = []  # not read by the trajectory; keeps the file small
        entry["elapsed_seconds"] = index
        entry["evaluation"]["score"] = (index % 4) / 4
        document.append(entry)
    report = json.loads(
        cli("trajectory", _write(tmp_path, "many.json", document), "--budget-seconds", "2000",
            "--json").stdout
    )  # fmt: skip
    page = build_trajectory_page(TrajectoryReport.from_json(report, "trajectory.json"))
    assert len(page.rows) == 1000 and page.hidden_rows == 5
    assert page.chart.step_path.count("L") == 2 * 1005 + 1
    # 251 full cycles of 0, .25, .5, .75 plus 0 at 1004 held 996 s: 251 * 1.5 / 2000
    assert report["normalized_score_area"] == 251 * 1.5 / 2000
