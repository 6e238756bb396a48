"""What ``evalarc trajectory`` prints: the terminal lines of a trajectory report."""

from __future__ import annotations

from evalarc.review.trajectory import format_seconds
from evalarc.review.trajectory_model import TrajectoryReport


def terminal_lines(report: TrajectoryReport, output: str | None) -> list[str]:
    """What ``evalarc trajectory`` prints without ``--json``."""
    first = report.first_resolved_seconds
    lines = [
        f"Trajectory: {report.checkpoint_count} checkpoint(s) over a "
        f"{format_seconds(report.budget_seconds)} s budget (times {report.clock_source})",
        f"Normalized score area: {report.normalized_score_area:.4f} | "
        f"Final score: {report.final_score:.4f} | First resolved: "
        + ("never" if first is None else f"{format_seconds(first)} s")
        + f" | Regressions: {len(report.regressions)}",
    ]
    for regression in report.regressions:
        lines.append(
            f"  regression at {format_seconds(regression.elapsed_seconds)} s: "
            f"{regression.before:.4f} -> {regression.after:.4f}"
        )
    lines.append("Not a METR time horizon: an observed score-area statistic over caller times.")
    if output is not None:
        lines.append(f"Report folder: {output}")
    return lines
