"""Regenerate the Inspect AI logs of this folder with the real Inspect AI, and their truths.

Run it with an interpreter that has ``inspect-ai`` (not a dependency of EvalArc), from the root
of the clone:

    python3 -m venv /tmp/inspect-venv
    /tmp/inspect-venv/bin/pip install inspect-ai==0.3.285
    /tmp/inspect-venv/bin/python tests/corpus/inspect/generate.py

Every scenario is one Inspect task run twice per variant (``baseline``, ``current``): once with
``log_format="json"`` and once with ``log_format="eval"``, model ``mockllm/model`` answering from
the scripted table below (each answer carries explicit token usage). The files are written as
``<scenario>.<variant>.{json,eval}``; then every log is read back with Inspect's own
``inspect_ai.log.read_eval_log`` (never with EvalArc) and the outcomes found there are checked
against what the scenario promises and written to ``truths.toml``, which the tests compare
EvalArc's reading with. ``--out DIR`` writes somewhere else (DIR must not exist).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import (
    ChatMessage,
    ChatMessageSystem,
    GenerateConfig,
    ModelOutput,
    ModelUsage,
    get_model,
)
from inspect_ai.scorer import (
    Score,
    Scorer,
    Target,
    accuracy,
    includes,
    match,
    mean,
    scorer,
    stderr,
    value_to_float,
)
from inspect_ai.solver import Generate, Solver, TaskState, generate, solver

HERE = Path(__file__).resolve().parent
INSPECT_VERSION = "0.3.285"
KEY_PREFIX = "corpus-key: "
UNSURE = "I am not sure."
PADDING = " Let me also add a lot of additional background detail here."
CONCISE_CHARS = 80

COUNTRIES = [
    ("France", "Paris"),
    ("Germany", "Berlin"),
    ("Italy", "Rome"),
    ("Spain", "Madrid"),
    ("Portugal", "Lisbon"),
    ("Austria", "Vienna"),
    ("Poland", "Warsaw"),
    ("Norway", "Oslo"),
    ("Sweden", "Stockholm"),
    ("Finland", "Helsinki"),
    ("Denmark", "Copenhagen"),
    ("Ireland", "Dublin"),
    ("Greece", "Athens"),
    ("Hungary", "Budapest"),
    ("Czechia", "Prague"),
    ("Belgium", "Brussels"),
    ("Netherlands", "Amsterdam"),
    ("Switzerland", "Bern"),
    ("Japan", "Tokyo"),
    ("China", "Beijing"),
    ("India", "New Delhi"),
    ("Egypt", "Cairo"),
    ("Kenya", "Nairobi"),
    ("Peru", "Lima"),
    ("Chile", "Santiago"),
    ("Canada", "Ottawa"),
    ("Australia", "Canberra"),
    ("Turkey", "Ankara"),
    ("Iceland", "Reykjavik"),
    ("Mexico", "Mexico City"),
]

TOPICS = [
    ("photosynthesis", "chlorophyll", "sunlight", "glucose"),
    ("gravity", "mass", "acceleration", "orbit"),
    ("volcano", "magma", "eruption", "lava"),
    ("democracy", "election", "vote", "parliament"),
    ("enzyme", "protein", "catalyst", "substrate"),
    ("glacier", "ice", "erosion", "valley"),
    ("inflation", "prices", "currency", "demand"),
    ("vaccine", "antibody", "immune", "virus"),
    ("tectonic", "plate", "earthquake", "fault"),
    ("algorithm", "input", "output", "steps"),
    ("river", "delta", "sediment", "flow"),
    ("battery", "anode", "cathode", "electrolyte"),
    ("comet", "tail", "nucleus", "sun"),
    ("orchestra", "violin", "conductor", "symphony"),
    ("bridge", "steel", "load", "span"),
    ("compiler", "parser", "tokens", "bytecode"),
]

# Keywords per answer, one entry per sample: how many of the target keywords it names (0 names
# none), "+" pads it past the concise limit.
KEYWORD_ANSWERS = {
    "baseline": "4 4 1 2 3 0 2 4+ 3 1 2 0 4 2+ 3 1",
    "current": "4 2 4 3 3+ 2 0 4 4 1 4+ 0 4 3 3 2",
}

# verdict_words, per sample w1..w6 ("-": nothing): "+" pads the answer past the concise limit
# (concise_word "no", else "yes"), "s" cites a source (cites_source "True", else "false"), "h"
# hedges once ("probably": confidence_text "0.5"), "hh" twice ("0"), no "h" gives "1". Every
# answer names the right capital, so `match` passes throughout: the regressions are in the
# string-valued scorers alone, which EvalArc once left unassessed.
WORD_ANSWERS = {
    "baseline": "hs s s - sh -",
    "current": "s s+ - hh sh+ s",
}


# -- the scenarios ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """One task: its samples, scorers and, per variant, the scripted answers and errors."""

    name: str
    dataset: str
    samples: list[Sample]
    scorers: Callable[[], list[Scorer]]
    answers: dict[str, dict[str, str]]
    """variant -> "id#epoch" -> completion"""
    epochs: int = 1
    errors: dict[str, list[str]] = field(default_factory=dict)
    """variant -> "id#epoch" whose solver raises (the sample errors and has no scores)"""
    headline: tuple[str, str] = ("match", "accuracy")
    expected: dict[str, Any] = field(default_factory=dict)
    """What the scenario promises (checked against what Inspect wrote)."""


def _capital_samples(count: int, ids: Callable[[int], str | int]) -> list[Sample]:
    return [
        Sample(
            id=ids(number),
            input=f"What is the capital of {country}?",
            target=capital,
            metadata={"country": country},
        )
        for number, (country, capital) in enumerate(COUNTRIES[:count], start=1)
    ]


def _capital_answers(
    samples: Sequence[Sample],
    epochs: int,
    unsure: set[str],
    fronted: frozenset[str] | set[str] = frozenset(),
) -> dict[str, str]:
    """Right answers except the ``unsure`` keys and the ``fronted`` ones (the capital named
    first, so ``match`` (ends-with) fails while ``includes`` passes)."""
    answers = {}
    for sample in samples:
        country = sample.metadata["country"] if sample.metadata else ""
        for epoch in range(1, epochs + 1):
            key = f"{sample.id}#{epoch}"
            if key in unsure:
                answers[key] = UNSURE
            elif key in fronted:
                answers[key] = f"{sample.target}, of course, is the capital of {country}."
            else:
                answers[key] = f"The capital of {country} is {sample.target}."
    return answers


def _word_answers(samples: Sequence[Sample], plan: str) -> dict[str, str]:
    """The verdict_words answers (see WORD_ANSWERS): always the right capital, then flags."""
    answers = {}
    for sample, code in zip(samples, plan.split(), strict=True):
        country = sample.metadata["country"] if sample.metadata else ""
        hedges = " probably" * code.count("h")
        source = " (source: atlas)" if "s" in code else ""
        padding = PADDING.strip() + " " if "+" in code else ""
        text = f"{padding}The capital of {country}{source} is{hedges} {sample.target}."
        answers[f"{sample.id}#1"] = text
    return answers


def _keys(text: str) -> set[str]:
    return set(text.split())


def _keyword_answers(plan: str) -> dict[str, str]:
    answers = {}
    for number, (topic, code) in enumerate(zip(TOPICS, plan.split(), strict=True), start=1):
        count = int(code.rstrip("+"))
        named = ", ".join(topic[:count]) if count else "something, unrelated"
        answers[f"kw-{number:02d}#1"] = f"Key terms: {named}." + (PADDING if "+" in code else "")
    return answers


def scenarios() -> list[Scenario]:
    capitals = _capital_samples(30, lambda n: f"cap-{n:02d}")
    epochs = _capital_samples(12, lambda n: n)
    flaky = _capital_samples(10, lambda n: f"q{n:02d}")
    words = _capital_samples(6, lambda n: f"w{n}")
    keywords = [
        Sample(
            id=f"kw-{number:02d}",
            input=f"List the key terms of topic {words[0]}.",
            target=list(words),
        )
        for number, words in enumerate(TOPICS, start=1)
    ]
    return [
        Scenario(
            name="capitals",
            dataset="capitals",
            samples=capitals,
            scorers=lambda: [match(), includes()],
            answers={
                "baseline": _capital_answers(
                    capitals,
                    1,
                    _keys(
                        "cap-04#1 cap-08#1 cap-12#1 cap-14#1 cap-18#1 cap-22#1 cap-26#1"
                        " cap-28#1 cap-30#1"
                    ),
                    _keys("cap-16#1 cap-20#1 cap-24#1"),
                ),
                "current": _capital_answers(
                    capitals,
                    1,
                    _keys(
                        "cap-02#1 cap-11#1 cap-14#1 cap-18#1 cap-22#1 cap-24#1 cap-26#1 cap-30#1"
                    ),
                    _keys("cap-07#1"),
                ),
            },
            expected={
                "headline": (0.6, 0.7),
                "regressed": [
                    "cap-02#1 match",
                    "cap-02#1 includes",
                    "cap-07#1 match",
                    "cap-11#1 match",
                    "cap-11#1 includes",
                    "cap-24#1 includes",
                ],
                "improved": [
                    "cap-04#1 match",
                    "cap-04#1 includes",
                    "cap-08#1 match",
                    "cap-08#1 includes",
                    "cap-12#1 match",
                    "cap-12#1 includes",
                    "cap-16#1 match",
                    "cap-20#1 match",
                    "cap-28#1 match",
                    "cap-28#1 includes",
                ],
            },
        ),
        Scenario(
            name="capitals_epochs",
            dataset="capitals12",
            samples=epochs,
            scorers=lambda: [match()],
            epochs=3,
            answers={
                "baseline": _capital_answers(
                    epochs, 3, _keys("8#1 9#1 10#1 11#1 8#2 10#2 11#2 12#2 8#3 9#3 11#3")
                ),
                "current": _capital_answers(
                    epochs, 3, _keys("7#1 11#1 6#2 7#2 11#2 12#2 10#3 11#3")
                ),
            },
            expected={
                "headline": (0.6944, 0.7778),
                "regressed": ["6#2 match", "7#1 match", "7#2 match", "10#3 match"],
                "improved": [
                    "8#1 match",
                    "8#2 match",
                    "8#3 match",
                    "9#1 match",
                    "9#3 match",
                    "10#1 match",
                    "10#2 match",
                ],
            },
        ),
        Scenario(
            name="flaky_errors",
            dataset="capitals10",
            samples=flaky,
            scorers=lambda: [match()],
            answers={
                "baseline": _capital_answers(flaky, 1, _keys("q03#1 q06#1 q09#1")),
                "current": _capital_answers(flaky, 1, _keys("q06#1 q08#1")),
            },
            errors={"baseline": ["q04#1", "q10#1"], "current": ["q07#1", "q10#1"]},
            expected={
                "headline": (0.625, 0.75),
                "regressed": ["q07#1 match", "q08#1 match"],
                "improved": ["q03#1 match", "q04#1 match", "q09#1 match"],
            },
        ),
        Scenario(
            name="verdict_words",
            dataset="capitals6",
            samples=words,
            scorers=lambda: [concise_word(), cites_source(), confidence_text(), match()],
            answers={variant: _word_answers(words, plan) for variant, plan in WORD_ANSWERS.items()},
            headline=("concise_word", "accuracy"),
            expected={
                "headline": (1.0, 0.6667),
                "regressed": [
                    "w2#1 concise_word",
                    "w5#1 concise_word",
                    "w3#1 cites_source",
                    "w4#1 confidence_text",
                ],
                "improved": ["w6#1 cites_source", "w1#1 confidence_text"],
            },
        ),
        Scenario(
            name="keywords",
            dataset="keywords",
            samples=keywords,
            scorers=lambda: [keyword_recall(), includes(), concise()],
            answers={variant: _keyword_answers(plan) for variant, plan in KEYWORD_ANSWERS.items()},
            headline=("keyword_recall", "mean"),
            expected={
                "headline": (0.5625, 0.671875),
                "regressed": [
                    "kw-02#1 keyword_recall",
                    "kw-07#1 keyword_recall",
                    "kw-07#1 includes",
                    "kw-05#1 concise",
                    "kw-11#1 concise",
                ],
                "improved": [
                    "kw-03#1 keyword_recall",
                    "kw-04#1 keyword_recall",
                    "kw-06#1 keyword_recall",
                    "kw-09#1 keyword_recall",
                    "kw-11#1 keyword_recall",
                    "kw-14#1 keyword_recall",
                    "kw-16#1 keyword_recall",
                    "kw-06#1 includes",
                    "kw-08#1 concise",
                    "kw-14#1 concise",
                ],
            },
        ),
    ]


# -- Inspect pieces --------------------------------------------------------------------------


@scorer(metrics=[mean(), stderr()])
def keyword_recall() -> Scorer:
    """The share of the target keywords the answer names."""

    async def score(state: TaskState, target: Target) -> Score:
        answer = state.output.completion.lower()
        found = [word for word in target.target if word.lower() in answer]
        return Score(
            value=len(found) / len(target.target),
            answer=answer,
            explanation=f"found {len(found)}/{len(target.target)}: {', '.join(found)}",
        )

    return score


@scorer(metrics=[accuracy()])
def concise() -> Scorer:
    """True when the answer has at most CONCISE_CHARS characters."""

    async def score(state: TaskState, target: Target) -> Score:
        del target
        length = len(state.output.completion)
        return Score(value=length <= CONCISE_CHARS, explanation=f"{length} chars")

    return score


@scorer(metrics=[accuracy()])
def concise_word() -> Scorer:
    """ "yes" when the answer has at most CONCISE_CHARS characters, else "no" (strings)."""

    async def score(state: TaskState, target: Target) -> Score:
        del target
        length = len(state.output.completion)
        return Score(value="yes" if length <= CONCISE_CHARS else "no", explanation=f"{length}")

    return score


@scorer(metrics=[accuracy()])
def cites_source() -> Scorer:
    """ "True" when the answer cites a source, else "false" (strings, as a judge may write)."""

    async def score(state: TaskState, target: Target) -> Score:
        del target
        cited = "(source:" in state.output.completion
        return Score(value="True" if cited else "false")

    return score


@scorer(metrics=[mean()])
def confidence_text() -> Scorer:
    """A numeric string: "1" without hedging, "0.5" after one "probably", "0" after two."""

    async def score(state: TaskState, target: Target) -> Score:
        del target
        hedges = state.output.completion.count("probably")
        return Score(value={0: "1", 1: "0.5"}.get(hedges, "0"))

    return score


@solver
def tag_sample() -> Solver:
    """Put the sample's key in a system message, so the scripted model knows what to answer."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        del generate
        key = f"{state.sample_id}#{state.epoch}"
        state.messages.insert(
            0, ChatMessageSystem(content=f"You are a terse assistant. {KEY_PREFIX}{key}")
        )
        return state

    return solve


