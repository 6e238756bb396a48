"""Golden pages: one built page per report kind, compared byte for byte (tests/golden/README.md).

A site is built from one report of every kind the site renders (a diff, an eval-health review, a
hillclimb review, a hillclimb run, an evaluation and an audit replayed from the bundled
recordings, a score trajectory) with a fixed SOURCE_DATE_EPOCH, and each page is compared with
``tests/golden/<name>.html`` after the scrubbers below. A mismatch writes the page as built to
``tests/golden/<name>.actual.html`` (git-ignored) and fails with the first differing lines.

Update after an intended change of a page::

    EVALARC_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py
"""

from __future__ import annotations

import difflib
import os
import platform
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from evalarc import __version__
from evalarc.packs import materialize_workspace

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "recordings" / "examples"
GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("EVALARC_UPDATE_GOLDEN") == "1"
EPOCH = "1700000000"

PAGES = {
    "diff": "reports/diff/index.html",
    "eval-health": "reports/eval-health/index.html",
    "hillclimb-review": "reports/hillclimb-review/index.html",
    "hillclimb-run": "reports/hillclimb-run/index.html",
    "evaluation": "reports/evaluation/index.html",
    "audit": "reports/audit/index.html",
    "trajectory": "reports/trajectory/index.html",
    "index": "index.html",
}
"""Golden name -> the page of the built site. Every kind of the site's pages is here."""

SCRUBBERS: list[tuple[str, re.Pattern[str], str]] = [
    # Provenance of the machine that ran a command: its Python and platform.
    ("python", re.compile(re.escape(platform.python_version())), "<PYTHON>"),
    ("platform", re.compile(re.escape(platform.platform())), "<PLATFORM>"),
    # The package version, wherever a page names it.
    ("version", re.compile(re.escape(__version__)), "<VERSION>"),
]
"""What may differ between two correct builds of the same inputs, and how it is replaced.
Add one only for a value that must vary (a version, the machine's Python); never for a value
the same inputs should reproduce."""

PAGE_SCRUBBERS: dict[str, list[tuple[str, re.Pattern[str], str]]] = {}
"""Scrubbers for one page only (name -> scrubbers), with the same rule."""

Cli = Callable[..., Result]


def scrub(name: str, text: str) -> str:
    for _, pattern, replacement in [*SCRUBBERS, *PAGE_SCRUBBERS.get(name, [])]:
        text = pattern.sub(replacement, text)
    return text


def shared_assets_out(text: str) -> str:
    """Every page inlines the same stylesheet and script and allows them by hash; a golden
    holds a marker for each instead of its own copy, so the goldens show what is particular to
    a page. Only the exact asset bytes (and their exact CSP hashes) are replaced: a page that
    inlines anything else keeps it, and differs from its golden."""
    from evalarc.pages.render import _csp_hash, script, stylesheet

    for name, body in (("evalarc.css", stylesheet()), ("evalarc.js", script())):
        token = _csp_hash(body)
        text = text.replace(body, f"<INLINED assets/{name}>")
        text = text.replace(token, f"<HASH assets/{name}>")
        text = text.replace(token.replace("'", "&#39;"), f"<HASH assets/{name}>")
    return text


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, cli: Cli) -> Path:
    """The site of one report per kind, built the way a user builds it (the CLI)."""
    root = tmp_path_factory.mktemp("golden")
    reports = root / "reports"
    reports.mkdir()
    env = {"SOURCE_DATE_EPOCH": EPOCH}
    diff = EXAMPLES / "results-diff" / "inspect"
    hill = EXAMPLES / "hillclimb-review"
    results = sorted((hill / "results").glob("*.json"))
    assert results, hill

    def run(*args: str | Path, ok: tuple[int, ...] = (0, 1)) -> None:
        result = cli(*args, env=env)
        assert result.exit_code in ok, (args, result.output)

    run("diff", diff / "baseline.eval", diff / "current.eval", "--held-out", diff / "split.json",
        "--harness", diff / "harness", "--output", reports / "diff")
    run("eval-health", *results, "--output", reports / "eval-health")
    run("hillclimb-review", *results, "--held-out", hill / "split.json", "--objective", "cost",
        "--min-effect", "0.05", "--output", reports / "hillclimb-review")
    climb = root / "hillclimb-run-example"
    shutil.copytree(EXAMPLES / "hillclimb-run", climb)
    run("hillclimb-run", climb / "config.toml", "--output", reports / "hillclimb-run",
        "--trust-local")
    workspace = root / "candidate"
    materialize_workspace("support-routing", "python", reference=True, fault="new-key-on-retry",
                          dest=workspace, contract=False)
    run("evaluate", workspace, "--task", "support-routing", "--backend", "replay", "--seeds",
        "17", "--quiet", "--output", reports / "evaluation")
    run("audit", "--task", "support-routing", "--backend", "replay", "--seeds", "17", "--quiet",
        "--output", reports / "audit")
    run("trajectory", EXAMPLES / "trajectory" / "checkpoints.json", "--budget-seconds", "3600",
        "--output", reports / "trajectory")
    out = root / "site"
    run("site", "build", reports, "--output", out, "--quiet", ok=(0,))
    return out


