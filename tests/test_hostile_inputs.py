"""Every hostile input in ``tests/hostile/`` through every command that reads its kind.

Each run is the real CLI in a child process. The standard (issue 9, "Hostile inputs"): exit 2;
stderr is exactly one line starting with ``evalarc: ``, naming the file, with the expected reason
and no traceback; nothing on stdout; the child's peak RSS under 300 MiB and its CPU time under
10 s (wall time is only a hang guard: other work shares the machine); and no output folder, no
``.partial`` staging folder and no other file left where ``--output`` pointed. The catalogue,
the generators and what each entry attacks are in ``tests/hostile/make_corpus.py``; the README
there is its table.

All selected runs are made once, two at a time, by a session fixture; each test asserts one.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.slow


def _load_corpus_module() -> ModuleType:
    path = Path(__file__).parent / "hostile" / "make_corpus.py"
    spec = importlib.util.spec_from_file_location("evalarc_hostile_corpus", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


corpus_module = _load_corpus_module()
Entry = corpus_module.Entry
Bases = corpus_module.Bases
ENTRIES: list[Entry] = corpus_module.ENTRIES

EVALARC = str(Path(sys.executable).parent / "evalarc")
RSS_LIMIT_MIB = 300
CPU_LIMIT_SECONDS = 10.0
WALL_LIMIT_SECONDS = 60.0
WORKERS = 2 * (os.cpu_count() or 1)  # children wait on disk too


@dataclass(frozen=True)
class Outcome:
    returncode: int
    stdout: str
    stderr: str
    max_rss_mib: float
    cpu_seconds: float
    wall_seconds: float
    timed_out: bool
    leftovers: list[str]


MEASURE = """
import json, os, subprocess, sys
child = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
with open(sys.argv[1], "w") as report:
    json.dump([status, usage.ru_maxrss, usage.ru_utime + usage.ru_stime], report)
"""
"""Runs the command and reports its wait4 figures. A child's peak RSS counts the memory of the
process it was started from (Linux records the address space an exec replaces, and
``subprocess`` starts children with vfork), so a pytest worker grown large by earlier tests
would be charged to every child it starts directly; started from this small process, the
figure is the command's own."""


