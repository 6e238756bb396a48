"""Amplification inside the caps (issue 24, item 5): small or moderate result files whose shape
makes a reader build far more in memory than the file holds. Each row diffs a hostile file
against a small valid file of the same format and prints exit, CPU seconds and peak RSS beside
the floor every reader is held to: a peak within 2 x input + 100 MB, or exit 2 naming the limit.

    python bench/amplification.py                    # this checkout
    python bench/amplification.py --before REV       # also the same rows against commit REV
    python bench/amplification.py --scale 0.25       # smaller inputs (a quick look)

The hostile files are written by this script into ``--work`` (default ``bench/out/amplification``)
from the corpus files in ``tests/corpus`` and reused on the next run. ``input`` is the size of
both files on disk; for an ``.eval`` the budget counts the members' uncompressed size too (what
the reader must decompress), so a row shows the budget it is held to. Each command runs in its
own child under a 4 GB address-space cap, so a reader that does not bound itself is stopped
(``killed (memory)``) instead of exhausting the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus"
INSPECT_JSON = CORPUS / "inspect" / "capitals.baseline.json"
INSPECT_EVAL = CORPUS / "inspect" / "capitals.baseline.eval"
PROMPTFOO = CORPUS / "promptfoo" / "generated" / "qa.baseline.json"
MB = 1024 * 1024
FLOOR = "peak <= 2 x input + 100 MB, or exit 2"


def _keys_object(count: int) -> str:
    return "{" + ",".join(f'"k{index}":0' for index in range(count)) + "}"


def _strings_array(count: int) -> str:
    return "[" + ",".join(f'"{index % 97:02d}"' for index in range(count)) + "]"


def inspect_json_keys(path: Path, scale: float) -> None:
    """An Inspect JSON log whose first sample's metadata holds millions of short keys."""
    log = json.loads(INSPECT_JSON.read_text())
    log["samples"][0]["metadata"] = PLACEHOLDER
    text = json.dumps(log).replace(json.dumps(PLACEHOLDER), _keys_object(int(4_000_000 * scale)))
    path.write_text(text)


PLACEHOLDER = {"__placeholder__": 0}


def inspect_json_checks(path: Path, scale: float) -> None:
    """An Inspect JSON log whose first sample has 200,000 scorers and every other sample an
    error: each errored sample becomes unassessed on every check the run scores."""
    log = json.loads(INSPECT_JSON.read_text())
    count = int(200_000 * scale)
    samples = log["samples"]
    samples[0]["scores"] = {f"s{index}": {"value": "C"} for index in range(count)}
    for sample in samples[1:]:
        sample["scores"] = {}
        sample["error"] = {"message": "boom", "traceback": "", "traceback_ansi": ""}
    path.write_text(json.dumps(log))


def _rewrite_eval(path: Path, change: Callable[[str, bytes], bytes]) -> None:
    with (
        zipfile.ZipFile(INSPECT_EVAL) as original,
        zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as out,
    ):
        for info in original.infolist():
            data = _member(original, info)
            out.writestr(info.filename, change(info.filename, data))


def _member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """A member's bytes, also for Zstandard (method 93, which zipfile cannot read)."""
    if info.compress_type != 93:
        return archive.read(info)
    import struct

    import zstandard

    with open(archive.filename or "", "rb") as handle:
        handle.seek(info.header_offset)
        header = handle.read(30)
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        handle.seek(info.header_offset + 30 + name_length + extra_length)
        raw = handle.read(info.compress_size)
    data: bytes = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    return data


def eval_strings(path: Path, scale: float) -> None:
    """An ``.eval`` whose first sample member inflates to about 60 MB of two-character strings
    (each a Python object of 51 bytes and a list slot)."""
    count = int(12_000_000 * scale)
    done: list[bool] = []

    def change(name: str, data: bytes) -> bytes:
        if name.startswith("samples/") and not done:
            done.append(True)
            value = json.loads(data)
            text = json.dumps(value)[:-1] + ', "padding": ' + _strings_array(count) + "}"
            return text.encode()
        return data

    _rewrite_eval(path, change)


def eval_checks(path: Path, scale: float) -> None:
    """An ``.eval`` whose samples each carry 20,000 scorers (the reader has no cap on checks)."""
    count = int(20_000 * scale)
    scores = {f"s{index}": {"value": "C"} for index in range(count)}

    def change(name: str, data: bytes) -> bytes:
        if name.startswith("samples/"):
            value = json.loads(data)
            value["scores"] = scores
            return json.dumps(value).encode()
        return data

    _rewrite_eval(path, change)


