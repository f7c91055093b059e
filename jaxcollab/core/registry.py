"""Name → environment registry: ``jaxcollab.make("parity/probability")``.

Registration is lazy and has no back-edges: this module imports no family. A name's prefix
(``parity`` in ``parity/action``) selects its family module (:data:`FAMILIES`, module paths as
strings), which is imported on first use and registers its names, so ``make("parity/action")``
loads the parity module only. A family registers each name with an entry point, either a
``"module:attribute"`` string (plus keyword arguments) resolved when the environment is built,
or a factory callable. Groups (``bomb/all``, ``bomb/base``) name several environments at once
and are expanded by :func:`resolve`.

Each prefix also has one :class:`~jaxcollab.core.family.Family` plug-in (its teams, evaluation,
exporter, LLM game and config keys; :data:`PLUGINS`, imported lazily like the environments), or
one registered at run time with :func:`register_family`; :func:`family` returns it. Adding a
family is a package plus one line in :data:`FAMILIES` and :data:`PLUGINS` (or two calls,
:func:`register` and :func:`register_family`, from user code).
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterable
from typing import Any

from jaxcollab.core.env import Environment

#: Family prefix → the module that registers its environments (imported lazily).
FAMILIES: dict[str, str] = {
    "bomb": "jaxcollab.envs.bomb",
    "ktane": "jaxcollab.envs.ktane",
    "maze": "jaxcollab.envs.maze",
    "parity": "jaxcollab.envs.parity",
}

#: Family prefix → the module that registers its :class:`~jaxcollab.core.family.Family`.
PLUGINS: dict[str, str] = {
    "bomb": "jaxcollab.agents.bomb",
    "ktane": "jaxcollab.agents.ktane",
    "maze": "jaxcollab.agents.maze",
    "parity": "jaxcollab.agents.parity",
}

_FACTORIES: dict[str, Callable[[], Environment]] = {}
_PLUGINS: dict[str, Any] = {}
_GROUPS: dict[str, list[str]] = {}


def entry_point(target: str, **kwargs: Any) -> Callable[[], Environment]:
    """A factory that imports ``"package.module:Attribute"`` when called and calls it with
    ``kwargs``.

    Raises:
        ValueError: ``target`` is not of the form ``module:attribute``.
    """
    module, sep, attr = target.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"entry point {target!r} must look like 'package.module:Attribute'")

    def factory() -> Environment:
        return getattr(importlib.import_module(module), attr)(**kwargs)

    return factory


def register(name: str, factory: Callable[[], Environment] | str, groups: Iterable[str] = (),
             **kwargs: Any) -> None:
    """Register an environment under ``name`` and add ``name`` to each group in ``groups``.

    Args:
        name: ``family/variant``.
        factory: a callable returning the environment, or an entry-point string
            ``"module:Attribute"`` called with ``kwargs`` (see :func:`entry_point`).

    Raises:
        ValueError: if ``name`` is already registered or collides with a group name.
    """
    if name in _FACTORIES or name in _GROUPS:
        raise ValueError(f"environment name {name!r} is already registered")
    _FACTORIES[name] = entry_point(factory, **kwargs) if isinstance(factory, str) else factory
    for group in groups:
        if group in _FACTORIES:
            raise ValueError(f"group name {group!r} collides with an environment name")
        _GROUPS.setdefault(group, []).append(name)


def _load(name: str | None = None) -> None:
    """Import the family module of ``name`` (every family when ``name`` is ``None`` or its
    prefix is not a known family)."""
    family = None if name is None else name.split("/")[0]
    for module in [FAMILIES[family]] if family in FAMILIES else FAMILIES.values():
        importlib.import_module(module)


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
    _load(name)
    if name not in _FACTORIES:
        _load()
        raise _unknown(name, sorted(_FACTORIES))
    return _FACTORIES[name]()


def resolve(selector: str) -> list[str]:
    """Expand an environment name or a group name into a list of environment names.

    Raises:
        KeyError: if ``selector`` is neither; the message lists valid names and groups.
    """
    _load(selector)
    if selector in _FACTORIES:
        return [selector]
    if selector in _GROUPS:
        return list(_GROUPS[selector])
    _load()
    raise _unknown(selector, sorted(_FACTORIES) + sorted(_GROUPS))


def register_family(plugin) -> None:
    """Register a :class:`~jaxcollab.core.family.Family` under its ``name`` (the prefix of its
    environment names); the entry points find it with :func:`family`.

    Raises:
        ValueError: a family of that name is already registered.
    """
    if plugin.name in _PLUGINS:
        raise ValueError(f"family {plugin.name!r} is already registered")
    _PLUGINS[plugin.name] = plugin


def family(name: str):
    """The :class:`~jaxcollab.core.family.Family` of an environment name, group or prefix
    (``bomb/base-1``, ``bomb/all`` and ``bomb`` all give the bomb plug-in).

    Raises:
        KeyError: no family of that prefix (lists the known ones).
    """
    prefix = name.split("/")[0]
    if prefix not in _PLUGINS and prefix in PLUGINS:
        importlib.import_module(PLUGINS[prefix])
    if prefix not in _PLUGINS:
        raise KeyError(f"no family plug-in for {prefix!r} (from {name!r}); known: "
                       f"{', '.join(family_names())}")
    return _PLUGINS[prefix]


def family_names() -> list[str]:
    """The prefixes of every known family (built in or registered), sorted."""
    return sorted(set(PLUGINS) | set(_PLUGINS))
