"""Keep-Talking bomb engine: timer, turns, outcomes, observations, asymmetry, bad input."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcollab
from jaxcollab.envs.ktane import Mission
from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane.edgework import display_digits, display_text, sample_edgework
from jaxcollab.envs.ktane.modules import wires
from jaxcollab.envs.ktane.modules.base import (
    ACTION_LEN,
    BACK,
    CUT,
    FLIP,
    MESSAGE,
    MESSAGE_WORDS,
    MOD_WORDS,
    PRESS,
    ROTATE,
    SELECT,
    WAIT,
)
from jaxcollab.envs.ktane.render import manual_text
from jaxcollab.envs.ktane.rules import timed_action
from jaxcollab.envs.ktane.vocab import tok

ENV = jaxcollab.make("ktane/wires")
STEP = jax.jit(ENV.step)
OBSERVE = jax.jit(ENV.observe)
RESET = jax.jit(ENV.reset)
BASE = RESET(jax.random.key(0))[1]
PARAMS = ENV.default_params
SOLUTION = jax.jit(wires.solution)
WAIT2 = [WAIT] + [0] * (ACTION_LEN - 1)


def row(verb, target=0, *words):
    """One role's action row ``(verb, target, w_1 … w_L)``."""
    return [verb, target, *words] + [0] * (MESSAGE_WORDS - len(words))


def defuser(verb, target=0, *words):
    return jnp.array([row(verb, target, *words), WAIT2], jnp.int32)


def expert(verb, *words):
    return jnp.array([WAIT2, row(verb, 0, *words)], jnp.int32)


def wires_state(colors="RKWK--", strikes=0, time_cs=8100, zoom=0, turn=0):
    """A fresh ktane/wires bomb with the given wires (answer from the rules), zoomed in."""
    state = BASE
    c = np.array([{"K": 0, "B": 1, "R": 2, "W": 3, "Y": 4, "-": -1}[x] for x in colors])
    answer = SOLUTION(c, False, jnp.asarray(T.WIRE_RULES))
    m = {"colors": c, "cut": np.zeros(6, np.int32), "answer": answer}
    vec = np.zeros(MOD_WORDS, np.int32)
    vec[: wires.LAYOUT.offsets[-1]] = np.concatenate([c, m["cut"], [int(m["answer"])]])
    serial = state.edge.serial.at[5].set(2)  # even serial: the answer above stays right
    return state.replace(
        modules=jnp.asarray(vec)[None], edge=state.edge.replace(serial=serial),
        strikes=jnp.int32(strikes), time_left_cs=jnp.int32(time_cs), zoom=jnp.int32(zoom),
        turn=jnp.int32(turn),
    )  # fmt: skip


def run(state, *actions, key=0):
    out = []
    for i, a in enumerate(actions):
        obs, state, reward, term, trunc, info = STEP(jax.random.key(key + i), state, a, PARAMS)
        out.append((reward, term, info))
    return state, out


# --- timer and turns --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cs, text, digits",
    [(8100, "01:21", [0, 1, 2, 1]), (6000, "01:00", [0, 1, 0, 0]), (5999, "59.99", [5, 9, 9, 9]),
     (5943, "59.43", [5, 9, 4, 3]), (105, "01.05", [0, 1, 0, 5]), (0, "00.00", [0, 0, 0, 0])],
)  # fmt: skip
def test_timer_display(cs, text, digits):
    assert display_text(cs) == text
    assert display_digits(jnp.int32(cs)).tolist() == digits


@pytest.mark.parametrize("strikes, cost", [(0, 300), (1, 375), (2, 450)])
def test_defuser_turn_costs_three_seconds_times_rate_and_expert_turn_is_free(strikes, cost):
    state = wires_state(strikes=strikes, zoom=-1)
    state, _ = run(state, defuser(WAIT))
    assert int(state.time_left_cs) == 8100 - cost and int(state.turn) == 1
    state, _ = run(state, expert(MESSAGE, tok("red")))
    assert int(state.time_left_cs) == 8100 - cost and int(state.turn) == 2


