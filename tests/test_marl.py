"""The MARL trainer at tiny sizes: one jit over updates with seeds vmapped, one compile per
process, determinism, gradients through the channel only under dial, every turn order, a
Keep-Talking module, and checkpointed teams that play through jaxcollab.rollout exactly as the
trainer evaluates them."""

import dataclasses
import logging

import jax
import numpy as np
import pytest

import jaxcollab
from jaxcollab.agents.bomb import rollout_bank
from jaxcollab.envs.bomb import tables as T
from jaxcollab.marl import learned, learned_team
from jaxcollab.marl.ppo import PPOConfig, Trainer
from jaxcollab.marl.team import load_team, save_team

TINY = PPOConfig(episodes=8, steps=6, epochs=1, minibatches=2, hidden=8, embed=2, seeds=2,
                 dial=True, aux_coef=0.5, turn_order="cycle")


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


def test_training_is_deterministic_and_compiles_once(trained, caplog):
    trainer, ts, _ = trained
    again, _ = trainer.train(trainer.init(0), 2)
    for a, b in zip(jax.tree.leaves(ts.params), jax.tree.leaves(again.params), strict=True):
        np.testing.assert_array_equal(a, b)
    with jax.log_compiles(), caplog.at_level(logging.DEBUG):
        jax.block_until_ready(trainer.train(again, 2))     # a later chunk: no new compile
    assert not [r for r in caplog.records if "ompil" in r.getMessage()]


def test_episodes_play_every_turn_order(trained):
    trainer, ts, _ = trained
    orders = np.asarray(trainer.episode_params(jax.random.PRNGKey(0), 600).turn_order)
    assert len({tuple(o) for o in orders}) == 6
    held = np.asarray(trainer.heldout_params(12).turn_order)
    np.testing.assert_array_equal(held[:6], held[6:])      # TURN_ORDERS[i % 6], as the bank
    assert len({tuple(o) for o in held}) == 6


@pytest.mark.full  # two more trainers to compile; CI's full tier runs it
def test_only_dial_passes_listener_gradients_to_speakers():
    """The auxiliary loss reads the GRU state, never the message logits: without dial its
    gradient on the policy head is exactly zero; with dial it reaches speakers through what
    their listeners heard: only roles that sent a message some teammate gets in full; also
    under other-play, where the listeners hear each sender's relabeled symbols."""
    from jaxcollab.envs.bomb.rules import delivery

    for dial, other_play in ((False, False), (True, False), (True, True)):
        t = Trainer(dataclasses.replace(TINY, dial=dial, shared=False, seeds=1,
                                        turn_order="deaf,mute,blind", other_play=other_play))
        state = jax.tree.map(lambda x: x[0], t.init(3))
        _, traj = jax.jit(t.rollout)(state)
        aux = lambda p, t=t, traj=traj, h=state.hidden: t._replay(p, traj, h)[3].mean()  # noqa: E731
        grad = jax.jit(jax.grad(aux))(state.params)
        pi = np.abs(np.asarray(grad["actor"]["pi"]["w"])).sum((1, 2)) > 0
        actor, action = np.asarray(traj["actor"]), np.asarray(traj["action"])
        heard = {int(a) for ch in range(2) for a, to in zip(
            actor.ravel(), action[..., t.view.recipient_head(ch)].ravel() - 1, strict=True)
            if to >= 0 and int(delivery(a, to, ch)) == T.FULL}
        if not dial:
            assert not pi.any()
        else:
            assert pi.any() and set(np.flatnonzero(pi).tolist()) <= heard


