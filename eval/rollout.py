"""Roll out a scripted team on an environment or group and write ``results.json``.

``python eval/rollout.py env=bomb/all agent=oracle episodes=1024 seed=0 out_dir=DIR``

Each family's agent package (``jaxcollab.agents.<family>``) provides
``evaluate(env_names, agent, episodes, seed) -> dict`` returning the results (its docstring
documents the keys); this script only resolves names, runs it and writes the file.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import hydra
from omegaconf import DictConfig

import jaxcollab


def run(env: str, agent: str, episodes: int, seed: int, out_dir: str | Path) -> dict:
    """Run the rollout and write ``out_dir/results.json``; returns the results dict.

    Raises:
        KeyError: unknown environment or group (lists valid names).
        ValueError: ``episodes < 1`` or a family without scripted agents.
    """
    if int(episodes) < 1:
        raise ValueError(f"episodes must be positive, got {episodes!r}")
    env_names = jaxcollab.resolve(env)
    family = env_names[0].split("/")[0]
    try:
        module = importlib.import_module(f"jaxcollab.agents.{family}")
    except ModuleNotFoundError:
        raise ValueError(f"environment family {family!r} has no scripted agents") from None
    results = module.evaluate(env_names, agent, int(episodes), int(seed))
    results = {"env": env, **results}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    return results


@hydra.main(version_base=None, config_path="../configs", config_name="rollout")
def main(cfg: DictConfig) -> None:
    results = run(cfg.env, cfg.agent, cfg.episodes, cfg.seed, cfg.out_dir)
    keys = ("success_rate", "episodes", "episodes_per_second")
    print({k: results[k] for k in keys if k in results}, f"-> {cfg.out_dir}/results.json")


if __name__ == "__main__":
    main()
