"""Report folders: written atomically, read back safely.

Writing: every command that takes ``--output`` builds its folder in a hidden temporary sibling and
renames it into place only when complete, so a failure or Ctrl-C leaves nothing half-written and
an existing folder is never touched. Inputs are copied byte for byte while their SHA-256 is
re-checked, so the copy is exactly what was reviewed.

Reading: :class:`EvidenceFolder` is the only way ``verify`` opens files inside a folder it was
handed. It refuses absolute paths, ``..``, symlinks anywhere on the path, special files and
oversized files, and it records the SHA-256 and size of every file it read.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from evalarc import schemas
from evalarc.cancel import (
    keep_temporary_folder,
    new_temporary_folder,
    publishing,
    remove_temporary_folder,
    signals_held,
)
from evalarc.canonical import JSONValue, pretty_json, sha256_bytes, sha256_file, strict_loads
from evalarc.errors import EvalArcError, InputError, OutputError, VerificationError
from evalarc.formats.origins import forget_origin, note_origin

if TYPE_CHECKING:
    from evalarc.formats.model import Run

PARAMS_SCHEMA = schemas.REPORT_PARAMS
PARAMS_FILE = "params.json"
MAX_EVIDENCE_FILE_BYTES = 512 * 1024 * 1024
_CHUNK = 1 << 20


# --------------------------------------------------------------------------- writing


def check_new_output(dest: Path) -> None:
    """Refuse an output folder that exists already (a dangling symlink counts as existing)."""
    if dest.exists() or dest.is_symlink():
        raise OutputError(f"output folder {dest} already exists; choose a new one")


@contextlib.contextmanager
def staged_folder(dest: Path) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``dest``; publish it as ``dest`` on success.

    On any exception (including a cancel) the temporary folder is removed and ``dest`` is left
    as it was. Publishing is a single rename, so a reader never sees a partial folder; a cancel
    that came before it wins, and once the command's own output is published its result stands
    (:func:`evalarc.cancel.publishing`).
    """
    check_new_output(dest)
    parent = dest.parent if str(dest.parent) else Path(".")
    if not parent.is_dir():
        raise OutputError(f"cannot write {dest}: {parent} is not a folder")
    staging: Path | None = None
    try:
        # Created and registered with the signals held: no cancel lands between making the
        # folder and owning its removal (the command's end removes it if this clean-up is cut).
        try:
            staging = new_temporary_folder(f".{dest.name}.", suffix=".partial", parent=parent)
        except OSError as error:
            raise OutputError(f"cannot write {dest}: {error.strerror or error}") from None
        yield staging
        check_new_output(dest)
        with publishing(dest):
            try:
                # Private (0700) while being written; published as any tool creates a folder.
                os.chmod(staging, 0o777 & ~current_umask())
                os.rename(staging, dest)
            except OSError as error:
                raise OutputError(f"cannot publish {dest}: {error.strerror or error}") from None
            keep_temporary_folder(staging)
    except BaseException:
        if staging is not None:
            remove_temporary_folder(staging)
        raise


def current_umask() -> int:
    """The process umask (read without changing it where /proc allows)."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fail_write(path: Path, error: OSError) -> OutputError:
    return OutputError(f"cannot write {path.name}: {error.strerror or error}")


def write_text(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # A lone surrogate (legal in JSON input, e.g. "\ud800") cannot be UTF-8: write it as a
        # backslash escape, which is exactly its JSON spelling, instead of failing.
        path.write_text(text, encoding="utf-8", errors="backslashreplace")
    except OSError as error:
        raise _fail_write(path, error) from None


def write_json(path: Path, value: JSONValue) -> None:
    """Write a report JSON file: indent 2, non-ASCII kept, NaN refused, trailing newline."""
    write_text(path, pretty_json(value))


def write_streamed(path: Path, write_to: Callable[[Callable[[str], object]], None]) -> None:
    """Write a text file piece by piece: ``write_to`` is called with the file's ``write`` (the
    same encoding as :func:`write_text`), so a large report never exists as one string."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8", errors="backslashreplace") as handle:
            write_to(handle.write)
    except OSError as error:
        raise _fail_write(path, error) from None


