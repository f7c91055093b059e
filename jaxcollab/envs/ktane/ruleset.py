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

RULESETS = ("vanilla", "random")


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


def random_ruleset(seed: int) -> Ruleset:
    """Every rule table redrawn from ``np.random.default_rng(seed)`` (deterministic in ``seed``),
    keeping each module solvable; what is redrawn per module is listed in the module docstring.
    Ours: GPTNT leaves randomised rules to future work (GPTNT, §7).

    Raises:
        ValueError: ``seed`` is not an integer ``>= 0``.
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"ruleset_seed must be an integer >= 0, got {seed!r}")
    rng = np.random.default_rng(int(seed))
    tables = dict(
        wire_rules=_random_wires(rng),
        button_rules=_random_button(rng),
        release_digit=rng.integers(0, 10, len(T.BUTTON_COLORS)),
        keypad_columns=_random_keypad(rng),
        simon_map=np.stack([rng.permutation(4) for _ in range(6)]).reshape(2, 3, 4),
        wof_read=rng.integers(0, len(T.WOF_POSITIONS), len(T.WOF_DISPLAYS)),
        wof_lists=np.stack(
            [(lab // T.WOF_GROUP_SIZE) * T.WOF_GROUP_SIZE + rng.permutation(T.WOF_GROUP_SIZE)
             for lab in range(len(T.WOF_LABELS))]
        ),
        memory_rules=_random_memory(rng),
        morse_words=_word_ids(_pick_words(rng, _MORSE_POOL, len(T.MORSE_FREQS)),
                              T.MORSE_ALPHABET, T.MORSE_MAX_LETTERS),
        cw_rules=_random_cw(rng),
        ws_rules=rng.integers(1, 8, (len(T.WS_COLORS), T.WS_PER_COLOR, 1)) >> np.arange(3) & 1 == 1,
        maze_walls=np.stack([_perfect_maze(rng) for _ in range(len(T.MAZE_WALLS))]),
        maze_markers=_random_markers(rng),
        password_codes=_word_ids(_pick_words(rng, _PASSWORD_POOL, len(T.PASSWORD_WORDS)),
                                 T.LETTERS.lower(), T.PW_LETTERS),
    )
    return jax.tree.map(jnp.asarray, _build(int(seed), **tables))


_MORSE_POOL = tuple(
    w for w in T.WORD_POOL if 4 <= len(w) <= T.MORSE_MAX_LETTERS and set(w) <= set(T.MORSE_ALPHABET)
)
_PASSWORD_POOL = tuple(w for w in T.WORD_POOL if len(w) == T.PW_LETTERS)


def _pick_words(rng: np.random.Generator, pool: tuple[str, ...], n: int) -> list[str]:
    """``n`` distinct words of ``pool`` in random order."""
    return [pool[i] for i in rng.choice(len(pool), n, replace=False)]


def _random_wires(rng: np.random.Generator) -> np.ndarray:
    """Wires: per section, shuffled conditional rows, permuted colours, redrawn positions."""
    out = T.WIRE_RULES.copy()
    colour_kinds = (T.NONE_OF, T.ONE_OF, T.MANY_OF, T.LAST_IS)
    for s, used in enumerate(T.WIRE_ROWS):
        n_wires = s + 3
        rows = out[s, :used].copy()
        rows[: used - 1] = rows[rng.permutation(used - 1)]
        perm = rng.permutation(len(T.WIRE_COLORS))
        for c in (0, 2):
            has_colour = np.isin(rows[:, c], colour_kinds)
            rows[has_colour, c + 1] = perm[rows[has_colour, c + 1]]
        last_of = rows[:, 4] == T.LAST_OF
        rows[last_of, 5] = perm[rows[last_of, 5]]
        rows[~last_of, 5] = rng.integers(0, n_wires + 1, (~last_of).sum())  # 0 = the last wire
        out[s, :used] = rows
        out[s, used:] = rows[-1]  # padding repeats the fallback
    return out


def _random_button(rng: np.random.Generator) -> np.ndarray:
    """The Button: shuffled conditional rows, permuted colours and labels, redrawn battery
    thresholds, indicators and hold/tap outcomes."""
    r = T.BUTTON_RULES.copy()
    r[:-1] = r[rng.permutation(len(r) - 1)]
    color, label = rng.permutation(len(T.BUTTON_COLORS)), rng.permutation(len(T.BUTTON_LABELS))
    for col, perm in ((0, color), (1, label)):
        set_ = r[:, col] != T.ANY
        r[set_, col] = perm[r[set_, col]]
    batteries = r[:, 2] != T.ANY
    r[batteries, 2] = rng.integers(0, 4, batteries.sum())
    indicator = r[:, 3] != T.ANY
    r[indicator, 3] = rng.choice(len(T.INDICATOR_LABELS), indicator.sum(), replace=False)
    r[:, 4] = rng.integers(0, 2, len(r))
    return r


def _random_keypad(rng: np.random.Generator) -> np.ndarray:
    """Six columns of seven distinct symbols, redrawn until no two share four symbols."""
    n_cols, height = T.KEYPAD_COLUMNS.shape
    while True:
        cols = np.stack([rng.choice(len(T.KEYPAD_SYMBOLS), height, replace=False)
                         for _ in range(n_cols)])
        member = np.zeros((n_cols, len(T.KEYPAD_SYMBOLS)), int)
        member[np.arange(n_cols)[:, None], cols] = 1
        shared = member @ member.T
        if np.all(shared[~np.eye(n_cols, dtype=bool)] <= 3):
            return cols


def _random_memory(rng: np.random.Generator) -> np.ndarray:
    """Memory: stage 1 presses a position or a label; later stages any kind, referring to an
    earlier stage."""
    stages, displays = T.MEMORY_RULES.shape[:2]
    rules = np.zeros((stages, displays, 2), np.int32)
    for s in range(stages):
        kinds = rng.integers(0, 2 if s == 0 else 4, displays)
        back = rng.integers(1, max(s, 1) + 1, displays)
        rules[s, :, 0] = kinds
        rules[s, :, 1] = np.where(kinds >= T.POSITION_OF, back, rng.integers(1, 5, displays))
    return rules


def _random_cw(rng: np.random.Generator) -> np.ndarray:
    """Complicated Wires: uniform Venn letters, redrawn until one reads "cut"."""
    while True:
        letters = rng.integers(0, len(T.CW_LETTERS), T.CW_RULES.shape)
        if np.any(letters == T.CW_CUT):
            return letters


def _perfect_maze(rng: np.random.Generator) -> np.ndarray:
    """bool ``[6, 6, 4]`` walls of a perfect maze (randomised depth-first carving)."""
    n = T.MAZE_SIZE
    walls = np.ones((n, n, 4), bool)
    seen = np.zeros((n, n), bool)
    stack = [tuple(rng.integers(0, n, 2))]
    seen[stack[0]] = True
    while stack:
        r, c = stack[-1]
        moves = [
            (m, r + dr, c + dc)
            for m, (dc, dr) in enumerate(T.MAZE_STEP)
            if 0 <= r + dr < n and 0 <= c + dc < n and not seen[r + dr, c + dc]
        ]
        if not moves:
            stack.pop()
            continue
        m, r2, c2 = moves[rng.integers(len(moves))]
        walls[r, c, m] = walls[r2, c2, m ^ 1] = False  # moves pair up/down and left/right
        seen[r2, c2] = True
        stack.append((r2, c2))
    return walls


def _random_markers(rng: np.random.Generator) -> np.ndarray:
    """18 distinct cells, two per maze, as ``(col, row)`` (0-based)."""
    cells = rng.permutation(T.MAZE_SIZE**2)[: 2 * len(T.MAZE_WALLS)]
    return np.stack([cells % T.MAZE_SIZE, cells // T.MAZE_SIZE], -1).reshape(-1, 2, 2)


def make_ruleset(name: str, seed: int = 0) -> Ruleset:
    """The ruleset called ``name`` (one of :data:`RULESETS`); ``seed`` picks a random one.

    Raises:
        ValueError: an unknown name (listing the valid ones) or a bad seed.
    """
    if name == "vanilla":
        return vanilla_ruleset()
    if name == "random":
        return random_ruleset(seed)
    raise ValueError(f"unknown ruleset {name!r}; valid: {', '.join(RULESETS)}")


def ruleset_info(rules: Ruleset) -> dict:
    """Host-side ``{"name": "vanilla" | "random", "seed": int | None}`` of a ruleset."""
    seed = int(rules.seed)
    return {"name": "vanilla", "seed": None} if seed < 0 else {"name": "random", "seed": seed}
