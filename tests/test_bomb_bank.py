"""The paper's evaluation protocol over the instance bank: the plan (216 episodes, bank
instances, repeats, turn orders), the summaries and the trio-vs-solo gap."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import jaxcollab
from jaxcollab.agents.bomb.bank import rollout_bank
from jaxcollab.envs.bomb import export_instances, instance_keys
from jaxcollab.envs.bomb import tables as T
from jaxcollab.envs.bomb.bank import BANK_SEED, bank_episodes, gap, parse_turn_order, summarise
from jaxcollab.envs.bomb.env import reset_jit
from jaxcollab.envs.bomb.params import TURN_ORDERS


def test_plan_is_216_bank_episodes_with_repeats_and_turn_orders():
    plan = bank_episodes(jaxcollab.resolve("bomb/all"))
    assert len(plan.variant) == 216 and plan.params.rounds.shape == (216,)
    assert (np.unique(plan.variant, return_counts=True)[1] == 9).all()
    first = plan.variant == "bomb/base-1"
    assert plan.instance[first].tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert plan.repeat[first].tolist() == [0, 1, 2] * 3
    assert plan.order[first].tolist() == [0, 1, 2, 3, 4, 5, 0, 1, 2]  # every order is played
    np.testing.assert_array_equal(plan.params.turn_order[first][3], TURN_ORDERS[3])
    keys = np.asarray(plan.instance_key)[first]
    assert (keys[0] == keys[2]).all() and (keys[0] != keys[3]).any()  # repeats share an instance
    np.testing.assert_array_equal(keys[::3], np.asarray(instance_keys("base-1", 3, BANK_SEED)))
    # the same instances the bank exporter writes
    state = reset_jit(keys[3], jax.tree.map(lambda x: x[first][3], plan.params), 256, 32)
    exported = export_instances("base-1", 2, BANK_SEED)[1]["state"]
    assert np.asarray(state.wire_colour).tolist() == exported["wire_colour"]
    fixed = bank_episodes(["base-2"], repeats=2, instances=1, turn_order="mute,deaf,blind")
    assert fixed.params.turn_order.tolist() == [[1, 0, 2]] * 2


def test_bad_protocol_arguments_are_named():
    with pytest.raises(ValueError, match="turn_order 'deaf,deaf,blind'"):
        parse_turn_order("deaf,deaf,blind")
    assert parse_turn_order(["blind", "0", "mute"]) == (2, 0, 1)
    with pytest.raises(ValueError, match="repeats must be positive"):
        bank_episodes(["base-1"], repeats=0)
    with pytest.raises(ValueError, match=r"instances must be in 1\.\.5"):
        bank_episodes(["base-1"], instances=6)


def test_summaries_and_gap_count_exactly():
    variant = ["bomb/base-1"] * 4 + ["bomb/base-4"] * 2 + ["bomb/bait-1"] * 2
    ending = np.array([T.DEFUSED, T.DEFUSED, T.TIMED_OUT, T.WRONG_ACTION,
                       T.TIMED_OUT, T.DEFUSED, T.DEFUSED, T.TIMED_OUT])
    acts = np.array([1, 1, 0, 1, 2, 3, 1, 1])
    s = summarise(variant, ending, acts)
    assert set(s) == {"core", "plus", "all", "families"}
    assert s["core"] == {"episodes": 6, "success_rate": 0.5, "never_acted": 1,
                         "endings": {"defused": 3, "wrong_action": 1, "timed_out": 2}}
    assert s["plus"]["success_rate"] == 0.5 and s["plus"]["never_acted"] == 0
    assert s["all"]["episodes"] == 8 and s["all"]["success_rate"] == 0.5
    assert set(s["families"]) == {"base", "bait"}
    assert s["families"]["base"]["success_rate"] == 0.5
    solo = summarise(variant, np.full(8, T.DEFUSED), acts)
    assert gap(s, solo) == {"core": 0.5, "plus": 0.5, "all": 0.5,
                            "families": {"base": 0.5, "bait": 0.5}}


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_rollout_bank_summaries_and_solo_gap():
    names = ["bomb/base-1", "bomb/flashing-1"]
    res = rollout_bank(names, "oracle", solo="solo")  # privileged policy on pinned instances
    assert res["episodes"] == 18 and set(res["variants"]) == set(names)
    summary = res["summary"]
    assert set(summary) == {"core", "all", "families", "solo", "gap"}  # no Plus variant here
    assert summary["all"]["endings"] == {"defused": 18, "wrong_action": 0, "timed_out": 0}
    assert summary["solo"]["families"]["flashing"]["success_rate"] == 1.0
    assert summary["gap"] == {"core": 0.0, "all": 0.0, "families": {"base": 0.0, "flashing": 0.0}}
    half = {"core": {"success_rate": 0.5}, "all": {"success_rate": 0.5},
            "families": {"base": {"success_rate": 1.0}, "flashing": {"success_rate": 0.0}}}
    solo = {"protocol": {**res["protocol"], "seed": 7}, "summary": half}
    gaps = rollout_bank(names, "oracle", solo=solo)["summary"]["gap"]
    assert gaps == {"core": -0.5, "all": -0.5, "families": {"base": 0.0, "flashing": -1.0}}
    with pytest.raises(ValueError, match="protocol"):
        rollout_bank(names, "oracle", repeats=1, solo=solo)


def test_cli_bank_protocol_writes_summaries(cli, tmp_path):
    results = cli("eval/rollout.py", "env=bomb/all", "agent=oracle", "bank=true",
                        "repeats=1", f"out_dir={tmp_path}")
    assert results["episodes"] == 72  # 24 variants x 3 bank instances x 1 repeat
    assert results["summary"]["all"]["success_rate"] == 1.0
    assert set(results["summary"]) >= {"core", "plus", "all", "families"}
    assert len(results["summary"]["families"]) == 7
