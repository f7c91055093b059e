"""Randomised Keep-Talking rulesets: every table redrawn, deterministic, solvable, and read by
the rules, the oracle and the manual (GPTNT §7 future work; the randomisation is ours)."""

import itertools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcollab.agents.ktane import play
from jaxcollab.envs.ktane import KtaneEnv, Mission, single_module_env
from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.modules import (
    MODULE_TYPES,
    button,
    keypad,
    maze,
    memory,
    morse,
    passwords,
    simon,
    wires,
)
from jaxcollab.envs.ktane.modules import complicated_wires as cw
from jaxcollab.envs.ktane.modules import whos_on_first as wof
from jaxcollab.envs.ktane.modules import wire_sequence as ws
from jaxcollab.envs.ktane.modules.base import PRESS
from jaxcollab.envs.ktane.render import manual_text
from jaxcollab.envs.ktane.ruleset import (
    RULESETS,
    make_ruleset,
    random_ruleset,
    ruleset_info,
)
from tests.test_ktane_rules import VANILLA, act, make_ctx, make_facts

SEED = 7
RANDOM = random_ruleset(SEED)
HOST = {"vanilla": jax.device_get(VANILLA), "random": jax.device_get(RANDOM)}
TABLES = [k for k in HOST["vanilla"] if k != "seed"]


def _host(seed):
    return jax.device_get(random_ruleset(seed))


# --- the draw -----------------------------------------------------------------------------------


def test_random_rulesets_differ_from_vanilla_and_each_other_in_every_table():
    a, b, v = _host(1), _host(2), HOST["vanilla"]
    for k in TABLES:
        assert a[k].shape == v[k].shape and a[k].dtype == v[k].dtype, k
        assert not np.array_equal(a[k], v[k]), k
        assert not np.array_equal(a[k], b[k]), k


def test_same_seed_same_ruleset_and_names():
    a, b = _host(11), _host(11)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert ruleset_info(a) == {"name": "random", "seed": 11}
    assert ruleset_info(VANILLA) == {"name": "vanilla", "seed": None}
    assert RULESETS == ("vanilla", "random")
    assert int(make_ruleset("random", 11).seed) == 11 and int(make_ruleset("vanilla").seed) == -1
    with pytest.raises(ValueError, match="'foo'.*vanilla, random"):
        make_ruleset("foo")
    with pytest.raises(ValueError, match="ruleset_seed.*-1"):
        random_ruleset(-1)


def _reachable(walls) -> int:
    seen, todo = {(0, 0)}, [(0, 0)]
    while todo:
        r, c = todo.pop()
        for m, (dc, dr) in enumerate(T.MAZE_STEP):
            if not walls[r, c, m] and (r + dr, c + dc) not in seen:
                seen.add((r + dr, c + dc))
                todo.append((r + dr, c + dc))
    return len(seen)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_ruleset_keeps_the_solvability_invariants(seed):
    r = _host(seed)
    member = np.zeros((6, len(T.KEYPAD_SYMBOLS)), int)
    member[np.arange(6)[:, None], r.keypad_columns] = 1
    assert np.all(member.sum(1) == 7)  # seven distinct symbols per column
    assert np.all((member @ member.T)[~np.eye(6, dtype=bool)] <= 3)  # 4 symbols → one column
    for row in r.simon_map.reshape(6, 4):
        assert sorted(row) == [0, 1, 2, 3]
    for label, lst in enumerate(r.wof_lists):
        group = label // T.WOF_GROUP_SIZE * T.WOF_GROUP_SIZE
        assert sorted(lst) == list(range(group, group + T.WOF_GROUP_SIZE))
    assert set(r.memory_rules[0, :, 0]) <= {T.POSITION, T.LABEL}
    for s in range(1, 5):
        back = r.memory_rules[s, :, 0] >= T.POSITION_OF
        assert np.all((r.memory_rules[s, back, 1] >= 1) & (r.memory_rules[s, back, 1] <= s))
    words = [morse.word_text(r, k) for k in range(16)]
    assert len(set(words)) == 16 and all(4 <= len(w) <= 6 for w in words)
    assert np.any(r.cw_rules == T.CW_CUT)
    assert np.all(r.ws_rules.any(-1))
    for walls in r.maze_walls:  # perfect: all 36 cells connected by exactly 35 openings
        assert _reachable(walls) == 36 and (~walls).sum() == 2 * 35
    cells = {tuple(x) for x in r.maze_markers.reshape(-1, 2).tolist()}
    assert len(cells) == 18  # one marker identifies its maze
    pw = ["".join(T.LETTERS[c] for c in w) for w in r.password_codes]
    assert len(set(pw)) == 35


