"""Complicated Wires (vanilla KTANE manual, Complicated Wires): the Venn diagram decides each wire.

State: ``colors[6]`` (index into ``CW_COLORS``, -1 = empty slot), ``led[6]`` and ``star[6]``
(0/1), ``cut[6]`` (0/1). Targets are the 6 slots, left to right. A wire's red / blue / LED /
star picks an instruction letter (``rules.cw_rules``); the letter and the edgework say whether it
must be cut. The module is solved once every must-cut wire is cut.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.draw import permutation, randint, uniforms
from jaxcollab.envs.ktane.modules.base import CUT, Layout, ModuleType, first_true, view_tokens

N_SLOTS = T.CW_MAX_WIRES
LAYOUT = Layout({"colors": (N_SLOTS,), "led": (N_SLOTS,), "star": (N_SLOTS,), "cut": (N_SLOTS,)})
_COLOR_TOK = V.toks(T.CW_COLORS + ("empty",))  # index -1 → "empty"
#: Every (colour, led, star) combination, for the must-cut fallback at generation.
_COMBOS = np.array([(c, led, s) for c in range(6) for led in (0, 1) for s in (0, 1)], np.int32)


def letter(colors, led, star, rules) -> jnp.ndarray:
    """Instruction letter per wire (int32, the shape of ``colors``; empty slots read as white)."""
    c = jnp.maximum(colors, 0)
    red, blue = jnp.asarray(T.CW_RED)[c], jnp.asarray(T.CW_BLUE)[c]
    return rules.cw_rules[red.astype(int), blue.astype(int), led, star]


def must_cut(colors, led, star, facts, rules) -> jnp.ndarray:
    """bool per wire: the wire is present and its letter says cut under ``facts``."""
    cut_if = jnp.stack(
        [
            jnp.bool_(True),
            jnp.bool_(False),
            ~facts.serial_odd,
            facts.parallel,
            facts.batteries >= 2,
        ]
    )
    return (colors >= 0) & cut_if[letter(colors, led, star, rules)]


def generate(key, facts, rules):
    """n = min(uniform{4..9}, 6) wires in random slots, colouring uniform, LED and star each
    with p = 1/2; if no wire must be cut, one wire is redrawn uniformly among the must-cut
    combinations (ktanesim's generator)."""
    u = uniforms(key, 2 + 4 * N_SLOTS)
    n = jnp.minimum(randint(u[0], 4, 10), N_SLOTS)
    rank = permutation(u[2 : 2 + N_SLOTS])
    colors = jnp.where(rank < n, randint(u[2 + N_SLOTS : 2 + 2 * N_SLOTS], 0, 6), -1)
    led = (u[2 + 2 * N_SLOTS : 2 + 3 * N_SLOTS] < 0.5).astype(jnp.int32)
    star = (u[2 + 3 * N_SLOTS :] < 0.5).astype(jnp.int32)
    combos = jnp.asarray(_COMBOS)
    ok = must_cut(combos[:, 0], combos[:, 1], combos[:, 2], facts, rules)
    pick = combos[first_true(jnp.cumsum(ok) > randint(u[1], 0, jnp.sum(ok)))]
    redo = (rank == 0) & ~jnp.any(must_cut(colors, led, star, facts, rules))
    return {
        "colors": jnp.where(redo, pick[0], colors),
        "led": jnp.where(redo, pick[1], led),
        "star": jnp.where(redo, pick[2], star),
        "cut": jnp.zeros(N_SLOTS, jnp.int32),
    }


def act(key, m, verb, target, ctx):
    """CUT an intact wire: a must-cut wire is fine (the last one solves), any other strikes
    (and stays cut)."""
    must = must_cut(m["colors"], m["led"], m["star"], ctx.facts, ctx.rules)
    valid = (verb == CUT) & (m["colors"][target] >= 0) & (m["cut"][target] == 0)
    cut = m["cut"].at[target].max(valid.astype(jnp.int32))
    solved = valid & must[target] & jnp.all(~must | (cut == 1))
    return dict(m, cut=cut), valid & ~must[target], solved, valid


def oracle(m, ctx):
    """Cut the first intact must-cut wire (int32 scalars)."""
    must = must_cut(m["colors"], m["led"], m["star"], ctx.facts, ctx.rules)
    return jnp.int32(CUT), first_true(must & (m["cut"] == 0))


def view(m, rules):
    """``[k] colouring LED on|off star|none cut|intact ;`` per slot (``[k] empty`` if empty)."""
    present = m["colors"] >= 0
    on = jnp.where(m["led"] == 1, V.tok("on"), V.tok("off"))
    star = jnp.where(m["star"] == 1, V.tok("star"), V.tok("none"))
    state = jnp.where(m["cut"] == 1, V.tok("cut"), V.tok("intact"))
    per_slot = jnp.stack(
        [
            jnp.asarray(V.LABEL[:N_SLOTS]),
            jnp.asarray(_COLOR_TOK)[m["colors"]],
            jnp.where(present, on, 0),
            jnp.where(present, star, 0),
            jnp.where(present, state, 0),
            jnp.full(N_SLOTS, V.tok(";")),
        ],
        axis=1,
    )
    return view_tokens([per_slot.reshape(-1)])


def describe(m, rules):
    """Host-side JSON-ready dict of the module (numpy fields in; see the export schema)."""
    wires = [
        None
        if c < 0
        else {"color": T.CW_COLORS[c], "led": bool(led), "star": bool(s), "cut": bool(k)}
        for c, led, s, k in zip(m["colors"], m["led"], m["star"], m["cut"], strict=True)
    ]
    return {"wires": wires}


_LETTER_TEXT = {
    "C": "cut the wire",
    "D": "do not cut the wire",
    "S": "cut the wire if the last digit of the serial number is even",
    "P": "cut the wire if the bomb has a parallel port",
    "B": "cut the wire if the bomb has two or more batteries",
}


def manual(rules) -> str:
    """The Expert's manual page, written from the rule tables."""
    lines = [
        "COMPLICATED WIRES. Up to six wires, each white, red, blue or striped with two of",
        "these (red+white counts as red, blue+white as blue, red+blue as both), with an LED",
        "above it (on or off) and maybe a star below it. Look up each wire below and follow",
        "its instruction; cutting a wire you must not cut is a strike. The module is done",
        "when every wire that must be cut is cut.",
        "  red blue LED star -> instruction",
    ]
    yn = ("no ", "yes")
    for idx in np.ndindex(2, 2, 2, 2):
        ch = T.CW_LETTERS[rules.cw_rules[idx]]
        lines.append(f"  {'  '.join(yn[i] for i in idx)} -> {ch}")
    lines += [f"  {ch}: {text}." for ch, text in _LETTER_TEXT.items()]
    return "\n".join(lines)


COMPLICATED_WIRES = ModuleType(
    name="complicated_wires",
    title="Complicated Wires",
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
