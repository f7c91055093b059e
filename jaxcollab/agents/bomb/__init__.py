"""Scripted bomb teams and their evaluation (``python eval/rollout.py env=bomb/all agent=oracle``),
played through the generic rollout :func:`jaxcollab.core.rollout.rollout`.

Teams: ``oracle`` (privileged), ``random``, ``solo``, and the protocol teams ``onebit``,
``symbol``, ``counting`` (see :mod:`jaxcollab.agents.bomb.teams`).
"""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np

from jaxcollab.agents.bomb.bank import rollout_bank
from jaxcollab.agents.bomb.teams import PROTOCOL_TEAMS, TEAMS, team, team_policy
from jaxcollab.core.registry import make
from jaxcollab.core.rollout import rollout
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.env import BombEnv, ending_counts
from jaxcollab.envs.bomb.params import TURN_ORDERS, make_params, stack_params
from jaxcollab.envs.bomb.state import BombState
from jaxcollab.scale import preempt

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


def play(env: BombEnv, agent, keys: jax.Array, params) -> BombState:
    """Play one episode per key ``[B]`` (params ``[B]``, any variants with ``env``'s caps) with
    team ``agent`` (a name, or a rollout policy such as a learned team) to its end; the final
    states. A while-loop over turns stops once every episode has ended
    (:func:`~jaxcollab.core.rollout.rollout` with ``until_done``)."""
    policy = team_policy(agent, env.layout) if isinstance(agent, str) else agent
    return rollout(env, policy, keys, params, batched_params=True,
                   max_steps=env.max_episode_steps, until_done=True).state


def evaluate(env_names: list[str], agent, episodes: int, seed: int, chunk: int = CHUNK,
             save_dir: str | Path | None = None) -> dict:
    """Play ``episodes`` episodes of each variant in ``env_names`` with team ``agent``.

    Episode ``e`` of a variant uses turn order ``TURN_ORDERS[e % 6]`` and the episode key
    ``fold_in(fold_in(PRNGKey(seed), variant_index), e)`` (the exporter's instance ``e``).
    Episodes are played ``chunk`` at a time (one compiled batch); with ``save_dir`` each
    finished chunk is kept there, a SIGTERM / SIGINT stops after the current chunk, and a rerun
    loads the finished chunks and plays the rest
    (:func:`jaxcollab.scale.preempt.resumable_episodes`), with the same results.

    Returns:
        ``agent``, ``episodes`` (total), ``success_rate`` (fraction defused), ``endings``
        (counts of ``defused`` / ``wrong_action`` / ``timed_out``), ``mean_rounds`` (rounds
        begun per episode), ``bounces`` (mean dead-channel calls per episode: bounced,
        or a gesture to Blind delivered as blanks),
        ``rejected_acts`` (mean act attempts by Deaf or Mute per episode), ``never_acted``
        (episodes where Blind never tried to act), ``wrong_round`` (episodes ended by a cut that
        matched an earlier round's light), ``episodes_per_second`` (wall time of the chunks
        played in this call after a compiling warm-up; None if all were loaded), ``devices``,
        and ``variants.<name>`` with the same per-variant keys.

    Raises:
        KeyError: unknown team or variant (lists the valid ones).
        ValueError: ``episodes < 1`` or ``chunk < 1``.
        jaxcollab.scale.preempt.Preempted: stopped by a signal (finished chunks saved).
    """
    if episodes < 1:
        raise ValueError(f"episodes must be positive, got {episodes!r}")
    if isinstance(agent, str):
        team(agent)
    env = make(env_names[0])
    keys, params, idx = _batch(env_names, episodes, seed)
    total = len(idx)

    def run(rows: np.ndarray) -> dict:
        state = play(env, agent, keys[rows], jax.tree.map(lambda x: x[rows], params))
        return {"ending": state.ending, "rounds": rounds_used(state), "bounces": state.bounces,
                "rejected": state.rejected, "acts": state.acts, "wrong_round": state.wrong_round}

    timer = preempt.ChunkTimer(run)
    final = preempt.resumable_episodes(timer, np.arange(total), min(chunk, total), save_dir)
    name = agent if isinstance(agent, str) else agent.name
    out = {"agent": name, **_summary(final, np.ones(total, bool)),
           "episodes_per_second": timer.episodes_per_second,
           "devices": [str(d) for d in jax.devices()]}
    out["variants"] = {name: _summary(final, idx == i) for i, name in enumerate(env_names)}
    return out


__all__ = ["PROTOCOL_TEAMS", "TEAMS", "evaluate", "play", "rollout_bank", "rounds_used", "team",
           "team_policy"]