@pytest.mark.full  # long for the default tier (measured idle)
def test_learned_team_plays_through_rollout_as_trained(trained, tmp_path):
    trainer, ts, _ = trained
    params = jax.tree.map(lambda p: p[0], ts.params)
    save_team(tmp_path / "team", TINY, params)
    cfg, loaded = load_team(tmp_path / "team")
    assert cfg == TINY
    keys = jaxcollab.episode_keys(5, 16)
    env = jaxcollab.make("bomb/base-1")  # default caps: the view reads the same tokens
    out = jaxcollab.rollout(env, learned_team(tmp_path, env), keys, trainer.heldout_params(16),
                            batched_params=True, max_steps=3 * 8, until_done=True)
    rate = float((np.asarray(out.state.ending) == T.DEFUSED).mean())
    assert rate == float(np.asarray(trainer.evaluate(ts.params, keys))[0])  # one rollout
    assert np.asarray(out.state.round).max() <= 8
    # the bank protocol plays it on the pinned instances, every turn order, as other teams
    team = learned({"checkpoint": str(tmp_path / "team")})
    bank = rollout_bank(["bomb/base-1"], team, repeats=2, instances=3)
    assert bank["agent"] == "learned" and bank["episodes"] == 6
    assert sum(bank["endings"].values()) == 6


@pytest.mark.full  # another trainer to compile; CI's full tier runs it
def test_mappo_and_per_role_parameters_train():
    cfg = dataclasses.replace(TINY, algo="mappo", shared=False, seeds=1)
    trainer = Trainer(cfg)
    ts, m = trainer.train(trainer.init(1), 1)
    assert "critic" in ts.params and ts.params["actor"]["pi"]["w"].shape[:2] == (1, 3)
    assert np.isfinite(np.asarray(m["value_loss"])).all()


@pytest.mark.slow  # compiles the Keep-Talking env inside a training loop
def test_a_keep_talking_module_trains():
    cfg = dataclasses.replace(TINY, env="ktane/wires", dial=False, seeds=1)
    trainer = Trainer(cfg)
    ts, m = trainer.train(trainer.init(0), 1)
    assert trainer.n == 2 and ts.hidden.shape == (1, 8, 2, 8)
    assert np.isfinite(np.asarray(m["aux_loss"])).all()
    rate = np.asarray(trainer.evaluate(ts.params, jax.random.split(jax.random.PRNGKey(0), 4)))
    assert rate.shape == (1,) and 0.0 <= rate[0] <= 1.0


def test_bad_configs_are_refused(tmp_path):
    with pytest.raises(ValueError, match="algo='sac'"):
        PPOConfig(algo="sac")
    with pytest.raises(ValueError, match="episodes=10"):
        PPOConfig(episodes=10, minibatches=4)
    with pytest.raises(FileNotFoundError, match="not a team checkpoint"):
        learned_team(tmp_path)
    with pytest.raises(ValueError, match="turn_order 'blind,blind,mute'"):
        Trainer(dataclasses.replace(TINY, turn_order="blind,blind,mute"))
    with pytest.raises(ValueError, match="ppo.dial=True is invalid; expected false on ktane"):
        Trainer(dataclasses.replace(TINY, env="ktane/wires"))


def test_an_unknown_variant_is_refused():
    """``train/marl.py env=bomb/nope``: the check (run before the run directory gets a file)
    names the key and the valid variants."""
    from omegaconf import OmegaConf

    from jaxcollab.core.errors import ConfigValueError
    from jaxcollab.marl.run import check_config

    cfg = OmegaConf.create({"env": "bomb/nope", "ppo": {"turn_order": "cycle", "dial": False}})
    with pytest.raises(ConfigValueError, match=r"env='bomb/nope' is invalid; expected one of "
                                               r"\['bomb/base-1'"):
        check_config(cfg)


