"""The entry points' one driver: validate the config, check the output path, refuse to write into
another run's results, then open the results file and the logger.

Every command-line entry point (``train/*.py``, ``eval/*.py``) calls :func:`start_run` first, so
a bad value, a bad output path or a colliding run fails before any work. A run's results file
records its resolved config under ``config``; a later run may write into the same place only with
the same values of the keys that define the run (training: the frozen keys, so a rerun resumes;
evaluations: every key but the output path), and is otherwise refused with the differing keys.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import itertools
import logging
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ValidationError

from jaxcollab.core.config import check_fields
from jaxcollab.core.errors import ConfigValueError, EndpointError
from jaxcollab.io import schema  # registers the entry points' schemas with Hydra
from jaxcollab.io.logging import RunLogger
from jaxcollab.io.results import ResultsFile
from jaxcollab.scale.distributed import initialize, is_main, run_info, same_on_every_process


def env_selection(key: str, selector: str) -> list[str]:
    """The environments an ``env=`` value names: one environment, or every member of a group.

    Raises:
        ConfigValueError: neither a registered name nor a group (the valid ones are listed).
    """
    import jaxcollab  # the registry loads families lazily; imported here, at the entry points

    try:
        return jaxcollab.resolve(selector)
    except KeyError as e:
        raise ConfigValueError(key, selector, f"an environment or group name: {e.args[0]}") \
            from None


class RunCollision(ValueError):
    """The output already holds the results of a run with a different config."""


#: The errors of a bad command line: their messages name the bad value and what was expected,
#: so an entry point prints the message alone (:func:`hydra_main`). Every validation step
#: (:func:`start_run`: the schema's bounds and checks, the entry point's ``check``, the family's
#: ``check``) raises these; any other exception is a bug, reported with its traceback.
USER_ERRORS = (ConfigValueError, RunCollision, EndpointError)

#: Loggers of the HTTP stack that log every request at INFO (``HTTP Request: POST ...``),
#: quieted to WARNING in every entry point (our progress output stays).
QUIET_LOGGERS = ("httpx", "httpcore", "openai")


def _check_keys(node: DictConfig, obj: Any, prefix: str = "") -> None:
    """Refuse keys the schema does not declare (``+key=value`` opens a closed config)."""
    names = [f.name for f in dataclasses.fields(obj)]
    extra = sorted(set(node.keys()) - set(names))
    if extra:
        key = f"{prefix}{extra[0]}"
        where = prefix[:-1] or "the config"
        raise ConfigValueError(key, OmegaConf.select(node, extra[0]),
                               f"a key of {where}, one of {names}")
    for name in names:
        value = getattr(obj, name)
        if dataclasses.is_dataclass(value):
            _check_keys(node[name], value, f"{prefix}{name}.")


def check_overrides(cfg: DictConfig) -> None:
    """Refuse a command-line block that Hydra drops: ``key={}`` merged into a null block leaves
    it null, so the run would ignore what was asked (``experiment=maze_messages separation={}``
    trained without a word). Reads the overrides of the running Hydra job; none outside one.

    Raises:
        ConfigValueError: naming the key.
    """
    from hydra.core.hydra_config import HydraConfig
    from hydra.core.override_parser.overrides_parser import OverridesParser

    if not HydraConfig.initialized():
        return
    for o in OverridesParser.create().parse_overrides(list(HydraConfig.get().overrides.task)):
        if o.is_delete() or not isinstance(o.value(), dict) or o.value():
            continue
        if OmegaConf.select(cfg, o.key_or_group) is None:
            raise ConfigValueError(o.key_or_group, {}, "null: this run has no "
                                   f"{o.key_or_group} block, and an empty block on the command "
                                   "line does not add one (the run would ignore it)")


def _sets_inside(o: Any) -> bool:
    """Whether an override sets keys inside a block (``bias.beta=3``, ``bias={beta: 3}``), not
    a group choice (``experiment=...``, spelled with ``/`` when nested) or a plain value."""
    key = o.key_or_group
    return not key.startswith("hydra.") and not o.is_delete() and (
        "." in key or (isinstance(o.value(), dict) and bool(o.value())))


def _into_blocks(overrides: Sequence[str]) -> tuple[list[Any], list[str]]:
    """Split command-line overrides into those that set keys inside a block (the parsed
    overrides, :func:`_sets_inside`) and the rest (their command-line text)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    inside, rest = [], []
    for o, line in zip(OverridesParser.create().parse_overrides(list(overrides)), overrides):
        if _sets_inside(o):
            inside.append(o)
        else:
            rest.append(line)
    return inside, rest


