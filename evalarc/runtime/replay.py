"""The ``replay`` backend: recorded candidate transcripts fed back through today's grader.

No candidate runs. Each case's recording is found by its run key (candidate fingerprint, pack
``id@version``, grader fingerprint, seed, case id, runtime fingerprint) in a
:class:`RecordingStore`, and the grader drives it exactly as it would drive a live process:

* every request the grader sends must be the recorded ``send`` line, byte for byte, and every
  session start, EOF and kill must happen where the recording has it;
* the recorded ``recv`` bytes are parsed by today's protocol code, and recorded faults (timeouts,
  floods, bad exits) are raised again with their recorded wording;
* anything else is a **divergence**: the case becomes an environment failure (unassessed, so the
  evaluation is invalid), the divergence is listed on the backend, and nothing is accepted.

When no recording carries today's grader fingerprint, a recording of the same candidate, pack,
seed, case and runtime made under another grader is replayed instead: that is the point of
replaying through today's grader, and the divergence check is what keeps it honest.

Stores come in two layouts, told apart by the schema of their ``index.json``:

* a report folder's ``recordings/`` (``evalarc.recording-index.v1``): one ``<sha256>.jsonl`` file
  per recording, as :mod:`evalarc.runtime.recording` writes them;
* the bundled top-level ``recordings/`` (``evalarc.recording-store.v1``): recordings packed into a
  few zstd-compressed bundles, each recording stored once under its SHA-256 however many runs
  produced it, and an index grouping run keys by (candidate, pack, grader, runtime).
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, Protocol

import zstandard

from evalarc import schemas
from evalarc.cancel import keep_temporary_folder, new_temporary_folder, remove_temporary_folder
from evalarc.canonical import JSONValue, sha256_bytes, strict_loads
from evalarc.errors import EnvironmentFailure, InputError, OutputError, UsageError
from evalarc.runtime.jsonl import encode_request, line_bytes, parse_response
from evalarc.runtime.protocol import AgentFault, Limits, Transcript
from evalarc.runtime.recording import (
    CLEANUP_FAILED,
    INDEX_SCHEMA,
    RECORDING_SUFFIX,
    RecordingIndex,
    RunKey,
    is_sha256,
    parse_recording,
    runtime_fingerprint,
)
from evalarc.runtime.snapshot import expand_command

STORE_SCHEMA = schemas.RECORDING_STORE
INDEX_FILE = "index.json"
BUNDLE_SUFFIX = ".jsonl.zst"
MAX_INDEX_BYTES = 32 * 1024 * 1024
MAX_RECORDING_BYTES = 64 * 1024 * 1024
MAX_BUNDLE_BYTES = 64 * 1024 * 1024
"""Largest compressed bundle read."""
MAX_BUNDLE_CONTENT_BYTES = 512 * 1024 * 1024
"""Largest decompressed bundle accepted (a guard against decompression bombs)."""
MISSING_SHOWN = 20
"""Missing recordings named in one message; the rest are counted."""
RUNTIME_SELECTORS = (
    "command",
    "response_timeout_seconds",
    "case_timeout_seconds",
    "startup_timeout_seconds",
    "session_output_limit_bytes",
    "request_limit_bytes",
)
"""Runtime fields an evaluation's options decide; the rest (image id, host Python, platform)
describe where the recording was made and are replayed as recorded."""
_BUNDLE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}" + re.escape(BUNDLE_SUFFIX))
_BUNDLE_HEADER = re.compile(rb"([0-9a-f]{64}) ([0-9]{1,12})\n")


class MissingRecordings(InputError):
    """Some cases have no recording under the requested key; the message lists them."""

    def __init__(self, labels: Sequence[str], where: str, reason: str = "") -> None:
        shown = ", ".join(labels[:MISSING_SHOWN])
        more = f" and {len(labels) - MISSING_SHOWN} more" if len(labels) > MISSING_SHOWN else ""
        detail = f" ({reason})" if reason else ""
        super().__init__(f"{len(labels)} recording(s) missing from {where}{detail}: {shown}{more}")
        self.labels = list(labels)
        self.reason = reason


# -- reading stores --------------------------------------------------------------------------


class BlobSource(Protocol):
    """Files of one store folder, by relative name."""

    def read(self, name: str, limit: int) -> bytes | None:
        """The file's bytes, or None when it does not exist; raises on anything unsafe."""
        ...

    def describe(self, name: str) -> str:
        """How messages name the file."""
        ...


