"""The RL trainer behind ``train/marl.py``: a team learns a bomb variant from scratch by
multi-agent PPO:
``python train/marl.py env=bomb/base-1 preset=cpu out_dir=DIR``.

IPPO or MAPPO with recurrent GRU policies on the RL view of the variant
(:mod:`jaxcollab.marl`): ``chunk`` updates per compiled call, every seed vmapped in it. After
each chunk the training state is checkpointed (orbax) and a point is added to the learning
curve: environment steps so far, the success rate of the episodes that ended during the chunk
(sampled actions), and the greedy success rate on held-out episodes (``eval_seed``). Rerunning
with the same ``out_dir`` resumes after the last finished chunk; a changed config is refused.

Writes into ``out_dir``: ``results.json``, ``learning_curve.png``, ``protocol.png`` (per role
and channel, the learned code against its most informative perceived feature), ``train_state/``
(resume),
``team/`` (seed 0's team: ``python eval/rollout.py agent=learned checkpoint=DIR/team``).

Logging (``logger.mode``, ``logger.project``: the options of ``train/collab.py``; wandb offline
by default, ``WANDB_MODE=disabled`` turns it off): after each chunk the curve point, the PPO
losses and the throughput go to wandb, and a progress bar shows the updates done, environment
steps/s (all seeds, compile excluded) and ETA.

``results.json`` keys: ``config``, ``run``; ``curve`` (lists, one entry per chunk:
``updates``, ``env_steps`` per seed, ``train_success`` and ``heldout_success`` per seed,
``seconds`` of training so far); ``env_steps_per_second`` (training throughput, all seeds,
compile excluded); when finished, ``success_rate`` (seed 0's team on ``eval_episodes``
held-out episodes through :func:`jaxcollab.rollout`, greedy, played by the family's own
evaluation as its ``learned`` team), ``heldout`` (that evaluation's summary: a bomb's endings,
rounds and bounces; a Keep-Talking module's outcomes, strikes and time left; under
``ppo.rulesets=episode`` the in-training greedy evaluation instead, each held-out episode on a
ruleset of the held-out pool: ``episodes``, ``pool``), ``protocol`` (the family's tables of
seed 0's team on 256 held-out episodes: a bomb's
:func:`jaxcollab.agents.bomb.rl_protocol.protocol_tables`; Keep Talking's
:func:`jaxcollab.agents.ktane.rl_protocol.message_information`, the bits the Expert's messages
carry about the right action), ``success_rate_per_seed`` (the in-training greedy evaluation
of every seed: the same held-out episodes and turn orders), ``success_over_seeds`` (those
rates, their mean and its 90 % Student-t interval: :func:`jaxcollab.io.seeds.over_seeds`) and
``wall_seconds``.
"""

from __future__ import annotations

import time

import jax
import numpy as np
from omegaconf import DictConfig, OmegaConf

import jaxcollab
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.io.plots import learning_curve_plot
from jaxcollab.io.run import start_run
from jaxcollab.io.seeds import over_seeds
from jaxcollab.marl.ppo import PPOConfig, Trainer
from jaxcollab.marl.team import learned, save_team, team_policy
from jaxcollab.scale.preempt import TrainState as Checkpoint

FROZEN = ("env", "seed", "updates", "chunk", "eval_episodes", "eval_seed", "ppo")


def check_config(cfg: DictConfig) -> None:
    """Cross-key checks beyond the schema (:class:`jaxcollab.io.schema.Marl`): the env is one
    the RL views cover, and the trainer accepts ``ppo`` for it (the view refuses a turn order
    it has no episodes for, and ``dial`` without a symbol inbox).

    Raises:
        ConfigValueError: not an environment of a family with an RL view (the bomb variants
            and Keep-Talking modules), or the trainer's refusal (a turn order the env's view
            has no episodes for; ``dial`` without an inbox).
    """
    try:
        plugin = jaxcollab.family(str(cfg.env))
    except KeyError:
        plugin = None
    if plugin is None or plugin.rl is None or cfg.env.count("/") != 1:
        raise ConfigValueError("env", cfg.env, "one bomb variant or Keep-Talking module, e.g. "
                               "bomb/base-1 or ktane/wires (the RL views cover these)")
    family = plugin.name
    if cfg.env not in jaxcollab.resolve(f"{family}/all"):
        raise ConfigValueError("env", cfg.env, f"one of {jaxcollab.resolve(f'{family}/all')}")
    Trainer(PPOConfig(**OmegaConf.to_container(cfg.ppo, resolve=True)))