def test_every_page_kind_has_a_golden_page() -> None:
    from evalarc.reports.registry import KINDS

    kinds = {name for name in PAGES if name not in ("index", "hillclimb-run")}
    assert kinds == {kind.name for kind in KINDS}, "add a report of the new kind to the golden site"


@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_matches_its_golden_copy(site: Path, name: str) -> None:
    built = site / PAGES[name]
    assert built.is_file(), f"the site has no {PAGES[name]}"
    actual = shared_assets_out(scrub(name, built.read_text(encoding="utf-8")))
    assert "<INLINED assets/evalarc.css>" in actual and "<INLINED assets/evalarc.js>" in actual
    golden = GOLDEN / f"{name}.html"
    mismatch = GOLDEN / f"{name}.actual.html"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        golden.write_text(actual, encoding="utf-8")
        mismatch.unlink(missing_ok=True)
        return
    assert golden.is_file(), (
        f"no golden page {golden.relative_to(ROOT)}; "
        "create it with EVALARC_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py"
    )
    expected = golden.read_text(encoding="utf-8")
    if actual == expected:
        mismatch.unlink(missing_ok=True)
        return
    mismatch.write_text(actual, encoding="utf-8")
    lines = difflib.unified_diff(
        expected.splitlines(), actual.splitlines(), str(golden.relative_to(ROOT)),
        str(mismatch.relative_to(ROOT)), n=1, lineterm="",
    )
    shown = "\n".join(line[:200] for line in list(lines)[:40])
    pytest.fail(
        f"{name} page differs from its golden copy; the built page is {mismatch.relative_to(ROOT)}"
        " (if the change is intended: EVALARC_UPDATE_GOLDEN=1 python -m pytest"
        f" tests/test_golden.py)\n{shown}",
        pytrace=False,
    )


def test_scrubbers_leave_the_pages_meaningful(site: Path) -> None:
    """A scrubber that matched nearly everything would make every golden comparison pass."""
    for name, relative in PAGES.items():
        text = (site / relative).read_text(encoding="utf-8")
        scrubbed = scrub(name, text)
        assert len(scrubbed) > 0.9 * len(text), name


def test_a_hillclimb_run_bundle_leaves_its_process_records_out(site: Path, cli: Cli) -> None:
    """The loop's log and patches cannot be recomputed, so the site never publishes them, and
    the site built without them verifies."""
    source = site.parent / "reports" / "hillclimb-run"
    assert (source / "loop.json").is_file() and (source / "config.toml").is_file()
    bundle = site / "reports" / "hillclimb-run"
    names = {p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file()}
    assert "params.json" in names
    for record in ("loop.json", "config.toml", "final.diff"):
        assert record not in names
    assert not any(name.startswith(("steps/", "original/")) for name in names)
    assert cli("verify", site).exit_code in (0, 1)
