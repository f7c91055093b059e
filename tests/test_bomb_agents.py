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


def test_unknown_team_lists_valid_ones():
    with pytest.raises(KeyError, match="oracle.*onebit"):
        evaluate(["bomb/base-1"], "telepathy", 1, 0)


def test_protocol_teams_communicate():
    for team in ("symbol", "counting", "onebit"):
        res = evaluate(["bomb/base-1", "bomb/carving-1", "bomb/flashing-1"], team, 12, 0)
        v = res["variants"]
        assert v["bomb/base-1"]["success_rate"] == 1.0, team  # relay through the channels
        assert v["bomb/carving-1"]["success_rate"] == 1.0, team  # Blind's plate reaches Mute
        assert v["bomb/flashing-1"]["success_rate"] < 0.5, team  # stale answers time out
        assert res["bounces"] == 0.0, team
    solo = evaluate(["bomb/flashing-1"], "solo", 12, 0)
    assert solo["success_rate"] == 1.0
