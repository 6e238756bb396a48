"""The Inspect AI reader on every real log in the corpus, and on hostile files made here."""

from __future__ import annotations

import itertools
import json
import math
import struct
import time
import tracemalloc
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import zstandard

from evalarc.canonical import sha256_file, sha256_text
from evalarc.errors import InputError
from evalarc.formats import jsonstream
from evalarc.formats.archive import SafeArchive, unsafe_member_name
from evalarc.formats.inspect import passed_of, read_inspect, top_level_member_types
from evalarc.formats.load import load_results
from evalarc.formats.model import Run, SampleMeta, Source

VARIANTS = ("capitals", "capitals_epochs", "flaky_errors", "keywords", "verdict_words")
POPULARITY_BASELINE = "2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval"
POPULARITY_CURRENT = "2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval"


# -- helpers ------------------------------------------------------------------------------------


def load(corpus: Path, name: str, threshold: float = 1.0) -> Run:
    return load_results(corpus / "inspect" / name, threshold=threshold)


def outcomes(run: Run) -> dict[tuple[str, str], list[bool | None]]:
    """(case, check) -> passed per attempt, in order."""
    return {
        (case, check): [attempt.passed for attempt in attempts]
        for case, checks in run.cases.items()
        for check, attempts in checks.items()
    }


def transitions(
    baseline: Run, current: Run
) -> tuple[set[tuple[str, str, int]], set[tuple[str, str, int]]]:
    """Per-attempt (case, check, epoch) that went pass -> not pass and not pass -> pass."""
    regressed: set[tuple[str, str, int]] = set()
    improved: set[tuple[str, str, int]] = set()
    before, after = outcomes(baseline), outcomes(current)
    for key in before.keys() & after.keys():
        for epoch, (old, new) in enumerate(zip(before[key], after[key], strict=True), start=1):
            if old is True and new is not True:
                regressed.add((*key, epoch))
            elif old is not True and new is True:
                improved.add((*key, epoch))
    return regressed, improved


def without_durations(run: Run) -> Run:
    """Two native runs differ in timings only; drop them to compare everything else."""
    samples = {
        case: [
            replace(meta, usage={k: v for k, v in meta.usage.items() if k != "duration_seconds"})
            for meta in metas
        ]
        for case, metas in run.samples.items()
    }
    return replace(run, samples=samples, source=Source(name="-", sha256="-"))


def expect_input_error(path: Path, action: Callable[[], object], *needles: str) -> str:
    """Run ``action``; it must raise InputError naming ``path`` quickly and with bounded memory."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(InputError) as caught:
            action()
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    message = caught.value.message
    assert path.name in message
    assert "\n" not in message
    for needle in needles:
        assert needle in message
    assert elapsed < 5.0, f"took {elapsed:.1f}s"
    assert peak < 96 * 1024 * 1024, f"peak {peak} bytes"
    return message


def source_of(path: Path) -> Source:
    return Source(name=path.name, sha256=sha256_file(path)[0])


def read(path: Path, threshold: float = 1.0) -> Run:
    return read_inspect(path, source_of(path), threshold)


class RawMember:
    """One member for :func:`write_zip`, with every header field under the test's control."""

    def __init__(
        self,
        name: bytes | str,
        payload: bytes,
        method: int = 8,
        data: bytes | None = None,
        file_size: int | None = None,
        crc: int | None = None,
        flags: int = 0,
    ) -> None:
        self.name = name.encode() if isinstance(name, str) else name
        self.method = method
        if data is None:
            if method == 8:
                packer = zlib.compressobj(6, zlib.DEFLATED, -15)
                data = packer.compress(payload) + packer.flush()
            elif method == 93:
                data = zstandard.ZstdCompressor().compress(payload)
            else:
                data = payload
        self.data = data
        self.file_size = len(payload) if file_size is None else file_size
        self.crc = zlib.crc32(payload) if crc is None else crc
        self.flags = flags


def write_zip(path: Path, members: list[RawMember]) -> Path:
    """A ZIP written byte by byte, so headers can lie the way a hostile archive's do."""
    body = bytearray()
    directory = bytearray()
    for member in members:
        offset = len(body)
        fields = (member.flags, member.method, 0, 0x21, member.crc, len(member.data))
        body += struct.pack("<4sHHHHHIII", b"PK\x03\x04", 20, *fields, member.file_size)
        body += struct.pack("<HH", len(member.name), 0) + member.name + member.data
        directory += struct.pack(
            "<4sHHHHHHIIIHHHHHII",
            b"PK\x01\x02",
            20,
            20,
            *fields,
            member.file_size,
            len(member.name),
            0,
            0,
            0,
            0,
            0,
            offset,
        )
        directory += member.name
    end = struct.pack(
        "<4sHHHHIIH",
        b"PK\x05\x06",
        0,
        0,
        len(members),
        len(members),
        len(directory),
        len(body),
        0,
    )
    path.write_bytes(bytes(body + directory + end))
    return path