@solver
def inject_errors(errors: list[str]) -> Solver:
    """Fail the listed samples the way a broken sandbox would."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        del generate
        key = f"{state.sample_id}#{state.epoch}"
        if key in errors:
            raise RuntimeError(f"simulated sandbox failure while solving sample {key}")
        return state

    return solve


def scripted_model(answers: dict[str, str]) -> Callable[..., ModelOutput]:
    """mockllm custom outputs: the scripted answer of the sample, with explicit usage (one token
    per word of the conversation in, one per word of the answer out)."""

    def output(
        messages: list[ChatMessage], tools: Any, tool_choice: Any, config: GenerateConfig
    ) -> ModelOutput:
        del tools, tool_choice, config
        text = " ".join(message.text for message in messages)
        key = text.split(KEY_PREFIX, 1)[1].split()[0]
        completion = answers[key]
        result = ModelOutput.from_content(model="mockllm/model", content=completion)
        tokens_in = len(text.split())
        tokens_out = max(len(completion.split()), 1)
        result.usage = ModelUsage(
            input_tokens=tokens_in, output_tokens=tokens_out, total_tokens=tokens_in + tokens_out
        )
        return result

    return output


def make_task(scenario: Scenario, variant: str) -> Task:
    solvers = [tag_sample()]
    if scenario.errors:
        solvers.append(inject_errors(errors=scenario.errors[variant]))
    solvers.append(generate())

    @task(name=scenario.name)
    def corpus_task(variant: str = variant) -> Task:
        del variant
        return Task(
            dataset=MemoryDataset(list(scenario.samples), name=scenario.dataset),
            solver=solvers,
            scorer=scenario.scorers(),
            epochs=scenario.epochs,
        )

    return corpus_task(variant=variant)


def run(scenario: Scenario, variant: str, log_format: str, logs: Path) -> Path:
    model = get_model("mockllm/model", custom_outputs=scripted_model(scenario.answers[variant]))
    [log] = eval(
        make_task(scenario, variant),
        model=model,
        log_dir=str(logs),
        log_format=log_format,  # type: ignore[arg-type]
        fail_on_error=not scenario.errors,
        max_samples=4,
        display="none",
    )
    return Path(log.location)


# -- truths, read back with Inspect's own reader ---------------------------------------------


def verdicts(log: EvalLog) -> dict[str, dict[str, Any]]:
    """ "id#epoch" -> scorer -> value (C/I/..., bool, float), or {"error": message}."""
    table: dict[str, dict[str, Any]] = {}
    for sample in log.samples or []:
        key = f"{sample.id}#{sample.epoch}"
        if sample.error is not None:
            table[key] = {"error": sample.error.message}
        else:
            table[key] = {name: score.value for name, score in (sample.scores or {}).items()}
    return table


TO_FLOAT = value_to_float()
"""Inspect's own reading of a score value ("C" 1, "P" 0.5, "yes"/"true" 1, "1" 1.0, ...)."""