@dataclass(frozen=True, slots=True)
class DirectorySource:
    """A store folder on disk: regular files only, never through a symlink."""

    root: Path

    def describe(self, name: str) -> str:
        return str(self.root / name)

    def read(self, name: str, limit: int) -> bytes | None:
        if "/" in name or name in ("", ".", ".."):
            raise InputError(f"recording store {self.root}: {name!r} is not a file name")
        path = self.root / name
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
        try:
            descriptor = os.open(path, flags)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise InputError(f"{path}: cannot open ({error.strerror})") from None
        try:
            info = os.fstat(descriptor)
            if not stat.S_ISREG(info.st_mode):
                raise InputError(f"{path}: not a regular file")
            if info.st_size > limit:
                raise InputError(f"{path}: larger than {limit} bytes")
            chunks: list[bytes] = []
            size = 0
            while chunk := os.read(descriptor, min(1 << 20, limit + 1 - size)):
                chunks.append(chunk)
                size += len(chunk)
                if size > limit:
                    raise InputError(f"{path}: larger than {limit} bytes")
            return b"".join(chunks)
        finally:
            os.close(descriptor)


@dataclass(slots=True)
class RecordingStore:
    """An index of run keys and the verified recordings it points to."""

    index: RecordingIndex
    where: str
    """How messages name the store (its folder)."""
    _fetch: Callable[[str], bytes | None]
    """Recording SHA-256 -> its canonical bytes (hash already proven), None when absent."""
    _alternatives: dict[tuple[str, str, int, str, str], list[tuple[str, str]]] = field(
        default_factory=dict
    )
    _cache: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for key in sorted(self.index.entries):
            loose = (key.candidate_sha256, key.pack, key.seed, key.case_id, key.runtime_sha256)
            self._alternatives.setdefault(loose, []).append(
                (key.grader_sha256, self.index.entries[key])
            )

    def lookup(self, key: RunKey) -> tuple[str, str] | None:
        """(recording, grader it was made under) for ``key``: the exact key first, else the same
        candidate, pack, seed, case and runtime under another grader (the first by fingerprint)."""
        exact = self.index.lookup(key)
        if exact is not None:
            return exact, key.grader_sha256
        loose = (key.candidate_sha256, key.pack, key.seed, key.case_id, key.runtime_sha256)
        others = self._alternatives.get(loose)
        if not others:
            return None
        grader, recording = others[0]
        return recording, grader

    def has(self, recording: str) -> bool:
        return recording in self._cache or self._fetch(recording) is not None

    def events(self, recording: str) -> list[dict[str, Any]]:
        """The recording's events (parsed once); InputError when absent, altered or malformed."""
        cached = self._cache.get(recording)
        if cached is not None:
            return cached
        data = self._fetch(recording)
        if data is None:
            raise InputError(f"recording {recording} is missing from {self.where}")
        transcript = parse_recording(data, Path(self.where) / f"{recording}{RECORDING_SUFFIX}")
        self._cache[recording] = transcript.events
        return transcript.events


def open_store(folder: Path) -> RecordingStore:
    """Open a recordings folder on disk (either layout); InputError when it is unusable."""
    if not folder.is_dir():
        raise InputError(f"recordings folder {folder} does not exist")
    return read_store(DirectorySource(folder), str(folder))


