"""What a Ray worker cannot do to the host, on a real local Ray cluster with the real Docker
engine (``tests/ray_cluster_driver.py``, scenarios ``lying-reference`` and ``hostile``):

* a compromised node that sends the reference's transcripts for a faulty candidate's cases
  (under the candidate's snapshot) decides those cases when no case is sampled, and the folder
  verifies: the attack is real; with the sample covering the run, the re-run on another node
  contradicts it and the whole run is refused (exit 2, one line naming the case and both
  nodes), nothing published;
* a worker that answers with a 300 MB transcript has it refused by its size, read from Ray
  before anything is fetched: the host's memory does not grow by it;
* a worker that never returns is cancelled at the task deadline (the case deadline plus
  start-up and grace) and its case is an environment failure; the run ends, and the killed
  worker is gone.

Needs Docker, the image ``EVALARC_TEST_IMAGE``, Ray, ``unshare`` and ``ip`` (root): without
them these tests fail, never skip.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalarc.ray_executor import OVERDUE, REJECTED
from evalarc.reports.evaluation import EvaluateOptions, run_evaluate
from tests.test_ray_executor import DRIVER, IMAGE, _ray_environment, _verify

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.ray]

SCENARIOS = ("lying-reference", "hostile")


@pytest.fixture(scope="module")
def trust_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    for tool in ("unshare", "ip"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is missing (apt-get install util-linux iproute2)", pytrace=False)
    out = tmp_path_factory.mktemp("ray-trust")
    script = 'ip link set lo up && exec "$@"'
    completed = subprocess.run(
        ["unshare", "--net", "sh", "-c", script, "sh", sys.executable, str(DRIVER), str(out),
         *SCENARIOS],
        cwd=out, env=_ray_environment(), capture_output=True, text=True, timeout=3000,
        check=False,
    )
    results = {}
    if (out / "results.jsonl").exists():
        for line in (out / "results.jsonl").read_text().splitlines():
            entry = json.loads(line)
            results[entry["scenario"]] = entry
    if completed.returncode != 0 or set(results) != set(SCENARIOS):
        pytest.fail(f"the Ray driver exited {completed.returncode}: {completed.stderr[-3000:]}",
                    pytrace=False)
    print(json.dumps(results))  # the measured numbers, with pytest -s
    return {"out": out, "results": results}


def test_a_node_sending_another_candidates_transcripts_voids_the_run(
    trust_runs: dict[str, Any], tmp_path: Path
) -> None:
    out = trust_runs["out"]
    result = trust_runs["results"]["lying-reference"]
    honest = run_evaluate(
        out / "liar-candidate", tmp_path / "honest",
        EvaluateOptions(image=IMAGE, seeds=(17,), jobs=2)).report
    # Unsampled, the lie decides the liar's cases: a better score than the candidate's own,
    # and the folder is consistent evidence (verify cannot tell).
    assert result["unsampled"]["valid"] is True
    assert result["unsampled"]["score"] > honest["score"]
    assert _verify(out / "lying-unsampled").returncode == 0
    events = [json.loads(line)
              for line in (out / "lying-unsampled" / "events.jsonl").read_text().splitlines()]
    completed = [event for event in events if event["event"] == "case_completed"]
    assert {event["ray_node"] for event in completed} == {1, 2, 3}
    # Sampled, the re-run on another node contradicts it: the whole run is refused.
    message = result["sampled_message"]
    assert re.fullmatch(
        r"case 17/[a-z0-9-]+ of candidate [0-9a-f]{12}: the transcript Ray node [0-9a-f]{12} "
        r"sent differs from the re-run on node [0-9a-f]{12} \(a node lied or runs something "
        r"else\): the run is void", message), message
    assert result["liar"] in message
    assert result["sampled_published"] is False


def test_a_node_that_runs_its_cases_twice_agrees_with_itself(trust_runs: dict[str, Any]) -> None:
    """The honest nodes' re-runs agree (the sample does not void an honest run): the
    unsampled run's folder names no re-run, and params.json records the empty sample."""
    params = json.loads((trust_runs["out"] / "lying-unsampled" / "params.json").read_text())
    assert params["ray_verify_sample"] == 0 and re.fullmatch(
        "[0-9a-f]{32}", params["ray_sample_seed"])


def test_an_oversized_or_stalled_worker_is_an_environment_failure(
    trust_runs: dict[str, Any]
) -> None:
    out = trust_runs["out"]
    result = trust_runs["results"]["hostile"]
    report = json.loads((out / "hostile" / "evaluation.json").read_text())
    cases = {case["case_id"]: case for case in report["cases"]}
    oversized, stalled = cases["json-types-and-overwrite"], cases["read-write-delete"]
    assert oversized["status"] == "environment_error"
    size = re.fullmatch(
        rf"{re.escape(REJECTED)}: the transcript is (\d+) bytes, more than a recording may be "
        rf"\({64 * 1024 * 1024}\); not fetched", oversized["error"])
    assert size and int(size.group(1)) >= 300 * 1024 * 1024, oversized["error"]
    assert stalled["status"] == "environment_error"
    assert stalled["error"].startswith(OVERDUE + " (40 s:"), stalled["error"]
    others = [case for case_id, case in cases.items()
              if case_id not in ("json-types-and-overwrite", "read-write-delete")]
    assert others and all(case["status"] == "passed" for case in others)
    assert report["valid"] is False
    # Nothing of the 300 MB reached this host; the stalled task ended at its deadline and its
    # worker was killed.
    assert result["rss_growth"] < 64 * 1024 * 1024, result["rss_growth"]
    assert result["seconds"] < 40 + 120, result["seconds"]
    assert result["stalled_tasks"] == []
    verified = _verify(out / "hostile")
    assert verified.returncode == 0, verified.stderr
    assert "gate is failing" in verified.stdout
