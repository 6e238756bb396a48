"""Generate the lm-evaluation-harness corpus pair with the real ``lm_eval`` CLI (offline).

    python3 -m venv /tmp/lmev && /tmp/lmev/bin/pip install lm-eval==0.4.13
    /tmp/lmev/bin/python tests/corpus/lmeval/generate.py

The task ``capitals_mc`` (``task/capitals_mc.yaml``) is a local multiple-choice task over
``task/capitals.jsonl`` (six documents, two choices each, metric ``acc``), loaded with
``--include_path`` and the ``json`` dataset builder, so nothing is downloaded. The model is
lm-eval's own ``--model dummy``, whose log-likelihoods are ``random.random()`` under lm-eval's
``--seed``: the baseline runs with ``--seed 1`` and the current with ``--seed 2``, which lm-eval
scores 0.5 and 0.5, with document 3 going 1 -> 0 and document 4 going 0 -> 1. Each run's
``samples_capitals_mc_<timestamp>.jsonl`` and ``results_<timestamp>.json`` are copied into
``baseline/`` and ``current/``; the truth is read from them (lm-eval's own per-document ``acc``
and its ``results.capitals_mc["acc,none"]``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
LM_EVAL = Path(sys.executable).with_name("lm_eval")
SEEDS = {"baseline": 1, "current": 2}


def run(side: str, scratch: Path) -> dict[str, object]:
    environment = dict(os.environ, HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1")
    out = scratch / side
    subprocess.run(
        [
            str(LM_EVAL),
            "--model",
            "dummy",
            "--tasks",
            "capitals_mc",
            "--include_path",
            ".",
            "--log_samples",
            "--output_path",
            str(out),
            "--seed",
            str(SEEDS[side]),
        ],
        cwd=HERE / "task",
        env=environment,
        check=True,
        capture_output=True,
    )
    (samples,) = out.rglob("samples_capitals_mc_*.jsonl")
    (results,) = out.rglob("results_*.json")
    target = HERE / side
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    shutil.copyfile(samples, target / samples.name)
    shutil.copyfile(results, target / results.name)
    rows = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines()]
    reported = json.loads(results.read_text(encoding="utf-8"))["results"]["capitals_mc"]
    return {
        "samples": f"{side}/{samples.name}",
        "acc": reported["acc,none"],
        "per_doc_acc": {
            str(r["doc_id"]): r["acc"] for r in sorted(rows, key=lambda r: r["doc_id"])
        },
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        sides = {side: run(side, Path(scratch)) for side in SEEDS}
    base, cur = sides["baseline"]["per_doc_acc"], sides["current"]["per_doc_acc"]
    assert isinstance(base, dict) and isinstance(cur, dict)
    regressed = sorted(d for d in base if base[d] == 1.0 and cur[d] == 0.0)
    improved = sorted(d for d in base if base[d] == 0.0 and cur[d] == 1.0)
    assert sides["baseline"]["acc"] == sides["current"]["acc"], sides
    assert regressed and improved, sides
    truth = {
        "producer": "lm-eval",
        "pairs": {
            "capitals_mc": {
                **sides,
                "regressed_docs": regressed,
                "improved_docs": improved,
                "blocking_expected": True,
            }
        },
    }
    (HERE / "truth.json").write_text(json.dumps(truth, indent=2) + "\n", encoding="utf-8")
    sys.path.insert(0, str(HERE.parent))
    from scrub_paths import scrub_tree  # results_*.json names the task folder and the venv

    scrub_tree(HERE)
    print("regressed docs", regressed, "improved docs", improved, "acc", sides["baseline"]["acc"])


if __name__ == "__main__":
    main()
