"""Inspect score values read as Inspect reads them, and a log reconciled with its own verdicts.

The figures in VALUE_TO_FLOAT were printed by inspect_ai 0.3.285's own ``value_to_float()`` (the
corpus version, and the newest release when this was written); the logs edited here are the
corpus's real ``verdict_words`` and ``capitals_epochs`` logs, written by that Inspect.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from evalarc.errors import InputError
from evalarc.formats import inspect as inspect_reader
from evalarc.formats.archive import SafeArchive
from evalarc.formats.inspect import passed_of
from evalarc.formats.inspect_tally import value_to_float
from evalarc.formats.load import load_results

VALUE_TO_FLOAT: list[tuple[object, float | None]] = [
    # (value, what Inspect's value_to_float returns; None: it warns "Unable to convert" and 0)
    ("C", 1.0),
    ("P", 0.5),
    ("I", 0.0),
    ("N", 0.0),
    ("c", None),
    ("yes", 1.0),
    ("YES", 1.0),
    ("Yes", 1.0),
    ("true", 1.0),
    ("TRUE", 1.0),
    ("no", 0.0),
    ("No", 0.0),
    ("false", 0.0),
    ("False", 0.0),
    ("1", 1.0),
    ("0", 0.0),
    ("0.5", 0.5),
    (" 1 ", 1.0),
    ("1e0", 1.0),
    ("-1", -1.0),
    ("+2.5", 2.5),
    ("1_0", 10.0),
    ("nan", None),
    ("inf", None),
    ("1e400", None),
    ("maybe", None),
    ("", None),
    (True, 1.0),
    (False, 0.0),
    (1, 1.0),
    (0, 0.0),
    (0.25, 0.25),
    (2, 2.0),
    (None, None),
    ([1], None),
    ({"a": 1}, None),
]


@pytest.mark.parametrize(("value", "figure"), VALUE_TO_FLOAT)
def test_value_to_float_is_inspects(value: object, figure: float | None) -> None:
    assert value_to_float(value) == figure


@pytest.mark.parametrize(
    ("value", "threshold", "expected"),
    [
        ("yes", 1.0, True),
        ("No", 1.0, False),
        ("True", 1.0, True),
        ("FALSE", 1.0, False),
        ("yes", 2.0, True),  # a boolean word is a verdict at any threshold, as a bool is
        ("1", 1.0, True),
        ("0.5", 1.0, False),
        ("0.5", 0.5, True),
        ("P", 0.5, False),  # partial never passes, as before
        ("1e400", 1.0, None),
    ],
)
def test_string_verdicts(value: str, threshold: float, expected: bool | None) -> None:
    assert passed_of(value, threshold) is expected


# -- on the corpus's real logs ------------------------------------------------------------------


def _log(corpus: Path, name: str) -> dict[str, Any]:
    document = json.loads((corpus / "inspect" / name).read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    return document


def _sample(document: dict[str, Any], sample_id: object, epoch: int = 1) -> dict[str, Any]:
    return next(s for s in document["samples"] if s["id"] == sample_id and s["epoch"] == epoch)


def _metric(document: dict[str, Any], scorer: str, metric: str) -> dict[str, Any]:
    entry = next(e for e in document["results"]["scores"] if e["name"] == scorer)
    value = entry["metrics"][metric]
    assert isinstance(value, dict)
    return value


def _write(path: Path, document: dict[str, Any]) -> Path:
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _refused(cli: Any, baseline: Path, current: Path, *needles: str) -> str:
    result = cli("diff", baseline, current, "--json")
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    message = str(result.stderr).strip().splitlines()[-1]
    assert str(current) in message
    for needle in needles:
        assert needle in message, message
    return message


def test_the_string_verdicts_pair_blocks(corpus: Path, cli: Any) -> None:
    """Issue 23: this pair passed (exit 0) while Inspect's headline fell 1.0 -> 0.667."""
    folder = corpus / "inspect"
    result = cli(
        "diff", folder / "verdict_words.baseline.json", folder / "verdict_words.current.eval"
    )
    assert result.exit_code == 1, result.stdout
    assert "concise_word accuracy: 1 -> 0.6667" in result.stdout
    assert "regressed: w2 / concise_word: passed 1/1 -> 0/1" in result.stdout


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("maybe", '"maybe"'),
        (None, "null"),
        (["yes"], '["yes"]'),
        ({"style": {"tone": "C"}}, '{"tone": "C"}'),
        ("nan", '"nan"'),
    ],
)
def test_a_value_inspect_cannot_convert_is_refused(
    corpus: Path, cli: Any, tmp_path: Path, value: object, shown: str
) -> None:
    document = _log(corpus, "verdict_words.current.json")
    _sample(document, "w3")["scores"]["cites_source"]["value"] = value
    current = _write(tmp_path / "current.json", document)
    message = _refused(cli, corpus / "inspect/verdict_words.baseline.json", current, "'w3'", shown)
    assert "cites_source" in message and "value_to_float cannot convert" in message


