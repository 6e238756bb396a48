"""A completion function for oaieval that answers from a fixed table (offline, deterministic)."""

from __future__ import annotations

from typing import Any


class ScriptedResult:
    def __init__(self, text: str) -> None:
        self.text = text

    def get_completions(self) -> list[str]:
        return [self.text]


class ScriptedCompletionFn:
    def __init__(self, answers: dict[str, str], **_: Any) -> None:
        self.answers = answers

    def __call__(self, prompt: Any, **_: Any) -> ScriptedResult:
        text = prompt if isinstance(prompt, str) else prompt[-1]["content"]
        for country, city in self.answers.items():
            if country in text:
                return ScriptedResult(city)
        return ScriptedResult("I do not know")
