"""The MARL trainer at tiny sizes: one jit over updates with seeds vmapped, determinism,
checkpointed teams that play through jaxcollab.rollout exactly as the trainer evaluates them."""

import dataclasses

import jax
import numpy as np
import pytest

import jaxcollab
from jaxcollab.envs.bomb import tables as T
from jaxcollab.marl import learned_team
from jaxcollab.marl.ppo import PPOConfig, Trainer
from jaxcollab.marl.team import load_team, save_team

TINY = PPOConfig(episodes=8, steps=6, epochs=1, minibatches=2, hidden=8, embed=2, seeds=2)


@pytest.fixture(scope="module")
def trained():
    trainer = Trainer(TINY)
    ts, metrics = trainer.train(trainer.init(0), 2)
    return trainer, ts, jax.tree.map(np.asarray, metrics)


def test_updates_count_steps_and_endings(trained):
    trainer, ts, m = trained
    assert np.asarray(ts.update).tolist() == [2, 2]
    assert m["ended"].shape == (2, 2)
    assert (m["defused"] <= m["ended"]).all()
    assert np.isfinite(m["policy_loss"]).all() and (m["entropy"] > 0).all()
    # seeds are independent runs: different parameters after the same updates
    w = np.asarray(ts.params["actor"]["pi"]["w"])
    assert not np.allclose(w[0], w[1])


def test_training_is_deterministic(trained):
    trainer, ts, _ = trained
    again, _ = trainer.train(trainer.init(0), 2)
    for a, b in zip(jax.tree.leaves(ts.params), jax.tree.leaves(again.params), strict=True):
        np.testing.assert_array_equal(a, b)


def test_learned_team_plays_through_rollout_as_trained(trained, tmp_path):
    trainer, ts, _ = trained
    params = jax.tree.map(lambda p: p[0], ts.params)
    save_team(tmp_path / "team", TINY, params)
    cfg, loaded = load_team(tmp_path / "team")
    assert cfg == TINY
    keys = jaxcollab.episode_keys(5, 16)
    env = jaxcollab.make("bomb/base-1")  # default caps: the view reads the same tokens
    out = jaxcollab.rollout(env, learned_team(tmp_path, env), keys, max_steps=3 * 8,
                            until_done=True)
    rate = float((np.asarray(out.state.ending) == T.DEFUSED).mean())
    assert rate == pytest.approx(float(np.asarray(trainer.evaluate(ts.params, keys))[0]))
    assert np.asarray(out.state.round).max() <= 8


def test_mappo_and_per_role_parameters_train():
    cfg = dataclasses.replace(TINY, algo="mappo", shared=False, seeds=1)
    trainer = Trainer(cfg)
    ts, m = trainer.train(trainer.init(1), 1)
    assert "critic" in ts.params and ts.params["actor"]["pi"]["w"].shape[:2] == (1, 3)
    assert np.isfinite(np.asarray(m["value_loss"])).all()


def test_bad_configs_are_refused(tmp_path):
    with pytest.raises(ValueError, match="algo='sac'"):
        PPOConfig(algo="sac")
    with pytest.raises(ValueError, match="episodes=10"):
        PPOConfig(episodes=10, minibatches=4)
    with pytest.raises(FileNotFoundError, match="not a team checkpoint"):
        learned_team(tmp_path)
