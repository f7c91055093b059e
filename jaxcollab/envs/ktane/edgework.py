"""Serial number, widgets and timer display (GPTNT, App. B.1; the vanilla KTANE Bomb Defusal Manual,
Appendices A–C).

Edgework is drawn once per episode and never changes. Widgets live in fixed-shape arrays of
:data:`~jaxcollab.envs.ktane.tables.MAX_WIDGETS` entries (``kind = -1`` marks an unused entry):

* battery holder: ``a`` = batteries held (1 = D, 2 = AA);
* indicator: ``a`` = label id (distinct across indicators), ``b`` = 1 if lit;
* port plate: ``a`` = port group (0 = Serial/Parallel, 1 = DVI-D/PS-2/RJ-45/Stereo RCA),
  ``b`` = bit mask over :data:`~jaxcollab.envs.ktane.tables.PORT_NAMES`.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane.draw import permutation, randint, uniforms


@chex.dataclass(frozen=True)
class Edgework:
    """The bomb's casing: int32 ``serial[6]`` (codes into ``SERIAL_CHARS``), ``serial_side[]``
    (face index), and widgets ``kind, a, b, side`` each int32 ``[MAX_WIDGETS]``."""

    serial: jax.Array
    serial_side: jax.Array
    kind: jax.Array
    a: jax.Array
    b: jax.Array
    side: jax.Array


@chex.dataclass(frozen=True)
class Facts:
    """The edgework predicates the rules read (the manual's module pages).

    Attributes:
        serial_odd, serial_vowel, parallel: bool ``[]``; batteries: int32 ``[]``;
        lit: bool ``[11]``, lit[i] is True iff a lit indicator shows ``INDICATOR_LABELS[i]``.
    """

    serial_odd: jax.Array
    serial_vowel: jax.Array
    batteries: jax.Array
    lit: jax.Array
    parallel: jax.Array


def sample_serial(u: jax.Array) -> jax.Array:
    """int32 ``[6]`` serial codes with pattern [any][any][digit][letter][letter][digit], from
    six uniforms ``u``, drawn as the game does from its 35-entry table ``SERIAL_DRAW`` (E
    twice; letters from its letter part)."""
    n_any, n_letters = len(T.SERIAL_DRAW), T.SERIAL_DRAW_LETTERS
    high = jnp.array([n_any, n_any, T.N_DIGITS, n_letters, n_letters, T.N_DIGITS])
    is_digit = jnp.array([False, False, True, False, False, True])
    draw = randint(u, 0, high)
    return jnp.where(is_digit, draw, jnp.asarray(T.SERIAL_DRAW)[draw]).astype(jnp.int32)


def sample_edgework(key: jax.Array, n_widgets: jax.Array) -> Edgework:
    """Draw a serial number and ``n_widgets`` widgets (int32 ``[]``, 0…MAX_WIDGETS, may be traced).

    Each widget is uniformly a battery holder (D or AA, p = 1/2), an indicator (a label not used
    by another indicator, lit with p = 0.6) or a port plate (one group, each of its ports present
    with p = 1/2). Widgets and the serial sit on uniformly drawn side faces.
    """
    w, n_labels = T.MAX_WIDGETS, len(T.INDICATOR_LABELS)
    u = jnp.split(uniforms(key, 9 * w + n_labels + 7), np.cumsum([w] * 5 + [4 * w, n_labels, 6]))
    kind = jnp.where(jnp.arange(w) < n_widgets, randint(u[0], 0, 3), -1)
    holder = randint(u[1], 1, 3)
    lit = (u[2] < T.INDICATOR_LIT_P).astype(jnp.int32)
    group = randint(u[3], 0, 2)
    side = randint(u[4], T.SIDE_FACES[0], T.SIDE_FACES[-1] + 1)
    present = u[5].reshape(w, 4) < 0.5
    label = permutation(u[6])[:w]
    ports = jnp.asarray(T.PORT_GROUPS)[group]  # [w, 4]
    mask = jnp.sum(jnp.where(present & (ports >= 0), 1 << jnp.maximum(ports, 0), 0), axis=1)
    a = jnp.select(
        [kind == T.BATTERY, kind == T.INDICATOR, kind == T.PORTS], [holder, label, group], 0
    )
    b = jnp.select([kind == T.INDICATOR, kind == T.PORTS], [lit, mask], 0)
    return Edgework(
        serial=sample_serial(u[7]),
        serial_side=randint(u[8][0], T.SIDE_FACES[0], T.SIDE_FACES[-1] + 1),
        kind=kind.astype(jnp.int32),
        a=a.astype(jnp.int32),
        b=b.astype(jnp.int32),
        side=side,
    )


def facts(edge: Edgework) -> Facts:
    """Evaluate the rule predicates of ``edge`` (jit-safe)."""
    is_ind = (edge.kind == T.INDICATOR) & (edge.b == 1)
    lit = jnp.any(is_ind[:, None] & (edge.a[:, None] == jnp.arange(len(T.INDICATOR_LABELS))), 0)
    return Facts(
        serial_odd=edge.serial[5] % 2 == 1,
        serial_vowel=jnp.any(edge.serial[:, None] == jnp.asarray(T.VOWEL_CODES)),
        batteries=jnp.sum(jnp.where(edge.kind == T.BATTERY, edge.a, 0)),
        lit=lit,
        parallel=jnp.any((edge.kind == T.PORTS) & ((edge.b >> T.PARALLEL) & 1 == 1)),
    )


def display_digits(time_left_cs: jax.Array) -> jax.Array:
    """The four digits of the timer display, int32 ``[4]`` (as the game shows it).

    ``MM:SS`` (minutes modulo 100) at 60 s or more, ``SS.cc`` below 60 s; time in centiseconds.
    """
    t = jnp.maximum(time_left_cs, 0)
    secs = t // 100
    minutes = jnp.stack([secs // 60 % 100, secs % 60])
    seconds = jnp.stack([secs, t % 100])
    hi, lo = jnp.where(t >= 6000, minutes, seconds)
    return jnp.stack([hi // 10, hi % 10, lo // 10, lo % 10]).astype(jnp.int32)


def display_text(time_left_cs: int) -> str:
    """Host-side ``MM:SS`` / ``SS.cc`` string of a time in centiseconds."""
    t = max(int(time_left_cs), 0)
    if t >= 6000:
        return f"{t // 6000 % 100:02d}:{t // 100 % 60:02d}"
    return f"{t // 100:02d}.{t % 100:02d}"
