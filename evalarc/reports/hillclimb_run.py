"""``evalarc hillclimb-run``: drive a hill climb with the user's own evaluate and propose commands.

EvalArc calls no model. Each iteration hands the proposer the last kept result's TUNING failures
(never a held-out case), runs the propose command, and then guards what it did:

- a change to any workspace file outside the ``allow`` globs (``.git`` included) stops the loop
  with exit 2: allowed files are restored, files the proposer created outside ``allow`` are
  deleted, and files it modified or deleted there are listed for the user to restore;
- a patch whose added lines contain held-out case text is rolled back (``rollback_leakage``),
  and one that pastes tuning case text is rolled back too (``rollback_pasted_case``), both
  without spending an evaluation;
- otherwise the evaluate command runs and the hillclimb-review rule
  (:func:`evalarc.review.hillclimb.compare_step`) keeps the change or restores the kept files.

The output folder keeps every result, per-step briefs, patches and command logs, ``loop.json``
(rewritten after each step and on failure) and, at the end, a hillclimb-review report over every
evaluated result (params.json kind ``hillclimb-review``), so ``evalarc verify`` recomputes it.
"""

from __future__ import annotations

import contextlib
import difflib
import fnmatch
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from evalarc import schemas
from evalarc.bundle import (
    check_new_output,
    copy_suffix,
    copy_verified,
    write_bytes,
    write_json,
    write_text,
)
from evalarc.cancel import signals_held
from evalarc.canonical import pretty_json, sha256_bytes, sha256_file
from evalarc.clock import timestamp
from evalarc.errors import (
    EnvironmentFailure,
    EvalArcError,
    InputError,
    OutputError,
    UsageError,
)
from evalarc.formats import Run, load_results
from evalarc.formats.harness import HarnessFile
from evalarc.formats.registry import FORMAT_NAMES
from evalarc.formats.split import CaseSplit, load_split
from evalarc.reports.hillclimb import (
    SPLIT_FILE,
    harness_entries,
    hillclimb_params,
    write_review_files,
)
from evalarc.review.health import noise_review
from evalarc.review.hillclimb import (
    MAX_STEPS,
    TUNING_FAILURES_SCHEMA,
    HillclimbOptions,
    compare_step,
    compute_hillclimb,
    points,
    pooled_snapshot,
    stall_entry,
    triage_cases,
)
from evalarc.review.hillclimb_model import OBJECTIVES, HillclimbReport
from evalarc.review.leakage import MIN_LEAK_CHARS, scan_leakage
from evalarc.review.split import partition
from evalarc.review.usage import COST_METRIC_CHOICES

RUN_SCHEMA = schemas.HILLCLIMB_RUN
ALLOWED_SCHEMA = schemas.HILLCLIMB_ALLOWED
MAX_CONFIG_BYTES = 256 * 1024
MAX_ALLOWED_BYTES = 8 * 1024 * 1024
MAX_OUTSIDE_FILES = 20_000
MAX_COMMAND_OUTPUT = 8 * 1024 * 1024
MAX_ARGUMENTS = 64
MAX_ARGUMENT_CHARS = 8_192
MAX_TIMEOUT = 86_400.0
MAX_LISTED_CHANGES = 10
MAX_OUTPUTS_PER_CASE = 5
RESULT_SUFFIXES = (".json", ".xml", ".eval")
CACHE_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
"""Folders a command may litter freely; they are neither hashed nor restored."""
_POLL_SECONDS = 0.05

CONFIG_KEYS = frozenset(
    {
        "workspace",
        "allow",
        "evaluate",
        "propose",
        "held_out",
        "objective",
        "cost_metric",
        "max_cost_ratio",
        "max_iterations",
        "stall_after",
        "min_effect",
        "timeout_seconds",
        "result_suffix",
        "format",
        "threshold",
        "leak_min_chars",
        "paste_check",
    }
)
PLACEHOLDERS = {
    "evaluate": frozenset({"python", "workspace", "output"}),
    "propose": frozenset({"python", "workspace", "failures", "allowed", "iteration"}),
}
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")

BRIEF_RULES = (
    "Fix root causes in the allowed files; do not special-case individual tickets or cases.",
    "Never paste case inputs or expected answers into the allowed files: a patch that does is "
    "rolled back without being evaluated.",
    "Skip cases triaged pipeline, truncated or grader_inconsistent: they need a fix in the "
    "evaluation itself, not in the system under test.",
    "Edit only files matching the allowed globs; changing anything else stops the loop.",
)


# -- configuration ------------------------------------------------------------------------------


def result_file(name: str) -> str:
    """The name a step's result file is kept under in ``results/`` (passive, see
    :func:`evalarc.bundle.copy_suffix`)."""
    path = Path(name)
    return path.stem + copy_suffix(path)