def read_store(source: BlobSource, where: str) -> RecordingStore:
    """Open a store through ``source`` (a folder on disk, or a folder being verified)."""
    data = source.read(INDEX_FILE, MAX_INDEX_BYTES)
    if data is None:
        raise InputError(f"recordings folder {where} has no {INDEX_FILE}")
    try:
        value = strict_loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as error:
        raise InputError(f"{source.describe(INDEX_FILE)}: not JSON ({error})") from None
    schema = value.get("schema_version") if isinstance(value, dict) else None
    origin = Path(source.describe(INDEX_FILE))
    if schema == INDEX_SCHEMA:
        index = RecordingIndex.from_json(value, origin)
        return RecordingStore(index, where, _loose_fetcher(source))
    if schema == STORE_SCHEMA:
        assert isinstance(value, dict)
        index, bundles = _store_index(value, origin)
        return RecordingStore(index, where, _bundle_fetcher(source, bundles, origin))
    raise InputError(
        f"{origin}: schema {schema!r} is not supported (this EvalArc reads {INDEX_SCHEMA} and "
        f"{STORE_SCHEMA})"
    )


def _loose_fetcher(source: BlobSource) -> Callable[[str], bytes | None]:
    def fetch(recording: str) -> bytes | None:
        if not is_sha256(recording):
            raise InputError(f"recording name {recording!r} is not a SHA-256")
        name = f"{recording}{RECORDING_SUFFIX}"
        data = source.read(name, MAX_RECORDING_BYTES)
        if data is not None and sha256_bytes(data) != recording:
            raise InputError(
                f"recording {source.describe(name)}: content hashes to {sha256_bytes(data)}, "
                "not to its name"
            )
        return data

    return fetch


@dataclass(frozen=True, slots=True)
class _Bundle:
    file: str
    sha256: str


def _store_index(value: dict[str, Any], origin: Path) -> tuple[RecordingIndex, list[_Bundle]]:
    """Read an ``evalarc.recording-store.v1`` index into a RecordingIndex and its bundles."""
    runtimes = value.get("runtimes")
    runs = value.get("runs")
    bundles = value.get("bundles")
    if (
        not isinstance(runtimes, dict)
        or not isinstance(runs, list)
        or not isinstance(bundles, list)
    ):
        raise InputError(f"recording store {origin}: needs runtimes, runs and bundles")
    index = RecordingIndex()
    for name, runtime in runtimes.items():
        if not isinstance(runtime, dict) or runtime_fingerprint(runtime) != name:
            raise InputError(f"recording store {origin}: runtime {str(name)[:16]} does not match")
        index.runtimes[name] = runtime
    for position, run in enumerate(runs):
        try:
            cases = run["cases"]
            if not isinstance(cases, dict):
                raise TypeError("cases must be an object")
            for label, recording in cases.items():
                seed, case_id = split_label(label)
                key = RunKey(
                    run["candidate_sha256"],
                    run["pack"],
                    run["grader_sha256"],
                    seed,
                    case_id,
                    run["runtime_sha256"],
                )
                if key.runtime_sha256 not in index.runtimes:
                    raise ValueError("its runtime is not listed")
                index.add(key, recording)
        except (KeyError, TypeError, ValueError) as error:
            raise InputError(
                f"recording store {origin}: run {position} is invalid ({error})"
            ) from None
    parsed: list[_Bundle] = []
    for position, bundle in enumerate(bundles):
        if (
            not isinstance(bundle, dict)
            or not isinstance(bundle.get("file"), str)
            or not _BUNDLE_NAME.fullmatch(bundle["file"])
            or not is_sha256(bundle.get("sha256"))
        ):
            raise InputError(f"recording store {origin}: bundle {position} is invalid")
        parsed.append(_Bundle(bundle["file"], bundle["sha256"]))
    return index, parsed


def _bundle_fetcher(
    source: BlobSource, bundles: list[_Bundle], origin: Path
) -> Callable[[str], bytes | None]:
    loaded: dict[str, bytes] = {}
    opened = False

    def fetch(recording: str) -> bytes | None:
        nonlocal opened
        if not opened:
            opened = True
            for bundle in bundles:
                loaded.update(_read_bundle(source, bundle, origin))
        return loaded.get(recording)

    return fetch


