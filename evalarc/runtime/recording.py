"""Recordings: case transcripts saved by content hash, and the index that finds them again.

A recording is :meth:`Transcript.jsonl` written to ``<dir>/<sha256>.jsonl``; its name is the
SHA-256 of its bytes, so a reader can prove it got what was recorded. The index maps a *run key*
(which candidate, pack, grader, seed, case and runtime produced it) to a recording hash, and keeps
each runtime object the keys refer to, so a later replay backend can report the runtime it stands
in for.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalarc import schemas
from evalarc.canonical import sha256_bytes, sha256_json, strict_loads
from evalarc.errors import InputError, OutputError
from evalarc.runtime.protocol import Transcript

RECORDING_SUFFIX = ".jsonl"
MAX_RECORDING_BYTES = 64 * 1024 * 1024
MAX_INDEX_BYTES = 16 * 1024 * 1024
INDEX_SCHEMA = schemas.RECORDING_INDEX
_SHA256 = re.compile(r"[0-9a-f]{64}")
_MAX_EVENT_SECONDS = 1e9
"""No event of a case happens later than this (the longest case limit is a day); a larger time,
e.g. an integer of 400 digits, is refused here rather than overflowing a float later."""
_EVENTS = frozenset({"start", "ready", "send", "recv", "eof", "exit", "kill", "fault", "stderr"})
CLEANUP_FAILED = "cleanup failed: "
"""Start of the message of the environment ``fault`` a live backend records last (and raises)
when it cannot clean a case up; a replay raises it again at the same point."""


def is_sha256(text: object) -> bool:
    """True for 64 lowercase hex digits."""
    return isinstance(text, str) and _SHA256.fullmatch(text) is not None


def recording_path(directory: Path, sha256: str) -> Path:
    if not is_sha256(sha256):
        raise InputError(f"recording name {sha256!r} is not a SHA-256")
    return directory / f"{sha256}{RECORDING_SUFFIX}"


def write_recording(transcript: Transcript, directory: Path) -> str:
    """Save ``transcript`` as ``<directory>/<sha256>.jsonl`` (temp file + rename); return the hash.

    Writing the same transcript twice leaves one identical file.
    """
    data = transcript.jsonl().encode("ascii")
    sha256 = sha256_bytes(data)
    _write_atomic(recording_path(directory, sha256), data)
    return sha256


def read_recording(
    directory: Path, sha256: str, max_bytes: int = MAX_RECORDING_BYTES
) -> Transcript:
    """Load the recording named ``sha256``, proving its bytes hash to its name.

    Raises InputError when it is missing, not a regular file (symlinks are refused), larger than
    ``max_bytes``, altered, or not a canonical transcript.
    """
    path = recording_path(directory, sha256)
    data = _read_bounded(path, max_bytes, "recording")
    actual = sha256_bytes(data)
    if actual != sha256:
        raise InputError(f"recording {path}: content hashes to {actual}, not to its name")
    return parse_recording(data, path)


def parse_recording(data: bytes, origin: Path) -> Transcript:
    """Rebuild a Transcript from recording bytes; they must be exactly its canonical JSON lines."""
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise InputError(f"recording {origin}: not ASCII JSON lines") from None
    transcript = Transcript()
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            event = strict_loads(line)
        except ValueError as error:
            raise InputError(f"recording {origin}: line {number} is not JSON: {error}") from None
        problem = _event_problem(event)
        if problem:
            raise InputError(f"recording {origin}: line {number} {problem}")
        transcript.events.append(event)
    if transcript.jsonl() != text:
        raise InputError(f"recording {origin}: not in canonical JSON-lines form")
    return transcript


def _event_problem(event: object) -> str | None:
    if not isinstance(event, dict):
        return "is not an object"
    if event.get("event") not in _EVENTS:
        return f"has unknown event {str(event.get('event'))[:40]!r}"
    session = event.get("session")
    if not isinstance(session, int) or isinstance(session, bool) or session < 0:
        return "has no valid session number"
    moment = event.get("t")
    if (
        not isinstance(moment, int | float)
        or isinstance(moment, bool)
        or not 0 <= moment <= _MAX_EVENT_SECONDS
    ):
        return "has no valid time"
    return None


def runtime_fingerprint(runtime: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a runtime object (backend, image id, command, limits...)."""
    return sha256_json(dict(runtime))


