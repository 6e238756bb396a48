"""Immutable candidate snapshots and their fingerprint (durable-kv §8, §1.1).

Before any case runs, the candidate folder is copied into a fresh folder; every session runs that
copy, so later edits to the source cannot change an evaluation in flight. The copy is fingerprinted
while it is made (``candidate_sha256``) and the optional ``evalarc.toml`` command manifest is read
from the copy, never from the live folder.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path

from evalarc.errors import InputError

MAX_SNAPSHOT_BYTES = 10 * 1024 * 1024
MAX_SNAPSHOT_FILES = 1000
SKIPPED_NAMES = frozenset({".git", ".venv", "__pycache__"})
MANIFEST_NAME = "evalarc.toml"
DEFAULT_ENTRY = "main.py"
PLACEHOLDERS = ("{python}", "{workspace}", "{state}")
MAX_COMMAND_ARGS = 64
MAX_COMMAND_CHARS = 8192
_MANIFEST_MAX_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A copied, fingerprinted candidate workspace."""

    path: Path
    """The copy every session runs in (its working directory)."""
    sha256: str
    """``candidate_sha256``: the digest of relative paths, normalised modes and contents."""
    files: int
    """Number of regular files copied."""
    bytes: int
    """Total content bytes copied."""
    command: list[str]
    """The command template (placeholders kept): from ``evalarc.toml`` or the pack default."""
    manifest: bool
    """True when the command came from the candidate's ``evalarc.toml``."""


@dataclass(frozen=True, slots=True)
class _Entry:
    relative: tuple[str, ...]
    source: Path


def normalised_mode(source_mode: int) -> int:
    """0755 when the source had any execute bit, else 0644."""
    return 0o755 if source_mode & 0o111 else 0o644


def file_digest_record(relative_path: bytes, mode: int, content: bytes) -> bytes:
    """The bytes one file contributes to the snapshot digest, in the spec's framing."""
    return (
        len(relative_path).to_bytes(8, "big")
        + relative_path
        + mode.to_bytes(2, "big")
        + len(content).to_bytes(8, "big")
        + content
    )


def snapshot_candidate(src: Path, dest: Path, default_command: list[str]) -> Snapshot:
    """Copy candidate folder ``src`` to the new folder ``dest`` and fingerprint the copy.

    Raises InputError naming ``src`` when it is not a folder, holds a symlink or special file,
    exceeds 10 MiB or 1000 files, is empty, has an invalid ``evalarc.toml``, or has no manifest and
    no ``main.py``. ``dest`` must not exist; it is removed again when the snapshot fails.
    """
    source = src.resolve()
    if not source.is_dir():
        raise InputError(f"candidate {src}: not a directory")
    entries = _collect(source, src)
    if not entries:
        raise InputError(f"candidate {src}: no files to evaluate")
    try:
        dest.mkdir(mode=0o755)
    except FileExistsError:
        raise InputError(f"snapshot destination {dest} already exists") from None
    try:
        return _copy(entries, src, dest, default_command)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise


def _collect(source: Path, label: Path) -> list[_Entry]:
    """Every regular file under ``source`` in sorted path order (component by component)."""
    entries: list[_Entry] = []
    pending: list[tuple[Path, tuple[str, ...]]] = [(source, ())]
    while pending:
        folder, prefix = pending.pop()
        try:
            children = list(os.scandir(folder))
        except OSError as error:
            raise InputError(f"candidate {label}: cannot list {folder}: {error.strerror}") from None
        for child in children:
            relative = (*prefix, child.name)
            shown = "/".join(relative)
            if child.name in SKIPPED_NAMES:
                continue
            if child.is_symlink():
                raise InputError(f"candidate {label}: symlinks are unsupported ({shown})")
            if child.is_dir(follow_symlinks=False):
                pending.append((Path(child.path), relative))
            elif child.is_file(follow_symlinks=False):
                entries.append(_Entry(relative, Path(child.path)))
                if len(entries) > MAX_SNAPSHOT_FILES:
                    raise InputError(f"candidate {label}: more than {MAX_SNAPSHOT_FILES} files")
            else:
                raise InputError(f"candidate {label}: special files are unsupported ({shown})")
    entries.sort(key=lambda entry: entry.relative)
    return entries


