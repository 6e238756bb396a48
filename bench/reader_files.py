"""Generators for the reader benchmark's inputs: hostile files that used to exhaust the machine
and a valid large promptfoo pair (see bench/readers.py). Pure stdlib; every file is written as
a stream, so making a 40 MiB file of 14 million rows takes seconds and little memory.

    python bench/reader_files.py OUT_DIR
"""

from __future__ import annotations

import json
import struct
import sys
import zipfile
import zlib
from pathlib import Path

MIB = 1024 * 1024
_BLOCK = 1 << 16


def _repeat_into(handle: object, unit: bytes, count: int, sep: bytes = b",") -> None:
    """Write ``unit`` ``count`` times separated by ``sep``, a block at a time."""
    write = handle.write  # type: ignore[attr-defined]
    block = (unit + sep) * _BLOCK
    full, rest = divmod(count - 1, _BLOCK)
    for _ in range(full):
        write(block)
    write((unit + sep) * rest)
    write(unit)


def promptfoo_empty_rows(path: Path, size: int = 40 * MIB) -> Path:
    """A promptfoo file of ``size`` bytes whose rows are all ``{}`` (40 MiB = 14 M rows)."""
    head, tail = b'{"results":{"version":3,"results":[', b"]}}"
    count = (size - len(head) - len(tail) + 1) // 3
    with path.open("wb") as handle:
        handle.write(head)
        _repeat_into(handle, b"{}", count)
        handle.write(tail)
    return path


def promptfoo_minimal_rows(path: Path, size: int = 40 * MIB) -> Path:
    """Rows that carry a verdict and nothing else (``{"success":true}``): 2.4 M rows in 40 MiB."""
    head, tail = b'{"results":{"version":3,"results":[', b"]}}"
    unit = b'{"success":true}'
    count = (size - len(head) - len(tail) + 1) // (len(unit) + 1)
    with path.open("wb") as handle:
        handle.write(head)
        _repeat_into(handle, unit, count)
        handle.write(tail)
    return path


def _header_json() -> bytes:
    header = {
        "version": 2,
        "status": "success",
        "eval": {"task": "bomb", "model": "mockllm/model", "config": {"epochs": 1}},
        "results": {"scores": []},
    }
    return json.dumps(header).encode()


def eval_inflating(path: Path, inflated: int = 63 * MIB) -> Path:
    """An Inspect ``.eval`` whose one sample member inflates to ``inflated`` bytes of empty
    objects (about 180 KB on disk); written with a hand-made DEFLATE stream so the member is
    never held in memory."""
    head = b'{"id":1,"epoch":1,"scores":{"m":{"value":"C"}},"messages":['
    tail = b"]}"
    count = (inflated - len(head) - len(tail) + 1) // 3
    # Level 1 keeps the ratio (about 350x) under the archive reader's 1000x bomb rule, as the
    # 180 KB file of the report did.
    compressor = zlib.compressobj(1, zlib.DEFLATED, -15)
    crc = 0
    compressed = bytearray()
    total = 0

    def feed(data: bytes) -> None:
        nonlocal crc, total
        crc = zlib.crc32(data, crc)
        total += len(data)
        compressed.extend(compressor.compress(data))

    feed(head)
    block = b"{}," * _BLOCK
    full, rest = divmod(count - 1, _BLOCK)
    for _ in range(full):
        feed(block)
    feed(b"{}," * rest + b"{}")
    feed(tail)
    compressed.extend(compressor.flush())
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", _header_json())
        archive.writestr("_journal/start.json", b"{}")
    # Append the sample member by hand (zipfile would need the inflated bytes in memory).
    _append_member(path, "samples/1_epoch_1.json", bytes(compressed), crc, total)
    return path


