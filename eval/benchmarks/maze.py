"""Maze benchmarks: rejection sampler (200,000 accepted mazes, acceptance rate), env step
throughput, and the paper-size dataset build (issue 4)."""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp

from eval.benchmarks._timing import best_time
from jaxcollab import episode_keys, make, privileged_policy, rollout
from jaxcollab.envs.maze.generator import sample_mazes
from jaxcollab.envs.maze.text import build_dataset


def oracle_path(key, obs, policy_state, state, params):
    """Privileged: both agents play the path's next move (read from the hidden state)."""
    move = state.moves[jnp.minimum(state.step, state.moves.shape[0] - 1)]
    return jnp.stack([move, move]), policy_state


def _rollout_steps_per_second(batch: int) -> float:
    """``maze/split-6x6`` steps per second through :func:`jaxcollab.rollout` (reset included),
    ``batch`` episodes of 10 steps with the path oracle."""
    env = make("maze/split-6x6")
    policy = privileged_policy(oracle_path)
    keys = episode_keys(1, batch)
    return 10 * batch / best_time(lambda: rollout(env, policy, keys, max_steps=10), repeats=3)


def run(quick: bool) -> list[dict]:
    n_mazes = 20_000 if quick else 200_000
    key = jax.random.key(0)
    sample_mazes(key, 1)  # compile
    start = time.perf_counter()
    _, accepted, draws = sample_mazes(key, n_mazes)
    t_sample = time.perf_counter() - start
    n_examples = 200_000 if quick else 2_000_000
    start = time.perf_counter()
    train, test, _ = build_dataset(key, n_examples)
    t_build = time.perf_counter() - start
    batch = 1_024 if quick else 8_192
    return [
        {
            "name": f"maze sampler, {n_mazes:,} accepted 6x6 mazes",
            "value": t_sample,
            "unit": "s",
            "notes": f"{draws:,} draws; target <= 60 s for 200,000",
        },
        {
            "name": "maze acceptance rate (exactly one simple path)",
            "value": accepted / draws,
            "unit": "fraction",
            "notes": f"{accepted:,} / {draws:,}",
        },
        {"name": "maze sampler throughput", "value": accepted / t_sample, "unit": "mazes/s"},
        {
            "name": f"maze dataset build, {n_examples:,} examples (90/10 by maze)",
            "value": t_build,
            "unit": "s",
            "notes": f"{len(train) + len(test):,} mazes, "
            f"{int(train.n_moves.sum()):,}/{int(test.n_moves.sum()):,} examples",
        },
        {
            "name": f"maze/split-6x6 steps/s through jaxcollab.rollout, {batch} episodes",
            "value": _rollout_steps_per_second(batch),
            "unit": "steps/s",
            "notes": "reset + scan of 10 steps with the path oracle, best of 3",
        },
    ]
