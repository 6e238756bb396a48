"""Property-based fuzzing of every reader and of ``verify``: whatever the input, the only
exception that may escape is an :class:`~evalarc.errors.EvalArcError` (which the CLI turns into
one ``evalarc:`` line and exit 2). A ``TypeError``, ``KeyError``, ``RecursionError``,
``UnicodeError`` or ``StopIteration`` escaping is a bug: the user would see a traceback.

Inputs are the real files of tests/corpus and real report folders (made by the CLI), mutated
byte by byte and structure by structure, plus generated JSON and XML. Whatever a reader accepts
is also pushed through the computations and the report writer (diff, health, canonical JSON), so
odd-but-accepted values cannot crash later either. Examples per test are bounded
(``EVALARC_FUZZ_EXAMPLES``, default 100) so the file runs in well under a minute; set it higher
to hunt.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalarc.canonical import compact_json, pretty_json, sha256_bytes
from evalarc.errors import EvalArcError
from evalarc.formats import Run, load_results
from evalarc.formats.junit import read_junit_bytes
from evalarc.formats.manifest import load_manifest
from evalarc.formats.model import Source
from evalarc.formats.split import load_split
from evalarc.reports.trajectory import run_trajectory
from evalarc.review.diff import DiffOptions, compute_diff
from evalarc.review.health import HealthOptions, compute_health
from evalarc.review.manifest import assign_rules
from evalarc.review.split import partition
from evalarc.runtime.recording import parse_recording
from evalarc.verify import verify_report_folder

pytestmark = pytest.mark.slow


def _load_corpus_module() -> ModuleType:
    name = "evalarc_hostile_corpus"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).parent / "hostile" / "make_corpus.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


hostile = _load_corpus_module()

EXAMPLES = int(os.environ.get("EVALARC_FUZZ_EXAMPLES", "100"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SOURCE = Source("fuzzed", "0" * 64)
EVALARC = str(Path(sys.executable).parent / "evalarc")


# -- the property -------------------------------------------------------------------------------


def only_evalarc_errors(action: Callable[[], object]) -> object:
    """Run ``action``; an EvalArcError is a refusal (fine, if its message is one line); any
    other exception propagates and fails the test with hypothesis's minimal example."""
    try:
        return action()
    except EvalArcError as error:
        assert error.message and "\n" not in error.message
        return None


def downstream(run: Run) -> None:
    """What the commands do with an accepted run: compare it, judge it, write the report."""
    report = compute_diff(run, run, DiffOptions(), created_at="fuzz")
    pretty_json(report).encode("utf-8", "backslashreplace")
    health = compute_health([run], HealthOptions(), created_at="fuzz").to_json()
    pretty_json(health).encode("utf-8", "backslashreplace")


def load_and_use(path: Path, fmt: str = "auto") -> None:
    def action() -> None:
        run = load_results(path, fmt)
        downstream(run)

    only_evalarc_errors(action)


# -- strategies ---------------------------------------------------------------------------------

