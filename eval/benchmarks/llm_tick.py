"""The device side of a server-paced LLM rollout's tick (:mod:`jaxcollab.llm.play`), with no
server: a stub host whose every ``EVERY``-th slot has a (no-op) action ready each tick, on
``bomb/base-1`` with ``K`` slots and ``N`` episodes. Prints the wall and CPU milliseconds of
the rollout per tick outside the callback (what each reply wave pays per tick on top of the
host's own work). ``python -m eval.benchmarks.llm_tick K N [EVERY]``; ``... llm_tick split K``
prints the CPU milliseconds of each jitted piece of a tick alone at ``K`` slots
(:func:`split`)."""

from __future__ import annotations

import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxcollab
from jaxcollab.agents.bomb.llm import BombGame
from jaxcollab.core.rollout import episode_keys, split_episode_key, step_keys
from jaxcollab.llm import play


class StubHost:
    """Answers each tick at once: the first ``r`` live slots ``k`` with ``(k + tick) % every
    == 0``, a no-op action each; keeps the time spent inside the callback."""

    def __init__(self, every: int):
        self.every, self.ticks, self.inside = every, 0, 0.0

    def tick_cb(self, struct, obs, seen_job, seen_t, job, *rest):
        t0 = time.perf_counter()
        job = np.asarray(job)
        actions = jax.tree.map(lambda s: np.zeros(s.shape, s.dtype), struct)
        slot = np.full(jax.tree.leaves(struct)[0].shape[0], len(job), np.int32)
        live = np.flatnonzero((job >= 0) & ((np.arange(len(job)) + self.ticks) % self.every
                                            == 0))[:len(slot)]
        slot[:len(live)] = live
        self.ticks += 1
        self.inside += time.perf_counter() - t0
        return slot, actions, np.False_


def _episodes(n: int):
    """``(env, keys [n], params [n, …])``: ``n`` episodes of ``bomb/base-1`` at its default
    params (one turn order; a tick's cost does not depend on it)."""
    env = jaxcollab.make("bomb/base-1")
    params = jax.tree.map(lambda x: np.broadcast_to(x, (n, *np.shape(x))), env.default_params)
    return env, np.asarray(episode_keys(0, n)), params


def measure(k: int, n: int, every: int = 16) -> dict:
    """Wall and CPU ms per tick of the rollout of ``n`` episodes in ``k`` slots with a
    :class:`StubHost` answering every ``every``-th slot."""
    env, keys, params = _episodes(n)
    game = BombGame(env)
    leaves, treedef = jax.tree.flatten(game.action_struct())
    tick = play._Tick("llm-tick", k, treedef, tuple(leaves))
    host = play._HOSTS[tick.slot] = StubHost(every)
    play._play(env, tick, game.max_steps(env), keys, params, np.int32(0)).block_until_ready()
    t0, c0 = time.perf_counter(), time.process_time()
    play._play(env, tick, game.max_steps(env), keys, params, np.int32(n)).block_until_ready()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"slots": k, "episodes": n, "every": every, "ticks": host.ticks,
            "device_ms_per_tick": round((wall - host.inside) / host.ticks * 1e3, 2),
            "cpu_ms_per_tick": round(cpu / host.ticks * 1e3, 2)}


def _cpu_ms(f, *args, n: int = 20) -> float:
    jax.block_until_ready(f(*args))
    c0 = time.process_time()
    for _ in range(n):
        jax.block_until_ready(f(*args))
    return round((time.process_time() - c0) / n * 1e3, 2)


def split(k: int) -> dict:
    """CPU ms per call of a tick's pieces at ``k`` slots of ``bomb/base-1``: the step over
    every slot or over 8 / 32 gathered and scattered back, observing ``OBSERVE`` slots, the
    select over the state tree, the reset of every slot, and a callback handed the whole
    state or one leaf of it."""
    env, keys, params = _episodes(k)
    params = jax.tree.map(jnp.asarray, params)
    reset_k, _, play_k = jax.vmap(split_episode_key)(jnp.asarray(keys))
    _, state = jax.jit(jax.vmap(env.reset))(reset_k, params)
    actions = jax.tree.map(lambda x: jnp.broadcast_to(jnp.asarray(x), (k, *np.shape(x))),
                           env.noop())
    t = jnp.zeros((k,), jnp.int32)

    def step(state, actions, params, key, t):
        env_key = jax.vmap(lambda key, t: step_keys(key, t)[0])(key, t)
        return jax.vmap(env.step)(env_key, state, actions, params)[1]

    def step_rows(r):
        i = jnp.arange(r) * (k // r)
        return jax.jit(lambda *a: play._put(a[0], i, step(*(play._take(x, i) for x in a))))

    i = jnp.arange(min(k, play.OBSERVE))
    mask = jnp.arange(k) % 2 == 0
    one = jax.ShapeDtypeStruct((), jnp.int32)
    callback = lambda *x: jax.pure_callback(lambda *_: np.int32(0), one, *x)  # noqa: E731
    args = (state, actions, params, play_k, t)
    return {"slots": k, "step_all": _cpu_ms(jax.jit(step), *args),
            **{f"step_{r}": _cpu_ms(step_rows(r), *args) for r in (8, 32) if r <= k},
            "observe": _cpu_ms(jax.jit(lambda s, p: jax.vmap(env.observe)(
                play._take(s, i), play._take(p, i))), state, params),
            "select": _cpu_ms(jax.jit(lambda a, b: play._select(mask, a, b)), state, state),
            "reset_all": _cpu_ms(jax.jit(lambda j: jax.vmap(env.reset)(
                reset_k[j], play._take(params, j))[1]), jnp.arange(k)),
            "callback_state": _cpu_ms(jax.jit(callback), state),
            "callback_leaf": _cpu_ms(jax.jit(lambda s: callback(jax.tree.leaves(s)[0])),
                                     state)}


if __name__ == "__main__":
    if sys.argv[1] == "split":
        print(split(int(sys.argv[2])))
    else:
        print(measure(*map(int, sys.argv[1:])))
