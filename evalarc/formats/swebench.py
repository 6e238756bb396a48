"""Read SWE-bench evaluation results: a run folder of per-instance ``report.json`` files, one
``report.json``, or the run summary ``<model>.<run_id>.json``.

``swebench.harness.run_evaluation`` writes ``logs/run_evaluation/<run_id>/<model>/<instance_id>/``
with ``report.json`` (``{instance_id: {patch_is_None, patch_exists, patch_successfully_applied,
resolved, tests_status}}``) and ``run_instance.log``; an instance whose evaluation failed
(image build, patch apply, timeout in the harness) has a folder without ``report.json``. The run
summary (``make_run_report``) lists ``resolved_ids``, ``unresolved_ids``, ``error_ids``,
``empty_patch_ids``, ``incomplete_ids`` with their counts.

A case is an instance. Its checks are ``resolved`` and, from a report, each FAIL_TO_PASS and
PASS_TO_PASS test (``FAIL_TO_PASS: tests/test_x.py::test_y``). Error, empty-patch and
not-evaluated instances are unassessed with their reason, never a failure that could hide a lost
pass and never a pass. Each report's ``resolved`` is checked against its own tests by SWE-bench's
rule (``get_resolution_status``: FULL when every FAIL_TO_PASS and every PASS_TO_PASS test
passed), and a summary's counts against its id lists; a disagreement is refused with both
figures.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalarc.canonical import canonical_bytes, strict_loads
from evalarc.errors import InputError
from evalarc.formats.budget import note_read
from evalarc.formats.input_file import parse_json_input, read_input_file
from evalarc.formats.model import Attempt, Headline, Run, SampleMeta, Source, cut_evidence

RESOLVED = "resolved"
BUNDLE_KEY = "swebench_run_folder"
HEADLINE_NAME = "SWE-bench resolved rate"
REPORT_NAME = "report.json"
LOG_NAME = "run_instance.log"
MAX_REPORT_BYTES = 16 * 1024 * 1024
"""One report.json (or a run summary) larger than this is refused."""
MAX_FOLDER_ENTRIES = 200_000
"""A run folder whose walk meets more entries than this is refused."""
MAX_FOLDER_BYTES = 256 * 1024 * 1024
"""The report.json files of one run folder may hold this many bytes together (each is parsed
and kept in the folder's bundle)."""
MAX_DEPTH = 2
"""Instance folders are looked for at most this far below the folder given (run/model/instance)."""
_LOG_TAIL_BYTES = 4096
_REPORT_KEYS = frozenset(
    {"patch_is_None", "patch_exists", "patch_successfully_applied", "resolved"}
)
_TEST_GROUPS = ("FAIL_TO_PASS", "PASS_TO_PASS")
_SUMMARY_LISTS = {
    "resolved_instances": "resolved_ids",
    "unresolved_instances": "unresolved_ids",
    "error_instances": "error_ids",
    "empty_patch_instances": "empty_patch_ids",
    "completed_instances": "completed_ids",
    "submitted_instances": "submitted_ids",
    "infra_failure_instances": "infra_failure_ids",
    "ambiguous_failure_instances": "ambiguous_failure_ids",
}
SUMMARY_MARKERS = frozenset(
    {"total_instances", "resolved_ids", "unresolved_ids", "error_ids", "completed_ids"}
)


def is_instance_report(document: object) -> bool:
    """The marker of a report.json: one instance id mapped to SWE-bench's report fields."""
    if not isinstance(document, dict) or len(document) != 1:
        return False
    (value,) = document.values()
    return isinstance(value, dict) and value.keys() >= _REPORT_KEYS


def is_run_summary(document: object) -> bool:
    return isinstance(document, dict) and document.keys() >= SUMMARY_MARKERS


def read_swebench(path: Path, source: Source, threshold: float) -> Run:
    """A report.json or a run summary (a run folder goes through :func:`read_run_folder`)."""
    name = str(path)
    document = _load_json(path, name)
    if is_folder_bundle(document):
        assert isinstance(document, dict)
        return _bundle_run(name, document, source, threshold)
    if is_run_summary(document):
        assert isinstance(document, dict)
        return _summary_run(name, document, source, threshold)
    if is_instance_report(document):
        assert isinstance(document, dict)
        builder = _Builder()
        (instance_id,) = document
        builder.add_report(name, instance_id, document[instance_id])
        return builder.run(source, threshold, {"kind": "report.json"})
    raise InputError(
        f"{name} is neither a SWE-bench report.json nor a run summary "
        "(<model>.<run_id>.json from run_evaluation)"
    )


def is_run_folder(path: Path) -> bool:
    """True when ``path`` (a directory) holds an instance folder of a SWE-bench run within
    MAX_DEPTH levels: a folder with a report.json or a run_instance.log."""
    try:
        return any(True for _ in _instance_folders(path, str(path)))
    except InputError:
        return True  # a run folder whose walk is refused: the reader names the problem


def read_run_folder(path: Path, threshold: float) -> Run:
    """Read every instance folder under ``path`` (bounded: depth, entries, report size; a
    symbolic link anywhere in the walk is refused). The run is read from the folder's bundle
    (:func:`folder_bundle`), so a report folder's copy of it gives the same run."""
    data = folder_bundle(path)
    document = strict_loads(data)
    assert isinstance(document, dict)
    source = Source(name=path.name, sha256=hashlib.sha256(data).hexdigest())
    return _bundle_run(str(path), document, source, threshold)


def folder_bundle(path: Path) -> bytes:
    """One canonical JSON document of a run folder: each instance's report.json as SWE-bench
    wrote it, or the reason it has none. Report folders keep this as their copy of the input
    (a folder cannot be copied as one file), and :func:`read_swebench` reads it back."""
    name = str(path)
    instances: dict[str, Any] = {}
    owners: dict[str, str] = {}
    total = 0
    for folder in sorted(_instance_folders(path, name)):
        instance_id = folder.name
        relative = folder.relative_to(path).as_posix()
        if instance_id in owners:
            raise InputError(
                f"{name}: instance {instance_id} appears in {owners[instance_id]} and "
                f"{relative}; pass one model folder of one run"
            )
        owners[instance_id] = relative
        report = folder / REPORT_NAME
        shown = f"{name}/{relative}/{REPORT_NAME}"
        if _is_regular(report, shown):
            data = _read_bounded(report)
            total += len(data)
            if total > MAX_FOLDER_BYTES:
                raise InputError(f"{name}: its report.json files exceed {MAX_FOLDER_BYTES} bytes")
            document = _parse(data, shown)
            if not is_instance_report(document) or instance_id not in document:  # type: ignore[operator]
                raise InputError(f"{shown} is not the SWE-bench report of instance {instance_id}")
            assert isinstance(document, dict)
            instances[instance_id] = {"folder": relative, "report": document[instance_id]}
        else:
            reason = "evaluation error: no report.json"
            tail = _log_tail(folder / LOG_NAME, f"{name}/{relative}/{LOG_NAME}")
            if tail:
                reason += f" (run_instance.log ends: {tail})"
            instances[instance_id] = {"folder": relative, "error": reason}
    if not instances:
        raise InputError(f"{name} holds no SWE-bench instance folders (<instance_id>/report.json)")
    parents = sorted({relative.rpartition("/")[0] or "." for relative in owners.values()})
    if len(parents) > 1:
        raise InputError(
            f"{name} holds the instances of several model folders ({', '.join(parents[:4])}); "
            "pass one model folder of one run"
        )
    return canonical_bytes({BUNDLE_KEY: path.name, "instances": instances})


def is_folder_bundle(document: object) -> bool:
    return (
        isinstance(document, dict)
        and isinstance(document.get(BUNDLE_KEY), str)
        and isinstance(document.get("instances"), dict)
        and len(document) == 2
    )


def _bundle_run(name: str, document: dict[str, Any], source: Source, threshold: float) -> Run:
    builder = _Builder()
    for instance_id, entry in document["instances"].items():
        if not isinstance(entry, dict) or not isinstance(entry.get("folder"), str):
            raise InputError(f"{name}: instance {instance_id} has no folder")
        shown = f"{name}: {entry['folder']}/{REPORT_NAME}"
        if "report" in entry:
            builder.add_report(shown, instance_id, entry["report"])
        elif isinstance(entry.get("error"), str):
            builder.add_unassessed(instance_id, entry["error"])
        else:
            raise InputError(f"{name}: instance {instance_id} has neither a report nor an error")
    return builder.run(source, threshold, {"kind": "run folder", "folder": document[BUNDLE_KEY]})


# -- the run summary ---------------------------------------------------------------------------


def _summary_run(name: str, document: dict[str, Any], source: Source, threshold: float) -> Run:
    lists: dict[str, list[str]] = {}
    for key in (*_SUMMARY_LISTS.values(), "incomplete_ids"):
        value = document.get(key, [])
        if not isinstance(value, list) or not all(isinstance(i, str) for i in value):
            raise InputError(f"{name}: {key} is not a list of instance ids")
        if len(set(value)) != len(value):
            raise InputError(f"{name}: {key} names an instance twice")
        lists[key] = value
    for count_key, list_key in _SUMMARY_LISTS.items():
        count = document.get(count_key)
        if count is not None and count != len(lists[list_key]):
            raise InputError(
                f"{name}: {count_key} is {count!r} but {list_key} lists {len(lists[list_key])}"
            )
    resolved, unresolved = set(lists["resolved_ids"]), set(lists["unresolved_ids"])
    errors, completed = set(lists["error_ids"]), set(lists["completed_ids"])
    # make_run_report: a completed instance is resolved or unresolved, or an error when its
    # report.json is empty or unreadable.
    if "completed_ids" in document and not (
        resolved | unresolved <= completed <= resolved | unresolved | errors
    ):
        raise InputError(
            f"{name}: completed_ids ({len(completed)}) are not the resolved and unresolved ids "
            f"({len(resolved | unresolved)}) plus errors"
        )
    infra = set(lists["infra_failure_ids"])
    classified = infra | set(lists["ambiguous_failure_ids"])
    if not classified <= unresolved | errors:
        raise InputError(
            f"{name}: infra_failure_ids/ambiguous_failure_ids name instances that are neither "
            "unresolved nor errors"
        )
    reasons_of = document.get("failure_reasons", {})
    if not isinstance(reasons_of, dict):
        raise InputError(f"{name}: failure_reasons is not an object")
    outcomes = (
        ("resolved_ids", True, "resolved"),
        ("unresolved_ids", False, "unresolved"),
        ("error_ids", None, "unassessed: evaluation error"),
        ("empty_patch_ids", None, "unassessed: empty patch"),
        ("incomplete_ids", None, "unassessed: not evaluated (no prediction)"),
    )
    builder = _Builder()
    where: dict[str, str] = {}
    for key, passed, evidence in outcomes:
        for instance_id in lists[key]:
            if instance_id in where:
                raise InputError(
                    f"{name}: instance {instance_id} is in {where[instance_id]} and {key}"
                )
            where[instance_id] = key
            verdict, said = passed, evidence
            if instance_id in infra:
                # SWE-bench's own classification: an environment fault, not the model's.
                verdict, said = None, "unassessed: likely infrastructure failure"
            if instance_id in reasons_of:
                said += f" ({reasons_of[instance_id]})"
            builder.add(instance_id, RESOLVED, Attempt(passed=verdict, value=passed, evidence=said))
    total = document.get("total_instances")
    identity = {"kind": "run summary", "schema_version": document.get("schema_version")}
    run = builder.run(source, threshold, identity)
    if isinstance(total, int) and not isinstance(total, bool) and total > 0:
        run.headline = Headline(HEADLINE_NAME, len(resolved) / total)
    return run


# -- building ------------------------------------------------------------------------------------


class _Builder:
    def __init__(self) -> None:
        self.cases: dict[str, dict[str, list[Attempt]]] = {}

    def add(self, instance_id: str, check: str, attempt: Attempt) -> None:
        self.cases.setdefault(instance_id, {})[check] = [attempt]

    def add_unassessed(self, instance_id: str, reason: str) -> None:
        self.add(instance_id, RESOLVED, Attempt(passed=None, evidence=cut_evidence(reason)))

    def add_report(self, name: str, instance_id: str, report: object) -> None:
        if not isinstance(report, dict) or not report.keys() >= _REPORT_KEYS:
            raise InputError(f"{name}: the report of {instance_id} lacks SWE-bench's fields")
        resolved = report["resolved"]
        if not isinstance(resolved, bool):
            raise InputError(f"{name}: {instance_id} resolved is {resolved!r}, not true or false")
        if report["patch_is_None"] is True or report["patch_exists"] is False:
            if resolved:
                raise InputError(f"{name}: {instance_id} is resolved without a patch")
            self.add_unassessed(instance_id, "empty patch (patch_is_None)")
            return
        status = report.get("tests_status")
        if report["patch_successfully_applied"] is not True:
            if resolved:
                raise InputError(f"{name}: {instance_id} is resolved but its patch was not applied")
            reason = report.get("infra_failure_reason")
            said = f" ({reason})" if reason else ""
            if report.get("infra_failure") is True:
                # SWE-bench's own classification: an environment fault, not the model's.
                self.add_unassessed(instance_id, f"likely infrastructure failure{said}")
                return
            # SWE-bench counts it completed and unresolved (no parseable test output).
            evidence = f"unresolved: patch not applied or no test output{said}"
            self.add(instance_id, RESOLVED, Attempt(False, False, cut_evidence(evidence)))
            return
        if not isinstance(status, dict):
            raise InputError(
                f"{name}: {instance_id} has no tests_status, so resolved={resolved} cannot be "
                "checked against its tests"
            )
        failures = 0
        for group in _TEST_GROUPS:
            tests = status.get(group)
            if not isinstance(tests, dict):
                raise InputError(f"{name}: {instance_id} tests_status.{group} is missing")
            for outcome, passed in (("success", True), ("failure", False)):
                names = tests.get(outcome)
                if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                    raise InputError(
                        f"{name}: {instance_id} tests_status.{group}.{outcome} is not a list"
                    )
                for test in names:
                    check = f"{group}: {test}"
                    if check in self.cases.get(instance_id, {}):
                        raise InputError(f"{name}: {instance_id} lists {check} twice")
                    said = f"tests_status.{group}.{outcome}"
                    self.add(instance_id, check, Attempt(passed, outcome, said))
                failures += 0 if passed else len(names)
        expected = failures == 0  # SWE-bench: FULL when f2p == 1 and p2p == 1
        if resolved != expected:
            raise InputError(
                f"{name}: {instance_id} says resolved={resolved} but its tests_status has "
                f"{failures} failing FAIL_TO_PASS/PASS_TO_PASS tests (SWE-bench's rule gives "
                f"resolved={expected})"
            )
        failing = [c for c, a in self.cases[instance_id].items() if a[0].passed is False]
        evidence = "resolved" if resolved else "unresolved; failing: " + ", ".join(failing)
        self.add(instance_id, RESOLVED, Attempt(resolved, resolved, cut_evidence(evidence)))
        # `resolved` first in the case, as it is the verdict SWE-bench reports.
        checks = self.cases[instance_id]
        self.cases[instance_id] = {RESOLVED: checks.pop(RESOLVED), **checks}

    def run(self, source: Source, threshold: float, identity: dict[str, Any]) -> Run:
        verdicts = [checks[RESOLVED][0].passed for checks in self.cases.values()]
        samples = {
            case: [SampleMeta(verdicts={c: a[0].passed for c, a in checks.items()})]
            for case, checks in self.cases.items()
        }
        resolved = sum(1 for v in verdicts if v is True)
        return Run(
            format="swebench",
            source=source,
            threshold=threshold,
            cases=self.cases,
            identity=identity,
            headline=Headline(HEADLINE_NAME, resolved / len(verdicts)) if verdicts else None,
            samples=samples,
        )


# -- bounded file access --------------------------------------------------------------------------


def _instance_folders(root: Path, name: str) -> Iterator[Path]:
    """Yield instance folders (holding report.json or run_instance.log) at most MAX_DEPTH
    levels below ``root``; refuse a symbolic link or a walk of more than MAX_FOLDER_ENTRIES."""
    seen = 0
    pending: list[tuple[Path, int]] = [(root, 0)]
    while pending:
        folder, depth = pending.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as error:
            raise InputError(f"{name}: cannot list {folder}: {error.strerror or error}") from None
        seen += len(entries)
        if seen > MAX_FOLDER_ENTRIES:
            raise InputError(f"{name} holds more than {MAX_FOLDER_ENTRIES:,} entries")
        names = {entry.name for entry in entries}
        if folder != root and (REPORT_NAME in names or LOG_NAME in names):
            yield folder
            continue
        for entry in entries:
            if entry.is_symlink():
                raise InputError(f"{name}: {Path(entry.path)} is a symbolic link (not followed)")
            if entry.is_dir(follow_symlinks=False) and depth < MAX_DEPTH:
                pending.append((Path(entry.path), depth + 1))


def _is_regular(path: Path, shown: str) -> bool:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return False
    except OSError as error:
        raise InputError(f"{shown} cannot be read: {error.strerror or error}") from None
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"{shown} is not a regular file")
    return True


def _read_bounded(path: Path) -> bytes:
    """One report or summary, through the bounded reader every small input uses (refusals name
    the path as given); its bytes widen the run folder's reading budget."""
    data = read_input_file(path, what="SWE-bench file", limit=MAX_REPORT_BYTES)
    note_read(len(data))
    return data


def _parse(data: bytes, shown: str) -> object:
    return parse_json_input(data, shown)


def _load_json(path: Path, name: str) -> object:
    return _parse(_read_bounded(path), name)


def load_document(path: Path) -> object:
    """The JSON document of a SWE-bench file (a report, a summary or a run folder's bundle),
    under the reader's size cap and strict parsing."""
    return _load_json(path, str(path))


def _log_tail(path: Path, shown: str) -> str:
    """The last non-blank line of run_instance.log (its error), when there is one."""
    if not _is_regular(path, shown):
        return ""
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, path.stat().st_size - _LOG_TAIL_BYTES))
            text = handle.read(_LOG_TAIL_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
