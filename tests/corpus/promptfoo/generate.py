"""Make the promptfoo corpus with the real promptfoo CLI, and its truth from promptfoo's output.

    python tests/corpus/promptfoo/generate.py [--promptfoo PATH/TO/promptfoo] [--node-bin DIR]
    python tests/corpus/promptfoo/generate.py --truth-only

Without --promptfoo, promptfoo@0.121.20 is installed with npm into tests/corpus/promptfoo/.tools/
(git-ignored). The pairs `threshold`, `scoring_function` and `default_metric` were made with the
newest release (0.123.1), which needs Node 22: `--node-bin` puts that node first on PATH.
`--truth-only` recomputes truth.json from the files already in generated/ (each pair keeps the
promptfoo version that wrote it). Every run is offline: the built-in `echo` provider or the local
`file://scripted_provider.js`, `--no-cache -j 1`, telemetry and update checks off, promptfoo's
own state in a temporary folder. Each scenario is run twice (EVALARC_VARIANT=baseline, then
current) and written as generated/<scenario>.baseline.json and .current.json.

generated/truth.json is computed here from promptfoo's own JSON (its row verdicts `success`,
`failureReason`, `gradingResult.componentResults[].pass` and its `stats`), never by EvalArc:
per test x provider x prompt, for the test's own verdict (`success`, the check EvalArc names
`(test)`) and for each assertion (told apart by its content, type / value / metric, and an ordinal
among identical ones, never by its position), the pass and assessed counts on both sides, and
which of them lost passes or coverage.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "generated"
TOOLS = HERE / ".tools"
PROMPTFOO_VERSION = "0.121.20"
PROVIDER = "file://scripted_provider.js"
ERROR_REASON = 2
"""promptfoo's ResultFailureReason.ERROR: the provider (not an assertion) failed."""


def _threshold_tests() -> list[dict[str, Any]]:
    """A test-level ``threshold`` over the assertions' scores. The javascript assertion returns
    a score: 1 for a detailed answer, 0.5 otherwise, and passes either way (promptfoo passes a
    javascript score above 0)."""
    detailed = {"type": "javascript", "value": "output.includes('detailed') ? 1 : 0.5"}
    return [
        {
            # Every assertion passes in both runs; the aggregate 0.75 < 0.9 fails the test now.
            "description": "TH1 threshold lost while every assertion passes",
            "vars": {"before": "A detailed answer", "after": "An answer"},
            "threshold": 0.9,
            "assert": [detailed, {"type": "contains", "value": "answer"}],
        },
        {
            # One assertion fails in both runs, the aggregate 0.5 >= 0.5 passes the test.
            "description": "TH2 threshold met with a failing assertion",
            "vars": {"before": "An answer", "after": "An answer"},
            "threshold": 0.5,
            "assert": [
                {"type": "contains", "value": "answer"},
                {"type": "contains", "value": "appendix"},
            ],
        },
        {
            "description": "TH3 no threshold, unchanged",
            "vars": {"before": "A detailed answer", "after": "A detailed answer"},
            "assert": [{"type": "contains", "value": "answer"}],
        },
    ]


def _scoring_tests() -> list[dict[str, Any]]:
    """``assertScoringFunction`` (scoring.js): the test passes when its ``quality`` metric
    reaches 0.8; the javascript assertion passes with a score of 0.5 or 1."""
    quality = {
        "type": "javascript",
        "value": "output.includes('detailed') ? 1 : 0.5",
        "metric": "quality",
    }
    return [
        {
            "description": "SF1 scoring function fails while every assertion passes",
            "vars": {"before": "A detailed answer", "after": "An answer"},
            "assertScoringFunction": "file://scoring.js:strict",
            "assert": [quality, {"type": "contains", "value": "answer"}],
        },
        {
            "description": "SF2 scoring function passes in both runs",
            "vars": {"before": "A detailed answer", "after": "A detailed answer"},
            "assertScoringFunction": "file://scoring.js:strict",
            "assert": [quality],
        },
    ]