def copy_verified(source: Path, dest: Path, expected_sha256: str) -> None:
    """Copy ``source`` to ``dest`` byte for byte, requiring the bytes to hash to the digest
    computed when the file was read for the review (else the file changed in between)."""
    digest = hashlib.sha256()
    if source.is_dir() and not source.is_symlink():
        # A SWE-bench run folder: its copy is the one-file bundle its run was read from.
        from evalarc.formats.swebench import folder_bundle

        data = folder_bundle(source)
        write_bytes(dest, data)
        if hashlib.sha256(data).hexdigest() != expected_sha256:
            raise InputError(f"{source} changed while it was being read")
        return
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        with source.open("rb") as reader, dest.open("wb") as writer:
            while chunk := reader.read(_CHUNK):
                digest.update(chunk)
                writer.write(chunk)
    except OSError as error:
        raise _fail_write(dest, error) from None
    if digest.hexdigest() != expected_sha256:
        raise InputError(f"{source} changed while it was being read")


def write_bytes(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    except OSError as error:
        raise _fail_write(path, error) from None


def params_document(kind: str, options: dict[str, JSONValue]) -> dict[str, JSONValue]:
    """The params.json object: schema, kind, then every option in the order given."""
    return {"schema_version": PARAMS_SCHEMA, "kind": kind, **options}


def load_results_once(path: Path, fmt: str, threshold: float) -> tuple[Run, Path]:
    """Read a user-given result file as :func:`evalarc.formats.load_results` does, from a
    private copy made by opening it once (inside an active :func:`private_reads`): the run is
    parsed from exactly the bytes its ``source.sha256`` names, which are the bytes a report
    folder then copies (the returned path). Anything but a regular file is left to the reader,
    which refuses it with its own message."""
    from evalarc.formats import load_results
    from evalarc.formats.load import MAX_RESULT_BYTES

    if path.is_symlink() or not path.is_file():
        return load_results(path, fmt, threshold), path
    copy, _record = private_copy(path, MAX_RESULT_BYTES)
    try:
        return load_results(copy, fmt, threshold), copy
    except EvalArcError as error:
        raise shown_as(error, copy, str(path)) from None


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True, slots=True)
class Later:
    """A derived file's bytes, made only when they are compared (a page inside a site bundle
    is the site's page, so its stand-alone rendering is never needed there)."""

    make: Callable[[], bytes]


@dataclass(frozen=True, slots=True)
class TextStream:
    """A derived text file made as a stream (an eval-health's case lines run to tens of
    megabytes): ``write_to`` writes its text through the function it is given, and the file is
    compared with it piece by piece (:meth:`EvidenceFolder.matches_text`)."""

    write_to: Callable[[Callable[[str], object]], None]


Derived = dict[str, bytes | Later | TextStream | Callable[[bytes], str | None]]


def text_bytes(text: str) -> bytes:
    """A text file's bytes exactly as :func:`write_text` writes them."""
    return text.encode("utf-8", errors="backslashreplace")


@dataclass(frozen=True, slots=True)
class FileRecord:
    sha256: str
    bytes: int


# --------------------------------------------------------------------------- private reads


@dataclass
class _PrivateReads:
    """The private copies made during one command (see :func:`private_reads`)."""

    root: Path | None = None
    copies: dict[str, tuple[Path, FileRecord]] = field(default_factory=dict)
    made: int = 0

    def new_file(self, name: str) -> Path:
        """A new empty slot ``<private folder>/<n>/<name>`` (the base name kept, so a reader's
        message and a copy's suffix stay the same)."""
        if self.root is None:
            # Made and registered with the signals held: a cancel at any point removes it.
            try:
                self.root = new_temporary_folder("evalarc-private-")
            except OSError as error:
                raise OutputError(
                    f"cannot create a temporary folder: {error.strerror or error}"
                ) from None
        slot = self.root / str(self.made)
        self.made += 1
        slot.mkdir(mode=0o700)
        return slot / name

    def remove(self) -> None:
        if self.root is not None:
            remove_temporary_folder(self.root)
            self.root = None
        for dest, _ in self.copies.values():
            forget_origin(dest)