def promptfoo_keys(path: Path, scale: float) -> None:
    """A promptfoo output whose first row's response metadata holds millions of short keys."""
    document = json.loads(PROMPTFOO.read_text())
    document["results"]["results"][0]["response"]["metadata"] = PLACEHOLDER
    text = json.dumps(document)
    path.write_text(text.replace(json.dumps(PLACEHOLDER), _keys_object(int(6_000_000 * scale))))


@dataclass(frozen=True)
class Attack:
    label: str
    baseline: Path
    maker: Callable[[Path, float], None]
    suffix: str


ATTACKS = (
    Attack(
        "Inspect JSON, one sample with millions of keys", INSPECT_JSON, inspect_json_keys, "json"
    ),
    Attack(
        "Inspect JSON, 200,000 checks and errored samples",
        INSPECT_JSON,
        inspect_json_checks,
        "json",
    ),
    Attack(".eval, a member inflating to 60 MB of strings", INSPECT_EVAL, eval_strings, "eval"),
    Attack(".eval, 20,000 checks per sample", INSPECT_EVAL, eval_checks, "eval"),
    Attack("promptfoo, one row with millions of keys", PROMPTFOO, promptfoo_keys, "json"),
)


def _effective(path: Path) -> int:
    """Bytes on disk, or for a ZIP the larger of that and its members' uncompressed sizes."""
    size = path.stat().st_size
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            size = max(size, sum(info.file_size for info in archive.infolist()))
    return size


def _cap_memory() -> None:
    limit = 4096 * MB
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def measure(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[str, float, float, str]:
    """(exit, CPU seconds, peak RSS MB, first stderr line) of one child."""
    process = subprocess.Popen(
        argv,
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=_cap_memory,
    )
    assert process.stderr is not None
    stderr = process.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(process.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    shown = str(code)
    if code != 2 and ("MemoryError" in stderr or "Cannot allocate" in stderr or code < 0):
        shown = "killed (memory)"
    line = next((text for text in stderr.splitlines() if text.strip()), "")
    return shown, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, line[:160]


def checkout(revision: str, work: Path) -> Path:
    target = work / f"evalarc-{revision}"
    if not target.exists():
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(target), revision],
            check=True,
            capture_output=True,
        )
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=ROOT / "bench" / "out" / "amplification")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--before", help="a commit to measure beside this checkout")
    parser.add_argument("--output", action="store_true", help="also run diff --output (case views)")
    options = parser.parse_args(argv)
    work: Path = options.work
    work.mkdir(parents=True, exist_ok=True)
    columns = [("this checkout", ROOT)]
    if options.before:
        columns.insert(0, (f"before ({options.before})", checkout(options.before, work)))
    print(f"floor: {FLOOR}; scale {options.scale}")
    header = "| attack | input MB | budget MB |"
    for name, _ in columns:
        header += f" {name}: exit | CPU s | peak MB |"
    print(header)
    print("|---|---:|---:|" + "---|---:|---:|" * len(columns))
    failed = False
    for attack in ATTACKS:
        target = work / f"{attack.maker.__name__}-{options.scale}.{attack.suffix}"
        if not target.exists():
            attack.maker(target, options.scale)
        size = attack.baseline.stat().st_size + target.stat().st_size
        budget = (2 * (_effective(attack.baseline) + _effective(target)) + 100 * MB) / MB
        row = f"| {attack.label} | {size / MB:,.1f} | {budget:,.0f} |"
        for _, tree in columns:
            env = dict(os.environ, PYTHONPATH=str(tree), PYTHONSAFEPATH="1")
            with tempfile.TemporaryDirectory() as scratch:
                argv = [
                    sys.executable,
                    "-m",
                    "evalarc.cli",
                    "diff",
                    str(attack.baseline),
                    str(target),
                    "--json",
                ]
                if options.output:
                    argv += ["--output", str(Path(scratch) / "out")]
                started = time.monotonic()
                shown, cpu, peak, line = measure(argv, env, Path(scratch))
                del started
            within = shown == "2" or peak <= budget
            failed = failed or (tree == ROOT and not within)
            row += f" {shown} | {cpu:.1f} | {peak:,.0f}{'' if within else ' (over)'} |"
            if tree == ROOT and shown == "2":
                print(f"  refused: {line}", file=sys.stderr)
        print(row, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