def _null_block_error(config_name: str, overrides: Sequence[str]) -> ConfigValueError | None:
    """The named error for an override that sets a key inside a block the composed config
    leaves null, or ``None`` when no override does. Lists, per group chosen on the command line
    or left null, the options whose config has the block (one compose each: an error path)."""
    from hydra import compose as hydra_compose
    from hydra.core.global_hydra import GlobalHydra

    inside, rest = _into_blocks(overrides)
    try:
        base = hydra_compose(config_name, overrides=rest, return_hydra_config=True)
    except Exception:  # noqa: BLE001 - the failure is not ours to name; Hydra reports it
        return None
    missing = object()
    for o in inside:
        parts = o.key_or_group.split(".")
        blocks = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
        block = next((b for b in blocks if OmegaConf.select(base, b, default=missing) is None),
                     None)
        if block is None:
            continue
        choices = base.hydra.runtime.choices
        named = {line.split("=", 1)[0] for line in rest}
        loader = GlobalHydra.instance().config_loader()
        chosen, valid = [], []
        for group, choice in choices.items():
            if group.startswith("hydra/") or (group not in named and choice is not None):
                continue
            others = [line for line in rest if line.split("=", 1)[0] != group]
            options = [opt for opt in loader.get_group_options(group) if opt != choice
                       and _has_block(hydra_compose, config_name, [*others, f"{group}={opt}"],
                                      block)]
            if options:
                chosen.append(f"{group}={choice if choice is not None else 'null'}")
                valid += [f"{group}={opt}" for opt in options]
        where = " ".join(chosen) or "this config"
        also = f"; {' or '.join(valid)} has one" if valid else ""
        return ConfigValueError(o.key_or_group, o.value(), f"no key inside {block}: {where} "
                                f"has no {block} block (it is null){also}")
    return None


def _has_block(hydra_compose: Callable, config_name: str, overrides: list[str],
               block: str) -> bool:
    try:
        return OmegaConf.select(hydra_compose(config_name, overrides=overrides), block) is not None
    except Exception:  # noqa: BLE001 - an option that does not compose has no block to offer
        return False


def compose(config_name: str, overrides: Sequence[str] = (), **kwargs: Any) -> DictConfig:
    """Hydra's ``compose`` (inside an ``initialize*`` context), naming a key set inside a null
    block: Hydra itself fails on ``experiment=maze_messages bias.beta=3`` (that experiment
    leaves ``bias`` null) with omegaconf's ``AssertionError: Unexpected type for root:
    NoneType``, naming nothing (``bias={beta: 3}`` fails with an ``AttributeError``); and a
    value outside a typed choice (``maze.setting=nope``), which Hydra reports in six lines.

    Raises:
        ConfigValueError: naming the key, the null block and the group options that have it;
            or the key, the value and the valid choices.
        Hydra's own errors for any other failure.
    """
    from hydra import compose as hydra_compose

    try:
        return hydra_compose(config_name, overrides=list(overrides), **kwargs)
    except Exception as e:  # omegaconf's AssertionError or AttributeError, or Hydra's own
        error = _null_block_error(config_name, overrides) or _choice_error(e)
        if error is None:
            raise
        raise error from e


def _choice_error(e: BaseException) -> ConfigValueError | None:
    """The named error of a value outside a typed choice (omegaconf's "Invalid value 'x',
    expected one of [...]" with its six lines of types, under Hydra's "Error merging
    override"), or None for any other failure."""
    cause = e.__cause__ if isinstance(e.__cause__, ValidationError) else e
    found = re.match(r"Invalid value .*?, expected (one of \[.*?\])", str(cause))
    if not isinstance(cause, ValidationError) or not found or not cause.full_key:
        return None
    return ConfigValueError(cause.full_key, cause.value, found.group(1))