def _default_metric_tests() -> list[dict[str, Any]]:
    """Assertions named by the metric ``quality``; the current run prepends a ``defaultTest``
    assertion of the same metric to every test (see SCENARIOS)."""
    return [
        {
            # The metric-named assertion regresses; the prepended default one passes.
            "description": "D1 quality regresses behind a default assertion",
            "vars": {"before": "Hello Ada, welcome", "after": "Hello Grace, welcome"},
            "assert": [{"type": "contains", "value": "Ada", "metric": "quality"}],
        },
        {
            "description": "D2 quality kept",
            "vars": {"before": "Hello Bob, welcome", "after": "Hello Bob, welcome"},
            "assert": [{"type": "contains", "value": "Bob", "metric": "quality"}],
        },
        {
            # Two identical assertions: two checks, told apart by an ordinal among the two.
            "description": "D3 identical assertions",
            "vars": {"before": "Hi Cy, welcome", "after": "Hi Cy, welcome"},
            "assert": [
                {"type": "contains", "value": "Hi", "metric": "quality"},
                {"type": "contains", "value": "Hi", "metric": "quality"},
            ],
        },
    ]


DEFAULT_QUALITY = {"assert": [{"type": "icontains", "value": "welcome", "metric": "quality"}]}
BEFORE = {"prompts": [{"raw": "{{before}}", "label": "reply"}], "providers": ["echo"]}
AFTER = {"prompts": [{"raw": "{{after}}", "label": "reply"}], "providers": ["echo"]}


def _scripted(label: str, persona: str) -> dict[str, Any]:
    return {"id": PROVIDER, "label": label, "config": {"persona": persona}}


def _qa_tests() -> list[dict[str, Any]]:
    rows = [
        ("T01 capital of France", "Paris", {}),
        ("T02 capital of Japan", "Tokyo", {"broken_current": "all"}),
        ("T03 largest planet", "Jupiter", {}),
        ("T04 speed of light", "299792458", {"broken_baseline": "all"}),
        ("T05 water formula", "H2O", {"broken_current": "all", "broken_baseline": "all"}),
        ("T06 author of Hamlet", "Shakespeare", {}),
        ("T07 boiling point", "100", {"broken_baseline": "all"}),
        ("T08 smallest prime", "2", {}),
        ("T09 gold symbol", "Au", {"broken_current": "all"}),
        ("T10 deepest ocean", "Pacific", {}),
    ]
    tests = []
    for description, expect, extra in rows:
        tests.append(
            {
                "description": description,
                "vars": {"topic": description.split(" ", 1)[1], "expect": expect, **extra},
                "assert": [
                    {"type": "icontains", "value": expect},
                    {"type": "not-icontains", "value": "not sure"},
                    {"type": "javascript", "value": "output.length < 80", "metric": "brevity"},
                ],
            }
        )
    return tests


def _matrix_tests() -> list[dict[str, Any]]:
    tests = []
    for index, (topic, expect, extra) in enumerate(
        [
            ("capital of Italy", "Rome", {}),
            ("capital of Spain", "Madrid", {"broken_current": "alpha"}),
            ("capital of Peru", "Lima", {"broken_baseline": "alpha"}),
            ("capital of Kenya", "Nairobi", {"broken_baseline": "beta"}),
            ("capital of Chile", "Santiago", {}),
        ],
        start=1,
    ):
        tests.append(
            {
                "description": f"M{index} {topic}",
                "vars": {"topic": topic, "expect": expect, **extra},
                "assert": [{"type": "icontains", "value": expect}],
            }
        )
    return tests


def _error_tests() -> list[dict[str, Any]]:
    tests = []
    for index, (topic, expect, fail) in enumerate(
        [
            ("capital of Norway", "Oslo", "current"),
            ("capital of Egypt", "Cairo", "current"),
            ("capital of Canada", "Ottawa", "baseline"),
            ("capital of Ghana", "Accra", "both"),
            ("capital of Cuba", "Havana", ""),
        ],
        start=1,
    ):
        tests.append(
            {
                "description": f"P{index} {topic}",
                "vars": {"topic": topic, "expect": expect, "fail_provider": fail},
                "assert": [
                    {"type": "icontains", "value": expect},
                    {"type": "javascript", "value": "output.length < 80", "metric": "brevity"},
                ],
            }
        )
    return tests


