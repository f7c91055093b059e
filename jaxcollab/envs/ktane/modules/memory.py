"""Memory (the vanilla KTANE Bomb Defusal Manual, Memory): five stages that refer back to earlier
presses.

State: ``stage`` (0-based), ``display`` (1–4), ``labels[4]`` (button labels 1–4, left to
right), ``hist_pos[5]`` / ``hist_label[5]`` (0-based position and label pressed at each stage,
-1 = not yet). A correct press records history and redraws; a wrong press strikes and resets
the module to stage 1 with history cleared.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.draw import permutation, randint, uniforms
from jaxcollab.envs.ktane.modules.base import PRESS, Layout, ModuleType, first_true, view_tokens

N_BUTTONS = 4
N_STAGES = T.MEMORY_STAGES
LAYOUT = Layout(
    {
        "stage": (),
        "display": (),
        "labels": (N_BUTTONS,),
        "hist_pos": (N_STAGES,),
        "hist_label": (N_STAGES,),
    }
)


def answer(m, rules) -> jax.Array:
    """Position (0-based, int32 ``[]``) to press now, from ``rules.memory_rules[stage,
    display - 1]``."""
    kind, arg = rules.memory_rules[m["stage"], m["display"] - 1]
    earlier = jnp.maximum(arg - 1, 0)
    candidates = jnp.stack(
        [
            arg - 1,
            first_true(m["labels"] == arg),
            m["hist_pos"][earlier],
            first_true(m["labels"] == m["hist_label"][earlier]),
        ]
    )
    return candidates[kind]


def draw(key) -> tuple[jax.Array, jax.Array]:
    """A uniform display 1–4 and a uniform permutation of labels 1–4."""
    u = uniforms(key, 5)
    return randint(u[0], 1, 5), permutation(u[1:]) + 1


def generate(key, facts, rules):
    """Stage 1 with a uniform display and label permutation, empty history."""
    display, labels = draw(key)
    empty = jnp.full(N_STAGES, -1, jnp.int32)
    return {
        "stage": jnp.int32(0),
        "display": display,
        "labels": labels,
        "hist_pos": empty,
        "hist_label": empty,
    }


def act(key, m, verb, target, ctx):
    """PRESS: right → record, next stage, redraw; wrong → strike, back to stage 1, redraw."""
    valid = verb == PRESS
    right = target == answer(m, ctx.rules)
    display, labels = draw(key)
    empty = jnp.full(N_STAGES, -1, jnp.int32)
    stage = jnp.where(right, m["stage"] + 1, 0)
    hist_pos = jnp.where(right, m["hist_pos"].at[m["stage"]].set(target), empty)
    hist_label = jnp.where(right, m["hist_label"].at[m["stage"]].set(m["labels"][target]), empty)
    m_new = {
        "stage": stage,
        "display": display,
        "labels": labels,
        "hist_pos": hist_pos,
        "hist_label": hist_label,
    }
    m = jax.tree.map(lambda new, old: jnp.where(valid, new, old), m_new, m)
    return m, valid & ~right, valid & right & (stage == N_STAGES), valid


def oracle(m, ctx):
    """The next correct ``(verb, target)`` by the rules (int32 scalars)."""
    return jnp.int32(PRESS), answer(m, ctx.rules)


def view(m, rules):
    """``stage s of 5 ; display d ; [k] label ;`` for the 4 buttons, left to right."""
    digits = jnp.asarray(V.DIGIT)
    per_button = jnp.stack([jnp.asarray(V.LABEL[:N_BUTTONS]), digits[m["labels"]]], 1)
    return view_tokens(
        [
            V.tok("stage"),
            digits[jnp.minimum(m["stage"] + 1, N_STAGES)],
            V.tok("of"),
            V.DIGIT[N_STAGES],
            V.tok(";"),
            V.tok("display"),
            digits[m["display"]],
            V.tok(";"),
            per_button.reshape(-1),
        ]
    )


def describe(m, rules):
    """Host-side JSON-ready dict of the module (numpy fields in; see the export schema)."""
    done = int(m["stage"])
    return {
        "stage": done + 1,
        "display": int(m["display"]),
        "labels": [int(x) for x in m["labels"]],
        "history": [
            {"position": int(p) + 1, "label": int(lab)}
            for p, lab in zip(m["hist_pos"][:done], m["hist_label"][:done], strict=True)
        ],
    }


_STEP = {
    T.POSITION: "press the button in position {}",
    T.LABEL: 'press the button labelled "{}"',
    T.POSITION_OF: "press the button in the same position as you pressed in stage {}",
    T.LABEL_OF: "press the button with the same label you pressed in stage {}",
}


def manual(rules) -> str:
    """The Expert's manual page, written from the rule tables."""
    lines = [
        "MEMORY. A display shows 1-4 above four buttons labelled 1-4 (positions 1-4, left to",
        "right). Five stages; remember the position and label you press at each stage.",
    ]
    for stage, row in enumerate(rules.memory_rules, start=1):
        lines.append(f"  Stage {stage}:")
        for display, (kind, arg) in enumerate(row, start=1):
            lines.append(f"    display {display}: {_STEP[int(kind)].format(int(arg))}.")
    lines.append("A wrong press is a strike and sends the module back to stage 1.")
    return "\n".join(lines)


MEMORY = ModuleType(
    name="memory",
    title="Memory",
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
