"""Per-role observation tokens (the env contract; SANZARU, Tables 1
and 8).

Each role's row is built only from what that role perceives: Deaf sees the board but reads the
plate as ``UNREADABLE``; Mute sees only the manual (every board token is ``HIDDEN``); Blind feels
positions, cuts, keys, the plate and strip glyphs, and reads colours, lights and displays as
``UNREADABLE``. Messages: the *inbox* holds, per sender, the message of that sender's most
recent turn if it was addressed to this role or sent by it; the *chat* holds the same for each
of the :data:`~jaxcollab.envs.bomb.tables.CHAT_ROUNDS` earlier rounds, oldest first (SANZARU
Fig. 2, per-agent conversation histories), minus the rounds that scrolled out of a Flashback
window (SANZARU Table 2, Flashback). A gesture reaches Blind as one ``BLANK`` per symbol
(SANZARU Table 1, Fig. 9). Token ids index the :data:`~jaxcollab.envs.bomb.tables` vocabulary.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.params import BombParams
from jaxcollab.envs.bomb.state import (
    BombState,
    display_now,
    keys_shown,
    light_now,
    noise_parts,
    unpack,
)


@dataclasses.dataclass(frozen=True)
class Layout:
    """Offsets of the observation sections for message caps S (bytes) and G (symbols).

    Sections, in order (lengths; H = ``CHAT_ROUNDS``): ``header`` (4: role, round, round
    budget, your-turn), ``light``, ``display``, ``display2``, ``light2`` (1 each; ``2`` =
    haystack decoys), ``wires`` (7), ``keys`` (4), ``pressed`` (4), ``plate`` (1), ``strip``
    (3), ``history`` (2 x 24: light, display per past round), ``manual_mode`` (2: key mode,
    task), ``manual`` (20 x 4: label, column, value, value2), ``picks`` (8), ``chat_round``
    (H: the round number of each chat row, oldest first, ``PAD`` = none or scrolled out),
    ``chat_speech_meta`` (H x 3: recipient per sender), ``chat_speech`` (H x 3 x S),
    ``chat_gesture_meta`` (H x 3), ``chat_gesture`` (H x 3 x G), ``speech_meta`` (3),
    ``speech`` (3 x S), ``gesture_meta`` (3), ``gesture`` (3 x G), ``feedback`` (3: speech
    bounced, gesture bounced, act rejected).
    """

    speech_bytes: int = T.DEFAULT_SPEECH_BYTES
    gesture_symbols: int = T.DEFAULT_GESTURE_SYMBOLS

    def sizes(self) -> dict[str, int]:
        return {
            "header": 4, "light": 1, "display": 1, "display2": 1, "light2": 1,
            "wires": T.MAX_WIRES, "keys": T.N_KEYS, "pressed": T.N_KEYS, "plate": 1,
            "strip": T.STRIP_SLOTS, "history": 2 * T.MAX_ROUNDS, "manual_mode": 2,
            "manual": 4 * T.MANUAL_ENTRIES, "picks": T.SEQ, "chat_round": T.CHAT_ROUNDS,
            "chat_speech_meta": T.CHAT_ROUNDS * T.N_AGENTS,
            "chat_speech": T.CHAT_ROUNDS * T.N_AGENTS * self.speech_bytes,
            "chat_gesture_meta": T.CHAT_ROUNDS * T.N_AGENTS,
            "chat_gesture": T.CHAT_ROUNDS * T.N_AGENTS * self.gesture_symbols,
            "speech_meta": T.N_AGENTS, "speech": T.N_AGENTS * self.speech_bytes,
            "gesture_meta": T.N_AGENTS, "gesture": T.N_AGENTS * self.gesture_symbols,
            "feedback": 3,
        }

    def slices(self) -> dict[str, slice]:
        out, at = {}, 0
        for name, n in self.sizes().items():
            out[name] = slice(at, at + n)
            at += n
        return out

    @property
    def length(self) -> int:
        return sum(self.sizes().values())


def _tok(value, base: int, empty: int = T.PAD):
    """``base + value`` where ``value >= 0``, else ``empty``."""
    return jnp.where(value >= 0, base + value, empty)


def _by_role(deaf, mute, blind) -> jax.Array:
    """Stack per-role token rows (each broadcast to a common shape) into ``[3, ...]``."""
    deaf, mute, blind = jnp.broadcast_arrays(jnp.asarray(deaf), jnp.asarray(mute),
                                             jnp.asarray(blind))
    return jnp.stack([deaf, mute, blind]).astype(jnp.int32)


def _board(state: BombState, params: BombParams) -> jax.Array:
    noise = noise_parts(state, params)
    light = light_now(state, params)
    light_deaf = jnp.where(light >= 0, T.COLOUR_TOK + light, T.DARK)
    disp_deaf = T.DIGIT_TOK + display_now(state, params)
    d2, l2 = noise["decoy_display"], noise["decoy_light"]
    present = state.wire_colour >= 0
    wires_deaf = jnp.where(state.wire_cut, T.CUT_MARK, _tok(state.wire_colour, T.COLOUR_TOK,
                                                             T.ABSENT))
    wires_blind = jnp.where(state.wire_cut, T.CUT_MARK, jnp.where(present, T.UNREADABLE,
                                                                  T.ABSENT))
    keys = _tok(keys_shown(state, params), T.DIGIT_TOK, T.ABSENT)
    has_keys = params.keypad != T.KEYPAD_NONE
    pressed = jnp.where(has_keys, jnp.where(state.pressed, T.YES, T.NO), T.ABSENT)
    deaf = jnp.concatenate([
        jnp.stack([light_deaf, disp_deaf, _tok(d2, T.DIGIT_TOK, T.ABSENT),
                   _tok(l2, T.COLOUR_TOK, T.ABSENT)]), wires_deaf, keys,
        pressed, jnp.array([T.UNREADABLE]), _tok(noise["strip_colour"], T.COLOUR_TOK, T.ABSENT),
    ])
    blind = jnp.concatenate([
        jnp.stack([T.UNREADABLE, T.UNREADABLE, jnp.where(d2 >= 0, T.UNREADABLE, T.ABSENT),
                   jnp.where(l2 >= 0, T.UNREADABLE, T.ABSENT)]),
        wires_blind, keys, pressed, (T.PLATE_TOK + state.plate)[None],
        _tok(noise["strip_glyph"], T.STRIP_TOK, T.ABSENT),
    ])
    return _by_role(deaf, T.HIDDEN, blind)


def _in_window(r: jax.Array, state: BombState, params: BombParams) -> jax.Array:
    """Whether earlier round ``r`` is still visible: not scrolled out of the Flashback window
    (the current round and the ``window - 1`` before it; SANZARU Table 2, Flashback)."""
    window = jnp.where(params.window > 0, params.window, T.MAX_ROUNDS)
    return (r >= 0) & (r < state.round) & (r > state.round - window)


def _history(state: BombState, params: BombParams) -> jax.Array:
    """Past rounds' light and display, within the Flashback window."""
    visible = _in_window(jnp.arange(T.MAX_ROUNDS), state, params)
    light = jnp.where(state.hist_light >= 0, T.COLOUR_TOK + state.hist_light, T.DARK)
    pair = jnp.stack([light, T.DIGIT_TOK + state.hist_disp], 1)  # [24, 2], round-major
    deaf = jnp.where(visible[:, None], pair, T.PAD).reshape(-1)
    blind = jnp.where(visible[:, None], jnp.full_like(pair, T.UNREADABLE), T.PAD).reshape(-1)
    return _by_role(deaf, T.HIDDEN, blind)


