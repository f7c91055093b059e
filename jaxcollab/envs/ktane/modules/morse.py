"""Morse Code (vanilla KTANE manual, Morse Code): read the looping light, dial its frequency, TX.

State: ``word`` (index into ``MORSE_WORDS``, also the answer's dial position), ``dial`` (0–15,
starts at 3.505 MHz) and ``phase`` (which letter of the loop the light is at when the Defuser
looks, ``n_letters`` = the pause before the word repeats). Targets: ``[A]`` dial left,
``[B]`` dial right, ``[C]`` TX.

The light is a timed signal (:func:`signal`: on/off per dot unit, standard Morse timing, the
word looping after a 7-unit pause). The Defuser's view is one full loop of it as watched from
``phase``: each letter's dot-dash pattern, and ``pause`` where the long gap falls, so the word's
start has to be found as in the game.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.draw import randint, uniforms
from jaxcollab.envs.ktane.modules.base import PRESS, Layout, ModuleType, view_tokens

LAYOUT = Layout({"word": (), "dial": (), "phase": ()})
LEFT, RIGHT, TX = range(3)
N_WORDS = len(T.MORSE_WORDS)
LOOP = T.MORSE_MAX_LETTERS + 1  # letters + the pause
_N_LETTERS = np.array([len(w) for w in T.MORSE_WORDS], np.int32)
#: _LOOP_TOK[word, k]: token of the loop's k-th element (letter patterns, "pause", padding).
_LOOP_TOK = np.zeros((N_WORDS, LOOP), np.int32)
for _w, _word in enumerate(T.MORSE_WORDS):
    _LOOP_TOK[_w, : len(_word) + 1] = V.toks([T.MORSE_CODE[c] for c in _word] + ["pause"])
_FREQ_TOK = V.toks(T.MORSE_FREQS)


def signal(word: str) -> np.ndarray:
    """Host-side light of one loop of ``word``: bool ``[units]``, one entry per dot unit
    (``T.MORSE_UNIT_S`` seconds), ending with the pause before the word repeats.

    Raises:
        KeyError: a letter without a Morse pattern in ``T.MORSE_CODE``.
    """
    units: list[bool] = []
    for i, letter in enumerate(word):
        for j, symbol in enumerate(T.MORSE_CODE[letter]):
            units += [True] * (T.MORSE_DOT if symbol == "." else T.MORSE_DASH)
            if j < len(T.MORSE_CODE[letter]) - 1:
                units += [False] * T.MORSE_SYMBOL_GAP
        units += [False] * (T.MORSE_LETTER_GAP if i < len(word) - 1 else T.MORSE_WORD_GAP)
    return np.array(units, bool)


def generate(key, facts):
    """A uniform word, the dial at 3.505 MHz, and a uniform phase of the loop."""
    u = uniforms(key, 2)
    word = randint(u[0], 0, N_WORDS)
    return {
        "word": word,
        "dial": jnp.int32(T.MORSE_START),
        "phase": randint(u[1], 0, jnp.asarray(_N_LETTERS)[word] + 1),
    }


def act(key, m, verb, target, ctx):
    """PRESS left / right moves the dial one step (no effect at either end); TX solves at the
    word's frequency and strikes at any other."""
    step = jnp.where(target == LEFT, -1, jnp.where(target == RIGHT, 1, 0))
    dial = m["dial"] + step
    moved = (target != TX) & (dial >= 0) & (dial < N_WORDS)
    valid = (verb == PRESS) & (moved | (target == TX))
    tx = valid & (target == TX)
    right = m["dial"] == m["word"]
    m = dict(m, dial=jnp.where(valid & moved, dial, m["dial"]))
    return m, tx & ~right, tx & right, valid


def oracle(m, ctx):
    """Turn the dial towards the word's frequency, then TX (int32 scalars)."""
    target = jnp.where(m["dial"] < m["word"], RIGHT, jnp.where(m["dial"] > m["word"], LEFT, TX))
    return jnp.int32(PRESS), target.astype(jnp.int32)


def view(m):
    """``light p1 p2 … pause … ; frequency 3.505 MHz ; [A] left [B] right [C] TX``."""
    length = jnp.asarray(_N_LETTERS)[m["word"]] + 1
    k = jnp.arange(LOOP)
    loop = jnp.where(k < length, jnp.asarray(_LOOP_TOK)[m["word"], (m["phase"] + k) % length], 0)
    buttons = jnp.stack([jnp.asarray(V.LABEL[:3]), jnp.asarray(V.toks(("left", "right", "TX")))])
    return view_tokens(
        [
            V.tok("light"),
            loop,
            V.tok(";"),
            V.tok("frequency"),
            jnp.asarray(_FREQ_TOK)[m["dial"]],
            V.tok("MHz"),
            V.tok(";"),
            buttons.T.reshape(-1),
        ]
    )


def describe(m):
    """Host-side JSON-ready dict of the module (numpy fields in; see the export schema)."""
    word = T.MORSE_WORDS[int(m["word"])]
    return {
        "word": word,
        "frequency": T.MORSE_FREQS[int(m["word"])],
        "dial": T.MORSE_FREQS[int(m["dial"])],
        "phase": int(m["phase"]),
        "light_units": "".join("1" if x else "0" for x in signal(word)),
    }


def manual() -> str:
    """The Expert's manual page, written from the rule tables."""
    code = ", ".join(f"{c.upper()} {p}" for c, p in sorted(T.MORSE_CODE.items()))
    lines = [
        "MORSE CODE. A light flashes a word in Morse code, over and over, with a long pause",
        "(7 units) before it repeats; a dot is 1 unit, a dash 3, 1 unit between signals and 3",
        "between letters. Set the dial to the word's frequency with the left and right",
        "buttons, then press TX. TX at any other frequency is a strike.",
        f"Letters: {code}.",
    ]
    lines += [f"  {w:7} {f} MHz" for w, f in zip(T.MORSE_WORDS, T.MORSE_FREQS, strict=True)]
    return "\n".join(lines)


MORSE = ModuleType(
    name="morse",
    title="Morse Code",
    layout=LAYOUT,
    n_targets=3,
    verbs=(PRESS,),
    generate=generate,
    act=act,
    oracle=oracle,
    view=view,
    describe=describe,
    manual=manual,
)
