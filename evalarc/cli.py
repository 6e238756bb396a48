"""The ``evalarc`` command line: parse options, call one library function, map the result to an
exit code. Nothing else lives here (the library is tested directly; CLI tests check the mapping).
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click

from evalarc import __version__
from evalarc.bundle import CANCELLING_SIGNALS
from evalarc.errors import EvalArcError, ExitCode, OutputError, UsageError
from evalarc.terminal import terminal_text

F = TypeVar("F", bound=Callable[..., Any])


def echo(message: str, err: bool = False) -> None:
    """Print one line (or a JSON document): every line EvalArc prints goes through here, so
    control and bidi characters from strangers' text are escaped (see :mod:`evalarc.terminal`)."""
    click.echo(terminal_text(str(message)), err=err)


def _fail(message: str, code: ExitCode = ExitCode.INVALID) -> None:
    echo(f"evalarc: {message}", err=True)
    sys.exit(int(code))


class _Group(click.Group):
    """Maps EvalArc errors, click usage errors and Ctrl-C onto the shared exit codes."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except EvalArcError as error:
            if ctx.meta.get("evalarc.debug"):
                raise
            _fail(error.message, error.exit_code)
        except click.UsageError as error:
            # A bad argument (a folder where a file goes, a missing file name) is refused like
            # any other input: one line naming it, not click's multi-line usage block.
            where = error.ctx.command_path if error.ctx is not None else "evalarc"
            text = UsageError(f"{error.format_message()} (see '{where} --help')").message
            _fail(text, ExitCode.INVALID)
        except KeyboardInterrupt:
            # Cancelled and cleaned up: another Ctrl-C (users press it again) must not turn the
            # exit code 130 into a death by signal while the interpreter shuts down.
            if threading.current_thread() is threading.main_thread():
                for number in CANCELLING_SIGNALS:
                    signal.signal(number, signal.SIG_IGN)
            published = ctx.meta.get(_PUBLISHED)
            if isinstance(published, int):
                # Too late to cancel: the output is complete and published, its result stands.
                sys.exit(published)
            echo("evalarc: cancelled", err=True)
            sys.exit(int(ExitCode.CANCELLED))
        return None


def _cancel(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _cancel_on_signals() -> None:
    """SIGTERM and SIGHUP (a CI runner stopping a job, a closed terminal) cancel a command as
    Ctrl-C does: cleanup runs, nothing half-written is left, exit 130."""
    if threading.current_thread() is not threading.main_thread():
        return
    for number in CANCELLING_SIGNALS:
        if number != signal.SIGINT and signal.getsignal(number) is signal.SIG_DFL:
            signal.signal(number, _cancel)


_PUBLISHED = "evalarc.published"


def _published(code: int) -> None:
    """Note that the command's output folder is complete and published with exit code ``code``:
    a Ctrl-C after this point cancels nothing, so the command still exits ``code``."""
    click.get_current_context().meta[_PUBLISHED] = int(code)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="EvalArc", message="%(prog)s %(version)s")
@click.option("--debug", is_flag=True, hidden=True, help="Show tracebacks instead of one line.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Review agent evaluations check by check instead of trusting a headline score."""
    ctx.meta["evalarc.debug"] = debug
    _cancel_on_signals()
    # Text from strangers may hold lone surrogates (legal in JSON): print them escaped rather than
    # dying on UnicodeEncodeError; in JSON output the escape is the value's own JSON spelling.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


class _PathList(click.Option):
    """A repeatable option that also takes several values after one flag, as ``--harness a b``
    does in the reference: every following argument up to the next one starting with ``-``
    belongs to it (``--harness a --harness b`` keeps working; give positional arguments first)."""

    def add_to_parser(self, parser: Any, ctx: click.Context) -> None:
        super().add_to_parser(parser, ctx)
        for name in self.opts:
            option = parser._long_opt.get(name) or parser._short_opt.get(name)
            if option is None:
                continue
            original = option.process

            def process(value: Any, state: Any, original: Any = original) -> None:
                original(value, state)
                while state.rargs and not str(state.rargs[0]).startswith("-"):
                    original(state.rargs.pop(0), state)

            option.process = process


