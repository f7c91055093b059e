"""Rulesets: every rule table the Keep-Talking modules read, as one pytree of arrays.

A :class:`Ruleset` travels in the dynamic params (``KtaneParams.rules``), so the module rules,
generation, the Defuser's view and the Expert's manual all read the same tables and a new
ruleset never recompiles a rollout: every ruleset has the same fields, shapes and dtypes.

* :func:`vanilla_ruleset` is the vanilla KTANE Bomb Defusal Manual (:mod:`.tables`), the default.
* :func:`random_ruleset` redraws every table from a seeded host-side NumPy generator, so answers
  cannot come from a memorised vanilla manual. GPTNT names randomised rules as future work
  (GPTNT, §7); the randomisation below is ours. Per module it redraws:

  - Wires: per wire count, the order of the conditional rows, one permutation of the five
    colours applied to every condition and "last <colour> wire" answer (so such a wire still
    exists), and the position of every "cut the k-th wire" answer (k uniform in last, 1–n).
  - The Button: the order of the conditional rows, a permutation of the colours and of the
    labels, each battery threshold (0–3), each indicator label (distinct), every hold/tap
    outcome, and each strip colour's release digit (0–9; the timer shows every digit within ten
    turns).
  - Keypad: six columns of seven symbols in random order, redrawn until no two columns share
    four symbols, so exactly one column holds any four symbols of a column.
  - Simon Says: each (vowel, strikes) row of the colour map, a permutation.
  - Who's on First: the button each display word points at (step 1), and every label's
    priority list, a permutation of its 14-word group (step 2).
  - Memory: every (stage, display) instruction; stage 1 only presses a position or a label,
    later stages may refer to any earlier stage.
  - Morse Code: 16 distinct words (4–6 letters the light can spell) drawn from
    :data:`~.tables.WORD_POOL`, in a random order along the dial's 16 distinct frequencies.
  - Complicated Wires: every Venn letter, redrawn until at least one reads "cut" (so a bomb
    always has a wire to cut).
  - Wire Sequence: for every colour and occurrence, a non-empty set of target letters.
  - Maze: nine perfect mazes (random depth-first carving: every cell reachable, one path
    between any two) and 18 distinct marker cells, two per maze, so one marker identifies it.
  - Passwords: 35 distinct five-letter words from :data:`~.tables.WORD_POOL` (generation then
    leaves exactly one spellable, as in the vanilla game).
"""

from __future__ import annotations

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxcollab.envs.ktane import tables as T

RULESETS = ("vanilla",)


@chex.dataclass(frozen=True)
class Ruleset:
    """Every rule table of the modules (int32 unless noted; shapes equal for every ruleset).

    Attributes:
        seed: ``[]`` the random ruleset's seed, -1 for vanilla.
        wire_rules: ``[4, 5, 6]`` rows per wire count 3–6 (see ``tables.WIRE_RULES``).
        button_rules: ``[7, 5]`` (colour, label, batteries >, lit indicator, hold?), ANY = -1.
        release_digit: ``[4]`` release digit per strip colour.
        keypad_columns: ``[6, 7]`` symbol ids; keypad_rank: ``[6, 27]`` position in each
            column, 7 if absent.
        simon_map: ``[2, 3, 4]`` colour to press [vowel, min(strikes, 2), flash].
        wof_read: ``[28]`` button position to read per display word; wof_lists: ``[28, 14]``
            priority list per label; wof_rank: ``[28, 28]`` position in list, 28 if absent.
        memory_rules: ``[5, 4, 2]`` (kind, 1-based argument) per stage and display.
        morse_words: ``[16, 6]`` letter ids into ``tables.MORSE_ALPHABET`` (-1 padded) of the
            word at each dial frequency ``tables.MORSE_FREQS``.
        cw_rules: ``[2, 2, 2, 2]`` Venn letter per (red, blue, LED, star).
        ws_rules: bool ``[3, 9, 3]`` cut? per (colour, occurrence - 1, target letter).
        maze_walls: bool ``[9, 6, 6, 4]`` per (maze, row, col, move); maze_markers: ``[9, 2,
            2]`` two (col, row) cells per maze, 0-based.
        password_codes: ``[35, 5]`` letters 0–25 of each password word.
    """

    seed: jax.Array
    wire_rules: jax.Array
    button_rules: jax.Array
    release_digit: jax.Array
    keypad_columns: jax.Array
    keypad_rank: jax.Array
    simon_map: jax.Array
    wof_read: jax.Array
    wof_lists: jax.Array
    wof_rank: jax.Array
    memory_rules: jax.Array
    morse_words: jax.Array
    cw_rules: jax.Array
    ws_rules: jax.Array
    maze_walls: jax.Array
    maze_markers: jax.Array
    password_codes: jax.Array


