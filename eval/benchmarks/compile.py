"""Compile benchmark: seconds to compile each environment's ``reset`` and ``step``, unbatched and
vmapped over a batch, and a scripted rollout (issue 23's budget: under 10 s each for
``reset`` / ``step``, under 20 s for a rollout of one module or bomb variant).

One row per compiled program and one ``worst`` row per family. Programs, not names: the 24
bomb variants are rows of one params table served by one compiled step (``bomb/base-1``), and a
Keep-Talking single-module mission compiles as its module's env, so the rows cover every
registered environment. The persistent compilation cache is off while measuring, so every
figure is a real compile. ``value`` is wall seconds; ``cpu_s`` this process's CPU seconds (the
figure to compare on a loaded machine, and the one held to the budget: ``budget_s``,
``within_budget``); ``notes`` repeat it with the load average. The budget lives here, not in a
test (``tests/test_compile_budget.py`` only checks that the programs compile).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp

from jaxcollab.agents import bomb as bomb_agents
from jaxcollab.agents import ktane as ktane_agents
from jaxcollab.core.registry import make, resolve
from jaxcollab.core.rollout import episode_keys

BATCH = 64
#: (family, env names): one per compiled program (see the module docstring).
PROGRAMS = {
    "parity": ["parity/probability", "parity/action"],
    "maze": ["maze/split-6x6"],
    "bomb": ["bomb/base-1"],
    "ktane": [*resolve("ktane/all"), *resolve("ktane/missions/multi")],
}
#: Issue 23's compile budget, CPU seconds per program: reset / step, and a rollout.
BUDGET_S = {"reset": 10.0, "step": 10.0, "rollout": 20.0}
QUICK = {"parity": ["parity/probability"], "maze": ["maze/split-6x6"], "bomb": ["bomb/base-1"],
         "ktane": ["ktane/passwords", "ktane/missions/multi/8"]}


def _seconds(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall, CPU) seconds of ``fn()``, results awaited."""
    wall, cpu = time.perf_counter(), time.process_time()
    jax.block_until_ready(fn())
    return time.perf_counter() - wall, time.process_time() - cpu


def _compile(fn: Callable, *args) -> tuple[float, float]:
    """(wall, CPU) seconds to lower and compile a fresh ``jax.jit(fn)`` for ``args``."""
    return _seconds(lambda: jax.jit(fn).lower(*args).compile())


def _stack(tree, n: int):
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (n, *jnp.shape(x))), tree)


def env_programs(name: str, batch: int) -> dict[str, tuple[float, float]]:
    """Compile seconds of ``reset`` and ``step``, unbatched (``b1``) and vmapped (``bB``)."""
    env = make(name)
    params = env.default_params
    key = jax.random.key(0)
    _, state = jax.jit(env.reset)(key, params)
    actions = env.sample_action(key, params)
    keys = jax.random.split(key, batch)
    return {
        "reset b1": _compile(env.reset, key, params),
        "step b1": _compile(env.step, key, state, actions, params),
        f"reset b{batch}": _compile(jax.vmap(env.reset, (0, None)), keys, params),
        f"step b{batch}": _compile(jax.vmap(env.step, (0, 0, 0, None)), keys,
                                   _stack(state, batch), _stack(actions, batch), params),
    }


def rollout_seconds(name: str, batch: int) -> tuple[float, float] | None:
    """Compile seconds of the oracle team's rollout to the end of every episode: first call
    minus a second (compiled) call; None for a family without scripted teams."""
    env = make(name)
    keys = episode_keys(0, batch)
    if name.startswith("ktane/"):
        play = lambda: ktane_agents.play(env, "oracle", keys)  # noqa: E731
    elif name.startswith("bomb/"):
        params = _stack(env.default_params, batch)
        play = lambda: bomb_agents.play(env, "oracle", keys, params)  # noqa: E731
    else:
        return None
    first, again = _seconds(play), _seconds(play)
    return first[0] - again[0], first[1] - again[1]


def _row(family: str, what: str, seconds: tuple[float, float]) -> dict:
    """A result row, also printed at once (the table comes only after the whole benchmark);
    its budget (:data:`BUDGET_S`) by the program's kind, the last word of ``what`` before the
    batch size."""
    budget = BUDGET_S[what.split()[-2]]
    within = seconds[1] <= budget
    notes = (f"CPU {seconds[1]:.1f}s ({'within' if within else 'OVER'} the {budget:g}s budget), "
             f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"compile {what}: {seconds[0]:.1f}s wall, {notes}", flush=True)
    return {"name": f"compile {what}", "value": seconds[0], "unit": "s", "family": family,
            "cpu_s": seconds[1], "budget_s": budget, "within_budget": within, "notes": notes}


def run(quick: bool) -> list[dict]:
    """Rows per program (see the module docstring), then each family's worst."""
    enabled = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)
    rows = []
    try:
        for family, names in (QUICK if quick else PROGRAMS).items():
            found = []
            for name in names:
                jax.clear_caches()
                for what, sec in env_programs(name, BATCH).items():
                    found.append(_row(family, f"{name} {what}", sec))
                rolled = rollout_seconds(name, BATCH)
                if rolled is not None:
                    found.append(_row(family, f"{name} oracle rollout b{BATCH}", rolled))
            worst = max(found, key=lambda r: r["cpu_s"])
            rows += found + [{**worst, "name": f"compile {family} worst: {worst['name'][8:]}"}]
    finally:
        jax.config.update("jax_enable_compilation_cache", enabled)
    return rows