@dataclass(frozen=True)
class LoopConfig:
    """A validated hillclimb-run configuration (paths resolved against the TOML's folder)."""

    path: Path
    data: bytes
    workspace: Path
    workspace_text: str
    allow: tuple[str, ...]
    evaluate: tuple[str, ...]
    propose: tuple[str, ...]
    held_out: Path
    objective: str = "quality"
    cost_metric: str = "auto"
    max_cost_ratio: float = 1.0
    max_iterations: int = 5
    stall_after: int = 2
    min_effect: float | None = None
    timeout_seconds: float = 3600.0
    result_suffix: str = ".json"
    format: str = "auto"
    threshold: float = 1.0
    leak_min_chars: int = 12
    paste_check: bool = True

    @property
    def sha256(self) -> str:
        return sha256_bytes(self.data)

    def review_options(self) -> HillclimbOptions:
        return HillclimbOptions(
            objective=self.objective,
            cost_metric=self.cost_metric,
            max_cost_ratio=self.max_cost_ratio,
            stall_after=self.stall_after,
            min_effect=self.min_effect,
            min_steps=0,
            leak_min_chars=self.leak_min_chars,
        )


def _is_number(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


class _ConfigReader:
    """Typed access to the parsed TOML; every error names the file and the key."""

    def __init__(self, name: str, table: dict[str, Any]) -> None:
        self.name = name
        self.table = table

    def fail(self, key: str, what: str) -> InputError:
        return InputError(f"{self.name}: {key} {what}")

    def text(self, key: str) -> str:
        value = self.table.get(key)
        if not isinstance(value, str) or not value or "\x00" in value:
            raise self.fail(key, "must be a non-empty string")
        return value

    def choice(self, key: str, default: str, choices: Sequence[str]) -> str:
        value = self.table.get(key, default)
        if value not in choices:
            raise self.fail(key, f"must be one of {', '.join(choices)}")
        return str(value)

    def number(self, key: str, default: float) -> float:
        value = self.table.get(key, default)
        if not _is_number(value):
            raise self.fail(key, "must be a finite number")
        return float(value)

    def integer(self, key: str, default: int, low: int, high: int | None = None) -> int:
        value = self.table.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, "must be an integer")
        if value < low or (high is not None and value > high):
            span = f"at least {low}" if high is None else f"between {low} and {high}"
            raise self.fail(key, f"must be {span}")
        return value

    def command(self, key: str) -> tuple[str, ...]:
        value = self.table.get(key)
        if (
            not isinstance(value, list)
            or not 1 <= len(value) <= MAX_ARGUMENTS
            or not all(isinstance(item, str) and item for item in value)
        ):
            raise self.fail(key, f"must be an array of 1 to {MAX_ARGUMENTS} non-empty strings")
        for item in value:
            if len(item) > MAX_ARGUMENT_CHARS or "\x00" in item:
                raise self.fail(key, f"has an argument longer than {MAX_ARGUMENT_CHARS} characters")
            for name in _PLACEHOLDER.findall(item):
                if name not in PLACEHOLDERS[key]:
                    allowed = ", ".join("{" + known + "}" for known in sorted(PLACEHOLDERS[key]))
                    raise self.fail(key, f"uses unknown placeholder {{{name[:40]}}}; use {allowed}")
        return tuple(value)

    def globs(self, key: str) -> tuple[str, ...]:
        value = self.table.get(key)
        if not isinstance(value, list) or not value:
            raise self.fail(key, "must be a non-empty array of relative globs")
        for item in value:
            if not isinstance(item, str) or not item or "\x00" in item or "\\" in item:
                raise self.fail(key, "must list non-empty relative globs with / separators")
            pure = PurePosixPath(item)
            if pure.is_absolute() or ".." in pure.parts:
                raise self.fail(key, f"entry {item[:80]!r} must stay inside the workspace")
            if pure.parts and pure.parts[0] == ".git":
                raise self.fail(key, "may not allow files inside .git")
        return tuple(value)