def _rank(lists: np.ndarray, n: int, absent: int) -> np.ndarray:
    """``rank[i, x]``: position of ``x`` in ``lists[i]``, ``absent`` where it is not."""
    rank = np.full((len(lists), n), absent, np.int32)
    for i, row in enumerate(lists):
        rank[i, row] = np.arange(len(row))
    return rank


def _word_ids(words, alphabet: str, width: int) -> np.ndarray:
    """Letter ids of ``words`` into ``alphabet``, -1 padded to ``width``."""
    ids = np.full((len(words), width), -1, np.int32)
    for i, w in enumerate(words):
        ids[i, : len(w)] = [alphabet.index(c) for c in w.lower()]
    return ids


def _build(seed: int, **tables) -> Ruleset:
    """A :class:`Ruleset` with NumPy leaves, adding the rank tables derived from the tables."""
    tables["keypad_rank"] = _rank(tables["keypad_columns"], len(T.KEYPAD_SYMBOLS), 7)
    tables["wof_rank"] = _rank(tables["wof_lists"], len(T.WOF_LABELS), len(T.WOF_LABELS))
    arrays = {k: np.asarray(v, bool if v.dtype == bool else np.int32) for k, v in tables.items()}
    return Ruleset(seed=np.asarray(seed, np.int32), **arrays)


def vanilla_ruleset() -> Ruleset:
    """The vanilla KTANE Bomb Defusal Manual's tables (:mod:`.tables`); the default ruleset."""
    return jax.tree.map(jnp.asarray, _vanilla_host())


@functools.cache
def _vanilla_host() -> Ruleset:
    """:func:`vanilla_ruleset` with NumPy leaves (cached: host arrays never leak a trace)."""
    return _build(
        -1,
        wire_rules=T.WIRE_RULES,
        button_rules=T.BUTTON_RULES,
        release_digit=T.RELEASE_DIGIT,
        keypad_columns=T.KEYPAD_COLUMNS,
        simon_map=T.SIMON_MAP,
        wof_read=T.WOF_READ,
        wof_lists=T.WOF_LISTS,
        memory_rules=T.MEMORY_RULES,
        morse_words=_word_ids(T.MORSE_WORDS, T.MORSE_ALPHABET, T.MORSE_MAX_LETTERS),
        cw_rules=T.CW_RULES,
        ws_rules=T.WS_RULES,
        maze_walls=T.MAZE_WALLS,
        maze_markers=T.MAZE_MARKERS,
        password_codes=T.PASSWORD_CODES,
    )


def make_ruleset(name: str, seed: int = 0) -> Ruleset:
    """The ruleset called ``name`` (one of :data:`RULESETS`); ``seed`` picks a random one.

    Raises:
        ValueError: an unknown name (listing the valid ones) or a bad seed.
    """
    if name == "vanilla":
        return vanilla_ruleset()
    raise ValueError(f"unknown ruleset {name!r}; valid: {', '.join(RULESETS)}")


def ruleset_info(rules: Ruleset) -> dict:
    """Host-side ``{"name": "vanilla" | "random", "seed": int | None}`` of a ruleset."""
    seed = int(rules.seed)
    return {"name": "vanilla", "seed": None} if seed < 0 else {"name": "random", "seed": seed}
