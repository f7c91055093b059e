"""Wires (the vanilla KTANE Bomb Defusal Manual, Wires): cut the one wire the rule table picks.

State: ``colors[6]`` (colour id per slot, -1 = empty slot), ``cut[6]`` (0/1), ``answer`` (the
slot to cut, fixed at generation). Targets are the 6 slots, top to bottom.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.draw import permutation, randint, uniforms
from jaxcollab.envs.ktane.modules.base import CUT, Layout, ModuleType, first_true, view_tokens

N_SLOTS = 6
LAYOUT = Layout({"colors": (N_SLOTS,), "cut": (N_SLOTS,), "answer": ()})
_COLOR_TOK = V.toks(T.WIRE_COLORS + ("empty",))  # index -1 → "empty"


def solution(colors: jax.Array, serial_odd: jax.Array, wire_rules: jax.Array) -> jax.Array:
    """The slot to cut (int32 ``[]``) for slot colours int32 ``[6]`` (-1 = empty), manual: Wires.

    Evaluates every row of ``wire_rules[n - 3]`` (int32 ``[4, 5, 6]``, ``Ruleset.wire_rules``)
    on a ``[condition kind, colour]`` truth table
    and applies the first row whose two conditions hold. Requires 3–6 wires.
    """
    present = colors >= 0
    n = jnp.sum(present)
    count = jnp.sum(colors[:, None] == jnp.arange(len(T.WIRE_COLORS)), axis=0)
    last_slot = N_SLOTS - 1 - first_true(present[::-1])
    truth = jnp.stack(
        [
            count == 0,
            count == 1,
            count > 1,
            jnp.arange(len(T.WIRE_COLORS)) == colors[last_slot],
            jnp.broadcast_to(serial_odd, count.shape),
            jnp.ones_like(count, bool),
        ]
    )
    rules = wire_rules[n - 3]
    holds = truth[rules[:, 0], rules[:, 1]] & truth[rules[:, 2], rules[:, 3]]
    _, _, _, _, kind, arg = rules[first_true(holds)]
    order = jnp.cumsum(present)  # 1-based wire number of each present slot
    nth = first_true(present & (order == jnp.where(arg == 0, n, arg)))
    of_color = present & (colors == arg)
    last_of = N_SLOTS - 1 - first_true(of_color[::-1])
    return jnp.where(kind == T.NTH, nth, last_of).astype(jnp.int32)


def generate(key, facts, rules):
    """n = min(uniform{3..8}, 6) wires in a random subset of slots, colours uniform."""
    u = uniforms(key, 1 + 2 * N_SLOTS)
    n = jnp.minimum(randint(u[0], 3, 9), N_SLOTS)
    rank = permutation(u[1 : 1 + N_SLOTS])
    colors = randint(u[1 + N_SLOTS :], 0, len(T.WIRE_COLORS))
    colors = jnp.where(rank < n, colors, -1)
    return {
        "colors": colors,
        "cut": jnp.zeros(N_SLOTS, jnp.int32),
        "answer": solution(colors, facts.serial_odd, rules.wire_rules),
    }


def act(key, m, verb, target, ctx):
    """CUT an intact wire: the answer solves, any other wire strikes (and stays cut)."""
    valid = (verb == CUT) & (m["colors"][target] >= 0) & (m["cut"][target] == 0)
    right = target == m["answer"]
    m = dict(m, cut=m["cut"].at[target].max(valid.astype(jnp.int32)))
    return m, valid & ~right, valid & right, valid


def oracle(m, ctx):
    """The next correct ``(verb, target)`` by the rules (int32 scalars)."""
    return jnp.int32(CUT), m["answer"]


def view(m, rules):
    """``[k] colour cut|intact ;`` per slot, top to bottom (``[k] empty`` for empty slots)."""
    state = jnp.where(m["colors"] >= 0, jnp.where(m["cut"] == 1, V.tok("cut"), V.tok("intact")), 0)
    per_slot = jnp.stack(
        [
            jnp.asarray(V.LABEL[:N_SLOTS]),
            jnp.asarray(_COLOR_TOK)[m["colors"]],
            state,
            jnp.full(N_SLOTS, V.tok(";")),
        ],
        axis=1,
    )
    return view_tokens([per_slot.reshape(-1)])


def describe(m, rules):
    """Host-side JSON-ready dict of the module (numpy fields in; see the export schema)."""
    colors = [T.WIRE_COLORS[c] if c >= 0 else None for c in m["colors"]]
    return {"colors": colors, "cut": [bool(c) for c in m["cut"]]}


_ORD = ("last", "first", "second", "third", "fourth", "fifth", "sixth")


def _condition(kind: int, color: int) -> str | None:
    c = T.WIRE_COLORS[color]
    return {
        T.NONE_OF: f"there are no {c} wires",
        T.ONE_OF: f"there is exactly one {c} wire",
        T.MANY_OF: f"there is more than one {c} wire",
        T.LAST_IS: f"the last wire is {c}",
        T.SERIAL_ODD: "the last digit of the serial number is odd",
    }.get(kind)


def _answer(kind: int, arg: int) -> str:
    if kind == T.NTH:
        return f"cut the {_ORD[arg]} wire"
    return f"cut the last {T.WIRE_COLORS[arg]} wire"


def manual(rules) -> str:
    """The Expert's manual page, written from the rule tables."""
    lines = [
        "WIRES. A panel of 3 to 6 wires. Number the wires from the top, skipping empty slots.",
        "Find the section for the number of wires and follow the first instruction whose",
        "conditions all hold. Cut exactly one wire; any other cut is a strike.",
    ]
    for n, (rows, used) in enumerate(zip(rules.wire_rules, T.WIRE_ROWS, strict=True), start=3):
        lines.append(f"{n} wires:")
        for k1, c1, k2, c2, kind, arg in np.asarray(rows)[:used]:
            conds = [c for c in (_condition(k1, c1), _condition(k2, c2)) if c]
            lead = "If " + " and ".join(conds) + ", " if conds else "Otherwise, "
            lines.append(f"  - {lead}{_answer(kind, arg)}.")
    return "\n".join(lines)


WIRES = ModuleType(
    name="wires",
    title="Wires",
    layout=LAYOUT,
    n_targets=N_SLOTS,
    verbs=(CUT,),
    generate=generate,
    act=act,
    oracle=oracle,
    view=view,
    describe=describe,
    manual=manual,
)
