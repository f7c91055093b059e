"""Passwords (the vanilla KTANE Bomb Defusal Manual, Passwords): cycle five letter columns to spell
the password.

State: ``columns[5]`` (each column's 6 letters, 0–25, packed 5 bits apiece), ``index[5]`` (the
letter shown in each column) and ``answer`` (index into ``rules.password_codes``). Targets: ``[A]``
– ``[E]`` each column's up arrow (previous letter), ``[F]`` – ``[J]`` its down arrow (next
letter), ``[K]`` submit. Exactly one listed word can be spelled from the columns.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.draw import randint, uniforms
from jaxcollab.envs.ktane.modules.base import PRESS, Layout, ModuleType, view_tokens

K, C = T.PW_LETTERS, T.PW_COLUMN
N_LETTERS = len(T.LETTERS)
SUBMIT = 2 * K
LAYOUT = Layout({"columns": (K,), "index": (K,), "answer": ()})
_SHIFT = 5 * np.arange(C, dtype=np.int32)  # numpy: no device array at import


def unpack(columns: jax.Array) -> jax.Array:
    """int32 ``[5, 6]`` letters of the packed ``columns[5]``."""
    return (columns[:, None] >> _SHIFT) & 31


def pack(letters: jax.Array) -> jax.Array:
    """int32 ``[5]`` packed columns of letters ``[5, 6]`` (0–25)."""
    return jnp.sum(letters << _SHIFT, axis=1).astype(jnp.int32)


def shown(m) -> jax.Array:
    """int32 ``[5]``: the letter each column shows."""
    return jnp.take_along_axis(unpack(m["columns"]), m["index"][:, None], 1)[:, 0]


def generate(key, facts, rules):
    """ktanesim's generator: pick the password; for every other word still spellable, remove
    one of its letters that differs from the password's from that column; then each column is
    the password's letter and 5 random remaining letters, shuffled, showing a random one."""
    codes = rules.password_codes
    n_words = codes.shape[0]
    u = uniforms(key, 1 + n_words * K + K * N_LETTERS + K * C + K)
    answer = randint(u[0], 0, n_words)
    # A one-hot sum, not ``codes[answer]``: XLA CPU fuses that gather, with the hash chain behind
    # its index, into every element of the fill below, and LLVM then took > 15 min to compile the
    # unbatched reset (vmapped it was 3 s). Same values.
    target = jnp.sum(jnp.where((jnp.arange(n_words) == answer)[:, None], codes, 0), axis=0)
    u_del = u[1 : 1 + n_words * K].reshape(n_words, K)
    u_fill = u[1 + n_words * K : 1 + n_words * K + K * N_LETTERS].reshape(K, N_LETTERS)
    u_mix = u[-K * C - K : -K].reshape(K, C)
    letters_ax = jnp.arange(N_LETTERS)

    def exclude(w, avail):
        word = codes[w]
        spellable = (w != answer) & jnp.all(avail[jnp.arange(K), word])
        col = jnp.argmax(jnp.where(word != target, u_del[w], -1.0))
        return avail.at[col, word[col]].set(avail[col, word[col]] & ~spellable)

    avail = jax.lax.fori_loop(0, n_words, exclude, jnp.ones((K, N_LETTERS), bool))
    avail = avail & (letters_ax != target[:, None])
    others = jnp.argsort(jnp.where(avail, u_fill, 2.0), axis=1)[:, : C - 1]
    letters = jnp.concatenate([target[:, None], others], axis=1)
    letters = jnp.take_along_axis(letters, jnp.argsort(u_mix, axis=1), 1)
    return {
        "columns": pack(letters),
        "index": randint(u[-K:], 0, C),
        "answer": answer,
    }


def act(key, m, verb, target, ctx):
    """PRESS an arrow to cycle its column; submit solves on the password, else strikes."""
    valid = verb == PRESS
    col = target % K
    step = jnp.where(target < K, -1, 1)
    arrow = valid & (target < SUBMIT)
    index = m["index"].at[col].set(jnp.where(arrow, (m["index"][col] + step) % C, m["index"][col]))
    submit = valid & (target == SUBMIT)
    right = jnp.all(shown(m) == ctx.rules.password_codes[m["answer"]])
    return dict(m, index=index), submit & ~right, submit & right, valid


def oracle(m, ctx):
    """Turn the first wrong column the short way to the password's letter, else submit."""
    letters = unpack(m["columns"])
    want = ctx.rules.password_codes[m["answer"]]
    pos = jnp.argmax(letters == want[:, None], axis=1)
    ahead = (pos - m["index"]) % C
    wrong = ahead != 0
    col = jnp.argmax(wrong)
    target = jnp.where(ahead[col] <= C // 2, K + col, col)
    return jnp.int32(PRESS), jnp.where(jnp.any(wrong), target, SUBMIT).astype(jnp.int32)


def _word(rules, w: int) -> str:
    """Host-side: password word ``w`` of a numpy ruleset, lower case."""
    return "".join(T.LETTERS[c] for c in rules.password_codes[w]).lower()


def view(m, rules):
    """``display L1 … L5 ; up [A] … [E] ; down [F] … [J] ; [K] submit``."""
    labels = jnp.asarray(V.LABEL)
    return view_tokens(
        [
            V.tok("display"),
            jnp.asarray(V.toks(T.LETTERS))[shown(m)],
            V.tok(";"),
            V.tok("up"),
            labels[:K],
            V.tok(";"),
            V.tok("down"),
            labels[K:SUBMIT],
            V.tok(";"),
            labels[SUBMIT],
            V.tok("submit"),
        ]
    )


def describe(m, rules):
    """Host-side JSON-ready dict of the module (numpy fields in; see the export schema)."""
    letters = unpack(jnp.asarray(m["columns"]))
    return {
        "columns": ["".join(T.LETTERS[int(x)] for x in col) for col in letters],
        "index": [int(i) for i in m["index"]],
        "password": _word(rules, int(m["answer"])),
    }


def manual(rules) -> str:
    """The Expert's manual page, written from the rule tables."""
    words = [_word(rules, w) for w in range(len(rules.password_codes))]
    lines = [
        "PASSWORD. Five letter columns, each cycling through six letters with its up and down",
        "arrows. Exactly one word below can be spelled; set it and press submit. Submitting",
        "anything else is a strike. Words:",
    ]
    lines += ["  " + " ".join(words[i : i + 7]) for i in range(0, len(words), 7)]
    return "\n".join(lines)


PASSWORDS = ModuleType(
    name="passwords",
    title="Password",
    layout=LAYOUT,
    n_targets=SUBMIT + 1,
    verbs=(PRESS,),
    generate=generate,
    act=act,
    oracle=oracle,
    view=view,
    describe=describe,
    manual=manual,
)
