"""The first divergence a case view marks: between a baseline attempt that passed and a current
attempt that failed (every epoch, not only the first), usage and timing fields ignored.

The real pair is the corpus's ``capitals_epochs`` (inspect-ai 0.3.285, three epochs); which epoch
passed is what Inspect itself wrote (tests/corpus/inspect/truths.toml, read back with
``read_eval_log``), never what EvalArc computed.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from evalarc.evidence.model import (
    DIVERGENCE_PAIRING,
    Section,
    SideEvidence,
    mark_divergence,
    without_usage,
)
from evalarc.pages.case_views import parse_chunk
from evalarc.verify import verify_report_folder


def _side(*epochs: tuple[bool | None, Sequence[tuple[str, object]]]) -> SideEvidence:
    side = SideEvidence()
    for number, (passed, steps) in enumerate(epochs, start=1):
        section = Section(
            f"Epoch {number} · transcript",
            kind="transcript",
            attempt=f"epoch {number}",
            passed=passed,
        )
        for label, value in steps:
            section.add(label, value)
        side.add(section)
    return side


def _marked(side: SideEvidence) -> list[tuple[str, str, str]]:
    return [
        (section.title, step.label, step.text)
        for section in side.sections
        for step in section.items
        if step.mark == "diverge"
    ]


def _model(answer_tokens: int, when: str) -> dict[str, Any]:
    return {
        "model": "m",
        "stop_reason": "stop",
        "usage": {"input_tokens": 9, "output_tokens": answer_tokens},
        "timestamp": when,
        "working_time": answer_tokens / 10,
    }


def test_usage_and_timing_fields_never_mark_a_divergence() -> None:
    assert without_usage({"a": 1, "total_tokens": 5, "x": [{"created_at": 1, "b": 2}]}) == {
        "a": 1,
        "x": [{"b": 2}],
    }
    base = _side((True, [("model event", _model(3, "t1")), ("assistant", "Paris")]))
    cur = _side((False, [("model event", _model(7, "t2")), ("assistant", "Lyon")]))
    mark_divergence(base, cur)
    # the model events differ in tokens, timestamp and working time only: not the divergence
    assert _marked(base) == [("Epoch 1 · transcript", "assistant", "Paris")]
    assert _marked(cur) == [("Epoch 1 · transcript", "assistant", "Lyon")]
    # the page still shows what the file says, usage included
    assert '"output_tokens": 3' in base.sections[0].items[0].text


def test_the_epoch_whose_verdict_fell_is_compared_not_the_first() -> None:
    same = [("assistant", "Paris")]
    base = _side((True, same), (True, same), (True, same))
    cur = _side((True, same), (False, [("assistant", "Lyon")]), (True, same))
    mark_divergence(base, cur)
    assert _marked(base) == [("Epoch 2 · transcript", "assistant", "Paris")]
    assert _marked(cur) == [("Epoch 2 · transcript", "assistant", "Lyon")]


def test_a_passing_baseline_epoch_is_paired_with_a_failing_current_one() -> None:
    """No epoch went pass -> fail by itself (epoch 1 failed on both sides, current epoch 2 is
    unassessed): the passing baseline epoch 2 is compared with the failing current epoch 1, and
    each marked step names the other side's epoch."""
    base = _side((False, [("assistant", "Lyon")]), (True, [("assistant", "Paris")]))
    cur = _side((False, [("assistant", "Lyon")]), (None, [("error", "sandbox died")]))
    mark_divergence(base, cur)
    assert _marked(base) == [
        ("Epoch 2 · transcript", "assistant · compared with current epoch 1", "Paris")
    ]
    assert _marked(cur) == [
        ("Epoch 1 · transcript", "assistant · compared with baseline epoch 2", "Lyon")
    ]


def test_an_improvement_pairs_the_other_way() -> None:
    base = _side((True, [("assistant", "Paris")]), (False, [("assistant", "Lyon")]))
    cur = _side((True, [("assistant", "Paris")]), (True, [("assistant", "Paris!")]))
    mark_divergence(base, cur)
    assert _marked(base) == [("Epoch 2 · transcript", "assistant", "Lyon")]
    assert _marked(cur) == [("Epoch 2 · transcript", "assistant", "Paris!")]


# -- the real pair ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def epochs_diff(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from click.testing import CliRunner

    from evalarc.cli import main

    corpus = Path(__file__).resolve().parent / "corpus" / "inspect"
    out = tmp_path_factory.mktemp("epochs") / "diff"
    result = CliRunner().invoke(
        main,
        [
            "diff",
            str(corpus / "capitals_epochs.baseline.json"),
            str(corpus / "capitals_epochs.current.eval"),
            "--output",
            str(out),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 1, result.stdout
    return out


def _cases(folder: Path) -> dict[str, Any]:
    cases: dict[str, Any] = {}
    for chunk in sorted((folder / "case-views").glob("*.js")):
        parsed = parse_chunk(chunk.read_bytes())
        assert parsed is not None
        cases.update(parsed)
    return cases


def _marks(side: dict[str, Any]) -> list[tuple[int, str]]:
    """(epoch, text) of each marked step."""
    found = []
    for section in side["sections"]:
        for step in section["items"]:
            if step.get("mark") == "diverge":
                assert section["title"].endswith("· transcript")
                found.append((int(section["title"].split()[1]), step["t"]))
    return found


@pytest.mark.parametrize(
    ("case_id", "epoch"),
    [
        ("7", 1),  # 3/3 -> 1/3: epochs 1 and 2 regressed; the first of them
        ("6", 2),  # 3/3 -> 2/3: epoch 1 is the same on both sides, epoch 2 regressed
        ("10", 3),  # 1/3 -> 2/3 overall, but epoch 3 went pass -> fail
    ],
)
def test_capitals_epochs_divergence_is_between_a_passing_and_a_failing_epoch(
    epochs_diff: Path, corpus: Path, case_id: str, epoch: int
) -> None:
    truths = tomllib.loads((corpus / "inspect" / "truths.toml").read_text(encoding="utf-8"))
    verdicts = truths["capitals_epochs"]
    entry = _cases(epochs_diff)[case_id]
    [(base_epoch, base_text)] = _marks(entry["baseline"])
    [(cur_epoch, cur_text)] = _marks(entry["current"])
    # Inspect's own verdicts: the baseline epoch passed, the current one failed
    assert verdicts["baseline"][f"{case_id}#{base_epoch}"]["match"] == "C"
    assert verdicts["current"][f"{case_id}#{cur_epoch}"]["match"] == "I"
    assert (base_epoch, cur_epoch) == (epoch, epoch)
    assert cur_text == "I am not sure." and base_text.startswith("The capital of")


def test_the_page_states_the_pairing_and_verify_renders_the_same_marks(
    epochs_diff: Path,
) -> None:
    page = (epochs_diff / "index.html").read_text(encoding="utf-8")
    assert DIVERGENCE_PAIRING in page
    assert verify_report_folder(epochs_diff)["kind"] == "diff"
