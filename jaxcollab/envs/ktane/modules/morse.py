"""Morse Code (vanilla KTANE manual, Morse Code): read the looping light, dial its frequency, TX.

State: ``word`` (the answer's dial position; its word is ``rules.morse_words[word]``),
``dial`` (0–15, starts at 3.505 MHz) and ``phase`` (which letter of the loop the light is at
when the Defuser looks, ``n_letters`` = the pause before the word repeats). Targets: ``[A]``
dial left, ``[B]`` dial right, ``[C]`` TX.

The light is a timed signal (:func:`signal`: on/off per dot unit, standard Morse timing, the
word looping after a 7-unit pause). The Defuser's view is one full loop of it as watched from
``phase``: each letter's dot-dash pattern, and ``pause`` where the long gap falls, so the word's
start has to be found as in the game.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.draw import randint, uniforms
from jaxcollab.envs.ktane.modules.base import PRESS, Layout, ModuleType, view_tokens

LAYOUT = Layout({"word": (), "dial": (), "phase": ()})
LEFT, RIGHT, TX = range(3)
N_WORDS = len(T.MORSE_FREQS)
LOOP = T.MORSE_MAX_LETTERS + 1  # letters + the pause
#: _PATTERN_TOK[letter id]: token of the letter's dot-dash pattern (``T.MORSE_ALPHABET`` order).
_PATTERN_TOK = V.toks([T.MORSE_CODE[c] for c in T.MORSE_ALPHABET])
_FREQ_TOK = V.toks(T.MORSE_FREQS)


def n_letters(rules, word: jax.Array) -> jax.Array:
    """int32: letters of the word at dial position ``word``."""
    return jnp.sum(rules.morse_words[word] >= 0, axis=-1).astype(jnp.int32)


def loop_tokens(rules, word: jax.Array) -> jax.Array:
    """int32 ``[LOOP]``: one loop of the word's light (letter patterns, then ``pause``, 0 pad)."""
    letters = jnp.concatenate([rules.morse_words[word], jnp.full(1, -1, jnp.int32)])
    tok = jnp.where(letters >= 0, jnp.asarray(_PATTERN_TOK)[jnp.maximum(letters, 0)], 0)
    return jnp.where(jnp.arange(LOOP) == n_letters(rules, word), V.tok("pause"), tok)


def word_text(rules, word: int) -> str:
    """Host-side: the word at dial position ``word`` of a numpy ruleset."""
    return "".join(T.MORSE_ALPHABET[i] for i in rules.morse_words[word] if i >= 0)


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


def generate(key, facts, rules):
    """A uniform word, the dial at 3.505 MHz, and a uniform phase of the loop."""
    u = uniforms(key, 2)
    word = randint(u[0], 0, N_WORDS)
    return {
        "word": word,
        "dial": jnp.int32(T.MORSE_START),
        "phase": randint(u[1], 0, n_letters(rules, word) + 1),
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


def view(m, rules):
    """``light p1 p2 … pause … ; frequency 3.505 MHz ; [A] left [B] right [C] TX``."""
    length = n_letters(rules, m["word"]) + 1
    k = jnp.arange(LOOP)
    loop = jnp.where(k < length, loop_tokens(rules, m["word"])[(m["phase"] + k) % length], 0)
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


def describe(m, rules):
    """Host-side JSON-ready dict of the module (numpy fields in; see the export schema)."""
    word = word_text(rules, int(m["word"]))
    return {
        "word": word,
        "frequency": T.MORSE_FREQS[int(m["word"])],
        "dial": T.MORSE_FREQS[int(m["dial"])],
        "phase": int(m["phase"]),
        "light_units": "".join("1" if x else "0" for x in signal(word)),
    }


def manual(rules) -> str:
    """The Expert's manual page, written from the rule tables."""
    code = ", ".join(f"{c.upper()} {p}" for c, p in sorted(T.MORSE_CODE.items()))
    lines = [
        "MORSE CODE. A light flashes a word in Morse code, over and over, with a long pause",
        "(7 units) before it repeats; a dot is 1 unit, a dash 3, 1 unit between signals and 3",
        "between letters. Set the dial to the word's frequency with the left and right",
        "buttons, then press TX. TX at any other frequency is a strike.",
        f"Letters: {code}.",
    ]
    lines += [f"  {word_text(rules, k):7} {f} MHz" for k, f in enumerate(T.MORSE_FREQS)]
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
