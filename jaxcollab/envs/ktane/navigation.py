"""Navigation: turning the bomb and zooming into a module (GPTNT, §4.2.2)."""

from __future__ import annotations

import jax.numpy as jnp

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane.board import Board
from jaxcollab.envs.ktane.modules.base import BACK, FLIP, ROTATE, SELECT
from jaxcollab.envs.ktane.state import BombState


def navigate(board: Board, state: BombState, verb, target):
    """Face and zoom after a select / back / rotate / flip; returns ``(face, zoom, valid)``.

    ``select`` targets the visible face's module by its set-of-marks label (0 = ``[A]``, in
    reading order on that face), so slot ``face * SLOTS_PER_FACE + target``.
    """
    on_face = (target >= 0) & (target < T.SLOTS_PER_FACE)
    slot = jnp.clip(state.face * T.SLOTS_PER_FACE + target, 0, board.n_slots - 1)
    select = (
        (verb == SELECT)
        & on_face
        & (slot == state.face * T.SLOTS_PER_FACE + target)
        & (jnp.asarray(board.slot_face)[slot] == state.face)
    )
    rotate = (verb == ROTATE) & (target >= 0) & (target < len(T.ROTATIONS))
    flip = verb == FLIP
    back = (verb == BACK) & (state.zoom >= 0)
    turned = jnp.asarray(T.NEXT_FACE)[state.face, jnp.clip(target, 0, 3)]
    face = jnp.where(
        rotate, turned, jnp.where(flip, jnp.asarray(T.FLIP_FACE)[state.face], state.face)
    )
    zoom = jnp.where(select, slot, jnp.where(rotate | flip | back, -1, state.zoom))
    return face, zoom, select | rotate | flip | back
