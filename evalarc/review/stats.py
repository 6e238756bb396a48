"""Small statistics shared by the review commands: Wilson score intervals and their overlap.

The intervals are descriptive. They tell a reader whether a change in pass counts could be
sampling noise; no gate is ever relaxed because of them.
"""

from __future__ import annotations

import math

WILSON_Z = 1.959963984540054
"""The two-sided 95% normal quantile the reference uses for every interval."""


def wilson_interval(passed: int, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of ``passed`` successes in ``n`` assessed attempts.

    ``n == 0`` gives the uninformative ``(0.0, 1.0)``; bounds are clipped to [0, 1].
    """
    if n <= 0:
        return (0.0, 1.0)
    z = WILSON_Z
    z_squared = z * z
    share = passed / n
    denominator = 1.0 + z_squared / n
    centre = (share + z_squared / (2.0 * n)) / denominator
    half_width = z * math.sqrt(share * (1.0 - share) / n + z_squared / (4.0 * n * n)) / denominator
    return (max(0.0, centre - half_width), min(1.0, centre + half_width))


def intervals_overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """True when two closed intervals share at least one point (touching bounds count)."""
    return a[0] <= b[1] and b[0] <= a[1]


def rounded_interval(passed: int, n: int) -> list[float] | None:
    """The Wilson interval rounded to 6 decimals as a JSON list, or None when nothing was
    assessed (a report shows no interval rather than the uninformative [0, 1])."""
    if n <= 0:
        return None
    low, high = wilson_interval(passed, n)
    return [round(low, 6), round(high, 6)]
