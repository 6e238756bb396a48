"""Whether a figure a result file declares about itself agrees with the figure recomputed from
its own cases: the one comparison every reconciling reader makes (Inspect's ``results.scores``,
lm-eval's ``results_*.json``, OpenAI Evals' ``final_report``)."""

from __future__ import annotations

import math

REL_TOLERANCE = 1e-9
"""Relative gap allowed: the tools sum floats in another order than EvalArc does."""
ABS_TOLERANCE = 1e-12
"""Absolute gap allowed around zero."""


def agrees(declared: object, figure: float) -> bool:
    """``declared`` is a number (not a bool) within the tolerance of ``figure``; anything else,
    an overflowing integer included, disagrees."""
    if isinstance(declared, bool) or not isinstance(declared, int | float):
        return False
    try:
        number = float(declared)
    except OverflowError:
        return False
    return math.isclose(number, figure, rel_tol=REL_TOLERANCE, abs_tol=ABS_TOLERANCE)
