"""The lifecycle shared by the commands that run candidates: the staged output folder
(parents made and removed again, publication that a signal cannot interrupt), the recordings
written as cases finish, and the event lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

from evalarc import schemas
from evalarc.bundle import write_bytes
from evalarc.cancel import new_temporary_folder
from evalarc.canonical import compact_json, sha256_bytes
from evalarc.clock import now_utc
from evalarc.errors import OutputError
from evalarc.packs import (
    CaseRecording,
    Pack,
)
from evalarc.runtime.recording import (
    RECORDING_SUFFIX,
    RecordingIndex,
    RunKey,
    runtime_fingerprint,
)
from evalarc.schedule import (
    SubjectRun,
)

EVENT_SCHEMA = schemas.EVENT

RECORDINGS_DIR = "recordings"
"""A run folder's transcripts, one file per distinct recording, named by SHA-256."""
INDEX_FILE = "index.json"
"""The recordings index inside :data:`RECORDINGS_DIR`."""
EVENTS_FILE = "events.jsonl"
PAGE_FILE = "index.html"


class RecordingWriter:
    """Saves each accepted recording into a report folder's ``recordings/`` as it arrives
    (named by its SHA-256; equal transcripts share one file)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(exist_ok=True)

    def __call__(self, recording: CaseRecording) -> str:
        data = recording.transcript.jsonl().encode("ascii")
        name = sha256_bytes(data)
        if name != recording.sha256:
            raise OutputError(
                f"recording of {recording.seed}/{recording.case_id} hashed differently when written"
            )
        target = self.folder / f"{name}{RECORDING_SUFFIX}"
        if not target.exists():
            # The staged folder is published by one rename, so no per-file fsync is needed.
            write_bytes(target, data)
        return name


def check_output(output: Path, candidate: Path) -> None:
    """The output folder must be new and must not lie inside the candidate folder."""
    if output.exists() or output.is_symlink():
        raise OutputError(f"output folder {output} already exists; choose a new one")
    target = output.resolve()
    source = candidate.resolve()
    if target == source or target.is_relative_to(source):
        raise OutputError(
            f"output folder {output} is inside the candidate folder {candidate}; "
            "choose a folder outside it"
        )


def event_line(event: Mapping[str, Any]) -> str:
    """One ``evalarc.event.v1`` JSON line (schema and time first, then the event's fields)."""
    return compact_json(stamp_event(event))


def case_progress_line(event: Mapping[str, Any]) -> str:
    """The human line of a finished case (``case_completed``) or of a failed attempt that is
    run again (``case_retried``): ``[ 7/45] seed 41 cas-type-sensitivity: failed (0.43 s)``."""
    width = len(str(event["total_cases"]))
    where = f"[{event['case_number']:>{width}}/{event['total_cases']}] seed {event['seed']} "
    if event.get("event") == "case_retried":
        return (
            f"{where}{event['case_id']}: attempt {event['attempt']} failed ({event['error']}); "
            "running it again"
        )
    attempt = f", attempt {event['attempt']}" if "attempt" in event else ""
    return (
        f"{where}{event['case_id']}: {event['status']} ({event['duration_seconds']:.2f} s{attempt})"
    )


def stamp_event(event: Mapping[str, Any]) -> dict[str, Any]:
    return {"schema_version": EVENT_SCHEMA, "created_at": now_utc().isoformat(), **event}


def make_work_folder(prefix: str, temp_root: Path | None) -> Path:
    """A new private work folder under ``temp_root`` (default: the system's temporary folder),
    registered for removal when the command ends (:func:`evalarc.cancel.new_temporary_folder`);
    remove it with :func:`evalarc.cancel.remove_temporary_folder`."""
    try:
        return new_temporary_folder(prefix, parent=temp_root)
    except OSError as error:
        raise OutputError(f"cannot create a temporary folder: {error.strerror or error}") from None


def make_parents(folder: Path) -> list[Path]:
    """Create ``folder`` and missing parents (e.g. the default ``runs/``); return those made,
    deepest first, so a failed run can remove them again."""
    missing: list[Path] = []
    current = folder
    while not current.exists() and not current.is_symlink() and current != current.parent:
        missing.append(current)
        current = current.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(f"cannot create {folder}: {error.strerror or error}") from None
    return missing


def remove_empty(folders: Sequence[Path]) -> None:
    for folder in folders:
        with suppress(OSError):
            folder.rmdir()


def recording_index(
    pack: Pack, run: SubjectRun, index: RecordingIndex | None = None
) -> RecordingIndex:
    """The run keys of one evaluation's recordings, added to ``index`` (or a new one)."""
    index = index if index is not None else RecordingIndex()
    report = run.report
    runtime: dict[str, Any] = report["runtime"]
    runtime_sha256 = runtime_fingerprint(runtime)
    for seed, case_id, name in run.recordings:
        key = RunKey(
            candidate_sha256=report["candidate_sha256"],
            pack=f"{pack.id}@{pack.version}",
            grader_sha256=report["grader_sha256"],
            seed=seed,
            case_id=case_id,
            runtime_sha256=runtime_sha256,
        )
        index.add(key, name, runtime)
    return index
