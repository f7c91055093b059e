"""Morse Code, Complicated Wires, Wire Sequence, Maze and Passwords on hand-built states.

Expected answers are written from the tables of the vanilla KTANE Bomb Defusal Manual
(Morse Code, Complicated Wires, Wire Sequences, Mazes, Passwords), typed here
separately from ``tables.py``; strike behaviour goes through each module's ``act``.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane.modules import complicated_wires as cw
from jaxcollab.envs.ktane.modules import maze, morse, passwords
from jaxcollab.envs.ktane.modules import wire_sequence as ws
from jaxcollab.envs.ktane.modules.base import ACTION_LEN, CUT, PRESS
from tests.test_ktane_rules import VANILLA, act, make_ctx, make_facts

# --- morse (§8) --------------------------------------------------------------------------------

_MORSE = {".-": "a", "-...": "b", "-.-.": "c", ".": "e", "..-.": "f", "--.": "g", "....": "h",
          "..": "i", "-.-": "k", ".-..": "l", "--": "m", "-.": "n", "---": "o", ".-.": "r",
          "...": "s", "-": "t", "...-": "v", "-..-": "x"}  # fmt: skip
_FREQ = dict(zip("shell halls slick trick boxes leaks strobe bistro flick bombs break brick "
                 "steak sting vector beats".split(), range(16)))  # fmt: skip


def decode_light(units) -> str:
    """Plain decoder of an on/off unit stream: runs of 1 → dot/dash; 3-unit gaps end letters."""
    runs, word, letter = [], "", ""
    for x in units:
        if runs and runs[-1][0] == x:
            runs[-1][1] += 1
        else:
            runs.append([x, 1])
    for on, n in runs:
        if on:
            letter += "." if n == 1 else "-"
        elif n >= 3:
            word, letter = word + _MORSE[letter], ""
    return word


@pytest.mark.parametrize("word", list(_FREQ))
def test_morse_light_timing_decodes_to_the_word(word):
    units = morse.signal(word)
    assert decode_light(units) == word
    assert units[-7:].sum() == 0 and units[-8]  # the 7-unit pause closes the loop
    assert T.MORSE_FREQS[_FREQ[word]] == T.MORSE_FREQS[T.MORSE_WORDS.index(word)]


def test_morse_dial_tx_and_strike():
    m = {"word": _FREQ["boxes"], "dial": 0, "phase": 0}
    out, strike, solved, valid = act(morse.MORSE, m, PRESS, morse.LEFT, make_ctx())
    assert not valid and int(out["dial"]) == 0  # left end of the dial
    out, strike, solved, valid = act(morse.MORSE, m, PRESS, morse.TX, make_ctx())
    assert strike and not solved and valid
    m["dial"] = 4
    out, strike, solved, valid = act(morse.MORSE, m, PRESS, morse.TX, make_ctx())
    assert solved and not strike
    m["dial"] = 15
    out, *_, valid = act(morse.MORSE, m, PRESS, morse.RIGHT, make_ctx())
    assert not valid


# --- complicated wires (§9) --------------------------------------------------------------------

_VENN = {(0, 0, 0, 0): "C", (0, 0, 0, 1): "C", (0, 0, 1, 0): "D", (0, 0, 1, 1): "B",
         (0, 1, 0, 0): "S", (0, 1, 0, 1): "D", (0, 1, 1, 0): "P", (0, 1, 1, 1): "P",
         (1, 0, 0, 0): "S", (1, 0, 0, 1): "C", (1, 0, 1, 0): "B", (1, 0, 1, 1): "B",
         (1, 1, 0, 0): "S", (1, 1, 0, 1): "P", (1, 1, 1, 0): "S", (1, 1, 1, 1): "D"}  # fmt: skip
_CW_COLOR = {(0, 0): "white", (1, 0): "red", (0, 1): "blue", (1, 1): "red+blue"}
_CUT_IF = {  # letter -> (facts where it must be cut, facts where it must not)
    "C": (make_facts(), None), "D": (None, make_facts()),
    "S": (make_facts(odd=False), make_facts(odd=True)),
    "P": (make_facts(parallel=True), make_facts()),
    "B": (make_facts(batteries=2), make_facts(batteries=1)),
}  # fmt: skip
_must = jax.jit(cw.must_cut)


@pytest.mark.parametrize("row", list(_VENN))
def test_complicated_wires_venn_rows(row):
    red, blue, led, star = row
    color = T.CW_COLORS.index(_CW_COLOR[(red, blue)])
    yes, no = _CUT_IF[_VENN[row]]
    args = (jnp.array([color]), jnp.array([led]), jnp.array([star]))
    if yes is not None:
        assert bool(_must(*args, yes, VANILLA)[0])
    if no is not None:
        assert not bool(_must(*args, no, VANILLA)[0])
    if red and not blue:  # striped red+white counts as red
        alt = jnp.array([T.CW_COLORS.index("red+white")])
        assert bool(_must(alt, *args[1:], yes or no, VANILLA)[0]) == bool(
            _must(*args, yes or no, VANILLA)[0])
    if blue and not red:
        alt = jnp.array([T.CW_COLORS.index("blue+white")])
        assert bool(_must(alt, *args[1:], yes or no, VANILLA)[0]) == bool(
            _must(*args, yes or no, VANILLA)[0])


def test_complicated_wires_strike_and_solve():
    w, r = T.CW_COLORS.index("white"), T.CW_COLORS.index("red")
    # slot 0: white, no LED, no star (C); slot 1: white + LED (D); slot 3: red + star (C)
    m = {"colors": [w, w, -1, r, -1, -1], "led": [0, 1, 0, 0, 0, 0],
         "star": [0, 0, 0, 1, 0, 0], "cut": [0] * 6}  # fmt: skip
    ctx = make_ctx()
    out, strike, solved, valid = act(cw.COMPLICATED_WIRES, m, CUT, 1, ctx)
    assert strike and valid and not solved and int(out["cut"][1]) == 1
    _, *_, valid = act(cw.COMPLICATED_WIRES, m, CUT, 2, ctx)
    assert not valid  # empty slot
    out, strike, solved, _ = act(cw.COMPLICATED_WIRES, m, CUT, 0, ctx)
    assert not strike and not solved
    m2 = dict(m, cut=[1, 0, 0, 0, 0, 0])
    _, strike, solved, _ = act(cw.COMPLICATED_WIRES, m2, CUT, 3, ctx)
    assert solved and not strike


def test_complicated_wires_generation_always_has_a_wire_to_cut():
    keys = jax.random.split(jax.random.key(0), 256)
    for facts in (make_facts(odd=True), make_facts(odd=False, parallel=True, batteries=3)):
        gen = jax.vmap(lambda k, f=facts: cw.generate(k, f, VANILLA))(keys)
        must = jax.vmap(
            lambda g, f=facts: cw.must_cut(g["colors"], g["led"], g["star"], f, VANILLA))(gen)
        assert bool(jnp.all(jnp.any(must, axis=1)))
        n = np.asarray((gen["colors"] >= 0).sum(1))
        assert n.min() == 4 and n.max() == 6


# --- wire sequence (§10) -----------------------------------------------------------------------

_WS_TABLE = {"red": "C B A AC B AC ABC AB B", "blue": "B AC B A B BC C AC A",
             "black": "ABC AC B AC B BC AB C C"}  # fmt: skip
_must_ws = jax.jit(ws.must_cut)


@pytest.mark.parametrize("color", list(_WS_TABLE))
@pytest.mark.parametrize("k", range(1, 10))
def test_wire_sequence_occurrence_rows(color, k):
    c = T.WS_COLORS.index(color)
    other = (c + 1) % 3
    for t, letter in enumerate("ABC"):
        # k wires of the colour interleaved with other colours, spread over the panels
        wires = [-1] * 12
        slots = [0, 2, 3, 5, 6, 7, 9, 10, 11][:k]
        for s in slots:
            wires[s] = c * 3 + (t + 1) % 3
        wires[1] = other * 3 + t
        wires[slots[-1]] = c * 3 + t
        must = np.asarray(_must_ws(jnp.array(wires), VANILLA))
        assert must[slots[-1]] == (letter in _WS_TABLE[color].split()[k - 1]), (color, k, letter)


def test_wire_sequence_panels_counts_carry_and_down_strikes():
    red, blue = T.WS_COLORS.index("red"), T.WS_COLORS.index("blue")
    A, B, C = range(3)
    # panel 1: red->A (1st red: cut C only, so keep), blue->B (1st blue: cut); panel 2: red->B
    # (2nd red: cut B)
    wires = [red * 3 + A, blue * 3 + B, -1, red * 3 + B] + [-1] * 8
    m = {"wires": wires, "cut": [0] * 12, "panel": 0}
    ctx = make_ctx()
    out, strike, solved, valid = act(ws.WIRE_SEQUENCE, m, PRESS, ws.DOWN, ctx)
    assert strike and valid and int(out["panel"]) == 0  # blue->B still intact
    _, *_, valid = act(ws.WIRE_SEQUENCE, m, PRESS, ws.UP, ctx)
    assert not valid  # no panel above the first
    out, strike, *_ = act(ws.WIRE_SEQUENCE, m, CUT, 0, ctx)
    assert strike and int(out["cut"][0]) == 1  # 1st red to A must not be cut
    out, strike, *_ = act(ws.WIRE_SEQUENCE, m, CUT, 1, ctx)
    assert not strike
    m = {k: np.asarray(v) for k, v in out.items()}
    out, strike, solved, _ = act(ws.WIRE_SEQUENCE, m, PRESS, ws.DOWN, ctx)
    assert not strike and not solved and int(out["panel"]) == 1
    m = {k: np.asarray(v) for k, v in out.items()}
    out, strike, *_ = act(ws.WIRE_SEQUENCE, m, CUT, 0, ctx)  # terminal 4: the 2nd red -> B
    assert not strike
    m = dict(m, panel=3)
    _, strike, solved, _ = act(ws.WIRE_SEQUENCE, m, PRESS, ws.DOWN, ctx)
    assert solved and not strike
    m = dict(m, panel=2)
    out, strike, solved, _ = act(ws.WIRE_SEQUENCE, m, PRESS, ws.UP, ctx)
    assert int(out["panel"]) == 1 and not strike and not solved


def test_wire_sequence_generation_as_the_game():
    keys = jax.random.split(jax.random.key(2), 512)
    gen = jax.vmap(lambda k: ws.generate(k, make_facts(), VANILLA))(keys)
    w = np.asarray(gen["wires"])
    n = (w >= 0).sum(1)
    assert set(n.tolist()) <= {9, 10} and {9, 10} <= set(n.tolist())
    assert np.all((w[:, :3] >= 0).any(1))  # panel 1 never empty
    for c in range(3):
        assert ((w >= 0) & (w // 3 == c)).sum(1).max() <= 9


# --- maze (§11) ---------------------------------------------------------------------------------

# (maze 1-based, light (col,row), move, strikes?) read off the manual's maze pages by hand
_MAZE_CASES = [
    (1, (3, 1), "right", True),  # V row 1 "..|..": wall right of column 3
    (1, (3, 1), "left", False),
    (1, (2, 1), "down", True),  # H below row 1 ".-..--": column 2
    (1, (1, 1), "down", False),
    (1, (1, 1), "up", True),  # border
    (1, (6, 4), "right", True),  # border
    (2, (2, 2), "right", True),  # V row 2 ".|.|.": right of column 2
    (2, (1, 1), "down", True),  # H below row 1 "-.-..-": column 1
    (5, (1, 1), "down", True),  # H below row 1 "----..": columns 1-4
    (5, (5, 1), "down", False),
    (9, (1, 2), "right", True),  # V row 2 "||.||": right of column 1
    (9, (3, 2), "right", False),
]


@pytest.mark.parametrize("k, cell, move, wall", _MAZE_CASES)
def test_maze_walls_strike_and_stay(k, cell, move, wall):
    light = (cell[1] - 1) * 6 + cell[0] - 1
    m = {"maze": k - 1, "light": light, "goal": 35 if light != 35 else 0}
    out, strike, _, valid = act(maze.MAZE, m, PRESS, T.MAZE_MOVES.index(move), make_ctx())
    assert valid and strike == wall
    assert (int(out["light"]) == light) == wall


def test_maze_markers_unique_and_every_maze_connected():
    markers = {tuple(c) for c in T.MAZE_MARKERS.reshape(-1, 2).tolist()}
    assert len(markers) == 18
    assert T.MAZE_MARKERS[0].tolist() == [[0, 1], [5, 2]]  # maze 1: (1,2) and (6,3)
    dist = jax.jit(maze.distances)
    for walls in T.MAZE_WALLS:
        assert int(jnp.max(dist(jnp.asarray(walls), 0))) < 36


def test_maze_reaching_the_goal_solves_and_goal_is_never_adjacent():
    m = {"maze": 0, "light": 0, "goal": 6}  # maze 1: (1,1) down to (1,2) is open
    _, strike, solved, _ = act(maze.MAZE, m, PRESS, T.MAZE_MOVES.index("down"), make_ctx())
    assert solved and not strike
    gen = jax.vmap(lambda k: maze.generate(k, make_facts(), VANILLA))(
        jax.random.split(jax.random.key(1), 512)
    )
    light, goal = np.asarray(gen["light"]), np.asarray(gen["goal"])
    cheb = np.maximum(abs(light // 6 - goal // 6), abs(light % 6 - goal % 6))
    assert cheb.min() >= 2 and set(np.asarray(gen["maze"]).tolist()) == set(range(9))


# --- passwords (§12) ----------------------------------------------------------------------------

_WORDS = ("about after again below could every first found great house large learn never other "
          "place plant point right small sound spell still study their there these thing think "
          "three water where which world would write").split()  # fmt: skip


def test_passwords_exactly_one_spellable_word():
    gen = jax.vmap(lambda k: passwords.generate(k, make_facts(), VANILLA))(
        jax.random.split(jax.random.key(4), 200)
    )
    cols = np.asarray(jax.vmap(passwords.unpack)(gen["columns"]))
    for i in range(200):
        letters = [{chr(65 + x) for x in col} for col in cols[i]]
        assert all(len(s) == 6 for s in letters)
        spellable = [w for w in _WORDS if all(c.upper() in letters[k] for k, c in enumerate(w))]
        assert spellable == [T.PASSWORD_WORDS[int(gen["answer"][i])]]


def test_passwords_arrows_cycle_submit_strikes_or_solves():
    about = [T.LETTERS.index(c) for c in "ABOUT"]
    letters = np.array([[a, (a + 1) % 26, 25, 24, 23, 22] for a in about])
    m = {"columns": np.asarray(passwords.pack(jnp.asarray(letters))), "index": [1, 0, 0, 0, 0],
         "answer": _WORDS.index("about")}  # fmt: skip
    _, strike, solved, valid = act(passwords.PASSWORDS, m, PRESS, passwords.SUBMIT, make_ctx())
    assert strike and valid and not solved
    out, strike, _, _ = act(passwords.PASSWORDS, m, PRESS, 0, make_ctx())  # column 1 up
    assert not strike and np.asarray(out["index"]).tolist() == [0, 0, 0, 0, 0]
    out, *_ = act(passwords.PASSWORDS, dict(m, index=[0] * 5), PRESS, 5, make_ctx())  # down
    assert np.asarray(out["index"]).tolist() == [1, 0, 0, 0, 0]
    out, *_ = act(passwords.PASSWORDS, dict(m, index=[0] * 5), PRESS, 1, make_ctx())  # wraps
    assert np.asarray(out["index"]).tolist() == [0, 5, 0, 0, 0]
    _, strike, solved, _ = act(
        passwords.PASSWORDS, dict(m, index=[0] * 5), PRESS, passwords.SUBMIT, make_ctx()
    )
    assert solved and not strike


# --- set-of-marks labels (GPTNT App. D.2) -------------------------------------------------------


@pytest.mark.full  # the default tier keeps its sibling tests; CI runs -m full
def test_set_of_marks_letters_are_unique_and_in_reading_order_for_every_module():
    import re

    import jaxcollab
    from jaxcollab.envs.ktane import KtaneEnv, Mission
    from jaxcollab.envs.ktane.modules import MODULE_TYPES
    from jaxcollab.envs.ktane.modules.base import FLIP, SELECT

    env = KtaneEnv(Mission(tuple(MODULE_TYPES)[:8], 600), "ktane-test/som")
    state = jax.jit(env.init_state)(jax.random.key(0))  # jitted: eager costs minutes
    face = re.findall(r"\[[^\]]+\]", env.render_text(state, 0))
    assert face == ["[A]", "[B]", "[C]", "[D]", "[E]", "[F]"]
    # the back face's labels restart at [A]; select [B] there zooms into slot 7
    def turn(verb, target):
        return jnp.zeros((2, ACTION_LEN), jnp.int32).at[0, :2].set(jnp.array([verb, target]))

    flip = turn(FLIP, 0)
    step = jax.jit(env.step)
    _, state, *_ = step(jax.random.key(0), state, flip)
    assert re.findall(r"\[[^\]]+\]", env.render_text(state, 0)) == ["[A]", "[B]"]
    _, state, *_ = step(jax.random.key(0), state, jnp.zeros((2, ACTION_LEN), jnp.int32))
    _, state, *_ = step(jax.random.key(0), state, turn(SELECT, 1))
    assert int(state.zoom) == 7
    for name, t in MODULE_TYPES.items():
        env = jaxcollab.make(f"ktane/{name}")
        state = jax.jit(env.init_state)(jax.random.key(1))
        _, state, *_ = jax.jit(env.step)(jax.random.key(0), state, turn(SELECT, 0))
        labels = re.findall(r"\[[^\]]+\]", env.render_text(state, 0))
        assert labels == [f"[{chr(65 + k)}]" for k in range(t.n_targets)], name
