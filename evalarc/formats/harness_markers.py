"""Detect the agent-harness formats (SWE-bench, lm-eval, OpenAI Evals) from each file's own
markers, for :func:`evalarc.formats.load.detect_format`.

Only markers the producer always writes are used, never a file name: lm-eval's sample
lines start with ``doc_id`` and carry ``doc_hash``, ``filter`` and ``metrics`` (decided in
the loader once the first line's keys are known); an OpenAI Evals record log starts with
``{"spec": {...}}``; a SWE-bench ``report.json`` maps one instance id to ``patch_is_None``,
``patch_exists``, ``patch_successfully_applied`` and ``resolved``, and its run summary carries
``total_instances`` and the id lists. Each reader checks the rest of the shape and refuses
what does not fit.
"""

from __future__ import annotations

from pathlib import Path

from evalarc.canonical import strict_loads

MAX_SNIFF_BYTES = 16 * 1024 * 1024
"""A file with no deciding first member is parsed whole only up to this size (a report.json or
a run summary is far smaller)."""

_FIRST_MEMBERS: dict[tuple[str, type], str] = {
    ("spec", dict): "openai_evals",
}


def first_member_format(key: str, kind: type) -> str | None:
    """The harness whose files start with this member (key and type of value), if any."""
    return _FIRST_MEMBERS.get((key, kind))


def whole_document_format(path: Path) -> str | None:
    """ "swebench" for a small JSON document of SWE-bench's shapes; None otherwise."""
    from evalarc.formats.swebench import is_folder_bundle, is_instance_report, is_run_summary

    try:
        if path.stat().st_size > MAX_SNIFF_BYTES:
            return None
        document = strict_loads(path.read_bytes())
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    if is_instance_report(document) or is_run_summary(document) or is_folder_bundle(document):
        return "swebench"
    return None
