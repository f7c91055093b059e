"""Name → environment registry: ``jaxcollab.make("parity/probability")``.

Families are found through the package entry-point group :data:`GROUP`
(``jaxcollab.families``): each installed family declares one entry point, named by the prefix
of its environment names, whose target is the module that registers the family (its
environments with :func:`register`, its :class:`~jaxcollab.core.family.Family` with
:func:`register_family`) when imported, or that module's ``Family`` object
(``"package.module:FAMILY"``), which is registered here. The built-ins are declared the same way
in ``pyproject.toml``, so a family in another installed package is found like them::

    [project.entry-points."jaxcollab.families"]
    toy = "toyfamily"

Loading is lazy and has no back-edges: this module imports no family. A name's prefix
(``parity`` in ``parity/action``) selects its entry point, loaded on first use, so
``make("parity/action")`` imports the parity family only. An environment is registered with
a ``"module:attribute"`` string (plus keyword arguments) resolved when the environment is
built, or a factory callable. Groups (``bomb/all``, ``bomb/base``) name several environments
at once and are expanded by :func:`resolve`. User code may also register a family at run
time, with :func:`register` and :func:`register_family`.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.metadata
import types
from collections.abc import Callable, Iterable
from typing import Any

from jaxcollab.core.env import Environment
from jaxcollab.core.family import Family

#: The entry-point group every family declares itself in (module docstring).
GROUP = "jaxcollab.families"

_FACTORIES: dict[str, Callable[[], Environment]] = {}
_PLUGINS: dict[str, Family] = {}
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


@functools.cache
def entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    """Family prefix → its entry point in :data:`GROUP`, of every installed package (read once
    per process).

    Raises:
        ValueError: two installed packages declare the same family name.
    """
    found: dict[str, importlib.metadata.EntryPoint] = {}
    for ep in importlib.metadata.entry_points(group=GROUP):
        if ep.name in found and found[ep.name].value != ep.value:
            raise ValueError(f"family {ep.name!r} is declared twice in the entry-point group "
                             f"{GROUP!r}: {found[ep.name].value!r} and {ep.value!r}")
        found[ep.name] = ep
    return found


def _load_family(prefix: str) -> None:
    """Load the entry point of family ``prefix``: import its module (which registers the
    family), and register the :class:`~jaxcollab.core.family.Family` it names, if it names one.

    Raises:
        ValueError: the entry point names neither a module nor a ``Family`` named ``prefix``.
    """
    ep = entry_points()[prefix]
    loaded = ep.load()
    if isinstance(loaded, types.ModuleType):  # importing it registered the family
        return
    if not isinstance(loaded, Family) or loaded.name != prefix:
        raise ValueError(f"entry point {prefix} = {ep.value!r} of {GROUP!r} must name a module "
                         f"or a Family named {prefix!r}, not {loaded!r}")
    if _PLUGINS.get(prefix) is not loaded:
        register_family(loaded)


def _load(name: str | None = None) -> None:
    """Load the family of ``name`` (every family when ``name`` is ``None`` or its prefix is
    not an installed family)."""
    family = None if name is None else name.split("/")[0]
    for prefix in [family] if family in entry_points() else entry_points():
        _load_family(prefix)


def names() -> list[str]:
    """All registered environment names, sorted."""
    _load()
    return sorted(_FACTORIES)


def groups() -> dict[str, list[str]]:
    """Group name → member environment names (registration order)."""
    _load()
    return {g: list(members) for g, members in sorted(_GROUPS.items())}


#: What an error lists when no family is installed at all (a stale or missing install).
_NONE = f"none (no package declares the entry-point group {GROUP!r}; pip install -e . ?)"


def _unknown(name: str, valid: list[str]) -> KeyError:
    close = difflib.get_close_matches(name, valid, n=3)
    hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
    return KeyError(f"unknown environment {name!r}.{hint} Valid names: "
                    f"{', '.join(valid) or _NONE}")


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
    if prefix not in _PLUGINS and prefix in entry_points():
        _load_family(prefix)
    if prefix not in _PLUGINS:
        raise KeyError(f"no family plug-in for {prefix!r} (from {name!r}); known: "
                       f"{', '.join(family_names()) or _NONE}")
    return _PLUGINS[prefix]


def family_names() -> list[str]:
    """The prefixes of every known family (built in or registered), sorted."""
    return sorted(set(entry_points()) | set(_PLUGINS))
