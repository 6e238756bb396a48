"""Read members of an untrusted ZIP archive one at a time, with hard limits on what it may cost.

``zipfile`` is used only to parse the central directory; member data is located and decompressed
here, so the limits apply to bytes actually produced rather than to sizes the archive claims.
Supported methods: 0 (stored), 8 (DEFLATE) and 93 (Zstandard, written by current Inspect AI).
Every problem is an :class:`~evalarc.errors.InputError` naming the archive's base name.
"""

from __future__ import annotations

import re
import struct
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

from evalarc.errors import InputError
from evalarc.formats.budget import note_read

MEMBER_CAP = 64 * 1024 * 1024
"""No single member may decompress to more than this many bytes."""
TOTAL_CAP = 512 * 1024 * 1024
"""The members read from one archive may not decompress to more than this in total."""
CENTRAL_DIRECTORY_CAP = 32 * 1024 * 1024
"""A larger central directory is refused before zipfile parses it (bounds ZipInfo memory)."""
BOMB_RATIO = 1000
"""Output beyond RATIO_FLOOR bytes that exceeds this many times the compressed size is a bomb."""
RATIO_FLOOR = 1024 * 1024
_CHUNK = 1024 * 1024

STORED = 0
DEFLATED = 8
ZSTANDARD = 93
_METHODS = (STORED, DEFLATED, ZSTANDARD)

_LOCAL_HEADER = struct.Struct("<4s2xHH16xHH")
"""Local file header: magic, version, flags, method, time/date/CRC/sizes, name and extra lengths."""
_LOCAL_MAGIC = b"PK\x03\x04"
_EOCD_MAGIC = b"PK\x05\x06"
_EOCD_SIZE = 22
_ZIP64_LOCATOR_MAGIC = b"PK\x06\x07"
_ZIP64_EOCD_MAGIC = b"PK\x06\x06"


def show_name(text: str, limit: int = 80) -> str:
    """A member or sample name safe to put in a one-line message: repr, cut to ``limit``."""
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


_UNSAFE_NAME = re.compile(r"^$|^/|^[A-Za-z]:|[\\\x00-\x1f]|(^|/)\.\.(/|$)")


def unsafe_member_name(name: str) -> bool:
    """True when ``name`` could escape an extraction folder or hide its real name: empty,
    absolute, drive-qualified, containing a ``..`` step, a backslash, a NUL or another control
    character."""
    return _UNSAFE_NAME.search(name) is not None


