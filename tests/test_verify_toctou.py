"""Time of check, time of use: a preserved input swapped after ``verify`` hashed it.

The attack (issue 24, item 1): a report folder whose ``diff.json`` was computed from a forged
input (the baseline presented as the current run: no regression, the gate passes) but records
the SHA-256 of the genuine, regressing input, which is the copy in the folder. A watcher on the
filesystem (a real inotify watch, through libc) waits for the first time the copy is closed
after being read, which is when verify has hashed it, and renames the forged bytes over it.
Before the fix verify reopened the file by path to parse it, parsed the forged bytes, found the
recomputed report equal to the forged ``diff.json`` and printed "the report's gate passes"
(exit 0). Now each file is opened once and parsed from a private copy of the bytes it hashed, so
the swap changes nothing verify reads and the forged report is refused, every time.

The same watcher on ``evalarc diff --output`` must not make the report folder hold bytes other
than those the report was computed from.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import shutil
import struct
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Cli

IN_CLOSE_NOWRITE = 0x10
RUNS = 30


class CloseWatcher:
    """Renames ``bait`` over ``target`` as soon as ``target`` is closed after a read (the
    inotify event ``IN_CLOSE_NOWRITE``), once; :attr:`swapped` tells whether it did."""

    def __init__(self, target: Path, bait: Path) -> None:
        self.target, self.bait = target, bait
        self.swapped = threading.Event()
        self._stop = threading.Event()
        libc = ctypes.CDLL(None, use_errno=True)
        self._fd = libc.inotify_init1(os.O_CLOEXEC)
        assert self._fd >= 0, os.strerror(ctypes.get_errno())
        watch = libc.inotify_add_watch(self._fd, os.fsencode(target), IN_CLOSE_NOWRITE)
        assert watch >= 0, os.strerror(ctypes.get_errno())
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self._fd], [], [], 0.05)
            if ready:
                os.read(self._fd, 4096)
                os.replace(self.bait, self.target)
                self.swapped.set()
                return

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        os.close(self._fd)


@pytest.fixture()
def fast_switching() -> Iterator[None]:
    """Let the watcher thread take the interpreter as soon as its event arrives, as a watcher
    in another process (or a FUSE filesystem) would run beside verify."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _diff(cli: Cli, baseline: Path, current: Path, output: Path, code: int) -> None:
    result = cli("diff", baseline, current, "--output", output)
    assert result.exit_code == code, result.output


@pytest.fixture()
def forged(cli: Cli, corpus: Path, tmp_path: Path) -> tuple[Path, bytes, bytes]:
    """The forged folder (genuine current copy, forged report bound to its hash), the genuine
    and the forged bytes of ``current.json``."""
    baseline = corpus / "inspect/capitals.baseline.json"
    genuine_input = corpus / "inspect/capitals.current.json"
    # The attacker's current run: the baseline's results under the current run's name (one
    # trailing space more, so its SHA-256 is not the baseline's).
    fake_dir = tmp_path / "fake"
    fake_dir.mkdir()
    fake_input = fake_dir / genuine_input.name
    fake_input.write_bytes(baseline.read_bytes() + b" ")
    _diff(cli, baseline, genuine_input, tmp_path / "genuine", 1)
    _diff(cli, baseline, fake_input, tmp_path / "passing", 0)
    folder = tmp_path / "forged"
    shutil.copytree(tmp_path / "passing", folder)
    shutil.rmtree(folder / "case-views")
    (folder / "index.html").unlink()
    genuine = (tmp_path / "genuine" / "current.json").read_bytes()
    fake = (folder / "current.json").read_bytes()
    report = json.loads((folder / "diff.json").read_text(encoding="utf-8"))
    fake_sha = report["current"]["source"]["sha256"]
    genuine_sha = json.loads((tmp_path / "genuine" / "diff.json").read_text(encoding="utf-8"))[
        "current"
    ]["source"]["sha256"]
    for name in ("diff.json", "summary.md"):
        text = (folder / name).read_text(encoding="utf-8")
        (folder / name).write_text(text.replace(fake_sha, genuine_sha), encoding="utf-8")
    (folder / "current.json").write_bytes(genuine)
    return folder, genuine, fake


def test_the_forged_folder_is_refused_without_a_swap(
    cli: Cli, forged: tuple[Path, bytes, bytes]
) -> None:
    folder, _, fake = forged
    result = cli("verify", folder)
    assert result.exit_code == 2 and "diff.json differs" in result.output
    (folder / "current.json").write_bytes(fake)
    result = cli("verify", folder)
    assert result.exit_code == 2 and "current.json differs from the input" in result.output


def test_a_file_swapped_after_it_was_hashed_never_verifies(
    cli: Cli, forged: tuple[Path, bytes, bytes], tmp_path: Path, fast_switching: None
) -> None:
    folder, genuine, fake = forged
    target = folder / "current.json"
    bait = tmp_path / "bait.json"
    outcomes: list[int] = []
    for _ in range(RUNS):
        target.write_bytes(genuine)
        bait.write_bytes(fake)
        watcher = CloseWatcher(target, bait)
        try:
            result = cli("verify", folder, "--json")
        finally:
            watcher.close()
        # The attack happened: the forged bytes were put in place during the verification.
        assert watcher.swapped.is_set() and target.read_bytes() == fake
        outcomes.append(result.exit_code)
        assert result.exit_code != 0, f"run {len(outcomes)}: the forged report verified"
        verdict = json.loads(result.stdout)
        assert verdict["verified"] is False and "diff.json differs" in verdict["error"]
    assert outcomes == [2] * RUNS