def load_loop_config(path: Path) -> LoopConfig:
    """Read and validate a hillclimb-run TOML file (InputError naming the file)."""
    name = path.name
    if not path.is_file() or path.is_symlink():
        raise InputError(f"config {path} is not a regular file")
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise InputError(f"{name} exceeds {MAX_CONFIG_BYTES} bytes")
    data = path.read_bytes()
    try:
        table = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"{name} is not valid TOML: {error}") from None
    unknown = sorted(set(table) - CONFIG_KEYS)
    if unknown:
        raise InputError(f"{name} has unknown keys: {', '.join(repr(k[:40]) for k in unknown[:5])}")
    reader = _ConfigReader(name, table)
    base = path.parent
    workspace_text = reader.text("workspace")
    workspace = (base / workspace_text).resolve()
    if not workspace.is_dir():
        raise InputError(f"{name}: workspace {workspace_text!r} is not a folder")
    held_out = base / reader.text("held_out")
    min_effect = table.get("min_effect")
    if min_effect is not None and (not _is_number(min_effect) or not 0 < min_effect < 1):
        raise reader.fail("min_effect", "must be a number between 0 and 1 (exclusive)")
    max_cost_ratio = reader.number("max_cost_ratio", 1.0)
    if max_cost_ratio <= 0:
        raise reader.fail("max_cost_ratio", "must be a positive number")
    timeout = reader.number("timeout_seconds", 3600.0)
    if not 0 < timeout <= MAX_TIMEOUT:
        raise reader.fail("timeout_seconds", f"must be above 0 and at most {MAX_TIMEOUT:g}")
    paste_check = table.get("paste_check", True)
    if not isinstance(paste_check, bool):
        raise reader.fail("paste_check", "must be true or false")
    return LoopConfig(
        path=path,
        data=data,
        workspace=workspace,
        workspace_text=workspace_text,
        allow=reader.globs("allow"),
        evaluate=reader.command("evaluate"),
        propose=reader.command("propose"),
        held_out=held_out,
        objective=reader.choice("objective", "quality", OBJECTIVES),
        cost_metric=reader.choice("cost_metric", "auto", COST_METRIC_CHOICES),
        max_cost_ratio=max_cost_ratio,
        max_iterations=reader.integer("max_iterations", 5, 1, MAX_STEPS),
        stall_after=reader.integer("stall_after", 2, 1),
        min_effect=None if min_effect is None else float(min_effect),
        timeout_seconds=timeout,
        result_suffix=reader.choice("result_suffix", ".json", RESULT_SUFFIXES),
        format=reader.choice("format", "auto", ("auto", *FORMAT_NAMES)),
        threshold=reader.number("threshold", 1.0),
        leak_min_chars=reader.integer("leak_min_chars", 12, MIN_LEAK_CHARS),
        paste_check=paste_check,
    )


def expand(arguments: Sequence[str], values: dict[str, str]) -> list[str]:
    """Replace ``{name}`` placeholders (validated when the config was read)."""
    return [_PLACEHOLDER.sub(lambda match: values[match.group(1)], item) for item in arguments]


# -- the workspace ------------------------------------------------------------------------------


def glob_matches(pattern: str, path: str) -> bool:
    """Match a workspace-relative POSIX path against a glob where ``*`` and ``?`` stay inside one
    path component and a ``**`` component spans any number of components."""
    return _match_parts(pattern.split("/"), path.split("/"))


def _match_parts(patterns: list[str], parts: list[str]) -> bool:
    if not patterns:
        return not parts
    head = patterns[0]
    if head == "**":
        return any(_match_parts(patterns[1:], parts[index:]) for index in range(len(parts) + 1))
    return (
        bool(parts)
        and fnmatch.fnmatchcase(parts[0], head)
        and _match_parts(patterns[1:], parts[1:])
    )


def is_allowed(path: str, allow: Sequence[str]) -> bool:
    """True for a path the proposer may edit: it matches a glob and is not inside ``.git``."""
    if path.split("/", 1)[0] == ".git":
        return False
    return any(glob_matches(pattern, path) for pattern in allow)


@dataclass
class _Listing:
    files: dict[str, os.DirEntry[str]] = field(default_factory=dict)
    folders: set[str] = field(default_factory=set)


def _list_workspace(root: Path) -> _Listing:
    """Every non-folder entry (files, symlinks, special files) and every folder under ``root``,
    by relative POSIX path; cache folders are skipped and folder symlinks are not followed."""
    listing = _Listing()
    stack: list[tuple[str, Path]] = [("", root)]
    while stack:
        prefix, folder = stack.pop()
        try:
            with os.scandir(folder) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError as error:
            raise EnvironmentFailure(
                f"cannot list workspace folder {prefix or '.'}: {error.strerror or error}"
            ) from None
        for entry in entries:
            relative = prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                if entry.name in CACHE_DIRS:
                    continue
                listing.folders.add(relative)
                stack.append((relative + "/", Path(entry.path)))
            else:
                listing.files[relative] = entry
    return listing


