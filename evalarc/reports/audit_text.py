"""What ``evalarc audit`` prints: the summary lines of an audit report."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalarc.review.audit import audit_status, reference_status


def summary_lines(audit: Mapping[str, Any]) -> list[str]:
    """The two stdout lines of ``evalarc audit`` (the report path follows them)."""
    first = (
        f"Audit: {audit_status(audit)} | Reference: {reference_status(audit)} | "
        f"Negative controls detected: {audit['killed']}/{audit['total']}"
    )
    detection = audit["detection"]
    weakest = detection["weakest_margin"]
    second = f"Weakest detection margin: {'unavailable' if weakest is None else weakest} case(s)"
    single = detection["single_case_detections"]
    if single:
        second += (
            f" | Detected by a single case: {len(single)}/{audit['total']} ({', '.join(single)})"
        )
    return [first, second]