def _read_regular(path: Path, budget: int, label: Path, shown: str) -> tuple[bytes, int]:
    """Read a file that must still be regular (no symlink swapped in), at most budget + 1 bytes."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        raise InputError(f"candidate {label}: cannot read {shown}: {error.strerror}") from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"candidate {label}: special files are unsupported ({shown})")
        chunks: list[bytes] = []
        size = 0
        while size <= budget and (chunk := os.read(descriptor, min(1 << 20, budget + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks), info.st_mode
    finally:
        os.close(descriptor)


def _copy(entries: list[_Entry], label: Path, dest: Path, default_command: list[str]) -> Snapshot:
    digest = hashlib.sha256()
    total = 0
    for entry in entries:
        shown = "/".join(entry.relative)
        content, source_mode = _read_regular(entry.source, MAX_SNAPSHOT_BYTES - total, label, shown)
        total += len(content)
        if total > MAX_SNAPSHOT_BYTES:
            raise InputError(f"candidate {label}: larger than {MAX_SNAPSHOT_BYTES} bytes (10 MiB)")
        mode = normalised_mode(source_mode)
        digest.update(file_digest_record(os.fsencode(shown), mode, content))
        target = dest.joinpath(*entry.relative)
        target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        target.write_bytes(content)
        target.chmod(mode)
    for folder, _dirs, _files in os.walk(dest):
        Path(folder).chmod(0o755)
    manifest = dest / MANIFEST_NAME
    if manifest.is_file():
        command = parse_manifest(manifest.read_bytes(), label)
    else:
        if not (dest / DEFAULT_ENTRY).is_file():
            raise InputError(
                f"candidate {label}: no {DEFAULT_ENTRY} and no {MANIFEST_NAME} command manifest"
            )
        command = list(default_command)
    return Snapshot(
        path=dest,
        sha256=digest.hexdigest(),
        files=len(entries),
        bytes=total,
        command=command,
        manifest=manifest.is_file(),
    )


def parse_manifest(data: bytes, label: Path) -> list[str]:
    """The command template of an ``evalarc.toml`` (durable-kv §1.1 rules).

    Exactly one top-level key, ``command``: an array of 1-64 non-empty strings without NUL whose
    total length is at most 8192 characters. Anything else raises InputError naming ``label``.
    """
    where = f"candidate {label}: {MANIFEST_NAME}"
    if len(data) > _MANIFEST_MAX_BYTES:
        raise InputError(f"{where} is larger than {_MANIFEST_MAX_BYTES} bytes")
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise InputError(f"{where} is not valid TOML: {error}") from None
    extra = sorted(set(document) - {"command"})
    if extra:
        raise InputError(f"{where} may only set command; unexpected key {extra[0]!r}")
    if "command" not in document:
        raise InputError(f"{where} must set command")
    command = document["command"]
    if not isinstance(command, list):
        raise InputError(f"{where}: command must be an array of strings")
    if not 1 <= len(command) <= MAX_COMMAND_ARGS:
        raise InputError(f"{where}: command must have 1 to {MAX_COMMAND_ARGS} arguments")
    arguments: list[str] = []
    for index, argument in enumerate(command):
        if not isinstance(argument, str) or not argument:
            raise InputError(f"{where}: command argument {index} must be a non-empty string")
        if "\x00" in argument:
            raise InputError(f"{where}: command argument {index} contains NUL")
        arguments.append(argument)
    if sum(len(argument) for argument in arguments) > MAX_COMMAND_CHARS:
        raise InputError(f"{where}: command is longer than {MAX_COMMAND_CHARS} characters")
    return arguments


def expand_command(template: list[str], python: str, workspace: str, state: str) -> list[str]:
    """Substitute the placeholders by plain substring replacement inside every argument.

    Nothing else is interpreted: no shell, no environment variables, no globbing.
    """
    values = {"{python}": python, "{workspace}": workspace, "{state}": state}
    expanded: list[str] = []
    for argument in template:
        # One pass left to right, so a value containing "{state}" is never substituted again.
        result: list[str] = []
        index = 0
        while index < len(argument):
            for placeholder, value in values.items():
                if argument.startswith(placeholder, index):
                    result.append(value)
                    index += len(placeholder)
                    break
            else:
                result.append(argument[index])
                index += 1
        expanded.append("".join(result))
    return expanded