_READS: contextvars.ContextVar[_PrivateReads | None] = contextvars.ContextVar(
    "evalarc_private_reads", default=None
)


@contextlib.contextmanager
def private_reads() -> Iterator[None]:
    """While active, every file an :class:`EvidenceFolder` reads (and every input given to
    :func:`private_copy`) is opened exactly once: streamed through SHA-256 into a private copy
    (a 0700 temporary folder) that every later read of that file, hashing or parsing, uses.
    A file swapped or rewritten in place after it was hashed therefore cannot be what is parsed
    (time of check, time of use). Nested uses share the outermost one; the copies are removed
    when it ends, whatever ends it (an error or a cancel)."""
    if _READS.get() is not None:
        yield
        return
    reads = _PrivateReads()
    token = _READS.set(reads)
    try:
        yield
    finally:
        with signals_held():
            _READS.reset(token)
            reads.remove()


def _open_beneath(root: Path, parts: tuple[str, ...]) -> int:
    """A read-only descriptor of ``root/parts``, walked one component at a time with
    ``O_NOFOLLOW`` (a folder swapped for a symlink after it was checked is refused) and
    ``O_NONBLOCK`` (a FIFO put in a file's place cannot stall the read)."""
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    directory = flags | getattr(os, "O_DIRECTORY", 0)
    fd = os.open(root, directory)
    try:
        for part in parts[:-1]:
            inner = os.open(part, directory, dir_fd=fd)
            os.close(fd)
            fd = inner
        return os.open(parts[-1], flags | getattr(os, "O_NONBLOCK", 0), dir_fd=fd)
    finally:
        os.close(fd)


def _stream_copy(fd: int, dest: Path, limit: int) -> FileRecord | None:
    """Copy the open file ``fd`` into the new file ``dest`` (mode 0400 when done) while hashing
    it; None when it holds more than ``limit`` bytes."""
    digest = hashlib.sha256()
    size = 0
    out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    with os.fdopen(out, "wb") as writer:
        while chunk := os.read(fd, _CHUNK):
            size += len(chunk)
            if size > limit:
                return None
            digest.update(chunk)
            writer.write(chunk)
    os.chmod(dest, 0o400)
    return FileRecord(sha256=digest.hexdigest(), bytes=size)


def private_copy(
    path: Path, limit: int, *, error: type[EvalArcError] = InputError
) -> tuple[Path, FileRecord]:
    """The private copy of the user-given file ``path`` inside the active
    :func:`private_reads` (made on first use: the file is opened once), with its digest."""
    reads = _READS.get()
    if reads is None:
        raise RuntimeError("private_copy needs an active private_reads()")
    key = os.path.abspath(path)
    if key in reads.copies:
        return reads.copies[key]
    # The folders on the way may be links (a user's path); the file itself may not.
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(key, flags | getattr(os, "O_NONBLOCK", 0))
    except OSError as failure:
        if failure.errno == errno.ELOOP:
            raise error(f"{path} is not a regular file") from None
        raise error(f"cannot read {path}: {failure.strerror or failure}") from None
    return _copy_open(reads, key, fd, str(path), Path(key).name, limit, error)


def _copy_open(
    reads: _PrivateReads,
    key: str,
    fd: int,
    shown: str,
    name: str,
    limit: int,
    error: type[EvalArcError],
) -> tuple[Path, FileRecord]:
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{shown} is not a regular file")
        if info.st_size > limit:
            raise error(f"{shown} exceeds {limit} bytes")
        os.set_blocking(fd, True)
        try:
            dest = reads.new_file(name)
            record = _stream_copy(fd, dest, limit)
        except OSError as failure:
            raise error(
                f"cannot read {shown} into its private copy: {failure.strerror or failure}"
            ) from None
    finally:
        os.close(fd)
    if record is None:
        raise error(f"{shown} exceeds {limit} bytes")
    reads.copies[key] = (dest, record)
    note_origin(dest, Path(key))
    return dest, record


def shown_as(error: EvalArcError, copy: Path, shown: str) -> EvalArcError:
    """``error`` (raised while reading the private ``copy``) naming the file as ``shown``."""
    message = error.message
    if str(copy) not in message:
        return error
    return type(error)(message.replace(str(copy), shown))


