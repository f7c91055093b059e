"""The Expert's side of the manual: rebuild a module from the Defuser's words, plan by the rules.

The Expert never sees the bomb. It hears the Defuser's description of a zoomed module (the
module's view, word for word) and, when a rule reads the casing, the edgework the Defuser read
off the sides. :data:`READINGS` holds one :class:`Reading` per module type: ``read`` turns the
described words back into the module's fields, filling the fields the Defuser cannot see (the
wire to cut, whether the button must be held, the maze, the password) with the module's own
rule functions, i.e. the manual applied to what was heard; ``more`` says whether an instruction
plan may continue after an action (not once the module shows something the Expert has not been
told, e.g. a new Simon stage or Wire Sequence panel); ``keep`` is what the Expert notes down
between descriptions of the same module (Memory's presses, Wire Sequence's earlier panels).

:func:`plan` then plays the module's ``oracle`` on the rebuilt fields and steps them with its
``act`` (the rules), giving the instruction sequence. Module rules from the vanilla KTANE Bomb
Defusal Manual as implemented in :mod:`jaxcollab.envs.ktane.modules`, read with the rule tables
of the Expert's manual (``ctx.rules``, a :class:`~jaxcollab.envs.ktane.ruleset.Ruleset`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.edgework import Edgework, facts
from jaxcollab.envs.ktane.modules import button, memory, passwords, wires
from jaxcollab.envs.ktane.modules import wire_sequence as ws
from jaxcollab.envs.ktane.modules.base import WAIT, Ctx, ModuleType

#: int32 words the Expert notes per module slot between descriptions (-1 = nothing noted).
NOTE_LEN = 12
#: Most actions in one instruction plan (a maze path, a password's arrows and submit).
MAX_PLAN = 40


def lookup(table, tokens) -> jax.Array:
    """Index of each token in the token table ``table`` (int32, ``tokens``' shape; -1 if
    absent)."""
    table = jnp.asarray(table)
    tokens = jnp.asarray(tokens)
    hit = tokens[..., None] == table
    return jnp.where(jnp.any(hit, -1), jnp.argmax(hit, -1), -1).astype(jnp.int32)


def digit(tokens) -> jax.Array:
    """The value 0–9 of digit tokens (-1 if not a digit)."""
    return lookup(V.DIGIT, tokens)


@dataclasses.dataclass(frozen=True)
class Reading:
    """How the Expert reads one module type.

    Attributes:
        read: ``(words int32 [VIEW_LEN], note int32 [NOTE_LEN], ctx) -> (m, release)``: the
            module's fields rebuilt from the described words (``m`` in the module's layout) and
            the timer digit to release a held button on (-1 = no timed release).
        more: ``(m_before, m_after) -> bool``: a plan may go on after this action.
        keep: ``m -> int32 [NOTE_LEN]``: what to note for the next description.
        edgework: the rules read the casing (the Expert asks for it first).
    """

    read: Callable
    more: Callable = lambda before, after: jnp.bool_(True)  # noqa: E731
    keep: Callable = lambda m: jnp.full(NOTE_LEN, -1, jnp.int32)  # noqa: E731
    edgework: bool = False


def _never(before, after):
    return jnp.bool_(False)


def _same(field):
    return lambda before, after: before[field] == after[field]


def _read_wires(w, note, ctx):
    colors = lookup(V.toks(T.WIRE_COLORS), w[1:24:4])
    m = {"colors": colors, "cut": (w[2:24:4] == V.tok("cut")).astype(jnp.int32),
         "answer": wires.solution(colors, ctx.facts.serial_odd, ctx.rules.wire_rules)}
    return m, jnp.int32(-1)


def _read_button(w, note, ctx):
    color = lookup(V.toks(T.BUTTON_COLORS), w[2])
    label = lookup(V.toks(T.BUTTON_LABELS), w[3])
    held = w[5] == V.tok("held")
    strip = lookup(V.toks(T.BUTTON_COLORS), w[8])
    hold = button.should_hold(color, label, ctx.facts, ctx.rules)
    m = {"color": color, "label": label, "hold": hold, "held": held.astype(jnp.int32),
         "strip": strip}
    release = jnp.where(held, ctx.rules.release_digit[jnp.maximum(strip, 0)], -1)
    return m, release.astype(jnp.int32)


def _read_keypad(w, note, ctx):
    m = {"symbols": lookup(V.toks(T.KEYPAD_SYMBOLS), w[2:20:5]),
         "pressed": (w[3:20:5] == V.tok("green")).astype(jnp.int32)}
    return m, jnp.int32(-1)


def _read_simon(w, note, ctx):
    flashes = lookup(V.toks(T.SIMON_COLORS), w[1 : 1 + T.SIMON_MAX_LEN])
    m = {"seq": jnp.maximum(flashes, 0), "length": jnp.int32(T.SIMON_MAX_LEN),
         "stage": jnp.sum(flashes >= 0).astype(jnp.int32), "entered": digit(w[8])}
    return m, jnp.int32(-1)


def _read_whos_on_first(w, note, ctx):
    shown = V.toks([d or "(empty)" for d in T.WOF_DISPLAYS])
    m = {"stage": digit(w[1]) - 1, "display": lookup(shown, w[6]),
         "buttons": lookup(V.toks(T.WOF_LABELS), w[10:28:3])}
    return m, jnp.int32(-1)


def _read_memory(w, note, ctx):
    n = memory.N_STAGES
    m = {"stage": digit(w[1]) - 1, "display": digit(w[6]), "labels": digit(w[9:17:2]),
         "hist_pos": note[:n], "hist_label": note[n : 2 * n]}
    return m, jnp.int32(-1)


def _keep_memory(m):
    return jnp.pad(jnp.concatenate([m["hist_pos"], m["hist_label"]]),
                   (0, NOTE_LEN - 2 * memory.N_STAGES),
                   constant_values=-1)


#: The manual's Morse chart as pattern tokens, in ``T.MORSE_ALPHABET`` order.
_PATTERNS = V.toks([T.MORSE_CODE[c] for c in T.MORSE_ALPHABET])


def _read_morse(w, note, ctx):
    loop = w[1 : 2 + T.MORSE_MAX_LETTERS]  # letter patterns and one "pause", from the phase
    n = jnp.sum(loop != 0)
    start = jnp.argmax(loop == V.tok("pause")) + 1
    k = jnp.arange(T.MORSE_MAX_LETTERS)
    letters = jnp.where(k < n - 1, lookup(_PATTERNS, loop[(start + k) % jnp.maximum(n, 1)]), -1)
    word = jnp.argmax(jnp.all(ctx.rules.morse_words == letters, axis=1))
    m = {"word": word.astype(jnp.int32),
         "dial": lookup(V.toks(T.MORSE_FREQS), w[T.MORSE_MAX_LETTERS + 4]),
         "phase": jnp.int32(0)}
    return m, jnp.int32(-1)


def _read_complicated_wires(w, note, ctx):
    m = {"colors": lookup(V.toks(T.CW_COLORS), w[1:36:6]),
         "led": (w[2:36:6] == V.tok("on")).astype(jnp.int32),
         "star": (w[3:36:6] == V.tok("star")).astype(jnp.int32),
         "cut": (w[4:36:6] == V.tok("cut")).astype(jnp.int32)}
    return m, jnp.int32(-1)


def _read_wire_sequence(w, note, ctx):
    panel = digit(w[1]) - 1
    color = lookup(V.toks(T.WS_COLORS), w[5:24:7])
    target = lookup(V.toks(T.WS_TARGETS), w[7:24:7])
    here = jnp.where(color >= 0, color * 3 + target, -1)
    slots = panel * T.WS_PER_PANEL + jnp.arange(T.WS_PER_PANEL)
    cut = (w[8:24:7] == V.tok("cut")).astype(jnp.int32)
    m = {"wires": note[: ws.N_TERMINALS].at[slots].set(here),
         "cut": jnp.zeros(ws.N_TERMINALS, jnp.int32).at[slots].set(cut), "panel": panel}
    return m, jnp.int32(-1)


def _read_maze(w, note, ctx):
    col_row = digit(w[jnp.array([1, 2, 3, 4, 7, 8, 11, 12])]) - 1
    markers = col_row[:4].reshape(2, 2)
    known = ctx.rules.maze_markers  # [maze, 2, (col, row)]
    match = jnp.all(known == markers, (1, 2)) | jnp.all(known == markers[::-1], (1, 2))
    cell = lambda c, r: (r * T.MAZE_SIZE + c).astype(jnp.int32)  # noqa: E731
    m = {"maze": jnp.argmax(match).astype(jnp.int32), "light": cell(col_row[4], col_row[5]),
         "goal": cell(col_row[6], col_row[7])}
    return m, jnp.int32(-1)


def _read_passwords(w, note, ctx):
    """Words ``display`` + the 30 letters seen while pressing each column's down arrow five
    times (column by column, from the letter first shown), so every column now shows its
    sixth letter seen."""
    letters = lookup(V.toks(tuple(T.LETTERS)), w[1 : 1 + T.PW_LETTERS * T.PW_COLUMN])
    letters = letters.reshape(T.PW_LETTERS, T.PW_COLUMN)
    codes = ctx.rules.password_codes  # [words, 5]
    spellable = jnp.all(jnp.any(letters[None] == codes[:, :, None], -1), -1)
    m = {"columns": passwords.pack(jnp.maximum(letters, 0)),
         "index": jnp.full(T.PW_LETTERS, T.PW_COLUMN - 1, jnp.int32),
         "answer": jnp.argmax(spellable).astype(jnp.int32)}
    return m, jnp.int32(-1)


#: How the Expert reads each module type, by registry name.
READINGS: dict[str, Reading] = {
    "wires": Reading(_read_wires, edgework=True),
    "button": Reading(_read_button, more=_never, edgework=True),
    "keypad": Reading(_read_keypad),
    "simon": Reading(_read_simon, more=_same("stage"), edgework=True),
    "whos_on_first": Reading(_read_whos_on_first, more=_never),
    "memory": Reading(_read_memory, more=_never, keep=_keep_memory),
    "morse": Reading(_read_morse),
    "complicated_wires": Reading(_read_complicated_wires, edgework=True),
    "wire_sequence": Reading(_read_wire_sequence, more=_same("panel"),
                             keep=lambda m: m["wires"].astype(jnp.int32)),
    "maze": Reading(_read_maze),
    "passwords": Reading(_read_passwords),
}


def plan(t: ModuleType, m: dict, ctx: Ctx, key: jax.Array, more: Callable):
    """Up to :data:`MAX_PLAN` instructions for module ``m`` by the rules: play ``t.oracle`` and
    step ``m`` with ``t.act`` until the module is solved or shows what the Expert was not told.

    Returns:
        ``(verbs, targets, used, m)``: int32 ``[MAX_PLAN]`` verbs and targets, bool
        ``[MAX_PLAN]`` which are instructions, and the fields after the last one.
    """

    def step(carry, _):
        m, going = carry
        verb, target = t.oracle(m, ctx)
        after, strike, solved, valid = t.act(key, m, verb, target, ctx)
        use = going & (verb != WAIT) & valid
        keep_on = use & ~strike & ~solved & more(m, after)
        m = jax.tree.map(lambda a, b: jnp.where(use, a, b), after, m)
        return (m, keep_on), (verb, target, use)

    (m, _), (verbs, targets, used) = jax.lax.scan(step, (m, jnp.bool_(True)), None,
                                                  length=MAX_PLAN)
    return verbs, targets, used, m


def read_edgework(words: jax.Array) -> Edgework:
    """The casing rebuilt from the Defuser's edgework words (the side faces' text, padding
    dropped): ``serial c1 … c6 ;`` and ``battery|indicator|ports detail… ;`` per widget.
    Sides and the serial's side are not described (rules never read them) and read 0."""
    w = T.MAX_WIDGETS
    at = jnp.argmax(words == V.tok("serial"))
    serial = jnp.maximum(lookup(V.SERIAL_CHAR, jax.lax.dynamic_slice(words, (at + 1,), (6,))), 0)
    kinds = lookup(V.toks(T.WIDGET_KINDS), words)
    starts = jnp.flatnonzero(kinds >= 0, size=w, fill_value=-1)
    padded = jnp.pad(words, (0, 6))
    after = lambda s: jax.lax.dynamic_slice(padded, (s + 1,), (5,))  # noqa: E731
    detail = jax.vmap(after)(jnp.maximum(starts, 0))
    kind = jnp.where(starts >= 0, kinds[jnp.maximum(starts, 0)], -1)
    holder = lookup(V.toks(T.HOLDERS), detail[:, 0]) + 1
    label = lookup(V.toks(T.INDICATOR_LABELS), detail[:, 1])
    in_row = jnp.cumsum(detail == V.tok(";"), axis=1) == 0  # a widget's words end at ";"
    port = jnp.where(in_row, lookup(V.toks(T.PORT_NAMES), detail), -1)
    has = jnp.any(port[:, :, None] == jnp.arange(len(T.PORT_NAMES)), axis=1)
    mask = jnp.sum(has << jnp.arange(len(T.PORT_NAMES)), axis=1)
    a = jnp.select([kind == T.BATTERY, kind == T.INDICATOR], [holder, label], 0)
    b = jnp.select([kind == T.INDICATOR, kind == T.PORTS],
                   [(detail[:, 0] == V.tok("lit")).astype(jnp.int32), mask], 0)
    zeros = jnp.zeros(w, jnp.int32)
    return Edgework(serial=serial.astype(jnp.int32), serial_side=jnp.int32(0),
                    kind=kind.astype(jnp.int32), a=a.astype(jnp.int32), b=b.astype(jnp.int32),
                    side=zeros)


def edgework_facts(words: jax.Array):
    """:func:`~jaxcollab.envs.ktane.edgework.facts` of :func:`read_edgework` (the manual's
    edgework definitions applied to what the Defuser read)."""
    return facts(read_edgework(words))
