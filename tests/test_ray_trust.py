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


def test_verify_checks_the_recorded_nodes_and_sample(
    trust_runs: dict[str, Any], tmp_path: Path
) -> None:
    """Every case event of a Ray folder names its node; exactly the cases of the sample that
    ``ray_sample_seed`` chooses name a re-run on another node: verify refuses a folder where
    a node is missing or the sample does not match the seed."""
    from evalarc.ray_executor import sampled_cases

    source = trust_runs["out"] / "hostile"
    params = json.loads((source / "params.json").read_text())
    report = json.loads((source / "evaluation.json").read_text())
    cases = [(case["seed"], case["case_id"]) for case in report["cases"]]
    events = [json.loads(line) for line in (source / "events.jsonl").read_text().splitlines()]
    completed = [event for event in events if event["event"] == "case_completed"]
    assert params["ray_verify_sample"] == 4 and all("ray_node" in event for event in completed)

    def rerun(seed: str) -> set[tuple[int, int]]:
        """The cases a sample seed has re-run: the sampled ones that were not environment
        failures."""
        chosen = sampled_cases(seed, 4, [report["candidate_sha256"]], cases)
        return {key for key in chosen if report["cases"][key[1] - 1]["status"] == "passed"}

    sampled = rerun(params["ray_sample_seed"])
    assert {(0, event["case_number"]) for event in completed if "ray_rerun_node" in event} == (
        sampled)
    assert all(event["ray_rerun_node"] != event["ray_node"]
               for event in completed if "ray_rerun_node" in event)
    other = next(seed for seed in (f"{n:032x}" for n in range(1, 100)) if rerun(seed) != sampled)
    tampered = {
        "does not name the Ray node that ran the case": ("events", "ray_node"),
        "contradicts the recorded sample": ("params", other),
    }
    for message, (what, change) in tampered.items():
        folder = tmp_path / what
        shutil.copytree(source, folder)
        if what == "events":
            lines = (folder / "events.jsonl").read_text().splitlines(keepends=True)
            number = next(i for i, line in enumerate(lines) if '"case_completed"' in line)
            line = json.loads(lines[number])
            del line[change]
            lines[number] = json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n"
            (folder / "events.jsonl").write_text("".join(lines))
        else:
            (folder / "params.json").write_text(
                json.dumps({**params, "ray_sample_seed": change}, indent=2) + "\n")
        refused = _verify(folder)
        assert refused.returncode == 2 and message in refused.stderr, (message, refused.stderr)
