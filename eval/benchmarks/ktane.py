"""Keep-Talking benchmark: oracle episodes per second per module at batch 4,096.

Each row plays a full batch of one-module bombs (``ktane/<module>``, GPTNT time limits) to the
end with the oracle Defuser and a silent Expert (``jaxcollab.agents.ktane.play``: the generic
rollout, vmap over episodes, a while-loop over turns until every episode has ended). The time is
the best of a few runs of the compiled rollout, so compile time is excluded (in ``notes``).
"""

from __future__ import annotations

import time

import jax
import numpy as np

from eval.benchmarks._timing import best_time
from jaxcollab.agents.ktane import play
from jaxcollab.core.registry import make, resolve
from jaxcollab.core.rollout import episode_keys

BATCH, QUICK_BATCH = 4096, 512


def _row(name: str, batch: int, repeats: int) -> dict:
    env = make(name)
    keys = episode_keys(0, batch)
    t0 = time.perf_counter()
    final = jax.block_until_ready(play(env, "oracle", keys))
    compile_s = time.perf_counter() - t0
    seconds = best_time(lambda: play(env, "oracle", keys), repeats=repeats)
    solved = float(np.mean(np.asarray(final.outcome) == 1))
    turns = float(np.max(final.turn))
    return {
        "name": f"{name} oracle episodes/s (batch {batch})",
        "value": batch / seconds,
        "unit": "episodes/s",
        "notes": f"success {solved:.3f}, {turns:.0f} turns max, compile {compile_s:.1f}s",
    }


def run(quick: bool) -> list[dict]:
    """One row per module type (see the module docstring)."""
    batch, repeats = (QUICK_BATCH, 1) if quick else (BATCH, 3)
    return [_row(name, batch, repeats) for name in resolve("ktane/all")]
