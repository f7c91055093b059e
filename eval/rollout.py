"""Roll out a scripted team on an environment or group and write ``results.json``.

``python eval/rollout.py env=bomb/all agent=oracle episodes=1024 seed=0 out_dir=DIR``

Each family's agent package (``jaxcollab.agents.<family>``) provides ``TEAMS`` and
``evaluate(env_names, agent, episodes, seed, chunk, save_dir) -> dict`` returning the results
(its docstring documents the keys); this script checks the config (:mod:`jaxcollab.io.run`),
runs it and writes ``results.json`` (the results plus ``env`` and ``config``).

Episodes are played ``chunk`` at a time and each finished chunk is kept in
``out_dir/episodes/``. SIGTERM or SIGINT (a scheduler's preemption, Ctrl-C) stops the run after
the chunk in play, keeping the finished ones, and exits with status 128 + the signal number
(143 for SIGTERM) and no traceback; rerunning the same command with the same ``out_dir`` loads
the finished chunks, plays the rest and writes the results of an uninterrupted run
(:func:`jaxcollab.scale.preempt.resumable_episodes`; ``episodes_per_second`` then counts the
chunks played by the last command only).

The paper's protocol on the instance bank (bomb; SANZARU Tables 4, 10-12)::

    python eval/rollout.py env=bomb/all agent=symbol bank=true repeats=3 \\
        [turn_order=[mute,deaf,blind]] [solo=solo | solo=DIR/results.json]

plays 3 bank instances x ``repeats`` per variant (``episodes`` is ignored) through the
family's ``rollout_bank``; ``results.json`` adds ``summary.core`` / ``plus`` / ``all`` /
``families.<family>`` and, with ``solo`` (a team played on the same episodes, or an earlier
bank run's ``results.json``), ``summary.solo`` and ``summary.gap`` (solo minus trio success
rate).

Keep-Talking rules (ours; GPTNT §7 leaves randomised rules to future work)::

    python eval/rollout.py env=ktane/wires agent=oracle ruleset=random ruleset_seed=3

plays under a ruleset whose every rule table is redrawn from ``ruleset_seed``
(:mod:`jaxcollab.envs.ktane.ruleset`); ``ruleset=vanilla`` (the default) is the vanilla manual.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from jaxcollab.io.run import env_selection, start_run
from jaxcollab.io.schema import ConfigValueError


def agents_of(env: str) -> tuple[list[str], object]:
    """``(env names, agent package)`` of an ``env=`` value.

    Raises:
        ConfigValueError: unknown environment or group, or a family without scripted agents.
    """
    names = env_selection("env", env)
    family = names[0].split("/")[0]
    try:
        return names, importlib.import_module(f"jaxcollab.agents.{family}")
    except ModuleNotFoundError:
        raise ConfigValueError("env", env, "an environment whose family has scripted agents "
                               "(bomb, ktane)") from None


def check_config(cfg: DictConfig) -> None:
    """Cross-key checks beyond the schema (:class:`jaxcollab.io.schema.Rollout`).

    Raises:
        ConfigValueError: unknown env or group, an agent that is not a team of its family,
            ``bank=true`` for a family without an instance bank, ``ruleset=random`` for a
            family without rulesets, or a ``solo`` that is neither a team nor an existing
            results file.
    """
    names, module = agents_of(cfg.env)
    if cfg.agent == "learned":  # a team trained by train/marl.py (jaxcollab.marl)
        if cfg.checkpoint is None or not Path(cfg.checkpoint).is_dir():
            raise ConfigValueError("checkpoint", cfg.checkpoint, "the out_dir (or its team/) "
                                   "of a train/marl.py run, for agent=learned")
        if len(names) != 1 or cfg.bank:
            raise ConfigValueError("env", cfg.env, "the one variant the learned team was trained "
                                   "on (agent=learned, bank=false)")
    elif cfg.agent not in module.TEAMS:
        raise ConfigValueError("agent", cfg.agent, f"a team of {cfg.env}: {list(module.TEAMS)}")
    if cfg.bank and not hasattr(module, "rollout_bank"):
        raise ConfigValueError("bank", True, f"false: {cfg.env} has no instance bank (bomb has)")
    if cfg.ruleset != "vanilla" and not hasattr(module, "RULESETS"):
        raise ConfigValueError("ruleset", str(cfg.ruleset), f"vanilla: {cfg.env} has no randomised "
                               "rulesets (ktane has)")
    if cfg.solo is not None and cfg.solo not in module.TEAMS and not Path(cfg.solo).is_file():
        raise ConfigValueError("solo", cfg.solo, f"a team ({', '.join(module.TEAMS)}) or an "
                               "existing bank results.json")


def _solo(solo: str | None, module) -> str | dict | None:
    """A team name as is; otherwise the results dict stored at path ``solo``."""
    if solo is None or solo in module.TEAMS:
        return solo
    return json.loads(Path(solo).read_text())


def run(cfg: DictConfig) -> dict:
    """Check, roll out (or play the bank protocol) and write ``results.json``; returns it."""
    job = start_run(cfg, check=check_config)
    cfg = job.cfg
    names, module = agents_of(cfg.env)
    if cfg.bank:
        turn_order = OmegaConf.to_object(cfg.turn_order) if OmegaConf.is_config(
            cfg.turn_order) else cfg.turn_order
        results = module.rollout_bank(names, cfg.agent, cfg.repeats, turn_order=turn_order,
                                      seed=cfg.seed, solo=_solo(cfg.solo, module))
    else:
        rules = ({"ruleset": str(cfg.ruleset), "ruleset_seed": cfg.ruleset_seed}
                 if hasattr(module, "RULESETS") else {})
        agent = cfg.agent
        if agent == "learned":
            from jaxcollab.core.registry import make
            from jaxcollab.marl import learned_team

            agent = learned_team(cfg.checkpoint, make(names[0]))
        results = module.evaluate(names, agent, cfg.episodes, cfg.seed, cfg.chunk,
                                  job.out / "episodes", **rules)
    job.results.update({"env": cfg.env, **results})
    keys = ("success_rate", "episodes", "episodes_per_second")
    print({k: job.results.data[k] for k in keys if k in job.results.data}, f"-> {job.results.path}")
    return job.results.data


main = hydra.main(version_base=None, config_path="../configs", config_name="rollout")(run)


if __name__ == "__main__":
    main()
