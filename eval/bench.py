"""Benchmarks: ``python eval/bench.py [only=[parity,bomb]] [quick=true] [out=bench.json]``.

Every module in ``eval/benchmarks/`` exposes ``run(quick: bool) -> list[dict]``; each row has
at least ``name``, ``value`` and ``unit`` and may add more fields (ratios are measured in the
same run). Rows are printed as a table and written to ``bench.json`` as they complete, so a
crash loses nothing already measured.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import platform
import sys
from pathlib import Path

import hydra
import jax
from omegaconf import DictConfig
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eval import benchmarks  # noqa: E402


def available() -> list[str]:
    """Names of the benchmark modules in ``eval/benchmarks/`` (``_``-prefixed ones are helpers)."""
    return sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name[0] != "_")


def run(only: list[str] | None, quick: bool, out: str | Path) -> list[dict]:
    """Run the selected benchmark modules and write ``out``; returns all rows.

    Raises:
        ValueError: an unknown module name in ``only`` (lists the valid ones).
    """
    names = available()
    selected = names if only is None else list(only)
    unknown = sorted(set(selected) - set(names))
    if unknown:
        raise ValueError(f"unknown benchmark(s) {unknown}; available: {names}")
    report = {
        "machine": {
            "platform": platform.platform(),
            "jax": jax.__version__,
            "backend": jax.default_backend(),
            "devices": [str(d) for d in jax.devices()],
        },
        "quick": bool(quick),
        "rows": [],
    }
    for name in selected:
        rows = importlib.import_module(f"eval.benchmarks.{name}").run(quick=quick)
        report["rows"].extend({"benchmark": name, **row} for row in rows)
        Path(out).write_text(json.dumps(report, indent=2) + "\n")
    return report["rows"]


def print_table(rows: list[dict]) -> None:
    table = Table(title="jaxcollab benchmarks")
    for col in ("benchmark", "name", "value", "unit", "notes"):
        table.add_column(col)
    for row in rows:
        value = row["value"]
        shown = f"{value:,.4g}" if isinstance(value, float) else f"{value:,}"
        table.add_row(row["benchmark"], row["name"], shown, row["unit"], row.get("notes", ""))
    Console().print(table)


@hydra.main(version_base=None, config_path="../configs", config_name="bench")
def main(cfg: DictConfig) -> None:
    rows = run(cfg.only, cfg.quick, cfg.out)
    print_table(rows)
    print(f"wrote {cfg.out}")


if __name__ == "__main__":
    main()
