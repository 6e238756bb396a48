"""Option bundles of the ``evalarc`` command line. Each bundle is a set of click options written
once and parsed into one frozen dataclass, which the command receives as a single keyword
argument (``@report_output_options(...)`` hands the command ``out: ReportOutput``), so two
commands offering the same options cannot drift apart in flags, defaults, help or refusals.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from evalarc.cli_emit import Emission, echo
from evalarc.errors import EvalArcError, UsageError
from evalarc.formats.registry import FORMAT_NAMES

F = TypeVar("F", bound=Callable[..., Any])
Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

FORMAT_CHOICE = click.Choice(["auto", *FORMAT_NAMES])
COST_METRIC_CHOICE = click.Choice(["auto", "cost", "tokens", "duration"])
LANGUAGE_CHOICE = click.Choice(["python", "javascript"])
REPORT_FOLDER_HELP = "Write a new, self-verifying report folder here."
MARKDOWN_HELP = "Append the Markdown summary to this file (e.g. $GITHUB_STEP_SUMMARY)."
THRESHOLD_HELP = "Numeric Inspect scores at or above this pass."


def version_option() -> Decorator:
    """``--version``: prints ``EvalArc <version>`` (the package metadata is read only then)."""

    def show(ctx: click.Context, param: click.Parameter, value: bool) -> None:
        del param
        if not value or ctx.resilient_parsing:
            return
        import evalarc

        click.echo(f"EvalArc {evalarc.__version__}", color=ctx.color)
        ctx.exit()

    return click.option(
        "--version",
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=show,
        help="Show the version and exit.",
    )


def stack(*options: Callable[[Any], Any]) -> Callable[[F], F]:
    """One decorator applying ``options`` in the order written (the order ``--help`` lists)."""

    def apply(function: F) -> F:
        for option in reversed(options):
            function = option(function)
        return function

    return apply


def bundle(keyword: str, parse: Callable[..., Any], *options: Callable[[Any], Any]) -> Decorator:
    """Add ``options`` to a command and hand it ``parse(**their values)`` as ``keyword`` instead
    of one parameter per option. ``parse`` may refuse a combination by raising an EvalArcError
    (exit 2, one line), before the command runs."""

    def decorate(function: F) -> F:
        names: list[str] = []

        @functools.wraps(function)
        def command(**values: Any) -> Any:
            own = {name: values.pop(name) for name in names}
            return function(**values, **{keyword: parse(**own)})

        before = len(getattr(command, "__click_params__", ()))
        stack(*options)(command)
        params: list[click.Parameter] = command.__click_params__  # type: ignore[attr-defined]
        names.extend(str(param.name) for param in params[before:])
        return command  # type: ignore[return-value]

    return decorate


# -- output: --output FOLDER, --markdown FILE, --json ----------------------------------------


def command_output(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """Callback of the option naming the folder a command publishes as its result: declared,
    so a cancel that arrives once it is published cannot undo the result (the command still
    exits with its own code; see :mod:`evalarc.cancel`)."""
    del param
    if value is not None and not ctx.resilient_parsing:
        from evalarc.cancel import declare_output

        declare_output(value)
    return value


@dataclass(frozen=True)
class ReportOutput(Emission):
    """Where a report command's result goes: a new report folder, the Markdown summary file,
    a JUnit XML file, JSON instead of text on stdout."""

    output: Path | None = None
    junit: Path | None = None

    @property
    def folder_name(self) -> str | None:
        """The report folder as the user gave it (for the final lines), or None."""
        return str(self.output) if self.output is not None else None


def report_output_options(
    json_help: str,
    *,
    folder: bool = True,
    markdown: bool = True,
    markdown_help: str = MARKDOWN_HELP,
    junit_help: str | None = None,
) -> Decorator:
    """``--output`` (a new report folder), ``--markdown`` (append the summary), ``--junit``
    (only with ``junit_help``) and ``--json``; the command receives ``out: ReportOutput``."""
    options: list[Callable[[Any], Any]] = []
    if folder:
        options.append(
            click.option(
                "--output",
                type=click.Path(path_type=Path, file_okay=False),
                callback=command_output,
                help=REPORT_FOLDER_HELP,
            )
        )
    if markdown:
        options.append(
            click.option(
                "--markdown", type=click.Path(path_type=Path, dir_okay=False), help=markdown_help
            )
        )
    if junit_help is not None:
        options.append(
            click.option(
                "--junit",
                type=click.Path(path_type=Path, dir_okay=False),
                callback=command_output,
                help=junit_help,
            )
        )
    options.append(click.option("--json", "as_json", is_flag=True, help=json_help))
    return bundle("out", ReportOutput, *options)


# -- result files: --format, --threshold -----------------------------------------------------


@dataclass(frozen=True)
class ResultFormat:
    """How result files are read: their format (``auto`` detects it) and the pass threshold
    for numeric Inspect scores."""

    fmt: str = "auto"
    threshold: float = 1.0


def result_format_options(
    format_help: str | None = None, threshold_help: str | None = None
) -> Decorator:
    """``--format`` and ``--threshold``; the command receives ``results_as: ResultFormat``."""
    return bundle(
        "results_as",
        ResultFormat,
        click.option(
            "--format",
            "fmt",
            type=FORMAT_CHOICE,
            default="auto",
            show_default=True,
            help=format_help,
        ),
        click.option(
            "--threshold", type=float, default=1.0, show_default=True, help=threshold_help
        ),
    )


def cost_metric_option() -> Decorator:
    return click.option("--cost-metric", type=COST_METRIC_CHOICE, default="auto", show_default=True)


def min_effect_option() -> Decorator:
    return click.option(
        "--min-effect", type=float, help="The smallest pass-rate change you need to see."
    )


class PathList(click.Option):
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


def harness_option() -> Decorator:
    """``--harness A B ...`` (repeatable): files or folders scanned for leaked case text."""
    return click.option(
        "--harness",
        cls=PathList,
        type=click.Path(path_type=Path),
        multiple=True,
        help="Files or folders scanned for verbatim case text (--harness A B ..., repeatable).",
    )


def harness_paths(harness: tuple[Path, ...]) -> list[Path] | None:
    """The ``--harness`` paths for a request (None when none was given: no leak scan)."""
    return list(harness) if harness else None


# -- executed runs: evaluate and audit -------------------------------------------------------


def task_option() -> Decorator:
    return click.option("--task", default="durable-kv", show_default=True, help="Task pack id.")


class SeedsCommand(click.Command):
    """Lets ``--seeds 17 41 97`` take every integer that follows it, like ``nargs='+'``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, join_seeds(args))