def passed(value: Any) -> bool:
    """Pass at EvalArc's default threshold 1.0, by Inspect's own value_to_float."""
    return TO_FLOAT(value) >= 1.0


def transitions(
    before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]
) -> dict[str, list[str]]:
    """Per attempt and check: regressed (pass -> fail/error, or a numeric value fell) and
    improved (fail/error -> pass, or a numeric value rose)."""
    changes: dict[str, list[str]] = {"regressed": [], "improved": []}
    checks = sorted(
        {name for row in [*before.values(), *after.values()] for name in row} - {"error"}
    )
    for key in before.keys() & after.keys():
        for check in checks:
            old, new = before[key].get(check), after[key].get(check)
            if old is None and new is None:
                continue
            if isinstance(old, float) and isinstance(new, float) and old != new:
                changes["regressed" if new < old else "improved"].append(f"{key} {check}")
                continue
            was = old is not None and passed(old)
            now = new is not None and passed(new)
            if was and not now:
                changes["regressed"].append(f"{key} {check}")
            elif now and not was:
                changes["improved"].append(f"{key} {check}")
    return changes


def headline(log: EvalLog, scorer_name: str, metric: str) -> float:
    assert log.results is not None
    for score in log.results.scores:
        if score.name == scorer_name:
            return float(score.metrics[metric].value)
    raise AssertionError(f"{scorer_name} has no {metric}")


