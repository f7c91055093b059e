"""Per-role observation tokens (DESIGN.md, env contract; spec "Roles and channels", "Parts").

Each role's row is built only from what that role perceives: Deaf sees the board but reads the
plate as ``UNREADABLE``; Mute sees only the manual (every board token is ``HIDDEN``); Blind feels
positions, cuts, keys, the plate and strip glyphs, and reads colours, light and display as
``UNREADABLE``. Messages appear in the sender's slot of the recipient's inbox; an agent's own
slot shows what it last sent. Token ids index :data:`~jaxcollab.envs.bomb.tables` vocabulary.
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

    Sections, in order (lengths): ``header`` (4: role, round, round budget, your-turn),
    ``light``, ``display``, ``display2`` (1 each), ``wires`` (7), ``keys`` (4), ``pressed`` (4),
    ``plate`` (1), ``strip`` (3), ``history`` (2 x 24: light, display per past round),
    ``manual_mode`` (2: key mode, task), ``manual`` (20 x 4: label, column, value, value2),
    ``picks`` (8), ``speech_meta`` (3), ``speech`` (3 x S), ``gesture_meta`` (3),
    ``gesture`` (3 x G), ``feedback`` (3: speech bounced, gesture bounced, act rejected).
    """

    speech_bytes: int = T.DEFAULT_SPEECH_BYTES
    gesture_symbols: int = T.DEFAULT_GESTURE_SYMBOLS

    def sizes(self) -> dict[str, int]:
        return {
            "header": 4, "light": 1, "display": 1, "display2": 1, "wires": T.MAX_WIRES,
            "keys": T.N_KEYS, "pressed": T.N_KEYS, "plate": 1, "strip": T.STRIP_SLOTS,
            "history": 2 * T.MAX_ROUNDS, "manual_mode": 2, "manual": 4 * T.MANUAL_ENTRIES,
            "picks": T.SEQ, "speech_meta": T.N_AGENTS, "speech": T.N_AGENTS * self.speech_bytes,
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
    d2 = noise["decoy_display"]
    present = state.wire_colour >= 0
    wires_deaf = jnp.where(state.wire_cut, T.CUT_MARK, _tok(state.wire_colour, T.COLOUR_TOK,
                                                             T.ABSENT))
    wires_blind = jnp.where(state.wire_cut, T.CUT_MARK, jnp.where(present, T.UNREADABLE,
                                                                  T.ABSENT))
    keys = _tok(keys_shown(state, params), T.DIGIT_TOK, T.ABSENT)
    has_keys = params.keypad != T.KEYPAD_NONE
    pressed = jnp.where(has_keys, jnp.where(state.pressed, T.YES, T.NO), T.ABSENT)
    deaf = jnp.concatenate([
        jnp.stack([light_deaf, disp_deaf, _tok(d2, T.DIGIT_TOK, T.ABSENT)]), wires_deaf, keys,
        pressed, jnp.array([T.UNREADABLE]), _tok(noise["strip_colour"], T.COLOUR_TOK, T.ABSENT),
    ])
    blind = jnp.concatenate([
        jnp.stack([T.UNREADABLE, T.UNREADABLE, jnp.where(d2 >= 0, T.UNREADABLE, T.ABSENT)]),
        wires_blind, keys, pressed, (T.PLATE_TOK + state.plate)[None],
        _tok(noise["strip_glyph"], T.STRIP_TOK, T.ABSENT),
    ])
    return _by_role(deaf, T.HIDDEN, blind)


def _history(state: BombState, params: BombParams) -> jax.Array:
    """Past rounds' light and display, within the Flashback window (spec "Families")."""
    r = jnp.arange(T.MAX_ROUNDS)
    window = jnp.where(params.window > 0, params.window, T.MAX_ROUNDS)
    visible = (r < state.round) & (r > state.round - window)
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


def _inbox(to: jax.Array, body: jax.Array, base: int) -> tuple[jax.Array, jax.Array]:
    """Per-recipient (meta ``[3, 3]``, body ``[3, 3 * L]``) for one channel (packed body)."""
    me = jnp.arange(T.N_AGENTS)[:, None]
    sender = jnp.arange(T.N_AGENTS)[None, :]
    shown = ((to[None, :] == me) | (sender == me)) & (to[None, :] >= 0)
    meta = jnp.where(shown, T.ROLE_TOK + to[None, :], T.PAD)
    body = unpack(body).astype(jnp.int32)
    tokens = jnp.where(body > 0, base + body, T.PAD)
    return meta, jnp.where(shown[:, :, None], tokens[None], T.PAD).reshape(T.N_AGENTS, -1)


def observe(state: BombState, params: BombParams) -> jax.Array:
    """Every role's observation: int32 ``[3, Layout(S, G).length]`` tokens."""
    role = jnp.arange(T.N_AGENTS)
    your_turn = jnp.where(jnp.asarray(params.turn_order)[state.turn] == role, T.YES, T.NO)
    header = jnp.stack([T.ROLE_TOK + role, jnp.full(3, T.NUM_TOK + state.round),
                        jnp.full(3, T.NUM_TOK + params.rounds), your_turn], 1)
    s_meta, s_body = _inbox(state.speech_to, state.speech, T.BYTE_TOK)
    g_meta, g_body = _inbox(state.gesture_to, state.gesture, T.SYMBOL_TOK)
    feedback = jnp.concatenate([state.bounced, state.act_rejected[:, None]], 1)
    return jnp.concatenate([
        header, _board(state, params), _history(state, params), _manual(state, params),
        s_meta, s_body, g_meta, g_body, jnp.where(feedback, T.YES, T.NO),
    ], 1).astype(jnp.int32)
