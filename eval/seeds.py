"""Summarise a seed sweep of ``train/collab.py``: ``python eval/seeds.py 'runs=[D0,D1,...]'
out_dir=DIR``.

Writes ``results.json`` (``seeds``, ``runs``, ``protocols.<name>.<metric>.{per_seed, mean, std,
min, max}`` by round; see :func:`jaxcollab.io.seeds.summarise`) and ``seeds.png`` (per-seed
curves and the mean ± std band of the test MSE vs p*).
"""

from __future__ import annotations

from omegaconf import DictConfig

from jaxcollab.core.errors import ConfigValueError
from jaxcollab.io.plots import seeds_plot
from jaxcollab.io.run import hydra_main, start_run
from jaxcollab.io.seeds import summarise


def run(cfg: DictConfig) -> dict:
    """Check, summarise and write ``results.json`` and ``seeds.png``; returns the results.

    Raises:
        ConfigValueError: ``runs`` that cannot be summarised (a missing or unreadable
            ``results.json``, fewer than two runs, configs differing beyond the seed), before
            ``out_dir`` gets a file.
    """
    summary: dict = {}

    def check(plain: DictConfig) -> None:  # reading the runs is the whole job: do it first
        try:
            summary.update(summarise(list(plain.runs)))
        except (OSError, KeyError, ValueError) as e:  # JSONDecodeError is a ValueError
            detail = f"missing key {e}" if isinstance(e, KeyError) else str(e)
            raise ConfigValueError("runs", list(plain.runs), "two or more finished "
                                   f"train/collab.py run directories of one sweep: {detail}") \
                from None

    job = start_run(cfg, check=check)
    job.results.update(summary)
    seeds_plot(job.results.data, job.out / "seeds.png")
    print(f"{len(job.cfg.runs)} seeds -> {job.results.path}")
    return job.results.data


main = hydra_main(run, "../configs", "seeds")


if __name__ == "__main__":
    main()
