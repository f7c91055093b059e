"""Dynamic parameters of a bomb variant: one row of :data:`~jaxcollab.envs.bomb.tables.VARIANTS`
as int32 arrays, plus the turn order.

Because every variant difference is *data* here (not a Python branch), one compiled
``reset``/``step`` serves all 24 variants, and a batch may mix variants (``vmap`` over params).
"""

from __future__ import annotations

import itertools

import chex
import jax
import numpy as np

from jaxcollab.envs.bomb import tables as T

#: The six turn orders (permutations of the roles), in a fixed order.
TURN_ORDERS = np.array(list(itertools.permutations(range(T.N_AGENTS))), np.int32)


@chex.dataclass(frozen=True)
class BombParams:
    """One variant's rules (every field an int32 scalar unless noted).

    Attributes mirror :class:`~jaxcollab.envs.bomb.tables.Variant` (``wires``, ``steps``,
    ``rounds``, ``rows``, ``cols``, ``task``, ``key``, ``light``, ``period``, ``flashes``,
    ``window``, ``pick_rule``, ``shuffle``, ``haystack``, ``keypad``, ``strip``, ``bait``);
    ``turn_order`` is int32 ``[3]``, the roles in the order they take their turns each round.
    """

    wires: jax.Array
    steps: jax.Array
    rounds: jax.Array
    rows: jax.Array
    cols: jax.Array
    task: jax.Array
    key: jax.Array
    light: jax.Array
    period: jax.Array
    flashes: jax.Array
    window: jax.Array
    pick_rule: jax.Array
    shuffle: jax.Array
    haystack: jax.Array
    keypad: jax.Array
    strip: jax.Array
    bait: jax.Array
    turn_order: jax.Array


_FIELDS = tuple(f for f in T.Variant._fields if f not in ("name", "subset"))


def make_params(variant: T.Variant, turn_order=(T.DEAF, T.MUTE, T.BLIND)) -> BombParams:
    """Params of ``variant`` under ``turn_order`` (a permutation of the three roles).

    Raises:
        ValueError: ``turn_order`` is not a permutation of (0, 1, 2).
    """
    order = tuple(int(r) for r in turn_order)
    if sorted(order) != [0, 1, 2]:
        raise ValueError(f"turn_order {turn_order!r} must be a permutation of (0, 1, 2)")
    values = {f: np.int32(int(getattr(variant, f))) for f in _FIELDS}
    return BombParams(**values, turn_order=np.asarray(order, np.int32))


def stack_params(params: list[BombParams]) -> BombParams:
    """Stack several params along a new leading axis (for ``vmap`` over mixed variants)."""
    return jax.tree.map(lambda *xs: np.stack(xs), *params)
