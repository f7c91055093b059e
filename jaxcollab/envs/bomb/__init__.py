"""Bomb families: Deaf / Mute / Blind, seven families, 24 variants (SANZARU,
Tables 2 and 9).

Importing this package registers ``bomb/<variant>`` for every row of
:data:`~jaxcollab.envs.bomb.tables.VARIANTS`, with groups ``bomb/<family>`` and ``bomb/all``.
"""

from __future__ import annotations

import jax
import numpy as np

from jaxcollab.core.registry import register
from jaxcollab.envs.bomb import tables
from jaxcollab.envs.bomb.bank import BANK_SEED, BANK_SIZE, bank_episodes, instance_keys, summarise
from jaxcollab.envs.bomb.env import BombAction, BombEnv, ending_counts, is_done
from jaxcollab.envs.bomb.generate import generate
from jaxcollab.envs.bomb.params import BombParams, make_params, stack_params
from jaxcollab.envs.bomb.state import BombState

#: ``generate`` over a batch of keys with shared params (compiled once per caps and batch size).
reset_batch = jax.jit(jax.vmap(generate, in_axes=(0, None, None, None)), static_argnums=(2, 3))


def _state_record(state: BombState) -> dict:
    """A generated state as JSON-ready lists (message buffers omitted: empty at reset)."""
    skip = {"speech", "gesture", "speech_to", "gesture_to", "bounced", "act_rejected"}
    return {k: np.asarray(v).tolist() for k, v in state.items() if k not in skip}


def export_instances(env_name: str, n: int, seed: int, turn_order="cycle") -> list[dict]:
    """Instances of ``env_name`` as JSON-ready dicts, instance ``i`` the reset of episode ``i``
    of a rollout with ``episode_keys(seed, n)`` (reset key
    :func:`~jaxcollab.core.rollout.split_episode_key`), i.e. episode ``i`` of that variant in
    :func:`jaxcollab.agents.bomb.evaluate` with the same seed, whichever team plays it;
    ``text`` is rendered under that episode's turn order (``TURN_ORDERS[i % 6]`` under
    ``turn_order="cycle"``, else the one permutation given).

    Schema (one dict per instance): ``env`` (name), ``variant`` (the variant-table row as a
    dict), ``seed``, ``index``, ``state`` (every :class:`BombState` field at reset as nested
    lists: ``wire_colour`` colour ids, -1 = no wire; ``manual_a``/``manual_b``/``manual_val``
    the manual; ``key_seq`` the deciding manual entry per stage or cycle slot; ...),
    ``colours`` (colour names by id), ``plate_glyphs``, ``solution`` (0-based wire positions to
    cut, or key positions to press, in order; flashing: cut ``i`` lands in round ``i``) and
    ``solution_kind`` (``"cut"`` or ``"press"``), ``turn_order`` (role names in turn order),
    and ``text`` (each role's rendered observation at the start, keyed by role name).

    Raises:
        KeyError: unknown variant (lists the valid ones).
    """
    from jaxcollab.envs.bomb.bank import CYCLE, parse_turn_order
    from jaxcollab.envs.bomb.params import TURN_ORDERS

    env = BombEnv(env_name)
    params = env.default_params
    order = parse_turn_order(turn_order)
    orders = [TURN_ORDERS[i % len(TURN_ORDERS)] if order == CYCLE else np.asarray(order, np.int32)
              for i in range(int(n))]
    keys = instance_keys(env.variant.name, n, seed)
    states = jax.device_get(reset_batch(keys, params, env.speech_bytes, env.gesture_symbols))
    records = []
    for i in range(int(n)):
        state = jax.tree.map(lambda x, i=i: x[i], states)
        records.append({
            "env": env.name, "variant": env.variant._asdict(), "seed": int(seed), "index": i,
            "state": _state_record(state), "colours": list(tables.COLOURS),
            "plate_glyphs": tables.PLATE_GLYPHS, "solution": env.solution(state, params),
            "solution_kind": "press" if env.variant.task == tables.TASK_CODE else "cut",
            "turn_order": [tables.ROLE_NAMES[r] for r in orders[i]],
            "text": {name: env.render_text(state, r, params.replace(turn_order=orders[i]))
                     for r, name in enumerate(tables.ROLE_NAMES)},
        })
    return records


def instance_bank() -> list[dict]:
    """The bank: :data:`BANK_SIZE` instances of each of the 24 variants from :data:`BANK_SEED`."""
    return [r for v in tables.VARIANTS for r in export_instances(v.name, BANK_SIZE, BANK_SEED)]


for _v in tables.VARIANTS:
    register(f"bomb/{_v.name}", "jaxcollab.envs.bomb:BombEnv", variant=_v.name,
             groups=(f"bomb/{_v.family}", "bomb/all"))

__all__ = [
    "BANK_SEED", "BANK_SIZE", "BombAction", "BombEnv", "BombParams", "BombState",
    "bank_episodes", "ending_counts", "export_instances", "instance_bank", "instance_keys",
    "is_done", "make_params", "stack_params", "summarise", "tables",
]
