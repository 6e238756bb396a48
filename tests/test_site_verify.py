"""`evalarc verify site/`: a consistent site verifies (also after moving it); every kind of
tampering is exit 2 with one line naming the file, whether or not the attacker also rewrote the
SHA-256 manifests to match.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner, Result

from evalarc.canonical import pretty_json, sha256_bytes
from evalarc.cli import main
from evalarc.site.build import BUNDLE_MANIFEST, SITE_MANIFEST, build_site

ROOT = Path(__file__).resolve().parents[1]


def bench() -> ModuleType:
    name = "evalarc_bench_site"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / "site.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.getbasetemp() / "site-reports"
    if not (folder / ".done").exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        bench().make_reports(folder)
        (folder / ".done").write_text("", encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def pristine(reports: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    docs = tmp_path_factory.mktemp("docs")
    (docs / "guide.md").write_text("# Guide\n\nSee [other](other.md).\n", encoding="utf-8")
    (docs / "other.md").write_text("# Other\n\nText.\n", encoding="utf-8")
    out = tmp_path_factory.mktemp("pristine") / "site"
    build_site([reports], out, docs_dir=docs)
    return out


@pytest.fixture()
def site(pristine: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "site"
    shutil.copytree(pristine, copy, symlinks=True)
    return copy


def verify(path: Path, *extra: str) -> Result:
    return CliRunner().invoke(main, ["verify", str(path), *extra], catch_exceptions=False)


def refused(site: Path, *fragments: str) -> str:
    result = verify(site)
    assert result.exit_code == 2, result.output
    line = result.stderr
    assert line.startswith("evalarc: verification failed: ") and line.count("\n") == 1, line
    for fragment in fragments:
        assert fragment in line, line
    return line


def rehash(site: Path, bundle: str | None, name: str) -> None:
    """Rewrite the manifests so ``name`` (inside ``bundle``, or a loose file) hashes as listed:
    what an attacker who edits a file and its manifests consistently would do."""
    site_manifest = json.loads((site / SITE_MANIFEST).read_text())
    if bundle is None:
        data = (site / name).read_bytes()
        site_manifest["files"][name] = {"sha256": sha256_bytes(data), "bytes": len(data)}
    else:
        path = site / "reports" / bundle / BUNDLE_MANIFEST
        manifest = json.loads(path.read_text())
        data = (site / "reports" / bundle / name).read_bytes()
        manifest["files"][name] = {"sha256": sha256_bytes(data), "bytes": len(data)}
        path.write_text(pretty_json(manifest), encoding="utf-8")
        for entry in site_manifest["reports"]:
            if entry["path"] == f"reports/{bundle}":
                entry["manifest_sha256"] = sha256_bytes(path.read_bytes())
    (site / SITE_MANIFEST).write_text(pretty_json(site_manifest), encoding="utf-8")


def edit_json(path: Path, change: Callable[[dict[str, object]], None]) -> None:
    value = json.loads(path.read_text())
    change(value)
    path.write_text(pretty_json(value), encoding="utf-8")


# --------------------------------------------------------------------------- consistent


def test_a_consistent_site_verifies_and_keeps_verifying_after_a_move(
    site: Path, tmp_path: Path
) -> None:
    result = verify(site)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Verified site: ")
    moved = tmp_path / "elsewhere" / "published"
    moved.parent.mkdir()
    site.rename(moved)
    result = verify(moved, "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["verified"] is True and document["kind"] == "site"
    assert document["passed"] is False  # some reports fail their gate
    assert {entry["kind"] for entry in document["reports"]} == {
        "diff", "eval-health", "hillclimb-review", "evaluation", "audit", "trajectory"
    }
    assert document["docs"] == ["guide.md", "other.md"]
    every_file = {
        path.relative_to(moved).as_posix() for path in moved.rglob("*") if path.is_file()
    }
    assert set(document["files"]) == every_file
    assert verify(moved, "--require-accepted").exit_code == 1


# --------------------------------------------------------------------------- edited pages


def test_edited_report_page(site: Path) -> None:
    page = site / "reports/junit-diff/index.html"
    page.write_text(page.read_text().replace("Gate failed", "Gate passed"))
    refused(site, "reports/junit-diff/index.html differs from its SHA-256 in "
            "reports/junit-diff/evalarc-bundle.json")
    rehash(site, "junit-diff", "index.html")
    refused(site, "reports/junit-diff/index.html differs from the page rendered from its bundle")


def test_edited_index_and_doc_pages(site: Path) -> None:
    index = site / "index.html"
    index.write_text(index.read_text().replace("✗ fail", "✓ pass"))
    refused(site, "index.html differs from its SHA-256 in manifest.json")
    rehash(site, None, "index.html")
    refused(site, "index.html differs from the index rendered from manifest.json")


def test_edited_doc_source_and_page(site: Path) -> None:
    (site / "docs/other.md").write_text("# Other\n\nEdited.\n")
    refused(site, "docs/other.md differs from its SHA-256 in manifest.json")
    rehash(site, None, "docs/other.md")
    refused(site, "docs/other.html differs from the page rendered from docs/other.md")


# --------------------------------------------------------------------------- edited inputs


@pytest.mark.parametrize(
    ("bundle", "name", "recomputed"),
    [
        (
            "junit-diff",
            "current.xml.txt",
            "current.xml.txt differs from the input the report recorded",
        ),
        ("inspect-diff", "baseline.eval", "baseline.eval differs from the input"),
        ("inspect-diff", "split.json", "diff.json differs from the recomputed diff report"),
        ("health", "inputs/06.json", "inputs/06.json differs from the input"),
        ("hillclimb", "split.json", "hillclimb.json differs from the recomputed"),
    ],
)
def test_edited_input_copy(site: Path, bundle: str, name: str, recomputed: str) -> None:
    path = site / "reports" / bundle / name
    path.write_bytes(path.read_bytes() + b"\n")
    refused(site, f"reports/{bundle}/{name} differs from its SHA-256 in "
            f"reports/{bundle}/evalarc-bundle.json")
    rehash(site, bundle, name)
    # With the manifests rewritten, recomputation still catches it.
    refused(site, f"reports/{bundle}: {recomputed}")


def test_edited_recording_of_an_executed_run(site: Path) -> None:
    recordings = site / "reports/evaluation/recordings"
    name = sorted(path.name for path in recordings.glob("*.jsonl"))[0]
    path = recordings / name
    path.write_bytes(path.read_bytes() + b"\n")
    refused(site, f"reports/evaluation/recordings/{name} differs from its SHA-256")
    rehash(site, "evaluation", f"recordings/{name}")
    refused(site, "reports/evaluation: ")


def test_edited_report_json(site: Path) -> None:
    edit_json(site / "reports/health/health.json", lambda report: report.update(warnings=0))
    rehash(site, "health", "health.json")
    refused(site, "reports/health: health.json differs from the recomputed eval-health report")


# --------------------------------------------------------------------------- edited options


def test_edited_report_params(site: Path) -> None:
    edit_json(site / "reports/junit-diff/params.json", lambda params: params.update(threshold=0.5))
    refused(site, "reports/junit-diff/params.json differs from its SHA-256")
    rehash(site, "junit-diff", "params.json")
    refused(site, "reports/junit-diff: diff.json differs from the recomputed diff report")


def test_edited_audit_params(site: Path) -> None:
    edit_json(site / "reports/audit/params.json", lambda params: params.update(seeds=[41]))
    rehash(site, "audit", "params.json")
    refused(site, "reports/audit: ")


def test_edited_site_options(site: Path) -> None:
    edit_json(site / SITE_MANIFEST, lambda manifest: manifest.update(
        options={"title": "All green"}))
    refused(site, "index.html differs from the index rendered from manifest.json")
    edit_json(site / SITE_MANIFEST, lambda manifest: manifest.update(
        built_at="2030-01-01T00:00:00Z"))
    refused(site, "index.html differs from the index rendered from manifest.json")
    # A build time not of the builder's form is refused before anything is rendered.
    edit_json(site / SITE_MANIFEST, lambda manifest: manifest.update(built_at="2030-01-01"))
    refused(site, "manifest.json: built_at is not a UTC time of the form")


def test_edited_bundle_manifest_kind(site: Path) -> None:
    edit_json(site / "reports/audit" / BUNDLE_MANIFEST, lambda manifest: manifest.update(
        source="evaluation"))
    refused(site, f"reports/audit/{BUNDLE_MANIFEST} differs from the SHA-256 manifest.json "
            "records")


# --------------------------------------------------------------------------- removed, added


@pytest.mark.parametrize(
    "name",
    ["reports/junit-diff/summary.md", "reports/health/params.json", "docs/guide.html",
     "reports/audit/index.html", f"reports/hillclimb/{BUNDLE_MANIFEST}"],
)
def test_removed_file(site: Path, name: str) -> None:
    (site / name).unlink()
    refused(site, name)


def test_removed_bundle(site: Path) -> None:
    shutil.rmtree(site / "reports/evaluation")
    refused(site, "reports/evaluation/")


@pytest.mark.parametrize(
    "name",
    ["extra.html", "reports/junit-diff/notes.txt", "reports/new/index.html", "docs/new.md"],
)
def test_added_file(site: Path, name: str) -> None:
    path = site / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("<p>hello</p>\n")
    refused(site, f"{name} is not listed in any manifest of this site")


def test_added_file_listed_in_the_site_manifest(site: Path) -> None:
    (site / "extra.html").write_text("<p>hello</p>\n")
    rehash(site, None, "extra.html")
    refused(site, "manifest.json lists extra.html")


def test_added_symlink(site: Path) -> None:
    (site / "reports/junit-diff/link.xml").symlink_to(site / "reports/junit-diff/current.xml.txt")
    refused(site, "link.xml is a symlink")


# --------------------------------------------------------------------------- format


def test_newer_site_schema_is_refused_naming_both_versions(site: Path) -> None:
    edit_json(site / SITE_MANIFEST, lambda manifest: manifest.update(
        schema_version="evalarc.site.v2"))
    refused(site, "manifest.json is evalarc.site.v2, newer than this EvalArc reads "
            "(evalarc.site.v1)")


def test_unsafe_report_path_in_the_manifest(site: Path) -> None:
    def change(manifest: dict[str, object]) -> None:
        reports = manifest["reports"]
        assert isinstance(reports, list)
        reports[0]["path"] = "reports/../../etc"

    edit_json(site / SITE_MANIFEST, change)
    refused(site, "manifest.json: report path 'reports/../../etc' is not allowed")


def test_json_output_on_failure(site: Path) -> None:
    (site / "extra.txt").write_text("x")
    result = verify(site, "--json")
    assert result.exit_code == 2
    document = json.loads(result.stdout)
    assert document["verified"] is False
    assert document["error"] == "extra.txt is not listed in any manifest of this site"
