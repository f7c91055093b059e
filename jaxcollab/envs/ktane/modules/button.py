"""The Button (vanilla KTANE manual, The Button): tap it, or hold it and release on a timer digit.

State: ``color``, ``label``, ``hold`` (1 if the rules say hold; fixed by the edgework at
generation), ``held`` (0/1) and ``strip`` (strip colour while held, -1 otherwise; drawn anew at
every hold). One target: the button.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.draw import randint, uniforms
from jaxcollab.envs.ktane.modules.base import (
    HOLD,
    PRESS,
    RELEASE,
    WAIT,
    Layout,
    ModuleType,
    first_true,
    view_tokens,
)

LAYOUT = Layout({"color": (), "label": (), "hold": (), "held": (), "strip": ()})
_COLOR_TOK = V.toks(T.BUTTON_COLORS + ("none",))  # index -1 → "none"
_LABEL_TOK = V.toks(T.BUTTON_LABELS)


def should_hold(color: jax.Array, label: jax.Array, facts, rules) -> jax.Array:
    """1 if the button must be held, 0 if tapped (int32 ``[]``): the first matching row of
    ``rules.button_rules``."""
    r = rules.button_rules
    lit = facts.lit[jnp.maximum(r[:, 3], 0)]
    match = (
        ((r[:, 0] == T.ANY) | (r[:, 0] == color))
        & ((r[:, 1] == T.ANY) | (r[:, 1] == label))
        & ((r[:, 2] == T.ANY) | (facts.batteries > r[:, 2]))
        & ((r[:, 3] == T.ANY) | lit)
    )
    return r[first_true(match), 4]


def shows_digit(display: jax.Array, strip: jax.Array, rules) -> jax.Array:
    """True if the timer digits int32 ``[4]`` contain the release digit of ``strip``."""
    return jnp.any(display == rules.release_digit[strip])


def generate(key, facts, rules):
    """Colour and label uniform; the hold/tap decision fixed from the edgework; idle."""
    u = uniforms(key, 2)
    color = randint(u[0], 0, len(T.BUTTON_COLORS))
    label = randint(u[1], 0, len(T.BUTTON_LABELS))
    return {
        "color": color,
        "label": label,
        "hold": should_hold(color, label, facts, rules),
        "held": jnp.int32(0),
        "strip": jnp.int32(-1),
    }


def act(key, m, verb, target, ctx):
    """PRESS taps (strike if it must be held); HOLD lights a random strip; RELEASE solves if the
    button must be held and the display shows the strip's digit, else strikes. Any strike or
    release leaves the button idle."""
    held = m["held"] == 1
    must_hold = m["hold"] == 1
    tap = (verb == PRESS) & ~held
    grab = (verb == HOLD) & ~held
    release = (verb == RELEASE) & held
    good_release = must_hold & shows_digit(ctx.display, jnp.maximum(m["strip"], 0), ctx.rules)
    solved = (tap & ~must_hold) | (release & good_release)
    strike = (tap & must_hold) | (release & ~good_release)
    strip = randint(uniforms(key, 1)[0], 0, len(T.BUTTON_COLORS))
    m = dict(
        m,
        held=(grab | (held & ~release)).astype(jnp.int32),
        strip=jnp.where(grab, strip, jnp.where(release, -1, m["strip"])),
    )
    return m, strike, solved, tap | grab | release


def oracle(m, ctx):
    """The next correct ``(verb, target)`` by the rules (int32 scalars)."""
    held = m["held"] == 1
    idle_verb = jnp.where(m["hold"] == 1, HOLD, PRESS)
    shown = shows_digit(ctx.display, jnp.maximum(m["strip"], 0), ctx.rules)
    held_verb = jnp.where(shown, RELEASE, WAIT)
    return jnp.where(held, held_verb, idle_verb).astype(jnp.int32), jnp.int32(0)


def view(m, rules):
    """``[A] button colour label ; held|idle ; strip colour|none`` (the strip shows only while
    held)."""
    held = m["held"] == 1
    return view_tokens(
        [
            V.LABEL[0],
            V.tok("button"),
            jnp.asarray(_COLOR_TOK)[m["color"]],
            jnp.asarray(_LABEL_TOK)[m["label"]],
            V.tok(";"),
            jnp.where(held, V.tok("held"), V.tok("idle")),
            V.tok(";"),
            V.tok("strip"),
            jnp.asarray(_COLOR_TOK)[jnp.where(held, m["strip"], -1)],
        ]
    )


def describe(m, rules):
    """Host-side JSON-ready dict of the module (numpy fields in; see the export schema)."""
    strip = int(m["strip"])
    return {
        "color": T.BUTTON_COLORS[int(m["color"])],
        "label": T.BUTTON_LABELS[int(m["label"])],
        "held": bool(m["held"]),
        "strip": T.BUTTON_COLORS[strip] if strip >= 0 else None,
    }


def _rule(color, label, batteries, indicator) -> str:
    parts = []
    if color != T.ANY:
        parts.append(f"the button is {T.BUTTON_COLORS[color]}")
    if label != T.ANY:
        parts.append(f'the button says "{T.BUTTON_LABELS[label]}"')
    if batteries != T.ANY:
        parts.append(f"there are more than {batteries} batteries on the bomb")
    if indicator != T.ANY:
        parts.append(f"there is a lit indicator labelled {T.INDICATOR_LABELS[indicator]}")
    return "If " + " and ".join(parts) + ", " if parts else "Otherwise, "


def manual(rules) -> str:
    """The Expert's manual page, written from the rule tables."""
    lines = ["THE BUTTON. Take the first rule that applies:"]
    for color, label, batteries, indicator, hold in np.asarray(rules.button_rules):
        what = "hold the button down (see below)" if hold else "press and release it at once"
        lines.append(f"  - {_rule(color, label, batteries, indicator)}{what}.")
    lines.append("While held, a coloured strip lights up at its side. Release the button when the")
    lines.append("countdown display shows this digit in any position:")
    for color, digit in zip(T.BUTTON_COLORS, rules.release_digit, strict=True):
        lines.append(f"  - {color} strip: {digit}")
    lines.append("Tapping a button that should be held, holding one that should be tapped, or")
    lines.append("releasing at the wrong time is a strike.")
    return "\n".join(lines)


BUTTON = ModuleType(
    name="button",
    title="The Button",
    layout=LAYOUT,
    n_targets=1,
    verbs=(PRESS, HOLD, RELEASE),
    generate=generate,
    act=act,
    oracle=oracle,
    view=view,
    describe=describe,
    manual=manual,
)
