"""Keypad (the vanilla KTANE Bomb Defusal Manual, Keypads): press four symbols in their column's
order.

State: ``symbols[4]`` (symbol ids at TL, TR, BL, BR) and ``pressed[4]`` (0/1, lit green).
Targets are the 4 keys in reading order.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.draw import permutation, randint, uniforms
from jaxcollab.envs.ktane.modules.base import PRESS, Layout, ModuleType, first_true, view_tokens

N_KEYS = 4
LAYOUT = Layout({"symbols": (N_KEYS,), "pressed": (N_KEYS,)})
_SYMBOL_TOK = V.toks(T.KEYPAD_SYMBOLS)
_POS_TOK = V.toks(T.KEYPAD_POSITIONS)


def key_ranks(symbols: jax.Array, rules) -> jax.Array:
    """Position of each key's symbol in the one column holding all four, int32 ``[4]``."""
    ranks = rules.keypad_rank[:, symbols]  # [6 columns, 4]
    column = first_true(jnp.all(ranks < 7, axis=1))
    return ranks[column]


def next_key(m, rules) -> jax.Array:
    """The unpressed key whose symbol comes first in the column (int32 ``[]``)."""
    ranks = jnp.where(m["pressed"] == 1, 99, key_ranks(m["symbols"], rules))
    return jnp.argmin(ranks).astype(jnp.int32)


def generate(key, facts, rules):
    """A uniform column, 4 distinct symbols of it placed in random order."""
    u = uniforms(key, 8)
    column = randint(u[0], 0, 6)
    pick = permutation(u[1:])[:N_KEYS]
    return {
        "symbols": rules.keypad_columns[column, pick],
        "pressed": jnp.zeros(N_KEYS, jnp.int32),
    }


def act(key, m, verb, target, ctx):
    """PRESS: the next key lights green; a green key does nothing; any other key strikes."""
    green = m["pressed"][target] == 1
    valid = (verb == PRESS) & ~green
    right = target == next_key(m, ctx.rules)
    pressed = m["pressed"].at[target].max((valid & right).astype(jnp.int32))
    return dict(m, pressed=pressed), valid & ~right, jnp.all(pressed == 1) & valid & right, valid


def oracle(m, ctx):
    """The next correct ``(verb, target)`` by the rules (int32 scalars)."""
    return jnp.int32(PRESS), next_key(m, ctx.rules)


def view(m, rules):
    """``[k] position symbol green|unlit ;`` per key in reading order."""
    lit = jnp.where(m["pressed"] == 1, V.tok("green"), V.tok("unlit"))
    per_key = jnp.stack(
        [
            jnp.asarray(V.LABEL[:N_KEYS]),
            jnp.asarray(_POS_TOK),
            jnp.asarray(_SYMBOL_TOK)[m["symbols"]],
            lit,
            jnp.full(N_KEYS, V.tok(";")),
        ],
        axis=1,
    )
    return view_tokens([per_key.reshape(-1)])


def describe(m, rules):
    """Host-side JSON-ready dict of the module (numpy fields in; see the export schema)."""
    return {
        "symbols": [T.KEYPAD_SYMBOLS[s] for s in m["symbols"]],
        "pressed": [bool(p) for p in m["pressed"]],
    }


def manual(rules) -> str:
    """The Expert's manual page, written from the rule tables."""
    lines = [
        "KEYPAD. Four keys carry symbols. Exactly one column below holds all four; press the",
        "keys in the order their symbols appear in that column, top to bottom. A key pressed",
        "out of order is a strike (keys already lit green stay lit).",
    ]
    for c, column in enumerate(rules.keypad_columns, start=1):
        lines.append(f"  column {c}: " + ", ".join(T.KEYPAD_SYMBOLS[s] for s in column))
    return "\n".join(lines)


KEYPAD = ModuleType(
    name="keypad",
    title="Keypad",
    layout=LAYOUT,
    n_targets=N_KEYS,
    verbs=(PRESS,),
    generate=generate,
    act=act,
    oracle=oracle,
    view=view,
    describe=describe,
    manual=manual,
)
