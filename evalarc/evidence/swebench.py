"""Case evidence from SWE-bench results: per instance, the report's patch status and its
FAIL_TO_PASS / PASS_TO_PASS tests split into failing and passing, or the reason it has no report
(evaluation error, infrastructure failure, empty patch), or, from a run summary, the list the
instance is in. Reads the report folder's copy: a run folder's bundle, a report.json or a
summary."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from evalarc.errors import EvalArcError
from evalarc.evidence.model import CaseEvidence, Section, SideEvidence
from evalarc.formats.swebench import (
    BUNDLE_KEY,
    is_folder_bundle,
    is_instance_report,
    is_run_summary,
    load_document,
)

_SUMMARY_LISTS = (
    ("resolved_ids", "resolved"),
    ("unresolved_ids", "unresolved"),
    ("error_ids", "evaluation error"),
    ("empty_patch_ids", "empty patch"),
    ("incomplete_ids", "not evaluated (no prediction)"),
)


def _report_sections(report: dict[str, Any]) -> list[Section]:
    resolved = report.get("resolved")
    head = Section("SWE-bench report", tone="ok" if resolved is True else "bad")
    for key in ("resolved", "patch_is_None", "patch_exists", "patch_successfully_applied"):
        head.add(key, report.get(key))
    if report.get("infra_failure"):
        head.tone = "warn"
        head.add("infrastructure failure", report.get("infra_failure_reason") or True)
    elif report.get("infra_failure_reason"):
        head.add("failure reason", report.get("infra_failure_reason"))
    sections = [head]
    status = report.get("tests_status")
    for group in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        tests = status.get(group) if isinstance(status, dict) else None
        if not isinstance(tests, dict):
            continue
        failing, passing = tests.get("failure") or [], tests.get("success") or []
        section = Section(group, tone="bad" if failing else "ok")
        section.add("failing", "\n".join(map(str, failing)), pre=True)
        section.add("passing", "\n".join(map(str, passing)), pre=True)
        sections.append(section)
    return sections


def read_swebench_evidence(path: Path, only: Collection[str] | None = None) -> CaseEvidence:
    try:
        document = load_document(path)
    except EvalArcError:
        return {}
    found: CaseEvidence = {}

    def keep(case: str, sections: list[Section]) -> None:
        if only is not None and case not in only:
            return
        side = found.setdefault(case, SideEvidence())
        for section in sections:
            side.add(section)

    if is_folder_bundle(document):
        assert isinstance(document, dict)
        for instance_id, entry in document["instances"].items():
            if not isinstance(entry, dict):
                continue
            if isinstance(entry.get("report"), dict):
                sections = _report_sections(entry["report"])
            else:
                sections = [Section("Evaluation error", tone="warn")]
                sections[0].add("reason", entry.get("error"), pre=True)
            sections[0].add("instance folder", f"{document[BUNDLE_KEY]}/{entry.get('folder')}")
            keep(instance_id, sections)
    elif is_instance_report(document):
        assert isinstance(document, dict)
        for instance_id, report in document.items():
            keep(instance_id, _report_sections(report))
    elif is_run_summary(document):
        assert isinstance(document, dict)
        reasons = document.get("failure_reasons")
        infra = set(document.get("infra_failure_ids") or [])
        for key, said in _SUMMARY_LISTS:
            for instance_id in document.get(key) or []:
                tone = (
                    "ok" if key == "resolved_ids" else "bad" if key == "unresolved_ids" else "warn"
                )
                section = Section("SWE-bench run summary", tone=tone)
                section.add("outcome", said)
                if instance_id in infra:
                    section.add("classified as", "likely infrastructure failure")
                if isinstance(reasons, dict):
                    section.add("failure reason", reasons.get(instance_id))
                keep(str(instance_id), [section])
    return found
