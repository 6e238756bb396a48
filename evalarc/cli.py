"""The ``evalarc`` command line: parse options, call one library function, map the result to an
exit code. Nothing else lives here (the library is tested directly; CLI tests check the mapping).
Shared options are bundles from :mod:`evalarc.cli_options`; every command ends in
:func:`evalarc.cli_emit.emit`. Library modules are imported inside the commands, so
``evalarc --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path

import click

from evalarc import cli_emit
from evalarc.cli_emit import Group, Outcome, cancelled_at_exit, echo, emit, start
from evalarc.cli_options import (
    LANGUAGE_CHOICE,
    THRESHOLD_HELP,
    Progress,
    ReportOutput,
    ResultFormat,
    RunOptions,
    SeedsCommand,
    SitePages,
    command_output,
    cost_metric_option,
    harness_option,
    harness_paths,
    min_effect_option,
    progress_options,
    quiet_option,
    report_output_options,
    result_format_options,
    run_folder_option,
    run_options,
    site_pages_options,
    task_option,
    version_option,
)
from evalarc.errors import ExitCode


def _accepted_if(passed: bool) -> ExitCode:
    return ExitCode.ACCEPTED if passed else ExitCode.REJECTED


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@version_option()
@click.option("--debug", is_flag=True, hidden=True, help="Show tracebacks instead of one line.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Review agent evaluations check by check instead of trusting a headline score."""
    start(ctx, debug=debug)


# -- reviews of result files: diff, eval-health, hillclimb-review, trajectory ----------------


@main.command()
@click.argument("baseline", type=click.Path(path_type=Path))
@click.argument("current", type=click.Path(path_type=Path))
@result_format_options("Format of both files.", THRESHOLD_HELP)
@report_output_options(
    "Print the full diff JSON instead of text.",
    junit_help="Write JUnit XML here: each blocking change a failed test, every other check a "
    "pass.",
)
@click.option(
    "--held-out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="An evalarc.case-split.v1 file naming held-out cases.",
)
@harness_option()
@click.option("--leak-min-chars", type=int, default=12, show_default=True)
@click.option("--max-cost-ratio", type=float, help="Fail when current/baseline cost exceeds R.")
@cost_metric_option()
@click.option(
    "--require-generalization",
    is_flag=True,
    help="Fail unless the held-out split shows a gain beyond noise and no leak.",
)
def diff(
    baseline: Path,
    current: Path,
    results_as: ResultFormat,
    out: ReportOutput,
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
    from evalarc.review.diff import DiffOptions

    options = DiffOptions(
        threshold=results_as.threshold,
        leak_min_chars=leak_min_chars,
        require_generalization=require_generalization,
        max_cost_ratio=max_cost_ratio,
        cost_metric=cost_metric,
    )
    request = DiffRequest(
        baseline=baseline,
        current=current,
        options=options,
        format=results_as.fmt,
        held_out=held_out,
        harness=harness_paths(harness),
    )
    # run_diff appends the Markdown summary itself (before the folder is published).
    report = run_diff(request, out.output, out.junit, out.markdown)
    lines = terminal_lines(report, out.folder_name)
    emit(Outcome(_accepted_if(report.passed), lines, report), out)


@main.command("eval-health")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@result_format_options("Format of every file.", THRESHOLD_HELP)
@click.option(
    "--saturation",
    type=float,
    default=0.95,
    show_default=True,
    help="Warn when the best file's pass rate reaches this.",
)
@min_effect_option()
@click.option("--ordered", is_flag=True, help="Files go from weaker to stronger configuration.")
@click.option(
    "--cases",
    type=click.Path(path_type=Path, dir_okay=False),
    help="An evalarc.case-manifest.v1 file declaring where cases came from.",
)
@click.option("--plan-attempts", type=int, help="Attempts per case for a planned run.")
@click.option("--plan-configs", type=int, help="Configurations for a planned run.")
@report_output_options("Print the full health JSON instead of text.")
@click.option("--require-healthy", is_flag=True, help="Exit 1 when there is any warning.")
def eval_health(
    results: tuple[Path, ...],
    results_as: ResultFormat,
    saturation: float,
    min_effect: float | None,
    ordered: bool,
    cases: Path | None,
    plan_attempts: int | None,
    plan_configs: int | None,
    out: ReportOutput,
    require_healthy: bool,
) -> None:
    """Judge whether 1-20 RESULT files of one evaluation can support tuning decisions."""
    from evalarc.reports.health import HealthRequest, run_health
    from evalarc.reports.health_text import markdown_summary, terminal_lines
    from evalarc.review.health import HealthOptions

    options = HealthOptions(
        threshold=results_as.threshold,
        saturation=saturation,
        min_effect=min_effect,
        ordered=ordered,
        plan_attempts=plan_attempts,
        plan_configs=plan_configs,
    )
    request = HealthRequest(
        inputs=list(results), options=options, format=results_as.fmt, cases=cases
    )
    report = run_health(request, out.output)
    code = _accepted_if(not require_healthy or report.healthy)
    lines = terminal_lines(report, out.folder_name)
    emit(Outcome(code, lines, report, markdown=markdown_summary(report)), out)


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
@cost_metric_option()
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
@min_effect_option()
@harness_option()
@result_format_options()
@report_output_options(
    "Print the full review JSON instead of text.",
    markdown_help="Append the Markdown summary to this file.",
)
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
    results_as: ResultFormat,
    out: ReportOutput,
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
        format=results_as.fmt,
        threshold=results_as.threshold,
        harness=harness_paths(harness),
    )
    report = run_hillclimb_review(request, out.output)
    code = _accepted_if(report.merge_recommended)
    lines = terminal_lines(report, out.folder_name)
    emit(Outcome(code, lines, report, markdown=markdown_summary(report)), out)


