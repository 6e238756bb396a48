"""Harness files named by ``--harness`` (files or folders): read them in a fixed order, bounded
in count and bytes, never through a symbolic link. Scanning them for leaked case text is
:mod:`evalarc.review.leakage`'s (pure) job."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from evalarc.canonical import sha256_bytes
from evalarc.errors import InputError

MAX_HARNESS_FILE_BYTES = 2 * 1024 * 1024
"""Larger harness files are skipped without a word (they are data, not prompts)."""


MAX_HARNESS_FILES = 2_000


MAX_HARNESS_TOTAL_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class HarnessFile:
    """One harness file as scanned: the label reports show, its bytes and their SHA-256."""

    label: str
    data: bytes
    sha256: str


def collect_harness(paths: Sequence[Path]) -> list[HarnessFile]:
    """Read every harness file named by ``paths`` (files or folders), in a fixed order.

    Folders are walked in sorted order, skipping hidden components and nested symlinks. A file
    reached twice is read once; files over 2 MiB are skipped. More than 2,000 files or 16 MiB in
    all is an InputError, as is a missing path or a root that is a symlink.
    """
    files: list[HarnessFile] = []
    seen: set[Path] = set()
    total = 0
    for root in paths:
        for label, path in _enumerate(root):
            try:
                resolved = path.resolve()
                if resolved in seen:
                    continue
                seen.add(resolved)
                if path.stat().st_size > MAX_HARNESS_FILE_BYTES:
                    continue
                with path.open("rb") as handle:
                    data = handle.read(MAX_HARNESS_FILE_BYTES + 1)
            except OSError as error:
                raise InputError(
                    f"cannot read harness file {label}: {error.strerror or error}"
                ) from None
            if len(data) > MAX_HARNESS_FILE_BYTES:
                continue
            files.append(HarnessFile(label=label, data=data, sha256=sha256_bytes(data)))
            total += len(data)
            if len(files) > MAX_HARNESS_FILES:
                raise InputError(f"--harness names more than {MAX_HARNESS_FILES:,} files")
            if total > MAX_HARNESS_TOTAL_BYTES:
                raise InputError(
                    f"--harness files exceed {MAX_HARNESS_TOTAL_BYTES // (1024 * 1024)} MiB in all"
                )
    return files


def _enumerate(root: Path) -> Iterator[tuple[str, Path]]:
    """(label, path) of every regular file under one ``--harness`` argument, in scan order."""
    if root.is_symlink():
        raise InputError(f"harness path {root.as_posix()} is a symbolic link")
    if not root.exists():
        raise InputError(f"harness path {root.as_posix()} does not exist")
    # Labels name a file by its base name, and a file found in a folder by the folder's name and
    # its path inside it: never the absolute path of the machine that ran the scan.
    if root.is_file():
        yield root.name, root
        return
    if not root.is_dir():
        raise InputError(f"harness path {root.as_posix()} is neither a file nor a folder")
    top = root.resolve().name
    # Depth-first over sorted names, so "a/x" comes before "a.txt" as in a sorted path walk.
    stack: list[Iterator[os.DirEntry[str]]] = [_sorted_entries(root)]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            continue
        if entry.name.startswith(".") or entry.is_symlink():
            continue
        if entry.is_dir(follow_symlinks=False):
            stack.append(_sorted_entries(Path(entry.path)))
        elif entry.is_file(follow_symlinks=False):
            inside = Path(entry.path).relative_to(root).as_posix()
            yield (f"{top}/{inside}" if top else inside), Path(entry.path)


def _sorted_entries(folder: Path) -> Iterator[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
    except OSError as error:
        raise InputError(
            f"cannot list harness folder {folder.as_posix()}: {error.strerror or error}"
        ) from None
    return iter(entries)
