"""Export environment instances as JSON Lines: ``python eval/export.py env=NAME n=N out=FILE``.

``env`` may be a group (``bomb/all``): ``n`` instances of each member, in group order.

Each family's plug-in (:func:`jaxcollab.family`) has an exporter ``export(env_name, n, seed,
options) -> list[dict]``: instance ``i`` is episode ``i`` of a rollout with the same seed, as
every team plays it (:mod:`jaxcollab.core.family`); every record starts with ``env``, ``seed``,
``index`` and ``text`` (:mod:`jaxcollab.core.export`) and the exporter's docstring documents the
rest. One JSON object is written per line, in instance order. The config is checked first
(:mod:`jaxcollab.io.run`), and an existing ``out`` is replaced only by the same export (its
first record has the same ``env`` and ``seed``).
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

import jaxcollab
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.io.results import check_finite
from jaxcollab.io.run import RunCollision, check_output, env_selection, hydra_main, validate
from jaxcollab.io.schema import Export, ExportKeys


def exporter(name: str):
    """The family plug-in of environment ``name``, checked to have an exporter.

    Raises:
        ConfigValueError: no family plug-in, or one without an exporter.
    """
    try:
        family = jaxcollab.family(name)
    except KeyError as e:
        raise ConfigValueError("env", name, f"an environment of a registered family: {e.args[0]}")\
            from None
    if family.export is None:
        raise ConfigValueError("env", name, "environments whose family has an instance "
                               f"exporter ({name} has none)")
    return family


def check_config(cfg: DictConfig) -> None:
    """Cross-key checks beyond the schema (:class:`jaxcollab.io.schema.Export`).

    Raises:
        ConfigValueError: unknown env or group, or a family without an exporter.
    """
    for name in env_selection("env", cfg.env):
        exporter(name)


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


def export(env: str, n: int, seed: int, out: str | Path, **options: Any) -> Path:
    """Write ``n`` instances of each environment ``env`` names to ``out`` (JSONL); the path.
    ``options``: the exporters' keys (each family's ``export_config``, e.g. Keep Talking's
    ``ruleset`` / ``ruleset_seed`` rule tables), those not given at their defaults.

    Raises:
        ConfigValueError: unknown env or group, a family without an exporter, or a non-default
            key its family does not read (``ruleset=random`` for a family without rulesets).
        RunCollision: ``out`` holds something other than this export.
    """
    names = env_selection("env", env)
    out = check_output(out, "out", is_dir=False)
    guard_export(out, names[0], seed)
    defaults = OmegaConf.to_container(OmegaConf.structured(Export), enum_to_str=True)
    common = {f.name for f in dataclasses.fields(ExportKeys)}
    options = {k: v for k, v in defaults.items() if k not in common} | options
    records = []
    for name in names:
        family = exporter(name)
        own = () if family.export_config is None else {
            f.name for f in dataclasses.fields(family.export_config)}
        for key in sorted(set(options) - set(own)):
            if options[key] != defaults[key]:
                raise ConfigValueError(key, options[key], f"{defaults[key]!r}: {name} does "
                                       f"not read {key!r}")
        records += family.export(name, n, seed, options)
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
    common = {f.name for f in dataclasses.fields(ExportKeys)}
    path = export(cfg.env, cfg.n, cfg.seed, cfg.out,
                  **{k: v for k, v in cfg.items() if k not in common})
    print(f"wrote {cfg.n} instances of each of {cfg.env} to {path}")
    return path


main = hydra_main(run, "../configs", "export")


if __name__ == "__main__":
    main()
