"""Benchmark the static site: build time, `verify site/` time, and a 20,000-case diff page.

    python bench/site.py [--cases 20000] [--runs 3] [--loads 5] [--out DIR] [--keep]

1. Makes one report folder of every kind from the bundled examples (untimed): three results
   diffs (Inspect with held-out split and harness, promptfoo, JUnit), an eval-health and a
   hillclimb review of the hillclimb example, and an evaluation and an audit of the
   support-routing reference run with the local backend (our own reference code), and the
   trajectory example.
2. Times `evalarc site build` of those folders (plus docs/ when the checkout has it) and
   `evalarc verify` of the built site, each as a fresh process, median of --runs.
3. Writes two JUnit files of --cases cases where every case changes (odd cases fail in the
   baseline, even ones in the current run: the worst case for the changed-checks table), builds
   a site from their diff and measures the page bytes and, in Chromium from file://, the time
   until the table is usable: the page's "evalarc-ready" performance mark (navigation start to
   sortable, filterable, paginated table), median and worst of --loads fresh page loads; then
   the time to filter, sort and turn a page. A "long evidence" variant (82-character failure
   messages with quotes) shows how the size grows with evidence text.

Targets: build <= 3 s, verify <= 10 s, page <= 3 MB, usable <= 1.5 s. The machine's load
average and the CPU seconds of the build and verify processes are printed too: wall times on a
shared machine include waiting for a core.
Exit status: 0 when every measurement ran (met or not), 1 when one failed.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "recordings" / "examples"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TARGETS = {"build": 3.0, "verify": 10.0, "page_mb": 3.0, "usable": 1.5}
MB = 1_000_000


def evalarc_command() -> list[str]:
    return [sys.executable, "-m", "evalarc.cli"]


def run_evalarc(args: Sequence[str | Path], *, cwd: Path | None = None, ok: Sequence[int] = (0,),
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*evalarc_command(), *map(str, args)],
        cwd=cwd, capture_output=True, text=True, env=env, check=False,
    )
    if done.returncode not in ok:
        raise RuntimeError(f"evalarc {' '.join(map(str, args))}: exit {done.returncode}: "
                           f"{done.stderr.strip()[-500:]}")
    return done


# --------------------------------------------------------------------------- inputs


def make_reports(dest: Path) -> list[Path]:
    """One report folder of every kind under ``dest`` (which must exist); returns them."""
    diff = EXAMPLES / "results-diff"
    hill = EXAMPLES / "hillclimb-review"
    results = sorted((hill / "results").glob("*.json"))
    run_evalarc(["diff", diff / "inspect/baseline.eval", diff / "inspect/current.eval",
                 "--held-out", diff / "inspect/split.json", "--harness", diff / "inspect/harness",
                 "--output", dest / "inspect-diff"], ok=(0, 1))
    run_evalarc(["diff", diff / "promptfoo/baseline.json", diff / "promptfoo/current.json",
                 "--output", dest / "promptfoo-diff"], ok=(0, 1))
    run_evalarc(["diff", diff / "junit/baseline.xml", diff / "junit/current.xml",
                 "--output", dest / "junit-diff"], ok=(0, 1))
    run_evalarc(["eval-health", *results, "--output", dest / "health"], ok=(0, 1))
    run_evalarc(["hillclimb-review", *results, "--held-out", hill / "split.json",
                 "--objective", "cost", "--min-effect", "0.05", "--output", dest / "hillclimb"],
                ok=(0, 1))
    with tempfile.TemporaryDirectory() as work:
        workspace = Path(work) / "candidate"
        run_evalarc(["init", workspace, "--task", "support-routing", "--reference"])
        run_evalarc(["evaluate", workspace, "--task", "support-routing", "--backend", "local",
                     "--trust-local", "--seeds", "17", "--quiet", "--output",
                     dest / "evaluation"], ok=(0, 1))
    run_evalarc(["audit", "--task", "support-routing", "--backend", "local", "--trust-local",
                 "--seeds", "17", "--quiet", "--output", dest / "audit"], ok=(0, 1))
    run_evalarc(["trajectory", EXAMPLES / "trajectory" / "checkpoints.json",
                 "--budget-seconds", "3600", "--output", dest / "trajectory"], ok=(0, 1))
    return sorted(path for path in dest.iterdir() if path.is_dir())


def short_evidence(index: int) -> str:
    return f"expected queue-{index % 97:02d}, got queue-{(index * 7 + 3) % 97:02d}"


def long_evidence(index: int) -> str:
    return f"AssertionError: expected status 'resolved' for ticket T-{index:05d}, got 'open'"


def write_junit(path: Path, cases: int, failing: Callable[[int], bool],
                evidence: Callable[[int], str], name: Callable[[int], str] | None = None) -> None:
    parts = ['<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="tickets">']
    for index in range(cases):
        case = name(index) if name is not None else f"t{index:05d}"
        if failing(index):
            message = evidence(index)
            parts.append(
                f'<testcase classname="tickets" name={quoteattr(case)}>'
                f"<failure message={quoteattr(message)}>{escape(message)}</failure></testcase>"
            )
        else:
            parts.append(f'<testcase classname="tickets" name={quoteattr(case)}/>')
    parts.append("</testsuite></testsuites>")
    path.write_text("".join(parts), encoding="utf-8")


def write_junit_pair(dest: Path, cases: int, evidence: Callable[[int], str] = short_evidence,
                     name: Callable[[int], str] | None = None) -> tuple[Path, Path]:
    """Baseline fails the odd cases, current the even ones: every case changes."""
    dest.mkdir(parents=True, exist_ok=True)
    baseline, current = dest / "baseline.xml", dest / "current.xml"
    write_junit(baseline, cases, lambda index: index % 2 == 1, evidence, name)
    write_junit(current, cases, lambda index: index % 2 == 0, evidence, name)
    return baseline, current


# --------------------------------------------------------------------------- browser


@dataclass(frozen=True)
class PageTimes:
    usable_ms: list[float]
    filter_ms: float
    sort_ms: float
    next_page_ms: float
    rows_total: str


def launch_chromium(playwright: object) -> object:
    if not Path(CHROMIUM).exists():
        raise RuntimeError("Chromium is missing: apt-get install -y chromium")
    chromium = playwright.chromium  # type: ignore[attr-defined]
    return chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def time_table(page_url: str, loads: int, table: str = "#changed-checks") -> PageTimes:
    from playwright.sync_api import sync_playwright

    usable: list[float] = []
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        for load in range(loads):
            page = browser.new_page()  # type: ignore[attr-defined]
            page.goto(page_url, wait_until="commit")
            page.wait_for_selector("html[data-evalarc-ready]", timeout=60_000)
            usable.append(page.evaluate(
                "performance.getEntriesByName('evalarc-ready')[0].startTime"))
            if load < loads - 1:
                page.close()
        tools = page.locator(".table-tools").first
        count = tools.locator(".count")
        rows_total = count.text_content() or ""
        started = time.perf_counter()
        tools.locator("input").fill("t00017")
        page.wait_for_function(
            "el => el.textContent.startsWith('1 of')", arg=count.element_handle())
        filter_ms = (time.perf_counter() - started) * 1000
        tools.locator("input").fill("")
        page.wait_for_function(
            "el => !el.textContent.startsWith('1 of')", arg=count.element_handle())
        started = time.perf_counter()
        page.locator(f"{table} th button.sort").nth(1).click()
        page.wait_for_selector(f"{table} th[aria-sort]")
        sort_ms = (time.perf_counter() - started) * 1000
        status = page.locator(".page-status").first
        before = status.text_content()
        started = time.perf_counter()
        page.locator(".pager button", has_text="Next").first.click()
        page.wait_for_function("([el, text]) => el.textContent !== text",
                               arg=[status.element_handle(), before])
        next_page_ms = (time.perf_counter() - started) * 1000
        browser.close()  # type: ignore[attr-defined]
    return PageTimes(usable, filter_ms, sort_ms, next_page_ms, rows_total)


# --------------------------------------------------------------------------- main


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(action: Callable[[], object], cpu: list[float]) -> float:
    """Wall seconds of ``action``; the CPU seconds its child processes used go to ``cpu``."""
    cpu_before = _children_cpu()
    started = time.perf_counter()
    action()
    wall = time.perf_counter() - started
    cpu.append(_children_cpu() - cpu_before)
    return wall


def verdict(value: float, target: float) -> str:
    return "ok" if value <= target else "OVER"


def bench_big(work: Path, cases: int, loads: int, evidence: Callable[[int], str],
              label: str) -> tuple[float, PageTimes | None]:
    folder = work / label
    baseline, current = write_junit_pair(folder / "inputs", cases, evidence)
    run_evalarc(["diff", baseline, current, "--output", folder / "diff"], ok=(1,))
    run_evalarc(["site", "build", folder / "diff", "--output", folder / "site", "--quiet"])
    page = folder / "site" / "reports" / "diff" / "index.html"
    megabytes = page.stat().st_size / MB
    times = time_table(page.as_uri(), loads) if loads else None
    return megabytes, times


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--out", type=Path, help="work folder (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args(argv)
    work = args.out or Path(tempfile.mkdtemp(prefix="evalarc-bench-site-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SOURCE_DATE_EPOCH": "1798761600"}
    try:
        print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores",
              flush=True)
        reports_dir = work / "reports"
        if not reports_dir.is_dir():
            reports_dir.mkdir()
            print("making report folders (untimed) ...", file=sys.stderr, flush=True)
            make_reports(reports_dir)
        docs = ROOT / "docs"
        docs_args: list[str | Path] = ["--docs", docs] if docs.is_dir() else []
        builds: list[float] = []
        verifies: list[float] = []
        build_cpu: list[float] = []
        verify_cpu: list[float] = []
        for run in range(args.runs):
            site = work / f"site-{run}"
            shutil.rmtree(site, ignore_errors=True)
            builds.append(timed(lambda site=site: run_evalarc(
                ["site", "build", reports_dir, *docs_args, "--output", site, "--quiet"],
                env=env), build_cpu))
            verifies.append(timed(lambda site=site: run_evalarc(["verify", site], env=env),
                                  verify_cpu))
        names = sorted(path.name for path in reports_dir.iterdir() if path.is_dir())
        build_s, verify_s = statistics.median(builds), statistics.median(verifies)
        print(f"site of {len(names)} report folders ({', '.join(names)})")
        print(f"  build  (fresh process, median of {args.runs}): {build_s:6.2f} s  "
              f"[target <= {TARGETS['build']} s: {verdict(build_s, TARGETS['build'])}]"
              f"  runs: {', '.join(f'{value:.2f}' for value in builds)}; CPU "
              f"{statistics.median(build_cpu):.2f} s")
        print(f"  verify (fresh process, median of {args.runs}): {verify_s:6.2f} s  "
              f"[target <= {TARGETS['verify']} s: {verdict(verify_s, TARGETS['verify'])}]"
              f"  runs: {', '.join(f'{value:.2f}' for value in verifies)}; CPU "
              f"{statistics.median(verify_cpu):.2f} s")
        for label, evidence, loads in (("short-evidence", short_evidence, args.loads),
                                       ("long-evidence", long_evidence, args.loads)):
            megabytes, times = bench_big(work, args.cases, loads, evidence, label)
            print(f"{args.cases}-case diff, every case changed, {label}:")
            print(f"  page bytes: {megabytes:6.2f} MB  "
                  f"[target <= {TARGETS['page_mb']} MB: {verdict(megabytes, TARGETS['page_mb'])}]")
            if times is not None:
                usable = statistics.median(times.usable_ms) / 1000
                print(f"  time to usable table (median of {len(times.usable_ms)} loads): "
                      f"{usable:6.2f} s  [target <= {TARGETS['usable']} s: "
                      f"{verdict(usable, TARGETS['usable'])}]  loads: "
                      + ", ".join(f"{value / 1000:.2f}" for value in times.usable_ms)
                      + f" (best {min(times.usable_ms) / 1000:.2f})")
                print(f"  {times.rows_total}; filter {times.filter_ms:.0f} ms, "
                      f"sort {times.sort_ms:.0f} ms, next page {times.next_page_ms:.0f} ms")
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        return 0
    except (RuntimeError, OSError) as error:
        print(f"bench/site.py: {error}", file=sys.stderr)
        return 1
    finally:
        if not args.keep and args.out is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