def sweep_jobs(overrides: Sequence[str]) -> list[list[str]] | None:
    """The jobs of a ``-m`` sweep that can differ in which blocks the config leaves null: the
    product of the values of each sweep over a config group or over a block another override
    sets keys inside (as Hydra's basic sweeper expands them), every other sweep at its first
    value (a seed, or a value inside a block, changes no block's presence). Hydra's own
    overrides (``hydra/launcher=...``, ``hydra.*``) are left out. One job without sweeps.
    Call it inside an ``initialize*`` context (it asks Hydra which keys are groups).

    Returns:
        The jobs' overrides, or None for a sweep the basic sweeper does not expand (an
        ``interval``: Hydra reports it).
    """
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = [o for o in OverridesParser.create().parse_overrides(list(overrides))
              if not o.is_hydra_override()]
    blocks = {".".join(o.key_or_group.split(".")[:i]) for o in parsed if _sets_inside(o)
              for i in range(1, o.key_or_group.count(".") + 1 + isinstance(o.value(), dict))}
    loader = GlobalHydra.instance().config_loader()
    axes = []
    for o in parsed:
        if not o.is_sweep_override():
            axes.append([o.input_line])
            continue
        if not o.is_discrete_sweep():
            return None
        values = [f"{o.get_key_element()}={v}" for v in o.sweep_string_iterator()]
        varies = o.key_or_group in blocks or loader.get_group_options(o.key_or_group)
        axes.append(values if varies else values[:1])
    return [list(job) for job in itertools.product(*axes)]


def _command_line_error(config_dir: str, config_name: str,
                        args: Sequence[str]) -> ConfigValueError | None:
    """The named error of the first job of the command line (one run, or a ``-m`` sweep's
    :func:`sweep_jobs`) that sets a key inside a null block, or None: also for a command line
    with other flags (``--cfg``, ``--help``) and for a failure Hydra reports itself."""
    from hydra import initialize_config_dir

    flags = {a for a in args if a.startswith("-")}
    if flags - {"-m", "--multirun"}:
        return None
    with initialize_config_dir(config_dir, version_base=None):
        try:
            for job in sweep_jobs([a for a in args if a not in flags]) or []:
                compose(config_name, job)
        except ConfigValueError as e:
            return e
        except Exception:  # noqa: BLE001 - Hydra reports its own errors, as always
            return None
    return None


def _reporting(run: Callable[[DictConfig], Any]) -> Callable[[DictConfig], Any]:
    """``run`` as Hydra's task: it quiets :data:`QUIET_LOGGERS` and turns a
    :data:`USER_ERRORS` error into ``Error: <message>`` on stderr and exit status 1 (re-raised
    under ``HYDRA_FULL_ERROR=1``, for its traceback)."""

    @functools.wraps(run)
    def task(cfg: DictConfig) -> Any:
        for name in QUIET_LOGGERS:  # Hydra's job logging has just set the root logger to INFO
            logging.getLogger(name).setLevel(logging.WARNING)
        try:
            return run(cfg)
        except USER_ERRORS as e:
            if os.environ.get("HYDRA_FULL_ERROR") == "1":
                raise
            print(f"Error: {e}", file=sys.stderr)
            sys.exit(1)

    # Hydra names the job (hydra.job.name, e.g. a SLURM job's name) after the task's module,
    # or its file for __main__: the script's name either way
    task.__module__ = Path(inspect.getfile(run)).stem
    return task


