"""Regenerate the bundled recordings: real Docker runs of every pack's controls.

For each of the three packs and both languages this runs ``evalarc audit`` live in Docker (the
reference and every declared fault, seeds 17 41 97 by default) with the local images, then packs
every case transcript into the top-level ``recordings/`` store (``evalarc.recording-store.v1``):
one zstd-compressed bundle per pack and language, each transcript stored once under its SHA-256,
and ``index.json`` mapping every run key to its transcript. Other content of ``recordings/``
(such as ``examples/``) is left as it is. Replays (``--backend replay``,
``evalarc verify``) read that store.

    python scripts/make_recordings.py [--output recordings] [--seeds 17 41 97] [--jobs 4]

Needs the engine and ``evalarc-python:local`` / ``evalarc-node:local``
(``bash scripts/docker_setup.sh``). The store is replaced only when every audit was valid and
passed; the script prints each audit's summary and the store's total size.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from evalarc.packs import list_packs
from evalarc.reports.audit import AuditOptions, run_audit
from evalarc.reports.audit_text import summary_lines
from evalarc.runtime.recording import RECORDING_SUFFIX, load_index, runtime_fingerprint
from evalarc.runtime.replay import (
    BUNDLE_SUFFIX,
    INDEX_FILE,
    StoredRun,
    case_label,
    write_store,
)

ROOT = Path(__file__).resolve().parents[1]
IMAGES = {"python": "evalarc-python:local", "javascript": "evalarc-node:local"}


def collect(audit_folder: Path, language: str) -> tuple[list[StoredRun], dict[str, bytes]]:
    """The runs and transcripts of one audit folder."""
    audit: dict[str, Any] = json.loads((audit_folder / "audit.json").read_text("utf-8"))
    names = {audit["reference"]["candidate_sha256"]: "reference"}
    names.update({row["candidate_sha256"]: row["name"] for row in audit["mutants"]})
    recordings_dir = audit_folder / "recordings"
    index = load_index(recordings_dir / "index.json")
    grouped: dict[tuple[str, str, str, str], dict[str, str]] = defaultdict(dict)
    transcripts: dict[str, bytes] = {}
    for key, recording in index.entries.items():
        group = (key.candidate_sha256, key.pack, key.grader_sha256, key.runtime_sha256)
        grouped[group][case_label(key.seed, key.case_id)] = recording
        transcripts[recording] = (recordings_dir / f"{recording}{RECORDING_SUFFIX}").read_bytes()
    runs = [
        StoredRun(candidate_sha256=candidate, pack=pack, grader_sha256=grader,
                  runtime=index.runtimes[runtime], cases=cases,
                  label=f"{language} {names[candidate]}")
        for (candidate, pack, grader, runtime), cases in sorted(grouped.items())
    ]
    for run in runs:
        assert runtime_fingerprint(run.runtime) in index.runtimes
    return runs, transcripts


def install(staging: Path, output: Path) -> None:
    """Move the new store's files into ``output``: bundles first, the index last (so a reader
    never sees an index naming a missing bundle), then drop bundles the new index no longer
    names. Anything else in ``output`` (e.g. ``examples/``) is left alone."""
    output.mkdir(parents=True, exist_ok=True)
    new_bundles = {path.name for path in staging.glob(f"*{BUNDLE_SUFFIX}")}
    for name in sorted(new_bundles):
        shutil.copyfile(staging / name, output / f".{name}.new")
        (output / f".{name}.new").replace(output / name)
    shutil.copyfile(staging / INDEX_FILE, output / f".{INDEX_FILE}.new")
    (output / f".{INDEX_FILE}.new").replace(output / INDEX_FILE)
    for stale in output.glob(f"*{BUNDLE_SUFFIX}"):
        if stale.name not in new_bundles:
            stale.unlink()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=ROOT / "recordings")
    parser.add_argument("--seeds", type=int, nargs="+", default=[17, 41, 97])
    parser.add_argument("--jobs", type=int, default=None)
    arguments = parser.parse_args()

    runs: list[StoredRun] = []
    bundles: dict[str, dict[str, bytes]] = {}
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="evalarc-make-recordings-") as temp:
        work = Path(temp)
        for pack in list_packs():
            for language in ("python", "javascript"):
                started = time.monotonic()
                options = AuditOptions(task=pack.id, language=language, backend="docker",
                                       image=IMAGES[language], seeds=tuple(arguments.seeds),
                                       jobs=arguments.jobs)
                folder = work / f"{pack.id}-{language}"
                result = run_audit(folder, options, temp_root=work)
                seconds = time.monotonic() - started
                print(f"{pack.id} · {language} · {seconds:.1f} s")
                for line in summary_lines(result.audit):
                    print(f"  {line}")
                if not result.audit["passed"]:
                    failures.append(f"{pack.id} {language}")
                pack_runs, transcripts = collect(folder, language)
                runs.extend(pack_runs)
                bundles[f"{pack.id}.{language}.jsonl.zst"] = transcripts
        if failures:
            print(f"not replacing the store: audits did not pass: {', '.join(failures)}",
                  file=sys.stderr)
            return 1
        staging = work / "store"
        total = write_store(staging, runs, bundles)
        install(staging, arguments.output)
    recordings = sum(len(contents) for contents in bundles.values())
    entries = sum(len(run.cases) for run in runs)
    raw = sum(len(data) for contents in bundles.values() for data in contents.values())
    print(f"{arguments.output}: {entries} case runs, {recordings} distinct transcripts "
          f"({raw} bytes uncompressed), {total} bytes on disk")
    return 0


if __name__ == "__main__":
    sys.exit(main())