def _repeat_tests() -> list[dict[str, Any]]:
    patterns = [
        ("R1 stable pass", "111", "111"),
        ("R2 loses one", "111", "101"),
        ("R3 fixed", "000", "111"),
        ("R4 flaky improves", "010", "110"),
        ("R5 loses all", "100", "000"),
    ]
    return [
        {
            "description": description,
            "vars": {
                "topic": description,
                "expect": "yes",
                "flaky": True,
                "flaky_baseline": base,
                "flaky_current": cur,
            },
            "assert": [{"type": "equals", "value": "yes"}],
        }
        for description, base, cur in patterns
    ]


def _echo_tests() -> list[dict[str, Any]]:
    people = [
        ("E1 Ada", "Ada", "Paris", [("contains", "Ada"), ("starts-with", "Hello")]),
        ("E2 Linus", "Linus", "Helsinki", [("javascript", "output.length <= 30")]),
        ("E3 Grace", "Grace", "Arlington", [("contains", "Arlington")]),
        ("E4 Alan", "Alan", "London", [("contains", "London"), ("not-contains", ",")]),
        ("E5 Barbara", "Barbara", "Boston", [("icontains", "enjoy")]),
    ]
    return [
        {
            "description": description,
            "vars": {"name": name, "city": city},
            "assert": [{"type": kind, "value": value} for kind, value in asserts],
        }
        for description, name, city, asserts in people
    ]


def _metric_tests() -> list[dict[str, Any]]:
    """The echo provider repeats ``before`` in the baseline and ``after`` in the current run:
    named metrics other than brevity, list-valued contains-any, and an assertion that regresses
    (and one that improves) inside a test failing in both runs."""
    rows: list[tuple[str, str, str, list[dict[str, Any]]]] = [
        (
            "M1 sum",
            "The answer is 4",
            "The answer is 5",
            [{"type": "contains", "value": "4", "metric": "accuracy"}],
        ),
        (
            "M2 sql",
            "SELECT name FROM users",
            "SELECT name FROM users; DROP TABLE users",
            [
                {"type": "starts-with", "value": "SELECT", "metric": "sql"},
                {"type": "not-icontains", "value": "drop table", "metric": "safety"},
            ],
        ),
        (
            "M3 greeting",
            "Hi Ada, welcome aboard",
            "Hello Ada, a warm and very long welcome aboard our ship today",
            [
                {"type": "starts-with", "value": "Hello"},
                {"type": "contains", "value": "Ada"},
                {"type": "javascript", "value": "output.length < 40"},
            ],
        ),
        (
            "M4 refusal",
            "Sure, here it is",
            "Sorry, I cannot help with that",
            [{"type": "contains-any", "value": ["cannot", "can't", "won't"]}],
        ),
        (
            "M5 fruit",
            "We sell apples",
            "We sell kiwis",
            [{"type": "contains-any", "value": ["apples", "pears"]}],
        ),
    ]
    return [
        {"description": description, "vars": {"before": before, "after": after}, "assert": checks}
        for description, before, after, checks in rows
    ]


SHORT = {"raw": "[short] {{topic}}", "label": "short"}
LONG = {"raw": "Tell me about {{topic}}", "label": "long"}

