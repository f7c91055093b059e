"""Wire Sequence (vanilla KTANE manual, Wire Sequences): four panels of wires seen one at a time.

State: ``wires[12]`` (``colour * 3 + target letter`` per terminal 1–12, -1 = no wire),
``cut[12]`` (0/1) and ``panel`` (0–3; panel p shows terminals 3p+1 … 3p+3). Targets: ``[A]``
– ``[C]`` the current panel's terminals (cut), ``[D]`` down (next panel), ``[E]`` up.

Occurrences are counted per colour over all wires in terminal order, so the count carries
across panels; the k-th wire of a colour must be cut iff its target letter is in
``rules.ws_rules[colour, k - 1]``. Pressing down while a must-cut wire on the panel is intact is a
strike and the panel stays; down on the last panel solves the module.
"""

from __future__ import annotations

import jax.numpy as jnp

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.draw import permutation, randint, uniforms
from jaxcollab.envs.ktane.modules.base import (
    CUT,
    PRESS,
    Layout,
    ModuleType,
    first_true,
    view_tokens,
)

N_TERMINALS = T.WS_PANELS * T.WS_PER_PANEL
LAYOUT = Layout({"wires": (N_TERMINALS,), "cut": (N_TERMINALS,), "panel": ()})
DOWN, UP = T.WS_PER_PANEL, T.WS_PER_PANEL + 1
_NUMBER_TOK = V.toks([str(k) for k in range(1, N_TERMINALS + 1)])
_COLOR_TOK = V.toks(T.WS_COLORS)
_TARGET_TOK = V.toks(T.WS_TARGETS)


def must_cut(wires, rules) -> jnp.ndarray:
    """bool ``[12]``: the wire at each terminal must be cut (False where there is none)."""
    present = wires >= 0
    color, target = jnp.maximum(wires, 0) // 3, jnp.maximum(wires, 0) % 3
    same = present[:, None] & present[None, :] & (color[:, None] == color[None, :])
    occurrence = jnp.sum(jnp.tril(same), axis=1)  # 1-based count up to and including each wire
    rule = rules.ws_rules[color, jnp.clip(occurrence - 1, 0, T.WS_PER_COLOR - 1), target]
    return present & rule


def generate(key, facts, rules):
    """As the game: a pool of 9 wires per colour with random targets; draw 10, add 3 empty
    slots, shuffle; if panel 1 is empty, swap a wire into its first terminal; drop the last."""
    pool = 3 * T.WS_PER_COLOR
    u = uniforms(key, 2 * pool + 13)
    drawn = permutation(u[:pool])[:10] // T.WS_PER_COLOR  # colours of 10 distinct pool wires
    wires = drawn * 3 + randint(u[pool : pool + 10], 0, 3)
    items = jnp.concatenate([wires, jnp.full(3, -1)])[permutation(u[2 * pool :])]
    first_empty = jnp.all(items[: T.WS_PER_PANEL] < 0)
    src = first_true(items >= 0)
    swapped = items.at[0].set(items[src]).at[src].set(items[0])
    items = jnp.where(first_empty, swapped, items)
    return {
        "wires": items[:N_TERMINALS].astype(jnp.int32),
        "cut": jnp.zeros(N_TERMINALS, jnp.int32),
        "panel": jnp.int32(0),
    }


def act(key, m, verb, target, ctx):
    """CUT a terminal of the panel (a must-not-cut wire strikes and stays cut); PRESS down
    (strikes and stays while a must-cut wire here is intact; solves on the last panel) or up."""
    must = must_cut(m["wires"], ctx.rules)
    slot = m["panel"] * T.WS_PER_PANEL + jnp.minimum(target, T.WS_PER_PANEL - 1)
    on_panel = jnp.arange(N_TERMINALS) // T.WS_PER_PANEL == m["panel"]
    cut_ok = (verb == CUT) & (target < T.WS_PER_PANEL)
    cut_ok = cut_ok & (m["wires"][slot] >= 0) & (m["cut"][slot] == 0)
    down = (verb == PRESS) & (target == DOWN)
    up = (verb == PRESS) & (target == UP) & (m["panel"] > 0)
    missed = jnp.any(on_panel & must & (m["cut"] == 0))
    leave = down & ~missed
    last = m["panel"] == T.WS_PANELS - 1
    panel = m["panel"] + jnp.where(leave & ~last, 1, 0) - up
    strike = (cut_ok & ~must[slot]) | (down & missed)
    m = dict(m, cut=m["cut"].at[slot].max(cut_ok.astype(jnp.int32)), panel=panel)
    return m, strike, leave & last, cut_ok | down | up


