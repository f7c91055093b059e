"""Name → environment registry: ``jaxcollab.make("parity/chained-30")``.

Environment modules call :func:`register` at import time; :mod:`jaxcollab.envs` imports them
all, so every name is known once :func:`make` is first called. Groups (``bomb/all``,
``bomb/base``) name several environments at once and are expanded by :func:`resolve`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable

from jaxcollab.core.env import Environment

_FACTORIES: dict[str, Callable[[], Environment]] = {}
_GROUPS: dict[str, list[str]] = {}


def register(name: str, factory: Callable[[], Environment], groups: Iterable[str] = ()) -> None:
    """Register ``factory`` under ``name`` and add ``name`` to each group in ``groups``.

    Raises:
        ValueError: if ``name`` is already registered or collides with a group name.
    """
    if name in _FACTORIES or name in _GROUPS:
        raise ValueError(f"environment name {name!r} is already registered")
    _FACTORIES[name] = factory
    for group in groups:
        if group in _FACTORIES:
            raise ValueError(f"group name {group!r} collides with an environment name")
        _GROUPS.setdefault(group, []).append(name)


def _load() -> None:
    import jaxcollab.envs  # noqa: F401  (registers every built-in environment)


def names() -> list[str]:
    """All registered environment names, sorted."""
    _load()
    return sorted(_FACTORIES)


def groups() -> dict[str, list[str]]:
    """Group name → member environment names (registration order)."""
    _load()
    return {g: list(members) for g, members in sorted(_GROUPS.items())}


def _unknown(name: str, valid: list[str]) -> KeyError:
    close = difflib.get_close_matches(name, valid, n=3)
    hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
    return KeyError(f"unknown environment {name!r}.{hint} Valid names: {', '.join(valid)}")


def make(name: str) -> Environment:
    """Build the environment registered as ``name``.

    Raises:
        KeyError: if ``name`` is unknown; the message lists every valid name.
    """
    _load()
    if name not in _FACTORIES:
        raise _unknown(name, sorted(_FACTORIES))
    return _FACTORIES[name]()


def resolve(selector: str) -> list[str]:
    """Expand an environment name or a group name into a list of environment names.

    Raises:
        KeyError: if ``selector`` is neither; the message lists valid names and groups.
    """
    _load()
    if selector in _FACTORIES:
        return [selector]
    if selector in _GROUPS:
        return list(_GROUPS[selector])
    raise _unknown(selector, sorted(_FACTORIES) + sorted(_GROUPS))