def test_a_declared_metric_the_samples_do_not_give_is_refused(
    corpus: Path, cli: Any, tmp_path: Path
) -> None:
    """The headline claims no drop (accuracy 1.0) while the samples give 0.667: exit 2, both
    figures named, the scorer and the metric too."""
    document = _log(corpus, "verdict_words.current.json")
    _metric(document, "concise_word", "accuracy")["value"] = 1.0
    current = _write(tmp_path / "current.json", document)
    _refused(
        cli,
        corpus / "inspect/verdict_words.baseline.json",
        current,
        "'concise_word'",
        "accuracy 1.0",
        "0.6666666666666666",
    )
    # the same disagreement inside an .eval archive (its header.json)
    source = corpus / "inspect/verdict_words.current.eval"
    archive_path = tmp_path / "current.eval"
    with (
        SafeArchive(source, label="Inspect log") as archive,
        zipfile.ZipFile(archive_path, "w", zipfile.ZIP_DEFLATED) as out,
    ):
        for member in archive.names():
            data = archive.read(member)
            if member == "header.json":
                header = json.loads(data)
                for entry in header["results"]["scores"]:
                    if entry["name"] == "confidence_text":
                        entry["metrics"]["mean"]["value"] = 0.9
                data = json.dumps(header).encode()
            out.writestr(member, data)
    _refused(
        cli,
        corpus / "inspect/verdict_words.baseline.eval",
        archive_path,
        "'confidence_text'",
        "mean 0.9",
        "0.75",
    )


