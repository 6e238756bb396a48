"""Generate the SWE-bench corpus pair with SWE-bench's own grading and reporting code.

No Docker is needed: for each instance this writes the ``test_output.txt`` that the harness's
eval script would print (a pytest run between SWE-bench's markers, with the exit code line),
then grades it with ``swebench.harness.grading.get_eval_report`` and writes ``report.json`` as
``run_instance`` does (``json.dumps(report, indent=4)``), and finally writes the run summary with
``swebench.harness.reporting.make_run_report``. Run from the clone's root:

    python3 -m venv /tmp/swev && /tmp/swev/bin/pip install swebench==5.0.2
    /tmp/swev/bin/python tests/corpus/swebench/generate.py

Five synthetic instances of ``astropy/astropy`` (``parse_log_pytest``, ``pass_and_fail``):
``-90001`` resolved -> unresolved (a PASS_TO_PASS test breaks), ``-90002`` unresolved ->
resolved, ``-90003`` resolved in both, ``-90004`` an evaluation error in both (an instance
folder without report.json, as when an image fails to build), ``-90005`` an empty patch in
both. SWE-bench's own summary keeps ``resolved_instances`` at 2 -> 2. The truth (truth.json)
is read from SWE-bench's own reports and summaries, not from EvalArc.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from swebench.harness.grading import get_eval_report
from swebench.harness.reporting import make_run_report
from swebench.harness.utils import make_test_spec

HERE = Path(__file__).resolve().parent
MODEL = "scripted-agent"
REPO = "astropy/astropy"
F2P = {
    "astropy__astropy-90001": ["astropy/units/tests/test_quantity.py::test_to_string"],
    "astropy__astropy-90002": [
        "astropy/io/fits/tests/test_header.py::test_card_repr",
        "astropy/io/fits/tests/test_header.py::test_long_card",
    ],
    "astropy__astropy-90003": ["astropy/table/tests/test_table.py::test_add_column"],
    "astropy__astropy-90004": ["astropy/time/tests/test_basic.py::test_leap"],
    "astropy__astropy-90005": ["astropy/wcs/tests/test_wcs.py::test_fix"],
}
P2P = {
    "astropy__astropy-90001": [
        "astropy/units/tests/test_quantity.py::test_repr",
        "astropy/units/tests/test_quantity.py::test_str",
    ],
    "astropy__astropy-90002": ["astropy/io/fits/tests/test_header.py::test_update"],
    "astropy__astropy-90003": ["astropy/table/tests/test_table.py::test_len"],
    "astropy__astropy-90004": ["astropy/time/tests/test_basic.py::test_now"],
    "astropy__astropy-90005": ["astropy/wcs/tests/test_wcs.py::test_repr"],
}
FAILING = {
    # instance -> tests that fail after the model's patch, per side
    "baseline": {
        "astropy__astropy-90002": ["astropy/io/fits/tests/test_header.py::test_long_card"],
    },
    "current": {
        "astropy__astropy-90001": ["astropy/units/tests/test_quantity.py::test_str"],
    },
}
ERROR = "astropy__astropy-90004"
EMPTY = "astropy__astropy-90005"


def instance(instance_id: str) -> dict[str, object]:
    return {
        "instance_id": instance_id,
        "repo": REPO,
        "version": "5.0",
        "image": f"swebench/sweb.eval.x86_64.{instance_id.replace('__', '_1776_')}:latest",
        "FAIL_TO_PASS": json.dumps(F2P[instance_id]),
        "PASS_TO_PASS": json.dumps(P2P[instance_id]),
        "log_parser": "parse_log_pytest",
        "eval_type": "pass_and_fail",
        "eval_script": "#!/bin/bash\nset -uxo pipefail\necho '>>>>> Start Test Output'\n"
        "pytest -rA\necho '>>>>> End Test Output'\n",
    }


def test_output(instance_id: str, failing: list[str]) -> str:
    lines = ["+ git apply -v /tmp/patch.diff", ">>>>> Applied Patch (pred)"]
    lines.append(">>>>> Start Test Output")
    lines.append("============================= test session starts ==============================")
    tests = F2P[instance_id] + P2P[instance_id]
    lines.append(f"collected {len(tests)} items")
    lines.append("=========================== short test summary info ============================")
    for test in tests:
        if test in failing:
            lines.append(f"FAILED {test} - AssertionError: assert 'a' == 'b'")
        else:
            lines.append(f"PASSED {test}")
    failed = sum(1 for t in tests if t in failing)
    lines.append(
        f"{'=' * 25} {failed} failed, {len(tests) - failed} passed in 0.42s {'=' * 25}"
    )
    lines.append(">>>>> End Test Output")
    lines.append(f">>>>> Test Exit Code: {1 if failed else 0}")
    return "\n".join(lines) + "\n"


def write_side(side: str) -> dict[str, object]:
    root = HERE / side
    run_id = f"evalarc-{side}"
    dataset = [instance(i) for i in F2P]
    predictions = {
        i: {
            "instance_id": i,
            "model_name_or_path": MODEL,
            "model_patch": "" if i == EMPTY else f"diff --git a/{i} b/{i}\n",
        }
        for i in F2P
    }
    os.chdir(root.parent)
    root.mkdir(exist_ok=True)
    os.chdir(root)  # make_run_report reads logs/run_evaluation/ relative to the cwd
    reports = {}
    for item in dataset:
        instance_id = str(item["instance_id"])
        if instance_id == EMPTY:
            continue  # run_evaluation never runs an empty patch
        folder = Path("logs/run_evaluation") / run_id / MODEL / instance_id
        folder.mkdir(parents=True, exist_ok=True)
        if instance_id == ERROR:
            (folder / "run_instance.log").write_text(
                "2026-01-01 00:00:00,000 - INFO - Building image for astropy__astropy-90004\n"
                "2026-01-01 00:00:09,000 - ERROR - BuildImageError: Error building image "
                "sweb.eval.x86_64.astropy_1776_astropy-90004: pip install failed\n",
                encoding="utf-8",
            )
            continue
        (folder / "patch.diff").write_text(str(predictions[instance_id]["model_patch"]))
        output = folder / "test_output.txt"
        output.write_text(test_output(instance_id, FAILING[side].get(instance_id, [])))
        report = get_eval_report(
            test_spec=make_test_spec(item),
            prediction=predictions[instance_id],
            test_log_path=str(output),
            include_tests_status=True,
        )
        (folder / "report.json").write_text(json.dumps(report, indent=4))
        (folder / "run_instance.log").write_text(
            f"Result for {instance_id}: resolved: {report[instance_id]['resolved']}\n"
        )
        reports[instance_id] = report[instance_id]
    summary_path = make_run_report(predictions, dataset, run_id, client=None, report_dir=".")
    summary = json.loads(Path(summary_path).read_text())
    return {
        "run_folder": f"{side}/logs/run_evaluation/{run_id}/{MODEL}",
        "summary": f"{side}/{Path(summary_path).name}",
        "resolved_instances": summary["resolved_instances"],
        "resolved_ids": summary["resolved_ids"],
        "unresolved_ids": summary["unresolved_ids"],
        "error_ids": summary["error_ids"],
        "empty_patch_ids": summary["empty_patch_ids"],
        "failing_tests": {
            i: [
                f"{group}: {test}"
                for group in ("FAIL_TO_PASS", "PASS_TO_PASS")
                for test in r["tests_status"][group]["failure"]
            ]
            for i, r in sorted(reports.items())
        },
    }


def main() -> None:
    sides = {side: write_side(side) for side in ("baseline", "current")}
    base, cur = sides["baseline"], sides["current"]
    regressed = sorted(set(base["resolved_ids"]) - set(cur["resolved_ids"]))  # type: ignore[arg-type]
    improved = sorted(set(cur["resolved_ids"]) - set(base["resolved_ids"]))  # type: ignore[arg-type]
    assert base["resolved_instances"] == cur["resolved_instances"] == 2, sides
    assert regressed == ["astropy__astropy-90001"] and improved == ["astropy__astropy-90002"]
    truth = {
        "producer": "swebench",
        "pairs": {
            "astropy": {
                **sides,
                "regressed": regressed,
                "improved": improved,
                "blocking_expected": True,
            }
        },
    }
    (HERE / "truth.json").write_text(json.dumps(truth, indent=2) + "\n", encoding="utf-8")
    sys.path.insert(0, str(HERE.parent))
    from scrub_paths import scrub_tree

    scrub_tree(HERE)
    print(json.dumps(truth["pairs"]["astropy"]["regressed"]), "regressed;", "resolved 2 -> 2")


if __name__ == "__main__":
    main()
