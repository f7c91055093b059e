"""Timing helper shared by benchmark entries: best-of-N wall time after a warm-up call."""

from __future__ import annotations

import time
from collections.abc import Callable

import jax


def best_time(fn: Callable[[], object], repeats: int = 5) -> float:
    """Seconds of the fastest of ``repeats`` calls to ``fn`` after one warm-up call.

    Results are passed through ``jax.block_until_ready`` so asynchronous dispatch is timed in
    full. The minimum is the least noisy estimate on a shared machine.
    """
    jax.block_until_ready(fn())
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - start)
    return best