def test_diff_output_copies_exactly_the_bytes_it_parsed(
    cli: Cli, corpus: Path, tmp_path: Path, fast_switching: None
) -> None:
    """``diff`` hashes its input, parses it and copies it into the report folder: a swap after
    the first read must change neither the verdict (the regression is still found; before the
    fix a plain ``diff`` parsed the swapped-in file and exited 0) nor the copy (the folder
    still verifies)."""
    baseline = corpus / "inspect/capitals.baseline.json"
    source = tmp_path / "in" / "capitals.current.json"
    source.parent.mkdir()
    bait = tmp_path / "bait.json"
    for run in range(6):
        shutil.copyfile(corpus / "inspect/capitals.current.json", source)
        shutil.copyfile(baseline, bait)
        output = tmp_path / f"out{run}"
        watcher = CloseWatcher(source, bait)
        # Odd runs without a folder: the verdict alone must be the genuine file's.
        extra = ("--output", output) if run % 2 == 0 else ()
        try:
            result = cli("diff", baseline, source, *extra)
        finally:
            watcher.close()
        assert watcher.swapped.is_set()
        assert result.exit_code == 1, result.output
        if not extra:
            continue
        copy = (output / "current.json").read_bytes()
        assert copy == (corpus / "inspect/capitals.current.json").read_bytes()
        verified = cli("verify", output, "--json")
        assert verified.exit_code == 0 and json.loads(verified.stdout)["passed"] is False


IN_OPEN = 0x20
IN_CLOSE = 0x08 | 0x10
IN_ISDIR = 0x40000000


def _opens_during(folders: list[Path], action: Callable[[], object]) -> Counter[str]:
    """How many times each file directly inside ``folders`` was opened while ``action`` ran
    (inotify ``IN_OPEN`` events on each folder, read after it returned)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_CLOEXEC | os.O_NONBLOCK)
    assert fd >= 0
    watches: dict[int, Path] = {}
    try:
        for folder in folders:
            # Closes are watched too: the kernel merges an event identical to the one queued
            # last, so two opens of a file in a row would otherwise count as one.
            watch = libc.inotify_add_watch(fd, os.fsencode(folder), IN_OPEN | IN_CLOSE)
            assert watch >= 0, os.strerror(ctypes.get_errno())
            watches[watch] = folder
        action()
        counts: Counter[str] = Counter()
        while True:
            try:
                data = os.read(fd, 1 << 16)
            except BlockingIOError:
                return counts
            offset = 0
            while offset < len(data):
                watch, mask, _cookie, size = struct.unpack_from("iIII", data, offset)
                name = data[offset + 16 : offset + 16 + size].rstrip(b"\0").decode()
                offset += 16 + size
                if name and mask & IN_OPEN and not mask & IN_ISDIR:
                    counts[(watches[watch] / name).as_posix()] += 1
    finally:
        os.close(fd)


def test_verify_opens_each_file_of_a_report_folder_once(
    cli: Cli, corpus: Path, tmp_path: Path
) -> None:
    out = tmp_path / "diff"
    _diff(
        cli,
        corpus / "inspect/capitals.baseline.json",
        corpus / "inspect/capitals.current.json",
        out,
        1,
    )
    folders = [out, *(path for path in out.rglob("*") if path.is_dir())]
    files = [path.as_posix() for path in out.rglob("*") if path.is_file()]
    opens = _opens_during(folders, lambda: cli("verify", out))
    assert sorted(opens) == sorted(files)
    assert {name: count for name, count in opens.items() if count != 1} == {}


def test_verify_opens_each_file_of_a_site_once(cli: Cli, corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "diff"
    junit = corpus / "junit" / "pytest"
    result = cli("diff", junit / "baseline.xml", junit / "current.xml", "--output", out)
    assert result.exit_code in (0, 1)
    site = tmp_path / "site"
    assert cli("site", "build", out, "--output", site).exit_code == 0
    folders = [site, *(path for path in site.rglob("*") if path.is_dir())]
    files = [path.as_posix() for path in site.rglob("*") if path.is_file()]
    opens = _opens_during(folders, lambda: cli("verify", site))
    assert sorted(opens) == sorted(files)
    assert {name: count for name, count in opens.items() if count != 1} == {}


def test_diff_reads_inputs_through_linked_folders_but_not_linked_files(
    cli: Cli, corpus: Path, tmp_path: Path
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    for name in ("capitals.baseline.json", "capitals.current.json"):
        shutil.copyfile(corpus / "inspect" / name, real / name)
    (tmp_path / "link").symlink_to(real)
    linked = tmp_path / "link"
    result = cli("diff", linked / "capitals.baseline.json", linked / "capitals.current.json")
    assert result.exit_code == 1, result.output
    (tmp_path / "current.json").symlink_to(real / "capitals.current.json")
    result = cli("diff", linked / "capitals.baseline.json", tmp_path / "current.json")
    assert result.exit_code == 2
    assert f"{tmp_path / 'current.json'} is not a regular file" in result.output
