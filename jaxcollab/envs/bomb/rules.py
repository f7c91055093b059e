"""One turn of the bomb game: channel delivery, acting, family mechanics, endings.

A round is three turns, one per role, in ``params.turn_order``; :func:`turn` plays the turn of
the role whose turn it is and ignores the other rows of the joint action (SANZARU,
Table 1: a message is delivered at the recipient's next turn, so later agents in the same round
see it this round). Messages are written into this round's row of a ring of the last
``CHAT_SLOTS`` rounds, from which observations build each agent's inbox and chat history.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.params import BombParams
from jaxcollab.envs.bomb.state import (
    BombState,
    display_now,
    light_now,
    pack,
    required_value,
)


@chex.dataclass(frozen=True)
class BombAction:
    """A joint action, leading agent axis (only the acting role's row is read each turn).

    Attributes:
        act: int32 ``[3]``: ``WAIT``, ``CUT`` or ``PRESS``; arg: int32 ``[3]`` the wire
            position (0-based) or key position (0-based).
        speak_to / gesture_to: int32 ``[3]`` recipient role, or ``NO_TARGET`` (-1).
        speech: uint8 ``[3, S]`` UTF-8 bytes, 0-terminated; gesture: uint8 ``[3, G]`` symbol
            ids 1..42, 0 = empty.
    """

    act: jax.Array
    arg: jax.Array
    speak_to: jax.Array
    speech: jax.Array
    gesture_to: jax.Array
    gesture: jax.Array


def noop_action(speech_bytes: int, gesture_symbols: int) -> BombAction:
    """Everyone waits and sends nothing. NumPy arrays: constants in jitted code, and what the
    LLM host callbacks build actions from without dispatching a JAX operation (one would wait
    on the XLA:CPU pool its own callback holds: :mod:`jaxcollab.llm.hostonly`)."""
    none = np.full(T.N_AGENTS, T.NO_TARGET, np.int32)
    return BombAction(
        act=np.zeros(T.N_AGENTS, np.int32), arg=np.zeros(T.N_AGENTS, np.int32),
        speak_to=none, speech=np.zeros((T.N_AGENTS, speech_bytes), np.uint8),
        gesture_to=none.copy(), gesture=np.zeros((T.N_AGENTS, gesture_symbols), np.uint8),
    )


def delivery(sender: jax.Array, to: jax.Array, channel: int) -> jax.Array:
    """How a call from ``sender`` to ``to`` on ``channel`` arrives: int32 ``BOUNCE``, ``FULL``
    or ``BLANKS`` (:data:`~jaxcollab.envs.bomb.tables.RECEIVE`).

    The delivery matrix is data: the sender must have the channel (``CAN_SEND``) and address
    another role; then ``RECEIVE[to, channel]`` decides. Deaf cannot hear, so speech to Deaf
    bounces; a gesture to Blind arrives as blanks, one ``?`` per symbol (SANZARU Table 1,
    Fig. 9). Every other call from a sender that has the channel is delivered in full. A call
    to ``EVERYONE`` reaches each teammate as ``RECEIVE`` says (Deaf's speech without ``to``
    reaches Mute and Blind, SANZARU Table 1): ``FULL`` if some teammate gets it in full, else
    ``BLANKS`` if one gets blanks, else ``BOUNCE``.
    """
    can = jnp.asarray(T.CAN_SEND)[sender, channel]
    direct = (to >= 0) & (to < T.N_AGENTS) & (to != sender) & can
    modes = jnp.asarray(T.RECEIVE)[:, channel]
    others = jnp.arange(T.N_AGENTS) != jnp.asarray(sender)[..., None]
    full = (others & (modes == T.FULL)).any(-1)
    blanks = (others & (modes == T.BLANKS)).any(-1)
    everyone = jnp.where(full, T.FULL, jnp.where(blanks, T.BLANKS, T.BOUNCE))
    return jnp.where(direct, modes[jnp.clip(to, 0, T.N_AGENTS - 1)],
                     jnp.where((to == T.EVERYONE) & can, everyone, T.BOUNCE))


def rotate_survivors(colour: jax.Array, alive: jax.Array) -> jax.Array:
    """Shuffle family: each surviving wire moves to the next surviving position (wrapping).

    Args:
        colour: int32 ``[7]`` wire colours; alive: bool ``[7]`` present and uncut.
    """
    idx = jnp.arange(colour.shape[0])
    last_alive = jax.lax.cummax(jnp.where(alive, idx, -1))  # last survivor at or before q
    before = jnp.concatenate([jnp.full(1, -1), last_alive[:-1]])  # strictly before q
    source = jnp.where(before >= 0, before, last_alive[-1])  # wrap to the last survivor
    return jnp.where(alive, colour[jnp.clip(source, 0, colour.shape[0] - 1)], colour)


def _cell(state: BombState, actor) -> jax.Array:
    """bool ``[CHAT_SLOTS, 3]``: the actor's slot in this round's row of the message ring."""
    row = jnp.arange(T.CHAT_SLOTS)[:, None] == state.round % T.CHAT_SLOTS
    return row & (jnp.arange(T.N_AGENTS)[None, :] == actor)


def _silent(state: BombState, actor):
    """:func:`_send` for a joint action known (statically) to carry no messages."""
    cell = _cell(state, actor)
    return dict(speech_to=jnp.where(cell, T.NO_TARGET, state.speech_to),
                gesture_to=jnp.where(cell, T.NO_TARGET, state.gesture_to),
                bounced=state.bounced & ~cell.any(0)[:, None])


def _send(state: BombState, actions: BombAction, actor):
    """Channel delivery for the actor's speech and gesture into this round's row of the message
    ring; returns updated message fields. A bounced call is not stored; a call that is not
    delivered in full (bounced, or blanks) counts as dead-channel use in ``bounces``."""
    cell = _cell(state, actor)
    out, bounced, dead = {}, [], []
    for ch, (to_f, body_f) in enumerate((("speak_to", "speech"), ("gesture_to", "gesture"))):
        to = getattr(actions, to_f)[actor]
        mode = delivery(actor, to, ch)
        sent = to != T.NO_TARGET
        ok = mode != T.BOUNCE
        bounced.append(sent & ~ok)
        dead.append(sent & (mode != T.FULL))
        body = pack(getattr(actions, body_f)[actor])
        out[body_f] = jnp.where((cell & ok)[:, :, None], body, getattr(state, body_f))
        field = to_f.replace("speak_to", "speech_to")
        out[field] = jnp.where(cell, jnp.where(ok, to, T.NO_TARGET), getattr(state, field))
    row = cell.any(0)
    out["bounced"] = jnp.where(row[:, None], jnp.stack(bounced)[None, :], state.bounced)
    out["bounces"] = state.bounces + jnp.stack(dead).sum()
    return out


def _act(state: BombState, params: BombParams, actions: BombAction, actor):
    """Blind's cut/press (others' attempts are rejected); returns updated fields and flags."""
    act, arg = actions.act[actor], actions.arg[actor]
    trying = act != T.WAIT
    acting = trying & (actor == T.BLIND)
    req = required_value(state, params)
    pos = jnp.clip(arg, 0, T.MAX_WIRES - 1)
    colour = state.wire_colour[pos]
    wire_ok = (arg >= 0) & (arg < T.MAX_WIRES) & (colour >= 0) & ~state.wire_cut[pos]
    cut = acting & (act == T.CUT)
    cut_right = cut & wire_ok & (params.task == T.TASK_CUT) & (colour == req)
    key = jnp.clip(arg, 0, T.N_KEYS - 1)
    press_right = (acting & (act == T.PRESS) & (arg >= 0) & (arg < T.N_KEYS)
                   & (params.keypad == T.KEYPAD_REAL) & (params.task == T.TASK_CODE)
                   & ~state.pressed[key] & (state.keypad[key] == req))
    right = cut_right | press_right
    wrong = acting & ~right
    earlier = (state.seen_colours >> jnp.clip(colour, 0, 31)) & 1
    wire_cut = state.wire_cut | ((jnp.arange(T.MAX_WIRES) == pos) & cut_right)
    alive = (state.wire_colour >= 0) & ~wire_cut
    rotated = rotate_survivors(state.wire_colour, alive)
    seen = state.seen_colours | jnp.where(params.task == T.TASK_CUT, 1 << jnp.clip(req, 0, 30), 0)
    return dict(
        wire_cut=wire_cut,
        wire_colour=jnp.where(cut_right & (params.shuffle == 1), rotated, state.wire_colour),
        pressed=state.pressed | ((jnp.arange(T.N_KEYS) == key) & press_right),
        progress=state.progress + right,
        acts=state.acts + acting,
        rejected=state.rejected + (trying & ~acting),
        act_rejected=jnp.where(jnp.arange(T.N_AGENTS) == actor, trying & ~acting,
                               state.act_rejected),
        wrong_round=state.wrong_round | (wrong & cut & wire_ok & (earlier == 1)),
        seen_colours=seen,
    ), wrong


def turn(state: BombState, actions: BombAction, params: BombParams, messages: bool = True):
    """Play the current role's turn of a running episode (ended episodes are frozen by
    :meth:`jaxcollab.core.env.Environment.step`, not here).

    Args:
        state: the episode state; actions: the joint :class:`BombAction`; params: the variant.
        messages: static; ``False`` promises that every ``speak_to``/``gesture_to`` is
            ``NO_TARGET`` (a team that never talks, e.g. the oracle), so the message buffers are
            left untouched — the result is identical, only cheaper.

    Returns:
        ``(state, reward, terminated, truncated)``: reward float32 ``[3]`` is +1 for every
        agent on the turn the bomb is defused, -1 on a wrong action, else 0; ``terminated``
        (defused or wrong action) and ``truncated`` (round budget spent) are bool scalars.
    """
    actor = jnp.asarray(params.turn_order)[state.turn]
    msg = _send(state, actions, actor) if messages else _silent(state, actor)
    acted, wrong = _act(state, params, actions, actor)
    state = state.replace(**msg, **acted)
    defused = state.progress >= params.steps
    end_round = state.turn == T.N_AGENTS - 1
    r = jnp.arange(T.MAX_ROUNDS) == state.round
    state = state.replace(
        hist_light=jnp.where(r & end_round, light_now(state, params), state.hist_light),
        hist_disp=jnp.where(r & end_round, display_now(state, params), state.hist_disp),
        turn=(state.turn + 1) % T.N_AGENTS,
        round=state.round + end_round,
    )
    timed_out = ~defused & ~wrong & (state.round >= params.rounds)
    ending = jnp.select([wrong, defused, timed_out], [T.WRONG_ACTION, T.DEFUSED, T.TIMED_OUT],
                        state.ending)
    state = state.replace(ending=ending.astype(jnp.int32))
    reward = jnp.full(T.N_AGENTS, defused.astype(jnp.float32) - wrong.astype(jnp.float32))
    return state, reward, defused | wrong, timed_out