@dataclass
class EvidenceFolder:
    """Read files inside a received folder without trusting its layout."""

    root: Path
    files: dict[str, FileRecord] = field(default_factory=dict)

    def __post_init__(self) -> None:
        root = Path(os.path.abspath(self.root))
        _refuse_symlinks(root)
        if not root.is_dir():
            raise VerificationError(f"{self.root} is not a folder")
        self.root = root

    def path_of(self, relative: str) -> Path:
        """Resolve a recorded relative path safely (no absolute paths, no ``..``, no links)."""
        if not isinstance(relative, str) or not relative or "\x00" in relative:
            raise VerificationError(
                f"evidence path {relative!r} in {self.root.name} is not a relative file name"
            )
        pure = PurePosixPath(relative)
        if (
            pure.is_absolute()
            or relative.startswith("\\")
            or ".." in pure.parts
            or ("\\" in relative)
        ):
            raise VerificationError(
                f"evidence path '{relative}' leaves the folder {self.root.name}"
            )
        target = self.root.joinpath(*pure.parts)
        try:
            os.fsencode(relative)  # a lone surrogate has no file name; os calls would raise
            _refuse_symlinks(target)
        except (OSError, UnicodeError) as error:  # also a name too long for the filesystem
            detail = error.strerror if isinstance(error, OSError) else "not a file name"
            raise VerificationError(
                f"evidence path {relative[:80]!r} in {self.root.name} cannot be read: {detail}"
            ) from None
        return target

    def exists(self, relative: str) -> bool:
        return self.path_of(relative).exists()

    def _private(self, relative: str, limit: int) -> Path | None:
        """The private copy of ``relative`` (see :func:`private_reads`), recorded; None when
        no private reads are active (a writer reading back its own staging folder)."""
        reads = _READS.get()
        if reads is None:
            return None
        target = self.path_of(relative)
        key = str(target)
        if key not in reads.copies:
            try:
                fd = _open_beneath(self.root, PurePosixPath(relative).parts)
            except FileNotFoundError:
                raise VerificationError(f"{relative} is missing from {self.root.name}") from None
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise VerificationError(f"evidence contains a symlink: {target}") from None
                raise VerificationError(f"cannot read {relative}: {error.strerror}") from None
            _copy_open(reads, key, fd, relative, target.name, limit, VerificationError)
        copy, record = reads.copies[key]
        if record.bytes > limit:
            raise VerificationError(f"{relative} exceeds {limit} bytes")
        self.files[relative] = record
        return copy

    def read_bytes(self, relative: str, limit: int = MAX_EVIDENCE_FILE_BYTES) -> bytes:
        private = self._private(relative, limit)
        if private is not None:
            return private.read_bytes()
        target = self.path_of(relative)
        try:
            info = target.lstat()
        except FileNotFoundError:
            raise VerificationError(f"{relative} is missing from {self.root.name}") from None
        except OSError as error:
            raise VerificationError(f"cannot read {relative}: {error.strerror}") from None
        if not stat.S_ISREG(info.st_mode):
            raise VerificationError(f"{relative} is not a regular file")
        if info.st_size > limit:
            raise VerificationError(f"{relative} exceeds {limit} bytes")
        try:
            with target.open("rb") as handle:
                data = handle.read(limit + 1)
        except OSError as error:
            raise VerificationError(f"cannot read {relative}: {error.strerror}") from None
        if len(data) > limit:
            raise VerificationError(f"{relative} exceeds {limit} bytes")
        self.files[relative] = FileRecord(sha256=sha256_bytes(data), bytes=len(data))
        return data

    def _regular_file(self, relative: str, limit: int) -> Path:
        """The path to read ``relative`` from: its private copy when private reads are active,
        else its safe path, refused unless it is a regular file within ``limit`` bytes (checked
        from its listing, before a byte is read)."""
        private = self._private(relative, limit)
        if private is not None:
            return private
        target = self.path_of(relative)
        try:
            info = target.lstat()
        except FileNotFoundError:
            raise VerificationError(f"{relative} is missing from {self.root.name}") from None
        if not stat.S_ISREG(info.st_mode):
            raise VerificationError(f"{relative} is not a regular file")
        if info.st_size > limit:
            raise VerificationError(f"{relative} exceeds {limit} bytes")
        return target

    def hash_file(self, relative: str, limit: int = MAX_EVIDENCE_FILE_BYTES) -> Path:
        """Check and record a (possibly large) file by streaming it; return the path to parse
        it from: under :func:`private_reads` the private copy whose bytes were hashed, so what
        is parsed is exactly what is recorded."""
        target = self._regular_file(relative, limit)
        if _READS.get() is None:  # else the private copy was hashed as it was made
            digest, size = sha256_file(target)
            self.files[relative] = FileRecord(sha256=digest, bytes=size)
        return target

    def matches_text(
        self,
        relative: str,
        write_to: Callable[[Callable[[str], object]], None],
        limit: int = MAX_EVIDENCE_FILE_BYTES,
    ) -> bool:
        """Whether the file holds exactly the text ``write_to`` writes (through the function it
        is given, encoded as :func:`write_text` encodes), compared piece by piece as it is
        written, so neither side is ever whole in memory; the file is recorded when it does."""
        target = self._regular_file(relative, limit)
        digest = hashlib.sha256()
        size = 0
        try:
            with target.open("rb") as handle:

                def compare(text: str) -> None:
                    nonlocal size
                    expected = text_bytes(text)
                    found = handle.read(len(expected))
                    digest.update(found)
                    size += len(found)
                    if found != expected:
                        raise _Differs

                write_to(compare)
                if handle.read(1):
                    return False
        except _Differs:
            return False
        except OSError as error:
            raise VerificationError(f"cannot read {relative}: {error.strerror}") from None
        self.files[relative] = FileRecord(sha256=digest.hexdigest(), bytes=size)
        return True

    def files_json(self) -> dict[str, dict[str, object]]:
        return {
            name: {"sha256": record.sha256, "bytes": record.bytes}
            for name, record in sorted(self.files.items())
        }


