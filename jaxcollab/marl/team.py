"""A trained team as a team: saved parameters → a policy of :func:`jaxcollab.rollout`.

A team checkpoint is a directory holding ``config.json`` (the :class:`~jaxcollab.marl.ppo.
PPOConfig`) and ``params/`` (orbax, one seed's parameters). The policy plays greedily (the most
likely choice of every head) from each role's own observation: at each step the role whose turn
it is (the your-turn flag of its bomb row; in Keep-Talking the turn count's parity) runs its
recurrent policy and advances its GRU state; the other rows idle, which the environment ignores
(one turn is one role's; SANZARU Table 1).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jax
import jax.numpy as jnp

from jaxcollab.agents.bomb.bank import PinnedInstances
from jaxcollab.agents.bomb.rl_view import BombView
from jaxcollab.core.env import Environment
from jaxcollab.core.family import ScriptedTeam
from jaxcollab.core.rollout import Policy, policy
from jaxcollab.envs.bomb import BombEnv
from jaxcollab.marl import networks as nn
from jaxcollab.marl.ppo import PPOConfig, Trainer, any_view
from jaxcollab.scale.preempt import TrainState as Checkpoint


def save_team(path: str | Path, cfg: PPOConfig, params) -> None:
    """Write a team checkpoint of ``params`` (one seed, no seed axis) trained with ``cfg``."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    Checkpoint(path / "params").save(params)
    (path / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=1))


def load_team(path: str | Path) -> tuple[PPOConfig, dict]:
    """(config, params) of a team checkpoint.

    Raises:
        FileNotFoundError: ``path`` holds no ``config.json`` (not a team checkpoint).
    """
    path = Path(path)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path} is not a team checkpoint (no config.json); give the "
                                "team/ directory that train/marl.py writes into its out_dir")
    cfg = PPOConfig(**json.loads((path / "config.json").read_text()))
    like = Trainer(cfg).init_params(jax.random.PRNGKey(0))
    return cfg, Checkpoint(path / "params").restore(like)


def team_policy(cfg: PPOConfig, params, env: Environment) -> Policy:
    """The greedy team of ``params`` on ``env`` (the trained environment's observations; for a
    bomb variant any message caps and turn order, also the bank's pinned-instance env): a
    :class:`Policy` whose state is the GRU state float32 ``[n_agents, hidden]`` and the turns
    played (int32, for views whose actor is the turn's parity)."""
    if cfg.env.startswith("bomb/"):  # the trained variant's view, at the env's caps
        view = BombView(BombEnv(cfg.env, env.speech_bytes, env.gesture_symbols), cfg.symbols,
                        cfg.alphabet)
    else:
        view = any_view(cfg.env, cfg.symbols, cfg.alphabet)
    trainer = Trainer(cfg, view)

    def act(key, obs, carry):
        hidden, turn = carry
        enc = view.encode(obs)
        actor = view.actor(enc, turn)
        logp, _, hidden = trainer.act(params, enc, actor, hidden)
        return trainer.joint(nn.greedy(logp), actor), (hidden, turn + 1)

    return policy(act, init=lambda key: (jnp.zeros((view.n_agents, cfg.hidden), jnp.float32),
                                         jnp.int32(0)), name="learned")


def learned_team(checkpoint: str | Path, env: Environment | None = None) -> Policy:
    """The team saved at ``checkpoint`` (a ``team/`` directory, or a training ``out_dir``
    holding one) as a rollout policy on ``env`` (default ``jaxcollab.make`` of its variant).

    Raises:
        FileNotFoundError: no team checkpoint there; ValueError: ``env`` is another variant
            (the bank's pinned-instance env carries its variants in the params: allowed).
    """
    import jaxcollab

    path = Path(checkpoint)
    path = path / "team" if (path / "team" / "config.json").is_file() else path
    cfg, params = load_team(path)
    env = env if env is not None else jaxcollab.make(cfg.env)
    if env.name != cfg.env and not isinstance(env, PinnedInstances):
        raise ValueError(f"the team at {path} was trained on {cfg.env!r}, not {env.name!r}")
    return team_policy(cfg, params, env)


def as_team(checkpoint: str | Path) -> ScriptedTeam:
    """The team saved at ``checkpoint`` as a :class:`~jaxcollab.core.family.Team` named
    ``learned``, for any family's evaluation: :func:`learned_team` on each environment it
    plays, loaded once per environment (a chunk reuses the policy, and so its compile)."""
    policies: dict = {}

    def policy(env: Environment) -> Policy:
        if env not in policies:
            policies[env] = learned_team(checkpoint, env)
        return policies[env]

    return ScriptedTeam("learned", policy)