def heldout(cfg: DictConfig, team_dir) -> dict:
    """Seed 0's greedy team on ``eval_episodes`` held-out episodes, through the family's own
    evaluation as its ``learned`` team (the bomb families: episode ``e`` plays turn order
    ``TURN_ORDERS[e % 6]`` under ``ppo.turn_order=cycle``, as every team does, else the
    trained order): ``success_rate`` and the evaluation's whole summary as ``heldout``."""
    from jaxcollab.core.family import Spec
    from jaxcollab.core.registry import family

    plugin = family(cfg.env)
    options = {**plugin.defaults(), "checkpoint": str(team_dir),
               "turn_order": cfg.ppo.turn_order}
    team = learned(options)
    out = plugin.evaluate([cfg.env], team, Spec(cfg.eval_episodes, cfg.eval_seed,
                                                options=options))
    return {"success_rate": out["success_rate"], "heldout": out}


def train(cfg: DictConfig, job) -> dict:
    ppo = PPOConfig(**OmegaConf.to_container(cfg.ppo))
    trainer = Trainer(ppo)
    ckpt = Checkpoint(job.out / "train_state")
    ts = trainer.init(cfg.seed)
    if ckpt.exists():
        ts = ckpt.restore(ts)
    curve = job.results.data.get("curve") or {k: [] for k in (
        "updates", "env_steps", "train_success", "heldout_success", "seconds")}
    eval_keys = jaxcollab.episode_keys(cfg.eval_seed, cfg.eval_episodes)  # the one convention
    done = int(np.asarray(ts.update)[0])
    timed = {"steps": 0, "seconds": 0.0}
    # one bar advancing per chunk: updates done, environment steps/s (all seeds, compile
    # excluded) and ETA; the curves also go to wandb (logger.mode)
    with job.logger.progress(f"{cfg.env} {ppo.algo}", cfg.updates) as bar:
        bar(done, float("nan"))
        while done < cfg.updates:
            n = min(cfg.chunk, cfg.updates - done)
            start = time.perf_counter()
            ts, m = trainer.train(ts, n)
            jax.block_until_ready(ts)
            seconds = time.perf_counter() - start
            if curve["updates"]:  # the first call of a process compiles: not timed
                timed["steps"] += n * ppo.episodes * ppo.steps * ppo.seeds
                timed["seconds"] += seconds
            done += n
            m = jax.tree.map(np.asarray, m)
            success = m["defused"].sum(1) / np.maximum(m["ended"].sum(1), 1)
            curve["updates"].append(done)
            curve["env_steps"].append(done * ppo.episodes * ppo.steps)
            curve["train_success"].append(success.tolist())
            curve["heldout_success"].append(
                np.asarray(trainer.evaluate(ts.params, eval_keys)).tolist())
            curve["seconds"].append((curve["seconds"][-1] if curve["seconds"] else 0) + seconds)
            ckpt.save(ts)
            job.results.update({"curve": curve})
            rate = timed["steps"] / timed["seconds"] if timed["seconds"] else None
            if rate:
                job.results.update({"env_steps_per_second": rate})
            job.logger.log({"env_steps": curve["env_steps"][-1],
                            "train_success": float(success.mean()),
                            "heldout_success": float(np.mean(curve["heldout_success"][-1])),
                            **{k: float(v.mean()) for k, v in m.items()
                               if k not in ("ended", "defused")},
                            **({"env_steps_per_second": rate} if rate else {})}, step=done)
            bar(done, float(m["policy_loss"].mean()), rate or 0.0)  # 0: untimed yet, "-"
    save_team(job.out / "team", ppo, jax.tree.map(lambda p: p[0], ts.params))
    if ppo.rulesets == "vanilla":
        final = heldout(cfg, job.out / "team")
    else:  # the family's evaluation plays one ruleset; these episodes each play their own
        final = {"success_rate": curve["heldout_success"][-1][0],
                 "heldout": {"episodes": cfg.eval_episodes, "rulesets": "heldout pool",
                             "pool": int(jax.tree.leaves(trainer.heldout)[0].shape[0])}}
    final["success_rate_per_seed"] = curve["heldout_success"][-1]
    final["success_over_seeds"] = over_seeds(curve["heldout_success"][-1])
    rl = jaxcollab.family(cfg.env).rl
    if rl.protocol is not None:  # a view with symbol channels: what the code is
        final["protocol"] = rl.protocol(team_policy(
            ppo, jax.tree.map(lambda p: p[0], ts.params), trainer.view.env), trainer.view,
            256, cfg.eval_seed)
        rl.protocol_plot(final["protocol"], job.out / "protocol.png")
    return final


def run(cfg: DictConfig) -> dict:
    """Check, train (resuming finished chunks), evaluate held out and write ``results.json``
    and the plots; returns the results."""
    job = start_run(cfg, frozen=FROZEN, check=check_config)
    start = time.time()
    final = train(job.cfg, job)
    job.results.update({**final, "wall_seconds": time.time() - start})
    learning_curve_plot(job.results.data, job.out / "learning_curve.png")
    print(f"success_rate {final['success_rate']:.3f}; wrote {job.results.path}")
    job.finish()
    return job.results.data
