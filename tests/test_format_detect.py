"""Format detection streams a JSON file's top-level keys instead of parsing it twice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalarc.errors import InputError
from evalarc.formats import load_results
from evalarc.formats.load import detect_format

EXPECTED = {"inspect": "inspect", "promptfoo": "promptfoo", "junit": "junit"}


def test_every_corpus_file_is_detected_as_its_tool(corpus: Path) -> None:
    files = sorted(p for p in corpus.rglob("*") if p.suffix in {".json", ".eval", ".xml"})
    # Beside the JUnit files lie the tools' verbose JSON output and the truths read from it.
    files = [p for p in files if p.relative_to(corpus).parts[0] != "junit" or p.suffix == ".xml"]
    # The generated promptfoo pairs carry a truth file computed from promptfoo's own output.
    files = [p for p in files if p.name != "truth.json"]
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
        ("[1, 2]", "cannot detect the format"),
        ('{"results": [1]}', "cannot detect the format"),
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
