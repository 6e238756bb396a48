"""`evalarc site build`: bundles, index, docs, determinism, refusals, the page checker, the
data island and `site serve`.

Report folders of every kind are made once per session by bench/site.py's make_reports (the
same set the benchmark times) under the pytest base temp folder.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sys
import time
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

from evalarc.canonical import sha256_bytes
from evalarc.pages.case_views import CHUNK_DIR, CHUNK_NAME
from evalarc.pages.diff import table_island
from evalarc.reports.registry import KINDS, kind_named
from evalarc.site.build import (
    BUNDLE_MANIFEST,
    SITE_MANIFEST,
    SITE_SCHEMA,
    build_site,
)
from evalarc.site.check import check_html, check_site
from evalarc.site.serve import SiteServer
from evalarc.verify import verify_report_folder

if TYPE_CHECKING:
    from conftest import Cli

ROOT = Path(__file__).resolve().parents[1]
EPOCH = "1798761600"  # 2027-01-01T00:00:00Z


def bench() -> ModuleType:
    name = "evalarc_bench_site"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / "site.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def shared_reports(factory: pytest.TempPathFactory) -> Path:
    """One report folder of every kind, made once per test session."""
    folder = factory.getbasetemp() / "site-reports"
    if not (folder / ".done").exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        bench().make_reports(folder)
        (folder / ".done").write_text("", encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_reports(tmp_path_factory)


@pytest.fixture()
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "guide.md").write_text(
        "# Guide\n\nRead [the other page](other.md#details) and [the site](https://example.com)."
        "\n\n<script>alert(1)</script>\n\n[bad](javascript:alert(1))\n\n"
        "![diagram](https://example.com/x.png)\n\n"
        '```python\ndef f(x):\n    return "</script>" + x  # note\n```\n',
        encoding="utf-8",
    )
    (folder / "other.md").write_text("# Other\n\n## Details\n\nBack to [guide](guide.md).\n")
    return folder


class _Rows(HTMLParser):
    """The index table's rows: cell texts and the report link."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[list[str], str]] = []
        self._cells: list[str] | None = None
        self._href = ""
        self._in_body = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self._cells, self._href = [], ""
        elif tag == "td" and self._cells is not None:
            self._cells.append("")
        elif tag == "a" and self._cells is not None:
            self._href = dict(attrs).get("href") or ""

    def handle_data(self, data: str) -> None:
        if self._cells:
            self._cells[-1] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr" and self._cells is not None:
            self.rows.append(([cell.strip() for cell in self._cells], self._href))
            self._cells = None
        elif tag == "tbody":
            self._in_body = False


def index_rows(site: Path) -> list[tuple[list[str], str]]:
    parser = _Rows()
    html = (site / "index.html").read_text(encoding="utf-8")
    parser.feed(html[html.index('<table id="reports">') :])
    return parser.rows