# --- the rules read the redrawn tables (one hand-built case per module, seed 7) --------------


def _wire_answer(colors, odd, rows):
    """Independent host evaluation of a wires section (first row whose conditions hold)."""
    present = [c for c in colors if c >= 0]
    slots = [i for i, c in enumerate(colors) if c >= 0]

    def holds(kind, colour):
        n = present.count(colour)
        return [n == 0, n == 1, n > 1, present[-1] == colour, odd, True][kind]

    for k1, c1, k2, c2, kind, arg in rows:
        if holds(k1, c1) and holds(k2, c2):
            if kind == T.NTH:
                return slots[arg - 1] if arg else slots[-1]
            return max(i for i, c in enumerate(colors) if c == arg)
    raise AssertionError("no rule applied")


def _differing(cases, answer):
    """The first case whose answer under the random ruleset differs from vanilla's."""
    return next(c for c in cases if answer(c, HOST["random"]) != answer(c, HOST["vanilla"]))


def test_wires_follow_the_redrawn_rules():
    cases = [(c, odd) for c in itertools.product(range(5), repeat=4) for odd in (False, True)]

    def answer(case, r):
        colors, odd = case
        return _wire_answer(list(colors) + [-1, -1], odd, r.wire_rules[1])

    colors, odd = _differing(cases, answer)
    solve = jax.jit(wires.solution)
    c = jnp.array(list(colors) + [-1, -1])
    for name, rules in (("random", RANDOM), ("vanilla", VANILLA)):
        got = int(solve(c, jnp.bool_(odd), rules.wire_rules))
        assert got == answer((colors, odd), HOST[name]), name


def test_button_follows_the_redrawn_rules():
    def answer(case, r):
        color, label, batteries, lit = case
        for c, lab, b, ind, hold in r.button_rules:
            if ((c < 0 or c == color) and (lab < 0 or lab == label)
                    and (b < 0 or batteries > b) and (ind < 0 or ind in lit)):  # fmt: skip
                return int(hold)

    lits = [(), (T.CAR,), (T.FRK,), tuple(range(11))]
    cases = list(itertools.product(range(4), range(4), range(5), lits))
    color, label, batteries, lit = case = _differing(cases, answer)
    facts = make_facts(batteries=batteries, lit=[T.INDICATOR_LABELS[i] for i in lit])
    for name, rules in (("random", RANDOM), ("vanilla", VANILLA)):
        hold = button.should_hold(jnp.int32(color), jnp.int32(label), facts, rules)
        assert int(hold) == answer(case, HOST[name]), name
    digit = int(HOST["random"].release_digit[2])
    held = {"color": color, "label": label, "hold": 1, "held": 1, "strip": 2}
    ctx = make_ctx(display=(digit, digit, digit, digit), rules=RANDOM)
    assert act(button.BUTTON, held, button.RELEASE, 0, ctx)[1:3] == (False, True)
    other = (digit + 1) % 10
    ctx = make_ctx(display=(other, other, other, other), rules=RANDOM)
    assert act(button.BUTTON, held, button.RELEASE, 0, ctx)[1:3] == (True, False)