def snapshot_allowed(workspace: Path, allow: Sequence[str]) -> dict[str, bytes]:
    """The bytes of every allowed file (a symlinked allowed file is refused; 8 MiB in all)."""
    files: dict[str, bytes] = {}
    total = 0
    for relative, entry in _list_workspace(workspace).files.items():
        if not is_allowed(relative, allow):
            continue
        if entry.is_symlink():
            raise InputError(
                f"allowed file {relative} is a symbolic link; allow regular files only"
            )
        if not entry.is_file(follow_symlinks=False):
            raise InputError(f"allowed file {relative} is not a regular file")
        try:
            data = Path(entry.path).read_bytes()
        except OSError as error:
            raise EnvironmentFailure(f"cannot read {relative}: {error.strerror or error}") from None
        total += len(data)
        if total > MAX_ALLOWED_BYTES:
            raise InputError(
                f"the allowed files exceed {MAX_ALLOWED_BYTES // (1024 * 1024)} MiB in all"
            )
        files[relative] = data
    return files


def outside_state(workspace: Path, allow: Sequence[str]) -> tuple[dict[str, str], set[str]]:
    """A fingerprint of every entry outside ``allow`` (``.git`` included) and the folder set."""
    listing = _list_workspace(workspace)
    state: dict[str, str] = {}
    for relative, entry in listing.files.items():
        if is_allowed(relative, allow):
            continue
        if len(state) >= MAX_OUTSIDE_FILES:
            raise InputError(
                f"the workspace has more than {MAX_OUTSIDE_FILES:,} files outside allow"
            )
        state[relative] = _fingerprint(relative, entry)
    return state, listing.folders


def _fingerprint(relative: str, entry: os.DirEntry[str]) -> str:
    try:
        if entry.is_symlink():
            return "symlink:" + os.readlink(entry.path)
        if entry.is_file(follow_symlinks=False):
            digest, _ = sha256_file(Path(entry.path))
            return "file:" + digest
    except OSError as error:
        raise EnvironmentFailure(f"cannot read {relative}: {error.strerror or error}") from None
    return "special"


@dataclass(frozen=True)
class OutsideChanges:
    added: list[str]
    modified: list[str]
    deleted: list[str]

    def __bool__(self) -> bool:
        return bool(self.added or self.modified or self.deleted)


def compare_outside(before: dict[str, str], after: dict[str, str]) -> OutsideChanges:
    return OutsideChanges(
        added=sorted(after.keys() - before.keys()),
        modified=sorted(key for key in before.keys() & after.keys() if before[key] != after[key]),
        deleted=sorted(before.keys() - after.keys()),
    )


def restore_allowed(workspace: Path, allow: Sequence[str], kept: dict[str, bytes]) -> None:
    """Put the allowed files back exactly as kept: remove new ones, rewrite changed ones."""
    for relative, entry in _list_workspace(workspace).files.items():
        if is_allowed(relative, allow) and relative not in kept:
            _unlink(workspace, relative, Path(entry.path))
    for relative, data in kept.items():
        target = workspace.joinpath(*relative.split("/"))
        try:
            if target.is_symlink() or (target.exists() and not target.is_file()):
                target.unlink()
            if target.is_file() and target.read_bytes() == data:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        except OSError as error:
            raise EnvironmentFailure(
                f"cannot restore {relative}: {error.strerror or error}"
            ) from None


def _unlink(workspace: Path, relative: str, path: Path) -> None:
    try:
        path.unlink()
    except OSError as error:
        raise EnvironmentFailure(f"cannot remove {relative}: {error.strerror or error}") from None


def remove_added(workspace: Path, added: Sequence[str], folders_before: set[str]) -> None:
    """Delete files the proposer created outside ``allow`` and the folders it made for them."""
    for relative in added:
        _unlink(workspace, relative, workspace.joinpath(*relative.split("/")))
    made = sorted(
        {
            "/".join(relative.split("/")[:depth])
            for relative in added
            for depth in range(1, relative.count("/") + 1)
        }
        - folders_before,
        key=lambda folder: -folder.count("/"),
    )
    for folder in made:
        try:
            workspace.joinpath(*folder.split("/")).rmdir()
        except OSError:
            continue  # not empty: something else lives there now; leave it for the user


# -- patches ----------------------------------------------------------------------------------


def unified_patch(before: dict[str, bytes], after: dict[str, bytes]) -> str:
    """A unified diff of the allowed files, file by file in path order ('' when identical)."""
    chunks: list[str] = []
    for relative in sorted(before.keys() | after.keys()):
        old = before.get(relative)
        new = after.get(relative)
        if old == new:
            continue
        old_name = f"a/{relative}" if old is not None else "/dev/null"
        new_name = f"b/{relative}" if new is not None else "/dev/null"
        try:
            old_lines = (old or b"").decode("utf-8").splitlines()
            new_lines = (new or b"").decode("utf-8").splitlines()
        except UnicodeDecodeError:
            chunks.append(f"Binary files {old_name} and {new_name} differ\n")
            continue
        lines = list(
            difflib.unified_diff(old_lines, new_lines, old_name, new_name, lineterm="", n=3)
        )
        if not lines:
            # Only line endings or a final newline changed; still a change.
            lines = [f"--- {old_name}", f"+++ {new_name}", "@@ line endings changed @@"]
        chunks.append("\n".join(lines) + "\n")
    return "".join(chunks)