def test_turn_cost_is_x175_at_three_strikes_and_doubles_from_four():
    params = ENV.default_params.replace(max_strikes=jnp.int32(6))
    state = wires_state("RKWK--", strikes=3)
    _, state, *_ = STEP(jax.random.key(1), state, defuser(WAIT), params)
    assert int(state.time_left_cs) == 8100 - 525 and int(state.outcome) == T.RUNNING
    _, state, *_ = STEP(jax.random.key(1), state, expert(WAIT), params)
    _, state, *_ = STEP(jax.random.key(1), state, defuser(CUT, 0), params)
    assert int(state.strikes) == 4 and int(state.outcome) == T.RUNNING
    assert int(state.time_left_cs) == 8100 - 2 * 525  # rate read before the striking action
    _, state, *_ = STEP(jax.random.key(1), state, expert(WAIT), params)
    _, state, *_ = STEP(jax.random.key(1), state, defuser(WAIT), params)
    assert int(state.time_left_cs) == 8100 - 2 * 525 - 600
    _, state, *_ = STEP(jax.random.key(1), state, expert(WAIT), params)
    state = state.replace(strikes=jnp.int32(5))
    _, state, *_ = STEP(jax.random.key(1), state, defuser(WAIT), params)
    assert int(state.time_left_cs) == 8100 - 2 * 525 - 2 * 600


def test_serial_vowel_rate_matches_the_games_35_entry_table():
    # P(vowel) = 1 - (30/35)^2 (20/25)^2 = 0.5298 (E twice); the old table gave 0.4594.
    n = 20_000
    keys = jax.vmap(jax.random.fold_in, (None, 0))(jax.random.key(0), jnp.arange(n))
    edge = jax.jit(jax.vmap(lambda k: sample_edgework(k, jnp.int32(5))))(keys)
    serial = np.asarray(edge.serial)
    p = 1 - (30 / 35) ** 2 * (20 / 25) ** 2
    tol = 4.5 * np.sqrt(p * (1 - p) / n)  # 4.5 binomial standard errors: false alarm < 1e-5
    rate = np.mean(np.isin(serial, T.VOWEL_CODES).any(1))
    assert abs(rate - p) < tol and abs(rate - 0.4594) > tol
    letters = serial[:, 3:5].reshape(-1)
    e_share = np.mean(letters == T.SERIAL_CHARS.index("E"))
    p_e = 2 / 25
    assert abs(e_share - p_e) < 4.5 * np.sqrt(p_e * (1 - p_e) / letters.size)
    assert np.all(serial[:, [2, 5]] < 10) and np.all(serial[:, 3:5] >= 10)


def test_only_the_role_on_turn_acts():
    state = wires_state(zoom=-1)
    # on the Defuser's turn the Expert's message is ignored, and vice versa
    state, _ = run(state, jnp.array([WAIT2, row(MESSAGE, 0, tok("red"))], jnp.int32))
    assert not np.asarray(state.messages).any()
    state, _ = run(state, jnp.array([row(SELECT, 0), WAIT2], jnp.int32))
    assert int(state.zoom) == -1 and int(state.turn) == 2


# --- outcomes ---------------------------------------------------------------------------------


def test_solved_outcome_reward_and_frozen_state():
    state = wires_state("RKWK--")  # answer: 2nd wire (slot 1)
    state, [(reward, term, info)] = run(state, defuser(CUT, 1))
    assert int(state.outcome) == T.SOLVED and bool(term) and reward.tolist() == [1.0, 1.0]
    assert int(state.strikes) == 0 and state.solved.tolist() == [True]
    after, [(reward, term, _)] = run(state, defuser(CUT, 0))
    chex.assert_trees_all_equal(after, state)
    assert reward.tolist() == [0.0, 0.0] and bool(term)


def test_strikeout_on_the_limit_strike():
    state = wires_state("RKWK--", strikes=2)
    state, [(reward, term, info)] = run(state, defuser(CUT, 0))
    assert bool(info["strike"]) and int(state.strikes) == 3
    assert int(state.outcome) == T.STRIKEOUT and bool(term) and reward.tolist() == [-1.0, -1.0]