class SafeArchive:
    """An open ZIP archive whose members are read whole, one at a time, within fixed limits.

    ``label`` names what the archive is supposed to be ("Inspect log") in the corrupt-file
    message. The running total of decompressed bytes covers every :meth:`read` call.
    """

    def __init__(
        self,
        path: Path,
        label: str = "ZIP archive",
        member_cap: int = MEMBER_CAP,
        total_cap: int = TOTAL_CAP,
    ) -> None:
        self.name = str(path)
        self.label = label
        self.member_cap = member_cap
        self.total_cap = total_cap
        self.total_read = 0
        self._zstd: Any = None
        self._handle: BinaryIO = path.open("rb")
        try:
            self._size = self._handle.seek(0, 2)
            self._check_central_directory_size()
            self._members = self._read_directory()
        except BaseException:
            self._handle.close()
            raise

    def __enter__(self) -> SafeArchive:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._handle.close()

    def names(self) -> list[str]:
        """Member names in central-directory order (directories excluded)."""
        return [name for name in self._members if not name.endswith("/")]

    def __contains__(self, name: object) -> bool:
        return name in self._members

    def read(self, member: str) -> bytes:
        """Decompress one member, checking its method, size, ratio and CRC as bytes arrive."""
        info = self._members[member]
        shown = show_name(member)
        if info.compress_type not in _METHODS:
            raise InputError(
                f"{self.name}: member {shown} uses unsupported compression method "
                f"{info.compress_type}"
            )
        if info.file_size > self.member_cap or info.compress_size > self.member_cap:
            raise InputError(f"{self.name}: member {shown} expands beyond {self.member_cap} bytes")
        if self.total_read + info.file_size > self.total_cap:
            raise InputError(f"{self.name} expands beyond {self.total_cap} bytes")
        compressed = self._compressed_bytes(info)
        pieces: list[bytes] = []
        produced = 0
        crc = 0
        for piece in self._decompress(info, compressed):
            produced += len(piece)
            self.total_read += len(piece)
            if produced > info.file_size:
                raise InputError(
                    f"{self.name}: member {shown} expands to more than its recorded "
                    f"{info.file_size} bytes"
                )
            if produced > self.member_cap:
                raise InputError(
                    f"{self.name}: member {shown} expands beyond {self.member_cap} bytes"
                )
            if self.total_read > self.total_cap:
                raise InputError(f"{self.name} expands beyond {self.total_cap} bytes")
            if produced > RATIO_FLOOR and produced > BOMB_RATIO * max(len(compressed), 1):
                raise InputError(
                    f"{self.name}: member {shown} expands more than {BOMB_RATIO} times its "
                    "compressed size (a decompression bomb)"
                )
            crc = zlib.crc32(piece, crc)
            pieces.append(piece)
            note_read(len(piece))
        if produced != info.file_size or crc != info.CRC:
            raise self._corrupt(f"member {shown} does not match its recorded size and CRC")
        return b"".join(pieces)

    # -- internals -------------------------------------------------------------------------

    def _corrupt(self, detail: str) -> InputError:
        return InputError(f"{self.name} is not a readable {self.label}: {detail}")

    def _check_central_directory_size(self) -> None:
        """Refuse an oversized central directory before zipfile builds a ZipInfo per entry."""
        tail_length = min(self._size, _EOCD_SIZE + 0xFFFF)
        self._handle.seek(self._size - tail_length)
        tail = self._handle.read(tail_length)
        at = tail.rfind(_EOCD_MAGIC)
        if at < 0 or at + _EOCD_SIZE > len(tail):
            return  # zipfile reports the archive as unreadable
        directory_size = int.from_bytes(tail[at + 12 : at + 16], "little")
        locator_at = at - 20
        if directory_size == 0xFFFFFFFF and locator_at >= 0:
            locator = tail[locator_at : locator_at + 20]
            if locator[:4] == _ZIP64_LOCATOR_MAGIC:
                self._handle.seek(int.from_bytes(locator[8:16], "little"))
                record = self._handle.read(56)
                if record[:4] == _ZIP64_EOCD_MAGIC and len(record) == 56:
                    directory_size = int.from_bytes(record[40:48], "little")
        if directory_size > CENTRAL_DIRECTORY_CAP:
            raise InputError(
                f"{self.name} has a central directory over {CENTRAL_DIRECTORY_CAP} bytes"
            )

    def _read_directory(self) -> dict[str, zipfile.ZipInfo]:
        self._handle.seek(0)
        try:
            with zipfile.ZipFile(self._handle) as archive:
                infos = archive.infolist()
        except (
            zipfile.BadZipFile,
            zipfile.LargeZipFile,
            ValueError,
            OSError,
            EOFError,
            struct.error,
            NotImplementedError,
        ) as err:
            raise self._corrupt(str(err) or type(err).__name__) from None
        members: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            name = info.orig_filename
            if unsafe_member_name(name):
                raise InputError(f"{self.name} has an unsafe member name {show_name(name)}")
            if name in members:
                raise InputError(f"{self.name} has a duplicate member {show_name(name)}")
            if info.flag_bits & 0x1:
                raise InputError(f"{self.name}: member {show_name(name)} is encrypted")
            members[name] = info
        return members

    def _compressed_bytes(self, info: zipfile.ZipInfo) -> bytes:
        """The member's raw data, located through its local header (checked against the
        central directory so a second, different name cannot hide there)."""
        shown = show_name(info.orig_filename)
        if not 0 <= info.header_offset <= self._size - _LOCAL_HEADER.size:
            raise self._corrupt(f"member {shown} lies outside the file")
        self._handle.seek(info.header_offset)
        header = self._handle.read(_LOCAL_HEADER.size)
        if len(header) != _LOCAL_HEADER.size:
            raise self._corrupt(f"member {shown} lies beyond the end of the file")
        magic, _flags, _method, name_length, extra_length = _LOCAL_HEADER.unpack(header)
        if magic != _LOCAL_MAGIC:
            raise self._corrupt(f"member {shown} has no local header")
        local_name = self._handle.read(name_length)
        encoding = "utf-8" if info.flag_bits & 0x800 else "cp437"
        if local_name != info.orig_filename.encode(encoding, errors="replace"):
            raise self._corrupt(f"member {shown} has a different name in its local header")
        start = info.header_offset + _LOCAL_HEADER.size + name_length + extra_length
        if start + info.compress_size > self._size:
            raise self._corrupt(f"member {shown} is truncated")
        self._handle.seek(start)
        data = self._handle.read(info.compress_size)
        if len(data) != info.compress_size:
            raise self._corrupt(f"member {shown} is truncated")
        return data

    def _decompress(self, info: zipfile.ZipInfo, data: bytes) -> Iterator[bytes]:
        """Yield the member's decompressed bytes in pieces of at most _CHUNK bytes."""
        shown = show_name(info.orig_filename)
        if info.compress_type == STORED:
            for start in range(0, len(data), _CHUNK):
                yield data[start : start + _CHUNK]
        elif info.compress_type == DEFLATED:
            yield from self._inflate(data, shown)
        else:
            yield from self._unzstd(data, shown)

    def _inflate(self, data: bytes, shown: str) -> Iterator[bytes]:
        inflater = zlib.decompressobj(-15)
        pending = data
        try:
            while not inflater.eof:
                piece = inflater.decompress(pending, _CHUNK)
                pending = inflater.unconsumed_tail
                if not piece and not pending:
                    break
                yield piece
        except zlib.error as err:
            raise self._corrupt(f"member {shown}: {err}") from None
        if not inflater.eof:
            raise self._corrupt(f"member {shown} ends inside its DEFLATE stream")

    def _unzstd(self, data: bytes, shown: str) -> Iterator[bytes]:
        try:
            import zstandard
        except ImportError:
            raise InputError(
                f"{self.name} uses Zstandard compression but the zstandard package is missing; "
                "install it or run `inspect log dump LOG.eval > LOG.json`"
            ) from None
        if self._zstd is None:
            self._zstd = zstandard.ZstdDecompressor(max_window_size=1 << 27)
        decompressor: zstandard.ZstdDecompressor = self._zstd
        try:
            with decompressor.stream_reader(data, read_across_frames=True) as reader:
                while piece := reader.read(_CHUNK):
                    yield piece
        except zstandard.ZstdError as err:
            raise self._corrupt(f"member {shown}: {err}") from None