def minimal_header(**extra: Any) -> dict[str, Any]:
    header: dict[str, Any] = {
        "version": 2,
        "status": "success",
        "eval": {"task": "t", "model": "mockllm/model", "config": {"epochs": 1}},
    }
    header.update(extra)
    return header


def sample(sample_id: object, epoch: object = 1, value: object = "C", **extra: Any) -> Any:
    record: dict[str, Any] = {
        "id": sample_id,
        "epoch": epoch,
        "input": f"question {sample_id}",
        "target": "answer",
        "output": {"completion": f"reply {sample_id}"},
        "scores": {"match": {"value": value, "explanation": "why"}},
    }
    record.update(extra)
    return record


def write_json_log(path: Path, samples: list[Any], **header: Any) -> Path:
    path.write_text(json.dumps({**minimal_header(**header), "samples": samples}))
    return path


def write_eval_log(path: Path, samples: list[Any], method: int = 93) -> Path:
    members = [RawMember("header.json", json.dumps(minimal_header()).encode(), method=method)]
    members += [
        RawMember(
            f"samples/{record['id']}_epoch_{record['epoch']}.json",
            json.dumps(record).encode(),
            method=method,
        )
        for record in samples
    ]
    return write_zip(path, members)


def zeros(size: int) -> Iterator[bytes]:
    chunk = bytes(1024 * 1024)
    for _ in range(size // len(chunk)):
        yield chunk


# -- the corpus ---------------------------------------------------------------------------------


def corpus_logs(corpus: Path) -> list[Path]:
    return sorted(p for p in (corpus / "inspect").rglob("*") if p.suffix in (".json", ".eval"))


def test_every_corpus_log_loads_as_inspect(corpus: Path) -> None:
    logs = corpus_logs(corpus)
    assert len(logs) == 24
    for path in logs:
        if path.name == POPULARITY_BASELINE:
            # Run without scoring: nothing in it can be assessed, so it is refused (never a
            # baseline that every current run "passes" against).
            with pytest.raises(InputError, match="nothing in it could be assessed"):
                load_results(path)
            continue
        run = load_results(path)
        assert run.format == "inspect"
        assert run.source == source_of(path)
        assert run.identity["status"] == "success" and not run.incomplete
        assert run.cases and all(isinstance(case, str) for case in run.cases)
        for case, checks in run.cases.items():
            attempts = sum(len(a) for a in checks.values())
            assert len(run.samples[case]) * max(len(checks), 1) >= attempts
            for check, rows in checks.items():
                for attempt, meta in zip(rows, run.samples[case], strict=False):
                    if check != "sample error":
                        assert attempt.output_sha256 == meta.output_sha256
        if path.suffix == ".eval":
            # the corpus states its generated archives use zstd and realworld ones DEFLATE
            with zipfile.ZipFile(path) as archive:
                methods = {info.compress_type for info in archive.infolist()}
            assert methods == ({8} if "realworld" in path.parts else {93})


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("side", ("baseline", "current"))
def test_json_and_eval_of_a_variant_give_the_same_run(
    corpus: Path, variant: str, side: str
) -> None:
    from_json = load(corpus, f"{variant}.{side}.json")
    from_eval = load(corpus, f"{variant}.{side}.eval")
    assert from_json.source != from_eval.source
    assert without_durations(from_json) == without_durations(from_eval)


def test_log_read_sample_json_and_eval_are_one_run(corpus: Path) -> None:
    from_json = load(corpus, "realworld/log_read_sample.json")
    from_eval = load(corpus, "realworld/log_read_sample.eval")
    assert without_durations(from_json) == without_durations(from_eval)
    assert outcomes(from_json) == {("1", "match"): [True]}
    assert from_json.cases["1"]["match"][0].value == "C"
    assert from_json.headline is not None
    assert (from_json.headline.name, from_json.headline.value) == ("match accuracy", 1.0)
    assert from_json.identity == {
        "task": "popularity",
        "model": "ollama/gemma3",
        "status": "success",
        "epochs": 1,
    }


def test_capitals_facts(corpus: Path) -> None:
    baseline = load(corpus, "capitals.baseline.eval")
    current = load(corpus, "capitals.current.json")
    expected_ids = [f"cap-{n:02d}" for n in range(1, 31)]
    for run in (baseline, current):
        assert list(run.cases) == expected_ids
        assert all(list(checks) == ["match", "includes"] for checks in run.cases.values())
        assert all(len(a) == 1 for checks in run.cases.values() for a in checks.values())
        assert run.identity["task"] == "capitals" and run.identity["epochs"] == 1
    assert baseline.headline is not None and current.headline is not None
    assert baseline.headline.name == current.headline.name == "match accuracy"
    assert (baseline.headline.value, current.headline.value) == (0.6, 0.7)
    regressed, improved = transitions(baseline, current)
    assert regressed == {
        ("cap-02", "match", 1),
        ("cap-02", "includes", 1),
        ("cap-07", "match", 1),
        ("cap-11", "match", 1),
        ("cap-11", "includes", 1),
        ("cap-24", "includes", 1),
    }
    assert improved == {
        (case, check, 1)
        for case in ("cap-04", "cap-08", "cap-12", "cap-28")
        for check in ("match", "includes")
    } | {("cap-16", "match", 1), ("cap-20", "match", 1)}
    # headline accuracy is Inspect's own figure and agrees with the attempts read here
    passes = sum(a.passed is True for c in current.cases.values() for a in c["match"])
    assert passes / 30 == pytest.approx(0.7)


def test_capitals_epochs_facts_with_integer_ids(corpus: Path) -> None:
    baseline = load(corpus, "capitals_epochs.baseline.json")
    current = load(corpus, "capitals_epochs.current.eval")
    for run in (baseline, current):
        assert sorted(run.cases, key=int) == [str(n) for n in range(1, 13)]
        assert all(len(checks["match"]) == 3 for checks in run.cases.values())
        assert run.identity["epochs"] == 3
    regressed, improved = transitions(baseline, current)
    assert regressed == {("6", "match", 2), ("7", "match", 1), ("7", "match", 2)} | {
        ("10", "match", 3)
    }
    assert improved == {
        ("8", "match", 1),
        ("8", "match", 2),
        ("8", "match", 3),
        ("9", "match", 1),
        ("9", "match", 3),
        ("10", "match", 1),
        ("10", "match", 2),
    }
    counts = {
        case: (
            sum(a.passed is True for a in baseline.cases[case]["match"]),
            sum(a.passed is True for a in current.cases[case]["match"]),
        )
        for case in baseline.cases
    }
    assert counts["6"] == (3, 2) and counts["7"] == (3, 1) and counts["8"] == (0, 3)
    assert counts["9"] == (1, 3) and counts["10"] == (1, 2) and counts["11"] == (0, 0)
    assert all(counts[str(n)] == (3, 3) for n in range(1, 6))
    assert [a.value for a in baseline.cases["12"]["match"]] == ["C", "I", "C"]
    assert [a.value for a in current.cases["12"]["match"]] == ["C", "I", "C"]
    assert baseline.headline is not None and current.headline is not None
    assert baseline.headline.value == pytest.approx(0.6944, abs=1e-4)
    assert current.headline.value == pytest.approx(0.7778, abs=1e-4)


def test_keywords_numeric_and_bool_scores(corpus: Path) -> None:
    baseline = load(corpus, "keywords.baseline.json")
    current = load(corpus, "keywords.current.json")
    assert list(baseline.cases) == [f"kw-{n:02d}" for n in range(1, 17)]
    assert list(baseline.cases["kw-01"]) == ["keyword_recall", "includes", "concise"]
    recall_before = baseline.cases["kw-02"]["keyword_recall"][0]
    recall_after = current.cases["kw-02"]["keyword_recall"][0]
    assert (recall_before.value, recall_before.passed) == (1.0, True)
    assert (recall_after.value, recall_after.passed) == (0.5, False)
    assert current.cases["kw-05"]["concise"][0].value is False
    assert baseline.cases["kw-05"]["concise"][0].passed is True
    regressed, improved = transitions(baseline, current)
    assert regressed == {
        ("kw-02", "keyword_recall", 1),
        ("kw-07", "includes", 1),
        ("kw-05", "concise", 1),
        ("kw-11", "concise", 1),
    }  # kw-07 recall 0.5 -> 0.0 is a numeric drop but fails at threshold 1.0 in both runs
    assert ("kw-07", "keyword_recall") in outcomes(baseline)
    assert baseline.cases["kw-07"]["keyword_recall"][0].value == 0.5
    assert current.cases["kw-07"]["keyword_recall"][0].value == 0.0
    assert {("kw-03", "keyword_recall", 1), ("kw-06", "includes", 1)} <= improved
    assert {("kw-08", "concise", 1), ("kw-14", "concise", 1)} <= improved
    assert baseline.headline is not None and current.headline is not None
    assert baseline.headline.name == "keyword_recall mean"
    assert (baseline.headline.value, current.headline.value) == (0.5625, 0.671875)
    # a list target becomes one expected text per keyword
    expected = [m.text for m in baseline.material["kw-02"] if m.role == "expected"]
    assert len(expected) == 4
    # the threshold decides numeric scores
    lenient = load(corpus, "keywords.current.json", threshold=0.5)
    assert lenient.cases["kw-02"]["keyword_recall"][0].passed is True
    assert lenient.threshold == 0.5


def test_flaky_errors_are_unassessed_not_failures(corpus: Path) -> None:
    baseline = load(corpus, "flaky_errors.baseline.eval")
    current = load(corpus, "flaky_errors.current.json")
    assert list(baseline.cases) == [f"q{n:02d}" for n in range(1, 11)]
    errored = {
        run_name: sorted(
            case
            for case, checks in run.cases.items()
            if any(attempt.passed is None for attempt in checks["match"])
        )
        for run_name, run in (("baseline", baseline), ("current", current))
    }
    assert errored == {"baseline": ["q04", "q10"], "current": ["q07", "q10"]}
    # An error is unassessed on the check it hid (the run's only scorer), not a check of its own.
    assert all(
        list(run.cases[case]) == ["match"] for run in (baseline, current) for case in run.cases
    )
    failure = current.cases["q07"]["match"][0]
    assert failure.passed is None
    assert failure.output_sha256 == current.samples["q07"][0].output_sha256
    assert failure.evidence is not None and "simulated sandbox failure" in failure.evidence
    assert current.samples["q07"][0].verdicts == {"match": None}
    assert baseline.cases["q07"]["match"][0].passed is True
    assert current.cases["q08"]["match"][0].passed is False
    assert current.cases["q04"]["match"][0].passed is True
    assert baseline.cases["q03"]["match"][0].passed is False
    assert current.cases["q03"]["match"][0].passed is True
    assert current.cases["q09"]["match"][0].passed is True
    assert baseline.headline is not None and current.headline is not None
    assert (baseline.headline.value, current.headline.value) == (0.625, 0.75)


def test_realworld_unscored_baseline_is_refused(corpus: Path) -> None:
    # Before: read as 10 cases without checks, so a diff against it passed on zero evidence.
    unscored = corpus / "inspect" / "realworld" / POPULARITY_BASELINE
    with pytest.raises(InputError, match="nothing in it could be assessed"):
        load(corpus, f"realworld/{POPULARITY_BASELINE}")
    with pytest.raises(InputError) as caught:
        load_results(unscored)
    assert str(caught.value).startswith(str(unscored))
    current = load(corpus, f"realworld/{POPULARITY_CURRENT}")
    failing = sorted(case for case, ok in outcomes(current).items() if ok != [True])
    assert failing == [("3", "match"), ("7", "match")]
    assert len(outcomes(current)) == 10
    assert current.headline is not None
    assert (current.headline.name, current.headline.value) == ("match accuracy", 0.8)
    assert current.identity["model"] == "openai/gpt-4o-mini"


def test_sample_meta_usage_material_and_outputs(corpus: Path) -> None:
    run = load(corpus, "capitals.baseline.json")
    meta = run.samples["cap-01"][0]
    raw = next(
        s
        for s in json.loads((corpus / "inspect/capitals.baseline.json").read_text())["samples"]
        if s["id"] == "cap-01"
    )
    completion = raw["output"]["completion"]
    assert meta.output_sha256 == sha256_text(completion)
    assert meta.output_text == completion
    assert meta.stop_reason == "stop" and not meta.truncated
    tokens = sum(u["total_tokens"] for u in raw["model_usage"].values())
    assert meta.usage["total_tokens"] == tokens
    assert meta.usage["duration_seconds"] == raw["working_time"]
    assert meta.verdicts == {"match": True, "includes": True}
    assert [(m.role, m.text) for m in run.material["cap-01"]] == [
        ("input", raw["input"]),
        ("expected", raw["target"]),
    ]


# -- scoring rules on logs written here -----------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("C", True),
        ("I", False),
        ("N", False),
        ("P", False),
        (True, True),
        (False, False),
        (1, True),
        (0.99, False),
        (1.0, True),
        (None, None),
        ("maybe", None),
        (math.nan, None),
        (math.inf, None),
        ([1], None),
    ],
)
def test_pass_rule(value: object, expected: bool | None) -> None:
    assert passed_of(value, 1.0) is expected


