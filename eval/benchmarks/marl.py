"""Multi-agent RL benchmark: training throughput of :class:`jaxcollab.marl.ppo.Trainer` on
``bomb/base-1`` in environment steps (turns) per second, the whole update (rollout with
auto-reset + GAE + PPO epochs) under one ``jit``, compile excluded; then the cost per step as
the batch of parallel episodes grows (1k to 64k; one epoch, one minibatch, 8 turns per update,
so the rollout and one gradient pass over it are what is timed).

Every timed step is a live step of some episode (auto-reset), so steps/s counts played turns.
``MARL_BENCH_EPISODES`` (comma-separated) overrides the batch sizes of the scaling rows (the
GPU script uses larger ones).
"""

from __future__ import annotations

import os

from eval.benchmarks._timing import best_time
from jaxcollab.marl.ppo import PPOConfig, Trainer


def throughput(cfg: PPOConfig, updates: int) -> float:
    """Env steps/s of ``updates`` updates of every seed (best of 2 after a compiling call)."""
    trainer = Trainer(cfg)
    ts = trainer.init(0)
    seconds = best_time(lambda: trainer.train(ts, updates), repeats=2)
    return updates * cfg.seeds * cfg.episodes * cfg.steps / seconds


def run(quick: bool) -> list[dict]:
    load = f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    main = PPOConfig(episodes=1024 if quick else 4096, steps=32, hidden=32)
    rate = throughput(main, 1 if quick else 2)
    rows = [{"name": f"marl ippo base-1 training env steps/s, {main.episodes} episodes",
             "value": rate, "unit": "env steps/s",
             "notes": f"GRU {main.hidden}, {main.epochs} epochs x {main.minibatches} "
                      f"minibatches, {main.steps} turns/update; {load}"}]
    sizes = os.environ.get("MARL_BENCH_EPISODES")
    sizes = [int(s) for s in sizes.split(",")] if sizes else (
        [256, 1024] if quick else [1024, 4096, 16384, 65536])
    for n in sizes:
        cfg = PPOConfig(episodes=n, steps=8, epochs=1, minibatches=1, hidden=32)
        r = throughput(cfg, 1)
        rows.append({"name": f"marl ippo base-1 cost per env step, {n} episodes",
                     "value": 1e6 / r, "unit": "us/step",
                     "notes": f"{r:,.0f} env steps/s; 8 turns, 1 epoch; {load}"})
    return rows
