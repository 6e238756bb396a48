"""Free text on a verified site (issue 24, item 9): the docs, the title and the build time.

No report vouches for them, so ``verify`` cannot recompute them. It now says so (the docs have
their own role, ``prose``, in ``verify --json``, on the index page and in the scope line) and
holds the title and the build time to the form ``site build`` writes: a title without control,
bidi or invisible characters, a build time that is a real UTC time written as the builder
writes it. Before, a site whose title was turned around by U+202E or whose build time read
"yesterday, all green" verified, as long as the index page was rendered to match.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from evalarc.canonical import pretty_json, sha256_bytes
from evalarc.clock import timestamp
from evalarc.site.build import built_at_problem

if TYPE_CHECKING:
    from conftest import Cli

EPOCH = {"SOURCE_DATE_EPOCH": "1700000000"}
BUILT_AT = "2023-11-14T22:13:20Z"
TITLE = "Nightly evals"


@pytest.fixture()
def site(cli: Cli, corpus: Path, tmp_path: Path) -> Path:
    out = tmp_path / "junit-diff"
    junit = corpus / "junit" / "pytest"
    result = cli("diff", junit / "baseline.xml", junit / "current.xml", "--output", out)
    assert result.exit_code in (0, 1), result.output
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Reading these reports\n\nAll green means ship.\n")
    site = tmp_path / "site"
    result = cli(
        "site", "build", out, "--docs", docs, "--title", TITLE, "--output", site, env=EPOCH
    )
    assert result.exit_code == 0, result.output
    return site


def _forge(site: Path, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` in the site manifest and the index, consistently: the index
    still equals the page rendered from the manifest, and the manifest lists its new hash."""
    index = site / "index.html"
    page = index.read_text(encoding="utf-8")
    assert old in page
    index.write_text(page.replace(old, new), encoding="utf-8")
    manifest_path = site / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    if manifest["options"]["title"] == old:
        manifest["options"]["title"] = new
    if manifest["built_at"] == old:
        manifest["built_at"] = new
    data = index.read_bytes()
    manifest["files"]["index.html"] = {"sha256": sha256_bytes(data), "bytes": len(data)}
    manifest_path.write_text(pretty_json(manifest), encoding="utf-8")


def test_docs_have_their_own_role_everywhere(cli: Cli, site: Path) -> None:
    result = cli("verify", site, "--json")
    assert result.exit_code == 0, result.output
    verdict = json.loads(result.stdout)
    roles = {name: row["role"] for name, row in verdict["files"].items()}
    assert roles["docs/guide.md"] == "prose" and roles["docs/guide.html"] == "prose"
    assert {role for name, role in roles.items() if not name.startswith("docs/")} == {
        "preserved",
        "regenerated",
    }
    assert "Docs are prose, not recomputed" in verdict["scope"]
    assert "title and build time are the builder's words" in verdict["scope"]
    human = cli("verify", site)
    assert human.exit_code == 0
    assert "and 2 files of docs (prose, not recomputed)" in human.stdout
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "Prose, not recomputed: written by whoever built this site" in index
    assert f"Built {BUILT_AT} (the builder's clock" in index


def test_a_consistent_forgery_of_neither_is_refused_by_form(cli: Cli, site: Path) -> None:
    # The forging tool itself: the same edit without a problem of form still verifies.
    _forge(site, TITLE, "Nightly evals, all reviewed")
    assert cli("verify", site).exit_code == 0


@pytest.mark.parametrize(
    ("title", "problem"),
    [
        ("Nightly \u202eslave neeb", "the title may not contain control characters"),
        ("Nightly\u200bevals", "the title may not contain control characters"),
        ("Nightly\tevals", "the title may not contain control characters"),
        ("x" * 121, "the title must be 1 to 120 characters"),
        ("   ", "the title must be 1 to 120 characters"),
    ],
)
def test_a_forged_title_is_refused(cli: Cli, site: Path, title: str, problem: str) -> None:
    _forge(site, TITLE, title)
    result = cli("verify", site, "--json")
    assert result.exit_code == 2, result.output
    assert json.loads(result.stdout)["error"].startswith(f"manifest.json: {problem}")


@pytest.mark.parametrize(
    "built_at",
    ["yesterday, all green", "2023-11-14 22:13:20", "2023-02-30T22:13:20Z", "2023-11-14T22:13:20"],
)
def test_a_forged_build_time_is_refused(cli: Cli, site: Path, built_at: str) -> None:
    _forge(site, BUILT_AT, built_at)
    result = cli("verify", site, "--json")
    assert result.exit_code == 2, result.output
    assert json.loads(result.stdout)["error"].startswith("manifest.json: built_at is not")


def test_site_build_refuses_a_title_a_reader_cannot_trust(
    cli: Cli, corpus: Path, tmp_path: Path
) -> None:
    junit = corpus / "junit" / "pytest"
    out = tmp_path / "junit-diff"
    cli("diff", junit / "baseline.xml", junit / "current.xml", "--output", out)
    for title in ("a\u202eb", "a\u200bb", "a\u2028b"):
        result = cli("site", "build", out, "--title", title, "--output", tmp_path / "site")
        assert result.exit_code == 2
        assert "--title may not contain control characters" in result.output
        assert not (tmp_path / "site").exists()


def test_the_builders_build_time_has_the_form_verify_requires(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for epoch in ("0", "1700000000", "253402300799"):
        monkeypatch.setenv("SOURCE_DATE_EPOCH", epoch)
        assert built_at_problem(timestamp()) is None
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    assert built_at_problem(timestamp()) is None
