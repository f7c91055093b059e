"""The Keep-Talking episode state and a fresh bomb (spec ``ktane-rules.md`` §1)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import chex
import jax
import jax.numpy as jnp

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.draw import fold_in
from jaxcollab.envs.ktane.edgework import Edgework, facts, sample_edgework
from jaxcollab.envs.ktane.mission import KtaneParams

if TYPE_CHECKING:
    from jaxcollab.envs.ktane.env import KtaneEnv

@chex.dataclass(frozen=True)
class BombState:
    """Full episode state (the Defuser sees part of it, the Expert none).

    Attributes:
        edge: serial number and widgets.
        modules: int32 ``[n_slots, MOD_WORDS]`` packed module states; solved: bool ``[n_slots]``.
        strikes, time_left_cs, turn: int32 ``[]``; face: int32 ``[]`` index into ``FACES``;
        zoom: int32 ``[]`` zoomed slot or -1; feedback: int32 ``[]`` token of the Defuser's last
        turn result (none/ok/wait/strike/solved/invalid); messages: int32 ``[2]`` last word sent
        by each role (0 = none); outcome: int32 ``[]`` index into ``OUTCOMES``;
        n_actions: int32 ``[]`` Defuser turns that were not messages; n_messages: int32 ``[2]``.
    """

    edge: Edgework
    modules: jax.Array
    solved: jax.Array
    strikes: jax.Array
    time_left_cs: jax.Array
    turn: jax.Array
    face: jax.Array
    zoom: jax.Array
    feedback: jax.Array
    messages: jax.Array
    outcome: jax.Array
    n_actions: jax.Array
    n_messages: jax.Array


#: Feedback tokens of the Defuser's last turn: none, ok, wait, strike, solved, invalid.
FEEDBACK = V.toks(("none", "ok", "wait", "strike", "solved", "invalid"))


def init_state(env: KtaneEnv, key: jax.Array, params: KtaneParams) -> BombState:
    """A fresh bomb for ``env``'s mission: edgework from ``fold_in(key, 0)``, then module ``i``
    from ``fold_in(key, i + 1)``."""
    edge = sample_edgework(fold_in(key, 0), params.n_widgets)
    f = facts(edge)
    modules = jnp.stack(
        [t.layout.pack(t.generate(fold_in(key, i + 1), f)) for i, t in enumerate(env.types)]
    )
    zero = jnp.int32(0)
    return BombState(
        edge=edge,
        modules=modules,
        solved=jnp.zeros(env.n_slots, bool),
        strikes=zero,
        time_left_cs=params.time_limit_cs,
        turn=zero,
        face=zero,
        zoom=jnp.int32(-1),
        feedback=jnp.int32(FEEDBACK[0]),
        messages=jnp.zeros(2, jnp.int32),
        outcome=jnp.int32(T.RUNNING),
        n_actions=zero,
        n_messages=jnp.zeros(2, jnp.int32),
    )
