"""Scripted Keep-Talking teams: ``(key, state) -> actions int32 [2, 3]`` (jit/vmap-safe).

* ``oracle``: the rule-reading Defuser of :mod:`jaxcollab.agents.ktane.oracle` with a silent
  Expert (it never needs the manual, so no word is ever sent).
* ``random``: a Defuser that zooms into a random module slot on the visible face when not
  working on an unsolved module, and otherwise plays a uniformly random (verb, target) pair
  among the zoomed module's verbs and targets; the Expert is silent.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.agents.ktane.oracle import oracle_defuser
from jaxcollab.envs.ktane import BombState, KtaneEnv
from jaxcollab.envs.ktane.draw import randint, uniforms
from jaxcollab.envs.ktane.modules.base import SELECT, WAIT

SILENT = np.array([WAIT, 0, 0], np.int32)

Policy = Callable[[KtaneEnv, jax.Array, BombState], jax.Array]


def oracle_team(env: KtaneEnv, key: jax.Array, state: BombState) -> jax.Array:
    """Oracle Defuser + silent Expert."""
    return jnp.stack([oracle_defuser(env, state), jnp.asarray(SILENT)])


def random_defuser(env: KtaneEnv, key: jax.Array, state: BombState) -> jax.Array:
    """Uniform over the zoomed module's (verb, target) pairs; selects a slot when idle."""
    u = uniforms(key, 3)
    verbs = np.zeros((len(env.kinds), 4), np.int32)
    for i, t in enumerate(env.kinds):
        verbs[i] = np.resize(t.verbs, 4)  # cycle each type's verbs to 4 entries (uniform)
    z = jnp.maximum(state.zoom, 0)
    kind = jnp.asarray(env.slot_kind)[z]
    verb = jnp.asarray(verbs)[kind, randint(u[0], 0, 4)]
    target = randint(u[1], 0, jnp.asarray(env.n_targets)[kind])
    on_face = jnp.flatnonzero(
        jnp.asarray(env.slot_face) == state.face, size=env.n_slots, fill_value=0
    )
    n_here = jnp.maximum(jnp.sum(jnp.asarray(env.slot_face) == state.face), 1)
    slot = on_face[randint(u[2], 0, n_here)]
    working = (state.zoom >= 0) & ~state.solved[z]
    return jnp.stack([jnp.where(working, verb, SELECT), jnp.where(working, target, slot), 0])


def random_team(env: KtaneEnv, key: jax.Array, state: BombState) -> jax.Array:
    """Random Defuser + silent Expert."""
    return jnp.stack([random_defuser(env, key, state).astype(jnp.int32), jnp.asarray(SILENT)])


TEAMS: dict[str, Policy] = {"oracle": oracle_team, "random": random_team}


def team(name: str) -> Policy:
    """The team policy called ``name``.

    Raises:
        ValueError: unknown name; the message lists the valid ones.
    """
    if name not in TEAMS:
        raise ValueError(f"unknown ktane agent {name!r}; valid: {', '.join(TEAMS)}")
    return TEAMS[name]
