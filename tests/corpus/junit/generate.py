"""Make the JUnit corpus with the real tools, and its truth from each tool's own verbose output.

One command per tool (see README.md in this folder):

    python tests/corpus/junit/generate.py pytest --python /tmp/junit-tools/pytest/bin/python
    python tests/corpus/junit/generate.py pytest-rerunfailures \\
        --python /tmp/junit-tools/rr/bin/python
    python tests/corpus/junit/generate.py node
    python tests/corpus/junit/generate.py jest   --node-modules /tmp/junit-tools/node_modules
    python tests/corpus/junit/generate.py vitest --node-modules /tmp/junit-tools/node_modules
    python tests/corpus/junit/generate.py mocha  --node-modules /tmp/junit-tools/node_modules
    python tests/corpus/junit/generate.py ctest
    python tests/corpus/junit/generate.py googletest  # also catch2, rspec, robot, playwright,
    python tests/corpus/junit/generate.py gotestsum   # phpunit, cargo-libtest (in producers/)

Each writes ``<pair>/baseline.xml`` and ``<pair>/current.xml`` (the tool's JUnit bytes), the
verbose output the truth is read from (``*.log`` or ``*.json``), and ``<pair>/truth.json``: the
tool's own verdict of every test on both sides and the change kinds they imply. Nothing here
imports EvalArc: the truth is computed from the tool's output alone, with the change rules of
the diff restated below.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "sources"
WORK = Path("/tmp/evalarc-junit-corpus")
"""The tools run in one fixed folder, so both sides of a pair name the same paths."""

# -- the change rules (restated from the diff's contract; nothing imported) -----------------


def tally(attempts: list[dict[str, Any]]) -> dict[str, int]:
    """passed / assessed / covered of one test's attempts (``rerun``: it ran because the one
    before it failed; coverage counts runs with an assessed attempt, not retries)."""
    passed = sum(1 for a in attempts if a["outcome"] == "pass")
    assessed = sum(1 for a in attempts if a["outcome"] in ("pass", "fail"))
    runs: list[bool] = []
    for attempt in attempts:
        assessed_now = attempt["outcome"] in ("pass", "fail")
        if attempt.get("rerun") and runs:
            runs[-1] = runs[-1] or assessed_now
        else:
            runs.append(assessed_now)
    return {"passed": passed, "assessed": assessed, "covered": sum(runs)}


def kind(base: dict[str, int] | None, cur: dict[str, int] | None) -> str | None:
    if base is None:
        return "added"
    if cur is None:
        return "removed"
    if base["passed"] >= 1 and cur["assessed"] == 0:
        return "unassessed"

    def below(low: dict[str, int], high: dict[str, int]) -> bool:
        return low["passed"] * (high["assessed"] or 1) < high["passed"] * (low["assessed"] or 1)

    if below(cur, base):
        return "regressed" if cur["passed"] == 0 else "less_reliable"
    if cur["covered"] < base["covered"]:
        return "less_covered"
    if below(base, cur):
        return "improved"
    return None


BLOCKING = ("regressed", "less_reliable", "unassessed", "less_covered", "removed")


def write_truth(
    pair: Path, tool: str, version: str, command: str, sides: dict[str, dict[str, list[Any]]]
) -> dict[str, Any]:
    changes = []
    baseline, current = sides["baseline"], sides["current"]
    for case in sorted(baseline.keys() | current.keys()):
        base = tally(baseline[case]) if case in baseline else None
        cur = tally(current[case]) if case in current else None
        found = kind(base, cur)
        if found is not None:
            changes.append({"case_id": case, "kind": found, "blocking": found in BLOCKING})
    truth = {
        "tool": tool,
        "tool_version": version,
        "command": command,
        "source": "the tool's own verbose output beside this file, not EvalArc",
        "baseline": baseline,
        "current": current,
        "changes": changes,
        "blocking": sum(1 for change in changes if change["blocking"]),
    }
    (pair / "truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n")
    return truth


def _run(
    command: list[str], cwd: Path, env: dict[str, str] | None = None, any_failures: bool = False
) -> str:
    merged = {**os.environ, "NO_COLOR": "1", "FORCE_COLOR": "0", **(env or {})}
    merged.pop("CI", None)
    done = subprocess.run(
        command, cwd=cwd, env=merged, capture_output=True, text=True, timeout=600, check=False
    )
    # 0 all passed, 1 some failed; mocha exits with the number of failures.
    if done.returncode not in (0, 1) and not (any_failures and 0 < done.returncode < 100):
        sys.exit(f"{command[0]} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout + done.stderr


def _fresh(name: str) -> Path:
    folder = WORK / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


def _place(project: Path, source: Path) -> None:
    """Replace the project's sources with one side's (same folder for both sides)."""
    for child in project.iterdir():
        if child.name not in ("node_modules", "package.json"):
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    shutil.copytree(source, project, dirs_exist_ok=True)


# -- pytest ---------------------------------------------------------------------------------

_PYTEST_LINE = re.compile(
    r"^(?P<id>\S.*?::.*?) (?P<word>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS|RERUN)\b"
)
_PYTEST_OUTCOME = {
    "PASSED": "pass",
    "XPASS": "pass",
    "FAILED": "fail",
    "RERUN": "fail",
    "ERROR": "error",
    "SKIPPED": "skip",
    "XFAIL": "skip",
}


def pytest_truth(log: str) -> dict[str, list[dict[str, Any]]]:
    """Attempts per test from ``pytest -v`` lines (``path::Class::test[param] WORD``): RERUN
    is a failed attempt that was run again; an ERROR right after PASSED/FAILED of the same
    attempt (a teardown error) makes that attempt an error."""
    tests: dict[str, list[dict[str, Any]]] = {}
    closed: dict[str, bool] = {}
    for line in log.splitlines():
        match = _PYTEST_LINE.match(line)
        if match is None:
            continue
        node_id, word = match["id"], match["word"]
        case = _pytest_case_id(node_id)
        attempts = tests.setdefault(case, [])
        outcome = _PYTEST_OUTCOME[word]
        if word == "ERROR" and attempts and not closed.get(case, True):
            if attempts[-1]["outcome"] == "pass":
                attempts[-1]["outcome"] = "error"
            closed[case] = True
            continue
        attempts.append({"outcome": outcome, "rerun": bool(attempts), "word": word})
        closed[case] = word in ("RERUN", "SKIPPED", "XFAIL")
    return tests


def _pytest_case_id(node_id: str) -> str:
    """pytest's JUnit names a test ``classname::name``: the module path dotted, classes
    appended, and the function with its parameters."""
    path, *rest = node_id.split("::")
    module = path[:-3] if path.endswith(".py") else path
    owner = ".".join([module.replace("/", "."), *rest[:-1]])
    return f"{owner}::{rest[-1]}"


def make_pytest(python: str, pair_name: str, extra: list[str], source: str = "pytest") -> None:
    version = _run([python, "-c", "import pytest; print(pytest.__version__)"], HERE).strip()
    if extra:
        rr = _run(
            [
                python,
                "-c",
                "import importlib.metadata as m; print(m.version('pytest-rerunfailures'))",
            ],
            HERE,
        ).strip()
        version = f"pytest {version}, pytest-rerunfailures {rr}"
    else:
        version = f"pytest {version}"
    pair = HERE / pair_name
    pair.mkdir(exist_ok=True)
    project = _fresh(pair_name)
    sides: dict[str, dict[str, list[Any]]] = {}
    command = [python, "-m", "pytest", "-v", "-rA", "-p", "no:cacheprovider", *extra]
    for side in ("baseline", "current"):
        _place(project, SOURCES / source / side)
        log = _run([*command, f"--junitxml={side}.xml", "tests"], project)
        shutil.copyfile(project / f"{side}.xml", pair / f"{side}.xml")
        (pair / f"{side}.log").write_text(_plain(log, project))
        sides[side] = pytest_truth(log)
    shown = " ".join(["pytest", *command[3:], "--junitxml=SIDE.xml", "tests"])
    write_truth(pair, "pytest", version, shown, sides)


# -- node's test runner -----------------------------------------------------------------------

JS_SCENARIO: list[tuple[str, tuple[str, ...], str, str, str]] = [
    # file, describe path, test name, baseline, current (pass / fail / skip / absent)
    ("calc", ("parse",), "reads numbers", "pass", "pass"),
    ("calc", ("parse",), "handles blanks", "pass", "fail"),
    ("calc", ("format",), "handles blanks", "fail", "pass"),
    ("calc", ("format",), "pads to width", "pass", "pass"),
    ("calc", ("round",), "half up", "pass", "skip"),
    ("calc", ("round", "negative"), "half down", "fail", "fail"),
    ("calc", (), "top level works", "pass", "pass"),
    ("calc", (), "old check", "pass", "absent"),
    ("calc", (), "new check", "absent", "pass"),
    ("strings", ("parse",), "handles blanks", "fail", "pass"),
    ("strings", ("parse",), "trims", "pass", "pass"),
    ("strings", ("format",), "handles blanks", "pass", "pass"),
    ("strings", ("format",), "upper case", "fail", "fail"),
    ("strings", ("format",), "lower case", "pass", "fail"),
]
"""The JavaScript project every JS tool runs: same-named tests in two describe blocks and in two
files (one broken, one fixed), a pass that becomes a skip, a removed and an added test."""

SAME_NAME_SCENARIO: list[tuple[str, tuple[str, ...], str, str, str]] = [
    ("calc", ("parse",), "handles blanks", "pass", "fail"),
    ("strings", ("parse",), "handles blanks", "fail", "pass"),
    ("calc", (), "stays green", "pass", "pass"),
]
"""Only the false pass of pooled names: the same describe and test in two files, one broken and
one fixed, and nothing else changed."""

TODO_SCENARIO: list[tuple[str, tuple[str, ...], str, str, str]] = [
    ("median", ("edge cases",), "empty input", "todo-pass", "todo-fail"),
    ("median", ("edge cases",), "single element", "pass", "pass"),
    ("median", (), "even length", "pass", "fail"),
    ("median", (), "odd length", "fail", "pass"),
]
"""A test marked todo that passed and now fails (node writes ``<skipped type="todo">`` and a
``<failure>`` for it and does not count it as failed), beside one regression and one fix."""

_JS_PROLOGUE = {
    "node": 'import { describe, it } from "node:test";\nimport assert from "node:assert";\n',
    "vitest": 'import { describe, it } from "vitest";\nimport assert from "node:assert";\n',
    "jest": 'const assert = require("node:assert");\n',
    "mocha": 'const assert = require("node:assert");\n',
}
_JS_SUFFIX = {"node": ".test.mjs", "vitest": ".test.mjs", "jest": ".test.js", "mocha": ".test.js"}


def write_js_sources(
    tool: str,
    side: str,
    project: Path,
    scenario: list[tuple[str, tuple[str, ...], str, str, str]] = JS_SCENARIO,
) -> list[str]:
    files: dict[str, list[str]] = {}
    for file, path, name, base, cur in scenario:
        outcome = base if side == "baseline" else cur
        if outcome == "absent":
            continue
        body = files.setdefault(file, [])
        opener = "it.skip" if outcome == "skip" else "it"
        # todo-pass / todo-fail: a test marked ``{ todo: true }`` whose body passes or fails
        # (the spec reporter then ends its line with ``# TODO``; a todo reason would replace it)
        options = "{ todo: true }, " if outcome.startswith("todo") else ""
        check = (
            f"assert.equal({json.dumps(name)}, 'ok');"
            if outcome in ("fail", "todo-fail")
            else "assert.equal(1, 1);"
        )
        line = f"{opener}({json.dumps(name)}, {options}() => {{ {check} }});"
        body.append(
            "\n".join(
                [
                    *(f"describe({json.dumps(d)}, () => {{" for d in path),
                    line,
                    *("});" for _ in path),
                ]
            )
        )
    names = []
    for file, body in files.items():
        filename = f"{file}{_JS_SUFFIX[tool]}"
        (project / filename).write_text(_JS_PROLOGUE[tool] + "\n".join(body) + "\n")
        names.append(filename)
    return sorted(names)


_SPEC_LINE = re.compile(
    r"^(?P<indent> *)(?P<mark>▶|✔|✖|﹣) (?P<name>.*?)(?: \([\d.]+m?s\))?(?P<note> # .*)?$"
)


def node_truth(log: str) -> dict[str, list[dict[str, Any]]]:
    """Tests from node's spec reporter: ``▶`` opens a describe, ``✔``/``✖``/``﹣`` end a test
    (or close the describe of that name at the same indent); ``# TODO`` is unassessed. A test
    path met twice (the same describe and name in a later file) is numbered ``#2``."""
    tests: dict[str, list[dict[str, Any]]] = {}
    stack: list[tuple[int, str]] = []
    for line in log.splitlines():
        if line.startswith("ℹ "):
            break
        match = _SPEC_LINE.match(line)
        if match is None:
            continue
        indent, mark, name = len(match["indent"]), match["mark"], match["name"]
        while stack and stack[-1][0] > indent:
            stack.pop()
        if mark == "▶":
            stack.append((indent, name))
            continue
        if stack and stack[-1] == (indent, name):
            stack.pop()  # the describe's own closing line
            continue
        note = (match["note"] or "").strip()
        if note.startswith("# TODO"):
            outcome = "skip"
        else:
            outcome = {"✔": "pass", "✖": "fail", "﹣": "skip"}[mark]
        case = " > ".join([*(label for _, label in stack), name])
        number = 1
        key = case
        while key in tests:
            number += 1
            key = f"{case} #{number}"
        tests[key] = [{"outcome": outcome}]
    return tests


