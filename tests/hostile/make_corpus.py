"""The hostile-input corpus: small files committed under ``files/``, the rest made here.

Every entry is one hostile input and the commands that must refuse it (exit 2, one line on stderr
starting with ``evalarc: `` and naming the file, bounded memory and time, nothing written). Large
inputs (200 MB strings, sparse 600 MiB files, decompression bombs), inputs git cannot hold (FIFOs,
symlinks, a name with a newline) and mutations of real report folders and sites are generated
deterministically at test time by the functions below.

    python tests/hostile/make_corpus.py OUT      write every generated entry under OUT
    python tests/hostile/make_corpus.py --readme print the README table (README.md holds it)

``tests/test_hostile_inputs.py`` runs the real CLI on every entry; ``tests/test_fuzz_readers.py``
uses the zip writer and the seeds here.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FILES = HERE / "files"
MIB = 1024 * 1024
HUGE_STRING_BYTES = 200 * MIB
"""A case id this long is refused (the 512 MiB file cap alone would let it through)."""
DEEP = 100_000
"""Nesting levels of the deeply nested inputs."""
SPARSE_RESULT_BYTES = 600 * MIB
"""Over the 512 MiB result and evidence caps; written sparse, so it costs no disk."""

# -- what a command run must show -----------------------------------------------------------

RESULT_COMMANDS = ("diff-baseline", "diff-current", "eval-health")
COMMANDS_BY_KIND: dict[str, tuple[str, ...]] = {
    "result": RESULT_COMMANDS,
    "split": ("diff-held-out",),
    "harness": ("diff-harness",),
    "cases": ("eval-health-cases",),
    "checkpoints": ("trajectory",),
    "report": ("verify", "site-build"),
    "site": ("verify",),
}


@dataclass(frozen=True)
class Bases:
    """Valid material the hostile entries are made from or run beside."""

    root: Path
    good_baseline: Path
    """A real JUnit file (the other side of a diff, the split's and harness's runs)."""
    good_current: Path
    good_split: Path
    good_cases: Path
    harness: Path
    diff: Path
    """A diff folder (JUnit pair, with a split and a harness) made by ``evalarc diff``."""
    health: Path
    """An eval-health folder (an Inspect ``.eval`` input and a case manifest)."""
    trajectory: Path
    evaluation: Path
    """An evaluation folder made by ``evalarc evaluate --backend replay``."""
    site: Path
    """A site built from the diff and trajectory folders."""
    good_by_format: dict[str, Path]
    """A valid file of each format, for the other side of a diff run with ``--format``."""


Maker = Callable[[Path, Bases], Path]


@dataclass(frozen=True)
class Entry:
    """One hostile input: where it is, what it attacks, what every command must say."""

    name: str
    """Path under files/ (committed) or under the generated folder."""
    kind: str
    attacks: str
    expect: str
    """A fragment of the one-line message every command prints."""
    make: Maker | None = None
    """None for a committed file."""
    args: tuple[str, ...] = ()
    """Extra options for every command (e.g. ``--format inspect``)."""
    commands: tuple[str, ...] = ()
    """Overrides the kind's commands."""
    expect_by: dict[str, str] = field(default_factory=dict)
    """Per-command fragments where the message differs (e.g. ``site-build``)."""
    names: tuple[str, ...] = ()
    """What the message may name instead of the input's base name (a file inside a folder)."""

    @property
    def committed(self) -> bool:
        return self.make is None

    def command_names(self) -> tuple[str, ...]:
        return self.commands or COMMANDS_BY_KIND[self.kind]

    def fragment(self, command: str) -> str:
        return self.expect_by.get(command, self.expect)


# -- byte-level builders --------------------------------------------------------------------


@dataclass
class RawMember:
    """One ZIP member with every header field under the caller's control (so it can lie)."""

    name: bytes
    payload: bytes
    method: int = 8
    data: bytes | None = None
    file_size: int | None = None
    crc: int | None = None
    flags: int = 0

    def packed(self) -> bytes:
        if self.data is not None:
            return self.data
        if self.method == 8:
            packer = zlib.compressobj(6, zlib.DEFLATED, -15)
            return packer.compress(self.payload) + packer.flush()
        if self.method == 93:
            import zstandard

            return bytes(zstandard.ZstdCompressor().compress(self.payload))
        return self.payload


def zip_bytes(members: list[RawMember], directory_size: int | None = None) -> bytes:
    """A ZIP archive written byte by byte (local headers, central directory, end record)."""
    body = bytearray()
    directory = bytearray()
    for member in members:
        data = member.packed()
        size = len(member.payload) if member.file_size is None else member.file_size
        crc = zlib.crc32(member.payload) if member.crc is None else member.crc
        fields = (member.flags, member.method, 0, 0x21, crc, len(data))
        offset = len(body)
        body += struct.pack("<4sHHHHHIII", b"PK\x03\x04", 20, *fields, size)
        body += struct.pack("<HH", len(member.name), 0) + member.name + data
        directory += struct.pack(
            "<4sHHHHHHIIIHHHHHII",
            b"PK\x01\x02",
            20,
            20,
            *fields,
            size,
            len(member.name),
            0,
            0,
            0,
            0,
            0,
            offset,
        )
        directory += member.name
    claimed = len(directory) if directory_size is None else directory_size
    end = struct.pack(
        "<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(members), len(members), claimed, len(body), 0
    )
    return bytes(body + directory + end)


def inspect_header() -> dict[str, Any]:
    return {
        "version": 2,
        "status": "success",
        "eval": {"task": "hostile", "model": "mockllm/model", "config": {"epochs": 1}},
        "results": {"scores": [{"name": "match", "metrics": {"accuracy": {"value": 1.0}}}]},
    }


def inspect_sample(sample_id: object, epoch: object = 1, value: object = "C") -> dict[str, Any]:
    return {
        "id": sample_id,
        "epoch": epoch,
        "input": "What is the capital of France?",
        "target": "Paris",
        "output": {"completion": "Paris"},
        "scores": {"match": {"value": value}},
    }


def inspect_log(samples: list[Any]) -> dict[str, Any]:
    return {**inspect_header(), "samples": samples}


def eval_archive(samples: list[Any], method: int = 8) -> bytes:
    members = [RawMember(b"header.json", json.dumps(inspect_header()).encode(), method)]
    for index, sample in enumerate(samples):
        name = f"samples/{index}_epoch_1.json".encode()
        members.append(RawMember(name, json.dumps(sample).encode(), method))
    return zip_bytes(members)


def promptfoo_document(rows: list[Any]) -> dict[str, Any]:
    return {
        "evalId": "hostile",
        "results": {
            "version": 3,
            "results": rows,
            "stats": {"successes": 1, "failures": 0, "errors": 0},
        },
        "config": {"description": "hostile"},
    }


def promptfoo_row(description: str) -> dict[str, Any]:
    return {
        "provider": {"id": "echo"},
        "testCase": {"description": description, "vars": {"q": "hi"}},
        "vars": {"q": "hi"},
        "success": True,
        "score": 1,
        "response": {"output": "hi"},
    }