def test_keypad_follows_the_redrawn_columns():
    col = HOST["random"].keypad_columns[4]
    placed = col[[3, 1, 0, 2]]  # TL TR BL BR hold column symbols 3, 1, 0, 2
    m = {"symbols": placed, "pressed": [0] * 4}
    ctx = make_ctx(rules=RANDOM)
    assert act(keypad.KEYPAD, m, PRESS, 0, ctx)[1] is True  # symbol 3 is not first
    m, strike, *_ = act(keypad.KEYPAD, m, PRESS, 2, ctx)  # symbol 0 first
    assert strike is False
    for target in (1, 3, 0):
        m, strike, solved, _ = act(keypad.KEYPAD, m, PRESS, target, ctx)
        assert strike is False
    assert solved is True


def test_simon_follows_the_redrawn_map():
    def answer(case, r):
        vowel, strikes, flash = case
        return int(r.simon_map[vowel, strikes, flash])

    vowel, strikes, flash = case = _differing(list(itertools.product((0, 1), range(3), range(4))),
                                              answer)  # fmt: skip
    m = {"seq": [flash] * 5, "length": 3, "stage": 1, "entered": 0}
    ctx = make_ctx(make_facts(vowel=bool(vowel)), strikes=strikes, rules=RANDOM)
    assert act(simon.SIMON, m, PRESS, answer(case, HOST["vanilla"]), ctx)[1] is True
    assert act(simon.SIMON, m, PRESS, answer(case, HOST["random"]), ctx)[1] is False


def test_whos_on_first_follows_the_redrawn_lists():
    buttons = [3, 7, 0, 12, 5, 9]

    def answer(display, r):
        read = buttons[r.wof_read[display]]
        return int(np.argmin([list(r.wof_lists[read]).index(b) for b in buttons]))

    display = _differing(range(len(T.WOF_DISPLAYS)), answer)
    m = {"stage": 0, "display": display, "buttons": buttons}
    ctx = make_ctx(rules=RANDOM)
    assert act(wof.WHOS_ON_FIRST, m, PRESS, answer(display, HOST["vanilla"]), ctx)[1] is True
    assert act(wof.WHOS_ON_FIRST, m, PRESS, answer(display, HOST["random"]), ctx)[1] is False


def test_memory_follows_the_redrawn_stage_rules():
    labels = [2, 4, 1, 3]

    def answer(display, r):
        kind, arg = r.memory_rules[0, display - 1]
        return int(arg - 1 if kind == T.POSITION else labels.index(arg))

    display = _differing(range(1, 5), answer)
    m = {"stage": 0, "display": display, "labels": labels, "hist_pos": [-1] * 5,
         "hist_label": [-1] * 5}  # fmt: skip
    ctx = make_ctx(rules=RANDOM)
    assert act(memory.MEMORY, m, PRESS, answer(display, HOST["vanilla"]), ctx)[1] is True
    assert act(memory.MEMORY, m, PRESS, answer(display, HOST["random"]), ctx)[1] is False


def test_morse_light_and_frequency_follow_the_redrawn_words():
    k = 5
    word = morse.word_text(HOST["random"], k)
    assert word != T.MORSE_WORDS[k]
    m = {"word": jnp.int32(k), "dial": jnp.int32(k), "phase": jnp.int32(0)}
    view = V.decode(np.asarray(jax.jit(morse.view)(m, RANDOM)))
    assert view[1 : len(word) + 2] == [T.MORSE_CODE[c] for c in word] + ["pause"]
    assert act(morse.MORSE, m, PRESS, morse.TX, make_ctx(rules=RANDOM))[1:3] == (False, True)
    assert morse.describe(jax.device_get(m), HOST["random"])["word"] == word


def test_complicated_wires_follow_the_redrawn_venn_letters():
    def answer(case, r):
        colour, led, star = case
        letter = r.cw_rules[int(T.CW_RED[colour]), int(T.CW_BLUE[colour]), led, star]
        return letter in (T.CW_CUT, T.CW_SERIAL)  # even serial, no parallel, no batteries

    colour, led, star = _differing(list(itertools.product(range(6), (0, 1), (0, 1))), answer)
    must = cw.must_cut(jnp.array([colour]), jnp.array([led]), jnp.array([star]), make_facts(),
                       RANDOM)  # fmt: skip
    assert bool(must[0]) == answer((colour, led, star), HOST["random"])