def test_a_broken_reading_is_caught_by_the_reconciliation(
    corpus: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Break the reader on purpose (read "yes" as Inspect's "no", the kind of slip issue 23 was):
    the real, untouched log then disagrees with what EvalArc read, and the read fails with
    both figures, instead of passing."""
    real = value_to_float

    def broken(value: object) -> float | None:
        return 0.0 if value == "yes" else real(value)

    monkeypatch.setattr(inspect_reader, "value_to_float", broken)
    path = corpus / "inspect/verdict_words.baseline.json"
    with pytest.raises(InputError) as caught:
        load_results(path)
    message = caught.value.message
    assert str(path) in message and "'concise_word'" in message
    assert "accuracy 1.0" in message and "give 0.0" in message
    # through the CLI: exit 2 with the same line, not a pass
    _refused(cli, path, path, "accuracy 1.0", "give 0.0")


def test_epoch_reduction_is_reconciled_per_sample(corpus: Path, tmp_path: Path) -> None:
    """capitals_epochs (3 epochs, default mean reducer): 0.7778 is the mean of per-sample means,
    and with three epochs per sample also the mean of all 36 attempts; an uneven sample tells
    the two readings apart."""
    document = _log(corpus, "capitals_epochs.current.json")
    accuracy = _metric(document, "match", "accuracy")
    assert accuracy["value"] == pytest.approx(28 / 36)
    # Drop one failing epoch of sample 7 (1/3 -> 1/2): per-sample means give 0.7917, the
    # attempts 28/35 = 0.8; the declared figure must be the one the log's reduction gives.
    document["samples"] = [s for s in document["samples"] if not (s["id"] == 7 and s["epoch"] == 1)]
    per_sample = (5 + 2 / 3 + 1 / 2 + 1 + 1 + 2 / 3 + 0 + 2 / 3) / 12
    path = tmp_path / "epochs.json"
    accuracy["value"] = per_sample
    load_results(_write(path, document))
    accuracy["value"] = 28 / 35
    with pytest.raises(InputError, match="reducer default"):
        load_results(_write(path, document))
    document["eval"]["config"]["epochs_reducer"] = []
    load_results(_write(path, document))
    # another reducer, a custom to_float and stderr are not recomputed
    document["eval"]["config"]["epochs_reducer"] = ["max"]
    document["results"]["scores"][0]["reducer"] = "max"
    accuracy["value"] = 0.1
    load_results(_write(path, document))
    document["results"]["scores"][0]["reducer"] = None
    del document["eval"]["config"]["epochs_reducer"]
    accuracy["params"] = {"to_float": "custom"}
    load_results(_write(path, document))


def test_scorers_must_agree_with_results(corpus: Path, tmp_path: Path) -> None:
    document = _log(corpus, "verdict_words.current.json")
    sample = _sample(document, "w1")
    sample["scores"]["judge"] = {"value": "yes"}
    path = _write(tmp_path / "extra.json", document)
    with pytest.raises(InputError, match=r"scored by 'judge'.*lists cites_source"):
        load_results(path)
    del sample["scores"]["judge"]
    for each in document["samples"]:
        del each["scores"]["match"]
    path = _write(tmp_path / "absent.json", document)
    with pytest.raises(InputError, match="lists scorer 'match', but no sample has a score"):
        load_results(path)
    # a sample with an error may have lost every score of a scorer that raised
    sample["error"] = {"message": "scorer match raised", "traceback": ""}
    run = load_results(_write(tmp_path / "errored.json", document))
    assert "match" not in run.cases["w1"]


def test_every_corpus_log_reconciles(corpus: Path) -> None:
    """Every log the corpus holds (made by 0.3.58, 0.3.95 and 0.3.285) agrees with itself."""
    logs = sorted(p for p in (corpus / "inspect").rglob("*") if p.suffix in (".json", ".eval"))
    assert len(logs) == 24
    refused = []
    for path in logs:
        try:
            load_results(path)
        except InputError as error:
            refused.append(error.message)
    # only the unscored realworld run, which was refused before (nothing to assess)
    assert len(refused) == 1 and "nothing in it could be assessed" in refused[0]


def test_older_logs_name_a_dict_scorers_metrics_by_key(tmp_path: Path) -> None:
    """Without a ``scorer`` field (older Inspect), a dict-valued scorer's per-key entries are
    named by key: a key of exactly one dict-valued scorer stands for that scorer."""
    document: dict[str, Any] = {
        "version": 2,
        "status": "success",
        "eval": {"task": "t", "model": "mockllm/model", "config": {"epochs": 1}},
        "results": {
            "scores": [
                {"name": "tone", "metrics": {"mean": {"name": "mean", "value": 0.5}}},
                {"name": "facts", "metrics": {"mean": {"name": "mean", "value": 0.75}}},
            ]
        },
        "samples": [
            {"id": 1, "epoch": 1, "scores": {"judge": {"value": {"tone": "C", "facts": 1}}}},
            {"id": 2, "epoch": 1, "scores": {"judge": {"value": {"tone": "I", "facts": 0.5}}}},
        ],
    }
    run = load_results(_write(tmp_path / "old.json", document))
    assert sorted(run.cases["1"]) == ["judge/facts", "judge/tone"]
    document["results"]["scores"].append({"name": "style", "metrics": {}})
    with pytest.raises(InputError, match="lists scorer 'style', but no sample"):
        load_results(_write(tmp_path / "old.json", document))
