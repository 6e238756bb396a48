"""Benchmark `evalarc --help` startup beside its floor: Python importing click and printing a
click group's help, which any click command line pays.

    .venv/bin/python bench/cli_startup.py [--runs 30]

Run it with the Python that has EvalArc installed. Each measurement is a child process, the two
programs interleaved run by run so both see the same machine load; the table gives the minimum
and the median wall time (the minimum is the steadier figure on a shared machine), the CPU
seconds of the fastest run, and how many modules (and how many `evalarc` modules) the child
imported. Target: the minimum of `evalarc --help` <= 2x the floor's, and no `evalarc` module
beyond the command line's own (cli, cli_options, cli_emit) and the base ones they need
(errors, terminal). Exit status 1 when a child failed or the module target is missed; a missed
time target is reported, not turned into a failure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field

HELP = (
    "import json, sys\n"
    "from evalarc.cli import main\n"
    "try:\n"
    "    main(['--help'])\n"
    "except SystemExit as exit:\n"
    "    code = exit.code\n"
    "names = sorted(m for m in sys.modules if m.startswith('evalarc'))\n"
    "print(json.dumps([len(sys.modules), names]), file=sys.stderr)\n"
    "sys.exit(code)\n"
)
FLOOR = (
    "import json, sys\n"
    "import click\n"
    "@click.group()\n"
    "def main() -> None:\n"
    "    'A group.'\n"
    "try:\n"
    "    main(['--help'])\n"
    "except SystemExit as exit:\n"
    "    code = exit.code\n"
    "print(json.dumps([len(sys.modules), []]), file=sys.stderr)\n"
    "sys.exit(code)\n"
)
ALLOWED = {
    "evalarc",
    "evalarc.cli",
    "evalarc.cli_emit",
    "evalarc.cli_options",
    "evalarc.errors",
    "evalarc.terminal",
}


@dataclass
class Series:
    name: str
    walls: list[float] = field(default_factory=list)
    cpu_of_fastest: float = 0.0
    modules: int = 0
    evalarc_modules: list[str] = field(default_factory=list)


def measure(program: str, series: Series) -> None:
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", program],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=os.path.dirname(os.path.abspath(__file__)),
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    stderr = child.stderr.read() if child.stderr is not None else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{series.name}: the child failed: {stderr.strip()}")
    count, names = json.loads(stderr.strip().splitlines()[-1])
    if not series.walls or wall < min(series.walls):
        series.cpu_of_fastest = usage.ru_utime + usage.ru_stime
    series.walls.append(wall)
    series.modules = int(count)
    series.evalarc_modules = [str(name) for name in names]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    help_series, floor_series = Series("evalarc --help"), Series("floor: click group --help")
    for _ in range(args.runs):
        measure(HELP, help_series)
        measure(FLOOR, floor_series)
    print(f"{'program':<28} {'min ms':>7} {'median ms':>10} {'cpu ms':>7} {'modules':>8}")
    for series in (help_series, floor_series):
        print(
            f"{series.name:<28} {min(series.walls) * 1000:>7.0f} "
            f"{statistics.median(series.walls) * 1000:>10.0f} "
            f"{series.cpu_of_fastest * 1000:>7.0f} {series.modules:>8}"
        )
    ratio = min(help_series.walls) / min(floor_series.walls)
    print(f"ratio of minimums: {ratio:.2f} (target <= 2.00: {'met' if ratio <= 2 else 'missed'})")
    extra = sorted(set(help_series.evalarc_modules) - ALLOWED)
    print(f"evalarc modules loaded by --help: {', '.join(help_series.evalarc_modules)}")
    if extra:
        print(f"target missed: --help also loads {', '.join(extra)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