def test_dict_scores_nan_metrics_and_graders(tmp_path: Path) -> None:
    text = json.dumps(
        {
            **minimal_header(
                eval={
                    "task": "t",
                    "model": "openai/gpt-x",
                    "config": {"epochs": 2},
                    "scorers": [
                        {"name": "inspect_ai/model_graded_qa", "options": {}},
                        {"name": "model_graded_fact", "options": {"model": ["anthropic/judge"]}},
                        {"name": "match", "options": {}},
                    ],
                    "model_generate_config": {"max_tokens": 64, "temperature": None},
                },
                results={
                    "scores": [
                        {"name": "match", "metrics": {"stderr": {"value": "NaN"}}},
                        {"name": "tone", "scorer": "judge", "metrics": {}},
                    ],
                    "headline": {"score": "match", "metric": "stderr"},
                },
                status="error",
            ),
            "samples": [
                sample(1, scores={"judge": {"value": {"tone": "C", "facts": 0.5, "odd": "NaN"}}}),
                sample(1, epoch=2, limit={"type": "token"}, output={"stop_reason": "length"}),
            ],
        }
    ).replace('"NaN"', "NaN")
    run = read(_write(tmp_path / "dict.json", text))
    assert outcomes(run) == {
        ("1", "judge/tone"): [True],
        ("1", "judge/facts"): [False],
        ("1", "judge/odd"): [None],
        ("1", "match"): [True],
    }
    assert run.cases["1"]["judge/odd"][0].value is None  # NaN is never kept
    assert run.headline is not None and run.headline.value is None
    assert run.incomplete and run.identity["status"] == "error"
    assert run.generate_config == {"max_tokens": 64}
    assert run.graders.model_graded_checks == ["inspect_ai/model_graded_qa", "model_graded_fact"]
    assert run.graders.default_grader_checks == ["inspect_ai/model_graded_qa"]
    assert run.graders.grader_models == ["anthropic/judge"]
    assert run.graders.self_graded == ["openai/gpt-x"]
    second = run.samples["1"][1]
    assert second.truncated and second.limit == "token" and second.stop_reason == "length"
    assert second.output_sha256 is None


