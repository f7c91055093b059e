"""Missions and dynamic parameters of a Keep-Talking bomb (GPTNT, §4 and
App. B.3–B.4; single-module time limits from Table B.16).
"""

from __future__ import annotations

import dataclasses

import chex
import jax

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane.modules import module_type
from jaxcollab.envs.ktane.ruleset import Ruleset

DEFUSER, EXPERT = 0, 1
ROLE_NAMES = ("defuser", "expert")

#: GPTNT single-module time limits in seconds (GPTNT, App. B.4.2, Table B.16).
GPTNT_TIME_LIMIT_S = {
    "wires": 81,
    "keypad": 90,
    "whos_on_first": 93,
    "memory": 105,
    "simon": 135,
    "button": 144,
    "complicated_wires": 126,
    "wire_sequence": 135,
    "morse": 144,
    "maze": 183,
    "passwords": 231,
}


@dataclasses.dataclass(frozen=True)
class Mission:
    """A mission as data: which modules, how long, how many strikes, how many widgets.

    Attributes:
        modules: module type names, one per slot (front slots 0–5, then back 6–11).
        time_limit_s: bomb time in seconds (> 0).
        max_strikes: the strike that ends the episode (1–9; default 3).
        n_widgets: optional widgets on the casing (0–5).
        seed: the mission's own seed, or None. A seeded mission is one fixed bomb (GPTNT's
            benchmark missions): every episode resets to the bomb drawn from ``seed``.

    Raises:
        ValueError / KeyError: a value out of range or an unknown module name (listing valid).
    """

    modules: tuple[str, ...]
    time_limit_s: float
    max_strikes: int = 3
    n_widgets: int = 5
    seed: int | None = None

    def __post_init__(self):
        object.__setattr__(self, "modules", tuple(self.modules))
        if not 1 <= len(self.modules) <= T.MAX_SLOTS:
            raise ValueError(f"a mission needs 1-{T.MAX_SLOTS} modules, got {self.modules!r}")
        for name in self.modules:
            module_type(name)
        if not self.time_limit_s > 0:
            raise ValueError(f"time_limit_s must be positive, got {self.time_limit_s!r}")
        if not 1 <= self.max_strikes <= 9:
            raise ValueError(f"max_strikes must be in 1-9, got {self.max_strikes!r}")
        if not 0 <= self.n_widgets <= T.MAX_WIDGETS:
            raise ValueError(f"n_widgets must be in 0-{T.MAX_WIDGETS}, got {self.n_widgets!r}")


@chex.dataclass(frozen=True)
class KtaneParams:
    """Dynamic parameters: int32 scalars ``time_limit_cs``, ``max_strikes``, ``n_widgets``,
    ``bomb_seed`` (a fixed mission's seed: every reset draws the bomb from it; -1 = a fresh
    bomb from each episode's key), and ``rules``, the :class:`~.ruleset.Ruleset` every module
    reads (vanilla by default; swapping it does not recompile)."""

    time_limit_cs: jax.Array
    max_strikes: jax.Array
    n_widgets: jax.Array
    bomb_seed: jax.Array
    rules: Ruleset
