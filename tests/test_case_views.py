"""Case evidence from the bundled inputs, its chunk files, and verify's check of them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalarc.canonical import sha256_bytes
from evalarc.errors import VerificationError
from evalarc.evidence import read_case_evidence
from evalarc.evidence.model import TEXT_BYTES, Section, SideEvidence, cut_text, mark_divergence
from evalarc.pages.case_views import (
    CHUNK_BYTES,
    CHUNK_NAME,
    build_case_views,
    chunk_bytes,
    parse_chunk,
)
from evalarc.site.build import BUNDLE_MANIFEST, SITE_MANIFEST, build_site
from evalarc.verify import verify_report_folder

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "recordings" / "examples" / "results-diff"


def _titles(side: SideEvidence) -> list[str]:
    return [section.title for section in side.sections]


def test_inspect_evidence_has_input_target_epochs_scorers_and_transcript() -> None:
    evidence = read_case_evidence(EXAMPLES / "inspect" / "current.eval", "inspect")
    side = evidence["refund-duplicate"]
    assert _titles(side)[:5] == [
        "Input",
        "Epoch 1 · output",
        "Epoch 1 · scorer includes",
        "Epoch 1 · scorer match",
        "Epoch 1 · transcript",
    ]
    items = {item.label: item.text for item in side.sections[0].items}
    assert items["target"] == "refund:1003:rejected"
    scorer = {item.label: item.text for item in side.sections[2].items}
    assert scorer == {
        "value": "I",
        "answer": "refund:1003:approved",
        "explanation": "refund:1003:approved",
    }
    # The JSON log and the .eval archive give the same evidence.
    same = read_case_evidence(EXAMPLES / "inspect" / "current.json", "inspect")
    assert {k: v.to_json() for k, v in same.items()} == {
        k: v.to_json() for k, v in evidence.items()
    }


def test_promptfoo_and_junit_evidence_use_the_readers_case_ids() -> None:
    promptfoo = read_case_evidence(EXAMPLES / "promptfoo" / "current.json", "promptfoo")
    side = promptfoo["duplicate refund is rejected"]
    head = {item.label: item.text for item in side.sections[0].items}
    assert head["output"].startswith("Refund approved: $80")
    assert json.loads(head["vars"])["order"] == "A-1003"
    # titled with the diff's check names
    assert [s.title for s in side.sections[1:]] == [
        "Repeat 1 · assertion icontains: already refunded",
        "Repeat 1 · assertion not-icontains: refund approved",
    ]
    junit = read_case_evidence(EXAMPLES / "junit" / "current.xml", "junit")
    failing = junit["refund_checks::test_policy_outcome[refund-duplicate]"]
    failure = {item.label: item.text for item in failing.sections[1].items}
    assert failing.sections[1].title == "Attempt 1 · failure"
    assert failure["message"].startswith("AssertionError: assert 'approved' == 'rejected'")
    assert "refund_checks.py:69: AssertionError" in failure["stack trace"]


def test_long_texts_are_cut_at_a_character_boundary_and_say_so() -> None:
    text = "é" * TEXT_BYTES  # 2 bytes each
    kept, full = cut_text(text)
    assert full == 2 * TEXT_BYTES and len(kept.encode("utf-8")) == TEXT_BYTES
    assert cut_text("short") == ("short", None)
    section = Section("s")
    section.add("output", "x" * (TEXT_BYTES + 10))
    assert section.to_json()["items"][0]["cut"] == TEXT_BYTES + 10


def test_first_divergence_is_marked_on_both_sides() -> None:
    def side(*steps: str) -> SideEvidence:
        transcript = Section("Epoch 1 · transcript", kind="transcript")
        for step in steps:
            transcript.add("assistant", step)
        return SideEvidence([transcript])

    base, cur = side("a", "b", "c"), side("a", "x", "c")
    mark_divergence(base, cur)
    assert [item.mark for item in base.sections[0].items] == ["", "diverge", ""]
    assert [item.mark for item in cur.sections[0].items] == ["", "diverge", ""]
    short, long = side("a"), side("a", "b")
    mark_divergence(short, long)
    assert [item.mark for item in long.sections[0].items] == ["", "diverge"]


def test_chunks_are_content_addressed_bounded_and_data_only() -> None:
    base = {f"c{n:05d}": SideEvidence([Section("s")]) for n in range(3000)}
    for number, side in enumerate(base.values()):
        side.sections[0].add("output", f"</script><b>{number}</b>" * 40)
    views = build_case_views(sorted(base), base, {}, ("b.json", "c.json"))
    assert len(views.files) > 1
    for name, data in views.files.items():
        assert CHUNK_NAME.fullmatch(name) and name == f"case-views/{sha256_bytes(data)}.js"
        assert b"<" not in data and b">" not in data
        assert parse_chunk(data) is not None
        assert len(data) < CHUNK_BYTES * 2
    again = build_case_views(sorted(base), base, {}, ("b.json", "c.json"))
    assert again.files == views.files and again.index == views.index
    index = views.index
    position = index["cases"].index("c02999")
    chunk = views.files[index["chunks"][index["chunk_of"][position]]]
    cases = parse_chunk(chunk)
    assert cases is not None and cases["c02999"]["current"] is None
    assert parse_chunk(b"alert(1);evalarcChunk({});\n") is None
    assert parse_chunk(chunk_bytes({"a": None}).replace(b"evalarcChunk(", b"eval(")) is None


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("case-views")
    done = subprocess.run(
        [sys.executable, "-m", "evalarc.cli", "diff", str(EXAMPLES / "junit" / "baseline.xml"),
         str(EXAMPLES / "junit" / "current.xml"), "--output", str(work / "junit-diff")],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 1, done.stderr
    build_site([work / "junit-diff"], work / "site")
    return work / "site"


def _rehash(site: Path, bundle: Path) -> None:
    """Rewrite both manifests to match the files on disk, as a forger would."""
    manifest = json.loads((bundle / BUNDLE_MANIFEST).read_text())
    manifest["files"] = {
        path.relative_to(bundle).as_posix(): {
            "sha256": sha256_bytes(path.read_bytes()), "bytes": path.stat().st_size
        }
        for path in sorted(bundle.rglob("*"))
        if path.is_file() and path.name != BUNDLE_MANIFEST
    }
    (bundle / BUNDLE_MANIFEST).write_text(json.dumps(manifest))
    top = json.loads((site / SITE_MANIFEST).read_text())
    for entry in top["reports"]:
        data = (site / entry["path"] / BUNDLE_MANIFEST).read_bytes()
        entry["manifest_sha256"] = sha256_bytes(data)
    (site / SITE_MANIFEST).write_text(json.dumps(top))


def test_verify_renders_chunks_again_and_refuses_forged_or_extra_ones(
    site: Path, tmp_path: Path
) -> None:
    assert verify_report_folder(site)["kind"] == "site"
    forged = tmp_path / "forged"
    shutil.copytree(site, forged)
    bundle = forged / "reports" / "junit-diff"
    chunk = next((bundle / "case-views").glob("*.js"))
    chunk.write_bytes(chunk.read_bytes().replace(b"AssertionError", b"AssertionOkay!"))
    _rehash(forged, bundle)
    with pytest.raises(VerificationError, match="differs from the file rendered from its bundle"):
        verify_report_folder(forged)
    extra = tmp_path / "extra"
    shutil.copytree(site, extra)
    bundle = extra / "reports" / "junit-diff"
    (bundle / "case-views" / f"{'0' * 64}.js").write_bytes(chunk_bytes({}))
    _rehash(extra, bundle)
    with pytest.raises(VerificationError, match="is not rendered from its bundle"):
        verify_report_folder(extra)


def test_the_page_checker_accepts_only_data_chunks(site: Path, tmp_path: Path) -> None:
    from evalarc.site.check import check_site

    assert check_site(site) == []
    copy = tmp_path / "copy"
    shutil.copytree(site, copy)
    folder = copy / "reports" / "junit-diff" / "case-views"
    code = b"evalarcChunk({});alert(1);evalarcChunk({\"cases\":{}});\n"
    (folder / f"{sha256_bytes(code)}.js").write_bytes(code)
    (copy / "reports" / "junit-diff" / "app.js").write_bytes(b"alert(1)\n")
    problems = [str(problem) for problem in check_site(copy)]
    assert len(problems) == 2
    assert "not evalarcChunk(<JSON>)" in problems[0] or "not evalarcChunk(<JSON>)" in problems[1]
    assert any("app.js: a script file that is not" in problem for problem in problems)
