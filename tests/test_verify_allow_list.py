"""What a report folder or site may hold is an allow-list (issue 24, item 3).

A static host picks a file's type from its suffix, and about 180 suffixes are served as HTML,
XML, SVG or PDF, documents whose scripts run on the site's origin (an ``.xsd`` or ``.rss`` with
an XHTML-namespace ``<script>``). The old deny-list named 18 of them; ``.xsd`` got through
``verify`` and ``site build``. Now only :data:`evalarc.bundle.HELD_SUFFIXES` (and EvalArc's own
pages, rendered again) may be kept, and the same list is what ``site serve`` serves.
"""

from __future__ import annotations

import json
import mimetypes
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from evalarc.bundle import HELD_SUFFIXES, PAGE_SUFFIX, is_active
from evalarc.site.check import check_site
from evalarc.site.serve import CONTENT_TYPES

if TYPE_CHECKING:
    from conftest import Cli

SCRIPTED = (
    '<?xml version="1.0"?>\n<schema xmlns="http://www.w3.org/1999/xhtml">'
    "<script>alert(document.domain)</script></schema>\n"
)
"""An XML document whose XHTML-namespace script Chromium runs when it is served as XML."""


def _document_types() -> dict[str, str]:
    """Every suffix this machine's MIME table (Python's plus /etc/mime.types) serves as a
    document a browser may run script in: HTML, XML of any kind, SVG, PDF."""
    mimetypes.init()
    return {
        suffix: kind
        for suffix, kind in mimetypes.types_map.items()
        if any(part in kind for part in ("html", "xml", "svg", "pdf"))
    }


def test_no_allowed_suffix_is_served_as_a_document() -> None:
    documents = _document_types()
    assert len(documents) > 100  # the table is the real, long one
    assert not set(HELD_SUFFIXES) & set(documents)


def test_every_document_suffix_is_refused() -> None:
    documents = _document_types()
    assert {".rss", ".atom", ".kml", ".xml", ".svg", ".rs", ".xsl"} <= set(documents)
    missed = sorted(suffix for suffix in documents if not is_active(f"report{suffix}"))
    assert missed == []
    for name in ("schema.xsd", "grammar.rng", "feed.rss", "FEED.RSS", "a.b.xsd", "lib.rs"):
        assert is_active(name), name
    for name in ("baseline.xml.txt", "current.eval", "Makefile", "cases.jsonl", "notes.MD"):
        assert not is_active(name), name


def test_serve_serves_exactly_the_allow_list_and_pages() -> None:
    assert set(CONTENT_TYPES) == set(HELD_SUFFIXES) | {PAGE_SUFFIX}
    assert ".xml" not in CONTENT_TYPES


@pytest.fixture()
def junit_diff(cli: Cli, corpus: Path, tmp_path: Path) -> Path:
    out = tmp_path / "junit-diff"
    junit = corpus / "junit" / "pytest"
    result = cli("diff", junit / "baseline.xml", junit / "current.xml", "--output", out)
    assert result.exit_code in (0, 1), result.output
    assert cli("verify", out).exit_code == 0
    return out


def _rename_input(folder: Path, new_name: str) -> None:
    """Keep the current run's copy under ``new_name`` and name it so in params.json (what a
    forger of the folder can do: the copy's bytes and hash are unchanged)."""
    (folder / "current.xml.txt").rename(folder / new_name)
    params = json.loads((folder / "params.json").read_text(encoding="utf-8"))
    params["inputs"][1]["file"] = new_name
    (folder / "params.json").write_text(json.dumps(params, indent=2) + "\n", encoding="utf-8")


@pytest.mark.parametrize("name", ["current.xsd", "current.rng", "current.rss", "current.xml"])
def test_verify_refuses_an_input_kept_under_a_document_suffix(
    cli: Cli, junit_diff: Path, name: str
) -> None:
    _rename_input(junit_diff, name)
    result = cli("verify", junit_diff, "--json")
    assert result.exit_code == 2, result.output
    error = json.loads(result.stdout)["error"]
    assert f"{name} is not a file type a report folder or site may hold" in error


def test_site_build_refuses_a_folder_holding_an_xsd(
    cli: Cli, junit_diff: Path, tmp_path: Path
) -> None:
    _rename_input(junit_diff, "current.xsd")
    site = tmp_path / "site"
    result = cli("site", "build", junit_diff, "--output", site)
    assert result.exit_code == 2
    assert "current.xsd is not a file type a report folder or site may hold" in result.output
    assert not site.exists()


def test_site_check_refuses_any_file_outside_the_allow_list(
    cli: Cli, junit_diff: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    assert cli("site", "build", junit_diff, "--output", site).exit_code == 0
    assert check_site(site) == []
    planted = site / "reports" / "junit-diff" / "feed.rss"
    planted.write_text(SCRIPTED, encoding="utf-8")
    problems = [str(problem) for problem in check_site(site)]
    assert problems == [
        "reports/junit-diff/feed.rss: the file is not a file type a report folder or site may "
        + problems[0].split("may ", 1)[1]
    ]
    assert "(.rss: only" in problems[0]
    result = cli("verify", site)
    assert result.exit_code == 2
    shutil.rmtree(site)
