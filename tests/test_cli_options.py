"""The CLI's option bundles and its one emit helper: a bundle's options reach the command as one
typed value, two commands sharing a bundle refuse the same input with the same line, and every
report command writes --markdown / --json / its exit code the same way."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click
import pytest
from click.testing import CliRunner, Result

from evalarc.cli_emit import Group, Outcome, emit
from evalarc.cli_options import (
    ReportOutput,
    ResultFormat,
    RunOptions,
    join_seeds,
    report_output_options,
    result_format_options,
)
from evalarc.errors import ExitCode

if TYPE_CHECKING:
    from conftest import Cli

ROOT = Path(__file__).resolve().parents[1]
INSPECT = ROOT / "recordings" / "examples" / "results-diff" / "inspect"
CLIMB = ROOT / "recordings" / "examples" / "hillclimb-review"
CLIMB_RESULTS = sorted((CLIMB / "results").glob("0*.json"))


def _probe() -> click.Group:
    """A throwaway group whose command hands back the bundles it received."""
    received: list[object] = []

    @click.group(cls=Group)
    def group() -> None:
        pass

    @group.command()
    @click.argument("name")
    @result_format_options("Format.", "Threshold.")
    @click.option("--between", default="x")
    @report_output_options("JSON.", junit_help="JUnit.")
    def probe(name: str, results_as: ResultFormat, between: str, out: ReportOutput) -> None:
        received.extend([name, results_as, between, out])
        emit(Outcome(ExitCode.REJECTED, [f"lines for {name}\x1b[31m"], {"name": name}), out)

    group.received = received  # type: ignore[attr-defined]
    return group


def test_a_bundle_hands_the_command_one_typed_value_and_keeps_the_written_order() -> None:
    group = _probe()
    result = CliRunner().invoke(
        group,
        ["probe", "n", "--threshold", "0.5", "--format", "junit", "--output", "o", "--json"],
    )
    assert result.exit_code == 1, result.output
    assert json.loads(result.stdout) == {"name": "n"}
    name, results_as, between, out = group.received  # type: ignore[attr-defined]
    assert (name, between) == ("n", "x")
    assert results_as == ResultFormat(fmt="junit", threshold=0.5)
    assert out == ReportOutput(as_json=True, markdown=None, output=Path("o"), junit=None)
    # --help lists the options in the order the decorators are written.
    usage = CliRunner().invoke(group, ["probe", "--help"]).output
    flags = ["--format", "--threshold", "--between", "--output", "--markdown", "--junit", "--json"]
    positions = [usage.index(f"  {flag} ") for flag in flags]
    assert positions == sorted(positions), usage
    # Without --json the human lines are printed, control characters escaped.
    text = CliRunner().invoke(group, ["probe", "n"])
    assert text.exit_code == 1 and text.stdout == "lines for n\\u001b[31m\n"


def test_run_options_refuse_recordings_without_replay_the_same_way_for_both_commands(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    evaluate = cli("evaluate", "cand", "--recordings", "rec")
    audit = cli("audit", "--recordings", "rec")
    for result in (evaluate, audit):
        assert result.exit_code == 2
        assert result.stderr == "evalarc: --recordings is only for --backend replay\n"
        assert result.stdout == ""
    assert list(tmp_path.iterdir()) == []  # refused before anything was written
    with pytest.raises(Exception, match="only for --backend replay"):
        RunOptions(
            task="durable-kv",
            backend="docker",
            trust_local=False,
            image=None,
            recordings=Path("rec"),
            seeds=None,
            timeout=10.0,
            case_timeout=60.0,
            startup_timeout=30.0,
            jobs=None,
            executor="threads",
            ray_address=None,
            retry_infrastructure=0,
        )


def test_seeds_take_every_following_integer_until_the_next_option() -> None:
    assert join_seeds(["c", "--seeds", "17", "41", "-3", "--jobs", "2"]) == [
        "c",
        "--seeds",
        "17 41 -3",
        "--jobs",
        "2",
    ]
    assert join_seeds(["--seeds", "17", "x"]) == ["--seeds", "17", "x"]
    assert join_seeds(["--", "--seeds", "1", "2"]) == ["--", "--seeds", "1", "2"]


def test_bad_seeds_are_refused_in_one_line_by_both_commands(cli: Cli) -> None:
    for command in (["evaluate", "cand"], ["audit"]):
        result = cli(*command, "--seeds", "1,x")
        assert result.exit_code == 2
        assert result.stderr.startswith("evalarc: Invalid value for '--seeds': '1,x' is not a list")
        assert result.stderr.count("\n") == 1


def _health(cli: Cli, *extra: str | Path) -> Result:
    return cli("eval-health", INSPECT / "baseline.json", INSPECT / "current.json", *extra)


def _climb(cli: Cli, *extra: str | Path) -> Result:
    return cli("hillclimb-review", *CLIMB_RESULTS, "--held-out", CLIMB / "split.json", *extra)


def _diff(cli: Cli, *extra: str | Path) -> Result:
    return cli("diff", INSPECT / "baseline.json", INSPECT / "current.json", *extra)


@pytest.mark.parametrize("run", [_diff, _health, _climb], ids=["diff", "health", "hillclimb"])
def test_markdown_and_json_behave_alike_in_every_report_command(
    cli: Cli, tmp_path: Path, run: Callable[..., Result]
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("before\n", encoding="utf-8")
    text = run(cli, "--markdown", summary)
    appended = summary.read_text(encoding="utf-8")
    assert appended.startswith("before\n") and len(appended) > len("before\n")
    assert appended.endswith("\n") and not appended.endswith("\n\n\n")
    as_json = run(cli, "--json")
    assert as_json.exit_code == text.exit_code and text.exit_code in (0, 1)
    assert isinstance(json.loads(as_json.stdout), dict)
    assert not text.stdout.lstrip().startswith("{")
    missing = tmp_path / "no-such-folder" / "summary.md"
    refused = run(cli, "--markdown", missing)
    assert refused.exit_code == 2
    assert refused.stderr.startswith(f"evalarc: cannot append to {missing}: ")
    assert refused.stderr.count("\n") == 1


def test_help_loads_no_library_module_and_version_reads_the_metadata(tmp_path: Path) -> None:
    """``evalarc --help`` stays fast: only the CLI modules load (no package metadata, no
    report, reader or bundle code); ``--version`` reads the installed version when asked."""
    import subprocess
    import sys
    from importlib.metadata import version

    probe = (
        "import sys\n"
        "from evalarc.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('evalarc'))\n"
        "print(loaded, 'importlib.metadata' in sys.modules, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, check=True
    )
    expected = ["evalarc", "evalarc.cli", "evalarc.cli_emit", "evalarc.cli_options"]
    expected += ["evalarc.errors", "evalarc.terminal"]
    # --format's choices come from the registry of formats (no reader is loaded with it).
    expected += ["evalarc.formats", "evalarc.formats.registry"]
    assert done.stderr.strip() == f"{sorted(expected)} False"
    shown = subprocess.run(
        [sys.executable, "-m", "evalarc.cli", "--version"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    assert shown.stdout == f"EvalArc {version('evalarc')}\n"


def test_emit_prints_a_typed_model_by_its_to_json(capsys: pytest.CaptureFixture[str]) -> None:
    class Model:
        def to_json(self) -> dict[str, object]:
            return {"schema_version": "x.v1", "name": "\u202egnp.exe"}

    with pytest.raises(SystemExit) as exited:
        emit(Outcome(ExitCode.REJECTED, ["text"], Model()), ReportOutput(as_json=True))
    assert exited.value.code == 1
    printed = capsys.readouterr().out
    assert json.loads(printed) == {"schema_version": "x.v1", "name": "\u202egnp.exe"}
    assert "\u202e" not in printed  # the bidi control is printed as its JSON escape


def test_a_cancel_escaping_the_group_still_exits_130_and_says_so_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A KeyboardInterrupt that reaches the top (a signal landing while a cancelled command is
    # already exiting) must end as exit 130, not as Python's death by SIGINT.
    import signal

    from evalarc import cli, cli_emit
    from evalarc.cancel import CANCELLING_SIGNALS

    def interrupted() -> None:
        raise KeyboardInterrupt

    saved = {number: signal.getsignal(number) for number in CANCELLING_SIGNALS}
    monkeypatch.setattr(cli, "main", interrupted)
    monkeypatch.setattr(cli_emit, "_CANCELLED_SAID", [])
    try:
        with pytest.raises(SystemExit) as exited:
            cli.run()
        assert exited.value.code == 130
        assert capsys.readouterr().err == "evalarc: cancelled\n"
        monkeypatch.setattr(cli_emit, "_CANCELLED_SAID", [True])  # the group said it already
        with pytest.raises(SystemExit) as exited:
            cli.run()
        assert exited.value.code == 130
        assert capsys.readouterr().err == ""
    finally:
        for number, handler in saved.items():
            signal.signal(number, handler)


@pytest.mark.parametrize("command", ["diff", "eval-health"])
def test_a_summary_that_cannot_be_written_whole_is_not_appended_at_all(
    tmp_path: Path, command: str
) -> None:
    """A file size limit stops the write part way (the kernel's EFBIG, which Python gets as an
    error instead of SIGXFSZ): the file keeps exactly what it had and one line names it."""
    import resource
    import subprocess
    import sys

    summary = tmp_path / "summary.md"
    # Larger than either input, so the private copies diff makes of its inputs fit the limit.
    before = b"# earlier step\n" + b"x" * (4 * 1024 * 1024) + b"\n"
    summary.write_bytes(before)
    limit = len(before) + 64  # room for the first bytes of the summary, not for all of it

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    args = [command, str(INSPECT / "baseline.json"), str(INSPECT / "current.json")]
    done = subprocess.run(
        [sys.executable, "-m", "evalarc.cli", *args, "--markdown", str(summary)],
        capture_output=True,
        text=True,
        preexec_fn=limited,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"evalarc: cannot append to {summary}: File too large\n"
    assert summary.read_bytes() == before
    unlimited = subprocess.run(
        [sys.executable, "-m", "evalarc.cli", *args, "--markdown", str(summary)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert unlimited.returncode in (0, 1), unlimited.stderr
    grown = summary.read_bytes()
    assert grown.startswith(before) and len(grown) > limit