def test_headline_marker_without_match_gives_no_headline(tmp_path: Path) -> None:
    results = {
        "scores": [{"name": "match", "metrics": {"accuracy": {"value": 1.0}}}],
        "headline": {"score": "other", "metric": "accuracy"},
    }
    run = read(write_json_log(tmp_path / "h.json", [sample("a")], results=results))
    assert run.headline is None
    del results["headline"]
    run = read(write_json_log(tmp_path / "h2.json", [sample("a")], results=results))
    assert run.headline is not None and run.headline.name == "match accuracy"


def test_epochs_without_integer_are_separate_attempts(tmp_path: Path) -> None:
    path = write_json_log(tmp_path / "e.json", [sample(7, epoch=None), sample("7", epoch=None)])
    assert outcomes(read(path)) == {("7", "match"): [True, True]}


# -- hostile inputs -------------------------------------------------------------------------------


def _write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, str):
        path.write_text(text)
    else:
        path.write_bytes(text)
    return path


@pytest.mark.parametrize(
    ("member", "why"),
    [
        ("../evil.json", "unsafe member name"),
        ("/etc/passwd", "unsafe member name"),
        ("samples\\..\\x.json", "unsafe member name"),
        ("C:/x.json", "unsafe member name"),
    ],
)
def test_unsafe_member_names_are_refused(tmp_path: Path, member: str, why: str) -> None:
    path = tmp_path / "slip.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("header.json", json.dumps(minimal_header()))
        archive.writestr(member, b"{}")
    expect_input_error(path, lambda: read(path), why)


