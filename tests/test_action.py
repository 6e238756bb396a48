"""The GitHub Action (action.yml), run locally the way the runner runs a composite action.

Each `run:` step is extracted from action.yml and executed with `bash --noprofile --norc -eo
pipefail` (GitHub's `shell: bash`), with `${{ inputs.* }}` and `${{ steps.*.outputs.* }}` in the
step's `env:` resolved like the runner does, a fresh GITHUB_OUTPUT file per step, one
GITHUB_STEP_SUMMARY, RUNNER_TEMP and GITHUB_ACTION_PATH (this checkout). The install step really
creates a venv and pip-installs the checkout (once per module); the other steps run per scenario
on real corpus files. The workflow commands the steps print are decoded with GitHub's unescaping
rules, so an escaped hostile case id is checked as the runner would read it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from evalarc.action import (
    MAX_ANNOTATIONS,
    decide,
    escape_data,
    escape_property,
    output_block,
    workflow_command,
)
from evalarc.formats.model import Attempt, Run, Source
from evalarc.review.diff import DiffOptions, compute_diff

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
ACTION = REPO / "action.yml"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
HOSTILE_ID = "cap-02\n::error title=pwned::injected %0A,x:y\r\n### EvalArc: No check lost passes"


# -- a small composite-action runner ------------------------------------------------------------


def load_action() -> dict[str, Any]:
    document = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    return document


def parse_output_file(path: Path) -> dict[str, str]:
    """Read a GITHUB_OUTPUT file: `name=value` lines and `name<<DELIM` blocks."""
    outputs: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").split("\n") if path.exists() else []
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line:
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            value: list[str] = []
            while lines[index] != delimiter:
                value.append(lines[index])
                index += 1
            index += 1
            outputs[name] = "\n".join(value)
        else:
            name, value_text = line.split("=", 1)
            outputs[name] = value_text
    return outputs


def unescape_data(text: str) -> str:
    """The runner's unescaping of a workflow-command message."""
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def unescape_property(text: str) -> str:
    return (
        text.replace("%0D", "\r")
        .replace("%0A", "\n")
        .replace("%3A", ":")
        .replace("%2C", ",")
        .replace("%25", "%")
    )


@dataclass
class Command:
    name: str
    properties: dict[str, str]
    message: str


def parse_commands(stdout: str) -> list[Command]:
    """Every workflow command in a step's stdout, parsed and unescaped like the runner does."""
    commands: list[Command] = []
    for line in stdout.splitlines():
        if not line.startswith("::"):
            continue
        end = line.index("::", 2)
        head, message = line[2:end], line[end + 2 :]
        name, _, props_text = head.partition(" ")
        properties: dict[str, str] = {}
        for item in props_text.split(",") if props_text else []:
            key, _, value = item.partition("=")
            properties[key] = unescape_property(value)
        commands.append(Command(name, properties, unescape_data(message)))
    return commands


@dataclass
class StepRun:
    id: str
    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, str]


@dataclass
class ActionRun:
    steps: list[StepRun] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)

    @property
    def returncode(self) -> int:
        return self.steps[-1].returncode

    def step(self, step_id: str) -> StepRun:
        return next(step for step in self.steps if step.id == step_id)

    def commands(self) -> list[Command]:
        return [command for step in self.steps for command in parse_commands(step.stdout)]