SCENARIOS: dict[str, dict[str, Any]] = {
    # The echo provider repeats the prompt: changing the prompt text changes every verdict.
    "echo": {
        "baseline": {
            "prompts": [{"raw": "Hello {{name}}, welcome.", "label": "greeting"}],
            "providers": ["echo"],
        },
        "current": {
            "prompts": [
                {
                    "raw": "Hi {{name}}! Welcome to {{city}}, enjoy your stay.",
                    "label": "greeting",
                }
            ],
            "providers": ["echo"],
        },
        "tests": _echo_tests(),
    },
    "qa": {
        "both": {"prompts": [{"raw": "[short] {{topic}}", "label": "qa-prompt"}]},
        "providers": [_scripted("scripted-model", "model")],
        "tests": _qa_tests(),
    },
    "repeat": {
        "both": {"prompts": [{"raw": "[short] {{topic}}", "label": "repeat-prompt"}]},
        "providers": [_scripted("scripted-model", "model")],
        "tests": _repeat_tests(),
        "repeat": 3,
    },
    "provider_errors": {
        "both": {"prompts": [{"raw": "[short] {{topic}}", "label": "qa-prompt"}]},
        "providers": [_scripted("scripted-model", "model")],
        "tests": _error_tests(),
    },
    "metrics": {
        "baseline": {"prompts": [{"raw": "{{before}}", "label": "reply"}], "providers": ["echo"]},
        "current": {"prompts": [{"raw": "{{after}}", "label": "reply"}], "providers": ["echo"]},
        "tests": _metric_tests(),
    },
    # 2 providers x 2 prompts in the baseline; the current run drops provider beta.
    "matrix_drop_provider": {
        "baseline": {
            "prompts": [SHORT, LONG],
            "providers": [_scripted("alpha", "alpha"), _scripted("beta", "beta")],
        },
        "current": {"prompts": [SHORT, LONG], "providers": [_scripted("alpha", "alpha")]},
        "tests": _matrix_tests(),
    },
    # Made with promptfoo 0.123.1 (node 22): the test's own verdict beyond its assertions.
    "threshold": {"baseline": BEFORE, "current": AFTER, "tests": _threshold_tests()},
    "scoring_function": {"baseline": BEFORE, "current": AFTER, "tests": _scoring_tests()},
    # The current run prepends a defaultTest assertion sharing the metric `quality`.
    "default_metric": {
        "baseline": BEFORE,
        "current": {**AFTER, "defaultTest": DEFAULT_QUALITY},
        "tests": _default_metric_tests(),
    },
}
NEWEST = ("threshold", "scoring_function", "default_metric")
"""The pairs made with the newest promptfoo release (the others with PROMPTFOO_VERSION)."""


# -- running promptfoo ------------------------------------------------------------------------


def promptfoo_binary(given: str | None) -> Path:
    if given:
        return Path(given)
    binary = TOOLS / "node_modules" / ".bin" / "promptfoo"
    if not binary.exists():
        TOOLS.mkdir(exist_ok=True)
        (TOOLS / "package.json").write_text('{"private": true}\n', encoding="utf-8")
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", f"promptfoo@{PROMPTFOO_VERSION}"],
            cwd=TOOLS,
            check=True,
        )
    return binary


def _config(scenario: dict[str, Any], variant: str) -> dict[str, Any]:
    side = scenario.get(variant) or scenario.get("both") or {}
    config = {
        "description": "EvalArc corpus",
        "prompts": side["prompts"],
        "providers": side.get("providers", scenario.get("providers")),
        "tests": scenario["tests"],
    }
    if "defaultTest" in side:
        config["defaultTest"] = side["defaultTest"]
    return config


