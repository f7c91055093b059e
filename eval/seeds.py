"""Summarise a seed sweep of ``train/collab.py``: ``python eval/seeds.py 'runs=[D0,D1,...]'
out_dir=DIR``.

Writes ``results.json`` (``seeds``, ``runs``, ``protocols.<name>.<metric>.{per_seed, mean, std,
min, max}`` by round; see :func:`jaxcollab.io.seeds.summarise`) and ``seeds.png`` (per-seed
curves and the mean ± std band of the test MSE vs p*).
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from jaxcollab.io.plots import seeds_plot
from jaxcollab.io.run import start_run
from jaxcollab.io.seeds import summarise


def run(cfg: DictConfig) -> dict:
    """Check, summarise and write ``results.json`` and ``seeds.png``; returns the results."""
    job = start_run(cfg)
    job.results.update(summarise(list(job.cfg.runs)))
    seeds_plot(job.results.data, job.out / "seeds.png")
    print(f"{len(job.cfg.runs)} seeds -> {job.results.path}")
    return job.results.data


main = hydra.main(version_base=None, config_path="../configs", config_name="seeds")(run)


if __name__ == "__main__":
    main()
