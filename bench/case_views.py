"""Benchmark the diff page and its case views on the 20,000-sample Inspect pair of diff_large.

    .venv/bin/python bench/case_views.py [--samples 20000] [--tools-python PATH] [--out DIR]
                                         [--loads 3] [--opens 12] [--keep]
                                         [--log-format eval|json] [--logs DIR]

Run it with the Python that has EvalArc installed: `evalarc` is taken from beside it.

1. Takes the two `.eval` logs that bench/diff_large.py makes with the real inspect-ai (made once
   and cached under bench/out/inspect-<samples>/; see that script).
2. Times `evalarc diff BASE CUR --output`, `evalarc site build` of that folder and
   `evalarc verify` of the site (which renders every page and evidence chunk again), each as a
   child process.
3. Measures the diff page's bytes, the evidence chunks (count, largest, total) and the whole site
   folder against the two input logs.
4. In headless Chromium from file://: the time until the changed-checks table is usable (the
   page's "evalarc-ready" mark: navigation start to sortable, filterable, paged table), median
   and worst of --loads fresh loads; then --opens case views, each of a case in another chunk
   (so every open pays for loading and parsing its chunk), timed from the request (the URL hash
   set) to the view laid out (the "evalarc-case-open" mark).

Targets (issue 15): diff page <= 3 MB, table usable <= 1.5 s, any case view open <= 300 ms,
whole site folder <= 3x the two input logs. Prints one table with each figure beside its target.
Exit status: 0 when every measurement ran (met or not), 1 when one failed, 2 when the logs
could not be made.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

BENCH_DIR = Path(__file__).resolve().parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
PAGE_LIMIT = 3_000_000
USABLE_LIMIT_MS = 1500.0
OPEN_LIMIT_MS = 300.0
SITE_RATIO_LIMIT = 3.0


def diff_large() -> ModuleType:
    spec = importlib.util.spec_from_file_location("evalarc_bench_diff_large",
                                                  BENCH_DIR / "diff_large.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def folder_bytes(root: Path) -> int:
    return sum(path.stat().st_size for path in root.rglob("*") if path.is_file())


def timed(argv: list[str], ok: set[int]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode not in ok:
        raise RuntimeError(f"{' '.join(argv[:3])} exited {done.returncode}: {done.stderr[-800:]}")
    return elapsed


def browser_figures(page: Path, loads: int, opens: int) -> tuple[list[float], list[float]]:
    from playwright.sync_api import sync_playwright

    usable: list[float] = []
    open_ms: list[float] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        tab = None
        for _ in range(loads):
            tab = browser.new_page()
            tab.goto(page.as_uri(), wait_until="commit")
            tab.wait_for_selector("html[data-evalarc-ready]", timeout=120_000)
            usable.append(tab.evaluate(
                "performance.getEntriesByName('evalarc-ready')[0].startTime"))
            if len(usable) < loads:
                tab.close()
        assert tab is not None
        index = json.loads(tab.locator("#case-index").text_content() or "{}")
        cases, chunk_of = index["cases"], index["chunk_of"]
        chunks = len(index["chunks"])
        step = max(1, chunks // max(1, opens))
        wanted = []
        for chunk in range(0, chunks, step)[:opens]:
            wanted.append(cases[chunk_of.index(chunk)])
        for case_id in wanted:
            elapsed = tab.evaluate(
                """(id) => new Promise((resolve) => {
                     const start = performance.now();
                     const root = document.documentElement;
                     const seen = () => root.getAttribute('data-case-open') === id;
                     const done = () => {
                       const marks = performance.getEntriesByName('evalarc-case-open');
                       resolve(marks[marks.length - 1].startTime - start);
                     };
                     const observer = new MutationObserver(() => {
                       if (seen()) { observer.disconnect(); done(); }
                     });
                     observer.observe(document.documentElement, {attributes: true});
                     location.hash = '#case=' + encodeURIComponent(id);
                   })""",
                case_id,
            )
            open_ms.append(float(elapsed))
        browser.close()
    return usable, open_ms


def verdict(value: float, limit: float) -> str:
    return "met" if value <= limit else "NOT MET"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--tools-python", help="a Python with inspect-ai installed")
    parser.add_argument("--out", type=Path, default=BENCH_DIR / "out")
    parser.add_argument("--loads", type=int, default=3)
    parser.add_argument("--opens", type=int, default=12)
    parser.add_argument("--keep", action="store_true", help="keep the diff folder and the site")
    parser.add_argument("--log-format", choices=("eval", "json", "xml"), default="eval",
                        help="which of diff_large's log formats to diff (default: eval); "
                        "xml diffs a JUnit pair given with --logs")
    parser.add_argument("--logs", type=Path,
                        help="a folder already holding baseline.<format> and current.<format> "
                        "made by bench/large_logs.py (skips making them)")
    args = parser.parse_args(argv)
    large = diff_large()
    out_dir: Path = args.out.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        if args.logs is not None:
            logs = args.logs.resolve()
        else:
            tools_python = large.ensure_tools_python(args.tools_python, out_dir)
            logs = large.ensure_logs(args.samples, tools_python, out_dir)
    except (OSError, subprocess.CalledProcessError, RuntimeError) as error:
        print(f"case_views: could not make the logs: {error}", file=sys.stderr)
        return 2
    baseline = logs / f"baseline.{args.log_format}"
    current = logs / f"current.{args.log_format}"
    if not (baseline.is_file() and current.is_file()):
        print(f"case_views: {logs} lacks baseline/current.{args.log_format}", file=sys.stderr)
        return 2
    evalarc = large.evalarc_command()
    work = Path(tempfile.mkdtemp(prefix="evalarc-case-views-"))
    try:
        load_before = " ".join(f"{value:.1f}" for value in os.getloadavg())
        diff_s = timed([*evalarc, "diff", str(baseline), str(current), "--output",
                        str(work / "diff")], {1})
        build_s = timed([*evalarc, "site", "build", str(work / "diff"), "--output",
                         str(work / "site")], {0})
        verify_s = timed([*evalarc, "verify", str(work / "site")], {0, 1})
        bundle = work / "site" / "reports" / "diff"
        page = bundle / "index.html"
        chunk_files = sorted((bundle / "case-views").glob("*.js"))
        inputs = baseline.stat().st_size + current.stat().st_size
        site = folder_bytes(work / "site")
        usable, open_ms = browser_figures(page, args.loads, args.opens)
        report = json.loads((work / "diff" / "diff.json").read_text())
        page_bytes = page.stat().st_size
        rows = [
            ("diff page", f"{page_bytes / 1e6:.2f} MB", "<= 3 MB", verdict(page_bytes, PAGE_LIMIT)),
            ("table usable (median of loads)", f"{statistics.median(usable):.0f} ms",
             "<= 1500 ms", verdict(statistics.median(usable), USABLE_LIMIT_MS)),
            ("table usable (worst load)", f"{max(usable):.0f} ms", "<= 1500 ms",
             verdict(max(usable), USABLE_LIMIT_MS)),
            ("case view open (median)", f"{statistics.median(open_ms):.0f} ms", "<= 300 ms",
             verdict(statistics.median(open_ms), OPEN_LIMIT_MS)),
            ("case view open (worst)", f"{max(open_ms):.0f} ms", "<= 300 ms",
             verdict(max(open_ms), OPEN_LIMIT_MS)),
            ("site folder / input logs", f"{site / inputs:.2f}x ({site / 1e6:.1f} MB)",
             "<= 3x", verdict(site / inputs, SITE_RATIO_LIMIT)),
        ]
        print(f"{report['format']} pair of {report['baseline']['cases']:,} / "
              f"{report['current']['cases']:,} cases "
              f"({logs.name}/); {os.cpu_count()} CPUs; load average before: {load_before}")
        print(f"inputs: {baseline.name} {baseline.stat().st_size / 1e6:.1f} MB, {current.name} "
              f"{current.stat().st_size / 1e6:.1f} MB (together {inputs / 1e6:.1f} MB); "
              f"{len(report['changes']):,} changed checks, "
              f"{report['groups']['blocking_checks']:,} blocking in "
              f"{report['groups']['causes']} causes")
        print(f"evidence: {len(chunk_files)} chunks, largest "
              f"{max(p.stat().st_size for p in chunk_files) / 1e3:.0f} kB, total "
              f"{sum(p.stat().st_size for p in chunk_files) / 1e6:.1f} MB; diff {diff_s:.1f} s, "
              f"site build {build_s:.1f} s, verify site {verify_s:.1f} s (wall)")
        print(f"case-view opens: {len(open_ms)} (each a different chunk): "
              + ", ".join(f"{value:.0f}" for value in open_ms) + " ms")
        print()
        width = max(len(row[0]) for row in rows)
        print(f"{'figure':<{width}}  {'measured':<22}  {'target':<10}  verdict")
        for name, value, target, met in rows:
            print(f"{name:<{width}}  {value:<22}  {target:<10}  {met}")
        if args.keep:
            print(f"\nkept: {work}")
    except (OSError, RuntimeError, subprocess.CalledProcessError) as error:
        print(f"case_views: {error}", file=sys.stderr)
        return 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
