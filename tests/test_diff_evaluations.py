"""``evalarc diff`` over two EvalArc evaluations (the fourth format): case = seed/case id,
check = dimension. The support demo is replayed from the bundled real-Docker recordings.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalarc.errors import InputError
from evalarc.formats import load_results
from evalarc.formats.evaluation import (
    COMPARABLE_FIELDS,
    evaluation_run,
    incomparable_field,
    resolve_evaluation_path,
)
from evalarc.formats.model import Source
from evalarc.packs import materialize_workspace

TASK = "support-routing"
SOURCE = Source("evaluation.json", "0" * 64)


def _cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    temp = cwd / "tmp"
    temp.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "evalarc.cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TMPDIR": str(temp)})


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Baseline close-unresolved and current new-key-on-retry at seed 17, each evaluated by
    replaying its bundled Docker recordings."""
    root = tmp_path_factory.mktemp("demo")
    for name, fault in (("baseline", "close-unresolved"), ("current", "new-key-on-retry")):
        # Program files only, as the audit that made the recordings ran them.
        materialize_workspace(TASK, "python", reference=True, fault=fault,
                              dest=root / f"ws-{name}", contract=False)
        done = _cli("evaluate", root / f"ws-{name}", "--task", TASK, "--backend", "replay",
                    "--seeds", "17", "--output", name, "--quiet", cwd=root)
        assert done.returncode == 1, done.stderr
    return root


def _evaluation(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "evaluation.json").read_text(encoding="utf-8"))


def test_the_support_demo_regression_behind_a_higher_score(demo: Path) -> None:
    assert _evaluation(demo / "baseline")["score"] == 0.9
    assert _evaluation(demo / "current")["score"] == 0.9375
    done = _cli("diff", demo / "baseline" / "evaluation.json", demo / "current" / "evaluation.json",
                "--json", cwd=demo)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["format"] == "evaluation"
    changes = [(row["kind"], row["case_id"], row["check"]) for row in report["changes"]]
    assert changes == [
        ("regressed", "17/retry-after-commit", "notes"),
        ("improved", "17/retry-before-commit", "closure"),
        ("improved", "17/route-open-ticket", "closure"),
    ]
    assert report["counts"]["unchanged"] == 4 * 5 - 3
    assert (report["baseline"]["headline"]["value"], report["current"]["headline"]["value"]) \
        == (0.9, 0.9375)
    assert report["gate_passed"] is False and report["blocking_changes"] == 1
    # The trace of retry-after-commit shows why: the retry used a new idempotency key, so the
    # note that had already been committed was added a second time.
    (case,) = [c for c in _evaluation(demo / "current")["cases"]
               if c["case_id"] == "retry-after-commit"]
    notes = [step for step in case["trace"] if step.get("type") == "tool_call"
             and step["action"]["tool"] == "add_note"]
    assert [step["action"]["arguments"]["request_id"] for step in notes] == \
        ["review", "review-retry"]
    target = next(iter(case["initial_state"]))
    body = notes[0]["action"]["arguments"]["body"]
    assert case["final_state"][target]["notes"].count(body) == 2


def test_diff_writes_a_verifiable_folder_over_evaluations(demo: Path) -> None:
    done = _cli("diff", demo / "baseline" / "evaluation.json", demo / "current" / "evaluation.json",
                "--output", "review", cwd=demo)
    assert done.returncode == 1, done.stderr
    assert "17/retry-after-commit" in done.stdout
    verified = _cli("verify", "review", "--json", cwd=demo)
    assert verified.returncode == 0, verified.stderr
    assert json.loads(verified.stdout)["passed"] is False


def test_a_report_folder_stands_for_its_evaluation(demo: Path) -> None:
    assert resolve_evaluation_path(demo / "baseline") == demo / "baseline" / "evaluation.json"
    assert resolve_evaluation_path(demo / "x.json") == demo / "x.json"
    run = load_results(demo / "current")
    assert run.format == "evaluation"
    assert sorted(run.cases) == ["17/close-resolved-ticket", "17/retry-after-commit",
                                 "17/retry-before-commit", "17/route-open-ticket"]
    assert sorted(run.cases["17/retry-after-commit"]) == ["closure", "notes", "protocol",
                                                          "routing", "scope"]
    (attempt,) = run.cases["17/retry-after-commit"]["notes"]
    assert attempt.passed is False
    assert run.identity["task"] == "support-routing@0.1.0"
    assert run.headline is not None and run.headline.value == 0.9375
    assert run.samples["17/route-open-ticket"][0].usage["duration_seconds"] >= 0
    assert load_results(demo / "baseline", "evaluation").format == "evaluation"


def test_every_identity_field_makes_evaluations_incomparable(demo: Path) -> None:
    base = _evaluation(demo / "baseline")
    baseline = evaluation_run(base, SOURCE, 1.0, "baseline.json")
    edits = {
        "task": lambda e: e["task"].update(version="0.2.0"),
        "grader_sha256": lambda e: e.update(grader_sha256="1" * 64),
        "cases_sha256": lambda e: e.update(cases_sha256="2" * 64),
        "seeds": lambda e: e.update(seeds=[17, 41]),
        "runtime": lambda e: e["runtime"].update(response_timeout_seconds=5.0),
        "weights": lambda e: e["dimensions"]["notes"].update(weight=0.3),
    }
    assert tuple(edits) == COMPARABLE_FIELDS
    for field, edit in edits.items():
        other = copy.deepcopy(base)
        edit(other)
        current = evaluation_run(other, SOURCE, 1.0, "current.json")
        assert incomparable_field(baseline, current) == field
    current = evaluation_run(_evaluation(demo / "current"), SOURCE, 1.0, "current.json")
    assert incomparable_field(baseline, current) is None  # only the candidate differs


def test_another_task_version_is_refused_by_diff(demo: Path) -> None:
    other = _evaluation(demo / "current")
    other["task"]["version"] = "9.9.9"
    (demo / "other.json").write_text(json.dumps(other), encoding="utf-8")
    done = _cli("diff", demo / "baseline" / "evaluation.json", demo / "other.json", cwd=demo)
    assert done.returncode == 2
    assert "not comparable: task 'support-routing@0.1.0' != 'support-routing@9.9.9'" in \
        done.stderr


def test_unusable_evaluations_are_refused_naming_the_file() -> None:
    good = {"schema_version": "evalarc.evaluation.v2"}
    with pytest.raises(InputError, match=r"new\.json uses evalarc\.evaluation\.v3; this EvalArc"):
        evaluation_run({"schema_version": "evalarc.evaluation.v3"}, SOURCE, 1.0, "new.json")
    with pytest.raises(InputError, match=r"bad\.json: task is missing"):
        evaluation_run(good, SOURCE, 1.0, "bad.json")
    with pytest.raises(InputError, match="is not an EvalArc evaluation"):
        evaluation_run({"schema_version": "x"}, SOURCE, 1.0, "x.json")


def test_an_invalid_evaluation_is_incomplete_and_unassessed(demo: Path) -> None:
    broken = _evaluation(demo / "current")
    case = broken["cases"][0]
    case["checks"] = dict.fromkeys(case["checks"])
    case["status"] = "environment_error"
    broken["valid"], broken["score"] = False, None
    run = evaluation_run(broken, SOURCE, 1.0, "broken.json")
    assert run.incomplete is True
    label = f"{case['seed']}/{case['case_id']}"
    assert {attempts[0].passed for attempts in run.cases[label].values()} == {None}
    case["checks"]["notes"] = "yes"
    with pytest.raises(InputError, match="is not a boolean or null"):
        evaluation_run(broken, SOURCE, 1.0, "broken.json")
