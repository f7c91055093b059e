"""Scripted bomb teams and their evaluation (``python eval/rollout.py env=bomb/all agent=oracle``),
played through the generic rollout :func:`jaxcollab.core.rollout.rollout`.

Teams: ``oracle`` (privileged), ``random``, ``solo``, and the protocol teams ``onebit``,
``symbol``, ``counting`` (see :mod:`jaxcollab.agents.bomb.teams`).
"""

from __future__ import annotations

import time

import jax
import numpy as np
from rich.progress import Progress

from jaxcollab.agents.bomb.teams import PROTOCOL_TEAMS, TEAMS, team, team_policy
from jaxcollab.core.registry import make
from jaxcollab.core.rollout import rollout
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.env import BombEnv, ending_counts
from jaxcollab.envs.bomb.params import TURN_ORDERS, make_params, stack_params
from jaxcollab.envs.bomb.state import BombState

CHUNK = 16_384  # episodes per compiled batch


def _batch(env_names: list[str], episodes: int, seed: int):
    """Keys and stacked params for ``episodes`` per variant, cycling the six turn orders."""
    variants = [T.variant(name) for name in env_names]
    n_orders = len(TURN_ORDERS)
    table = stack_params([make_params(v, order) for v in variants for order in TURN_ORDERS])
    idx = np.repeat(np.arange(len(variants)), episodes)
    ep = np.tile(np.arange(episodes), len(variants))
    params = jax.tree.map(lambda x: x[idx * n_orders + ep % n_orders], table)
    root = jax.random.PRNGKey(seed)
    keys = jax.vmap(lambda v, e: jax.random.fold_in(jax.random.fold_in(root, v), e))(
        np.array([T.VARIANTS.index(v) for v in variants])[idx], ep)
    return keys, params, idx


def _summary(final: dict[str, np.ndarray], mask: np.ndarray) -> dict:
    n = int(mask.sum())
    ending = final["ending"][mask]
    return {
        "episodes": n,
        "success_rate": float((ending == T.DEFUSED).mean()),
        "endings": ending_counts(ending),
        "mean_rounds": float(final["rounds"][mask].mean()),
        "bounces": float(final["bounces"][mask].mean()),
        "rejected_acts": float(final["rejected"][mask].mean()),
        "never_acted": int((final["acts"][mask] == 0).sum()),
        "wrong_round": int(final["wrong_round"][mask].sum()),
    }


def rounds_used(state: BombState) -> jax.Array:
    """Rounds begun by the end of each episode (a round ended mid-way counts)."""
    return state.round + (state.turn > 0)


def play(env: BombEnv, agent: str, keys: jax.Array, params) -> BombState:
    """Play one episode per key ``[B]`` (params ``[B]``, any variants with ``env``'s caps) with
    team ``agent`` to its end; the final states. A while-loop over turns stops once every
    episode has ended (:func:`~jaxcollab.core.rollout.rollout` with ``until_done``)."""
    return rollout(env, team_policy(agent, env.layout), keys, params, batched_params=True,
                   max_steps=env.max_episode_steps, until_done=True).state


def evaluate(env_names: list[str], agent: str, episodes: int, seed: int) -> dict:
    """Play ``episodes`` episodes of each variant in ``env_names`` with team ``agent``.

    Episode ``e`` of a variant uses turn order ``TURN_ORDERS[e % 6]`` and the episode key
    ``fold_in(fold_in(PRNGKey(seed), variant_index), e)`` (the exporter's instance ``e``).

    Returns:
        ``agent``, ``episodes`` (total), ``success_rate`` (fraction defused), ``endings``
        (counts of ``defused`` / ``wrong_action`` / ``timed_out``), ``mean_rounds`` (rounds
        begun per episode), ``bounces`` (mean undeliverable calls per episode),
        ``rejected_acts`` (mean act attempts by Deaf or Mute per episode), ``never_acted``
        (episodes where Blind never tried to act), ``wrong_round`` (episodes ended by a cut that
        matched an earlier round's light), ``episodes_per_second`` (wall time of play after a
        compiling warm-up chunk), ``devices``, and ``variants.<name>`` with the same
        per-variant keys.

    Raises:
        KeyError: unknown team or variant (lists the valid ones).
        ValueError: ``episodes < 1``.
    """
    if episodes < 1:
        raise ValueError(f"episodes must be positive, got {episodes!r}")
    team(agent)
    env = make(env_names[0])
    keys, params, idx = _batch(env_names, episodes, seed)
    total = len(idx)
    chunk = min(CHUNK, total)
    pad = -total % chunk
    keys = np.concatenate([keys, np.repeat(keys[:1], pad, 0)])
    params = jax.tree.map(lambda x: np.concatenate([x, np.repeat(x[:1], pad, 0)]), params)
    run = lambda k, p: play(env, agent, k, p)  # noqa: E731
    run(keys[:chunk], jax.tree.map(lambda x: x[:chunk], params))  # compile outside the timing
    parts, start = [], time.perf_counter()
    with Progress(transient=True) as bar:
        task = bar.add_task(f"{agent} rollouts", total=total + pad)
        for lo in range(0, total + pad, chunk):
            part = slice(lo, lo + chunk)
            state = run(keys[part], jax.tree.map(lambda x, part=part: x[part], params))
            parts.append(jax.device_get({
                "ending": state.ending, "rounds": rounds_used(state), "bounces": state.bounces,
                "rejected": state.rejected, "acts": state.acts, "wrong_round": state.wrong_round,
            }))
            bar.advance(task, chunk)
    elapsed = time.perf_counter() - start
    final = {k: np.concatenate([p[k] for p in parts])[:total] for k in parts[0]}
    out = {"agent": agent, **_summary(final, np.ones(total, bool)),
           "episodes_per_second": total / elapsed,
           "devices": [str(d) for d in jax.devices()]}
    out["variants"] = {name: _summary(final, idx == i) for i, name in enumerate(env_names)}
    return out


__all__ = ["PROTOCOL_TEAMS", "TEAMS", "evaluate", "play", "rounds_used", "team", "team_policy"]
