"""Inspect AI's own reading of score values, and the reconciliation of a log with itself.

:func:`value_to_float` is Inspect's ``value_to_float()`` (``inspect_ai/scorer/_metric.py``, read
in inspect_ai 0.3.285, the corpus version and the newest release): ``"C"`` 1, ``"P"`` 0.5,
``"I"``/``"N"`` 0, bools, ints and floats cast to float, strings lower-cased with
``"yes"``/``"true"`` 1, ``"no"``/``"false"`` 0 and finite numeric strings (``float()`` syntax:
signs, decimals, exponents) as their number. What Inspect cannot convert (it logs a warning and
counts 0: other strings, ``"nan"``/``"inf"``, null, lists, dicts, an int beyond float range) is
None here, and the reader refuses it.

:class:`ScoreTally` keeps, per scorer and sample id, the sum and count of those floats while the
samples stream past (two numbers per sample and scorer, never a sample), then checks the log's
``results.scores`` against them:

* **Scorers.** Where ``results.scores`` is a list, the scorers it names (each entry's
  ``scorer``; in older logs without one, its ``name``, or the dict-valued scorer whose key that
  name is) must be the scorers the samples' ``scores`` name: a scorer scored in a sample but not
  listed is refused (Inspect lists every score key it saw), and a listed scorer no sample scored
  is refused unless some sample has an error (a scorer that raised on every sample leaves no
  score but is still listed). An unscored run lists none.
* **Metrics recomputed.** ``accuracy`` and ``mean`` of a scalar-valued scorer, where the entry
  is the scorer's own (``name`` equals the scorer), the metric is Inspect's built-in (its
  ``name`` is the key, no ``group``, no ``params``: a custom ``to_float`` is a param) and the
  epoch reduction is known: the default (no ``reducer`` and no ``epochs_reducer``, or ``"mean"``
  either way) reduces each sample's epochs to their mean, then averages over samples; epoch
  reduction switched off (``epochs_reducer: []``) averages every attempt. Values that are NaN
  (Inspect's unscored sentinel) are left out, as Inspect leaves them out. A declared value more
  than 1e-9 relative (1e-12 absolute) away from the recomputed one, or not a finite number, is
  refused naming the file, the scorer, the metric and both figures.
* **Metrics skipped** (stated so that nobody reads the check as wider than it is): every other
  metric (``stderr``, ``std``, ``var``, ``bootstrap_stderr``, custom metrics, grouped metrics
  and metrics of dict-valued scores), every metric under another epoch reducer (``max``,
  ``median``, ``mode``, ``at_least_k``, ``pass_at_k``, custom) and entries with no scored sample.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from evalarc.errors import InputError
from evalarc.formats.archive import show_name
from evalarc.formats.figures import agrees

RECOMPUTED_METRICS = ("accuracy", "mean")
_LETTERS = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
_WORDS = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}


def value_to_float(value: object) -> float | None:
    """``value`` as Inspect's default ``value_to_float()`` reads it, or None where Inspect
    cannot convert it (and would warn and count 0). NaN and the infinities stay as they are."""
    if isinstance(value, str):
        letter = _LETTERS.get(value)
        if letter is not None:
            return letter
        lowered = value.lower()
        word = _WORDS.get(lowered)
        if word is not None:
            return word
        try:
            number = float(lowered)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    if isinstance(value, bool | int | float):
        try:
            return float(value)
        except OverflowError:
            return None
    return None


class _Sums:
    """One scorer's floats: per sample id [sum, count], and over every attempt."""

    __slots__ = ("by_case", "count", "dict_keys", "dict_valued", "total")

    def __init__(self) -> None:
        self.by_case: dict[str, list[float]] = {}
        self.total = 0.0
        self.count = 0
        self.dict_valued = False
        self.dict_keys: set[str] = set()
        """The keys of its dict values (each is already a check of its own)."""

    def per_sample_mean(self) -> tuple[float, int]:
        means = [total / count for total, count in self.by_case.values() if count]
        return (math.fsum(means) / len(means) if means else math.nan), len(means)

    def attempt_mean(self) -> tuple[float, int]:
        return (self.total / self.count if self.count else math.nan), self.count


