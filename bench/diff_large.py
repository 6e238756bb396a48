"""Benchmark `evalarc diff` on two 20,000-sample Inspect AI logs against inspect-ai's own reader.

    .venv/bin/python bench/diff_large.py [--samples 20000] [--tools-python PATH] [--out DIR]
                                         [--write-readme]

Run it with the Python that has EvalArc installed: `evalarc` is taken from beside it.

1. Makes the logs once, with the real inspect-ai package, and caches them under
   bench/out/inspect-<samples>/ (baseline and current, each as .json and .eval). inspect-ai is
   taken from --tools-python, or installed into a venv this script creates under bench/out/.
2. Measures, each in its own child process: `evalarc diff BASE CUR --json` (stdout to
   /dev/null) per log format, and inspect-ai's `read_eval_log` loading the same two files in one
   process. Wall time is measured around the child; peak memory is the child's ru_maxrss as
   reported by os.wait4.
3. Prints one table with both numbers and the evalarc/inspect ratios (target: <= 0.5 for both;
   wall time and peak RSS decide it). The child's CPU seconds (user + system, from the same
   rusage) are shown too: on a busy machine they move much less than wall time.

Exit status: 0 when every measurement ran (whether or not the target was met), 1 when a
measurement failed, 2 when the logs could not be made.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
GENERATOR = BENCH_DIR / "large_logs.py"
TARGET_RATIO = 0.5
START_MARK = "<!-- measured:start -->"
END_MARK = "<!-- measured:end -->"
FORMATS = ("json", "eval")

# Loads both logs fully (samples included) and checks the sample count, so a truncated log
# cannot make inspect-ai look fast.
INSPECT_READ = """
import sys
from inspect_ai.log import read_eval_log
expected = int(sys.argv[1])
for path in sys.argv[2:]:
    log = read_eval_log(path)
    if len(log.samples or []) != expected:
        sys.exit(f"{path}: {len(log.samples or [])} samples, expected {expected}")
"""


@dataclass(frozen=True)
class Measurement:
    label: str
    wall_seconds: float
    cpu_seconds: float
    peak_rss_bytes: int
    exit_code: int
    ok: bool
    stderr_tail: str


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def generator_digest() -> str:
    return hashlib.sha256(GENERATOR.read_bytes()).hexdigest()


def ensure_tools_python(given: str | None, out_dir: Path) -> Path:
    """A Python with inspect-ai: the one given, else a venv under out_dir (made on first use)."""
    if given:
        return Path(given)
    venv = out_dir / "tools-venv"
    python = venv / "bin" / "python"
    if not (python.exists() and _has_inspect(python)):
        log(f"creating {venv} with inspect-ai (kept apart from EvalArc's environment)")
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "inspect-ai"], check=True)
    return python


def _has_inspect(python: Path) -> bool:
    probe = subprocess.run(
        [str(python), "-c", "import inspect_ai"], capture_output=True, check=False
    )
    return probe.returncode == 0


def inspect_version(python: Path) -> str:
    result = subprocess.run(
        [str(python), "-c", "import inspect_ai; print(inspect_ai.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


def ensure_logs(samples: int, tools_python: Path, out_dir: Path) -> Path:
    """The cached log folder for ``samples``, made (both revisions in parallel) when missing or
    made by another version of the generator."""
    logs = out_dir / f"inspect-{samples}"
    stamp = logs / "made.json"
    wanted = {"samples": samples, "generator_sha256": generator_digest()}
    if stamp.exists() and json.loads(stamp.read_text()).get("made_by") == wanted:
        return logs
    partial = out_dir / f"inspect-{samples}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    log(f"making {samples:,}-sample Inspect logs in {logs} (takes minutes; cached afterwards)")
    started = time.perf_counter()
    children = [
        subprocess.Popen(
            [str(tools_python), str(GENERATOR), str(partial), str(samples), revision],
            stdout=subprocess.DEVNULL,
        )
        for revision in ("baseline", "current")
    ]
    if any(child.wait() != 0 for child in children):
        raise RuntimeError("the Inspect run that makes the logs failed (see its output above)")
    made = {
        "made_by": wanted,
        "inspect_ai": inspect_version(tools_python),
        "seconds": round(time.perf_counter() - started, 1),
    }
    (partial / "made.json").write_text(json.dumps(made, indent=2) + "\n")
    shutil.rmtree(logs, ignore_errors=True)
    partial.rename(logs)
    log(f"made the logs in {made['seconds']} s")
    return logs


def warm_page_cache(paths: list[Path]) -> None:
    """Read every input once so neither tool pays for the first read from disk."""
    for path in paths:
        with path.open("rb") as handle:
            while handle.read(1 << 24):
                pass


def measure(label: str, argv: list[str], accepted_exit_codes: set[int]) -> Measurement:
    with tempfile.TemporaryFile() as stderr:
        started = time.perf_counter()
        child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        stderr.seek(0)
        tail = stderr.read().decode("utf-8", "replace")[-2000:]
    # Linux reports ru_maxrss in KiB (macOS in bytes).
    scale = 1 if sys.platform == "darwin" else 1024
    return Measurement(
        label=label,
        wall_seconds=wall,
        cpu_seconds=usage.ru_utime + usage.ru_stime,
        peak_rss_bytes=usage.ru_maxrss * scale,
        exit_code=child.returncode,
        ok=child.returncode in accepted_exit_codes,
        stderr_tail=tail,
    )


def evalarc_revision() -> str:
    """The EvalArc commit measured (with `+dirty` for local changes), or `unknown`."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(BENCH_DIR), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(BENCH_DIR), "status", "--porcelain", "--", "evalarc"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+dirty" if dirty else "")