class CompositeRunner:
    """Runs action.yml's steps with the GitHub environment variables set."""

    def __init__(self, runner_temp: Path) -> None:
        self.action = load_action()
        self.runner_temp = runner_temp

    def input_values(self, given_inputs: dict[str, str]) -> dict[str, str]:
        declared = self.action["inputs"]
        unknown = set(given_inputs) - set(declared)
        assert not unknown, f"inputs not declared in action.yml: {unknown}"
        values: dict[str, str] = {}
        for name, spec in declared.items():
            if name in given_inputs:
                values[name] = given_inputs[name]
            else:
                assert not spec.get("required"), f"required input {name} not given"
                values[name] = str(spec.get("default", ""))
        return values

    def resolve(self, text: str, inputs: dict[str, str], steps: dict[str, StepRun]) -> str:
        def value(match: re.Match[str]) -> str:
            parts = match.group(1).split(".")
            if parts[0] == "inputs" and len(parts) == 2:
                return inputs[parts[1]]
            if parts[0] == "steps" and len(parts) == 4 and parts[2] == "outputs":
                step = steps.get(parts[1])
                return step.outputs.get(parts[3], "") if step else ""
            raise AssertionError(f"expression this runner does not know: {match.group(0)}")

        return EXPRESSION.sub(value, str(text))

    def run(
        self,
        workspace: Path,
        given_inputs: dict[str, str],
        summary: Path,
        only: tuple[str, ...] | None = None,
    ) -> ActionRun:
        inputs = self.input_values(given_inputs)
        result = ActionRun()
        done: dict[str, StepRun] = {}
        for index, step in enumerate(self.action["runs"]["steps"]):
            step_id = step.get("id", f"step{index}")
            if only is not None and step_id not in only:
                continue
            output_file = self.runner_temp / f"output-{step_id}-{len(result.steps)}"
            output_file.write_text("", encoding="utf-8")
            env = {
                "PATH": os.environ["PATH"],
                "HOME": os.environ.get("HOME", "/root"),
                "LANG": "C.UTF-8",
                "GITHUB_ACTIONS": "true",
                "GITHUB_OUTPUT": str(output_file),
                "GITHUB_STEP_SUMMARY": str(summary),
                "GITHUB_WORKSPACE": str(workspace),
                "GITHUB_ACTION_PATH": str(REPO),
                "RUNNER_TEMP": str(self.runner_temp),
            }
            for key, raw in (step.get("env") or {}).items():
                env[key] = self.resolve(raw, inputs, done)
            script = self.runner_temp / f"step-{step_id}.sh"
            script.write_text(step["run"], encoding="utf-8")
            completed = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                cwd=workspace,
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            run = StepRun(
                step_id,
                completed.returncode,
                completed.stdout,
                completed.stderr,
                parse_output_file(output_file),
            )
            result.steps.append(run)
            done[step_id] = run
            if completed.returncode != 0:
                break
        for name, spec in self.action["outputs"].items():
            result.outputs[name] = self.resolve(spec["value"], inputs, done)
        return result


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> CompositeRunner:
    """A runner whose install step has run for real: venv in RUNNER_TEMP, checkout installed."""
    runner_temp = tmp_path_factory.mktemp("runner-temp")
    composite = CompositeRunner(runner_temp)
    workspace = tmp_path_factory.mktemp("install-workspace")
    installed = composite.run(workspace, {"baseline": "b", "current": "c"}, workspace / "summary")
    install = installed.step("install")
    assert install.returncode == 0, install.stderr[-3000:]
    assert re.search(r"^EvalArc \S+$", install.stdout, re.MULTILINE), install.stdout
    assert (runner_temp / "evalarc-action" / "bin" / "evalarc").is_file()
    return composite


AFTER_INSTALL = ("diff", "site", "gate")


def _workspace(tmp_path: Path, corpus: Path, *names: str) -> Path:
    workspace = tmp_path / "workspace"
    (workspace / "results").mkdir(parents=True)
    for name in names:
        shutil.copyfile(corpus / name, workspace / "results" / Path(name).name)
    return workspace


# -- the action's shape -------------------------------------------------------------------------


def test_inputs_reach_scripts_only_through_env() -> None:
    action = load_action()
    assert action["runs"]["using"] == "composite"
    for step in action["runs"]["steps"]:
        assert set(step) <= {"name", "id", "shell", "env", "run"}, step.get("name")
        assert step["shell"] == "bash"
        assert "${{" not in step["run"], f"expression pasted into the script of {step['name']}"
    expected_inputs = {
        "baseline",
        "current",
        "format",
        "threshold",
        "output",
        "fail-on-regression",
        "held-out",
        "harness",
        "require-generalization",
        "max-cost-ratio",
        "cost-metric",
        "python",
    }
    assert expected_inputs <= set(action["inputs"])
    assert action["inputs"]["baseline"]["required"] is True
    assert action["inputs"]["fail-on-regression"]["default"] == "true"
    assert {
        "gate-passed",
        "blocking-changes",
        "report",
        "generalization-state",
        "leakage-hits",
        "cost-ratio",
    } <= set(action["outputs"])