def test_nul_in_member_name_is_refused(tmp_path: Path) -> None:
    members = [
        RawMember("header.json", json.dumps(minimal_header()).encode()),
        RawMember(b"samples/a\x00.json", b"{}"),
    ]
    path = write_zip(tmp_path / "nul.eval", members)
    expect_input_error(path, lambda: read(path), "unsafe member name")
    assert unsafe_member_name("samples/a\x00.json") and not unsafe_member_name("samples/1.json")


@pytest.mark.parametrize("method", [8, 93])
def test_decompression_bomb_stops_early(tmp_path: Path, method: int) -> None:
    size = 128 * 1024 * 1024
    if method == 8:
        packer = zlib.compressobj(9, zlib.DEFLATED, -15)
        data = b"".join(packer.compress(chunk) for chunk in zeros(size)) + packer.flush()
    else:
        packer_z = zstandard.ZstdCompressor(level=3).compressobj(size=size)
        data = b"".join(packer_z.compress(chunk) for chunk in zeros(size)) + packer_z.flush()
    assert len(data) < 150_000  # a tiny file that expands beyond the 64 MiB member cap
    header = RawMember("header.json", json.dumps(minimal_header()).encode(), method=method)
    bomb = RawMember("samples/1_epoch_1.json", b"", method=method, data=data, crc=0)
    for claimed in (1000, 60 * 1024 * 1024, size):  # lies small, plausibly, or honestly
        bomb.file_size = claimed
        path = write_zip(tmp_path / f"bomb{claimed}.eval", [header, bomb])
        message = expect_input_error(path, partial(read, path), "'samples/1_epoch_1.json'")
        assert "expands" in message
        if claimed == 1000:
            assert "more than its recorded 1000 bytes" in message


