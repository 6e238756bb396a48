"""Format detection streams a JSON file's top-level keys instead of parsing it twice."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from evalarc.cli_options import FORMAT_CHOICE
from evalarc.errors import InputError, UsageError
from evalarc.formats import load_results, registry
from evalarc.formats.load import detect_format
from evalarc.formats.registry import FORMAT_NAMES, READERS, ResultReader, what_evalarc_reads

if TYPE_CHECKING:
    from conftest import Cli

NOT_READ = "not a result file EvalArc reads"

EXPECTED = {
    "inspect": "inspect",
    "promptfoo": "promptfoo",
    "junit": "junit",
    "swebench": "swebench",
    "openai_evals": "openai_evals",
    "lmeval": "lmeval",
}


def test_every_corpus_file_is_detected_as_its_tool(corpus: Path) -> None:
    files = sorted(p for p in corpus.rglob("*") if p.suffix in {".json", ".eval", ".xml"})
    # Beside the JUnit files lie the tools' verbose JSON output and the truths read from it.
    files = [p for p in files if p.relative_to(corpus).parts[0] != "junit" or p.suffix == ".xml"]
    # The generated promptfoo pairs carry a truth file computed from promptfoo's own output.
    files = [p for p in files if p.name != "truth.json"]
    # lm-eval's aggregate results_*.json is refused (tests/test_harness_readers.py); its
    # samples and the OpenAI Evals logs are JSON Lines.
    files = [p for p in files if not p.name.startswith("results_")]
    files += sorted((corpus / "lmeval").rglob("samples_*.jsonl"))
    files += sorted((corpus / "openai_evals").glob("*.jsonl"))
    assert len(files) >= 30
    for path in files:
        expected = EXPECTED[path.relative_to(corpus).parts[0]]
        assert detect_format(path, path.read_bytes()[:64]) == expected, path


def test_inspect_json_with_nan_metrics_is_read(corpus: Path, tmp_path: Path) -> None:
    text = (corpus / "inspect/capitals.baseline.json").read_text(encoding="utf-8")
    document = json.loads(text)
    # stderr is not recomputed from the samples (an accuracy of NaN would disagree with them)
    document["results"]["scores"][0]["metrics"]["stderr"]["value"] = float("nan")
    document["results"]["headline"]["metric"] = "stderr"
    log = tmp_path / "nan.json"
    log.write_text(json.dumps(document), encoding="utf-8")  # json writes the bare NaN token
    assert "NaN" in log.read_text(encoding="utf-8")
    run = load_results(log)
    assert run.format == "inspect"
    assert run.headline is not None and run.headline.value is None
    document["results"]["scores"][0]["metrics"]["accuracy"]["value"] = float("nan")
    log.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(InputError, match=r"has accuracy nan, but its 30 scored samples give 0\.6"):
        load_results(log)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # Valid JSON of no format: no --format value would read it, so no "pass --format".
        ("[1, 2]", NOT_READ),
        ('{"results": [1]}', NOT_READ),
        # JSON that breaks off inside a known format's key is named for what is wrong with it.
        ('{"eval": {', "is not JSON"),
    ],
)
def test_undetectable_json_names_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "mystery.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_results(path)
    assert "mystery.json" in caught.value.message
    assert message in caught.value.message
    assert "--format" not in caught.value.message


NOT_A_RESULT_FILE = [
    ("table.csv", b"case,passed\nq1,true\n", ""),
    ("x.dat", bytes(range(256)), "binary data, "),
    ("notes.txt", "résumé of the run: 3 passed".encode(), ""),
    ("nul.log", b"ok\x00\x00\x00", "binary data, "),
    ("empty.json", b"", "an empty file, "),
    ("blank.json", b"\n\t \r\n", "only whitespace, "),
    ("bom.json", b"\xef\xbb\xbf", "only whitespace, "),
    ("list.json", b"[1, 2]", ""),
    ("string.json", b'"evalarc.evaluation.v2"', ""),
    ("number.json", b"42", ""),
    ("config.yaml", b"prompts:\n  - hello\n", ""),
    ("samples.jsonl", b'{"doc_id": 0, "acc": 1}\n{"doc_id": 1, "acc": 0}\n', ""),
    ("other.json", b'{"version": 1, "items": []}', ""),
    (
        "diff.json",
        b'{"schema_version": "evalarc.results-diff.v1", "changes": []}',
        "schema_version 'evalarc.results-diff.v1', ",
    ),
]


@pytest.mark.parametrize(("name", "data", "what"), NOT_A_RESULT_FILE)
def test_a_file_of_no_format_gets_one_line_naming_what_evalarc_reads(
    tmp_path: Path, name: str, data: bytes, what: str
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(InputError) as caught:
        load_results(path)
    message = caught.value.message
    assert message == f"{path}: {what}{NOT_READ} ({what_evalarc_reads()})"
    assert "\n" not in message
    for reader in READERS:
        assert f"{reader.kind}: {reader.example}" in message


def test_the_line_names_the_path_as_given_and_exits_2(
    cli: Cli, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "x.dat").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    good = corpus / "promptfoo/generated/qa.baseline.json"
    for args in (("runs/x.dat", good), (good, "runs/x.dat")):
        result = cli("diff", *args)
        assert result.exit_code == 2
        assert result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1
        assert lines[0].startswith(
            f"evalarc: runs/x.dat: binary data, {NOT_READ} (Inspect AI log: "
        )
        assert "promptfoo eval --output results.json" in lines[0]
        assert "pytest --junitxml" in lines[0]
        assert "evaluation.json" in lines[0]


def test_format_keeps_naming_the_readers_own_refusal(
    cli: Cli, corpus: Path, tmp_path: Path
) -> None:
    """With --format the file is read as told: the reader says what is wrong with it."""
    path = tmp_path / "x.dat"
    path.write_bytes(b"case,passed\n")
    good = corpus / "promptfoo/generated/qa.baseline.json"
    result = cli("diff", path, good, "--format", "promptfoo")
    assert result.exit_code == 2
    assert result.stderr == f"evalarc: {path} is not JSON: Expecting value at character 0\n"
    result = cli("diff", path, good, "--format", "junit")
    assert result.exit_code == 2
    assert NOT_READ not in result.stderr and str(path) in result.stderr


def test_utf16_json_is_still_named_not_json(tmp_path: Path) -> None:
    """UTF-16 text with its byte order mark is JSON in the wrong encoding, not an unknown file."""
    path = tmp_path / "utf16.json"
    path.write_bytes('{"results": {"results": []}}'.encode("utf-16"))
    with pytest.raises(InputError) as caught:
        load_results(path)
    assert caught.value.message.startswith(f"{path} is not JSON")


def test_the_registry_is_the_one_list_of_formats(corpus: Path) -> None:
    """--format's choices, the loader's dispatch and the unknown-format line all come from
    READERS."""
    assert list(FORMAT_CHOICE.choices) == ["auto", *FORMAT_NAMES]
    assert tuple(reader.name for reader in READERS) == FORMAT_NAMES
    examples = {
        "inspect": corpus / "inspect/capitals.baseline.eval",
        "promptfoo": corpus / "promptfoo/generated/qa.baseline.json",
        "junit": corpus / "junit/pytest/baseline.xml",
        "swebench": corpus / "swebench/baseline/scripted-agent.evalarc-baseline.json",
        "lmeval": next((corpus / "lmeval/baseline").glob("samples_*.jsonl")),
        "openai_evals": corpus / "openai_evals/capitals.baseline.jsonl",
    }
    for name, path in examples.items():
        assert load_results(path, name).format == name
    with pytest.raises(UsageError) as caught:
        load_results(examples["junit"], "harbor")
    assert caught.value.message == (
        "unknown format 'harbor'; use auto, inspect, promptfoo, junit, swebench, lmeval, "
        "openai_evals or evaluation"
    )


def test_a_new_reader_is_named_in_the_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A reader added to READERS is listed, with its example, without touching the loader."""
    added = ResultReader(
        "harbor", "Harbor job", "jobs/<job>/result.json from harbor run", "m", "read"
    )
    monkeypatch.setattr(registry, "READERS", (*READERS, added))
    path = tmp_path / "x.dat"
    path.write_bytes(b"hello")
    with pytest.raises(InputError) as caught:
        load_results(path)
    assert caught.value.message.endswith("; Harbor job: jobs/<job>/result.json from harbor run)")