def added_text(patch: str) -> str:
    """The lines a patch adds (without the ``+``), one per line."""
    return "\n".join(
        line[1:]
        for line in patch.splitlines()
        if line.startswith("+") and not line.startswith("+++ ")
    )


def patch_hits(
    patch: str, baseline: Run, held_out_ids: Sequence[str], min_chars: int
) -> list[dict[str, Any]]:
    """Case texts (inputs, expected answers) that the patch's added lines contain, using the
    harness leakage scan over the added lines only."""
    data = added_text(patch).encode("utf-8")
    scanned = HarnessFile(label="patch.diff", data=data, sha256=sha256_bytes(data))
    leakage = scan_leakage((baseline,), (scanned,), min_chars, frozenset(held_out_ids))
    return [
        {
            "case_id": hit["case_id"],
            "partition": hit["partition"],
            "role": hit["role"],
            "text": hit["text"],
        }
        for hit in leakage["hits"]
    ]


# -- the brief handed to the proposer ----------------------------------------------------------


def failure_brief(
    run: Run, label: str, tuning_ids: Sequence[str], history: Sequence[Run], iteration: int
) -> dict[str, Any]:
    """steps/NN/tuning-failures.json: the last kept result's failing TUNING cases with triage,
    case text, evidence and a few outputs. Held-out cases are never included."""
    failures = []
    for row in triage_cases(run, tuning_ids, history):
        case_id = row.case_id
        materials = run.material.get(case_id, [])
        checks = {}
        for check in row.checks:
            attempts = run.cases[case_id][check]
            checks[check] = {
                "failed_attempts": sum(1 for attempt in attempts if attempt.passed is not True),
                "attempts": len(attempts),
                "evidence": sorted(
                    {a.evidence for a in attempts if a.passed is not True and a.evidence}
                ),
            }
        outputs: list[str] = []
        for meta in run.samples.get(case_id, []):
            failed = any(meta.verdicts.get(check) is not True for check in row.checks)
            text = meta.output_text
            if failed and text is not None and text not in outputs:
                outputs.append(text)
            if len(outputs) == MAX_OUTPUTS_PER_CASE:
                break
        failures.append(
            {
                "case_id": case_id,
                "category": row.category,
                "next_step": row.next_step,
                "input": "\n".join(m.text for m in materials if m.role == "input"),
                "expected": "\n".join(m.text for m in materials if m.role == "expected"),
                "checks": checks,
                "outputs": outputs,
            }
        )
    return {
        "schema_version": TUNING_FAILURES_SCHEMA,
        "iteration": iteration,
        "kept": label,
        "held_out_excluded": True,
        "rules": list(BRIEF_RULES),
        "failures": failures,
    }


# -- commands ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CommandOutcome:
    problem: str | None
    """None when the command exited 0 within its limits, else what went wrong."""