def _read_bundle(source: BlobSource, bundle: _Bundle, origin: Path) -> dict[str, bytes]:
    where = source.describe(bundle.file)
    data = source.read(bundle.file, MAX_BUNDLE_BYTES)
    if data is None:
        raise InputError(f"recording bundle {where} listed in {origin} is missing")
    if sha256_bytes(data) != bundle.sha256:
        raise InputError(f"recording bundle {where}: content differs from the index")
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)) as reader:
            content = reader.read(MAX_BUNDLE_CONTENT_BYTES + 1)
    except zstandard.ZstdError as error:
        raise InputError(f"recording bundle {where}: not zstd data ({error})") from None
    if len(content) > MAX_BUNDLE_CONTENT_BYTES:
        raise InputError(f"recording bundle {where}: expands past {MAX_BUNDLE_CONTENT_BYTES} bytes")
    return parse_bundle(content, where)


def parse_bundle(content: bytes, where: str) -> dict[str, bytes]:
    """Split decompressed bundle bytes (``<sha256> <length>\\n<bytes>`` repeated) into recordings,
    proving each hashes to its name."""
    recordings: dict[str, bytes] = {}
    position = 0
    while position < len(content):
        header = _BUNDLE_HEADER.match(content, position)
        if header is None:
            raise InputError(f"recording bundle {where}: malformed entry at byte {position}")
        name = header.group(1).decode("ascii")
        size = int(header.group(2))
        start = header.end()
        body = content[start : start + size]
        if len(body) != size:
            raise InputError(f"recording bundle {where}: entry {name[:16]} is truncated")
        if sha256_bytes(body) != name:
            raise InputError(f"recording bundle {where}: entry {name[:16]} does not match its hash")
        recordings[name] = body
        position = start + size
    return recordings


def split_label(label: str) -> tuple[int, str]:
    """``17/read-write-delete`` -> (17, "read-write-delete")."""
    seed_text, separator, case_id = label.partition("/")
    digits = seed_text[1:] if seed_text.startswith("-") else seed_text
    if not separator or not case_id or not digits.isascii() or not digits.isdigit():
        raise ValueError(f"case label {label[:80]!r} is not <seed>/<case id>")
    return int(seed_text), case_id


def case_label(seed: int, case_id: str) -> str:
    return f"{seed}/{case_id}"


# -- writing the bundled store ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoredRun:
    """The recordings of one evaluation, for :func:`write_store`."""

    candidate_sha256: str
    pack: str
    grader_sha256: str
    runtime: Mapping[str, Any]
    cases: Mapping[str, str]
    """Case label (``seed/case id``) -> recording SHA-256."""
    label: str = ""
    """What the run was (e.g. ``python reference``), shown in the index for readers."""


def write_store(
    folder: Path, runs: Sequence[StoredRun], bundles: Mapping[str, Mapping[str, bytes]]
) -> int:
    """Write an ``evalarc.recording-store.v1`` folder (which must not exist): each bundle name
    (``<name>.jsonl.zst``) -> recordings by SHA-256, and the index of ``runs``. Every recording a
    run names must be in some bundle. Returns the total bytes written."""
    if folder.exists() or folder.is_symlink():
        raise OutputError(f"{folder} already exists")
    stored: set[str] = set()
    for contents in bundles.values():
        stored.update(contents)
    runtimes: dict[str, dict[str, Any]] = {}
    index_runs: list[dict[str, Any]] = []
    for run in sorted(runs, key=lambda r: (r.pack, r.label, r.candidate_sha256)):
        runtime_sha256 = runtime_fingerprint(run.runtime)
        runtimes[runtime_sha256] = dict(run.runtime)
        missing = sorted(set(run.cases.values()) - stored)
        if missing:
            raise ValueError(f"run {run.label}: recordings {missing[:3]} are in no bundle")
        index_runs.append(
            {
                "label": run.label,
                "pack": run.pack,
                "candidate_sha256": run.candidate_sha256,
                "grader_sha256": run.grader_sha256,
                "runtime_sha256": runtime_sha256,
                "cases": dict(run.cases),
            }
        )
    compressor = zstandard.ZstdCompressor(level=19, write_checksum=True)
    staging = new_temporary_folder(f".{folder.name}.", parent=folder.parent)
    total = 0
    try:
        bundle_entries: list[dict[str, str]] = []
        for name in sorted(bundles):
            if not _BUNDLE_NAME.fullmatch(name):
                raise ValueError(f"bundle name {name!r} must end in {BUNDLE_SUFFIX}")
            parts: list[bytes] = []
            for sha, data in sorted(bundles[name].items()):
                if sha256_bytes(data) != sha:
                    raise ValueError(f"recording {sha[:16]} does not hash to its name")
                parts.append(f"{sha} {len(data)}\n".encode("ascii") + data)
            packed = compressor.compress(b"".join(parts))
            (staging / name).write_bytes(packed)
            total += len(packed)
            bundle_entries.append({"file": name, "sha256": sha256_bytes(packed)})
        document = {
            "schema_version": STORE_SCHEMA,
            "bundles": bundle_entries,
            "runtimes": {name: runtimes[name] for name in sorted(runtimes)},
            "runs": index_runs,
        }
        text = json.dumps(document, indent=1, ensure_ascii=True, allow_nan=False) + "\n"
        (staging / INDEX_FILE).write_text(text, encoding="ascii")
        total += len(text)
        staging.chmod(0o755)
        os.rename(staging, folder)
        keep_temporary_folder(staging)
    except BaseException:
        remove_temporary_folder(staging)
        raise
    return total


