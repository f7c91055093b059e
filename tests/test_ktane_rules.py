"""Keep-Talking module rules on hand-built states (the vanilla KTANE Bomb Defusal Manual,
Wires to Memory).

Every rule row of every module has at least one case whose expected answer was written from
the manual (keypad and Who's on First cases were derived from its tables by a
separate parse, not from ``tables.py``). Strike behaviours are checked through each module's
``act``.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane.edgework import Facts
from jaxcollab.envs.ktane.modules import MODULE_TYPES, button, keypad, memory, simon, wires
from jaxcollab.envs.ktane.modules import whos_on_first as wof
from jaxcollab.envs.ktane.modules.base import CUT, HOLD, PRESS, RELEASE, WAIT, Ctx
from jaxcollab.envs.ktane.ruleset import vanilla_ruleset

VANILLA = vanilla_ruleset()


def make_facts(odd=False, vowel=False, batteries=0, lit=(), parallel=False) -> Facts:
    lit_mask = np.zeros(len(T.INDICATOR_LABELS), bool)
    lit_mask[[T.INDICATOR_LABELS.index(x) for x in lit]] = True
    return Facts(
        serial_odd=jnp.bool_(odd), serial_vowel=jnp.bool_(vowel), batteries=jnp.int32(batteries),
        lit=jnp.asarray(lit_mask), parallel=jnp.bool_(parallel),
    )  # fmt: skip


def make_ctx(facts=None, strikes=0, display=(0, 0, 0, 0), rules=VANILLA) -> Ctx:
    return Ctx(facts=facts or make_facts(), strikes=jnp.int32(strikes), display=jnp.array(display),
               rules=rules)


_JIT_ACT = {name: jax.jit(t.act) for name, t in MODULE_TYPES.items()}


def act(module, m, verb, target, ctx, key=0):
    m = {k: jnp.asarray(v, jnp.int32) for k, v in m.items()}
    out, strike, solved, valid = _JIT_ACT[module.name](
        jax.random.key(key), m, jnp.int32(verb), jnp.int32(target), ctx
    )
    return out, bool(strike), bool(solved), bool(valid)


# --- wires (§2) -----------------------------------------------------------------------------

_C = {"K": 0, "B": 1, "R": 2, "W": 3, "Y": 4, "-": -1}
WIRE_CASES = [  # (slots top to bottom, serial odd, slot to cut)
    ("K-W-B-", False, 2),  # 3: no red -> 2nd (skips the empty slot)
    ("R--BW-", False, 4),  # 3: last white -> last
    ("BBR---", False, 1),  # 3: >1 blue -> last blue
    ("RKY---", False, 2),  # 3: otherwise last
    ("RBRY--", True, 2),  # 4: >1 red and serial odd -> last red
    ("RBRY--", False, 0),  # 4: (same, even serial) -> exactly one blue -> 1st
    ("YKWY--", False, 0),  # 4: last yellow and no red -> 1st
    ("BRKW--", False, 0),  # 4: exactly one blue -> 1st
    ("YRYK--", False, 3),  # 4: >1 yellow -> last
    ("RKWK--", False, 1),  # 4: otherwise 2nd
    ("RRWWK-", True, 3),  # 5: last black and serial odd -> 4th
    ("RRWWK-", False, 0),  # 5: (same, even serial) -> otherwise 1st
    ("WRYYW-", False, 0),  # 5: one red and >1 yellow -> 1st
    ("WBRRY-", False, 1),  # 5: no black -> 2nd
    ("KBRRY-", False, 0),  # 5: otherwise 1st
    ("RBWKRB", True, 2),  # 6: no yellow and serial odd -> 3rd
    ("RBWKRB", False, 3),  # 6: (same, even serial) -> otherwise 4th
    ("YWWKKB", False, 3),  # 6: one yellow and >1 white -> 4th
    ("YBWKKB", False, 5),  # 6: no red -> last
    ("RYYKWB", False, 3),  # 6: otherwise 4th
    ("-RK-Y-", False, 4),  # 3 in scattered slots: otherwise last
]
_solution = jax.jit(wires.solution)


@pytest.mark.parametrize("slots, odd, expected", WIRE_CASES)
def test_wires_rule_rows(slots, odd, expected):
    colors = jnp.array([_C[c] for c in slots])
    assert int(_solution(colors, jnp.bool_(odd), VANILLA.wire_rules)) == expected


def test_wires_strike_keeps_wire_cut_and_module_unsolved():
    m = {"colors": [_C[c] for c in "RKWK--"], "cut": [0] * 6, "answer": 1}
    ctx = make_ctx()
    m, strike, solved, valid = act(wires.WIRES, m, CUT, 0, ctx)
    assert (strike, solved, valid) == (True, False, True)
    assert m["cut"].tolist() == [1, 0, 0, 0, 0, 0]
    assert act(wires.WIRES, m, CUT, 0, ctx)[1:] == (False, False, False)  # already cut
    assert act(wires.WIRES, m, CUT, 4, ctx)[1:] == (False, False, False)  # empty slot
    assert act(wires.WIRES, m, PRESS, 1, ctx)[1:] == (False, False, False)  # wrong verb
    assert act(wires.WIRES, m, CUT, 1, ctx)[1:] == (False, True, True)


# --- the button (§3) --------------------------------------------------------------------------

BUTTON_CASES = [  # (colour, label, facts kwargs, hold?)
    ("blue", "Abort", dict(batteries=3, lit=("FRK",)), 1),  # rule 1 beats rule 4
    ("white", "Detonate", dict(batteries=2, lit=("CAR",)), 0),  # rule 2 beats rule 3
    ("white", "Detonate", dict(batteries=1), 1),  # (one battery) -> rule 7
    ("white", "Press", dict(batteries=3, lit=("CAR", "FRK")), 1),  # rule 3 beats rule 4
    ("white", "Press", dict(batteries=3, lit=("FRK",)), 0),  # (CAR unlit) -> rule 4
    ("red", "Abort", dict(batteries=3, lit=("FRK",)), 0),  # rule 4
    ("red", "Abort", dict(batteries=2, lit=("FRK",)), 1),  # (2 batteries) -> rule 7
    ("yellow", "Hold", dict(), 1),  # rule 5
    ("red", "Hold", dict(), 0),  # rule 6
    ("blue", "Press", dict(), 1),  # rule 7
]


_should_hold = jax.jit(button.should_hold)


@pytest.mark.parametrize("color, label, facts, hold", BUTTON_CASES)
def test_button_hold_or_tap_rows(color, label, facts, hold):
    c, lab = T.BUTTON_COLORS.index(color), T.BUTTON_LABELS.index(label)
    assert int(_should_hold(jnp.int32(c), jnp.int32(lab), make_facts(**facts), VANILLA)) == hold


_shows_digit = jax.jit(button.shows_digit)


@pytest.mark.parametrize(
    "strip, good, bad",
    [("red", (0, 1, 2, 3), (0, 4, 5, 9)), ("blue", (0, 4, 5, 9), (0, 1, 2, 3)),
     ("yellow", (5, 9, 0, 0), (0, 1, 4, 9)), ("white", (9, 9, 0, 1), (4, 5, 5, 4))],
)  # fmt: skip
def test_button_release_digit(strip, good, bad):
    s = jnp.int32(T.BUTTON_COLORS.index(strip))
    assert bool(_shows_digit(jnp.array(good), s, VANILLA))
    assert not bool(_shows_digit(jnp.array(bad), s, VANILLA))


def _button(hold, held=0, strip=-1):
    return {"color": 0, "label": 0, "hold": hold, "held": held, "strip": strip}


def test_button_strikes():
    ctx_1 = make_ctx(display=(0, 1, 2, 3))
    ctx_no1 = make_ctx(display=(0, 2, 2, 3))
    # tapping a button that must be held
    m, strike, solved, _ = act(button.BUTTON, _button(1), PRESS, 0, ctx_1)
    assert (strike, solved, int(m["held"])) == (True, False, 0)
    # holding then releasing a button that must be tapped (even on a good digit)
    m, strike, solved, _ = act(button.BUTTON, _button(0, held=1, strip=0), RELEASE, 0, ctx_1)
    assert (strike, solved, int(m["held"]), int(m["strip"])) == (True, False, 0, -1)
    # releasing on a display without the digit: strike, button idle again
    m, strike, solved, _ = act(button.BUTTON, _button(1, held=1, strip=0), RELEASE, 0, ctx_no1)
    assert (strike, solved, int(m["held"]), int(m["strip"])) == (True, False, 0, -1)
    # the right release solves; the right tap solves
    assert act(button.BUTTON, _button(1, held=1, strip=0), RELEASE, 0, ctx_1)[1:3] == (False, True)
    assert act(button.BUTTON, _button(0), PRESS, 0, ctx_1)[1:3] == (False, True)
    # hold lights a strip; release while idle and hold while held are invalid
    m, strike, solved, valid = act(button.BUTTON, _button(1), HOLD, 0, ctx_1)
    assert (int(m["held"]), 0 <= int(m["strip"]) < 4, strike, solved, valid) == (
        1, True, False, False, True)  # fmt: skip
    assert act(button.BUTTON, _button(1), RELEASE, 0, ctx_1)[3] is False
    assert act(button.BUTTON, m, HOLD, 0, ctx_1)[3] is False


def test_button_oracle_waits_for_digit():
    m = {k: jnp.int32(v) for k, v in _button(1, held=1, strip=1).items()}  # blue strip: 4
    assert int(button.oracle(m, make_ctx(display=(0, 1, 2, 3)))[0]) == WAIT
    assert int(button.oracle(m, make_ctx(display=(0, 1, 4, 3)))[0]) == RELEASE


# --- keypad (§4) --------------------------------------------------------------------------------

KEYPAD_CASES = [  # one per column: symbols at TL, TR, BL, BR -> key positions in press order
    (["at", "squid-knife", "balloon", "upside-down-y"], [2, 0, 3, 1]),
    (["euro", "cursive", "hook-n", "hollow-star"], [0, 1, 3, 2]),
    (["upside-down-y", "double-k", "pumpkin", "copyright"], [3, 2, 1, 0]),
    (["squid-knife", "six", "smiley", "double-k"], [1, 0, 3, 2]),
    (["paragraph", "pitchfork", "right-c", "bt"], [1, 3, 2, 0]),
    (["n-with-hat", "euro", "pitchfork", "six"], [3, 1, 2, 0]),
]


@pytest.mark.parametrize("symbols, order", KEYPAD_CASES)
def test_keypad_column_order(symbols, order):
    m = {"symbols": [T.KEYPAD_SYMBOLS.index(s) for s in symbols], "pressed": [0] * 4}
    ctx = make_ctx()
    for i, key in enumerate(order):
        wrong = order[-1] if i < 3 else None
        if wrong is not None:  # an out-of-order key strikes and keeps progress
            m2, strike, solved, _ = act(keypad.KEYPAD, m, PRESS, wrong, ctx)
            assert (strike, solved) == (True, False)
            assert m2["pressed"].tolist() == [int(x) for x in m["pressed"]]
        m, strike, solved, valid = act(keypad.KEYPAD, m, PRESS, key, ctx)
        assert (strike, solved, valid) == (False, i == 3, True)
    # pressing a green key again does nothing (no strike)
    assert act(keypad.KEYPAD, m, PRESS, order[0], ctx)[1:] == (False, False, False)


# --- simon says (§5) ----------------------------------------------------------------------------

SIMON_CASES = [  # (vowel, strikes, presses for flashed red, blue, green, yellow)
    (True, 0, "blue red yellow green"),
    (True, 1, "yellow green blue red"),
    (True, 2, "green red yellow blue"),
    (True, 4, "green red yellow blue"),
    (False, 0, "blue yellow green red"),
    (False, 1, "red blue yellow green"),
    (False, 2, "yellow green blue red"),
    (False, 3, "yellow green blue red"),
]


_simon_expected = jax.jit(simon.expected)


@pytest.mark.parametrize("vowel, strikes, presses", SIMON_CASES)
def test_simon_mapping_rows(vowel, strikes, presses):
    ctx = make_ctx(make_facts(vowel=vowel), strikes=strikes)
    got = [
        T.SIMON_COLORS[int(_simon_expected({"seq": jnp.full(5, c), "entered": jnp.int32(0)}, ctx))]
        for c in range(4)
    ]
    assert got == presses.split()


def test_simon_stages_and_strike_changes_mapping():
    red, blue, green, yellow = range(4)
    m = {"seq": [red, green, 0, 0, 0], "length": 3, "stage": 1, "entered": 0}
    no_vowel = make_facts(vowel=False)
    # stage 1 flashes red -> press blue (no vowel, 0 strikes)
    m, strike, solved, _ = act(simon.SIMON, m, PRESS, blue, make_ctx(no_vowel, 0))
    assert (strike, int(m["stage"]), int(m["entered"])) == (False, 2, 0)
    # stage 2: red, green -> blue, green; enter blue then a wrong colour: strike, restart stage
    m, strike, _, _ = act(simon.SIMON, m, PRESS, blue, make_ctx(no_vowel, 0))
    assert (strike, int(m["entered"])) == (False, 1)
    m, strike, _, _ = act(simon.SIMON, m, PRESS, red, make_ctx(no_vowel, 0))
    assert (strike, int(m["stage"]), int(m["entered"])) == (True, 2, 0)
    # with 1 strike the map is red->red, green->yellow; the old answer (blue) now strikes
    assert act(simon.SIMON, m, PRESS, blue, make_ctx(no_vowel, 1))[1] is True
    m, _, _, _ = act(simon.SIMON, m, PRESS, red, make_ctx(no_vowel, 1))
    m, strike, solved, _ = act(simon.SIMON, m, PRESS, yellow, make_ctx(no_vowel, 1))
    assert (strike, solved, int(m["stage"])) == (False, False, 3)
    # stage 3 (last): red, green, red -> red, yellow, red
    for colour, last in ((red, False), (yellow, False), (red, True)):
        m, strike, solved, _ = act(simon.SIMON, m, PRESS, colour, make_ctx(no_vowel, 1))
        assert (strike, solved) == (False, last)


# --- who's on first (§6) ------------------------------------------------------------------------

WOF_STEP1 = {  # display word -> position of the button to read (typed from the manual)
    0: ["UR"],
    1: ["FIRST", "OKAY", "C"],
    2: ["YES", "NOTHING", "LED", "THEY ARE"],
    3: ["BLANK", "READ", "RED", "YOU", "YOUR", "YOU'RE", "THEIR"],
    4: ["", "REED", "LEED", "THEY'RE"],
    5: ["DISPLAY", "SAYS", "NO", "LEAD", "HOLD ON", "YOU ARE", "THERE", "SEE", "CEE"],
}
# (buttons TL..BR, label whose list is used, position to press); derived from the manual's list
# table by a separate parse of the markdown.
WOF_STEP2 = [
    (["READY", "WHAT", "FIRST", "WAIT", "OKAY", "RIGHT"], "READY", 4),
    (["UHHH", "OKAY", "NOTHING", "PRESS", "FIRST", "READY"], "FIRST", 1),
    (["NOTHING", "LEFT", "NO", "WAIT", "RIGHT", "PRESS"], "NO", 3),
    (["BLANK", "NOTHING", "OKAY", "PRESS", "LEFT", "YES"], "BLANK", 2),
    (["UHHH", "RIGHT", "OKAY", "FIRST", "NO", "NOTHING"], "NOTHING", 0),
    (["WAIT", "NOTHING", "FIRST", "YES", "WHAT", "RIGHT"], "YES", 5),
    (["RIGHT", "OKAY", "BLANK", "NOTHING", "WHAT", "MIDDLE"], "WHAT", 4),
    (["LEFT", "RIGHT", "WHAT", "UHHH", "MIDDLE", "READY"], "UHHH", 5),
    (["BLANK", "WAIT", "LEFT", "WHAT", "OKAY", "NO"], "LEFT", 2),
    (["LEFT", "WAIT", "OKAY", "RIGHT", "YES", "FIRST"], "RIGHT", 4),
    (["OKAY", "LEFT", "FIRST", "MIDDLE", "NO", "WAIT"], "MIDDLE", 0),
    (["YES", "UHHH", "OKAY", "READY", "WAIT", "MIDDLE"], "OKAY", 5),
    (["OKAY", "RIGHT", "PRESS", "MIDDLE", "WHAT", "WAIT"], "WAIT", 0),
    (["NO", "PRESS", "WAIT", "LEFT", "BLANK", "READY"], "PRESS", 5),
    (["DONE", "LIKE", "YOU", "UR", "UH UH", "SURE"], "YOU", 5),
    (["NEXT", "UH HUH", "WHAT?", "U", "YOU ARE", "DONE"], "YOU ARE", 0),
    (["SURE", "YOU", "UH UH", "DONE", "YOUR", "YOU'RE"], "YOUR", 2),
    (["LIKE", "DONE", "UR", "YOU'RE", "UH UH", "YOU"], "YOU'RE", 5),
    (["UH HUH", "NEXT", "DONE", "UR", "YOU'RE", "HOLD"], "UR", 2),
    (["WHAT?", "UH HUH", "UH UH", "SURE", "U", "YOU"], "U", 1),
    (["DONE", "NEXT", "SURE", "U", "UH HUH", "WHAT?"], "UH HUH", 4),
    (["YOU", "YOU'RE", "HOLD", "YOUR", "UH UH", "DONE"], "UH UH", 1),
    (["YOUR", "YOU ARE", "DONE", "UR", "YOU", "WHAT?"], "WHAT?", 4),
    (["YOU ARE", "LIKE", "DONE", "YOU", "UH UH", "HOLD"], "DONE", 5),
    (["YOU'RE", "UR", "NEXT", "YOU ARE", "DONE", "YOUR"], "NEXT", 5),
    (["UR", "YOU ARE", "YOUR", "NEXT", "HOLD", "LIKE"], "HOLD", 1),
    (["YOUR", "NEXT", "UR", "HOLD", "UH UH", "SURE"], "SURE", 3),
    (["U", "UH UH", "LIKE", "HOLD", "YOU ARE", "YOU"], "LIKE", 0),
]
_wof_answer = jax.jit(wof.answer)


def _display_reading(position: int) -> int:
    word = WOF_STEP1[position][-1]
    return T.WOF_DISPLAYS.index(word)


def test_wof_step1_every_display_word():
    assert sorted(w for ws in WOF_STEP1.values() for w in ws) == sorted(T.WOF_DISPLAYS)
    # buttons whose own lists start with themselves are not needed: use a unique marker instead
    for position, words in WOF_STEP1.items():
        for word in words:
            assert int(jnp.asarray(T.WOF_READ)[T.WOF_DISPLAYS.index(word)]) == position, word


@pytest.mark.parametrize("buttons, label, expected", WOF_STEP2)
def test_wof_step2_every_list(buttons, label, expected):
    display = _display_reading(buttons.index(label))
    ids = jnp.array([T.WOF_LABELS.index(b) for b in buttons])
    assert int(_wof_answer(jnp.int32(display), ids, VANILLA)) == expected


def test_wof_strike_keeps_stage_and_redraws():
    buttons, label, right = WOF_STEP2[0]
    m = {"stage": 1, "display": _display_reading(buttons.index(label)),
         "buttons": [T.WOF_LABELS.index(b) for b in buttons]}  # fmt: skip
    wrong = (right + 1) % 6
    m2, strike, solved, _ = act(wof.WHOS_ON_FIRST, m, PRESS, wrong, make_ctx(), key=3)
    assert (strike, solved, int(m2["stage"])) == (True, False, 1)
    redrawn = (int(m2["display"]), m2["buttons"].tolist()) != (m["display"], m["buttons"])
    assert redrawn
    m3, strike, solved, _ = act(wof.WHOS_ON_FIRST, m, PRESS, right, make_ctx(), key=3)
    assert (strike, solved, int(m3["stage"])) == (False, False, 2)
    m = dict(m, stage=2)
    assert act(wof.WHOS_ON_FIRST, m, PRESS, right, make_ctx())[1:3] == (False, True)


# --- memory (§7) --------------------------------------------------------------------------------

# labels at positions 1-4 and a history (1-based position, label) of stages 1-4
MEM_LABELS = [2, 4, 1, 3]
MEM_HISTORY = [(2, 4), (3, 1), (4, 3), (1, 2)]
MEM_EXPECTED = [  # [stage][display] -> 1-based position, worked out by hand from the manual
    [2, 2, 3, 4],  # p2 p2 p3 p4
    [2, 2, 1, 2],  # l4 P(1) p1 P(1)
    [3, 2, 3, 2],  # L(2) L(1) p3 l4
    [2, 1, 3, 3],  # P(1) p1 P(2) P(2)
    [2, 3, 1, 4],  # L(1) L(2) L(4) L(3)
]


_memory_answer = jax.jit(memory.answer)


@pytest.mark.parametrize("stage", range(5))
@pytest.mark.parametrize("display", range(1, 5))
def test_memory_every_cell(stage, display):
    hist = MEM_HISTORY[:stage] + [(0, -1)] * (5 - stage)
    m = {"stage": jnp.int32(stage), "display": jnp.int32(display),
         "labels": jnp.array(MEM_LABELS), "hist_pos": jnp.array([p - 1 for p, _ in hist]),
         "hist_label": jnp.array([lab for _, lab in hist])}  # fmt: skip
    assert int(_memory_answer(m, VANILLA)) + 1 == MEM_EXPECTED[stage][display - 1]


def test_memory_strike_resets_to_stage_one():
    hist = MEM_HISTORY[:3] + [(0, -1)] * 2
    m = {"stage": 3, "display": 2, "labels": MEM_LABELS,
         "hist_pos": [p - 1 for p, _ in hist], "hist_label": [lab for _, lab in hist]}  # fmt: skip
    right = MEM_EXPECTED[3][1] - 1
    m2, strike, solved, _ = act(memory.MEMORY, m, PRESS, (right + 1) % 4, make_ctx())
    assert (strike, solved, int(m2["stage"])) == (True, False, 0)
    assert m2["hist_pos"].tolist() == [-1] * 5 and m2["hist_label"].tolist() == [-1] * 5
    m3, strike, _, _ = act(memory.MEMORY, m, PRESS, right, make_ctx())
    assert (strike, int(m3["stage"]), int(m3["hist_pos"][3]), int(m3["hist_label"][3])) == (
        False, 4, right, MEM_LABELS[right])  # fmt: skip


# --- generation invariants -------------------------------------------------------------------


@jax.jit
def _generate_all(keys):
    """Unpacked fresh modules of every type, 256 each (one compile for all types)."""

    def one(t):
        vecs = jax.vmap(lambda k: t.layout.pack(t.generate(k, make_facts(), VANILLA)))(keys)
        return jax.vmap(t.layout.unpack)(vecs)

    return {name: one(t) for name, t in MODULE_TYPES.items()}


def test_generated_modules_respect_the_spec_distributions():
    keys = jax.random.split(jax.random.key(1), 256)
    gen = jax.tree.map(np.asarray, _generate_all(keys))
    n = (gen["wires"]["colors"] >= 0).sum(1)
    assert n.min() == 3 and n.max() == 6 and 0.4 < np.mean(n == 6) < 0.6
    wire_answer = gen["wires"]["answer"]
    assert np.all(gen["wires"]["colors"][np.arange(256), wire_answer] >= 0)
    symbols = jnp.asarray(gen["keypad"]["symbols"])
    ranks = np.asarray(jax.vmap(lambda s: keypad.key_ranks(s, VANILLA))(symbols))
    assert all(len(set(r)) == 4 and max(r) < 7 for r in ranks)
    assert set(gen["simon"]["length"].tolist()) == {3, 4, 5}
    assert set(gen["memory"]["display"].tolist()) == {1, 2, 3, 4}
    assert all(sorted(lab) == [1, 2, 3, 4] for lab in gen["memory"]["labels"])
    assert set(gen["button"]["strip"].tolist()) == {-1} and set(gen["button"]["held"]) == {0}
    wof_buttons = gen["whos_on_first"]["buttons"]
    assert all(len(set(b.tolist())) == 6 and len(set((b // 14).tolist())) == 1 for b in wof_buttons)
    assert set(gen["whos_on_first"]["stage"].tolist()) == {0}
