"""Scripted Keep-Talking teams and their batched rollouts (``eval/rollout.py env=ktane/...``)."""

from __future__ import annotations

import time
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.agents.ktane.export import episode_keys, export_instances
from jaxcollab.agents.ktane.policies import TEAMS, oracle_team, random_team, team
from jaxcollab.core.registry import make
from jaxcollab.envs.ktane import KtaneEnv
from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane.draw import fold_in

__all__ = ["TEAMS", "export_instances", "oracle_team", "play", "random_team", "rollout", "team"]


def play(env: KtaneEnv, policy, keys: jax.Array):
    """Play one episode per key to its end (or ``env.max_turns``); returns final states.

    A ``lax.while_loop`` over turns steps the whole batch (vmap) until every episode has an
    outcome, so short episodes do not pay for long ones' turns beyond the batch maximum.
    Episode ``i`` resets with ``fold_in(keys[i], 0)`` and plays turn ``t`` with
    ``fold_in(fold_in(keys[i], 1), t)`` (:func:`jaxcollab.envs.ktane.draw.fold_in`), as the
    exporter does.
    """
    k_reset, k_play = jax.vmap(fold_in, (0, None))(keys, 0), jax.vmap(fold_in, (0, None))(keys, 1)
    state = jax.vmap(env.init_state)(k_reset)

    def turn(carry):
        t, state = carry
        step_keys = jax.vmap(fold_in, (0, None))(k_play, t)
        actions = jax.vmap(partial(policy, env))(step_keys, state)
        state, _, _ = jax.vmap(env.transition)(step_keys, state, actions)
        return t + 1, state

    def running(carry):
        t, state = carry
        return (t < env.max_turns) & jnp.any(state.outcome == T.RUNNING)

    return jax.lax.while_loop(running, turn, (jnp.int32(0), state))[1]


def _summary(final, seconds: float) -> dict:
    outcome = np.asarray(final.outcome)
    n = len(outcome)
    return {
        "episodes": n,
        "success_rate": float(np.mean(outcome == T.SOLVED)),
        "mean_strikes": float(np.mean(final.strikes)),
        "outcomes": {name: int(np.sum(outcome == i)) for i, name in enumerate(T.OUTCOMES)},
        "mean_time_left_s": float(np.mean(np.maximum(final.time_left_cs, 0)) / 100),
        "mean_defuser_actions": float(np.mean(final.n_actions)),
        "episodes_per_second": n / seconds,
    }


#: Compiled rollouts by (env name, agent, episodes), reused across calls and seeds.
_COMPILED: dict = {}


def run_env(env: KtaneEnv, agent: str, episodes: int, seed: int) -> dict:
    """Roll out ``agent`` on ``env`` for ``episodes`` episodes; compile time excluded from the
    rate (reported as ``compile_s``, 0 when a compiled rollout is reused)."""
    keys = episode_keys(seed, episodes)
    t0 = time.perf_counter()
    cache_key = (env.name, agent, episodes)
    if cache_key not in _COMPILED:
        _COMPILED[cache_key] = jax.jit(partial(play, env, team(agent))).lower(keys).compile()
    compiled = _COMPILED[cache_key]
    t1 = time.perf_counter()
    final = jax.block_until_ready(compiled(keys))
    t2 = time.perf_counter()
    return {**_summary(jax.device_get(final), t2 - t1), "compile_s": t1 - t0}


def rollout(env_names: list[str], agent: str, episodes: int, seed: int) -> dict:
    """Roll out a scripted team on each ``ktane/...`` environment.

    Args:
        env_names: registered Keep-Talking environment names (one or several).
        agent: ``oracle`` or ``random`` (see :mod:`jaxcollab.agents.ktane.policies`).
        episodes: episodes per environment; seed: base seed (episode ``i`` of each env uses
            ``split(key(seed), episodes)[i]``).

    Returns:
        ``agent``, ``seed``, ``episodes`` (total), ``success_rate``, ``mean_strikes``,
        ``outcomes`` (counts of running / solved / strikeout / timeout), ``mean_time_left_s``
        (bomb seconds left, 0 on timeout), ``mean_defuser_actions``, ``episodes_per_second``
        (all episodes / summed run time, compile excluded) and ``per_module`` (name → the same
        keys, when several environments are given).

    Raises:
        ValueError: unknown agent or a non-ktane environment; KeyError: unknown name.
    """
    team(agent)
    runs = {}
    for name in env_names:
        env = make(name)
        if not isinstance(env, KtaneEnv):
            raise ValueError(f"{name!r} is not a ktane environment")
        runs[name] = run_env(env, agent, episodes, seed)
    n = sum(r["episodes"] for r in runs.values())
    mean = lambda key: sum(r[key] * r["episodes"] for r in runs.values()) / n  # noqa: E731
    result = {
        "agent": agent,
        "seed": seed,
        "episodes": n,
        "success_rate": mean("success_rate"),
        "mean_strikes": mean("mean_strikes"),
        "outcomes": {k: sum(r["outcomes"][k] for r in runs.values()) for k in T.OUTCOMES},
        "mean_time_left_s": mean("mean_time_left_s"),
        "mean_defuser_actions": mean("mean_defuser_actions"),
        "episodes_per_second": n
        / sum(r["episodes"] / r["episodes_per_second"] for r in runs.values()),
    }
    if len(runs) > 1:
        result["per_module"] = runs
    return result
