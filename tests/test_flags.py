"""Perspective flags (SANZARU Table 6) on episodes built to carry each flag, and
``eval/analyze.py`` on a finished run."""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import jaxcollab
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.env import reset_jit, turn_jit
from jaxcollab.envs.bomb.flags import episode_flags, fact_owners, shares

ROOT = Path(__file__).resolve().parent.parent


def episode(variant: str, turns: list[dict], seed: int = 3):
    """Play ``turns`` (``env.action`` keywords for whoever's turn it is) from the reset of
    ``seed`` under the default turn order (deaf, mute, blind); returns the flags of the episode
    and its final state. A turn may give ``cut="answer"`` / ``cut="other"``: cut the wire the
    manual asks for now / an uncut wire it does not."""
    env = jaxcollab.make(f"bomb/{variant}")
    params = env.default_params
    state = reset_jit(jax.random.PRNGKey(seed), params, env.speech_bytes, env.gesture_symbols)
    states, actions = [], []
    for spec in turns:
        spec = dict(spec)
        actor = int(params.turn_order[int(state.turn)])
        if "cut" in spec:
            want = _required_position(state, params)
            alive = [i for i in range(T.MAX_WIRES)
                     if int(state.wire_colour[i]) >= 0 and not bool(state.wire_cut[i])]
            pos = want if spec.pop("cut") == "answer" else next(i for i in alive if i != want)
            spec.update(act="cut", arg=pos)
        action = env.action(actor, **spec)
        states.append(state)
        actions.append(action)
        state, *_ = turn_jit(state, action, params)
    stack = lambda xs: jax.tree.map(lambda *a: np.stack(a)[:, None], *xs)  # noqa: E731
    sole, per_stage = fact_owners(variant)
    flags = episode_flags(stack(states), stack(actions), jax.tree.map(lambda x: x[None], state),
                          np.asarray(params.turn_order)[None], sole[None], per_stage[None])
    return {k: np.asarray(v)[0].item() for k, v in flags.items()}, state


def _required_position(state, params) -> int:
    from jaxcollab.agents.bomb.teams import oracle_hint

    return int(oracle_hint(state, params)[1])


WAIT = {}
TALK_D = {"gesture_to": "mute", "symbols": ("thumbs_up", "fist")}  # 2 symbols to Mute
TALK_M = {"gesture_to": "deaf", "symbols": ("wave",)}              # 1 symbol to Deaf


def test_fact_owners_from_perception():
    """Base: Mute alone holds the manual, Deaf alone the light and the wires; carving: Blind
    alone feels the plate; carving-2's keypad is felt by Blind and seen by Deaf (no sole
    owner); the staged light changes with every cut, shuffled wires with every cut."""
    sole, staged = fact_owners("base-3")
    assert sole.tolist() == [T.MUTE, T.DEAF, T.DEAF] and staged.tolist() == [False, True, False]
    assert fact_owners("carving-2")[0].tolist() == [T.MUTE, T.BLIND, -1]
    assert fact_owners("shuffle-1")[1].tolist() == [False, True, True]
    assert fact_owners("flashing-1")[1].tolist() == [False, False, False]


def test_silent_wrong_cut_is_an_omission():
    """Nobody talks and Blind cuts a wrong wire in round 0: lost, omission (Deaf and Mute
    each alone saw a fact and sent nothing), no dead channel, no wrong round."""
    flags, state = episode("base-1", [WAIT, WAIT, {"cut": "other"}])
    assert int(state.ending) == T.WRONG_ACTION
    assert flags == {"lost": True, "dead_channel": False, "wrong_round": False,
                     "omission": True, "messages": 0, "symbols": 0}


def test_told_then_wrong_is_not_an_omission():
    """Deaf gestures 2 symbols to Mute, Mute 1 to Deaf, then Blind cuts a wrong wire: both
    sole holders sent something that could carry their facts: no omission."""
    flags, _ = episode("base-1", [TALK_D, TALK_M, {"cut": "other"}])
    assert flags == {"lost": True, "dead_channel": False, "wrong_round": False,
                     "omission": False, "messages": 2, "symbols": 3}


def test_dead_channel_bounce_and_blanks():
    """Deaf speaks 3 bytes to Mute; Mute gestures 2 symbols to Blind (arrives as blanks: dead
    channel, still delivered); Blind speaks 2 bytes to Deaf (bounced) and cuts a wrong wire."""
    flags, state = episode("base-1", [
        {"speak_to": "mute", "text": "red"},
        {"gesture_to": "blind", "symbols": ("clap", "clap")},
        {"speak_to": "deaf", "text": "hi", "cut": "other"},
    ])
    assert int(state.bounces) == 2
    assert flags == {"lost": True, "dead_channel": True, "wrong_round": False,
                     "omission": False, "messages": 3, "symbols": 7}