# -- choosing the recorded runtime -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RuntimeRequest:
    """What an evaluation's options say about the runtime a replay must stand in for."""

    command: Sequence[str]
    limits: Limits
    image: str | None = None
    """A Docker image tag the recordings must have been made with; None accepts any."""
    backend: str | None = None
    """``docker`` or ``local``; None accepts either."""

    def wanted(self) -> dict[str, Any]:
        return {"command": list(self.command), **self.limits.to_json()}


def select_runtime(
    store: RecordingStore,
    candidate_sha256: str,
    pack: str,
    request: RuntimeRequest,
    labels: Sequence[str],
) -> str:
    """The fingerprint of the one recorded runtime of this candidate and pack that matches the
    request; MissingRecordings (naming every case) when none does, UsageError when several do."""
    recorded = sorted(
        {
            key.runtime_sha256
            for key in store.index.entries
            if key.candidate_sha256 == candidate_sha256 and key.pack == pack
        }
    )
    wanted = request.wanted()
    matching: list[str] = []
    closest = ""
    for name in recorded:
        runtime = store.index.runtimes.get(name)
        if runtime is None:
            continue
        differences = [
            field_name
            for field_name in RUNTIME_SELECTORS
            if runtime.get(field_name) != wanted[field_name]
        ]
        if request.image is not None and runtime.get("image") != request.image:
            differences.append("image")
        if request.backend is not None and runtime.get("backend") != request.backend:
            differences.append("backend")
        if differences:
            field_name = differences[0]
            shown = (
                request.image
                if field_name == "image"
                else (request.backend if field_name == "backend" else wanted[field_name])
            )
            closest = (
                f"the recordings have {field_name} {json.dumps(runtime.get(field_name))},"
                f" the options ask for {json.dumps(shown)}"
            )
            continue
        matching.append(name)
    if not matching:
        reason = closest or f"no recording of candidate {candidate_sha256[:12]} for {pack}"
        raise MissingRecordings(list(labels), store.where, reason)
    if len(matching) > 1:
        images = ", ".join(str(store.index.runtimes[name].get("image")) for name in matching)
        raise UsageError(
            f"{store.where} holds recordings of this candidate under {len(matching)} runtimes "
            f"(images: {images}); choose one with --image"
        )
    return matching[0]


# -- the backend -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Divergence:
    """A recording that no longer matches what today's grader does."""

    label: str
    recording: str
    message: str

    def describe(self) -> str:
        return f"divergent recording {self.recording[:12]} of {self.label}: {self.message}"


