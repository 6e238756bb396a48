"""Write the benchmark's large Inspect AI logs with the real inspect-ai package.

    python large_logs.py OUT_DIR SAMPLES {baseline|current}

Runs the Inspect task once per log format (json, eval) for one revision and writes
OUT_DIR/<revision>.json and OUT_DIR/<revision>.eval; diff_large.py runs both revisions at once.
The model is `mockllm/model` with scripted answers and explicit token usage (so Inspect never
downloads a tokenizer); one epoch, scorers `match` and `includes`. The current revision breaks
some samples, fixes others and makes a few answers wordy (exact match fails while `includes`
still passes), so the diff has every common kind. Run it with a Python that has inspect-ai
installed, never with EvalArc's own environment.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessage, GenerateConfig, ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes, match
from inspect_ai.solver import generate


def question(index: int) -> str:
    return f"Ticket {index:05d}: which queue handles order {1000 + index}?"


def answer(index: int) -> str:
    return f"queue-{index % 97:02d}"


def reply_for(revision: str, index: int) -> str:
    """The scripted reply; wrong and wordy replies depend only on the sample number."""
    right = answer(index)
    if revision == "baseline":
        return "queue-unknown" if index % 5 == 0 else right
    if index % 7 == 0 or (index % 5 == 0 and index % 2 == 0):
        return "queue-unknown"
    if index % 11 == 0:
        return f"{right} (routed automatically)"
    return right


def large_task(samples: int) -> Task:
    return Task(
        name="large_routing",
        dataset=MemoryDataset(
            [
                Sample(id=f"t{index:05d}", input=question(index), target=answer(index))
                for index in range(1, samples + 1)
            ],
            name="large_routing",
        ),
        solver=generate(),
        scorer=[match(location="exact"), includes()],
    )


def scripted(revision: str) -> Any:
    def reply(
        messages: list[ChatMessage], tools: Any, tool_choice: Any, config: GenerateConfig
    ) -> ModelOutput:
        text = messages[-1].text
        index = int(text.split()[1].rstrip(":"))
        content = reply_for(revision, index)
        output = ModelOutput.from_content(model="mockllm/model", content=content)
        input_tokens = len(text.split())
        output_tokens = len(content.split())
        output.usage = ModelUsage(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            total_tokens=input_tokens + output_tokens,
        )
        return output

    return reply


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[2] not in ("baseline", "current"):
        print(__doc__, file=sys.stderr)
        return 2
    out_dir, samples, revision = Path(argv[0]), int(argv[1]), argv[2]
    out_dir.mkdir(parents=True, exist_ok=True)
    for log_format in ("json", "eval"):
        with tempfile.TemporaryDirectory() as log_dir:
            [log] = eval(
                large_task(samples),
                model=get_model("mockllm/model", custom_outputs=scripted(revision)),
                log_dir=log_dir,
                log_format=log_format,
                display="none",
                max_samples=100,
                # Samples still go into the log; realtime mode only adds a per-sample buffer
                # that makes a 20,000-sample run about 1.5x slower.
                log_realtime=False,
            )
            if log.status != "success":
                print(f"{revision}.{log_format}: status {log.status}", file=sys.stderr)
                return 1
            shutil.copyfile(log.location, out_dir / f"{revision}.{log_format}")
        print(f"wrote {out_dir / f'{revision}.{log_format}'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