def check_and_describe(scenario: Scenario, folder: Path) -> list[str]:
    """Read every log of ``scenario`` with read_eval_log, check it against the promise, and
    return its section of truths.toml."""
    tables: dict[str, dict[str, dict[str, Any]]] = {}
    heads: dict[str, float] = {}
    for variant in ("baseline", "current"):
        json_log = read_eval_log(str(folder / f"{scenario.name}.{variant}.json"))
        eval_log = read_eval_log(str(folder / f"{scenario.name}.{variant}.eval"))
        assert json_log.eval.packages.get("inspect_ai") == INSPECT_VERSION, json_log.eval.packages
        table = verdicts(json_log)
        assert table == verdicts(eval_log), f"{scenario.name} {variant}: .json and .eval differ"
        tables[variant] = table
        heads[variant] = headline(json_log, *scenario.headline)
        assert heads[variant] == headline(eval_log, *scenario.headline)
        for sample in json_log.samples or []:
            for usage in sample.model_usage.values():
                assert usage.total_tokens == usage.input_tokens + usage.output_tokens > 0
    changes = transitions(tables["baseline"], tables["current"])
    promised = scenario.expected
    for kind in ("regressed", "improved"):
        assert sorted(changes[kind]) == sorted(promised[kind]), (scenario.name, kind, changes[kind])
    for variant, value in zip(("baseline", "current"), promised["headline"], strict=True):
        assert round(heads[variant], 4) == round(value, 4), (scenario.name, variant, heads[variant])
    lines = [
        f"[{scenario.name}]",
        f'headline_metric = "{scenario.headline[0]}/{scenario.headline[1]}"',
        f"headline_baseline = {heads['baseline']!r}",
        f"headline_current = {heads['current']!r}",
        "regressed = [" + ", ".join(f'"{item}"' for item in sorted(changes["regressed"])) + "]",
        "improved = [" + ", ".join(f'"{item}"' for item in sorted(changes["improved"])) + "]",
    ]
    for variant in ("baseline", "current"):
        lines.append("")
        lines.append(f"[{scenario.name}.{variant}]")
        for key, row in sorted(tables[variant].items(), key=lambda item: _order(item[0])):
            cells = ", ".join(f"{name} = {_toml(value)}" for name, value in sorted(row.items()))
            lines.append(f'"{key}" = {{ {cells} }}')
    for variant in ("baseline", "current"):
        lines.append("")
        lines.append(f"[{scenario.name}.{variant}_to_float]")
        for key, row in sorted(tables[variant].items(), key=lambda item: _order(item[0])):
            if "error" in row:
                continue
            cells = ", ".join(
                f"{name} = {_toml(TO_FLOAT(value))}" for name, value in sorted(row.items())
            )
            lines.append(f'"{key}" = {{ {cells} }}')
    return lines