@main.command()
@click.argument("checkpoints", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--budget-seconds",
    type=float,
    required=True,
    help="The budget B the score area is integrated over and divided by (finite, > 0).",
)
@report_output_options("Print the trajectory JSON instead of text.", markdown=False)
def trajectory(checkpoints: Path, budget_seconds: float, out: ReportOutput) -> None:
    """Integrate the left-step score curve of CHECKPOINTS (a JSON array of elapsed_seconds and
    evaluation) over the budget; exit 2 if any checkpoint is refused."""
    from evalarc.reports.trajectory import run_trajectory
    from evalarc.reports.trajectory_text import terminal_lines

    report = run_trajectory(checkpoints, budget_seconds, out.output)
    emit(Outcome(ExitCode.ACCEPTED, terminal_lines(report, out.folder_name), report), out)


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
@quiet_option("Print only the final lines.")
def hillclimb_run(config: Path, output: Path, trust_local: bool, quiet: bool) -> None:
    """Drive a hill climb with CONFIG's evaluate and propose commands; exit 0 only if a merge
    is recommended."""
    from evalarc.reports.hillclimb_run import run_hillclimb_loop

    def show(line: str) -> None:
        if not quiet:
            echo(line)

    result = run_hillclimb_loop(config, output, trust_local=trust_local, on_line=show)
    emit(Outcome(_accepted_if(result.merge_recommended), result.final_lines()))


# -- verify ----------------------------------------------------------------------------------


@main.command()
@click.argument("evidence", type=click.Path(path_type=Path))
@report_output_options("Print evalarc.verification.v1 JSON.", folder=False, markdown=False)
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
def verify(
    evidence: Path, out: ReportOutput, require_accepted: bool, require_resolved: bool
) -> None:
    """Recompute a report folder from its own inputs and options and compare."""
    from evalarc.verify import verification_failure, verify_report_folder
    from evalarc.verify_text import failure_message, verified_lines

    try:
        result = verify_report_folder(evidence)
    except Exception as error:
        # Whatever stopped it, the command ends with a verdict object for scripts parsing --json.
        message = failure_message(error)
        failed = Outcome(
            ExitCode.INVALID,
            document=verification_failure(message),
            notes=[f"verification failed: {message}"],
        )
        emit(failed, out)
    codes = [ExitCode.ACCEPTED]
    if require_resolved:
        if result.get("records_valid") is False:
            codes.append(ExitCode.INVALID)
        elif not result.get("fully_resolved", result["passed"]):
            codes.append(ExitCode.REJECTED)
    if require_accepted and not result["passed"]:
        codes.append(ExitCode.REJECTED)
    emit(Outcome(max(codes), verified_lines(result), result), out)


# -- task packs: tasks, init, evaluate, audit ------------------------------------------------


@main.command()
@report_output_options("Print the packs as JSON.", folder=False, markdown=False)
def tasks(out: ReportOutput) -> None:
    """List the bundled task packs (exit 2 if a pack folder cannot be loaded)."""
    from evalarc.reports.evaluation import task_lines, task_summaries

    summaries, problems = task_summaries()
    code = ExitCode.INVALID if problems else ExitCode.ACCEPTED
    emit(Outcome(code, task_lines(summaries), summaries, notes=problems), out)


@main.command()
@click.argument("dest", type=click.Path(path_type=Path), callback=command_output)
@task_option()
@click.option("--reference", is_flag=True, help="Write the known-good reference, not the starter.")
@click.option("--language", type=LANGUAGE_CHOICE, default="python", show_default=True)
def init(dest: Path, task: str, reference: bool, language: str) -> None:
    """Create a new candidate workspace DEST with the task contract."""
    from evalarc.reports.evaluation import run_init

    result = run_init(dest, task=task, language=language, reference=reference)
    lines = [f"Created {result.dest}", *([result.hint] if result.hint else [])]
    emit(Outcome(ExitCode.ACCEPTED, lines))