ODD_STRINGS = [
    "",
    " ",
    "C",
    "I",
    "N",
    "P",
    "0",
    "1e999",
    "NaN",
    "true",
    "null",
    "sample error",
    "../x",
    "/etc/passwd",
    "a\x00b",
    "*",
    "?",
    "[",
    "[!",
    "a/b",
    "\n",
    "\u2028",
    "\ud800",
    "\U0001f600",
    "<script>",
    "evalarc.evaluation.v2",
    "evalarc.report-params.v1",
    "evalarc.case-split.v1",
    "evalarc.case-manifest.v1",
    "x" * 300,
]
KEYS = [
    "id",
    "epoch",
    "scores",
    "value",
    "answer",
    "explanation",
    "metadata",
    "input",
    "target",
    "output",
    "completion",
    "choices",
    "stop_reason",
    "error",
    "message",
    "model_usage",
    "total_time",
    "working_time",
    "limit",
    "type",
    "eval",
    "samples",
    "results",
    "status",
    "headline",
    "metric",
    "score",
    "metrics",
    "name",
    "config",
    "epochs",
    "scorers",
    "options",
    "model",
    "model_roles",
    "grader",
    "task",
    "model_generate_config",
    "testCase",
    "description",
    "vars",
    "provider",
    "label",
    "promptIdx",
    "testIdx",
    "success",
    "gradingResult",
    "componentResults",
    "assertion",
    "pass",
    "reason",
    "failureReason",
    "response",
    "stats",
    "successes",
    "failures",
    "errors",
    "tokenUsage",
    "cost",
    "latencyMs",
    "schema_version",
    "cases",
    "seed",
    "case_id",
    "checks",
    "dimensions",
    "weight",
    "seeds",
    "runtime",
    "grader_sha256",
    "cases_sha256",
    "candidate_sha256",
    "valid",
    "resolved",
    "held_out",
    "match",
    "source",
    "difficulty",
    "note",
    "elapsed_seconds",
    "evaluation",
    "kind",
    "inputs",
    "file",
    "split",
    "harness",
    "sha256",
    "generalization",
    "provenance",
    "manifest",
    "runs",
    "format",
    "threshold",
]
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([10**400, -(10**400), 2**63, 2**64 + 1, 1e308, -1e308, 5e-324, -0.0]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(ODD_STRINGS),
)
WRONG_VALUES: list[Any] = [None, 0, 5, -1, 10**400, 1.5, "x", "", True, [], [1], {}, {"x": 1}]
"""Values a field set at random is often given: each wrong type, and a number beyond floats."""
JSON_VALUES = st.recursive(
    LEAVES,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.one_of(st.sampled_from(KEYS), st.text(max_size=6)), children, max_size=4
        ),
    ),
    max_leaves=12,
)


def _mutate_node(draw: st.DrawFn, node: Any, depth: int) -> Any:
    """Walk down to a random node of ``node`` and change it; return the (new) node."""
    # Go one level deeper two times in three, so shallow fields (a log's `results`, a report's
    # `inputs`) are hit about as often as the leaves of large samples.
    descend = depth < 24 and draw(st.integers(0, 2)) > 0
    if isinstance(node, dict) and node:
        keys = list(node)
        if descend:
            key = draw(st.sampled_from(keys))
            node[key] = _mutate_node(draw, node[key], depth + 1)
            return node
        operation = draw(st.sampled_from(["delete", "add", "replace", "wrap"]))
        if operation == "delete":
            del node[draw(st.sampled_from(keys))]
            return node
        if operation == "add":
            node[draw(st.sampled_from(KEYS))] = draw(JSON_VALUES)
            return node
    elif isinstance(node, list) and node:
        if descend:
            pick = draw(st.integers(0, len(node) - 1))
            node[pick] = _mutate_node(draw, node[pick], depth + 1)
            return node
        operation = draw(st.sampled_from(["delete", "duplicate", "append", "replace", "wrap"]))
        index = draw(st.integers(0, len(node) - 1))
        if operation == "delete":
            del node[index]
            return node
        if operation == "duplicate":
            node.insert(index, copy.deepcopy(node[index]))
            return node
        if operation == "append":
            node.append(draw(JSON_VALUES))
            return node
    else:
        operation = draw(st.sampled_from(["replace", "replace", "wrap", "stringify"]))
        if operation == "stringify":
            return json.dumps(node)
    if operation == "wrap":
        return draw(st.sampled_from([[node], {"value": node}]))
    return draw(JSON_VALUES)


def _shallow_paths(document: Any) -> list[tuple[Any, ...]]:
    """Paths to every field one or two levels down (the first three items of a list)."""
    paths: list[tuple[Any, ...]] = []
    for key, value in _children(document):
        paths.append((key,))
        paths.extend((key, inner) for inner, _ in _children(value))
    return paths