def _append_member(path: Path, name: str, data: bytes, crc: int, size: int) -> None:
    """Add one DEFLATE member with known CRC and sizes to a small archive (rewrites its
    central directory)."""
    with zipfile.ZipFile(path) as archive:
        members = [(info, archive.read(info.filename)) for info in archive.infolist()]
    entries: list[tuple[bytes, int, int, int, int]] = []
    with path.open("wb") as handle:
        for info, content in members:
            raw = zlib.compress(content, 9)[2:-4]
            entries.append(
                (info.filename.encode(), handle.tell(), zlib.crc32(content), len(raw), len(content))
            )
            _local(handle, info.filename.encode(), zlib.crc32(content), len(raw), len(content))
            handle.write(raw)
        entries.append((name.encode(), handle.tell(), crc, len(data), size))
        _local(handle, name.encode(), crc, len(data), size)
        handle.write(data)
        start = handle.tell()
        for encoded, offset, member_crc, csize, usize in entries:
            handle.write(
                struct.pack(
                    "<4s6H3L5H2L",
                    b"PK\x01\x02",
                    20,
                    20,
                    0,
                    8,
                    0,
                    0x21,
                    member_crc,
                    csize,
                    usize,
                    len(encoded),
                    0,
                    0,
                    0,
                    0,
                    0,
                    offset,
                )
            )
            handle.write(encoded)
        end = handle.tell()
        handle.write(
            struct.pack(
                "<4s4H2LH", b"PK\x05\x06", 0, 0, len(entries), len(entries), end - start, start, 0
            )
        )


def _local(handle: object, name: bytes, crc: int, csize: int, usize: int) -> None:
    handle.write(  # type: ignore[attr-defined]
        struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 8, 0, 0x21, crc, csize, usize, len(name), 0)
    )
    handle.write(name)  # type: ignore[attr-defined]


def _valid_row(index: int, revision: str) -> dict[str, object]:
    failing = revision == "current" and index % 50 == 7
    output = f"Answer {index}: " + f"queue-{index % 97:02d} " * 120
    assertions = [
        {"type": "icontains", "value": f"queue-{index % 97:02d}"},
        {"type": "javascript", "value": "output.length < 5000", "metric": "brevity"},
    ]
    return {
        "cost": 0.0004,
        "gradingResult": {
            "pass": not failing,
            "score": 0 if failing else 1,
            "reason": "Assertion failed" if failing else "All assertions passed",
            "componentResults": [
                {"pass": not failing, "score": 0 if failing else 1, "assertion": assertions[0]},
                {"pass": True, "score": 1, "assertion": assertions[1]},
            ],
        },
        "id": f"row-{index}",
        "latencyMs": 120 + index % 40,
        "prompt": {"raw": f"Ticket {index}: which queue?", "label": "route"},
        "promptIdx": 0,
        "provider": {"id": "file://provider.js", "label": "router"},
        "response": {"output": output, "tokenUsage": {"total": 400, "prompt": 300}},
        "success": not failing,
        "testCase": {
            "description": f"ticket-{index:06d}",
            "vars": {"ticket": f"Ticket {index}: which queue handles order {1000 + index}?"},
            "assert": assertions,
        },
        "testIdx": index,
        "tokenUsage": {"total": 400, "prompt": 300, "completion": 100},
    }


def promptfoo_valid(path: Path, rows: int = 92_000, revision: str = "baseline") -> Path:
    """A valid promptfoo output of ``rows`` rows (about 1.6 KB each, 150 MB at 92k rows)."""
    with path.open("w", encoding="utf-8") as handle:
        handle.write('{"evalId":"bench","results":{"version":3,"results":[')
        for index in range(rows):
            if index:
                handle.write(",")
            handle.write(json.dumps(_valid_row(index, revision)))
        failures = sum(1 for index in range(rows) if revision == "current" and index % 50 == 7)
        stats = {"successes": rows - failures, "failures": failures, "errors": 0}
        handle.write(f'],"stats":{json.dumps(stats)}}},"config":{{"description":"bench"}}}}')
    return path


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else Path("bench/out/readers")
    out.mkdir(parents=True, exist_ok=True)
    promptfoo_empty_rows(out / "promptfoo-empty-rows.json")
    promptfoo_minimal_rows(out / "promptfoo-minimal-rows.json")
    eval_inflating(out / "inflating.eval")
    for revision in ("baseline", "current"):
        promptfoo_valid(out / f"promptfoo-valid.{revision}.json", revision=revision)
    for path in sorted(out.iterdir()):
        print(f"{path.name}: {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
