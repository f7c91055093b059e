"""The rule-reading Defuser: solves every module of a bomb without a strike.

It reads the full state (including hidden fields such as the wire to cut), so it is a solver,
not a player: it selects the first unsolved module on the visible face (flipping the bomb when
that face is done), then plays each module's ``oracle`` move (the module rules' own solver).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcollab.envs.ktane import BombState, KtaneEnv, KtaneParams
from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane.modules.base import ACTION_LEN, FLIP, SELECT


def oracle_defuser(env: KtaneEnv, state: BombState, params: KtaneParams) -> jax.Array:
    """The oracle's Defuser action ``(verb, target, 0 …)``, int32 ``[ACTION_LEN]`` (it never
    messages; jit/vmap-safe), following the rules of ``params.rules``."""
    verb, target = env.module_oracle(state, params)
    z = jnp.maximum(state.zoom, 0)
    working = (state.zoom >= 0) & ~state.solved[z]
    here = (jnp.asarray(env.board.slot_face) == state.face) & ~state.solved
    nav_verb = jnp.where(jnp.any(here), SELECT, FLIP)
    nav_target = (jnp.argmax(here) % T.SLOTS_PER_FACE).astype(jnp.int32)  # its face label
    row = jnp.stack([jnp.where(working, verb, nav_verb), jnp.where(working, target, nav_target)])
    return jnp.pad(row.astype(jnp.int32), (0, ACTION_LEN - 2))
