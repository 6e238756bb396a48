"""The JUnit pairs of producers EvalArc had never read (tests/corpus/junit/producers/): every pair
whose truth (read from the tool's own console or report, never from EvalArc) names a blocking
change must fail the gate through the CLI, and the file must be named by its own producer.

Issue 23 ("fail closed"): several of these exited 0 while the tool itself reported a regression
(GoogleTest parameters renumbered by a new instantiation, a GoogleTest suite renamed
``DISABLED_`` whose test now reads as a pass, Robot's and RSpec's repeated names, Playwright's
projects), and the producers were guessed from the shape alone (``ctest``,
``gradle``, ``junit``). Nothing here is marked xfail: the reader's fix makes these pass.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

PRODUCERS = Path(__file__).resolve().parent / "corpus" / "junit" / "producers"

EXPECTED_PRODUCER = {
    "googletest-same-name": "googletest",
    "googletest-param": "googletest",
    "googletest-disabled": "googletest",
    "googletest-disabled-suite": "googletest",
    "googletest-skip": "googletest",
    "googletest-repeat": "googletest",
    "catch2": "catch2",
    "rspec": "rspec",
    "robot": "robot",
    "robot-rerun": "robot",
    "playwright": "playwright",
    "playwright-retries": "playwright",
    "phpunit": "phpunit",
    "cargo-libtest": "cargo-libtest",
    "gotestsum": "gotestsum",
    "gotestsum-rerun": "gotestsum",
}

NOT_IN_THE_FILE = {
    "googletest-repeat": "--gtest_repeat writes only the last iteration to the XML",
}
"""Pairs whose blocking change the tool reported on its console but left out of the JUnit file:
no reader can see it, so the gate cannot be asked to fail on them; the test below pins what the
file holds instead."""

PAIRS = sorted(path.parent.name for path in PRODUCERS.glob("*/truth.json"))


def _truth(pair: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((PRODUCERS / pair / "truth.json").read_text("utf-8"))
    return data


@functools.cache
def _diff(pair: str) -> subprocess.CompletedProcess[str]:
    """``evalarc diff baseline.xml current.xml --json`` once per pair (its exit code is the
    gate's, as without --json)."""
    folder = PRODUCERS / pair
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "evalarc.cli",
            "diff",
            str(folder / "baseline.xml"),
            str(folder / "current.xml"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_every_generated_pair_has_an_expected_producer() -> None:
    assert set(PAIRS) == set(EXPECTED_PRODUCER)


@pytest.mark.parametrize("pair", PAIRS)
def test_the_truth_names_a_blocking_change_read_from_the_tool(pair: str) -> None:
    truth = _truth(pair)
    assert truth["blocking"] >= 1
    assert truth["source"].startswith("the tool's own")
    for side in ("baseline", "current"):
        assert truth[side], side
        assert (PRODUCERS / pair / f"{side}.xml").stat().st_size < 8000


REFUSED = {
    "catch2": "Catch2 counts a [!shouldfail] test that passed as a failure but writes no <failure>",
}
"""Pairs whose file disagrees with its own counters as the producer writes it: refused (exit 2)
with the reason, which fails closed; the blocking change is never passed."""


@pytest.mark.parametrize("pair", sorted(set(PAIRS) - set(NOT_IN_THE_FILE)))
def test_a_blocking_change_of_the_truth_fails_the_gate(pair: str) -> None:
    blocking = [(c["kind"], c["case_id"]) for c in _truth(pair)["changes"] if c["blocking"]]
    done = _diff(pair)
    if pair in REFUSED:
        assert done.returncode == 2, (blocking, done.stdout + done.stderr)
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and REFUSED[pair] in lines[0], done.stderr
        assert "current.xml" in lines[0] and "declares failures=" in lines[0]
        return
    assert done.returncode == 1, (blocking, done.stdout + done.stderr)


@pytest.mark.parametrize("pair", PAIRS)
def test_the_file_is_named_by_its_own_producer(pair: str) -> None:
    done = _diff(pair)
    if pair in REFUSED:
        assert f"(producer: {EXPECTED_PRODUCER[pair]})" in done.stderr, done.stderr
        return
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    producers = {report[side]["identity"].get("producer") for side in ("baseline", "current")}
    assert producers == {EXPECTED_PRODUCER[pair]}


def test_a_repeated_googletest_run_keeps_only_the_last_iteration_in_its_xml() -> None:
    # The console shows Repeat.WarmsUp FAILED then OK (two iterations); the XML one passing
    # element: the first failure is nowhere in the file.
    folder = PRODUCERS / "googletest-repeat"
    log = (folder / "current.log").read_text("utf-8")
    assert "[  FAILED  ] Repeat.WarmsUp (" in log and "[       OK ] Repeat.WarmsUp (" in log
    xml = (folder / "current.xml").read_text("utf-8")
    assert xml.count('<testcase name="WarmsUp"') == 1
    assert "<failure" not in xml
    assert _truth("googletest-repeat")["changes"] == [
        {"blocking": True, "case_id": "Repeat::WarmsUp", "kind": "less_reliable"}
    ]