def make_node(pair_name: str = "node", scenario: list[Any] = JS_SCENARIO) -> None:
    version = _run(["node", "--version"], HERE).strip()
    pair = HERE / pair_name
    pair.mkdir(exist_ok=True)
    project = _fresh(pair_name)
    sides = {}
    for side in ("baseline", "current"):
        _place(project, SOURCES / "empty")
        files = write_js_sources("node", side, project, scenario)
        log = _run(
            [
                "node",
                "--test",
                "--test-reporter=junit",
                f"--test-reporter-destination={side}.xml",
                "--test-reporter=spec",
                "--test-reporter-destination=stdout",
                *files,
            ],
            project,
        )
        shutil.copyfile(project / f"{side}.xml", pair / f"{side}.xml")
        (pair / f"{side}.log").write_text(_plain(log, project))
        sides[side] = node_truth(log)
    command = "node --test --test-reporter=junit --test-reporter=spec " + " ".join(files)
    write_truth(pair, "node --test (junit reporter)", f"node {version}", command, sides)


# -- jest + jest-junit, vitest, mocha + mocha-junit-reporter ---------------------------------


def _npm_version(modules: Path, package: str) -> str:
    data = json.loads((modules / package / "package.json").read_text())
    return f"{package} {data['version']}"


def _jest_like_truth(report: dict[str, Any], case_of: Any) -> dict[str, list[dict[str, Any]]]:
    """Tests from a jest-style JSON report (``testResults[].assertionResults[]``), in file order;
    a repeated id in a later file is numbered ``#2``."""
    tests: dict[str, list[dict[str, Any]]] = {}
    for file in report["testResults"]:
        for result in file["assertionResults"]:
            status = result["status"]
            outcome = {"passed": "pass", "failed": "fail"}.get(status, "skip")
            case = case_of(file, result)
            key, number = case, 1
            while key in tests:
                number += 1
                key = f"{case} #{number}"
            tests[key] = [{"outcome": outcome, "status": status}]
    return tests


