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
from collections.abc import Mapping, Sequence
from pathlib import Path

import jax

from jaxcollab.core.env import Environment
from jaxcollab.core.family import ScriptedTeam
from jaxcollab.core.rollout import Policy
from jaxcollab.marl.ppo import PPOConfig, Trainer
from jaxcollab.marl.views import view_of
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
    bomb variant any message caps and turn order, also the bank's pinned-instance env: the
    view's :meth:`~jaxcollab.marl.views.View.on`): :meth:`Trainer.greedy_policy` of the view.

    Raises:
        ValueError: ``env`` is not of the trained variant."""
    view = view_of(cfg.env, cfg.symbols, cfg.alphabet, cfg.rulesets).on(env)
    return Trainer(cfg, view).greedy_policy(params)


def learned_team(checkpoint: str | Path, env: Environment | None = None) -> Policy:
    """The team saved at ``checkpoint`` (a ``team/`` directory, or a training ``out_dir``
    holding one) as a rollout policy on ``env`` (default the view's: ``jaxcollab.make`` of
    its variant, or its :class:`~jaxcollab.agents.ktane.rulesets.ManualExpert` under
    ``rulesets=episode``).

    Raises:
        FileNotFoundError: no team checkpoint there; ValueError: ``env`` is another variant
            (the bank's pinned-instance env carries its variants in the params: allowed).
    """
    path = Path(checkpoint)
    path = path / "team" if (path / "team" / "config.json").is_file() else path
    cfg, params = load_team(path)
    view = view_of(cfg.env, cfg.symbols, cfg.alphabet, cfg.rulesets)
    env = env if env is not None else view.env
    try:
        view.on(env)
    except ValueError as e:  # the view refuses another variant's env
        raise ValueError(f"the team at {path} was trained on {cfg.env!r}, not {env!r} ({e})") \
            from None
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


def learned(options: Mapping) -> ScriptedTeam:
    """The ``learned`` team of every family with an RL view (``agent=learned
    checkpoint=DIR``): the team ``train/marl.py`` saved at ``options["checkpoint"]``."""
    return as_team(options["checkpoint"])


def check_learned(env_names: Sequence[str], options: Mapping) -> None:
    """Refuse ``agent=learned`` without a checkpoint directory or on more than one environment
    (a team plays the environment it was trained on).

    Raises:
        ConfigValueError: naming ``checkpoint`` or ``env``."""
    from jaxcollab.core.errors import ConfigValueError

    if options.get("agent") != "learned":
        return
    checkpoint = options.get("checkpoint")
    if checkpoint is None or not Path(checkpoint).is_dir():
        raise ConfigValueError("checkpoint", checkpoint, "the out_dir (or its team/) of a "
                               "train/marl.py run, for agent=learned")
    if len(env_names) != 1:
        raise ConfigValueError("env", ",".join(env_names), "the one environment the learned "
                               "team was trained on (agent=learned)")
