"""Cross-play of learned teams: every assignment of roles to independently trained seeds.

A ``train/marl.py`` run with ``ppo.seeds=N`` trains N teams in one program; its
``train_state/`` checkpoint holds every seed's parameters. An assignment ``(s_0, …, s_{n-1})``
gives role ``r`` the actor seed ``s_r`` trained for that role (for the bomb: Deaf from seed
``i``, Mute from ``j``, Blind from ``k``; for Keep Talking: Defuser ``i``, Expert ``j``). All
``N^n`` mixed teams are stacked on the trainer's seed axis and played greedily on the same
held-out episodes by one compiled :meth:`~jaxcollab.marl.ppo.Trainer.evaluate`. Self-play is
the mean over assignments of one seed to every role, cross-play the mean over the others, the
gap their difference: the zero-shot coordination gap of Hu et al. (2020), "Other-Play for
Zero-Shot Coordination", §6, in the layout of GPTNT Table 6 (first role's seed by row).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import jaxcollab
from jaxcollab.marl.ppo import PPOConfig, Trainer
from jaxcollab.scale.preempt import TrainState as Checkpoint


def load_seeds(run_dir: str | Path) -> tuple[dict, PPOConfig, dict]:
    """``(run config, PPOConfig, params)`` of a finished ``train/marl.py`` run: every seed's
    parameters, leading seed axis ``[N, ...]``, from its ``train_state/``.

    Raises:
        FileNotFoundError: ``run_dir`` holds no ``results.json`` or ``train_state/``.
    """
    run_dir = Path(run_dir)
    if not (run_dir / "results.json").is_file() or not (run_dir / "train_state").is_dir():
        raise FileNotFoundError(f"{run_dir} is not a train/marl.py out_dir (no results.json "
                                "and train_state/)")
    config = json.loads((run_dir / "results.json").read_text())["config"]
    cfg = PPOConfig(**config["ppo"])
    ts = Checkpoint(run_dir / "train_state").restore(Trainer(cfg).init(config["seed"]))
    return config, cfg, ts.params


def assignments(n_seeds: int, n_roles: int) -> np.ndarray:
    """int ``[n_seeds ** n_roles, n_roles]``: every assignment of roles to seeds, in
    lexicographic order (the first role's seed varies slowest)."""
    return np.asarray(list(itertools.product(range(n_seeds), repeat=n_roles)), np.int32)


def mixed_params(cfg: PPOConfig, params: dict, assign: np.ndarray) -> tuple[PPOConfig, dict]:
    """The teams of ``assign`` ``[A, n_roles]`` as a config and params with a leading axis
    ``[A]``: role ``r``'s actor from seed ``assign[:, r]`` (its own role's actor; a shared
    actor is copied per role, so the config becomes per-role, the same function of each
    role's observation). MAPPO's critic (unused by greedy play) comes from the first role's
    seed."""
    n = assign.shape[1]
    roles = jax.tree.leaves(params["actor"])[0].shape[1]
    role_of = np.arange(n) % roles
    out = {"actor": jax.tree.map(lambda x: x[assign, role_of[None]], params["actor"])}
    if "critic" in params:
        out["critic"] = jax.tree.map(lambda x: x[assign[:, 0]], params["critic"])
    return dataclasses.replace(cfg, shared=False), out


def crossplay(run_dir: str | Path, episodes: int | None = None) -> dict:
    """Play every assignment of roles to the run's seeds on ``episodes`` held-out episodes
    (default the run's ``eval_episodes``; keys ``episode_keys(eval_seed, episodes)``, the
    run's own held-out episodes).

    Returns (JSON-ready) ``env``, ``roles``, ``seeds``, ``episodes``, ``assignments`` (per
    assignment: ``seeds`` (role → seed), ``success_rate``), ``self_play`` and ``cross_play``
    (mean success), ``gap`` (their difference, points of success rate), ``matrix`` (rows:
    the first role's seed; columns: the other roles' seeds, ``"j"`` or ``"j/k"``).

    Raises:
        FileNotFoundError: see :func:`load_seeds`; ValueError: a run of one seed.
    """
    config, cfg, params = load_seeds(run_dir)
    n_seeds = jax.tree.leaves(params)[0].shape[0]
    if n_seeds < 2:
        raise ValueError(f"{run_dir} trained one seed; cross-play needs ppo.seeds >= 2")
    trainer = Trainer(cfg)
    roles = list(trainer.env.role_names)
    assign = assignments(n_seeds, len(roles))
    mixed_cfg, mixed = mixed_params(cfg, params, assign)
    episodes = int(episodes or config["eval_episodes"])
    keys = jaxcollab.episode_keys(config["eval_seed"], episodes)
    success = np.asarray(Trainer(mixed_cfg, trainer.view).evaluate(
        jax.tree.map(jnp.asarray, mixed), keys))
    same = (assign == assign[:, :1]).all(1)
    cols = ["/".join(map(str, c)) for c in itertools.product(range(n_seeds),
                                                             repeat=len(roles) - 1)]
    self_play, cross_play = float(success[same].mean()), float(success[~same].mean())
    return {
        "env": cfg.env, "roles": roles, "seeds": n_seeds, "episodes": episodes,
        "assignments": [{"seeds": dict(zip(roles, map(int, a))), "success_rate": float(s)}
                        for a, s in zip(assign, success)],
        "self_play": self_play, "cross_play": cross_play,
        "gap": 100 * (self_play - cross_play),
        "matrix": {"rows": [str(i) for i in range(n_seeds)], "cols": cols,
                   "values": success.reshape(n_seeds, -1).tolist()},
    }
