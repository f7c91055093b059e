"""Roll out a scripted team on an environment or group and write ``results.json``.

``python eval/rollout.py env=bomb/all agent=oracle episodes=1024 seed=0 out_dir=DIR``

Each family's agent package (``jaxcollab.agents.<family>``) provides ``TEAMS`` and
``evaluate(env_names, agent, episodes, seed) -> dict`` returning the results (its docstring
documents the keys); this script checks the config (:mod:`jaxcollab.io.run`), runs it and writes
``results.json`` (the results plus ``env`` and ``config``).
"""

from __future__ import annotations

import importlib

import hydra
from omegaconf import DictConfig

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
        ConfigValueError: unknown env or group, or an agent that is not a team of its family.
    """
    _, module = agents_of(cfg.env)
    if cfg.agent not in module.TEAMS:
        raise ConfigValueError("agent", cfg.agent, f"a team of {cfg.env}: {list(module.TEAMS)}")


def run(cfg: DictConfig) -> dict:
    """Check, roll out and write ``results.json``; returns the results."""
    job = start_run(cfg, check=check_config)
    cfg = job.cfg
    names, module = agents_of(cfg.env)
    job.results.update({"env": cfg.env, **module.evaluate(names, cfg.agent, cfg.episodes,
                                                          cfg.seed)})
    keys = ("success_rate", "episodes", "episodes_per_second")
    print({k: job.results.data[k] for k in keys if k in job.results.data}, f"-> {job.results.path}")
    return job.results.data


main = hydra.main(version_base=None, config_path="../configs", config_name="rollout")(run)


if __name__ == "__main__":
    main()