def test_member_cap_and_total_cap_count_real_bytes(tmp_path: Path) -> None:
    payload = json.dumps({"padding": "x" * 300_000}).encode()
    members = [RawMember(f"samples/{n}.json", payload, method=93) for n in range(4)]
    path = write_zip(tmp_path / "big.eval", members)
    with SafeArchive(path, member_cap=200_000) as archive:
        expect_input_error(path, lambda: archive.read("samples/0.json"), "expands beyond 200000")
    with SafeArchive(path, total_cap=1_000_000) as archive:
        for name in archive.names()[:3]:
            assert archive.read(name) == payload
        expect_input_error(path, lambda: archive.read("samples/3.json"), "expands beyond")


def test_lying_sizes_and_crc_are_refused(tmp_path: Path) -> None:
    payload = json.dumps(sample("a")).encode()
    header = RawMember("header.json", json.dumps(minimal_header()).encode())
    lies = {
        "small": (RawMember("samples/a_epoch_1.json", payload, file_size=10), "recorded 10 bytes"),
        "large": (
            RawMember("samples/a_epoch_1.json", payload, file_size=len(payload) + 5),
            "not a readable Inspect log",
        ),
        "crc": (
            RawMember("samples/a_epoch_1.json", payload, crc=zlib.crc32(payload) ^ 1),
            "not a readable Inspect log",
        ),
        "huge": (
            RawMember("samples/a_epoch_1.json", payload, file_size=0xFFFFFFF0),
            "expands beyond",
        ),
    }
    for label, (member, needle) in lies.items():
        path = write_zip(tmp_path / f"{label}.eval", [header, member])
        expect_input_error(path, partial(read, path), needle)