@dataclass(frozen=True, slots=True, order=True)
class RunKey:
    """Everything that decides what a case run looked like."""

    candidate_sha256: str
    pack: str
    """``<pack id>@<pack version>``, e.g. ``durable-kv@0.1.0``."""
    grader_sha256: str
    seed: int
    case_id: str
    runtime_sha256: str
    """:func:`runtime_fingerprint` of the runtime object the case ran under."""

    def __post_init__(self) -> None:
        for name in ("candidate_sha256", "grader_sha256", "runtime_sha256"):
            if not is_sha256(getattr(self, name)):
                raise ValueError(f"{name} must be 64 lowercase hex digits")
        if "@" not in self.pack:
            raise ValueError("pack must read <id>@<version>")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError("seed must be an integer")
        if not isinstance(self.case_id, str) or not self.case_id:
            raise ValueError("case_id must be a non-empty string")

    def to_json(self) -> dict[str, Any]:
        return {
            "candidate_sha256": self.candidate_sha256,
            "pack": self.pack,
            "grader_sha256": self.grader_sha256,
            "seed": self.seed,
            "case_id": self.case_id,
            "runtime_sha256": self.runtime_sha256,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> RunKey:
        return cls(
            candidate_sha256=value["candidate_sha256"],
            pack=value["pack"],
            grader_sha256=value["grader_sha256"],
            seed=value["seed"],
            case_id=value["case_id"],
            runtime_sha256=value["runtime_sha256"],
        )


@dataclass(slots=True)
class RecordingIndex:
    """Run key -> recording hash, plus the runtime objects the keys fingerprint."""

    entries: dict[RunKey, str] = field(default_factory=dict)
    runtimes: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, key: RunKey, recording: str, runtime: Mapping[str, Any] | None = None) -> None:
        """Point ``key`` at ``recording`` (a re-recording replaces the old hash)."""
        if not is_sha256(recording):
            raise ValueError("recording must be a SHA-256")
        if runtime is not None:
            if runtime_fingerprint(runtime) != key.runtime_sha256:
                raise ValueError("runtime object does not match the key's runtime_sha256")
            self.runtimes[key.runtime_sha256] = dict(runtime)
        self.entries[key] = recording

    def lookup(self, key: RunKey) -> str | None:
        return self.entries.get(key)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": INDEX_SCHEMA,
            "entries": [
                {**key.to_json(), "recording": self.entries[key]} for key in sorted(self.entries)
            ],
            "runtimes": {name: self.runtimes[name] for name in sorted(self.runtimes)},
        }

    @classmethod
    def from_json(cls, value: object, origin: Path) -> RecordingIndex:
        if not isinstance(value, dict):
            raise InputError(f"recording index {origin}: not a JSON object")
        schema = value.get("schema_version")
        if schema != INDEX_SCHEMA:
            raise InputError(
                f"recording index {origin}: schema {schema!r} is not supported "
                f"(this EvalArc reads {INDEX_SCHEMA})"
            )
        index = cls()
        entries = value.get("entries")
        runtimes = value.get("runtimes")
        if not isinstance(entries, list) or not isinstance(runtimes, dict):
            raise InputError(f"recording index {origin}: needs an entries list and runtimes object")
        for name, runtime in runtimes.items():
            if not isinstance(runtime, dict) or runtime_fingerprint(runtime) != name:
                raise InputError(f"recording index {origin}: runtime {name[:16]} does not match")
            index.runtimes[name] = runtime
        for position, entry in enumerate(entries):
            try:
                key = RunKey.from_json(entry)
                recording = entry["recording"]
                index.add(key, recording)
            except (KeyError, TypeError, ValueError) as error:
                raise InputError(
                    f"recording index {origin}: entry {position} is invalid ({error})"
                ) from None
        return index


def load_index(path: Path) -> RecordingIndex:
    """Read an index file; a missing file is an empty index."""
    if not os.path.lexists(path):
        return RecordingIndex()
    data = _read_bounded(path, MAX_INDEX_BYTES, "recording index")
    try:
        value = strict_loads(data)
    except ValueError as error:
        raise InputError(f"recording index {path}: not JSON ({error})") from None
    return RecordingIndex.from_json(value, path)


def save_index(index: RecordingIndex, path: Path) -> None:
    """Write the index atomically with sorted keys, one field per line (readable diffs)."""
    text = (
        json.dumps(index.to_json(), indent=2, sort_keys=True, ensure_ascii=True, allow_nan=False)
        + "\n"
    )
    _write_atomic(path, text.encode("ascii"))


def _write_atomic(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as error:
        raise OutputError(f"cannot write {path}: {error.strerror}") from None
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise OutputError(f"cannot write {path}: {error.strerror}") from None


def _read_bounded(path: Path, max_bytes: int, what: str) -> bytes:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        raise InputError(f"{what} {path}: cannot open ({error.strerror})") from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{what} {path}: not a regular file")
        if info.st_size > max_bytes:
            raise InputError(f"{what} {path}: larger than {max_bytes} bytes")
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(descriptor, min(1 << 20, max_bytes + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:
                raise InputError(f"{what} {path}: larger than {max_bytes} bytes")
        return b"".join(chunks)
    finally:
        os.close(descriptor)
