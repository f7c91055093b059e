"""Observations: what the Defuser sees of the bomb and what each role hears (GPTNT,
§4.2.1). Only the Defuser's row shows the bomb; each row ends with the partner's last phrase,
``<partner> says|said w_1 … w_L`` (``says``: sent on the partner's latest turn; ``said``: older),
and the Expert's row holds nothing else.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.board import Board
from jaxcollab.envs.ktane.dispatch import switch
from jaxcollab.envs.ktane.edgework import Edgework, display_digits
from jaxcollab.envs.ktane.mission import DEFUSER, EXPERT, KtaneParams
from jaxcollab.envs.ktane.modules.base import MESSAGE_WORDS, VIEW_LEN
from jaxcollab.envs.ktane.state import BombState

HEADER_LEN = 21
FACE_LEN = 48
#: Tokens of the partner's phrase block: ``<partner> says|said`` and the phrase.
HEARD_LEN = 2 + MESSAGE_WORDS
OBS_LEN = HEADER_LEN + FACE_LEN + VIEW_LEN + HEARD_LEN


def _pad(tokens: jax.Array, length: int) -> jax.Array:
    return jnp.pad(tokens, (0, length - tokens.shape[0]))


def observe(board: Board, state: BombState, params: KtaneParams) -> jax.Array:
    """Both roles' observations, int32 ``[2, OBS_LEN]`` word tokens (see
    :class:`~jaxcollab.envs.ktane.env.KtaneEnv`)."""
    defuser = jnp.concatenate(
        [header(state, params), face_view(board, state), zoom_view(board, state, params.rules),
         heard(state, EXPERT)]
    )
    expert = _pad(heard(state, DEFUSER), OBS_LEN)
    return jnp.stack([defuser, expert]).astype(jnp.int32)


def heard(state: BombState, speaker: int) -> jax.Array:
    """``<speaker> says|said w_1 … w_L`` int32 ``[HEARD_LEN]``: the speaker's last phrase
    (``none`` before its first message)."""
    phrase = state.messages[speaker]
    phrase = jnp.where(jnp.any(phrase != 0), phrase, phrase.at[0].set(V.tok("none")))
    verb = jnp.where(state.fresh[speaker], V.tok("says"), V.tok("said"))
    return jnp.concatenate([jnp.stack([jnp.int32(V.tok(V.ROLE_WORDS[speaker])), verb]), phrase])

def header(state: BombState, params: KtaneParams) -> jax.Array:
    """The Defuser's header: timer, strikes, face, zoom, last result."""
    d = jnp.asarray(V.DIGIT)[display_digits(state.time_left_cs)]
    sep = jnp.where(state.time_left_cs >= 6000, V.tok(":"), V.tok("."))
    zoom = jnp.where(
        state.zoom >= 0, V.tok("on"), V.tok("none")
    )
    bar = V.tok("|")
    digit = jnp.asarray(V.DIGIT)
    return jnp.stack(
        [
            V.tok("time"),
            d[0],
            d[1],
            sep,
            d[2],
            d[3],
            bar,
            V.tok("strikes"),
            digit[jnp.minimum(state.strikes, 9)],
            V.tok("of"),
            digit[params.max_strikes],
            bar,
            V.tok("face"),
            jnp.asarray(V.toks(T.FACES))[state.face],
            bar,
            V.tok("zoom"),
            zoom,
            bar,
            V.tok("last"),
            state.feedback,
            bar,
        ]
    )

def face_view(board: Board, state: BombState) -> jax.Array:
    """Tokens of the visible face: module slots on front/back, edgework on the sides. While
    zoomed, the slots lose their labels (the zoomed one reads ``zoom``): only the zoomed
    module's elements are interactable, so each label is unique within an observation (GPTNT
    App. D.2)."""
    titles = V.toks([t.title for t in board.types])
    status = jnp.where(state.solved, V.tok("solved"), V.tok("unsolved"))
    slots = jnp.stack(
        [
            jnp.full(board.n_slots, V.tok("module")),
            jnp.where(
                state.zoom >= 0,
                jnp.where(jnp.arange(board.n_slots) == state.zoom, V.tok("zoom"), 0),
                jnp.asarray(V.LABEL)[np.arange(board.n_slots) % T.SLOTS_PER_FACE],
            ),
            jnp.asarray(titles),
            status,
            jnp.full(board.n_slots, V.tok(";")),
        ],
        axis=1,
    )
    slots = jnp.where((jnp.asarray(board.slot_face) == state.face)[:, None], slots, 0)
    modules = _pad(slots.reshape(-1), FACE_LEN)
    return jnp.where(state.face < 2, modules, side_view(state.edge, state.face))

def zoom_view(board: Board, state: BombState, rules) -> jax.Array:
    """The zoomed module's view tokens under ``rules`` (zeros when not zoomed)."""
    z = jnp.maximum(state.zoom, 0)
    view = switch(board, jnp.asarray(board.slot_kind)[z], "view", state.modules[z], rules)
    return jnp.where(state.zoom >= 0, view, 0)


def side_view(edge: Edgework, face: jax.Array) -> jax.Array:
    """Tokens of a side face: the serial number (if here), then each widget here as
    ``kind detail… ;`` in 8 tokens (battery holder; indicator lit|unlit label; port names)."""
    w = T.MAX_WIDGETS
    port_tok = jnp.asarray(V.toks(T.PORT_NAMES))
    ports = jnp.where((edge.b[:, None] >> jnp.arange(6)) & 1 == 1, port_tok, 0)  # [w, 6]
    ports = ports.at[:, 0].set(jnp.where(jnp.all(ports == 0, 1), V.tok("empty"), ports[:, 0]))
    holder = jnp.asarray(V.toks(T.HOLDERS))[jnp.clip(edge.a - 1, 0, 1)]
    lit = jnp.where(edge.b == 1, V.tok("lit"), V.tok("unlit"))
    label = jnp.asarray(V.toks(T.INDICATOR_LABELS))[jnp.clip(edge.a, 0, 10)]
    zeros = jnp.zeros((w, 6), jnp.int32)
    details = jnp.stack(
        [
            zeros.at[:, 0].set(holder),
            zeros.at[:, 0].set(lit).at[:, 1].set(label),
            ports,
        ]
    )  # [3 kinds, w, 6]
    kind = jnp.clip(edge.kind, 0, 2)
    rows = jnp.concatenate(
        [
            jnp.asarray(V.toks(T.WIDGET_KINDS))[kind][:, None],
            details[kind, jnp.arange(w)],
            jnp.full((w, 1), V.tok(";")),
        ],
        axis=1,
    )
    rows = jnp.where(((edge.side == face) & (edge.kind >= 0))[:, None], rows, 0)
    serial = jnp.concatenate(
        [
            jnp.array([V.tok("serial")]),
            jnp.asarray(V.SERIAL_CHAR)[edge.serial],
            jnp.array([V.tok(";")]),
        ]
    )
    serial = jnp.where(edge.serial_side == face, serial, 0)
    return _pad(jnp.concatenate([serial, rows.reshape(-1)]), FACE_LEN)
