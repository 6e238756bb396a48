"""Readers stream and stop at their caps: hostile promptfoo and Inspect files are refused in one
line naming the file and the cap, without building what they describe (bench/readers.py runs
the full-size files)."""

from __future__ import annotations

import json
import time
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import pytest

from evalarc.errors import InputError
from evalarc.formats import load_results
from evalarc.formats import promptfoo as promptfoo_reader
from evalarc.formats.jsonstream import MAX_VALUE_CONTAINERS

MIB = 1024 * 1024


def _peak_while(action: Any) -> tuple[int, BaseException | None]:
    tracemalloc.start()
    caught: BaseException | None = None
    try:
        action()
    except BaseException as error:
        caught = error
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak, caught


def _rows_file(path: Path, unit: bytes, count: int) -> Path:
    path.write_bytes(b'{"results":{"results":[' + b",".join([unit] * count) + b"]}}")
    return path


def test_empty_rows_are_an_unknown_shape_refused_at_the_first(tmp_path: Path) -> None:
    # Before: 14 M empty rows became 14 M cases (7.7 GB after 932 s); 250k took 0.46 GB.
    folder = tmp_path / "a"
    folder.mkdir()
    path = _rows_file(folder / "empty.json", b"{}", 1_000_000)
    started = time.perf_counter()
    peak, error = _peak_while(lambda: load_results(path))
    assert isinstance(error, InputError)
    assert str(error).startswith(f"{path}: results.results[0] is a row of an unknown shape")
    assert peak < 40 * MIB and time.perf_counter() - started < 30


def test_row_count_is_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(promptfoo_reader, "MAX_ROWS", 1000)
    path = _rows_file(tmp_path / "many.json", b'{"success":true}', 1001)
    with pytest.raises(InputError, match=r"many\.json has more than 1,000 result rows"):
        load_results(path)
    fine = _rows_file(tmp_path / "fine.json", b'{"success":true}', 1000)
    assert len(load_results(fine).cases) == 1000


def test_promptfoo_memory_follows_one_row_not_the_file(tmp_path: Path) -> None:
    # A 50 MB file of 2,000 rows: parsed whole it costs several times its size; streamed, the
    # window holds a few megabytes of text and the rows kept are small.
    row = {
        "success": True,
        "gradingResult": {"pass": True, "componentResults": []},
        "testCase": {"description": "t", "vars": {"q": "x"}},
        "response": {"output": "o"},
        "padding": [f"filler text {n} " * 100 for n in range(16)],
    }
    text = json.dumps(row)
    path = tmp_path / "big.json"
    path.write_text(
        '{"results":{"results":[' + ",".join([text] * 2000) + "]}}", encoding="utf-8"
    )
    assert path.stat().st_size > 45_000_000
    peak, error = _peak_while(lambda: load_results(path))
    assert error is None
    assert peak < 40 * MIB


def _inflating_eval(path: Path, objects: int) -> Path:
    sample = b'{"id":1,"epoch":1,"scores":{"m":{"value":"C"}},"messages":['
    sample += b",".join([b"{}"] * objects) + b"]}"
    header = {
        "version": 2,
        "status": "success",
        "eval": {"task": "t", "model": "m", "config": {}},
    }
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("header.json", json.dumps(header))
        archive.writestr("samples/1_epoch_1.json", sample)
    return path


def test_a_sample_member_of_millions_of_objects_is_refused_before_parsing(tmp_path: Path) -> None:
    # Before: a 180 KB .eval whose member inflated to 63 MiB of {} took 1.7 GB.
    path = _inflating_eval(tmp_path / "bomb.eval", MAX_VALUE_CONTAINERS + 1)
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("samples/1_epoch_1.json")
        assert info.file_size / info.compress_size < 1000  # not caught by the ratio rule
    peak, error = _peak_while(lambda: load_results(path))
    assert isinstance(error, InputError)
    assert str(error) == (
        f"{path}: member 'samples/1_epoch_1.json' holds more than 2,000,000 JSON objects and "
        "arrays (the cap on one sample)"
    )
    assert peak < 64 * MIB


def test_a_json_log_sample_of_millions_of_objects_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bomb.json"
    with path.open("wb") as handle:
        handle.write(b'{"eval":{"task":"t","model":"m"},"samples":[{"id":1,"messages":[')
        # The cap is checked each time the window grows past a value, before it is parsed again.
        handle.write(b",".join([b"{}"] * (3 * MAX_VALUE_CONTAINERS)))
        handle.write(b"]}]}")
    peak, error = _peak_while(lambda: load_results(path))
    assert isinstance(error, InputError)
    # Refused by the container cap, or first by the reading budget (the window's copies of 18 MB
    # of text reach twice the file plus the headroom before the cap is checked): one line each.
    message = str(error)
    assert message.startswith(f"{path}: ")
    assert (
        message.startswith(f"{path}: a value at character")
        and "holds more than 2,000,000 JSON objects and arrays" in message
    ) or message.startswith(f"{path}: reading it needs more memory than its budget of")
    assert peak < 160 * MIB


def test_inspect_scores_of_an_unknown_shape_are_refused_not_skipped(tmp_path: Path) -> None:
    log = {
        "eval": {"task": "t", "model": "m"},
        "status": "success",
        "samples": [
            {"id": 1, "epoch": 1, "scores": {"m": {"value": "C"}}},
            {"id": 2, "epoch": 1, "scores": [{"value": "I"}]},
        ],
    }
    path = tmp_path / "shape.json"
    path.write_text(json.dumps(log), encoding="utf-8")
    with pytest.raises(InputError, match=r"sample '2' has scores of an unknown shape \(list"):
        load_results(path)


def test_inspect_log_without_a_scored_sample_is_refused(tmp_path: Path) -> None:
    log = {
        "eval": {"task": "t", "model": "m"},
        "status": "success",
        "samples": [{"id": 1, "epoch": 1, "error": {"message": "boom"}}],
    }
    path = tmp_path / "unscored.json"
    path.write_text(json.dumps(log), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_results(path)
    assert str(caught.value).startswith(f"{path}: nothing in it could be assessed")
    # The compressed form of the same kind of log.
    archive_path = tmp_path / "unscored.eval"
    with zipfile.ZipFile(archive_path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps({"eval": log["eval"], "status": "success"}))
        archive.writestr("samples/1_epoch_1.json", json.dumps(log["samples"][0]))
    with pytest.raises(InputError, match="nothing in it could be assessed"):
        load_results(archive_path)