def run_command(
    arguments: Sequence[str], cwd: Path, timeout: float, log_stem: Path
) -> CommandOutcome:
    """Run one argument vector (no shell) in ``cwd`` with the caller's environment; stdout and
    stderr go to ``<log_stem>.stdout``/``.stderr``. Non-zero exit, a timeout, a missing
    executable or more than 8 MiB of output are failures; the whole process group is killed."""
    log_stem.parent.mkdir(parents=True, exist_ok=True)
    out_path = log_stem.with_name(log_stem.name + ".stdout")
    err_path = log_stem.with_name(log_stem.name + ".stderr")
    with out_path.open("wb") as out, err_path.open("wb") as err:
        try:
            process = subprocess.Popen(
                list(arguments),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        except OSError as error:
            return CommandOutcome(f"could not start {arguments[0]!r}: {error.strerror or error}")
        deadline = time.monotonic() + timeout
        problem: str | None = None
        while True:
            try:
                code = process.wait(timeout=_POLL_SECONDS)
                break
            except subprocess.TimeoutExpired:
                if max(_size(out_path), _size(err_path)) > MAX_COMMAND_OUTPUT:
                    problem = f"wrote more than {MAX_COMMAND_OUTPUT // (1024 * 1024)} MiB of output"
                elif time.monotonic() > deadline:
                    problem = f"timed out after {timeout:g} s"
                if problem is not None:
                    _kill_group(process)
                    process.wait()
                    return CommandOutcome(problem)
            except BaseException:
                _kill_group(process)
                process.wait()
                raise
        _kill_group(process)  # leftovers of a finished command must not keep writing
    if max(_size(out_path), _size(err_path)) > MAX_COMMAND_OUTPUT:
        return CommandOutcome(
            f"wrote more than {MAX_COMMAND_OUTPUT // (1024 * 1024)} MiB of output"
        )
    if code != 0:
        return CommandOutcome(f"exited with status {code}")
    return CommandOutcome(None)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


# -- the loop ---------------------------------------------------------------------------------


@dataclass
class LoopResult:
    """What the loop ended with; the CLI maps ``merge_recommended`` to the exit code."""

    output: Path
    status_reason: str
    kept: str
    recommendation: str
    merge_recommended: bool
    steps: list[dict[str, Any]]

    def final_lines(self) -> list[str]:
        out = str(self.output).rstrip("/") or "/"
        return [
            f"Stopped: {self.status_reason} | Kept: {self.kept} | "
            f"Recommendation: {self.recommendation}",
            f"Report: {out}/index.html",
            f"Loop: {out}/loop.json",
        ]


def step_line(step: dict[str, Any]) -> str:
    """``  i. <decision>[ (tuning ±pp, held out ±pp)][ — stalled]``"""
    line = f"  {step['iteration']}. {step['decision']}"
    if step.get("tuning") is not None and step.get("held_out") is not None:
        line += (
            f" (tuning {points(step['tuning']['delta'])}, held out "
            f"{points(step['held_out']['delta'])})"
        )
    if step.get("stalled"):
        line += " — stalled"
    return line


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


class _Loop:
    def __init__(self, config: LoopConfig, split: CaseSplit, output: Path) -> None:
        self.config = config
        self.split = split
        self.output = output
        self.workspace = config.workspace
        self.options = config.review_options()
        self.original: dict[str, bytes] = {}
        self.kept_files: dict[str, bytes] = {}
        self.results: list[tuple[str, Run]] = []
        self.kept_label = ""
        self.kept_run: Run | None = None
        self.kept_history: list[Run] = []
        self.steps: list[dict[str, Any]] = []
        self.status = "running"
        self.status_reason = "max_iterations"
        self.held_out_ids: list[str] = []
        self.tuning_ids: list[str] = []
        self.tuning_noise = 1.0
        self.baseline_block: dict[str, Any] | None = None
        self.extra: dict[str, Any] = {}

    # -- bookkeeping

    def write_loop(self) -> None:
        document = {
            "schema_version": RUN_SCHEMA,
            "status": self.status,
            "status_reason": self.status_reason if self.status == "complete" else None,
            "config_sha256": self.config.sha256,
            "workspace": self.config.workspace_text,
            "allow": list(self.config.allow),
            "objective": self.config.objective,
            "baseline": self.baseline_block,
            "steps": self.steps,
            **self.extra,
        }
        target = self.output / "loop.json"
        temporary = self.output / ".loop.json.partial"
        write_text(temporary, pretty_json(document))
        os.replace(temporary, target)

    def command_values(self) -> dict[str, str]:
        return {"python": sys.executable, "workspace": str(self.workspace)}

    def evaluate(self, name: str, log_stem: Path) -> Run:
        target = self.output / "results" / name
        values = {**self.command_values(), "output": str(target)}
        outcome = run_command(
            expand(self.config.evaluate, values),
            self.workspace,
            self.config.timeout_seconds,
            log_stem,
        )
        if outcome.problem is not None:
            raise EnvironmentFailure(
                f"the evaluate command {outcome.problem} (see {log_stem.relative_to(self.output)}"
                ".stderr)"
            )
        if not target.is_file() or target.is_symlink():
            raise InputError(f"the evaluate command did not write results/{name}")
        run = load_results(target, self.config.format, self.config.threshold)
        kept = result_file(name)
        if kept != name:
            # Kept under a passive name (results/00-baseline.xml.txt): see copy_suffix.
            os.replace(target, self.output / "results" / kept)
        return run

    # -- phases

    def start(self) -> None:
        config = self.config
        self.original = snapshot_allowed(self.workspace, config.allow)
        if not self.original:
            raise InputError(f"{config.path.name}: allow matches no file in the workspace")
        self.kept_files = dict(self.original)
        try:
            self.output.mkdir(parents=True)
        except FileExistsError:
            raise OutputError(
                f"output folder {self.output} already exists; choose a new one"
            ) from None
        except OSError as error:
            raise OutputError(f"cannot create {self.output}: {error.strerror or error}") from None
        try:
            for folder in ("results", "steps"):
                (self.output / folder).mkdir()
            for relative, data in self.original.items():
                write_bytes(self.output / "original" / relative, data)
            copy_verified(config.held_out, self.output / SPLIT_FILE, self.split.source.sha256)
            write_bytes(self.output / "config.toml", config.data)
            self.write_loop()
        except BaseException:
            # Nothing has run yet: leave no folder rather than a half-made one.
            shutil.rmtree(self.output, ignore_errors=True)
            raise

    def baseline(self) -> None:
        name = "00-baseline" + self.config.result_suffix
        run = self.evaluate(name, self.output / "steps" / "00" / "evaluate")
        self.held_out_ids, self.tuning_ids = partition(self.split, run.cases.keys())
        self.results.append((name, run))
        self.kept_label, self.kept_run, self.kept_history = name, run, [run]
        tuning = pooled_snapshot(run, self.tuning_ids)
        held = pooled_snapshot(run, self.held_out_ids)
        noise = {
            "tuning": noise_review(
                tuning.passed, tuning.assessed, self.config.min_effect
            ).to_json(),
            "held_out": noise_review(held.passed, held.assessed, self.config.min_effect).to_json(),
        }
        self.tuning_noise = float(noise["tuning"]["resolvable_change"])
        self.baseline_block = {
            "result": f"results/{name}",
            "tuning": tuning.to_json(),
            "held_out": held.to_json(),
            "noise": noise,
        }
        self.write_loop()

    def iterate(self, iteration: int) -> dict[str, Any]:
        config = self.config
        assert self.kept_run is not None
        number = f"{iteration:02d}"
        step_dir = self.output / "steps" / number
        failures_path = step_dir / "tuning-failures.json"
        allowed_path = step_dir / "allowed.json"
        write_json(
            failures_path,
            failure_brief(
                self.kept_run, self.kept_label, self.tuning_ids, self.kept_history, iteration
            ),
        )
        write_json(
            allowed_path,
            {
                "schema_version": ALLOWED_SCHEMA,
                "allow": list(config.allow),
                "files": sorted(self.kept_files),
            },
        )
        before, folders_before = outside_state(self.workspace, config.allow)
        values = {
            **self.command_values(),
            "failures": str(failures_path),
            "allowed": str(allowed_path),
            "iteration": str(iteration),
        }
        outcome = run_command(
            expand(config.propose, values),
            self.workspace,
            config.timeout_seconds,
            step_dir / "propose",
        )
        after, _ = outside_state(self.workspace, config.allow)
        changes = compare_outside(before, after)
        if changes:
            self.stop_for_outside_changes(changes, folders_before)
        step: dict[str, Any] = {
            "iteration": iteration,
            "decision": "",
            "reason": None,
            "patch": None,
            "result": None,
            "tuning": None,
            "held_out": None,
            "cost": None,
        }
        if outcome.problem is not None:
            restore_allowed(self.workspace, config.allow, self.kept_files)
            step["decision"] = "propose_failed"
            step["reason"] = (
                f"the propose command {outcome.problem} (see steps/{number}/propose.stderr)"
            )
            return step
        proposed = snapshot_allowed(self.workspace, config.allow)
        patch = unified_patch(self.kept_files, proposed)
        write_text(step_dir / "patch.diff", patch)
        step["patch"] = f"steps/{number}/patch.diff"
        if not patch:
            step["decision"] = "no_change"
            step["reason"] = "the propose command changed no allowed file"
            return step
        hits = patch_hits(patch, self.results[0][1], self.held_out_ids, config.leak_min_chars)
        held_hits = [hit for hit in hits if hit["partition"] == "held_out"]
        tuning_hits = [hit for hit in hits if hit["partition"] == "tuning"]
        if held_hits or (config.paste_check and tuning_hits):
            restore_allowed(self.workspace, config.allow, self.kept_files)
            leaked = held_hits or tuning_hits
            step["decision"] = "rollback_leakage" if held_hits else "rollback_pasted_case"
            cases = ", ".join(sorted({hit["case_id"] for hit in leaked}))
            which = "held-out" if held_hits else "tuning"
            step["reason"] = f"the patch adds {which} case text ({cases}); not evaluated"
            step["hits"] = leaked
            return step
        name = number + config.result_suffix
        run = self.evaluate(name, step_dir / "evaluate")
        if run.cases.keys() != self.results[0][1].cases.keys():
            raise InputError(
                f"results/{name} does not record the same cases as the baseline; the evaluate "
                "command must run every case each time"
            )
        self.results.append((name, run))
        comparison = compare_step(self.kept_run, run, self.split, self.options, name)
        step.update(
            decision=comparison.decision,
            reason=comparison.reason,
            result=f"results/{name}",
            compared_with=self.kept_label,
            tuning=comparison.tuning.to_json(),
            held_out=comparison.held_out.to_json(),
            cost=None if comparison.cost is None else comparison.cost.to_json(),
        )
        if comparison.kept:
            self.kept_files = proposed
            self.kept_label, self.kept_run = name, run
            self.kept_history.append(run)
        else:
            restore_allowed(self.workspace, config.allow, self.kept_files)
        return step

    def stop_for_outside_changes(self, changes: OutsideChanges, folders_before: set[str]) -> None:
        restore_allowed(self.workspace, self.config.allow, self.kept_files)
        remove_added(self.workspace, changes.added, folders_before)
        listed = (
            [f"added {path} (deleted)" for path in changes.added]
            + [f"modified {path}" for path in changes.modified]
            + [f"deleted {path}" for path in changes.deleted]
        )
        shown = "; ".join(listed[:MAX_LISTED_CHANGES])
        more = len(listed) - MAX_LISTED_CHANGES
        if more > 0:
            shown += f"; and {more} more"
        advice = (
            " Restore the modified or deleted files yourself."
            if changes.modified or changes.deleted
            else ""
        )
        self.extra["outside_changes"] = {
            "added": changes.added,
            "modified": changes.modified,
            "deleted": changes.deleted,
        }
        raise InputError(
            f"the propose command changed files outside allow: {shown}. The allowed files were "
            f"restored to the kept version.{advice}"
        )

    def run(self, on_line: Callable[[str], None]) -> None:
        config = self.config
        streak = 0
        for iteration in range(1, config.max_iterations + 1):
            step = self.iterate(iteration)
            if step["decision"] == "keep":
                streak = 0
            else:
                streak += 1
                if streak % config.stall_after == 0:
                    assert self.kept_run is not None
                    stall = stall_entry(
                        iteration,
                        self.kept_label,
                        self.kept_run,
                        self.kept_history,
                        self.tuning_ids,
                        self.tuning_noise,
                        with_rows=False,
                    )
                    step["stalled"] = True
                    step["stall"] = stall.to_json()
            self.steps.append(step)
            self.write_loop()
            on_line(step_line(step))
            if step.get("stall", {}).get("headroom_below_noise"):
                self.status_reason = "stopped_below_noise"
                break

    def finish(self) -> HillclimbReport:
        config = self.config
        restore_allowed(self.workspace, config.allow, self.kept_files)
        harness = [
            HarnessFile(label=relative, data=data, sha256=sha256_bytes(data))
            for relative, data in sorted(self.kept_files.items())
        ]
        labels = [name for name, _ in self.results]
        report = compute_hillclimb(
            [run for _, run in self.results],
            labels,
            self.split,
            self.options,
            harness=harness,
            created_at=timestamp(),
        )
        params = hillclimb_params(
            self.options,
            report.format,
            config.threshold,
            labels,
            [f"results/{result_file(name)}" for name in labels],
            harness_entries(harness),
        )
        write_review_files(self.output, report, params, harness)
        write_text(self.output / "final.diff", unified_patch(self.original, self.kept_files))
        self.status = "complete"
        self.extra.update(
            kept=self.kept_label,
            recommendation=report.recommendation,
            merge_recommended=report.merge_recommended,
        )
        self.write_loop()
        return report


def run_hillclimb_loop(
    config_path: Path,
    output: Path,
    *,
    trust_local: bool,
    on_line: Callable[[str], None] | None = None,
) -> LoopResult:
    """Run the whole loop (see the module docstring); raise an EvalArcError for exit 2."""
    if not trust_local:
        raise UsageError(
            "hillclimb-run runs the configured evaluate and propose commands on this host with "
            "your user privileges; pass --trust-local to allow it"
        )
    config = load_loop_config(config_path)
    check_new_output(output)
    absolute_output = Path(os.path.abspath(output))
    if _inside(absolute_output.resolve(), config.workspace):
        raise OutputError(f"output folder {output} is inside the workspace; choose one outside it")
    split = load_split(config.held_out)
    loop = _Loop(config, split, absolute_output)
    loop.start()
    show = on_line or (lambda line: None)
    try:
        loop.baseline()
        loop.run(show)
        report = loop.finish()
    except BaseException as error:
        # Leave the workspace as last kept and record why the loop stopped, then re-raise; a
        # second Ctrl-C waits until both are done (else loop.json.partial could be left).
        with signals_held():
            loop.status = "failed"
            loop.extra["error"] = (
                error.message if isinstance(error, EvalArcError) else type(error).__name__
            )
            try:
                restore_allowed(loop.workspace, config.allow, loop.kept_files)
            finally:
                loop.write_loop()
        raise
    return LoopResult(
        output=output,
        status_reason=loop.status_reason,
        kept=loop.kept_label,
        recommendation=report.recommendation,
        merge_recommended=report.merge_recommended,
        steps=loop.steps,
    )
