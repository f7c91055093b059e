"""Scripted Keep-Talking teams as policies of the generic rollout (:mod:`jaxcollab.core.rollout`).

* ``oracle`` (:func:`oracle_team`, privileged): the rule-reading Defuser of
  :mod:`jaxcollab.agents.ktane.oracle` with a silent Expert (it never needs the manual, so no
  word is ever sent). It reads the hidden state: a solver, not a player.
* ``random`` (:func:`random_team`): a Defuser that reads only its observation: it zooms into a
  random module slot on the visible face when not working on an unsolved module, and otherwise
  plays a uniformly random (verb, target) pair among the zoomed module's verbs and targets; the
  Expert is silent. Its draws come from the policy's own key, never the environment's.
* ``talking`` (:func:`~jaxcollab.agents.ktane.talking.talking_team`): a Defuser that describes
  what it sees and acts on instructions, and an Expert that holds only the manual and answers.

Actions are int32 ``[2, ACTION_LEN]`` ``(verb, target, w_1 … w_L)`` rows (Defuser, Expert).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.agents.ktane.oracle import oracle_defuser
from jaxcollab.agents.ktane.talking import talking_team
from jaxcollab.agents.ktane.view import defuser_view
from jaxcollab.core.rollout import Policy, PrivilegedPolicy, policy, privileged_policy
from jaxcollab.envs.ktane import KtaneEnv
from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane.draw import randint, uniforms
from jaxcollab.envs.ktane.modules.base import ACTION_LEN, SELECT, WAIT
from jaxcollab.envs.ktane.ruleset import Ruleset

#: An action row that waits (and sends nothing).
SILENT = np.array([WAIT] + [0] * (ACTION_LEN - 1), np.int32)

def _random_defuser(env: KtaneEnv, key: jax.Array, row: jax.Array) -> jax.Array:
    """Uniform over the zoomed module's (verb, target) pairs; selects a slot when idle."""
    face, zoom, solved = defuser_view(env, row)
    u = uniforms(key, 3)  # cheap counter-based draws (see jaxcollab.envs.ktane.draw)
    # each type's verbs cycled to 4
    verbs = np.stack([np.resize(t.verbs, 4) for t in env.board.kinds])
    z = jnp.maximum(zoom, 0)
    kind = jnp.asarray(env.board.slot_kind)[z]
    verb = jnp.asarray(verbs)[kind, randint(u[0], 0, 4)]
    target = randint(u[1], 0, jnp.asarray(env.board.n_targets)[kind])
    here = jnp.asarray(env.board.slot_face) == face
    on_face = jnp.flatnonzero(here, size=env.board.n_slots, fill_value=0)
    slot = on_face[randint(u[2], 0, jnp.maximum(here.sum(), 1))]
    working = (zoom >= 0) & ~solved[z]
    label = slot % T.SLOTS_PER_FACE  # select by the face's set-of-marks label
    row = jnp.stack([jnp.where(working, verb, SELECT), jnp.where(working, target, label)])
    return jnp.pad(row.astype(jnp.int32), (0, ACTION_LEN - 2))


@dataclasses.dataclass(frozen=True)
class _RandomTeam:
    """The random team's ``act`` for ``env`` (compared by value: equal teams share compiles)."""

    env: KtaneEnv

    def __call__(self, key, obs, policy_state):
        row = _random_defuser(self.env, key, obs[0])
        return jnp.stack([row, jnp.asarray(SILENT)]), policy_state


@dataclasses.dataclass(frozen=True)
class _OracleTeam:
    """The oracle team's privileged ``act`` for ``env`` (compared by value)."""

    env: KtaneEnv

    def __call__(self, key, obs, policy_state, state, params):
        row = oracle_defuser(self.env, state, params)
        return jnp.stack([row, jnp.asarray(SILENT)]), policy_state


def random_team(env: KtaneEnv) -> Policy:
    """The random Defuser + silent Expert as a :class:`~jaxcollab.core.rollout.Policy`."""
    return policy(_RandomTeam(env), name="random")


def oracle_team(env: KtaneEnv) -> PrivilegedPolicy:
    """Privileged: the oracle Defuser (reads the state) + silent Expert."""
    return privileged_policy(_OracleTeam(env), name="oracle_team")


TEAMS = {"oracle": oracle_team, "random": random_team, "talking": talking_team}
#: Teams whose Expert is handed the manual (the played ruleset's public rule tables).
MANUAL_READERS = ("talking",)


def team(name: str, env: KtaneEnv, rules: Ruleset | None = None) -> Policy:
    """The team policy called ``name`` for ``env``, playing under ``rules`` (default vanilla;
    only :data:`MANUAL_READERS` read it). Teams compare by value, so rollouts of equal teams
    reuse their compile.

    Raises:
        ValueError: unknown name; the message lists the valid ones.
    """
    if name not in TEAMS:
        raise ValueError(f"unknown ktane agent {name!r}; valid: {', '.join(TEAMS)}")
    if name not in MANUAL_READERS:
        return TEAMS[name](env)
    return TEAMS[name](env, rules)
