"""A paper's tables from finished runs: ``python eval/tables.py paper=sanzaru 'runs=[A,B,C]'``.

Each family states the tables of the papers it reproduces (its wing's ``paper.py``, the plug-in's
``tables``); this command builds those of ``paper`` from the runs' ``results.json`` and writes,
into ``out_dir`` (default ``<first run>/tables-<paper>``), ``<table>.md`` and ``<table>.csv``
for each table, ``<paper>.md`` with all of them and ``<paper>.html``, one report page
(:mod:`jaxcollab.report.assemble`). A cell no run can fill says which run is missing.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

import jaxcollab
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.core.registry import family_names
from jaxcollab.io.run import hydra_main, validate
from jaxcollab.report import RunDir
from jaxcollab.report.assemble import write


def paper_tables(paper: str) -> list:
    """Every family's tables of ``paper``, in family order.

    Raises:
        ConfigValueError: no family has tables of ``paper`` (lists the papers there are).
    """
    found, papers = [], set()
    for name in family_names():
        family = jaxcollab.family(name)
        mine = family.tables() if family.tables else {}
        papers |= set(mine)
        found += list(mine.get(paper, ()))
    if not found:
        raise ConfigValueError("paper", paper, f"one of {sorted(papers)}")
    return found


def run(cfg: DictConfig) -> dict:
    """Check the config and the runs, write the tables; returns them built, by table key.

    Raises:
        ConfigValueError: an unknown ``paper``, or a ``runs`` entry that is not a run directory
            (:class:`jaxcollab.report.NotARunError`, the path named).
    """
    cfg = validate(cfg)
    tables = paper_tables(cfg.paper)
    paths = OmegaConf.to_object(cfg.runs) if OmegaConf.is_config(cfg.runs) else [cfg.runs]
    runs = [RunDir.load(p) for p in paths]
    out = Path(cfg.out_dir) if cfg.out_dir else runs[0].path / f"tables-{cfg.paper}"
    built = write(cfg.paper, tables, runs, out)
    print(f"-> {out / (cfg.paper + '.md')}, {out / (cfg.paper + '.html')}")
    return built


main = hydra_main(run, "../configs", "tables")


if __name__ == "__main__":
    main()
