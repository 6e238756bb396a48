"""The result formats EvalArc reads: one entry per reader, the only list of them.

``--format``'s choices, the loader's dispatch and the line that names what EvalArc reads when a
file is none of them all come from :data:`READERS`, so a new reader (SWE-bench, Harbor,
lm-eval, ...) adds itself here once and every one of those follows. Detection (which entry a
file is) stays in :mod:`evalarc.formats.load`, which knows the cheap signals.

Light on purpose: the CLI imports it to build ``--format``, so a reader module is imported only
when a file of its format is read.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from evalarc.formats.model import Run, Source


class ReadFunction(Protocol):
    def __call__(self, path: Path, source: Source, threshold: float) -> Run: ...


@dataclass(frozen=True)
class ResultReader:
    """One format EvalArc reads."""

    name: str
    """The ``--format`` value and ``Run.format``."""
    kind: str
    """What the file is, as its user knows it: "Inspect AI log"."""
    example: str
    """A file of this format as its user makes it (a name, or the command that writes one)."""
    module: str
    function: str
    """``module.function(path, source, threshold)`` reads the file into a Run."""

    def read(self, path: Path, source: Source, threshold: float) -> Run:
        function: ReadFunction = getattr(importlib.import_module(self.module), self.function)
        return function(path, source, threshold)

    def described(self) -> str:
        return f"{self.kind}: {self.example}"


READERS: tuple[ResultReader, ...] = (
    ResultReader(
        "inspect",
        "Inspect AI log",
        "logs/2025-01-31T12-00-00+00-00_task_id.eval or .json",
        "evalarc.formats.inspect",
        "read_inspect",
    ),
    ResultReader(
        "promptfoo",
        "promptfoo output",
        "results.json from promptfoo eval --output results.json",
        "evalarc.formats.promptfoo",
        "read_promptfoo",
    ),
    ResultReader(
        "junit",
        "JUnit XML",
        "report.xml from pytest --junitxml, jest-junit, go-junit-report, ctest --output-junit",
        "evalarc.formats.junit",
        "read_junit",
    ),
    ResultReader(
        "swebench",
        "SWE-bench results",
        "logs/run_evaluation/<run_id>/<model>/ (a folder of <instance_id>/report.json), "
        "a report.json, or the run summary <model>.<run_id>.json",
        "evalarc.formats.swebench",
        "read_swebench",
    ),
    ResultReader(
        "lmeval",
        "lm-evaluation-harness samples",
        "samples_<task>_<timestamp>.jsonl from lm_eval --log_samples --output_path",
        "evalarc.formats.lmeval",
        "read_lmeval",
    ),
    ResultReader(
        "openai_evals",
        "OpenAI Evals record log",
        "the .jsonl from oaieval <completion_fn> <eval> --record_path log.jsonl",
        "evalarc.formats.openai_evals",
        "read_openai_evals",
    ),
    ResultReader(
        "evaluation",
        "EvalArc evaluation",
        "evaluation.json or its folder from evalarc evaluate",
        "evalarc.formats.evaluation",
        "read_evaluation",
    ),
)
"""Every format, in the order they are named to a user."""

FORMAT_NAMES: tuple[str, ...] = tuple(reader.name for reader in READERS)


def reader_named(name: str) -> ResultReader:
    """The reader of ``name`` (one of :data:`FORMAT_NAMES`; KeyError otherwise)."""
    for reader in READERS:
        if reader.name == name:
            return reader
    raise KeyError(name)


def format_choices() -> str:
    """``auto, inspect, promptfoo, junit or evaluation``: the values ``--format`` takes."""
    names = ["auto", *FORMAT_NAMES]
    return ", ".join(names[:-1]) + " or " + names[-1]


def what_evalarc_reads() -> str:
    """Each format with an example file, for a line that says what a file should have been."""
    return "; ".join(reader.described() for reader in READERS)


def not_a_result_file(path: Path | str, problem: str = "") -> str:
    """The one line for a file that is none of :data:`READERS` (no ``--format`` would help):
    the path as given, what it is if that is known, and what EvalArc reads."""
    what = f"{problem}, not" if problem else "not"
    return f"{path}: {what} a result file EvalArc reads ({what_evalarc_reads()})"