class _Differs(Exception):
    """A compared file left the expected text (raised to stop reading it)."""


def _refuse_symlinks(path: Path) -> None:
    """Refuse a symlink at ``path`` or any parent up to (not including) the filesystem root."""
    current = path
    while current != current.parent:
        if current.is_symlink():
            raise VerificationError(f"evidence contains a symlink: {current}")
        current = current.parent


def recorded_object(value: object, *keys: str) -> dict[str, Any]:
    """The object at ``keys`` inside a received report's JSON, or ``{}`` when any step is
    missing or not an object (a tampered report must be refused, not crash the reader)."""
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else {}


MAX_REPORT_JSON_BYTES = 64 * 1024 * 1024


class ReportHead(dict[str, Any]):
    """A report file's top-level members read without its bulk (see :func:`load_report_head`),
    or no member at all; :attr:`model` is the typed report the file was found equal to, byte
    for byte, by its kind's recomputation (or the report a writing command just wrote)."""

    model: Any = None


def load_report_head(folder: EvidenceFolder, name: str, bulk: frozenset[str]) -> ReportHead:
    """A report JSON object's top-level members, the ``bulk`` ones passed over unread (memory
    follows the largest other member, not the file). Strict like :func:`load_report_json` in
    what it keeps; what it passes over is checked by the caller, which compares the whole file
    with the recomputed report's text."""
    from evalarc.formats.jsonstream import STRICT_DECODER, CapExceeded, TextWindow, object_members

    path = folder.hash_file(name)
    head = ReportHead()
    try:
        with path.open("rb") as handle:
            window = TextWindow(handle, STRICT_DECODER)
            if window.peek() != "{":
                raise VerificationError(f"{name} is not a JSON object")
            for key in object_members(window):
                if key in bulk:
                    window.jump()
                else:
                    head[key] = window.value()
            window.finish()
    except (ValueError, RecursionError, CapExceeded) as error:
        raise VerificationError(f"{name} is not valid JSON: {error}") from None
    except OSError as error:
        raise VerificationError(f"cannot read {name}: {error.strerror}") from None
    return head


