"""Per-episode perspective flags of bomb episodes (SANZARU Table 6, the deterministic ones) and
message counts, from a rollout's trajectory (jitted, vectorised over episodes).

* ``dead_channel``: the team used a channel its recipient lacks: a bounced call, or a gesture to
  Blind delivered as blanks (the environment's ``bounces`` counter).
* ``wrong_round``: the episode ended on a cut that matched the light of an earlier round but not
  the current one (the environment's ``wrong_round`` flag).
* ``omission``: a teammate of Blind who alone perceived a fact the failed action needed never
  sent anything that could carry it (a delivered message with at least one symbol) before the
  loss; for a fact that changes with every action (the light of a staged manual, the wires of a
  shuffle) only messages since the current action began count ("leaves Mute on the old state
  after the bomb changes", SANZARU Table 6).

Shares over lost episodes (:func:`shares`) are what SANZARU Table 6 reports.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.bounds import ACTOR, needs
from jaxcollab.envs.bomb.rules import delivery

FLAGS = ("dead_channel", "wrong_round", "omission")
NEEDED = ("manual", "key", "layout")  # facts an action needs (:class:`~.bounds.Needs`)


def fact_owners(variant_name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(sole, per_stage)`` for :func:`episode_flags`, int32 / bool ``[3]`` over
    :data:`NEEDED`: the one role that perceives the fact (``-1`` if several do), and whether
    the fact changes with every action (staged light, shuffled wires)."""
    nd = needs(variant_name)
    v = nd.variant
    sole = [next(iter(nd.holders[f])) if len(nd.holders[f]) == 1 else -1 for f in NEEDED]
    staged = (v.light == T.LIGHT_STAGE) & (v.key == T.KEY_LIGHT)
    return np.array(sole, np.int32), np.array([False, staged, bool(v.shuffle)])


def _sent(actions, actor):
    """Per step and channel: (addressed, delivered, symbols) of the actor's calls ``[T, B, 2]``."""
    def row(x):
        return jnp.take_along_axis(x, actor[..., None], axis=-1)[..., 0]

    to = jnp.stack([row(actions.speak_to), row(actions.gesture_to)], -1)
    bodies = (actions.speech, actions.gesture)
    symbols = jnp.stack([jnp.take_along_axis((b != 0).sum(-1), actor[..., None], -1)[..., 0]
                         for b in bodies], -1)
    modes = jnp.stack([delivery(actor, to[..., c], c) for c in (T.SPEECH, T.GESTURE)], -1)
    addressed = to != T.NO_TARGET
    return addressed, addressed & (modes != T.BOUNCE), jnp.where(addressed, symbols, 0)


@jax.jit
def episode_flags(traj_state, traj_actions, final, turn_order, sole, per_stage) -> dict:
    """Flags and message counts per episode.

    Args:
        traj_state / traj_actions: the trajectory's ``state`` and ``actions`` (leading axes
            ``[T, B]``; the state each step acted on, as :func:`jaxcollab.core.rollout.rollout`
            records with ``trajectory=True``). final: the final states ``[B]``.
        turn_order: int32 ``[B, 3]`` each episode's turn order. sole / per_stage: int32 /
            bool ``[B, 3]`` from :func:`fact_owners` of each episode's variant.

    Returns:
        ``lost``, ``dead_channel``, ``wrong_round``, ``omission`` bool ``[B]``; ``messages`` and
        ``symbols`` int32 ``[B]`` (calls made and their gesture symbols plus speech bytes,
        bounced ones included).
    """
    active = traj_state.ending == T.RUNNING  # [T, B]
    actor = jnp.take_along_axis(turn_order[None], traj_state.turn[..., None], -1)[..., 0]
    addressed, delivered, symbols = _sent(traj_actions, actor)
    addressed, delivered = addressed & active[..., None], delivered & active[..., None]
    carried = (delivered & (symbols > 0)).any(-1)  # [T, B] a message that could carry a fact
    progress = traj_state.progress
    start = (progress < final.progress[None]).sum(0)  # first step of the current action
    step = jnp.arange(progress.shape[0])[:, None]
    lost = (final.ending == T.WRONG_ACTION) | (final.ending == T.TIMED_OUT)
    silent = []
    for f in range(len(NEEDED)):
        since = jnp.where(per_stage[:, f], start, 0)
        told = (carried & (actor == sole[None, :, f]) & (step >= since[None])).any(0)
        silent.append((sole[:, f] >= 0) & (sole[:, f] != ACTOR) & ~told)
    return {
        "lost": lost,
        "dead_channel": final.bounces > 0,
        "wrong_round": final.wrong_round,
        "omission": lost & jnp.stack(silent, -1).any(-1),
        "messages": addressed.sum((0, 2)).astype(jnp.int32),
        "symbols": jnp.where(addressed & active[..., None], symbols, 0).sum((0, 2)
                                                                            ).astype(jnp.int32),
    }


def shares(flags: dict[str, np.ndarray]) -> dict:
    """``{lost, flags: {name: share of lost episodes carrying it}}`` (SANZARU Table 6); shares
    are None when no episode was lost."""
    lost = np.asarray(flags["lost"], bool)
    n = int(lost.sum())
    return {"lost": n, "shares": {f: float(np.asarray(flags[f])[lost].mean()) if n else None
                                  for f in FLAGS}}


__all__ = ["FLAGS", "NEEDED", "episode_flags", "fact_owners", "shares"]