# -- scenarios on real result files -------------------------------------------------------------


def test_regression_pair_fails_with_outputs_summary_and_annotations(
    runner: CompositeRunner, corpus: Path, tmp_path: Path
) -> None:
    workspace = _workspace(
        tmp_path, corpus, "inspect/capitals.baseline.json", "inspect/capitals.current.json"
    )
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step summary\n", encoding="utf-8")
    run = runner.run(
        workspace,
        {
            "baseline": "results/capitals.baseline.json",
            "current": "results/capitals.current.json",
            "junit": "evalarc-junit.xml",
        },
        summary,
        only=AFTER_INSTALL,
    )
    assert [step.id for step in run.steps] == ["diff", "site", "gate"]
    assert run.step("diff").outputs["status"] == "1"
    assert run.returncode == 1
    assert run.outputs["gate-passed"] == "false"
    assert run.outputs["passed"] == "false"
    assert run.outputs["blocking-changes"] == "6"
    assert run.outputs["report"] == "evalarc-diff"
    assert run.outputs["generalization-state"] == ""
    assert run.outputs["leakage-hits"] == ""
    assert run.outputs["cost-ratio"] == ""

    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step summary\n")  # appended, not replaced
    assert "### EvalArc: 6 check(s) lost passes or coverage" in text
    assert "| regressed | `cap-07` | `match` | 1/1 | 0/1 |" in text

    warnings = [command for command in run.commands() if command.name == "warning"]
    assert [(w.properties["title"], w.message) for w in warnings] == [
        ("EvalArc regressed", f"{case} / {check}: passed 1/1 -> 0/1")
        for case, check in [
            ("cap-02", "includes"),
            ("cap-02", "match"),
            ("cap-07", "match"),
            ("cap-11", "includes"),
            ("cap-11", "match"),
            ("cap-24", "includes"),
        ]
    ]
    errors = [command for command in run.commands() if command.name == "error"]
    assert len(errors) == 1
    assert errors[0].properties == {"title": "EvalArc gate failed"}
    assert "evalarc-diff" in errors[0].message

    report = workspace / "evalarc-diff"
    assert json.loads((report / "diff.json").read_text(encoding="utf-8"))["blocking_changes"] == 6
    assert (report / "index.html").is_file()
    junit = ElementTree.parse(workspace / "evalarc-junit.xml").getroot()
    failed = {
        (case.get("classname"), case.get("name"))
        for case in junit.iter("testcase")
        if case.find("failure") is not None
    }
    assert failed == {
        ("cap-02", "includes"),
        ("cap-02", "match"),
        ("cap-07", "match"),
        ("cap-11", "includes"),
        ("cap-11", "match"),
        ("cap-24", "includes"),
    }
    verify = subprocess.run(
        [str(runner.runner_temp / "evalarc-action" / "bin" / "evalarc"), "verify", str(report)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert verify.returncode == 0, verify.stderr


def test_hostile_case_id_stays_inside_its_annotation(
    runner: CompositeRunner, corpus: Path, tmp_path: Path
) -> None:
    workspace = tmp_path / "workspace"
    (workspace / "results").mkdir(parents=True)
    hostile = json.dumps(HOSTILE_ID).encode()
    for side in ("baseline", "current"):
        data = (corpus / f"inspect/capitals.{side}.json").read_bytes()
        assert data.count(b'"cap-02"') >= 1
        (workspace / "results" / f"{side}.json").write_bytes(data.replace(b'"cap-02"', hostile))
    summary = tmp_path / "summary.md"
    run = runner.run(
        workspace,
        {"baseline": "results/baseline.json", "current": "results/current.json"},
        summary,
        only=AFTER_INSTALL,
    )
    assert run.returncode == 1
    assert run.outputs["blocking-changes"] == "6"
    gate_stdout = run.step("gate").stdout
    # The raw stdout: no line may start a command the report did not intend.
    command_lines = [line for line in gate_stdout.splitlines() if line.startswith("::")]
    assert len(command_lines) == 7  # six warnings and the final error
    assert not any(line.startswith("::error title=pwned") for line in gate_stdout.splitlines())
    assert "%0A::error title=pwned::injected %250A,x:y%0D%0A### EvalArc" in gate_stdout
    decoded = [c for c in run.commands() if c.name == "warning" and "pwned" in c.message]
    assert [c.message for c in decoded] == [
        f"{HOSTILE_ID} / includes: passed 1/1 -> 0/1",
        f"{HOSTILE_ID} / match: passed 1/1 -> 0/1",
    ]
    headings = [line for line in summary.read_text().splitlines() if line.startswith("### ")]
    assert headings == ["### EvalArc: 6 check(s) lost passes or coverage"]


def test_clean_pair_passes_without_annotations(
    runner: CompositeRunner, corpus: Path, tmp_path: Path
) -> None:
    # The same run written by Inspect in both log formats: nothing changed.
    workspace = _workspace(
        tmp_path, corpus, "inspect/capitals.baseline.json", "inspect/capitals.baseline.eval"
    )
    summary = tmp_path / "summary.md"
    run = runner.run(
        workspace,
        {
            "baseline": "results/capitals.baseline.json",
            "current": "results/capitals.baseline.eval",
            "output": "reports/clean",
        },
        summary,
        only=AFTER_INSTALL,
    )
    assert run.step("diff").outputs["status"] == "0"
    assert run.returncode == 0
    assert run.outputs["gate-passed"] == "true"
    assert run.outputs["passed"] == "true"
    assert run.outputs["blocking-changes"] == "0"
    assert run.outputs["report"] == "reports/clean"
    assert run.commands() == []
    assert summary.read_text(encoding="utf-8").startswith("### EvalArc: No check lost passes")
    assert (workspace / "reports" / "clean" / "diff.json").is_file()


def test_optional_reviews_report_without_failing_when_asked(
    runner: CompositeRunner, tmp_path: Path
) -> None:
    # The bundled Inspect example with its held-out split, a harness folder whose name needs
    # property escaping, and a duration cost gate; fail-on-regression false reports only.
    example = REPO / "recordings" / "examples" / "results-diff" / "inspect"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    for name in ("baseline.json", "current.json", "split.json"):
        shutil.copyfile(example / name, workspace / name)
    harness = workspace / "prompts,v2:final"
    harness.mkdir()
    shutil.copyfile(example / "harness" / "system-prompt.md", harness / "system-prompt.md")
    run = runner.run(
        workspace,
        {
            "baseline": "baseline.json",
            "current": "current.json",
            "held-out": "split.json",
            "harness": "  prompts,v2:final  ",  # a space-separated list of one odd path
            "max-cost-ratio": "2",
            "cost-metric": "duration",
            "fail-on-regression": "false",
        },
        tmp_path / "summary.md",
        only=AFTER_INSTALL,
    )
    assert run.step("diff").outputs["status"] == "1", run.step("diff").stderr
    assert run.returncode == 0
    assert run.outputs["gate-passed"] == "false"
    assert run.outputs["blocking-changes"] == "3"
    assert run.outputs["generalization-state"] == "held_out_gain_within_noise"
    assert run.outputs["leakage-hits"] == "2"
    report = json.loads((workspace / "evalarc-diff" / "diff.json").read_text(encoding="utf-8"))
    assert run.outputs["cost-ratio"] == f"{round(report['cost_gate']['ratio'], 6):g}"
    commands = run.commands()
    assert not [c for c in commands if c.name == "error"]
    notices = [c for c in commands if c.name == "notice"]
    assert len(notices) == 1 and "fail-on-regression is false" in notices[0].message
    leaks = [c for c in commands if c.properties.get("title") == "EvalArc harness leakage"]
    assert [(c.properties["file"], c.properties["line"]) for c in leaks] == [
        ("prompts,v2:final/system-prompt.md", "9"),
        ("prompts,v2:final/system-prompt.md", "9"),
    ]
    raw = run.step("gate").stdout
    assert "file=prompts%2Cv2%3Afinal/system-prompt.md,line=9" in raw
    held_out = [c for c in commands if c.properties.get("title", "").startswith("EvalArc held-out")]
    assert len(held_out) == 1


def test_unusable_input_always_fails(runner: CompositeRunner, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    run = runner.run(
        workspace,
        {"baseline": "missing.json", "current": "missing.json", "fail-on-regression": "false"},
        tmp_path / "summary.md",
        only=AFTER_INSTALL,
    )
    assert run.step("diff").outputs["status"] == "2"
    assert run.returncode == 2
    errors = [c for c in run.commands() if c.name == "error"]
    assert len(errors) == 1 and "could not be compared" in errors[0].message
    # The final error says why (it used to say only "could not be compared").
    assert "missing.json does not exist" in errors[0].message
    assert run.outputs["gate-passed"] == ""
    assert not (workspace / "evalarc-diff").exists()


def test_outputs_in_new_folders_are_all_written_and_two_uses_do_not_collide(
    runner: CompositeRunner, corpus: Path, tmp_path: Path
) -> None:
    workspace = _workspace(
        tmp_path, corpus, "inspect/capitals.baseline.json", "inspect/capitals.current.json"
    )
    pair = {
        "baseline": "results/capitals.baseline.json",
        "current": "results/capitals.current.json",
    }
    first = runner.run(
        workspace, {**pair, "junit": "reports/junit/evalarc.xml"}, tmp_path / "s.md", AFTER_INSTALL
    )
    assert first.returncode == 1
    assert (workspace / "reports/junit/evalarc.xml").is_file()
    assert first.outputs["report"] == "evalarc-diff"
    # A second use in the same job with the default names gets the next free pair.
    second = runner.run(workspace, pair, tmp_path / "s.md", AFTER_INSTALL)
    assert second.returncode == 1, second.steps[-1].stdout
    assert second.outputs["report"] == "evalarc-diff-2"
    assert (workspace / "evalarc-diff-2" / "diff.json").is_file()
    if first.outputs["site"]:
        assert second.outputs["site"] == "evalarc-site-2"
    # Named outputs in folders that do not exist yet: parents are created.
    third = runner.run(
        workspace,
        {**pair, "output": "out/deep/report", "site": "out/site/here"},
        tmp_path / "s.md",
        AFTER_INSTALL,
    )
    assert third.returncode == 1
    assert (workspace / "out/deep/report/diff.json").is_file()
    # The final error says which gate failed.
    errors = [c for c in third.commands() if c.name == "error"]
    assert len(errors) == 1
    assert errors[0].message.startswith("6 check(s) lost passes or coverage; the report is in")


def test_a_junit_output_that_cannot_be_written_publishes_nothing(
    runner: CompositeRunner, corpus: Path, tmp_path: Path
) -> None:
    workspace = _workspace(
        tmp_path, corpus, "inspect/capitals.baseline.json", "inspect/capitals.current.json"
    )
    (workspace / "taken").write_text("a file where a folder should be\n", encoding="utf-8")
    pair = {
        "baseline": "results/capitals.baseline.json",
        "current": "results/capitals.current.json",
    }
    run = runner.run(
        workspace, {**pair, "junit": "taken/evalarc.xml"}, tmp_path / "s.md", AFTER_INSTALL
    )
    assert run.step("diff").outputs["status"] == "2"
    assert run.returncode == 2
    # Before: the report folder was published and only then the JUnit write failed, so a rerun
    # failed on "already exists".
    assert not (workspace / "evalarc-diff").exists()
    assert not (tmp_path / "s.md").exists() or "EvalArc" not in (tmp_path / "s.md").read_text()
    errors = [c for c in run.commands() if c.name == "error"]
    assert "cannot write JUnit XML to taken/evalarc.xml" in errors[0].message
    rerun = runner.run(workspace, {**pair, "junit": "ok.xml"}, tmp_path / "s.md", AFTER_INSTALL)
    assert rerun.returncode == 1
    assert rerun.outputs["report"] == "evalarc-diff"
    assert (workspace / "ok.xml").is_file()


def test_site_step_matches_what_this_version_can_build(
    runner: CompositeRunner, corpus: Path, tmp_path: Path
) -> None:
    evalarc = runner.runner_temp / "evalarc-action" / "bin" / "evalarc"
    has_site = (
        subprocess.run(
            [str(evalarc), "site", "build", "--help"], capture_output=True, check=False
        ).returncode
        == 0
    )
    workspace = _workspace(
        tmp_path, corpus, "junit/pytest/baseline.xml", "junit/pytest/current.xml"
    )
    run = runner.run(
        workspace,
        {"baseline": "results/baseline.xml", "current": "results/current.xml"},
        tmp_path / "summary.md",
        only=AFTER_INSTALL,
    )
    assert run.step("site").returncode == 0
    assert run.returncode == 1
    if has_site:
        assert run.outputs["site"] == "evalarc-site"
        assert (workspace / "evalarc-site" / "index.html").is_file()
        verified = subprocess.run(
            [str(evalarc), "verify", "evalarc-site"],
            cwd=workspace,
            capture_output=True,
            text=True,
            check=False,
        )
        assert verified.returncode == 0, verified.stderr
    else:
        assert run.outputs["site"] == ""
        assert not (workspace / "evalarc-site").exists()
        assert "index.html is the review page" in run.step("site").stdout


# -- the escaping itself ------------------------------------------------------------------------


@given(st.text())
def test_escaped_message_decodes_to_the_original_on_one_line(text: str) -> None:
    escaped = escape_data(text)
    assert "\n" not in escaped and "\r" not in escaped
    assert len(escaped.splitlines()) <= 1  # no Unicode line break either
    folded = "".join(
        " "
        if (ord(c) < 32 and c not in "\t\r\n") or ord(c) == 127 or c in "\x85\u2028\u2029"
        else c
        for c in text
    )
    assert unescape_data(escaped) == folded


@given(st.text())
def test_escaped_property_cannot_end_the_property_list(text: str) -> None:
    escaped = escape_property(text)
    assert not set(escaped) & {",", ":", "\n", "\r"}
    command = workflow_command("warning", "m", title=text, file="f")
    parsed = parse_commands(command)
    assert len(parsed) == 1
    assert parsed[0].properties["file"] == "f"
    assert parsed[0].message == "m"


def test_output_block_refuses_its_own_delimiter() -> None:
    assert output_block("report", "a\nb", "D") == "report<<D\na\nb\nD\n"
    with pytest.raises(ValueError):
        output_block("report", "x\nD\ny", "D")


def _junit_run(name: str, passed: bool, cases: int) -> Run:
    return Run(
        format="junit",
        source=Source(name, "0" * 64),
        threshold=1.0,
        cases={f"case-{index:02d}": {"match": [Attempt(passed)]} for index in range(cases)},
    )


def test_annotations_are_capped_and_the_rest_counted() -> None:
    count = MAX_ANNOTATIONS + 3
    report = compute_diff(
        _junit_run("a.xml", True, count),
        _junit_run("b.xml", False, count),
        DiffOptions(),
        created_at="x",
    )
    assert report["blocking_changes"] == count
    result = decide("out", 1, True, read_report=lambda path: report)
    commands = parse_commands("\n".join(result.commands))
    warnings = [c for c in commands if c.name == "warning"]
    assert len(warnings) == MAX_ANNOTATIONS + 1
    assert warnings[-1].message == "3 more blocking change(s) are listed in diff.json"
    assert result.exit_code == 1
    assert result.outputs["blocking-changes"] == str(MAX_ANNOTATIONS + 3)


def test_a_malformed_report_is_an_error_naming_the_field() -> None:
    report = compute_diff(
        _junit_run("a.xml", True, 2),
        _junit_run("b.xml", False, 2),
        DiffOptions(),
        created_at="x",
    )
    report["changes"][1]["kind"] = "vanished"
    result = decide("out", 1, True, read_report=lambda path: report)
    assert result.exit_code == 2 and result.outputs == {}
    [error] = parse_commands("\n".join(result.commands))
    assert error.name == "error"
    assert error.message.startswith("cannot read diff.json in out: diff.json: changes[1].kind")


# -- workflow commands from input text ----------------------------------------------------------

RUNNER_COMMANDS = frozenset(
    {
        *("set-env", "set-output", "save-state", "add-mask", "add-path", "add-matcher"),
        *("remove-matcher", "debug", "warning", "error", "notice", "group", "endgroup", "echo"),
        "stop-commands",
    }
)
"""The commands a GitHub runner accepts (its command extensions plus stop-commands)."""
INJECTION = REPO / "tests" / "injection"


def runner_command(line: str) -> str | None:
    """The workflow command a GitHub runner reads in ``line`` (None: none), as its
    ActionCommandManager does: the ``::name ...::`` form after leading whitespace is trimmed
    (ActionCommand.TryParseV2), else the legacy ``##[name ...]`` form anywhere in the line
    (ActionCommand.TryParse). Returns the command name."""
    trimmed = line.lstrip()
    if trimmed.startswith("::"):
        end = trimmed.find("::", 2)
        if end >= 0:
            name = trimmed[2:end].split(" ", 1)[0]
            if name in RUNNER_COMMANDS:
                return name
    start = line.find("##[")
    if start >= 0:
        end = line.find("]", start)
        if end >= 0:
            name = line[start + 3 : end].split(" ", 1)[0]
            if name in RUNNER_COMMANDS:
                return name
    return None


def _inspect_pair_with_scorer(corpus: Path, results: Path, scorer: str) -> None:
    """The capitals Inspect logs with their scorer ``match`` renamed ``scorer`` (the headline
    metric, each sample's score and the check name), as a hostile eval task would name it."""
    for side in ("baseline", "current"):
        data = (corpus / f"inspect/capitals.{side}.json").read_bytes()
        assert data.count(b'"match"') > 30
        (results / f"inspect.{side}.json").write_bytes(
            data.replace(b'"match"', json.dumps(scorer).encode())
        )


@pytest.mark.parametrize("pair", ["junit", "inspect"])
def test_no_input_text_starts_a_workflow_command_in_the_log(
    runner: CompositeRunner, corpus: Path, tmp_path: Path, pair: str
) -> None:
    # Issue 24 item 7: the Inspect headline metric name starts evalarc diff's first line, so a
    # scorer named ::error::pwned raised an annotation in the Action's log; a check named
    # ##[error]legacy did too (the runner reads the legacy form anywhere in a line).
    workspace = tmp_path / "workspace"
    results = workspace / "results"
    results.mkdir(parents=True)
    if pair == "junit":
        for side in ("baseline", "current"):
            shutil.copyfile(INJECTION / f"{side}.xml", results / f"{side}.xml")
        inputs = {"baseline": "results/baseline.xml", "current": "results/current.xml"}
        names = ["::error::pwned", "##[error]legacy"]
    else:
        _inspect_pair_with_scorer(corpus, results, "::error::pwned")
        inputs = {
            "baseline": "results/inspect.baseline.json",
            "current": "results/inspect.current.json",
        }
        names = ["::error::pwned"]
    summary = tmp_path / "summary.md"
    run = runner.run(workspace, {**inputs, "junit": "junit.xml"}, summary, only=AFTER_INSTALL)
    assert run.returncode == 1, run.steps[-1].stderr
    diff = run.step("diff")
    printed = diff.stdout.splitlines() + diff.stderr.splitlines()
    assert any("pwned" in line for line in printed), printed  # the names are shown...
    assert [line for line in printed if runner_command(line)] == []  # ...as no command
    for step in run.steps:
        for line in step.stderr.splitlines():
            assert runner_command(line) is None, (step.id, line)
    gate = run.step("gate").stdout.splitlines()
    for line in gate:
        assert runner_command(line) in (None, "warning", "error"), line
    # The Action's own annotations carry the names whole, inside their message.
    messages = [c.message for c in run.commands() if c.name == "warning"]
    for name in names:
        assert any(
            message.startswith(f"{name} / ") or f" / {name}:" in message for message in messages
        ), (name, messages)
    for line in summary.read_text(encoding="utf-8").splitlines():
        assert runner_command(line) is None, line
    report = Path(run.outputs["report"])
    report = report if report.is_absolute() else workspace / report
    for line in (report / "summary.md").read_text(encoding="utf-8").splitlines():
        assert runner_command(line) is None, line


def test_the_runner_model_reads_what_the_runner_reads() -> None:
    # The checker above, checked: the forms GitHub documents and the legacy one.
    assert runner_command("::error::pwned accuracy: 0.6 -> 0.7") == "error"
    assert runner_command(" \u3000::warning file=x::y") == "warning"
    assert runner_command("  regressed: ##[error]legacy / passed") == "error"
    assert runner_command("::stop-commands::token") == "stop-commands"
    assert runner_command("\\u003a:error::pwned") is None
    assert runner_command("  regressed: \\u0023#[error]legacy") is None
    assert runner_command("regressed: ::error::pwned / passed") is None
