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
import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from evalarc import schemas
from evalarc.cancel import (
    keep_temporary_folder,
    new_temporary_folder,
    publishing,
    remove_temporary_folder,
)
from evalarc.canonical import JSONValue, pretty_json, sha256_bytes, sha256_file, strict_loads
from evalarc.errors import EvalArcError, InputError, OutputError, VerificationError

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

    def read_bytes(self, relative: str, limit: int = MAX_EVIDENCE_FILE_BYTES) -> bytes:
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
        """The safe path of ``relative``, refused unless it is a regular file within ``limit``
        bytes (checked from its listing, before a byte is read)."""
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
        """Check and record a (possibly large) file by streaming it; return its safe path."""
        target = self._regular_file(relative, limit)
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
ACTIVE_SUFFIXES = frozenset(
    {
        ".html",
        ".htm",
        ".xhtml",
        ".xht",
        ".shtml",
        ".svg",
        ".svgz",
        ".mht",
        ".mhtml",
        ".xsl",
        ".xslt",
        ".xml",
        ".rdf",
        ".xul",
        ".swf",
        ".pdf",
        ".appcache",
        ".webmanifest",
    }
)
"""Documents a browser runs script in when opened directly: EvalArc writes only its own pages
(``index.html`` and the docs' ``.html``), so any other file of these types is refused."""


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


def is_active(relative: str) -> bool:
    """Whether a file of this name is a document a browser would run script in (a static host
    such as GitHub Pages serves it by its suffix: ``.xml`` as XML, whose XHTML-namespace
    ``<script>`` runs)."""
    return PurePosixPath(relative.lower()).suffix in ACTIVE_SUFFIXES


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