def make_jest(modules: Path) -> None:
    pair = HERE / "jest"
    pair.mkdir(exist_ok=True)
    project = _fresh("jest")
    (project / "package.json").write_text('{"name": "corpus", "private": true}\n')
    sides = {}
    for side in ("baseline", "current"):
        _place(project, SOURCES / "empty")
        write_js_sources("jest", side, project)
        _run(
            [
                str(modules / ".bin" / "jest"),
                "--rootDir",
                ".",
                "--runInBand",
                "--reporters=default",
                f"--reporters={modules / 'jest-junit'}",
                "--json",
                f"--outputFile={side}.json",
            ],
            project,
            {"JEST_JUNIT_OUTPUT_FILE": f"{side}.xml"},
        )
        shutil.copyfile(project / f"{side}.xml", pair / f"{side}.xml")
        report = json.loads((project / f"{side}.json").read_text())
        (pair / f"{side}.json").write_text(
            _plain(json.dumps(_jest_summary(report), indent=1), project)
        )
        sides[side] = _jest_like_truth(
            report,
            lambda file, r: (
                " ".join([*r["ancestorTitles"], r["title"]])
                if r["ancestorTitles"]
                else f" {r['title']}"
            ),
        )
    version = ", ".join(_npm_version(modules, p) for p in ("jest", "jest-junit"))
    command = (
        "jest --runInBand --reporters=default --reporters=jest-junit --json --outputFile=SIDE.json"
    )
    write_truth(pair, "jest + jest-junit", version, command, sides)


def _jest_summary(report: dict[str, Any]) -> dict[str, Any]:
    """The verdict part of a jest-style JSON report (messages and timings left out)."""
    return {
        "testResults": [
            {
                "name": Path(file["name"]).name,
                "assertionResults": [
                    {
                        key: r[key]
                        for key in ("ancestorTitles", "title", "status", "fullName")
                        if key in r
                    }
                    for r in file["assertionResults"]
                ],
            }
            for file in report["testResults"]
        ]
    }


def make_vitest(modules: Path) -> None:
    pair = HERE / "vitest"
    pair.mkdir(exist_ok=True)
    project = _fresh("vitest")
    (project / "package.json").write_text('{"name": "corpus", "private": true, "type": "module"}\n')
    sides = {}
    for side in ("baseline", "current"):
        _place(project, SOURCES / "empty")
        files = write_js_sources("vitest", side, project)
        _run(
            [
                str(modules / ".bin" / "vitest"),
                "run",
                "--root",
                ".",
                "--reporter=junit",
                f"--outputFile.junit={side}.xml",
                "--reporter=json",
                f"--outputFile.json={side}.json",
                *files,
            ],
            project,
        )
        shutil.copyfile(project / f"{side}.xml", pair / f"{side}.xml")
        report = json.loads((project / f"{side}.json").read_text())
        report["testResults"].sort(key=lambda file: file["name"])
        (pair / f"{side}.json").write_text(
            _plain(json.dumps(_jest_summary(report), indent=1), project)
        )
        sides[side] = _jest_like_truth(
            report,
            lambda file, r: (
                f"{Path(file['name']).name}::" + " > ".join([*r["ancestorTitles"], r["title"]])
            ),
        )
    version = _npm_version(modules, "vitest")
    command = "vitest run --reporter=junit --reporter=json calc.test.mjs strings.test.mjs"
    write_truth(pair, "vitest (junit reporter)", version, command, sides)


_MOCHA_HOOK = {
    "baseline": "beforeEach(() => { log.length = 0; });",
    "current": 'beforeEach(() => { throw new Error("audit store is not reachable"); });',
}


def write_mocha_hook_sources(side: str, project: Path) -> list[str]:
    """A describe whose ``beforeEach`` starts throwing in the current side (mocha then fails the
    hook, not the tests, and runs none of that describe's tests), beside a plain regression."""
    (project / "audit.test.js").write_text(
        _JS_PROLOGUE["mocha"]
        + "const log = [];\n"
        + 'describe("audit log", () => {\n'
        + f"  {_MOCHA_HOOK[side]}\n"
        + '  it("records restocks", () => { log.push(1); assert.equal(log.length, 1); });\n'
        + '  it("records removals", () => { log.push(2); assert.equal(log.length, 1); });\n'
        + "});\n"
        + 'describe("inventory", () => {\n'
        + '  it("counts items", () => { assert.equal(2, 2); });\n'
        + (
            '  it("labels items", () => { assert.equal("sku", "name"); });\n'
            if side == "current"
            else '  it("labels items", () => { assert.equal(1, 1); });\n'
        )
        + "});\n"
    )
    return ["audit.test.js"]