class ReplaySession:
    """One recorded candidate process, replayed event by event."""

    def __init__(self, case: ReplayCaseRun, index: int) -> None:
        self._case = case
        self.index = index
        self._ended = False
        self._exit_code: int | None = None
        self._stdout_bytes = 0
        self._stderr_bytes = 0
        self._tail = ""
        self._requests = 0

    @property
    def exit_code(self) -> int | None:
        return self._exit_code

    @property
    def output_bytes(self) -> int:
        return self._stdout_bytes + self._stderr_bytes

    @property
    def ended(self) -> bool:
        return self._ended

    def stderr_tail(self) -> str:
        return self._tail

    def exchange(self, request: JSONValue) -> JSONValue:
        line = encode_request(request, self._case.limits.request_limit_bytes)
        self._require_running()
        self._case.require_intact()
        self._requests += 1
        sent = line[:-1].decode("ascii")
        recorded = self._case.take(self.index, "send", f"request {self._requests}")
        if recorded.get("line") != sent:
            self._case.diverge(
                f"session {self.index} request {self._requests}: the grader sends "
                f"{_clip(sent)}, the recording has {_clip(recorded.get('line'))}"
            )
        following = self._case.peek()
        if _is(following, "recv", self.index):
            response = self._case.take(self.index, "recv", "the response")
            try:
                data = line_bytes(response)
            except ValueError as error:
                self._case.diverge(f"the recorded response is malformed ({error})")
            try:
                return parse_response(data)
            except AgentFault as fault:
                recorded_fault = self._case.peek()
                if (
                    recorded_fault is None
                    or not _is(recorded_fault, "fault", self.index)
                    or recorded_fault.get("message") != fault.message
                ):
                    self._case.diverge(
                        f"today's protocol code rejects response {self._requests} "
                        f"({fault.message}) but the recording does not"
                    )
                self._raise_recorded_fault()
        if _is(following, "fault", self.index):
            self._raise_recorded_fault()
        self._case.diverge(
            f"after request {self._requests} the recording has {_describe(following)}, "
            "not a response"
        )

    def stop_eof(self) -> None:
        self._require_running()
        self._case.require_intact()
        self._case.take(self.index, "eof", "closing stdin")
        following = self._case.peek()
        if _is(following, "fault", self.index):
            self._raise_recorded_fault()
        if not _is(following, "exit", self.index):
            self._case.diverge(f"after EOF the recording has {_describe(following)}, not an exit")
        self._finish()

    def kill(self) -> None:
        if self._ended or self._case.diverged:
            return
        self._finish()

    def _raise_recorded_fault(self) -> NoReturn:
        fault = self._case.take(self.index, "fault", "a fault")
        self._finish(exit_required=False)
        message = str(fault.get("message", ""))
        if fault.get("kind") == "agent":
            raise AgentFault(message)
        if fault.get("kind") == "environment":
            raise EnvironmentFailure(message)
        self._case.diverge(f"the recorded fault has an unknown kind {fault.get('kind')!r}")

    def _finish(self, exit_required: bool = True) -> None:
        """Take the recorded end of this process: an optional kill, its exit, its stderr."""
        self._ended = True
        if _is(self._case.peek(), "kill", self.index):
            self._case.take(self.index, "kill", "the kill")
        if _is(self._case.peek(), "exit", self.index):
            code = self._case.take(self.index, "exit", "the exit").get("code")
            self._exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
        elif exit_required:
            self._case.diverge(
                f"session {self.index} ends here, but the recording has "
                f"{_describe(self._case.peek())}"
            )
        if _is(self._case.peek(), "stderr", self.index):
            diagnostics = self._case.take(self.index, "stderr", "the diagnostics")
            self._tail = str(diagnostics.get("tail", ""))
            self._stdout_bytes = _count(diagnostics.get("stdout_bytes"))
            self._stderr_bytes = _count(diagnostics.get("stderr_bytes"))

    def _require_running(self) -> None:
        if self._ended:
            raise RuntimeError(f"session {self.index} has already ended")


