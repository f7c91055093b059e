"""Benchmarks: ``python -m eval.bench [only=[parity,bomb]] [quick=true] [out=bench.json]``.

Every module in ``eval/benchmarks/`` exposes ``run(quick: bool) -> list[dict]``; each row has
at least ``name``, ``value`` and ``unit`` and may add more fields (ratios are measured in the
same run). Rows are printed as a table and written to ``bench.json`` as they complete, so a
crash loses nothing already measured. Run it as a module from the repository root (the
benchmarks are the ``eval.benchmarks`` package).
"""

from __future__ import annotations

import importlib
import pkgutil
import platform

import jax
from omegaconf import DictConfig
from rich.console import Console
from rich.table import Table

from eval import benchmarks
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.io.results import ResultsFile
from jaxcollab.io.run import hydra_main, start_run


def available() -> list[str]:
    """Names of the benchmark modules in ``eval/benchmarks/`` (``_``-prefixed ones are helpers)."""
    return sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name[0] != "_")


def check_config(cfg: DictConfig) -> None:
    """Cross-key checks beyond the schema (:class:`jaxcollab.io.schema.Bench`).

    Raises:
        ConfigValueError: an unknown module name in ``only`` (lists the valid ones), or an empty
            ``only`` (which would run every benchmark).
    """
    names = available()
    if cfg.only is not None and not cfg.only:
        raise ConfigValueError("only", [], f"null (every benchmark) or names from {names}")
    unknown = sorted(set(cfg.only or ()) - set(names))
    if unknown:
        raise ConfigValueError("only", unknown, f"benchmark names from {names}")


def measure(only: list[str] | None, quick: bool, results: ResultsFile) -> list[dict]:
    """Run the selected benchmark modules, saving ``machine`` and the ``rows`` so far into
    ``results`` after each module; returns all rows."""
    results.set(("machine",), {
        "platform": platform.platform(),
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()],
    })
    rows: list[dict] = []
    for name in only or available():
        found = importlib.import_module(f"eval.benchmarks.{name}").run(quick=quick)
        rows.extend({"benchmark": name, **row} for row in found)
        results.set(("rows",), rows)
    return rows


def print_table(rows: list[dict]) -> None:
    table = Table(title="jaxcollab benchmarks")
    for col in ("benchmark", "name", "value", "unit", "notes"):
        table.add_column(col)
    for row in rows:
        value = row["value"]
        shown = f"{value:,.4g}" if isinstance(value, float) else f"{value:,}"
        table.add_row(row["benchmark"], row["name"], shown, row["unit"], row.get("notes", ""))
    Console().print(table)


def run(cfg: DictConfig) -> list[dict]:
    """Check the config and output file, run the benchmarks, print and save the table."""
    job = start_run(cfg, check=check_config, out_key="out", results_name=None)
    rows = measure(job.cfg.only, job.cfg.quick, job.results)
    print_table(rows)
    print(f"wrote {job.results.path}")
    return rows


main = hydra_main(run, "../configs", "bench")


if __name__ == "__main__":
    main()
