"""What a scripted Defuser decodes from its own observation row (no hidden state)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.envs.ktane import KtaneEnv
from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.observe import HEADER_LEN

#: Defuser-row position of the face word (:func:`jaxcollab.envs.ktane.observe.header`).
FACE_AT = 13
#: Tokens per module slot in the face view: ``module [k]|zoom title status ;``.
SLOT_TOKENS = 5


def defuser_view(env: KtaneEnv, row: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(face, zoom, solved)`` decoded from the Defuser's observation row: face index, zoomed
    slot (-1 = none; its face-view label reads ``zoom``) and bool ``[n_slots]`` (slots not on
    the visible face read unsolved)."""
    face = jnp.argmax(jnp.asarray(V.toks(T.FACES)) == row[FACE_AT])
    mark = row[np.minimum(HEADER_LEN + SLOT_TOKENS * np.arange(env.board.n_slots) + 1,
                          row.shape[0] - 1)]
    zoomed = (mark == V.tok("zoom")) & (face < 2)
    zoom = jnp.where(jnp.any(zoomed), jnp.argmax(zoomed), -1)
    status = HEADER_LEN + SLOT_TOKENS * np.arange(env.board.n_slots) + 3
    solved = row[np.minimum(status, row.shape[0] - 1)] == V.tok("solved")
    return face.astype(jnp.int32), zoom.astype(jnp.int32), solved
