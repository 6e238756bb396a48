"""Hostile text everywhere a stranger can put it stays text.

The corpus: Inspect AI logs whose sample ids, scorer (check) names, evidence and model outputs
carry <script>, </script>, event handlers, javascript: URLs and template syntax; a candidate
program whose responses and errors carry the same; report folder names and Markdown docs doing
the same; and a 2,100-case JUnit pair with hostile case names and evidence, so rows also come
from the JSON data island and are built by the page script. The built site must pass the page
checker, contain no raw payload, and in Chromium run no injected code (window.__xss stays
undefined, no dialog, no console error, no request) while showing the payloads as text.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from evalarc.site.build import build_site
from evalarc.site.check import check_site

ROOT = Path(__file__).resolve().parents[1]
INSPECT = next(
    path / "results-diff" / "inspect"
    for path in (ROOT / "recordings" / "examples", ROOT / "examples")
    if path.is_dir()
)
PAYLOADS = [
    "<script>window.__xss=1</script>",
    "</script><script>window.__xss=2</script>",
    '<img src=x onerror="window.__xss=3">',
    "javascript:window.__xss=4",
    '" onmouseover="window.__xss=5" x="',
    "<svg onload=window.__xss=6>",
    "'><a href=\"javascript:window.__xss=7\">x</a>",
    "{{ 7*7 }}{% raw %}<!--",
    "<iframe srcdoc='<script>parent.__xss=8</script>'></iframe>",
    "\u2028</SCRIPT ><script>window.__xss=9</script>",
]
RAW_MARKERS = ["<script>window.__xss", "<img src=x onerror", "<svg onload", "<iframe srcdoc",
               '<a href="javascript:', "</SCRIPT >"]


def bench() -> ModuleType:
    name = "evalarc_bench_site"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / "site.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def evalarc(*args: str | Path, ok: tuple[int, ...] = (0, 1)) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "evalarc.cli", *map(str, args)],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode in ok, done.stderr


def hostile_inspect_log(source: Path, dest: Path) -> None:
    log = json.loads(source.read_text(encoding="utf-8"))
    ids = sorted({str(sample["id"]) for sample in log["samples"]})
    rename_id = {old: f"{PAYLOADS[index % len(PAYLOADS)]}#{index}" for index, old in
                 enumerate(ids)}
    rename_check = {"match": "<b onmouseover=window.__xss=10>match</b>",
                    "includes": "</script><script>window.__xss=11</script>"}
    for number, sample in enumerate(log["samples"]):
        sample["id"] = rename_id[str(sample["id"])]
        payload = PAYLOADS[number % len(PAYLOADS)]
        sample["scores"] = {
            rename_check[name]: {**score, "explanation": f"{payload} {score['explanation']}",
                                 "answer": payload}
            for name, score in sample["scores"].items()
        }
        sample["output"]["completion"] = payload
        for choice in sample["output"].get("choices", []):
            choice["message"]["content"] = payload
        # Case views show input, target, transcript (tool calls and results) and tracebacks.
        sample["input"] = payload
        sample["target"] = payload
        sample["metadata"] = {payload: payload}
        sample["messages"] = [
            {"role": "user", "content": payload, "source": "input"},
            {"role": "assistant", "content": payload,
             "tool_calls": [{"id": "t1", "function": payload, "arguments": {"q": payload}}]},
            {"role": "tool", "content": payload, "function": payload, "tool_call_id": "t1"},
            {"role": "assistant", "content": [{"type": "text", "text": payload}]},
        ]
        sample["events"] = [
            {"event": "tool", "function": payload, "arguments": {"q": payload},
             "result": payload, "error": {"message": payload}},
            {"event": "model", "model": payload, "error": payload, "output": {}},
        ]
        for score in sample["scores"].values():
            score["metadata"] = {"why": payload}
        if number == 3:
            sample["error"] = {"message": payload, "traceback": f"Traceback\n  {payload}"}
    for group in log["results"]["scores"]:
        group["name"] = rename_check[group["name"]]
        group["scorer"] = rename_check[group["scorer"]]
    headline = log["results"]["headline"]
    headline["scorer"] = headline["score"] = rename_check[headline["scorer"]]
    for reduction in log.get("reductions") or []:
        reduction["scorer"] = rename_check[reduction["scorer"]]
        for sample in reduction["samples"]:
            sample["sample_id"] = rename_id[str(sample["sample_id"])]
    dest.write_text(json.dumps(log), encoding="utf-8")


def hostile_promptfoo(source: Path, dest: Path) -> None:
    document = json.loads(source.read_text(encoding="utf-8"))
    for number, row in enumerate(document["results"]["results"]):
        payload = PAYLOADS[number % len(PAYLOADS)]
        row["prompt"]["raw"] = payload
        row["prompt"]["label"] = payload
        row["vars"] = row["testCase"]["vars"] = {**row["testCase"]["vars"], "note": payload}
        row["response"]["output"] = payload
        row["response"]["error"] = payload
        row["error"] = payload
        for component in row["gradingResult"].get("componentResults") or []:
            component["reason"] = payload
            component["assertion"]["value"] = payload
    dest.write_text(json.dumps(document), encoding="utf-8")


def hostile_junit(dest: Path, failing: bool) -> None:
    from xml.sax.saxutils import escape, quoteattr

    cases = []
    for number, payload in enumerate(PAYLOADS):
        body = (
            f"<failure type={quoteattr(payload)} message={quoteattr(payload)}>"
            f"{escape(payload)}</failure>" if failing else ""
        )
        cases.append(
            f"<testcase classname=\"hostile\" name=\"case-{number}\">{body}"
            f"<system-out>{escape(payload)}</system-out><system-err>{escape(payload)}"
            "</system-err></testcase>"
        )
    dest.write_text(
        "<?xml version=\"1.0\"?><testsuite name=\"hostile\">" + "".join(cases) + "</testsuite>",
        encoding="utf-8",
    )


HOSTILE_CANDIDATE = (
    "import json, sys\n"
    f"PAYLOADS = {PAYLOADS!r}\n"
    "for count, line in enumerate(sys.stdin):\n"
    "    payload = PAYLOADS[count % len(PAYLOADS)]\n"
    "    sys.stderr.write(payload + '\\n')\n"
    "    print(json.dumps({'ok': True, 'value': payload, 'error': payload}), flush=True)\n"
)

HOSTILE_DOC = """# Notes <script>window.__xss=20</script>