def oracle(m, ctx):
    """Cut the panel's first intact must-cut wire, else go down (int32 scalars)."""
    here = jnp.arange(N_TERMINALS) // T.WS_PER_PANEL == m["panel"]
    todo = here & must_cut(m["wires"], ctx.rules) & (m["cut"] == 0)
    slot = first_true(todo)
    return (
        jnp.where(jnp.any(todo), CUT, PRESS).astype(jnp.int32),
        jnp.where(jnp.any(todo), slot % T.WS_PER_PANEL, DOWN).astype(jnp.int32),
    )


def view(m, rules):
    """``panel p ; [k] terminal colour to letter cut|intact ;`` ×3 (``[k] n empty``), then
    ``[D] down [E] up``."""
    slots = m["panel"] * T.WS_PER_PANEL + jnp.arange(T.WS_PER_PANEL)
    w = m["wires"][slots]
    present = w >= 0
    state = jnp.where(m["cut"][slots] == 1, V.tok("cut"), V.tok("intact"))
    rows = jnp.stack(
        [
            jnp.asarray(V.LABEL[: T.WS_PER_PANEL]),
            jnp.asarray(_NUMBER_TOK)[slots],
            jnp.where(present, jnp.asarray(_COLOR_TOK)[jnp.maximum(w, 0) // 3], V.tok("empty")),
            jnp.where(present, V.tok("to"), 0),
            jnp.where(present, jnp.asarray(_TARGET_TOK)[jnp.maximum(w, 0) % 3], 0),
            jnp.where(present, state, 0),
            jnp.full(T.WS_PER_PANEL, V.tok(";")),
        ],
        axis=1,
    )
    return view_tokens(
        [
            V.tok("panel"),
            jnp.asarray(V.DIGIT)[m["panel"] + 1],
            V.tok(";"),
            rows.reshape(-1),
            V.LABEL[DOWN],
            V.tok("down"),
            V.LABEL[UP],
            V.tok("up"),
        ]
    )


def describe(m, rules):
    """Host-side JSON-ready dict of the module (numpy fields in; see the export schema)."""
    wires = [
        None
        if w < 0
        else {"color": T.WS_COLORS[w // 3], "target": T.WS_TARGETS[w % 3], "cut": bool(k)}
        for w, k in zip(m["wires"], m["cut"], strict=True)
    ]
    return {"wires": wires, "panel": int(m["panel"]) + 1}


def manual(rules) -> str:
    """The Expert's manual page, written from the rule tables."""
    lines = [
        "WIRE SEQUENCE. Four panels, one visible at a time, with terminals 1-12 on the left and",
        "letters A, B, C on the right; each wire is red, blue or black. Count the wires of each",
        "colour in terminal order, carrying the counts over from earlier panels. Cut the k-th",
        "wire of a colour if it goes to a letter listed for k below; cutting any other wire is",
        "a strike. Press down for the next panel once the panel is done: leaving a wire that",
        "must be cut is a strike. Down on the last panel finishes the module.",
        "  k  " + " | ".join(f"{c:5}" for c in T.WS_COLORS),
    ]
    for k in range(T.WS_PER_COLOR):
        cells = [
            ",".join(t for t, on in zip(T.WS_TARGETS, cuts, strict=True) if on) or "-"
            for cuts in rules.ws_rules[:, k]
        ]
        lines.append(f"  {k + 1}  " + " | ".join(f"{x:5}" for x in cells))
    return "\n".join(lines)


WIRE_SEQUENCE = ModuleType(
    name="wire_sequence",
    title="Wire Sequence",
    layout=LAYOUT,
    n_targets=T.WS_PER_PANEL + 2,
    verbs=(CUT, PRESS),
    generate=generate,
    act=act,
    oracle=oracle,
    view=view,
    describe=describe,
    manual=manual,
)
