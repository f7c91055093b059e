"""Seed sweeps: per-seed learning curves of ``train/collab.py`` runs and their mean ± spread,
and any per-seed result's mean with a Student-t interval (:func:`over_seeds`).

Seeds run either as separate jobs (a Hydra multirun, one process or cluster job per seed), whose
``results.json`` files this module reads and summarises, or together in one job
(``train/collab.py seeds=[0,1,2,3]``, vmapped), whose results hold the same summary. The plot
is :func:`jaxcollab.io.plots.seeds_plot`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from scipy import stats

#: The two-sided confidence of :func:`over_seeds`' interval (issue 37: a 90 % interval).
LEVEL = 0.9

CURVES = ("test_mse_vs_pstar", "test_accuracy", "test_ce")


def _read(run: Path) -> dict:
    path = Path(run) / "results.json"
    if not path.exists():
        raise FileNotFoundError(f"no results.json in {run}")
    return json.loads(path.read_text())


def spread(per_seed) -> dict:
    """``{"per_seed", "mean", "std" (ddof 0), "min", "max"}`` of one metric's curves
    ``per_seed [seeds][rounds]`` (statistics by round, as lists)."""
    values = np.asarray(per_seed, np.float64)
    return {"per_seed": values.tolist(), "mean": values.mean(0).tolist(),
            "std": values.std(0).tolist(), "min": values.min(0).tolist(),
            "max": values.max(0).tolist()}


def over_seeds(per_seed, level: float = LEVEL) -> dict:
    """Each seed's value and their mean with a two-sided Student-t confidence interval: the
    seeds as independent draws of a training run's outcome, ``mean ± t_{(1+level)/2, n-1} ·
    s / sqrt(n)`` (``s`` the sample standard deviation, ddof 1).

    Args:
        per_seed: float ``[seeds]``, one value per independently trained seed (e.g. held-out
            success rates).
        level: the interval's confidence, in (0, 1).

    Returns:
        ``{"per_seed": [...], "seeds": n, "mean", "low", "high", "level"}``; ``low`` and
        ``high`` are ``None`` for one seed (no spread to estimate). Not clipped to a metric's
        range.

    Raises:
        ValueError: no values, a non-finite value, or ``level`` outside (0, 1).
    """
    values = np.asarray(per_seed, np.float64).reshape(-1)
    if values.size == 0 or not np.isfinite(values).all():
        raise ValueError(f"over_seeds needs one finite value per seed, got {values.tolist()}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level={level!r}: expected a confidence in (0, 1), e.g. {LEVEL}")
    n, mean = values.size, float(values.mean())
    low = high = None
    if n > 1:
        half = stats.t.ppf((1 + level) / 2, n - 1) * values.std(ddof=1) / np.sqrt(n)
        low, high = mean - float(half), mean + float(half)
    return {"per_seed": values.tolist(), "seeds": n, "mean": mean, "low": low, "high": high,
            "level": level}


def summarise(runs: list[str | Path]) -> dict:
    """Per-seed curves and their mean, standard deviation (ddof 0), min and max by round.

    Args:
        runs: run directories of ``train/collab.py`` whose configs differ only in ``seed`` and
            ``out_dir``, each with the same finished rounds.

    Returns:
        ``{"seeds": [...], "runs": [...], "protocols": {name: {"rounds": [...], metric:
        {"per_seed": [[per round] per seed], "mean", "std", "min", "max": [per round]}}}}`` for
        each metric in :data:`CURVES`.

    Raises:
        ValueError: fewer than two runs, a repeated seed, configs that differ in more than the
            seed, or runs with different protocols or rounds.
    """
    data = [_read(r) for r in runs]
    if len(data) < 2:
        raise ValueError(f"a seed summary needs at least two runs, got {len(data)}")
    seeds = [d["config"]["seed"] for d in data]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"runs repeat a seed: {seeds}")
    base = {k: v for k, v in data[0]["config"].items() if k not in ("seed", "out_dir")}
    for run, d in zip(runs, data, strict=True):
        other = {k: v for k, v in d["config"].items() if k not in ("seed", "out_dir")}
        if other != base:
            keys = sorted(k for k in base.keys() | other.keys() if base.get(k) != other.get(k))
            raise ValueError(f"{run} differs from {runs[0]} in {keys}, not only in seed")
    protocols = {}
    for name, first in data[0]["protocols"].items():
        entries = [d["protocols"].get(name, {}) for d in data]
        if any(e.get("rounds") != first["rounds"] for e in entries):
            raise ValueError(f"runs have different finished rounds for protocol {name!r}")
        protocols[name] = {"rounds": first["rounds"]}
        for metric in CURVES:
            protocols[name][metric] = spread([e[metric] for e in entries])
    return {"seeds": seeds, "runs": [str(r) for r in runs], "protocols": protocols}