class ReplayCaseRun:
    """One recorded case: its events, a cursor, and the replay's own transcript."""

    def __init__(
        self, backend: ReplayBackend, label: str, recording: str, events: list[dict[str, Any]]
    ) -> None:
        self.backend = backend
        self.limits = backend.limits
        self.label = label
        self.recording = recording
        self._events = events
        self._cursor = 0
        self.transcript = Transcript()
        self.sessions: list[ReplaySession] = []
        self.diverged = False
        self._closed = False

    @property
    def recorded_seconds(self) -> float:
        """How long the recorded case lasted (its last event's time): a replay reports this,
        not its own timing, so replaying the same recording always writes the same bytes."""
        return float(self._events[-1]["t"]) if self._events else 0.0

    # -- the cursor ---------------------------------------------------------------------------

    def peek(self) -> dict[str, Any] | None:
        return self._events[self._cursor] if self._cursor < len(self._events) else None

    def take(self, session: int, event: str, what: str) -> dict[str, Any]:
        """Consume the next recorded event, which must be ``event`` of ``session``; it joins the
        replay's transcript unchanged (times included), so a faithful replay hashes the same."""
        recorded = self.peek()
        if not _is(recorded, event, session):
            self.diverge(
                f"at {what} of session {session} the grader expects a {event!r} event, the "
                f"recording has {_describe(recorded)}"
            )
        assert recorded is not None
        self._cursor += 1
        self.transcript.events.append(dict(recorded))
        return recorded

    def require_intact(self) -> None:
        if self.diverged:
            raise EnvironmentFailure(f"replay of {self.label} already diverged")

    def diverge(self, message: str) -> NoReturn:
        """Record the divergence, mark the case, and raise (the case becomes unassessed)."""
        if not self.diverged:
            self.diverged = True
            self.backend.divergences.append(Divergence(self.label, self.recording, message))
            last = self.transcript.events[-1]["t"] if self.transcript.events else 0.0
            self.transcript.add(
                "fault",
                max(len(self.sessions) - 1, 0),
                float(last),
                message=f"replay divergence: {message}",
                kind="environment",
            )
        raise EnvironmentFailure(
            f"replay divergence from recording {self.recording[:12]}: {message}"
        )

    # -- CaseRun ------------------------------------------------------------------------------

    def start_session(self) -> ReplaySession:
        if self._closed:
            raise RuntimeError("case is closed")
        self.require_intact()
        index = len(self.sessions)
        following = self.peek()
        if _is(following, "fault", index):
            # The recorded process never started: the budget ran out or the launch failed.
            fault = self.take(index, "fault", "a session start")
            message = str(fault.get("message", ""))
            if fault.get("kind") == "agent":
                raise AgentFault(message)
            raise EnvironmentFailure(message)
        start = self.take(index, "start", "a session start")
        expected = self.backend.expected_argv()
        if expected is not None and start.get("argv") != expected:
            self.diverge(
                f"session {index} starts {_clip(json.dumps(expected))}, the recording started "
                f"{_clip(json.dumps(start.get('argv')))}"
            )
        session = ReplaySession(self, index)
        self.sessions.append(session)
        if _is(self.peek(), "ready", index):
            self.take(index, "ready", "readiness")
        elif _is(self.peek(), "fault", index):
            session._raise_recorded_fault()
        return session

    def abandon(self) -> None:
        """Close without judging the recording: the case was cancelled, nothing is recorded."""
        self._closed = True

    def close(self) -> None:
        """End every session still open (as the live backend kills them) and require that the
        grader used the whole recording."""
        if self._closed:
            return
        self._closed = True
        if self.diverged:
            return
        for session in self.sessions:
            if not session.ended:
                session.kill()
        leftover = self.peek()
        recorded_session = leftover.get("session") if leftover is not None else None
        if (
            leftover is not None
            and self._cursor == len(self._events) - 1
            and isinstance(recorded_session, int)
            and _is(leftover, "fault", recorded_session)
            and leftover.get("kind") == "environment"
            and str(leftover.get("message", "")).startswith(CLEANUP_FAILED)
        ):
            # The live run could not clean the case up (the engine had gone, say).
            fault = self.take(recorded_session, "fault", "the cleanup")
            raise EnvironmentFailure(str(fault["message"]))
        if leftover is not None:
            self.diverge(
                f"the grader finished but the recording continues with {_describe(leftover)}"
            )


