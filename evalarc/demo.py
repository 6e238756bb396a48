"""``evalarc demo``: build the whole demo site from saved material, with no Docker and no model.

Every executed run in it is a replay of the bundled Docker recordings (``recordings/``) through
today's graders; every offline review reads example result files made by the real tools
(``recordings/examples/``). The site therefore recomputes end to end with ``evalarc verify``.

What it contains:
- the three grader audits (durable-kv, support-routing, robot-evidence-review; seeds 17 41 97);
- the support regression: ``close-unresolved`` (0.90) against ``new-key-on-retry`` (0.9375) at
  seed 17 — two closure checks improve, one notes check is lost, and the gate fails;
- a diff of two real Inspect AI logs whose headline rose while three checks lost passes (with a
  held-out split and a harness leak scan), and eval-health over the same pair;
- a hill-climb review and a score trajectory built from real evaluations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evalarc.bundle import check_new_output
from evalarc.cancel import temporary_folder
from evalarc.packs import materialize_workspace
from evalarc.reports.audit import AuditOptions, run_audit
from evalarc.reports.diff import DiffRequest, run_diff
from evalarc.reports.evaluation import EvaluateOptions, run_evaluate
from evalarc.reports.health import HealthRequest, run_health
from evalarc.reports.hillclimb import HillclimbRequest, run_hillclimb_review
from evalarc.reports.trajectory import run_trajectory
from evalarc.resources import bundled_dir
from evalarc.review.diff import DiffOptions
from evalarc.review.health import HealthOptions
from evalarc.review.hillclimb import HillclimbOptions
from evalarc.site.build import BuiltSite, SiteOptions, build_site

DEMO_TITLE = "EvalArc demo: reviews recomputed from saved runs"
TRAJECTORY_BUDGET_SECONDS = 3600.0
SUPPORT_BASELINE = "close-unresolved"
SUPPORT_CURRENT = "new-key-on-retry"
PACKS = ("durable-kv", "support-routing", "robot-evidence-review")

Progress = Callable[[str], None]


def examples_dir() -> Path:
    """The example result files made with Inspect AI, promptfoo, pytest and EvalArc itself."""
    return bundled_dir("recordings") / "examples"


@dataclass(frozen=True)
class DemoResult:
    site: BuiltSite
    reports: list[str]


def build_demo(
    output: Path, *, docs: Path | None = None, progress: Progress | None = None
) -> DemoResult:
    """Write every demo report folder into a scratch folder, then build the site ``output``."""
    check_new_output(output)
    say = progress or (lambda _line: None)
    examples = examples_dir()
    # Not tempfile.TemporaryDirectory: a cancel can land between its mkdtemp and its finalizer,
    # or cut its removal short (see evalarc.cancel.temporary_folder).
    with temporary_folder("evalarc-demo-") as work:
        reports = work / "reports"
        reports.mkdir()
        for task in PACKS:
            say(f"audit {task} (replayed from recordings)")
            run_audit(reports / f"audit-{task}", AuditOptions(task=task, backend="replay"))

        say("support regression (seed 17, replayed)")
        evaluations = []
        (work / "workspaces").mkdir()
        for fault in (SUPPORT_BASELINE, SUPPORT_CURRENT):
            workspace = work / "workspaces" / fault
            materialize_workspace(
                "support-routing",
                "python",
                reference=True,
                fault=fault,
                dest=workspace,
                contract=False,
            )
            folder = reports / f"evaluation-support-{fault}"
            run_evaluate(
                workspace,
                folder,
                EvaluateOptions(task="support-routing", backend="replay", image=None, seeds=(17,)),
            )
            evaluations.append(folder / "evaluation.json")
        run_diff(
            DiffRequest(baseline=evaluations[0], current=evaluations[1], options=DiffOptions()),
            reports / "diff-support-regression",
        )

        inspect = examples / "results-diff" / "inspect"
        say("Inspect AI diff with a held-out split and a harness scan")
        run_diff(
            DiffRequest(
                baseline=inspect / "baseline.eval",
                current=inspect / "current.eval",
                options=DiffOptions(),
                held_out=inspect / "split.json",
                harness=[inspect / "harness"],
            ),
            reports / "diff-inspect-refund-policy",
        )
        say("eval-health of the same pair")
        run_health(
            HealthRequest(
                inputs=[inspect / "baseline.eval", inspect / "current.eval"],
                options=HealthOptions(min_effect=0.05, ordered=True),
                cases=inspect / "cases.json",
            ),
            reports / "eval-health-refund-policy",
        )
        climb = examples / "hillclimb-review"
        say("hill-climb review")
        run_hillclimb_review(
            HillclimbRequest(
                results=sorted((climb / "results").glob("0*.json")),
                held_out=climb / "split.json",
                options=HillclimbOptions(objective="cost", min_effect=0.05),
            ),
            reports / "hillclimb-ticket-routing",
        )
        say("score trajectory")
        run_trajectory(
            examples / "trajectory" / "checkpoints.json",
            TRAJECTORY_BUDGET_SECONDS,
            reports / "trajectory-durable-kv",
        )
        names = sorted(path.name for path in reports.iterdir())
        say("site")
        site = build_site([reports], output, options=SiteOptions(title=DEMO_TITLE), docs_dir=docs)
    return DemoResult(site=site, reports=names)