def test_timeout_when_the_clock_runs_out():
    state = wires_state(time_cs=301)
    state, [(_, term, _)] = run(state, defuser(WAIT))
    assert int(state.outcome) == T.RUNNING and int(state.time_left_cs) == 1 and not bool(term)
    state, [(reward, term, _)] = run(state, expert(WAIT))
    assert int(state.outcome) == T.RUNNING  # Expert turns cost no time
    state, [(reward, term, _)] = run(state, defuser(WAIT))
    assert int(state.outcome) == T.TIMEOUT and bool(term) and reward.tolist() == [-1.0, -1.0]


def test_strike_speeds_up_the_clock_in_an_episode():
    state = wires_state("RKWK--")
    state, _ = run(state, defuser(CUT, 0), expert(WAIT), defuser(WAIT))
    assert int(state.strikes) == 1 and int(state.time_left_cs) == 8100 - 300 - 375


def test_a_timed_defuser_turn_lasts_its_elapsed_game_time_times_the_rate():
    """GPTNT C.4.2: a turn of any length (a reply's latency, the 0.5 s poll sleep), the rate
    read before its action; the Expert's turns stay free; a bare action is a Δ = 3 s turn."""
    timed = lambda a, s: timed_action(np.asarray(a), s)  # noqa: E731
    state, _ = run(wires_state(), timed(defuser(WAIT), 12.34))
    assert int(state.time_left_cs) == 8100 - 1234 and int(state.turn) == 1
    state, _ = run(state, timed(expert(MESSAGE, tok("red")), 9.0))
    assert int(state.time_left_cs) == 8100 - 1234 and int(state.n_messages[1]) == 1
    struck, _ = run(wires_state(strikes=1), timed(defuser(CUT, 0), 0.5))  # cuts a wrong wire
    assert int(struck.strikes) == 2 and int(struck.time_left_cs) == 8100 - 62  # 50 × 1.25
    struck, _ = run(struck, expert(WAIT), timed(defuser(WAIT), 10.0))
    assert int(struck.time_left_cs) == 8100 - 62 - 1500  # ×1.5 from the second strike
    bare, _ = run(wires_state(), defuser(WAIT))
    same, _ = run(wires_state(), timed(defuser(WAIT), T.TURN_S))
    chex.assert_trees_all_equal(bare, same)
    with pytest.raises(ValueError, match="elapsed game time .* got -1"):
        timed_action(defuser(WAIT), -1)


def test_the_bomb_runs_out_while_the_defuser_thinks():
    """A wait as long as the reply's latency ends the episode on timeout before the action
    that reply chose can land; a wait shorter than the time left does not."""
    state, [(_, term, _)] = run(wires_state(time_cs=700), timed_action(defuser(WAIT), 6.99))
    assert int(state.outcome) == T.RUNNING and int(state.time_left_cs) == 1 and not bool(term)
    state, [(reward, term, _)] = run(wires_state(time_cs=700), timed_action(defuser(WAIT), 7))
    assert int(state.outcome) == T.TIMEOUT and bool(term) and reward.tolist() == [-1.0, -1.0]
    state, _ = run(state, expert(WAIT), defuser(CUT, 2))  # frozen: the cut never lands
    assert not np.asarray(state.modules)[0, 6:12].any()


def test_timed_steps_compile_once_across_elapsed_times():
    step = jax.jit(ENV.step)
    for s in (0.0, 0.5, 3.0, 17.25):
        step(jax.random.key(0), BASE, timed_action(defuser(WAIT), s), PARAMS)
    assert step._cache_size() == 1


# --- navigation and invalid actions -------------------------------------------------------------


