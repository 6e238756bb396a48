"""Every report kind EvalArc writes, in one plain tuple: ``verify`` recomputes a folder by its
``params.json`` kind, the site builder renders each bundle with its kind's page, and the CLI
names kinds from here. A new kind adds one line."""

from __future__ import annotations

from evalarc.reports import audit, diff, evaluation, health, hillclimb, trajectory
from evalarc.reports.kind import ReportKind

KINDS: tuple[ReportKind, ...] = (
    diff.KIND,
    health.KIND,
    hillclimb.KIND,
    evaluation.KIND,
    audit.KIND,
    trajectory.KIND,
)


def kind_named(name: object) -> ReportKind | None:
    """The kind ``params.json`` names, or None for a name EvalArc does not write."""
    for kind in KINDS:
        if kind.name == name:
            return kind
    return None
