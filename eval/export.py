"""Export environment instances as JSON Lines: ``python eval/export.py env=NAME n=N out=FILE``.

``env`` may be a group (``bomb/all``): ``n`` instances of each member, in group order.

Each family provides ``export_instances(env_name, n, seed) -> list[dict]`` (in
``jaxcollab.envs.<family>``, or ``jaxcollab.agents.<family>`` when it replays an agent); every
record starts with ``env``, ``seed``, ``index`` and ``text`` (:mod:`jaxcollab.core.export`) and
its docstring documents the rest. One JSON object is written per line, in instance order.
The config is checked first (:mod:`jaxcollab.io.run`), and an existing ``out`` is replaced only
by the same export (its first record has the same ``env`` and ``seed``).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
from pathlib import Path

import hydra
from omegaconf import DictConfig

from jaxcollab.io.results import check_finite
from jaxcollab.io.run import RunCollision, check_output, env_selection, validate
from jaxcollab.io.schema import ConfigValueError


def _exporter(family: str) -> str | None:
    """The module holding ``family``'s exporter: the env package, or the agents package for
    exporters that replay an agent (the Keep-Talking oracle's moves); ``None`` if neither."""
    for name in (f"jaxcollab.envs.{family}", f"jaxcollab.agents.{family}"):
        if importlib.util.find_spec(name) and hasattr(importlib.import_module(name),
                                                      "export_instances"):
            return name
    return None


def check_config(cfg: DictConfig) -> None:
    """Cross-key checks beyond the schema (:class:`jaxcollab.io.schema.Export`).

    Raises:
        ConfigValueError: unknown env or group, or a family without an exporter.
    """
    for name in env_selection("env", cfg.env):
        if _exporter(name.split("/")[0]) is None:
            raise ConfigValueError("env", cfg.env, "environments whose family has an instance "
                                   f"exporter ({name} has none)")


def guard_export(out: Path, env: str, seed: int) -> None:
    """Refuse to replace a file that is not this export (first record's ``env`` and ``seed``).

    Raises:
        RunCollision: ``out`` exists and holds anything else.
    """
    if not out.exists():
        return
    with out.open() as f:
        try:
            first = json.loads(f.readline())
        except json.JSONDecodeError:
            first = None
    if not (isinstance(first, dict) and first.get("env") == env and first.get("seed") == seed):
        raise RunCollision(f"{out} exists and is not an export of env={env} seed={seed}; "
                           "choose a new out")


def export(env: str, n: int, seed: int, out: str | Path, ruleset: str = "vanilla",
           ruleset_seed: int = 0) -> Path:
    """Write ``n`` instances of each environment ``env`` names to ``out`` (JSONL); the path.
    ``ruleset`` / ``ruleset_seed`` pick the Keep-Talking rule tables (families with rulesets).

    Raises:
        ConfigValueError: unknown env or group, a family without an exporter, or
            ``ruleset=random`` for a family without rulesets.
        RunCollision: ``out`` holds something other than this export.
    """
    names = env_selection("env", env)
    out = check_output(out, "out", is_dir=False)
    guard_export(out, names[0], seed)
    records = []
    for name in names:
        module = importlib.import_module(_exporter(name.split("/")[0]))
        rules = {}
        if hasattr(module, "RULESETS"):
            rules = {"ruleset": str(ruleset), "ruleset_seed": ruleset_seed}
        elif ruleset != "vanilla":
            raise ConfigValueError("ruleset", str(ruleset), f"vanilla: {name} has no randomised "
                                   "rulesets (ktane has)")
        records += module.export_instances(name, n, seed, **rules)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with tmp.open("w") as f:
        for record in records:
            check_finite(record, f"{record['env']}[{record['index']}]")
            f.write(json.dumps(record, allow_nan=False) + "\n")
    os.replace(tmp, out)
    return out


def run(cfg: DictConfig) -> Path:
    """Check the config and ``out``, export, and return the path written."""
    cfg = validate(cfg)
    check_config(cfg)
    path = export(cfg.env, cfg.n, cfg.seed, cfg.out, cfg.ruleset, cfg.ruleset_seed)
    print(f"wrote {cfg.n} instances of each of {cfg.env} to {path}")
    return path


main = hydra.main(version_base=None, config_path="../configs", config_name="export")(run)


if __name__ == "__main__":
    main()
