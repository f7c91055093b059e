"""The bomb episode state and the per-round derived quantities every other module reads.

Rule evaluation and the board are decoupled: ``key_seq`` holds the manual entry that decides
each stage (or each light-cycle slot), ``light_seq``/``disp_seq`` what the board shows, and the
generator (:mod:`jaxcollab.envs.bomb.generate`) makes the two consistent.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.params import BombParams


@chex.dataclass(frozen=True)
class BombState:
    """Hidden episode state (int32 unless noted; ``S``/``G`` = speech/gesture caps).

    Attributes:
        round: rounds completed; turn: turns taken in the current round (0..2);
        ending: ``RUNNING``/``DEFUSED``/``WRONG_ACTION``/``TIMED_OUT``;
        progress: correct actions done (cuts, or code digits pressed).
        wire_colour: ``[7]`` colour id per position, ``-1`` where no wire;
        wire_cut: bool ``[7]``.
        key_seq: ``[SEQ]`` manual entry deciding stage ``s`` (or light-cycle slot ``s``).
        light_seq / disp_seq: ``[SEQ]`` light colour / display digit the board shows per stage,
            cycle slot or flash.
        pick: ``[SEQ]`` the flash each stage uses (flashback manual).
        manual_a / manual_b / manual_val: ``[20]`` manual entries: key label (light colour or
            plate glyph), display column (``-1`` = none), and the answer (wire colour, or a
            two-digit code ``10*d0 + d1``); entries past ``rows*cols`` are unused.
        keypad: ``[4]`` key digits (real keypad); pressed: bool ``[4]``; plate: plate glyph id.
        noise: uint32 seed of the parts the manual never uses (strip, haystack decoys).
        hist_light / hist_disp: ``[24]`` the light / display shown in each round so far.
        seen_colours: bitmask of wire colours that were required in some earlier round.
        bounces, rejected, acts: counts of dead-channel calls (bounced, or a gesture to Blind
            delivered as blanks), act attempts by non-Blind roles, and Blind's act attempts;
            wrong_round: bool.
        speech: uint32 ``[R, 3, S/4]`` a ring of the last ``R = CHAT_ROUNDS + 1`` rounds'
            messages (row ``round % R``), per sender: UTF-8 bytes packed four per word
            (:func:`pack`; 0-terminated); speech_to: ``[R, 3]`` the recipient (``EVERYONE``: every
            teammate the channel reaches), ``-1`` for
            none or bounced (a sender's slot is rewritten at its turn, so a slot of the current
            row whose sender has not played yet still holds round ``round - R``);
            gesture: uint32 ``[R, 3, G/4]`` packed symbol ids (0 = empty);
            gesture_to: ``[R, 3]``; bounced: bool ``[3, 2]`` each agent's last speech/gesture
            bounced; act_rejected: bool ``[3]``.
    """

    round: jax.Array
    turn: jax.Array
    ending: jax.Array
    progress: jax.Array
    wire_colour: jax.Array
    wire_cut: jax.Array
    key_seq: jax.Array
    light_seq: jax.Array
    disp_seq: jax.Array
    pick: jax.Array
    manual_a: jax.Array
    manual_b: jax.Array
    manual_val: jax.Array
    keypad: jax.Array
    pressed: jax.Array
    plate: jax.Array
    noise: jax.Array
    hist_light: jax.Array
    hist_disp: jax.Array
    seen_colours: jax.Array
    bounces: jax.Array
    rejected: jax.Array
    acts: jax.Array
    wrong_round: jax.Array
    speech: jax.Array
    speech_to: jax.Array
    gesture: jax.Array
    gesture_to: jax.Array
    bounced: jax.Array
    act_rejected: jax.Array


def pack(data: jax.Array) -> jax.Array:
    """uint8 ``[..., n]`` (n a multiple of 4) → uint32 ``[..., n/4]`` (bit-for-bit)."""
    return jax.lax.bitcast_convert_type(data.reshape(data.shape[:-1] + (-1, 4)), jnp.uint32)


def unpack(words: jax.Array) -> jax.Array:
    """Inverse of :func:`pack`: uint32 ``[..., m]`` → uint8 ``[..., 4m]``."""
    data = jax.lax.bitcast_convert_type(words, jnp.uint8)
    return data.reshape(words.shape[:-1] + (-1,))


def seq_index(state: BombState, params: BombParams) -> jax.Array:
    """Index into ``key_seq``/``light_seq`` now: the light-cycle slot (flashing) or the stage."""
    cyc = state.round % jnp.maximum(params.period, 1)
    return jnp.minimum(jnp.where(params.light == T.LIGHT_CYCLE, cyc, state.progress), T.SEQ - 1)


def light_now(state: BombState, params: BombParams) -> jax.Array:
    """The light colour on the board now (``-1`` = dark after the flashes)."""
    flash = jnp.where(state.round < params.flashes,
                      state.light_seq[jnp.minimum(state.round, T.SEQ - 1)], -1)
    shown = state.light_seq[seq_index(state, params)]
    return jnp.where(params.light == T.LIGHT_FLASH, flash, shown)


def display_now(state: BombState, params: BombParams) -> jax.Array:
    """The (real) display digit now; 0 in families without a display."""
    return jnp.where(params.cols > 1, state.disp_seq[seq_index(state, params)], 0)


def required_value(state: BombState, params: BombParams) -> jax.Array:
    """The manual's answer now: the wire colour to cut, or the code digit to press next."""
    val = state.manual_val[state.key_seq[seq_index(state, params)]]
    digit = jnp.where(state.progress == 0, val // 10, val % 10)
    return jnp.where(params.task == T.TASK_CODE, digit, val)


def mix(x: jax.Array) -> jax.Array:
    """A 32-bit integer hash (xorshift-multiply), used for parts that change every round."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * jnp.uint32(0x846CA68B)
    return x ^ (x >> 16)


def noise_parts(state: BombState, params: BombParams) -> dict[str, jax.Array]:
    """The parts the manual never uses, as shown now (-1 where absent).

    Returns ``decoy_display`` (digit), ``decoy_light`` (colour), ``strip_colour`` /
    ``strip_glyph`` ``[3]`` and ``decoy_keys`` ``[4]`` (digits). In haystack variants they
    change every round (SANZARU Table 2, Haystack: "displays, lights, and props change for no
    reason"); otherwise they are fixed for the episode.
    """
    r = jnp.where(params.haystack == 1, state.round, 0).astype(jnp.uint32)
    h = mix(state.noise ^ mix(r + jnp.uint32(0x9E3779B9)) + jnp.arange(12, dtype=jnp.uint32))
    h = mix(h)
    hay, strip = params.haystack == 1, params.strip == 1
    decoy_keys = (h[7:11] % 10).astype(jnp.int32)
    return {
        "decoy_display": jnp.where(hay, (h[0] % 10).astype(jnp.int32), -1),
        "decoy_light": jnp.where(hay, (h[11] % T.N_LIGHTS).astype(jnp.int32), -1),
        "strip_colour": jnp.where(strip, (h[1:4] % T.N_COLOURS).astype(jnp.int32), -1),
        "strip_glyph": jnp.where(strip, (h[4:7] % len(T.STRIP_GLYPHS)).astype(jnp.int32), -1),
        "decoy_keys": jnp.where(params.keypad == T.KEYPAD_DECOY, decoy_keys, -1),
    }


def keys_shown(state: BombState, params: BombParams) -> jax.Array:
    """Keypad digits as felt/seen now (real or decoy keypad), ``-1`` with no keypad: ``[4]``."""
    real = jnp.where(params.keypad == T.KEYPAD_REAL, state.keypad, -1)
    decoy = noise_parts(state, params)["decoy_keys"]
    return jnp.where(params.keypad == T.KEYPAD_DECOY, decoy, real)