def test_truncated_and_fake_archives(tmp_path: Path, corpus: Path) -> None:
    real = (corpus / "inspect/capitals.baseline.eval").read_bytes()
    truncated = _write(tmp_path / "cut.eval", real[: len(real) // 2])
    expect_input_error(truncated, lambda: load_results(truncated), "not a readable Inspect log")
    fake = _write(tmp_path / "fake.eval", "hello, I am not a zip file\n")
    expect_input_error(fake, lambda: load_results(fake), "not a readable Inspect log")
    # corrupt member data behind an intact directory
    damaged = bytearray(real)
    with zipfile.ZipFile(corpus / "inspect/capitals.baseline.eval") as archive:
        info = archive.getinfo("samples/cap-05_epoch_1.json")
    start = info.header_offset + 30 + len(info.filename) + 40
    damaged[start : start + 64] = bytes(64)
    broken = _write(tmp_path / "damaged.eval", bytes(damaged))
    expect_input_error(broken, lambda: load_results(broken), "not a readable Inspect log")


def test_missing_header_duplicate_members_encryption_and_methods(tmp_path: Path) -> None:
    record = json.dumps(sample("a")).encode()
    no_header = write_zip(tmp_path / "nohead.eval", [RawMember("samples/a_epoch_1.json", record)])
    expect_input_error(
        no_header, lambda: read(no_header), "has no header.json; the run may be incomplete"
    )
    header = RawMember("header.json", json.dumps(minimal_header()).encode())
    twice = write_zip(tmp_path / "twice.eval", [header, header])
    expect_input_error(twice, lambda: read(twice), "duplicate member")
    locked = RawMember("samples/a_epoch_1.json", record, flags=0x1)
    secret = write_zip(tmp_path / "secret.eval", [header, locked])
    expect_input_error(secret, lambda: read(secret), "encrypted")
    bzip = RawMember("samples/a_epoch_1.json", record, method=12)
    odd = write_zip(tmp_path / "bzip.eval", [header, bzip])
    expect_input_error(odd, lambda: read(odd), "unsupported compression method 12")
    stored = write_zip(
        tmp_path / "stored.eval", [header, RawMember("samples/a_epoch_1.json", record, method=0)]
    )
    assert outcomes(read(stored)) == {("a", "match"): [True]}


def test_json_shape_errors(tmp_path: Path) -> None:
    array = _write(tmp_path / "array.json", "[1, 2]")
    expect_input_error(array, lambda: read(array), "must be a JSON object")
    forced = _write(tmp_path / "forced.json", '"text"')
    expect_input_error(forced, lambda: load_results(forced, format="inspect"), "JSON object")
    broken = _write(tmp_path / "broken.json", '{"eval": {}, "samples": [')
    expect_input_error(broken, lambda: read(broken), "is not JSON")
    trailing = _write(tmp_path / "trailing.json", '{"eval": {}, "samples": []} extra')
    expect_input_error(trailing, lambda: read(trailing), "is not JSON")
    doubled = _write(tmp_path / "doubled.json", '{"eval": {}, "eval": {}, "samples": []}')
    expect_input_error(doubled, lambda: read(doubled), "duplicate key")
    deep = _write(tmp_path / "deep.json", '{"eval": {}, "samples": [' + "[" * 200_000 + "]")
    expect_input_error(deep, lambda: read(deep), "is not JSON")
    not_utf8 = _write(tmp_path / "latin.json", b'{"eval": {"task": "\xe9"}, "samples": []}')
    expect_input_error(not_utf8, lambda: read(not_utf8), "is not JSON")


def test_missing_and_empty_samples(tmp_path: Path) -> None:
    missing = _write(tmp_path / "missing.json", json.dumps(minimal_header()))
    expect_input_error(missing, lambda: read(missing), "expected `eval` and `samples`")
    no_eval = _write(tmp_path / "noeval.json", json.dumps({"samples": [sample("a")]}))
    expect_input_error(no_eval, lambda: read(no_eval), "expected `eval` and `samples`")
    empty = write_json_log(tmp_path / "empty.json", [])
    expect_input_error(empty, lambda: read(empty), "rerun without --no-log-samples")
    empty_eval = write_eval_log(tmp_path / "empty.eval", [])
    expect_input_error(empty_eval, lambda: read(empty_eval), "rerun without --no-log-samples")
    junk = write_json_log(tmp_path / "junk.json", [sample("a"), 5])
    expect_input_error(junk, lambda: read(junk), "sample #2 is not a JSON object")
    no_id = write_json_log(tmp_path / "noid.json", [sample(None)])
    expect_input_error(no_id, lambda: read(no_id), "no string or integer id")


@pytest.mark.parametrize("suffix", [".json", ".eval"])
def test_duplicate_sample_and_epoch_ids_compare_as_strings(tmp_path: Path, suffix: str) -> None:
    records = [sample("6"), sample(7), sample("7")]
    if suffix == ".json":
        path = write_json_log(tmp_path / "dup.json", records)
    else:
        members = [RawMember("header.json", json.dumps(minimal_header()).encode(), method=93)]
        members += [  # distinct member names, the same sample inside
            RawMember(f"samples/{n}.json", json.dumps(r).encode(), method=93)
            for n, r in enumerate(records)
        ]
        path = write_zip(tmp_path / "dup.eval", members)
    expect_input_error(path, lambda: read(path), "'7'", "epoch 1", "inspect log dump")


def test_sample_ids_in_messages_are_escaped_and_cut(tmp_path: Path) -> None:
    hostile = "x\n" * 3 + "\x1b[31m" + "y" * 200
    path = write_json_log(tmp_path / "ids.json", [sample(hostile), sample(hostile)])
    message = expect_input_error(path, lambda: read(path), "epoch 1")
    assert "\\x1b" in message and "\x1b" not in message
    assert "'x\\nx\\n" in message
    assert "y" * 100 not in message


def test_corpus_meta_survives_a_round_trip_of_fields(corpus: Path) -> None:
    """SampleMeta carries only small, finite, JSON-ready values."""
    run = load(corpus, "keywords.current.eval")
    for metas in run.samples.values():
        for meta in metas:
            assert isinstance(meta, SampleMeta)
            assert all(math.isfinite(v) and v >= 0 for v in meta.usage.values())
            assert meta.output_text is None or len(meta.output_text) <= 20_000


def test_numbers_beyond_float_range_are_ignored_not_fatal(tmp_path: Path) -> None:
    huge = "1" + "0" * 400
    results = {"scores": [{"name": "match", "metrics": {"custom": {"value": 0}}}]}
    record = sample("a", model_usage={"m": {"total_tokens": 0, "input_tokens": 5}})
    record["model_usage"]["judge"] = {"input_tokens": 7, "output_tokens": -3}
    path = write_json_log(tmp_path / "huge.json", [record], results=results)
    text = path.read_text().replace('"total_tokens": 0', f'"total_tokens": {huge}')
    text = text.replace('"value": 0}', f'"value": {huge}}}')
    path.write_text(text)
    run = read(path)
    assert run.headline is not None and run.headline.value is None
    # every model is summed (graders too); negative and unrepresentable figures are dropped
    assert run.samples["a"][0].usage == {"input_tokens": 12}


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 4096])
def test_json_window_gives_the_same_run_at_any_chunk_size(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """The JSON log is read through a sliding window; cutting it anywhere changes nothing."""
    paths = [
        corpus / "inspect/realworld/log_read_sample.json",
        corpus / "inspect/keywords.current.json",
    ]
    numbers = write_json_log(
        tmp_path / "numbers.json",
        [sample(n, value=v) for n, v in enumerate([1.5e10, -2.25e-3, 10, 1e300, 0.999999, 3])],
        version=1.25e300,  # a top-level number the window can cut as "1.25e" | "+300"
    )
    assert '"version": 1.25e+300' in numbers.read_text()
    expected = [read(path) for path in [*paths, numbers]]
    monkeypatch.setattr(jsonstream, "TEXT_CHUNK", chunk)
    assert [read(path) for path in [*paths, numbers]] == expected
    assert [a.value for c in expected[-1].cases.values() for a in c["match"]] == [
        1.5e10,
        -2.25e-3,
        10,
        1e300,
        0.999999,
        3,
    ]
    broken = _write(tmp_path / "broken.json", numbers.read_text()[:-40])
    expect_input_error(broken, partial(read, broken), "is not JSON")
    ending = _write(tmp_path / "ending.json", numbers.read_text() + " 12")
    expect_input_error(ending, partial(read, ending), "extra data")


def test_top_level_member_types_for_cheap_detection(corpus: Path, tmp_path: Path) -> None:
    log = corpus / "inspect/capitals.baseline.json"
    members = top_level_member_types(log)
    first = [next(members) for _ in range(3)]
    assert first == [("version", int), ("status", str), ("eval", dict)]
    members.close()
    # stopping at `eval` never reads the rest, so a damaged tail does not matter yet
    damaged = _write(tmp_path / "tail.json", log.read_text()[:-5000] + "@@@")
    assert ("eval", dict) in itertools.islice(top_level_member_types(damaged), 3)
    expect_input_error(damaged, lambda: list(top_level_member_types(damaged)), "is not JSON")
    promptfoo = dict(top_level_member_types(corpus / "promptfoo/generated/qa.baseline.json"))
    assert promptfoo["results"] is dict and "eval" not in promptfoo
    array = _write(tmp_path / "array.json", "[1, 2]")
    assert list(top_level_member_types(array)) == []
    words = _write(tmp_path / "words.json", "hello")
    expect_input_error(words, lambda: list(top_level_member_types(words)), "is not JSON")
    nan = _write(tmp_path / "nan.json", '{"results": {"v": NaN}, "eval": {}}')
    assert list(top_level_member_types(nan)) == [("results", dict), ("eval", dict)]


def test_a_sample_without_scores_is_unassessed_on_every_scored_check(
    corpus: Path, tmp_path: Path
) -> None:
    document = json.loads((corpus / "inspect/capitals.baseline.json").read_text(encoding="utf-8"))
    unscored = document["samples"][1]
    unscored["scores"] = {}
    path = tmp_path / "unscored.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    # Inspect's own metrics counted that sample's scores: the file now disagrees with itself.
    expect_input_error(path, lambda: load_results(path), "accuracy 0.6", "0.5862068965517241")
    del document["results"]  # without the log's own figures the unscored sample is read
    path.write_text(json.dumps(document), encoding="utf-8")
    run = load_results(path)
    case = str(unscored["id"])
    assert sorted(run.cases[case]) == ["includes", "match"]
    for attempts in run.cases[case].values():
        assert [attempt.passed for attempt in attempts] == [None]
        assert attempts[0].evidence == "no score recorded"
    assert run.samples[case][0].verdicts == {"includes": None, "match": None}
