"""Export environment instances as JSON Lines: ``python eval/export.py env=NAME n=N out=FILE``.

Each family provides ``export_instances(env_name, n, seed) -> list[dict]`` (in
``jaxcollab.envs.<family>``, or ``jaxcollab.agents.<family>`` when it replays an agent); every
record starts with ``env``, ``seed``, ``index`` and ``text`` (:mod:`jaxcollab.core.export`) and
its docstring documents the rest. One JSON object is written per line, in instance order.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from pathlib import Path

import hydra
from omegaconf import DictConfig

import jaxcollab


def _exporter(family: str) -> str | None:
    """The module holding ``family``'s exporter: the env package, or the agents package for
    exporters that replay an agent (the Keep-Talking oracle's moves); ``None`` if neither."""
    for name in (f"jaxcollab.envs.{family}", f"jaxcollab.agents.{family}"):
        if importlib.util.find_spec(name) and hasattr(importlib.import_module(name),
                                                      "export_instances"):
            return name
    return None


def export(env_name: str, n: int, seed: int, out: str | Path) -> Path:
    """Write ``n`` instances of ``env_name`` to ``out`` (JSONL) and return the path.

    Raises:
        KeyError: unknown environment (lists valid names).
        ValueError: ``n < 1`` or a family without an exporter.
    """
    if int(n) < 1:
        raise ValueError(f"n must be a positive number of instances, got {n!r}")
    jaxcollab.make(env_name)  # validates the name with a helpful error
    family = env_name.split("/")[0]
    module = _exporter(family)
    if module is None:
        raise ValueError(f"environment family {family!r} has no instance exporter")
    records = importlib.import_module(module).export_instances(env_name, int(n), int(seed))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")
    return out


@hydra.main(version_base=None, config_path="../configs", config_name="export")
def main(cfg: DictConfig) -> None:
    path = export(cfg.env, cfg.n, cfg.seed, cfg.out)
    print(f"wrote {cfg.n} instances of {cfg.env} to {path}")


if __name__ == "__main__":
    main()
