"""What one kind of report is, in one place: its name and label, its versioned schema and report
file, how ``verify`` recomputes and checks a folder of it, what it says when verified, and its
page. :mod:`evalarc.reports.registry` lists every kind; ``verify``, the site builder and the CLI
read only that list."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from evalarc.bundle import Derived, EvidenceFolder, text_bytes, write_bytes
from evalarc.pages.view import PageView, render_view


class StreamedReport(Protocol):
    """A recomputed report too large to hold as JSON: it writes its file's text in pieces."""

    def write_json(self, write: Callable[[str], object]) -> None: ...


@dataclass(frozen=True)
class ReportKind:
    """One kind of report folder (see :mod:`evalarc.reports.check` for the rule ``verify`` applies).

    ``recompute(folder, params, recorded)`` rebuilds the report from the folder's own inputs and
    recorded options with the same compute function the writing command used; ``summarize``
    turns a verified report into the kind's summary fields, including ``passed``.
    """

    name: str
    """``params.json`` ``kind``."""
    label: str
    """What the site's index and ``verify`` call this kind of report."""
    schema: str
    """The report JSON's ``schema_version`` (versioned: ``evalarc.<kind>.vN``)."""
    report_file: str
    page: Callable[[EvidenceFolder, dict[str, Any], dict[str, Any]], PageView]
    """The page of a verified folder, built from the folder (its preserved inputs), its
    options and the report: the report folder's ``index.html`` and the site page are this one
    rendering."""
    recompute: Callable[
        [EvidenceFolder, dict[str, Any], dict[str, Any]], dict[str, Any] | StreamedReport
    ]
    """The report as the file must hold it: its JSON object (written with ``pretty_json``, the
    recorded volatile keys taken over at their positions), or for a kind with :attr:`bulk` a
    :class:`StreamedReport`."""
    summarize: Callable[[dict[str, Any]], dict[str, Any]]
    derive: Callable[[EvidenceFolder, dict[str, Any], dict[str, Any]], Derived] | None = None
    """Every file the writing command derives from the report besides its page (summary, case
    lines, failure lists, events) by name: its exact bytes, or a check of its bytes returning a
    problem or None. Called with the verified report; a derived file present in a folder and not
    listed here (nor the page and its chunks, which :attr:`page` renders) is refused."""
    volatile: tuple[tuple[str, ...], ...] = ((),)
    """Where the report's ``created_at``/``evalarc_version`` live (paths of keys; ``*`` is every
    list item): only there are they ignored by the comparison."""
    informational: frozenset[str] = frozenset()
    """params.json options recorded for the reader that recomputation does not need."""
    bulk: frozenset[str] = frozenset()
    """Top-level keys of a report that may be large (a diff's rows and groups): ``verify``
    reads the report without them (:func:`evalarc.bundle.load_report_head`) and compares the
    whole file with the recomputed report's streamed text."""
    records: tuple[str, ...] = ()
    """Names (or folder prefixes ending in ``/``) of process records a command keeps beside the
    report (``hillclimb-run``'s loop log, patches, command output): ``verify`` lists them as
    records it cannot check, and a site refuses them."""


PAGE_FILE = "index.html"


def page_files(
    kind: ReportKind, folder: EvidenceFolder, params: dict[str, Any], report: dict[str, Any]
) -> dict[str, bytes]:
    """A report folder's page and the files beside it (evidence chunks), by relative path:
    the kind's page rendered exactly as a site renders it, without the link home."""
    view = kind.page(folder, params, report)
    return {PAGE_FILE: text_bytes(render_view(view, home=None)), **view.files}


def write_page(
    staging: Path, kind: ReportKind, params: dict[str, Any], report: dict[str, Any]
) -> None:
    """Write the page of the report folder being staged, built from the files already in it
    (so it is the page ``verify`` and a site derive from the same folder)."""
    for name, data in page_files(kind, EvidenceFolder(staging), params, report).items():
        target = staging / name
        target.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(target, data)