def run_promptfoo(
    binary: Path, name: str, scenario: dict[str, Any], variant: str, node_bin: str | None
) -> Path:
    target = OUT / f"{name}.{variant}.json"
    with tempfile.TemporaryDirectory(prefix="evalarc-promptfoo-") as work:
        folder = Path(work)
        for script in ("scripted_provider.js", "scoring.js"):
            shutil.copy(HERE / script, folder / script)
        config = folder / "promptfooconfig.yaml"
        # JSON is YAML: no YAML writer needed.
        config.write_text(json.dumps(_config(scenario, variant), indent=2), encoding="utf-8")
        output = folder / "out.json"
        command = [
            str(binary),
            "eval",
            "-c",
            config.name,
            "--no-cache",
            "-j",
            "1",
            "--no-table",
            "--no-progress-bar",
            "--output",
            output.name,
        ]
        if scenario.get("repeat"):
            command += ["--repeat", str(scenario["repeat"])]
        environment = {
            **os.environ,
            "EVALARC_VARIANT": variant,
            "PROMPTFOO_DISABLE_TELEMETRY": "1",
            "PROMPTFOO_DISABLE_UPDATE": "1",
            "PROMPTFOO_CONFIG_DIR": str(folder / "state"),
            "PROMPTFOO_DISABLE_SHARING": "1",
        }
        if node_bin:
            environment["PATH"] = f"{node_bin}{os.pathsep}{environment.get('PATH', '')}"
        # Relative names only, so no machine path lands in the file. promptfoo exits 100 when a
        # test fails; only a missing output is an error here.
        done = subprocess.run(
            command, cwd=folder, env=environment, check=False, capture_output=True, text=True
        )
        if not output.exists():
            raise SystemExit(f"promptfoo wrote no output for {name} {variant}")
        _check_console(done.stdout, json.loads(output.read_text(encoding="utf-8")), target)
        shutil.copy(output, target)
    return target


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _check_console(console: str, document: dict[str, Any], target: Path) -> None:
    """promptfoo's console summary ("N passed", "N failed", "N errors") must say what its JSON
    ``stats`` and its rows' ``success`` say: the truth is the producer's, counted two ways."""
    text = _ANSI.sub("", console)
    said = {}
    for key, word in (("successes", "passed"), ("failures", "failed"), ("errors", "errors?")):
        found = re.search(rf"(\d+) {word}\b", text)
        if found is None:
            raise SystemExit(f"{target.name}: no '{word}' count in promptfoo's console summary")
        said[key] = int(found.group(1))
    stats = {key: document["results"]["stats"][key] for key in said}
    rows = document["results"]["results"]
    passed = sum(1 for row in rows if row["success"])
    errors = sum(1 for row in rows if not row["success"] and row.get("failureReason") == 2)
    counted = {"successes": passed, "failures": len(rows) - passed - errors, "errors": errors}
    if not said == stats == counted:
        raise SystemExit(f"{target.name}: console {said}, stats {stats}, rows {counted}")


# -- the truth, from promptfoo's own verdicts ---------------------------------------------------


def _provider(row: dict[str, Any]) -> str:
    provider = row.get("provider") or {}
    if isinstance(provider, str):
        return provider
    return provider.get("label") or provider.get("id") or "provider"


def _content(assertion: dict[str, Any]) -> str:
    """An assertion's content (type, value, metric) as canonical JSON: what tells assertions of
    one test apart, whatever their position."""
    return json.dumps(
        {key: assertion.get(key) for key in ("type", "value", "metric")},
        sort_keys=True,
        ensure_ascii=False,
    )


TEST_CHECK = "(test)"
"""The truth's name for a test's own verdict (`success`)."""


def _tallies(document: dict[str, Any]) -> dict[tuple[str, str, str, str, int], list[int]]:
    """(description, provider, prompt label, check, ordinal) -> [passed, assessed, attempts].

    The check is TEST_CHECK for the row's own verdict (passed when `success`, assessed unless
    promptfoo's failureReason is 2, an error), else an assertion's content, the nth of identical
    contents in the row taking ordinal n. A graded row's assertions are its componentResults
    (each carries its assertion); an errored row's are the test's declared ones, unassessed."""
    tallies: dict[tuple[str, str, str, str, int], list[int]] = {}
    for row in document["results"]["results"]:
        test = row["testCase"]
        key = (test["description"], _provider(row), row["prompt"]["label"])
        errored = row.get("failureReason") == ERROR_REASON
        tally = tallies.setdefault((*key, TEST_CHECK, 1), [0, 0, 0])
        tally[2] += 1
        if not errored:
            tally[1] += 1
            tally[0] += 1 if row["success"] else 0
        components = (row.get("gradingResult") or {}).get("componentResults") or []
        if errored:
            verdicts = [(assertion, None) for assertion in test.get("assert") or []]
        else:
            verdicts = [(c["assertion"], c["pass"]) for c in components]
        seen: dict[str, int] = {}
        for assertion, passed in verdicts:
            content = _content(assertion)
            seen[content] = seen.get(content, 0) + 1
            tally = tallies.setdefault((*key, content, seen[content]), [0, 0, 0])
            tally[2] += 1
            if passed is not None:
                tally[1] += 1
                tally[0] += 1 if passed else 0
    return tallies


