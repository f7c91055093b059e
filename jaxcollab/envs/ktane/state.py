"""The Keep-Talking episode state and a fresh bomb (GPTNT, §4 and
App. B.1)."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.board import Board
from jaxcollab.envs.ktane.draw import fold_in
from jaxcollab.envs.ktane.edgework import Edgework, facts, sample_edgework
from jaxcollab.envs.ktane.mission import KtaneParams
from jaxcollab.envs.ktane.modules.base import MESSAGE_WORDS


@chex.dataclass(frozen=True)
class BombState:
    """Full episode state (the Defuser sees part of it, the Expert none).

    Attributes:
        edge: serial number and widgets.
        modules: int32 ``[n_slots, MOD_WORDS]`` packed module states; solved: bool ``[n_slots]``.
        strikes, time_left_cs, turn: int32 ``[]``; face: int32 ``[]`` index into ``FACES``;
        zoom: int32 ``[]`` zoomed slot or -1; feedback: int32 ``[]`` token of the Defuser's last
        turn result (none/ok/wait/strike/solved/invalid); messages: int32 ``[2, MESSAGE_WORDS]``
        last phrase sent by each role (word tokens, 0 = padding; all 0 = none yet); fresh: bool
        ``[2]`` that role's phrase was sent on its latest turn; outcome: int32 ``[]`` index into
        ``OUTCOMES``;
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
    fresh: jax.Array
    outcome: jax.Array
    n_actions: jax.Array
    n_messages: jax.Array


#: Feedback tokens of the Defuser's last turn: none, ok, wait, strike, solved, invalid.
FEEDBACK = V.toks(("none", "ok", "wait", "strike", "solved", "invalid"))


def _bomb_key(key: jax.Array, seed: jax.Array) -> jax.Array:
    """``key``, or (``seed >= 0``) a key of the same kind made from ``seed`` only."""
    typed = jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
    data = jax.random.key_data(key) if typed else key
    fixed = fold_in(jnp.zeros_like(data), seed)
    data = jnp.where(seed >= 0, fixed, data)
    return jax.random.wrap_key_data(data, impl=jax.random.key_impl(key)) if typed else data


def init_state(board: Board, key: jax.Array, params: KtaneParams) -> BombState:
    """A fresh bomb on ``board`` (a mission's slots): edgework from ``fold_in(key, 0)``, then
    module ``i`` from ``fold_in(key, i + 1)`` under ``params.rules``; a fixed mission
    (``params.bomb_seed >= 0``) replaces ``key`` by one derived from the seed alone, so all its
    episodes get the same bomb."""
    key = _bomb_key(key, params.bomb_seed)
    edge = sample_edgework(fold_in(key, 0), params.n_widgets)
    f = facts(edge)
    modules = jnp.stack(
        [
            t.layout.pack(t.generate(fold_in(key, i + 1), f, params.rules))
            for i, t in enumerate(board.types)
        ]
    )
    zero = jnp.int32(0)
    return BombState(
        edge=edge,
        modules=modules,
        solved=jnp.zeros(board.n_slots, bool),
        strikes=zero,
        time_left_cs=params.time_limit_cs,
        turn=zero,
        face=zero,
        zoom=jnp.int32(-1),
        feedback=jnp.int32(FEEDBACK[0]),
        messages=jnp.zeros((2, MESSAGE_WORDS), jnp.int32),
        fresh=jnp.zeros(2, bool),
        outcome=jnp.int32(T.RUNNING),
        n_actions=zero,
        n_messages=jnp.zeros(2, jnp.int32),
    )
