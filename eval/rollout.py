"""Roll out a scripted team on an environment or group and write ``results.json``.

``python eval/rollout.py env=bomb/all agent=oracle episodes=1024 seed=0 out_dir=DIR``

Each family's agent package (``jaxcollab.agents.<family>``) provides
``evaluate(env_names, agent, episodes, seed) -> dict`` returning the results (its docstring
documents the keys); this script only resolves names, runs it and writes the file.

The paper's protocol on the instance bank (bomb; SANZARU Tables 4, 10-12)::

    python eval/rollout.py env=bomb/all agent=symbol bank=true repeats=3 \
        [turn_order=[mute,deaf,blind]] [solo=solo | solo=DIR/results.json]

plays 3 bank instances x ``repeats`` per variant (``episodes`` is ignored) through the
family's ``rollout_bank``; ``results.json`` adds ``summary.core`` / ``plus`` / ``all`` /
``families.<family>`` and, with ``solo`` (a team played on the same episodes, or an earlier
bank run's ``results.json``), ``summary.solo`` and ``summary.gap`` (solo minus trio success
rate).
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import hydra
from omegaconf import DictConfig

import jaxcollab


def run(env: str, agent: str, episodes: int, seed: int, out_dir: str | Path,
        bank: bool = False, repeats: int = 3, turn_order: str = "cycle",
        solo: str | None = None) -> dict:
    """Run the rollout (or, with ``bank``, the instance-bank protocol) and write
    ``out_dir/results.json``; returns the results dict.

    Raises:
        KeyError: unknown environment, group or team (lists valid names).
        ValueError: ``episodes < 1``, a family without scripted agents (or, with ``bank``,
            without an instance bank), or bad protocol options.
        FileNotFoundError: ``solo`` is neither a team nor an existing results file.
    """
    if int(episodes) < 1:
        raise ValueError(f"episodes must be positive, got {episodes!r}")
    env_names = jaxcollab.resolve(env)
    family = env_names[0].split("/")[0]
    try:
        module = importlib.import_module(f"jaxcollab.agents.{family}")
    except ModuleNotFoundError:
        raise ValueError(f"environment family {family!r} has no scripted agents") from None
    if bank:
        if not hasattr(module, "rollout_bank"):
            raise ValueError(f"environment family {family!r} has no instance bank")
        results = module.rollout_bank(env_names, agent, int(repeats), turn_order=turn_order,
                                      seed=int(seed), solo=_solo(solo, module))
    else:
        results = module.evaluate(env_names, agent, int(episodes), int(seed))
    results = {"env": env, **results}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    return results


def _solo(solo: str | None, module) -> str | dict | None:
    """A team name as is; otherwise the results dict stored at path ``solo``."""
    if solo is None or str(solo) in module.TEAMS:
        return solo
    path = Path(str(solo))
    if not path.is_file():
        raise FileNotFoundError(f"solo={solo!r} is neither a team ({', '.join(module.TEAMS)}) "
                                "nor a results.json file")
    return json.loads(path.read_text())


@hydra.main(version_base=None, config_path="../configs", config_name="rollout")
def main(cfg: DictConfig) -> None:
    results = run(cfg.env, cfg.agent, cfg.episodes, cfg.seed, cfg.out_dir, bank=cfg.bank,
                  repeats=cfg.repeats, turn_order=cfg.turn_order, solo=cfg.solo)
    keys = ("success_rate", "episodes", "episodes_per_second")
    print({k: results[k] for k in keys if k in results}, f"-> {cfg.out_dir}/results.json")


if __name__ == "__main__":
    main()
