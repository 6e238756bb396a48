"""Bounded JUnit reading: hostile and large valid JUnit files, measured against their targets.

    python bench/junit_bounds.py [--out bench/out/junit_bounds] [--valid-mib 150]

Writes the files (deterministic bytes), then runs ``evalarc diff`` on each in a child process
and prints exit code, wall time and the child's peak RSS beside the target:

- a 40 MiB file of 10 M empty elements under a suite, and the same elements inside a
  testcase's ``<system-out>``: refused (exit 2) or finished within 60 s and 512 MB;
- the most cases per byte: 600,000 bare testcases (past the testcase cap) and 450,000 (within
  it): refused or finished within 60 s and 512 MB;
- a valid pair of two 150 MiB files (300 MiB together; 1 in 10 tests fails with a message and
  a stack trace, every test has captured output): finished with peak RSS <= 2 x 300 MiB + 100 MB.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

MIB = 1024 * 1024
HERE = Path(__file__).resolve().parent


def write_empty_elements(path: Path, inside_output: bool, count: int = 10_000_000) -> None:
    head = '<?xml version="1.0" encoding="utf-8"?>\n<testsuites><testsuite name="s">'
    tail = "</testsuite></testsuites>\n"
    if inside_output:
        head += '<testcase classname="c" name="t"><system-out>'
        tail = "</system-out></testcase>" + tail
    with path.open("w", encoding="utf-8") as handle:
        handle.write(head)
        block = "<a/>" * 100_000
        for _ in range(count // 100_000):
            handle.write(block)
        handle.write(tail)


def write_tiny_testcases(path: Path, count: int) -> None:
    """``count`` bare testcases with distinct names: the most cases per byte a file can name."""
    with path.open("w", encoding="utf-8") as handle:
        handle.write('<testsuites><testsuite name="s">')
        for start in range(0, count, 10_000):
            handle.write("".join(f'<testcase name="t{n}"/>' for n in range(start, start + 10_000)))
        handle.write("</testsuite></testsuites>\n")


def write_valid(path: Path, size: int, broken_every: int) -> None:
    """A pytest-shaped file of about ``size`` bytes: tests in modules, some failing."""
    trace = "".join(f"    frame {n}: in helper_{n}(value)\n" for n in range(30))
    output = "captured line of test output\n" * 10
    with path.open("w", encoding="utf-8") as handle:
        handle.write('<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests">')
        handle.write('<testsuite name="pytest" hostname="bench" timestamp="2026-01-01T00:00:00">')
        index = 0
        while handle.tell() < size:
            module = f"tests.pkg_{index // 5000:04d}.test_module_{index // 50:06d}"
            name = f"test_case_{index:08d}[param-{index % 7}]"
            handle.write(
                f'<testcase classname="{module}" name="{name}" time="0.{index % 997:03d}">'
            )
            if index % broken_every == 0:
                handle.write(
                    f'<failure message="AssertionError: value {index} != expected">{trace}'
                    "</failure>"
                )
            handle.write(f"<system-out>{output}</system-out></testcase>")
            index += 1
        handle.write("</testsuite></testsuites>\n")


def measure(args: list[str]) -> tuple[int, float, float, float, str]:
    """Run ``evalarc`` with ``args`` in a child: exit code, wall seconds, CPU seconds, peak RSS
    (MB) and the last line it printed on stderr."""
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, check=False
    )
    seconds = time.monotonic() - start
    lines = done.stdout.strip().splitlines()
    cpu, peak_kb = (float(lines[-2]), float(lines[-1])) if len(lines) >= 2 else (0.0, 0.0)
    message = (done.stderr.strip().splitlines() or [""])[-1][:160]
    return done.returncode, seconds, cpu, peak_kb / 1024, message


# The child runs the CLI and reports its own peak RSS (ru_maxrss of this process alone).
_CHILD = """
import resource, sys
from evalarc.cli import main
code = 0
try:
    main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code if isinstance(exit.code, int) else 1
usage = resource.getrusage(resource.RUSAGE_SELF)
print(usage.ru_utime + usage.ru_stime)
print(usage.ru_maxrss)
sys.exit(code)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "out" / "junit_bounds")
    parser.add_argument("--valid-mib", type=int, default=150, help="size of each valid file")
    options = parser.parse_args()
    out: Path = options.out
    out.mkdir(parents=True, exist_ok=True)
    small = out / "small.xml"
    write_valid(small, 20_000, 10)
    files = {
        "empty_elements_in_suite.xml": lambda p: write_empty_elements(p, inside_output=False),
        "empty_elements_in_output.xml": lambda p: write_empty_elements(p, inside_output=True),
        "tiny_testcases_600k.xml": lambda p: write_tiny_testcases(p, 600_000),
        "tiny_testcases_450k.xml": lambda p: write_tiny_testcases(p, 450_000),
        "valid_baseline.xml": lambda p: write_valid(p, options.valid_mib * MIB, 10),
        "valid_current.xml": lambda p: write_valid(p, options.valid_mib * MIB, 9),
    }
    for name, make in files.items():
        path = out / name
        if not path.exists():
            make(path)
    print(f"load average before: {os.getloadavg()[0]:.1f} (wall seconds grow with it; CPU do not)")
    print(f"{'input':30} {'MiB':>6} {'exit':>4} {'wall s':>7} {'cpu s':>6} {'peak MB':>7}  target")
    for name in (
        "empty_elements_in_suite.xml",
        "empty_elements_in_output.xml",
        "tiny_testcases_600k.xml",
        "tiny_testcases_450k.xml",
    ):
        path = out / name
        code, seconds, cpu, peak, message = measure(["diff", str(path), str(small)])
        size = path.stat().st_size / MIB
        print(
            f"{name:30} {size:6.1f} {code:4d} {seconds:7.1f} {cpu:6.1f} {peak:7.0f}  "
            "exit 2 or 0/1 within 60 s and 512 MB"
            + (
                f" (valid: <= 2 x size + 100 = {2 * size * MIB / 1e6 + 100:.0f} MB)"
                if "450k" in name
                else ""
            )
        )
        print(f"    {message}")
    base, cur = out / "valid_baseline.xml", out / "valid_current.xml"
    pair_mib = (base.stat().st_size + cur.stat().st_size) / MIB
    code, seconds, cpu, peak, message = measure(["diff", str(base), str(cur)])
    limit = 2 * pair_mib * MIB / 1e6 + 100
    print(
        f"{'valid pair (both files)':30} {pair_mib:6.1f} {code:4d} {seconds:7.1f} {cpu:6.1f} "
        f"{peak:7.0f}  exit 1, peak <= 2 x size + 100 MB = {limit:.0f} MB"
    )
    print(f"    {message}")
    self_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"(this script itself: {self_peak:.0f} MB)")


if __name__ == "__main__":
    main()
