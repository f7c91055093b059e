"""Scripted Keep-Talking teams as policies of the generic rollout (:mod:`jaxcollab.core.rollout`).

* ``oracle`` (:func:`oracle_team`, privileged): the rule-reading Defuser of
  :mod:`jaxcollab.agents.ktane.oracle` with a silent Expert (it never needs the manual, so no
  word is ever sent). It reads the hidden state: a solver, not a player.
* ``random`` (:func:`random_team`): a Defuser that reads only its observation: it zooms into a
  random module slot on the visible face when not working on an unsolved module, and otherwise
  plays a uniformly random (verb, target) pair among the zoomed module's verbs and targets; the
  Expert is silent. Its draws come from the policy's own key, never the environment's.

Actions are int32 ``[2, 3]`` ``(verb, target, word)`` rows (Defuser, Expert).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.agents.ktane.oracle import oracle_defuser
from jaxcollab.core.rollout import Policy, PrivilegedPolicy, policy, privileged_policy
from jaxcollab.envs.ktane import KtaneEnv
from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.draw import randint, uniforms
from jaxcollab.envs.ktane.modules.base import SELECT, WAIT
from jaxcollab.envs.ktane.observe import HEADER_LEN

SILENT = np.array([WAIT, 0, 0], np.int32)

#: Defuser-row position of the face word (:func:`jaxcollab.envs.ktane.observe.header`).
FACE_AT = 13
#: Tokens per module slot in the face view: ``module [k]|zoom title status ;``.
SLOT_TOKENS = 5


def defuser_view(env: KtaneEnv, row: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(face, zoom, solved)`` decoded from the Defuser's observation row: face index, zoomed
    slot (-1 = none; its face-view label reads ``zoom``) and bool ``[n_slots]`` (slots not on
    the visible face read unsolved)."""
    face = jnp.argmax(jnp.asarray(V.toks(T.FACES)) == row[FACE_AT])
    mark = row[np.minimum(HEADER_LEN + SLOT_TOKENS * np.arange(env.n_slots) + 1, row.shape[0] - 1)]
    zoomed = (mark == V.tok("zoom")) & (face < 2)
    zoom = jnp.where(jnp.any(zoomed), jnp.argmax(zoomed), -1)
    status = HEADER_LEN + SLOT_TOKENS * np.arange(env.n_slots) + 3
    solved = row[np.minimum(status, row.shape[0] - 1)] == V.tok("solved")
    return face.astype(jnp.int32), zoom.astype(jnp.int32), solved


def _random_defuser(env: KtaneEnv, key: jax.Array, row: jax.Array) -> jax.Array:
    """Uniform over the zoomed module's (verb, target) pairs; selects a slot when idle."""
    face, zoom, solved = defuser_view(env, row)
    u = uniforms(key, 3)  # cheap counter-based draws (see jaxcollab.envs.ktane.draw)
    verbs = np.stack([np.resize(t.verbs, 4) for t in env.kinds])  # each type's verbs cycled to 4
    z = jnp.maximum(zoom, 0)
    kind = jnp.asarray(env.slot_kind)[z]
    verb = jnp.asarray(verbs)[kind, randint(u[0], 0, 4)]
    target = randint(u[1], 0, jnp.asarray(env.n_targets)[kind])
    here = jnp.asarray(env.slot_face) == face
    on_face = jnp.flatnonzero(here, size=env.n_slots, fill_value=0)
    slot = on_face[randint(u[2], 0, jnp.maximum(here.sum(), 1))]
    working = (zoom >= 0) & ~solved[z]
    label = slot % T.SLOTS_PER_FACE  # select by the face's set-of-marks label
    return jnp.stack([jnp.where(working, verb, SELECT), jnp.where(working, target, label),
                      0]).astype(jnp.int32)


def random_team(env: KtaneEnv) -> Policy:
    """The random Defuser + silent Expert as a :class:`~jaxcollab.core.rollout.Policy`."""

    def random_team(key, obs, policy_state):
        row = _random_defuser(env, key, obs[0])
        return jnp.stack([row, jnp.asarray(SILENT)]), policy_state

    return policy(random_team, name="random")


def oracle_team(env: KtaneEnv) -> PrivilegedPolicy:
    """Privileged: the oracle Defuser (reads the state) + silent Expert."""

    def oracle_team(key, obs, policy_state, state, params):
        return jnp.stack([oracle_defuser(env, state, params), jnp.asarray(SILENT)]), policy_state

    return privileged_policy(oracle_team)


TEAMS = {"oracle": oracle_team, "random": random_team}


@functools.cache
def team(name: str, env: KtaneEnv) -> Policy:
    """The team policy called ``name`` for ``env`` (cached, so rollouts reuse their compile).

    Raises:
        ValueError: unknown name; the message lists the valid ones.
    """
    if name not in TEAMS:
        raise ValueError(f"unknown ktane agent {name!r}; valid: {', '.join(TEAMS)}")
    return TEAMS[name](env)