@main.command(cls=SeedsCommand)
@click.argument("candidate", type=click.Path(path_type=Path))
@run_options("the candidate and its sessions")
@run_folder_option(Path("runs") / "evaluate", "A NEW report folder, outside the candidate folder.")
@progress_options()
def evaluate(candidate: Path, run: RunOptions, output: Path, progress: Progress) -> None:
    """Run CANDIDATE against a task pack; exit 0 resolved, 1 not resolved, 2 invalid."""
    from evalarc.reports.backends import DEFAULT_IMAGE
    from evalarc.reports.evaluation import EvaluateOptions, progress_line, run_evaluate

    image = run.image if run.image is not None or run.backend == "replay" else DEFAULT_IMAGE
    options = EvaluateOptions(**{**run.values(), "image": image})
    with progress.final_event_on_failure():
        result = run_evaluate(candidate, output, options, on_event=progress.printer(progress_line))
    lines = [result.summary_line(), str(result.output)]
    emit(Outcome(result.exit_code, lines, notes=result.notes, published=True))


@main.command(cls=SeedsCommand)
@run_options("the controls")
@click.option(
    "--language",
    type=LANGUAGE_CHOICE,
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
@run_folder_option(Path("runs") / "audit", "A NEW report folder.")
@progress_options()
def audit(
    run: RunOptions,
    language: str,
    without_cases: tuple[str, ...],
    output: Path,
    progress: Progress,
) -> None:
    """Run a pack's reference and every declared faulty variant; report how narrowly each fault
    is detected. Exit 0 passed, 1 a fault survived or the reference failed, 2 invalid."""
    from evalarc.reports.audit import AuditOptions, progress_line, run_audit
    from evalarc.reports.audit_text import summary_lines

    options = AuditOptions(**run.values(), language=language, without_cases=without_cases)
    with progress.final_event_on_failure():
        result = run_audit(output, options, on_event=progress.printer(progress_line))
    lines = [*summary_lines(result.audit), str(result.output)]
    emit(Outcome(result.exit_code, lines, notes=result.warnings(), published=True))


# -- the static site: build, serve; the demo -------------------------------------------------


@main.group(cls=Group)
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
    callback=command_output,
    help="The new site folder (must not exist).",
)
@site_pages_options()
@quiet_option("Print only the final line.")
def site_build(reports: tuple[Path, ...], output: Path, pages: SitePages, quiet: bool) -> None:
    """Build a site from REPORTS (report folders, or folders holding them); every report is
    verified by recomputation first. Exit 0 when built, 2 when an input is refused."""
    from evalarc.site.build import SiteOptions, build_site

    def show(line: str) -> None:
        if not quiet:
            echo(line, err=True)

    built = build_site(
        list(reports),
        output,
        options=SiteOptions(title=pages.title),
        docs_dir=pages.docs_dir,
        on_report=show,
    )
    line = (
        f"Built {output}: {len(built.reports)} report(s), {built.failing} with a failing "
        f"verdict, {len(built.docs)} doc(s); open {output / 'index.html'}"
    )
    emit(Outcome(ExitCode.ACCEPTED, [line], published=True))


@site.command("serve")
@click.argument(
    "reports", nargs=-1, required=True, type=click.Path(path_type=Path, file_okay=False)
)
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@site_pages_options()
def site_serve(reports: tuple[Path, ...], port: int, pages: SitePages) -> None:
    """Serve a site built from REPORTS on 127.0.0.1 and rebuild it when they change."""
    from evalarc.site.build import SiteOptions
    from evalarc.site.serve import SiteServer

    server = SiteServer(
        list(reports),
        port=port,
        docs_dir=pages.docs_dir,
        options=SiteOptions(title=pages.title),
        on_line=lambda line: echo(line, err=True),
    )
    url = server.start()
    bound = url.rstrip("/").rsplit(":", 1)[1]
    echo(f"Serving {url} (localhost only; Ctrl-C stops)")
    echo(f"From another machine: ssh -L {bound}:127.0.0.1:{bound} HOST")
    server.serve_forever()


@main.command()
@click.option(
    "--output",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("site"),
    show_default=True,
    callback=command_output,
    help="The new site folder (must not exist).",
)
@quiet_option("Print only the final lines.")
def demo(output: Path, quiet: bool) -> None:
    """Build the demo site from the bundled recordings and examples (no Docker, no model)."""
    from evalarc.demo import build_demo
    from evalarc.resources import bundled_dir

    def progress(line: str) -> None:
        if not quiet:
            echo(f"demo: {line}", err=True)

    result = build_demo(output, docs=bundled_dir("docs"), progress=progress)
    lines = [
        f"Built {len(result.reports)} reports and {len(result.site.docs)} docs into {output}",
        f"Open {output / 'index.html'}; recompute it with: evalarc verify {output}",
    ]
    emit(Outcome(ExitCode.ACCEPTED, lines, published=True))


def run() -> None:
    """The ``evalarc`` program: :func:`main` with one last guard. A cancelling signal that lands
    while a cancelled command is already exiting (after its cleanup and its "cancelled" line)
    would otherwise surface as an uncaught KeyboardInterrupt, and Python would report a death
    by SIGINT instead of exit 130."""
    cli_emit.PROGRAM_EXITS = True
    try:
        main()
    except KeyboardInterrupt:
        cancelled_at_exit()
    finally:
        cli_emit.PROGRAM_EXITS = False  # run in-process (a test), the process goes on


if __name__ == "__main__":  # pragma: no cover
    run()
