"""The talking Defuser/Expert team: it defuses every module type without hidden state (GPTNT §4)."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcollab
from jaxcollab.agents.ktane import team
from jaxcollab.agents.ktane.llm import message_phrase
from jaxcollab.agents.ktane.reading import edgework_facts
from jaxcollab.agents.ktane.talking import (
    TOUR_TURNS,
    compact,
    defuser_turn,
    expert_turn,
    parse_instruction,
    say,
)
from jaxcollab.core.rollout import PrivilegedPolicy, episode_keys, rollout
from jaxcollab.envs.ktane import KtaneEnv, Mission
from jaxcollab.envs.ktane import tables as T
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.edgework import facts, sample_edgework
from jaxcollab.envs.ktane.modules import MODULE_TYPES
from jaxcollab.envs.ktane.modules.base import CUT, MESSAGE, PRESS, ROTATE
from jaxcollab.envs.ktane.observe import FACE_LEN, HEADER_LEN, side_view
from jaxcollab.envs.ktane.ruleset import vanilla_ruleset

#: Every module type on two bombs (at most 9 slots fit a face view; slot 7 sits on the back, so
#: the team also flips), with time to spare: a test of the dialogue, not of the clock. The
#: seven-module bomb is slow to compile (-m slow); every module type's success at its own time
#: limit is measured by ``eval/rollout.py env=ktane/all agent=talking`` (README).
BOMBS = (
    ("wires", "button", "keypad", "simon", "whos_on_first", "memory", "morse"),
    ("complicated_wires", "wire_sequence", "maze", "passwords"),
)


def _bomb(modules) -> KtaneEnv:
    return KtaneEnv(Mission(modules=modules, time_limit_s=1200), "test/" + "+".join(modules))


def test_talking_is_a_plain_policy():
    policy = team("talking", jaxcollab.make("ktane/wires"))
    assert not policy.privileged and not isinstance(policy, PrivilegedPolicy)


@pytest.mark.parametrize(
    "modules",
    [pytest.param(BOMBS[0], id="seven", marks=pytest.mark.slow), pytest.param(BOMBS[1], id="four")],
)
@pytest.mark.full  # long: the default tier's time (issue 36)
def test_talking_defuses_every_module_type_without_a_strike(modules):
    env = _bomb(modules)
    final = rollout(env, team("talking", env), episode_keys(3, 8), max_steps=env.max_turns,
                    until_done=True).state
    # the Expert applies the same rules to what it hears as the modules do to their state,
    # so every instruction is right: all solved, no strike
    assert np.asarray(final.outcome).tolist() == [T.SOLVED] * 8
    assert np.asarray(final.strikes).tolist() == [0] * 8
    # it talked: at least one description and one answer per module
    assert np.all(np.asarray(final.n_messages) >= len(modules))


def test_every_module_type_is_on_a_test_bomb():
    assert sorted(sum(BOMBS, ())) == sorted(MODULE_TYPES)


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_team_reads_rules_not_the_hidden_answer():
    """A wires bomb whose hidden ``answer`` field is rewritten: the Defuser's observation is
    the same, so the team cuts the wire the rules pick, and that cut now strikes."""
    env = jaxcollab.make("ktane/wires")
    policy = team("talking", env)
    key = jax.random.key(5)
    state = env.init_state(key)
    m = env.board.types[0].layout.unpack(state.modules[0])
    wrong = jnp.argmax((m["colors"] >= 0) & (jnp.arange(6) != m["answer"]))
    forged = state.replace(modules=state.modules.at[0].set(
        env.board.types[0].layout.pack(dict(m, answer=wrong))))
    act, step, observe = jax.jit(policy.act), jax.jit(env.step), jax.jit(env.observe)
    cuts = []
    for s in (state, forged):
        mem = policy.init(key)
        for t in range(60):
            actions, mem = act(jax.random.key(t), observe(s), mem)
            _, s, *_ = step(jax.random.key(t), s, actions)
            if t % 2 == 0 and int(actions[0, 0]) == CUT:
                cuts.append(int(actions[0, 1]))
                break
        cuts.append(int(s.strikes))
    assert cuts[0] == cuts[2] == int(m["answer"]) != int(wrong)
    assert cuts[1] == 0 and cuts[3] == 1


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_expert_answer_depends_only_on_the_phrase_heard():
    """The same Defuser phrase over two different bombs: identical Expert rows, identical
    answers (the Expert's row shows no bomb)."""
    env = jaxcollab.make("ktane/keypad")
    a, b = (env.init_state(jax.random.key(k)) for k in (1, 2))
    assert a.modules.tolist() != b.modules.tolist()
    mem = team("talking", env).init(jax.random.key(0)).expert
    phrase = say(jnp.concatenate([jnp.array(V.toks(("module", "Keypad", "[A]", "front",
                                                    "strikes", "0"))),
                                  env.observe(a.replace(zoom=jnp.int32(0)))[0][
                                      HEADER_LEN + FACE_LEN : HEADER_LEN + FACE_LEN + 40]]))
    rows = []
    for s in (a, b):
        s = s.replace(messages=s.messages.at[0].set(phrase[2:]), fresh=jnp.array([True, False]))
        rows.append(env.observe(s)[1])
    np.testing.assert_array_equal(rows[0], rows[1])
    manual = vanilla_ruleset()
    out = [expert_turn(env, manual, r, mem, jax.random.key(0)) for r in rows]
    chex.assert_trees_all_equal(out[0], out[1])
    # and it answers with four presses, in the column order of a's keys
    words = V.decode(out[0][0][2:])
    assert out[0][0][0] == MESSAGE and words[0] == "press" and len(words) == 5


def test_parse_instruction():
    phrase = jnp.pad(jnp.array(V.toks(("cut", "[A]", "[C]", "press", "[D]"))), (0, 43))
    verbs, targets, n = parse_instruction(phrase)
    assert int(n) == 3
    assert verbs[:3].tolist() == [CUT, CUT, PRESS] and targets[:3].tolist() == [0, 2, 3]


@pytest.mark.full  # long for the default tier (measured idle)
def test_edgework_read_off_the_sides_gives_the_bombs_facts():
    """What the Defuser's tour collects (each side's words, padding dropped) parses back to
    exactly the edgework facts the rules read, over 200 random casings."""

    def tour_words(key):
        edge = sample_edgework(key, jnp.int32(T.MAX_WIDGETS))
        words = jnp.concatenate([side_view(edge, jnp.int32(f)) for f in T.SIDE_FACES])
        return facts(edge), edgework_facts(compact(words)[:48])

    want, got = jax.vmap(tour_words)(jax.random.split(jax.random.key(0), 200))
    chex.assert_trees_all_equal(want, got)


def test_tour_sees_the_four_sides_and_ends_on_the_front():
    for start in (0, 1):
        face, seen = start, []
        for r in TOUR_TURNS:
            face = int(T.NEXT_FACE[face, r])
            seen.append(face)
        assert sorted(seen[:4]) == sorted(T.SIDE_FACES) and seen[4] == 0


def test_talking_rollout_is_deterministic():
    env = jaxcollab.make("ktane/wires")
    policy = team("talking", env)
    keys = episode_keys(7, 4)
    a = rollout(env, policy, keys, max_steps=24).state
    b = rollout(env, policy, keys, max_steps=24).state
    chex.assert_trees_all_equal(a, b)


@pytest.mark.full  # op-by-op eager turns of the talking team: minutes of CPU
def test_talking_jit_matches_eager():
    env = jaxcollab.make("ktane/wires")
    policy = team("talking", env)
    state, key = env.init_state(jax.random.key(2)), jax.random.key(3)
    mem = policy.init(key)
    act = jax.jit(policy.act)
    turns = 0
    while int(state.outcome) == T.RUNNING and turns < 24:
        obs = env.observe(state)
        jitted, mem_j = act(key, obs, mem)
        if turns < 14:  # eager is slow: compare through describe / edgework / tour
            with jax.disable_jit():
                eager, mem_e = policy.act(key, obs, mem)
            np.testing.assert_array_equal(jitted, eager)
            chex.assert_trees_all_equal(mem_j, mem_e)
        _, state, *_ = env.step(key, state, jitted)
        mem, turns = mem_j, turns + 1
    assert int(state.outcome) == T.SOLVED and turns == 19  # the dialogue ends with the cut


def test_defuser_tours_when_asked():
    env = jaxcollab.make("ktane/wires")
    mem = team("talking", env).init(jax.random.key(0)).defuser.replace(mode=jnp.int32(1))
    state = env.init_state(jax.random.key(0))
    ask = jnp.pad(jnp.array([V.tok("edgework")]), (0, 47))
    state = state.replace(messages=state.messages.at[1].set(ask), fresh=jnp.array([False, True]))
    action, mem = defuser_turn(env, env.observe(state)[0], mem)
    assert action[:2].tolist() == [ROTATE, int(TOUR_TURNS[0])] and int(mem.tour) == 1


def test_llm_message_maps_to_vocabulary_words():
    phrase = message_phrase("Cut the wire at [C], it is red. Then press hold! Dial 3.545 MHz.")
    assert V.decode(phrase) == ["cut", "wire", "at", "[C]", "red", "press", "hold", "3.545",
                                "MHz"]
    assert V.decode(message_phrase("hello xyzzy")) == ["nothing"]  # no vocabulary word
    assert message_phrase(" ".join(["red"] * 60)).shape == (48,)


def test_header_positions_the_defuser_reads():
    from jaxcollab.agents.ktane import talking

    env = jaxcollab.make("ktane/wires")
    row = np.asarray(env.observe(env.init_state(jax.random.key(0)))[0])
    assert row[talking._STRIKES_AT - 1] == V.tok("strikes")
    assert row[talking._LAST_AT - 1] == V.tok("last")
    assert row[talking._TIMER_AT[0] - 1] == V.tok("time")