def hydra_main(run: Callable[[DictConfig], Any], config_path: str,
               config_name: str) -> Callable[[], Any]:
    """``hydra.main(version_base=None, config_path=..., config_name=...)(run)`` for a script
    (``config_path`` relative to ``run``'s file, as for ``hydra.main``), whose bad command
    line gets one line, ``Error: <message>``, and exit status 1:

    * the command line is composed first, every job of a ``-m`` sweep (:func:`sweep_jobs`), so
      a key set inside a null block is named before any job runs (Hydra alone fails with
      omegaconf's ``AssertionError: Unexpected type for root: NoneType`` and a traceback);
    * a :data:`USER_ERRORS` error raised by ``run`` (a bad value, a colliding run) prints its
      message without Hydra's traceback; any other exception is a bug and keeps Hydra's report
      (``HYDRA_FULL_ERROR=1`` shows every trace, ours too). Hydra's own composition errors
      (``episodes=abc``) are Hydra's compact report, as always.

    The HTTP stack's per-request INFO lines are silenced (:data:`QUIET_LOGGERS`). Command lines
    with other flags (``--cfg``, ``--help``) go straight to Hydra.
    """
    import hydra

    config_dir = str((Path(inspect.getfile(run)).parent / config_path).resolve())
    hydra_run = hydra.main(version_base=None, config_path=config_dir,
                           config_name=config_name)(_reporting(run))

    @functools.wraps(run)
    def main() -> Any:
        error = _command_line_error(config_dir, config_name, sys.argv[1:])
        if error is not None:
            print(f"Error: {error}", file=sys.stderr)
            sys.exit(1)
        return hydra_run()

    return main


def validate(cfg: DictConfig) -> DictConfig:
    """Range-check a composed config against its schema; return it resolved and plain.

    Refuses a command-line block Hydra dropped (:func:`check_overrides`), builds the schema
    objects, refuses keys the schema lacks, checks every field's declared bounds, that every
    float is finite and every integer fits in int64, runs each schema's cross-field ``check``,
    and returns a resolved copy whose enums are strings, detached from Hydra (interpolations
    resolved).

    Raises:
        ConfigValueError: naming the key, the value and the expected range.
        omegaconf.errors.MissingMandatoryValue: a required key without a value (named).
    """
    check_overrides(cfg)
    obj = OmegaConf.to_object(cfg)
    if dataclasses.is_dataclass(obj):
        _check_keys(cfg, obj)
        check_fields(obj)
    return OmegaConf.create(OmegaConf.to_container(cfg, resolve=True, enum_to_str=True))


def check_output(path: str | Path, key: str, *, is_dir: bool) -> Path:
    """Refuse, before any work, an output path that cannot be written as asked.

    Raises:
        ConfigValueError: ``is_dir`` and ``path`` is an existing file, or not ``is_dir`` and it is
            an existing directory, or one of its parents is an existing file.
    """
    path = Path(path)
    if is_dir and path.exists() and not path.is_dir():
        raise ConfigValueError(key, str(path), "a directory, but it is an existing file")
    if not is_dir and path.is_dir():
        raise ConfigValueError(key, str(path), "a file path, but it is an existing directory")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ConfigValueError(key, str(path), f"a path under a directory, but {parent} "
                                       "is an existing file")
            break
    return path


def _flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(tree, Mapping):
        flat: dict[str, Any] = {}
        for k, v in tree.items():
            flat.update(_flatten(v, f"{prefix}{k}."))
        return flat or {prefix[:-1]: {}}
    return {prefix[:-1]: tree}


def config_diff(old: Mapping, new: Mapping, keys: Sequence[str]) -> dict[str, tuple[Any, Any]]:
    """Dotted keys under ``keys`` whose values differ: ``{key: (old, new)}``."""
    a = _flatten({k: old.get(k) for k in keys})
    b = _flatten({k: new.get(k) for k in keys})
    return {k: (a.get(k), b.get(k)) for k in sorted(a.keys() | b.keys()) if a.get(k) != b.get(k)}


def _never_started(results: ResultsFile) -> bool:
    """A run directory holding only what :func:`start_run` writes (``config`` and ``run`` in
    ``results.json``, no other file): a run that failed before doing any work (e.g. an
    unreachable endpoint), whose corrected rerun is no collision."""
    if set(results.data) - {"config", "run"} or results.path.name != "results.json":
        return False
    return all(p == results.path or p.is_dir() for p in results.path.parent.rglob("*"))


