"""Multi-agent RL benchmark: training throughput of :class:`jaxcollab.marl.ppo.Trainer` on
``bomb/base-1`` in environment steps (turns) per second, the whole update (rollout with
auto-reset + GAE + PPO epochs) under one ``jit``, compile excluded; where the time goes (the
environment alone, the rollout with the policy, the full update); then the cost per step as the
batch of parallel episodes grows (1k to 64k; one epoch, one minibatch, 8 turns per update, so
the rollout and one gradient pass over it are what is timed); and the ``preset=cpu``
training configuration (``configs/marl/preset/cpu.yaml``: per-role actors, DIAL, the auxiliary
loss, 4 epochs x 4 minibatches), whose steps/s bound how far a 15-minute run gets.

Every timed step is a live step of some episode (auto-reset), so steps/s counts played turns.
Each row notes the process CPU seconds per wall second of its timed calls and the load
average (the CPU is shared). ``MARL_BENCH_EPISODES`` (comma-separated) overrides the batch
sizes of the scaling rows (the GPU script uses larger ones); ``MARL_BENCH_MAIN`` the episodes of
the main row.
"""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path

import jax
from omegaconf import OmegaConf

from jaxcollab.marl.ppo import PPOConfig, Trainer

CPU_PRESET = Path(__file__).resolve().parents[2] / "configs" / "marl" / "preset" / "cpu.yaml"


def _timed(fn, repeats: int) -> tuple[float, float]:
    """(best wall seconds, CPU seconds per wall second) of ``repeats`` calls after a
    compiling one."""
    jax.block_until_ready(fn())
    best, cpu, wall = float("inf"), 0.0, 0.0
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        jax.block_until_ready(fn())
        dt = time.perf_counter() - t
        best, cpu, wall = min(best, dt), cpu + time.process_time() - c, wall + dt
    return best, cpu / wall


@functools.partial(jax.jit, static_argnums=(0,))
def _env_only(trainer: Trainer, ts):
    """``steps`` auto-reset turns of every episode with everyone waiting (no policy)."""
    env = trainer.env
    noop = jax.tree.map(jax.numpy.asarray, env.noop())  # host arrays: index them traced

    def step(carry, key):
        state, params = carry
        k_env, k_reset, k_order = jax.random.split(key, 3)
        b = params.rounds.shape[0]
        _, state, _, term, trunc, _ = jax.vmap(env.step, (0, 0, None, 0))(
            jax.random.split(k_env, b), state, noop, params)
        fresh_params = trainer.episode_params(k_order, b)
        _, fresh = jax.vmap(env.reset)(jax.random.split(k_reset, b), fresh_params)
        done = term | trunc
        pick = lambda n, o: jax.numpy.where(  # noqa: E731
            done.reshape((b,) + (1,) * (o.ndim - 1)), n, o)
        state, params = jax.tree.map(pick, fresh, state), jax.tree.map(pick, fresh_params, params)
        return (state, params), trainer.view.encode(jax.vmap(env.observe)(state, params))[:, 0, 0]

    keys = jax.random.split(ts.key[0], trainer.cfg.steps)
    return jax.lax.scan(step, (jax.tree.map(lambda x: x[0], ts.env_state),
                               jax.tree.map(lambda x: x[0], ts.env_params)), keys)


def _rows(cfg: PPOConfig, updates: int, repeats: int, label: str, parts: bool) -> list[dict]:
    trainer = Trainer(cfg)
    ts = trainer.init(0)
    steps = cfg.seeds * cfg.episodes * cfg.steps
    load = f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    full, cpu = _timed(lambda: trainer.train(ts, updates), repeats)
    rate = updates * steps / full
    rows = [{"name": label, "value": rate, "unit": "env steps/s",
             "notes": f"{1e6 / rate:.2f} us/step; GRU {cfg.hidden}, {cfg.epochs} epochs x "
                      f"{cfg.minibatches} minibatches, {cfg.steps} turns/update, "
                      f"{'shared' if cfg.shared else 'per-role'} actor; {cpu:.2f} CPU s per s; "
                      f"{load}"}]
    if parts:
        roll = jax.jit(jax.vmap(trainer.rollout))
        t_roll, _ = _timed(lambda: roll(ts), repeats)
        t_env, _ = _timed(lambda: _env_only(trainer, ts), repeats)
        per = full / updates
        for part, seconds in (("environment (step + auto-reset + observe)", t_env),
                              ("policy forward + sampling in the rollout", t_roll - t_env),
                              ("PPO update (GAE, replay, gradients, Adam)", per - t_roll)):
            rows.append({"name": f"marl update share: {part}, {cfg.episodes} episodes",
                         "value": 100 * seconds / per, "unit": "%",
                         "notes": f"{1e6 * seconds / steps:.2f} us/step; {load}"})
    return rows


def run(quick: bool) -> list[dict]:
    n = int(os.environ.get("MARL_BENCH_MAIN", 1024 if quick else 4096))
    main = PPOConfig(episodes=n, steps=32, epochs=1, minibatches=1, hidden=32)
    rows = _rows(main, 1 if quick else 2, 2, f"marl ippo base-1 training env steps/s, {n} "
                 "episodes", parts=True)
    preset = OmegaConf.to_container(OmegaConf.load(CPU_PRESET).ppo)
    preset = PPOConfig(**{**preset, "anneal_updates": 0})  # ${updates} of a run; no run here
    rows += _rows(preset, 1 if quick else 2, 2, "marl ippo base-1 training env steps/s, "
                  "preset=cpu (dial, auxiliary loss)", parts=False)
    sizes = os.environ.get("MARL_BENCH_EPISODES")
    sizes = [int(s) for s in sizes.split(",")] if sizes else (
        [256, 1024] if quick else [1024, 4096, 16384, 65536])
    for n in sizes:
        cfg = PPOConfig(episodes=n, steps=8, epochs=1, minibatches=1, hidden=32)
        row = _rows(cfg, 1, 2, "", parts=False)[0]
        rows.append({"name": f"marl ippo base-1 cost per env step, {n} episodes",
                     "value": 1e6 / row["value"], "unit": "us/step",
                     "notes": f"{row['value']:,.0f} env steps/s; 8 turns, 1 epoch; "
                              + row["notes"].split("; ", 1)[1]})
    return rows