def test_the_trainer_check_covers_each_family_through_its_view():
    """``train/marl.py`` checks ``ppo`` by building the trainer: the env's RL view refuses a
    turn order it has no episodes for, and ``dial`` without a symbol inbox."""
    from omegaconf import OmegaConf

    from jaxcollab.core.errors import ConfigValueError
    from jaxcollab.io.schema import Marl
    from jaxcollab.marl.run import check_config

    def cfg(env, **ppo):
        return OmegaConf.merge(OmegaConf.structured(Marl), {"env": env, "out_dir": "x",
                                                             "ppo": ppo})

    check_config(cfg("bomb/base-1", turn_order="mute,deaf,blind"))
    with pytest.raises(ConfigValueError, match=r"ppo.turn_order='blind,blind,mute' is invalid; "
                                               r"expected a turn order of bomb/base-1 \(turn_order "
                                               r"'blind,blind,mute' must be 'cycle'"):
        check_config(cfg("bomb/base-1", turn_order="blind,blind,mute"))
    with pytest.raises(ConfigValueError, match="Keep-Talking turns alternate"):
        check_config(cfg("ktane/wires", turn_order="expert,defuser"))
    with pytest.raises(ConfigValueError, match="ppo.dial=True is invalid; expected false on "
                                               "ktane/wires: dial needs a view with a symbol"):
        check_config(cfg("ktane/wires", dial=True))


@pytest.mark.full  # long for the default tier (measured idle)
def test_init_of_several_seeds_and_roles_at_cpu_size_finishes():
    """Vmapped orthogonal initialisers were batched QRs that deadlocked jaxlib's CPU thread
    pool on 2 cores (6 of 6 starts with these sizes hung before the fix). A fresh process, as
    a user starts one; a hang fails by the timeout."""
    import subprocess
    import sys

    code = ("import jax; from jaxcollab.marl.ppo import PPOConfig, Trainer; "
            "ts = Trainer(PPOConfig(shared=False, episodes=256, hidden=64, embed=8, seeds=2, "
            "dial=True, aux_coef=1.0)).init(1); "
            "print(jax.tree.leaves(ts.params)[0].shape[:2])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600)  # a hang's guard, with room for a loaded machine
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "(2, 3)"  # seeds x roles


@pytest.mark.full  # long for the default tier (measured idle)
def test_annealed_learning_rate_reaches_zero_after_anneal_updates():
    cfg = dataclasses.replace(TINY, seeds=1, dial=False, aux_coef=0.0, anneal_updates=2)
    trainer = Trainer(cfg)
    ts0 = trainer.init(0)
    ts2, _ = trainer.train(trainer.train(ts0, 1)[0], 1)  # one compile: n_updates is static
    ts3, _ = trainer.train(ts2, 1)          # a third update: lr is 0, nothing moves
    moved = [not np.array_equal(a, b) for a, b in zip(jax.tree.leaves(ts0.params),
                                                       jax.tree.leaves(ts2.params))]
    assert any(moved)
    for a, b in zip(jax.tree.leaves(ts2.params), jax.tree.leaves(ts3.params)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="anneal_updates=-1"):
        dataclasses.replace(TINY, anneal_updates=-1)


def test_training_reward_scales_wrong_actions_and_rewards_each_step_before_the_last():
    trainer = Trainer(dataclasses.replace(TINY, env="bomb/shuffle-1", wrong_penalty=0.25,
                                          progress_reward=0.5))
    env = trainer.env
    _, s0 = env.reset(jax.random.PRNGKey(0), env.default_params)
    batch = lambda states: jax.tree.map(lambda *x: jax.numpy.stack(x), *states)  # noqa: E731
    # first right cut, defusing cut, wrong cut, wait, right cut on the turn that times out
    before = batch([s0.replace(progress=np.int32(p)) for p in (0, 1, 1, 0, 0)])
    after = batch([s0.replace(progress=np.int32(p), ending=np.int32(e)) for p, e in (
        (1, T.RUNNING), (2, T.DEFUSED), (1, T.WRONG_ACTION), (0, T.RUNNING),
        (1, T.TIMED_OUT))])
    env_reward = jax.numpy.asarray([0.0, 1.0, -1.0, 0.0, 0.0])
    got = trainer.training_reward(env_reward, before, after)
    np.testing.assert_allclose(np.asarray(got), [0.5, 1.0, -0.25, 0.0, 0.5])
    assert TINY.progress_reward == 0.0    # off unless asked: the environment's reward