def make_mocha(modules: Path, pair_name: str = "mocha", hook: bool = False) -> None:
    pair = HERE / pair_name
    pair.mkdir(exist_ok=True)
    project = _fresh(pair_name)
    sides = {}
    for side in ("baseline", "current"):
        _place(project, SOURCES / "empty")
        if hook:
            files = write_mocha_hook_sources(side, project)
        else:
            files = write_js_sources("mocha", side, project)
        mocha = str(modules / ".bin" / "mocha")
        _run(
            [
                mocha,
                "--reporter",
                "mocha-junit-reporter",
                "--reporter-options",
                f"mochaFile={side}.xml,includePending=true",
                *files,
            ],
            project,
            any_failures=True,
        )
        log = _run([mocha, "--reporter", "json", *files], project, any_failures=True)
        report = json.loads(log[log.index("{") :])
        shutil.copyfile(project / f"{side}.xml", pair / f"{side}.xml")
        order = [(Path(t["file"]).name, t["fullTitle"]) for t in report["tests"]]
        verdicts: dict[str, list[list[str]]] = {
            key: [[Path(t["file"]).name, t["fullTitle"]] for t in report[key]]
            for key in ("passes", "failures", "pending")
        }
        # a failing hook is reported among the failures under its own title, not as a test
        order += [(f, t) for f, t in verdicts["failures"] if (f, t) not in order]
        (pair / f"{side}.json").write_text(
            json.dumps({"tests": order, **verdicts}, indent=1) + "\n"
        )
        outcome_of = {
            (file, title): outcome
            for key, outcome in (("passes", "pass"), ("failures", "fail"), ("pending", "skip"))
            for file, title in verdicts[key]
        }
        tests: dict[str, list[dict[str, Any]]] = {}
        for file, title in order:
            case, number = title, 1
            while case in tests:
                number += 1
                case = f"{title} #{number}"
            tests[case] = [{"outcome": outcome_of[(file, title)], "file": file}]
        sides[side] = tests
    version = ", ".join(_npm_version(modules, p) for p in ("mocha", "mocha-junit-reporter"))
    command = (
        "mocha --reporter mocha-junit-reporter --reporter-options includePending=true"
        " (and --reporter json for the truth)"
    )
    write_truth(pair, "mocha + mocha-junit-reporter", version, command, sides)


# -- ctest ----------------------------------------------------------------------------------

_CTEST_LINE = re.compile(
    r"Test +#\d+: (?P<name>\S+) \.*\s*(?:\*\*\*)?(?P<word>[A-Za-z ]+?)\s+[\d.]+ sec"
)


def ctest_truth(log: str) -> dict[str, list[dict[str, Any]]]:
    """Tests from ctest's own progress lines (``1/6 Test #1: add ....   Passed  0.01 sec``)."""
    tests: dict[str, list[dict[str, Any]]] = {}
    for match in _CTEST_LINE.finditer(log):
        word = match["word"].strip()
        outcome = (
            "pass" if word == "Passed" else "skip" if word in ("Skipped", "Not Run") else "fail"
        )
        tests.setdefault(match["name"], []).append({"outcome": outcome, "word": word})
    return tests


def make_ctest() -> None:
    version = _run(["ctest", "--version"], HERE).splitlines()[0].strip()
    pair = HERE / "ctest"
    pair.mkdir(exist_ok=True)
    project = _fresh("ctest")
    sides = {}
    for side in ("baseline", "current"):
        _place(project, SOURCES / "ctest" / side)
        build = project / "build"
        _run(["cmake", "-S", str(project), "-B", str(build)], project)
        log = _run(["ctest", "--output-junit", f"../{side}.xml"], build, any_failures=True)
        shutil.copyfile(project / f"{side}.xml", pair / f"{side}.xml")
        (pair / f"{side}.log").write_text(_plain(log, project))
        sides[side] = ctest_truth(log)
    write_truth(pair, "ctest", version, "ctest --output-junit ../SIDE.xml", sides)


# -- producers added for issue 23 (pairs under producers/) --------------------------------------

PRODUCERS = HERE / "producers"
"""The pairs of the producers read only by their shape so far (GoogleTest, Catch2, RSpec, Robot
Framework, Playwright, PHPUnit, cargo's libtest, gotestsum), one folder per shape."""


def _producer_pair(name: str) -> tuple[Path, Path]:
    pair = PRODUCERS / name
    pair.mkdir(parents=True, exist_ok=True)
    return pair, _fresh(name)


def _numbered(tests: dict[str, list[dict[str, Any]]], case: str) -> str:
    """The key of the next test met under ``case``: a test id met again in the same document
    (the same name twice) is numbered ``#2``, ``#3`` in document order."""
    key, number = case, 1
    while key in tests:
        number += 1
        key = f"{case} #{number}"
    return key


# GoogleTest ------------------------------------------------------------------------------------

_GTEST_RUN = re.compile(r"^\[ RUN      \] (?P<id>\S+)$")
_GTEST_END = re.compile(
    r"^\[ +(?P<word>OK|FAILED|SKIPPED) +\] (?P<id>[^\s,]+)(?:, where .*)? \(\d+ ms\)$"
)
_GTEST_DISABLED = re.compile(r"YOU HAVE (?P<count>\d+) DISABLED TESTS?")


def googletest_truth(log: str, listing: str) -> dict[str, list[dict[str, Any]]]:
    """Tests from GoogleTest's console: each ``[ RUN      ] Suite.Test`` ends with ``[       OK ]``,
    ``[  FAILED  ]`` or ``[  SKIPPED ]`` and a time (the summary lines after the run carry no
    time and are not read). A disabled test is never run: its name comes from
    ``--gtest_list_tests`` (a ``DISABLED_`` suite or test name) and the count from the console's
    ``YOU HAVE N DISABLED TESTS``. The key is ``Suite::Test`` (the XML's classname::name); a
    repeated run (``--gtest_repeat``) would add attempts to the same key."""
    tests: dict[str, list[dict[str, Any]]] = {}
    running = None
    for line in log.splitlines():
        started = _GTEST_RUN.match(line)
        if started:
            running = started["id"]
            continue
        ended = _GTEST_END.match(line)
        if ended and ended["id"] == running:
            suite, name = running.split(".", 1)
            outcome = {"OK": "pass", "FAILED": "fail", "SKIPPED": "skip"}[ended["word"]]
            # each --gtest_repeat iteration is a run of its own, not a rerun of a failure
            tests.setdefault(f"{suite}::{name}", []).append(
                {"outcome": outcome, "word": ended["word"]}
            )
            running = None
    disabled = []
    suite = ""
    for line in listing.splitlines():
        if not line.startswith(" ") and line.endswith("."):
            suite = line[:-1]
        elif line.startswith("  ") and suite:
            name = line.split("#")[0].strip()
            if suite.startswith("DISABLED_") or name.startswith("DISABLED_"):
                disabled.append(f"{suite}::{name}")
    counted = _GTEST_DISABLED.search(log)
    if len(disabled) != (int(counted["count"]) if counted else 0):
        sys.exit(f"gtest: {len(disabled)} DISABLED_ names listed, console says {counted}")
    for case in disabled:
        tests[case] = [{"outcome": "skip", "word": "DISABLED"}]
    return tests


GTEST_SHAPES = {
    "googletest-same-name": "SAME_NAME",
    "googletest-param": "PARAM",
    "googletest-disabled": "DISABLED",
    "googletest-disabled-suite": "DISABLED_SUITE",
    "googletest-skip": "SKIP",
    "googletest-repeat": "REPEAT",
}
"""One pair per shape of sources/googletest (chosen with -D at compile time)."""


