"""Parse one role's observation tokens back into values (JAX, jit/vmap-safe).

Scripted teams read *only* these parsed views; nothing here touches the hidden state.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.observe import Layout


def _val(tok: jax.Array, base: int, n: int) -> jax.Array:
    """``tok - base`` when ``tok`` is in ``[base, base + n)``, else -1."""
    v = tok - base
    return jnp.where((v >= 0) & (v < n), v, -1)


@chex.dataclass(frozen=True)
class View:
    """A parsed observation row (ids, ``-1`` = not perceived / absent).

    Attributes: ``round``; ``light`` colour (-1 dark or unreadable); ``display`` digit;
    ``wire_colour`` ``[7]``; ``wire_cut`` / ``wire_present`` bool ``[7]``; ``keys`` ``[4]``
    digits; ``pressed`` bool ``[4]``; ``plate`` glyph id; ``hist_light`` ``[24]`` (-1 = not
    visible or dark); ``key_mode``, ``task``; manual ``m_label``, ``m_col``, ``m_v0``, ``m_v1``
    ``[20]``; ``picks`` ``[8]``; ``speech`` uint8-valued ``[3, S]`` and ``gesture`` ``[3, G]``
    per sender (0 = empty), ``speech_from`` / ``gesture_from`` bool ``[3]`` whether that
    sender's slot holds a message addressed to this role.
    """

    round: jax.Array
    light: jax.Array
    display: jax.Array
    wire_colour: jax.Array
    wire_cut: jax.Array
    wire_present: jax.Array
    keys: jax.Array
    pressed: jax.Array
    plate: jax.Array
    hist_light: jax.Array
    key_mode: jax.Array
    task: jax.Array
    m_label: jax.Array
    m_col: jax.Array
    m_v0: jax.Array
    m_v1: jax.Array
    picks: jax.Array
    speech: jax.Array
    gesture: jax.Array
    speech_from: jax.Array
    gesture_from: jax.Array


def parse(tokens: jax.Array, role: int, layout: Layout) -> View:
    """Parse ``tokens`` (int32 ``[layout.length]``) of role ``role`` into a :class:`View`."""
    o = {name: tokens[sl] for name, sl in layout.slices().items()}
    manual = o["manual"].reshape(T.MANUAL_ENTRIES, 4)
    label_base = jnp.where(o["manual_mode"][0] - T.MODE_TOK == T.KEY_GLYPH, T.PLATE_TOK,
                           T.COLOUR_TOK)
    me_tok = T.ROLE_TOK + role
    return View(
        round=o["header"][1] - T.NUM_TOK,
        light=_val(o["light"][0], T.COLOUR_TOK, T.N_COLOURS),
        display=_val(o["display"][0], T.DIGIT_TOK, 10),
        wire_colour=_val(o["wires"], T.COLOUR_TOK, T.N_COLOURS),
        wire_cut=o["wires"] == T.CUT_MARK,
        wire_present=(o["wires"] != T.ABSENT) & (o["wires"] != T.HIDDEN),
        keys=_val(o["keys"], T.DIGIT_TOK, 10),
        pressed=o["pressed"] == T.YES,
        plate=_val(o["plate"][0], T.PLATE_TOK, len(T.PLATE_GLYPHS)),
        hist_light=_val(o["history"].reshape(T.MAX_ROUNDS, 2)[:, 0], T.COLOUR_TOK, T.N_COLOURS),
        key_mode=o["manual_mode"][0] - T.MODE_TOK,
        task=o["manual_mode"][1] - T.TASK_TOK,
        m_label=jnp.where(manual[:, 0] == T.PAD, -1, manual[:, 0] - label_base),
        m_col=_val(manual[:, 1], T.DIGIT_TOK, 10),
        m_v0=jnp.where(manual[:, 2] >= T.DIGIT_TOK, manual[:, 2] - T.DIGIT_TOK,
                       _val(manual[:, 2], T.COLOUR_TOK, T.N_COLOURS)),
        m_v1=_val(manual[:, 3], T.DIGIT_TOK, 10),
        picks=_val(o["picks"], T.NUM_TOK, 32),
        speech=jnp.where(o["speech"] == T.PAD, 0, o["speech"] - T.BYTE_TOK).reshape(
            T.N_AGENTS, layout.speech_bytes),
        gesture=jnp.where(o["gesture"] == T.PAD, 0, o["gesture"] - T.SYMBOL_TOK).reshape(
            T.N_AGENTS, layout.gesture_symbols),
        speech_from=o["speech_meta"] == me_tok,
        gesture_from=o["gesture_meta"] == me_tok,
    )
