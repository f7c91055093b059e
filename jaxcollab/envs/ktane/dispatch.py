"""Module dispatch: ``lax.switch`` over the mission's module types on packed module state."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcollab.envs.ktane.board import Board
from jaxcollab.envs.ktane.edgework import display_digits, facts
from jaxcollab.envs.ktane.modules.base import Ctx
from jaxcollab.envs.ktane.ruleset import Ruleset
from jaxcollab.envs.ktane.state import BombState


def switch(board: Board, kind, method: str, *args):
    """``lax.switch`` over the mission's module types, calling ``method`` on unpacked state."""

    def branch(t):
        def call(vec, *rest):
            return getattr(t, method)(t.layout.unpack(vec), *rest)

        return call

    return jax.lax.switch(kind, [branch(t) for t in board.kinds], *args)


def act(board: Board, key, vec, kind, verb, target, ctx):
    """A module action on packed state ``vec``: ``(vec, strike, solved, valid)``."""

    def branch(t):
        def call(key, vec, verb, target, ctx):
            m, strike, solved, valid = t.act(key, t.layout.unpack(vec), verb, target, ctx)
            return t.layout.pack(m), strike, solved, valid

        return call

    return jax.lax.switch(kind, [branch(t) for t in board.kinds], key, vec, verb, target, ctx)


def context(state: BombState, rules: Ruleset) -> Ctx:
    """What module rules read: edgework facts, strikes, the displayed timer digits and the
    episode's rule tables."""
    return Ctx(
        facts=facts(state.edge),
        strikes=state.strikes,
        display=display_digits(state.time_left_cs),
        rules=rules,
    )


def module_oracle(board: Board, state: BombState, rules: Ruleset) -> tuple[jax.Array, jax.Array]:
    """The zoomed module's next correct ``(verb, target)`` (reads hidden state; for oracles)."""
    z = jnp.maximum(state.zoom, 0)
    ctx = context(state, rules)
    return switch(board, jnp.asarray(board.slot_kind)[z], "oracle", state.modules[z], ctx)
