"""Who's on First (vanilla KTANE manual, Who's on First): three stages of display word → button
word.

State: ``stage`` (0-based correct presses so far), ``display`` (id into ``WOF_DISPLAYS``) and
``buttons[6]`` (label ids at TL, TR, ML, MR, BL, BR). Every press redraws display and buttons;
a wrong press is a strike and keeps the stage.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.draw import permutation, randint, uniforms
from jaxcollab.envs.ktane.modules.base import PRESS, Layout, ModuleType, view_tokens

N_BUTTONS = 6
LAYOUT = Layout({"stage": (), "display": (), "buttons": (N_BUTTONS,)})
_DISPLAY_TOK = V.toks([w or "(empty)" for w in T.WOF_DISPLAYS])
_LABEL_TOK = V.toks(T.WOF_LABELS)
_POS_TOK = V.toks(T.WOF_POSITIONS)


def answer(display: jax.Array, buttons: jax.Array, rules) -> jax.Array:
    """Position to press (int32 ``[]``): read the button ``rules.wof_read[display]`` points
    at, then take the button whose label ranks first in that label's priority list."""
    read = buttons[rules.wof_read[display]]
    return jnp.argmin(rules.wof_rank[read, buttons]).astype(jnp.int32)


def draw(key) -> tuple[jax.Array, jax.Array]:
    """A uniform display and 6 distinct labels from one uniformly chosen 14-word group."""
    u = uniforms(key, 2 + T.WOF_GROUP_SIZE)
    display = randint(u[0], 0, len(T.WOF_DISPLAYS))
    group = randint(u[1], 0, 2)
    pick = permutation(u[2:])[:N_BUTTONS]
    return display, pick + T.WOF_GROUP_SIZE * group


def generate(key, facts, rules):
    """Stage 1 with a fresh display and buttons (:func:`draw`)."""
    display, buttons = draw(key)
    return {"stage": jnp.int32(0), "display": display, "buttons": buttons}


def act(key, m, verb, target, ctx):
    """PRESS: the right button advances the stage; any press redraws display and buttons."""
    valid = verb == PRESS
    right = target == answer(m["display"], m["buttons"], ctx.rules)
    display, buttons = draw(key)
    stage = m["stage"] + (valid & right)
    m = dict(
        stage=stage,
        display=jnp.where(valid, display, m["display"]),
        buttons=jnp.where(valid, buttons, m["buttons"]),
    )
    return m, valid & ~right, valid & right & (stage == T.WOF_STAGES), valid


def oracle(m, ctx):
    """The next correct ``(verb, target)`` by the rules (int32 scalars)."""
    return jnp.int32(PRESS), answer(m["display"], m["buttons"], ctx.rules)


def view(m, rules):
    """``stage s of 3 ; display WORD ; [k] position LABEL ;`` for the 6 buttons."""
    per_button = jnp.stack(
        [
            jnp.asarray(V.LABEL[:N_BUTTONS]),
            jnp.asarray(_POS_TOK),
            jnp.asarray(_LABEL_TOK)[m["buttons"]],
        ],
        1,
    )
    return view_tokens(
        [
            V.tok("stage"),
            jnp.asarray(V.DIGIT)[m["stage"] + 1],
            V.tok("of"),
            V.DIGIT[T.WOF_STAGES],
            V.tok(";"),
            V.tok("display"),
            jnp.asarray(_DISPLAY_TOK)[m["display"]],
            V.tok(";"),
            per_button.reshape(-1),
        ]
    )


def describe(m, rules):
    """Host-side JSON-ready dict of the module (numpy fields in; see the export schema)."""
    return {
        "stage": int(m["stage"]) + 1,
        "display": T.WOF_DISPLAYS[int(m["display"])],
        "buttons": [T.WOF_LABELS[b] for b in m["buttons"]],
    }


def manual(rules) -> str:
    """The Expert's manual page, written from the rule tables."""
    lines = [
        "WHO'S ON FIRST. A display shows a word and six buttons show words (positions TL, TR,",
        "ML, MR, BL, BR). Step 1: the display word tells you which button to read:",
    ]
    for pos, name in enumerate(T.WOF_POSITIONS):
        words = [
            f'"{w}"' if w else "(empty display)"
            for w, p in zip(T.WOF_DISPLAYS, rules.wof_read, strict=True)
            if p == pos
        ]
        lines.append(f"  read {name}: " + ", ".join(words))
    lines.append("Step 2: find the list for the word on that button, and press the first word of")
    lines.append("the list that is on a button. Three stages; a wrong press is a strike and the")
    lines.append("stage starts over with new words.")
    for label, lst in zip(T.WOF_LABELS, rules.wof_lists, strict=True):
        lines.append(f'  "{label}": ' + ", ".join(T.WOF_LABELS[i] for i in lst))
    return "\n".join(lines)


WHOS_ON_FIRST = ModuleType(
    name="whos_on_first",
    title="Who's on First",
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
