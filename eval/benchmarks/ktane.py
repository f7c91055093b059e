"""Keep-Talking benchmark: oracle episodes per second per module at batch 4,096, and the talking
team's on a 4-module mission.

Each row plays a full batch of one-module bombs (``ktane/<module>``, GPTNT time limits; all
eleven module types), and one row a 4-module mission (``ktane/missions/multi/9``: Memory,
Morse, Complicated Wires, Wire Sequence, 300 s; every episode is that one fixed bomb), to the
end with the oracle Defuser and a silent Expert (``jaxcollab.agents.ktane.play``: the generic
rollout, vmap over episodes, a while-loop over turns until every episode has ended). A last row
plays that mission with the talking team (:mod:`jaxcollab.agents.ktane.talking`: describing,
reading the manual and instructing, all inside the jitted rollout). The time is the best of a
few runs of the compiled rollout, so compile time is excluded (in ``notes``).
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
MISSION = "ktane/missions/multi/9"


def _row(name: str, batch: int, repeats: int, agent: str = "oracle") -> dict:
    env = make(name)
    keys = episode_keys(0, batch)
    t0 = time.perf_counter()
    final = jax.block_until_ready(play(env, agent, keys))
    compile_s = time.perf_counter() - t0
    seconds = best_time(lambda: play(env, agent, keys), repeats=repeats)
    solved = float(np.mean(np.asarray(final.outcome) == 1))
    turns = float(np.max(final.turn))
    return {
        "name": f"{name} {agent} episodes/s (batch {batch})",
        "value": batch / seconds,
        "unit": "episodes/s",
        "notes": f"success {solved:.3f}, {turns:.0f} turns max, compile {compile_s:.1f}s",
    }


def run(quick: bool) -> list[dict]:
    """One row per module type and two for a 4-module mission (see the module docstring)."""
    batch, repeats = (QUICK_BATCH, 1) if quick else (BATCH, 3)
    names = [*resolve("ktane/all"), MISSION]
    return [_row(name, batch, repeats) for name in names] + [
        _row(MISSION, batch, repeats, "talking")
    ]
