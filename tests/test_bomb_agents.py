"""Bomb teams: codecs, oracle defuses all 24 variants, random mostly fails, rollout results file,
protocol teams really communicate."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcollab.agents.bomb import evaluate
from jaxcollab.agents.bomb.codecs import COUNT, MAX_VALUES, SYMBOL
from jaxcollab.agents.bomb.view import BLANK_ID, parse
from jaxcollab.envs.bomb import BombEnv
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.env import reset_jit, turn_jit
from jaxcollab.envs.bomb.observe import observe

KEYS = {"agent", "episodes", "success_rate", "endings", "mean_rounds", "bounces",
        "episodes_per_second", "devices", "variants"}


def _values(*v):
    return jnp.asarray(list(v) + [0] * (MAX_VALUES - len(v)), jnp.int32)


@pytest.mark.parametrize("gesture", [True, False])
def test_codecs_round_trip_and_truncate(gesture):
    values = _values(3, 0, 5, 1)
    for codec in (SYMBOL, COUNT):
        enc = jax.jit(codec.encode, static_argnums=(2, 3))
        dec = jax.jit(codec.decode, static_argnums=(1,))
        got, n = dec(enc(values, jnp.int32(4), 32, gesture), gesture)
        assert int(n) == 4 and np.asarray(got[:4]).tolist() == [3, 0, 5, 1]
        if codec is COUNT:
            counted = enc(values, jnp.int32(4), 32, gesture)
            assert int((counted != 0).sum()) == (3 + 2) + (0 + 2) + (5 + 2) + (1 + 2)
            got, n = dec(enc(values, jnp.int32(4), 8, gesture), gesture)  # only "3", "0" fit
            assert int(n) == 2 and np.asarray(got[:2]).tolist() == [3, 0]


def test_oracle_defuses_every_variant_and_results_file(tmp_path, cli):
    results = cli("eval/rollout.py", "env=bomb/all", "agent=oracle", "episodes=6", "seed=0",
                  f"out_dir={tmp_path}")
    written = json.loads((tmp_path / "results.json").read_text())
    assert written["env"] == "bomb/all" and KEYS <= set(written)
    assert len(results["variants"]) == 24 and results["episodes"] == 144
    assert results["success_rate"] == 1.0
    for name, v in results["variants"].items():
        assert v["success_rate"] == 1.0 and v["endings"]["defused"] == 6, name
        assert KEYS - {"agent", "devices", "variants", "episodes_per_second"} <= set(v)
    assert results["bounces"] == 0.0 and results["never_acted"] == 0


def test_random_team_mostly_fails_and_bounces():
    results = evaluate(["bomb/base-1", "bomb/base-3", "bomb/haystack-2", "bomb/carving-2"],
                      "random", 24, 0)
    assert results["success_rate"] < 0.2
    assert results["endings"]["wrong_action"] > results["endings"]["defused"]
    assert results["bounces"] > 0.5  # random recipients hit dead channels


def test_view_reads_blanks_and_the_chat_history():
    env = BombEnv("base-1")
    params = env.default_params
    state = reset_jit(jax.random.PRNGKey(0), params, env.speech_bytes, env.gesture_symbols)
    show = env.action("deaf", speak_to="mute", text="hi", gesture_to="blind",
                      symbols=("clap",) * 3)
    state = turn_jit(state, show, params)[0]
    views = jax.jit(lambda s: [parse(observe(s, params)[r], r, env.layout) for r in range(3)])
    blind = views(state)[T.BLIND]
    assert bool(blind.gesture_from[T.DEAF]) and int(blind.round) == 0
    assert np.asarray(blind.gesture[T.DEAF, :4]).tolist() == [BLANK_ID] * 3 + [0]
    assert (np.asarray(blind.chat_round) == -1).all()
    for role in ("mute", "blind", "deaf"):  # Deaf's turn in round 2 replaces its inbox slot
        state = turn_jit(state, env.action(role), params)[0]
    _, mute, blind = views(state)
    assert not bool(blind.gesture_from[T.DEAF]) and not bool(mute.speech_from[T.DEAF])
    assert np.asarray(blind.chat_round).tolist() == [-1, -1, -1, 0]  # oldest first
    assert int(blind.chat_gesture_to[-1, T.DEAF]) == T.BLIND
    assert np.asarray(blind.chat_gesture[-1, T.DEAF, :4]).tolist() == [BLANK_ID] * 3 + [0]
    assert int(mute.chat_speech_to[-1, T.DEAF]) == T.MUTE
    assert bytes(np.asarray(mute.chat_speech[-1, T.DEAF, :2], np.uint8)) == b"hi"
    assert int(mute.chat_gesture_to[-1, T.DEAF]) == -1  # not addressed to Mute


def test_unknown_team_lists_valid_ones():
    with pytest.raises(KeyError, match="oracle.*onebit"):
        evaluate(["bomb/base-1"], "telepathy", 1, 0)


#: One protocol team by default; the other teams check the same rows in the full tier.
TEAM_TIERS = [pytest.param("symbol"), *(pytest.param(t, marks=pytest.mark.full)
                                        for t in ("counting", "onebit", "solo"))]


@pytest.mark.parametrize("team", TEAM_TIERS)
def test_protocol_teams_communicate(team):
    if team == "solo":
        assert evaluate(["bomb/flashing-1"], "solo", 12, 0)["success_rate"] == 1.0
        return
    res = evaluate(["bomb/base-1", "bomb/carving-1", "bomb/flashing-1"], team, 12, 0)
    v = res["variants"]
    assert v["bomb/base-1"]["success_rate"] == 1.0, team  # relay through the channels
    assert v["bomb/carving-1"]["success_rate"] == 1.0, team  # Blind's plate reaches Mute
    assert v["bomb/flashing-1"]["success_rate"] < 0.5, team  # stale answers time out
    # counting shows Blind the wire as blanks (SANZARU Fig. 9): dead-channel use
    assert (res["bounces"] > 0.0) if team == "counting" else (res["bounces"] == 0.0), team
