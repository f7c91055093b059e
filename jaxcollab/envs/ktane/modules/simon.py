"""Simon Says (the vanilla KTANE Bomb Defusal Manual, Simon Says): repeat the flashes through a
colour mapping.

State: ``seq[5]`` (flashed colours; only the first ``length`` matter), ``length`` (3–5),
``stage`` (colours flashing now, 1-based) and ``entered`` (correct presses in this stage).
Targets are the 4 colour buttons in :data:`~jaxcollab.envs.ktane.tables.SIMON_COLORS` order.
The mapping reads the serial vowel and the bomb's **current** strikes, so it changes after a
strike.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.draw import randint, uniforms
from jaxcollab.envs.ktane.modules.base import PRESS, Layout, ModuleType, view_tokens

LAYOUT = Layout({"seq": (T.SIMON_MAX_LEN,), "length": (), "stage": (), "entered": ()})
_COLOR_TOK = V.toks(T.SIMON_COLORS)
N_BUTTONS = len(T.SIMON_COLORS)


def expected(m, ctx) -> jax.Array:
    """The colour to press next (int32 ``[]``): ``rules.simon_map[vowel, min(strikes, 2),
    flash]``."""
    flash = m["seq"][m["entered"]]
    table = ctx.rules.simon_map
    return table[ctx.facts.serial_vowel.astype(jnp.int32), jnp.minimum(ctx.strikes, 2), flash]


def generate(key, facts, rules):
    """Sequence length uniform in 3-5, colours uniform; stage 1, nothing entered."""
    u = uniforms(key, 1 + T.SIMON_MAX_LEN)
    return {
        "seq": randint(u[1:], 0, N_BUTTONS),
        "length": randint(u[0], T.SIMON_MIN_LEN, T.SIMON_MAX_LEN + 1),
        "stage": jnp.int32(1),
        "entered": jnp.int32(0),
    }


def act(key, m, verb, target, ctx):
    """PRESS: the expected colour advances the entry (and the stage once all its colours are
    in); any other colour strikes and restarts entry at the start of the stage."""
    valid = verb == PRESS
    right = target == expected(m, ctx)
    entered = jnp.where(right, m["entered"] + 1, 0)
    stage_done = right & (entered == m["stage"])
    stage = m["stage"] + stage_done
    m_new = dict(m, stage=stage, entered=jnp.where(stage_done, 0, entered))
    m = jax.tree.map(lambda new, old: jnp.where(valid, new, old), m_new, m)
    return m, valid & ~right, valid & stage_done & (stage > m["length"]), valid


def oracle(m, ctx):
    """The next correct ``(verb, target)`` by the rules (int32 scalars)."""
    return jnp.int32(PRESS), expected(m, ctx)


def view(m, rules):
    """``flashes c1 … ck ; entered n ; [A] red [B] blue [C] green [D] yellow``."""
    shown = jnp.arange(T.SIMON_MAX_LEN) < m["stage"]
    flashes = jnp.where(shown, jnp.asarray(_COLOR_TOK)[m["seq"]], 0)
    buttons = jnp.stack([jnp.asarray(V.LABEL[:N_BUTTONS]), jnp.asarray(_COLOR_TOK)], 1)
    return view_tokens(
        [
            V.tok("flashes"),
            flashes,
            V.tok(";"),
            V.tok("entered"),
            jnp.asarray(V.DIGIT)[m["entered"]],
            V.tok(";"),
            buttons.reshape(-1),
        ]
    )


def describe(m, rules):
    """Host-side JSON-ready dict of the module (numpy fields in; see the export schema)."""
    length = int(m["length"])
    return {
        "sequence": [T.SIMON_COLORS[c] for c in m["seq"][:length]],
        "stage": int(m["stage"]),
        "entered": int(m["entered"]),
    }


def manual(rules) -> str:
    """The Expert's manual page, written from the rule tables."""
    cols = " | ".join(f"{c} flash" for c in T.SIMON_COLORS)
    lines = [
        "SIMON SAYS. Four coloured buttons flash a sequence that grows by one each stage. Press",
        "the buttons that the flashed colours map to, in order, from the first flash. The map",
        "depends on whether the serial number has a vowel and on the strikes so far:",
        f"  vowel? strikes | {cols}",
    ]
    for vowel in (1, 0):
        for strikes in range(3):
            row = " | ".join(T.SIMON_COLORS[c] for c in rules.simon_map[vowel, strikes])
            s = f"{strikes}+" if strikes == 2 else str(strikes)
            lines.append(f"  {'yes' if vowel else 'no ':3}    {s:7} | {row}")
    lines.append("A wrong press is a strike; start the current stage again with the new map.")
    return "\n".join(lines)


SIMON = ModuleType(
    name="simon",
    title="Simon Says",
    layout=LAYOUT,
    n_targets=N_BUTTONS,
    verbs=(PRESS,),
    generate=generate,
    act=act,
    oracle=oracle,
    view=view,
    describe=describe,
    manual=manual,
)
