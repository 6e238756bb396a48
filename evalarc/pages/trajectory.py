"""The trajectory page: a typed page model built from the trajectory report
(:class:`evalarc.review.trajectory_model.TrajectoryReport`), then rendered.

The model computes every number and every SVG coordinate (the left-step curve, its shaded area,
the budget line, ticks and markers); the template only lays them out, so the chart is testable
without HTML and needs no JavaScript. Colours are SVG presentation attributes based on
``currentColor`` (the page's CSP allows no inline ``style``), so the chart follows the theme.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from evalarc.pages.blocks import Card
from evalarc.pages.record_fields import RecordField, record_fields
from evalarc.pages.render import render_page
from evalarc.review.trajectory import format_seconds
from evalarc.review.trajectory_model import CheckpointRow as ReportCheckpoint
from evalarc.review.trajectory_model import TrajectoryIdentity, TrajectoryReport

MAX_ROWS = 1000
"""Checkpoint rows (and chart markers) rendered; the curve itself always uses every checkpoint."""

WIDTH = 720
HEIGHT = 320
LEFT, RIGHT, TOP, BOTTOM = 64, 24, 28, 56
"""Margins around the plot box, in SVG user units."""
X_OVERSHOOT = 1.05
"""The x axis runs a little past the budget so the budget line stands apart from the frame."""
Y_TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)


REPORT_SECTIONS: dict[str, str] = {
    "source": "overview",
    "budget_seconds": "overview",
    "normalized_score_area": "cards",
    "final_score": "cards",
    "final_resolved": "cards",
    "first_resolved_seconds": "cards",
    "regressions": "checkpoints",
    "checkpoint_count": "checkpoints",
    "checkpoints": "checkpoints",
    "identity": "comparability",
    "interpretation": "curve",
    "clock_source": "comparability",
}
"""Top-level keys of trajectory.json that a dedicated section shows -> its id; every other key is in
the page's "Also recorded" block (:mod:`evalarc.pages.record_fields`)."""
REPORT_FILE = "trajectory.json"


@dataclass(frozen=True)
class Tick:
    position: str
    """The tick's x (or y) coordinate in SVG units."""
    label: str


@dataclass(frozen=True)
class Marker:
    x: str
    y: str
    label: str
    regression: bool


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    plot_left: str
    plot_right: str
    plot_top: str
    plot_bottom: str
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    step_path: str
    """The left-step curve from t=0 to the budget."""
    area_path: str
    """The closed region under the curve up to the budget: the integrated score area."""
    budget_x: str
    budget_label: str
    markers: list[Marker]
    x_label: str
    y_label: str
    title: str
    description: str
    x_label_x: str
    x_label_y: str
    y_label_x: str
    y_label_y: str


@dataclass(frozen=True)
class CheckpointRow:
    number: int
    elapsed: str
    score: str
    resolved: str
    held_until: str
    area: str
    candidate: str
    note: str
    tone: str


@dataclass(frozen=True)
class IdentityRow:
    label: str
    value: str


@dataclass(frozen=True)
class TrajectoryPage:
    verdict: str
    """One sentence for the site index: the area, the final score and the regressions."""
    source_name: str
    source_sha256: str
    budget_text: str
    cards: list[Card]
    chart: Chart
    rows: list[CheckpointRow]
    hidden_rows: int
    identity: list[IdentityRow]
    clock_note: str
    interpretation: str
    record: list[RecordField] = field(default_factory=list)
    """Top-level report fields without a dedicated section."""


def nice_step(span: float, target_ticks: int = 6) -> float:
    """A 1, 2 or 5 times a power of ten step giving at most about ``target_ticks`` ticks."""
    raw = span / target_ticks
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 5.0, 10.0):
        if raw <= factor * power:
            return factor * power
    return 10.0 * power  # pragma: no cover - the loop always returns


def _coordinate(value: float) -> str:
    return f"{value:.2f}"


@dataclass(frozen=True)
class _Scale:
    budget: float

    @property
    def x_max(self) -> float:
        return self.budget * X_OVERSHOOT

    def x(self, seconds: float) -> float:
        return LEFT + (WIDTH - LEFT - RIGHT) * (seconds / self.x_max)

    def y(self, score: float) -> float:
        return HEIGHT - BOTTOM - (HEIGHT - TOP - BOTTOM) * score


def step_vertices(
    checkpoints: Sequence[ReportCheckpoint], budget: float
) -> list[tuple[float, float]]:
    """(seconds, score) corners of the left-step curve: zero until the first checkpoint, each
    score held until the next, the last held until the budget; never interpolated."""
    vertices = [(0.0, 0.0)]
    level = 0.0
    for point in checkpoints:
        elapsed = float(point.elapsed_seconds)
        vertices.append((elapsed, level))
        level = float(point.score)
        vertices.append((elapsed, level))
    vertices.append((budget, level))
    return vertices


def _path(points: Sequence[tuple[float, float]], scale: _Scale, close: bool) -> str:
    parts = [
        f"{'M' if index == 0 else 'L'}{_coordinate(scale.x(t))} {_coordinate(scale.y(s))}"
        for index, (t, s) in enumerate(points)
    ]
    return " ".join(parts) + (" Z" if close else "")


