"""Batched play: ``vmap`` over episodes (mixed variants and turn orders allowed), a
``lax.while_loop`` over turns that stops when every episode has ended, one compile per
(team, batch size, message caps).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp

from jaxcollab.agents.bomb.teams import oracle_hint
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.generate import generate
from jaxcollab.envs.bomb.observe import Layout, observe
from jaxcollab.envs.bomb.params import BombParams
from jaxcollab.envs.bomb.rules import turn
from jaxcollab.envs.bomb.state import BombState

MAX_TURNS = T.N_AGENTS * T.MAX_ROUNDS


def team_turn(team: Callable, privileged: bool, layout: Layout, key, state: BombState,
              params: BombParams) -> BombState:
    """One turn of one episode: observe, let ``team`` choose, apply the current role's row.

    A team whose ``talks`` attribute is ``False`` never sends messages, so the turn skips the
    message buffers (same result, cheaper; see :func:`~jaxcollab.envs.bomb.rules.turn`).
    """
    hint = oracle_hint(state, params) if privileged else jnp.zeros(2, jnp.int32)
    action = team(key, observe(state, params), hint, layout)
    return turn(state, action, params, messages=getattr(team, "talks", True))[0]


@partial(jax.jit, static_argnames=("speech_bytes", "gesture_symbols"))
def reset_many(keys: jax.Array, params: BombParams, speech_bytes: int, gesture_symbols: int
               ) -> BombState:
    """Fresh episodes for keys ``[B]`` and params ``[B]`` (compiled once, shared by all teams)."""
    gen = partial(generate, speech_bytes=speech_bytes, gesture_symbols=gesture_symbols)
    return jax.vmap(gen)(keys, params)


@partial(jax.jit, static_argnames=("team", "privileged", "layout"))
def play_from(states: BombState, keys: jax.Array, params: BombParams, team: Callable,
              privileged: bool, layout: Layout) -> BombState:
    """Play started episodes ``states`` ``[B]`` to the end (``keys`` ``[B]`` drive the team)."""
    step = jax.vmap(partial(team_turn, team, privileged, layout))

    def cond(carry):
        t, s = carry
        return (t < MAX_TURNS) & (s.ending == T.RUNNING).any()

    def body(carry):
        t, s = carry
        ks = jax.vmap(lambda k: jax.random.fold_in(k, t))(keys)
        return t + 1, step(ks, s, params)

    return jax.lax.while_loop(cond, body, (jnp.int32(0), states))[1]


def play(keys: jax.Array, params: BombParams, team: Callable, privileged: bool,
         layout: Layout) -> BombState:
    """Play a batch of episodes to the end.

    Args:
        keys: PRNG keys ``[B]`` (episode ``b`` is drawn from ``keys[b]``).
        params: :class:`BombParams` with a leading batch axis ``[B]``.
        team / privileged / layout: the policy, whether it gets the oracle hint, message caps.

    Returns:
        The final states, leading axis ``[B]``.
    """
    split = jax.vmap(jax.random.split)(keys)
    states = reset_many(split[:, 0], params, layout.speech_bytes, layout.gesture_symbols)
    return play_from(states, split[:, 1], params, team, privileged, layout)


def rounds_used(state: BombState) -> jax.Array:
    """Rounds begun by the end of each episode (a round ended mid-way counts)."""
    return state.round + (state.turn > 0)


@partial(jax.jit, static_argnames=("team", "privileged", "layout", "n_rounds"))
def play_continuous(key: jax.Array, params: BombParams, team: Callable, privileged: bool,
                    layout: Layout, n_rounds: int) -> tuple[jax.Array, jax.Array]:
    """Keep a batch busy for ``n_rounds`` rounds: every episode that ends is replaced by a fresh
    instance at the next round boundary, so every round played is a live round of some episode.

    Args:
        key: PRNG key; params: :class:`BombParams` with leading batch axis ``[B]``.

    Returns:
        (episodes finished, episodes defused), int32 scalars.
    """
    batch = params.rounds.shape[0]
    gen = jax.vmap(partial(generate, speech_bytes=layout.speech_bytes,
                           gesture_symbols=layout.gesture_symbols))
    step = jax.vmap(partial(team_turn, team, privileged, layout))
    fresh_keys = lambda k: jax.random.split(k, batch)  # noqa: E731

    def one_round(carry, k):
        s, done, won = carry
        k_turns, k_new = jax.random.split(k)
        for t in range(T.N_AGENTS):
            s = step(fresh_keys(jax.random.fold_in(k_turns, t)), s, params)
        ended = s.ending != T.RUNNING
        won = won + (s.ending == T.DEFUSED).sum()
        new = gen(fresh_keys(k_new), params)
        s = jax.tree.map(lambda a, b: jnp.where(ended.reshape((-1,) + (1,) * (a.ndim - 1)), a, b),
                         new, s)
        return (s, done + ended.sum(), won), None

    k0, k_rounds = jax.random.split(key)
    start = gen(fresh_keys(k0), params)
    (_, done, won), _ = jax.lax.scan(one_round, (start, jnp.int32(0), jnp.int32(0)),
                                     jax.random.split(k_rounds, n_rounds))
    return done, won