class ReplayBackend:
    """Answers the grader from recordings of one candidate (see the module docstring)."""

    name = "replay"

    def __init__(
        self,
        store: RecordingStore,
        *,
        candidate_sha256: str,
        pack: str,
        grader_sha256: str,
        runtime_sha256: str,
        limits: Limits,
    ) -> None:
        self.store = store
        self.candidate_sha256 = candidate_sha256
        self.pack = pack
        self.grader_sha256 = grader_sha256
        self.runtime_sha256 = runtime_sha256
        self.limits = limits
        self._runtime = dict(store.index.runtimes[runtime_sha256])
        self.divergences: list[Divergence] = []
        self.foreign_graders: set[str] = set()
        """Grader fingerprints other than today's whose recordings were replayed."""

    def runtime(self) -> dict[str, Any]:
        return json.loads(json.dumps(self._runtime))  # type: ignore[no-any-return]

    def expected_argv(self) -> list[str] | None:
        """The argv a Docker session of this runtime starts (local argv hold temporary paths and
        are not compared)."""
        if self._runtime.get("backend") != "docker":
            return None
        command = self._runtime.get("command")
        if not isinstance(command, list) or not all(isinstance(part, str) for part in command):
            return None
        return expand_command(command, "python3", "/candidate", "/state")

    def key(self, label: str) -> RunKey:
        seed, case_id = split_label(label)
        return RunKey(
            self.candidate_sha256, self.pack, self.grader_sha256, seed, case_id, self.runtime_sha256
        )

    def require(self, labels: Iterable[str]) -> None:
        """Check before anything runs that every case has a readable, intact recording;
        MissingRecordings lists the absent ones, InputError reports an altered one."""
        missing: list[str] = []
        found: list[str] = []
        for label in labels:
            located = self.store.lookup(self.key(label))
            if located is None or not self.store.has(located[0]):
                missing.append(label)
            else:
                found.append(located[0])
        if missing:
            raise MissingRecordings(missing, self.store.where)
        for recording in found:
            self.store.events(recording)

    @contextmanager
    def open_case(self, label: str) -> Iterator[ReplayCaseRun]:
        located = self.store.lookup(self.key(label))
        if located is None:
            raise EnvironmentFailure(f"no recording of {label} in {self.store.where}")
        recording, grader = located
        if grader != self.grader_sha256:
            self.foreign_graders.add(grader)
        try:
            events = self.store.events(recording)
        except InputError as error:
            raise EnvironmentFailure(error.message) from None
        run = ReplayCaseRun(self, label, recording, events)
        try:
            yield run
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            # Cancelled mid-case: the grader stopped early on purpose. Requiring the rest of the
            # recording here would turn Ctrl-C into a "divergence" (an EnvironmentFailure that
            # replaces the KeyboardInterrupt, so the run went on and ended invalid).
            run.abandon()
            raise
        except BaseException:
            run.close()
            raise
        run.close()


def recordings_label(folder: Path | None) -> str:
    """How a report names the recordings it replayed: ``bundled``, or the folder's name (never
    an absolute path of the machine that ran it)."""
    if folder is None:
        return "bundled"
    return folder.name or folder.resolve().name or "recordings"


def make_replay_backend(
    store: RecordingStore,
    *,
    candidate_sha256: str,
    pack: str,
    grader_sha256: str,
    request: RuntimeRequest,
    labels: Sequence[str],
) -> ReplayBackend:
    """Choose the recorded runtime, check that every case is recorded, build the backend."""
    runtime_sha256 = select_runtime(store, candidate_sha256, pack, request, labels)
    backend = ReplayBackend(
        store,
        candidate_sha256=candidate_sha256,
        pack=pack,
        grader_sha256=grader_sha256,
        runtime_sha256=runtime_sha256,
        limits=request.limits,
    )
    backend.require(labels)
    return backend


# -- helpers ---------------------------------------------------------------------------------


def _is(event: Mapping[str, Any] | None, kind: str, session: int) -> bool:
    return event is not None and event.get("event") == kind and event.get("session") == session


def _describe(event: Mapping[str, Any] | None) -> str:
    if event is None:
        return "nothing more"
    kind = event.get("event")
    detail = f" {_clip(event['line'])}" if kind in ("send", "recv") and "line" in event else ""
    return f"a {kind!r} event of session {event.get('session')}{detail}"


def _clip(value: object, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
