"""Trace replay and the "remove this case" view in real Chromium, opened from file://.

The site is built from replays of the bundled Docker recordings (no Docker): the support demo
regression's current run (new-key-on-retry), a durable-kv fault with restarts and kills, a
robot-evidence-review fault, and the support audit. The stepper steps forward and back through
the retry-after-commit episode by button, step button and keyboard; without JavaScript every
step is listed. Screenshots are kept under ``<basetemp>/trace-screenshots``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from evalarc.packs import materialize_workspace
from evalarc.reports.audit import AuditOptions, run_audit
from evalarc.reports.evaluation import EvaluateOptions, run_evaluate
from evalarc.site.build import build_site

pytestmark = pytest.mark.browser

SUPPORT_PAGE = Path("reports") / "support-new-key-on-retry" / "index.html"


def replay_evaluation(root: Path, task: str, fault: str) -> None:
    workspace = root / "workspaces" / fault
    workspace.parent.mkdir(parents=True, exist_ok=True)
    materialize_workspace(task, "python", reference=True, fault=fault, dest=workspace,
                          contract=False)
    run_evaluate(workspace, root / "reports" / f"{task.split('-')[0]}-{fault}",
                 EvaluateOptions(task=task, backend="replay", image=None, seeds=(17,)))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("trace-site")
    (root / "reports").mkdir()
    replay_evaluation(root, "support-routing", "new-key-on-retry")
    replay_evaluation(root, "durable-kv", "commit-on-exit")
    replay_evaluation(root, "robot-evidence-review", "assume-complete")
    run_audit(root / "reports" / "audit-support",
              AuditOptions(task="support-routing", backend="replay", seeds=(17,)))
    out = root / "site"
    build_site([root / "reports"], out)
    return out


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.getbasetemp() / "trace-screenshots"
    folder.mkdir(exist_ok=True)
    return folder


@dataclass
class Opened:
    page: Any
    context: Any
    problems: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def close(self) -> None:
        self.context.close()


def open_page(browser: Any, path: Path, *, javascript: bool = True,
              scheme: str = "light") -> Opened:
    context = browser.new_context(java_script_enabled=javascript, color_scheme=scheme,
                                  viewport={"width": 1280, "height": 900})
    page = context.new_page()
    opened = Opened(page, context)
    page.on("console", lambda message: opened.problems.append(
        f"{message.type}: {message.text}") if message.type in ("error", "warning") else None)
    page.on("pageerror", lambda error: opened.problems.append(f"pageerror: {error}"))
    page.on("request", lambda request: opened.requests.append(request.url))
    page.goto(path.as_uri())
    if javascript:
        page.wait_for_selector("html[data-evalarc-ready][data-evalarc-steppers]")
    return opened


def case_details(page: Any, case_id: str) -> Any:
    """The evidence block of a case (seed 17), by its summary line."""
    return page.locator("details").filter(
        has=page.locator("summary", has_text=f"{case_id} · seed 17 ·"))


def visible_steps(stepper: Any) -> list[str]:
    return [str(text) for text in stepper.evaluate(
        "list => Array.from(list.children).filter(li => !li.hidden)"
        ".map(li => li.getAttribute('data-step'))")]


def test_the_stepper_steps_forward_and_back_through_the_retry_after_commit_episode(
        site: Path, browser: Any, screenshots: Path) -> None:
    opened = open_page(browser, site / SUPPORT_PAGE)
    page = opened.page
    details = page.locator("details[open]")
    assert details.count() == 1  # the only failing case opens; the others stay closed
    assert "retry-after-commit" in details.locator("summary").first.inner_text()
    stepper = details.locator("ol[data-stepper]")
    controls = details.locator(".stepper-controls")
    status = controls.locator(".step-status")
    previous = controls.get_by_role("button", name="← Previous")
    following = controls.get_by_role("button", name="Next →")
    assert status.inner_text() == "Step 1 of 6"
    assert visible_steps(stepper) == ["0"]
    assert previous.is_disabled() and not following.is_disabled()

    following.click()
    following.click()
    assert status.inner_text() == "Step 3 of 6"
    assert visible_steps(stepper) == ["2"]
    step = stepper.locator("li[data-step='2']")
    assert "injected error" in step.inner_text()
    assert "committed before the failure" in step.inner_text()
    details.screenshot(path=str(screenshots / "support-step-3.png"))

    following.click()
    assert status.inner_text() == "Step 4 of 6"
    text = stepper.locator("li[data-step='3']").inner_text()
    assert "review-retry" in text and "duplicate write" in text
    details.screenshot(path=str(screenshots / "support-step-4.png"))

    previous.click()
    assert (status.inner_text(), visible_steps(stepper)) == ("Step 3 of 6", ["2"])

    # Keyboard: arrows and End/Home while focus is in the stepper's controls.
    following.focus()
    page.keyboard.press("ArrowRight")
    assert status.inner_text() == "Step 4 of 6"
    page.keyboard.press("End")
    assert status.inner_text() == "Step 6 of 6"
    assert following.is_disabled()
    assert "not scored" in stepper.locator("li[data-step='5']").inner_text()
    assert page.evaluate("document.activeElement.textContent") == "← Previous"
    page.keyboard.press("Home")
    assert (status.inner_text(), visible_steps(stepper)) == ("Step 1 of 6", ["0"])

    # One button per step, marked with the step's tone; the current one is aria-current.
    chips = details.locator(".step-chips button")
    assert chips.all_inner_texts() == ["1 get_ticket", "2 assign_queue", "3 add_note",
                                       "4 add_note", "5 close_ticket", "6 finish"]
    assert chips.nth(2).get_attribute("data-tone") == "warn"
    assert chips.nth(3).get_attribute("data-tone") == "bad"
    chips.nth(3).click()
    assert chips.nth(3).get_attribute("aria-current") == "step"
    assert chips.nth(0).get_attribute("aria-current") is None
    assert visible_steps(stepper) == ["3"]

    toggle = controls.get_by_role("button", name="Show all steps")
    toggle.click()
    assert toggle.get_attribute("aria-pressed") == "true"
    assert visible_steps(stepper) == ["0", "1", "2", "3", "4", "5"]
    assert opened.problems == []
    assert {url.split(":", 1)[0] for url in opened.requests} == {"file"}
    assert len(opened.requests) == 1
    opened.close()


def test_without_javascript_every_step_is_listed(
        site: Path, browser: Any, screenshots: Path) -> None:
    opened = open_page(browser, site / SUPPORT_PAGE, javascript=False)
    page = opened.page
    details = page.locator("details[open]")
    steps = details.locator("ol[data-stepper] > li")
    assert steps.count() == 6
    assert all(step.is_visible() for step in steps.all())
    text = details.inner_text()
    for expected in ("Step 1 of 6", "Step 6 of 6", "injected error", "review-retry",
                     "duplicate write", "not scored", "Initial and final state"):
        assert expected in text
    assert page.locator(".stepper-controls, .step-chips").count() == 0
    details.screenshot(path=str(screenshots / "support-no-javascript.png"))
    assert opened.problems == []
    opened.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_transcript_review_and_remove_case_pages_open_cleanly(
        site: Path, browser: Any, screenshots: Path, scheme: str) -> None:
    kv = open_page(browser, site / "reports" / "durable-commit-on-exit" / "index.html",
                   scheme=scheme)
    case = case_details(kv.page, "sigkill-after-delete")
    assert case.get_attribute("open") == ""
    assert "Expected (the pack's oracle)" in case.locator(".mismatch").inner_text()
    assert case.locator("table.transcript caption").all_inner_texts() == [
        "Process 1", "Process 2 · restart after EOF", "Process 3 · restart after a kill"]
    assert "as the case plans" in case.locator(".process-end").nth(1).inner_text()
    case.screenshot(path=str(screenshots / f"durable-kv-transcript-{scheme}.png"))
    assert kv.problems == [] and len(kv.requests) == 1
    kv.close()

    robot = open_page(browser, site / "reports" / "robot-assume-complete" / "index.html",
                      scheme=scheme)
    review = robot.page.locator("details[open] table.review").first
    assert "missing_frames" in review.inner_text()
    assert "does not match" in review.inner_text()
    robot.page.locator("details[open]").first.screenshot(
        path=str(screenshots / f"robot-review-{scheme}.png"))
    assert robot.problems == [] and len(robot.requests) == 1
    robot.close()

    audit = open_page(browser, site / "reports" / "audit-support" / "index.html", scheme=scheme)
    rows = audit.page.locator("#remove-case-table tbody tr")
    assert rows.count() == 4
    assert audit.page.locator("#remove-case-table .badge.bad").all_inner_texts() == [
        "loses coverage", "loses coverage"]
    audit.page.locator("#remove-case").scroll_into_view_if_needed()
    audit.page.screenshot(path=str(screenshots / f"audit-remove-case-{scheme}.png"),
                          full_page=True)
    assert audit.problems == [] and len(audit.requests) == 1
    audit.close()
