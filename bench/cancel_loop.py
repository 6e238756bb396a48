"""Cancel writing commands at random moments, many times, under CPU load; count what went wrong.

    python bench/cancel_loop.py                       # this checkout
    python bench/cancel_loop.py --before 02e2ab8      # also that commit, same runs
    python bench/cancel_loop.py --diff-runs 60 --demo-runs 20 --burners 2

Two loops per EvalArc, each started as tests/test_signals.py starts a command
(``python -m evalarc.cli``, its own process group, its own empty TMPDIR):

* ``diff --output`` of a 2,000-case JUnit pair (made by ``bench/site.py``): once its staging
  folder appears, SIGINT, SIGTERM or SIGHUP (in turn) is sent after a random delay of up to
  ``--diff-span`` seconds, which covers every writing phase up to the publication;
* ``demo``: Ctrl-C (SIGINT to the process group) a random delay of up to ``--demo-span``
  seconds after the phase line ``--demo-phase`` (3: the support regression, where CI saw a
  Ctrl-C ignored), as tests/test_cancel.py sends it.

A run is right when it was cancelled (exit 130, ``evalarc: cancelled``, nothing beside the
output and nothing in TMPDIR) or, for a signal that came after the output was published,
finished with its own exit code and a complete output. Everything else is counted as wrong
(the floor: 0): a death by a signal (``-2``), a dropped cancel (the demo exits 0 although the
Ctrl-C was delivered long before its end), a folder or temporary file left.

``--burners`` CPU-bound processes run throughout (2: both cores of the machine this was written
on busy besides the loops). CPU seconds and peak RSS are those of the EvalArc processes.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO_PHASES = (
    "demo: audit durable-kv",
    "demo: audit support-routing",
    "demo: audit robot-evidence-review",
    "demo: support regression",
    "demo: Inspect AI diff",
    "demo: eval-health",
    "demo: hill-climb review",
    "demo: score trajectory",
    "demo: site",
)
LATE = "a cancel arrived after the output was published"
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass
class Tally:
    """The outcomes of one loop against one EvalArc."""

    right: collections.Counter[str] = field(default_factory=collections.Counter)
    wrong: collections.Counter[str] = field(default_factory=collections.Counter)
    examples: list[str] = field(default_factory=list)
    cpu_seconds: float = 0.0
    peak_rss_mb: float = 0.0

    def add(self, kind: str, ok: bool, detail: str) -> None:
        (self.right if ok else self.wrong)[kind] += 1
        if not ok and len(self.examples) < 3:
            self.examples.append(f"{kind}: {detail}")


@dataclass
class Run:
    code: int
    stderr: str
    left: list[str]
    temp: list[str]
    cpu_seconds: float
    rss_mb: float


def _write_pair(dest: Path) -> tuple[Path, Path]:
    spec = importlib.util.spec_from_file_location("evalarc_bench_site", ROOT / "bench" / "site.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["evalarc_bench_site"] = module
    spec.loader.exec_module(module)
    baseline, current = module.write_junit_pair(dest, 2000)
    return baseline, current


def _start(tree: Path, args: list[str], root: Path) -> tuple[subprocess.Popen[bytes], Path, Path]:
    temp = root / "tmp"
    temp.mkdir(parents=True)
    work = root / "work"
    work.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "TMPDIR": str(temp),
        "SOURCE_DATE_EPOCH": "1700000000",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "evalarc.cli", *args, "--output", str(work / "out")],
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    return process, work, temp


def _finish(process: subprocess.Popen[bytes], work: Path, temp: Path, seen: str = "") -> Run:
    """Wait for the process (its CPU time and peak RSS from wait4; killed with its group if it
    still runs after 300 s: a hang) and look at what it left."""
    stream = process.stderr
    assert stream is not None
    chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: chunks.append(stream.read()))
    reader.start()
    hang = threading.Timer(300, lambda: os.killpg(process.pid, signal.SIGKILL))
    hang.start()
    _, status, usage = os.wait4(process.pid, 0)
    hang.cancel()
    reader.join()
    process.returncode = os.waitstatus_to_exitcode(status)
    return Run(
        process.returncode,
        seen + b"".join(chunks).decode("utf-8", "replace"),
        sorted(path.name for path in work.iterdir()),
        sorted(path.name for path in temp.iterdir()),
        usage.ru_utime + usage.ru_stime,
        usage.ru_maxrss / 1024,
    )


def _judge(run: Run, tally: Tally, label: str, *, finished_is_lost: bool) -> None:
    tally.cpu_seconds += run.cpu_seconds
    tally.peak_rss_mb = max(tally.peak_rss_mb, run.rss_mb)
    detail = f"exit {run.code}, left {run.left}, temp {run.temp}, stderr {run.stderr[-160:]!r}"
    if run.code == 130:
        clean = run.left == [] and run.temp == []
        said = run.stderr.rstrip().endswith("evalarc: cancelled")
        tally.add(f"{label} cancelled", clean and said, detail)
    elif run.code in (0, 1) and run.left == ["out"] and run.temp == []:
        late = LATE in run.stderr
        if finished_is_lost and not late:
            tally.add(f"{label} cancel dropped (ran on to exit {run.code})", False, detail)
        else:
            tally.add(f"{label} finished (signal after publication)", True, detail)
    elif run.code < 0:
        tally.add(f"{label} died by signal {-run.code}", False, detail)
    else:
        tally.add(f"{label} exit {run.code}, left {run.left + run.temp}", False, detail)


def diff_loop(tree: Path, pair: tuple[Path, Path], runs: int, span: float, root: Path) -> Tally:
    tally = Tally()
    rnd = random.Random(1)
    for number in range(runs):
        signum = SIGNALS[number % len(SIGNALS)]
        delay = rnd.uniform(0, span)
        args = ["diff", str(pair[0]), str(pair[1])]
        process, work, temp = _start(tree, args, root / f"diff-{number}")
        started: float | None = None
        while process.poll() is None:
            if started is None and any(p.name.startswith(".out.") for p in work.iterdir()):
                started = time.monotonic()
            if started is not None and time.monotonic() - started >= delay:
                process.send_signal(signum)
                break
            time.sleep(0.001)
        name = signal.Signals(signum).name
        _judge(_finish(process, work, temp), tally, name, finished_is_lost=False)
        shutil.rmtree(root / f"diff-{number}", ignore_errors=True)
    return tally


def demo_loop(tree: Path, runs: int, phase: int, span: float, root: Path) -> Tally:
    tally = Tally()
    rnd = random.Random(2)
    for number in range(runs):
        process, work, temp = _start(tree, ["demo"], root / f"demo-{number}")
        assert process.stderr is not None
        seen = ""
        while True:
            line = process.stderr.readline().decode("utf-8", "replace")
            seen += line
            if not line or line.startswith(DEMO_PHASES[phase]):
                break
        time.sleep(rnd.uniform(0, span))
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
            _judge(_finish(process, work, temp, seen), tally, "SIGINT", finished_is_lost=True)
        else:
            tally.add("finished before the signal", True, "")
            process.communicate()
        shutil.rmtree(root / f"demo-{number}", ignore_errors=True)
    return tally


def _load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def measure(label: str, tree: Path, pair: tuple[Path, Path], root: Path) -> dict[str, object]:
    load_before = _load()
    started = time.monotonic()
    tallies: dict[str, Tally] = {}

    def diff_job() -> None:
        tallies["diff"] = diff_loop(tree, pair, ARGS.diff_runs, ARGS.diff_span, root / "d")

    def demo_job() -> None:
        tallies["demo"] = demo_loop(
            tree, ARGS.demo_runs, ARGS.demo_phase, ARGS.demo_span, root / "m"
        )

    threads = [threading.Thread(target=job) for job in (diff_job, demo_job)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    cpu = sum(tally.cpu_seconds for tally in tallies.values())
    peak = max(tally.peak_rss_mb for tally in tallies.values())
    print(
        f"{label}: {time.monotonic() - started:.0f} s wall, {cpu:.0f} CPU s in the EvalArc "
        f"processes (peak RSS {peak:.0f} MB), load average {load_before} -> {_load()}",
        flush=True,
    )
    return {"label": label, **tallies}


def _column(result: dict[str, object]) -> list[str]:
    lines = [f"## {result['label']}"]
    for loop in ("diff", "demo"):
        tally = result[loop]
        assert isinstance(tally, Tally)
        total = sum(tally.right.values()) + sum(tally.wrong.values())
        wrong = sum(tally.wrong.values())
        lines.append(f"{loop}: {wrong} wrong of {total} runs (floor: 0)")
        for kind, count in sorted(tally.right.items()):
            lines.append(f"  right  {count:4d}  {kind}")
        for kind, count in sorted(tally.wrong.items()):
            lines.append(f"  WRONG  {count:4d}  {kind}")
        lines.extend(f"  e.g. {example}" for example in tally.examples)
    return lines


def main() -> int:
    # The loops send Ctrl-C: their processes must not start with SIGINT ignored (as a shell's
    # background job's children do).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    work = Path(tempfile.mkdtemp(prefix="evalarc-cancel-loop-"))
    processes: list[subprocess.Popen[bytes]] = []
    try:
        pair = _write_pair(work / "pair")
        trees: list[tuple[str, Path]] = []
        if ARGS.before:
            before = work / "before"
            before.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", ARGS.before],
                check=True,
                capture_output=True,
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
            trees.append((f"before ({ARGS.before})", before))
        trees.append(("this checkout", ROOT))
        for _ in range(ARGS.burners):
            processes.append(
                subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
            )
        results = [
            measure(label, tree, pair, work / f"run-{index}")
            for index, (label, tree) in enumerate(trees)
        ]
    finally:
        for process in processes:
            process.kill()
            process.wait()
        shutil.rmtree(work, ignore_errors=True)
    for result in results:
        print("\n".join(_column(result)))
    wrong = sum(
        sum(tally.wrong.values())
        for result in results[-1:]
        for tally in (result["diff"], result["demo"])
        if isinstance(tally, Tally)
    )
    return 1 if wrong else 0


ARGS = argparse.Namespace()

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", help="also run the loops against this commit")
    parser.add_argument("--diff-runs", type=int, default=60)
    parser.add_argument("--diff-span", type=float, default=0.6)
    parser.add_argument("--demo-runs", type=int, default=20)
    parser.add_argument("--demo-phase", type=int, default=3, choices=range(len(DEMO_PHASES)))
    parser.add_argument("--demo-span", type=float, default=0.8)
    parser.add_argument("--burners", type=int, default=2)
    parser.parse_args(namespace=ARGS)
    raise SystemExit(main())
