"""`evalarc hillclimb-run` on copies of recordings/examples/hillclimb-run: the scripted loop
(spec §8.3), the guards around the propose command, and the report folder it leaves for
`evalarc verify`."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import Result

from evalarc.reports.hillclimb_run import glob_matches, is_allowed, unified_patch

if TYPE_CHECKING:
    from conftest import Cli

EXAMPLE = Path(__file__).resolve().parents[1] / "recordings" / "examples" / "hillclimb-run"
ORIGINAL_RULES = (EXAMPLE / "workspace" / "rules.md").read_bytes()
BASE_CONFIG: dict[str, Any] = {
    "workspace": "workspace",
    "allow": ["rules.md"],
    "held_out": "split.json",
    "evaluate": ["{python}", "evaluate.py", "--output", "{output}"],
    "propose": [
        "{python}",
        "propose.py",
        "--iteration",
        "{iteration}",
        "--failures",
        "{failures}",
        "--allowed",
        "{allowed}",
    ],
    "objective": "quality",
    "max_iterations": 5,
    "stall_after": 2,
    "timeout_seconds": 60,
}


def toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    return json.dumps(value)


def example(tmp_path: Path, **overrides: Any) -> Path:
    """A private copy of the example with config.toml rewritten from BASE_CONFIG + overrides."""
    folder = tmp_path / "example"
    if not folder.exists():
        shutil.copytree(EXAMPLE, folder)
    config = {**BASE_CONFIG, **overrides}
    lines = [f"{key} = {toml_value(value)}" for key, value in config.items() if value is not None]
    path = folder / "config.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def climb(cli: Cli, config: Path, out: Path, *extra: str) -> Result:
    return cli("hillclimb-run", config, "--output", out, "--trust-local", *extra)


def loop_json(out: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((out / "loop.json").read_text(encoding="utf-8"))
    return document


def write_script(config: Path, name: str, body: str) -> str:
    (config.parent / "workspace" / name).write_text(body, encoding="utf-8")
    return name


def test_example_loop_ends_with_a_verifiable_merge(cli: Cli, tmp_path: Path) -> None:
    config = example(tmp_path)
    out = tmp_path / "run"
    result = climb(cli, config, out)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:6] == [
        "  1. keep (tuning +25.0 pp, held out +33.3 pp)",
        "  2. rollback_pasted_case",
        "  3. rollback_overfit (tuning +12.5 pp, held out +0.0 pp) — stalled",
        "  4. no_change",
        "  5. keep (tuning +25.0 pp, held out +50.0 pp)",
        "Stopped: max_iterations | Kept: 05.json | Recommendation: merge",
    ]
    loop = loop_json(out)
    assert loop["schema_version"] == "evalarc.hillclimb-run.v1"
    assert loop["status"] == "complete"
    assert loop["status_reason"] == "max_iterations"
    assert loop["kept"] == "05.json"
    assert loop["recommendation"] == "merge"
    assert loop["merge_recommended"] is True
    steps = loop["steps"]
    assert [step["decision"] for step in steps] == [
        "keep",
        "rollback_pasted_case",
        "rollback_overfit",
        "no_change",
        "keep",
    ]
    assert [hit["case_id"] for hit in steps[1]["hits"]] == ["t05"]
    assert steps[1]["result"] is None
    assert steps[2]["stall"]["categories"] == {"never_passes": 4}
    assert steps[2]["stall"]["headroom_below_noise"] is False
    assert "triage" not in steps[2]["stall"]
    assert sorted(p.name for p in (out / "results").iterdir()) == [
        "00-baseline.json",
        "01.json",
        "03.json",
        "05.json",
    ]
    rules = (config.parent / "workspace" / "rules.md").read_text(encoding="utf-8")
    assert rules.endswith("- route: password -> account\n- route: parcel -> shipping\n")
    assert "example:" not in rules
    assert (out / "original" / "rules.md").read_bytes() == ORIGINAL_RULES
    final_diff = (out / "final.diff").read_text(encoding="utf-8")
    assert "+- route: password -> account\n+- route: parcel -> shipping\n" in final_diff
    assert "example:" in (out / "steps" / "02" / "patch.diff").read_text(encoding="utf-8")
    assert (out / "steps" / "04" / "patch.diff").read_text(encoding="utf-8") == ""
    assert (out / "config.toml").read_bytes() == config.read_bytes()

    report = json.loads((out / "hillclimb.json").read_text(encoding="utf-8"))
    assert [step["decision"] for step in report["steps"]] == ["keep", "rollback_overfit", "keep"]
    assert report["final"]["held_out"]["current"]["pass_rate"] == 1.0
    assert report["leakage"]["hits"] == []
    params = json.loads((out / "params.json").read_text(encoding="utf-8"))
    assert params["kind"] == "hillclimb-review"
    assert params["min_steps"] == 0
    assert params["inputs"][0] == {"file": "results/00-baseline.json"}
    assert params["harness"][0]["label"] == "rules.md"
    assert (out / "harness" / "0000").read_text(encoding="utf-8") == rules

    verified = cli("verify", out, "--json")
    assert verified.exit_code == 0, verified.output
    assert json.loads(verified.stdout)["passed"] is True
    assert cli("verify", out, "--require-accepted").exit_code == 0


def test_step_briefs_hold_only_tuning_failures(cli: Cli, tmp_path: Path) -> None:
    config = example(tmp_path, max_iterations=3)
    out = tmp_path / "run"
    assert climb(cli, config, out).exit_code == 1  # stops before the parcel rule is proposed
    brief = json.loads((out / "steps" / "03" / "tuning-failures.json").read_text("utf-8"))
    assert brief["kept"] == "01.json"
    assert brief["held_out_excluded"] is True
    assert [row["case_id"] for row in brief["failures"]] == ["t05", "t06", "t07", "t08"]
    first = brief["failures"][0]
    assert first["category"] == "never_passes"
    assert first["input"] == "The parcel was marked delivered but it is not at my door."
    assert first["expected"] == "shipping"
    assert first["outputs"] == ["general"]
    assert any("paste" in rule for rule in brief["rules"])
    for number in ("01", "02", "03"):
        text = (out / "steps" / number / "tuning-failures.json").read_text(encoding="utf-8")
        assert '"h0' not in text
    allowed = json.loads((out / "steps" / "01" / "allowed.json").read_text(encoding="utf-8"))
    assert allowed["files"] == ["rules.md"]


def test_without_trust_local_nothing_runs(cli: Cli, tmp_path: Path) -> None:
    config = example(tmp_path)
    out = tmp_path / "run"
    result = cli("hillclimb-run", config, "--output", out)
    assert result.exit_code == 2
    assert "user privileges" in result.stderr
    assert not out.exists()


def test_edit_outside_allow_stops_and_restores(cli: Cli, tmp_path: Path) -> None:
    config = example(tmp_path)
    script = write_script(
        config,
        "sneaky.py",
        "from pathlib import Path\n"
        "Path('rules.md').write_text('- route: parcel -> shipping\\n')\n"
        "Path('notes.txt').write_text('scratch')\n"
        "Path('scratch').mkdir()\n"
        "Path('scratch/more.txt').write_text('more')\n",
    )
    config = example(tmp_path, propose=["{python}", script])
    out = tmp_path / "run"
    result = climb(cli, config, out)
    assert result.exit_code == 2
    assert "changed files outside allow" in result.stderr
    assert "added notes.txt (deleted)" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    workspace = config.parent / "workspace"
    assert not (workspace / "notes.txt").exists()
    assert not (workspace / "scratch").exists()
    assert (workspace / "rules.md").read_bytes() == ORIGINAL_RULES
    loop = loop_json(out)
    assert loop["status"] == "failed"
    assert loop["outside_changes"]["added"] == ["notes.txt", "scratch/more.txt"]
    assert "notes.txt" in loop["error"]


def test_touching_git_stops_and_lists_what_to_restore(cli: Cli, tmp_path: Path) -> None:
    config = example(tmp_path)
    workspace = config.parent / "workspace"
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("[core]\n", encoding="utf-8")
    script = write_script(
        config,
        "git_edit.py",
        "from pathlib import Path\n"
        "Path('rules.md').write_text('- route: parcel -> shipping\\n')\n"
        "Path('.git/config').write_text('[core]\\n\\tbare = true\\n')\n"
        "Path('.git/HEAD.lock').write_text('x')\n",
    )
    config = example(tmp_path, propose=["{python}", script])
    out = tmp_path / "run"
    result = climb(cli, config, out)
    assert result.exit_code == 2
    assert "modified .git/config" in result.stderr
    assert "added .git/HEAD.lock (deleted)" in result.stderr
    assert "Restore the modified or deleted files yourself" in result.stderr
    assert (workspace / "rules.md").read_bytes() == ORIGINAL_RULES
    assert not (workspace / ".git" / "HEAD.lock").exists()
    # EvalArc keeps no copy of files outside allow: the user restores them.
    assert "bare = true" in (workspace / ".git" / "config").read_text(encoding="utf-8")
    assert loop_json(out)["status"] == "failed"


def test_held_out_text_in_a_patch_is_rolled_back_unevaluated(cli: Cli, tmp_path: Path) -> None:
    config = example(tmp_path, max_iterations=1)
    proposals = config.parent / "workspace" / "proposals.json"
    proposals.write_text(
        json.dumps(
            [{"append": "- hint: Two-factor codes stopped working since I changed my password."}]
        ),
        encoding="utf-8",
    )
    out = tmp_path / "run"
    result = climb(cli, config, out)
    assert result.exit_code == 1, result.output
    step = loop_json(out)["steps"][0]
    assert step["decision"] == "rollback_leakage"
    assert [(hit["case_id"], hit["partition"]) for hit in step["hits"]] == [("h03", "held_out")]
    assert sorted(p.name for p in (out / "results").iterdir()) == ["00-baseline.json"]
    assert (config.parent / "workspace" / "rules.md").read_bytes() == ORIGINAL_RULES
    assert loop_json(out)["recommendation"] == "no_change_kept"
    assert cli("verify", out).exit_code == 0


def test_pasted_case_is_evaluated_when_the_check_is_off(cli: Cli, tmp_path: Path) -> None:
    config = example(tmp_path, max_iterations=2, paste_check=False)
    out = tmp_path / "run"
    result = climb(cli, config, out)
    # Kept 01.json: held out 2/12 -> 6/12 is within noise, so no merge.
    assert result.exit_code == 1, result.output
    decisions = [step["decision"] for step in loop_json(out)["steps"]]
    # Memorising t05 raises only the tuning rate: the review calls it overfitting.
    assert decisions == ["keep", "rollback_overfit"]
    assert "example:" not in (config.parent / "workspace" / "rules.md").read_text("utf-8")


def test_failing_propose_is_a_step_and_stalls(cli: Cli, tmp_path: Path) -> None:
    script = write_script(example(tmp_path), "fail.py", "import sys\nsys.exit(3)\n")
    config = example(tmp_path, propose=["{python}", script], max_iterations=2)
    out = tmp_path / "run"
    result = climb(cli, config, out)
    assert result.exit_code == 1, result.output
    loop = loop_json(out)
    assert loop["status"] == "complete"
    assert [step["decision"] for step in loop["steps"]] == ["propose_failed", "propose_failed"]
    assert "exited with status 3" in loop["steps"][0]["reason"]
    assert loop["steps"][1]["stalled"] is True
    assert loop["steps"][1]["stall"]["categories"] == {"consistent_failure": 6}
    assert loop["recommendation"] == "no_change_kept"
    assert cli("verify", out).exit_code == 0


def test_loop_stops_when_headroom_is_below_noise(cli: Cli, tmp_path: Path) -> None:
    config = example(tmp_path)
    rules = config.parent / "workspace" / "rules.md"
    rules.write_text(
        "- route: invoice -> billing\n- route: password -> account\n"
        "- route: parcel -> shipping\n- route: voucher -> billing\n",
        encoding="utf-8",
    )
    script = write_script(config, "fail.py", "import sys\nsys.exit(1)\n")
    config = example(tmp_path, propose=["{python}", script], max_iterations=5)
    out = tmp_path / "run"
    result = climb(cli, config, out)
    assert result.exit_code == 1, result.output
    loop = loop_json(out)
    # 14/16 tuning attempts pass: 12.5% headroom, below the ~32% that 16 attempts resolve.
    assert loop["status_reason"] == "stopped_below_noise"
    assert len(loop["steps"]) == 2
    assert loop["steps"][1]["stall"]["headroom_below_noise"] is True
    assert "Stopped: stopped_below_noise | Kept: 00-baseline.json" in result.stdout


def test_a_changed_case_set_stops_the_loop(cli: Cli, tmp_path: Path) -> None:
    script = write_script(
        example(tmp_path),
        "drop_eval.py",
        "import json, runpy, sys\n"
        "from pathlib import Path\n"
        "out = sys.argv[2]\n"
        "runpy.run_path('evaluate.py', run_name='__main__')\n"
        "if 'password' in Path('rules.md').read_text():\n"
        "    log = json.loads(Path(out).read_text())\n"
        "    log['samples'] = [s for s in log['samples'] if s['id'] != 't08']\n"
        "    log.pop('results', None)  # its metrics counted t08 (a log must agree with itself)\n"
        "    Path(out).write_text(json.dumps(log))\n",
    )
    config = example(tmp_path, evaluate=["{python}", script, "--output", "{output}"])
    out = tmp_path / "run"
    result = climb(cli, config, out)
    assert result.exit_code == 2, result.output
    assert "results/01.json does not record the same cases as the baseline" in result.stderr
    assert loop_json(out)["status"] == "failed"
    assert (config.parent / "workspace" / "rules.md").read_bytes() == ORIGINAL_RULES


def test_propose_timeout_is_enforced(cli: Cli, tmp_path: Path) -> None:
    script = write_script(example(tmp_path), "slow.py", "import time\ntime.sleep(60)\n")
    config = example(tmp_path, propose=["{python}", script], max_iterations=1, timeout_seconds=1)
    out = tmp_path / "run"
    started = time.monotonic()
    result = climb(cli, config, out)
    assert time.monotonic() - started < 30
    assert result.exit_code == 1, result.output
    assert "timed out after 1 s" in loop_json(out)["steps"][0]["reason"]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("import sys\nsys.stdout.write('x' * (9 * 1024 * 1024))\n", "more than 8 MiB"),
        (None, "could not start"),
    ],
)
def test_runaway_output_and_missing_executable_fail_the_proposal(
    cli: Cli, tmp_path: Path, body: str | None, fragment: str
) -> None:
    config = example(tmp_path)
    command = (
        ["{python}", write_script(config, "loud.py", body)]
        if body is not None
        else ["./no-such-proposer"]
    )
    config = example(tmp_path, propose=command, max_iterations=1)
    out = tmp_path / "run"
    result = climb(cli, config, out)
    assert result.exit_code == 1, result.output
    step = loop_json(out)["steps"][0]
    assert step["decision"] == "propose_failed"
    assert fragment in step["reason"]


def test_failing_evaluate_stops_with_exit_2(cli: Cli, tmp_path: Path) -> None:
    script = write_script(example(tmp_path), "broken_eval.py", "raise SystemExit(1)\n")
    config = example(tmp_path, evaluate=["{python}", script, "{output}"])
    out = tmp_path / "run"
    result = climb(cli, config, out)
    assert result.exit_code == 2
    assert "evaluate command exited with status 1" in result.stderr
    loop = loop_json(out)
    assert loop["status"] == "failed"
    assert "evaluate" in loop["error"]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"colour": "blue"}, "unknown keys"),
        ({"propose": ["{python}", "propose.py", "{bogus}"]}, "unknown placeholder {bogus}"),
        ({"evaluate": ["{python}", "evaluate.py", "{failures}"]}, "unknown placeholder"),
        ({"allow": ["../rules.md"]}, "inside the workspace"),
        ({"allow": ["/etc/passwd"]}, "inside the workspace"),
        ({"allow": [".git/config"]}, ".git"),
        ({"allow": []}, "non-empty array"),
        ({"allow": ["missing.md"]}, "allow matches no file"),
        ({"max_iterations": 0}, "max_iterations must be between 1 and 50"),
        ({"timeout_seconds": 0}, "timeout_seconds"),
        ({"min_effect": 1.0}, "min_effect"),
        ({"objective": "speed"}, "objective must be one of"),
        ({"evaluate": []}, "evaluate must be an array"),
        ({"paste_check": "yes"}, "paste_check"),
    ],
)
def test_invalid_config_exits_2_and_writes_nothing(
    cli: Cli, tmp_path: Path, overrides: dict[str, Any], message: str
) -> None:
    config = example(tmp_path, **overrides)
    out = tmp_path / "run"
    result = climb(cli, config, out)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert not out.exists()
    assert (config.parent / "workspace" / "rules.md").read_bytes() == ORIGINAL_RULES


def test_output_must_be_new_and_outside_the_workspace(cli: Cli, tmp_path: Path) -> None:
    config = example(tmp_path)
    inside = climb(cli, config, config.parent / "workspace" / "out")
    assert inside.exit_code == 2
    assert "inside the workspace" in inside.stderr
    existing = tmp_path / "exists"
    existing.mkdir()
    again = climb(cli, config, existing)
    assert again.exit_code == 2
    assert "already exists" in again.stderr


def test_symlinked_allowed_file_is_refused(cli: Cli, tmp_path: Path) -> None:
    config = example(tmp_path, allow=["*.md"])
    (config.parent / "workspace" / "linked.md").symlink_to(config.parent / "split.json")
    out = tmp_path / "run"
    result = climb(cli, config, out)
    assert result.exit_code == 2
    assert "linked.md is a symbolic link" in result.stderr
    assert not out.exists()


def test_globs() -> None:
    assert glob_matches("rules.md", "rules.md")
    assert not glob_matches("rules.md", "sub/rules.md")
    assert glob_matches("*.md", "rules.md") and not glob_matches("*.md", "a/rules.md")
    assert glob_matches("**/*.md", "rules.md") and glob_matches("**/*.md", "a/b/rules.md")
    assert glob_matches("prompts/**", "prompts/a/b.txt")
    assert not glob_matches("prompts/**", "other/a.txt")
    assert not is_allowed(".git/config", ["**"])
    assert is_allowed("src/.gitignore", ["**"])


def test_unified_patch() -> None:
    assert unified_patch({"a.md": b"x\n"}, {"a.md": b"x\n"}) == ""
    patch = unified_patch({"a.md": b"x\n"}, {"a.md": b"x\ny\n", "b.md": b"new\n"})
    assert "--- a/a.md\n+++ b/a.md\n" in patch and "\n+y\n" in patch
    assert "--- /dev/null\n+++ b/b.md\n" in patch
    assert "Binary files" in unified_patch({}, {"c.bin": b"\xff\xfe"})
    assert unified_patch({"a.md": b"x\n"}, {"a.md": b"x"}) != ""
