"""Candidate snapshots: what is copied, what is refused, and the exact digest."""

from __future__ import annotations

import hashlib
import os
import socket
import struct
from pathlib import Path

import pytest

from evalarc.errors import InputError
from evalarc.runtime.snapshot import expand_command, parse_manifest, snapshot_candidate

DEFAULT = ["{python}", "-I", "-B", "main.py", "{state}/store.db"]


def expected_digest(files: list[tuple[str, int, bytes]]) -> str:
    """The spec's framing, spelled out independently with struct."""
    digest = hashlib.sha256()
    for relative, mode, content in files:
        path = relative.encode()
        digest.update(struct.pack(">Q", len(path)) + path)
        digest.update(struct.pack(">H", mode))
        digest.update(struct.pack(">Q", len(content)) + content)
    return digest.hexdigest()


def write(root: Path, relative: str, content: bytes, mode: int = 0o644) -> None:
    target = root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content)
    target.chmod(mode)


def test_single_main_py_digest(tmp_path: Path) -> None:
    source = tmp_path / "cand"
    write(source, "main.py", b"print('hi')\n")
    snapshot = snapshot_candidate(source, tmp_path / "copy", DEFAULT)
    assert snapshot.sha256 == expected_digest([("main.py", 0o644, b"print('hi')\n")])
    assert (snapshot.files, snapshot.bytes) == (1, 12)
    assert snapshot.command == DEFAULT and snapshot.command is not DEFAULT
    assert snapshot.manifest is False
    assert snapshot.path == tmp_path / "copy"
    assert (snapshot.path / "main.py").read_bytes() == b"print('hi')\n"


def test_sorted_order_modes_and_skipped_folders(tmp_path: Path) -> None:
    source = tmp_path / "cand"
    write(source, "main.py", b"main", 0o600)
    write(source, "a-b/x", b"dash", 0o644)
    write(source, "a/b", b"slash", 0o744)
    write(source, "run.sh", b"#!/bin/sh\n", 0o701)
    write(source, "Z", b"", 0o444)
    write(source, ".git/config", b"skipped")
    write(source, "pkg/__pycache__/m.pyc", b"skipped")
    write(source, ".venv/bin/python", b"skipped", 0o755)
    write(source, "pkg/.git", b"skipped too (a worktree file)")
    snapshot = snapshot_candidate(source, tmp_path / "copy", DEFAULT)
    # Sorted component by component: "a/b" precedes "a-b/x" although "-" < "/" as text.
    files = [
        ("Z", 0o644, b""),
        ("a/b", 0o755, b"slash"),
        ("a-b/x", 0o644, b"dash"),
        ("main.py", 0o644, b"main"),
        ("run.sh", 0o755, b"#!/bin/sh\n"),
    ]
    assert snapshot.sha256 == expected_digest(files)
    assert snapshot.files == 5 and snapshot.bytes == sum(len(content) for *_, content in files)
    copied = sorted(
        str(path.relative_to(snapshot.path)) for path in snapshot.path.rglob("*") if path.is_file()
    )
    assert copied == sorted(relative for relative, *_ in files)
    for relative, mode, _ in files:
        assert (snapshot.path / relative).stat().st_mode & 0o7777 == mode
    for folder in (snapshot.path, snapshot.path / "a", snapshot.path / "a-b"):
        assert folder.stat().st_mode & 0o7777 == 0o755


def test_digest_changes_with_the_execute_bit(tmp_path: Path) -> None:
    plain, executable = tmp_path / "plain", tmp_path / "exec"
    write(plain, "main.py", b"x")
    write(executable, "main.py", b"x", 0o755)
    first = snapshot_candidate(plain, tmp_path / "c1", DEFAULT).sha256
    second = snapshot_candidate(executable, tmp_path / "c2", DEFAULT).sha256
    assert first != second
    assert second == expected_digest([("main.py", 0o755, b"x")])


def test_copy_is_independent_of_later_edits(tmp_path: Path) -> None:
    source = tmp_path / "cand"
    write(source, "main.py", b"v1")
    snapshot = snapshot_candidate(source, tmp_path / "copy", DEFAULT)
    write(source, "main.py", b"v2")
    assert (snapshot.path / "main.py").read_bytes() == b"v1"


def test_manifest_sets_the_command_and_is_fingerprinted(tmp_path: Path) -> None:
    source = tmp_path / "cand"
    manifest = b'command = ["node", "main.js", "{state}/db file"]\n'
    write(source, "main.js", b"js")
    write(source, "evalarc.toml", manifest)
    snapshot = snapshot_candidate(source, tmp_path / "copy", DEFAULT)
    assert snapshot.command == ["node", "main.js", "{state}/db file"]
    assert snapshot.manifest is True
    assert snapshot.sha256 == expected_digest(
        [("evalarc.toml", 0o644, manifest), ("main.js", 0o644, b"js")])


def test_source_may_be_reached_through_a_symlink(tmp_path: Path) -> None:
    source = tmp_path / "cand"
    write(source, "main.py", b"x")
    (tmp_path / "link").symlink_to(source)
    assert snapshot_candidate(tmp_path / "link", tmp_path / "copy", DEFAULT).files == 1