<img src=x onerror="window.__xss=21">

[click](javascript:window.__xss=22) <javascript:window.__xss=23> [data](data:text/html,x)

![pic" onerror="window.__xss=24](https://example.com/x.png)

```html
</script><script>window.__xss=25</script>
```

| a | b |
|---|---|
| <b onclick=window.__xss=26>x</b> | `</script>` |
"""


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("xss")
    reports = work / "reports"
    reports.mkdir()
    baseline, current = work / "baseline.json", work / "current.json"
    hostile_inspect_log(INSPECT / "baseline.json", baseline)
    hostile_inspect_log(INSPECT / "current.json", current)
    evalarc("diff", baseline, current, "--output", reports / "inspect-diff")
    evalarc("eval-health", baseline, current, "--output", reports / "health")
    shutil.copytree(reports / "inspect-diff", reports / '<img src=x onerror="window.__xss=12">')
    shutil.copytree(reports / "inspect-diff", reports / "javascript:window.__xss=13")
    # A 2,100-case diff: rows past the HTML rows come from the data island.
    inputs = bench().write_junit_pair(
        work / "junit", 2100,
        evidence=lambda index: PAYLOADS[index % len(PAYLOADS)],
        name=lambda index: f"{PAYLOADS[index % len(PAYLOADS)]}-{index:04d}",
    )
    evalarc("diff", *inputs, "--output", reports / "island-diff")
    promptfoo = ROOT / "recordings" / "examples" / "results-diff" / "promptfoo"
    hostile_promptfoo(promptfoo / "baseline.json", work / "pf-baseline.json")
    hostile_promptfoo(promptfoo / "current.json", work / "pf-current.json")
    evalarc("diff", work / "pf-baseline.json", work / "pf-current.json",
            "--output", reports / "promptfoo-diff")
    hostile_junit(work / "ju-baseline.xml", failing=False)
    hostile_junit(work / "ju-current.xml", failing=True)
    evalarc("diff", work / "ju-baseline.xml", work / "ju-current.xml",
            "--output", reports / "junit-diff")
    candidate = work / "candidate"
    evalarc("init", candidate, "--task", "durable-kv", ok=(0,))
    (candidate / "main.py").write_text(HOSTILE_CANDIDATE, encoding="utf-8")
    evalarc("evaluate", candidate, "--task", "durable-kv", "--backend", "local", "--trust-local",
            "--seeds", "17", "--quiet", "--output", reports / "evaluation")
    docs = work / "docs"
    docs.mkdir()
    (docs / "notes.md").write_text(HOSTILE_DOC, encoding="utf-8")
    site = work / "site"
    build_site([reports], site, docs_dir=docs)
    return site


def pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_the_corpus_reaches_every_page_kind(hostile_site: Path) -> None:
    names = {page.relative_to(hostile_site).as_posix() for page in pages(hostile_site)}
    assert {"index.html", "docs/notes.html", "reports/inspect-diff/index.html",
            "reports/health/index.html", "reports/island-diff/index.html",
            "reports/evaluation/index.html"} <= names
    # The payloads are on the pages, escaped (shown, not dropped).
    diff = (hostile_site / "reports/inspect-diff/index.html").read_text()
    assert "&lt;/script&gt;&lt;script&gt;window.__xss=2&lt;/script&gt;" in diff
    assert "&lt;b onmouseover=window.__xss=10&gt;match&lt;/b&gt;" in diff
    evaluation = (hostile_site / "reports/evaluation/index.html").read_text()
    assert "window.__xss=" in evaluation
    index = (hostile_site / "index.html").read_text()
    assert "&lt;img src=x onerror=&#34;window.__xss=12&#34;&gt;" in index
    assert 'href="reports/img-src-x-onerror-window-xss-12/index.html"' in index
    island = (hostile_site / "reports/island-diff/index.html").read_text()
    # Rows past the HTML rows (case 1109 among them) ride in the island.
    assert "tickets::\\u2028\\u003c/SCRIPT \\u003e\\u003cscript\\u003ewindow.__xss=9" in island
    table = island[island.index('<table id="changed-checks"') :]
    assert "-1109" not in table[: table.index('id="changed-checks-more"')]
    assert "{{ 7*7 }}{% raw %}\\u003c!--" in island
    health = (hostile_site / "reports/health/index.html").read_text()
    assert "{{ 7*7 }}{% raw %}&lt;!--" in health  # template syntax is shown, not evaluated
    assert ">49<" not in island + health


def test_case_view_chunks_carry_every_hostile_field_as_escaped_data(hostile_site: Path) -> None:
    from evalarc.pages.case_views import parse_chunk

    texts: dict[str, str] = {}
    for kind in ("inspect-diff", "promptfoo-diff", "junit-diff"):
        chunks = sorted((hostile_site / "reports" / kind / "case-views").glob("*.js"))
        assert chunks, kind
        joined = []
        for chunk in chunks:
            data = chunk.read_bytes()
            assert b"<" not in data and b">" not in data  # escaped as \u003c / \u003e
            cases = parse_chunk(data)
            assert cases is not None
            joined.append(json.dumps(cases, ensure_ascii=False))
        texts[kind] = "".join(joined)
    # Outputs, explanations, tool arguments and results, tracebacks, input and target (Inspect).
    for label in ('"output"', '"explanation"', "tool call · ", "tool result · ", '"traceback"',
                  '"target"', "tool event · ", '"metadata"'):
        assert label in texts["inspect-diff"], label
    assert "window.__xss=1</script>" in texts["inspect-diff"]
    for label in ('"prompt"', '"vars"', '"output"', '"reason"', '"provider error"'):
        assert label in texts["promptfoo-diff"], label
    for label in ('"system-out"', '"system-err"', '"stack trace"', '"message"', '"type"'):
        assert label in texts["junit-diff"], label
    assert "window.__xss=9</script>" in texts["junit-diff"]


def test_the_page_checker_finds_nothing_active(hostile_site: Path) -> None:
    assert check_site(hostile_site) == []


@pytest.mark.parametrize("marker", RAW_MARKERS)
def test_no_raw_payload_in_any_page(hostile_site: Path, marker: str) -> None:
    built = pages(hostile_site)
    assert len(built) >= 6, built  # the pages test_the_corpus_reaches_every_page_kind names
    for page in built:
        html = page.read_text(encoding="utf-8")
        assert marker not in html, (page, marker)
        # Only our script and the JSON islands are script elements.
        scripts = html.lower().count("<script")
        islands = html.count('<script type="application/json"')
        assert scripts == 1 + islands, page


def exercise(browser: Any, page_path: Path) -> tuple[list[str], list[str]]:
    """Open a page, type in every filter, sort, page, hover; return problems and requests."""
    page = browser.new_page()
    problems: list[str] = []
    requests: list[str] = []
    page.on("console", lambda message: problems.append(f"{message.type}: {message.text}")
            if message.type in ("error", "warning") else None)
    page.on("pageerror", lambda error: problems.append(f"pageerror: {error}"))
    page.on("dialog", lambda dialog: problems.append(f"dialog: {dialog.message}"))
    page.on("request", lambda request: requests.append(request.url))
    page.goto(page_path.as_uri())
    page.wait_for_selector("html[data-evalarc-ready]")
    for box in page.locator(".table-tools input").all():
        box.fill("xss")
    for button in page.locator("th button.sort").all()[:3]:
        button.click()
    for nxt in page.locator(".pager button", has_text="Next").all():
        nxt.click()
    page.mouse.move(200, 300)
    page.mouse.move(400, 500)
    # Open case views: their evidence comes from chunk files and is laid out by the script.
    for button in page.locator("button.case-open").all()[:4]:
        button.click()
        page.wait_for_selector("html[data-case-open]")
    finder = page.locator("input.case-find")
    if finder.count():
        finder.fill("xss")
        for button in page.locator(".case-matches button.case-open").all()[:2]:
            button.click()
            page.wait_for_selector("html[data-case-open]")
    if page.evaluate("typeof window.__xss") != "undefined":
        problems.append("window.__xss was set")
    active = page.evaluate("document.querySelectorAll('[onerror],[onload],[onclick],"
                           "[onmouseover],iframe,img,svg').length")
    if active:
        problems.append(f"{active} active element(s) in the DOM")
    page.close()
    return problems, requests


def test_nothing_runs_in_chromium(hostile_site: Path, browser: Any) -> None:
    checked = pages(hostile_site)
    for page_path in checked:
        problems, requests = exercise(browser, page_path)
        assert problems == [], (page_path, problems)
        # The page itself, then only its own bundle's case-view chunks.
        chunks = (page_path.parent / "case-views").as_uri() + "/"
        assert requests[0] == page_path.as_uri(), (page_path, requests)
        assert all(url.startswith(chunks) for url in requests[1:]), (page_path, requests)
        if page_path.parent.name in ("inspect-diff", "promptfoo-diff", "junit-diff"):
            assert len(requests) > 1, page_path  # case views were opened
    assert len(checked) == 10  # index, doc, 8 report pages


def test_island_rows_show_payloads_as_text(hostile_site: Path, browser: Any) -> None:
    page = browser.new_page()
    page.goto((hostile_site / "reports/island-diff/index.html").as_uri())
    page.wait_for_selector("html[data-evalarc-ready]")
    page.locator(".table-tools input").first.fill("-1109")
    page.wait_for_function(
        "document.querySelector('.table-tools .count').textContent.startsWith('1 of 2100')")
    row = page.locator("#changed-checks tbody tr").first
    payload = PAYLOADS[1109 % len(PAYLOADS)]
    assert row.locator("td").nth(1).text_content() == f"tickets::{payload}-1109"
    assert payload in (row.locator("td").nth(5).text_content() or "")
    assert row.locator("td code").count() == 1 and row.locator("td span.badge").count() == 1
    assert page.evaluate("typeof window.__xss") == "undefined"
    page.close()