def test_navigation_faces_and_zoom():
    state = wires_state(zoom=-1)
    state, _ = run(state, defuser(ROTATE, 0))  # look up: top
    assert T.FACES[int(state.face)] == "top"
    state, _ = run(state, expert(WAIT), defuser(FLIP))
    assert T.FACES[int(state.face)] == "bottom"
    state, _ = run(state, expert(WAIT), defuser(SELECT, 0))  # no module on the bottom
    assert int(state.zoom) == -1 and int(state.feedback) == tok("invalid")
    state, _ = run(state, expert(WAIT), defuser(ROTATE, 0), expert(WAIT), defuser(SELECT, 0))
    assert T.FACES[int(state.face)] == "front" and int(state.zoom) == 0
    state, _ = run(state, expert(WAIT), defuser(BACK))
    assert int(state.zoom) == -1


@pytest.mark.parametrize(
    "verb, target, zoom",
    [(PRESS, 1, 0), (CUT, 1, -1), (CUT, 6, 0), (CUT, -1, 0), (SELECT, 1, -1), (ROTATE, 4, -1),
     (99, 0, 0)],
)  # fmt: skip
def test_invalid_actions_change_nothing_but_the_clock(verb, target, zoom):
    state = wires_state(zoom=zoom)
    new, [(_, _, info)] = run(state, defuser(verb, target))
    assert not bool(info["valid"]) and int(new.feedback) == tok("invalid")
    assert int(new.strikes) == 0 and new.modules.tolist() == state.modules.tolist()
    assert int(new.time_left_cs) == 8100 - 300


# --- observations and information asymmetry ------------------------------------------------------


def test_defuser_text_lists_labelled_targets_in_reading_order():
    state = wires_state("R-WK-B")
    text = ENV.render_text(state, 0)
    lines = text.splitlines()
    assert lines[0] == "time 01:21" and "strikes 0 of 3" in lines
    wires_lines = [ln for ln in lines if ln.startswith("[")]
    assert wires_lines == [
        "[A] red intact", "[B] empty", "[C] white intact", "[D] black intact", "[E] empty",
        "[F] blue intact",
    ]  # fmt: skip
    assert "WIRES" not in text and "manual" not in text.lower()


def test_tokens_and_text_carry_the_same_facts():
    state = wires_state("YYB---", zoom=-1)
    state = state.replace(face=jnp.int32(int(state.edge.serial_side)))
    text = ENV.render_text(state, 0)
    serial = "".join(T.SERIAL_CHARS[c] for c in np.asarray(state.edge.serial))
    assert "serial " + " ".join(serial) in text
    assert f"face {T.FACES[int(state.face)]}" in text


def test_expert_sees_the_manual_and_messages_only():
    a, b = wires_state("RKWK--"), wires_state("YYB---", strikes=2, time_cs=999)
    assert ENV.render_text(a, 1) == ENV.render_text(b, 1)
    assert ENV.render_text(a, 1).startswith(manual_text())
    np.testing.assert_array_equal(OBSERVE(a)[1], OBSERVE(b)[1])
    assert ENV.render_text(a, 1).endswith("defuser said none")
    state, _ = run(a, defuser(MESSAGE, 0, tok("yellow"), tok("wire"), tok("[B]")))
    assert ENV.render_text(state, 1).endswith("defuser says yellow wire [B]")
    state, _ = run(state, expert(MESSAGE, tok("cut"), tok("[B]")))
    assert ENV.render_text(state, 0).endswith("expert says cut [B]")
    state, _ = run(state, defuser(WAIT))  # older phrases read "said"
    assert ENV.render_text(state, 1).endswith("defuser said yellow wire [B]")


def _same_defuser_obs(a, b):
    np.testing.assert_array_equal(OBSERVE(a)[0], OBSERVE(b)[0])


def test_changing_hidden_fields_never_changes_the_defuser_observation():
    state = wires_state("RKWK--")
    # the wire to cut is hidden
    vec = state.modules[0].at[wires.LAYOUT.offsets[2]].set(4)
    _same_defuser_obs(state, state.replace(modules=state.modules.at[0].set(vec)))
    # the edgework is on the sides; the Defuser looks at the front
    edge = state.edge.replace(
        serial=jnp.zeros(6, jnp.int32), kind=jnp.full(5, -1, jnp.int32), a=state.edge.a + 1
    )
    _same_defuser_obs(state, state.replace(edge=edge))
    # the module's content is hidden while zoomed out
    out = state.replace(zoom=jnp.int32(-1))
    other = wires.LAYOUT.pack({"colors": jnp.full(6, 1), "cut": jnp.ones(6), "answer": 0})
    _same_defuser_obs(out, out.replace(modules=out.modules.at[0].set(other)))


