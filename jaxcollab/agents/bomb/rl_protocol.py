"""What a learned protocol is: for each role and channel it may send on, how what the sender
perceives maps to what it sends, and whether it uses dead channels (speech to Deaf bounces, a
gesture to Blind arrives as blanks; SANZARU Table 1, Table 6 ``dead_channel``).

Episodes are played with :func:`jaxcollab.rollout` (``trajectory=True``); at every turn the
acting role's message (first symbol, or *none*) is tabulated against features of that role's own
parsed observation (:func:`jaxcollab.agents.bomb.view.parse`): the light it sees, the first
symbol it has just heard by speech and by gesture (``?`` = a blank), and, to interpret the code
only, the position of the wire to cut now (read from the hidden state, never shown to a team).
Each table comes with the mutual information between the feature and the message, in bits.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import jaxcollab
from jaxcollab.agents.bomb.rl_view import BombView
from jaxcollab.agents.bomb.teams import oracle_hint
from jaxcollab.agents.bomb.view import BLANK_ID, parse
from jaxcollab.core.rollout import Policy
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.rules import delivery
from jaxcollab.marl.information import mutual_information_bits

FEATURES = ("light", "heard_speech", "heard_gesture", "answer")
NONE = "none"


def _first_heard(symbols: jax.Array, came: jax.Array) -> jax.Array:
    """First symbol received (``[3, cap]`` per sender, ``came`` bool ``[3]``): its id, ``-2``
    for a blank, ``-1`` for nothing."""
    first = symbols[:, 0]
    got = came & (first != 0)
    sender = jnp.argmax(got)
    value = jnp.where(first[sender] == BLANK_ID, -2, first[sender])
    return jnp.where(got.any(), value, -1)


def _features(obs: jax.Array, state, params, role: int, view: BombView) -> jax.Array:
    v = parse(obs[role], role, view.env.layout)
    speech = _first_heard(v.speech, v.speech_from)
    gesture = _first_heard(v.gesture, v.gesture_from)
    answer = oracle_hint(state, params)[1]
    return jnp.stack([v.light, speech, gesture, answer])


def protocol_tables(policy: Policy, view: BombView, episodes: int = 1024, seed: int = 0
                    ) -> dict:
    """Play ``episodes`` episodes and tabulate the sent messages.

    Returns (JSON-ready) ``{"<role>/<channel>": {"turns", "sent", "recipients" (counts by
    role name, or ``everyone``), "dead_channel" (fraction of sends a receiver does not get in
    full), "symbols" (column labels: ``none``, then symbol ids), "features": {name: {"values",
    "table" (rows = feature values, columns = symbols), "mutual_information_bits"}}}}`` for
    every channel a role can send on.
    """
    env, params = view.env, view.env.default_params
    out = jaxcollab.rollout(env, policy, jaxcollab.episode_keys(seed, episodes),
                            max_steps=T.N_AGENTS * env.variant.rounds, trajectory=True)
    traj = out.trajectory
    obs, state = traj["obs"], traj["state"]
    live = np.asarray(state.ending == T.RUNNING)
    actor = np.asarray(view.actor(obs))
    sent = np.asarray(jax.vmap(jax.vmap(view.symbols_sent))(traj["actions"]))  # [T,B,3,2,K]
    to = np.stack([np.asarray(traj["actions"].speak_to), np.asarray(traj["actions"].gesture_to)],
                  -1)  # [T,B,3,2]
    per_role = [np.asarray(jax.jit(jax.vmap(jax.vmap(
        lambda o, s, r=r: _features(o, s, params, r, view))))(obs, state)) for r in range(3)]
    result = {}
    for role, name in enumerate(T.ROLE_NAMES):
        turns = live & (actor == role)
        for ch, channel in enumerate(T.CHANNEL_NAMES):
            if not T.CAN_SEND[role, ch]:
                continue
            first = sent[..., role, ch, 0][turns]
            dest = to[..., role, ch][turns]
            # not delivered in full (the env's delivery rule): bounced, or blanks
            dead = (dest >= 0) & (np.asarray(delivery(role, dest, ch)) != T.FULL)
            symbols = list(range(view.alphabet))
            col = np.where(first >= 0, first + 1, 0)
            feats = {}
            for f, fname in enumerate(FEATURES):
                values = per_role[role][..., f][turns]
                keys = sorted(set(values.tolist()))
                table = np.zeros((len(keys), len(symbols) + 1), np.int64)
                np.add.at(table, (np.searchsorted(keys, values), col), 1)
                feats[fname] = {"values": keys, "table": table.tolist(),
                                "mutual_information_bits": mutual_information_bits(table)}
            n_sent = int((dest >= 0).sum())
            result[f"{name}/{channel}"] = {
                "turns": int(turns.sum()), "sent": n_sent,
                "recipients": {n: int((dest == r).sum()) for r, n in enumerate(T.TARGET_NAMES)},
                "dead_channel": float(dead.sum() / max(n_sent, 1)),
                "symbols": [NONE] + symbols, "features": feats}
    return result
