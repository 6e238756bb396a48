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


def _plain(text: str, project: Path) -> str:
    return text.replace(str(project), "<project>")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "tool",
        choices=["pytest", "pytest-rerunfailures", "node", "jest", "vitest", "mocha", "ctest"],
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
    args = parser.parse_args()
    (SOURCES / "empty").mkdir(exist_ok=True)
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