def test_button_strip_is_hidden_until_held():
    env = jaxcollab.make("ktane/button")
    _, state = jax.jit(env.reset)(jax.random.key(0))
    state = state.replace(zoom=jnp.int32(0))
    layout = env.board.types[0].layout
    m = layout.unpack(state.modules[0])
    hidden = state.replace(modules=state.modules.at[0].set(layout.pack(dict(m, strip=2))))
    observe = jax.jit(env.observe)
    np.testing.assert_array_equal(observe(state)[0], observe(hidden)[0])
    held = dict(m, held=jnp.int32(1), strip=jnp.int32(2))
    shown = state.replace(modules=state.modules.at[0].set(layout.pack(held)))
    assert "strip yellow" in env.render_text(shown, 0)
    assert "strip none" in env.render_text(state, 0)


# --- determinism, jit, traces ---------------------------------------------------------------------


def test_reset_is_deterministic_and_keyed():
    a = RESET(jax.random.key(7))[1]
    b = RESET(jax.random.key(7))[1]
    c = RESET(jax.random.key(8))[1]
    chex.assert_trees_all_equal(a, b)
    assert (
        a.modules.tolist() != c.modules.tolist() or a.edge.serial.tolist() != c.edge.serial.tolist()
    )


@pytest.mark.full  # long for the default tier (measured idle)
def test_jit_and_eager_steps_agree():
    state = wires_state("RKWK--", zoom=-1)
    actions = [defuser(SELECT, 0), expert(MESSAGE, tok("red")), defuser(CUT, 0)]
    s_jit = s_eager = state
    for i, a in enumerate(actions):
        s_jit = STEP(jax.random.key(i), s_jit, a, PARAMS)[1]
        with jax.disable_jit():
            s_eager = ENV.step(jax.random.key(i), s_eager, a)[1]
    chex.assert_trees_all_equal(s_jit, s_eager)
    assert int(s_jit.zoom) == 0 and int(s_jit.strikes) == 1
    assert int(s_jit.messages[1, 0]) == tok("red")


def test_step_does_not_retrace_across_states_and_actions():
    counted = jax.jit(chex.assert_max_traces(ENV.step, n=1))
    state = wires_state(zoom=-1)
    for i, a in enumerate([defuser(SELECT, 0), expert(WAIT), defuser(CUT, 2), expert(WAIT)]):
        state = counted(jax.random.key(i), state, a)[1]
    assert int(state.turn) == 4


# --- bad input ------------------------------------------------------------------------------------


def test_bad_input_errors_name_the_value():
    with pytest.raises(KeyError, match="ktane/wirez.*ktane/wires"):
        jaxcollab.make("ktane/wirez")
    with pytest.raises(KeyError, match="'mazes'.*wires"):
        Mission(("mazes",), 60)
    with pytest.raises(ValueError, match="time_limit_s"):
        Mission(("wires",), 0)
    with pytest.raises(ValueError, match="max_strikes"):
        Mission(("wires",), 60, max_strikes=0)
    with pytest.raises(ValueError, match="n_widgets"):
        Mission(("wires",), 60, n_widgets=6)
    with pytest.raises(ValueError, match="role"):
        ENV.render_text(wires_state(), 2)


def test_registry_group():
    assert jaxcollab.resolve("ktane/all") == [
        "ktane/wires", "ktane/button", "ktane/keypad", "ktane/simon", "ktane/whos_on_first",
        "ktane/memory", "ktane/morse", "ktane/complicated_wires", "ktane/wire_sequence",
        "ktane/maze", "ktane/passwords",
    ]  # fmt: skip