GTEST_LINK = ("-lgtest", "-lgtest_main", "-pthread")


def make_googletest(pair_name: str, shape: str) -> None:
    pair, project = _producer_pair(pair_name)
    version = "googletest " + _dpkg_version("libgtest-dev")
    sides = {}
    for side in ("baseline", "current"):
        _place(project, SOURCES / "googletest" / side)
        _run(
            ["g++", f"-D{shape}", "-o", "calc_test", "calc_test.cc", *GTEST_LINK],
            project,
        )
        repeat = ["--gtest_repeat=2"] if shape == "REPEAT" else []
        log = _run(["./calc_test", f"--gtest_output=xml:{side}.xml", *repeat], project)
        listing = _run(["./calc_test", "--gtest_list_tests"], project)
        shutil.copyfile(project / f"{side}.xml", pair / f"{side}.xml")
        (pair / f"{side}.log").write_text(
            _plain(log + "\n$ --gtest_list_tests\n" + listing, project)
        )
        sides[side] = googletest_truth(log, listing)
    shown_repeat = " --gtest_repeat=2" if shape == "REPEAT" else ""
    command = (
        f"g++ -D{shape} calc_test.cc -lgtest -lgtest_main -pthread;"
        f" ./calc_test --gtest_output=xml:SIDE.xml{shown_repeat} (and --gtest_list_tests)"
    )
    write_truth(pair, "googletest", version, command, sides)


def _dpkg_version(package: str) -> str:
    return _run(["dpkg-query", "-W", "-f", "${Version}", package], HERE).strip()


# Catch2 ----------------------------------------------------------------------------------------

_CATCH_RULE = "-" * 79
_CATCH_RESULT = re.compile(r"^\S+:\d+: (?P<word>PASSED|FAILED)(?: - but was ok)?:")


def catch2_truth(log: str, listing: str) -> dict[str, list[dict[str, Any]]]:
    """Test cases (and each leaf SECTION path, which Catch2 runs as its own pass through the
    test case) from the console reporter with ``-s``: a block opens with the test case name and
    its indented section names between two rules of dashes, then every assertion as
    ``file:line: PASSED:`` or ``FAILED:``. The tags come from ``--list-tests``: a failing
    ``[!mayfail]``/``[!shouldfail]`` case is "failed as expected" (skip, like pytest's XFAIL),
    a ``[!shouldfail]`` case whose assertions all pass is a failure (Catch2 counts it failed).
    The key is the test case name, with ``/section`` appended per section, as Catch2's JUnit
    reporter names it."""
    lines = log.splitlines()
    found: dict[str, list[str]] = {}
    order: list[str] = []
    index = 0
    current = None
    while index < len(lines):
        if lines[index] == _CATCH_RULE:
            end = lines.index(_CATCH_RULE, index + 1)
            header = [line.strip() for line in lines[index + 1 : end]]
            current = "/".join(header)
            if current not in found:
                found[current] = []
                order.append(current)
            index = end + 1
            continue
        result = _CATCH_RESULT.match(lines[index])
        if result and current is not None:
            found[current].append(result["word"])
        index += 1
    tags: dict[str, str] = {}
    listed = listing.splitlines()
    for at, line in enumerate(listed):
        if line.startswith("  ") and not line.startswith("   ") and at + 1 < len(listed):
            tags[line.strip()] = listed[at + 1].strip()
    tests: dict[str, list[dict[str, Any]]] = {}
    for case in order:
        failed = "FAILED" in found[case]
        tag = tags.get(case.split("/")[0], "")
        if "[!shouldfail]" in tag:
            outcome, word = ("skip", "failed as expected") if failed else ("fail", "passed")
        elif "[!mayfail]" in tag and failed:
            outcome, word = "skip", "failed as expected"
        else:
            outcome, word = ("fail", "failed") if failed else ("pass", "passed")
        tests[case] = [{"outcome": outcome, "word": word, "tags": tag}]
    return tests


def make_catch2() -> None:
    pair, project = _producer_pair("catch2")
    sides = {}
    version = ""
    for side in ("baseline", "current"):
        _place(project, SOURCES / "catch2" / side)
        _run(["g++", "-o", "calc_test", "calc_test.cpp"], project)
        # the same binary name on both sides: Catch2's classname is "<binary>.global"
        _run(["./calc_test", "-r", "junit", "-o", f"{side}.xml"], project, any_failures=True)
        log = _run(["./calc_test", "-s"], project, any_failures=True)
        listing = _run(["./calc_test", "--list-tests"], project, any_failures=True)
        version = re.search(r"Catch v(\S+)", log)[1]  # type: ignore[index]
        shutil.copyfile(project / f"{side}.xml", pair / f"{side}.xml")
        (pair / f"{side}.log").write_text(_plain(log + "\n$ --list-tests\n" + listing, project))
        sides[side] = catch2_truth(log, listing)
    command = "./calc_test -r junit -o SIDE.xml (truth: ./calc_test -s, ./calc_test --list-tests)"
    write_truth(
        pair,
        "catch2",
        f"Catch2 {version} (Debian catch2 {_dpkg_version('catch2')})",
        command,
        sides,
    )


# RSpec + rspec_junit_formatter ------------------------------------------------------------------


def make_rspec() -> None:
    pair, project = _producer_pair("rspec")
    sides = {}
    for side in ("baseline", "current"):
        _place(project, SOURCES / "rspec" / side)
        log = _run(
            [
                "rspec",
                "--order",
                "defined",
                "--format",
                "RspecJunitFormatter",
                "--out",
                f"{side}.xml",
                "--format",
                "documentation",
                "--format",
                "json",
                "--out",
                f"{side}.json",
            ],
            project,
        )
        xml = (project / f"{side}.xml").read_text()
        host = socket.gethostname()
        (pair / f"{side}.xml").write_text(xml.replace(f'hostname="{host}"', 'hostname="HOST"'))
        report = json.loads((project / f"{side}.json").read_text())
        summary = [
            {
                key: example[key]
                for key in ("id", "full_description", "status", "file_path", "line_number")
            }
            for example in report["examples"]
        ]
        (pair / f"{side}.json").write_text(json.dumps({"examples": summary}, indent=1) + "\n")
        (pair / f"{side}.log").write_text(_plain(log, project))
        tests: dict[str, list[dict[str, Any]]] = {}
        for example in summary:
            outcome = {"passed": "pass", "failed": "fail"}.get(example["status"], "skip")
            case = f"{example['file_path']}::{example['full_description']}"
            tests[_numbered(tests, case)] = [
                {"outcome": outcome, "status": example["status"], "rspec_id": example["id"]}
            ]
        sides[side] = tests
    version = _run(["rspec", "--version"], HERE).split("\n")
    formatter = _dpkg_version("ruby-rspec-junit-formatter")
    write_truth(
        pair,
        "rspec + rspec_junit_formatter",
        f"{' '.join(version[1].split()[1:]) if len(version) > 1 else version[0]}"
        f" ({version[0].strip()}), rspec_junit_formatter {formatter}",
        "rspec --order defined --format RspecJunitFormatter --out SIDE.xml"
        " --format documentation --format json --out SIDE.json",
        sides,
    )


