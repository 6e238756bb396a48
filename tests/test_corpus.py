"""The real-tool corpus in tests/corpus: complete, self-contained, and read by EvalArc exactly as
the tool's own reader reads it.

``tests/corpus/inspect/truths.toml`` is written by ``tests/corpus/inspect/generate.py`` from what
``inspect_ai.log.read_eval_log`` found in each log; EvalArc's reader must find the same verdict
for every attempt and check, and the same headline.
"""

from __future__ import annotations

import importlib.util
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from evalarc.formats.load import load_results

SCENARIOS = ("capitals", "capitals_epochs", "flaky_errors", "keywords", "verdict_words")
THRESHOLD = 1.0


def _truths(corpus: Path) -> dict[str, Any]:
    return tomllib.loads((corpus / "inspect" / "truths.toml").read_text(encoding="utf-8"))


def _expected_verdict(value: Any, to_float: float) -> bool | None:
    """The verdict at THRESHOLD of a value Inspect wrote and read as ``to_float`` (its own
    value_to_float, in truths.toml): bools as they are, every other value by its float (``P``,
    0.5, fails at 1.0 as it does for EvalArc at any threshold)."""
    if isinstance(value, bool):
        return value
    return to_float >= THRESHOLD


def test_every_scenario_has_its_logs_and_truths(corpus: Path) -> None:
    truths = _truths(corpus)
    assert sorted(truths) == sorted(SCENARIOS)
    for name in SCENARIOS:
        for side in ("baseline", "current"):
            for ext in ("json", "eval"):
                assert (corpus / "inspect" / f"{name}.{side}.{ext}").is_file()
            assert truths[name][side], (name, side)


@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("ext", ["json", "eval"])
def test_evalarc_reads_what_inspect_reads(corpus: Path, name: str, ext: str) -> None:
    truths = _truths(corpus)[name]
    scorers = sorted(
        {
            check
            for side in ("baseline", "current")
            for row in truths[side].values()
            for check in row
        }
        - {"error"}
    )
    assert scorers
    for side in ("baseline", "current"):
        run = load_results(corpus / "inspect" / f"{name}.{side}.{ext}", threshold=THRESHOLD)
        seen = 0
        for key, row in truths[side].items():
            sample, epoch = key.rsplit("#", 1)
            meta = run.samples[sample][int(epoch) - 1]
            if "error" in row:
                expected = dict.fromkeys(scorers)
            else:
                floats = truths[f"{side}_to_float"][key]
                expected = {
                    check: _expected_verdict(value, floats[check]) for check, value in row.items()
                }
            assert meta.verdicts == expected, (name, side, key)
            seen += 1
        assert seen == sum(len(attempts) for attempts in run.samples.values()), (name, side)
        assert run.headline is not None
        assert run.headline.value == pytest.approx(truths[f"headline_{side}"]), (name, side)


def test_readme_documents_every_pair_and_one_command_per_tool(corpus: Path) -> None:
    readme = (corpus / "README.md").read_text(encoding="utf-8")
    stems = {
        re.sub(r"\.(baseline|current)$", "", path.stem)
        for path in corpus.glob("inspect/*")
        if path.suffix in {".json", ".eval"}
    }
    assert len(stems) == 5, stems
    for stem in stems:
        assert f"`{stem}." in readme, stem
    promptfoo = json.loads((corpus / "promptfoo/generated/truth.json").read_text(encoding="utf-8"))[
        "pairs"
    ]
    assert len(promptfoo) == 9
    for name in promptfoo:
        assert f"`generated/{name}." in readme, name
    junit = [path.parent.name for path in corpus.glob("junit/*/truth.json")]
    assert len(junit) == 12
    for producer in junit:
        assert f"`{producer}/`" in readme, producer
    # every generated file the tests read sits in a generator's folder, none beside them
    assert not [p for p in corpus.glob("promptfoo/*.json")]
    assert not [p for p in corpus.glob("junit/*.xml")]
    assert "tests/corpus/inspect/generate.py" in readme
    assert "tests/corpus/promptfoo/generate.py" in readme
    assert "tests/corpus/junit/generate.py" in readme
    for folder in (
        "inspect/realworld",
        "junit/realworld",
        "promptfoo/realworld",
        "junit",
        "promptfoo",
    ):
        assert (corpus / folder / "SOURCE.md").is_file(), folder


def test_nothing_in_the_tests_reads_outside_the_clone() -> None:
    """No test, fixture, benchmark or doc command names the workspace's shared folder or an
    absolute workspace path (a clone copied alone must pass its own tests)."""
    root = Path(__file__).resolve().parents[1]
    # The folder this clone sits in: a test naming a path in it reads beside the clone.
    beside = [re.escape(f"{root.parent}/")] if root.parent != Path(root.anchor) else []
    pattern = re.compile("|".join([*beside, r"\.\./shared", "shared/corpus", r"parents\[2\]"]))
    files = [
        *sorted((root / "tests").rglob("*.py")),
        *sorted((root / "bench").rglob("*.py")),
        *sorted((root / "docs").rglob("*.md")),
        *sorted((root / "scripts").glob("*")),
        *sorted((root / "packs").rglob("*.py")),
        *sorted((root / "packs").rglob("*.md")),
        root / "README.md",
        root / ".ci" / "run",
    ]
    assert len(files) > 50
    offenders = [
        f"{path.relative_to(root)}:{number}"
        for path in files
        # This test and the scrubber name those roots on purpose (to find and replace them).
        if path.is_file() and path.name not in ("test_corpus.py", "scrub_paths.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if pattern.search(line)
    ]
    assert offenders == []


def test_no_generated_corpus_file_holds_a_path_of_the_generating_machine(corpus: Path) -> None:
    """The tools write their venv and scratch paths into traces; the generators replace them
    (tests/corpus/scrub_paths.py), so a published corpus names no machine's folders."""
    spec = importlib.util.spec_from_file_location("scrub_paths", corpus / "scrub_paths.py")
    assert spec is not None and spec.loader is not None
    scrub = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scrub)
    files = scrub.generated_files(corpus)
    assert len(files) > 50
    assert {p.suffix for p in files} >= {".json", ".xml", ".eval"}
    assert [str(p.relative_to(corpus)) for p in files if scrub.holds_machine_path(p)] == []
    # the scrubber keeps the rest of a path, so a trace still reads as the tool wrote it
    text = b'File "/tmp/venv/lib/x.py" at /srv/ci/wt/a/tests/corpus/g.py and /home/u/.m2/r'
    assert scrub.scrub_bytes(text) == (
        b'File "$TMPDIR/venv/lib/x.py" at $REPO/tests/corpus/g.py and $HOME/.m2/r'
    )
