#!/usr/bin/env python3
"""Replace the generating machine's absolute paths in the generated corpus files.

    .venv/bin/python tests/corpus/scrub_paths.py           # every generated file under tests/corpus
    .venv/bin/python tests/corpus/scrub_paths.py --check   # exit 1, listing files that hold one

The real tools write where they ran into their output: tracebacks name the tool's venv
(``/tmp/inspect-venv/...``), stack traces the folder the tests ran in, ``file`` attributes the
generator's scratch folder. Those paths belong to the machine that generated the corpus, so each
generator calls :func:`scrub_tree` on what it wrote, and every root that a path starts from is
replaced by a placeholder (``/tmp/`` -> ``$TMPDIR/``, any checkout of this repository ->
``$REPO/``, the folder this checkout sits in -> ``$WORK/``, ``/root/`` and ``/home/<user>/`` ->
``$HOME/``). The rest of each path is kept, so a
trace still reads as the tool wrote it. Nothing else changes; ``.eval`` archives are rewritten
member by member with each member's own compression (Zstandard included).

Files under ``realworld/`` are public fixtures copied verbatim with their source named: left as
they are.
"""

from __future__ import annotations

import argparse
import re
import sys
import zipfile
import zlib
from pathlib import Path

CORPUS = Path(__file__).resolve().parent
TEXT_SUFFIXES = {".json", ".xml", ".log", ".txt", ".jsonl"}
_ZSTD = 93

_WORKSPACE = CORPUS.parents[2]
"""The folder the generating checkout sits in (its sibling worktrees and tool folders)."""


def _rules() -> tuple[tuple[re.Pattern[bytes], bytes], ...]:
    rules = [
        # A checkout of this repository anywhere (a worktree or clone named in a trace).
        (re.compile(rb"(?<![\w$.-])/[^\s\"'<>:|]*?/(?=tests/corpus/)"), b"$REPO/"),
        (re.compile(rb"(?<![\w$.-])/tmp/"), b"$TMPDIR/"),
    ]
    if Path(_WORKSPACE.anchor) != _WORKSPACE:
        workspace = re.escape(str(_WORKSPACE).encode() + b"/")
        rules.append((re.compile(rb"(?<![\w$.-])" + workspace), b"$WORK/"))
    rules += [
        (re.compile(rb"(?<![\w$.-])/root/"), b"$HOME/"),
        (re.compile(rb"(?<![\w$.-])/home/[A-Za-z0-9_.-]+/"), b"$HOME/"),
    ]
    return tuple(rules)


_RULES = _rules()
_LEFT = re.compile(
    rb"(?<![\w$.-])(?:/tmp/|/root/|/home/"
    + (b"|" + re.escape(str(_WORKSPACE).encode() + b"/") if Path("/") != _WORKSPACE else b"")
    + rb")"
)


def scrub_bytes(data: bytes) -> bytes:
    for pattern, placeholder in _RULES:
        data = pattern.sub(placeholder, data)
    return data


def _members(path: Path) -> list[tuple[zipfile.ZipInfo, bytes]]:
    """Every member's info and uncompressed bytes (method 0, 8 or Zstandard)."""
    members = []
    with zipfile.ZipFile(path) as archive, path.open("rb") as raw:
        for info in archive.infolist():
            raw.seek(info.header_offset)
            header = raw.read(30)
            name_len = int.from_bytes(header[26:28], "little")
            extra_len = int.from_bytes(header[28:30], "little")
            raw.seek(info.header_offset + 30 + name_len + extra_len)
            data = raw.read(info.compress_size)
            if info.compress_type == _ZSTD:
                import zstandard  # a project dependency; text-only generators never need it

                data = zstandard.ZstdDecompressor().decompress(data, max_output_size=info.file_size)
            elif info.compress_type == zipfile.ZIP_DEFLATED:
                data = zlib.decompress(data, -15)
            elif info.compress_type != zipfile.ZIP_STORED:
                raise SystemExit(f"{path}: member {info.filename} uses method {info.compress_type}")
            members.append((info, data))
    return members


def _write_archive(path: Path, members: list[tuple[zipfile.ZipInfo, bytes]]) -> None:
    """Write members back with their own methods; zipfile learns Zstandard for the duration."""
    get_compressor = zipfile._get_compressor  # type: ignore[attr-defined]
    check = zipfile._check_compression  # type: ignore[attr-defined]

    def compressor(compress_type: int, level: int | None = None) -> object:
        if compress_type == _ZSTD:
            import zstandard

            return zstandard.ZstdCompressor().compressobj()
        return get_compressor(compress_type, level)

    def checked(compress_type: int) -> None:
        if compress_type != _ZSTD:
            check(compress_type)

    zipfile._get_compressor = compressor  # type: ignore[attr-defined]
    zipfile._check_compression = checked  # type: ignore[attr-defined]
    try:
        partial = path.with_suffix(path.suffix + ".partial")
        with zipfile.ZipFile(partial, "w") as archive:
            for info, data in members:
                fresh = zipfile.ZipInfo(info.filename, info.date_time)
                fresh.compress_type = info.compress_type
                fresh.external_attr = info.external_attr
                archive.writestr(fresh, data)
        partial.replace(path)
    finally:
        zipfile._get_compressor = get_compressor  # type: ignore[attr-defined]
        zipfile._check_compression = check  # type: ignore[attr-defined]


def scrub_file(path: Path) -> bool:
    """Scrub one file in place; return whether it changed."""
    if path.suffix == ".eval":
        members = _members(path)
        scrubbed = [(info, scrub_bytes(data)) for info, data in members]
        if all(a[1] == b[1] for a, b in zip(members, scrubbed, strict=True)):
            return False
        _write_archive(path, scrubbed)
        return True
    data = path.read_bytes()
    clean = scrub_bytes(data)
    if clean == data:
        return False
    path.write_bytes(clean)
    return True


def generated_files(root: Path = CORPUS) -> list[Path]:
    return sorted(
        path
        for path in root.rglob("*")
        if path.is_file()
        and "realworld" not in path.relative_to(root).parts
        and (path.suffix in TEXT_SUFFIXES or path.suffix == ".eval")
    )


def holds_machine_path(path: Path) -> bool:
    if path.suffix == ".eval":
        return any(_LEFT.search(data) for _, data in _members(path))
    return _LEFT.search(path.read_bytes()) is not None


def scrub_tree(root: Path) -> list[Path]:
    """Scrub every generated file below ``root``; return the files that changed."""
    return [path for path in generated_files(root) if scrub_file(path)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report; exit 1 if any")
    args = parser.parse_args(argv)
    if args.check:
        left = [path for path in generated_files() if holds_machine_path(path)]
        for path in left:
            print(f"{path.relative_to(CORPUS)}: holds an absolute path of the generating machine")
        return 1 if left else 0
    for path in scrub_tree(CORPUS):
        print(f"scrubbed {path.relative_to(CORPUS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
