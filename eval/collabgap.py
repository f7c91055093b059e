"""The collaboration-gap paper's LLM experiments, one command each (Narrowing the Collaboration
Gap, Probably, §6, R3-R7, Figs. 7-11)::

    python eval/collabgap.py experiment=r3 llm.base_url=URL llm.model=NAME out_dir=DIR

``experiment=`` picks a file of ``configs/collabgap/experiment/``:

* ``r3``: action, verbalized, verbalized on held-out mazes (``calibration_seed``), then
  verbalized_calibrated with the conversation calibrators fitted on those (Fig. 7a, 7b);
* ``r4``: verbalized, the calibrated runs and the in-context naive rare-action correction
  ``verbalized_naive`` (Fig. 8);
* ``r5``: verbalized, calibrated and sampled (M = ``samples`` responses a round; Fig. 9);
* ``r6``: verbalized and sampled with the confidence histograms (Fig. 10);
* ``r7``: full responses (with the reasoning text a server returns apart) against action and
  verbalized (Fig. 11); ``tell_partner=true`` also asks the full steps' agents for a message to
  their partner (R7's prompt change for models whose reasoning the API hides);
* ``solo``: one agent with the whole maze (the full-maze reference of Fig. 7).

Each step is one run of the one driver (:func:`jaxcollab.agents.driver.run`,
``agent=llm``) into ``DIR/<step>/`` with its own ``results.json``, request cache and
transcripts, so every step is resumable and guarded like any rollout: rerunning the command
skips finished chunks and replays cached replies; a rerun with another model, endpoint or
option is refused, naming the key (the pacing keys ``llm.concurrency``, ``llm.timeout_s``,
``llm.max_retries``, ``llm.backoff_s`` may change). Test steps play ``mazes`` mazes of ``seed``
``rollouts`` times each, held-out steps ``calibration_mazes`` mazes of ``calibration_seed``;
``advance=path`` (the default) walks every maze's whole path so that every round's maze
success is measured (:mod:`jaxcollab.agents.maze.llm`).

Writes ``DIR/results.json``: ``config``, ``run``, ``experiment``, ``model``, ``steps.<name>``
(``setting``, ``dir``, ``held_out``, ``success_rate``, ``tokens``; a calibrated step's
``calibration.<env>``: ``fitted``, ``records``, ``vectors`` and ``steps`` read from its
held-out run: a model that never wrote a vector leaves nothing to fit, and the step passes
its vectors on raw), ``protocols.<name>`` (each
plotted step's results by round, :func:`jaxcollab.agents.maze.llm_results.by_round`: ``rounds``,
``maze_success``, ``maze_success_interval``, ``step_accuracy``, ``calibration_loss``,
``calibration_loss_interval``, ``confidence``), and the plots of ``plots``:
``DIR/collabgap.png`` (maze success / move accuracy / calibration loss by round) and
``DIR/confidence.png`` (histograms).
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

import jaxcollab
from jaxcollab.agents.driver import PACING
from jaxcollab.agents.driver import run as rollout
from jaxcollab.io.run import hydra_main, start_run
from jaxcollab.io.schema import Rollout


def step_config(cfg: DictConfig, step: DictConfig, out: Path) -> DictConfig:
    """The ``eval/rollout.py`` config of one step (schema :class:`~jaxcollab.io.schema.Rollout`,
    every key not set here at its default)."""
    held = step.held_out
    maze = {"setting": step.setting, "rounds": cfg.rounds, "samples": cfg.samples,
            "calibration_dir": None if step.calibration is None else str(out / step.calibration),
            "advance": cfg.advance, "rollouts": cfg.rollouts,
            "tell_partner": cfg.tell_partner and step.setting == "full"}
    return OmegaConf.merge(OmegaConf.structured(Rollout), {
        "env": cfg.env, "agent": "llm", "episodes": cfg.calibration_mazes if held else cfg.mazes,
        "seed": cfg.calibration_seed if held else cfg.seed, "chunk": cfg.chunk,
        "llm": cfg.llm, "maze": maze, "out_dir": str(out / step.name)})


def run(cfg: DictConfig) -> dict:
    """Check, play every step through the rollout driver (resuming finished ones), write the
    combined ``results.json`` and the plots; returns the results."""
    job = start_run(cfg, free=PACING)
    cfg, out = job.cfg, job.out
    for step in cfg.steps:
        print(f"[{cfg.experiment}] {step.name}: maze.setting={step.setting}"
              + (" (held-out mazes)" if step.held_out else ""))
        res = rollout(step_config(cfg, step, out))
        job.results.set(("steps", step.name), {
            "setting": step.setting, "dir": str(out / step.name), "held_out": step.held_out,
            "success_rate": res["success_rate"], "tokens": res["tokens"]["total"],
            **({"calibration": res["calibration"]} if "calibration" in res else {})})
        if not step.held_out:
            job.results.set(("protocols", step.name), res["protocols"][step.setting])
    job.results.update({"experiment": cfg.experiment, "model": cfg.llm.model})
    jaxcollab.family(cfg.env).llm.plots(job.results.data, out, cfg.plots)
    print({n: p["maze_success"] for n, p in job.results.data["protocols"].items()},
          f"-> {job.results.path}")
    return job.results.data


main = hydra_main(run, "../configs/collabgap", "collabgap")


if __name__ == "__main__":
    main()