def evalarc_command() -> list[str]:
    script = Path(sys.executable).parent / "evalarc"
    if script.exists():
        return [str(script)]
    found = shutil.which("evalarc")
    if found:
        return [found]
    return [sys.executable, "-m", "evalarc.cli"]


def mib(value: int) -> str:
    return f"{value / (1 << 20):,.1f}"


def ratio(ours: float, theirs: float) -> str:
    return f"{ours / theirs:.2f}" if theirs > 0 else "n/a"


def table_lines(rows: list[tuple[str, Measurement, Measurement]]) -> list[str]:
    """The result table; a ratio row says whether evalarc meets the target for that format."""
    header = f"{'format':<7}{'program':<38}{'wall s':>9}{'peak RSS MiB':>14}{'CPU s':>9}"
    lines = [header, "-" * len(header)]
    for log_format, ours, theirs in rows:
        for item in (ours, theirs):
            lines.append(
                f"{log_format:<7}{item.label:<38}{item.wall_seconds:>9.2f}"
                f"{mib(item.peak_rss_bytes):>14}{item.cpu_seconds:>9.2f}"
            )
        if not (ours.ok and theirs.ok):
            verdict = "not compared: a measurement failed"
        elif (
            ours.wall_seconds <= TARGET_RATIO * theirs.wall_seconds
            and ours.peak_rss_bytes <= TARGET_RATIO * theirs.peak_rss_bytes
        ):
            verdict = f"meets the <= {TARGET_RATIO} target"
        else:
            verdict = f"misses the <= {TARGET_RATIO} target"
        lines.append(
            f"{log_format:<7}{'ratio evalarc / inspect-ai':<38}"
            f"{ratio(ours.wall_seconds, theirs.wall_seconds):>9}"
            f"{ratio(ours.peak_rss_bytes, theirs.peak_rss_bytes):>14}"
            f"{ratio(ours.cpu_seconds, theirs.cpu_seconds):>9}   {verdict}"
        )
    return lines


def write_readme(lines: list[str]) -> None:
    """Put ``lines`` between the `measured:` markers of bench/README.md."""
    readme = BENCH_DIR / "README.md"
    text = readme.read_text()
    head, rest = text.split(START_MARK, 1)
    _, tail = rest.split(END_MARK, 1)
    block = "\n".join(["```text", *lines, "```"])
    readme.write_text(f"{head}{START_MARK}\n{block}\n{END_MARK}{tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--tools-python", help="a Python with inspect-ai installed")
    parser.add_argument("--out", type=Path, default=BENCH_DIR / "out")
    parser.add_argument(
        "--write-readme",
        action="store_true",
        help="also put this run's table into bench/README.md (between its measured: markers)",
    )
    args = parser.parse_args(argv)
    out_dir: Path = args.out.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)

    try:
        tools_python = ensure_tools_python(args.tools_python, out_dir)
        logs = ensure_logs(args.samples, tools_python, out_dir)
    except (OSError, subprocess.CalledProcessError, RuntimeError) as error:
        log(f"diff_large: could not make the logs: {error}")
        return 2

    made = json.loads((logs / "made.json").read_text())
    before_load = " ".join(f"{value:.1f}" for value in os.getloadavg())
    revision = evalarc_revision()
    evalarc = evalarc_command()
    rows: list[tuple[str, Measurement, Measurement]] = []
    for log_format in FORMATS:
        baseline, current = logs / f"baseline.{log_format}", logs / f"current.{log_format}"
        warm_page_cache([baseline, current])
        # The current run loses passes on purpose, so a working diff exits 1 (gate failed).
        ours = measure(
            "evalarc diff BASE CUR --json",
            [*evalarc, "diff", str(baseline), str(current), "--json"],
            {1},
        )
        theirs = measure(
            "inspect-ai read_eval_log(BASE), (CUR)",
            [str(tools_python), "-c", INSPECT_READ, str(args.samples), str(baseline), str(current)],
            {0},
        )
        rows.append((log_format, ours, theirs))

    sizes = ", ".join(
        f"{path.name} {mib(path.stat().st_size)} MiB"
        for path in sorted(logs.iterdir())
        if path.suffix in (".json", ".eval") and path.stem in ("baseline", "current")
    )
    lines = [
        f"{args.samples:,} samples x 2 scorers, 1 epoch; EvalArc {revision}; "
        f"inspect-ai {made['inspect_ai']}; Python {sys.version.split()[0]}",
        f"{os.cpu_count()} CPUs; load average before the run: {before_load}",
        f"inputs: {sizes}",
        "",
        *table_lines(rows),
    ]
    print("\n".join(lines))
    failed = [item for _, *pair in rows for item in pair if not item.ok]
    for item in failed:
        print(
            f"\nFAILED: {item.label} exited {item.exit_code}\n{item.stderr_tail}", file=sys.stderr
        )
    if failed:
        return 1
    if args.write_readme:
        write_readme(lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