def run_measured(args: list[str], cwd: Path) -> Outcome:
    """Run ``evalarc ARGS`` in ``cwd``; measure the child's peak RSS and CPU with wait4."""
    out_path, err_path = cwd.parent / f"{cwd.name}.out", cwd.parent / f"{cwd.name}.err"
    usage_path = cwd.parent / f"{cwd.name}.usage"
    started = time.monotonic()
    with out_path.open("wb") as out, err_path.open("wb") as err:
        measurer = subprocess.Popen(
            [sys.executable, "-c", MEASURE, str(usage_path), EVALARC, *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        timed_out = False
        while measurer.poll() is None:
            if time.monotonic() - started > WALL_LIMIT_SECONDS:
                timed_out = True
                os.killpg(measurer.pid, signal.SIGKILL)
                measurer.wait()
                break
            time.sleep(0.01)
    status, max_rss_kib, cpu_seconds = (
        json.loads(usage_path.read_text()) if not timed_out else (-1, 0, WALL_LIMIT_SECONDS)
    )
    return Outcome(
        returncode=os.waitstatus_to_exitcode(status) if not timed_out else -9,
        stdout=out_path.read_bytes().decode("utf-8", "replace")[:4000],
        stderr=err_path.read_bytes().decode("utf-8", "replace")[:4000],
        max_rss_mib=max_rss_kib / 1024,
        cpu_seconds=cpu_seconds,
        wall_seconds=time.monotonic() - started,
        timed_out=timed_out,
        leftovers=sorted(os.listdir(cwd)),
    )


def command_args(entry: Entry, command: str, hostile: Path, bases: Bases) -> list[str]:
    """The command line of one run; every writing command gets ``--output out`` (in cwd)."""
    target = str(hostile)
    good_b, good_c = str(bases.good_baseline), str(bases.good_current)
    if "--format" in entry.args:  # the other side of a diff must be valid in that format
        good_b = good_c = str(bases.good_by_format[entry.args[entry.args.index("--format") + 1]])
    table = {
        "diff-baseline": ["diff", target, good_c, "--output", "out"],
        "diff-current": ["diff", good_b, target, "--output", "out"],
        "eval-health": ["eval-health", target, "--output", "out"],
        "diff-held-out": ["diff", good_b, good_c, "--held-out", target, "--output", "out"],
        "diff-harness": ["diff", good_b, good_c, "--harness", target, "--output", "out"],
        "eval-health-cases": ["eval-health", good_b, "--cases", target, "--output", "out"],
        "trajectory": ["trajectory", target, "--budget-seconds", "600", "--output", "out"],
        "verify": ["verify", target],
        "site-build": ["site", "build", target, "--output", "out", "--quiet"],
    }
    return [*table[command], *entry.args]


CASES = [
    pytest.param(entry, command, id=f"{entry.name.replace(chr(10), '~')}-{command}")
    for entry in ENTRIES
    for command in entry.command_names()
]


@dataclass
class Session:
    bases: Bases
    generated: Path
    outcomes: dict[tuple[str, str], Outcome]
    inputs: dict[str, Path]


def _tree(root: Path) -> dict[str, int]:
    """Relative path -> size (or -1 for non-regular entries) of everything under ``root``."""
    found: dict[str, int] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            info = path.lstat()
            found[str(path.relative_to(root))] = info.st_size if path.is_file() else -1
    return found


def _selected(session: pytest.Session) -> list[tuple[Entry, str]]:
    chosen: list[tuple[Entry, str]] = []
    for item in session.items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if item.path.name == Path(__file__).name and "entry" in params:
            chosen.append((params["entry"], params["command"]))
    return chosen


@pytest.fixture(scope="session")
def hostile_session(request: pytest.FixtureRequest, corpus: Path) -> Iterator[Session]:
    """Build the bases, generate the selected entries, run every selected command once."""
    with tempfile.TemporaryDirectory(prefix="evalarc-hostile-") as scratch:
        root = Path(scratch)
        bases = corpus_module.build_bases(root / "bases", corpus, EVALARC)
        generated = root / "generated"
        chosen = _selected(request.session)
        inputs: dict[str, Path] = {}
        for entry, _ in chosen:
            if entry.name not in inputs:
                inputs[entry.name] = corpus_module.make_entry(entry, generated, bases)
        before = {"generated": _tree(generated), "bases": _tree(bases.root)}
        runs = root / "runs"
        runs.mkdir()

        def run_one(index: int, entry: Entry, command: str) -> tuple[tuple[str, str], Outcome]:
            cwd = runs / f"{index:04d}"
            cwd.mkdir()
            args = command_args(entry, command, inputs[entry.name], bases)
            return (entry.name, command), run_measured(args, cwd)

        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            futures = [
                pool.submit(run_one, index, entry, command)
                for index, (entry, command) in enumerate(chosen)
            ]
            outcomes = dict(future.result() for future in futures)
        dump = os.environ.get("EVALARC_HOSTILE_DUMP")  # every measurement, for a report
        if dump:
            rows = {f"{name}|{command}": asdict(o) for (name, command), o in outcomes.items()}
            Path(dump).write_text(json.dumps(rows, indent=1), encoding="utf-8")
        after = {"generated": _tree(generated), "bases": _tree(bases.root)}
        assert after == before, "a command changed its inputs or wrote beside them"
        yield Session(bases, generated, outcomes, inputs)


@pytest.mark.parametrize(("entry", "command"), CASES)
def test_hostile_input_is_refused(hostile_session: Session, entry: Entry, command: str) -> None:
    outcome = hostile_session.outcomes[(entry.name, command)]
    shown = f"{command} on {entry.name!r}: {outcome}"
    assert not outcome.timed_out, shown
    assert "Traceback" not in outcome.stderr, shown
    assert outcome.returncode == 2, shown
    assert outcome.stderr.startswith("evalarc: "), shown
    assert outcome.stderr.endswith("\n") and outcome.stderr.count("\n") == 1, shown
    assert outcome.stdout == "", shown
    message = outcome.stderr
    assert entry.fragment(command) in message, shown
    path = hostile_session.inputs[entry.name]
    names = entry.names or (" ".join(path.name.split()),)  # as errors fold newlines
    assert any(name in message for name in names), shown
    assert outcome.leftovers == [], f"{shown}: left {outcome.leftovers}"
    assert outcome.max_rss_mib < RSS_LIMIT_MIB, shown
    assert outcome.cpu_seconds < CPU_LIMIT_SECONDS, shown


def test_the_corpus_has_at_least_40_inputs_and_every_kind_of_attack() -> None:
    committed = [entry for entry in ENTRIES if entry.committed]
    assert len(ENTRIES) >= 40
    for entry in committed:
        assert (corpus_module.FILES / entry.name).is_file(), entry.name
    on_disk = {
        path.relative_to(corpus_module.FILES).as_posix()
        for path in corpus_module.FILES.rglob("*")
        if path.is_file()
    }
    assert on_disk == {entry.name for entry in committed}, "an unlisted file in tests/hostile"
    assert len({entry.name for entry in ENTRIES}) == len(ENTRIES)
    kinds = {entry.kind for entry in ENTRIES}
    assert kinds == set(corpus_module.COMMANDS_BY_KIND)


def test_the_readme_table_matches_the_catalogue() -> None:
    readme = (corpus_module.HERE / "README.md").read_text(encoding="utf-8")
    assert corpus_module.readme_table() in readme, (
        "tests/hostile/README.md is stale: regenerate the table with "
        "`python tests/hostile/make_corpus.py --readme`"
    )
