"""Bomb families env: registry, generator invariants, every family mechanic on hand-built states,
channel delivery, information asymmetry, rendering, determinism, jit vs no-jit, export."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcollab
from jaxcollab.envs.bomb import BombEnv, export_instances, make_params, reset_batch
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.env import observe_jit, reset_jit, turn_jit
from jaxcollab.envs.bomb.observe import observe
from jaxcollab.envs.bomb.rules import delivery, rotate_survivors
from jaxcollab.envs.bomb.solve import rotate as solve_rotate
from jaxcollab.envs.bomb.solve import solve
from jaxcollab.envs.bomb.state import required_value

CAPS = dict(speech_bytes=T.DEFAULT_SPEECH_BYTES, gesture_symbols=T.DEFAULT_GESTURE_SYMBOLS)
ENV = BombEnv("base-1")  # shared helper for building actions (caps are the defaults)


def fresh(variant: str, seed: int = 0, order=(T.DEAF, T.MUTE, T.BLIND)):
    params = make_params(T.variant(variant), order)
    return reset_jit(jax.random.PRNGKey(seed), params, **CAPS), params


def play_round(state, params, blind=("wait", 0), deaf=("wait", 0), mute=("wait", 0)):
    """One round in order Deaf, Mute, Blind (params must use that order); each role acts
    (``None``: that role's turn was already played)."""
    for role, move in ((T.DEAF, deaf), (T.MUTE, mute), (T.BLIND, blind)):
        if move is not None:
            state = turn_jit(state, ENV.action(role, *move), params)[0]
    return state


# ---- registry and table -----------------------------------------------------------------------


def test_registry_groups_and_unknown_variant():
    assert len(jaxcollab.resolve("bomb/all")) == 24
    sizes = {f: len(jaxcollab.resolve(f"bomb/{f}")) for f in T.FAMILIES}
    assert sizes == {"base": 5, "carving": 2, "flashing": 5, "flashback": 3, "shuffle": 3,
                     "haystack": 3, "bait": 3}
    assert sum(v.subset == "Core" for v in T.VARIANTS) == 16
    assert jaxcollab.make("bomb/shuffle-2").variant.wires == 5
    with pytest.raises(KeyError, match="bomb/bait-1.*bomb/shuffle-3"):
        jaxcollab.make("bomb/base-9")
    with pytest.raises(KeyError, match="valid: base-1"):
        BombEnv("nope")
    with pytest.raises(ValueError, match="multiple of 4"):
        BombEnv("base-1", speech_bytes=5)
    with pytest.raises(ValueError, match="unknown gesture"):
        ENV.action("deaf", symbols=("wave", "moonwalk"))
    with pytest.raises(ValueError, match="unknown role"):
        ENV.action("captain")


# ---- generator invariants ---------------------------------------------------------------------


def _instances(variant: str, n: int = 24):
    params = make_params(T.variant(variant))
    keys = jax.random.split(jax.random.PRNGKey(7), n)
    states = jax.device_get(reset_batch(keys, params, *CAPS.values()))
    return [jax.tree.map(lambda x, i=i: x[i], states) for i in range(n)], params


@pytest.mark.parametrize("variant", [v.name for v in T.VARIANTS])
def test_every_instance_has_a_unique_answer(variant):
    states, params = _instances(variant)
    for state in states:
        assert len(solve(state, params)) == T.variant(variant).steps


def test_bait_rows_may_map_a_light_to_itself_and_bait_every_other_cut():
    to_itself = baited = 0
    for name in ("bait-1", "bait-2", "bait-3"):
        v = T.variant(name)
        states, params = _instances(name, 48)
        for s in states:
            colours, cut = list(s.wire_colour), [False] * T.MAX_WIRES
            for stage, pos in enumerate(solve(s, params)):
                light = int(s.light_seq[stage])
                if colours[pos] == light:  # the row maps the light to itself (SANZARU Fig. 12)
                    to_itself += 1
                else:  # the shortcut is wrong, and a wire of the light's colour is there
                    bait = [i for i, c in enumerate(colours) if c == light and not cut[i]]
                    assert bait and pos not in bait, (name, stage)
                    baited += 1
                cut[pos] = True
            assert stage == v.steps - 1
    n = 48 * (1 + 1 + 3)
    assert to_itself + baited == n
    assert 0.1 * n < to_itself < 0.3 * n  # rate 1 / N_LIGHTS = 0.2: usually the shortcut fails


def test_flashing_cycle_names_distinct_present_wires():
    for name in ("flashing-1", "flashing-5"):
        v = T.variant(name)
        for s in _instances(name)[0]:
            named = [int(s.manual_val[k]) for k in s.key_seq[: v.period]]
            assert len(set(named)) == v.period
            assert all(list(s.wire_colour).count(c) == 1 for c in named)


# ---- family mechanics on hand-built states --------------------------------------------------


def _set_answer(state, colours, answer_colour):
    """Hand-build: given wire colours, and the manual entry deciding stage 0 naming a colour."""
    colours = jnp.asarray(colours + [-1] * (T.MAX_WIRES - len(colours)), jnp.int32)
    return state.replace(wire_colour=colours,
                         manual_val=state.manual_val.at[state.key_seq[0]].set(answer_colour))


def test_shuffle_rotates_survivors_after_a_correct_cut():
    state, params = fresh("shuffle-1")
    state = _set_answer(state, [0, 1, 2, 3], answer_colour=1)  # green at position 2 (1-based)
    state = play_round(state, params, blind=("cut", 1))
    assert int(state.progress) == 1 and int(state.ending) == T.RUNNING
    # survivors at positions 0, 2, 3 (colours 0, 2, 3) each move to the next survivor
    assert np.asarray(state.wire_colour[:4]).tolist() == [3, 1, 0, 2]
    assert np.asarray(state.wire_cut[:4]).tolist() == [False, True, False, False]


def test_no_rotation_without_shuffle_or_after_a_wrong_cut():
    state, params = fresh("base-3")
    state = _set_answer(state, [0, 1, 2], answer_colour=1)
    state = play_round(state, params, blind=("cut", 1))
    assert np.asarray(state.wire_colour[:3]).tolist() == [0, 1, 2]
    state, params = fresh("shuffle-1")
    state = _set_answer(state, [0, 1, 2, 3], answer_colour=1)
    state = play_round(state, params, blind=("cut", 0))
    assert int(state.ending) == T.WRONG_ACTION
    assert np.asarray(state.wire_colour[:4]).tolist() == [0, 1, 2, 3]


def _flashing_state():
    """flashing-1 with round-0 light naming wire 0 (red) and round-1 light naming wire 1."""
    state, params = fresh("flashing-1")
    k0, k1 = int(state.key_seq[0]), int(state.key_seq[1])
    manual = state.manual_val.at[k0].set(0).at[k1].set(1)
    colours = jnp.asarray([0, 1, 5, -1, -1, -1, -1], jnp.int32)
    return state.replace(manual_val=manual, wire_colour=colours), params


def test_flashing_cut_is_judged_by_the_light_when_it_lands():
    state, params = _flashing_state()
    won = play_round(state, params, blind=("cut", 0))  # round 0: light names wire 0
    assert int(won.ending) == T.DEFUSED
    late = play_round(play_round(state, params), params, blind=("cut", 0))  # round 1: stale
    assert int(late.ending) == T.WRONG_ACTION and bool(late.wrong_round)
    early = play_round(state, params, blind=("cut", 1))  # round 0: names wire 0, not 1
    assert int(early.ending) == T.WRONG_ACTION and not bool(early.wrong_round)
    wait = play_round(play_round(state, params), params, blind=("cut", 1))
    assert int(wait.ending) == T.DEFUSED
    assert int(state.light_seq[0]) != int(state.light_seq[1])  # the light really changes


def test_decoy_press_is_fatal_and_real_code_defuses():
    state, params = fresh("haystack-2")
    assert int(play_round(state, params, blind=("press", 0)).ending) == T.WRONG_ACTION
    state, params = fresh("carving-2")
    first, second = solve(jax.device_get(state), params)
    s1 = play_round(state, params, blind=("press", first))
    assert int(s1.progress) == 1 and bool(s1.pressed[first])
    assert int(play_round(s1, params, blind=("press", second)).ending) == T.DEFUSED
    assert int(play_round(state, params, blind=("press", second)).ending) == T.WRONG_ACTION


def test_haystack_decoys_change_every_round_and_others_do_not():
    obs = lambda s, p: np.asarray(observe_jit(s, p))[T.DEAF]  # noqa: E731
    sl = ENV.layout.slices()
    state, params = fresh("haystack-3")
    rounds = [state]
    for _ in range(4):
        rounds.append(play_round(rounds[-1], params))
    decoys = {tuple(obs(s, params)[sl["display2"]].tolist() + obs(s, params)[sl["keys"]].tolist())
              for s in rounds}
    assert len(decoys) > 1
    lights = [int(obs(s, params)[sl["light2"]][0]) - T.COLOUR_TOK for s in rounds]
    assert all(0 <= c < T.N_LIGHTS for c in lights) and len(set(lights)) > 1  # a decoy light
    assert "LIGHT2 [" in ENV.render_text(rounds[0], T.DEAF, params)
    assert "LIGHT2 [unreadable]" in ENV.render_text(rounds[0], T.BLIND, params)
    state, params = fresh("base-1")
    assert (obs(state, params)[sl["strip"]] == T.ABSENT).all()
    assert obs(state, params)[sl["light2"]].tolist() == [T.ABSENT]


def test_flashback_window_drops_old_rounds():
    state, params = fresh("flashback-3")  # 5 flashes, window 3
    for _ in range(4):
        state = play_round(state, params)
    hist = np.asarray(observe_jit(state, params))[T.DEAF][ENV.layout.slices()["history"]]
    hist = hist.reshape(T.MAX_ROUNDS, 2)
    lights = [int(x) for x in state.light_seq[:5]]
    assert (hist[:2] == T.PAD).all()  # rounds 0 and 1 scrolled out
    assert hist[2:4, 0].tolist() == [T.COLOUR_TOK + lights[2], T.COLOUR_TOK + lights[3]]
    assert (hist[4:] == T.PAD).all()
    assert int(state.round) == 4
    light_now = np.asarray(observe_jit(state, params))[T.DEAF][ENV.layout.slices()["light"]]
    assert light_now.tolist() == [T.COLOUR_TOK + lights[4]]
    for _ in range(1):
        state = play_round(state, params)
    light_now = np.asarray(observe_jit(state, params))[T.DEAF][ENV.layout.slices()["light"]]
    assert light_now.tolist() == [T.DARK]


def test_timeout_and_never_acted():
    state, params = fresh("base-1")
    for _ in range(8):
        state = play_round(state, params)
    assert int(state.ending) == T.TIMED_OUT and int(state.acts) == 0 and int(state.round) == 8
    step, frozen = jax.jit(ENV.step), state  # ended episodes are frozen by the env's step
    for role in (T.DEAF, T.MUTE, T.BLIND):
        _, frozen, reward, term, trunc, _ = step(jax.random.PRNGKey(0), frozen,
                                                 ENV.action(role, "cut", 0), params)
        assert not bool(term) and bool(trunc) and not np.asarray(reward).any()
    assert int(frozen.ending) == T.TIMED_OUT and int(frozen.acts) == 0 and int(frozen.round) == 8


def test_only_blind_acts():
    state, params = fresh("base-1")
    after = play_round(state, params, deaf=("cut", 0), mute=("press", 1))
    assert int(after.rejected) == 2 and int(after.ending) == T.RUNNING
    assert not bool(after.wire_cut.any())
    text = BombEnv("base-1").render_text(turn_jit(state, ENV.action("deaf", "cut"), params)[0],
                                         T.DEAF)
    assert "your action was rejected" in text


# ---- channels ---------------------------------------------------------------------------------


def test_delivery_matrix():
    """Spec delivery matrix: speech to Deaf bounces; a gesture to Blind arrives as blanks."""
    full, blanks, bounce = T.FULL, T.BLANKS, T.BOUNCE
    expected = {  # (sender, recipient) -> (speech, gesture)
        (T.DEAF, T.MUTE): (full, full), (T.DEAF, T.BLIND): (full, blanks),
        (T.MUTE, T.DEAF): (bounce, full), (T.MUTE, T.BLIND): (bounce, blanks),
        (T.BLIND, T.DEAF): (bounce, bounce), (T.BLIND, T.MUTE): (full, bounce),
    }
    for (s, r), want in expected.items():
        got = tuple(int(delivery(jnp.int32(s), jnp.int32(r), ch)) for ch in (0, 1))
        assert got == want, (s, r)
    for s in range(3):
        assert int(delivery(jnp.int32(s), jnp.int32(s), 0)) == bounce
        assert int(delivery(jnp.int32(s), jnp.int32(7), 1)) == bounce


def test_messages_deliver_and_bounce_through_step():
    env = BombEnv("base-1")
    state, params = fresh("base-1")
    hello = env.action("deaf", speak_to="blind", text="cut 2 ✂", gesture_to="blind",
                       symbols=("thumbs_up", "wave", "fist"))
    state = turn_jit(state, hello, params)[0]
    assert int(state.bounces) == 1  # the gesture to Blind is dead-channel use
    blind_text = env.render_text(state, T.BLIND)
    assert 'FROM deaf (speech): "cut 2 ✂"' in blind_text
    assert "FROM deaf (gesture): ? ? ?" in blind_text.splitlines()  # blanks, one per symbol
    assert "👍" not in blind_text
    deaf_text = env.render_text(state, T.DEAF)
    assert 'YOU SENT (speech) to blind: "cut 2 ✂"' in deaf_text
    assert "YOU SENT (gesture) to blind: 👍 👋 ✊" in deaf_text
    assert "bounced" not in deaf_text  # delivered (as blanks), so no bounce notice
    mute = env.action("mute", speak_to="deaf", text="hi", gesture_to="deaf",
                      symbols=("ok_hand", "point_left"))
    state = turn_jit(state, mute, params)[0]
    assert int(state.bounces) == 2  # Mute cannot speak
    assert "FROM mute (gesture): 👌 👈" in env.render_text(state, T.DEAF)
    assert "NOTICE your speech bounced" in env.render_text(state, T.MUTE)
    state = turn_jit(state, env.action("blind", speak_to="deaf", text="x"), params)[0]
    assert int(state.bounces) == 3  # Deaf cannot hear
    state = turn_jit(state, env.noop(), params)[0]  # Deaf's next turn replaces its inbox slot
    blind_text = env.render_text(state, T.BLIND).splitlines()
    assert "FROM deaf (speech): \"cut 2 ✂\"" not in blind_text
    assert 'CHAT r1: FROM deaf (speech): "cut 2 ✂"' in blind_text  # kept in the chat history
    assert "CHAT r1: FROM deaf (gesture): ? ? ?" in blind_text


def _chat(state, params, role):
    """(round numbers shown, speech recipients ``[H, 3]``) of ``role``'s chat section."""
    row = _row(state, params, role)
    sl = ENV.layout.slices()
    rounds = [int(t) - T.NUM_TOK for t in row[sl["chat_round"]] if t != T.PAD]
    return rounds, row[sl["chat_speech_meta"]].reshape(T.CHAT_ROUNDS, T.N_AGENTS)


def test_chat_history_window_oldest_first_and_flashback_scroll():
    env = BombEnv("base-3")
    state, params = fresh("base-3")
    for r in range(6):
        state = turn_jit(state, env.action("deaf", speak_to="mute", text=f"round {r}"), params)[0]
        state = play_round(state, params, deaf=None)
    rounds, meta = _chat(state, params, T.MUTE)
    assert rounds == [2, 3, 4, 5]  # a window of CHAT_ROUNDS earlier rounds, oldest first
    assert (meta[:, T.DEAF] == T.ROLE_TOK + T.MUTE).all() and (meta[:, [1, 2]] == T.PAD).all()
    mute = env.render_text(state, T.MUTE).splitlines()
    chat = [line for line in mute if line.startswith("CHAT")]
    assert chat == [f'CHAT r{r + 1}: FROM deaf (speech): "round {r}"' for r in range(2, 6)]
    assert _chat(state, params, T.BLIND)[1].max() == T.PAD  # nothing was sent to or by Blind
    state, params = fresh("flashback-3")  # window 3: the current round and the 2 before it
    for r in range(5):
        state = turn_jit(state, env.action("deaf", speak_to="mute", text=f"{r}"), params)[0]
        state = play_round(state, params, deaf=None)
    assert _chat(state, params, T.MUTE)[0] == [3, 4]  # flashed rounds 0..2 scrolled out
    assert _chat(state, params, T.DEAF)[0] == [3, 4]


# ---- observations -----------------------------------------------------------------------------


def _row(state, params, role):
    return np.asarray(observe_jit(state, params))[role]


@pytest.mark.parametrize("variant", ["base-2", "carving-2", "flashback-2", "haystack-3"])
def test_information_asymmetry(variant):
    state, params = fresh(variant, seed=3)
    state = play_round(state, params)
    rng = np.random.default_rng(0)
    present = np.asarray(state.wire_colour) >= 0
    for _ in range(4):
        recoloured = state.replace(
            wire_colour=jnp.where(present, rng.integers(0, T.N_COLOURS, T.MAX_WIRES), -1),
            light_seq=jnp.asarray(rng.integers(0, T.N_LIGHTS, T.SEQ), jnp.int32),
            disp_seq=jnp.asarray(rng.integers(0, 4, T.SEQ), jnp.int32),
            hist_light=jnp.asarray(rng.integers(0, T.N_LIGHTS, T.MAX_ROUNDS), jnp.int32),
            hist_disp=jnp.asarray(rng.integers(0, 4, T.MAX_ROUNDS), jnp.int32))
        assert (_row(recoloured, params, T.BLIND) == _row(state, params, T.BLIND)).all()
        board = recoloured.replace(
            wire_cut=jnp.asarray(rng.random(T.MAX_WIRES) < 0.5), plate=jnp.int32(5),
            keypad=jnp.asarray(rng.integers(0, 10, T.N_KEYS), jnp.int32),
            noise=jnp.uint32(rng.integers(0, 2**31)), pressed=jnp.ones(T.N_KEYS, bool))
        assert (_row(board, params, T.MUTE) == _row(state, params, T.MUTE)).all()
        plate = state.replace(plate=jnp.int32(rng.integers(0, len(T.PLATE_GLYPHS))))
        assert (_row(plate, params, T.DEAF) == _row(state, params, T.DEAF)).all()
    # and each role does see what it should
    assert (_row(state.replace(plate=(state.plate + 1) % 8), params, T.BLIND)
            != _row(state, params, T.BLIND)).any()
    assert (_row(state.replace(wire_colour=(state.wire_colour + 1) % 6), params, T.DEAF)
            != _row(state, params, T.DEAF)).any()


def test_text_matches_state():
    env = BombEnv("base-1")
    state, params = fresh("base-1", seed=5)
    deaf, blind, mute = (env.render_text(state, r) for r in (T.DEAF, T.BLIND, T.MUTE))
    colours = [T.COLOURS[c] for c in np.asarray(state.wire_colour) if c >= 0]
    wires = " ".join(f"{i + 1}:[{c}]" for i, c in enumerate(colours))
    assert f"WIRES {wires}" in deaf.splitlines()
    assert f"LIGHT [{T.COLOURS[int(state.light_seq[0])]}]" in deaf.splitlines()
    assert "PLATE [unreadable]" in deaf.splitlines()
    assert "LIGHT [unreadable]" in blind and "WIRES 1:[unreadable] 2:[unreadable]" in blind
    assert f"PLATE {T.PLATE_GLYPHS[int(state.plate)]}" in blind.splitlines()
    assert "WIRES" not in mute and "MANUAL" in mute
    k = int(state.key_seq[0])
    answer = T.COLOURS[int(state.manual_val[k])]
    assert f"  LIGHT [{T.COLOURS[k]}] -> CUT [{answer}]" in mute.splitlines()


# ---- determinism, jit, export ------------------------------------------------------------------


def test_jit_matches_no_jit_on_rule_helpers():
    state, params = fresh("shuffle-3", seed=4)
    cut = jnp.asarray([True, False, False, True, False, False, False])
    with jax.disable_jit():
        eager = (rotate_survivors(state.wire_colour, (state.wire_colour >= 0) & ~cut),
                 required_value(state, params))
    jitted = (jax.jit(rotate_survivors)(state.wire_colour, (state.wire_colour >= 0) & ~cut),
              jax.jit(required_value)(state, params))
    for a, b in zip(eager, jitted, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    expected = solve_rotate([int(c) for c in state.wire_colour], [bool(c) for c in cut])
    assert np.asarray(jitted[0]).tolist() == expected


def test_one_trace_serves_every_variant():
    traced = jax.jit(chex.assert_max_traces(observe, n=1))
    for v in T.VARIANTS:
        state, params = fresh(v.name)
        assert traced(state, params).shape == (T.N_AGENTS, ENV.layout.length)


def test_reset_is_deterministic_under_a_fixed_key():
    params = make_params(T.variant("flashback-3"))
    a, b = (reset_jit(jax.random.PRNGKey(5), params, **CAPS) for _ in range(2))
    jax.tree.map(lambda x, y: np.testing.assert_array_equal(np.asarray(x), np.asarray(y)), a, b)
    other = reset_jit(jax.random.PRNGKey(6), params, **CAPS)
    assert any((np.asarray(getattr(other, f)) != np.asarray(getattr(a, f))).any()
               for f in ("wire_colour", "key_seq", "light_seq", "plate"))


def _shuffle_2_turn():
    env = BombEnv("shuffle-2")
    action = env.action("deaf", speak_to="mute", text="hello", gesture_to="mute",
                        symbols=("wave",))
    return env, action


def test_determinism_of_reset_and_step():
    env, action = _shuffle_2_turn()
    key = jax.random.PRNGKey(11)
    state_b = reset_jit(key, env.default_params, **CAPS)
    again = reset_jit(key, env.default_params, **CAPS)
    jax.tree.map(np.testing.assert_array_equal, again, state_b)
    stepped_b = turn_jit(state_b, action, env.default_params)[0]
    assert int(stepped_b.speech_to[0, T.DEAF]) == T.MUTE and int(stepped_b.turn) == 1
    other = reset_jit(jax.random.PRNGKey(12), env.default_params, **CAPS)
    assert any((np.asarray(getattr(other, f)) != np.asarray(getattr(state_b, f))).any()
               for f in ("wire_colour", "key_seq", "manual_val", "plate"))


@pytest.mark.full  # op-by-op eager reset and step: ~1 min of CPU
def test_jit_matches_no_jit():
    env, action = _shuffle_2_turn()
    key = jax.random.PRNGKey(11)
    with jax.disable_jit():
        obs_a, state_a = env.reset(key)
        _, stepped_a, reward_a, term_a, trunc_a, _ = env.step(key, state_a, action)
    state_b = reset_jit(key, env.default_params, **CAPS)
    same = lambda a, b: np.testing.assert_array_equal(np.asarray(a), np.asarray(b))  # noqa: E731
    jax.tree.map(same, state_a, state_b)
    same(obs_a, observe_jit(state_b, env.default_params))
    stepped_b, reward_b, term_b, trunc_b = turn_jit(state_b, action, env.default_params)
    jax.tree.map(same, (stepped_a, reward_a, term_a, trunc_a),
                 (stepped_b, reward_b, term_b, trunc_b))


def test_export_schema_and_solutions_replay():
    for v in T.VARIANTS:
        records = export_instances(v.name, 2, 0)
        assert [r["index"] for r in records] == [0, 1]
        rec = records[0]
        assert set(rec) >= {"env", "variant", "seed", "state", "solution", "solution_kind"}
        assert rec["variant"]["name"] == v.name and len(rec["solution"]) == v.steps
        assert len(rec["state"]["wire_colour"]) == T.MAX_WIRES
        # replay the exported solution through the JAX step (turn order Deaf, Mute, Blind)
        params = make_params(v)
        state = jax.tree.map(jnp.asarray, fresh(v.name)[0])
        state = state.replace(**{k: jnp.asarray(np.asarray(x, dtype=getattr(state, k).dtype))
                                 for k, x in rec["state"].items()})
        act = "press" if rec["solution_kind"] == "press" else "cut"
        for pos in rec["solution"]:
            state = play_round(state, params, blind=(act, pos))
        assert int(state.ending) == T.DEFUSED, v.name
    assert export_instances("base-1", 2, 0) == export_instances("base-1", 2, 0)