def guard_results(results: ResultsFile, config: Mapping, frozen: Sequence[str] | None,
                  free: Sequence[str] = ()) -> None:
    """Refuse to write into another run's results.

    Args:
        results: the results file, as loaded (empty when new).
        config: this run's resolved config.
        frozen: the keys that define the run (a rerun with equal values resumes or redoes it);
            ``None`` for every key but ``out_dir`` / ``out``.
        free: dotted keys (or prefixes) that may differ (they pace a run without changing its
            results, e.g. ``llm.concurrency``).

    A directory whose results.json holds only ``config`` and ``run`` and which has no other
    file (a run that failed at its start) is no collision: the new run replaces it.

    Raises:
        RunCollision: the file holds results without a recorded config, of another entry point
            (other config keys), or with a config that differs at some of ``frozen`` (the
            message lists each differing key, old and new).
    """
    if not results.data or _never_started(results):
        return
    old = results.data.get("config")
    if not isinstance(old, Mapping):
        raise RunCollision(f"{results.path} holds the results of another run (no recorded "
                           "config); choose a new output path")
    if set(old) != set(config):
        raise RunCollision(f"{results.path} holds the results of another kind of run (config "
                           f"keys {sorted(old)}, not {sorted(config)}); choose a new output path")
    keys = list(frozen) if frozen is not None else sorted(
        (old.keys() | config.keys()) - {"out_dir", "out"})
    diff = {k: v for k, v in config_diff(old, config, keys).items()
            if not any(k == f or k.startswith(f"{f}.") for f in free)}
    if diff:
        listed = "; ".join(f"{k}: {a!r} -> {b!r}" for k, a, b in
                           ((k, *v) for k, v in diff.items()))
        raise RunCollision(f"{results.path} holds the results of a run with a different config "
                           f"({listed}); choose a new output path, or rerun with the same values "
                           "to resume or redo that run")


@dataclass
class Run:
    """A started run: its checked config, output directory, results file and logger."""

    cfg: DictConfig
    out: Path
    results: ResultsFile
    logger: RunLogger

    def finish(self) -> None:
        self.logger.finish()


def start_run(cfg: DictConfig, *, frozen: Sequence[str] | None = None,
              check: Callable[[DictConfig], None] | None = None, out_key: str = "out_dir",
              results_name: str | None = "results.json", free: Sequence[str] = (),
              log: bool = True) -> Run:
    """Validate, check the output, guard against collisions, open results and logger.

    Args:
        cfg: the composed config (as Hydra passes it to ``main``).
        frozen, free: see :func:`guard_results`.
        check: the entry point's own cross-key checks on the validated config (raise
            ``ConfigValueError``); run before anything is written.
        out_key: the config key of the output: a directory (``results_name`` inside it) or,
            with ``results_name=None``, the results file itself.
        log: open the logger ``cfg.logger`` names; ``False`` for a sweep whose own runs log
            with it (one wandb run at a time).

    Starts the multi-controller runtime first when this is one process of a multi-process job
    (:func:`jaxcollab.scale.distributed.initialize`) and checks that every process writes to the
    same place; only process 0 writes results and logs.

    Returns:
        The :class:`Run`; its results file already records ``config`` and ``run`` (backend,
        devices, local devices, processes: :func:`jaxcollab.scale.distributed.run_info`). The
        logger follows ``cfg.logger`` (wandb) when the config has one, else it is disabled.

    Raises:
        ConfigValueError, RunCollision: before any file is written.
    """
    initialize()  # a multi-process job (jaxcollab.scale.distributed); else nothing
    plain = validate(cfg)
    if check is not None:
        check(plain)
    target = check_output(plain[out_key], out_key, is_dir=results_name is not None)
    same_on_every_process(str(target.absolute()), out_key)
    path = target / results_name if results_name is not None else target
    if path.is_dir():
        raise ConfigValueError(out_key, str(target), f"a place for {path.name}, which is a "
                               "directory there")
    results = ResultsFile(path)
    config = OmegaConf.to_container(plain)
    guard_results(results, config, frozen, free)
    results.update({"config": config, "run": run_info()})
    # a run without a logger block logs as the block's defaults do (disabled)
    options = plain.logger if "logger" in plain else schema.Logger()
    mode = str(options.mode) if is_main() and log else "disabled"  # process 0 logs
    logger = RunLogger(mode, options.project, plain.get("experiment_name"), config,
                       str(path.parent))
    return Run(plain, path.parent, results, logger)
