"""The device side of a server-paced LLM rollout's tick (:mod:`jaxcollab.llm.play`), with no
server: a stub host whose every ``EVERY``-th slot has a (no-op) action ready each tick, on
``bomb/base-1`` with ``K`` slots and ``N`` episodes. Prints the wall and CPU milliseconds of
the rollout per tick outside the callback (what each reply wave pays per tick on top of the
host's own work). ``python -m eval.benchmarks.llm_tick K N [EVERY]``."""

from __future__ import annotations

import sys
import time

import jax
import numpy as np

from jaxcollab.agents.bomb import _batch, make
from jaxcollab.agents.bomb.llm import BombGame
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


def measure(k: int, n: int, every: int = 16) -> dict:
    env = make("bomb/base-1")
    keys, params, _, _ = _batch(["bomb/base-1"], n, 0)
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


if __name__ == "__main__":
    print(measure(*map(int, sys.argv[1:])))