class ScoreTally:
    """What the samples scored, kept small enough to stream, and the checks against
    ``results.scores`` (see the module docstring)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.scorers: dict[str, _Sums] = {}
        self.errored = False
        """Some sample has an error."""

    def add(
        self, scorer: str, case_id: str, number: float | None, keys: Iterable[str] = ()
    ) -> None:
        """One score of one attempt: its float, or None and its ``keys`` for a dict value."""
        sums = self.scorers.get(scorer)
        if sums is None:
            sums = self.scorers[scorer] = _Sums()
        if number is None:
            sums.dict_valued = True
            sums.dict_keys.update(keys)
            return
        if math.isnan(number):
            return
        pair = sums.by_case.get(case_id)
        if pair is None:
            sums.by_case[case_id] = [number, 1]
        else:
            pair[0] += number
            pair[1] += 1
        sums.total += number
        sums.count += 1

    def reconcile(self, results: object, epochs_reducer: object) -> None:
        """Raise InputError where ``results`` (the log's own) disagrees with the samples."""
        if not isinstance(results, dict) or not isinstance(results.get("scores"), list):
            return
        entries = [entry for entry in results["scores"] if isinstance(entry, dict)]
        declared = {scorer for entry in entries if (scorer := self._scorer_of(entry)) is not None}
        undeclared = sorted(set(self.scorers) - declared)
        if undeclared:
            listed = ", ".join(sorted(declared)) or "no scorer"
            raise InputError(
                f"{self.name}: samples are scored by {show_name(undeclared[0])}, but the log's "
                f"results.scores lists {listed}; the log disagrees with itself"
            )
        absent = sorted(declared - set(self.scorers))
        if absent and not self.errored:
            raise InputError(
                f"{self.name}: the log's results.scores lists scorer {show_name(absent[0])}, but "
                "no sample has a score from it and no sample has an error; the log disagrees "
                "with itself"
            )
        for entry in entries:
            self._check_entry(entry, epochs_reducer)

    def _scorer_of(self, entry: dict[str, object]) -> str | None:
        """The scorer an entry of ``results.scores`` belongs to: its ``scorer``; without one
        (logs of older Inspect versions), its ``name``, which for a dict-valued scorer's
        per-key metrics is the key, so a key of exactly one dict-valued scorer names it."""
        scorer = entry.get("scorer")
        if isinstance(scorer, str):
            return scorer
        name = entry.get("name")
        if not isinstance(name, str):
            return None
        if name not in self.scorers:
            owners = [key for key, sums in self.scorers.items() if name in sums.dict_keys]
            if len(owners) == 1:
                return owners[0]
        return name

    def _check_entry(self, entry: dict[str, object], epochs_reducer: object) -> None:
        scorer = self._scorer_of(entry)
        metrics = entry.get("metrics")
        if scorer is None or entry.get("name") != scorer or not isinstance(metrics, dict):
            return
        sums = self.scorers.get(scorer)
        if sums is None or sums.dict_valued:
            return
        reducer = entry.get("reducer")
        if reducer == "mean" or (reducer is None and epochs_reducer in (None, ["mean"])):
            figure, count = sums.per_sample_mean()
            how, unit = "each sample's epochs reduced by mean", "samples"
        elif reducer is None and epochs_reducer == []:
            figure, count = sums.attempt_mean()
            how, unit = "every attempt, epoch reduction off", "attempts"
        else:
            return
        if not count:
            return
        for key, metric in metrics.items():
            if (
                key not in RECOMPUTED_METRICS
                or not isinstance(metric, dict)
                or metric.get("name", key) != key
                or metric.get("group")
                or metric.get("params")
            ):
                continue
            declared = metric.get("value")
            if agrees(declared, figure):
                continue
            shown = reducer if isinstance(reducer, str) else "default"
            raise InputError(
                f"{self.name}: the log's results.scores says scorer {show_name(scorer)} "
                f"(reducer {shown}) has {key} {_figure(declared)}, but its {count} scored "
                f"{unit} give {figure!r} (Inspect's value_to_float, {how}); the log "
                "disagrees with itself"
            )


def _figure(value: object) -> str:
    if isinstance(value, float | int) and not isinstance(value, bool):
        return repr(value)
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