# Robot Framework ---------------------------------------------------------------------------------


def robot_truth(*outputs: Path) -> dict[str, list[dict[str, Any]]]:
    """Tests from Robot's own output.xml (each ``<test>``'s own ``<status>``), one file per run:
    a later file (``--rerunfailed``) adds a rerun attempt. The key is ``suite::test`` (the xunit
    classname::name); two tests of one name in one suite are ``name #2`` in document order."""
    import xml.etree.ElementTree as ET

    tests: dict[str, list[dict[str, Any]]] = {}
    for number, output in enumerate(outputs):
        seen: dict[str, list[dict[str, Any]]] = {}
        for suite in ET.parse(output).iter("suite"):
            for test in suite.findall("test"):
                status = test.find("status")
                assert status is not None
                word = status.get("status", "")
                outcome = {"PASS": "pass", "FAIL": "fail"}.get(word, "skip")
                key = _numbered(seen, f"{suite.get('name')}::{test.get('name')}")
                seen[key] = []
                tests.setdefault(key, []).append(
                    {
                        "outcome": outcome,
                        "word": word,
                        "robot_id": test.get("id"),
                        "rerun": number > 0,
                    }
                )
    return tests


def make_robot(robot_bin: Path) -> None:
    pair, project = _producer_pair("robot")
    sides = {}
    for side in ("baseline", "current"):
        _place(project, SOURCES / "robot" / side)
        log = _run(
            [
                str(robot_bin / "robot"),
                "--xunit",
                f"{side}.xml",
                "--output",
                f"{side}-output.xml",
                "--log",
                "NONE",
                "--report",
                "NONE",
                "checks.robot",
            ],
            project,
            any_failures=True,
        )
        shutil.copyfile(project / f"{side}.xml", pair / f"{side}.xml")
        (pair / f"{side}.log").write_text(_plain(log, project))
        sides[side] = robot_truth(project / f"{side}-output.xml")
        _robot_statuses(pair / f"{side}.json", project / f"{side}-output.xml")
    version = _robot_version(robot_bin)
    write_truth(
        pair,
        "robot --xunit",
        version,
        "robot --xunit SIDE.xml --output SIDE-output.xml checks.robot",
        sides,
    )


def _robot_statuses(target: Path, *outputs: Path) -> None:
    """Each output.xml's tests as Robot wrote them (suite, id, name, own status and message),
    kept beside the pair: the truth is read from these files, which are too large to keep."""
    import xml.etree.ElementTree as ET

    kept: dict[str, list[dict[str, str | None]]] = {}
    for output in outputs:
        rows = kept.setdefault(output.name, [])
        for suite in ET.parse(output).iter("suite"):
            for test in suite.findall("test"):
                status = test.find("status")
                assert status is not None
                rows.append(
                    {
                        "suite": suite.get("name"),
                        "id": test.get("id"),
                        "name": test.get("name"),
                        "status": status.get("status"),
                        "message": status.text,
                    }
                )
    target.write_text(json.dumps(kept, indent=1) + "\n")


def _robot_version(robot_bin: Path) -> str:
    """``robot --version`` prints ``Robot Framework 7.5 (Python ...)`` and exits 251."""
    done = subprocess.run(
        [str(robot_bin / "robot"), "--version"], capture_output=True, text=True, check=False
    )
    return done.stdout.split(" (")[0].strip()


def make_robot_rerun(robot_bin: Path) -> None:
    pair, project = _producer_pair("robot-rerun")
    robot, rebot = str(robot_bin / "robot"), str(robot_bin / "rebot")
    quiet = ["--log", "NONE", "--report", "NONE"]
    sides = {}
    for side in ("baseline", "current"):
        _place(project, SOURCES / "robot-rerun" / side)
        log = _run(
            [robot, "--output", "first.xml", *quiet, "checks.robot"], project, any_failures=True
        )
        outputs = [project / "first.xml"]
        if "0 failed" not in log:
            log += _run(
                [
                    robot,
                    "--rerunfailed",
                    "first.xml",
                    "--output",
                    "rerun.xml",
                    *quiet,
                    "checks.robot",
                ],
                project,
                any_failures=True,
            )
            outputs.append(project / "rerun.xml")
        log += _run(
            [
                rebot,
                "--merge",
                "--xunit",
                f"{side}.xml",
                "--output",
                "merged.xml",
                *quiet,
                *(path.name for path in outputs),
            ],
            project,
            any_failures=True,
        )
        shutil.copyfile(project / f"{side}.xml", pair / f"{side}.xml")
        (pair / f"{side}.log").write_text(_plain(log, project))
        sides[side] = robot_truth(*outputs)
        _robot_statuses(pair / f"{side}.json", *outputs)
    version = _robot_version(robot_bin)
    write_truth(
        pair,
        "robot --rerunfailed + rebot --merge --xunit",
        version,
        "robot --output first.xml; robot --rerunfailed first.xml --output rerun.xml (if any"
        " failed); rebot --merge --xunit SIDE.xml first.xml [rerun.xml]",
        sides,
    )


# Playwright Test ----------------------------------------------------------------------------------