def build_chart(report: TrajectoryReport) -> Chart:
    budget = float(report.budget_seconds)
    scale = _Scale(budget)
    checkpoints = report.checkpoints
    vertices = step_vertices(checkpoints, budget)
    area = [*vertices, (budget, 0.0)]
    step = nice_step(budget)
    x_ticks = [
        Tick(_coordinate(scale.x(index * step)), format_seconds(index * step))
        for index in range(int(budget // step) + 1)
        if index * step <= budget
    ]
    y_ticks = [Tick(_coordinate(scale.y(value)), f"{value:g}") for value in Y_TICKS]
    regression_times = {float(item.elapsed_seconds) for item in report.regressions}
    markers = []
    for point in checkpoints[:MAX_ROWS]:
        elapsed = float(point.elapsed_seconds)
        regression = elapsed in regression_times
        label = f"{format_seconds(point.elapsed_seconds)} s: score {point.score:.4f}"
        label += ", resolved" if point.resolved else ""
        label += ", regression" if regression else ""
        markers.append(
            Marker(
                _coordinate(scale.x(elapsed)),
                _coordinate(scale.y(float(point.score))),
                label,
                regression,
            )
        )
    budget_text = format_seconds(report.budget_seconds)
    source = report.source.name
    description = (
        f"Left-step score curve of {report.checkpoint_count} checkpoint(s) from {source}: "
        f"zero until {format_seconds(checkpoints[0].elapsed_seconds)} s, final score "
        f"{report.final_score:.4f} held until the {budget_text} s budget; the shaded area is "
        f"{report.normalized_score_area:.4f} of the budget."
    )
    plot_bottom = HEIGHT - BOTTOM
    return Chart(
        width=WIDTH,
        height=HEIGHT,
        plot_left=_coordinate(LEFT),
        plot_right=_coordinate(WIDTH - RIGHT),
        plot_top=_coordinate(TOP),
        plot_bottom=_coordinate(plot_bottom),
        x_ticks=x_ticks,
        y_ticks=y_ticks,
        step_path=_path(vertices, scale, close=False),
        area_path=_path(area, scale, close=True),
        budget_x=_coordinate(scale.x(budget)),
        budget_label=f"budget {budget_text} s",
        markers=markers,
        x_label=f"elapsed seconds ({report.clock_source})",
        y_label="score",
        title="Score over elapsed time",
        description=description,
        x_label_x=_coordinate(LEFT + (WIDTH - LEFT - RIGHT) / 2),
        x_label_y=_coordinate(HEIGHT - 12),
        y_label_x=_coordinate(16),
        y_label_y=_coordinate(TOP + (HEIGHT - TOP - BOTTOM) / 2),
    )


def _score(value: float) -> str:
    return f"{value:.4f}"


def _identity_rows(identity: TrajectoryIdentity) -> list[IdentityRow]:
    task = identity.task
    runtime = identity.runtime
    command = runtime.get("command")
    return [
        IdentityRow("task", f"{task['id']} {task['version']} ({task.get('split', 'no split')})"),
        IdentityRow("evaluation schema", identity.schema_version),
        IdentityRow("grader_sha256", identity.grader_sha256),
        IdentityRow("cases_sha256", identity.cases_sha256),
        IdentityRow("seeds", ", ".join(str(seed) for seed in identity.seeds)),
        IdentityRow(
            "weights",
            ", ".join(f"{name} {weight:g}" for name, weight in identity.weights.items()),
        ),
        IdentityRow(
            "command", json.dumps(command, ensure_ascii=False) if command is not None else "—"
        ),
        IdentityRow("runtime", json.dumps(runtime, sort_keys=True, ensure_ascii=False)),
    ]


def build_trajectory_page(report: TrajectoryReport) -> TrajectoryPage:
    regressions = report.regressions
    first = report.first_resolved_seconds
    cards = [
        Card(_score(report.normalized_score_area), "normalized score area"),
        Card(
            _score(report.final_score),
            "final score" + (" (resolved)" if report.final_resolved else ""),
        ),
        Card("never" if first is None else f"{format_seconds(first)} s", "first resolved"),
        Card(str(len(regressions)), "regressions (score fell)", alert=bool(regressions)),
        Card(str(report.checkpoint_count), "checkpoints"),
    ]
    regression_times = {float(item.elapsed_seconds) for item in regressions}
    rows = []
    for number, point in enumerate(report.checkpoints[:MAX_ROWS], start=1):
        regression = float(point.elapsed_seconds) in regression_times
        rows.append(
            CheckpointRow(
                number=number,
                elapsed=format_seconds(point.elapsed_seconds),
                score=_score(point.score),
                resolved="yes" if point.resolved else "no",
                held_until=format_seconds(point.held_until_seconds),
                area=f"{point.score_area:.6g}",
                candidate=point.candidate_sha256 or "—",
                note="regression" if regression else "",
                tone="bad" if regression else "ok",
            )
        )
    budget_text = format_seconds(report.budget_seconds)
    count = len(regressions)
    verdict = (
        f"Normalized score area {_score(report.normalized_score_area)} over {budget_text} s; "
        f"final score {_score(report.final_score)}, "
        + ("never resolved" if first is None else f"first resolved at {format_seconds(first)} s")
        + f", {count} regression{'' if count == 1 else 's'}"
    )
    return TrajectoryPage(
        record=record_fields(report.to_json(), REPORT_SECTIONS, REPORT_FILE),
        verdict=verdict,
        source_name=report.source.name,
        source_sha256=report.source.sha256,
        budget_text=budget_text,
        cards=cards,
        chart=build_chart(report),
        rows=rows,
        hidden_rows=max(0, len(report.checkpoints) - MAX_ROWS),
        identity=_identity_rows(report.identity),
        clock_note=(
            f"Elapsed times are {report.clock_source} and not authenticated; the budget is "
            f"{budget_text} s."
        ),
        interpretation=report.interpretation,
    )


def render_trajectory_page(report: TrajectoryReport) -> str:
    return render_page(
        "trajectory.html.j2", title="Score trajectory", page=build_trajectory_page(report)
    )
