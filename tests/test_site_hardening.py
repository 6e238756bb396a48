"""The rule of a verified site (issue 16) and safe-by-default serving and printing (issue 18).

Every attack is made the way a hostile publisher would: edit or add a file, then rewrite the
SHA-256 manifests to match. Each must end in exit 2 with one line naming the file, quickly.
"""

from __future__ import annotations

import http.client
import importlib.util
import json
import os
import shutil
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner, Result

from evalarc.canonical import pretty_json
from evalarc.cli import main
from evalarc.site.build import BUNDLE_MANIFEST, build_site
from evalarc.site.serve import SiteServer
from evalarc.terminal import terminal_text

ROOT = Path(__file__).resolve().parents[1]


def _bench(name: str) -> ModuleType:
    key = f"evalarc_bench_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, ROOT / "bench" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


@pytest.fixture(scope="session")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.getbasetemp() / "hardening-reports"
    if not (folder / ".done").exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        _bench("site").make_reports(folder)
        (folder / ".done").write_text("", encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def pristine(reports: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hardening") / "site"
    build_site([reports], out)
    return out


@pytest.fixture()
def site(pristine: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "site"
    shutil.copytree(pristine, copy, symlinks=True)
    return copy


def verify(path: Path, *extra: str) -> Result:
    return CliRunner().invoke(main, ["verify", str(path), *extra], catch_exceptions=False)


def refused(path: Path, *fragments: str, seconds: float = 60) -> str:
    started = time.monotonic()
    result = verify(path)
    elapsed = time.monotonic() - started
    assert result.exit_code == 2, result.output
    line = result.stderr
    assert line.startswith("evalarc: verification failed: ") and line.count("\n") == 1, line
    for fragment in fragments:
        assert fragment in line, line
    assert elapsed < seconds, f"took {elapsed:.1f} s"
    return line


def reseal(site: Path, bundle: str, *names: str) -> None:
    """Rewrite the bundle manifest and the site manifest so ``names`` hash as listed."""
    _bench("attacks").reseal(site, bundle, *names)


def edit_text(path: Path, change: Callable[[str], str]) -> None:
    before = path.read_text(encoding="utf-8")
    after = change(before)
    assert after != before
    path.write_text(after, encoding="utf-8")


# --------------------------------------------------------------------------- derived files


def _swap_first_lines(text: str) -> str:
    lines = text.splitlines(True)
    return "".join([lines[1], lines[0], *lines[2:]])


@pytest.mark.parametrize(
    ("bundle", "name", "change"),
    [
        ("junit-diff", "summary.md", lambda text: text + "Gate passed.\n"),
        ("hillclimb", "tuning-failures.json", lambda text: text.replace('"', '"x', 1)),
        ("health", "cases.jsonl", lambda text: text[: text.index("\n") + 1]),
        ("evaluation", "events.jsonl", lambda text: _swap_first_lines(text)),
        ("audit", "events.jsonl", lambda text: "".join(sorted(text.splitlines(True))[1:])),
        ("audit", "evaluations/reference.json", lambda text: text.replace("\n", "\n ", 1)),
    ],
)
def test_a_resealed_derived_file_is_rendered_again_and_refused(
    site: Path, bundle: str, name: str, change: Callable[[str], str]
) -> None:
    edit_text(site / "reports" / bundle / name, change)
    reseal(site, bundle, name)
    refused(site, f"reports/{bundle}: ", name)


def test_a_derived_file_of_a_report_folder_is_checked_too(reports: Path, tmp_path: Path) -> None:
    folder = tmp_path / "junit-diff"
    shutil.copytree(reports / "junit-diff", folder)
    edit_text(folder / "summary.md", lambda text: text + "All good.\n")
    refused(folder, "summary.md differs from the one rendered again")
    shutil.copy2(reports / "junit-diff" / "summary.md", folder / "summary.md")
    edit_text(folder / "index.html", lambda text: text.replace("Gate failed", "Gate passed"))
    refused(folder, "index.html differs from the one rendered again")


def test_events_may_interleave_but_each_run_must_be_whole(site: Path) -> None:
    events = site / "reports/audit/events.jsonl"
    lines = events.read_text(encoding="utf-8").splitlines(True)
    # Controls that ran in parallel interleave: a different order of whole runs still verifies.
    by_control: dict[str, list[str]] = {}
    for line in lines:
        by_control.setdefault(json.loads(line)["control"], []).append(line)
    reordered = [line for run in reversed(list(by_control.values())) for line in run]
    events.write_text("".join(reordered), encoding="utf-8")
    reseal(site, "audit", "events.jsonl")
    assert verify(site).exit_code == 0


# --------------------------------------------------------------------------- unknown, active


@pytest.mark.parametrize(
    "name",
    ["details.html", "EVIL.HTML", "page.htm", "page.xhtml", "image.svg", "app.js", "notes.txt",
     "summary\u2024md"],
)
def test_an_extra_file_listed_in_the_bundle_manifest_is_refused(site: Path, name: str) -> None:
    (site / "reports/junit-diff" / name).write_text(
        "<script>alert(document.domain)</script>\n", encoding="utf-8"
    )
    reseal(site, "junit-diff", name)
    refused(site, "reports/junit-diff: ", "is neither an input the diff report names")


def test_a_site_build_refuses_a_report_folder_with_an_extra_active_file(
    reports: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "in" / "junit-diff"
    shutil.copytree(reports / "junit-diff", folder)
    (folder / "details.html").write_text("<script>alert(1)</script>", encoding="utf-8")
    result = CliRunner().invoke(
        main, ["site", "build", str(folder), "--output", str(tmp_path / "out")]
    )
    assert result.exit_code == 2, result.output
    assert "details.html is neither an input" in result.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in"]


@pytest.mark.parametrize("key", ["created_at", "evalarc_version"])
def test_a_volatile_key_injected_deeper_is_not_ignored(site: Path, key: str) -> None:
    report = site / "reports/junit-diff/diff.json"
    value = json.loads(report.read_text(encoding="utf-8"))
    value["changes"][0][key] = "injected"
    report.write_text(pretty_json(value), encoding="utf-8")
    reseal(site, "junit-diff", "diff.json")
    refused(site, "reports/junit-diff: diff.json differs from the recomputed diff report")


def test_volatile_keys_at_their_schema_positions_are_ignored(site: Path) -> None:
    report = site / "reports/audit/audit.json"
    value = json.loads(report.read_text(encoding="utf-8"))
    assert "created_at" in value["reference"] and "evalarc_version" in value["mutants"][0][
        "evaluation"]
    value["evalarc_version"] = "0.0.1"
    report.write_text(pretty_json(value), encoding="utf-8")
    reseal(site, "audit", "audit.json")
    # The report compares (the version is volatile there); only the page, which shows the
    # version, now differs from the one rendered from the report.
    line = refused(site, "reports/audit/index.html differs from the page rendered")
    assert "audit.json differs" not in line


# --------------------------------------------------------------------------- links, devices


def test_a_hard_link_in_a_report_folder_is_never_copied_into_a_site(
    reports: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "host-secret"
    secret.write_text("root:x:0:0\n", encoding="utf-8")
    folder = tmp_path / "in" / "junit-diff"
    shutil.copytree(reports / "junit-diff", folder)
    os.link(secret, folder / "passwd")
    result = CliRunner().invoke(
        main, ["site", "build", str(folder), "--output", str(tmp_path / "out")]
    )
    assert result.exit_code == 2
    assert "passwd is a hard link" in result.stderr and result.stderr.count("\n") == 1
    assert not (tmp_path / "out").exists()
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".")] == []
    refused(folder, "passwd is a hard link")


def test_a_hard_link_inside_a_site_is_refused(site: Path, tmp_path: Path) -> None:
    target = site / "reports/junit-diff/baseline.xml.txt"
    os.link(target, tmp_path / "outside")
    refused(site, "reports/junit-diff/baseline.xml.txt is a hard link")


def test_a_fifo_in_a_site_is_refused(site: Path) -> None:
    os.mkfifo(site / "reports/junit-diff/pipe")
    refused(site, "reports/junit-diff/pipe is not a regular file")


# --------------------------------------------------------------------------- bounded


def test_oversized_sparse_files_are_refused_before_hashing(site: Path) -> None:
    names = []
    for index in range(12):
        name = f"blob-{index:02d}.json"
        with (site / "reports/junit-diff" / name).open("wb") as handle:
            handle.truncate(511 * 1024 * 1024)
        names.append(name)
    manifest_path = site / "reports/junit-diff" / BUNDLE_MANIFEST
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    for name in names:  # listed as an attacker would (the hash is never computed anyway)
        manifest["files"][name] = {"sha256": "0" * 64, "bytes": 511 * 1024 * 1024}
    manifest_path.write_text(pretty_json(manifest), encoding="utf-8")
    _bench("attacks").reseal_site_manifest(site, "junit-diff")
    refused(site, "reports/junit-diff holds more than", seconds=10)


def test_many_links_into_a_big_extra_page_are_refused_quickly(site: Path) -> None:
    bundle = site / "reports/junit-diff"
    (bundle / "big.html").write_text("<p id=x>" + "x" * 1_000_000 + "</p>", encoding="utf-8")
    links = "".join(f'<a href="big.html#x{index}">{index}</a>' for index in range(200))
    (bundle / "links.html").write_text(links, encoding="utf-8")
    reseal(site, "junit-diff", "big.html", "links.html")
    refused(site, "reports/junit-diff: ", "big.html is neither", seconds=20)


def test_a_deep_chain_of_folders_is_refused_not_a_recursion_error(site: Path) -> None:
    attacks = _bench("attacks")
    attacks.deep_chain(site / "reports/junit-diff", 1500)
    page = site / "reports/junit-diff/index.html"
    edit_text(page, lambda text: text.replace("Gate failed", "Gate passed"))
    try:
        line = refused(site, "is nested deeper than", seconds=20)
        assert "RecursionError" not in line
        result = verify(site, "--json")
        assert json.loads(result.stdout)["verified"] is False
    finally:
        attacks.remove(site / "reports/junit-diff/d")


def test_a_file_name_with_a_newline_is_refused_on_one_line(site: Path) -> None:
    (site / "reports/junit-diff/evil\nname.md").write_text("x", encoding="utf-8")
    line = refused(site, "evil\\u000aname.md", "control or invisible characters")
    assert "\n" not in line[:-1]


def test_a_bidi_name_is_refused_and_printed_escaped(site: Path) -> None:
    (site / "reports/junit-diff/x\u202eLMTH.exe").write_text("x", encoding="utf-8")
    line = refused(site, "x\\u202eLMTH.exe")
    assert "\u202e" not in line


# --------------------------------------------------------------------------- options, json


def test_an_unknown_option_in_params_json_is_refused(reports: Path, tmp_path: Path) -> None:
    folder = tmp_path / "junit-diff"
    shutil.copytree(reports / "junit-diff", folder)
    params = json.loads((folder / "params.json").read_text(encoding="utf-8"))
    params["ignore_regressions"] = True
    (folder / "params.json").write_text(pretty_json(params), encoding="utf-8")
    refused(folder, "params.json has option(s) 'ignore_regressions' unknown to a diff report")


def test_an_unknown_option_from_a_newer_evalarc_names_both_versions(
    reports: Path, tmp_path: Path
) -> None:
    from evalarc import __version__

    folder = tmp_path / "trajectory"
    shutil.copytree(reports / "trajectory", folder)
    params = json.loads((folder / "params.json").read_text(encoding="utf-8"))
    params["smoothing"] = 3
    (folder / "params.json").write_text(pretty_json(params), encoding="utf-8")
    report = json.loads((folder / "trajectory.json").read_text(encoding="utf-8"))
    report["evalarc_version"] = "99.0.0"
    (folder / "trajectory.json").write_text(pretty_json(report), encoding="utf-8")
    refused(folder, "'smoothing'", f"this EvalArc {__version__}", "EvalArc 99.0.0, which is newer")


def test_a_deep_candidate_tree_is_refused_for_what_it_is(reports: Path, tmp_path: Path) -> None:
    folder = tmp_path / "evaluation"
    shutil.copytree(reports / "evaluation", folder)
    path = folder / "candidate"
    for _ in range(400):
        path = path / "d"
    os.makedirs(path)
    line = refused(folder, "/candidate/d/", "is nested deeper than 32 folders")
    assert "evaluation.json" not in line


def test_verify_json_prints_a_verdict_when_an_internal_limit_is_hit(
    reports: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import evalarc.verify

    def exhausted(evidence: Path) -> dict[str, object]:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(evalarc.verify, "verify_report_folder", exhausted)
    result = verify(reports / "junit-diff", "--json")
    assert result.exit_code == 2
    verdict = json.loads(result.stdout)
    assert verdict["verified"] is False and "RecursionError" in verdict["error"]
    assert verdict["schema_version"] == "evalarc.verification.v1"


def test_verify_json_lists_each_file_with_its_role(site: Path) -> None:
    result = verify(site, "--json")
    assert result.exit_code == 0, result.output
    files = json.loads(result.stdout)["files"]
    roles = {name: row["role"] for name, row in files.items()}
    assert roles["reports/junit-diff/baseline.xml.txt"] == "preserved"
    assert roles["reports/junit-diff/summary.md"] == "regenerated"
    assert roles["reports/junit-diff/index.html"] == "regenerated"
    assert roles["reports/health/cases.jsonl"] == "regenerated"
    assert roles["reports/hillclimb/tuning-failures.json"] == "regenerated"
    assert roles["reports/evaluation/events.jsonl"] == "regenerated"
    assert roles["index.html"] == "regenerated"
    on_disk = {
        path.relative_to(site).as_posix() for path in site.rglob("*") if path.is_file()
    }
    assert set(files) == on_disk
    assert "cannot prove" in json.loads(result.stdout)["scope"]


# --------------------------------------------------------------------------- permissions


def test_report_folders_and_sites_respect_the_umask(reports: Path, tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        out = tmp_path / "site"
        build_site([reports / "junit-diff"], out)
        folder = tmp_path / "diff"
        examples = ROOT / "recordings/examples/results-diff/junit"
        result = CliRunner().invoke(main, [
            "diff", str(examples / "baseline.xml"), str(examples / "current.xml"),
            "--output", str(folder)])
        assert result.exit_code in (0, 1), result.output
    finally:
        os.umask(previous)
    for path in (out, out / "reports", folder):
        assert stat.S_IMODE(path.stat().st_mode) == 0o755, path
    for path in (out / "index.html", folder / "diff.json"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path


# --------------------------------------------------------------------------- terminal


def test_every_printed_line_escapes_control_and_bidi_characters() -> None:
    assert terminal_text("x\u202eLMTH.exe: diff, fail") == "x\\u202eLMTH.exe: diff, fail"
    assert terminal_text("a\x1b[31mred\rb\nline\ttab") == "a\\u001b[31mred\\u000db\nline\ttab"
    document = json.dumps({"name": "x\u202ey\u2028\U000e0041 \U0001f600"}, ensure_ascii=False)
    shown = terminal_text(document)
    assert json.loads(shown) == {"name": "x\u202ey\u2028\U000e0041 \U0001f600"}
    assert "\u202e" not in shown and "\U000e0041" not in shown and "\U0001f600" in shown


def test_an_error_naming_a_bidi_file_is_printed_escaped(tmp_path: Path) -> None:
    hostile = tmp_path / "x\u202eLMTH.exe"
    result = CliRunner().invoke(main, ["diff", str(hostile), str(hostile)])
    assert result.exit_code == 2
    assert "\u202e" not in result.stderr and "x\\u202eLMTH.exe" in result.stderr


# --------------------------------------------------------------------------- serve


def _request(port: int, target: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        connection.putheader("Host", f"127.0.0.1:{port}")
        connection.endheaders()
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def test_serve_sends_policies_types_and_plain_400s(reports: Path) -> None:
    server = SiteServer([reports / "junit-diff", reports / "health"], port=0,
                        on_line=lambda line: None)
    url = server.start()
    server.serve_in_background()
    port = int(url.rstrip("/").rsplit(":", 1)[1])
    try:
        status, headers, body = _request(port, "/")
        assert status == 200 and headers["Content-Type"] == "text/html; charset=utf-8"
        assert headers["X-Content-Type-Options"] == "nosniff"
        policy = headers["Content-Security-Policy"]
        assert policy.startswith("default-src 'none'") and "sandbox" not in policy
        assert policy.encode() in body.replace(b"&#39;", b"'")  # the page's own policy

        status, headers, _ = _request(port, "/reports/junit-diff/baseline.xml.txt")
        assert status == 200 and headers["Content-Type"] == "text/plain; charset=utf-8"
        assert headers["Content-Security-Policy"] == "default-src 'none'; sandbox"
        status, headers, _ = _request(port, "/reports/junit-diff/diff.json")
        assert status == 200 and headers["Content-Type"] == "application/json"
        assert "sandbox" in headers["Content-Security-Policy"]

        for target in ("/%00", "/reports/%00/index.html", "/%ff%fe", "/../etc/passwd",
                       "/a\\b", "/%2e%2e/x", "/x%0ay"):
            status, headers, body = _request(port, target)
            assert status == 400, target
            assert headers["Content-Type"] == "text/plain; charset=utf-8", target
            assert b"Traceback" not in body and b"<" not in body
        assert _request(port, "/")[0] == 200  # still serving
        assert _request(port, "/nothing.exe")[0] == 404
        assert _request(port, "/reports/junit-diff")[0] == 301
        assert _request(port, "/", method="POST")[0] == 501
    finally:
        server.stop()


def test_serve_does_not_serve_a_type_outside_the_allow_list(reports: Path, tmp_path: Path) -> None:
    from evalarc.site.serve import CONTENT_TYPES, is_site_page, request_path

    assert ".svg" not in CONTENT_TYPES and ".xhtml" not in CONTENT_TYPES
    assert not is_site_page("reports/junit-diff/details.html")
    assert is_site_page("reports/junit-diff/index.html") and is_site_page("docs/guide.html")
    assert request_path("/%00") is None and request_path("/ok/") == "ok/"