@pytest.fixture(scope="session")
def site(reports: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("built") / "site"
    build_site([reports], out)
    return out


# --------------------------------------------------------------------------- the site


def test_index_lists_every_report_with_its_recomputed_verdict(reports: Path, site: Path) -> None:
    folders = sorted(path for path in reports.iterdir() if path.is_dir())
    assert len(folders) == 8
    rows = index_rows(site)
    assert [cells[1] for cells, _ in rows] == [folder.name for folder in folders]
    for (cells, href), folder in zip(rows, folders, strict=True):
        verdict = verify_report_folder(folder)
        assert cells[0] == ("✓ pass" if verdict["passed"] else "✗ fail"), folder.name
        kind = kind_named(verdict["kind"])
        assert kind is not None and cells[2] == kind.label
        assert href == f"reports/{folder.name}/index.html"
        assert (site / href).is_file()
    summaries = {cells[1]: cells[3] for cells, _ in rows}
    assert summaries["junit-diff"] == "Gate failed"
    assert summaries["audit"].startswith("Passed: the reference resolves and all 7")
    failing = sum(1 for cells, _ in rows if cells[0] == "✗ fail")
    assert f"8 report(s), {failing} with a failing verdict." in (site / "index.html").read_text()


def test_each_bundle_is_a_byte_copy_with_a_sha256_manifest(reports: Path, site: Path) -> None:
    manifest = json.loads((site / SITE_MANIFEST).read_text())
    assert manifest["schema_version"] == SITE_SCHEMA
    assert [entry["path"] for entry in manifest["reports"]] == [
        f"reports/{folder.name}" for folder in sorted(reports.iterdir()) if folder.is_dir()
    ]
    for entry in manifest["reports"]:
        bundle = site / entry["path"]
        source = reports / entry["label"]
        recorded = json.loads((bundle / BUNDLE_MANIFEST).read_text())
        assert sha256_bytes((bundle / BUNDLE_MANIFEST).read_bytes()) == entry["manifest_sha256"]
        on_disk = {
            path.relative_to(bundle).as_posix()
            for path in bundle.rglob("*")
            if path.is_file() and path.name != BUNDLE_MANIFEST
        }
        assert set(recorded["files"]) == on_disk
        originals = {
            path.relative_to(source).as_posix()
            for path in source.rglob("*")
            if path.is_file()
        }
        rendered = {name for name in on_disk if name.startswith(f"{CHUNK_DIR}/")}
        assert all(CHUNK_NAME.fullmatch(name) for name in rendered)
        # Every input, recording and param file travels along; beside them only case views,
        # which are the report folder's own chunks: its page and the site's are one rendering.
        own_chunks = {name for name in originals if name.startswith(f"{CHUNK_DIR}/")}
        assert own_chunks == rendered
        assert originals - own_chunks == on_disk - rendered
        for name, record in recorded["files"].items():
            data = (bundle / name).read_bytes()
            assert record == {"sha256": sha256_bytes(data), "bytes": len(data)}
            if name in rendered:
                assert name == f"{CHUNK_DIR}/{sha256_bytes(data)}.js"  # content-addressed
            elif name != "index.html":
                assert data == (source / name).read_bytes(), name
        # The bundled folder still verifies on its own.
        assert verify_report_folder(bundle)["kind"] == recorded["kind"]
    assert set(manifest["files"]) == {"index.html"}


def test_every_page_passes_the_checker_with_hashed_css_and_js(site: Path) -> None:
    assert check_site(site) == []
    pages = sorted(site.rglob("*.html"))
    assert len(pages) == 9
    for page in pages:
        html = page.read_text(encoding="utf-8").replace("&#39;", "'")
        assert "'unsafe-inline'" not in html
        assert "script-src 'sha256-" in html and "style-src 'sha256-" in html
        assert html.count("<script>") == 1


def test_same_inputs_give_byte_identical_sites(
    reports: Path, docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folders = sorted(path for path in reports.iterdir() if path.is_dir())
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    build_site(folders, tmp_path / "one", docs_dir=docs)
    build_site(list(reversed(folders)), tmp_path / "two", docs_dir=docs)
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    build_site([reports], tmp_path / "three", docs_dir=docs)

    def files(root: Path) -> dict[str, bytes]:
        return {
            path.relative_to(root).as_posix(): path.read_bytes()
            for path in root.rglob("*")
            if path.is_file()
        }

    one, two, three = files(tmp_path / "one"), files(tmp_path / "two"), files(tmp_path / "three")
    assert one == two
    assert "Built 2027-01-01T00:00:00Z (the builder's clock;" in one["index.html"].decode()
    # Without SOURCE_DATE_EPOCH only the build time differs: every report page and doc is equal.
    differing = sorted(name for name in one if one[name] != three[name])
    assert differing == ["index.html", "manifest.json"]


def test_one_registry_names_each_kind_once_with_its_own_files() -> None:
    names = [kind.name for kind in KINDS]
    assert len(names) == len(set(names))
    assert len({kind.report_file for kind in KINDS}) == len(KINDS)
    assert len({kind.schema for kind in KINDS}) == len(KINDS)
    for kind in KINDS:
        assert kind_named(kind.name) is kind
        assert re.fullmatch(r"evalarc\.[a-z-]+\.v[0-9]+", kind.schema), kind.schema
    assert kind_named("no-such-kind") is None


def test_cli_builds_and_reports(cli: Cli, reports: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    result = cli("site", "build", reports / "junit-diff", reports / "health", "--output", out,
                 "--title", "Nightly <b>reviews</b>")
    assert result.exit_code == 0, result.output
    assert f"Built {out}: 2 report(s), 2 with a failing verdict, 0 doc(s)" in result.stdout
    assert "junit-diff: diff, fail" in result.stderr
    html = (out / "index.html").read_text()
    assert "<h1>Nightly &lt;b&gt;reviews&lt;/b&gt;</h1>" in html


# --------------------------------------------------------------------------- refusals


def _no_leftovers(parent: Path) -> None:
    assert not [path.name for path in parent.iterdir() if path.name.startswith(".site")]


def test_refuses_an_existing_output_and_output_inside_an_input(
    cli: Cli, reports: Path, tmp_path: Path
) -> None:
    existing = tmp_path / "site"
    existing.mkdir()
    result = cli("site", "build", reports / "junit-diff", "--output", existing)
    assert result.exit_code == 2
    assert f"output folder {existing} already exists" in result.stderr
    inside = reports / "junit-diff" / "site"
    result = cli("site", "build", reports / "junit-diff", "--output", inside)
    assert result.exit_code == 2 and "is inside the input" in result.stderr
    assert not inside.exists()


@pytest.mark.parametrize("damage", ["report", "input", "symlink", "kind", "nothing"])
def test_refuses_bad_report_folders_and_writes_nothing(
    cli: Cli, reports: Path, tmp_path: Path, damage: str
) -> None:
    folder = tmp_path / "in" / "junit-diff"
    shutil.copytree(reports / "junit-diff", folder)
    expected = {
        "report": "diff.json differs from the recomputed diff report",
        "input": "current.xml.txt differs from the input the report recorded",
        "symlink": f"{folder}/link is a symlink; symlinks are refused",
        "kind": "params.json names an unknown report kind 'mystery'",
        "nothing": "holds no report folder",
    }[damage]
    if damage == "report":
        report = json.loads((folder / "diff.json").read_text())
        report["blocking_changes"] = 0
        (folder / "diff.json").write_text(json.dumps(report))
    elif damage == "input":
        (folder / "current.xml.txt").write_bytes((folder / "current.xml.txt").read_bytes() + b" ")
    elif damage == "symlink":
        (folder / "link").symlink_to(folder / "diff.json")
    elif damage == "kind":
        params = json.loads((folder / "params.json").read_text())
        params["kind"] = "mystery"
        (folder / "params.json").write_text(json.dumps(params))
    else:
        shutil.rmtree(folder)
        (tmp_path / "in" / "notes").mkdir()
    out = tmp_path / "site"
    result = cli("site", "build", tmp_path / "in", "--output", out)
    assert result.exit_code == 2, result.output
    assert expected in result.stderr
    assert result.stderr.count("\n") == 1  # one line
    if damage != "nothing":
        assert str(folder) in result.stderr  # the error names the folder
    assert not out.exists()
    _no_leftovers(tmp_path)


def test_refuses_bad_docs(cli: Cli, reports: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "bad name.md").write_text("# x\n")
    result = cli("site", "build", reports / "junit-diff", "--docs", docs, "--output",
                 tmp_path / "site")
    assert result.exit_code == 2 and "bad name.md: doc names may hold only" in result.stderr
    (docs / "bad name.md").unlink()
    (docs / "latin1.md").write_bytes(b"# caf\xe9\n")
    result = cli("site", "build", reports / "junit-diff", "--docs", docs, "--output",
                 tmp_path / "site")
    assert result.exit_code == 2 and "latin1.md is not UTF-8" in result.stderr
    assert not (tmp_path / "site").exists()


# --------------------------------------------------------------------------- docs


def test_docs_render_markdown_without_raw_html_or_external_links(
    reports: Path, docs: Path, tmp_path: Path
) -> None:
    out = tmp_path / "site"
    build_site([reports / "junit-diff"], out, docs_dir=docs)
    guide = (out / "docs" / "guide.html").read_text()
    assert (out / "docs" / "guide.md").read_bytes() == (docs / "guide.md").read_bytes()
    assert "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>" in guide  # raw HTML is text
    assert '<a href="other.html#details">the other page</a>' in guide
    assert '<span class="external">the site</span> (<code>https://example.com</code>)' in guide
    assert "javascript:" not in guide.replace("[bad](javascript:alert(1))", "")
    assert '<span class="img-alt">[image: diagram]</span>' in guide
    assert '<pre class="highlight"><code><span class="k">def</span>' in guide
    assert '<span class="s2">"&lt;/script&gt;"</span>' in guide
    assert '<h2 id="details">Details</h2>' in (out / "docs" / "other.html").read_text()
    index = (out / "index.html").read_text()
    assert '<a href="docs/guide.html">Guide</a>' in index
    assert check_site(out) == []


# --------------------------------------------------------------------------- the checker


def _page(body: str, *, head: str = "", policy: str = "default-src 'none'") -> str:
    return (
        f'<!doctype html><html><head><meta http-equiv="Content-Security-Policy" '
        f'content="{policy}">{head}</head><body>{body}<p id="here">x</p></body></html>'
    )


@pytest.mark.parametrize(
    ("html", "problem"),
    [
        (_page('<img src="https://evil.example/x.png">'), "points outside the page"),
        (_page('<a href="//evil.example/">x</a>'), "points outside the page"),
        (_page('<a href="javascript:alert(1)">x</a>'), "points outside the page"),
        (_page('<a href="missing.html">x</a>'), "missing.html does not exist"),
        (_page('<a href="#nowhere">x</a>'), "no element has id 'nowhere'"),
        (_page('<a href="page.html#nowhere">x</a>'), "page.html has no id 'nowhere'"),
        (_page('<a href="../outside.html">x</a>'), "leaves the site"),
        (_page('<p onclick="x()">x</p>'), "event handler attribute onclick"),
        (_page('<p style="color:red">x</p>'), "inline style attribute"),
        (_page('<script src="a.js"></script>'), "<script src> is not allowed"),
        (_page("<script>alert(1)</script>"), "inline <script> is not allowed by its hash"),
        (_page("", head="<style>p{}</style>"), "inline <style> is not allowed by its hash"),
        (_page('<script type="application/json">{x</script>'), "data island is not JSON"),
        (_page('<iframe src="page.html"></iframe>'), "<iframe> is not allowed"),
        (_page('<form action="page.html"></form>'), "<form> is not allowed"),
        (_page("", policy="default-src 'self'"), "does not set default-src 'none'"),
        (_page("", policy="default-src 'none'; script-src 'unsafe-inline'"), "allows 'unsafe"),
        (_page("", policy="default-src 'none'; img-src https://cdn.example"), "a host source"),
        ("<html><body></body></html>", "expected one Content-Security-Policy meta, found 0"),
    ],
)
def test_checker_finds_each_kind_of_problem(tmp_path: Path, html: str, problem: str) -> None:
    (tmp_path / "page.html").write_text(_page(""), encoding="utf-8")
    found = check_html(html, page=tmp_path / "index.html", root=tmp_path)
    assert any(problem in str(item) for item in found), found


def test_checker_accepts_a_clean_page(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "index.html").write_text('<p id="top">x</p>', encoding="utf-8")
    (tmp_path / "data.json").write_text("{}", encoding="utf-8")
    body = (
        '<a href="#here">a</a><a href="sub/">b</a><a href="sub/index.html#top">c</a>'
        '<a href="data.json">d</a><script type="application/json">{"a": "\\u003c/script"}</script>'
    )
    assert check_html(_page(body), page=tmp_path / "index.html", root=tmp_path) == []


# --------------------------------------------------------------------------- data island


def test_table_island_stores_repeating_columns_as_picks() -> None:
    rows: list[list[str | tuple[str, str]]] = [
        [("✗ regressed", "badge bad"), (f"case-{i}", "code"), "passed", "1/1", "0/1", f"e{i}"]
        for i in range(8)
    ]
    rows[3][0] = ("✓ improved", "badge ok")
    island = table_island(rows)
    assert island["count"] == 8
    kind, case, check = island["columns"][:3]
    assert kind == {
        "pick": [0, 0, 0, 1, 0, 0, 0, 0],
        "from": ["✗ regressed", "✓ improved"],
        "styles": ["badge bad", "badge ok"],
    }
    assert case == {"text": [f"case-{i}" for i in range(8)], "style": "code"}
    assert check == {"pick": [0] * 8, "from": ["passed"], "styles": [""]}
    assert table_island([]) == {"count": 0, "columns": []}


# --------------------------------------------------------------------------- serve


def _get(url: str, host: str | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url)
    if host is not None:
        request.add_header("Host", host)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def _wait(condition: object, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError("timed out waiting for the server")


def test_serve_rebuilds_on_change_and_keeps_the_last_good_build(
    reports: Path, tmp_path: Path
) -> None:
    inputs = tmp_path / "reports"
    inputs.mkdir()
    shutil.copytree(reports / "junit-diff", inputs / "junit-diff")
    lines: list[str] = []
    server = SiteServer([inputs], port=0, debounce_ms=100, on_line=lines.append)
    url = server.start()
    server.serve_in_background()
    try:
        assert server.watching.wait(60)
        assert url.startswith("http://127.0.0.1:")
        assert server._http is not None and server._http.server_address[0] == "127.0.0.1"
        status, headers, body = _get(url)
        assert status == 200 and b"1 report(s)" in body
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Referrer-Policy"] == "no-referrer"
        assert headers["Cache-Control"] == "no-store"
        assert headers["X-Frame-Options"] == "DENY"
        assert _get(url, host="evil.example:80")[0] == 421  # DNS rebinding
        assert _get(url + "reports/")[0] == 404  # no directory listing
        assert _get(url + "reports/junit-diff/")[0] == 200

        shutil.copytree(reports / "health", inputs / "health")
        _wait(lambda: server.generation == 2)
        assert b"2 report(s)" in _get(url)[2]

        report = json.loads((inputs / "health" / "health.json").read_text())
        report["warnings"] = 0
        (inputs / "health" / "health.json").write_text(json.dumps(report))
        _wait(lambda: server.last_error is not None)
        assert "health.json differs from the recomputed eval-health report" in server.last_error
        assert server.generation == 2
        assert any("still serving the last good build" in line for line in lines)
        assert b"2 report(s)" in _get(url)[2]  # the last good build is still served

        shutil.rmtree(inputs / "health")
        _wait(lambda: server.generation == 3)
        assert b"1 report(s)" in _get(url)[2]
        assert server.last_error is None
    finally:
        workspace = server.builds.workspace
        server.stop()
    assert not workspace.exists()


def test_serve_refuses_to_start_without_a_good_build(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    server = SiteServer([tmp_path / "empty"], port=0, on_line=lambda line: None)
    with pytest.raises(Exception, match="holds no report folder"):
        server.start()
    assert not server.builds.workspace.exists()


def test_cli_honours_source_date_epoch(
    cli: Cli, reports: Path, tmp_path: Path
) -> None:
    # The CLI entry point honours SOURCE_DATE_EPOCH like the library.
    result = cli("site", "build", reports / "junit-diff", "--output", tmp_path / "site",
                 env={**os.environ, "SOURCE_DATE_EPOCH": EPOCH})
    assert result.exit_code == 0
    index = (tmp_path / "site" / "index.html").read_text()
    assert "Built 2027-01-01T00:00:00Z (the builder's clock;" in index