def join_seeds(args: list[str]) -> list[str]:
    """``args`` with the integers following ``--seeds`` joined into its one value."""
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


def parse_seeds(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> tuple[int, ...] | None:
    del ctx, param
    if value is None:
        return None
    texts = value.replace(",", " ").split()
    if not texts or not all(_is_integer(text) for text in texts):
        raise click.BadParameter(f"{value!r} is not a list of integers")
    return tuple(int(text) for text in texts)


@dataclass(frozen=True)
class RunOptions:
    """The options ``evaluate`` and ``audit`` share: the pack, where its cases run, seeds, time
    limits and the executor. Refuses ``--recordings`` without ``--backend replay``."""

    task: str
    backend: str
    trust_local: bool
    image: str | None
    recordings: Path | None
    seeds: tuple[int, ...] | None
    timeout: float
    case_timeout: float
    startup_timeout: float
    jobs: int | None
    executor: str
    ray_address: str | None
    retry_infrastructure: int
    ray_verify_sample: int | None = None

    def __post_init__(self) -> None:
        if self.recordings is not None and self.backend != "replay":
            raise UsageError("--recordings is only for --backend replay")

    def values(self) -> Mapping[str, Any]:
        """Every option by name: the shared fields of the library's EvaluateOptions and
        AuditOptions."""
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}


def run_options(what: str) -> Decorator:
    """The options of :class:`RunOptions` (``what`` names what runs, in ``--backend``'s help);
    the command receives ``run: RunOptions``. The command needs ``cls=SeedsCommand``."""
    return bundle(
        "run",
        RunOptions,
        task_option(),
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
            callback=parse_seeds,
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
            "--ray-verify-sample",
            type=int,
            default=None,
            metavar="N",
            help="With --executor ray, re-run N cases (chosen at random by this host) on a "
            "second node and void the run unless the transcripts agree [default: 4].",
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
    )


@dataclass(frozen=True)
class Progress:
    """How an executed run reports progress on stderr: ``evalarc.event.v1`` JSON lines
    (``--progress``), readable lines (the default), or nothing (``--quiet``). stdout keeps the
    result."""

    progress: bool = False
    quiet: bool = False

    def printer(
        self, line_of: Callable[[dict[str, Any]], str | None]
    ) -> Callable[[dict[str, Any]], None]:
        """The ``on_event`` callback: each event as a JSON line, as ``line_of(event)``, or not."""
        from evalarc.reports.run_folder import event_line

        def show(event: dict[str, Any]) -> None:
            if self.progress:
                echo(event_line(event), err=True)
            elif not self.quiet:
                line = line_of(event)
                if line is not None:
                    echo(line, err=True)

        return show

    @contextlib.contextmanager
    def final_event_on_failure(self) -> Iterator[None]:
        """With --progress, end the event stream with run_cancelled or run_error before the
        error propagates to the exit-code mapping."""
        from evalarc.reports.run_folder import event_line

        try:
            yield
        except KeyboardInterrupt:
            if self.progress:
                echo(event_line({"event": "run_cancelled"}), err=True)
            raise
        except EvalArcError as error:
            if self.progress:
                echo(event_line({"event": "run_error", "message": error.message}), err=True)
            raise


def progress_options() -> Decorator:
    """``--progress`` and ``--quiet``; the command receives ``progress: Progress``."""
    return bundle(
        "progress",
        Progress,
        click.option(
            "--progress", is_flag=True, help="Stream evalarc.event.v1 JSON lines to stderr."
        ),
        click.option("--quiet", is_flag=True, help="No progress lines on stderr."),
    )


def run_folder_option(default: Path, help_text: str) -> Decorator:
    """``--output``: the NEW report folder of an executed run."""
    return click.option(
        "--output",
        type=click.Path(path_type=Path),
        default=default,
        show_default=True,
        callback=command_output,
        help=help_text,
    )


# -- the static site -------------------------------------------------------------------------


@dataclass(frozen=True)
class SitePages:
    """What a site shows beside its reports: rendered docs and the index title."""

    docs_dir: Path | None = None
    title: str = "EvalArc reports"


def site_pages_options() -> Decorator:
    """``--docs`` and ``--title``; the command receives ``pages: SitePages``."""
    return bundle(
        "pages",
        SitePages,
        click.option(
            "--docs",
            "docs_dir",
            type=click.Path(path_type=Path, file_okay=False),
            help="Render this folder's *.md files into the site.",
        ),
        click.option(
            "--title", default="EvalArc reports", show_default=True, help="The index title."
        ),
    )


def quiet_option(help_text: str) -> Decorator:
    return click.option("--quiet", is_flag=True, help=help_text)