def load_report_json(folder: EvidenceFolder, name: str) -> dict[str, Any]:
    """Read a JSON object from a received folder: strict (no NaN, no duplicate keys), bounded."""
    data = folder.read_bytes(name, limit=MAX_REPORT_JSON_BYTES)
    try:
        value = strict_loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as error:
        raise VerificationError(f"{name} is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise VerificationError(f"{name} is not a JSON object")
    return value


# --------------------------------------------------------------------------- trees

MAX_TREE_DEPTH = 32
"""Folders a received report folder or site may nest (a pack's candidate is a few deep)."""
MAX_FOLDER_FILES = 20_000
MAX_FOLDER_BYTES = 2 * 1024 * 1024 * 1024
HELD_SUFFIXES: dict[str, str] = {
    ".json": "application/json",
    ".jsonl": "text/plain; charset=utf-8",
    ".eval": "application/octet-stream",
    ".md": "text/plain; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".log": "text/plain; charset=utf-8",
    ".diff": "text/plain; charset=utf-8",
    ".patch": "text/plain; charset=utf-8",
    ".toml": "text/plain; charset=utf-8",
    ".yaml": "text/plain; charset=utf-8",
    ".yml": "text/plain; charset=utf-8",
    ".ini": "text/plain; charset=utf-8",
    ".cfg": "text/plain; charset=utf-8",
    ".lock": "text/plain; charset=utf-8",
    ".csv": "text/plain; charset=utf-8",
    ".py": "text/plain; charset=utf-8",
    ".sh": "text/plain; charset=utf-8",
    ".js": "text/plain; charset=utf-8",
    ".mjs": "text/plain; charset=utf-8",
    ".cjs": "text/plain; charset=utf-8",
    ".ts": "text/plain; charset=utf-8",
    ".stdout": "text/plain; charset=utf-8",
    ".stderr": "text/plain; charset=utf-8",
    "": "application/octet-stream",
}
"""The ALLOW-LIST of what a report folder or a site may hold besides EvalArc's own pages, by
lowercased suffix (the last one: ``baseline.xml.txt`` is ``.txt``), with the type ``site serve``
sends each as. A static host (GitHub Pages, S3, nginx) picks a file's type from its suffix, and
about 180 suffixes map to HTML, XML, SVG or PDF, documents a browser runs script in (``.xsd``,
``.rng``, ``.rss``, ``.atom``, ``.kml``, even ``.rs`` as ``application/rls-services+xml``);
a deny-list of them is never complete. Every suffix here is data or source text that hosts
serve as text, JSON, a script (never run unless a page loads it) or a download, so anything
else, including ``.xml`` and ``.html`` not written by EvalArc, is refused by ``verify``,
``site build`` and ``site check`` and not served by ``site serve``."""
PAGE_SUFFIX = ".html"
"""EvalArc's pages (a folder's ``index.html``, a site's index and docs pages): never kept as
given, always rendered again and compared, then checked by :mod:`evalarc.site.check`."""


def held_suffix(relative: str) -> str:
    """The suffix that decides a file's type on a static host (lowercased, last one only)."""
    return PurePosixPath(relative.lower()).suffix


def is_active(relative: str) -> bool:
    """Whether a file of this name may NOT be kept in a report folder or published in a site:
    its suffix is outside :data:`HELD_SUFFIXES` (so a static host may serve it as a document a
    browser runs script in, or as a type nobody has checked)."""
    return held_suffix(relative) not in HELD_SUFFIXES


def refused_type(name: str, relative: str | None = None) -> str:
    """The one-line reason the file ``relative`` (default: ``name``), outside
    :data:`HELD_SUFFIXES`, is refused; ``name`` is how the message shows it."""
    suffix = held_suffix(name if relative is None else relative) or "(none)"
    return (
        f"{name} is not a file type a report folder or site may hold ({suffix}: only "
        f"{', '.join(sorted(s for s in HELD_SUFFIXES if s))} or no suffix; a static host may "
        "serve any other as a document a browser runs script in); EvalArc refuses to keep or "
        "publish it"
    )


@dataclass(frozen=True, slots=True)
class TreeFile:
    """One regular file found by :func:`scan_tree`."""

    relative: str
    """POSIX path inside the scanned root."""
    path: Path
    bytes: int


def shown_name(name: str) -> str:
    """A received file name as a message shows it: control and bidi characters escaped."""
    from evalarc.terminal import escape_controls

    return escape_controls(name)


def scan_tree(
    root: Path,
    *,
    shown: str,
    max_files: int = MAX_FOLDER_FILES,
    max_bytes: int = MAX_FOLDER_BYTES,
    max_depth: int = MAX_TREE_DEPTH,
    max_file_bytes: int = MAX_EVIDENCE_FILE_BYTES,
    error: type[EvalArcError] = VerificationError,
) -> list[TreeFile]:
    """Every regular file under ``root``, sorted by path, from ``lstat`` alone (nothing is read).

    Iterative (no recursion, so any depth is refused, not a RecursionError) and bounded: more
    than ``max_depth`` nested folders, ``max_files`` files, ``max_file_bytes`` in one file or
    ``max_bytes`` in all (apparent sizes, so sparse files count fully) is refused before any
    byte is hashed. Also refused: symlinks, hard links (a second name of a file elsewhere, e.g.
    a host secret), device files, FIFOs and sockets, and names holding control, bidi or other
    invisible characters. ``shown`` is the root as the user gave it; messages name
    ``shown/relative``."""
    files: list[TreeFile] = []
    total = 0
    stack: list[tuple[Path, str, int]] = [(root, "", 0)]
    while stack:
        folder, prefix, depth = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as failure:
            where = f"{shown}/{prefix}".rstrip("/")
            raise error(f"cannot read {where}: {failure.strerror or failure}") from None
        for entry in entries:
            relative = f"{prefix}{entry.name}"
            where = f"{shown}/{shown_name(relative)}"
            if has_unsafe_name(entry.name):
                raise error(f"{where}: the file name holds control or invisible characters")
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError as failure:
                raise error(f"cannot read {where}: {failure.strerror or failure}") from None
            if stat.S_ISLNK(info.st_mode):
                lead = "evidence contains a symlink: " if error is VerificationError else ""
                raise error(f"{lead}{where} is a symlink; symlinks are refused")
            if stat.S_ISDIR(info.st_mode):
                if depth + 1 > max_depth:
                    raise error(f"{where} is nested deeper than {max_depth} folders")
                stack.append((Path(entry.path), relative + "/", depth + 1))
                continue
            if not stat.S_ISREG(info.st_mode):
                raise error(f"{where} is not a regular file (a device, FIFO or socket)")
            if info.st_nlink > 1:
                raise error(
                    f"{where} is a hard link ({info.st_nlink} names for one file); "
                    "hard links are refused"
                )
            if info.st_size > max_file_bytes:
                raise error(f"{where} exceeds {max_file_bytes} bytes")
            total += info.st_size
            if total > max_bytes:
                raise error(f"{shown} holds more than {max_bytes} bytes")
            files.append(TreeFile(relative, Path(entry.path), info.st_size))
            if len(files) > max_files:
                raise error(f"{shown} holds more than {max_files} files")
    files.sort(key=lambda item: item.relative)
    return files


def has_unsafe_name(name: str) -> bool:
    """Whether a file name holds a control, bidi, invisible or undecodable character."""
    from evalarc.terminal import has_unsafe_characters

    return has_unsafe_characters(name)


PASSIVE_COPY_SUFFIXES = frozenset({".json", ".eval", ".jsonl"})
"""Suffixes an input copy keeps: a static host serves them as data, never as a document."""


def copy_suffix(original: Path) -> str:
    """The suffix of a report folder's copy of the input ``original``: its own when passive,
    ``.json`` when it has none, and otherwise its own followed by ``.txt`` (``baseline.xml.txt``:
    a JUnit file a site publishes must be served as text, not as an XML document)."""
    suffix = original.suffix
    if not suffix:
        return ".json"
    if suffix.lower() in PASSIVE_COPY_SUFFIXES:
        return suffix
    return suffix + ".txt"