def refusal(source: Path, dest: Path) -> str:
    with pytest.raises(InputError) as caught:
        snapshot_candidate(source, dest, DEFAULT)
    assert str(source) in caught.value.message or str(dest) in caught.value.message
    assert not dest.exists() or "already exists" in caught.value.message
    return caught.value.message


def test_symlinks_are_refused_even_dangling(tmp_path: Path) -> None:
    source = tmp_path / "cand"
    write(source, "main.py", b"x")
    (source / "sub").mkdir()
    (source / "sub" / "dangling").symlink_to(tmp_path / "nowhere")
    assert "symlinks are unsupported (sub/dangling)" in refusal(source, tmp_path / "copy")


def test_symlinked_folder_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "cand"
    write(source, "main.py", b"x")
    (source / "lib").symlink_to(tmp_path)
    assert "symlinks are unsupported" in refusal(source, tmp_path / "copy")


def test_fifo_and_socket_are_refused(tmp_path: Path) -> None:
    source = tmp_path / "cand"
    write(source, "main.py", b"x")
    os.mkfifo(source / "pipe")
    assert "special files are unsupported (pipe)" in refusal(source, tmp_path / "c1")
    (source / "pipe").unlink()
    short = Path("/tmp") / f"evalarc-sock-{os.getpid()}"
    short.mkdir()
    try:
        write(short, "main.py", b"x")
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(str(short / "s"))
            assert "special files are unsupported" in refusal(short, tmp_path / "c2")
    finally:
        for child in short.iterdir():
            child.unlink()
        short.rmdir()


def test_size_and_count_limits(tmp_path: Path) -> None:
    big = tmp_path / "big"
    write(big, "main.py", b"x")
    write(big, "data.bin", b"\0" * (10 * 1024 * 1024))
    assert "larger than 10485760 bytes" in refusal(big, tmp_path / "c1")
    exact = tmp_path / "exact"
    write(exact, "main.py", b"")
    write(exact, "data.bin", b"\0" * (10 * 1024 * 1024))
    assert snapshot_candidate(exact, tmp_path / "c2", DEFAULT).bytes == 10 * 1024 * 1024

    many = tmp_path / "many"
    write(many, "main.py", b"x")
    for number in range(999):
        write(many, f"f/{number}", b"")
    assert snapshot_candidate(many, tmp_path / "c3", DEFAULT).files == 1000
    write(many, "f/one-more", b"")
    assert "more than 1000 files" in refusal(many, tmp_path / "c4")


def test_empty_and_missing_sources(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    write(empty, ".git/HEAD", b"only skipped content")
    (empty / "folder").mkdir()
    assert "no files" in refusal(empty, tmp_path / "c1")
    assert "not a directory" in refusal(tmp_path / "missing", tmp_path / "c2")
    write(tmp_path, "plain-file", b"x")
    assert "not a directory" in refusal(tmp_path / "plain-file", tmp_path / "c3")


def test_main_py_required_without_manifest(tmp_path: Path) -> None:
    source = tmp_path / "cand"
    write(source, "app.py", b"x")
    write(source, "sub/main.py", b"x")
    assert "no main.py" in refusal(source, tmp_path / "copy")


def test_existing_destination_is_refused_untouched(tmp_path: Path) -> None:
    source = tmp_path / "cand"
    write(source, "main.py", b"x")
    dest = tmp_path / "copy"
    write(dest, "keep", b"mine")
    assert "already exists" in refusal(source, dest)
    assert (dest / "keep").read_bytes() == b"mine"


@pytest.mark.parametrize(("manifest", "problem"), [
    (b'task = "x"\ncommand = ["a"]\n', "unexpected key 'task'"),
    (b'command = "python main.py"\n', "array"),
    (b"command = []\n", "1 to 64"),
    (b'command = ["a", 1]\n', "argument 1"),
    (b'command = ["a", ""]\n', "argument 1"),
    (b'command = ["a\\u0000b"]\n', "NUL"),
    (b"command = [" + b", ".join([b'"a"'] * 65) + b"]\n", "1 to 64"),
    (b'command = ["' + b"a" * 8193 + b'"]\n', "8192"),
    (b"command = [\n", "not valid TOML"),
    (b"other = 1\n", "unexpected key"),
    (b"", "must set command"),
])
def test_invalid_manifests_are_refused(tmp_path: Path, manifest: bytes, problem: str) -> None:
    source = tmp_path / "cand"
    write(source, "main.py", b"x")
    write(source, "evalarc.toml", manifest)
    message = refusal(source, tmp_path / "copy")
    assert "evalarc.toml" in message and problem in message
    assert "command" in message or "TOML" in message


def test_manifest_limits_are_inclusive() -> None:
    assert len(parse_manifest(b"command = [" + b", ".join([b'"a"'] * 64) + b"]", Path("c"))) == 64
    assert parse_manifest(b'command = ["' + b"a" * 8192 + b'"]', Path("c")) == ["a" * 8192]


def test_expand_command_is_plain_substitution() -> None:
    template = ["{python}", "-I", "{workspace}/main.py", "{state}/db {state}", "$HOME;{x}"]
    assert expand_command(template, "/usr/bin/python3", "/ws", "/st{python}") == [
        "/usr/bin/python3", "-I", "/ws/main.py", "/st{python}/db /st{python}", "$HOME;{x}"]