_FORMAT_CHOICE = click.Choice(["auto", "inspect", "promptfoo", "junit", "evaluation"])


@main.command()
@click.argument("baseline", type=click.Path(path_type=Path))
@click.argument("current", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=_FORMAT_CHOICE,
    default="auto",
    show_default=True,
    help="Format of both files.",
)
@click.option(
    "--threshold",
    type=float,
    default=1.0,
    show_default=True,
    help="Numeric Inspect scores at or above this pass.",
)
@click.option(
    "--output",
    type=click.Path(path_type=Path, file_okay=False),
    help="Write a new, self-verifying report folder here.",
)
@click.option(
    "--markdown",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Append the Markdown summary to this file (e.g. $GITHUB_STEP_SUMMARY).",
)
@click.option(
    "--junit",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write JUnit XML here: each blocking change a failed test, every other check a pass.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the full diff JSON instead of text.")
@click.option(
    "--held-out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="An evalarc.case-split.v1 file naming held-out cases.",
)
@click.option(
    "--harness",
    cls=_PathList,
    type=click.Path(path_type=Path),
    multiple=True,
    help="Files or folders scanned for verbatim case text (--harness A B ..., repeatable).",
)
@click.option("--leak-min-chars", type=int, default=12, show_default=True)
@click.option("--max-cost-ratio", type=float, help="Fail when current/baseline cost exceeds R.")
@click.option(
    "--cost-metric",
    type=click.Choice(["auto", "cost", "tokens", "duration"]),
    default="auto",
    show_default=True,
)
@click.option(
    "--require-generalization",
    is_flag=True,
    help="Fail unless the held-out split shows a gain beyond noise and no leak.",
)
def diff(
    baseline: Path,
    current: Path,
    fmt: str,
    threshold: float,
    output: Path | None,
    markdown: Path | None,
    junit: Path | None,
    as_json: bool,
    held_out: Path | None,
    harness: tuple[Path, ...],
    leak_min_chars: int,
    max_cost_ratio: float | None,
    cost_metric: str,
    require_generalization: bool,
) -> None:
    """Compare every case and check of BASELINE and CURRENT; exit 1 if any check lost passes."""
    from evalarc.reports.diff import DiffRequest, run_diff
    from evalarc.reports.diff_text import terminal_lines
    from evalarc.review.diff import DiffOptions, overall_passed

    options = DiffOptions(
        threshold=threshold,
        leak_min_chars=leak_min_chars,
        require_generalization=require_generalization,
        max_cost_ratio=max_cost_ratio,
        cost_metric=cost_metric,
    )
    request = DiffRequest(
        baseline=baseline,
        current=current,
        options=options,
        format=fmt,
        held_out=held_out,
        harness=list(harness) if harness else None,
    )
    report = run_diff(request, output, junit, markdown)
    if as_json:
        echo(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        for line in terminal_lines(report, str(output) if output is not None else None):
            echo(line)
    sys.exit(int(ExitCode.ACCEPTED if overall_passed(report) else ExitCode.REJECTED))


def _append(path: Path, text: str) -> None:
    try:
        with path.open("a", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(text if text.endswith("\n") else text + "\n")
    except OSError as error:
        raise OutputError(f"cannot append to {path}: {error.strerror or error}") from None


@main.command("eval-health")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=_FORMAT_CHOICE,
    default="auto",
    show_default=True,
    help="Format of every file.",
)
@click.option(
    "--threshold",
    type=float,
    default=1.0,
    show_default=True,
    help="Numeric Inspect scores at or above this pass.",
)
@click.option(
    "--saturation",
    type=float,
    default=0.95,
    show_default=True,
    help="Warn when the best file's pass rate reaches this.",
)
@click.option("--min-effect", type=float, help="The smallest pass-rate change you need to see.")
@click.option("--ordered", is_flag=True, help="Files go from weaker to stronger configuration.")
@click.option(
    "--cases",
    type=click.Path(path_type=Path, dir_okay=False),
    help="An evalarc.case-manifest.v1 file declaring where cases came from.",
)
@click.option("--plan-attempts", type=int, help="Attempts per case for a planned run.")
@click.option("--plan-configs", type=int, help="Configurations for a planned run.")
@click.option(
    "--output",
    type=click.Path(path_type=Path, file_okay=False),
    help="Write a new, self-verifying report folder here.",
)
@click.option(
    "--markdown",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Append the Markdown summary to this file (e.g. $GITHUB_STEP_SUMMARY).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the full health JSON instead of text.")
@click.option("--require-healthy", is_flag=True, help="Exit 1 when there is any warning.")
def eval_health(
    results: tuple[Path, ...],
    fmt: str,
    threshold: float,
    saturation: float,
    min_effect: float | None,
    ordered: bool,
    cases: Path | None,
    plan_attempts: int | None,
    plan_configs: int | None,
    output: Path | None,
    markdown: Path | None,
    as_json: bool,
    require_healthy: bool,
) -> None:
    """Judge whether 1-20 RESULT files of one evaluation can support tuning decisions."""
    from evalarc.reports.health import HealthRequest, run_health
    from evalarc.reports.health_text import markdown_summary, terminal_lines
    from evalarc.review.health import HealthOptions

    options = HealthOptions(
        threshold=threshold,
        saturation=saturation,
        min_effect=min_effect,
        ordered=ordered,
        plan_attempts=plan_attempts,
        plan_configs=plan_configs,
    )
    request = HealthRequest(inputs=list(results), options=options, format=fmt, cases=cases)
    report = run_health(request, output)
    if markdown is not None:
        _append(markdown, markdown_summary(report))
    if as_json:
        echo(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    else:
        for line in terminal_lines(report, str(output) if output is not None else None):
            echo(line)
    healthy = report.healthy
    sys.exit(int(ExitCode.REJECTED if require_healthy and not healthy else ExitCode.ACCEPTED))


@main.command("hillclimb-review")
@click.argument("baseline", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("steps", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--held-out",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="An evalarc.case-split.v1 file naming the cases never used for tuning.",
)
@click.option(
    "--objective",
    type=click.Choice(["quality", "cost"]),
    default="quality",
    show_default=True,
    help="Keep steps that raise pass rates, or that cut cost without losing any.",
)
@click.option(
    "--cost-metric",
    type=click.Choice(["auto", "cost", "tokens", "duration"]),
    default="auto",
    show_default=True,
)
@click.option(
    "--max-cost-ratio",
    type=float,
    default=1.0,
    show_default=True,
    help="With --objective cost, the final/baseline cost ratio a merge may reach.",
)
@click.option(
    "--stall-after",
    type=int,
    default=2,
    show_default=True,
    help="Triage a stall after this many steps in a row are rolled back.",
)
@click.option("--min-effect", type=float, help="The smallest pass-rate change you need to see.")
@click.option(
    "--harness",
    cls=_PathList,
    type=click.Path(path_type=Path),
    multiple=True,
    help="Files or folders scanned for verbatim case text (--harness A B ..., repeatable).",
)
@click.option("--format", "fmt", type=_FORMAT_CHOICE, default="auto", show_default=True)
@click.option("--threshold", type=float, default=1.0, show_default=True)
@click.option(
    "--output",
    type=click.Path(path_type=Path, file_okay=False),
    help="Write a new, self-verifying report folder here.",
)
@click.option(
    "--markdown",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Append the Markdown summary to this file.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the full review JSON instead of text.")
def hillclimb_review(
    baseline: Path,
    steps: tuple[Path, ...],
    held_out: Path,
    objective: str,
    cost_metric: str,
    max_cost_ratio: float,
    stall_after: int,
    min_effect: float | None,
    harness: tuple[Path, ...],
    fmt: str,
    threshold: float,
    output: Path | None,
    markdown: Path | None,
    as_json: bool,
) -> None:
    """Replay a hill climb (BASELINE, then each STEP tried); exit 0 only if a merge is
    recommended."""
    from evalarc.reports.hillclimb import HillclimbRequest, run_hillclimb_review
    from evalarc.reports.hillclimb_text import markdown_summary, terminal_lines
    from evalarc.review.hillclimb import HillclimbOptions

    options = HillclimbOptions(
        objective=objective,
        cost_metric=cost_metric,
        max_cost_ratio=max_cost_ratio,
        stall_after=stall_after,
        min_effect=min_effect,
    )
    request = HillclimbRequest(
        results=[baseline, *steps],
        held_out=held_out,
        options=options,
        format=fmt,
        threshold=threshold,
        harness=list(harness) if harness else None,
    )
    report = run_hillclimb_review(request, output)
    if markdown is not None:
        _append(markdown, markdown_summary(report))
    if as_json:
        echo(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    else:
        for line in terminal_lines(report, str(output) if output is not None else None):
            echo(line)
    merge = report.merge_recommended
    sys.exit(int(ExitCode.ACCEPTED if merge else ExitCode.REJECTED))


@main.command("hillclimb-run")
@click.argument("config", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--output",
    type=click.Path(path_type=Path, file_okay=False),
    required=True,
    help="A NEW folder outside the workspace for results, patches and the review.",
)
@click.option(
    "--trust-local",
    is_flag=True,
    help="Allow the configured commands to run on this host with your privileges.",
)
@click.option("--quiet", is_flag=True, help="Print only the final lines.")
def hillclimb_run(config: Path, output: Path, trust_local: bool, quiet: bool) -> None:
    """Drive a hill climb with CONFIG's evaluate and propose commands; exit 0 only if a merge
    is recommended."""
    from evalarc.reports.hillclimb_run import run_hillclimb_loop

    def show(line: str) -> None:
        if not quiet:
            echo(line)

    result = run_hillclimb_loop(config, output, trust_local=trust_local, on_line=show)
    for line in result.final_lines():
        echo(line)
    sys.exit(int(ExitCode.ACCEPTED if result.merge_recommended else ExitCode.REJECTED))


@main.command()
@click.argument("checkpoints", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--budget-seconds",
    type=float,
    required=True,
    help="The budget B the score area is integrated over and divided by (finite, > 0).",
)
@click.option(
    "--output",
    type=click.Path(path_type=Path, file_okay=False),
    help="Write a new, self-verifying report folder here.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the trajectory JSON instead of text.")
def trajectory(
    checkpoints: Path, budget_seconds: float, output: Path | None, as_json: bool
) -> None:
    """Integrate the left-step score curve of CHECKPOINTS (a JSON array of elapsed_seconds and
    evaluation) over the budget; exit 2 if any checkpoint is refused."""
    from evalarc.reports.trajectory import run_trajectory
    from evalarc.reports.trajectory_text import terminal_lines

    report = run_trajectory(checkpoints, budget_seconds, output)
    if as_json:
        echo(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    else:
        for line in terminal_lines(report, str(output) if output is not None else None):
            echo(line)
    sys.exit(int(ExitCode.ACCEPTED))


def _verified_lines(result: dict[str, Any]) -> list[str]:
    """What ``verify`` prints on success: that the records are consistent, what was checked,
    and, on a line of its own, the report's (or the site's) decision, which is separate."""
    lines = [
        f"Verified {result['kind']}: {len(result['files'])} evidence files; "
        "the records are consistent.",
        str(result["scope"]),
    ]
    reports = result.get("reports")
    if result["kind"] == "site" and isinstance(reports, list):
        failing = [str(entry["path"]) for entry in reports if not entry.get("passed")]
        if failing:
            names = ", ".join(path.rsplit("/", 1)[-1] for path in failing)
            lines.append(
                f"Verdicts: {len(failing)} of the site's {len(reports)} reports are failing "
                f"gates (their decision is no): {names}."
            )
        else:
            lines.append(f"Verdicts: all {len(reports)} of the site's reports pass their gates.")
    elif result["passed"]:
        lines.append("Verdict: the report's gate passes.")
    else:
        lines.append("Verdict: the report's gate is failing (its decision is no).")
    return lines


@main.command()
@click.argument("evidence", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print evalarc.verification.v1 JSON.")
@click.option(
    "--require-accepted",
    is_flag=True,
    help="Exit 1 when the records are consistent but the report's decision is no.",
)
@click.option(
    "--require-resolved",
    is_flag=True,
    help="Exit 1 when the records are consistent but the evaluated candidate is not fully "
    "resolved (2 when the run itself was invalid).",
)
def verify(evidence: Path, as_json: bool, require_accepted: bool, require_resolved: bool) -> None:
    """Recompute a report folder from its own inputs and options and compare."""
    from evalarc.verify import verification_failure, verify_report_folder

    try:
        result = verify_report_folder(evidence)
    except Exception as error:
        # Also an internal limit (the stack, memory, the filesystem) or a bug ends with a verdict
        # object: scripts that parse --json always get one.
        message = (
            error.message
            if isinstance(error, EvalArcError)
            else f"verification could not finish: {type(error).__name__}: {error}"
        )
        message = EvalArcError(message).message
        if as_json:
            echo(json.dumps(verification_failure(message), indent=2, ensure_ascii=False))
        echo(f"evalarc: verification failed: {message}", err=True)
        sys.exit(int(ExitCode.INVALID))
    if as_json:
        echo(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        for line in _verified_lines(result):
            echo(line)
    codes = [ExitCode.ACCEPTED]
    if require_resolved:
        if result.get("records_valid") is False:
            codes.append(ExitCode.INVALID)
        elif not result.get("fully_resolved", result["passed"]):
            codes.append(ExitCode.REJECTED)
    if require_accepted and not result["passed"]:
        codes.append(ExitCode.REJECTED)
    sys.exit(int(max(codes)))


# -- task packs: tasks, init, evaluate -------------------------------------------------------


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the packs as JSON.")
def tasks(as_json: bool) -> None:
    """List the bundled task packs (exit 2 if a pack folder cannot be loaded)."""
    from evalarc.reports.evaluation import task_lines, task_summaries

    summaries, problems = task_summaries()
    if as_json:
        echo(json.dumps(summaries, indent=2, ensure_ascii=False))
    else:
        for line in task_lines(summaries):
            echo(line)
    for problem in problems:
        echo(f"evalarc: {problem}", err=True)
    if problems:
        sys.exit(int(ExitCode.INVALID))


@main.command()
@click.argument("dest", type=click.Path(path_type=Path))
@click.option("--task", default="durable-kv", show_default=True, help="Task pack id.")
@click.option("--reference", is_flag=True, help="Write the known-good reference, not the starter.")
@click.option(
    "--language",
    type=click.Choice(["python", "javascript"]),
    default="python",
    show_default=True,
)
def init(dest: Path, task: str, reference: bool, language: str) -> None:
    """Create a new candidate workspace DEST with the task contract."""
    from evalarc.reports.evaluation import run_init

    result = run_init(dest, task=task, language=language, reference=reference)
    echo(f"Created {result.dest}")
    if result.hint:
        echo(result.hint)


class _SeedsCommand(click.Command):
    """Lets ``--seeds 17 41 97`` take every integer that follows it, like ``nargs='+'``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, _join_seeds(args))


def _join_seeds(args: list[str]) -> list[str]:
    joined: list[str] = []
    index = 0
    while index < len(args):
        joined.append(args[index])
        if args[index] == "--":
            joined.extend(args[index + 1 :])
            break
        if args[index] == "--seeds" and index + 1 < len(args):
            values = [args[index + 1]]
            index += 2
            while index < len(args) and _is_integer(args[index]):
                values.append(args[index])
                index += 1
            joined.append(" ".join(values))
            continue
        index += 1
    return joined


def _is_integer(text: str) -> bool:
    digits = text[1:] if text.startswith("-") else text
    return digits.isascii() and digits.isdigit()


def _parse_seeds(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> tuple[int, ...] | None:
    del ctx, param
    if value is None:
        return None
    texts = value.replace(",", " ").split()
    if not texts or not all(_is_integer(text) for text in texts):
        raise click.BadParameter(f"{value!r} is not a list of integers")
    return tuple(int(text) for text in texts)


def _check_recordings(backend: str, recordings: Path | None) -> None:
    if recordings is not None and backend != "replay":
        raise UsageError("--recordings is only for --backend replay")


def _event_printer(
    progress: bool, quiet: bool, line_of: Callable[[dict[str, Any]], str | None]
) -> Callable[[dict[str, Any]], None]:
    """Progress for evaluate and audit: JSON event lines with --progress, readable lines unless
    --quiet, nothing otherwise (all on stderr; stdout keeps the result)."""
    from evalarc.reports.run_folder import event_line

    def show(event: dict[str, Any]) -> None:
        if progress:
            echo(event_line(event), err=True)
        elif not quiet:
            line = line_of(event)
            if line is not None:
                echo(line, err=True)

    return show


@contextlib.contextmanager
def _final_event_on_failure(progress: bool) -> Iterator[None]:
    """With --progress, end the event stream with run_cancelled or run_error before the error
    propagates to the group's exit-code mapping."""
    from evalarc.reports.run_folder import event_line

    try:
        yield
    except KeyboardInterrupt:
        if progress:
            echo(event_line({"event": "run_cancelled"}), err=True)
        raise
    except EvalArcError as error:
        if progress:
            echo(event_line({"event": "run_error", "message": error.message}), err=True)
        raise


def _runtime_options(what: str) -> Callable[[F], F]:
    """The options ``evaluate`` and ``audit`` share: task, backend, image, recordings, seeds and
    time limits (one definition, so the two commands cannot drift apart)."""
    options = [
        click.option("--task", default="durable-kv", show_default=True, help="Task pack id."),
        click.option(
            "--backend",
            type=click.Choice(["docker", "local", "replay"]),
            default="docker",
            show_default=True,
            help=f"Where {what} run; local needs --trust-local; replay runs nothing and answers "
            "from recordings.",
        ),
        click.option("--trust-local", is_flag=True, help="Allow --backend local (runs host code)."),
        click.option(
            "--image",
            default=None,
            help="Docker image, used only if present locally (never pulled); JavaScript needs "
            "Node [default: python:3.12-slim; with replay: the recorded one].",
        ),
        click.option(
            "--recordings",
            type=click.Path(path_type=Path, file_okay=False),
            help="Recordings folder for --backend replay [default: the bundled recordings].",
        ),
        click.option(
            "--seeds",
            callback=_parse_seeds,
            metavar="SEED...",
            help="One or more distinct integer seeds [default: the pack's, 17 41 97].",
        ),
        click.option(
            "--timeout", type=float, default=10.0, show_default=True, help="Seconds per response."
        ),
        click.option(
            "--case-timeout", type=float, default=60.0, show_default=True, help="Seconds per case."
        ),
        click.option(
            "--startup-timeout",
            type=float,
            default=30.0,
            show_default=True,
            help="Seconds for Docker readiness.",
        ),
        click.option(
            "--jobs",
            type=int,
            default=None,
            help="Cases run at once on this machine [default: 2 per core; replay: 1].",
        ),
        click.option(
            "--executor",
            type=click.Choice(["threads", "ray"]),
            default="threads",
            show_default=True,
            help="Run cases here, or one Ray task per case on a cluster (pip install "
            "'evalarc[ray]'; every verdict is re-derived here).",
        ),
        click.option(
            "--ray-address",
            default=None,
            metavar="ADDR",
            help="The Ray cluster for --executor ray [default: RAY_ADDRESS, else a local one].",
        ),
        click.option(
            "--retry-infrastructure",
            type=int,
            default=0,
            show_default=True,
            metavar="N",
            help="Re-run a case whose infrastructure failed up to N more times (never a "
            "candidate fault or timeout); every attempt is kept in events.jsonl.",
        ),
    ]

    def apply(function: F) -> F:
        for option in reversed(options):
            function = option(function)
        return function

    return apply


@main.command(cls=_SeedsCommand)
@click.argument("candidate", type=click.Path(path_type=Path))
@_runtime_options("the candidate and its sessions")
@click.option(
    "--output",
    type=click.Path(path_type=Path),
    default=Path("runs") / "evaluate",
    show_default=True,
    help="A NEW report folder, outside the candidate folder.",
)
@click.option("--progress", is_flag=True, help="Stream evalarc.event.v1 JSON lines to stderr.")
@click.option("--quiet", is_flag=True, help="No progress lines on stderr.")
def evaluate(
    candidate: Path,
    task: str,
    backend: str,
    trust_local: bool,
    image: str | None,
    recordings: Path | None,
    seeds: tuple[int, ...] | None,
    timeout: float,
    case_timeout: float,
    startup_timeout: float,
    jobs: int | None,
    executor: str,
    ray_address: str | None,
    retry_infrastructure: int,
    output: Path,
    progress: bool,
    quiet: bool,
) -> None:
    """Run CANDIDATE against a task pack; exit 0 resolved, 1 not resolved, 2 invalid."""
    from evalarc.reports.backends import DEFAULT_IMAGE
    from evalarc.reports.evaluation import EvaluateOptions, progress_line, run_evaluate

    _check_recordings(backend, recordings)
    options = EvaluateOptions(
        task=task,
        backend=backend,
        trust_local=trust_local,
        image=image if image is not None or backend == "replay" else DEFAULT_IMAGE,
        seeds=seeds,
        timeout=timeout,
        case_timeout=case_timeout,
        startup_timeout=startup_timeout,
        recordings=recordings,
        jobs=jobs,
        executor=executor,
        ray_address=ray_address,
        retry_infrastructure=retry_infrastructure,
    )

    show = _event_printer(progress, quiet, progress_line)

    with _final_event_on_failure(progress):
        result = run_evaluate(candidate, output, options, on_event=show)
    _published(result.exit_code)
    for note in result.notes:
        echo(f"evalarc: {note}", err=True)
    echo(result.summary_line())
    echo(str(result.output))
    sys.exit(int(result.exit_code))


@main.command(cls=_SeedsCommand)
@_runtime_options("the controls")
@click.option(
    "--language",
    type=click.Choice(["python", "javascript"]),
    default="python",
    show_default=True,
    help="Which reference (and faulty variants) to run.",
)
@click.option(
    "--without-case",
    "without_cases",
    multiple=True,
    metavar="CASE_ID",
    help="Run the controls on the suite without this case (repeatable).",
)
@click.option(
    "--output",
    type=click.Path(path_type=Path),
    default=Path("runs") / "audit",
    show_default=True,
    help="A NEW report folder.",
)
@click.option("--progress", is_flag=True, help="Stream evalarc.event.v1 JSON lines to stderr.")
@click.option("--quiet", is_flag=True, help="No progress lines on stderr.")
def audit(
    task: str,
    language: str,
    backend: str,
    trust_local: bool,
    image: str | None,
    recordings: Path | None,
    seeds: tuple[int, ...] | None,
    without_cases: tuple[str, ...],
    timeout: float,
    case_timeout: float,
    startup_timeout: float,
    jobs: int | None,
    executor: str,
    ray_address: str | None,
    retry_infrastructure: int,
    output: Path,
    progress: bool,
    quiet: bool,
) -> None:
    """Run a pack's reference and every declared faulty variant; report how narrowly each fault
    is detected. Exit 0 passed, 1 a fault survived or the reference failed, 2 invalid."""
    from evalarc.reports.audit import AuditOptions, progress_line, run_audit
    from evalarc.reports.audit_text import summary_lines

    _check_recordings(backend, recordings)
    options = AuditOptions(
        task=task,
        language=language,
        backend=backend,
        trust_local=trust_local,
        image=image,
        seeds=seeds,
        timeout=timeout,
        case_timeout=case_timeout,
        startup_timeout=startup_timeout,
        without_cases=without_cases,
        recordings=recordings,
        jobs=jobs,
        executor=executor,
        ray_address=ray_address,
        retry_infrastructure=retry_infrastructure,
    )

    show = _event_printer(progress, quiet, progress_line)

    with _final_event_on_failure(progress):
        result = run_audit(output, options, on_event=show)
    _published(result.exit_code)
    for divergence in result.divergences:
        echo(f"evalarc: {divergence.describe()}", err=True)
    for grader in result.foreign_graders:
        echo(
            f"evalarc: replayed recordings made under grader {grader[:12]} through today's grader",
            err=True,
        )
    for note in result.notes:
        click.echo(f"evalarc: {note}", err=True)
    for line in summary_lines(result.audit):
        echo(line)
    echo(str(result.output))
    sys.exit(int(result.exit_code))


# -- the static site: build, serve ----------------------------------------------------------


@main.group(cls=_Group)
def site() -> None:
    """Build and serve the static review site (report pages, bundles, docs)."""


@site.command("build")
@click.argument(
    "reports", nargs=-1, required=True, type=click.Path(path_type=Path, file_okay=False)
)
@click.option(
    "--output",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="The new site folder (must not exist).",
)
@click.option(
    "--docs",
    "docs_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Render this folder's *.md files into the site.",
)
@click.option("--title", default="EvalArc reports", show_default=True, help="The index title.")
@click.option("--quiet", is_flag=True, help="Print only the final line.")
def site_build(
    reports: tuple[Path, ...], output: Path, docs_dir: Path | None, title: str, quiet: bool
) -> None:
    """Build a site from REPORTS (report folders, or folders holding them); every report is
    verified by recomputation first. Exit 0 when built, 2 when an input is refused."""
    from evalarc.site.build import SiteOptions, build_site

    def show(line: str) -> None:
        if not quiet:
            echo(line, err=True)

    built = build_site(
        list(reports), output, options=SiteOptions(title=title), docs_dir=docs_dir, on_report=show
    )
    _published(ExitCode.ACCEPTED)
    echo(
        f"Built {output}: {len(built.reports)} report(s), {built.failing} with a failing "
        f"verdict, {len(built.docs)} doc(s); open {output / 'index.html'}"
    )
    sys.exit(int(ExitCode.ACCEPTED))


@site.command("serve")
@click.argument(
    "reports", nargs=-1, required=True, type=click.Path(path_type=Path, file_okay=False)
)
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option(
    "--docs",
    "docs_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Render this folder's *.md files into the site.",
)
@click.option("--title", default="EvalArc reports", show_default=True, help="The index title.")
def site_serve(reports: tuple[Path, ...], port: int, docs_dir: Path | None, title: str) -> None:
    """Serve a site built from REPORTS on 127.0.0.1 and rebuild it when they change."""
    from evalarc.site.build import SiteOptions
    from evalarc.site.serve import SiteServer

    server = SiteServer(
        list(reports),
        port=port,
        docs_dir=docs_dir,
        options=SiteOptions(title=title),
        on_line=lambda line: echo(line, err=True),
    )
    url = server.start()
    bound = url.rstrip("/").rsplit(":", 1)[1]
    echo(f"Serving {url} (localhost only; Ctrl-C stops)")
    echo(f"From another machine: ssh -L {bound}:127.0.0.1:{bound} HOST")
    server.serve_forever()


# -- demo ----------------------------------------------------------------------------------


@main.command()
@click.option(
    "--output",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("site"),
    show_default=True,
    help="The new site folder (must not exist).",
)
@click.option("--quiet", is_flag=True, help="Print only the final lines.")
def demo(output: Path, quiet: bool) -> None:
    """Build the demo site from the bundled recordings and examples (no Docker, no model)."""
    from evalarc.demo import build_demo
    from evalarc.resources import bundled_dir

    def progress(line: str) -> None:
        if not quiet:
            echo(f"demo: {line}", err=True)

    result = build_demo(output, docs=bundled_dir("docs"), progress=progress)
    _published(ExitCode.ACCEPTED)
    echo(f"Built {len(result.reports)} reports and {len(result.site.docs)} docs into {output}")
    echo(f"Open {output / 'index.html'}; recompute it with: evalarc verify {output}")


if __name__ == "__main__":  # pragma: no cover
    main()
