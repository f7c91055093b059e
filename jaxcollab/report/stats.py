"""Intervals on success rates: the Wilson score interval (Wilson 1927), two-sided 90 %."""

from __future__ import annotations

import math

#: two-sided 90 % normal quantile, z_{0.95}
Z90 = 1.6448536269514722


def successes(rate: float, episodes: int) -> int:
    """The success count behind a stored ``success_rate`` over ``episodes`` episodes."""
    return int(round(rate * episodes))


def wilson(k: int, n: int, z: float = Z90) -> tuple[float, float]:
    """Wilson score interval ``(low, high)`` of a binomial proportion ``k / n``, as fractions.

    Kept over the normal (Wald) interval because runs here are small (nine bank episodes per
    variant, SANZARU Table 12) and often at 0 % or 100 %, where Wald collapses to a point.

    Raises:
        ValueError: ``n < 1`` or ``k`` outside ``0..n``.
    """
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"wilson(k={k}, n={n}): expected n >= 1 and 0 <= k <= n")
    p, z2 = k / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def with_intervals(cells) -> list[tuple]:
    """``(rate, episodes)`` cells as ``(rate, low, high)`` with the 90 % Wilson interval
    (``(None, None, None)`` for a cell with no episodes)."""
    return [(r, *wilson(successes(r, n), n)) if n else (None, None, None) for r, n in cells]
