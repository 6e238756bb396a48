"""Benchmark the result-file readers on hostile and large files, beside their targets and floor.

    .venv/bin/python bench/readers.py [--out DIR] [--samples 20000] [--tools-python PATH]
                                      [--skip-eval-pair]

Run it with the Python that has EvalArc installed (`evalarc` is taken from beside it).

1. Makes the inputs once under bench/out/readers/ with bench/reader_files.py: a 40 MiB promptfoo
   file of 14 M empty rows, one of 2.4 M rows carrying only a verdict, a 290 KB `.eval` whose
   one sample member inflates to 63 MiB of empty objects, and a valid promptfoo pair of 92,000
   rows each (about 370 MB together).
2. Measures `evalarc diff A B --json` per input in its own child process (wall time, CPU
   seconds, peak RSS from os.wait4); hostile inputs are killed after 120 s. Wall time follows
   the machine's load; CPU seconds are the steadier figure on a shared machine.
3. On the 20,000-sample `.eval` pair of bench/diff_large.py (made with the real inspect-ai,
   cached under bench/out/inspect-<samples>/; skip with --skip-eval-pair) it also measures the
   parse floor in the same run: a child that decompresses every member of both logs (with the
   same archive reader, Zstandard included) and parses it with orjson, doing nothing else;
   then `evalarc diff A B` and `evalarc diff A B --json` on that pair.

Targets: every hostile file refused (exit 2) or finished within 60 s and 512 MB; peak RSS on a
valid input <= 2x its size + 100 MB; the valid promptfoo pair <= 30 s; the `.eval` pair <= 2x
the parse floor's CPU seconds (both outputs). Exit status 0 when every measurement ran, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

import diff_large  # noqa: E402
import reader_files  # noqa: E402

MIB = 1024 * 1024
KILL_AFTER = 120.0
HOSTILE_SECONDS = 60.0
HOSTILE_BYTES = 512 * MIB

FLOOR = """
import sys, orjson
from pathlib import Path
from evalarc.formats.archive import SafeArchive
for path in sys.argv[1:]:
    with SafeArchive(Path(path)) as archive:
        for name in archive.names():
            if name.endswith(".json"):
                orjson.loads(archive.read(name))
"""


@dataclass(frozen=True)
class Run:
    exit_code: int
    wall: float
    cpu: float
    rss: int
    tail: str


def measure(argv: list[str], kill_after: float = KILL_AFTER) -> Run:
    """Run ``argv`` as a child, killed after ``kill_after`` seconds; its rusage from wait4."""
    with tempfile.TemporaryFile() as stderr:
        started = time.perf_counter()
        child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr)
        timer = threading.Timer(kill_after, child.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(child.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        stderr.seek(0)
        tail = stderr.read().decode("utf-8", "replace").strip().splitlines()
    return Run(
        exit_code=child.returncode,
        wall=wall,
        cpu=usage.ru_utime + usage.ru_stime,
        rss=usage.ru_maxrss * 1024,
        tail=tail[-1][:150] if tail else "",
    )


def ensure_inputs(out: Path) -> Path:
    folder = out / "readers"
    stamp = folder / "made.txt"
    if not stamp.exists():
        diff_large.log(f"making the reader inputs in {folder}")
        reader_files.main([str(folder)])
        stamp.write_text("made by bench/reader_files.py\n", encoding="utf-8")
    return folder


def line(label: str, run: Run, target: str, met: bool) -> str:
    return (
        f"| {label} | {run.exit_code} | {run.wall:.1f} s | {run.cpu:.1f} s | "
        f"{run.rss / MIB:.0f} MiB | {target} | {'yes' if met else 'NO'} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=BENCH_DIR / "out")
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--tools-python", help="A Python with inspect-ai (for the .eval pair).")
    parser.add_argument("--skip-eval-pair", action="store_true")
    args = parser.parse_args(argv)
    folder = ensure_inputs(args.out)
    evalarc = diff_large.evalarc_command()
    rows = [
        "| input | exit | wall | CPU | peak RSS | target | met |",
        "| --- | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    failed = False
    for name in ("promptfoo-empty-rows.json", "promptfoo-minimal-rows.json", "inflating.eval"):
        path = folder / name
        run = measure([*evalarc, "diff", str(path), str(path), "--json"])
        met = (
            run.exit_code in (0, 1, 2) and run.wall <= HOSTILE_SECONDS and run.rss <= HOSTILE_BYTES
        )
        failed = failed or run.exit_code not in (0, 1, 2)
        rows.append(line(f"hostile {name}", run, "refused or done, <= 60 s, <= 512 MiB", met))
        rows.append(f"|  ↳ {run.tail.replace('|', '/')} | | | | | | |")
    base = folder / "promptfoo-valid.baseline.json"
    cur = folder / "promptfoo-valid.current.json"
    size = base.stat().st_size + cur.stat().st_size
    # Valid input is never killed early: on a busy machine its wall time says little.
    run = measure([*evalarc, "diff", str(base), str(cur), "--json"], kill_after=1800)
    budget = 2 * size + 100 * MIB
    met = run.exit_code == 1 and run.wall <= 30 and run.rss <= budget
    failed = failed or run.exit_code != 1
    rows.append(
        line(
            f"valid promptfoo pair ({size / MIB:.0f} MiB, 92k rows each)",
            run,
            f"exit 1, <= 30 s, <= {budget / MIB:.0f} MiB",
            met,
        )
    )
    if not args.skip_eval_pair:
        tools = diff_large.ensure_tools_python(args.tools_python, args.out)
        logs = diff_large.ensure_logs(args.samples, tools, args.out)
        pair = [str(logs / "baseline.eval"), str(logs / "current.eval")]
        diff_large.warm_page_cache([Path(item) for item in pair])
        floor = measure([sys.executable, "-c", FLOOR, *pair], kill_after=1800)
        rows.append(line("parse floor: unzip + orjson every member", floor, "floor", True))
        for shown, extra in (("text", []), ("--json", ["--json"])):
            run = measure([*evalarc, "diff", *pair, *extra], kill_after=1800)
            rows.append(
                line(
                    f"{args.samples:,}-sample .eval pair, {shown}",
                    run,
                    f"CPU <= 2x floor = {2 * floor.cpu:.1f} s",
                    run.cpu <= 2 * floor.cpu,
                )
            )
            failed = failed or run.exit_code not in (0, 1)
        failed = failed or floor.exit_code != 0
    load = os.getloadavg()
    print(f"evalarc {diff_large.evalarc_revision()}, load average {load[0]:.1f} (2 cores shared?)")
    print("\n".join(rows))
    # A child's peak RSS is at least this process's size when it was started (Linux charges
    # a child the address space it was spawned from), so this bounds what the rows can inflate.
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"(this script itself: {own:.0f} MiB peak)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
