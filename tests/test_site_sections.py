"""Everything a report holds has a place on its page.

One report folder of every kind (the bench's set, plus an Inspect diff with a cost gate) is built
into a site; for each page, every top-level key of its report JSON must either be shown by a
dedicated section (the page module's REPORT_SECTIONS names its id, and that id is on the page) or
be laid out in the page's "Also recorded" block (id ``record-<key>``).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType

import pytest

from evalarc.reports.registry import KINDS, kind_named
from evalarc.site.build import build_site

ROOT = Path(__file__).resolve().parents[1]
PAGE_MODULES = {
    "diff": "evalarc.pages.diff",
    "eval-health": "evalarc.pages.health",
    "hillclimb-review": "evalarc.pages.hillclimb",
    "evaluation": "evalarc.pages.evaluation",
    "audit": "evalarc.pages.audit",
    "trajectory": "evalarc.pages.trajectory",
}


def bench() -> ModuleType:
    name = "evalarc_bench_site"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / "site.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


class _Ids(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)


def page_ids(html: str) -> set[str]:
    scan = _Ids()
    scan.feed(html)
    return scan.ids


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("sections")
    reports = work / "reports"
    reports.mkdir()
    bench().make_reports(reports)
    inspect = ROOT / "recordings" / "examples" / "results-diff" / "inspect"
    done = subprocess.run(
        [sys.executable, "-m", "evalarc.cli", "diff", str(inspect / "baseline.eval"),
         str(inspect / "current.eval"), "--held-out", str(inspect / "split.json"),
         "--harness", str(inspect / "harness"), "--max-cost-ratio", "1.5",
         "--require-generalization", "--output", str(reports / "gated-diff")],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    site = work / "site"
    build_site([reports], site)
    return site


def test_every_report_kind_is_built(site: Path) -> None:
    manifest = json.loads((site / "manifest.json").read_text())
    built = {entry["kind"] for entry in manifest["reports"]}
    assert built == set(PAGE_MODULES) == {kind.name for kind in KINDS}


def test_every_top_level_key_has_a_place_on_its_page(site: Path) -> None:
    manifest = json.loads((site / "manifest.json").read_text())
    checked: dict[str, set[str]] = {}
    for entry in manifest["reports"]:
        bundle = site / entry["path"]
        kind = entry["kind"]
        module = importlib.import_module(PAGE_MODULES[kind])
        sections: dict[str, str] = module.REPORT_SECTIONS
        report = json.loads((bundle / kind_named(kind).report_file).read_text())
        ids = page_ids((bundle / "index.html").read_text(encoding="utf-8"))
        for key in report:
            if key in sections:
                assert sections[key] in ids, (entry["label"], key, sections[key])
            else:
                assert f"record-{key}" in ids, (entry["label"], key)
        checked.setdefault(kind, set()).update(report)
    # The diff pages show generalization, leakage, usage and the cost gate in their own sections.
    diff_page = importlib.import_module(PAGE_MODULES["diff"])
    for key in ("generalization", "leakage", "usage", "cost_gate", "groups", "changes"):
        assert key in checked["diff"] and key in diff_page.REPORT_SECTIONS, key


def test_the_gated_diff_page_shows_leak_locations_and_the_cost_limit(site: Path) -> None:
    html = (site / "reports" / "gated-diff" / "index.html").read_text(encoding="utf-8")
    assert "system-prompt.md:9" in html  # file:line of the leak
    assert "status-missing" in html  # the case it leaks
    assert "against the limit 1.5×" in html
    assert "held out gain within noise" in html
    assert "is not shown" in html  # --require-generalization and the verdict
