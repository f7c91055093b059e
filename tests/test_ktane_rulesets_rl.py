"""Per-episode rulesets for learned teams (ppo.rulesets=episode): the Defuser's observation is
the same under every ruleset, the Expert's holds that episode's manual, the held-out rulesets
are none of the training ones, one compiled step serves every ruleset, and the bits a
message table carries are exact."""

import jax
import numpy as np
import pytest

import jaxcollab
from jaxcollab.agents.ktane.rl_protocol import word_bits
from jaxcollab.agents.ktane.rl_view import KtaneView
from jaxcollab.agents.ktane.rulesets import (
    HELDOUT_SEEDS,
    MANUAL_TOKENS,
    TRAIN_SEEDS,
    ManualExpert,
    manual_size,
)
from jaxcollab.core.errors import ConfigValueError
from jaxcollab.envs.ktane import vocab as V
from jaxcollab.envs.ktane.mission import DEFUSER, EXPERT
from jaxcollab.envs.ktane.modules.base import MESSAGE, VERBS, WAIT
from jaxcollab.envs.ktane.observe import OBS_LEN
from jaxcollab.envs.ktane.ruleset import random_ruleset, vanilla_ruleset
from jaxcollab.marl.information import entropy_bits, mutual_information_bits
from jaxcollab.marl.ppo import PPOConfig, Trainer


@pytest.mark.parametrize("module, size", [("wires", 4 * 5 * 6), ("button", 7 * 5 + 4),
                                          ("keypad", 6 * 7), ("simon", 2 * 3 * 4)])
def test_the_manual_block_holds_the_module_s_tables(module, size):
    assert manual_size(jaxcollab.make(f"ktane/{module}")) == size


@pytest.mark.full  # long: the default tier's time (issue 36)
def test_only_the_expert_sees_the_episode_s_manual():
    base = jaxcollab.make("ktane/wires")
    env = ManualExpert(base)
    size = env.manual_len
    rules = [random_ruleset(3), random_ruleset(4), vanilla_ruleset()]
    params = jax.tree.map(lambda *x: np.stack(x), *[base.ruleset_params(r) for r in rules])
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    same_key = jax.numpy.broadcast_to(keys[0], keys.shape)
    obs, state = jax.jit(jax.vmap(env.reset))(same_key, params)  # one compile, three rulesets
    obs = np.asarray(obs)
    assert obs.shape == (3, 2, OBS_LEN + size)
    plain = np.asarray(jax.vmap(base.observe)(state, params))
    np.testing.assert_array_equal(obs[:, :, :OBS_LEN], plain)   # the env's own observation
    assert (obs[:, DEFUSER] == obs[0, DEFUSER]).all()           # the Defuser: blind to rules
    assert (obs[:, DEFUSER, OBS_LEN:] == 0).all()
    manual = obs[:, EXPERT, OBS_LEN:]
    assert manual.min() >= len(V.VOCAB) and manual.max() < len(V.VOCAB) + MANUAL_TOKENS
    assert (manual[0] != manual[1]).any() and (manual[0] != manual[2]).any()
    np.testing.assert_array_equal(manual[0] - len(V.VOCAB) - 1,
                                  np.ravel(np.asarray(rules[0].wire_rules)))
    # a step keeps the manual: it is the episode's, not the reset's
    obs2 = jax.jit(jax.vmap(env.step))(keys, state, jax.numpy.zeros((3, 2, 50), jax.numpy.int32),
                                        params)[0]
    np.testing.assert_array_equal(np.asarray(obs2)[:, EXPERT, OBS_LEN:], manual)


def test_heldout_rulesets_are_not_trained_on_and_cycle_per_episode():
    assert not set(TRAIN_SEEDS) & set(HELDOUT_SEEDS)
    view = KtaneView(jaxcollab.make("ktane/wires"), rulesets="episode")
    held = view.episode_table("cycle", heldout=True)
    np.testing.assert_array_equal(held.rules.seed, np.asarray(HELDOUT_SEEDS))
    assert held.time_limit_cs.shape == (len(HELDOUT_SEEDS),)
    assert view.obs_size == OBS_LEN + 120 and view.vocab_size == len(V.VOCAB) + MANUAL_TOKENS
    with pytest.raises(ValueError, match="plays ManualExpert"):
        view.on(jaxcollab.make("ktane/wires"))   # its Expert would not see the manual
    with pytest.raises(ValueError, match="no manual block for whos_on_first"):
        KtaneView(jaxcollab.make("ktane/whos_on_first"), rulesets="episode")


def test_the_bomb_has_one_manual():
    with pytest.raises(ConfigValueError, match="ppo.rulesets"):
        Trainer(PPOConfig(env="bomb/base-1", rulesets="episode"))
    with pytest.raises(ConfigValueError, match="ppo.rulesets"):
        Trainer(PPOConfig(env="ktane/wires", rulesets="every"))


def test_bits_of_a_message_table():
    assert mutual_information_bits(np.array([[5, 0], [0, 5]])) == pytest.approx(1.0)
    assert mutual_information_bits(np.array([[2, 2], [3, 3]])) == pytest.approx(0.0)
    four = np.diag([1, 1, 1, 1]) * 7
    assert mutual_information_bits(four) == pytest.approx(2.0)
    assert mutual_information_bits(np.array([[3, 1], [0, 4]])) == pytest.approx(
        entropy_bits(np.array([4, 4])) + entropy_bits(np.array([3, 5]))
        - entropy_bits(np.array([3, 1, 0, 4])))
    assert mutual_information_bits(np.zeros((2, 2))) == 0.0


def test_bits_of_each_word():
    """Word 0 names the action, word 1 is constant, nothing sent on the last turn."""
    action = np.array([0, 1, 2, 3, 0, 1, 2, 3])
    words = np.stack([action + 60, np.full(8, 65)], 1)   # word tokens, not ids
    sent = np.array([True] * 7 + [False])
    bits = word_bits(action, sent, words)
    assert bits[0] == pytest.approx(entropy_bits(np.array([2, 2, 2, 2])))
    assert bits[1] == pytest.approx(entropy_bits(np.array([2, 2, 2, 2]))
                                    + entropy_bits(np.array([7, 1]))
                                    - entropy_bits(np.array([2, 2, 2, 1, 1])))


def test_the_expert_always_speaks_under_per_episode_rulesets():
    env = jaxcollab.make("ktane/wires")
    verbs = lambda view: np.flatnonzero(view.logit_mask[EXPERT, :len(VERBS)])  # noqa: E731
    np.testing.assert_array_equal(verbs(KtaneView(env, rulesets="episode")), [MESSAGE])
    np.testing.assert_array_equal(verbs(KtaneView(env)), sorted([WAIT, MESSAGE]))
    assert KtaneView(env, rulesets="episode").logit_mask[DEFUSER].all()