def test_only_bounced_calls_are_an_omission():
    """Mute's only call is nothing it can send (speech, which Mute lacks: bounced); Deaf
    talks; time runs out: lost by time-out, dead channel, and an omission by Mute."""
    rounds = T.VARIANT_BY_NAME["base-1"].rounds
    turns = [TALK_D, {"speak_to": "deaf", "text": "x"}, WAIT] + [WAIT] * (3 * rounds - 3)
    flags, state = episode("base-1", turns)
    assert int(state.ending) == T.TIMED_OUT
    assert flags["lost"] and flags["dead_channel"] and flags["omission"]
    assert (flags["wrong_round"], flags["messages"], flags["symbols"]) == (False, 2, 3)


def test_staged_light_not_reported_after_the_cut():
    """Base-3: the team talks in round 0 and Blind cuts the right wire; the light changes;
    in round 1 only Mute talks and Blind cuts a wrong wire: Deaf left Mute on the old light
    (omission), although it had talked before the cut."""
    flags, state = episode("base-3", [TALK_D, TALK_M, {"cut": "answer"},
                                      WAIT, TALK_M, {"cut": "other"}])
    assert (int(state.progress), int(state.ending)) == (1, T.WRONG_ACTION)
    assert flags == {"lost": True, "dead_channel": False, "wrong_round": False,
                     "omission": True, "messages": 3, "symbols": 4}


def test_wrong_round_cut():
    """Flashing-1 (light cycle of period 2): the team talks in round 0, Blind waits; in round
    1 Blind cuts the wire the manual asked for in round 0: wrong round, no omission."""
    env = jaxcollab.make("bomb/flashing-1")
    params = env.default_params
    old = _required_position(reset_jit(jax.random.PRNGKey(3), params, env.speech_bytes,
                                       env.gesture_symbols), params)
    flags, state = episode("flashing-1", [TALK_D, TALK_M, WAIT, WAIT, WAIT,
                                          {"act": "cut", "arg": old}])
    assert int(state.ending) == T.WRONG_ACTION and bool(state.wrong_round)
    assert flags == {"lost": True, "dead_channel": False, "wrong_round": True,
                     "omission": False, "messages": 2, "symbols": 3}


def test_defused_episode_carries_no_loss_flags():
    """Blind cuts the right wire with no talk: defused, nothing lost, no omission."""
    flags, state = episode("base-1", [WAIT, WAIT, {"cut": "answer"}])
    assert int(state.ending) == T.DEFUSED
    assert flags == {"lost": False, "dead_channel": False, "wrong_round": False,
                     "omission": False, "messages": 0, "symbols": 0}


def test_shares_over_lost_episodes():
    """Shares are fractions of the lost episodes (SANZARU Table 6), None with no loss."""
    flags = {"lost": np.array([1, 1, 0, 1], bool), "dead_channel": np.array([1, 0, 1, 0], bool),
             "wrong_round": np.array([0, 0, 1, 1], bool), "omission": np.array([1, 1, 0, 0], bool)}
    assert shares(flags) == {"lost": 3, "shares": {"dead_channel": 1 / 3, "wrong_round": 1 / 3,
                                                   "omission": 2 / 3}}
    none = {k: v[2:3] for k, v in flags.items()}
    assert shares(none)["shares"] == {"dead_channel": None, "wrong_round": None, "omission": None}


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow
def test_analyze_cli_on_a_rollout_run(tmp_path):
    """``eval/analyze.py run=DIR`` replays a finished rollout of the random team and writes
    ``analysis.json`` whose lost count and flags match the run and the built definitions."""
    run = tmp_path / "run"
    out = _cli("eval/rollout.py", "env=bomb/base-1", "agent=random", "episodes=12",
               f"out_dir={run}")
    assert out.returncode == 0, out.stderr
    out = _cli("eval/analyze.py", f"run={run}")
    assert out.returncode == 0, out.stderr
    results = json.loads((run / "results.json").read_text())
    analysis = json.loads((run / "analysis.json").read_text())
    lost = results["endings"]["wrong_action"] + results["endings"]["timed_out"]
    assert analysis["lost"] == lost == len(analysis["lost_episodes"])
    for flag in ("dead_channel", "omission"):  # the shares are those of the listed episodes
        flagged = np.mean([e[flag] for e in analysis["lost_episodes"]])
        assert analysis["shares"][flag] == pytest.approx(flagged)
    assert analysis["shares"]["dead_channel"] > 0.5  # random calls mostly reach a dead channel
    again = _cli("eval/analyze.py", f"run={run}")  # a rerun rewrites the same analysis
    assert again.returncode == 0, again.stderr
    assert json.loads((run / "analysis.json").read_text())["lost_episodes"] == \
        analysis["lost_episodes"]


def test_analyze_cli_refuses_a_run_it_cannot_replay(tmp_path):
    """A directory without results.json is refused, naming the key and what was expected."""
    out = _cli("eval/analyze.py", f"run={tmp_path}")
    assert out.returncode != 0
    assert "run=" in out.stderr and "results.json" in out.stderr
