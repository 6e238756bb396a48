"""How long evidence wraps on a diff page, in real Chromium (Playwright, /usr/bin/chromium).

A JUnit pair whose failures hold prose, a SHA-256, a long URL and a long JSON line, and the
bundled Inspect AI example pair (short evidence such as ``refund:1003:rejected`` beside long case
ids and change labels), are diffed and built into a site; each page is opened from file:// at a
wide and a narrow window. Prose and ids
must wrap only between words (a word shorter than its box is never split), and a token too long
for its box (the hash, the URL) must break inside that box instead of overflowing it, in the
table's evidence cells and in the case view alike.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import pytest

from evalarc.reports.diff import DiffRequest, run_diff
from evalarc.review.diff import DiffOptions
from evalarc.site.build import build_site

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
INSPECT = ROOT / "recordings" / "examples" / "results-diff" / "inspect"
HASH = "9645e52b20efb00c0698aec57003076b06a193813076f8ca108d1a2eacebc144"
URL = "https://ledger.example.invalid/refunds/2026/orders/1003/receipts?expand=all&trace=on"
LONG_TOKEN = 40
"""Tokens at least this long (the hash, the URL) may break; shorter words never may."""
CASES = {
    "refund-duplicate": (
        f"AssertionError: the refund for order 1003 was rejected although the duplicate policy "
        f"allows it; receipt {HASH} did not match the ledger entry {URL}",
        f"receipt={HASH}\nledger={URL}\n",
    ),
    "cancel-pending": (
        "expected the pending cancellation to be queued for the weekend shift, got refused",
        "",
    ),
    "status-missing": (
        f'expected {{"status": "unknown", "order": 9999, "receipt": "{HASH}"}} from the lookup',
        "",
    ),
    "refund-large-amount-escalation": (
        "AssertionError: assert 'escalated' == 'approved' for the refund above the limit",
        "",
    ),
}

MEASURE = r"""
([selector, longToken]) => {
  const word = /[\p{L}\p{N}]/u;
  const found = {splitWords: [], overflowing: []};
  for (const box of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const text = node.textContent;
      let previousTop = null;
      for (let i = 0; i < text.length; i++) {
        const range = document.createRange();
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const rect = range.getClientRects()[0];
        if (!rect) continue;
        const wrapped = previousTop !== null && rect.top > previousTop + 2;
        if (wrapped && word.test(text[i]) && word.test(text[i - 1] || "")) {
          let start = i, end = i;
          while (start > 0 && !/\s/.test(text[start - 1])) start--;
          while (end < text.length && !/\s/.test(text[end])) end++;
          const token = text.slice(start, end);
          if (token.length < longToken) found.splitWords.push(token);
        }
        previousTop = rect.top;
      }
    }
    const outer = box.getBoundingClientRect();
    for (const inner of box.querySelectorAll("*")) {
      const rect = inner.getBoundingClientRect();
      if (rect.width && rect.right > outer.right + 1) {
        found.overflowing.push(inner.tagName + ": " + inner.textContent.slice(0, 40));
      }
    }
    if (box.scrollWidth > box.clientWidth + 1) {
      found.overflowing.push(box.className + " scrolls: " + box.textContent.slice(0, 40));
    }
  }
  return found;
}
"""


def write_junit(path: Path, failing: bool) -> None:
    parts = ['<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="refund_desk">']
    for name, (message, output) in CASES.items():
        attributes = f'classname="refund_checks" name={quoteattr(name)}'
        if failing:
            stdout = f"<system-out>{escape(output)}</system-out>" if output else ""
            parts.append(
                f"<testcase {attributes}><failure message={quoteattr(message)}>"
                f"{escape(message)}\n  at refund_checks.py:69</failure>{stdout}</testcase>"
            )
        else:
            parts.append(f"<testcase {attributes}/>")
    parts.append("</testsuite></testsuites>")
    path.write_text("".join(parts), encoding="utf-8")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("wrapping")
    baseline, current = root / "baseline.xml", root / "current.xml"
    write_junit(baseline, failing=False)
    write_junit(current, failing=True)
    reports = root / "reports"
    reports.mkdir()
    run_diff(DiffRequest(baseline=baseline, current=current, options=DiffOptions()),
             reports / "junit-diff")
    run_diff(DiffRequest(baseline=INSPECT / "baseline.eval", current=INSPECT / "current.eval",
                         options=DiffOptions()), reports / "inspect-diff")
    build_site([reports], root / "site")
    return root / "site" / "reports"


def measure(page: Any, selector: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = page.evaluate(MEASURE, [selector, LONG_TOKEN])
    return found


@pytest.mark.parametrize("width", [1280, 900])
@pytest.mark.parametrize(("report", "case_id", "shown"), [
    ("junit-diff", "refund_checks::refund-duplicate", HASH),
    ("inspect-diff", "refund-duplicate", "refund:1003:rejected"),
])
def test_evidence_wraps_between_words_and_long_tokens_stay_in_their_box(
    site: Path, browser: Any, width: int, report: str, case_id: str, shown: str
) -> None:
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto((site / report / "index.html").as_uri())
    page.wait_for_selector("html[data-evalarc-ready]")
    assert page.locator("#changed-checks td.evidence").count() >= 8
    assert shown in page.locator("#changed-checks").inner_text()
    table = measure(page, "#changed-checks td.evidence")
    assert table == {"splitWords": [], "overflowing": []}, table
    ids = measure(page, "#changed-checks td[data-case]")
    assert ids == {"splitWords": [], "overflowing": []}, ids
    page.locator("#changed-checks button.case-open", has_text=case_id).first.click()
    page.wait_for_selector(f"html[data-case-open='{case_id}']")
    view = page.locator("#case-view")
    assert shown in view.inner_text()
    cases = measure(page, "#case-view .case-cell")
    assert cases == {"splitWords": [], "overflowing": []}, cases
    page_width = page.evaluate("document.querySelector('#case-view').scrollWidth")
    assert page_width <= page.evaluate("document.querySelector('#case-view').clientWidth")
    if width >= 1280:  # the table fits the window: nothing scrolls sideways
        assert page.evaluate(
            "document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    context.close()
