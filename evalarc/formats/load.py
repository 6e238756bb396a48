"""Load one result file into a :class:`~evalarc.formats.model.Run`, detecting its format."""

from __future__ import annotations

import codecs
import hashlib
import math
from pathlib import Path

from evalarc.canonical import strict_loads
from evalarc.errors import InputError, UsageError
from evalarc.formats.archive import MEMBER_CAP, show_name
from evalarc.formats.budget import reading_budget
from evalarc.formats.evaluation import is_evaluation, resolve_evaluation_path
from evalarc.formats.harness_markers import first_member_format, whole_document_format
from evalarc.formats.inspect import top_level_member_types
from evalarc.formats.lmeval import is_samples_line, refuse_lmeval_results
from evalarc.formats.model import Run, Source
from evalarc.formats.registry import FORMAT_NAMES, format_choices, not_a_result_file, reader_named
from evalarc.formats.swebench import is_run_folder, read_run_folder

MAX_RESULT_BYTES = 512 * 1024 * 1024
"""A result file larger than this is refused before it is read."""

MAX_VALUE_BYTES = MEMBER_CAP
"""The longest run of bytes without a ``"`` (JSON) or a ``<`` (XML) a result file may hold: one
string, number or tag that large is refused before a parser builds it (a 200 MB case id would
cost several times its size in memory). The same cap as one ``.eval`` member."""
MAX_CASE_ID_CHARS = 1024 * 1024
"""A case id longer than this is refused (one written with escapes passes the run check)."""

ZIP_MAGIC = b"PK\x03\x04"
HEAD_BYTES = 64
"""How much of a file detection looks at before it parses anything."""
_BOM = b"\xef\xbb\xbf"
_WIDE_BOMS = (b"\xff\xfe", b"\xfe\xff")
_CHUNK = 1 << 20
_MARKERS = (b'"', b"<")


def detect_format(path: Path, head: bytes) -> str:
    """Name the format of ``path`` from its suffix and first bytes (JSON is parsed only when the
    cheap signals do not decide). A file of none of them is refused with the one line of
    :func:`~evalarc.formats.registry.not_a_result_file`: no ``--format`` would read it, so the
    line says what EvalArc reads instead. JSON that breaks off is still "not JSON" (a truncated
    log of a known format should be named as one)."""
    if path.suffix == ".eval" or head.startswith(ZIP_MAGIC):
        return "inspect"
    if path.suffix == ".xml" or head.lstrip().startswith(b"<"):
        return "junit"
    problem = _not_json_text(head)
    if problem is not None:
        raise InputError(not_a_result_file(path, problem))
    # Stream the top-level members instead of parsing a (possibly huge) log twice: an Inspect
    # log names its `eval` object in its first few keys, so detection stops there.
    saw_results = saw_schema = False
    keys: set[str] = set()
    first = ""
    for index, (key, kind) in enumerate(top_level_member_types(path)):
        if index == 0 and (harness := first_member_format(key, kind)) is not None:
            return harness
        first = key if index == 0 else first
        keys.add(key)
        if key == "eval" and kind is dict:
            return "inspect"
        if key == "results" and kind is dict and not saw_schema:
            # Inspect writes `eval` before `results` (also with sorted keys); an EvalArc
            # evaluation starts with schema_version. Deciding here spares a walk of every row.
            if index == 0:
                refuse_lmeval_results(path)  # lm-eval's results_*.json starts with `results`
            return "promptfoo"
        saw_results = saw_results or (key == "results" and kind is dict)
        saw_schema = saw_schema or (key == "schema_version" and kind is str)
    problem = ""
    if saw_schema:
        document = _parse_json_file(path)
        if is_evaluation(document):
            return "evaluation"
        assert isinstance(document, dict)
        problem = f"schema_version {show_name(str(document.get('schema_version')))}"
    if saw_results:
        return "promptfoo"
    if first == "doc_id" and is_samples_line(dict.fromkeys(keys)):
        return "lmeval"
    if not saw_schema and (harness := whole_document_format(path)) is not None:
        return harness
    raise InputError(not_a_result_file(path, problem))


def _not_json_text(head: bytes) -> str | None:
    """What the first bytes of a file show it is when no JSON document can start there ("" for
    text of no known kind); None when it may be JSON (or UTF-16 text, which the JSON reader
    refuses by name)."""
    if not head:
        return "an empty file"
    if head.startswith(_WIDE_BOMS):
        return None
    start = head.removeprefix(_BOM).lstrip(b" \t\r\n")
    if not start:
        return "only whitespace" if len(head) < HEAD_BYTES else None
    if start[:1] in (b"{", b"["):
        return None
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return "binary data"
    return "binary data" if b"\x00" in head else ""


