"""Typed config fields: a dataclass field's bounds live in its metadata, checked by
:func:`check_fields`.

The entry points' schemas (:mod:`jaxcollab.io.schema`), each family's config block and the
trainers' settings declare their fields with these helpers, so a bound is stated once, beside
its default, and every bad value gets the same one-line :class:`ConfigValueError`.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from typing import Any

from omegaconf import MISSING

from jaxcollab.core.errors import ConfigValueError

_COMPARISONS = {
    "ge": (lambda v, b: v >= b, ">="),
    "gt": (lambda v, b: v > b, ">"),
    "le": (lambda v, b: v <= b, "<="),
    "lt": (lambda v, b: v < b, "<"),
}

#: Integers a run may hold: NumPy's and JAX's int64 (beyond it, a value overflows mid-run).
INT64 = 2**63

#: Seeds are 32-bit: with 64-bit types off (JAX's default) ``PRNGKey(2**32)`` is ``PRNGKey(0)``.
SEED_LIMIT = 2**32

#: Episode counts are 31-bit: with 64-bit types off, episode indices reach JAX as int32 (episode
#: ``2**31`` would wrap to ``-2**31``), one per key of ``episode_keys(seed, episodes)``.
EPISODE_LIMIT = 2**31


def bounded(default: Any = MISSING, *, ge: float | None = None, gt: float | None = None,
            le: float | None = None, lt: float | None = None, why: str = "") -> Any:
    """A dataclass field whose value must lie in the given bounds (checked by
    :func:`check_fields`); ``why``, where given, says where a bound comes from (the error
    quotes it)."""
    bounds = {k: v for k, v in dict(ge=ge, gt=gt, le=le, lt=lt).items() if v is not None}
    return dataclasses.field(default=default, metadata={"bounds": bounds, "why": why})


def count(default: Any = MISSING, minimum: int = 1) -> Any:
    """An integer field that must be at least ``minimum`` (sizes, steps, episodes)."""
    return bounded(default, ge=minimum)


def seed_field(default: int = 0) -> Any:
    """A random seed: an integer in ``0 .. 2**32 - 1`` (:data:`SEED_LIMIT`)."""
    return bounded(default, ge=0, lt=SEED_LIMIT)


def episodes_field(default: int) -> Any:
    """A number of episodes (instances): an integer in ``1 .. 2**31 - 1``
    (:data:`EPISODE_LIMIT`)."""
    return bounded(default, ge=1, lt=EPISODE_LIMIT,
                   why="episode indices are int32 in JAX, with 64-bit types off")


def check_episode_count(key: str, n: int, times_key: str, times: int) -> None:
    """Refuse ``n`` instances played ``times`` times each when their ``n * times`` episodes
    overrun :data:`EPISODE_LIMIT` (every play is an episode index).

    Raises:
        ConfigValueError: naming ``key`` and its largest valid value with ``times_key``.
    """
    if n * times >= EPISODE_LIMIT:
        raise ConfigValueError(key, n, f"at most {(EPISODE_LIMIT - 1) // times} with "
                               f"{times_key}={times} ({n} x {times} episodes; episode indices "
                               "are int32 in JAX, below 2**31)")


def check_fields(obj: Any, prefix: str = "") -> None:
    """Check a config dataclass: the bounds in each field's metadata and the finiteness of
    every float, recursively (nested dataclasses and mappings of them), then the object's own
    cross-field ``check`` method, if any (which may assume every field is in range).

    Raises:
        ConfigValueError: naming the dotted key (under ``prefix``), the value and the range.
    """
    for f in dataclasses.fields(obj):
        key, value = f"{prefix}{f.name}", getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            check_fields(value, f"{key}.")
            continue
        if isinstance(value, dict):  # a mapping of schemas, e.g. bias.conditions
            for name, item in value.items():
                if dataclasses.is_dataclass(item):
                    check_fields(item, f"{key}.{name}.")
            continue
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, float) and not math.isfinite(v) for v in values):
            raise ConfigValueError(key, value, "finite numbers")
        if any(isinstance(v, int) and not -INT64 <= v < INT64 for v in values):
            raise ConfigValueError(key, value, "integers in int64's range (-2**63 .. 2**63 - 1)")
        bounds = f.metadata.get("bounds", {})
        if value is None or not bounds:
            continue
        if not all(_COMPARISONS[name][0](value, bound) for name, bound in bounds.items()):
            kind = "an integer" if isinstance(value, int) else "a number"
            expected = " and ".join(f"{_COMPARISONS[n][1]} {b}" for n, b in bounds.items())
            if why := f.metadata.get("why"):
                expected += f" ({why})"
            raise ConfigValueError(key, value, f"{kind} {expected}")
    if hasattr(obj, "check"):
        obj.check()


def typed(cls: type, options: Any) -> Any:
    """A config dataclass ``cls`` read from a run's config mapping (or already one): each
    field from ``options[name]`` where ``options`` has the key (a nested config dataclass from
    its sub-mapping, recursively), else the field's own default, which is so stated once, in
    ``cls``; keys ``cls`` lacks are ignored (a run's config holds every family's keys, a
    finished run's recorded config may be older). Families read their options this way, as
    attributes.

    Args:
        cls: a dataclass whose fields all have defaults.
        options: a mapping (a plain dict, an omegaconf ``DictConfig``), an instance of
            ``cls``, or None (every default).

    Raises:
        ConfigValueError: a value out of range, where ``cls`` checks on construction.
    """
    if options is None:
        return cls()
    if isinstance(options, cls):
        return options
    hints = typing.get_type_hints(cls)
    values = {}
    for f in dataclasses.fields(cls):
        if f.name not in options:
            continue
        value, sub = options[f.name], hints[f.name]
        if dataclasses.is_dataclass(sub) and not dataclasses.is_dataclass(value):
            value = typed(sub, value)
        values[f.name] = value
    return cls(**values)


def config_fields(classes: Any) -> list[tuple[str, Any, Any]]:
    """The fields of config dataclasses as :func:`dataclasses.make_dataclass` takes them,
    ``(name, type, field)``, each name once, in order (a field two classes share, as the
    ``checkpoint`` of every family with a learned team, is one inherited field).

    Raises:
        ValueError: two classes declare one name with different defaults.
    """
    out: dict[str, tuple[str, Any, Any]] = {}
    seen: dict[str, dataclasses.Field] = {}
    for cls in classes:
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if f.name in seen:
                if (seen[f.name].default, seen[f.name].default_factory) != (
                        f.default, f.default_factory):
                    raise ValueError(f"config key {f.name!r} is declared twice with different "
                                     f"defaults ({cls.__name__} and an earlier class)")
                continue
            seen[f.name] = f
            out[f.name] = (f.name, hints[f.name], dataclasses.field(
                default=f.default, default_factory=f.default_factory, metadata=f.metadata))
    return list(out.values())
