"""Bounded JUnit reading: hostile and large valid JUnit files, measured against their targets.

    python bench/junit_bounds.py [--out bench/out/junit_bounds] [--valid-mib 150]

Writes the files (deterministic bytes), then runs ``evalarc`` on each in a child process and
prints exit code, wall and CPU seconds and the child's peak RSS (MB = 10^6 bytes) beside its
target:

- hostile: a 40 MiB file of 10 M empty elements under a suite, and the same elements inside a
  testcase's ``<system-out>``; 600,000 bare testcases (past the testcase cap): refused (exit 2)
  or finished within 60 s and 512 MB;
- valid, the most cases per byte (bare ``<testcase name="tN"/>``, 26 bytes each), each within
  2 x the size of its inputs + 100 MB: 450,000 against a small file with ``--json``,
  ``--output`` (then ``verify`` of that folder) and ``--junit``; two files of 450,000 (the same
  ids) and of 500,000 (the cap; one shuffled); two of 450,000 that each record a distinct
  duration (a failure in 1,000 on one side);
- a valid pair of two 150 MiB files (1 in 10 tests fails with a message and a stack trace,
  every test has captured output).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
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


def write_timed_testcases(path: Path, count: int, offset: int, failing_every: int = 0) -> None:
    """``count`` bare testcases, each with a distinct duration (``offset`` seconds plus a
    fraction), every ``failing_every``-th one failing."""
    with path.open("w", encoding="utf-8") as handle:
        handle.write('<testsuites><testsuite name="s">')
        for n in range(count):
            if failing_every and n % failing_every == 7:
                handle.write(
                    f'<testcase name="t{n}" time="{offset}.{n:06d}">'
                    f'<failure message="boom {n}">trace</failure></testcase>'
                )
            else:
                handle.write(f'<testcase name="t{n}" time="{offset}.{n:06d}"/>')
        handle.write("</testsuite></testsuites>\n")


def write_shuffled_testcases(path: Path, count: int) -> None:
    """``count`` bare testcases with distinct names, in a fixed shuffled order."""
    import random

    numbers = list(range(count))
    random.Random(1).shuffle(numbers)
    with path.open("w", encoding="utf-8") as handle:
        handle.write('<testsuites><testsuite name="s">')
        for start in range(0, count, 10_000):
            handle.write(
                "".join(f'<testcase name="t{n}"/>' for n in numbers[start : start + 10_000])
            )
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
    """Run ``evalarc`` with ``args`` in a child (its stdout thrown away): exit code, wall
    seconds, CPU seconds, peak RSS (MB = 10^6 bytes) and the last line it printed on stderr."""
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    seconds = time.monotonic() - start
    lines = done.stderr.strip().splitlines()
    cpu, peak_kb = (float(lines[-2]), float(lines[-1])) if len(lines) >= 2 else (0.0, 0.0)
    message = (lines[:-2] or [""])[-1][:160]
    return done.returncode, seconds, cpu, peak_kb * 1024 / 1e6, message


# The child runs the CLI and reports its own CPU seconds and peak RSS (ru_maxrss of this
# process alone) as the last two lines on stderr.
_CHILD = """
import resource, sys
from evalarc.cli import main
code = 0
try:
    main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code if isinstance(exit.code, int) else 1
usage = resource.getrusage(resource.RUSAGE_SELF)
sys.stderr.write(f"{usage.ru_utime + usage.ru_stime}\\n{usage.ru_maxrss}\\n")
sys.exit(code)
"""


def _mb(size_bytes: float) -> float:
    return size_bytes / 1e6


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
        "tiny_testcases_450k_b.xml": lambda p: write_tiny_testcases(p, 450_000),
        "tiny_testcases_500k.xml": lambda p: write_tiny_testcases(p, 500_000),
        "tiny_testcases_500k_shuffled.xml": lambda p: write_shuffled_testcases(p, 500_000),
        "timed_testcases_450k.xml": lambda p: write_timed_testcases(p, 450_000, 0),
        "timed_testcases_450k_b.xml": lambda p: write_timed_testcases(p, 450_000, 1, 1000),
        "valid_baseline.xml": lambda p: write_valid(p, options.valid_mib * MIB, 10),
        "valid_current.xml": lambda p: write_valid(p, options.valid_mib * MIB, 9),
    }
    for name, make in files.items():
        path = out / name
        if not path.exists():
            make(path)
    print(f"load average before: {os.getloadavg()[0]:.1f} (wall seconds grow with it; CPU do not)")
    print(f"{'run':58} {'in MB':>6} {'exit':>4} {'wall s':>7} {'cpu s':>6} {'peak MB':>7}  target")

    def row(label: str, args: list[str], inputs: list[Path], valid: bool) -> None:
        code, seconds, cpu, peak, message = measure(args)
        size = _mb(sum(path.stat().st_size for path in inputs))
        if valid:
            budget = 2 * size + 100
            verdict = "met" if peak <= budget and code in (0, 1) else "NOT MET"
            target = f"<= 2 x size + 100 = {budget:.0f} MB: {verdict}"
        else:
            verdict = "met" if seconds <= 60 and peak <= 512 else "NOT MET"
            target = f"exit 2 or 0/1 within 60 s and 512 MB: {verdict}"
        print(f"{label:58} {size:6.1f} {code:4d} {seconds:7.1f} {cpu:6.1f} {peak:7.0f}  {target}")
        if message:
            print(f"    {message}")

    for name in ("empty_elements_in_suite.xml", "empty_elements_in_output.xml"):
        row(f"diff {name} small.xml", ["diff", str(out / name), str(small)], [out / name], False)
    row(
        "diff tiny_testcases_600k.xml small.xml (past the cap)",
        ["diff", str(out / "tiny_testcases_600k.xml"), str(small)],
        [out / "tiny_testcases_600k.xml"],
        False,
    )
    big = out / "tiny_testcases_450k.xml"
    folder = out / "diff-450k"
    junit = out / "diff-450k.junit.xml"
    shutil.rmtree(folder, ignore_errors=True)
    junit.unlink(missing_ok=True)
    row("diff 450k small --json", ["diff", str(big), str(small), "--json"], [big, small], True)
    row(
        "diff 450k small --output DIR",
        ["diff", str(big), str(small), "--output", str(folder)],
        [big, small],
        True,
    )
    row("verify DIR (the 450k diff folder)", ["verify", str(folder)], [big, small], True)
    row(
        "diff 450k small --junit FILE",
        ["diff", str(big), str(small), "--junit", str(junit)],
        [big, small],
        True,
    )
    for label, first, second in (
        (
            "diff 450k 450k (the same ids) --json",
            "tiny_testcases_450k.xml",
            "tiny_testcases_450k_b.xml",
        ),
        (
            "diff 500k 500k shuffled (the cap) --json",
            "tiny_testcases_500k.xml",
            "tiny_testcases_500k_shuffled.xml",
        ),
        (
            "diff 450k 450k, each a duration --json",
            "timed_testcases_450k.xml",
            "timed_testcases_450k_b.xml",
        ),
        ("diff valid pair --json", "valid_baseline.xml", "valid_current.xml"),
    ):
        pair = [out / first, out / second]
        row(label, ["diff", str(pair[0]), str(pair[1]), "--json"], pair, True)
    self_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6
    print(f"(this script itself: {self_peak:.0f} MB)")


if __name__ == "__main__":
    main()