def _children(node: Any) -> list[tuple[Any, Any]]:
    if isinstance(node, dict):
        return list(node.items())
    if isinstance(node, list):
        return list(enumerate(node[:3]))
    return []


@st.composite
def mutated(draw: st.DrawFn, seed: Any) -> Any:
    """``seed`` (a parsed JSON document) with one to three random structural changes: a node
    anywhere, or (as often) a field one or two levels down set to any JSON value."""
    document = copy.deepcopy(seed)
    for _ in range(draw(st.integers(1, 3))):
        paths = _shallow_paths(document)
        if paths and draw(st.booleans()):
            *parents, last = draw(st.sampled_from(paths))
            owner = document
            for step in parents:
                owner = owner[step]
            owner[last] = draw(
                st.one_of(st.sampled_from(WRONG_VALUES).map(copy.deepcopy), JSON_VALUES)
            )
        else:
            document = _mutate_node(draw, document, 0)
    return document


@st.composite
def mutated_bytes(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with one to four byte-level edits: flip, delete, insert, truncate, repeat."""
    buffer = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        operation = draw(st.sampled_from(["flip", "delete", "insert", "truncate", "repeat"]))
        at = draw(st.integers(0, max(len(buffer) - 1, 0)))
        if operation == "flip" and buffer:
            buffer[at] = draw(st.integers(0, 255))
        elif operation == "delete":
            del buffer[at : at + draw(st.integers(1, 64))]
        elif operation == "insert":
            buffer[at:at] = draw(
                st.one_of(
                    st.binary(min_size=1, max_size=16),
                    st.sampled_from(
                        [
                            b'"',
                            b"{",
                            b"[",
                            b"]",
                            b"}",
                            b",",
                            b"NaN",
                            b"<",
                            b">",
                            b"<!DOCTYPE x>",
                            b"&x;",
                            b"\\u0000",
                            b"\\ud800",
                            b"\x00",
                        ]
                    ),
                )
            )
        elif operation == "truncate":
            del buffer[at:]
        elif operation == "repeat":
            piece = buffer[at : at + draw(st.integers(1, 64))]
            buffer[at:at] = piece * draw(st.integers(1, 8))
    return bytes(buffer)


def _dump(value: Any) -> bytes:
    """JSON as a tool might write it: NaN allowed, lone surrogates escaped."""
    return json.dumps(value, allow_nan=True).encode("utf-8")


# -- seeds --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def seeds(corpus: Path) -> dict[str, Any]:
    """Small real files of every format, parsed where they are JSON."""
    inspect_log = json.loads((corpus / "inspect/realworld/log_read_sample.json").read_text())
    capitals = json.loads((corpus / "inspect/capitals_epochs.baseline.json").read_text())
    capitals["samples"] = capitals["samples"][:6]  # a few epochs of a few samples
    promptfoo = json.loads((corpus / "promptfoo/generated/qa.baseline.json").read_text())
    with zipfile.ZipFile(corpus / "inspect/realworld/log_read_sample.eval") as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    small = hostile.inspect_log(
        [
            hostile.inspect_sample("a"),
            hostile.inspect_sample("a", epoch=2, value=0.5),
            {**hostile.inspect_sample(7), "scores": None, "error": {"message": "boom"}},
        ]
    )
    small["eval"]["scorers"] = [{"name": "model_graded_qa", "options": {"model": "m"}}]
    small["results"]["headline"] = {"score": "match", "metric": "accuracy"}
    return {
        "inspect": [inspect_log, capitals, small],
        "promptfoo": promptfoo,
        "eval_members": members,
        "junit": [
            (corpus / "junit" / name).read_bytes()
            for name in (
                "pytest-rerunfailures/current.xml",
                "node/current.xml",
                "mocha/current.xml",
                "realworld/jenkins-surefire-TEST-io.olamy.FlakyTest.xml",
            )
        ],
        "bytes": [
            (corpus / path).read_bytes()
            for path in (
                "inspect/realworld/log_read_sample.json",
                "inspect/realworld/log_read_sample.eval",
                "promptfoo/generated/echo.baseline.json",
                "junit/mocha/baseline.xml",
            )
        ],
    }


@pytest.fixture(scope="module")
def bases(corpus: Path) -> Iterator[Any]:
    """Real report folders of every kind, made once by the CLI."""
    with tempfile.TemporaryDirectory(prefix="evalarc-fuzz-") as scratch:
        yield hostile.build_bases(Path(scratch) / "bases", corpus, EVALARC)


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="evalarc-fuzz-") as folder:
        yield Path(folder)


@contextlib.contextmanager
def fresh(folder: Path) -> Iterator[Path]:
    """An empty folder inside ``folder`` for one example, removed after it."""
    with tempfile.TemporaryDirectory(dir=folder) as made:
        yield Path(made)


# -- readers ------------------------------------------------------------------------------------


@FUZZ
@given(data=st.data())
def test_any_bytes_in_any_format(seeds: dict[str, Any], scratch: Path, data: st.DataObject) -> None:
    original = data.draw(st.sampled_from(seeds["bytes"]))
    blob = data.draw(mutated_bytes(original))
    suffix = data.draw(st.sampled_from([".json", ".eval", ".xml", ""]))
    fmt = data.draw(st.sampled_from(["auto", "inspect", "promptfoo", "junit", "evaluation"]))
    with fresh(scratch) as folder:
        path = folder / f"input{suffix}"
        path.write_bytes(blob)
        load_and_use(path, fmt)


@FUZZ
@given(data=st.data())
def test_inspect_json_logs(seeds: dict[str, Any], scratch: Path, data: st.DataObject) -> None:
    document = data.draw(mutated(data.draw(st.sampled_from(seeds["inspect"]))))
    with fresh(scratch) as folder:
        path = folder / "log.json"
        path.write_bytes(_dump(document))
        load_and_use(path)


@FUZZ
@given(data=st.data())
def test_inspect_eval_archives(seeds: dict[str, Any], scratch: Path, data: st.DataObject) -> None:
    members = dict(seeds["eval_members"])
    target = data.draw(st.sampled_from(sorted(members)))
    members[target] = _dump(data.draw(mutated(json.loads(members[target]))))
    if data.draw(st.booleans()):  # a second sample, perhaps a duplicate under another name
        extra = data.draw(mutated(json.loads(seeds["eval_members"]["samples/1_epoch_1.json"])))
        members[
            data.draw(
                st.sampled_from(
                    [
                        "samples/2_epoch_1.json",
                        "samples/1_epoch_1.json",
                        "samples/../x.json",
                        "header.json",
                    ]
                )
            )
        ] = _dump(extra)
    method = data.draw(st.sampled_from([0, 8, 93]))
    raw = [hostile.RawMember(name.encode(), payload, method) for name, payload in members.items()]
    with fresh(scratch) as folder:
        path = folder / "log.eval"
        path.write_bytes(hostile.zip_bytes(raw))
        load_and_use(path)


@FUZZ
@given(data=st.data())
def test_promptfoo_documents(seeds: dict[str, Any], scratch: Path, data: st.DataObject) -> None:
    document = data.draw(mutated(seeds["promptfoo"]))
    with fresh(scratch) as folder:
        path = folder / "output.json"
        path.write_bytes(_dump(document))
        load_and_use(path, data.draw(st.sampled_from(["auto", "promptfoo"])))


TAGS = [
    "testsuites",
    "testsuite",
    "testcase",
    "failure",
    "error",
    "skipped",
    "system-out",
    "rerunFailure",
    "flakyFailure",
    "flakyError",
    "properties",
    "x:testcase",
]
ATTRIBUTES = ["name", "classname", "time", "message", "type", "tests", "failures", "file"]


@st.composite
def xml_elements(draw: st.DrawFn, depth: int = 0) -> str:
    tag = draw(st.sampled_from(TAGS))
    attributes = draw(
        st.dictionaries(
            st.sampled_from(ATTRIBUTES),
            st.one_of(st.text(max_size=10), st.sampled_from(ODD_STRINGS)),
            max_size=3,
        )
    )
    shown = "".join(f' {key}="{_xml_escape(value)}"' for key, value in attributes.items())
    children = "" if depth > 2 else "".join(draw(st.lists(xml_elements(depth + 1), max_size=3)))
    text = _xml_escape(draw(st.text(max_size=8)))
    return f"<{tag}{shown}>{text}{children}</{tag}>"


def _xml_escape(text: str) -> str:
    cleaned = "".join(
        char
        for char in text
        if char in "\t\n\r"
        or (" " <= char <= "\ud7ff")
        or ("\ue000" <= char <= "\ufffd")
        or char > "\uffff"
    )
    return cleaned.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")


@FUZZ
@given(data=st.data())
def test_junit_documents(seeds: dict[str, Any], data: st.DataObject) -> None:
    if data.draw(st.booleans()):
        blob = data.draw(mutated_bytes(data.draw(st.sampled_from(seeds["junit"]))))
    else:
        blob = data.draw(xml_elements()).encode("utf-8")
        if data.draw(st.booleans()):
            blob = blob.decode().encode(
                data.draw(st.sampled_from(["utf-16", "utf-16-be"])), "surrogatepass"
            )

    def action() -> None:
        run = read_junit_bytes(blob, SOURCE, 1.0)
        if run.cases:
            downstream(run)

    only_evalarc_errors(action)


@FUZZ
@given(data=st.data())
def test_evaluation_documents(bases: Any, scratch: Path, data: st.DataObject) -> None:
    seed = json.loads((bases.evaluation / "evaluation.json").read_text(encoding="utf-8"))
    document = data.draw(st.one_of(mutated(seed), JSON_VALUES))
    with fresh(scratch) as folder:
        path = folder / "evaluation.json"
        path.write_bytes(_dump(document))
        load_and_use(path, data.draw(st.sampled_from(["auto", "evaluation"])))


# -- splits, manifests, checkpoints ------------------------------------------------------------

CASE_IDS = st.lists(
    st.one_of(st.sampled_from(["a", "b", "cap-1", "cap-10", "x/y", "[a]"]), st.text(max_size=6)),
    min_size=1,
    max_size=8,
)


@FUZZ
@given(data=st.data())
def test_splits_and_manifests(scratch: Path, data: st.DataObject) -> None:
    split_seed = {
        "schema_version": "evalarc.case-split.v1",
        "held_out": ["a", "cap-1*"],
        "description": "d",
    }
    manifest_seed = {
        "schema_version": "evalarc.case-manifest.v1",
        "cases": [
            {"match": "a", "source": "production"},
            {"match": "cap-*", "source": "model_failure", "difficulty": "hard"},
        ],
    }
    case_ids = data.draw(CASE_IDS)
    split_document = data.draw(st.one_of(mutated(split_seed), JSON_VALUES))
    manifest_document = data.draw(st.one_of(mutated(manifest_seed), JSON_VALUES))
    with fresh(scratch) as folder:
        (folder / "split.json").write_bytes(_dump(split_document))
        (folder / "cases.json").write_bytes(_dump(manifest_document))
        only_evalarc_errors(lambda: partition(load_split(folder / "split.json"), case_ids))
        only_evalarc_errors(lambda: assign_rules(load_manifest(folder / "cases.json"), case_ids))


@FUZZ
@given(data=st.data())
def test_checkpoints(bases: Any, scratch: Path, data: st.DataObject) -> None:
    evaluation = json.loads((bases.evaluation / "evaluation.json").read_text(encoding="utf-8"))
    seed = [
        {"elapsed_seconds": 60, "evaluation": evaluation},
        {"elapsed_seconds": 120.5, "evaluation": evaluation},
    ]
    document = data.draw(st.one_of(mutated(seed), JSON_VALUES))
    budget = data.draw(
        st.one_of(
            st.sampled_from([600.0, 120.5, 1e-300, 1e308]),
            st.floats(allow_nan=True, allow_infinity=True),
        )
    )

    with fresh(scratch) as folder:
        path = folder / "checkpoints.json"
        path.write_bytes(_dump(document))
        only_evalarc_errors(lambda: pretty_json(run_trajectory(path, budget).to_json()))


# -- verify on mutated report folders ----------------------------------------------------------

FOLDER_KINDS = ["diff", "health", "trajectory", "evaluation", "site"]


def _json_files(folder: Path) -> list[str]:
    return sorted(
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*.json")
        if path.is_file() and "recordings" not in path.parts
    )


def _input_files(folder: Path) -> list[str]:
    return sorted(
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*")
        if path.is_file() and path.suffix in (".xml", ".eval", ".json", ".jsonl", ".py")
    )


def _rehash_everywhere(folder: Path, old: str, new: str) -> None:
    """Replace a SHA-256 wherever a JSON file of the folder records it (a coordinated forger),
    so the mutation reaches the parsers instead of stopping at the hash check."""
    for path in folder.rglob("*.json"):
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        if old in text:
            path.write_text(text.replace(old, new), encoding="utf-8", errors="surrogateescape")


@FUZZ
@given(data=st.data())
def test_verify_mutated_report_folders(bases: Any, scratch: Path, data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from(FOLDER_KINDS))
    with fresh(scratch) as root:
        folder = root / kind
        shutil.copytree(getattr(bases, kind), folder, symlinks=True)
        for _ in range(data.draw(st.integers(1, 2))):
            _mutate_folder(folder, data)
        only_evalarc_errors(lambda: verify_report_folder(folder))


def _mutate_folder(folder: Path, data: st.DataObject) -> None:
    if data.draw(st.booleans()):
        path = folder / data.draw(st.sampled_from(_json_files(folder)))
        try:
            document = json.loads(path.read_bytes())
        except ValueError:  # already mangled byte by byte in an earlier round
            document = None
        if document is not None:
            path.write_bytes(_dump(data.draw(mutated(document))))
            return
    path = folder / data.draw(st.sampled_from(_input_files(folder)))
    old = sha256_bytes(path.read_bytes())
    path.write_bytes(data.draw(mutated_bytes(path.read_bytes())))
    if data.draw(st.booleans()):
        _rehash_everywhere(folder, old, sha256_bytes(path.read_bytes()))


# -- verify: every field of every report file, given the wrong type ----------------------------

REPORT_FILES = {
    "diff": ("params.json", "diff.json"),
    "health": ("params.json", "health.json"),
    "trajectory": ("params.json", "trajectory.json"),
    "evaluation": ("params.json", "evaluation.json"),
    "site": ("manifest.json",),
}
WRONG_TYPES: list[Any] = [None, 5, "x", [1], {"x": 1}]


def _field_paths(document: Any, depth: int = 3) -> list[tuple[Any, ...]]:
    """Paths to fields through objects (and the first item of lists), ``depth`` levels down."""
    if depth == 0:
        return []
    found: list[tuple[Any, ...]] = []
    children = (
        list(document.items())
        if isinstance(document, dict)
        else ([(0, document[0])] if isinstance(document, list) and document else [])
    )
    for key, value in children:
        found.append((key,))
        found.extend((key, *rest) for rest in _field_paths(value, depth - 1))
    return found


def _set_path(document: Any, path: tuple[Any, ...], value: Any) -> None:
    *parents, last = path
    for step in parents:
        document = document[step]
    document[last] = value


def _verify_with_field(
    bases: Any, scratch: Path, kind: str, name: str, path: tuple[Any, ...], value: Any
) -> None:
    with fresh(scratch) as root:
        folder = root / kind
        shutil.copytree(getattr(bases, kind), folder, symlinks=True)
        document = json.loads((folder / name).read_bytes())
        _set_path(document, path, value)
        (folder / name).write_bytes(_dump(document))
        only_evalarc_errors(lambda: verify_report_folder(folder))


@pytest.mark.parametrize(
    ("kind", "name"), [(kind, name) for kind, names in REPORT_FILES.items() for name in names]
)
def test_verify_every_top_level_field_of_the_wrong_type(
    bases: Any, scratch: Path, kind: str, name: str
) -> None:
    document = json.loads((getattr(bases, kind) / name).read_bytes())
    assert isinstance(document, dict)
    for key in document:
        for value in WRONG_TYPES:
            _verify_with_field(bases, scratch, kind, name, (key,), value)


@FUZZ
@given(data=st.data())
def test_verify_a_deeper_field_of_any_value(bases: Any, scratch: Path, data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from(sorted(REPORT_FILES)))
    name = data.draw(st.sampled_from(REPORT_FILES[kind]))
    document = json.loads((getattr(bases, kind) / name).read_bytes())
    path = data.draw(st.sampled_from(_field_paths(document)))
    _verify_with_field(bases, scratch, kind, name, path, data.draw(JSON_VALUES))


# -- the bugs this file found, pinned ---------------------------------------------------------


def _inspect_with(**fields: Any) -> dict[str, Any]:
    document = hostile.inspect_log([hostile.inspect_sample("a")])
    for dotted, value in fields.items():
        owner = document
        *parents, last = dotted.split("__")
        for step in parents:
            owner = owner[step]
        owner[last] = value
    return document


@pytest.mark.parametrize(
    "document",
    [
        _inspect_with(results={"scores": 5}),  # TypeError: 'int' object is not iterable
        _inspect_with(eval__scorers=5),  # the same, in graders_of
        _inspect_with(  # TypeError: unhashable type: 'list'
            results={
                "scores": [{"name": "match", "metrics": {"accuracy": {"value": 1}}}],
                "headline": {"score": "match", "metric": [1]},
            }
        ),
    ],
    ids=["results-scores-int", "scorers-int", "headline-metric-list"],
)
def test_inspect_fields_of_the_wrong_type_read_as_absent(scratch: Path, document: Any) -> None:
    with fresh(scratch) as folder:
        path = folder / "log.json"
        path.write_bytes(_dump(document))
        run = load_results(path)
    assert list(run.cases) == ["a"]


def _promptfoo_with(**fields: Any) -> dict[str, Any]:
    row = hostile.promptfoo_row("a")
    row.update(fields)
    return hostile.promptfoo_document([row])


@pytest.mark.parametrize(
    "document",
    [
        _promptfoo_with(cost=10**400),  # OverflowError: int too large to convert to float
        _promptfoo_with(latencyMs=10**400),
        _promptfoo_with(
            gradingResult={
                "componentResults": [
                    {"pass": True, "score": 1, "assertion": {"type": "equals", "value": 10**400}}
                ]
            }
        ),
    ],
    ids=["cost", "latency", "assertion-value"],
)
def test_promptfoo_integers_beyond_floats_are_ignored(scratch: Path, document: Any) -> None:
    with fresh(scratch) as folder:
        path = folder / "output.json"
        path.write_bytes(_dump(document))
        downstream(load_results(path))


def test_evaluation_integers_beyond_floats(scratch: Path) -> None:
    with fresh(scratch) as folder:
        path = folder / "evaluation.json"
        for changes, message in (
            ({"score": 10**400}, "score must be a finite number or null"),
            ({"dimensions": {"correctness": {"weight": 10**400}}}, "has no finite weight"),
        ):
            path.write_bytes(_dump(hostile.evaluation_document(**changes)))
            with pytest.raises(EvalArcError, match=message):
                load_results(path)
        case = {
            "seed": 17,
            "case_id": "a",
            "checks": {"correctness": True},
            "duration_seconds": 10**400,
        }
        path.write_bytes(_dump(hostile.evaluation_document(cases=[case])))
        assert load_results(path).samples["17/a"][0].usage == {}


@pytest.mark.parametrize(
    ("kind", "name", "path", "value"),
    [
        ("diff", "diff.json", ("generalization",), 5),  # AttributeError: no attribute 'get'
        ("diff", "params.json", ("harness",), 5),  # TypeError: 'int' object is not iterable
        ("health", "health.json", ("provenance",), 5),  # AttributeError
        ("diff", "params.json", ("inputs", 0, "file"), "\ud800"),  # UnicodeEncodeError
        ("diff", "params.json", ("inputs", 0, "file"), "x" * 300),  # OSError: name too long
        # OverflowError: int too large to convert to float (options recorded as 400 digits)
        ("diff", "params.json", ("threshold",), 10**400),
        ("health", "params.json", ("saturation",), 10**400),
        ("health", "params.json", ("plan_attempts",), 10**400),
        ("trajectory", "params.json", ("budget_seconds",), 10**400),
        ("evaluation", "evaluation.json", ("evaluation_seconds",), 10**400),
        ("evaluation", "params.json", ("timeout",), 10**400),
    ],
    ids=[
        "generalization",
        "harness",
        "provenance",
        "surrogate-path",
        "long-path",
        "diff-threshold",
        "health-saturation",
        "health-plan",
        "budget",
        "evaluation-seconds",
        "evaluation-timeout",
    ],
)
def test_verify_refuses_what_used_to_crash(
    bases: Any, scratch: Path, kind: str, name: str, path: tuple[Any, ...], value: Any
) -> None:
    with fresh(scratch) as root:
        folder = root / kind
        shutil.copytree(getattr(bases, kind), folder, symlinks=True)
        document = json.loads((folder / name).read_bytes())
        _set_path(document, path, value)
        (folder / name).write_bytes(_dump(document))
        with pytest.raises(EvalArcError):
            verify_report_folder(folder)


def test_verify_compares_deeply_nested_reports_without_recursing(bases: Any, scratch: Path) -> None:
    """Python recursion in the comparison overflowed from about 500 levels (RecursionError):
    a tampered report is refused, and a trajectory whose recorded runtime object nests 600
    levels, which ``evalarc trajectory`` writes, verifies."""
    evaluation = json.loads((bases.evaluation / "evaluation.json").read_bytes())
    with fresh(scratch) as root:
        folder = root / "diff"
        shutil.copytree(bases.diff, folder)
        report = folder / "diff.json"
        text = report.read_text(encoding="utf-8").rstrip().rstrip("}")
        report.write_text(text + ', "extra": ' + "[" * 700 + "]" * 700 + "}", encoding="utf-8")
        with pytest.raises(EvalArcError, match="differs from the recomputed"):
            verify_report_folder(folder)
        checkpoints = root / "checkpoints.json"
        deep = {**evaluation, "runtime": {"x": "DEEP"}}
        text = json.dumps([{"elapsed_seconds": 1, "evaluation": deep}])
        checkpoints.write_text(text.replace('"DEEP"', "[" * 600 + "]" * 600), encoding="utf-8")
        run_trajectory(checkpoints, 60.0, root / "trajectory")
        assert verify_report_folder(root / "trajectory")["verified"] is True


def test_a_recording_time_beyond_floats_is_refused(bases: Any) -> None:
    """A recording's event time of 400 digits passed validation and overflowed a float later."""
    recording = next((bases.evaluation / "recordings").glob("*.jsonl"))
    lines = recording.read_text(encoding="ascii").splitlines()
    event = json.loads(lines[-1])
    event["t"] = 10**400
    lines[-1] = compact_json(event)
    with pytest.raises(EvalArcError, match="has no valid time"):
        parse_recording(("\n".join(lines) + "\n").encode("ascii"), recording)
