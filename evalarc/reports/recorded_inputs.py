"""Reading a report folder's preserved inputs back for recomputation, the same way for every
kind: a result file copy bound by SHA-256 to the run the report recorded, the harness copies
bound to the hashes that were scanned, and the held-out split. Every refusal is a
VerificationError of one line naming the file inside the folder."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from evalarc.bundle import PARAMS_FILE, EvidenceFolder, shown_as
from evalarc.canonical import sha256_bytes
from evalarc.errors import EvalArcError, VerificationError
from evalarc.formats import Run, load_results
from evalarc.formats.harness import HarnessFile
from evalarc.formats.model import Source
from evalarc.formats.split import CaseSplit, load_split


def recorded_run(
    folder: EvidenceFolder, entry: object, recorded: object, fmt: str, threshold: float
) -> Run:
    """The run of one ``params.json`` input entry, read from its copy, which must be the bytes
    the report's run (``recorded``, with its ``source``) was computed from."""
    if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
        raise VerificationError(f"{PARAMS_FILE} has a malformed input entry")
    name = entry["file"]
    path = folder.hash_file(name)
    source = recorded.get("source") if isinstance(recorded, dict) else None
    if not isinstance(source, dict) or folder.files[name].sha256 != source.get("sha256"):
        raise VerificationError(f"{name} differs from the input the report recorded")
    try:
        run = load_results(path, fmt, threshold)
    except EvalArcError as error:
        raise shown_as(error, path, str(folder.root / name)) from None
    return run.with_source(Source(str(source.get("name")), str(source["sha256"])))


def recorded_harness(folder: EvidenceFolder, entries: object) -> list[HarnessFile] | None:
    """The harness copies ``params.json`` lists (None when no harness was scanned)."""
    if entries is None:
        return None
    if not isinstance(entries, list):
        raise VerificationError(f"{PARAMS_FILE} has a malformed harness list")
    harness = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
            raise VerificationError(f"{PARAMS_FILE} has a malformed harness entry")
        data = folder.read_bytes(entry["file"])
        item = HarnessFile(str(entry.get("label")), data, sha256_bytes(data))
        if item.sha256 != entry.get("sha256"):
            raise VerificationError(
                f"{entry['file']} differs from the harness file that was scanned"
            )
        harness.append(item)
    return harness


def recorded_split(folder: EvidenceFolder, name: object, source: dict[str, Any]) -> CaseSplit:
    """The held-out split copy ``name``, shown under the name the report recorded for it
    (``source``, the report's split source object)."""
    if not isinstance(name, str):
        raise VerificationError(f"{PARAMS_FILE} names no split file")
    path = folder.hash_file(name)
    try:
        split = load_split(path)
    except EvalArcError as error:
        raise shown_as(error, path, str(folder.root / name)) from None
    if isinstance(source.get("name"), str):
        split = replace(split, source=Source(source["name"], split.source.sha256))
    return split
