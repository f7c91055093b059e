"""The cross-play gap of learned teams:
``python eval/crossplay.py env=ktane/wires checkpoint=DIR out_dir=OUT``.

``checkpoint`` is a ``train/marl.py`` out_dir trained with ``ppo.seeds=N`` (N >= 2) on
``env``; every assignment of roles to seeds is played on the run's held-out episodes
(``episodes`` of them, default the run's ``eval_episodes``): for the bomb, Deaf from seed
``i`` with Mute and Blind from seeds ``j`` and ``k`` (N³ teams); for Keep Talking, Defuser
``i`` with Expert ``j`` (N²). See :func:`jaxcollab.marl.crossplay.crossplay` for what
``OUT/results.json`` holds (``self_play``, ``cross_play``, ``gap``, ``matrix``: GPTNT Table 6's
layout); ``OUT/crossplay.png`` is the success matrix as a heatmap.
"""

from __future__ import annotations

import json
from pathlib import Path

from omegaconf import DictConfig

from jaxcollab.core.errors import ConfigValueError
from jaxcollab.io.plots import heatmap_panels
from jaxcollab.io.run import hydra_main, start_run


def run(cfg: DictConfig) -> dict:
    """Check, play every assignment, write ``results.json`` and ``crossplay.png``.

    Raises:
        ConfigValueError: ``checkpoint`` is not a finished run of ``env`` with two or more
            seeds (before ``out_dir`` gets a file).
    """
    from jaxcollab.marl.crossplay import crossplay

    result: dict = {}

    def check(plain: DictConfig) -> None:  # playing is the whole job: do it first
        try:
            trained = json.loads((Path(plain.checkpoint) / "results.json").read_text())
            if trained["config"]["env"] != plain.env:
                raise ConfigValueError("env", plain.env, f"the env {plain.checkpoint} was "
                                       f"trained on ({trained['config']['env']})")
            result.update(crossplay(plain.checkpoint, plain.episodes))
        except (OSError, KeyError, ValueError) as e:  # JSONDecodeError is a ValueError
            if isinstance(e, ConfigValueError):
                raise
            raise ConfigValueError("checkpoint", plain.checkpoint, "a finished train/marl.py "
                                   f"out_dir with ppo.seeds >= 2 ({e})") from None

    job = start_run(cfg, check=check)
    job.results.update(result)
    roles, m = result["roles"], result["matrix"]
    heatmap_panels(job.out / "crossplay.png", [{
        "values": m["values"], "rows": m["rows"], "cols": m["cols"], "ylabel": f"{roles[0]} seed",
        "xlabel": "/".join(roles[1:]) + " seed", "title": f"{result['env']}: gap "
        f"{result['gap']:.1f} points (self {result['self_play']:.3f}, cross "
        f"{result['cross_play']:.3f})"}])
    print(f"self-play {result['self_play']:.3f}, cross-play {result['cross_play']:.3f}, "
          f"gap {result['gap']:.1f} points; wrote {job.results.path}")
    job.finish()
    return job.results.data


main = hydra_main(run, "../configs", "crossplay")


if __name__ == "__main__":
    main()
