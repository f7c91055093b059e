"""Turns: the Defuser's and the Expert's turn, time, strikes and outcomes (GPTNT, §4.1, App.
B.4.1 and C.4; see :mod:`jaxcollab.envs.ktane.env` for the rules in words).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.board import Board
from jaxcollab.envs.ktane.dispatch import act, context
from jaxcollab.envs.ktane.mission import DEFUSER, EXPERT, KtaneParams
from jaxcollab.envs.ktane.modules.base import ACTION_LEN, MESSAGE, MODULE_VERBS, VERBS, WAIT
from jaxcollab.envs.ktane.navigation import navigate
from jaxcollab.envs.ktane.state import FEEDBACK, BombState


class TimedAction(NamedTuple):
    """A joint action with its Defuser turn's length (GPTNT C.4.2's continuous time).

    Attributes:
        actions: int32 ``[2, ACTION_LEN]``, the joint action.
        elapsed_cs: int32 ``[]``, centiseconds of game time the Defuser's turn lasts
            (negative counts as 0; an Expert turn ignores it).
    """

    actions: Any
    elapsed_cs: Any


def timed_action(actions, elapsed_s: float) -> TimedAction:
    """Host side: ``actions`` (int32 ``[2, ACTION_LEN]``) as a :class:`TimedAction` whose
    Defuser turn lasts ``elapsed_s`` seconds of game time (rounded to centiseconds).

    Raises:
        ValueError: ``elapsed_s`` is negative or not finite.
    """
    if not 0 <= float(elapsed_s) < float("inf"):
        raise ValueError(f"a turn's elapsed game time must be finite and >= 0 s, got {elapsed_s!r}")
    return TimedAction(np.asarray(actions, np.int32), np.int32(round(float(elapsed_s) * 100)))


def transition(board: Board, key, state: BombState, actions, params: KtaneParams):
    """One turn of a running episode without the observation: ``(state, reward, info)`` (ended
    episodes are frozen by :meth:`jaxcollab.core.env.Environment.step`, not here).

    ``actions`` is int32 ``[2, ACTION_LEN]``: ``(verb, target, w_1 … w_L)`` per role; a
    ``message`` verb sends the phrase ``w_1 … w_L`` (tokens clipped into the vocabulary). Or a
    :class:`TimedAction`: a Defuser turn then lasts its ``elapsed_cs`` of game time instead of
    Δ = :data:`~jaxcollab.envs.ktane.tables.TURN_S` (GPTNT C.4.2's continuous time: a reply's
    latency, a poll sleep).

    ``info`` holds int32/bool scalars ``role`` (who acted), ``strike``, ``valid`` (the
    action had an effect or was a wait/message) and ``outcome``.

    Raises:
        ValueError: ``actions`` is not shaped ``[2, ACTION_LEN]``.
    """
    elapsed_cs = jnp.int32(T.TURN_S * 100)
    if isinstance(actions, TimedAction):
        elapsed_cs = jnp.maximum(jnp.asarray(actions.elapsed_cs, jnp.int32), 0)
        actions = actions.actions
    actions = jnp.asarray(actions, jnp.int32)
    if actions.shape != (2, ACTION_LEN):
        raise ValueError(f"ktane actions must be int32 [2, {ACTION_LEN}], got {actions.shape}")
    role = state.turn % 2
    verb, target = actions[role, 0], actions[role, 1]
    phrase = jnp.clip(actions[role, 2:], 0, len(V.VOCAB) - 1)
    defuser_state, strike, valid = defuser_turn(board, key, state, verb, target, phrase, params,
                                                elapsed_cs)
    expert_state = expert_turn(state, verb, phrase)
    new = jax.tree.map(lambda d, e: jnp.where(role == DEFUSER, d, e), defuser_state, expert_state)
    ended = new.outcome != T.RUNNING
    won = new.outcome == T.SOLVED
    reward = jnp.full((2,), jnp.where(ended, jnp.where(won, 1.0, -1.0), 0.0), jnp.float32)
    info = {
        "role": role,
        "strike": (role == DEFUSER) & strike,
        "valid": jnp.where(role == DEFUSER, valid, True),
        "outcome": new.outcome,
    }
    return new, reward, info


def defuser_turn(board: Board, key, state: BombState, verb, target, phrase, params: KtaneParams,
                 elapsed_cs=T.TURN_S * 100):
    """The Defuser's turn: navigate, act on the zoomed module, or message; then ``elapsed_cs``
    centiseconds of game time pass, ``elapsed_cs × rate(strikes before the action)`` of bomb
    time (sync: Δ, :data:`~jaxcollab.envs.ktane.tables.TURN_COST_CS`).

    Returns ``(state, strike, ok)``.
    """
    face, zoom, nav_ok = navigate(board, state, verb, target)
    z = jnp.maximum(state.zoom, 0)
    kind = jnp.asarray(board.slot_kind)[z]
    n_targets = jnp.asarray(board.n_targets)[kind]
    can_act = (
        jnp.isin(verb, jnp.asarray(MODULE_VERBS))
        & (state.zoom >= 0)
        & ~state.solved[z]
        & jnp.asarray(board.accepts)[kind, jnp.clip(verb, 0, len(VERBS) - 1)]
        & (target >= 0)
        & (target < n_targets)
    )
    vec, strike, solved_now, valid = act(board, 
        key,
        state.modules[z],
        kind,
        verb,
        jnp.clip(target, 0, n_targets - 1),
        context(state, params.rules),
    )
    acted = can_act & valid
    strike, solved_now = acted & strike, acted & solved_now
    solved = state.solved.at[z].set(state.solved[z] | solved_now)
    strikes = state.strikes + strike
    message = verb == MESSAGE
    ok = nav_ok | acted | message | (verb == WAIT)
    feedback = jnp.select(
        [strike, solved_now, ~ok, verb == WAIT],
        [FEEDBACK[3], FEEDBACK[4], FEEDBACK[5], FEEDBACK[2]],
        FEEDBACK[1],
    )
    rate = jnp.asarray(T.TIMER_RATE_QUARTERS)[jnp.minimum(state.strikes, 4)]
    time_left = state.time_left_cs - elapsed_cs * rate // 4
    outcome = jnp.select(
        [jnp.all(solved), strikes >= params.max_strikes, time_left <= 0],
        [T.SOLVED, T.STRIKEOUT, T.TIMEOUT],
        T.RUNNING,
    )
    new = state.replace(
        modules=state.modules.at[z].set(jnp.where(acted, vec, state.modules[z])),
        solved=solved,
        strikes=strikes,
        time_left_cs=time_left,
        turn=state.turn + 1,
        face=face,
        zoom=zoom,
        feedback=feedback.astype(jnp.int32),
        messages=say(state, DEFUSER, message, phrase),
        fresh=state.fresh.at[DEFUSER].set(message),
        outcome=outcome.astype(jnp.int32),
        n_actions=state.n_actions + ~message,
        n_messages=state.n_messages.at[DEFUSER].add(message),
    )
    return new, strike, ok

def expert_turn(state: BombState, verb, phrase) -> BombState:
    """The Expert's turn: only a message changes anything (time is not charged)."""
    message = verb == MESSAGE
    return state.replace(
        turn=state.turn + 1,
        messages=say(state, EXPERT, message, phrase),
        fresh=state.fresh.at[EXPERT].set(message),
        n_messages=state.n_messages.at[EXPERT].add(message),
    )


def say(state: BombState, role: int, message, phrase) -> jax.Array:
    """``state.messages`` with ``role``'s phrase replaced by ``phrase`` if it sent a message."""
    return state.messages.at[role].set(jnp.where(message, phrase, state.messages[role]))