def _manual(state: BombState, params: BombParams) -> jax.Array:
    used = state.manual_a >= 0
    glyph = params.key == T.KEY_GLYPH
    label = jnp.where(glyph, T.PLATE_TOK, T.COLOUR_TOK) + state.manual_a
    code = params.task == T.TASK_CODE
    v0 = jnp.where(code, T.DIGIT_TOK + state.manual_val // 10, T.COLOUR_TOK + state.manual_val)
    v1 = jnp.where(code, T.DIGIT_TOK + state.manual_val % 10, T.PAD)
    entries = jnp.stack([label, _tok(state.manual_b, T.DIGIT_TOK), v0, v1], 1)
    entries = jnp.where(used[:, None], entries, T.PAD).reshape(-1)
    picks = jnp.where((jnp.arange(T.SEQ) < params.steps) & (params.key == T.KEY_FLASH),
                      T.NUM_TOK + state.pick, T.PAD)
    mute = jnp.concatenate([jnp.stack([T.MODE_TOK + params.key, T.TASK_TOK + params.task]),
                            entries, picks])
    return _by_role(T.HIDDEN, mute, T.HIDDEN)


def _addressed(to: jax.Array, words: jax.Array, channel: int, base: int
               ) -> tuple[jax.Array, jax.Array]:
    """Messages as each role perceives them, for one channel.

    Args:
        to: int32 ``[..., 3]`` recipient per sender (``-1`` = none, ``EVERYONE`` = every
            teammate the channel reaches); words: uint32 ``[..., 3, L/4]`` packed bodies.

    Returns:
        (meta ``[3, ..., 3]``: ``ROLE_TOK + to`` where the message was addressed to (or, to
        ``EVERYONE``, reaches) or was sent by the observing role, with ``ROLE_TOK + sender``
        for a message to ``EVERYONE`` (a direct message never names its sender), else
        ``PAD``; body ``[3, ..., 3 * L]`` tokens, ``BLANK`` per symbol where the channel
        reaches the observer as blanks).
    """
    me = jnp.arange(T.N_AGENTS).reshape((-1,) + (1,) * to.ndim)
    sender = jnp.arange(T.N_AGENTS)
    everyone = to == T.EVERYONE
    reaches = jnp.asarray(T.RECEIVE)[me, channel] != T.BOUNCE
    shown = ((to == me) | (sender == me) | (everyone & reaches)) & (to >= 0)
    meta = jnp.where(shown, T.ROLE_TOK + jnp.where(everyone, sender, to), T.PAD)
    body = unpack(words).astype(jnp.int32)
    tokens = jnp.where(body > 0, base + body, T.PAD)
    blanks = (jnp.asarray(T.RECEIVE)[me, channel] == T.BLANKS) & (sender != me)
    tokens = jnp.where(blanks[..., None] & (body > 0), T.BLANK, tokens)
    tokens = jnp.where(shown[..., None], tokens, T.PAD)
    return meta, tokens.reshape(tokens.shape[:-2] + (-1,))


def _messages(state: BombState, params: BombParams) -> list[jax.Array]:
    """Inbox (each sender's most recent turn) and chat (earlier rounds) sections, per role."""
    # Row of each sender's most recent turn: this round's once it has played, else the last.
    position = jnp.argmax(jnp.asarray(params.turn_order)[None, :]
                          == jnp.arange(T.N_AGENTS)[:, None], axis=1)
    latest = (state.round - (position >= state.turn)) % T.CHAT_SLOTS
    rounds = state.round - T.CHAT_ROUNDS + jnp.arange(T.CHAT_ROUNDS)  # oldest first
    visible = _in_window(rounds, state, params)
    rows = rounds % T.CHAT_SLOTS
    sender = jnp.arange(T.N_AGENTS)
    out = [_by_role(*[jnp.where(visible, T.NUM_TOK + rounds, T.PAD)] * T.N_AGENTS)]
    inbox = []
    for ch, (to, words, base) in enumerate(((state.speech_to, state.speech, T.BYTE_TOK),
                                            (state.gesture_to, state.gesture, T.SYMBOL_TOK))):
        chat_to = jnp.where(visible[:, None], to[rows], T.NO_TARGET)
        meta, body = _addressed(chat_to, words[rows], ch, base)
        out += [meta.reshape(T.N_AGENTS, -1), body.reshape(T.N_AGENTS, -1)]
        inbox += list(_addressed(to[latest, sender], words[latest, sender], ch, base))
    return out + inbox


def observe(state: BombState, params: BombParams) -> jax.Array:
    """Every role's observation: int32 ``[3, Layout(S, G).length]`` tokens."""
    role = jnp.arange(T.N_AGENTS)
    your_turn = jnp.where(jnp.asarray(params.turn_order)[state.turn] == role, T.YES, T.NO)
    header = jnp.stack([T.ROLE_TOK + role, jnp.full(3, T.NUM_TOK + state.round),
                        jnp.full(3, T.NUM_TOK + params.rounds), your_turn], 1)
    feedback = jnp.concatenate([state.bounced, state.act_rejected[:, None]], 1)
    return jnp.concatenate([
        header, _board(state, params), _history(state, params), _manual(state, params),
        *_messages(state, params), jnp.where(feedback, T.YES, T.NO),
    ], 1).astype(jnp.int32)
