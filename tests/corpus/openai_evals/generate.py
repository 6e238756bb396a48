"""Generate the OpenAI Evals corpus pair with the real ``oaieval`` (no network, no API).

Run from the clone's root with a venv holding evals (see ../README.md):

    python3 -m venv /tmp/oaiv && /tmp/oaiv/bin/pip install --no-deps evals==3.0.1.post1
    /tmp/oaiv/bin/pip install blobfile numpy pyyaml openai tiktoken backoff tqdm pydantic \
        termcolor filelock dacite zstandard lz4 pandas
    /tmp/oaiv/bin/python tests/corpus/openai_evals/generate.py

A local registry (``registry/``) defines the eval ``capitals`` (evals' own
``evals.elsuite.basic.match:Match`` over four samples) and two completion functions
(``scripted_fn.ScriptedCompletionFn``) that answer from a fixed table. ``oaieval`` runs each
side with ``--record_path``; the truth is read from each log's own ``match`` events and
``final_report`` as evals wrote them, and from oaieval's console final report. The pair: sample
``capitals.dev.0`` goes correct -> incorrect and ``capitals.dev.1`` incorrect -> correct, so the
accuracy stays 0.75 -> 0.75.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OAIEVAL = Path(sys.executable).with_name("oaieval")


def main() -> None:
    environment = dict(os.environ)
    environment["PYTHONPATH"] = str(HERE)
    # evals builds an OpenAI client at import; the scripted function never calls it.
    environment.setdefault("OPENAI_API_KEY", "unused-offline")
    truth: dict[str, object] = {"producer": "oaieval", "pairs": {}}
    sides = {}
    for side in ("baseline", "current"):
        log = HERE / f"capitals.{side}.jsonl"
        log.unlink(missing_ok=True)
        done = subprocess.run(
            [
                str(OAIEVAL),
                f"scripted/{side}",
                "capitals",
                "--registry_path",
                str(HERE / "registry"),
                "--record_path",
                str(log),
                "--seed",
                "20",
                "--max_samples",
                "10",
            ],
            env=environment,
            capture_output=True,
            text=True,
            check=True,
        )
        console = done.stdout + done.stderr
        accuracy = re.search(r"accuracy: ([0-9.]+)", console)
        assert accuracy, console
        lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
        matches = {
            line["sample_id"]: line["data"]["correct"]
            for line in lines
            if line.get("type") == "match"
        }
        (final,) = [line["final_report"] for line in lines if "final_report" in line]
        assert float(accuracy.group(1)) == final["accuracy"]
        sides[side] = {"accuracy": final["accuracy"], "correct": dict(sorted(matches.items()))}
    regressed = sorted(
        s
        for s, ok in sides["baseline"]["correct"].items()
        if ok and not sides["current"]["correct"].get(s)
    )
    improved = sorted(
        s
        for s, ok in sides["current"]["correct"].items()
        if ok and not sides["baseline"]["correct"].get(s)
    )
    assert sides["baseline"]["accuracy"] == sides["current"]["accuracy"], sides
    assert regressed and improved, sides
    truth["pairs"] = {
        "capitals": {
            **sides,
            "regressed": regressed,
            "improved": improved,
            "blocking_expected": True,
        }
    }
    (HERE / "truth.json").write_text(json.dumps(truth, indent=2) + "\n", encoding="utf-8")
    sys.path.insert(0, str(HERE.parent))
    from scrub_paths import scrub_tree  # the logs name the registry and venv paths

    scrub_tree(HERE)
    print(json.dumps(truth["pairs"], indent=2))


if __name__ == "__main__":
    main()
