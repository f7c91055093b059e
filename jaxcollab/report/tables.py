"""Success-rate rows of a run, by family, variant and module, whatever wrote it.

Rollout and LLM runs name bomb variants differently (``bomb/base-1`` / ``base-1``); rows here
always use the full environment name, so runs of different teams line up in one comparison.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from jaxcollab.report.stats import successes

Row = tuple[str, float, int]  # (name, success rate, episodes)


def _rows(table: Mapping, family: str) -> list[Row]:
    out = []
    for name, entry in table.items():
        if isinstance(entry, Mapping) and "success_rate" in entry:
            full = name if "/" in name or not family else f"{family}/{name}"
            out.append((full, float(entry["success_rate"]), int(entry.get("episodes", 0))))
    return out


def variant_rows(results: Mapping) -> list[Row]:
    """One row per variant (``variants``) or module (``per_module``), in stored order."""
    family = str(results.get("env", "")).split("/")[0]
    table = results.get("variants") or results.get("per_module") or {}
    return _rows(table, family) if isinstance(table, Mapping) else []


def family_of(env_name: str) -> str:
    """``bomb/flashing-3`` -> ``flashing``; a name without a level suffix is its own family."""
    short = env_name.split("/", 1)[-1]
    return re.sub(r"-\d+$", "", short)


def family_rows(results: Mapping) -> list[Row]:
    """One row per family: the bank summary's ``families`` when present, else pooled from the
    variant rows (success counts summed, so the rate is over all the family's episodes)."""
    bank = results.get("summary", {}).get("families") if isinstance(
        results.get("summary"), Mapping) else None
    if isinstance(bank, Mapping):
        return _rows(bank, "")
    pooled: dict[str, list[int]] = {}
    for name, rate, n in variant_rows(results):
        acc = pooled.setdefault(family_of(name), [0, 0])
        acc[0] += successes(rate, n)
        acc[1] += n
    return [(f, k / n, n) for f, (k, n) in pooled.items() if n]


def overall_row(results: Mapping) -> Row | None:
    if "success_rate" not in results:
        return None
    return ("all", float(results["success_rate"]), int(results.get("episodes", 0)))