def _order(key: str) -> tuple[int, str, int]:
    sample, epoch = key.rsplit("#", 1)
    return (int(sample) if sample.isdigit() else 0, sample, int(epoch))


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(float(value))
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


# -- main ------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write here instead (must not exist)")
    parser.add_argument(
        "--only",
        action="append",
        metavar="SCENARIO",
        help="run only this scenario (repeatable); the other logs are kept and read back as "
        "they are, and truths.toml is written for all of them",
    )
    options = parser.parse_args(argv)
    out: Path = options.out or HERE
    if options.out is not None:
        if out.exists():
            sys.exit(f"{out} exists; choose a new folder")
        out.mkdir(parents=True)
    truths = [
        "# Written by generate.py from the logs beside it, read with inspect_ai.log.read_eval_log.",
        "# Per attempt (\"id#epoch\"): each scorer's value, or the sample's error.",
        "",
    ]
    out = out.resolve()
    # Inspect records the task file relative to the working folder: "generate.py".
    os.chdir(HERE)
    with tempfile.TemporaryDirectory(prefix="inspect-corpus-") as scratch:
        for scenario in scenarios():
            rerun = options.only is None or scenario.name in options.only
            for variant in ("baseline", "current") if rerun else ():
                for log_format in ("json", "eval"):
                    logs = Path(scratch) / f"{scenario.name}-{variant}-{log_format}"
                    written = run(scenario, variant, log_format, logs)
                    shutil.copyfile(written, out / f"{scenario.name}.{variant}.{log_format}")
            truths.extend(check_and_describe(scenario, out))
            truths.append("")
            print(f"{scenario.name}: {'written and ' if rerun else ''}checked")
    (out / "truths.toml").write_text("\n".join(truths), encoding="utf-8")
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
    status = main(sys.argv[1:])
    _scrub_machine_paths()
    raise SystemExit(status)