def _loses(base: list[int] | None, cur: list[int] | None) -> str | None:
    """The truth's own statement of "lost passes or coverage" over promptfoo's verdicts."""
    if base is None:
        return None
    if cur is None:
        return "removed"
    if base[0] >= 1 and cur[1] == 0:
        return "unassessed"
    if cur[0] * max(base[1], 1) < base[0] * max(cur[1], 1):
        return "lost passes"
    if cur[1] < base[1]:
        return "less covered"
    return None


def truth_of(baseline: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    base, cur = _tallies(baseline), _tallies(current)
    lost = []
    for key in sorted(base.keys() | cur.keys()):
        why = _loses(base.get(key), cur.get(key))
        if why is not None:
            lost.append(
                {
                    "test": key[0],
                    "provider": key[1],
                    "prompt": key[2],
                    "check": key[3] if key[3] == TEST_CHECK else "assertion",
                    "assertion": None if key[3] == TEST_CHECK else json.loads(key[3]),
                    "ordinal": key[4],
                    "why": why,
                    "baseline": base.get(key),
                    "current": cur.get(key),
                }
            )
    sides = {}
    for field, pick in (("providers", 1), ("prompts", 2)):
        base_names = sorted({key[pick] for key in base})
        cur_names = sorted({key[pick] for key in cur})
        sides[field] = {
            "baseline": base_names,
            "current": cur_names,
            "baseline_only": sorted(set(base_names) - set(cur_names)),
            "current_only": sorted(set(cur_names) - set(base_names)),
        }
    return {
        "stats": {
            side: {k: document["results"]["stats"][k] for k in ("successes", "failures", "errors")}
            for side, document in (("baseline", baseline), ("current", current))
        },
        "checks": {"baseline": len(base), "current": len(cur)},
        "lost": lost,
        "matrix": sides,
    }


def _version(binary: Path, node_bin: str | None) -> str:
    environment = dict(os.environ)
    if node_bin:
        environment["PATH"] = f"{node_bin}{os.pathsep}{environment.get('PATH', '')}"
    result = subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, check=True, env=environment
    )
    return result.stdout.strip().splitlines()[-1]


def _pair_truth(name: str, version: str) -> dict[str, Any]:
    files = {variant: OUT / f"{name}.{variant}.json" for variant in ("baseline", "current")}
    documents = {
        variant: json.loads(path.read_text(encoding="utf-8")) for variant, path in files.items()
    }
    return {
        "baseline": files["baseline"].name,
        "current": files["current"].name,
        "version": version,
        **truth_of(documents["baseline"], documents["current"]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--promptfoo", help="promptfoo executable (default: install into .tools)")
    parser.add_argument("--node-bin", help="a folder holding the node that promptfoo needs")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=sorted(SCENARIOS),
        help="regenerate only these scenarios (the others keep their files and truth)",
    )
    parser.add_argument(
        "--truth-only",
        action="store_true",
        help="recompute truth.json from the files in generated/ (no promptfoo run)",
    )
    args = parser.parse_args(argv)
    kept = OUT / "truth.json"
    old = json.loads(kept.read_text(encoding="utf-8")) if kept.exists() else {"pairs": {}}
    versions = {n: pair.get("version", old.get("version")) for n, pair in old["pairs"].items()}
    if not args.truth_only:
        binary = promptfoo_binary(args.promptfoo)
        version = _version(binary, args.node_bin)
        for name, scenario in SCENARIOS.items():
            if args.only and name not in args.only:
                continue
            for variant in ("baseline", "current"):
                run_promptfoo(binary, name, scenario, variant, args.node_bin)
            versions[name] = version
    pairs = {name: _pair_truth(name, versions[name]) for name in SCENARIOS if name in versions}
    for name, pair in pairs.items():
        print(f"{name} (promptfoo {pair['version']}): {len(pair['lost'])} check(s) lost")
    truth = {
        "producer": "promptfoo",
        "versions": sorted({pair["version"] for pair in pairs.values()}),
        "pairs": pairs,
    }
    kept.write_text(json.dumps(truth, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


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
    status = main()
    _scrub_machine_paths()
    sys.exit(status)