def evaluation_document(**changes: Any) -> dict[str, Any]:
    """A small evaluation object with the fields the evaluation reader checks."""
    document: dict[str, Any] = {
        "schema_version": "evalarc.evaluation.v2",
        "task": {"id": "support-routing", "version": "0.1.0"},
        "grader_sha256": "0" * 64,
        "cases_sha256": "1" * 64,
        "candidate_sha256": "2" * 64,
        "seeds": [17],
        "runtime": {"backend": "replay"},
        "dimensions": {"correctness": {"weight": 1.0}},
        "cases": [{"seed": 17, "case_id": "a", "checks": {"correctness": True}}],
        "score": 1.0,
        "valid": True,
        "resolved": True,
    }
    document.update(changes)
    return document


def _zeros(total: int) -> Iterator[bytes]:
    chunk = bytes(MIB)
    for _ in range(total // MIB):
        yield chunk


def bomb_member(method: int, size: int = 128 * MIB) -> RawMember:
    """A sample member of ``size`` zero bytes that claims an honest size."""
    if method == 8:
        deflater = zlib.compressobj(9, zlib.DEFLATED, -15)
        data = b"".join(deflater.compress(chunk) for chunk in _zeros(size)) + deflater.flush()
    else:
        import zstandard

        compressor = zstandard.ZstdCompressor(level=3).compressobj(size=size)
        data = b"".join(compressor.compress(chunk) for chunk in _zeros(size)) + compressor.flush()
    return RawMember(b"samples/1_epoch_1.json", b"", method, data=data, file_size=size, crc=0)


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return path


def write_json(path: Path, value: object) -> Path:
    return write(path, json.dumps(value, indent=1))


def _sparse(path: Path, size: int, head: bytes = b"{") -> Path:
    """A file of ``size`` bytes that occupies almost no disk."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        handle.write(head)
        handle.truncate(size)
    return path


def _fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def _symlink(path: Path, target: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)
    return path


def _huge_text_file(path: Path, head: str, tail: str, size: int = HUGE_STRING_BYTES) -> Path:
    """``head`` + ``size`` bytes of 'x' + ``tail``, written in chunks (never held in memory)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    chunk = b"x" * MIB
    with path.open("wb") as handle:
        handle.write(head.encode())
        for _ in range(size // MIB):
            handle.write(chunk)
        handle.write(tail.encode())
    return path


def _nested(depth: int, opener: str = "[", closer: str = "]") -> str:
    return opener * depth + closer * depth


# -- generated result files -----------------------------------------------------------------


def huge_inspect(dest: Path, bases: Bases) -> Path:
    head = json.dumps(inspect_header())[:-1] + ', "samples": [{"id": "'
    tail = '", "epoch": 1, "scores": {"match": {"value": "C"}}}]}'
    return _huge_text_file(dest / "huge_case_id_inspect.json", head, tail)


def huge_promptfoo(dest: Path, bases: Bases) -> Path:
    head = '{"results": {"results": [{"testCase": {"description": "'
    tail = '"}, "success": true}]}}'
    return _huge_text_file(dest / "huge_case_id_promptfoo.json", head, tail)


def huge_junit(dest: Path, bases: Bases) -> Path:
    head = '<testsuite name="s"><testcase classname="c" name="'
    return _huge_text_file(dest / "huge_case_id_junit.xml", head, '"/></testsuite>')


def huge_evaluation(dest: Path, bases: Bases) -> Path:
    head = '{"schema_version": "evalarc.evaluation.v2", "cases": [{"seed": 17, "case_id": "'
    return _huge_text_file(dest / "huge_case_id_evaluation.json", head, '"}]}')


def deep_inspect(dest: Path, bases: Bases) -> Path:
    text = json.dumps(inspect_header())[:-1] + ', "samples": [' + _nested(DEEP) + "]}"
    return write(dest / "deep_inspect.json", text)


def deep_promptfoo(dest: Path, bases: Bases) -> Path:
    nested = '{"a": ' * DEEP + "1" + "}" * DEEP
    return write(dest / "deep_promptfoo.json", '{"results": {"results": [' + nested + "]}}")


def deep_evaluation(dest: Path, bases: Bases) -> Path:
    text = '{"schema_version": "evalarc.evaluation.v2", "cases": ' + _nested(DEEP) + "}"
    return write(dest / "deep_evaluation.json", text)


def deep_junit(dest: Path, bases: Bases) -> Path:
    text = "<testsuites>" + "<testsuite>" * DEEP + "</testsuite>" * DEEP + "</testsuites>"
    return write(dest / "deep_junit.xml", text)


def bomb_zstd(dest: Path, bases: Bases) -> Path:
    header = RawMember(b"header.json", json.dumps(inspect_header()).encode(), 93)
    return write(dest / "bomb_zstd.eval", zip_bytes([header, bomb_member(93)]))


def bomb_deflate(dest: Path, bases: Bases) -> Path:
    header = RawMember(b"header.json", json.dumps(inspect_header()).encode(), 8)
    return write(dest / "bomb_deflate.eval", zip_bytes([header, bomb_member(8)]))


def bomb_lying_size(dest: Path, bases: Bases) -> Path:
    header = RawMember(b"header.json", json.dumps(inspect_header()).encode(), 93)
    bomb = bomb_member(93)
    bomb.file_size = 1000  # claims 1000 bytes, expands to 128 MiB
    return write(dest / "bomb_lying_size.eval", zip_bytes([header, bomb]))


def oversized_json(dest: Path, bases: Bases) -> Path:
    return _sparse(dest / "oversized.json", SPARSE_RESULT_BYTES)


def oversized_eval(dest: Path, bases: Bases) -> Path:
    return _sparse(dest / "oversized.eval", SPARSE_RESULT_BYTES, b"PK\x03\x04")


def fifo_result(dest: Path, bases: Bases) -> Path:
    return _fifo(dest / "fifo.json")


def fifo_eval(dest: Path, bases: Bases) -> Path:
    return _fifo(dest / "fifo.eval")


def symlink_result(dest: Path, bases: Bases) -> Path:
    return _symlink(dest / "symlink_to_valid.xml", bases.good_baseline)


def dangling_symlink(dest: Path, bases: Bases) -> Path:
    return _symlink(dest / "dangling_symlink.json", dest / "nowhere" / "missing.json")


def directory_result(dest: Path, bases: Bases) -> Path:
    folder = dest / "directory.json"
    folder.mkdir(parents=True)
    return folder


def newline_name(dest: Path, bases: Bases) -> Path:
    return write(dest / "evil\nname.json", b'{"results": {"results": [}}')


# -- generated splits, harnesses, manifests, checkpoints ------------------------------------


def deep_split(dest: Path, bases: Bases) -> Path:
    return write(dest / "deep_split.json", '{"held_out": ' + _nested(DEEP) + "}")


def oversized_split(dest: Path, bases: Bases) -> Path:
    return _sparse(dest / "oversized_split.json", 5 * MIB)


def fifo_split(dest: Path, bases: Bases) -> Path:
    return _fifo(dest / "fifo_split.json")


def symlink_split(dest: Path, bases: Bases) -> Path:
    return _symlink(dest / "symlink_split.json", bases.good_split)


def fifo_harness(dest: Path, bases: Bases) -> Path:
    return _fifo(dest / "fifo_harness.md")


def symlink_harness(dest: Path, bases: Bases) -> Path:
    return _symlink(dest / "symlink_harness", bases.harness)


def harness_over_total(dest: Path, bases: Bases) -> Path:
    folder = dest / "harness_over_16mib"
    piece = b"prompt text\n" * ((2 * MIB - 4096) // 12)
    for index in range(9):
        write(folder / f"part{index}.md", piece)
    return folder


def harness_too_many(dest: Path, bases: Bases) -> Path:
    folder = dest / "harness_2001_files"
    folder.mkdir(parents=True)
    for index in range(2001):
        (folder / f"{index:04d}.md").write_bytes(b"x")
    return folder


def missing_harness(dest: Path, bases: Bases) -> Path:
    return dest / "missing_harness"


def deep_cases(dest: Path, bases: Bases) -> Path:
    return write(dest / "deep_cases.json", '{"cases": ' + _nested(DEEP) + "}")


def fifo_cases(dest: Path, bases: Bases) -> Path:
    return _fifo(dest / "fifo_cases.json")


def symlink_cases(dest: Path, bases: Bases) -> Path:
    return _symlink(dest / "symlink_cases.json", bases.good_cases)


def _real_checkpoints(bases: Bases) -> list[dict[str, Any]]:
    evaluation = json.loads((bases.evaluation / "evaluation.json").read_text(encoding="utf-8"))
    return [{"elapsed_seconds": 60, "evaluation": evaluation}]


def checkpoints_strings(dest: Path, bases: Bases) -> Path:
    points = _real_checkpoints(bases)
    points[0]["elapsed_seconds"] = "60"
    return write_json(dest / "checkpoints_strings_for_numbers.json", points)


def checkpoints_score_string(dest: Path, bases: Bases) -> Path:
    points = _real_checkpoints(bases)
    points[0]["evaluation"]["score"] = "1.0"
    return write_json(dest / "checkpoints_score_as_string.json", points)


def deep_checkpoints(dest: Path, bases: Bases) -> Path:
    return write(dest / "deep_checkpoints.json", _nested(DEEP))


def oversized_checkpoints(dest: Path, bases: Bases) -> Path:
    return _sparse(dest / "oversized_checkpoints.json", 65 * MIB, b"[")


def fifo_checkpoints(dest: Path, bases: Bases) -> Path:
    return _fifo(dest / "fifo_checkpoints.json")


def symlink_checkpoints(dest: Path, bases: Bases) -> Path:
    target = write_json(dest / "real" / "checkpoints.json", _real_checkpoints(bases))
    return _symlink(dest / "symlink_checkpoints.json", target)


def directory_checkpoints(dest: Path, bases: Bases) -> Path:
    folder = dest / "checkpoints_directory.json"
    folder.mkdir(parents=True)
    return folder


# -- generated report folders ---------------------------------------------------------------


def _copy(base: Path, dest: Path) -> Path:
    shutil.copytree(base, dest, symlinks=True)
    return dest


def _edit_json(path: Path, edit: Callable[[dict[str, Any]], object]) -> None:
    value = json.loads(path.read_text(encoding="utf-8"))
    edit(value)
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")


def _set(key: str, value: object) -> Callable[[dict[str, Any]], object]:
    def edit(document: dict[str, Any]) -> None:
        document[key] = value

    return edit


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def _diff_with_input(name: str, file: str) -> Maker:
    """A diff folder whose params.json names ``file`` as its baseline input."""

    def make(dest: Path, bases: Bases) -> Path:
        folder = _copy(bases.diff, dest / name)
        write(dest / "outside.xml", bases.good_baseline.read_bytes())

        def edit(params: dict[str, Any]) -> None:
            params["inputs"][0]["file"] = file

        _edit_json(folder / "params.json", edit)
        return folder

    return make


def report_dotdot_split(dest: Path, bases: Bases) -> Path:
    folder = _copy(bases.diff, dest / "report_dotdot_split")
    write(dest / "split.json", bases.good_split.read_bytes())
    _edit_json(folder / "params.json", _set("split", "../split.json"))
    return folder


def report_absolute_harness(dest: Path, bases: Bases) -> Path:
    folder = _copy(bases.diff, dest / "report_absolute_harness")

    def edit(params: dict[str, Any]) -> None:
        params["harness"][0]["file"] = "/etc/hostname"

    _edit_json(folder / "params.json", edit)
    return folder


def report_dotdot_candidate(dest: Path, bases: Bases) -> Path:
    folder = _copy(bases.evaluation, dest / "report_dotdot_candidate")
    shutil.copytree(folder / "candidate", dest / "candidate")
    _edit_json(folder / "params.json", _set("candidate", "../candidate"))
    return folder


def report_absolute_recordings(dest: Path, bases: Bases) -> Path:
    folder = _copy(bases.evaluation, dest / "report_absolute_recordings")
    shutil.copytree(folder / "recordings", dest / "recordings")
    _edit_json(folder / "params.json", _set("recordings", str(dest / "recordings/index.json")))
    return folder


def report_symlink_input(dest: Path, bases: Bases) -> Path:
    folder = _copy(bases.diff, dest / "report_symlink_input")
    outside = dest / "outside" / "baseline.xml.txt"
    outside.parent.mkdir(parents=True)
    (folder / "baseline.xml.txt").rename(outside)
    (folder / "baseline.xml.txt").symlink_to(outside)
    return folder


def report_symlink_params(dest: Path, bases: Bases) -> Path:
    folder = _copy(bases.diff, dest / "report_symlink_params")
    outside = dest / "outside" / "params.json"
    outside.parent.mkdir(parents=True)
    (folder / "params.json").rename(outside)
    (folder / "params.json").symlink_to(outside)
    return folder


def report_symlink_subdir(dest: Path, bases: Bases) -> Path:
    folder = _copy(bases.health, dest / "report_symlink_subdir")
    outside = dest / "outside" / "inputs"
    outside.parent.mkdir(parents=True)
    (folder / "inputs").rename(outside)
    (folder / "inputs").symlink_to(outside, target_is_directory=True)
    return folder


def report_folder_symlink(dest: Path, bases: Bases) -> Path:
    real = _copy(bases.diff, dest / "real_report")
    return _symlink(dest / "report_folder_symlink", real)


def report_candidate_symlink(dest: Path, bases: Bases) -> Path:
    folder = _copy(bases.evaluation, dest / "report_candidate_symlink")
    (folder / "candidate" / "passwd").symlink_to("/etc/passwd")
    return folder


def report_candidate_fifo(dest: Path, bases: Bases) -> Path:
    folder = _copy(bases.evaluation, dest / "report_candidate_fifo")
    os.mkfifo(folder / "candidate" / "pipe")
    return folder


def _params_edit(name: str, key: str, value: object) -> Maker:
    def make(dest: Path, bases: Bases) -> Path:
        folder = _copy(bases.diff, dest / name)
        _edit_json(folder / "params.json", _set(key, value))
        return folder

    return make


def _params_bytes(name: str, data: bytes) -> Maker:
    def make(dest: Path, bases: Bases) -> Path:
        folder = _copy(bases.diff, dest / name)
        write(folder / "params.json", data)
        return folder

    return make


def report_no_params(dest: Path, bases: Bases) -> Path:
    folder = _copy(bases.diff, dest / "report_no_params")
    (folder / "params.json").unlink()
    return folder


def report_fifo_input(dest: Path, bases: Bases) -> Path:
    folder = _copy(bases.diff, dest / "report_fifo_input")
    (folder / "baseline.xml.txt").unlink()
    os.mkfifo(folder / "baseline.xml.txt")
    return folder


def report_oversized_input(dest: Path, bases: Bases) -> Path:
    folder = _copy(bases.diff, dest / "report_oversized_input")
    _sparse(folder / "current.xml.txt", SPARSE_RESULT_BYTES, b"<")
    return folder


def report_oversized_report(dest: Path, bases: Bases) -> Path:
    folder = _copy(bases.diff, dest / "report_oversized_report")
    _sparse(folder / "diff.json", 600 * MIB)
    return folder


def report_large_garbage_report(dest: Path, bases: Bases) -> Path:
    # Within the file cap, so it is streamed (a diff report is compared as a stream): refused at
    # its first bad character, never read whole.
    folder = _copy(bases.diff, dest / "report_large_garbage_report")
    _sparse(folder / "diff.json", 65 * MIB)
    return folder


def _rehash(folder: Path, report: str, input_name: str, locate: Callable[[Any], Any]) -> None:
    """Record ``input_name``'s new SHA-256 in the report, as a coordinated forger would."""
    digest = _sha256(folder / input_name)

    def edit(document: dict[str, Any]) -> None:
        locate(document)["sha256"] = digest

    _edit_json(folder / report, edit)


def report_laughs_input(dest: Path, bases: Bases) -> Path:
    folder = _copy(bases.diff, dest / "report_laughs_input")
    write(folder / "current.xml.txt", (FILES / "results" / "junit_billion_laughs.xml").read_bytes())
    _rehash(folder, "diff.json", "current.xml.txt", lambda report: report["current"]["source"])
    return folder


def report_bomb_input(dest: Path, bases: Bases) -> Path:
    folder = _copy(bases.health, dest / "report_bomb_input")
    header = RawMember(b"header.json", json.dumps(inspect_header()).encode(), 93)
    write(folder / "inputs" / "01.eval", zip_bytes([header, bomb_member(93)]))
    _rehash(folder, "health.json", "inputs/01.eval", lambda report: report["runs"][0]["source"])
    return folder


def report_checkpoint_strings(dest: Path, bases: Bases) -> Path:
    folder = _copy(bases.trajectory, dest / "report_checkpoint_strings")

    def edit(points: Any) -> None:
        points[0]["elapsed_seconds"] = str(points[0]["elapsed_seconds"])

    _edit_json(folder / "checkpoints.json", edit)
    _rehash(folder, "trajectory.json", "checkpoints.json", lambda report: report["source"])
    return folder


def report_many_files(dest: Path, bases: Bases) -> Path:
    folder = _copy(bases.diff, dest / "report_20001_files")
    extra = folder / "extra"
    extra.mkdir()
    for index in range(20_001):
        (extra / f"{index:05d}").write_bytes(b"")
    return folder


# -- generated sites ------------------------------------------------------------------------


def _site_edit(name: str, edit: Callable[[dict[str, Any]], object]) -> Maker:
    def make(dest: Path, bases: Bases) -> Path:
        site = _copy(bases.site, dest / name)
        _edit_json(site / "manifest.json", edit)
        return site

    return make


def _first_report(key: str, value: object) -> Callable[[dict[str, Any]], object]:
    def edit(manifest: dict[str, Any]) -> None:
        manifest["reports"][0][key] = value

    return edit


def _add_file(name: str) -> Callable[[dict[str, Any]], object]:
    def edit(manifest: dict[str, Any]) -> None:
        manifest["files"][name] = {"sha256": "0" * 64, "bytes": 1}

    return edit


def site_symlink_page(dest: Path, bases: Bases) -> Path:
    site = _copy(bases.site, dest / "site_symlink_page")
    page = next(site.glob("reports/*/index.html"))
    outside = dest / "outside.html"
    page.rename(outside)
    page.symlink_to(outside)
    return site


def site_symlink_root(dest: Path, bases: Bases) -> Path:
    real = _copy(bases.site, dest / "real_site")
    return _symlink(dest / "site_symlink_root", real)


def site_fifo(dest: Path, bases: Bases) -> Path:
    site = _copy(bases.site, dest / "site_fifo")
    os.mkfifo(site / "docs.html")
    return site


def site_bundle_dotdot(dest: Path, bases: Bases) -> Path:
    site = _copy(bases.site, dest / "site_bundle_dotdot")
    bundle = next(site.glob("reports/*/evalarc-bundle.json"))

    def edit_bundle(document: dict[str, Any]) -> None:
        document["files"]["../../../outside.json"] = {"sha256": "0" * 64, "bytes": 1}

    _edit_json(bundle, edit_bundle)
    write(dest / "outside.json", b"{}")
    slug = bundle.parent.name
    digest = _sha256(bundle)

    def edit_manifest(manifest: dict[str, Any]) -> None:
        for row in manifest["reports"]:
            if row["path"] == f"reports/{slug}":
                row["manifest_sha256"] = digest

    _edit_json(site / "manifest.json", edit_manifest)
    return site


def _site_bytes(name: str, data: bytes) -> Maker:
    def make(dest: Path, bases: Bases) -> Path:
        site = _copy(bases.site, dest / name)
        write(site / "manifest.json", data)
        return site

    return make


_SITE_HEAD = b'{"schema_version": "evalarc.site.v1", "reports": '

# -- the catalogue ----------------------------------------------------------------------------

NOT_JSON = "is not JSON"
NOT_A_RESULT_FILE = "not a result file EvalArc reads"
DTD = "JUnit XML with a DTD or entities is not accepted"
NOT_READABLE_EVAL = "is not a readable Inspect log"
UNSAFE_MEMBER = "has an unsafe member name"
NOT_REGULAR = "is not a regular file"
EVIDENCE_SYMLINK = "evidence contains a symlink"
LEAVES = "leaves the folder"
SITE_SYMLINK = "is a symlink; symlinks are refused"

ENTRIES: list[Entry] = [
    # ---- result files: truncated, invalid, non-finite, encodings -----------------------------
    Entry(
        "results/inspect_truncated.json",
        "result",
        "an Inspect JSON log cut inside a sample",
        NOT_JSON,
    ),
    Entry(
        "results/promptfoo_truncated.json", "result", "promptfoo output cut inside a row", NOT_JSON
    ),
    Entry(
        "results/promptfoo_trailing_comma.json",
        "result",
        "invalid JSON (a trailing comma)",
        NOT_JSON,
    ),
    Entry("results/inspect_single_quotes.json", "result", "invalid JSON (single quotes)", NOT_JSON),
    Entry("results/promptfoo_nan.json", "result", "NaN in a promptfoo score", "non-finite number"),
    Entry(
        "results/promptfoo_infinity.json",
        "result",
        "-Infinity in a promptfoo score",
        "non-finite number",
    ),
    Entry(
        "results/evaluation_nan.json", "result", "NaN as an evaluation's score", "non-finite number"
    ),
    Entry(
        "results/evaluation_overflow.json",
        "result",
        "1e400 (overflows a float) as a score",
        "overflows",
    ),
    Entry(
        "results/inspect_nan_id.json",
        "result",
        "NaN as an Inspect sample id",
        "has no string or integer id",
    ),
    Entry(
        "results/inspect_invalid_utf8.json",
        "result",
        "invalid UTF-8 inside an Inspect log",
        NOT_JSON,
    ),
    Entry(
        "results/promptfoo_invalid_utf8.json",
        "result",
        "invalid UTF-8 inside promptfoo vars",
        NOT_JSON,
    ),
    Entry(
        "results/promptfoo_utf16.json",
        "result",
        "UTF-16 JSON (JSON exchange must be UTF-8)",
        NOT_JSON,
    ),
    Entry(
        "results/junit_invalid_utf8.xml",
        "result",
        "Latin-1 bytes in XML that claims no encoding (so UTF-8)",
        "is not valid UTF-8",
    ),
    Entry("results/nul_bytes.json", "result", "binary garbage with NUL bytes", NOT_JSON),
    Entry("results/empty.json", "result", "an empty file", NOT_A_RESULT_FILE),
    Entry("results/empty.xml", "result", "an empty XML file", "is not JUnit XML"),
    Entry("results/whitespace_only.json", "result", "only whitespace", NOT_A_RESULT_FILE),
    Entry("results/bom_only.json", "result", "only a UTF-8 byte order mark", NOT_A_RESULT_FILE),
    Entry(
        "results/json_array.json",
        "result",
        "a JSON array (no format has a top-level array)",
        NOT_A_RESULT_FILE,
    ),
    Entry(
        "results/json_array_as_inspect.json",
        "result",
        "a JSON array forced to be Inspect",
        "Inspect log must be a JSON object",
        args=("--format", "inspect"),
    ),
    Entry(
        "results/json_array_as_promptfoo.json",
        "result",
        "a JSON array forced to be promptfoo",
        "expected results.results[]",
        args=("--format", "promptfoo"),
    ),
    Entry(
        "results/json_string.json",
        "result",
        "a JSON string that names the evaluation schema",
        NOT_A_RESULT_FILE,
    ),
    # ---- result files: shapes ---------------------------------------------------------------
    Entry(
        "results/inspect_duplicate_sample_epoch.json",
        "result",
        "sample id and epoch twice (JSON log)",
        "epoch 1 appears twice",
    ),
    Entry(
        "results/inspect_duplicate_sample_epoch.eval",
        "result",
        "sample id and epoch twice in two archive members",
        "epoch 1 appears twice",
    ),
    Entry(
        "results/promptfoo_duplicate_keys.json", "result", "a key written twice", "duplicate key"
    ),
    Entry(
        "results/inspect_no_samples.json",
        "result",
        "an Inspect log without samples",
        "rerun without --no-log-samples",
    ),
    Entry(
        "results/inspect_samples_not_objects.json",
        "result",
        "samples that are numbers",
        "is not a JSON object",
    ),
    Entry(
        "results/promptfoo_rows_not_objects.json",
        "result",
        "promptfoo rows that are strings",
        "is not an object",
    ),
    Entry(
        "results/evaluation_newer_schema.json",
        "result",
        "an evaluation of a newer schema",
        "this EvalArc reads evalarc.evaluation.v2",
    ),
    Entry(
        "results/evaluation_strings_for_numbers.json",
        "result",
        "strings where an evaluation has numbers (seeds, weights)",
        "has no finite weight",
    ),
    Entry(
        "results/evaluation_cases_not_objects.json",
        "result",
        "evaluation cases that are lists",
        "case 0 is not an object",
    ),
    # ---- XML entities and DTDs --------------------------------------------------------------
    Entry("results/junit_billion_laughs.xml", "result", "billion laughs (nested entities)", DTD),
    Entry(
        "results/junit_external_entity.xml",
        "result",
        "an external entity (file:///etc/passwd)",
        DTD,
    ),
    Entry(
        "results/junit_parameter_entity.xml",
        "result",
        "a parameter entity loading a remote DTD",
        DTD,
    ),
    Entry("results/junit_external_dtd.xml", "result", "a DOCTYPE naming a remote DTD", DTD),
    Entry(
        "results/junit_billion_laughs_utf16.xml",
        "result",
        "billion laughs in UTF-16 (hides the markers from a byte scan)",
        DTD,
    ),
    Entry(
        "results/junit_external_entity_utf16be.xml", "result", "an external entity in UTF-16BE", DTD
    ),
    Entry(
        "results/junit_xinclude.xml",
        "result",
        "XInclude of /etc/passwd (never expanded)",
        "holds an element in the namespace http://www.w3.org/2001/XInclude",
    ),
    Entry(
        "results/junit_unknown_encoding.xml",
        "result",
        "an encoding expat does not know",
        "is not JUnit XML",
    ),
    Entry("results/junit_truncated.xml", "result", "XML cut inside a tag", "is not JUnit XML"),
    Entry(
        "results/junit_wrong_root.xml",
        "result",
        "an HTML page named .xml",
        "root element is <html>",
    ),
    # ---- ZIP archives ------------------------------------------------------------------------
    Entry(
        "results/inspect_zip_slip.eval", "result", "a member named ../../evil.json", UNSAFE_MEMBER
    ),
    Entry(
        "results/inspect_absolute_member.eval",
        "result",
        "a member named /etc/passwd",
        UNSAFE_MEMBER,
    ),
    Entry(
        "results/inspect_backslash_member.eval",
        "result",
        "a member named samples\\..\\..\\evil.json",
        UNSAFE_MEMBER,
    ),
    Entry(
        "results/inspect_drive_member.eval", "result", "a member named C:/evil.json", UNSAFE_MEMBER
    ),
    Entry("results/zero_byte.eval", "result", "a zero-byte .eval", NOT_READABLE_EVAL),
    Entry("results/inspect_not_a_zip.eval", "result", "text named .eval", NOT_READABLE_EVAL),
    Entry(
        "results/inspect_truncated.eval", "result", "a real .eval cut in half", NOT_READABLE_EVAL
    ),
    Entry(
        "results/inspect_crc_mismatch.eval",
        "result",
        "a member whose CRC does not match",
        "does not match its recorded size and CRC",
    ),
    Entry("results/inspect_encrypted.eval", "result", "an encrypted member", "is encrypted"),
    Entry(
        "results/inspect_bzip2_member.eval",
        "result",
        "compression method 12 (bzip2)",
        "unsupported compression method 12",
    ),
    Entry(
        "results/inspect_no_header.eval",
        "result",
        "an archive without header.json",
        "has no header.json",
    ),
    Entry(
        "results/inspect_directory_cap.eval",
        "result",
        "an end record claiming a 2 GiB central directory",
        "has a central directory over",
    ),
    # ---- generated result files -------------------------------------------------------------
    Entry(
        "huge_case_id_inspect.json",
        "result",
        "a 200 MB sample id (JSON log)",
        "longer than",
        huge_inspect,
    ),
    Entry(
        "huge_case_id_promptfoo.json",
        "result",
        "a 200 MB test description",
        "longer than",
        huge_promptfoo,
    ),
    Entry(
        "huge_case_id_junit.xml",
        "result",
        "a 200 MB testcase name attribute",
        "longer than",
        huge_junit,
    ),
    Entry(
        "huge_case_id_evaluation.json",
        "result",
        "a 200 MB evaluation case id",
        "longer than",
        huge_evaluation,
    ),
    Entry(
        "deep_inspect.json", "result", "100,000 nested arrays as a sample", NOT_JSON, deep_inspect
    ),
    Entry(
        "deep_promptfoo.json",
        "result",
        "100,000 nested objects as a row",
        "nested too deeply",
        deep_promptfoo,
    ),
    Entry(
        "deep_evaluation.json",
        "result",
        "100,000 nested arrays in an evaluation",
        NOT_JSON,
        deep_evaluation,
    ),
    Entry(
        "deep_junit.xml",
        "result",
        "100,000 nested testsuite elements",
        "nests elements deeper than 64 levels",
        deep_junit,
    ),
    Entry(
        "bomb_zstd.eval",
        "result",
        "a Zstandard member expanding to 128 MiB of zeros",
        "expands",
        bomb_zstd,
    ),
    Entry(
        "bomb_deflate.eval",
        "result",
        "a DEFLATE member expanding to 128 MiB of zeros",
        "expands",
        bomb_deflate,
    ),
    Entry(
        "bomb_lying_size.eval",
        "result",
        "a Zstandard bomb claiming 1000 bytes",
        "more than its recorded 1000 bytes",
        bomb_lying_size,
    ),
    Entry("oversized.json", "result", "a 600 MiB (sparse) JSON file", "exceeds", oversized_json),
    Entry("oversized.eval", "result", "a 600 MiB (sparse) archive", "exceeds", oversized_eval),
    Entry("fifo.json", "result", "a FIFO (a read would block forever)", NOT_REGULAR, fifo_result),
    Entry("fifo.eval", "result", "a FIFO named .eval", NOT_REGULAR, fifo_eval),
    Entry(
        "symlink_to_valid.xml",
        "result",
        "a symlink to a valid result file",
        NOT_REGULAR,
        symlink_result,
    ),
    Entry(
        "dangling_symlink.json",
        "result",
        "a symlink to nothing",
        "does not exist",
        dangling_symlink,
    ),
    Entry(
        "directory.json",
        "result",
        "a directory given as the result file",
        "is a directory",
        directory_result,
    ),
    Entry(
        "evil\nname.json",
        "result",
        "a file name with a newline (cannot forge a second line)",
        NOT_JSON,
        newline_name,
    ),
    # ---- --held-out splits ------------------------------------------------------------------
    Entry("splits/split_truncated.json", "split", "a split cut short", "is not valid JSON"),
    Entry("splits/split_nan.json", "split", "NaN inside a split", "non-finite number"),
    Entry("splits/split_array.json", "split", "a JSON array as a split", "must hold a JSON object"),
    Entry(
        "splits/split_unknown_schema.json",
        "split",
        "an unknown split schema",
        "expected 'evalarc.case-split.v1'",
    ),
    Entry(
        "splits/split_numbers_for_ids.json",
        "split",
        "numbers where case ids go",
        "non-empty case id strings",
    ),
    Entry(
        "splits/split_invalid_utf8.json", "split", "invalid UTF-8 in a split", "is not valid JSON"
    ),
    Entry("deep_split.json", "split", "100,000 nested arrays", "is not valid JSON", deep_split),
    Entry("oversized_split.json", "split", "a 5 MiB (sparse) split", "exceeds", oversized_split),
    Entry("fifo_split.json", "split", "a FIFO as the split", NOT_REGULAR, fifo_split),
    Entry("symlink_split.json", "split", "a symlink to a valid split", NOT_REGULAR, symlink_split),
    # ---- --harness --------------------------------------------------------------------------
    Entry(
        "fifo_harness.md",
        "harness",
        "a FIFO as a harness file",
        "neither a file nor a folder",
        fifo_harness,
    ),
    Entry(
        "symlink_harness",
        "harness",
        "a symlink as the harness folder",
        "is a symbolic link",
        symlink_harness,
    ),
    Entry(
        "harness_over_16mib",
        "harness",
        "nine 2 MiB prompts (16 MiB in all)",
        "exceed 16 MiB in all",
        harness_over_total,
        names=("--harness",),
    ),
    Entry(
        "harness_2001_files",
        "harness",
        "2,001 harness files",
        "names more than 2,000 files",
        harness_too_many,
        names=("--harness",),
    ),
    Entry(
        "missing_harness",
        "harness",
        "a harness path that does not exist",
        "does not exist",
        missing_harness,
    ),
    # ---- --cases manifests ------------------------------------------------------------------
    Entry(
        "cases/cases_newer_schema.json",
        "cases",
        "a newer manifest schema",
        "newer than evalarc.case-manifest.v1",
    ),
    Entry("cases/cases_infinity.json", "cases", "Infinity inside a manifest", "non-finite number"),
    Entry(
        "cases/cases_unknown_source.json",
        "cases",
        "a source outside the known list",
        "is not one of",
    ),
    Entry("deep_cases.json", "cases", "100,000 nested arrays", "is not valid JSON", deep_cases),
    Entry("fifo_cases.json", "cases", "a FIFO as the manifest", NOT_REGULAR, fifo_cases),
    Entry(
        "symlink_cases.json", "cases", "a symlink to a valid manifest", NOT_REGULAR, symlink_cases
    ),
    # ---- trajectory checkpoints -------------------------------------------------------------
    Entry(
        "checkpoints/checkpoints_empty.json", "checkpoints", "an empty list", "must not be empty"
    ),
    Entry(
        "checkpoints/checkpoints_object.json",
        "checkpoints",
        "an object, not a list",
        "must be an array",
    ),
    Entry(
        "checkpoints/checkpoints_truncated.json",
        "checkpoints",
        "a list cut short",
        "is not valid JSON",
    ),
    Entry(
        "checkpoints/checkpoints_nan.json",
        "checkpoints",
        "NaN elapsed seconds",
        "non-finite number",
    ),
    Entry(
        "checkpoints/checkpoints_not_evaluations.json",
        "checkpoints",
        "checkpoints without an evaluation",
        "must contain an evaluation object",
    ),
    Entry(
        "checkpoints_strings_for_numbers.json",
        "checkpoints",
        'a real checkpoint with elapsed_seconds "60"',
        "elapsed_seconds '60'",
        checkpoints_strings,
    ),
    Entry(
        "checkpoints_score_as_string.json",
        "checkpoints",
        'a real checkpoint with score "1.0"',
        "score '1.0'",
        checkpoints_score_string,
    ),
    Entry(
        "deep_checkpoints.json",
        "checkpoints",
        "100,000 nested arrays",
        "is not valid JSON",
        deep_checkpoints,
    ),
    Entry(
        "oversized_checkpoints.json",
        "checkpoints",
        "a 65 MiB (sparse) file",
        "exceeds",
        oversized_checkpoints,
    ),
    Entry("fifo_checkpoints.json", "checkpoints", "a FIFO", NOT_REGULAR, fifo_checkpoints),
    Entry(
        "symlink_checkpoints.json",
        "checkpoints",
        "a symlink to valid checkpoints",
        NOT_REGULAR,
        symlink_checkpoints,
    ),
    Entry(
        "checkpoints_directory.json",
        "checkpoints",
        "a directory",
        "is a directory",
        directory_checkpoints,
    ),
    # ---- report folders ---------------------------------------------------------------------
    Entry(
        "report_dotdot_input",
        "report",
        "params.json names ../outside.xml as an input",
        LEAVES,
        _diff_with_input("report_dotdot_input", "../outside.xml"),
    ),
    Entry(
        "report_absolute_input",
        "report",
        "params.json names /etc/passwd as an input",
        LEAVES,
        _diff_with_input("report_absolute_input", "/etc/passwd"),
    ),
    Entry(
        "report_backslash_input",
        "report",
        "params.json names ..\\outside.xml",
        LEAVES,
        _diff_with_input("report_backslash_input", "..\\outside.xml"),
    ),
    Entry(
        "report_nul_input",
        "report",
        "params.json names a path with a NUL",
        "is not a relative file name",
        _diff_with_input("report_nul_input", "a\x00b"),
    ),
    Entry(
        "report_dotdot_split",
        "report",
        "params.json names ../split.json as the split",
        LEAVES,
        report_dotdot_split,
    ),
    Entry(
        "report_absolute_harness",
        "report",
        "params.json names /etc/hostname as a harness copy",
        LEAVES,
        report_absolute_harness,
    ),
    Entry(
        "report_dotdot_candidate",
        "report",
        "an evaluation whose candidate is ../candidate",
        LEAVES,
        report_dotdot_candidate,
    ),
    Entry(
        "report_absolute_recordings",
        "report",
        "an evaluation whose recordings index is an absolute path",
        LEAVES,
        report_absolute_recordings,
    ),
    Entry(
        "report_symlink_input",
        "report",
        "an input copy that is a symlink out of the folder",
        EVIDENCE_SYMLINK,
        report_symlink_input,
        expect_by={"site-build": SITE_SYMLINK},
        names=("baseline.xml.txt",),
    ),
    Entry(
        "report_symlink_params",
        "report",
        "params.json is a symlink",
        EVIDENCE_SYMLINK,
        report_symlink_params,
        expect_by={"site-build": "holds no report folder"},
        names=("params.json",),
    ),
    Entry(
        "report_symlink_subdir",
        "report",
        "the inputs/ folder is a symlink",
        EVIDENCE_SYMLINK,
        report_symlink_subdir,
        expect_by={"site-build": SITE_SYMLINK},
        names=("inputs",),
    ),
    Entry(
        "report_folder_symlink",
        "report",
        "the report folder itself is a symlink",
        EVIDENCE_SYMLINK,
        report_folder_symlink,
        expect_by={"site-build": "is a symlink; pass the folder itself"},
    ),
    Entry(
        "report_candidate_symlink",
        "report",
        "a symlink to /etc/passwd in an evaluation's candidate/",
        EVIDENCE_SYMLINK,
        report_candidate_symlink,
        expect_by={"site-build": SITE_SYMLINK},
        names=("passwd",),
    ),
    Entry(
        "report_candidate_fifo",
        "report",
        "a FIFO in an evaluation's candidate/",
        NOT_REGULAR,
        report_candidate_fifo,
        expect_by={"site-build": NOT_REGULAR},
        names=("pipe",),
    ),
    Entry(
        "report_unknown_kind",
        "report",
        "params.json names an unknown kind",
        "unknown report kind 'bogus'",
        _params_edit("report_unknown_kind", "kind", "bogus"),
        names=("params.json",),
    ),
    Entry(
        "report_unknown_schema",
        "report",
        "params.json has a newer schema",
        "is evalarc.report-params.v9, newer than the evalarc.report-params.v1 this EvalArc reads",
        _params_edit("report_unknown_schema", "schema_version", "evalarc.report-params.v9"),
        names=("params.json",),
    ),
    Entry(
        "report_params_array",
        "report",
        "params.json is a JSON array",
        "is not a JSON object",
        _params_bytes("report_params_array", b"[]"),
        names=("params.json",),
    ),
    Entry(
        "report_params_nan",
        "report",
        "NaN in params.json",
        "non-finite number",
        _params_bytes("report_params_nan", b'{"schema_version": NaN}'),
        names=("params.json",),
    ),
    Entry(
        "report_params_deep",
        "report",
        "100,000 nested arrays in params.json",
        "is not valid JSON",
        _params_bytes("report_params_deep", b'{"kind": ' + _nested(DEEP).encode() + b"}"),
        names=("params.json",),
    ),
    Entry(
        "report_params_invalid_utf8",
        "report",
        "invalid UTF-8 in params.json",
        "is not valid JSON",
        _params_bytes("report_params_invalid_utf8", b'{"kind": "\xff"}'),
        names=("params.json",),
    ),
    Entry(
        "report_no_params",
        "report",
        "a folder without params.json",
        "has no params.json",
        report_no_params,
        expect_by={"site-build": "holds no report folder"},
    ),
    Entry(
        "report_fifo_input",
        "report",
        "an input copy that is a FIFO",
        NOT_REGULAR,
        report_fifo_input,
        names=("baseline.xml.txt",),
    ),
    Entry(
        "report_oversized_input",
        "report",
        "a 600 MiB (sparse) input copy",
        "exceeds",
        report_oversized_input,
        names=("current.xml.txt",),
    ),
    Entry(
        "report_oversized_report",
        "report",
        "a 600 MiB (sparse) diff.json",
        "exceeds",
        report_oversized_report,
        names=("diff.json",),
    ),
    Entry(
        "report_large_garbage_report",
        "report",
        "a 65 MiB (sparse) diff.json: '{' then zero bytes",
        "is not valid JSON",
        report_large_garbage_report,
        names=("diff.json",),
    ),
    Entry(
        "report_laughs_input",
        "report",
        "billion laughs as an input copy, its hash rewritten to match",
        DTD,
        report_laughs_input,
        names=("current.xml.txt",),
    ),
    Entry(
        "report_bomb_input",
        "report",
        "a Zstandard bomb as an input copy, its hash rewritten to match",
        "expands",
        report_bomb_input,
        names=("01.eval",),
    ),
    Entry(
        "report_checkpoint_strings",
        "report",
        "checkpoints with strings for numbers, hash rewritten",
        "no longer passes validation",
        report_checkpoint_strings,
        names=("checkpoints.json",),
    ),
    Entry(
        "report_20001_files",
        "report",
        "20,001 extra files in a report folder",
        "holds more than 20000 files",
        report_many_files,
        commands=("site-build",),
    ),
    # ---- sites ------------------------------------------------------------------------------
    Entry(
        "site_report_dotdot",
        "site",
        "a site manifest report path reports/../../etc",
        "is not allowed",
        _site_edit("site_report_dotdot", _first_report("path", "reports/../../etc")),
        names=("manifest.json",),
    ),
    Entry(
        "site_report_absolute",
        "site",
        "a site manifest report path /etc",
        "is not allowed",
        _site_edit("site_report_absolute", _first_report("path", "/etc")),
        names=("manifest.json",),
    ),
    Entry(
        "site_file_dotdot",
        "site",
        "a site manifest listing ../outside.html",
        "lists ../outside.html",
        _site_edit("site_file_dotdot", _add_file("../outside.html")),
        names=("manifest.json",),
    ),
    Entry(
        "site_file_absolute",
        "site",
        "a site manifest listing /etc/passwd",
        "lists /etc/passwd",
        _site_edit("site_file_absolute", _add_file("/etc/passwd")),
        names=("manifest.json",),
    ),
    Entry(
        "site_doc_dotdot",
        "site",
        "a doc named ../../etc/passwd.md",
        "is not allowed",
        _site_edit("site_doc_dotdot", _set("docs", ["../../etc/passwd.md"])),
        names=("manifest.json",),
    ),
    Entry(
        "site_bundle_dotdot",
        "site",
        "a bundle manifest listing ../../../outside.json, its hash rewritten",
        "outside.json is missing",
        site_bundle_dotdot,
        names=("evalarc-bundle.json",),
    ),
    Entry(
        "site_symlink_page",
        "site",
        "a report page that is a symlink",
        EVIDENCE_SYMLINK,
        site_symlink_page,
        names=("index.html",),
    ),
    Entry(
        "site_symlink_root",
        "site",
        "the site folder itself is a symlink",
        EVIDENCE_SYMLINK,
        site_symlink_root,
    ),
    Entry(
        "site_fifo", "site", "a FIFO inside the site", NOT_REGULAR, site_fifo, names=("docs.html",)
    ),
    Entry(
        "site_newer_schema",
        "site",
        "a newer site schema",
        "newer than this EvalArc reads",
        _site_edit("site_newer_schema", _set("schema_version", "evalarc.site.v7")),
        names=("manifest.json",),
    ),
    Entry(
        "site_manifest_nan",
        "site",
        "NaN in the site manifest",
        "non-finite number",
        _site_bytes("site_manifest_nan", _SITE_HEAD + b"NaN}"),
        names=("manifest.json",),
    ),
    Entry(
        "site_manifest_deep",
        "site",
        "100,000 nested arrays in the site manifest",
        "is not valid JSON",
        _site_bytes("site_manifest_deep", _SITE_HEAD + _nested(DEEP).encode() + b"}"),
        names=("manifest.json",),
    ),
]


def make_entry(entry: Entry, generated: Path, bases: Bases) -> Path:
    """The input of ``entry``: its committed file, or what its maker writes into a folder of
    its own under ``generated`` (so the files a mutation points at cannot collide)."""
    if entry.make is None:
        return FILES / entry.name
    scratch = generated / _slug(entry.name)
    scratch.mkdir(parents=True)
    return entry.make(scratch, bases)


def _slug(name: str) -> str:
    return "".join(char if char.isalnum() else "_" for char in name)


# -- bases --------------------------------------------------------------------------------------


def _cli(evalarc: str, *args: str | Path, cwd: Path) -> None:
    done = subprocess.run(
        [evalarc, *map(str, args)], cwd=cwd, capture_output=True, text=True, check=False
    )
    if done.returncode not in (0, 1):
        raise RuntimeError(f"evalarc {args[0]} failed: {done.stderr.strip()}")


def build_bases(root: Path, corpus: Path, evalarc: str) -> Bases:
    """Make the valid folders the report and site entries mutate, with the real CLI."""
    root.mkdir(parents=True, exist_ok=True)
    baseline = corpus / "junit" / "pytest" / "baseline.xml"
    current = corpus / "junit" / "pytest" / "current.xml"
    split = write_json(
        root / "split.json",
        {"schema_version": "evalarc.case-split.v1", "held_out": ["tests.test_calc.TestParse*"]},
    )
    cases = write_json(
        root / "cases.json",
        {
            "schema_version": "evalarc.case-manifest.v1",
            "cases": [{"match": "*", "source": "synthetic"}],
        },
    )
    harness = write(root / "harness" / "prompt.md", "Answer briefly.\nShow your work.\n").parent
    _cli(
        evalarc,
        "diff",
        baseline,
        current,
        "--held-out",
        split,
        "--harness",
        harness,
        "--output",
        "diff",
        cwd=root,
    )
    inspect_log_file = corpus / "inspect" / "realworld" / "log_read_sample.eval"
    _cli(evalarc, "eval-health", inspect_log_file, "--cases", cases, "--output", "health", cwd=root)
    _cli(evalarc, "init", "workspace", "--task", "support-routing", "--reference", cwd=root)
    (root / "workspace" / "TASK.md").unlink()  # the recorded reference has no contract file
    _cli(
        evalarc,
        "evaluate",
        "workspace",
        "--task",
        "support-routing",
        "--backend",
        "replay",
        "--seeds",
        "17",
        "--output",
        "evaluation",
        "--quiet",
        cwd=root,
    )
    evaluation = json.loads((root / "evaluation" / "evaluation.json").read_text("utf-8"))
    write_json(root / "checkpoints.json", [{"elapsed_seconds": 60, "evaluation": evaluation}])
    _cli(
        evalarc,
        "trajectory",
        "checkpoints.json",
        "--budget-seconds",
        "600",
        "--output",
        "trajectory",
        cwd=root,
    )
    _cli(evalarc, "site", "build", "diff", "trajectory", "--output", "site", "--quiet", cwd=root)
    return Bases(
        root=root,
        good_baseline=baseline,
        good_current=current,
        good_split=split,
        good_cases=cases,
        harness=harness,
        diff=root / "diff",
        health=root / "health",
        trajectory=root / "trajectory",
        evaluation=root / "evaluation",
        site=root / "site",
        good_by_format={
            "inspect": corpus / "inspect" / "realworld" / "log_read_sample.json",
            "promptfoo": corpus / "promptfoo" / "generated" / "echo.baseline.json",
            "junit": baseline,
            "evaluation": root / "evaluation" / "evaluation.json",
        },
    )


# -- README -------------------------------------------------------------------------------------


def readme_table() -> str:
    """The Markdown table of README.md, one row per entry."""
    lines = [
        "| input | reaches | attacks | every command must say |",
        "| --- | --- | --- | --- |",
    ]
    for entry in ENTRIES:
        shown = entry.name.replace("\n", "\\n")
        where = f"`files/{shown}`" if entry.committed else f"`{shown}` (generated)"
        commands = ", ".join(entry.command_names())
        if entry.args:
            commands += f" (with `{' '.join(entry.args)}`)"
        expected = f"`{entry.expect}`"
        for command, fragment in sorted(entry.expect_by.items()):
            expected += f"; {command}: `{fragment}`"
        attacks = entry.attacks.replace("\\", "\\\\").replace("|", "\\|")
        lines.append(f"| {where} | {commands} | {attacks} | {expected} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if argv == ["--readme"]:
        sys.stdout.write(readme_table())
        return 0
    if len(argv) != 1:
        sys.stderr.write(__doc__ or "")
        return 2
    out = Path(argv[0])
    if out.exists():
        sys.stderr.write(f"{out} exists; choose a new folder\n")
        return 2
    corpus = HERE.parent / "corpus"
    evalarc = str(Path(sys.executable).parent / "evalarc")
    bases = build_bases(out / "bases", corpus, evalarc)
    for entry in ENTRIES:
        if entry.make is not None:
            make_entry(entry, out / "generated", bases)
    print(f"wrote {sum(1 for e in ENTRIES if e.make)} generated entries under {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