def playwright_truth(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Tests from Playwright's json reporter: every spec's ``tests[]`` (one per project) with its
    ``results[]`` (one per try; ``retry`` > 0 is a rerun). A try whose status is the expected
    one passes, except under ``test.fail()`` (``expectedStatus`` failed), where an expected
    failure is a skip (like pytest's XFAIL) and a pass is a failure. The key is
    ``project::file::describe › title`` (the project is the JUnit testsuite's hostname)."""
    tests: dict[str, list[dict[str, Any]]] = {}

    def walk(suite: dict[str, Any], titles: list[str]) -> None:
        for spec in suite.get("specs", []):
            for test in spec["tests"]:
                case = "::".join(
                    [test["projectName"], spec["file"], " › ".join([*titles, spec["title"]])]
                )
                attempts = []
                for result in test["results"]:
                    status, expected = result["status"], test["expectedStatus"]
                    if status == "skipped":
                        outcome = "skip"
                    elif expected == "failed":
                        outcome = "skip" if status == "failed" else "fail"
                    else:
                        outcome = "pass" if status == "passed" else "fail"
                    attempts.append(
                        {
                            "outcome": outcome,
                            "status": status,
                            "expected": expected,
                            "rerun": result["retry"] > 0,
                        }
                    )
                tests[_numbered(tests, case)] = attempts
        for child in suite.get("suites", []):
            walk(child, [*titles, child["title"]])

    for suite in report["suites"]:
        walk(suite, [])
    return tests


def _playwright_summary(report: dict[str, Any]) -> Any:
    """The verdict part of Playwright's json report: suites, specs, each project's test with its
    expected status and every try's status and retry (errors, output and times left out)."""

    def suite(node: dict[str, Any]) -> dict[str, Any]:
        return {
            "title": node["title"],
            "specs": [
                {
                    "title": spec["title"],
                    "file": spec["file"],
                    "tests": [
                        {
                            "projectName": test["projectName"],
                            "expectedStatus": test["expectedStatus"],
                            "status": test["status"],
                            "results": [
                                {"retry": r["retry"], "status": r["status"]}
                                for r in test["results"]
                            ],
                        }
                        for test in spec["tests"]
                    ],
                }
                for spec in node.get("specs", [])
            ],
            "suites": [suite(child) for child in node.get("suites", [])],
        }

    return {"suites": [suite(node) for node in report["suites"]], "stats": report["stats"]}


def make_playwright(modules: Path, pair_name: str) -> None:
    pair, project = _producer_pair(pair_name)
    (project / "package.json").write_text('{"name": "corpus", "private": true, "type": "module"}\n')
    (project / "node_modules").symlink_to(modules)
    sides = {}
    for side in ("baseline", "current"):
        _place(project, SOURCES / pair_name / side)
        config = project / "playwright.config.mjs"
        config.write_text(config.read_text().replace("SIDE", side))
        log = _run(
            [str(modules / ".bin" / "playwright"), "test"],
            project,
            {"PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"},
        )
        shutil.copyfile(project / f"{side}.xml", pair / f"{side}.xml")
        report = json.loads((project / f"{side}.json").read_text())
        tests = playwright_truth(report)
        (pair / f"{side}.json").write_text(json.dumps(_playwright_summary(report), indent=1) + "\n")
        (pair / f"{side}.log").write_text(_plain(log, project))
        sides[side] = tests
    version = _npm_version(modules, "@playwright/test")
    write_truth(
        pair,
        "playwright test (junit reporter)",
        version,
        "playwright test (reporters junit, json, list in playwright.config.mjs)",
        sides,
    )


# PHPUnit ----------------------------------------------------------------------------------------

_TEAMCITY = re.compile(r"^##teamcity\[(?P<event>test\w+) name='(?P<name>(?:[^'|]|\|.)*)'")


def phpunit_truth(log: str) -> dict[str, list[dict[str, Any]]]:
    """Tests from PHPUnit's ``--teamcity`` events: ``testSuiteStarted`` names the class (and,
    for a data provider, the method), ``testStarted``/``testFailed``/``testIgnored``/
    ``testFinished`` one test. The key is ``Class::method with data set #N`` (the JUnit
    classname::name)."""
    tests: dict[str, list[dict[str, Any]]] = {}
    classes: list[str] = []
    for line in log.splitlines():
        match = _TEAMCITY.match(line)
        if match is None:
            continue
        event, name = match["event"], match["name"]
        if event == "testSuiteStarted":
            classes.append(name)
        elif event == "testSuiteFinished":
            classes.pop()
        elif event == "testStarted":
            owner = next(
                c
                for c in reversed(classes)
                if "/" not in c
                and "::" not in c
                and not name.startswith(c + " ")
                and c != name.split(" with ")[0]
            )
            tests[f"{owner}::{name}"] = [{"outcome": "pass", "event": "testFinished"}]
        elif event in ("testFailed", "testIgnored"):
            key = next(k for k in reversed(list(tests)) if k.endswith(f"::{name}"))
            outcome = "fail" if event == "testFailed" else "skip"
            tests[key] = [{"outcome": outcome, "event": event}]
    return tests


def make_phpunit() -> None:
    pair, project = _producer_pair("phpunit")
    sides = {}
    for side in ("baseline", "current"):
        _place(project, SOURCES / "phpunit" / side)
        log = _run(["phpunit", "--log-junit", f"{side}.xml", "--teamcity", "tests"], project)
        shutil.copyfile(project / f"{side}.xml", pair / f"{side}.xml")
        (pair / f"{side}.log").write_text(_plain(log, project))
        sides[side] = phpunit_truth(log)
    version = _run(["phpunit", "--version"], HERE).split(" by ")[0].strip()
    write_truth(
        pair, "phpunit --log-junit", version, "phpunit --log-junit SIDE.xml --teamcity tests", sides
    )


# cargo libtest ----------------------------------------------------------------------------------

_CARGO_RUNNING = re.compile(r"^\s+(?:Running (?:unittests )?(?P<src>\S+)|Doc-tests (?P<doc>\S+))")
_CARGO_TEST = re.compile(r"^test (?P<path>\S+) \.\.\. (?P<word>ok|FAILED|ignored)")


def cargo_truth(log: str, crate: str) -> dict[str, list[dict[str, Any]]]:
    """Tests from plain ``cargo test`` output: ``Running unittests src/lib.rs (...)`` or
    ``Running tests/payouts.rs (...)`` opens a test binary, ``test path ... ok|FAILED|ignored``
    is one test. The key is ``binary::path`` (the crate's name for its unit tests, the file stem
    of an integration test); libtest's JUnit names both integration binaries ``integration``."""
    tests: dict[str, list[dict[str, Any]]] = {}
    binary = ""
    for line in log.splitlines():
        opened = _CARGO_RUNNING.match(line)
        if opened:
            source = opened["src"] or ""
            binary = crate if source.startswith("src/") or opened["doc"] else Path(source).stem
            continue
        found = _CARGO_TEST.match(line)
        if found:
            outcome = {"ok": "pass", "FAILED": "fail", "ignored": "skip"}[found["word"]]
            tests[f"{binary}::{found['path']}"] = [{"outcome": outcome, "word": found["word"]}]
    return tests


def make_cargo() -> None:
    pair, project = _producer_pair("cargo-libtest")
    sides = {}
    for side in ("baseline", "current"):
        _place(project, SOURCES / "cargo-libtest" / side)
        # one target folder per side: the copied sources keep their times, which cargo compares
        env = {
            "CARGO_TARGET_DIR": str(WORK / f"cargo-target-{side}"),
            "RUST_BACKTRACE": "0",
            "CARGO_TERM_COLOR": "never",
        }
        done = subprocess.run(
            [
                "cargo",
                "test",
                "--offline",
                "--no-fail-fast",
                "--",
                "-Z",
                "unstable-options",
                "--format",
                "junit",
            ],
            cwd=project,
            env={**os.environ, **env, "RUSTC_BOOTSTRAP": "1"},
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode not in (0, 101):
            sys.exit(f"cargo exited {done.returncode}:\n{done.stderr}")
        (pair / f"{side}.xml").write_text(done.stdout)
        plain = subprocess.run(
            ["cargo", "test", "--offline", "--no-fail-fast"],
            cwd=project,
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        # cargo writes "Running" to stderr and the tests' lines to stdout: interleave by binary
        log = _cargo_interleave(plain.stderr, plain.stdout)
        (pair / f"{side}.log").write_text(_plain(log, project))
        sides[side] = cargo_truth(log, "ledger")
    version = _run(["cargo", "--version"], HERE).strip()
    rustc = _run(["rustc", "--version"], HERE).strip()
    write_truth(
        pair,
        "cargo test (libtest --format junit)",
        f"{version}, {rustc}",
        "RUSTC_BOOTSTRAP=1 cargo test --offline --no-fail-fast -- -Z unstable-options"
        " --format junit > SIDE.xml (truth: cargo test --offline --no-fail-fast)",
        sides,
    )


def _cargo_interleave(stderr: str, stdout: str) -> str:
    """cargo's ``Running`` lines (stderr) beside each binary's output (stdout): libtest starts
    each binary's output with ``running N tests``, in the order cargo ran them."""
    runs = [line for line in stderr.splitlines() if _CARGO_RUNNING.match(line)]
    blocks = re.split(r"(?m)^(?=running \d+ tests?$)", stdout)
    blocks = [block for block in blocks if block.startswith("running ")]
    if len(runs) != len(blocks):
        sys.exit(f"cargo: {len(runs)} binaries on stderr, {len(blocks)} on stdout")
    return "".join(f"{run}\n{block}" for run, block in zip(runs, blocks, strict=True))


# gotestsum ----------------------------------------------------------------------------------------


def gotest_truth(events: str) -> dict[str, list[dict[str, Any]]]:
    """Tests from ``go test -json`` events (gotestsum's ``--jsonfile``, every run including the
    ``--rerun-fails`` reruns): each ``pass``/``fail``/``skip`` action with a ``Test`` is one
    attempt; a later one of the same test is a rerun. The key is ``package::Test`` (gotestsum's
    JUnit classname::name; subtests are ``Test/sub``)."""
    tests: dict[str, list[dict[str, Any]]] = {}
    for line in events.splitlines():
        event = json.loads(line)
        if event.get("Test") and event["Action"] in ("pass", "fail", "skip"):
            key = f"{event['Package']}::{event['Test']}"
            outcome = {"pass": "pass", "fail": "fail", "skip": "skip"}[event["Action"]]
            tests.setdefault(key, []).append(
                {"outcome": outcome, "action": event["Action"], "rerun": key in tests}
            )
    return tests


def make_gotestsum(pair_name: str, rerun: bool) -> None:
    pair, project = _producer_pair(pair_name)
    env = {
        "GOCACHE": str(WORK / "gocache"),
        "GOPATH": str(WORK / "gopath"),
        "GOFLAGS": "-mod=mod",
        "GOPROXY": "off",
        "GOTOOLCHAIN": "local",
    }
    sides = {}
    for side in ("baseline", "current"):
        _place(project, SOURCES / pair_name / side)
        command = ["gotestsum", "--junitfile", f"{side}.xml", "--jsonfile", f"{side}.json"]
        if rerun:
            command += ["--rerun-fails=2", "--packages", "./...", "--", "-count=1"]
        else:
            command += ["--", "-count=1", "./..."]
        log = _run(command, project, env)
        shutil.copyfile(project / f"{side}.xml", pair / f"{side}.xml")
        (pair / f"{side}.log").write_text(_plain(log, project))
        events = (project / f"{side}.json").read_text()
        (pair / f"{side}.jsonl").write_text(_plain(events, project))
        sides[side] = gotest_truth(events)
    go = _run(["go", "version"], HERE).strip()
    version = f"gotestsum {_dpkg_version('gotestsum')} (its --version says dev), {go}"
    shown = " ".join(
        ["gotestsum", "--junitfile", "SIDE.xml", "--jsonfile", "SIDE.json", *command[5:]]
    )
    write_truth(pair, "gotestsum --junitfile", version, shown, sides)


def _plain(text: str, project: Path) -> str:
    return text.replace(str(project), "<project>")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "tool",
        choices=[
            "pytest",
            "pytest-rerunfailures",
            "node",
            "jest",
            "vitest",
            "mocha",
            "ctest",
            *NEW_PRODUCERS,
        ],
    )
    parser.add_argument(
        "--python", default=sys.executable, help="a Python with pytest (and the plugin)"
    )
    parser.add_argument(
        "--node-modules",
        type=Path,
        default=HERE / ".tools" / "node_modules",
        help="node_modules holding jest, jest-junit, vitest, mocha, mocha-junit-reporter",
    )
    parser.add_argument(
        "--robot-bin",
        type=Path,
        default=Path("/tmp/junit-tools/robot/bin"),
        help="the bin folder of a venv holding robotframework (robot, rebot)",
    )
    parser.add_argument(
        "--playwright-modules",
        type=Path,
        default=Path("/tmp/junit-tools/pw/node_modules"),
        help="node_modules holding @playwright/test",
    )
    args = parser.parse_args()
    (SOURCES / "empty").mkdir(exist_ok=True)
    if args.tool in NEW_PRODUCERS:
        NEW_PRODUCERS[args.tool](args)
        return
    if args.tool == "pytest":
        make_pytest(args.python, "pytest", [])
        make_pytest(args.python, "pytest-teardown", [], "pytest-teardown")
    elif args.tool == "pytest-rerunfailures":
        make_pytest(args.python, "pytest-rerunfailures", ["--reruns", "2"])
        make_pytest(
            args.python, "pytest-rerunfailures-fixture", ["--reruns", "2"], "pytest-fixture"
        )
    elif args.tool == "node":
        make_node()
        make_node("node-same-name", SAME_NAME_SCENARIO)
        make_node("node-todo", TODO_SCENARIO)
    elif args.tool == "jest":
        make_jest(args.node_modules.resolve())
    elif args.tool == "ctest":
        make_ctest()
    elif args.tool == "vitest":
        make_vitest(args.node_modules.resolve())
    else:
        make_mocha(args.node_modules.resolve())
        make_mocha(args.node_modules.resolve(), "mocha-hook", hook=True)


NEW_PRODUCERS: dict[str, Any] = {
    "googletest": lambda args: [make_googletest(p, s) for p, s in GTEST_SHAPES.items()],
    "catch2": lambda args: make_catch2(),
    "rspec": lambda args: make_rspec(),
    "robot": lambda args: (make_robot(args.robot_bin), make_robot_rerun(args.robot_bin)),
    "playwright": lambda args: [
        make_playwright(args.playwright_modules.resolve(), p)
        for p in ("playwright", "playwright-retries")
    ],
    "phpunit": lambda args: make_phpunit(),
    "cargo-libtest": lambda args: make_cargo(),
    "gotestsum": lambda args: (
        make_gotestsum("gotestsum", rerun=False),
        make_gotestsum("gotestsum-rerun", rerun=True),
    ),
}
"""The CLI name of each producer added for issue 23 and what it makes (pairs in producers/)."""


def _scrub_machine_paths() -> None:
    """Replace this machine's absolute paths in what the tool wrote (../scrub_paths.py)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "scrub_paths.py"
    spec = importlib.util.spec_from_file_location("scrub_paths", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.scrub_tree(Path(__file__).resolve().parent)


if __name__ == "__main__":
    main()
    _scrub_machine_paths()