def test_wire_sequence_follows_the_redrawn_occurrence_table():
    def answer(case, r):
        colour, target = case
        return bool(r.ws_rules[colour, 0, target])

    colour, target = _differing(list(itertools.product(range(3), range(3))), answer)
    must = ws.must_cut(jnp.array([colour * 3 + target] + [-1] * 11), RANDOM)
    assert bool(must[0]) == answer((colour, target), HOST["random"])


def test_maze_walls_and_markers_follow_the_redrawn_layouts():
    r = HOST["random"]
    k = 3
    differ = np.argwhere(r.maze_walls[k] != T.MAZE_WALLS[k])  # [n, (row, col, move)]
    row, col, move = (int(x) for x in differ[0])
    m = {"maze": k, "light": row * 6 + col, "goal": 35 if row * 6 + col != 35 else 0}
    strike = act(maze.MAZE, m, PRESS, move, make_ctx(rules=RANDOM))[1]
    assert strike is bool(r.maze_walls[k, row, col, move])
    view = V.decode(np.asarray(jax.jit(maze.view)(jax.tree.map(jnp.int32, m), RANDOM)))
    assert view[1:5] == [str(x + 1) for x in r.maze_markers[k].reshape(-1)]


def test_passwords_spell_exactly_one_redrawn_word():
    r = HOST["random"]
    words = ["".join(T.LETTERS[c] for c in w) for w in r.password_codes]
    keys = jax.random.split(jax.random.key(4), 64)
    gen = jax.device_get(jax.jit(jax.vmap(
        lambda k: passwords.generate(k, make_facts(), RANDOM)))(keys))  # fmt: skip
    for i in range(64):
        cols = passwords.unpack(jnp.asarray(gen["columns"][i]))
        sets = [{T.LETTERS[int(x)] for x in col} for col in cols]
        spellable = [w for w in words if all(ch in s for ch, s in zip(w, sets, strict=True))]
        assert spellable == [words[int(gen["answer"][i])]]


# --- the environment, the oracle and the manual under random rulesets --------------------------

#: Two bombs holding the 11 module types (a face view fits six), one strike ends the episode.
HALVES = [
    KtaneEnv(Mission(modules=half, time_limit_s=3000, max_strikes=1), f"ktane/test-{i}")
    for i, half in enumerate((tuple(MODULE_TYPES)[:6], tuple(MODULE_TYPES)[6:]))
]


@pytest.mark.parametrize("env", HALVES, ids=["first-six", "last-five"])
def test_oracle_solves_every_module_type_under_random_rulesets(env):
    """The oracle solves every module of both bombs without a strike under two random
    rulesets (the second reuses the first's compiled rollout)."""
    for seed in (0, 1):
        keys = jax.random.split(jax.random.key(seed), 8)
        final = jax.device_get(play(env, "oracle", keys, random_ruleset(seed)))
        assert np.all(final.outcome == T.SOLVED) and np.all(final.strikes == 0), seed
        assert np.all(final.solved)


def test_swapping_rulesets_does_not_recompile_and_changes_the_bomb():
    env = single_module_env("wires")
    reset = jax.jit(env.reset)
    key = jax.random.key(0)
    states = [reset(key, env.ruleset_params(r))[1] for r in (VANILLA, RANDOM, random_ruleset(8))]
    assert reset._cache_size() == 1
    answers = {int(s.modules[0, wires.LAYOUT.offsets[2]]) for s in states}
    colors = states[0].modules[0, :6]
    assert all(np.array_equal(s.modules[0, :6], colors) for s in states)  # same wires drawn
    expected = {_wire_answer(list(np.asarray(colors)), bool(s.edge.serial[-1] % 2), r.wire_rules[
        int((np.asarray(colors) >= 0).sum()) - 3]) for s, r in zip(states, (
            HOST["vanilla"], HOST["random"], _host(8)), strict=True)}  # fmt: skip
    assert answers == expected


