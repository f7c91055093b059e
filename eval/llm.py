"""Evaluate an LLM team on an environment or group through any OpenAI-compatible endpoint.

``python eval/llm.py env=<bomb/…|ktane/…|maze/split-6x6> llm.base_url=URL llm.model=NAME
episodes=N out_dir=DIR`` (+ ``bomb.hint``, ``bomb.turn_order``, ``bomb.solo``, ``ktane.mode``,
``ktane.ruleset=vanilla|random`` with ``ktane.ruleset_seed`` (the bomb and the Expert's manual
follow that ruleset), ``maze.setting``, ``llm.tools=native``; every option in
``configs/llm.yaml``).

Writes ``out_dir/<env>.jsonl`` (one transcript record per episode, appended as chunks finish; a
rerun skips finished episodes) and ``out_dir/results.json`` with keys ``env``, ``model``,
``base_url``, ``episodes``, ``success_rate``, ``endings`` (bomb, maze) or ``outcomes``
(ktane) as counts, ``variants.<variant>`` (bomb: ``episodes``, ``success_rate``,
``endings``), ``parse_errors`` (GPTNT error class → count), ``refusals`` (content-policy
refusals), ``tokens`` (per agent ``prompt``/``completion``, and ``total``), ``latency_s``
(per agent, summed seconds of inference) and, for mazes, ``maze`` (``success``: mean and 90 %
bootstrap interval pooled across mazes; ``calibration_loss_by_round``).
"""

from __future__ import annotations

import logging

import hydra
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

import jaxcollab
from jaxcollab.llm.client import LLMConfig
from jaxcollab.llm.run import FAMILY_TEMPERATURE, RunConfig, evaluate


def configs(cfg: DictConfig) -> tuple[LLMConfig, RunConfig]:
    """The client and run settings from the Hydra config (family default temperature)."""
    llm = OmegaConf.to_container(cfg.llm, resolve=True)
    family = cfg.env.split("/")[0]
    if llm["temperature"] is None:
        llm["temperature"] = FAMILY_TEMPERATURE.get(family, 0.6)
    for key in ("tools", "cache"):
        llm.pop(key)
    rc = RunConfig(
        env=cfg.env, episodes=cfg.episodes, seed=cfg.seed, batch=cfg.batch, tools=cfg.llm.tools,
        hint=cfg.bomb.hint, turn_order=tuple(cfg.bomb.turn_order), solo=cfg.bomb.solo,
        mode=cfg.ktane.mode, reflection=cfg.ktane.reflection,
        ruleset=cfg.ktane.ruleset, ruleset_seed=cfg.ktane.ruleset_seed, setting=cfg.maze.setting,
        rounds=cfg.maze.rounds, samples=cfg.maze.samples, mazes=cfg.maze.mazes,
        rollouts=cfg.maze.rollouts, maze_seed=cfg.maze.maze_seed,
        calibration_dir=cfg.maze.calibration_dir)
    return LLMConfig(**llm), rc


@hydra.main(version_base=None, config_path="../configs", config_name="llm")
def main(cfg: DictConfig) -> None:
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request otherwise
    llm, rc = configs(cfg)
    names = jaxcollab.resolve(rc.env)
    per_env = rc.episodes if rc.episodes is not None else (
        rc.mazes * rc.rollouts if rc.env.startswith("maze") else 9)
    with tqdm(total=per_env * len(names), desc="episodes", unit="ep") as bar:
        results = evaluate(llm, rc, cfg.out_dir, cfg.llm.cache, progress=bar)
    keys = ("success_rate", "episodes", "refusals", "parse_errors")
    print({k: results[k] for k in keys}, f"-> {cfg.out_dir}/results.json")


if __name__ == "__main__":
    main()