def _parse_json_file(path: Path) -> object:
    try:
        return strict_loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError) as error:
        raise InputError(f"{path} is not JSON: {error}") from None


def load_results(path: Path, format: str = "auto", threshold: float = 1.0) -> Run:
    """Read ``path`` as ``format`` (or detect it) into the shared model.

    Raises InputError naming the file for anything unusable; never returns a run without cases.
    """
    if format != "auto" and format not in FORMAT_NAMES:
        raise UsageError(f"unknown format {format!r}; use {format_choices()}")
    if not math.isfinite(threshold):
        raise UsageError("--threshold must be a finite number")
    path = resolve_evaluation_path(path)
    if not path.exists():
        raise InputError(f"{path} does not exist")
    if path.is_dir() and not path.is_symlink():
        if format in ("auto", "swebench") and is_run_folder(path):
            with reading_budget(str(path), 0):
                run = read_run_folder(path, threshold)
            return _checked(run, path)
        raise InputError(f"{path} is a directory, not a result file (or an evaluation folder)")
    if path.is_symlink() or not path.is_file():
        raise InputError(f"{path} is not a regular file")
    size = path.stat().st_size
    if size > MAX_RESULT_BYTES:
        raise InputError(f"{path} exceeds {MAX_RESULT_BYTES} bytes")
    digest, longest_runs = _digest_and_runs(path)
    source = Source(name=path.name, sha256=digest)
    with path.open("rb") as handle:
        head = handle.read(HEAD_BYTES)
    marker = _value_marker(path, head, format)
    if marker is not None and longest_runs[marker] > MAX_VALUE_BYTES:
        raise InputError(
            f"{path} holds a value longer than {MAX_VALUE_BYTES} bytes "
            "(one string, number or tag that large is refused)"
        )
    chosen = detect_format(path, head) if format == "auto" else format
    try:
        with reading_budget(str(path), size):
            run = _read(path, source, threshold, chosen)
    except InputError as error:
        raise _with_whole_path(error, path) from None
    return _checked(run, path)


def _checked(run: Run, path: Path) -> Run:
    if not run.cases:
        raise InputError(f"{path} contains no scored cases")
    longest = max(run.cases, key=len)
    if len(longest) > MAX_CASE_ID_CHARS:
        raise InputError(
            f"{path}: case id {show_name(longest)} is longer than {MAX_CASE_ID_CHARS} characters"
        )
    return run


def _with_whole_path(error: InputError, path: Path) -> InputError:
    """A reader's refusal that names the file by its base name, renamed to the path as given,
    so ``a/results.json`` and ``b/results.json`` are told apart."""
    message = error.message
    whole = str(path)
    if whole != path.name and message.startswith(path.name) and not message.startswith(whole):
        return InputError(whole + message[len(path.name) :])
    return error


def _read(path: Path, source: Source, threshold: float, chosen: str) -> Run:
    return reader_named(chosen).read(path, source, threshold)


def _digest_and_runs(path: Path) -> tuple[str, dict[bytes, int]]:
    """SHA-256 of the file and, for ``"`` and ``<``, the longest run of bytes without it (runs
    inside one chunk are shorter than a chunk, far below the cap, so only edges are tracked)."""
    digest = hashlib.sha256()
    current = dict.fromkeys(_MARKERS, 0)
    longest = dict.fromkeys(_MARKERS, 0)
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            for marker in _MARKERS:
                first = chunk.find(marker)
                if first < 0:
                    current[marker] += len(chunk)
                else:
                    longest[marker] = max(longest[marker], current[marker] + first)
                    current[marker] = len(chunk) - 1 - chunk.rfind(marker)
                longest[marker] = max(longest[marker], current[marker])
    return digest.hexdigest(), longest


def _value_marker(path: Path, head: bytes, format: str) -> bytes | None:
    """The byte that must recur in a file of this format: ``<`` for XML, ``"`` for JSON, none
    for a ZIP archive (its members are capped one by one)."""
    if head.startswith(ZIP_MAGIC) or (path.suffix == ".eval" and format in ("auto", "inspect")):
        return None
    if format == "junit" or (
        format == "auto" and (path.suffix == ".xml" or head.lstrip().startswith(b"<"))
    ):
        return b"<"
    return b'"'