def test_jit_and_no_jit_agree_under_a_random_ruleset():
    """Jitted and eager Who's on First answers agree on 8 fresh modules."""
    gen = jax.jit(jax.vmap(lambda k: wof.generate(k, make_facts(), RANDOM)))(
        jax.random.split(jax.random.key(5), 8))  # fmt: skip
    jitted = jax.jit(jax.vmap(wof.answer, (0, 0, None)))(gen["display"], gen["buttons"], RANDOM)
    with jax.disable_jit():
        eager = [int(wof.answer(d, b, RANDOM)) for d, b in zip(gen["display"], gen["buttons"],
                                                              strict=True)]  # fmt: skip
    assert np.asarray(jitted).tolist() == eager


def test_manual_states_the_redrawn_rules():
    r = HOST["random"]
    text, vanilla = manual_text(RANDOM), manual_text()
    assert text != vanilla and vanilla == manual_text(VANILLA)
    for k, freq in enumerate(T.MORSE_FREQS):
        assert f"  {morse.word_text(r, k):7} {freq} MHz" in text
    col = ", ".join(T.KEYPAD_SYMBOLS[s] for s in r.keypad_columns[0])
    assert f"column 1: {col}" in text
    for color, digit in zip(T.BUTTON_COLORS, r.release_digit, strict=True):
        assert f"  - {color} strip: {digit}" in text
    words = " ".join("".join(T.LETTERS[c] for c in w).lower() for w in r.password_codes[:7])
    assert words in text
    env = single_module_env("memory")
    params = env.ruleset_params(RANDOM)
    state = jax.jit(env.reset)(jax.random.key(0), params)[1]
    assert env.render_text(state, 1, params).startswith(text)
    assert env.render_text(state, 1).startswith(vanilla)


def test_rollout_cli_random_ruleset(tmp_path, cli, composed):
    res = cli("eval/rollout.py", "env=ktane/wires", "agent=oracle", "episodes=8",
              "ruleset=random", "ruleset_seed=3", f"out_dir={tmp_path}")  # fmt: skip
    assert res["ruleset"] == {"name": "random", "seed": 3}
    assert res["success_rate"] == 1.0 and res["mean_strikes"] == 0
    with pytest.raises(Exception, match="ruleset.*foo"):
        composed("eval/rollout.py", "env=ktane/wires", "ruleset=foo")
    with pytest.raises(ValueError, match="ruleset='random'.*vanilla"):
        cli("eval/rollout.py", "env=bomb/base-1", "ruleset=random", f"out_dir={tmp_path}/b")


def test_export_records_carry_the_ruleset(tmp_path):
    from eval.export import export

    path = export("ktane/memory", 40, 3, tmp_path / "m.jsonl", ruleset="random", ruleset_seed=SEED)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for rec in records:
        assert rec["ruleset"] == {"name": "random", "seed": SEED}
        assert rec["text"]["expert"].startswith(manual_text(RANDOM))
        assert rec["outcome"] == "solved" and rec["strikes"] == 0


def test_llm_expert_reads_the_episode_ruleset():
    import jaxcollab
    from jaxcollab.agents.ktane.llm import KtaneGame, system_prompt

    env = single_module_env("wires")
    assert system_prompt(1, "sync", RANDOM, view="full").endswith(manual_text(RANDOM))
    assert system_prompt(1, "sync", view="full").endswith(manual_text())
    options = {"ruleset": "random", "ruleset_seed": SEED}
    game = jaxcollab.family("ktane").llm.game("ktane/wires", env, None, options)
    params = env.ruleset_params(make_ruleset("random", SEED))  # what the family's evaluate plays
    assert isinstance(game, KtaneGame) and int(params.rules.seed) == SEED
    assert game.manual == manual_text(RANDOM)  # the gptnt view: in the Expert's first message
    assert np.array_equal(params.rules.wire_rules, HOST["random"].wire_rules)
